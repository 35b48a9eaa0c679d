"""Real code through the gate, declared as users declare it (:mod:`.real_code`): transformers'
M-RoPE of Qwen2-VL, Qwen2.5-VL, Qwen3-VL and GLM-4V, its ``get_rope_index``, the vision towers'
rotary embeddings of Qwen2-VL, Pixtral and Llama 4 and the applies,
diffusers' FLUX, HunyuanVideo and Wan rotary modules, ``get_1d/2d/3d_rotary_pos_embed`` and
``apply_rotary_emb``; each fails exactly the checks its deviations show and passes every other."""

from __future__ import annotations

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named
from spec_tests.assertions import failure_summary as _summary

from .real_code import TARGETS

pytest.importorskip("diffusers")


# Imported once into the gate's template, so that each target's child starts with them (as --preload does).
TRANSFORMERS_PRELOAD = ("transformers.models.qwen2_vl.modeling_qwen2_vl",
                        "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
                        "transformers.models.qwen3_vl.modeling_qwen3_vl", "transformers.models.glm4v.modeling_glm4v",
                        "transformers.models.pixtral.modeling_pixtral", "transformers.models.llama4.modeling_llama4",
                        "diffusers.models.embeddings")


@pytest.fixture(scope="module")
def reports():
    declarations = {target.id: declare(target.declaration_keys()) for target in TARGETS}
    return check_named(declarations, preload=TRANSFORMERS_PRELOAD)


@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.id)
def test_real_code_fails_only_its_known_deviations(target, reports):
    """A real target, declared as written, fails exactly the checks of its known deviations."""
    report = reports[target.id]
    failed = tuple(check.name for check in report.failures())
    assert failed == target.fails, f"{target.id}: failed {failed}, expected {target.fails}: {_summary(report)}"


@pytest.mark.parametrize("target", [target for target in TARGETS if target.fails], ids=lambda target: target.id)
def test_each_deviation_gets_the_hint_that_names_it(target, reports):
    """A real deviation is named by the family's hint: the crop rule, or where the text after a vision run starts."""
    slips = [slip for hint in reports[target.id].hints for slip in hint.slips]
    assert slips in (["mrope-crop"], ["mrope-text-after-vision"]), (target.id, reports[target.id].hints)


def test_every_target_is_declared_as_the_gate_accepts_it():
    """Each real target's keys make a declaration the gate accepts, of the API they name (a
    refused key would fail the whole run's every check rather than name a deviation)."""
    declarations = {target.id: declare(target.declaration_keys()) for target in TARGETS}
    assert {name: declaration.api for name, declaration in declarations.items()} == {
        target.id: target.declaration_keys().get("api", "table") for target in TARGETS}
