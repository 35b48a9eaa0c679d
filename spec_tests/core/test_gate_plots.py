"""``posenc-spec check --plots DIR``: pictures of each target that does not conform, named in the
report and the JSON; and ``check`` without ``--plots`` never imports matplotlib."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from posenc_spec.cli import main
from spec_tests.figure_compare import FIGURE_NAMES, assert_png

REPO = Path(__file__).resolve().parents[2]

# A formula bug (as bad at every size: the first, 50x8, is drawn), a right table that
# leaves torch's default dtype changed (no formula check fails: the 300x512 table is
# drawn), and a conforming target.
CONFIG = """\
convention = "vaswani"

[[targets]]
target = "meta_tests.corpus.wrong:swapped_sin_cos"

[[targets]]
target = "meta_tests.corpus.wrong:leaves_default_dtype_float64"

[[targets]]
target = "reference_impls.numpy_vectorized:positional_encoding"
"""


def test_check_plots_draws_and_names_the_pictures_of_failing_targets(tmp_path, monkeypatch, capsys):
    """Each failing target gets the four PNGs in DIR/<target>/ at the size where its formula check
    fails worst (else 300x512), named in the report and under "figures" in its JSON entry; the
    conforming target gets none."""
    monkeypatch.chdir(REPO)
    (tmp_path / "gate.toml").write_text(CONFIG)
    plots = tmp_path / "plots"
    status = main(["check", "--config", str(tmp_path / "gate.toml"), "--plots", str(plots),
                   "--json", str(tmp_path / "report.json")])
    printed = capsys.readouterr().out
    assert status == 1, printed
    entries = json.loads((tmp_path / "report.json").read_text())["targets"]
    assert [entry["status"] for entry in entries] == ["does-not-conform", "does-not-conform", "conforms"], printed
    assert "figures" not in entries[2]
    assert sorted(path.name for path in plots.iterdir()) == [
        "meta_tests.corpus.wrong-leaves_default_dtype_float64", "meta_tests.corpus.wrong-swapped_sin_cos"]

    for entry, size in zip(entries[:2], ("50x8", "300x512"), strict=True):
        folder = plots / entry["target"].replace(":", "-")
        assert entry["figures"] == {name: str(folder / f"{name}.png") for name in FIGURE_NAMES}, entry["figures"]
        block = printed[printed.index(entry["target"]):]
        assert f"  figures of the {size} table:" in block, f"{entry['target']}: no {size} figures in\n{printed}"
        for name, path in entry["figures"].items():
            assert f"    {name}: {path}" in block, f"{entry['target']}: {name} not named in\n{printed}"
            assert_png(path)
    assert "figures" not in printed[printed.index("reference_impls.numpy_vectorized"):], printed


def test_check_plots_onto_a_file_is_a_usage_error(tmp_path, capsys):
    """--plots naming an existing file: exit 2 before anything runs."""
    (tmp_path / "taken").write_text("")
    status = main(["check", "reference_impls.numpy_vectorized:positional_encoding", "--plots",
                   str(tmp_path / "taken")])
    error = capsys.readouterr().err
    assert status == 2 and "exists and is not a folder" in error, f"exit {status}\n{error}"


def test_check_without_plots_does_not_import_matplotlib():
    """A whole check run (parser, registration of plot, the gate) leaves matplotlib unimported."""
    code = ("import sys\n"
            "from posenc_spec.cli import main\n"
            "status = main(['check', 'reference_impls.numpy_vectorized:positional_encoding',\n"
            "               '--max-positions', '64'])\n"
            "print(status, sorted(name for name in sys.modules if name.split('.')[0] == 'matplotlib'))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0 and last == "0 []", f"check imported {last!r}\n{done.stdout}\n{done.stderr}"
