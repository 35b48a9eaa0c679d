"""Targets written in JAX, TensorFlow and Keras (posenc_spec/gate/child/frameworks.py): the
declaration's keys, the boundary that hands each framework its own arrays and reads its
results by the framework's own class functions, the frameworks' global state, and targets
through the whole gate. Each test that needs a framework skips, naming the extra that installs it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from meta_tests.hostile import target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError
from spec_tests.assertions import check_named, failure_summary

TABLE = {"api": "table", "convention": "vaswani", "max_positions": 64}


def _need(module: str, extra: str):
    return pytest.importorskip(module, reason=f"{module} is not installed: pip install posenc-spec[{extra}]")


# -- the declaration ----------------------------------------------------------------------------


def test_keras_backend_declares_a_keras_target():
    """keras_backend alone declares framework keras; the child is told both."""
    declaration = declare({"target": "m:f", "keras_backend": "jax"})
    assert (declaration.framework, declaration.keras_backend) == ("keras", "jax")
    assert declaration.how()["framework"] == {"name": "keras", "keras_backend": "jax"}


@pytest.mark.parametrize("keys, words", [({"framework": "flax"}, "framework must be one of"),
                                         ({"framework": "jax", "keras_backend": "jax"}, "declares a keras target")])
def test_a_bad_framework_is_a_usage_error(keys, words):
    """An unknown framework, or a Keras backend for a JAX target, is refused naming the key."""
    with pytest.raises(UsageError, match=words):
        declare({"target": "m:f", **keys})


def test_a_run_without_a_framework_imports_none():
    """Reading every piece of watched state (the frameworks' among it) imports no framework."""
    code = ("import sys; from posenc_spec.gate.child import state; state.snapshot(); "
            "print(sorted({'jax', 'tensorflow', 'keras'} & sys.modules.keys()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- the boundary in the child ------------------------------------------------------------------


def test_int64_positions_reach_jax_as_int32_or_are_refused():
    """With x64 off, int64 values int32 holds are handed as int32; larger ones raise, never wrap."""
    jax = _need("jax", "jax")
    from posenc_spec.gate.child.frameworks import FrameworkError, to_jax

    handed = to_jax(np.array([0, 2**31 - 1], dtype=np.int64))
    assert handed.dtype == np.int32 and np.asarray(handed).tolist() == [0, 2**31 - 1]
    assert not jax.config.jax_enable_x64
    with pytest.raises(FrameworkError, match="beyond int32"):
        to_jax(np.array([2**40], dtype=np.int64), "timesteps")
    with pytest.raises(FrameworkError, match=r"such as -9223372036854775808\)"):
        to_jax(np.array([np.iinfo(np.int64).min], dtype=np.int64), "relative_position")


@pytest.mark.parametrize("framework", ["jax", "tensorflow"])
def test_a_torch_dtype_argument_reaches_a_framework_as_its_own_dtype(framework):
    """The dtype a family's adapter hands (torch's, from call_dtype) is the framework's own (jnp.bfloat16)."""
    _need(framework, framework)
    import torch

    from posenc_spec.gate.child.frameworks import to_jax, to_tensorflow

    if framework == "jax":
        import jax.numpy as jnp

        assert (to_jax(torch.bfloat16), to_jax(torch.float16)) == (jnp.bfloat16, jnp.float16)
    else:
        import tensorflow as tf

        assert (to_tensorflow(torch.bfloat16), to_tensorflow(torch.float16)) == (tf.bfloat16, tf.float16)


def test_jax_bfloat16_results_are_read_as_their_bits():
    """A jax bfloat16 Array comes back as bfloat16 bits, named a jax Array; torch bfloat16 goes in as JAX's."""
    _need("jax", "jax")
    import torch

    from posenc_spec.gate.child.convert import to_arrays
    from posenc_spec.gate.child.frameworks import install, to_jax

    install("jax")
    values = torch.tensor([1.0, 0.5, 3.0078125], dtype=torch.bfloat16)
    _, [(array, dtype, description)] = to_arrays(to_jax(values) * 2)
    assert dtype == "bfloat16" and description.startswith("jax bfloat16 Array")
    expected = (values * 2).view(torch.int16).numpy().view(np.uint16)
    assert array.tolist() == expected.tolist()


def test_tensorflow_results_are_read_by_tensorflow():
    """An EagerTensor (int64 kept) is read through TensorFlow's own function and named so."""
    _need("tensorflow", "tensorflow")
    from posenc_spec.gate.child.convert import to_arrays
    from posenc_spec.gate.child.frameworks import install, to_tensorflow

    install("tensorflow")
    handed = to_tensorflow(np.arange(5, dtype=np.int64))
    _, [(array, dtype, description)] = to_arrays(handed + 1, allow_integer=True)
    assert (dtype, description) == ("int64", "tensorflow int64 EagerTensor") and array.tolist() == [1, 2, 3, 4, 5]


# -- through the gate ---------------------------------------------------------------------------

# name -> (framework module, declaration keys, the check that fails and its words, or None: conforms)
STATE_TARGETS = {
    "jax_vaswani": ("jax", {"framework": "jax"}, None),
    "enables_jax_x64": ("jax", {"framework": "jax"}, "JAX configuration (jax_enable_x64 False -> True)"),
    "tf_vaswani": ("tensorflow", {"framework": "tensorflow"}, None),
    "sets_tf_threads": ("tensorflow", {"framework": "tensorflow"}, "TensorFlow threads and placement (intra_op"),
    "sets_keras_floatx": ("keras", {"keras_backend": "tensorflow"}, "Keras configuration (floatx float32 -> float16)"),
}
# name -> (framework module, declaration keys, how its result is named, whether it conforms): a variable
# returned is read by its framework from what it holds; the lying ones hand NumPy's protocols the right table.
VARIABLE_TARGETS = {
    "tf_variable": ("tensorflow", {"framework": "tensorflow"}, "tensorflow float32 Variable", True),
    "tf_variable_lying": ("tensorflow", {"framework": "tensorflow"}, "tensorflow float32 Variable", False),
    "keras_variable_lying[jax]": ("keras", {"keras_backend": "jax"}, "keras Variable holding a jax float32 Array",
                                  False),
    "keras_variable_lying[tensorflow]": ("keras", {"keras_backend": "tensorflow"},
                                         "keras Variable holding a tensorflow float32 Variable", False),
}
EXTRA = {"jax": "jax", "tensorflow": "tensorflow", "keras": "keras"}


@pytest.fixture(scope="module")
def state_reports():
    targets = {**STATE_TARGETS, **VARIABLE_TARGETS}
    declarations = {name: declare({"target": target("framework_targets", name.partition("[")[0]), **TABLE, **keys})
                    for name, (module, keys, *_) in targets.items()
                    if all(_installed(needed) for needed in (module, "tensorflow" if module == "keras" else module))}
    return check_named(declarations)


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("name", STATE_TARGETS)
def test_a_framework_target_conforms_or_fails_global_state(name, state_reports):
    """A correct table in each framework conforms; one that changes its framework's global state fails global-state."""
    module, _, words = STATE_TARGETS[name]
    _need(module, EXTRA[module])
    report = state_reports[name]
    if words is None:
        assert report.conforms, f"{name}: {failure_summary(report)}"
        return
    assert [check.name for check in report.failures()] == ["global-state"], failure_summary(report)
    assert words in report.result("global-state").message


@pytest.mark.parametrize("name", VARIABLE_TARGETS)
def test_a_variable_is_read_by_its_framework_not_by_numpys_protocols(name, state_reports):
    """A tf.Variable or Keras Variable result is read from what it holds: a correct one conforms, named so; one
    whose __array__, numpy and value hand out the correct table while it holds cos first fails formula."""
    module, _, description, conforms = VARIABLE_TARGETS[name]
    _need(module, EXTRA[module])
    report = state_reports[name]
    assert description in report.result("call[50x8]").message, failure_summary(report)
    assert report.conforms is conforms, failure_summary(report)
    if not conforms:
        assert "formula" in {check.name.partition("[")[0] for check in report.failures()}, failure_summary(report)


def test_a_module_that_starts_jax_when_imported_is_not_shared_through_a_fork():
    """Two targets of a module whose import starts JAX's backend both conform (no forked child hangs)."""
    _need("jax", "jax")
    declarations = {name: declare({"target": target("jax_started_at_import", name), **TABLE, "framework": "jax",
                                   "timeout": 30}) for name in ("vaswani", "vaswani_again")}
    for name, report in check_named(declarations).items():
        assert report.conforms, f"{name}: {failure_summary(report)}"


def test_preloading_a_module_that_starts_jax_is_refused():
    """A --preload module whose import starts JAX's backend is a usage error naming it (its forks would hang)."""
    _need("jax", "jax")
    from posenc_spec.gate.engine import check_many
    from posenc_spec.gate.options import run_options
    from posenc_spec.gate.sandbox import PreloadError

    declaration = declare({"target": target("framework_targets", "jax_vaswani"), **TABLE, "framework": "jax"})
    with pytest.raises(PreloadError, match="JAX's backend was started"):
        check_many([declaration], run_options(jobs=1, preload=("meta_tests.hostile.jax_started_at_import",)))


def test_a_caller_that_computed_with_jax_still_checks_its_numpy_functions():
    """posenc_spec.check from a process whose own work started JAX's backend (a notebook's)
    judges a NumPy function as ever: only a preloaded module that starts JAX is refused."""
    _need("jax", "jax")
    program = ("import jax.numpy as jnp; jnp.zeros(3).block_until_ready(); import posenc_spec; "
               "from posenc_spec.families.sinusoidal.references.numpy_vectorized import positional_encoding; "
               "report = posenc_spec.check(positional_encoding, max_positions=64); "
               "print(report.conforms); print(report.text())")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith("True"), done.stdout[-2000:] + done.stderr[-2000:]


# -- under tight limits -------------------------------------------------------------------------

# the limit (run_options keyword) -> the words of the failure, which names the one JAX needs raised
TIGHT = {"max_processes": ("8", "its thread pools need more than 8 processes and threads: raise --max-processes"),
         "max_memory": ("512MiB", "its reservation of address space needs more than 0.5 GiB: raise --max-memory")}


@pytest.mark.parametrize("limit", TIGHT)
def test_jax_dying_under_a_tight_limit_is_named_with_the_limit(limit):
    """A correct JAX table under a limit JAX cannot start under fails naming JAX (XLA) and the limit to raise."""
    _need("jax", "jax")
    from posenc_spec.gate.engine import check_many
    from posenc_spec.gate.options import run_options

    value, words = TIGHT[limit]
    declaration = declare({"target": target("framework_targets", "jax_vaswani"), **TABLE, "framework": "jax"})
    [report] = check_many([declaration], run_options(jobs=1, **{limit: value}))
    [failure, *_] = report.failures()
    assert "JAX (XLA) itself dies under this target's limits" in failure.message, failure_summary(report)
    assert words in failure.message, failure_summary(report)


# hostile JAX target -> (the limit it meets, the words of its call's failure)
EXHAUSTING = {"jax_grows_without_bound": ({"max_memory": "2GiB"}, "(the memory limit is 2 GiB)"),
              "jax_starts_threads": ({"max_processes": "256"},
                                     "(the --max-processes limit is 256 processes and threads)")}


@pytest.mark.parametrize("name", EXHAUSTING)
def test_a_jax_target_exhausting_its_limit_fails_naming_it_not_jax(name):
    """A JAX target that grows its memory or its threads without bound fails its calls naming the
    limit it met, as its NumPy twin does; JAX, which started and computed under it, is not blamed."""
    _need("jax", "jax")
    from posenc_spec.gate.engine import check_many
    from posenc_spec.gate.options import run_options

    limit, words = EXHAUSTING[name]
    declaration = declare({"target": target("framework_targets", name), **TABLE, "framework": "jax"})
    [report] = check_many([declaration], run_options(jobs=1, **limit))
    [failure, *_] = report.failures()
    assert failure.name.startswith("call[") and words in failure.message, failure_summary(report)
    assert "JAX (XLA)" not in failure.message, failure_summary(report)


def test_a_jax_target_that_aborts_itself_is_not_laid_on_jax():
    """A JAX target that calls os.abort() under the default limits dies from SIGABRT, and JAX is not blamed."""
    _need("jax", "jax")
    [report] = check_named({"aborts": declare({"target": target("framework_targets", "jax_then_aborts"), **TABLE,
                                               "framework": "jax"})}).values()
    [failure, *_] = report.failures()
    assert "the process died from SIGABRT" in failure.message, failure_summary(report)
    assert "JAX (XLA)" not in failure.message, failure_summary(report)


STARTS_JAX = "import jax.numpy as jnp; jnp.zeros(3).block_until_ready(); import posenc_spec; "


def test_a_caller_that_computed_with_jax_checks_a_jax_function_by_its_import_path():
    """posenc_spec.check of a module's JAX function, from a process that started JAX's backend,
    runs it in a fresh interpreter by its import path (a fork could not compute), and says so."""
    _need("jax", "jax")
    program = (STARTS_JAX + "from meta_tests.hostile.framework_targets import jax_vaswani; "
               "report = posenc_spec.check(jax_vaswani, framework='jax', max_positions=64, odd='skip'); "
               "print(report.conforms); print(report.text())")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith("True"), done.stdout[-2000:] + done.stderr[-2000:]
    assert "jax_vaswani ran in a fresh interpreter, by its import path" in done.stdout


def test_a_caller_that_computed_with_jax_is_told_why_its_notebook_jax_function_cannot_run():
    """A JAX function with no import path (defined in __main__), from a process that started JAX's
    backend, is refused in one line saying why and what to do, not left to time out."""
    _need("jax", "jax")
    program = (STARTS_JAX + "exec('def table(n, d):\\n    return jnp.zeros((n, d))'); "
               "posenc_spec.check(table, max_positions=64)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("posenc_spec.gate.errors.UsageError: __main__:table computes with JAX"), done.stderr
    assert "define it in a module and pass it" in last and "run posenc-spec check" in last


def test_a_jax_slip_gets_the_verdict_and_hint_of_its_numpy_twin():
    """cos first in JAX fails the same checks, with the same hint, as the same slip in NumPy."""
    _need("jax", "jax")
    declarations = {name: declare({"target": target("framework_targets", name), **TABLE, "odd": "skip", **keys})
                    for name, keys in (("jax_cos_first", {"framework": "jax"}), ("numpy_cos_first", {}))}
    jax_report, numpy_report = check_named(declarations).values()
    failed = [{check.name for check in report.failures()} for report in (jax_report, numpy_report)]
    assert failed[0] == failed[1] and failed[0], failed
    hints = [[slip for hint in report.hints for slip in hint.slips] for report in (jax_report, numpy_report)]
    assert hints[0] == hints[1] == ["sin-cos-swapped"], hints


def test_a_module_that_imports_jax_makes_its_target_a_jax_target():
    """Without a framework declared, a module importing JAX (and not torch) is JAX's; with torch too, none."""
    _need("jax", "jax")
    import types

    from posenc_spec.gate.child.frameworks import infer

    module = types.ModuleType("posenc_inferred")
    module.jnp = sys.modules["jax.numpy"]
    exec("def table(n, d):\n    return jnp.zeros((n, d))\n", vars(module))
    sys.modules[module.__name__] = module
    try:
        assert infer(module.table) == "jax"
        module.torch = pytest.importorskip("torch")
        assert infer(module.table) is None
    finally:
        del sys.modules[module.__name__]


def test_a_target_read_from_its_module_conforms_and_its_result_is_named():
    """A JAX target whose framework the gate reads from its module conforms, its results named jax Arrays."""
    _need("jax", "jax")
    [report] = check_named({"vaswani": declare({"target": target("jax_module", "vaswani"), **TABLE,
                                                "odd": "skip"})}).values()
    assert report.conforms, failure_summary(report)
    assert "jax float32 Array" in report.result("call[50x8]").message
