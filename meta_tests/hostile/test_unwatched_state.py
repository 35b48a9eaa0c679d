"""State a call may leave changed beyond what ``os.environ``, ``sys`` and the libraries'
own settings show, and process settings the first survey left out
(``meta_tests/hostile/unwatched_state.py``): each target fails
``global-state`` naming it, and a target that only computes with ``decimal`` (setting its
context's flags, as any computation does) conforms.
"""

from __future__ import annotations

import platform

import pytest

from meta_tests.hostile import MAX_POSITIONS, target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options

CHANGES = {"putenv_only": "C library environment", "rounds_toward_zero": "floating-point rounding mode",
           "blocks_a_signal": "signal mask", "leaves_a_profiler": "trace and profile hooks",
           "stops_the_collector": "garbage collector", "narrows_decimal_precision": "decimal context",
           "lowers_a_resource_limit": "resource limits (RLIMIT_NOFILE",
           "configures_root_logging": "logging (root_handlers, root_level 30 -> 10)",
           "disables_logging": "logging (disabled_below 0 -> 40)",
           "leaves_a_thread_profiler": "thread trace and profile hooks",
           "stretches_the_switch_interval": "interpreter settings (switch_interval 0.005 -> 1.0)",
           "limits_integer_strings": "interpreter settings (int_max_str_digits 4300 -> 640)",
           "replaces_the_excepthook": "interpreter hooks (sys.excepthook)",
           "adds_an_audit_hook": "audit hooks added (the hook stays: none can be removed) 0 -> 1"}
TARGETS = [*CHANGES, "computes_with_decimals"]


@pytest.fixture(scope="module")
def reports():
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("the rounding-mode target knows FE_TOWARDZERO of x86_64 and aarch64 only")
    declarations = [declare({"target": target("unwatched_state", name), "max_positions": MAX_POSITIONS})
                    for name in TARGETS]
    return dict(zip(TARGETS, check_many(declarations, run_options(jobs=1)), strict=True))


@pytest.mark.parametrize("name", CHANGES)
def test_a_change_the_libraries_do_not_show_fails_global_state(reports, name):
    """The target's only failure is ``global-state``, naming what it left changed."""
    report = reports[name]
    assert [check.name for check in report.failures()] == ["global-state"], report.failures()[:3]
    assert CHANGES[name] in report.result("global-state").message, report.result("global-state").message


def test_computing_with_decimals_changes_nothing(reports):
    """The flags a decimal computation sets are its result, not a changed setting: conforms."""
    assert reports["computes_with_decimals"].conforms, reports["computes_with_decimals"].failures()[:3]
