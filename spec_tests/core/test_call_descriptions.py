"""Call descriptions (``call = "fn(head_dim, num_positions)"``, ``posenc_spec/gate/described.py``):
what is read from the text, what is refused (one line naming the part and the API's roles), what
a description asks of the rotary grid, and how the child makes the call
(``posenc_spec/gate/child/described.py``)."""

from __future__ import annotations

import pytest
import torch

from posenc_spec.gate.child.convert import BadResult
from posenc_spec.gate.child.described import Described
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError

TARGET = "pkg.mod:fn"


def refused(keys: dict, *words: str) -> str:
    """``declare(keys)``'s usage error, one line holding every word."""
    with pytest.raises(UsageError) as caught:
        declare({"target": TARGET, **keys})
    message = str(caught.value)
    assert "\n" not in message and all(word in message for word in words), (keys, message)
    return message


def test_roles_constants_keywords_and_the_element_read():
    """Roles in any order, positional or keyword, constants of every kind, a method and the element picked."""
    declaration = declare({"target": TARGET, "api": "rope-cache",
                           "call": "Rotary(dim=head_dim, base=-2.5, name='r', cached=None).forward(positions)[0]"})
    form = declaration.calling.form
    assert form.head == "Rotary" and form.roles == {"head_dim", "positions"} and form.builds()
    assert declaration.how()["call"] == [
        ["call", [], {"base": ["value", -2.5], "cached": ["value", None], "dim": ["role", "head_dim"],
                      "name": ["value", "r"]}],
        ["attr", "forward"], ["call", [["role", "positions"]], {}], ["item", 0]]
    assert declaration.calling.declared_keys() == {"call": form.text}


def test_a_misspelled_role_gets_the_nearest_and_the_list():
    """A name that is no role of the API is refused with "did you mean" and the API's roles."""
    refused({"api": "rope-cache", "call": "fn(head_dm, num_positions)"}, "call", "'head_dm'", "did you mean 'head_dim'",
            "positions, num_positions, head_dim")
    refused({"api": "alibi-bias", "call": "fn(num_heads, q_len)"}, "'q_len'", "query_length")


@pytest.mark.parametrize("text, part", [
    ("fn(head_dim * 2, num_positions)", "'head_dim * 2'"),
    ("fn(*sizes)", "'*sizes'"),
    ("fn(positions)[0:2]", "'0:2'"),
    ("fn(positions)[head_dim]", "'head_dim'"),
    ("fn(x=[1, 2], positions=positions)", "'[1, 2]'"),
    ("make()(positions) + 1", "'make()(positions) + 1'"),
    ("fn(positions, theta=1e400)", "'1e400' is not a finite number"),
    ("fn(positions, theta=-1e400)", "'-1e400' is not a finite number"),
])
def test_anything_but_roles_literals_and_one_chain_is_refused(text, part):
    """Arithmetic, unpacking, slices, containers, expressions and numbers beyond a float name the
    offending part and the roles."""
    refused({"api": "rope-cache", "call": text}, "call", part, "roles of the rope-cache API")


def test_a_description_that_calls_nothing_or_does_not_parse_is_refused():
    """A bare name or attribute calls nothing; broken syntax is named as such."""
    refused({"api": "rope-cache", "call": "Rotary.pe"}, "calls nothing")
    refused({"api": "rope-cache", "call": "fn(head_dim,"}, "is not a call")
    refused({"api": "rope-cache", "call": ""}, "must be a call")


def test_a_description_replaces_the_signature_keys():
    """call says how the target is called: signature, init, method or kwargs beside it are refused."""
    refused({"api": "rope-apply", "call": "fn(x, positions)", "signature": "q-k-cos-sin"}, "call", "signature")
    refused({"api": "rope-apply", "call": "fn(x, positions)", "kwargs": {"a": 1}}, "kwargs")


def test_a_rope_apply_description_handing_x_alone_is_refused():
    """keras-hub's layer(x, start_index=0) rotates by positions the gate cannot choose: refused, saying to pass them."""
    refused({"api": "rope-apply", "call": "RotaryEmbedding()(x, start_index=0)"}, "call", "hands x alone",
            "positions=positions")


def test_an_api_without_roles_names_its_signatures():
    """An API whose family lists no roles takes no description; the message names its signatures."""
    refused({"api": "t5-buckets", "call": "fn(relative_position)"}, "takes no call description", "static")


def test_a_rotary_cache_call_follows_the_roles_it_hands():
    """x makes an x-positions cache call, positions a positions call, num_positions alone a length
    call; a declared cache_call that disagrees is refused."""
    calls = {"fn(x, positions)": "x-positions", "fn(positions, head_dim)": "positions",
             "precompute(head_dim, num_positions, 10000.0)": "length"}
    for text, expected in calls.items():
        assert declare({"target": TARGET, "api": "rope-cache", "call": text}).spec.cache_call == expected, text
    refused({"api": "rope-cache", "call": "fn(head_dim, num_positions)", "cache_call": "positions"}, "cache_call",
            "num_positions", "'length'")
    refused({"api": "rope-cache", "call": "fn(head_dim)"}, "positions, num_positions or x")


