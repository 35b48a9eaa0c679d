"""Pretrained models, offline, in two parts:

- :mod:`posenc_spec.pretrained.hub`: the packaged ``config.json`` of ``gpt2`` and
  ``t5-small``, loading through ``from_pretrained(..., local_files_only=True)``, the local
  Hugging Face cache, MiniLM's learned table, and why a weights test did not run;
- :mod:`posenc_spec.pretrained.learned`: the measures of a learned table (norms,
  similarities, ranks, the fit of another table to it) and the thresholds the tests hold it
  to (the sinusoidal family's own fit is
  :func:`posenc_spec.families.sinusoidal.learned_fit.best_sinusoidal_fit`).

Everything the tests use is re-exported here. Importing this package imports neither
transformers nor torch.
"""

from .hub import (
    CONFIG_FILES,
    CONFIG_FOLDER,
    HASH_BLOCK_BYTES,
    MINILM_DISTRIBUTION,
    MINILM_SHA256,
    MINILM_WEIGHTS_FILE,
    POSITION_EMBEDDING_NAMES,
    WEIGHT_FILES,
    cached_file,
    cached_weights_file,
    config_dict,
    config_path,
    hub_cache_dir,
    is_cached,
    load_pretrained,
    minilm_model,
    minilm_model_dir,
    minilm_position_table,
    model_config,
    position_table,
    sha256_file,
    skip_reason,
)
from .learned import (
    ENERGY_FRACTION,
    MAX_EFFECTIVE_RANK_SHARE,
    MAX_ENERGY_RANK_SHARE,
    MIN_NEIGHBOUR_GAP,
    MIN_SINUSOIDAL_RESIDUAL,
    NEIGHBOUR_PERCENTILE,
    cosine_matrix,
    effective_rank,
    energy_rank,
    neighbour_similarities,
    pair_similarities,
    procrustes_fit,
    random_table_like,
    row_norms,
    singular_values,
)

__all__ = [
    "CONFIG_FILES", "CONFIG_FOLDER", "HASH_BLOCK_BYTES", "MINILM_DISTRIBUTION", "MINILM_SHA256",
    "MINILM_WEIGHTS_FILE", "POSITION_EMBEDDING_NAMES", "WEIGHT_FILES", "cached_file", "cached_weights_file",
    "config_dict", "config_path", "hub_cache_dir", "is_cached", "load_pretrained", "minilm_model",
    "minilm_model_dir", "minilm_position_table", "model_config", "position_table", "sha256_file", "skip_reason",
    "ENERGY_FRACTION", "MAX_EFFECTIVE_RANK_SHARE", "MAX_ENERGY_RANK_SHARE", "MIN_NEIGHBOUR_GAP",
    "MIN_SINUSOIDAL_RESIDUAL", "NEIGHBOUR_PERCENTILE", "cosine_matrix", "effective_rank", "energy_rank",
    "neighbour_similarities", "pair_similarities", "procrustes_fit", "random_table_like", "row_norms",
    "singular_values",
]
