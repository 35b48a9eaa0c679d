"""The RoPE gate's power, measured on the RoPE corpus: every wrong rotary embedding is
rejected through a failed check, every correct one conforms, each under the declaration its
registration gives (``entry.config_table()``, read by :func:`declare` as a ``[[targets]]``
table is).

The whole corpus goes through one ``check_many`` call (each target in a sealed child, the
two corpus modules imported once) under ``--fail-fast``, which gives the full run's verdicts
(see ``meta_tests/corpus/test_corpus.py``; a sample is held to it here too); each entry is then its
own test, so that a survivor or a false alarm is named in the test id. Below them, the grid
and judge rules that the corpus depends on, each shown on the probes or verdicts
themselves: calls stay below a declared ``max_positions`` (a cache built once for the
model's length is correct code), the length-dependent types are called at ``L0`` and
``L0 + 1`` where they switch, and of two history calls the failing one decides.
"""

import pytest

from meta_tests.corpus.hints import ROPE as HINTS
from meta_tests.corpus.rope_registry import ROPE_CORRECT, ROPE_ENTRIES, ROPE_WRONG, cache_outcome
from posenc_spec.families.rope import grid, oracle
from posenc_spec.families.rope.judge import RopeJudge
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.judge import Results
from spec_tests.assertions import (
    assert_advice_conforms,
    assert_fail_fast_agrees,
    assert_hint,
    assert_same_hints,
    check_named,
)
from spec_tests.assertions import failure_summary as _summary

DYNAMIC_2X = {"factor": 2.0, "original_max_position_embeddings": 4096}
LONGROPE_HEAD = 8
LONGROPE = {"original_max_position_embeddings": 4096, "factor": 32.0, "short_factor": [1.0, 1.1, 1.2, 1.3],
            "long_factor": [1.0, 2.0, 4.0, 8.0]}


def _declarations(entries) -> dict:
    return {entry.id: declare(entry.config_table()) for entry in entries}


@pytest.fixture(scope="module")
def reports():
    return check_named(_declarations(ROPE_ENTRIES), fail_fast=True)


def test_fail_fast_gives_the_full_runs_verdicts(reports):
    """A sample of wrong and correct entries, run in full: the same verdicts, and every check
    the fail-fast run failed fails in the full run too."""
    assert_fail_fast_agrees(reports, _declarations([*ROPE_WRONG[::12], *ROPE_CORRECT[::8]]))


def test_hints_are_those_of_a_full_run(reports):
    """Every wrong entry run in full names the slips this run named, word for word: a hint
    does not depend on the run mode."""
    assert_same_hints({entry.id: reports[entry.id] for entry in ROPE_WRONG}, _declarations(ROPE_WRONG), fail_fast=False)


def test_each_hints_advice_applied_conforms(reports):
    """Every hint that names keys, pasted into its entry's declaration, makes every call the
    hint reads conform and fails nothing new: a hint is true or absent (and some hints here
    name keys)."""
    assert assert_advice_conforms(reports, ROPE_WRONG) > 0, "no hint of the corpus names keys: nothing was replayed"


@pytest.mark.parametrize("entry", ROPE_WRONG, ids=[entry.id for entry in ROPE_WRONG])
def test_wrong_rotary_embedding_is_rejected(entry, reports):
    """The gate rejects a wrong entry through a failed check of what it computes or does,
    never because it could not import it."""
    report = reports[entry.id]
    assert report.status != "error", f"{entry.target} did not import: {_summary(report)}"
    failed = [check.name for check in report.failures()]
    assert failed and "import" not in failed, (
        f"survivor: {entry.target} passed the gate under {entry.describe()}; its bug: {entry.description}")


@pytest.mark.parametrize("entry", ROPE_CORRECT, ids=[entry.id for entry in ROPE_CORRECT])
def test_correct_rotary_embedding_conforms(entry, reports):
    """The gate accepts a correct entry written in another library's idiom."""
    report = reports[entry.id]
    assert report.conforms, (
        f"false alarm: {entry.target} ({entry.describe()}; {entry.description}) was rejected: {_summary(report)}")


@pytest.mark.parametrize("entry", ROPE_WRONG, ids=[entry.id for entry in ROPE_WRONG])
def test_hint_names_the_planted_slip(entry, reports):
    """The failure's hint names the slip planted in the entry, or stays silent where the calls
    cannot show it."""
    assert_hint(reports[entry.id], HINTS[entry.id], entry.description)


# -- the grid and judge rules the corpus relies on ------------------------------------------------


def _probes(api, max_positions=None, **keys):
    declaration = declare({"target": "m:f", "api": api, "max_positions": max_positions, **keys})
    return grid.probes_for(declaration.spec, api, max_positions), declaration


