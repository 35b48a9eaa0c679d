"""Real JAX, TensorFlow and Keras code through the gate, declared as a user declares it (the
installed distribution's own function or layer, no wrapper), each with its verdict:

- Gemma's ``apply_rope`` (JAX) conforms, bfloat16 and float16 included.
- keras-hub's ``SinePositionEncoding`` gets the same verdict on the JAX and the TensorFlow
  backend: its table conforms in every check, and ``adds`` fails, naming what it does: it
  returns the encoding broadcast to x's shape, not x plus it (its caller adds it).
- keras-hub's ``AlibiBias`` (MPT's convention, 0 at the last key) conforms on both backends.
- keras-hub's ``RotaryEmbedding`` conforms on the JAX and the TensorFlow backend, declared
  ``RotaryEmbedding(max_wavelength=base)(x, positions=positions)`` (x ``(batch, seq, heads,
  head_dim)``, its ``sequence_axis=1``); it returns float32 for bfloat16 and float16 x (the
  layer's float32 dtype policy casts its inputs), within each check's bound. Its documented
  ``layer(x, start_index=0)`` hands x alone, which a description cannot declare (the gate
  could not choose the positions it rotates by: refused, saying to pass ``positions``).
- tensor2tensor's ``get_timing_signal_1d`` (TensorFlow) fails ``call``, naming its extra
  leading batch axis (it returns ``[1, length, channels]``); taken as the hint says
  (``table[0]``), it conforms.
- TF Model Garden's ``_relative_position_bucket`` (TensorFlow) fails ``call`` for int64
  relative positions (``tf.where`` of int64 distances and int32 buckets: it takes int32
  only, as its docstring says); its int32 buckets conform.

- A flax ``nnx.Module`` after flax's examples' ``sinusoidal_init``
  (``spec_tests/real_targets/flax_positions.py``, declared with a call description) conforms
  under tensor2tensor's convention; kept with flax's division by ``d // 2 - 1`` it fails
  ``degenerate[d=2]`` on its NaN; cos first, it fails the checks and gets the hint of its
  NumPy twin.

tensor2tensor's and TF Model Garden's modules import libraries that do not install beside
TensorFlow 2.21 (tensorflow_addons, tf_keras): the function's text is taken from the
installed distribution's file as it is, into a module of its own that imports what the
function uses (:func:`function_module`). Each test skips unless its distribution is
installed at the version here.
"""

from __future__ import annotations

import ast
import importlib.metadata

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named, failure_summary

VERSIONS = {"flax": "0.12.8", "gemma": "3.3.0", "keras-hub": "0.32.0", "tensor2tensor": "1.15.7",
            "tf-models-official": "2.20.0"}
# distribution -> (its file, the function, the imports the function uses)
EXTRACTED = {
    "tensor2tensor": ("tensor2tensor/layers/common_attention.py", "get_timing_signal_1d",
                      "import math\n\nimport tensorflow.compat.v1 as tf\n"),
    "tf-models-official": ("official/nlp/modeling/layers/position_embedding.py", "_relative_position_bucket",
                           "import math\n\nimport tensorflow as tf\n"),
}
# tensor2tensor's table with the batch axis taken off, as the hint says: the only code here.
T2T_FIRST_ROW = "\n\ndef first_row(length, channels):\n    return get_timing_signal_1d(length, channels)[0]\n"
KERAS_HUB = {"target": "keras_hub.layers:SinePositionEncoding", "signature": "adds-to-x", "x_layout": "bsd",
             "init": {"max_wavelength": 10000}, "odd": "ceil", "framework": "keras"}
ALIBI = {"target": "keras_hub.layers:AlibiBias", "api": "alibi-bias", "signature": "module-scores",
         "init": {"alibi_bias_max": 8}, "convention": "mpt"}
FLAX_MODULE = "spec_tests/real_targets/flax_positions.py"
FLAX = {"convention": "tensor2tensor", "odd": "zero-pad"}
KERAS_ROPE = {"target": "keras_hub.layers:RotaryEmbedding", "api": "rope-apply", "x_layout": "bshd",
              "call": "RotaryEmbedding(max_wavelength=base)(x, positions=positions)"}
