"""Targets the gate imports in its child processes: thin adapters around real library code
(called, never copied). Test modules name them by path and never import them, so that
collecting the tests does not import the libraries."""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def target(module: str, name: str) -> str:
    """The gate's TARGET for adapter ``name`` of ``module`` (a file of this folder)."""
    return f"{HERE / module}.py:{name}"