@pytest.mark.parametrize("api", ["rope-cache", "rope-apply"])
@pytest.mark.parametrize("max_positions", [2048, 131072, 163840])
def test_calls_stay_below_the_declared_max_positions(api, max_positions):
    """A model of ``max_positions`` takes positions ``0 .. max_positions - 1``: no call goes
    past them (vLLM's cache of that many rows raises IndexError beyond), and the long call
    reaches the last one, also beyond the default 131072."""
    probes, _ = _probes(api, max_positions)
    highest = [int(probe.positions.max()) for probe in probes]
    assert max(highest) == max_positions - 1, f"{api}, max_positions {max_positions}: highest position {max(highest)}"


def test_dynamic_max_positions_is_its_l0_not_a_cap():
    """Without ``original_max_position_embeddings``, dynamic's ``max_positions`` is ``L0``
    (transformers' reading), the length scaling starts from: the grid goes past it."""
    probes, declaration = _probes("rope-cache", 4096, rope_type="dynamic", rope_parameters={"factor": 2.0})
    assert declaration.spec.convention.original_length() == 4096
    assert max(int(probe.positions.max()) for probe in probes) == grid.LONGEST


@pytest.mark.parametrize("api", ["rope-cache", "rope-apply"])
@pytest.mark.parametrize("rope_type, parameters, head_dim", [("dynamic", DYNAMIC_2X, None),
                                                              ("longrope", LONGROPE, LONGROPE_HEAD)])
def test_length_dependent_types_are_called_where_they_switch(api, rope_type, parameters, head_dim):
    """dynamic and longrope change at ``L = L0 + 1``: per head size a fresh call of length
    ``L0`` and one of ``L0 + 1`` come before the long call, and the ``L0 + 1`` call comes
    again as the first call after it, a history call (the short call cannot show a state
    that every call below ``L0`` resets, as transformers' dynamic update does)."""
    probes, declaration = _probes(api, rope_type=rope_type, rope_parameters=parameters, head_dim=head_dim)
    l0 = declaration.spec.convention.original_length()
    head = declaration.spec.head_dims[0]
    mine = [probe for probe in probes if probe.head_dim == head and probe.role in ("table", "history")]
    lengths = [(probe.role, int(probe.positions.max()) + 1) for probe in mine]
    long_call = max(length for _, length in lengths)
    assert lengths.index(("table", l0)) < lengths.index(("table", l0 + 1)) < lengths.index(("table", long_call)), \
        lengths
    after_long = [entry for entry in lengths[lengths.index(("table", long_call)) + 1:] if entry[0] == "history"]
    assert after_long[0] == ("history", l0 + 1), lengths


def test_a_type_independent_of_length_gets_no_switch_calls():
    """Types whose frequencies do not follow the call's length keep the grid they had."""
    probes, _ = _probes("rope-cache", rope_type="yarn", rope_parameters=DYNAMIC_2X | {"factor": 4.0})
    assert not any("length-" in probe.slot for probe in probes)


def test_a_passing_history_call_does_not_hide_a_failing_one():
    """Two history calls share ``history[d=D]``: the ``L0 + 1`` call again, wrong (still the
    long call's frequencies, as transformers keeps them), then the short call again, right.
    The check fails and names the ``L0 + 1`` call."""
    probes, declaration = _probes("rope-cache", rope_type="dynamic", rope_parameters=DYNAMIC_2X, head_dim=8)
    conv = declaration.spec.convention
    history = [probe for probe in probes if probe.role == "history"]
    assert [probe.slot for probe in history] == ["d=8:length-4097-again", "d=8:short-again"]
    results = Results()
    judge = RopeJudge(declaration.spec, "rope-cache", results)
    again_long, again_short = history
    judge.judge(again_long, cache_outcome(*oracle.cache(again_long.positions, conv, again_long.head_dim,
                                                        seq_len=grid.LONGEST + 1)))
    judge.judge(again_short, cache_outcome(*oracle.cache(again_short.positions, conv, again_short.head_dim)))
    verdict = results.by_id["history[d=8]"]
    assert verdict.status == "failed" and verdict.message.startswith("d=8:length-4097-again"), verdict.message


def test_a_history_call_that_is_right_passes():
    """The same two calls, both right: the check passes (the merge does not fail by itself)."""
    probes, declaration = _probes("rope-cache", rope_type="dynamic", rope_parameters=DYNAMIC_2X, head_dim=8)
    results = Results()
    judge = RopeJudge(declaration.spec, "rope-cache", results)
    for probe in (probe for probe in probes if probe.role == "history"):
        judge.judge(probe, cache_outcome(*oracle.cache(probe.positions, declaration.spec.convention, probe.head_dim)))
    assert results.by_id["history[d=8]"].passed, results.by_id["history[d=8]"].message
