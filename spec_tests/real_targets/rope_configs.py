"""What the rotary real-code tests and their adapters share: where the example configs are,
and the yarn parameters both sides state.

No library is imported here, so test modules import it at collection (the adapters of
:mod:`.rope_transformers` import it in the gate's child).
"""

from pathlib import Path

CONFIGS = Path(__file__).resolve().parent.parent / "data" / "rope_configs"

# Qwen2.5-style yarn: a 4x extension of 32768 positions at theta 1e6 (Hugging Face's names).
QWEN_YARN = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0, "original_max_position_embeddings": 32768}
# The same on the full-attention layers of a per-layer-type config, with truncate off
# (transformers loses it there: spec_tests/families/rope/test_real_code.py).
PER_LAYER_YARN = {**QWEN_YARN, "truncate": False}
