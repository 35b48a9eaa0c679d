"""``posenc-spec plot`` for rotary embeddings (``--api rope-*``) and for regression (``--against``),
and the rows of a timesteps table named as timesteps.

The RoPE targets are corpus entries (``meta_tests/corpus/rope_correct.py`` and
``rope_wrong.py``), declared here with the flags of their registration and one head size
(``--head-dim 64``, unless the entry declares its own) so that each plot makes few calls;
they are imported only by the gate's child. The snapshot is recorded by ``posenc-spec
snapshot`` itself, of a reference implementation with the grid capped at 64 positions.
"""

from __future__ import annotations

import shutil
import types

import numpy as np
import pytest

from posenc_spec.cli import main
from posenc_spec.families.sinusoidal import diagnostics
from posenc_spec.figures.gate_plots import write_figures
from posenc_spec.gate.declaration import declare
from posenc_spec.regression.snapshot_reader import read_snapshot
from spec_tests.figure_compare import assert_png

CORRECT, WRONG = "meta_tests.corpus.rope_correct", "meta_tests.corpus.rope_wrong"
HEAD = ["--head-dim", "64"]
# (target, api, the flags of its registration, the PNGs drawn)
ROPE_PLOTS = {
    "cache-correct": (f"{CORRECT}:linear_scaled_einsum", "rope-cache",
                      ["--cache-call", "batched", "--rope-type", "linear", "--rope-param", "factor=4", *HEAD],
                      ("cos", "sin")),
    "cache-wrong": (f"{WRONG}:sin_cos_swapped", "rope-cache", HEAD, ("cos", "sin")),
    "apply-correct": (f"{CORRECT}:megatron_sbhd_linear", "rope-apply",
                      ["--partial-rotary-factor", "0.5", "--rope-type", "linear", "--rope-param", "factor=2",
                       "--x-layout", "sbhd", *HEAD], ("x",)),
    "apply-wrong": (f"{WRONG}:rotation_sign_flipped", "rope-apply", HEAD, ("x",)),
    "freqs-wrong": (f"{WRONG}:exponent_over_head_dim", "rope-freqs", ["--partial-rotary-factor", "0.25", *HEAD],
                    ("inv_freq",)),
}

TARGETS = '''
import numpy as np


def nudged(num_positions, dim):
    """The reference table with the first half of its middle row one ULP up."""
    from reference_impls.numpy_vectorized import positional_encoding
    table = positional_encoding(num_positions, dim)
    row = num_positions // 2
    table[row, : dim // 2] = np.nextafter(table[row, : dim // 2], np.inf)
    return table


def raises(*args):
    raise RuntimeError("boom")
'''
SNAPSHOT_TARGET = "reference_impls.numpy_vectorized:positional_encoding"
SNAPSHOT_MAX_POSITIONS = "64"


