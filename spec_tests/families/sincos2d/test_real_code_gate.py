"""The real 2-D sincos code through the gate, each target declared as a user declares it (the
installed library's own function or class, its signature, ``init`` and preset; no wrapper):
each conforms, or, where the library deviates from its own intent, fails with the deviation
named (``docs/families/sincos2d.md``, "Known deviations"). The libraries are preloaded into
the gate's template once; each test skips unless its library is installed at the version
``spec_tests/data/sincos2d_real_code.json`` records.
"""

from __future__ import annotations

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named, failure_summary
from spec_tests.families.sincos2d.real_code import FACTS, PRELOAD, require, vit_pytorch_file

VERSIONS = {fact["library"]: fact for fact in FACTS["implementations"]}
DETR = {"signature": "shape-device-dtype", "init": {"num_position_features": "{half_dim}", "normalize": True}}
# name -> (library, declaration keys, the verdict: "conforms" or (failing check id, words of its message))
TARGETS = {
    "diffusers get_2d_sincos_pos_embed": ("diffusers", {
        "target": "diffusers.models.embeddings:get_2d_sincos_pos_embed", "convention": "diffusers",
        "signature": "dim-pair"}, "conforms"),
    "diffusers PatchEmbed (SD3)": ("diffusers", {
        "target": "diffusers.models.embeddings:PatchEmbed", "convention": "sd3", "signature": "adds-to-patches",
        "init": {"height": 128, "width": 128, "patch_size": 2, "in_channels": 4, "embed_dim": "{dim}",
                 "pos_embed_max_size": 192}, "in_channels": 4, "patch_size": 2}, "conforms"),
    "diffusers PatchEmbed (no max size)": ("diffusers", {
        "target": "diffusers.models.embeddings:PatchEmbed", "convention": "mae", "signature": "adds-to-patches",
        "init": {"height": "{height}", "width": "{width}", "patch_size": 1, "in_channels": 1, "embed_dim": "{dim}"}},
        ("call[1x7:d=8]", "must match the size of tensor b")),
    "transformers build_2d_sinusoidal_position_embedding": ("transformers", {
        "target": "transformers.models.vit_mae.modeling_vit_mae:build_2d_sinusoidal_position_embedding",
        "convention": "transformers"}, "conforms"),
    "transformers RTDetrSinePositionEmbedding": ("transformers", {
        "target": "transformers.models.rt_detr.modeling_rt_detr:RTDetrSinePositionEmbedding",
        "convention": "transformers", "signature": "w-h-device-dtype", "init": {"embed_dim": "{dim}"}},
        "conforms"),
    "transformers DetrSinePositionEmbedding": ("transformers", {
        "target": "transformers.models.detr.modeling_detr:DetrSinePositionEmbedding", "convention": "detr",
        **DETR}, "conforms"),
    "transformers DetrSinePositionEmbedding (float16)": ("transformers", {
        "target": "transformers.models.detr.modeling_detr:DetrSinePositionEmbedding", "convention": "detr",
        "call_dtype": "float16", **DETR}, ("formula[1x7:d=8]", "float16")),
    "transformers DeformableDetrSinePositionEmbedding": ("transformers", {
        "target": "transformers.models.deformable_detr.modeling_deformable_detr:DeformableDetrSinePositionEmbedding",
        "convention": "deformable-detr", **DETR}, "conforms"),
    "vit-pytorch posemb_sincos_2d": ("vit-pytorch", {"convention": "big-vision"},
                                     ("undefined[d=4]", "silent NaN")),
}


def _declarations() -> dict:
    made = {}
    for name, (library, keys, _) in TARGETS.items():
        try:
            require(VERSIONS[library])
        except pytest.skip.Exception:
            continue
        target = {"target": f"{vit_pytorch_file()}:posemb_sincos_2d"} if library == "vit-pytorch" else {}
        made[name] = declare({"api": "sincos2d", **keys, **target})
    return made


@pytest.fixture(scope="module")
def reports():
    declarations = _declarations()
    if {TARGETS[name][0] for name in declarations} >= {"diffusers", "transformers"}:
        return check_named(declarations, preload=PRELOAD)
    return check_named(declarations)


@pytest.mark.parametrize("name", TARGETS)
def test_real_code_conforms_or_fails_with_its_deviation(name, reports):
    """The target as a user declares it: conforms, or fails the check its deviation names, with its words."""
    library, _, verdict = TARGETS[name]
    require(VERSIONS[library])
    report = reports[name]
    if verdict == "conforms":
        assert report.conforms, f"{name}: {failure_summary(report)}"
        return
    check_id, words = verdict
    result = report.result(check_id)
    assert result.status == "failed" and words in result.message, f"{name}: {check_id}: {result.message}"
    assert report.result("import").status == "passed", report.result("import").message


def test_every_installed_target_is_declared_as_the_gate_accepts_it():
    """Each target of an installed library is a declaration of the sincos2d API the gate
    accepts, its function named as the library spells it (the run that judges them all reads
    the libraries' code, and is in the slow tier)."""
    declarations = _declarations()
    assert set(declarations) <= set(TARGETS)
    assert all(declaration.api == "sincos2d" and declaration.written for declaration in declarations.values())
