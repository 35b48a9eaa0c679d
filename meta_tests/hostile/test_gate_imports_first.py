"""Nothing the gate's process needs is imported after a target ran: a target running as the
gate's user (an ordinary CI user owns the interpreter, site-packages and the checkout) may
change any file, and a module the gate read only afterwards would run its code in the gate.

A real ``check`` of a wrong and a correct corpus target of every family, writing every
output (``--json``, ``--junitxml``, ``--annotations github``, ``--plots``, ``-v``), runs in
a process that records ``sys.modules`` when the first target's child is forked; the set
must not have grown when the command ends.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from meta_tests.corpus.every import every_corpus
from meta_tests.hostile import MAX_POSITIONS
from meta_tests.hostile.test_cli import RUN_LIMIT

WORKTREE = Path(__file__).resolve().parents[2]
RECORDING_RUN = '''\
import json
import sys

from posenc_spec.gate import sandbox

first = {}
spawn = sandbox.Template.spawn


def recording_spawn(self, *arguments, **keywords):
    first.setdefault("modules", set(sys.modules))
    return spawn(self, *arguments, **keywords)


sandbox.Template.spawn = recording_spawn
from posenc_spec.cli import main  # noqa: E402

status = main(sys.argv[2:])
late = sorted(set(sys.modules) - first["modules"]) if first else None
with open(sys.argv[1], "w") as out:
    json.dump({"status": status, "late": late}, out)
'''


def _toml(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(key)} = {_toml(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(value)  # strings, integers, finite floats and booleans are written alike


def _config() -> str:
    """One wrong and one correct entry of every corpus, as ``[[targets]]`` tables."""
    tables = []
    for _, entries, _ in every_corpus():
        for kind in ("wrong", "correct"):
            entry = next(entry for entry in entries if entry.kind == kind)
            table = {**entry.config_table(), "max_positions": MAX_POSITIONS}
            tables.append("[[targets]]\n" + "".join(f"{json.dumps(key)} = {_toml(value)}\n"
                                                   for key, value in table.items()))
    return "\n".join(tables)


def test_no_module_is_imported_after_the_first_target_started(tmp_path):
    """Every output written, of failing and conforming targets of every family: the gate's
    process imports nothing once the first target's child exists."""
    (tmp_path / "gate.toml").write_text(_config())
    (tmp_path / "recording_run.py").write_text(RECORDING_RUN)
    record = tmp_path / "record.json"
    done = subprocess.run([sys.executable, str(tmp_path / "recording_run.py"), str(record), "check",
                           "--config", str(tmp_path / "gate.toml"), "--json", str(tmp_path / "report.json"),
                           "--junitxml", str(tmp_path / "report.xml"), "--annotations", "github",
                           "--plots", str(tmp_path / "plots"), "-v", "-j", "2"],
                          cwd=WORKTREE, capture_output=True, text=True, timeout=RUN_LIMIT * 3)
    result = json.loads(record.read_text())
    assert result["status"] == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert result["late"] == [], " ".join(result["late"])
    assert (tmp_path / "report.xml").stat().st_size and json.loads((tmp_path / "report.json").read_text())
    assert any((tmp_path / "plots").iterdir()) and "::error" in done.stdout
