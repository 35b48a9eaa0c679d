"""Regression checking end to end: ``snapshot``, ``check --against``, ``diff`` and their exit
statuses, on targets whose behaviour an environment variable changes between the snapshot
and the check (the gate's child reads the caller's environment); and which comparison
applies where the snapshot was recorded in another numeric environment (simulated by
changing the torch CPU capability the check sees)."""

from __future__ import annotations

import json
import re
import zipfile

import numpy as np
import pytest

from posenc_spec.cli import main
from posenc_spec.environment import numeric_environment
from posenc_spec.gate import against

CHANGE = "POSENC_REGRESSION_CHANGE"
SMALL = ["--max-positions", "64"]


def _table(n, d):
    from posenc_spec.families.sinusoidal.references.torch_impl import positional_encoding

    return positional_encoding(n, d)


def drifting(num_positions, dim):
    """The torch reference, changed as $POSENC_REGRESSION_CHANGE says."""
    import os

    import torch

    change = os.environ.get(CHANGE, "")
    table = _table(num_positions, dim)
    if change == "one-ulp" and num_positions == 50 and dim == 8:
        table[3, 4] = torch.nextafter(table[3, 4], torch.tensor(2.0))
    elif change == "milli" and dim == 64:
        table[7, 9] += 1e-3
    elif change == "shape" and dim == 8:
        table = table[:, :-1]
    elif change == "dtype":
        table = table.double()
    elif change == "raises" and dim == 512:
        raise ValueError("no table today")
    return table


