"""``identify`` calls a target as its declaration says: :func:`posenc_spec.gate.identify.answer_each`
hands the child the declared ``how`` (signature, ``init``, ``method``, a family's adapter
options) for the fit calls, and :func:`~posenc_spec.gate.identify.checked` runs ``check``'s
grid under the answer's own ``how``. A target whose signature is not the API's canonical
call (here the PyTorch tutorial's ``x + table`` module form) is fitted and checked, where a
bare call would raise."""

from __future__ import annotations

import textwrap

import numpy as np

from posenc_spec.families.sinusoidal import grid
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.identify import answer_each
from posenc_spec.gate.options import RunOptions

ADDS_TO_X = textwrap.dedent("""
    import math
    import torch

    def add_table(x):
        length, dim = x.shape
        position = torch.arange(length, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
        table = torch.zeros(length, dim)
        table[:, 0::2] = torch.sin(position * div)
        table[:, 1::2] = torch.cos(position * div)
        return x + table
""")


def _answers(tmp_path, how_of):
    """What answer_each saw for the module form: the first fit call's status, and the checked answer."""
    (tmp_path / "adds.py").write_text(ADDS_TO_X, encoding="utf-8")
    target = f"{tmp_path / 'adds.py'}:add_table"
    declaration = declare({"target": target, "api": "table", "signature": "adds-to-x", "x_layout": "sd"})
    probe = next(probe for probe in grid.probes_for("table", 1000.0, skip_odd=True, adds_layout="sd")
                 if probe.role == "table")
    seen = []

    def answer_of(_, outcomes):
        seen.append(outcomes[0])
        return {"convention": "vaswani", "name": "vaswani", "message": "fitted"}

    [answer] = answer_each([target], [probe.request()], 30.0, RunOptions(jobs=1), answer_of,
                           lambda *_: declaration, how=how_of(declaration))
    return seen[0], answer


def test_fit_calls_and_the_check_follow_the_declared_signature(tmp_path):
    """With the declaration's how, the fit call returns the table the module adds, and check's
    grid under the answer conforms."""
    outcome, answer = _answers(tmp_path, lambda declaration: declaration.how())
    assert outcome.ok, outcome.message
    assert np.isfinite(outcome.table).all() and outcome.table.shape[1] > 1, outcome.table.shape
    assert answer["check"] == "conforms", answer["message"]


def test_without_how_the_fit_call_is_the_canonical_one(tmp_path):
    """Without a how the child calls fn(num_positions, dim), which the module form refuses; the
    check of the answer still calls it as declared and conforms."""
    outcome, answer = _answers(tmp_path, lambda declaration: None)
    assert outcome.status == "raised", outcome
    assert answer["check"] == "conforms", answer["message"]
