"""Library functions as global state (``posenc_spec/gate/child/library_functions.py``): a
call that rebinds, deletes or hides a function of torch, ``torch.nn.functional``,
``torch.Tensor``, a ``torch.nn.Module`` subclass of ``torch.nn``, NumPy, ``math`` or
``builtins``, or changes one in place (its code, defaults or keyword defaults), fails
``global-state`` naming it, and nothing else (the original is put back before its next
call); so does one that changes transformers' rope utilities its module imported. A call
that only adds to a library, or reaches torch's or transformers' lazily imported modules,
conforms, as do correct targets run after the patching ones
(``meta_tests/hostile/patches_functions.py``, ``patches_libraries.py``)."""

from __future__ import annotations

import pytest

from meta_tests.hostile import MAX_POSITIONS, target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options

pytest.importorskip("torch")

CHANGES = {"rebinds_numpy_sin": "library functions (numpy.sin replaced)",
           "rebinds_torch_sin": "library functions (torch.sin replaced)",
           "rebinds_a_tensor_operator": "library functions (torch.Tensor.__pow__ replaced)",
           "hides_a_tensor_method": "library functions (torch.Tensor.sin added over its base's)",
           "rebinds_a_functional": "library functions (torch.nn.functional.softmax replaced)",
           "removes_numpy_cos": "library functions (numpy.cos removed)",
           "rebinds_math_sqrt_to_an_equal_fake": "library functions (math.sqrt replaced)",
           "rebinds_print": "library functions (builtins.print replaced)",
           "changes_code_in_place": "library functions (numpy.stack.__code__ replaced in place)",
           "changes_defaults_in_place": "library functions (numpy.stack.__defaults__ replaced in place)",
           "replaces_keyword_defaults": "library functions (numpy.stack.__kwdefaults__ replaced in place)",
           "changes_a_keyword_default": "library functions (numpy.stack.__kwdefaults__['dtype'] replaced)",
           "rebinds_an_embedding_forward": "library functions (torch.nn.Embedding.forward replaced)"}
CONFORMING = ["adds_a_helper", "reaches_torch_compiler", "torch_table", "numpy_table", "embedding_table"]
ROPE_UTILITIES = "transformers.modeling_rope_utils"
LIBRARY_CHANGES = {
    "rebinds_a_rope_init_function": f"library functions ({ROPE_UTILITIES}.ROPE_INIT_FUNCTIONS['linear'] replaced)",
    "removes_a_rope_type": f"library functions ({ROPE_UTILITIES}.ROPE_INIT_FUNCTIONS['yarn'] removed)",
    "changes_a_rope_init_function_in_place":
        f"library functions ({ROPE_UTILITIES}.ROPE_INIT_FUNCTIONS['linear'].__code__ replaced in place)",
    "rebinds_rope_config_validation": f"library functions ({ROPE_UTILITIES}.rope_config_validation replaced)"}
LIBRARY_CONFORMING = ["adds_a_rope_type", "reaches_a_lazy_submodule", "rope_table"]


def _check_in_order(module: str, names: list[str]) -> dict:
    declarations = [declare({"target": target(module, name), "max_positions": MAX_POSITIONS}) for name in names]
    return dict(zip(names, check_many(declarations, run_options(jobs=1)), strict=True))


@pytest.fixture(scope="module")
def reports():
    return _check_in_order("patches_functions", [*CHANGES, *CONFORMING])  # the correct tables last


@pytest.fixture(scope="module")
def library_reports():
    pytest.importorskip("transformers.modeling_rope_utils")
    return _check_in_order("patches_libraries", [*LIBRARY_CHANGES, *LIBRARY_CONFORMING])


def _fails_global_state_alone(report, change: str) -> None:
    assert [check.name for check in report.failures()] == ["global-state"], report.failures()[:3]
    assert change in report.result("global-state").message, report.result("global-state").message


@pytest.mark.parametrize("name", CHANGES)
def test_a_patched_library_function_fails_global_state(reports, name):
    """The target's only failure is ``global-state``, naming the function it rebound or
    changed in place: its later calls, which use that function, saw the original."""
    _fails_global_state_alone(reports[name], CHANGES[name])


@pytest.mark.parametrize("name", CONFORMING)
def test_adding_to_a_library_changes_nothing(reports, name):
    """A call that adds an attribute hiding nothing, or whose library binds its own lazily
    imported modules, conforms; so do correct targets run after the patching ones."""
    assert reports[name].conforms, reports[name].failures()[:3]


@pytest.mark.parametrize("name", LIBRARY_CHANGES)
def test_a_patched_library_of_the_targets_module_fails_global_state(library_reports, name):
    """A change to the rope utilities the target's module imported is named; its next call
    found them as the module did."""
    _fails_global_state_alone(library_reports[name], LIBRARY_CHANGES[name])


@pytest.mark.parametrize("name", LIBRARY_CONFORMING)
def test_adding_to_an_imported_library_changes_nothing(library_reports, name):
    """A rope type added, or a submodule transformers binds on first access, is no change."""
    assert library_reports[name].conforms, library_reports[name].failures()[:3]
