"""Targets the gate imports in its child processes: thin adapters around real library code
(called, never copied). Test modules name them by path and never import them, so that
collecting the tests does not import the libraries."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
# What the transformers adapters share, preloaded once per test process by the gate's root
# template (``--preload``): about 3.5 s beyond torch, where each adapter module alone then takes 0.2 s.
TRANSFORMERS_PRELOAD = ("transformers.modeling_utils",)


def target(module: str, name: str) -> str:
    """The gate's TARGET for adapter ``name`` of ``module`` (a file of this folder)."""
    return f"{HERE / module}.py:{name}"