def rotary_cache(positions, head_dim):
    """transformers' default rotary cache (cos and sin, half pairs), its cos moved by one ULP
    when $POSENC_REGRESSION_CHANGE says so."""
    import os

    import torch

    inverse = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = positions.to(torch.float32)[:, None] * inverse[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    cos, sin = angles.cos(), angles.sin()
    if os.environ.get(CHANGE) == "one-ulp":
        cos = torch.nextafter(cos, torch.tensor(2.0))
    return cos, sin


def learned(num_positions, dim):
    """A learned table: a seeded random matrix standing in for checkpoint weights (no
    convention describes it; only a snapshot can judge it)."""
    weights = np.random.default_rng(7).standard_normal((4096, 1024)).astype(np.float32)
    return weights[:num_positions, :dim]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    path = tmp_path_factory.mktemp("snapshots") / "drifting.npz"
    assert main(["snapshot", f"{__file__}:drifting", "--out", str(path), *SMALL]) == 0
    return path


def _check(monkeypatch, snapshot, change, *extra):
    monkeypatch.setenv(CHANGE, change)
    return main(["check", f"{__file__}:drifting", "--against", str(snapshot), "-j", "1", *extra])


def _elsewhere(monkeypatch):
    """Make the check see another numeric environment than the snapshot's: other torch kernels."""
    here = numeric_environment()
    other = {**here, "torch_cpu_capability": "default" if here["torch_cpu_capability"] != "default" else "avx2"}
    monkeypatch.setattr(against, "numeric_environment", lambda: other)
    return f"torch_cpu_capability: {here['torch_cpu_capability']} -> {other['torch_cpu_capability']}"


def test_unchanged_output_passes_bit_for_bit(snapshot, monkeypatch, capsys):
    """Replayed where it was recorded, the same code returns the same bits."""
    assert _check(monkeypatch, snapshot, "") == 0
    assert "regression: 11 of 11 recorded calls bit for bit (recorded in this numeric environment)" in (
        capsys.readouterr().out)


def test_elsewhere_a_declared_convention_s_tolerance_applies(snapshot, monkeypatch, capsys, tmp_path):
    """In another numeric environment a 1-ULP move passes within the convention's bounds
    (with a warning naming the difference); a move of 1e-3 fails; a call the convention's
    grid does not make (another cap) is compared bit for bit."""
    difference = _elsewhere(monkeypatch)
    report = tmp_path / "r.json"
    assert _check(monkeypatch, snapshot, "one-ulp", "--convention", "vaswani", *SMALL, "--json", str(report)) == 0
    target = json.loads(report.read_text())["targets"][0]
    check = next(check for check in target["checks"] if check["id"] == "regression")
    assert "11 of 11 recorded calls within the tolerance of the declared convention (vaswani;" in check["reason"]
    worst = next(call for call in check["details"] if call["label"] == "50x8")
    assert (worst["max_ulp"], worst["passed"]) == (1, True) and 0 < worst["bound_ratio"] < 1, worst
    assert any(difference in warning for warning in target["warnings"]), target["warnings"]
    assert _check(monkeypatch, snapshot, "milli", "--convention", "vaswani", *SMALL) == 1
    assert "128x64 output 0: max" in capsys.readouterr().out
    assert _check(monkeypatch, snapshot, "one-ulp", "--convention", "vaswani") == 0
    assert "(4 bit for bit: not on the convention's grid)" in capsys.readouterr().out


def test_elsewhere_without_a_convention_bits_must_agree(snapshot, monkeypatch, capsys):
    """With no convention there is no tolerance: a 1-ULP move fails and the message names
    the difference of environment and the three ways out; the same bits pass, with a warning."""
    difference = _elsewhere(monkeypatch)
    assert _check(monkeypatch, snapshot, "one-ulp") == 1
    printed = capsys.readouterr().out
    assert f"recorded in another numeric environment ({difference})" in printed, printed
    assert "declare the convention" in printed and "--max-ulp N" in printed and "on this machine" in printed
    assert _check(monkeypatch, snapshot, "") == 0
    assert f"warning: regression: the snapshot was recorded in another numeric environment ({difference})" in (
        capsys.readouterr().out)


def test_max_ulp_applies_wherever_the_snapshot_was_recorded(snapshot, monkeypatch, capsys):
    """--max-ulp given is the rule, here and elsewhere, with or without a convention."""
    assert _check(monkeypatch, snapshot, "one-ulp", "--max-ulp", "1") == 0
    assert "11 of 11 recorded calls within 1 ULP (--max-ulp)" in capsys.readouterr().out
    _elsewhere(monkeypatch)
    assert _check(monkeypatch, snapshot, "milli", "--max-ulp", "1", "--convention", "vaswani", *SMALL) == 1
    assert "within 1 ULP (--max-ulp)" in capsys.readouterr().out


def test_elsewhere_a_rotary_convention_s_tolerance_applies(tmp_path, monkeypatch, capsys):
    """The same for a rotary cache: a 1-ULP move of cos passes within the RoPE bounds in
    another numeric environment, fails bit for bit in the same one."""
    path = tmp_path / "rope.npz"
    rope = ["--api", "rope-cache", "--head-dim", "64", *SMALL]
    assert main(["snapshot", f"{__file__}:rotary_cache", "--out", str(path), *rope]) == 0
    monkeypatch.setenv(CHANGE, "one-ulp")
    command = ["check", f"{__file__}:rotary_cache", "--against", str(path), "-j", "1", *rope]
    assert main(command) == 1
    _elsewhere(monkeypatch)
    assert main(command) == 0
    assert "recorded calls within the tolerance of the declared convention (default theta=10000" in (
        capsys.readouterr().out)


def test_one_ulp_fails_at_zero_and_passes_at_one(snapshot, monkeypatch, capsys, tmp_path):
    """Bit for bit catches a single ULP, names the call and the element; --max-ulp 1 lets it pass."""
    out = tmp_path / "r.json"
    assert _check(monkeypatch, snapshot, "one-ulp", "--json", str(out)) == 1
    check = json.loads(out.read_text())["targets"][0]["checks"][-1]
    worst = next(call for call in check["details"] if not call["passed"])
    assert (check["id"], worst["label"], worst["max_ulp"], worst["outputs"][0]["worst_index"]) == (
        "regression", "50x8", 1, [3, 4])
    assert _check(monkeypatch, snapshot, "one-ulp", "--max-ulp", "1") == 0
    capsys.readouterr()


def test_a_large_change_names_the_element_and_both_values(snapshot, monkeypatch, capsys):
    """A change of 1e-3 at one element is reported at that element with both values."""
    assert _check(monkeypatch, snapshot, "milli") == 1
    printed = capsys.readouterr().out
    assert "128x64 output 0: max" in printed and "at [7, 9]" in printed and "old " in printed, printed


@pytest.mark.parametrize("change, words", [
    ("shape", "changed shape from (50, 8) to (50, 7)"),
    ("dtype", "changed dtype from float32 to float64"),
    ("raises", "returned 1 output before, raised ValueError now"),
])
def test_changes_of_kind_are_named(snapshot, monkeypatch, capsys, change, words):
    """Another shape, another dtype, raising instead of returning: each said in words."""
    assert _check(monkeypatch, snapshot, change) == 1
    printed = capsys.readouterr().out
    assert words in printed, printed


def _rewrite(source, target, member, transform):
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            new.writestr(info, transform(data) if info.filename == member else data)


@pytest.mark.parametrize("damage", ["truncated", "hash", "pickle", "api", "missing"])
def test_bad_snapshots_are_usage_errors(snapshot, tmp_path, capsys, damage):
    """A truncated file, a changed value, a pickle inside, another API, no file: exit 2, one line."""
    bad = tmp_path / f"{damage}.npz"
    api = []
    if damage == "truncated":
        bad.write_bytes(snapshot.read_bytes()[:5000])
    elif damage == "hash":
        member = next(name for name in zipfile.ZipFile(snapshot).namelist() if name != "meta.npy")
        _rewrite(snapshot, bad, member, lambda data: data[:-1] + bytes([data[-1] ^ 1]))
    elif damage == "pickle":
        import io

        buffer = io.BytesIO()
        np.save(buffer, np.array([object()], dtype=object), allow_pickle=True)
        with zipfile.ZipFile(snapshot) as old, zipfile.ZipFile(bad, "w") as new:
            for info in old.infolist():
                new.writestr(info, old.read(info))
            new.writestr("evil.npy", buffer.getvalue())
    elif damage == "api":
        bad, api = snapshot, ["--api", "timesteps"]
    assert main(["check", f"{__file__}:drifting", "--against", str(bad), *api]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error and str(bad) in error, error


def test_diff_of_two_snapshots(snapshot, tmp_path, monkeypatch, capsys):
    """diff calls nothing: the same file is identical, bit for bit; a changed run is not, and
    the last line says how many calls differ and why the exit status is 1; with JSON."""
    assert main(["diff", str(snapshot), str(snapshot)]) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.endswith("calls give identical outputs, bit for bit"), said
    monkeypatch.setenv(CHANGE, "milli")
    changed = tmp_path / "changed.npz"
    assert main(["snapshot", f"{__file__}:drifting", "--out", str(changed), *SMALL]) == 0
    assert main(["snapshot", f"{__file__}:drifting", "--out", str(changed), *SMALL]) == 2  # exists
    report = tmp_path / "diff.json"
    capsys.readouterr()
    assert main(["diff", str(snapshot), str(changed), "--json", str(report)]) == 1
    assert json.loads(report.read_text())["passed"] is False
    said = capsys.readouterr().out.splitlines()[-1]
    assert re.search(r": \d+ of \d+ calls differ \(bit for bit was asked\); exit status 1$", said), said
    capsys.readouterr()


def test_a_snapshot_whose_folder_cannot_be_made_is_one_line_naming_its_out(capsys):
    """--out in a missing folder beneath one nobody can write in (/proc: not even root): exit 2
    before any call, one line naming the --out given and the folder that refuses."""
    out = "/proc/posenc-spec-missing/tests/s.npz"
    assert main(["snapshot", f"{__file__}:drifting", "--out", out, *SMALL]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"--out {out}: the folder /proc is not writable" in error, error


def test_a_learned_table_no_convention_describes(tmp_path, capsys):
    """A seeded random matrix: snapshotted, then checked against itself (regression only)."""
    path = tmp_path / "learned.npz"
    assert main(["snapshot", f"{__file__}:learned", "--out", str(path), *SMALL]) == 0
    assert main(["check", f"{__file__}:learned", "--against", str(path), "-j", "1"]) == 0
    assert "2 checks, 0 failed: conforms" in capsys.readouterr().out


def test_a_change_is_measured_in_the_declared_conventions_units(snapshot, monkeypatch, capsys):
    """Bit for bit under a declared convention: one ULP still fails, and the message says it is
    within rounding in the convention's units; 1e-3 at one element is said to be beyond it."""
    assert _check(monkeypatch, snapshot, "one-ulp", "--convention", "vaswani", *SMALL) == 1
    printed = capsys.readouterr().out
    assert "of an element's bound: within rounding (record the snapshot again" in printed, printed
    assert _check(monkeypatch, snapshot, "milli", "--convention", "vaswani", *SMALL) == 1
    printed = capsys.readouterr().out
    assert "times an element's bound" in printed and "within rounding" not in printed, printed