# name -> (distribution, declaration keys, the verdict: "conforms" or (failing check, words of its message))
TARGETS = {
    "gemma apply_rope (JAX)": ("gemma", {"api": "rope-apply", "framework": "jax",
                                         "kwargs": {"base_frequency": 10000}}, "conforms"),
    "keras-hub SinePositionEncoding (JAX)": ("keras-hub", {**KERAS_HUB, "keras_backend": "jax"},
                                             ("adds", "what it adds to x")),
    "keras-hub SinePositionEncoding (TensorFlow)": ("keras-hub", {**KERAS_HUB, "keras_backend": "tensorflow"},
                                                    ("adds", "what it adds to x")),
    "keras-hub AlibiBias (JAX)": ("keras-hub", {**ALIBI, "keras_backend": "jax"}, "conforms"),
    "keras-hub AlibiBias (TensorFlow)": ("keras-hub", {**ALIBI, "keras_backend": "tensorflow"}, "conforms"),
    "keras-hub RotaryEmbedding (JAX)": ("keras-hub", {**KERAS_ROPE, "keras_backend": "jax"}, "conforms"),
    "keras-hub RotaryEmbedding (TensorFlow)": ("keras-hub", {**KERAS_ROPE, "keras_backend": "tensorflow"}, "conforms"),
    "tensor2tensor get_timing_signal_1d": ("tensor2tensor", {"convention": "tensor2tensor", "odd": "zero-pad",
                                                             "framework": "tensorflow"},
                                           ("call", "an extra leading batch axis (return table[0])")),
    "tensor2tensor get_timing_signal_1d, table[0]": ("tensor2tensor", {
        "convention": "tensor2tensor", "odd": "zero-pad", "framework": "tensorflow"}, "conforms"),
    "flax nnx SinusoidalPositions": ("flax", {**FLAX, "call": "SinusoidalPositions(features=dim)(num_positions)"},
                                     "conforms"),
    "flax nnx, flax's d // 2 - 1": ("flax", {**FLAX, "call": "SinusoidalPositionsAsFlax(features=dim)(num_positions)"},
                                     ("degenerate", "at d = 2 under shift 1 the formula has no value")),
    "TF Model Garden _relative_position_bucket": ("tf-models-official", {"api": "t5-buckets",
                                                                         "framework": "tensorflow"},
                                                  ("call", "was expected to be a int64 tensor but is a int32")),
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


def _installed_file(distribution: str, path: str) -> str:
    return str(importlib.metadata.distribution(distribution).locate_file(path))


def function_module(distribution: str, folder, extra: str = "") -> str:
    """A module file in ``folder`` holding the imports and, as the distribution ships it, the
    text of the function :data:`EXTRACTED` names (and ``extra`` after it)."""
    path, name, imports = EXTRACTED[distribution]
    text = open(_installed_file(distribution, path), encoding="utf-8").read()
    node = next(node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef) and node.name == name)
    module = folder / f"{distribution.replace('-', '_')}_{name.strip('_')}{'_row' if extra else ''}.py"
    module.write_text(f"{imports}\n\n{ast.get_source_segment(text, node)}\n{extra}", encoding="utf-8")
    return str(module)


def _target(name: str, distribution: str, folder) -> str:
    if distribution == "flax":
        return f"{FLAX_MODULE}:{_call_head(TARGETS[name][1])}"
    if distribution == "gemma":
        return f"{_installed_file('gemma', 'gemma/gm/math/_positional_embeddings.py')}:apply_rope"
    if name.endswith("table[0]"):
        return f"{function_module(distribution, folder, T2T_FIRST_ROW)}:first_row"
    return f"{function_module(distribution, folder)}:{EXTRACTED[distribution][1]}"


def _call_head(keys: dict) -> str:
    """The name a call description's first call names (``Module(...)(...)``: ``Module``)."""
    return keys["call"].partition("(")[0]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("framework_real_code")
    declarations = {}
    for name, (distribution, keys, _) in TARGETS.items():
        if _version(distribution) != VERSIONS[distribution]:
            continue
        declarations[name] = declare({**keys, "target": keys.get("target") or _target(name, distribution, folder)})
    return check_named(declarations)


@pytest.mark.parametrize("name", TARGETS)
def test_real_framework_code_conforms_or_fails_with_its_deviation(name, reports):
    """The installed code as a user declares it: conforms, or fails the check its deviation names, every failure
    naming that deviation."""
    distribution, _, verdict = TARGETS[name]
    require(distribution)
    report = reports[name]
    if verdict == "conforms":
        assert report.conforms, f"{name}: {failure_summary(report)}"
        return
    check_id, words = verdict
    failures = report.failures()
    assert check_id in {check.name.partition("[")[0] for check in failures}, failure_summary(report)
    assert all(words in check.message for check in failures), failure_summary(report, limit=len(failures))


def test_a_flax_module_slip_gets_the_verdict_and_hint_of_its_numpy_twin():
    """cos first in the flax module fails the same checks, with the same hint, as the same slip in NumPy;
    its results are read as jax Arrays (the framework read from the module, which imports flax)."""
    require("flax")
    declarations = {"flax": declare({"target": f"{FLAX_MODULE}:CosFirstPositions", **FLAX,
                                     "call": "CosFirstPositions(features=dim)(num_positions)"}),
                    "numpy": declare({"target": f"{FLAX_MODULE}:cos_first_table", **FLAX})}
    flax_report, numpy_report = check_named(declarations).values()
    failed = [{check.name for check in report.failures()} for report in (flax_report, numpy_report)]
    assert failed[0] == failed[1] and failed[0], failed
    hints = [[slip for hint in report.hints for slip in hint.slips] for report in (flax_report, numpy_report)]
    assert hints[0] == hints[1] == ["sin-cos-swapped"], hints
    assert "jax float32 Array" in flax_report.result("call[50x8]").message


def test_every_installed_target_is_declared_as_the_gate_accepts_it(tmp_path):
    """Each target of a distribution installed at its version (a function's text taken into a
    module of its own where its package does not import) is a declaration of the API it names
    that the gate accepts (the run that judges them imports the frameworks: the slow tier)."""
    installed = {name: spec for name, spec in TARGETS.items() if _version(spec[0]) == VERSIONS[spec[0]]}
    if not installed:
        pytest.skip(f"none of {sorted(VERSIONS)} is installed at the version these verdicts are for")
    for name, (distribution, keys, _) in installed.items():
        declaration = declare({**keys, "target": keys.get("target") or _target(name, distribution, tmp_path)})
        assert declaration.api == keys.get("api", "table"), name
