"""Rotary position embeddings: the family of conventions, the oracles and Hugging Face configs.

``conventions``: :class:`RopeConvention` (every scaling type's ``f'`` and ``A`` in float64);
``oracle``: pair layouts, the exact (mpmath) and float64 expected values; ``config``: reading
a Hugging Face ``config.json``. The tolerance terms live with the others in
:mod:`posenc_spec.tolerance`.
"""

from .config import RopeConfigError, RopeModelConfig, parse_rope_param, read_config
from .conventions import ATTENTION_FACTOR_PLACEMENTS, ROPE_TYPES, ROTARY_FEATURES, RopeConvention
from .oracle import LAYOUTS

__all__ = ["ATTENTION_FACTOR_PLACEMENTS", "LAYOUTS", "ROPE_TYPES", "ROTARY_FEATURES", "RopeConfigError",
           "RopeConvention", "RopeModelConfig", "parse_rope_param", "read_config"]
