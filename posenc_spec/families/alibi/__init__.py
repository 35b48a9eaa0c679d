"""ALiBi: attention with linear biases, as a family of conventions (see ``api.md``).

``conventions``: :class:`AlibiConvention` and its presets (the slope rule, partial ALiBi,
the bias form, the region, where the queries sit, padding, the compute dtype); ``oracle``:
exact (mpmath) and float64 slopes and biases; ``tolerance``: the per-element bounds;
``properties``: the checks a correct table passes; ``signatures``, ``grid`` and ``judge``:
how real code is called, the calls and check ids, and the verdicts of one head count.
"""

from .conventions import BIAS_FORMS, PRESETS, SLOPE_RULES, AlibiConvention, from_keys, get_convention, slope_terms
from .judge import judge
from .oracle import Positions, bias, call_positions, exact_bias, exact_slopes, mask_positions, slopes
from .tolerance import bias_tolerance, slope_tolerance

__all__ = ["BIAS_FORMS", "PRESETS", "SLOPE_RULES", "AlibiConvention", "Positions", "bias", "bias_tolerance",
           "call_positions", "exact_bias", "exact_slopes", "from_keys", "get_convention", "judge", "mask_positions",
           "slope_terms", "slope_tolerance", "slopes"]
