"""Bad implementations get a verdict, not a crash: each misbehaviour is a failed check with
a one-line reason, and correct tables in any container and dtype pass.

The implementations below are targets of the gate (it imports this file in its worker
process); each builds on the vaswani reference table and breaks one thing.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import probes, sequence_probes
from reference_impls.family import sinusoidal_encoding
from reference_impls.torch_impl import positional_encoding
from spec_tests.assertions import check_named


def _table(n, d):
    return positional_encoding(n, d)


def raises(n, d):
    raise RuntimeError(f"no table for {n}x{d}\nsecond line")


def exits(n, d):
    sys.exit(3)


def exits_hard(n, d):
    os._exit(7)


def segfaults(n, d):
    ctypes.string_at(0)


def returns_none(n, d):
    return None


def returns_text(n, d):
    return "a table"


def returns_ints(n, d):
    return np.zeros((n, d), dtype=np.int64)


def batch_axis(n, d):
    return _table(n, d)[None]


def transposed(n, d):
    return _table(n, d).T


def nan_in_last_row(n, d):
    table = _table(n, d)
    table[-1, 0] = float("nan")
    return table


def inf_in_last_row(n, d):
    table = _table(n, d)
    table[-1, -1] = float("inf")
    return table


def changes_default_dtype(n, d):
    torch.set_default_dtype(torch.float64)
    return _table(n, d)


def tiny_noise(n, d):
    # Far below the tolerance, from a private generator: only the determinism check can see it.
    noise = np.random.default_rng().uniform(0, 1e-15, size=(n, d))
    return _table(n, d).double() * torch.from_numpy(1 - noise)


def reseeds(n, d):
    torch.manual_seed(0)
    return _table(n, d)


def with_grad(n, d):
    return _table(n, d).requires_grad_()


def bfloat16(n, d):
    return positional_encoding(n, d, dtype=torch.bfloat16)


def float16_numpy(n, d):
    return positional_encoding(n, d, dtype=torch.float16).numpy()


def nested_lists(n, d):
    return _table(n, d).double().tolist()


def t2t_silent_nan(n, d):
    """tensor2tensor in NumPy, without the guard: at d = 2, 0/0 gives NaN frequencies."""
    half = d // 2
    with np.errstate(invalid="ignore", divide="ignore"):
        exponent = np.arange(half) / np.float64(half - 1)
    angle = np.arange(n)[:, None] * 10000.0 ** -exponent
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def t2t_guarded(n, d):
    """tensor2tensor's own guard, max(h - 1, 1): at d = 2 the limit omega = 1."""
    half = d // 2
    angle = np.arange(n)[:, None] * 10000.0 ** -(np.arange(half) / max(half - 1, 1))
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def doubles_timesteps_in_place(timesteps, d):
    """A right concat table, but the caller's timesteps tensor is doubled in place."""
    timesteps.mul_(2)
    return sinusoidal_encoding(timesteps.double().numpy() / 2, d, "concat", dtype=np.float32)


HERE = Path(__file__).resolve()
SMALL = 64

# name -> (the check that must fail, words its message must contain); every other check is
# allowed to fail too, but the verdict must be "does not conform".
BAD = {
    "raises": ("call[50x8]", "raised RuntimeError: no table for 50x8 second line"),
    "exits": ("call[50x8]", "called sys.exit(3)"),
    "exits_hard": ("call[50x8]", "exited with status 7"),
    "segfaults": ("call[50x8]", "died from SIGSEGV"),
    "returns_none": ("call[50x8]", "returned None"),
    "returns_text": ("call[50x8]", "returned a str"),
    "returns_ints": ("call[50x8]", "returned a ndarray of int64 values, not floating point"),
    "batch_axis": ("call[50x8]", "extra leading batch axis"),
    "transposed": ("call[50x8]", "transposed"),
    "nan_in_last_row": ("finite[50x8]", "NaN or Inf"),
    "inf_in_last_row": ("finite[50x8]", "NaN or Inf"),
    "changes_default_dtype": ("global-state", "changed torch default dtype float32 -> float64 (restored)"),
    "tiny_noise": ("determinism", "differ"),
    "reseeds": ("global-state", "reseeded torch's global random number generator"),
}
GOOD = ("with_grad", "bfloat16", "float16_numpy", "nested_lists")


def target(name: str) -> str:
    return f"{HERE}:{name}"


