"""A ``posenc-spec check`` of hostile targets as an ordinary user, each attacker followed
by a correct target, and what its report must say of each attacker (the gate tests of
``test_confine_sched_gate.py`` and ``test_confine_signals_gate.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from meta_tests.another_user import run_as_other_user
from meta_tests.hostile import MAX_POSITIONS, target
from meta_tests.hostile.test_cli import RUN_LIMIT

TIMEOUT = 5
WORKTREE = Path(__file__).resolve().parents[2]
REFUSED = "Operation not permitted"
CORRECT = "vaswani_table"


def check_attacks(folder: Path, module: str, attacks, others, uid: int, env: dict):
    """One ``check --json -`` in ``folder`` as ``uid``, of each of ``attacks`` (functions of
    ``meta_tests/hostile/MODULE.py``) followed by a correct target, then ``others``: the
    finished command, and ``(name, report entry)`` in the order run."""
    folder.chmod(0o777)
    names = [name for attack in attacks for name in (attack, CORRECT)] + list(others)
    paths = [target("hostile_tables" if name == CORRECT else module, name) for name in names]
    config = folder / "gate.toml"
    config.write_text(f"max_positions = {MAX_POSITIONS}\ntimeout = {TIMEOUT}\n"
                      + "".join(f"[[targets]]\ntarget = {json.dumps(path)}\n" for path in paths))
    config.chmod(0o644)
    done = run_as_other_user([sys.executable, "-m", "posenc_spec", "check", "--config", str(config), "-j", "1",
                              "--json", "-"], uid=uid, cwd=WORKTREE, env=env, capture_output=True, text=True,
                             timeout=RUN_LIMIT)
    assert done.stdout, (done.returncode, done.stderr[-2000:])
    return done, list(zip(names, json.loads(done.stdout)["targets"], strict=True))


def assert_refused_then_conforms(entries, attack: str) -> None:
    """``attack``'s first failed check is a call refused inside the target, and the correct
    target run after it conforms."""
    position = [name for name, _ in entries].index(attack)
    failed = [check for check in entries[position][1]["checks"] if check["status"] == "failed"]
    assert failed and failed[0]["id"].startswith("call[") and REFUSED in failed[0]["reason"], (attack, failed[:2])
    assert entries[position + 1][1]["status"] == "conforms", (attack, entries[position + 1][1]["checks"][:3])
