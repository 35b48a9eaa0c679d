"""The real implementations of :mod:`.real_code`, declared as a user declares them to the gate
(``posenc-spec check --api t5-buckets``, a ``[tool.posenc-spec]`` entry), with the checks each
fails, MPNet's encoder at 64 buckets on its 130x130 table (it buckets for 32 whatever its config
says) and nothing else, and those each is noted for: ``int-min[D]`` for every function of
positions (``-2**(b-1)``, where ``abs()`` wraps, is no difference of two positions). Modules
are built from the small configs in ``spec_tests/data/t5buckets`` (``bucket_config``, whose
bucket settings are the declaration's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "t5buckets"
_HF = "transformers.models"
INT_MIN = ("int-min[int32]", "int-min[int64]")
MPNET_64_FAILS = tuple(f"{name}[130x130]" for name in ("formula", "exact-small", "halves", "saturation"))
T5_COPIES = [("t5", "T5Attention"), ("mt5", "MT5Attention"), ("longt5", "LongT5Attention"),
             ("switch_transformers", "SwitchTransformersAttention"), ("pix2struct", "Pix2StructTextAttention"),
             ("pop2piano", "Pop2PianoAttention"), ("udop", "UdopAttention")]


@dataclass(frozen=True)
class Declared:
    """One real target as declared: ``keys`` (without ``api``), the library it needs, the
    check ids it fails and those it is noted for."""

    id: str
    library: str
    keys: dict
    fails: tuple = ()
    notes: tuple = ()

    def declaration_keys(self) -> dict:
        keys = {"api": "t5-buckets", **self.keys}
        if "bucket_config" in keys:
            keys["bucket_config"] = str(CONFIGS / keys["bucket_config"])
        return keys


def _copies() -> list[Declared]:
    return [Declared(f"{name}.{cls}._relative_position_bucket @ {preset}", "transformers",
                     {"target": f"{_HF}.{name}.modeling_{name}:{cls}._relative_position_bucket",
                      "bucket_preset": preset}, notes=INT_MIN)
            for name, cls in T5_COPIES for preset in ("t5-encoder", "t5-decoder")]


def _t5_modules() -> list[Declared]:
    made = []
    for side in ("encoder", "decoder"):
        made.append(Declared(f"T5Attention.compute_bias @ t5-{side}", "transformers",
                             {"target": f"{_HF}.t5.modeling_t5:T5Attention", "signature": "bias",
                              "bucket_config": f"t5-{side}.json", "method": "compute_bias",
                              "init": {"config": "{config}", "has_relative_attention_bias": True}}))
        made.append(Declared(f"UMT5Attention._relative_position_bucket @ t5-{side}", "transformers",
                             {"target": f"{_HF}.umt5.modeling_umt5:UMT5Attention", "signature": "method",
                              "bucket_config": f"umt5-{side}.json", "init": "config",
                              "method": "_relative_position_bucket"}, notes=INT_MIN))
    return made


WAVLM_INIT = {"embed_dim": 16, "num_heads": 2, "num_buckets": "{num_buckets}", "max_distance": "{max_distance}",
              "has_relative_position_bias": True}
X_BIAS_INIT = {"scale": 1.0, "causal": "{causal}", "num_buckets": "{num_buckets}", "max_distance": "{max_distance}",
               "heads": 2}

TARGETS: tuple[Declared, ...] = (
    *_copies(),
    *_t5_modules(),
    *(Declared(f"layoutlmv2.relative_position_bucket @ {preset}", "transformers",
               {"target": f"{_HF}.layoutlmv2.modeling_layoutlmv2:relative_position_bucket", "bucket_preset": preset},
               notes=INT_MIN) for preset in ("t5-encoder", "t5-decoder", "layoutlm-2d")),
    Declared("LayoutLMv3Encoder.relative_position_bucket @ t5-encoder", "transformers",
             {"target": f"{_HF}.layoutlmv3.modeling_layoutlmv3:LayoutLMv3Encoder", "bucket_config": "layoutlmv3.json",
              "init": "config", "method": "relative_position_bucket"}, notes=INT_MIN),
    Declared("MPNetEncoder.relative_position_bucket @ t5-encoder", "transformers",
             {"target": f"{_HF}.mpnet.modeling_mpnet:MPNetEncoder.relative_position_bucket",
              "bucket_args": {"bidirectional": ""}}, notes=INT_MIN),
    Declared("MPNetEncoder.compute_position_bias @ 64 buckets", "transformers",
             {"target": f"{_HF}.mpnet.modeling_mpnet:MPNetEncoder", "signature": "bias",
              "bucket_config": "mpnet-64.json", "init": "config", "method": "compute_position_bias",
              "bucket_args": {"query_length": "", "key_length": "", "x": "x"}}, MPNET_64_FAILS),
    *(Declared(f"prophetnet.compute_relative_buckets @ {preset}", "transformers",
               {"target": f"{_HF}.prophetnet.modeling_prophetnet:compute_relative_buckets", "bucket_preset": preset,
                "bucket_args": {"relative_position": "relative_positions", "bidirectional": "is_bidirectional"}},
               notes=INT_MIN) for preset in ("t5-decoder", "t5-encoder")),
    Declared("CpmAntSegmentPositionEmbedding._position_bucket @ cpmant", "transformers",
             {"target": f"{_HF}.cpmant.modeling_cpmant:CpmAntSegmentPositionEmbedding", "bucket_config": "cpmant.json",
              "init": "config", "method": "_position_bucket", "bucket_args": {"bidirectional": ""}}, notes=INT_MIN),
    Declared("WavLMAttention._relative_positions_bucket @ wavlm", "transformers",
             {"target": f"{_HF}.wavlm.modeling_wavlm:WavLMAttention", "bucket_preset": "wavlm",
              "signature": "method", "init": WAVLM_INIT, "method": "_relative_positions_bucket"}, notes=INT_MIN),
    Declared("WavLMAttention.compute_bias @ wavlm", "transformers",
             {"target": f"{_HF}.wavlm.modeling_wavlm:WavLMAttention", "bucket_preset": "wavlm", "signature": "bias",
              "init": WAVLM_INIT, "method": "compute_bias", "bucket_embedding": "rel_attn_embed"}),
    *(Declared(f"x-transformers RelativePositionBias._relative_position_bucket @ {preset}", "x-transformers",
               {"target": "x_transformers.x_transformers:RelativePositionBias._relative_position_bucket",
                "bucket_preset": preset, "bucket_args": {"bidirectional": "causal"}}, notes=INT_MIN)
      for preset in ("t5-encoder", "t5-decoder")),
    *(Declared(f"x-transformers RelativePositionBias.forward @ {preset}", "x-transformers",
               {"target": "x_transformers.x_transformers:RelativePositionBias", "bucket_preset": preset,
                "signature": "bias", "init": X_BIAS_INIT, "bucket_args": {"query_length": "i", "key_length": "j"},
                "bucket_query_offset": "end"}) for preset in ("t5-encoder", "t5-decoder")),
    Declared("torchtune _calc_birectional_rel_pos_to_bucket @ t5-encoder", "torchtune",
             {"target": "torchtune.models.t5._encoder:_calc_birectional_rel_pos_to_bucket", "signature": "table",
              "bucket_args": {"max_distance": "max_dist", "query_length": "max_seq_len", "key_length": "",
                              "bidirectional": ""}}),
    Declared("torchtune T5EncoderRelativePositionBias.forward @ t5-encoder", "torchtune",
             {"target": "torchtune.models.t5._encoder:T5EncoderRelativePositionBias", "signature": "bias",
              "init": {"num_buckets": "{num_buckets}", "max_dist": "{max_distance}", "num_heads": 2,
                       "max_seq_len": "{key_length}"},
              "bucket_args": {"query_length": "", "key_length": ""}, "bucket_embedding": "embedding"}),
)