def plot(argv, capsys) -> tuple[int, str, str]:
    """Run ``posenc-spec plot`` with ``argv``: the exit status, standard output and standard error."""
    status = main(["plot", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    path = tmp_path_factory.mktemp("targets") / "targets.py"
    path.write_text(TARGETS)
    return path


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """A snapshot of the reference table on the grid up to 64 positions, written by posenc-spec snapshot."""
    path = tmp_path_factory.mktemp("snapshot") / "reference.npz"
    status = main(["snapshot", SNAPSHOT_TARGET, "--max-positions", SNAPSHOT_MAX_POSITIONS, "--out", str(path)])
    assert status == 0 and path.is_file(), f"posenc-spec snapshot: exit {status}"
    return path


# -- rotary embeddings ---------------------------------------------------------------------


@pytest.mark.parametrize("case", ROPE_PLOTS)
def test_rope_plot_draws_the_call_furthest_out_of_bound(case, tmp_path, capsys):
    """Exit 0 and one PNG per array of the call (cos and sin, x, inv_freq), each named in the output; a
    correct target is within tolerance, a wrong one's summary names its worst element (and its position)."""
    target, api, flags, names = ROPE_PLOTS[case]
    status, out, err = plot([target, "--api", api, *flags, "--out", str(tmp_path)], capsys)
    assert status == 0, f"plot {case}: exit {status}\n{out}{err}"
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(f"difference_{name}.png" for name in names)
    for name in names:
        assert_png(tmp_path / f"difference_{name}.png")
        assert f"{name}: {tmp_path / f'difference_{name}.png'}" in out, f"{name} not named:\n{out}"
    heading = out.splitlines()[0]
    assert heading.startswith(f"{target} at d=") and "furthest out of bound" in out, out
    if case.endswith("-correct"):
        assert "every element within tolerance" in heading, heading
    else:
        assert "elements out of bound; worst at [" in heading and "got " in heading and "expected " in heading, heading
        assert api == "rope-freqs" or " is position " in heading, heading


def test_rope_plot_of_a_target_that_always_raises_exits_1(targets, tmp_path, capsys):
    """Every call raised: exit 1, one line naming the first call and what it did, no pictures."""
    status, out, err = plot([f"{targets}:raises", "--api", "rope-cache", *HEAD, "--out", str(tmp_path / "out")],
                            capsys)
    assert status == 1 and "gave nothing to draw" in err and "raised RuntimeError: boom" in err, f"exit {status}\n{err}"
    assert err.count("\n") == 1 and not (tmp_path / "out").exists(), err


@pytest.mark.parametrize(("argv", "message"), [
    (["--api", "rope-cache", "--dim", "64"], "--dim sizes a table; it does not apply to --api rope-cache"),
    (["--api", "rope-apply", "--layout", "diagonal"], "--layout must be one of"),
    (["--api", "rope-cache"], "--out DIR is required"),
])
def test_rope_plot_usage_errors_exit_2(argv, message, capsys):
    """A table size with a RoPE api, a bad RoPE flag, no --out: exit 2 and one line."""
    status, _, err = plot([f"{WRONG}:sin_cos_swapped", *argv], capsys)
    assert status == 2 and message in err and err.count("\n") == 1, f"plot {argv}: exit {status}\n{err}"


# -- regression ------------------------------------------------------------------------------


def test_plot_against_draws_the_output_that_moved_furthest(snapshot, targets, tmp_path, capsys):
    """A target one ULP off on half a row of every table: exit 0, the PNG written (by default beside the
    snapshot), the summary counts the calls within 0 ULP and names the worst call, 1 ULP away."""
    recorded = read_snapshot(snapshot)
    returned = [call for call in recorded.calls if call.outputs]
    out = tmp_path / "ulp.png"
    status, printed, err = plot([f"{targets}:nudged", "--against", str(snapshot), "--out", str(out)], capsys)
    assert status == 0, f"exit {status}\n{printed}{err}"
    assert_png(out)
    assert f"ulp: {out}" in printed, printed
    within = len(recorded.calls) - len(returned)  # the calls that raise both times; every table moved
    assert f"{within} of {len(recorded.calls)} recorded calls within 0 ULP" in printed, printed
    assert f"worst {returned[0].label} ({returned[0].outputs[0].dtype}): max 1 ULP at [" in printed, printed
    status, printed, err = plot([SNAPSHOT_TARGET, "--against", str(snapshot)], capsys)
    assert status == 0 and f"{len(recorded.calls)} of {len(recorded.calls)} recorded calls within 0 ULP" in printed \
        and "0 ULP over" in printed, f"the snapshot's own target: exit {status}\n{printed}"
    assert_png(snapshot.with_suffix(".png"))


@pytest.mark.parametrize("given", ["new/", "new/deeper/", "existing"])
def test_plot_against_into_a_folder_writes_the_snapshots_name_in_it(snapshot, tmp_path, capsys, given):
    """--out naming a folder, made when it ends in "/" (a PNG file named like the folder was
    written), or one that exists: the picture is the snapshot's name with .png in it."""
    (tmp_path / "existing").mkdir()
    out = f"{tmp_path}/{given}"
    status, printed, err = plot([SNAPSHOT_TARGET, "--against", str(snapshot), "--out", out], capsys)
    picture = tmp_path / given / f"{snapshot.stem}.png"
    assert status == 0 and f"ulp: {picture}" in printed, f"exit {status}\n{printed}{err}"
    assert_png(picture)
    assert sorted(path.name for path in (tmp_path / given).iterdir()) == [picture.name]


def test_plot_against_a_tampered_snapshot_exits_2(snapshot, tmp_path, capsys):
    """One byte of a member changed: exit 2 and one line naming the file; nothing is called or drawn."""
    tampered = tmp_path / "tampered.npz"
    shutil.copyfile(snapshot, tampered)
    data = bytearray(tampered.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(data)
    out = tmp_path / "ulp.png"
    status, printed, err = plot([SNAPSHOT_TARGET, "--against", str(tampered), "--out", str(out)], capsys)
    assert status == 2 and err.startswith("posenc-spec plot: error: ") and str(tampered) in err, f"exit {status}\n{err}"
    assert err.count("\n") == 1 and not printed and not out.exists(), err


def test_plot_against_a_target_that_always_raises_exits_1(snapshot, targets, tmp_path, capsys):
    """Nothing returned both times: exit 1 and one line, no picture."""
    out = tmp_path / "ulp.png"
    status, _, err = plot([f"{targets}:raises", "--against", str(snapshot), "--out", str(out)], capsys)
    assert status == 1 and "gave nothing to draw" in err and "raised RuntimeError" in err, f"exit {status}\n{err}"
    assert err.count("\n") == 1 and not out.exists(), err


# -- timesteps are rows of timesteps -------------------------------------------------------------


@pytest.fixture
def table_figure_calls(monkeypatch):
    """The calls of table_figures (which plot and check --plots make), recorded and not drawn."""
    calls = []

    def record(table, exp, **options):
        calls.append((table, exp, options))
        return {}

    monkeypatch.setattr(diagnostics, "table_figures", record)
    return calls


def test_timestep_tables_are_drawn_with_timestep_rows(table_figure_calls, tmp_path, capsys):
    """plot --api timesteps at timesteps 0..49 (which look like positions) and check --plots of a
    timesteps target both pass row_kind="timestep": the rows are labelled Timestep, not Position."""
    num_steps = 50
    status, out, err = plot(["reference_impls.timestep:timestep_embedding", "--api", "timesteps", "--convention",
                             "concat", "--num-positions", str(num_steps), "--t-max", str(num_steps - 1), "--dim", "16",
                             "--out", str(tmp_path)], capsys)
    assert status == 0, f"exit {status}\n{out}{err}"
    (table, exp, options), = table_figure_calls
    np.testing.assert_array_equal(exp.positions, np.arange(num_steps), err_msg="timesteps 0..49")
    assert options["row_kind"] == "timestep", options
    heatmap = diagnostics.table_heatmap_figure(table, exp, title=options["title"], row_kind=options["row_kind"])
    assert heatmap.axes[0].get_ylabel() == "Timestep", heatmap.axes[0].get_ylabel()

    declaration = declare({"target": "reference_impls.timestep:timestep_embedding", "api": "timesteps",
                           "convention": "concat"})
    kept = types.SimpleNamespace(slot=f"int64:{num_steps}x16", table=table, positions=exp.positions, dtype="float32")
    report = types.SimpleNamespace(target=declaration.target, conforms=False, kept=kept, declaration=declaration)
    write_figures([report], tmp_path / "plots")
    assert len(table_figure_calls) == 2 and table_figure_calls[-1][2].get("row_kind") == "timestep", \
        table_figure_calls
