"""Shared test set-up: offline Hugging Face, a headless matplotlib, hypothesis profiles."""

import os

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
