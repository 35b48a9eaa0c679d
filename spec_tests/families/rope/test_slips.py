"""RoPE hints on applies whose pairing and cos/sin layout disagree (``apply-pairing-mixed``),
through the real gate: where the gate hands cos and sin (``q-k-cos-sin``) they are laid out for
the declared pairing, so the hint advises the pairing the code uses, and that advice, applied,
conforms; where the code builds its own, no declaration makes it a rotation, and the hint
names the slip with no keys. The full run and ``--fail-fast`` say the same."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import assert_advice_conforms, assert_same_hints, check_named, hint_texts

PAIRING = Path(__file__).resolve().parent / "pairing_targets.py"


@dataclass(frozen=True)
class Case:
    """A target as declared (``table``), whether the hint advises keys, and their layout."""

    id: str
    table: dict
    advice: tuple = ()

    def config_table(self) -> dict:
        return dict(self.table)


# transformers' own apply_rotary_pos_emb handed interleaved cos/sin: spec_tests/core/test_gate_as_written.py.
CASES = [
    Case("every-two-handed-half", {"target": f"{PAIRING}:every_two_apply", "api": "rope-apply",
                                   "signature": "q-k-cos-sin", "x_layout": "bhsd", "head_dim": 64},
         (("layout", "interleaved"),)),
    Case("rotate-half-own-interleaved-table", {"target": f"{PAIRING}:rotate_half_with_interleaved_table",
                                               "api": "rope-apply", "x_layout": "bhsd", "head_dim": 64}),
    Case("every-two-own-half-table", {"target": f"{PAIRING}:every_two_with_half_table", "api": "rope-apply",
                                      "layout": "interleaved", "head_dim": 64}),
]
DECLARATIONS = {case.id: declare(case.table) for case in CASES}


@pytest.fixture(scope="module")
def reports():
    return check_named(DECLARATIONS)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_pairing_mixed_with_its_table_is_named(reports, case):
    """The hint names the mixed pairing, and advises the other pairing only where the gate hands cos and sin."""
    report = reports[case.id]
    assert not report.conforms
    assert [hint.slips for hint in report.hints] == [("apply-pairing-mixed",)], hint_texts(report)
    assert report.hints[0].declare == case.advice, hint_texts(report)


def test_the_advised_pairing_conforms(reports):
    """The pairing advised where the gate hands cos and sin, declared, makes the target conform."""
    assert assert_advice_conforms(reports, CASES) == sum(1 for case in CASES if case.advice)


def test_fail_fast_names_the_same_slip(reports):
    """``--fail-fast`` gives the hints of the full run, word for word."""
    assert_same_hints(reports, DECLARATIONS, fail_fast=True)


@pytest.mark.parametrize(("layout", "table_layout"), [("half", "interleaved"), ("interleaved", "half")])
def test_the_mixed_pairing_is_what_the_code_computes(layout, table_layout):
    """``apply_with_table`` is ``x cos + rotate(x) sin`` with the rotation of one pairing and the
    table of the other, as the code computes it (float64 torch); with the layouts equal it is the rotation."""
    import numpy as np
    import torch

    from posenc_spec.families.rope import oracle
    from posenc_spec.families.rope.conventions import RopeConvention

    conv, head_dim, positions = RopeConvention(), 16, np.arange(0, 40, 3)
    x = np.random.default_rng(3).normal(size=(2, positions.size, head_dim))
    freqs = torch.outer(torch.tensor(positions, dtype=torch.float64),
                        torch.tensor(conv.frequencies(head_dim)[0], dtype=torch.float64))
    table = torch.cat((freqs, freqs), -1) if table_layout == "half" else freqs.repeat_interleave(2, -1)
    t = torch.tensor(x)
    rotated = torch.cat((-t[..., head_dim // 2:], t[..., :head_dim // 2]), -1) if layout == "half" else \
        torch.stack((-t[..., 1::2], t[..., ::2]), -1).flatten(-2)
    code = (t * table.cos() + rotated * table.sin()).numpy()
    # Two float64 evaluations of one formula on values below 10 (angles below 40): a few units of 2**-53 apart.
    np.testing.assert_allclose(oracle.apply_with_table(x, positions, conv, head_dim, layout, table_layout), code,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(oracle.apply_with_table(x, positions, conv, head_dim, layout, layout),
                               oracle.apply(x, positions, conv, head_dim, layout), rtol=0, atol=0)
