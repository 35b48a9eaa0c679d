"""The child's adapters (``posenc_spec/gate/child/adapters.py``): each signature puts the
gate's canonical arguments where the target wants them and hands its result back in the
canonical form; objects are built once per size, in eval mode, and results are read
through the child's converter, never their own methods."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from posenc_spec.gate.child.adapters import adapt


class Recording(torch.nn.Module):
    """Built with keyword arguments; records each object made and each call."""

    made: list = []

    def __init__(self, **arguments):
        super().__init__()
        self.arguments = arguments
        Recording.made.append(arguments)
        self.dropout = torch.nn.Dropout(p=0.5)

    def forward(self, x):
        return self.dropout(x + 1)

    def frequencies(self, head_dim):
        return torch.ones(head_dim // 2)


@pytest.fixture(autouse=True)
def fresh_recording():
    Recording.made = []


def test_objects_are_built_once_per_size_and_run_in_eval_mode():
    """init's placeholders take the call's sizes; a second call of the same size reuses the
    object; a module runs in eval mode (dropout off) under no_grad."""
    call = adapt(Recording, {"api": "table", "signature": "adds-to-x", "x_layout": "sd",
                             "init": {"d_model": "{dim}", "max_len": "{num_positions}", "p": 0.5}, "sizes": {}})
    first = call(5, 4)
    call(5, 4)
    call(7, 4)
    assert Recording.made == [{"d_model": 4, "max_len": 5, "p": 0.5}, {"d_model": 4, "max_len": 7, "p": 0.5}]
    assert torch.equal(first, torch.ones(5, 4)), first  # zeros + 1, no dropout


def test_declared_sizes_fill_the_placeholders_a_call_has_not():
    """{max_positions} and {rope_theta} come from the declaration."""
    call = adapt(Recording, {"api": "rope-freqs", "signature": "canonical", "method": "frequencies",
                             "init": {"n": "{max_positions}", "theta": "{rope_theta}", "dim": "{head_dim}"},
                             "sizes": {"max_positions": 8192, "rope_theta": 500000.0}})
    assert torch.equal(call(8), torch.ones(4))
    assert Recording.made == [{"n": 8192, "theta": 500000.0, "dim": 8}]


def test_adds_to_x_gives_the_table_in_rows_of_positions():
    """x of layout sbd (L, 1, D) or bsd (1, L, D) comes back as (L, D); a given x is used."""
    for layout, shape in (("sbd", (3, 1, 2)), ("bsd", (1, 3, 2))):
        seen = []

        def module(x, seen=seen):
            seen.append(tuple(x.shape))
            return x + torch.arange(6.0).reshape(x.shape)

        call = adapt(module, {"api": "table", "signature": "adds-to-x", "x_layout": layout})
        assert torch.equal(call(3, 2), torch.arange(6.0).reshape(3, 2)) and seen == [shape]
        x = torch.full(shape, 2.0)
        assert torch.equal(call(3, 2, x), torch.arange(6.0).reshape(3, 2) + 2)


def test_q_and_k_are_two_heads_of_x_and_come_back_as_one():
    """q-k-cos-sin hands head 0 as q and head 1 as k (bhsd: unsqueeze_dim left at its
    default; bshd: unsqueeze_dim=2) and joins (q', k') back along the heads."""
    calls = []

    def apply(q, k, cos, sin, unsqueeze_dim=1):
        calls.append((tuple(q.shape), tuple(k.shape), unsqueeze_dim))
        return q * 2, k * 3

    for layout, axis, shape in (("bhsd", 1, (1, 2, 4, 8)), ("bshd", 2, (1, 4, 2, 8))):
        x = torch.randn(shape)
        out = adapt(apply, {"api": "rope-apply", "signature": "q-k-cos-sin", "x_layout": layout})(
            x, torch.arange(4), torch.ones(1, 4, 8), torch.zeros(1, 4, 8))
        assert torch.equal(out.narrow(axis, 0, 1), 2 * x.narrow(axis, 0, 1))
        assert torch.equal(out.narrow(axis, 1, 1), 3 * x.narrow(axis, 1, 1))
    assert [unsqueeze for *_, unsqueeze in calls] == [1, 2]


def test_x_offset_rotates_each_run_of_positions_with_its_offset():
    """Positions 0..2, 10..11, 20 are three calls with offsets 0, 10 and 20, joined in order."""
    offsets = []

    def rotate(x, offset=0):
        offsets.append((offset, x.shape[2]))
        return x + offset

    x = torch.zeros(1, 2, 6, 4)
    out = adapt(rotate, {"api": "rope-apply", "signature": "x-offset", "x_layout": "bhsd"})(
        x, torch.tensor([0, 1, 2, 10, 11, 20]))
    assert offsets == [(0, 3), (10, 2), (20, 1)]
    assert out[0, 0, :, 0].tolist() == [0, 0, 0, 10, 10, 20]


def test_x_input_pos_passes_positions_as_a_batch_row():
    """torchtune's forward(x, input_pos=...) gets positions shaped (1, seq)."""
    seen = []
    adapt(lambda x, input_pos: seen.append(tuple(input_pos.shape)) or x,
          {"api": "rope-apply", "signature": "x-input-pos", "x_layout": "bshd"})(torch.zeros(1, 5, 2, 4),
                                                                             torch.arange(5))
    assert seen == [(1, 5)]


