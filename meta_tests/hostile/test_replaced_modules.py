"""``sys.modules`` as global state (``posenc_spec/gate/child/loaded_modules.py``): a call that
replaces or removes a loaded module, or rebinds a package's attribute that held its
submodule, fails ``global-state`` naming it (``meta_tests/hostile/replaces_modules.py``);
a call that imports a new module conforms."""

from __future__ import annotations

import pytest

from meta_tests.hostile import MAX_POSITIONS, target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options

pytest.importorskip("torch")

CHANGES = {"replaces_numpy": "imported modules (sys.modules) (numpy replaced)",
           "removes_a_loaded_module": "imported modules (sys.modules) (json removed)",
           "swaps_torch_functional": "(torch.nn.functional no longer its package's attribute)"}
TARGETS = [*CHANGES, "imports_a_new_module"]


@pytest.fixture(scope="module")
def reports():
    declarations = [declare({"target": target("replaces_modules", name), "max_positions": MAX_POSITIONS})
                    for name in TARGETS]
    return dict(zip(TARGETS, check_many(declarations, run_options(jobs=1)), strict=True))


@pytest.mark.parametrize("name", CHANGES)
def test_a_replaced_module_fails_global_state(reports, name):
    """The target's only failure is ``global-state``, naming the module it replaced, removed
    or unbound."""
    report = reports[name]
    assert [check.name for check in report.failures()] == ["global-state"], report.failures()[:3]
    assert CHANGES[name] in report.result("global-state").message, report.result("global-state").message


def test_importing_a_new_module_changes_nothing(reports):
    """A module a call imports adds to ``sys.modules``: the target conforms."""
    assert reports["imports_a_new_module"].conforms, reports["imports_a_new_module"].failures()[:3]
