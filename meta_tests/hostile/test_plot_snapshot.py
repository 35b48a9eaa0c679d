"""``posenc-spec plot`` and ``snapshot`` against targets that attack their ``--out``
(``meta_tests/hostile/destinations.py``): the destination is checked before the target is
imported, and what the target puts at the path while it runs (a FIFO nobody reads, a
symlink to another folder) is left alone: one line on stderr, exit 3, never a wait and
never a file written through the link.

Every run is in this process, under a hang guard: a write that opened the FIFO would wait
for a reader forever.
"""

from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

from meta_tests.guards import hang_guard
from meta_tests.hostile import MAX_POSITIONS, target
from posenc_spec.cli import main

COMMON = ["--max-positions", str(MAX_POSITIONS), "--timeout", "5"]
OUTPUT_STATUS = 3
CORRECT = target("output", "correct_table")


def _run(argv) -> tuple[int, str, str]:
    """``posenc-spec ARGV`` here, under the hang guard: exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with hang_guard(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def writable_by_any_target(tmp_path):
    """The targets write here (or leave their import's marker) whatever user they run as:
    under root, a user of their own."""
    tmp_path.chmod(0o777)


@pytest.mark.parametrize("argv, words", [
    (["snapshot", CORRECT, "--out", "{tmp}/file/s.npz"], "--out {tmp}/file/s.npz: Not a directory"),
    (["snapshot", CORRECT, "--out", "{tmp}"], "--out {tmp}: is a folder"),
    (["snapshot", CORRECT, "--out", "-"], "--out -: a snapshot is a file, not standard output"),
    (["plot", CORRECT, "--out", "{tmp}/file"], "--out {tmp}/file: {tmp}/file exists and is not a folder"),
    (["plot", CORRECT, "--out", "-"], "--out -: the pictures are PNG files, not standard output"),
])
def test_an_out_that_cannot_be_written_is_refused_before_the_target_is_imported(tmp_path, monkeypatch, argv,
                                                                               words):
    """A file where a folder goes, a folder where a file goes, standard output: exit 2, one
    line naming --out, and the target never imported."""
    marker = tmp_path / "imported"
    monkeypatch.setenv("POSENC_HOSTILE_IMPORTED", str(marker))
    (tmp_path / "file").write_text("a file")
    status, out, err = _run([word.format(tmp=tmp_path) for word in argv] + COMMON)
    assert (status, out, err.count("\n")) == (2, "", 1), err
    assert words.format(tmp=tmp_path) in err, err
    assert not marker.exists(), "the target was imported before --out was checked"


def test_a_snapshot_makes_the_folders_its_out_names(tmp_path):
    """snapshot --out tests/new/s.npz makes tests/new (as plot --out makes its folder) and writes the file there."""
    path = tmp_path / "tests" / "new" / "s.npz"
    status, out, err = _run(["snapshot", CORRECT, "--out", str(path), *COMMON])
    assert status == 0, err
    assert path.is_file() and path.read_bytes()[:2] == b"PK", sorted(os.listdir(tmp_path))


def test_a_snapshot_whose_file_becomes_a_fifo_is_left_alone(tmp_path, monkeypatch):
    """The target puts a FIFO nobody reads where the snapshot goes: exit 3, one line saying
    what the name became, and the FIFO is left as it is."""
    path = tmp_path / "s.npz"
    monkeypatch.setenv("POSENC_HOSTILE_REPORT", str(path))
    status, out, err = _run(["snapshot", target("destinations", "report_becomes_fifo"), "--out", str(path), *COMMON])
    assert (status, out) == (OUTPUT_STATUS, ""), err
    assert err == (f"posenc-spec snapshot: error: --out {path}: s.npz became a FIFO during the run; the snapshot "
                   "was not written\n"), err
    assert path.is_fifo() and sorted(os.listdir(tmp_path)) == ["s.npz"]


def test_a_ulp_picture_whose_file_becomes_a_fifo_is_left_alone(tmp_path, monkeypatch):
    """plot --against FILE.png, and the target puts a FIFO nobody reads at FILE.png while it
    replays: the summary is printed, then one line naming --out; exit 3, no wait."""
    snapshot, picture = tmp_path / "s.npz", tmp_path / "ulp.png"
    hostile = target("destinations", "report_becomes_fifo")
    monkeypatch.setenv("POSENC_HOSTILE_REPORT", str(tmp_path / "while-recording"))
    assert _run(["snapshot", hostile, "--out", str(snapshot), *COMMON])[0] == 0
    monkeypatch.setenv("POSENC_HOSTILE_REPORT", str(picture))
    status, out, err = _run(["plot", hostile, "--against", str(snapshot), "--out", str(picture), "--timeout", "5"])
    assert status == OUTPUT_STATUS and "recorded calls within 0 ULP" in out and "ulp:" not in out, out + err
    assert err == (f"posenc-spec plot: error: --out {picture}: ulp.png became a FIFO during the run; the picture "
                   "was not written\n"), err
    assert picture.is_fifo()


def test_table_pictures_never_go_through_a_symlink_the_target_planted(tmp_path, monkeypatch):
    """plot --out DIR, DIR not there yet, and the target makes DIR a symlink to another
    folder: the verdict is printed, one line names the picture not written; exit 3, and
    nothing is written where the link points."""
    pictures, elsewhere = tmp_path / "pictures", tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("POSENC_HOSTILE_PICTURES", str(pictures))
    monkeypatch.setenv("POSENC_HOSTILE_ELSEWHERE", str(elsewhere))
    status, out, err = _run(["plot", target("destinations", "plants_symlink_for_its_pictures"), "--num-positions",
                             "8", "--dim", "4", "--out", str(pictures)])
    assert status == OUTPUT_STATUS and "elements out of bound" in out, out + err
    assert re.fullmatch(rf"posenc-spec plot: error: cannot write {re.escape(str(pictures))}/\w+\.png: .*\n", err), err
    assert pictures.is_symlink() and list(elsewhere.iterdir()) == []