class Lying(torch.Tensor):
    """A tensor whose methods hand over something else than its memory holds."""

    def reshape(self, *shape):
        return torch.full(shape, math.pi)

    def __getitem__(self, index):
        return torch.full((1,), math.pi)

    def narrow(self, *arguments):
        return torch.full((1,), math.pi)


def test_an_adapter_reads_a_result_through_its_memory():
    """A result whose class lies in reshape, indexing and narrow is cut and joined as its
    memory holds it."""
    zeros = torch.zeros(3, 1, 2).as_subclass(Lying)
    out = adapt(lambda x: zeros, {"api": "table", "signature": "adds-to-x", "x_layout": "sbd"})(3, 2)
    assert torch.equal(out, torch.zeros(3, 2)) and type(out) is torch.Tensor
    pair = (torch.zeros(1, 1, 4, 8).as_subclass(Lying), torch.zeros(1, 1, 4, 8).as_subclass(Lying))
    out = adapt(lambda q, k, cos, sin: pair, {"api": "rope-apply", "signature": "q-k-cos-sin", "x_layout": "bhsd"})(
        torch.ones(1, 2, 4, 8), torch.arange(4), torch.ones(1, 4, 8), torch.zeros(1, 4, 8))
    assert torch.equal(out, torch.zeros(1, 2, 4, 8))


def test_a_signature_returning_one_result_where_two_are_due_says_so():
    """q-k-cos-sin whose function returns a single tensor: a reason saying two were due."""
    call = adapt(lambda q, k, cos, sin: q, {"api": "rope-apply", "signature": "q-k-cos-sin", "x_layout": "bhsd"})
    with pytest.raises(Exception, match="two"):
        call(torch.ones(1, 2, 4, 8), torch.arange(4), torch.ones(1, 4, 8), torch.zeros(1, 4, 8))


def test_numpy_results_stay_numpy():
    """A module that returns a NumPy array is handed back as one (the report says what came back)."""
    out = adapt(lambda x: np.asarray(x) + 1, {"api": "table", "signature": "adds-to-x", "x_layout": "sd"})(2, 2)
    assert isinstance(out, np.ndarray) and out.tolist() == [[1, 1], [1, 1]]


def test_kwargs_reach_every_call_with_the_calls_sizes():
    """kwargs are passed on each call, a size placeholder filled from the call."""
    seen = []

    def table(num_positions, dim, scale=1.0, width=None):
        seen.append((scale, width))
        return np.zeros((num_positions, dim))

    call = adapt(table, {"api": "table", "signature": "canonical", "kwargs": {"scale": 2.0, "width": "{dim}"}})
    call(3, 4)
    call(5, 6)
    assert seen == [(2.0, 4), (2.0, 6)]
