"""The gate on real library code called as a user's file calls it (no preloading): the
first call imports more (transformers' lazy modules and, through them, torch's compiler
stack; einops' torch backend on rotary-embedding-torch's first rotation, with its known
deviation in low precision declared as xfails), and what those
imports change in the process is the libraries' side effect, not the target's.

Each target conforms with ``global-state`` passed; where its first call imported
libraries that changed the global state, a warning names the import.
"""

from __future__ import annotations

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named, failure_summary
from spec_tests.real_targets import HERE as REAL_TARGETS
from spec_tests.real_targets import target

SMALL = 64  # the sizes that tell the conventions apart
# rotary-embedding-torch's known deviation in bfloat16 and float16 (test_rope_real_code.py shows it)
XFAILS = REAL_TARGETS.parent / "data" / "rotary_embedding_torch.xfails"
# name -> (declaration, whether the first call imports a library that changes the state)
REAL = {
    "distilbert": ({"target": target("as_imported_by_users", "distilbert"), "convention": "vaswani",
                    "odd": "ceil", "max_positions": SMALL}, True),
    "llama-apply": ({"target": target("as_imported_by_users", "llama_apply"), "api": "rope-apply",
                     "x_layout": "bhsd", "head_dim": 64}, True),
    "lucidrains-rotate-queries": ({"target": target("rope_rotary_embedding_torch", "rotate_queries"),
                                   "api": "rope-apply", "x_layout": "bhsd", "rope_layout": "interleaved",
                                   "head_dim": 64, "xfails": str(XFAILS)}, False),
}


@pytest.fixture(scope="module")
def reports():
    """The reports, from a gate whose environment does not set TORCHINDUCTOR_CACHE_DIR (an
    earlier import of torch's compiler stack in this process would have set it), each target
    in a run of its own: in one run, what a target's first call imported is imported before
    the next target starts, as in a long-running program."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
        return {name: check_named({name: declare(keys)})[name] for name, (keys, _) in REAL.items()}


@pytest.mark.parametrize("name", REAL)
def test_real_code_conforms_whatever_its_first_call_imports(reports, name):
    """Correct library code conforms, global-state included, with nothing preloaded."""
    report = reports[name]
    assert report.conforms, f"{name}: {failure_summary(report)}"
    assert report.result("global-state").status == "passed", report.result("global-state").message


@pytest.mark.parametrize("name", [name for name, (_, imports) in REAL.items() if imports])
def test_a_first_calls_import_side_effects_are_named(reports, name):
    """The changes the first call's imports made are reported as the libraries' side
    effects: the environment variable torch's compiler stack sets among them."""
    effects = [warning for warning in reports[name].warnings if warning.startswith("import side effects, kept")]
    assert any("TORCHINDUCTOR_CACHE_DIR" in effect and "in the call for" in effect for effect in effects), \
        reports[name].warnings


def test_every_target_is_declared_as_the_gate_accepts_it():
    """Each declaration is one the gate accepts, of the API it names, its xfails file read."""
    declarations = {name: declare(keys) for name, (keys, _) in REAL.items()}
    assert {name: declaration.api for name, declaration in declarations.items()} == {
        name: keys.get("api", "table") for name, (keys, _) in REAL.items()}
