"""Shared test set-up: offline Hugging Face, a headless matplotlib, hypothesis profiles, and
which files pytest-xdist keeps on one worker."""

import os

import pytest

# Before anything imports transformers or pyplot: no hub access, no screen.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")
# Before numpy and torch load: one BLAS/OpenMP thread per process. The cores are shared by the
# xdist workers and the gate's children; more threads per process only contend for them.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

from hypothesis import settings  # noqa: E402

# CI replays the same examples every run; locally hypothesis explores.
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=40)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# pytester runs the plugin's own pytest sessions in this process (spec_tests/test_gate_plugin.py).
pytest_plugins = ["pytester"]


# These files import transformers' model code, directly or through posenc_spec.pretrained's
# loaders: 2-4 s of CPU in each process that does (the xdist worker itself, or the gate's
# template preloading it), and MiniLM is loaded once per process. One worker runs them all
# and pays that once; every other file is still a unit of its own (``--dist loadfile``).
TRANSFORMERS_FILES = frozenset(f"spec_tests/test_{name}.py" for name in (
    "gate_real_rng", "gate_transformers", "rope_real_code", "rope_transformers_frequencies",
    "pretrained_architecture", "pretrained_configs", "pretrained_loading", "pretrained_seed_claims",
    "pretrained_figures", "pretrained_minilm", "pretrained_hub_weights"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneWorkerForTransformers(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "transformers" if scope in TRANSFORMERS_FILES else scope

    return OneWorkerForTransformers(config, log)
