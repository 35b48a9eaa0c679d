"""The real ALiBi code the family is checked against: where each lives, how it is called, what
it declares, and what it computes, as the facts recorded in ``spec_tests/data/alibi_real_code.json``.

``python -m spec_tests.families.alibi.real_code`` measures every installed implementation at
its pinned version and rewrites the facts file (the ones not installed keep their entry).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from posenc_spec.families.alibi import oracle
from posenc_spec.families.alibi.conventions import from_keys
from posenc_spec.families.alibi.judge import failures, judge

FACTS = Path(__file__).resolve().parents[2] / "data" / "alibi_real_code.json"
SLOPE_HEADS = (1, 3, 12, 71, 112, 128)
JUDGED_HEADS = (1, 12, 112)
INSTALL = {
    "transformers": "pip install transformers==5.24.0 (PIP_CONSTRAINT=constraints/ci.txt)",
    "x-transformers": "pip install x-transformers==2.31.10 (PIP_CONSTRAINT=constraints/ci.txt)",
    "labml-nn": "pip install --no-deps labml-nn==0.5.1 labml==0.5.3 (its declared torchvision and torchtext "
                "are not needed by labml_nn.transformers.alibi)",
}


@dataclass(frozen=True)
class RealCode:
    """One real implementation: ``package`` at ``version``, ``function`` (``module:attr``),
    called as ``signature`` (``adapter`` wraps a call convention the gate would declare),
    conforming to the conventions of ``conforms`` and, where its intent or a plausible
    declaration differs, failing ``deviates``."""

    id: str
    package: str
    version: str
    function: str
    signature: str
    conforms: tuple = ()  # (name, keys) pairs
    deviates: tuple = ()  # (name, keys, why) triples
    init: dict = field(default_factory=dict)
    adapter: str | None = None
    heads: tuple = JUDGED_HEADS

    def installed_version(self) -> str | None:
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return None

    def load(self):
        module, _, attr = self.function.partition(":")
        target = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
        if self.adapter == "device-cpu":  # transformers' _get_alibi_slopes(num_heads, device)
            function = target
            return lambda num_heads: function(num_heads, "cpu")
        return target


BLOOM, FALCON, MPT = (f"transformers.models.{name}.modeling_{name}" for name in ("bloom", "falcon", "mpt"))
REAL = (
    RealCode("bloom-slopes", "transformers", "5.24.0", f"{BLOOM}:_get_alibi_slopes", "heads",
             conforms=(("paper", {}),), adapter="device-cpu"),
    RealCode("bloom", "transformers", "5.24.0", f"{BLOOM}:build_alibi_tensor", "mask-heads-dtype",
             conforms=(("bloom", {"alibi_convention": "bloom"}),)),
    RealCode("falcon", "transformers", "5.24.0", f"{FALCON}:build_alibi_tensor", "mask-heads-dtype",
             conforms=(("falcon", {"alibi_convention": "falcon"}),),
             deviates=(("bloom", {"alibi_convention": "bloom"}, "the product is formed in bfloat16 whatever dtype is "
                                                          "asked for: BLOOM's float32 bias it shares the code of"),)),
    RealCode("mpt", "transformers", "5.24.0", f"{MPT}:build_mpt_alibi_tensor", "heads-length-max",
             conforms=(("mpt", {"alibi_convention": "mpt"}),
                       ("mpt-16", {"alibi_convention": "mpt", "alibi_bias_max": 16}),
                       ("rows", {"up_to_row_constant": True}),
                       ("rows-16", {"up_to_row_constant": True, "alibi_bias_max": 16}))),
    RealCode("x-transformers", "x-transformers", "2.31.10", "x_transformers.x_transformers:AlibiPositionalBias",
             "module-ij", init={"heads": "{num_heads}"},
             conforms=(("bidirectional", {"alibi_convention": "bidirectional"}),)),
    RealCode("x-transformers-partial", "x-transformers", "2.31.10",
             "x_transformers.x_transformers:AlibiPositionalBias", "module-ij",
             init={"heads": 4, "total_heads": "{num_heads}"}, heads=(4, 12, 112),
             conforms=(("bidirectional-4", {"alibi_convention": "bidirectional", "alibi_heads": 4}),)),
    RealCode("x-transformers-slopes", "x-transformers", "2.31.10",
             "x_transformers.x_transformers:AlibiPositionalBias._get_slopes", "heads", conforms=(("paper", {}),)),
    RealCode("labml-slopes", "labml-nn", "0.5.1", "labml_nn.transformers.alibi:get_slopes", "heads",
             conforms=(("paper", {}),)),
    RealCode("labml", "labml-nn", "0.5.1", "labml_nn.transformers.alibi:get_alibi_biases", "heads-mask",
             conforms=(("labml", {"alibi_convention": "labml"}), ("rows", {"up_to_row_constant": True})),
             deviates=(("fairseq", {"alibi_convention": "fairseq"},
                        "its comment promises distances [0, 1, ..., N]; the causal mask's cumsum counts keys from 1 "
                        "(the same attention, one slope per row more)"),)),
)


def _hex(values) -> list[str]:
    return [float(value).hex() for value in np.asarray(values, dtype=np.float64).reshape(-1)]


def slopes_of(real: RealCode, heads: int) -> np.ndarray:
    """The slopes ``real`` returns for ``heads`` heads, float64 (exactly: they are float32 or float64)."""
    from posenc_spec.gate.child.convert import to_arrays

    _, [(array, _dtype, _description)] = to_arrays(real.load()(heads))
    return np.asarray(array, dtype=np.float64).reshape(-1)


def smallest_failure(real: RealCode, keys: dict):
    """``(head count, first failed check)`` at the smallest head count, 1 .. 128, under ``keys``."""
    conv = from_keys(keys)
    for heads in range(1, 129):
        failed = failures(judge(real.load(), real.signature, conv, heads, real.init, fail_fast=True))
        if failed:
            return heads, failed[0]
    return None


def measure(real: RealCode) -> dict:
    """What ``real`` computes: its slopes (float hex) where it returns slopes, the head counts
    each conforming convention was judged on, and each deviation's first failed check."""
    facts = {"library": real.package, "version": real.version, "function": real.function, "signature": real.signature}
    if real.signature == "heads":
        facts["slopes"] = {str(heads): _hex(slopes_of(real, heads)) for heads in SLOPE_HEADS}
        facts["max_ulp"] = {str(heads): max_ulp(slopes_of(real, heads), heads) for heads in SLOPE_HEADS}
    facts["conforms"] = {name: {"keys": keys, "heads": list(real.heads)} for name, keys in real.conforms}
    deviations = {}
    for name, keys, why in real.deviates:
        heads, failed = smallest_failure(real, keys)
        deviations[name] = {"keys": keys, "why": why, "heads": heads, "check": failed.name,
                            "index": list(failed.worst.index),
                            "got": failed.worst.actual.hex(), "expected": failed.worst.expected.hex()}
    facts["deviates"] = deviations
    return facts


