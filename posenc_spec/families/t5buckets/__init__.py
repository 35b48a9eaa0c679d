"""T5's relative-position buckets (family ``t5buckets``): the learned bias per bucket of
``memory - query`` that T5 and its many copies add to the attention logits.

- :mod:`.conventions`: the declared keys (``bidirectional``, ``num_buckets``, ``max_distance``,
  ``relative_position``) and the presets of real code;
- :mod:`.oracle`: the exact buckets (integer arithmetic only) and the float64 logarithmic
  position the tolerance needs;
- :mod:`.tolerance`: the band where a correct float logarithm may land in a neighbouring
  bucket, derived in its docstring;
- :mod:`.properties`: the structural checks, each a :class:`~posenc_spec.results.CheckResult`;
- :mod:`.grid`: the signatures real code has, the calls a gate makes and their check ids;
- :mod:`.calling`: how each signature is handed a call, and a bias module's buckets read back;
- :mod:`.judge`: the verdicts on what a call returned.
"""

from .conventions import KEYS, PRESETS, BucketConvention, from_keys, get_convention
from .grid import SIGNATURES, Probe, plan_ids, probes_for
from .judge import judge_call, judge_repeat
from .oracle import bucket_starts, buckets, exact_bucket
from .tolerance import DEFAULT_LOG_DTYPE, LOG_DTYPES, bucket_band

__all__ = ["DEFAULT_LOG_DTYPE", "KEYS", "LOG_DTYPES", "PRESETS", "SIGNATURES", "BucketConvention", "Probe",
           "bucket_band", "bucket_starts", "buckets", "exact_bucket", "from_keys", "get_convention", "judge_call",
           "judge_repeat", "plan_ids", "probes_for"]
