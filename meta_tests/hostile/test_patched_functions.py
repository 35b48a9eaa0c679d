"""Library functions as global state (``posenc_spec/gate/child/library_functions.py``): a
call that rebinds, deletes or hides a function of torch, ``torch.nn.functional``,
``torch.Tensor``, NumPy, ``math`` or ``builtins`` fails ``global-state`` naming it, and
nothing else (the original is put back before its next call); a call that only adds to a
library, or reaches torch's lazily imported compiler, conforms, as do correct targets run
after the patching ones (``meta_tests/hostile/patches_functions.py``)."""

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
           "rebinds_print": "library functions (builtins.print replaced)"}
CONFORMING = ["adds_a_helper", "reaches_torch_compiler", "torch_table", "numpy_table"]


@pytest.fixture(scope="module")
def reports():
    names = [*CHANGES, *CONFORMING]  # the correct tables last: they run after every patch
    declarations = [declare({"target": target("patches_functions", name), "max_positions": MAX_POSITIONS})
                    for name in names]
    return dict(zip(names, check_many(declarations, run_options(jobs=1)), strict=True))


@pytest.mark.parametrize("name", CHANGES)
def test_a_patched_library_function_fails_global_state(reports, name):
    """The target's only failure is ``global-state``, naming the function it rebound: its
    later calls, which use that function, saw the original."""
    report = reports[name]
    assert [check.name for check in report.failures()] == ["global-state"], report.failures()[:3]
    assert CHANGES[name] in report.result("global-state").message, report.result("global-state").message


@pytest.mark.parametrize("name", CONFORMING)
def test_adding_to_a_library_changes_nothing(reports, name):
    """A call that adds an attribute hiding nothing, or whose library binds its own lazily
    imported modules, conforms; so do correct targets run after the patching ones."""
    assert reports[name].conforms, reports[name].failures()[:3]
