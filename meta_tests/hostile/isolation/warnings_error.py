"""Polluter: ``warnings.simplefilter("error")`` when imported; its calls warn, so they raise.
Verdict: does not conform, with a warning that the import changed the warnings filters;
the next target (which warns too) is untouched."""

from __future__ import annotations

import warnings

warnings.simplefilter("error")


def table(num_positions, dim):
    warnings.warn("this warning is an error here", UserWarning, stacklevel=1)
    raise AssertionError("unreachable: the warning raises")
