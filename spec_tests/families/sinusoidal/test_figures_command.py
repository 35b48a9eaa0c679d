"""``posenc-spec plot``: PNGs of a target's table, and of where it departs from the expected one."""

from __future__ import annotations

import time

import numpy as np
import pytest

from posenc_spec.cli import main
from spec_tests.figure_compare import FIGURE_NAMES, assert_png

PNG_NAMES = tuple(f"{name}.png" for name in FIGURE_NAMES)


def plot(argv) -> int:
    """Run ``posenc-spec plot`` with ``argv``."""
    return main(["plot", *argv])


WRONG_TARGETS = '''
import numpy as np
import torch

def column_five_off(num_positions, dim):
    """The formula, with column 5 off by 1e-3."""
    from reference_impls.numpy_vectorized import positional_encoding
    table = positional_encoding(num_positions, dim)
    table[:, 5] += 1e-3
    return table

def batched(num_positions, dim):
    from reference_impls.numpy_vectorized import positional_encoding
    return positional_encoding(num_positions, dim)[None]

def raises(num_positions, dim):
    raise RuntimeError("boom")

def ints(num_positions, dim):
    return np.zeros((num_positions, dim), dtype=np.int64)

def exits(num_positions, dim):
    import sys
    sys.exit(3)

def exits_hard(num_positions, dim):
    import os
    os._exit(7)

def hangs(num_positions, dim):
    import time
    time.sleep(600)
'''


@pytest.fixture
def targets(tmp_path):
    path = tmp_path / "targets.py"
    path.write_text(WRONG_TARGETS)
    return path


def test_plot_writes_four_readable_pngs(tmp_path, capsys):
    """A conforming table: exit 0, the four PNGs written and readable, the summary says within tolerance."""
    out = tmp_path / "out"
    status = plot(["reference_impls.numpy_vectorized:positional_encoding", "--num-positions", "40", "--dim", "16",
                   "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, f"plot numpy_vectorized: exit {status}\n{printed}"
    assert "every element within tolerance" in printed, printed
    for name in PNG_NAMES:
        assert_png(out / name)
        assert str(out / name) in printed, f"{name} not named in the output:\n{printed}"


def test_plot_timesteps_api_under_its_convention(tmp_path, capsys):
    """The timesteps API (seed 003's embedding under 'concat') draws and conforms."""
    status = plot(["reference_impls.timestep:timestep_embedding", "--api", "timesteps", "--convention", "concat",
                   "--num-positions", "30", "--dim", "16", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert status == 0 and "every element within tolerance" in printed, f"exit {status}\n{printed}"
    assert all((tmp_path / name).is_file() for name in PNG_NAMES)


def test_plot_of_a_wrong_table_names_the_worst_element(targets, tmp_path, capsys):
    """Column 5 off by 1e-3: pictures written (exit 0), the summary names column 5 and how many elements fail."""
    status = plot([f"{targets}:column_five_off", "--num-positions", "40", "--dim", "16", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert status == 0, f"exit {status}\n{printed}"
    assert "40 of 640 elements out of bound; worst at [" in printed and ", 5]" in printed, printed
    assert (tmp_path / "difference.png").is_file()


def test_plot_under_the_wrong_convention_reports_elements_out_of_bound(tmp_path, capsys):
    """An interleaved table declared 'concat': the summary reports elements out of bound."""
    status = plot(["reference_impls.numpy_vectorized:positional_encoding", "--convention", "concat",
                   "--num-positions", "20", "--dim", "8", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert status == 0 and "elements out of bound" in printed, f"exit {status}\n{printed}"


@pytest.mark.parametrize(("attr", "reason"), [
    ("batched", "returned shape 1x40x16, expected 40x16: an extra leading batch axis"),
    ("raises", "raised RuntimeError: boom"),
    ("ints", "returned a ndarray of int64 values, not floating point"),
    ("exits", "called sys.exit(3)"),
    ("exits_hard", "the process exited with status 7"),
])
def test_plot_of_nothing_drawable_exits_1(targets, tmp_path, capsys, attr, reason):
    """A target that raises, exits, returns the wrong shape or no floats: exit 1 with a one-line reason,
    no pictures, and the command itself carries on."""
    status = plot([f"{targets}:{attr}", "--num-positions", "40", "--dim", "16", "--out", str(tmp_path / "out")])
    error = capsys.readouterr().err
    assert status == 1 and reason in error, f"plot {attr}: exit {status}\n{error}"
    assert error.count("\n") == 1 and "Traceback" not in error, f"plot {attr}: not one line:\n{error}"
    assert not (tmp_path / "out").exists()


def test_plot_of_a_hanging_target_stops_at_the_timeout(targets, tmp_path, capsys):
    """A call that never returns is killed after --timeout: exit 1 naming the timeout, well before the hang ends."""
    start = time.monotonic()
    status = plot([f"{targets}:hangs", "--timeout", "1", "--num-positions", "4", "--dim", "4",
                   "--out", str(tmp_path / "out")])
    elapsed = time.monotonic() - start
    error = capsys.readouterr().err
    assert status == 1 and "did not return within the 1 s timeout (killed)" in error, f"exit {status}\n{error}"
    assert elapsed < 300, f"plot hangs: returned after {elapsed:.0f} s although the target sleeps 600 s"


@pytest.mark.parametrize(("argv", "message"), [
    (["no_such_module:f"], "No module named 'no_such_module'"),
    (["reference_impls.numpy_vectorized:nope"], "has no attribute 'nope'"),
    (["reference_impls.numpy_vectorized"], "TARGET must be"),
    (["missing.py:f"], "raised TargetError: no such file:"),
    (["reference_impls.numpy_vectorized:positional_encoding", "--num-positions", "0"],
     "--num-positions must be an integer from 1"),
    (["reference_impls.numpy_vectorized:positional_encoding", "--timeout", "0"],
     "--timeout must be a number greater than 0"),
    (["reference_impls.numpy_vectorized:positional_encoding", "--convention", "nope"], "--convention must be one of"),
    (["reference_impls.numpy_vectorized:positional_encoding", "--dim", "7"], "width 7 is odd"),
])
def test_plot_usage_errors_exit_2(tmp_path, capsys, argv, message):
    """A TARGET that cannot be imported, bad sizes or flags: exit 2 and a one-line reason."""
    status = plot([*argv, "--out", str(tmp_path)])
    error = capsys.readouterr().err
    assert status == 2 and message in error, f"plot {argv}: exit {status}\n{error}"


def test_plot_accepts_torch_results_and_uses_their_dtype(tmp_path, capsys):
    """A float32 torch table (seed 000's reference) is held to the float32 tolerance."""
    status = plot(["reference_impls.torch_impl:positional_encoding", "--num-positions", "30", "--dim", "16",
                   "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert status == 0 and "float32: every element within tolerance" in printed, printed
    assert np.all([(tmp_path / name).stat().st_size > 0 for name in PNG_NAMES])