def test_a_call_splitting_q_and_k_takes_only_head_layouts():
    """q and k are heads of x: an sbhd x is refused naming x_layout; a call of x alone takes any layout."""
    refused({"api": "rope-apply", "call": "fn(q, k, cos, sin)", "x_layout": "sbhd"}, "x_layout", "q", "bhsd or bshd")
    assert declare({"target": TARGET, "api": "rope-apply", "call": "fn(x, cos, sin)", "x_layout": "sbhd"})


class Table(torch.nn.Module):
    """A module counting how often it is built, keeping a table as ``pe``."""

    built = 0

    def __init__(self, rows: int, width: int = 2):
        super().__init__()
        Table.built += 1
        self.register_buffer("pe", torch.arange(rows * width, dtype=torch.float32).reshape(rows, width))
        self.scale = torch.nn.Parameter(torch.ones(()))

    def forward(self, positions):
        return {"table": self.pe[positions] * self.scale, "training": self.training}, "ignored"


def steps(text: str, api: str = "rope-cache") -> list:
    return declare({"target": TARGET, "api": api, "call": text}).how()["call"]


def test_the_child_builds_one_object_per_argument_set_in_eval_mode():
    """Calls of the same sizes share one object (built once), another size builds another; the
    module runs in eval mode without grad, and the element picked is the result."""
    Table.built = 0
    made = Described(Table, steps("Table(num_positions, width=2).forward(positions)[0]['table']"))
    first = made({"num_positions": 4, "positions": torch.tensor([1, 3])})
    again = made({"num_positions": 4, "positions": torch.tensor([0])})
    made({"num_positions": 5, "positions": torch.tensor([0])})
    assert Table.built == 2 and first.tolist() == [[2.0, 3.0], [6.0, 7.0]] and again.tolist() == [[0.0, 1.0]]
    assert not first.requires_grad
    assert Described(Table, steps("Table(num_positions).forward(positions)[0]['training']"))(
        {"num_positions": 2, "positions": torch.tensor([0])}) is False


def test_the_child_reads_an_attribute_after_construction():
    """``Class(...).pe`` returns the table the object keeps."""
    made = Described(Table, steps("Table(rows=dim, width=num_positions).pe", api="table"))
    assert tuple(made({"dim": 3, "num_positions": 2}).shape) == (3, 2)


def test_an_element_of_what_is_no_container_is_a_bad_result():
    """[0] of a tensor, or an index past a tuple's end, is a BadResult naming what came back."""
    with pytest.raises(BadResult, match="Tensor where \\[0\\] picks"):
        Described(lambda positions: positions, steps("fn(positions)[0]"))({"positions": torch.arange(3)})
    with pytest.raises(BadResult, match="tuple of 2 element"):
        Described(lambda positions: (positions, 1), steps("fn(positions)[2]"))({"positions": torch.arange(3)})


def test_a_signature_with_a_preset_is_made_as_its_description():
    """A signature the family says as a description reaches the child as one, with init,
    method and kwargs spliced in: the object built, the method read, the keywords added."""
    declaration = declare({"target": TARGET, "api": "rope-apply", "signature": "xq-xk-freqs-cis",
                           "init": {"dim": "{head_dim}", "base": 500000}, "method": "apply", "kwargs": {"fast": True}})
    assert declaration.how()["call"] == [
        ["call", [], {"base": ["value", 500000], "dim": ["role", "head_dim"]}], ["attr", "apply"],
        ["call", [["role", "q"], ["role", "k"], ["role", "freqs_cis"]], {"fast": ["value", True]}]]
    slopes = declare({"target": TARGET, "api": "alibi-bias", "signature": "heads-length-max"}).how()["call"]
    assert slopes == [["call", [["role", "num_heads"], ["role", "key_length"], ["role", "alibi_bias_max"]], {}]]


def test_a_signature_the_description_cannot_say_keeps_the_familys_call():
    """A signature without a preset, an object built from a config, or a size that is no role
    of the API is made by the family's own adapter."""
    for keys in ({"api": "rope-apply", "signature": "x-offset", "x_layout": "bhsd"},
                 {"api": "rope-apply", "init": {"n": "{num_positions}"}},
                 {"api": "alibi-bias", "signature": "module-ij"}):
        assert "call" not in declare({"target": TARGET, **keys}).how(), keys


class LyingPair(tuple):
    """A tuple whose own indexing hands back something else than it holds."""

    def __getitem__(self, index):
        return torch.zeros(1)


def test_an_element_is_read_by_the_base_type_not_the_results_own_code():
    """[0] of a tuple subclass reads what the tuple holds, never its __getitem__."""
    made = Described(lambda positions: LyingPair((positions, None)), steps("fn(positions)[0]"))
    assert made({"positions": torch.arange(3)}).tolist() == [0, 1, 2]
