"""``posenc-spec identify`` of ALiBi targets: the slope rule, B, partial ALiBi and the bias's form
found from the values, checked by ``check`` on the whole grid; a target no member gives is
"none" (exit 1); the answer compared with a declaration names what differs; ``init`` writes
the answer as an entry ``check`` accepts."""

from __future__ import annotations

import json

from posenc_spec.cli import main


def _identify(capsys, *arguments) -> tuple[int, dict]:
    status = main(["identify", *arguments, "--json", "answer.json"])
    capsys.readouterr()
    with open("answer.json") as handle:
        return status, json.load(handle)


def test_slopes_are_named_by_their_rule(impl, capsys):
    """The paper's slopes are paper, the geometric ones geometric (compared with a declared paper
    rule, the difference is named); check accepts each answer on its whole grid."""
    status, answer = _identify(capsys, "impl:paper_slopes", "--api", "alibi-slopes")
    assert (status, answer["name"], answer["check"]) == (0, "paper", "conforms"), answer["message"]
    status, answer = _identify(capsys, "impl:geometric_slopes", "--api", "alibi-slopes", "--slope-rule", "paper")
    assert (status, answer["name"]) == (0, "geometric"), answer["message"]
    assert answer["declared"]["differences"] == ['slope_rule "geometric" where "paper" is declared']


def test_a_module_and_a_bias_builder_are_named_by_their_form(impl, capsys):
    """A module called with (i, j) is the bidirectional member; MPT's builder is mpt."""
    status, answer = _identify(capsys, "impl:Bidirectional", "--api", "alibi-bias", "--signature", "module-ij",
                               "--init", "heads={num_heads}")
    assert (status, answer["name"]) == (0, "bidirectional"), answer["message"]
    status, answer = _identify(capsys, "impl:mpt_bias", "--api", "alibi-bias", "--signature", "heads-length-max")
    assert (status, answer["name"]) == (0, "mpt"), answer["message"]


def test_a_bias_no_member_gives_is_none(impl, capsys):
    """A bias with its sign flipped is no member of the family: none, exit 1."""
    status, answer = _identify(capsys, "impl:sign_flipped", "--api", "alibi-bias")
    assert (status, answer["name"], answer["convention"]) == (1, "none", None), answer["message"]
    assert "no member of the family gives every call's bias" in answer["message"]


def test_init_writes_an_entry_check_accepts(impl, capsys):
    """init adds the identified member as a [tool.posenc-spec] entry, and check accepts it."""
    (impl / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert main(["init", "impl:mpt_bias", "--api", "alibi-bias", "--signature", "heads-length-max"]) == 0
    written = (impl / "pyproject.toml").read_text()
    assert 'convention = "mpt"' in written and 'signature = "heads-length-max"' in written, written
    assert main(["check"]) == 0, capsys.readouterr()


def test_a_note_is_no_failure_of_the_answer(impl, capsys):
    """Code that builds the whole (heads, keys, keys) square is the paper's member: check accepts
    it, naming the note on the decoding step at 2050 keys it could not allocate under 256 MiB."""
    status, answer = _identify(capsys, "impl:FullSquare", "--api", "alibi-bias", "--signature", "module-ij",
                               "--init", "heads={num_heads}", "--num-heads", "12", "--max-memory", "256MiB")
    assert (status, answer["name"], answer["check"]) == (0, "paper", "conforms"), answer["message"]
    assert "check accepts it on its whole grid (notes, no failure: call[p=2049])" in answer["message"], answer
