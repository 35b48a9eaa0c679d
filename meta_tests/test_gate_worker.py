"""The gate's worker: the per-call timeout, deaths, result conversion and global-state
restoration."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc_spec.conventions import PRESETS
from posenc_spec.gate import GateSpec, check_target
from posenc_spec.gate.worker import (
    BadResult,
    Worker,
    as_table,
    describe_exception,
    load,
    restore,
    run_calls,
    shape_problem,
    snapshot,
)

HERE = Path(__file__).resolve()
TIMEOUT = 1.0


def sleeps_on_wide_tables(n, d):
    if d >= 64:
        time.sleep(3600)
    return np.zeros((n, d))


def echo_shape(n, d):
    return np.full((n, d), 0.5)


def test_a_hanging_call_is_killed_at_the_timeout():
    """A call that hangs is reported as hung once the timeout passes; the target's later
    calls are not run, and the gate goes on."""
    spec = GateSpec(f"{HERE}:sleeps_on_wide_tables", PRESETS["vaswani"], max_positions=64, timeout=TIMEOUT)
    started = time.monotonic()
    report = check_target(spec)
    elapsed = time.monotonic() - started
    assert report.result("call[64x64]").message == f"the call for 64x64 did not return within the {TIMEOUT:g} s " \
                                                    "timeout (killed)"
    assert report.result("call[64x512]").message == "not run: the target hung on the call for 64x64"
    assert report.result("call[50x8]").passed, report.result("call[50x8]").message
    assert elapsed < 20 * TIMEOUT, f"the run took {elapsed:.1f} s with a {TIMEOUT} s timeout"


def test_the_worker_restarts_for_the_next_target_after_a_hang():
    """After a hang kills the worker, the same Worker object starts a fresh process."""
    worker = Worker()
    try:
        assert load(worker, f"{HERE}:sleeps_on_wide_tables", 10.0)[0]
        request = {"label": "2x64", "length": 2, "width": 64, "timesteps": None, "shape": (2, 64)}
        (outcome,) = run_calls(worker, f"{HERE}:sleeps_on_wide_tables", [request], TIMEOUT)
        assert outcome.status == "hung"
        assert load(worker, f"{HERE}:echo_shape", 10.0)[0]
        request = {**request, "label": "2x8", "width": 8, "shape": (2, 8)}
        (outcome,) = run_calls(worker, f"{HERE}:echo_shape", [request], 10.0)
        assert outcome.ok and outcome.table.shape == (2, 8) and worker.starts == 2
    finally:
        worker.stop()


def test_import_failure_is_a_reason():
    """A target whose module is missing loads as (False, one-line reason)."""
    worker = Worker()
    try:
        assert load(worker, "no_such_module_for_the_gate:fn", 10.0) == (
            False, "raised ModuleNotFoundError: No module named 'no_such_module_for_the_gate'")
    finally:
        worker.stop()


@pytest.mark.parametrize("result, dtype, words", [
    (torch.zeros(3, 4, dtype=torch.bfloat16), "bfloat16", "torch bfloat16 tensor on cpu"),
    (torch.zeros(3, 4, requires_grad=True), "float32", "torch float32 tensor on cpu (requires grad)"),
    (np.zeros((3, 4), dtype=np.float16), "float16", "ndarray of float16"),
    (np.zeros((3, 4), dtype=np.longdouble), "float64", "ndarray of float128"),
    ([[0.5] * 4] * 3, "float64", "list (as float64)"),
])
def test_tables_in_any_container(result, dtype, words):
    """Tensors (bfloat16 carried as float32 but named bfloat16), arrays and lists convert."""
    array, name, description = as_table(result, (3, 4))
    assert array.shape == (3, 4) and array.flags.c_contiguous
    assert (name, description) == (dtype, words)
    assert array.dtype == (np.float32 if dtype == "bfloat16" else np.dtype(dtype))


@pytest.mark.parametrize("result, words", [
    (None, "returned None, not a table"),
    ("table", "returned a str ('table'), not a table"),
    (np.zeros((3, 4), dtype=np.int64), "returned int64 values"),
    (torch.zeros(3, 4, dtype=torch.int32), "returned int32 values"),
    (np.zeros((3, 4), dtype=complex), "returned complex values"),
    ({"table": 1}, "returned a dict that is not an array of numbers"),
    (np.zeros((1, 3, 4)), "returned shape 1x3x4, expected 3x4: an extra leading batch axis"),
    (np.zeros((4, 3)), "returned shape 4x3, expected 3x4: transposed"),
    (np.zeros((3, 5)), "returned shape 3x5, expected 3x4: 5 columns for width 4"),
    (np.zeros((2, 4)), "returned shape 2x4, expected 3x4: 2 rows for 3 positions"),
    (np.float64(1.0), "returned shape a scalar, expected 3x4"),
])
def test_results_that_are_not_tables(result, words):
    """None, text, integers, complex, objects and wrong shapes raise BadResult with a hint."""
    with pytest.raises(BadResult) as error:
        as_table(result, (3, 4))
    assert str(error.value).startswith(words), str(error.value)


def test_shape_hint_for_a_middle_batch_axis():
    """A (seq, 1, dim) buffer is recognised as an extra size-1 axis."""
    assert shape_problem((3, 1, 4), (3, 4)) == ("returned shape 3x1x4, expected 3x4: an extra batch axis of "
                                                "size 1 at axis 1 (squeeze it)")


def test_describe_exception_is_one_line():
    """Exceptions become one line; sys.exit is named as such."""
    assert describe_exception(ValueError("two\nlines")) == "raised ValueError: two lines"
    assert describe_exception(SystemExit(4)) == "called sys.exit(4)"
    assert describe_exception(KeyError()) == "raised KeyError"


def test_restore_puts_back_what_changed():
    """restore() reports each changed entry, random generators included, and resets it."""
    baseline = snapshot()
    old_dtype, old_grad = torch.get_default_dtype(), torch.is_grad_enabled()
    try:
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(not old_grad)
        np.seterr(over="raise")
        torch.rand(1)
        np.random.random()
        random.random()
        changes = restore(baseline)
    finally:
        torch.set_default_dtype(old_dtype)
        torch.set_grad_enabled(old_grad)
        np.seterr(**baseline["numpy error state"])
    assert any(change.startswith("torch default dtype float32 -> float64") for change in changes), changes
    assert any(change.startswith("torch grad mode") for change in changes), changes
    assert any(change.startswith("numpy error state") for change in changes), changes
    for generator in ("torch", "numpy global", "Python"):
        assert f"the {generator} random number generator (drew from it or reseeded it)" in changes, changes
    assert snapshot() == baseline
