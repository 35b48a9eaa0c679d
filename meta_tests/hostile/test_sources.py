"""A target that rewrites the source of a wrong target running after it
(``meta_tests/hostile/rewrites_sources.py``) cannot make that target conform: the gate read
every target's source at the start, and a target whose source changed during the run fails
``import``, naming the file. The victim's file is one the target may write (mode 0666, in a
folder ``POSENC_SPEC_WRITABLE`` names), as it may where the kernel offers no confinement.
"""

from __future__ import annotations

from meta_tests.hostile import MAX_POSITIONS, target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options

WRONG_SOURCE = """\
import numpy as np


def table(num_positions, dim):
    return np.zeros((num_positions, dim), dtype=np.float32)
"""


def test_a_target_rewritten_during_the_run_fails_import_naming_its_file(tmp_path, monkeypatch):
    """The rewriting target conforms (its own code is correct); its victim, wrong as written
    at the start and correct when it ran, fails ``import`` naming its rewritten file."""
    victim = tmp_path / "victim_source.py"
    victim.write_text(WRONG_SOURCE)
    victim.chmod(0o666)
    tmp_path.chmod(0o777)
    monkeypatch.setenv("POSENC_HOSTILE_VICTIM_SOURCE", str(victim))
    monkeypatch.setenv("POSENC_SPEC_WRITABLE", str(tmp_path))
    declarations = [declare({"target": target("rewrites_sources", "rewrites_the_next_target"),
                             "max_positions": MAX_POSITIONS}),
                    declare({"target": f"{victim}:table", "max_positions": MAX_POSITIONS})]
    rewriter, rewritten = check_many(declarations, run_options(jobs=1))
    assert rewriter.conforms, rewriter.failures()[:3]
    assert victim.read_text() != WRONG_SOURCE, "the rewrite did not happen: nothing was tested"
    failed = rewritten.result("import")
    assert failed.status == "failed" and str(victim) in failed.message and "rewritten" in failed.message, failed