def max_ulp(values, heads: int) -> float:
    """The largest distance of the slopes from the exact ones, in ULPs of float32 at the exact value."""
    exact = oracle.slopes(heads)
    return round(float((np.abs(np.asarray(values) - exact) / np.spacing(exact.astype(np.float32))).max()), 3)


NOT_INSTALLED = {
    "keras-hub 0.32.0 (keras_hub.layers.AlibiBias)": "requires tensorflow-text, so tensorflow 2.21: not installed; "
                                                      "its idiom is in the corpus (PositionsInComputeDtype, "
                                                      "KeyLastOnScores)",
    "OpenNMT-py 3.5.1 (onmt.modules.alibi_position_bias)": "requires torch<2.3: does not install beside torch 2.13",
    "funasr 1.4.16": "pulls modelscope, librosa, numba and some 40 more packages: not installed",
}


def record() -> None:
    facts = json.loads(FACTS.read_text()) if FACTS.exists() else {}
    facts["provenance"] = ("measured by spec_tests/families/alibi/real_code.py (python -m "
                           "spec_tests.families.alibi.real_code) with torch " + importlib.metadata.version("torch")
                           + ", each library at the version its entry names; slopes as float.hex of what the "
                             "function returns, head counts 1, 3, 12, 71, 112, 128")
    facts["not_installed"] = NOT_INSTALLED
    for real in REAL:
        if real.installed_version() == real.version:
            facts.setdefault("implementations", {})[real.id] = measure(real)
    FACTS.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    record()
