"""The engine judges each call's outcome as the turn receives it (``engine.Verdicts``), while
the child computes the calls sent ahead: the report is the one judging the turn's outcomes
after it gives, byte for byte, in whatever order the outcomes arrive (the sequences that play
before the grid are judged after it); an outcome the turn replaces after it was judged (a
forged channel) has the report judged again from the turn's final outcomes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from posenc_spec.gate.calls import Outcome
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import Calls, Verdicts, judge_run
from posenc_spec.gate.options import run_options
from posenc_spec.gate.output import json_report
from posenc_spec.gate.runner import run_target
from reference_impls.family import sinusoidal_encoding

HERE = Path(__file__).resolve()
PAIRING = HERE.parents[1] / "families" / "rope" / "pairing_targets.py"


def refusing_width_8(n, d):
    if d == 8:
        raise ValueError("width 8 is not supported")
    return sinusoidal_encoding(n, d, "vaswani", dtype=np.float32)


TARGETS = {
    "conforming": {"target": "reference_impls.numpy_vectorized:positional_encoding", "max_positions": 64},
    "wrong-convention": {"target": "reference_impls.numpy_vectorized:positional_encoding", "convention": "concat",
                         "max_positions": 64},
    "raising-call": {"target": f"{HERE}:refusing_width_8", "max_positions": 64},
    "sequences-first": {"target": f"{PAIRING}:every_two_with_half_table", "api": "rope-apply",
                        "layout": "interleaved", "head_dim": 64},
}


@pytest.fixture(scope="module")
def turns():
    """Each target's declaration, calls and turn, made once."""
    made = {}
    for name, keys in TARGETS.items():
        declaration = declare(keys)
        calls = Calls.of(declaration)
        made[name] = (declaration, calls, run_target(declaration, calls.requests(), run_options()))
    return made


def _text(report) -> str:
    return json.dumps(json_report.target_entry(report, 0), sort_keys=True, indent=1)


def _on_arrival(declaration, calls, run, order) -> Verdicts:
    verdicts = Verdicts(declaration, calls)
    for index in order(range(len(run.outcomes))):
        verdicts.arrived(index, run.outcomes[index])
    return verdicts


@pytest.mark.parametrize("order", [list, lambda indices: list(reversed(indices))], ids=["as-made", "reversed"])
@pytest.mark.parametrize("name", TARGETS)
def test_a_report_judged_on_arrival_is_the_one_judged_after_the_turn(turns, name, order):
    """The outcomes judged as they arrive, in the order made or the reverse, give the report
    byte for byte (a failing call's, and a target's whose sequences play first, included)."""
    declaration, calls, run = turns[name]
    verdicts = _on_arrival(declaration, calls, run, order)
    assert verdicts.judged(calls.split(run.outcomes)[0]), "every probe's outcome was judged on arrival"
    late = judge_run(declaration, calls, run)
    assert _text(judge_run(declaration, calls, run, early=verdicts)) == _text(late)
    assert late.conforms == (name == "conforming"), [check.name for check in late.failures()][:3]
    assert calls.sequences_first == (name == "sequences-first")


def test_an_outcome_replaced_after_it_was_judged_is_judged_again(turns):
    """A reply found forged after it was judged (the turn replaces it) fails the report as
    judging the final outcomes after the turn does; the verdicts judged on arrival are not used."""
    declaration, calls, run = turns["conforming"]
    verdicts = _on_arrival(declaration, calls, run, list)
    forged = Outcome("malformed", "malformed reply: the channel held a frame the child did not send for its calls")
    replaced = dataclasses.replace(run, outcomes=[forged, *run.outcomes[1:]])
    assert not verdicts.judged(calls.split(replaced.outcomes)[0])
    report = judge_run(declaration, calls, replaced, early=verdicts)
    assert _text(report) == _text(judge_run(declaration, calls, replaced))
    assert not report.conforms and any("malformed reply" in check.message for check in report.failures())
