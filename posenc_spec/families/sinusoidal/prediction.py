"""How a sinusoidal table or timestep embedding is made of sines and cosines, for the
regression snapshot's portable prediction (:mod:`posenc_spec.regression.predict`).

The rows are the declared ``(positions + offset) * scale`` (fairseq's offset of 2 and none
are tried as well: a snapshot without a declaration still compresses); the columns are each
layout, first function, shift and odd-width rule of the family at the declared base.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from posenc_spec.regression.predict import Columns

from .conventions import Convention

PAPER = {"offset": 0.0, "scale": 1.0, "base": 10000.0}
FAIRSEQ_OFFSET = 2.0


def columns(declared: dict) -> Columns:
    """The :class:`Columns` of ``declared`` (a declaration's JSON; the paper's offset, scale
    and base for what it does not state or states unusably)."""
    values = [declared.get(key, default) for key, default in PAPER.items()]
    if not (all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in values)
            and values[2] > 1 and values[1] != 0):
        values = list(PAPER.values())
    offset, scale, base = (float(value) for value in values)
    return Columns((offset, 0.0, FAIRSEQ_OFFSET), scale, partial(members, base=base))


def members(width: int, base: float) -> list[tuple[str, np.ndarray]]:
    """``(functions, exact frequency per column)`` of each layout, first function and shift
    of the family at ``width`` and ``base``."""
    found = []
    for layout in ("interleaved", "concat"):
        for first in ("sin", "cos"):
            for shift in (0, 1):
                for odd in ("zero-pad", "ceil") if width % 2 else ("error",):
                    try:
                        member = Convention(layout, first, shift, base, 0, 1.0, odd)
                        columns = member.columns(width)
                        omega = member.frequencies(width, degenerate_limit=True)
                    except ValueError:  # ceil under shift 1
                        continue
                    functions = "".join("0" if k < 0 else ("s" if is_first == (first == "sin") else "c")
                                        for k, is_first in zip(columns.pair, columns.is_first, strict=True))
                    found.append((functions, np.where(columns.pair < 0, 1.0, omega[np.maximum(columns.pair, 0)])))
    return found
