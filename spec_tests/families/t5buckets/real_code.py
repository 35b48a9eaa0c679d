"""Real implementations of T5's buckets, called in-process in the signatures of
:mod:`posenc_spec.families.t5buckets.grid`, and what each computes, recorded.

Each :class:`RealTarget` names the installed code (``module:qualname``), its signature and
keywords, how its object is built (for a method, a bound function or a bias module) and the
presets it is checked at. :func:`call` makes one probe's call and returns the buckets as an
array (a bias module's output read back through an embedding whose row ``b`` holds ``b``).
:func:`record` reduces what a target computes at one convention to a few facts: the runs of
equal buckets over the dense grid, the buckets at the extremes and at ``-2**(b-1)``;
``spec_tests/data/t5buckets_real_code.json`` holds them for every target (written by
``python -m spec_tests.families.t5buckets.real_code``, with the versions it ran).

Not here, because they do not install or import beside this torch: speechbrain 1.1.2 (BEATs'
``_relative_positions_bucket``: it imports torchaudio, whose 2.11 library does not load with
torch 2.13), keras-hub 0.32 (pulls tensorflow and tensorflow-text), OpenNMT-py (3.0.4, the
release that resolves, predates its relative-position buckets), GluonNLP (0.10.0 on PyPI lacks
``relative_position_bucket``; the code that has it needs MXNet: the corpus re-derives it).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from posenc_spec.families.t5buckets import grid
from posenc_spec.families.t5buckets.conventions import PRESETS, BucketConvention

RECORD = Path(__file__).resolve().parents[2] / "data" / "t5buckets_real_code.json"
# The versions the record was made with, and how to install each where the test suite does not.
VERSIONS = {"transformers": "5.24.0", "x-transformers": "2.31.10", "torchtune": "0.6.1"}
INSTALL = {
    "transformers": "pip install -e '.[test]' (the test extra)",
    "x-transformers": "PIP_CONSTRAINT=constraints/ci.txt pip install x-transformers==2.31.10",
    "torchtune": "PIP_CONSTRAINT=constraints/ci.txt pip install torchtune==0.6.1 torchao==0.16.0 "
                 "(torchtune 0.6.1 imports torchao at import time; 0.17 and later lack what it imports)",
}
# MPNet's encoder computes its buckets for 32 whatever relative_attention_num_buckets says.
MPNET_64 = BucketConvention(True, 64, 128)


@dataclass(frozen=True)
class RealTarget:
    """One real implementation: ``where`` is ``module:qualname``; ``build(convention, shape)``
    makes the object whose attribute ``where``'s last name is (a bound method or a module),
    ``shape`` being the ``(q_len, k_len)`` of a table call (None otherwise); ``keywords`` maps
    the grid's roles to the callee's names (``"causal"`` negated, ``""`` not passed)."""

    id: str
    library: str
    where: str
    signature: str
    conventions: tuple[BucketConvention, ...]
    keywords: tuple = ()
    build: Callable | None = None
    bias_call: Callable | None = None
    embedding: str | None = None
    query_offset: str = "start"
    square_only: bool = False
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def installed(self) -> str | None:
        """The installed version of the library, or None."""
        try:
            return importlib.metadata.version(self.library)
        except importlib.metadata.PackageNotFoundError:
            return None

    def function(self, convention: BucketConvention, shape=None):
        module, _, qualname = self.where.partition(":")
        if self.build is not None:
            return getattr(self.build(convention, shape), qualname.rsplit(".", 1)[-1])
        value = importlib.import_module(module)
        for name in qualname.split("."):
            value = getattr(value, name)
        return value


def _t5_config(cls_name: str, convention: BucketConvention):
    import transformers

    return getattr(transformers, cls_name)(d_model=16, d_kv=8, num_heads=2, d_ff=16, num_layers=1,
                                           relative_attention_num_buckets=convention.num_buckets,
                                           relative_attention_max_distance=convention.max_distance,
                                           is_decoder=not convention.bidirectional)


def _t5_attention(convention, shape=None):
    from transformers.models.t5.modeling_t5 import T5Attention

    return T5Attention(_t5_config("T5Config", convention), has_relative_attention_bias=True, layer_idx=0)


def _umt5_attention(convention, shape=None):
    from transformers.models.umt5.modeling_umt5 import UMT5Attention

    return UMT5Attention(_t5_config("UMT5Config", convention), has_relative_attention_bias=True, layer_idx=0)


def _wavlm_attention(convention, shape=None):
    from transformers.models.wavlm.modeling_wavlm import WavLMAttention

    return WavLMAttention(16, 2, num_buckets=convention.num_buckets, max_distance=convention.max_distance,
                          has_relative_position_bias=True)


def _layoutlmv3_encoder(convention, shape=None):
    from transformers import LayoutLMv3Config
    from transformers.models.layoutlmv3.modeling_layoutlmv3 import LayoutLMv3Encoder

    config = LayoutLMv3Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                              rel_pos_bins=convention.num_buckets, max_rel_pos=convention.max_distance)
    return LayoutLMv3Encoder(config)


def _cpmant_embedding(convention, shape=None):
    from transformers import CpmAntConfig
    from transformers.models.cpmant.modeling_cpmant import CpmAntSegmentPositionEmbedding

    return CpmAntSegmentPositionEmbedding(CpmAntConfig(num_attention_heads=2, position_bias_num_buckets=convention.
                                                       num_buckets, position_bias_max_distance=convention.max_distance))


def _mpnet_encoder(convention, shape=None):
    from transformers import MPNetConfig
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    config = MPNetConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, intermediate_size=16,
                         relative_attention_num_buckets=convention.num_buckets)
    return MPNetEncoder(config)


def _x_transformers_bias(convention, shape=None):
    from x_transformers.x_transformers import RelativePositionBias

    return RelativePositionBias(scale=1.0, causal=not convention.bidirectional, num_buckets=convention.num_buckets,
                                max_distance=convention.max_distance, heads=2)


def _torchtune_bias(convention, shape):
    from torchtune.models.t5._encoder import T5EncoderRelativePositionBias

    return T5EncoderRelativePositionBias(convention.num_buckets, convention.max_distance, 2, shape[1])


ENCODER, DECODER = PRESETS["t5-encoder"], PRESETS["t5-decoder"]
BOTH = (ENCODER, DECODER)
_HF = "transformers.models"


def _copies() -> list[RealTarget]:
    """transformers' static copies of T5's function."""
    return [RealTarget(f"transformers.{qualname}", "transformers", f"{_HF}.{module}.modeling_{module}:{qualname}",
                       "static", BOTH)
            for module, qualname in [("t5", "T5Attention._relative_position_bucket"),
                                     ("mt5", "MT5Attention._relative_position_bucket"),
                                     ("longt5", "LongT5Attention._relative_position_bucket"),
                                     ("switch_transformers", "SwitchTransformersAttention._relative_position_bucket"),
                                     ("pix2struct", "Pix2StructTextAttention._relative_position_bucket"),
                                     ("pop2piano", "Pop2PianoAttention._relative_position_bucket"),
                                     ("udop", "UdopAttention._relative_position_bucket")]]


TARGETS: tuple[RealTarget, ...] = (
    *_copies(),
    RealTarget("transformers.layoutlmv2.relative_position_bucket", "transformers",
               f"{_HF}.layoutlmv2.modeling_layoutlmv2:relative_position_bucket", "static",
               (ENCODER, PRESETS["layoutlm-2d"], DECODER)),
    RealTarget("transformers.LayoutLMv3Encoder.relative_position_bucket", "transformers",
               f"{_HF}.layoutlmv3.modeling_layoutlmv3:LayoutLMv3Encoder.relative_position_bucket", "static",
               (ENCODER, PRESETS["layoutlm-2d"]), build=_layoutlmv3_encoder),
    RealTarget("transformers.MPNetEncoder.relative_position_bucket", "transformers",
               f"{_HF}.mpnet.modeling_mpnet:MPNetEncoder.relative_position_bucket", "static", (ENCODER,),
               keywords=(("bidirectional", ""),)),
    RealTarget("transformers.prophetnet.compute_relative_buckets", "transformers",
               f"{_HF}.prophetnet.modeling_prophetnet:compute_relative_buckets", "static", (DECODER, ENCODER),
               keywords=(("relative_position", "relative_positions"), ("bidirectional", "is_bidirectional"))),
    RealTarget("transformers.CpmAntSegmentPositionEmbedding._position_bucket", "transformers",
               f"{_HF}.cpmant.modeling_cpmant:CpmAntSegmentPositionEmbedding._position_bucket", "static",
               (PRESETS["cpmant"],), keywords=(("bidirectional", ""),), build=_cpmant_embedding),
    RealTarget("transformers.UMT5Attention._relative_position_bucket", "transformers",
               f"{_HF}.umt5.modeling_umt5:UMT5Attention._relative_position_bucket", "method", BOTH,
               build=_umt5_attention),
    RealTarget("transformers.WavLMAttention._relative_positions_bucket", "transformers",
               f"{_HF}.wavlm.modeling_wavlm:WavLMAttention._relative_positions_bucket", "method", (PRESETS["wavlm"],),
               build=_wavlm_attention),
    RealTarget("transformers.T5Attention.compute_bias", "transformers",
               f"{_HF}.t5.modeling_t5:T5Attention.compute_bias", "bias", BOTH, build=_t5_attention,
               embedding="relative_attention_bias",
               bias_call=lambda module, q, k: module.compute_bias(q, k)),
    RealTarget("transformers.WavLMAttention.compute_bias", "transformers",
               f"{_HF}.wavlm.modeling_wavlm:WavLMAttention.compute_bias", "bias", (PRESETS["wavlm"],),
               build=_wavlm_attention, embedding="rel_attn_embed",
               bias_call=lambda module, q, k: module.compute_bias(q, k)),
    RealTarget("transformers.MPNetEncoder.compute_position_bias", "transformers",
               f"{_HF}.mpnet.modeling_mpnet:MPNetEncoder.compute_position_bias", "bias", (ENCODER, MPNET_64),
               build=_mpnet_encoder, embedding="relative_attention_bias", square_only=True,
               bias_call=lambda module, q, k: module.compute_position_bias(__import__("torch").zeros(1, k, 16)),
               notes="square: its x's length is both; num_buckets comes from the config, the buckets from 32"),
    RealTarget("x-transformers.RelativePositionBias._relative_position_bucket", "x-transformers",
               "x_transformers.x_transformers:RelativePositionBias._relative_position_bucket", "static", BOTH,
               keywords=(("bidirectional", "causal"),)),
    RealTarget("x-transformers.RelativePositionBias.forward", "x-transformers",
               "x_transformers.x_transformers:RelativePositionBias.forward", "bias", BOTH, build=_x_transformers_bias,
               embedding="relative_attention_bias", query_offset="end", bias_call=lambda module, q, k: module(q, k)),
    RealTarget("torchtune._calc_birectional_rel_pos_to_bucket", "torchtune",
               "torchtune.models.t5._encoder:_calc_birectional_rel_pos_to_bucket", "table", (ENCODER,),
               keywords=(("max_distance", "max_dist"), ("query_length", "max_seq_len"), ("key_length", ""),
                         ("bidirectional", "")), square_only=True),
    RealTarget("torchtune.T5EncoderRelativePositionBias.forward", "torchtune",
               "torchtune.models.t5._encoder:T5EncoderRelativePositionBias.forward", "bias", (ENCODER,),
               build=_torchtune_bias, embedding="embedding", square_only=True,
               bias_call=lambda module, q, k: module()),
)


def call(target: RealTarget, probe: grid.Probe, convention: BucketConvention) -> np.ndarray:
    """The buckets ``target`` returns for ``probe``, through :mod:`~posenc_spec.families.t5buckets.grid`."""
    keywords = dict(target.keywords)
    if probe.kind == "positions":
        return grid.call_positions(target.function(convention), probe, convention, keywords,
                                      settings_from_object=target.signature == "method")
    if target.signature == "table":
        return grid.call_table(target.function(convention), probe, convention, keywords)
    q_len, k_len = probe.shape
    return grid.bias_buckets(target.build(convention, probe.shape), target.embedding,
                                lambda module: target.bias_call(module, q_len, k_len), q_len, k_len)


def _runs(relative: np.ndarray, values: np.ndarray) -> list[list[int]]:
    """``[[r, bucket], ...]``: where each run of equal buckets over sorted ``relative`` starts."""
    order = np.argsort(relative, kind="stable")
    r, v = relative[order], values[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(v)) + 1]) if v.size else np.array([], dtype=int)
    return [[int(r[i]), int(v[i])] for i in starts]


def expand_runs(runs: list, relative: np.ndarray) -> np.ndarray:
    """The buckets the runs say for each of ``relative`` (inside the runs' span)."""
    starts = np.array([start for start, _ in runs], dtype=np.int64)
    buckets = np.array([bucket for _, bucket in runs], dtype=np.int64)
    return buckets[np.searchsorted(starts, relative, side="right") - 1]


def record(target: RealTarget, convention: BucketConvention) -> dict:
    """What ``target`` computes at ``convention``: the runs of its buckets over the dense grid
    (a table's over its largest square's diagonals), and for a positions target the buckets
    of the extremes and of ``-2**(b-1)`` in each dtype."""
    probes = grid.probes_for(convention, target.signature, target.query_offset, target.square_only)
    facts = {"convention": convention.as_dict()}
    if target.signature in ("table", "bias"):
        largest = max((probe for probe in probes if probe.role == "table"), key=lambda probe: probe.shape[0])
        table = call(target, largest, convention)
        relative = largest.relative_positions(convention)
        facts["runs"] = _runs(relative.ravel(), np.asarray(table).ravel())
        facts["shape"] = list(largest.shape)
        return facts
    dense = next(probe for probe in probes if probe.slot == "int64")
    facts["runs"] = _runs(dense.values, call(target, dense, convention))
    narrow = next(probe for probe in probes if probe.slot == "int32")
    facts["int32_runs_equal"] = _runs(narrow.values, call(target, narrow, convention)) == facts["runs"]
    for role in ("extremes", "int-min"):
        facts[role] = {probe.dtype: {str(int(r)): int(b) for r, b in zip(probe.values, call(target, probe, convention),
                                                                          strict=True)}
                       for probe in probes if probe.role == role}
    return facts


def key(target: RealTarget, convention: BucketConvention) -> str:
    """The record's name for a target at a convention."""
    return f"{target.id} @ {convention.name()}"


def record_all() -> dict:
    """Every installed target at every convention, with the versions and the machine's torch."""
    import torch

    versions = {library: importlib.metadata.version(library) for library in VERSIONS}
    entries = {key(target, convention): {"library": target.library, "version": versions[target.library],
                                         "function": target.where, "signature": target.signature,
                                         **record(target, convention)}
               for target in TARGETS for convention in target.conventions}
    return {"recorded_with": {**versions, "torch": torch.__version__}, "entries": entries}


def as_json(facts: dict) -> str:
    """The record as JSON, one line per run or per number list (a few hundred lines, not thousands)."""
    text = json.dumps(facts, indent=1)
    return re.sub(r"\[\s*(-?\d+),\s*(-?\d+)\s*\]", r"[\1, \2]", text) + "\n"


if __name__ == "__main__":
    RECORD.write_text(as_json(record_all()), encoding="utf-8")
    print(f"wrote {RECORD}")
