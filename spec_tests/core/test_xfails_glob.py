"""xfails patterns (posenc_spec.gate.xfails): matched as the regular expressions they were
once translated to, but without backtracking, so that no pattern and no file of patterns
can stall the gate; the entries that match nothing are named in one line."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_tests.guards import hang_guard
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import plan
from posenc_spec.gate.xfails import UNMATCHED_SHOWN, Glob, parse_xfails

PATTERNS = st.text(alphabet="ab[*?", max_size=12)
IDS = st.text(alphabet="ab[*?", max_size=14)
PLAN = tuple(plan(declare({"target": "pkg.mod:fn"})))


def regex_of(pattern: str) -> re.Pattern:
    """The translation xfails patterns had: ``*`` as ``.*``, ``?`` as ``.``, all else escaped
    (a run of stars collapsed first, so that the backtracking engine stays quick here)."""
    return re.compile(re.escape(re.sub(r"\*+", "*", pattern)).replace(r"\*", ".*").replace(r"\?", "."))


def assert_same_as_the_regex(pattern: str, text: str) -> None:
    expected = regex_of(pattern).fullmatch(text) is not None
    assert Glob(pattern).matches(text) == expected, f"Glob({pattern!r}).matches({text!r}) != {expected} (the regex)"


@settings(max_examples=1000)
@given(PATTERNS, IDS)
def test_a_glob_matches_as_the_regex_did(pattern, text):
    """On random patterns and ids over a small alphabet (stars, question marks and brackets
    in both), the glob agrees with the regex translation."""
    assert_same_as_the_regex(pattern, text)


@st.composite
def id_and_pattern_of_it(draw):
    """An id, and a pattern made from it by turning spans into ``*`` and characters into ``?``:
    the pattern matches the id, whatever the draw."""
    text = draw(st.text(alphabet="abx[]=0", max_size=20))
    pieces, position = [], 0
    while position < len(text):
        step = draw(st.integers(1, 4))
        kind = draw(st.sampled_from(["keep", "star", "question"]))
        chunk = text[position: position + step]
        pieces.append(chunk if kind == "keep" else "*" if kind == "star" else "?" * len(chunk))
        position += step
    return text, "".join(pieces) + draw(st.sampled_from(["", "*"]))


@settings(max_examples=1000)
@given(id_and_pattern_of_it())
def test_a_glob_made_from_an_id_matches_it(drawn):
    """Patterns that do match (random ones rarely do): the glob and the regex both say so."""
    text, pattern = drawn
    assert Glob(pattern).matches(text), (pattern, text)
    assert_same_as_the_regex(pattern, text)


@settings(max_examples=300)
@given(st.lists(PATTERNS.filter(bool), min_size=1, max_size=8), st.lists(IDS, max_size=8))
def test_an_xfails_file_answers_as_its_entries_one_by_one(patterns, ids):
    """An id's entry is the first whose pattern matches it, and the unmatched entries are those
    that match no id: asked id by id, and answered from the one pass over a whole plan."""
    text = "".join(f"{pattern}\n" for pattern in patterns)
    by_id, after_a_pass = parse_xfails(text), parse_xfails(text)
    firsts = [next((entry for entry in by_id.entries if entry.matches(check_id)), None) for check_id in ids]
    unmatched = after_a_pass.unmatched(ids)
    assert unmatched == [entry for entry in after_a_pass.entries if not any(map(entry.matches, ids))]
    assert [by_id.match(check_id) for check_id in ids] == firsts
    assert [after_a_pass.match(check_id) for check_id in ids] == firsts


PATHOLOGICAL = ["*" * 16 + "!", "*" * 16 + "a" + "*" * 16 + "!", "?*" * 40 + "!", "*a" * 5000 + "!", "*" * 100_000]


def test_pathological_patterns_finish():
    """Patterns that are exponential for a backtracking regex (16 stars then a character no id
    ends with), or long, are matched against every id of a plan and a long id, under a guard."""
    long_id = "a" * 10_000
    with hang_guard():
        answers = [[Glob(pattern).matches(text) for text in (*PLAN, long_id)] for pattern in PATHOLOGICAL]
    assert answers[:4] == [[False] * (len(PLAN) + 1)] * 4 and all(answers[4]), answers


def test_a_megabyte_of_distinct_patterns_finishes_with_one_warning():
    """A 1 MiB xfails file of distinct patterns (stars, question marks, literals): parsed,
    every id of a plan matched and the unmatched entries summarised in one line, under a
    guard; the answers agree with trying the entries one by one."""
    makers = (lambda n: f"formula[{n}x*]", lambda n: "*" + "?".join(str(n)) + "*", lambda n: f"*{n}*!*")
    lines, size = [], 0
    while size < (1 << 20) - 64:
        lines.append(makers[len(lines) % 3](len(lines)))
        size += len(lines[-1]) + 1
    lines.append("formula[50x?]")
    with hang_guard():
        xfails = parse_xfails("\n".join(lines) + "\n", "huge.txt")
        warning = xfails.unmatched_warning(PLAN)
        firsts = {check_id: xfails.match(check_id) for check_id in PLAN}
    unmatched = xfails.unmatched(PLAN)
    shown = ", ".join(f"line {entry.line} {entry.pattern!r}" for entry in unmatched[:UNMATCHED_SHOWN])
    assert warning == (f"huge.txt: {len(unmatched)} entries match no check of this run: {shown} and "
                       f"{len(unmatched) - UNMATCHED_SHOWN} more"), warning
    assert len(lines) - len(unmatched) > 1 and firsts["formula[50x8]"] is not None
    for check_id in ("formula[50x8]", "odd[7]", PLAN[-1]):
        assert firsts[check_id] == next((entry for entry in xfails.entries if entry.matches(check_id)), None)


def test_one_unmatched_entry_is_named_as_before():
    """One entry that matches nothing keeps its one-line warning with its line; none, no warning."""
    xfails = parse_xfails("odd[*]\nformula[1x1]  # gone\n", "known.txt")
    assert xfails.unmatched_warning(PLAN) == "known.txt, line 2: 'formula[1x1]' matches no check of this run"
    assert parse_xfails("odd[*]\n", "known.txt").unmatched_warning(PLAN) is None
