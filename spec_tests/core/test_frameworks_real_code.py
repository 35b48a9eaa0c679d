"""Real JAX and Keras code through the gate, declared as a user declares it (the installed
distribution's own function or layer, no wrapper): Gemma's ``apply_rope`` (JAX) conforms;
keras-hub's ``SinePositionEncoding`` gets the same verdict on the JAX and the TensorFlow
backend: its table conforms in every check, and ``adds`` fails, naming what it does: it
returns the encoding broadcast to x's shape, not x plus it (a caller adds it). Each skips
unless its distribution is installed at the version here.
"""

from __future__ import annotations

import importlib.metadata

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named, failure_summary

VERSIONS = {"gemma": "3.3.0", "keras-hub": "0.32.0"}
KERAS_HUB = {"target": "keras_hub.layers:SinePositionEncoding", "signature": "adds-to-x", "x_layout": "bsd",
             "init": {"max_wavelength": 10000}, "odd": "ceil", "framework": "keras"}
# name -> (distribution, declaration keys, the verdict: "conforms" or (failing check, words of its message))
TARGETS = {
    "gemma apply_rope (JAX)": ("gemma", {"api": "rope-apply", "framework": "jax",
                                         "kwargs": {"base_frequency": 10000}}, "conforms"),
    "keras-hub SinePositionEncoding (JAX)": ("keras-hub", {**KERAS_HUB, "keras_backend": "jax"},
                                             ("adds", "what it adds to x")),
    "keras-hub SinePositionEncoding (TensorFlow)": ("keras-hub", {**KERAS_HUB, "keras_backend": "tensorflow"},
                                                    ("adds", "what it adds to x")),
}


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def require(distribution: str) -> None:
    """Skip unless ``distribution`` is installed at the version these verdicts are for."""
    installed, wanted = _version(distribution), VERSIONS[distribution]
    if installed != wanted:
        pytest.skip(f"{distribution} {installed or 'is not installed'}: these verdicts are for {wanted} "
                    f"(pip install posenc-spec[jax,keras] and {distribution}=={wanted} --no-deps)")


def _gemma_file() -> str:
    return str(importlib.metadata.distribution("gemma").locate_file("gemma/gm/math/_positional_embeddings.py"))


@pytest.fixture(scope="module")
def reports():
    declarations = {}
    for name, (distribution, keys, _) in TARGETS.items():
        if _version(distribution) != VERSIONS[distribution]:
            continue
        where = {"target": f"{_gemma_file()}:apply_rope"} if distribution == "gemma" else {}
        declarations[name] = declare({**keys, **where})
    return check_named(declarations)


@pytest.mark.parametrize("name", TARGETS)
def test_real_framework_code_conforms_or_fails_with_its_deviation(name, reports):
    """The installed code as a user declares it: conforms, or fails only the check its deviation names."""
    distribution, _, verdict = TARGETS[name]
    require(distribution)
    report = reports[name]
    if verdict == "conforms":
        assert report.conforms, f"{name}: {failure_summary(report)}"
        return
    check_id, words = verdict
    assert {check.name.partition("[")[0] for check in report.failures()} == {check_id}, failure_summary(report)
    assert words in report.failures()[0].message