@pytest.fixture(scope="module")
def reports():
    keys = {name: {"target": target(name)} for name in (*BAD, *GOOD)}
    keys["t2t_silent_nan"] = {"target": target("t2t_silent_nan"), "convention": "tensor2tensor", "odd": "skip"}
    keys["t2t_guarded"] = {"target": target("t2t_guarded"), "convention": "tensor2tensor", "odd": "skip"}
    keys["doubles_timesteps_in_place"] = {"target": target("doubles_timesteps_in_place"), "convention": "concat",
                                          "api": "timesteps", "odd": "skip"}
    # A correct target checked after the one that changes the default dtype, in the same lane.
    keys["after_state_change"] = {"target": target("with_grad"), "layout": "interleaved", "odd": "skip"}
    declarations = {name: declare({**value, "max_positions": SMALL}) for name, value in keys.items()}
    return check_named(declarations)


@pytest.mark.parametrize("name", BAD)
def test_misbehaviour_is_a_failed_check_with_a_reason(name, reports):
    """Raising, exiting, crashing, rubbish, NaN/Inf, changed state, noise: each a named failed
    check whose one-line message says what happened."""
    report = reports[name]
    check_id, words = BAD[name]
    result = report.result(check_id)
    assert not report.conforms, f"{name} conforms"
    assert not result.passed, f"{name}: {check_id} passed: {result.message}"
    assert words in result.message, f"{name}: {check_id}: {result.message!r} lacks {words!r}"
    assert all("\n" not in check.message for check in report.checks), f"{name}: a multi-line message"


def test_a_crash_does_not_end_the_run(reports):
    """After os._exit or a segfault a new child is started and the next calls are judged; after
    three deaths the target's remaining calls are reported as not run, with the reason."""
    for name, words in (("exits_hard", "exited with status 7"), ("segfaults", "died from SIGSEGV")):
        report = reports[name]
        for check_id in ("call[50x4]", "call[50x6]"):
            assert words in report.result(check_id).message, f"{name}: {report.result(check_id).message}"
        later = report.result("call[128x64]").message
        assert later == "not run: the process died on 3 calls of this target", f"{name}: {later}"
        assert report.result("call[128x64]").status == "skipped"


@pytest.mark.parametrize("name", GOOD)
def test_correct_tables_pass_in_any_container(name, reports):
    """A tensor with grad, bfloat16 and float16 outputs and nested lists all pass."""
    report = reports[name]
    assert report.conforms, f"{name}: {[f'{c.name}: {c.message}' for c in report.failures()][:3]}"


def test_dtype_is_kept_for_the_tolerance(reports):
    """The call's message records the produced dtype (bfloat16 is judged as bfloat16)."""
    assert "torch bfloat16 tensor" in reports["bfloat16"].result("call[50x8]").message
    assert "ndarray of float16" in reports["float16_numpy"].result("call[50x8]").message
    assert reports["bfloat16"].result("formula[50x8]").message.startswith("50x8 under vaswani, bfloat16")


def test_silent_nan_at_width_two_fails(reports):
    """At d = 2 under shift 1 a NaN table fails; every other check of that target passes."""
    report = reports["t2t_silent_nan"]
    assert [check.name for check in report.failures()] == ["degenerate[d=2]"], report.failures()
    assert report.result("degenerate[d=2]").message.startswith("silent NaN")


def test_guarded_width_two_is_compared_with_the_limit(reports):
    """tensor2tensor's guard gives the omega = 1 limit at d = 2, which the gate accepts."""
    result = reports["t2t_guarded"].result("degenerate[d=2]")
    assert result.passed and result.message.startswith("against the limit omega = 1"), result.message
    assert reports["t2t_guarded"].conforms


def test_changed_state_does_not_leak_to_the_next_target(reports):
    """Each target has a child of its own, so a later target sees float32 again."""
    report = reports["after_state_change"]
    assert report.conforms, [f"{c.name}: {c.message}" for c in report.failures()][:3]
    assert "torch float32 tensor" in report.result("call[50x8]").message


def test_noise_fails_determinism_only(reports):
    """Noise far below the tolerance passes every formula check; two calls differ, though."""
    assert [check.name for check in reports["tiny_noise"].failures()] == ["determinism"]


def test_writing_into_the_timesteps_argument_fails(reports):
    """A timesteps-API target that writes into the caller's tensor fails global-state, and
    only that: its table is right."""
    report = reports["doubles_timesteps_in_place"]
    assert [check.name for check in report.failures()] == ["global-state"], report.failures()[:3]
    message = report.result("global-state").message
    calls = len(probes(report.declaration)) + len(sequence_probes(report.declaration))  # each writes
    expected = f"the call for first-50x8 and {calls - 1} more wrote into its timesteps argument in place"
    assert message.startswith(expected), message
