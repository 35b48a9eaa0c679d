"""Wrong rotary embeddings: each a slip reported in public code, written the way it appears there.

Every function is registered with the declaration it claims (see
:mod:`meta_tests.corpus.rope_registry`); under that declaration it is wrong somewhere on the
gate's grid, or, for the ``history`` and ``global-state`` classes, after or around a call.
Most reproduce a bug reported in a public thread, which ``seen`` cites. The helpers below
are the shared library code such a module would import; the slip is in the registered
function.

A catalogue, one function per slip; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import functools
import math

import torch

from .rope_registry import rope_wrong

_YARN_4X = {"factor": 4.0, "original_max_position_embeddings": 4096}
_DYNAMIC_2X = {"factor": 2.0, "original_max_position_embeddings": 4096}
_LLAMA31 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
# Phi-3-style LongRoPE lists for a 64-wide head (32 pairs); s = 131072 / 4096 = 32.
_PHI3_LIKE = {"short_factor": [round(1.08 ** (i / 31), 4) for i in range(32)],
              "long_factor": [round(48.0 ** (i / 31), 4) for i in range(32)],
              "original_max_position_embeddings": 4096}


def _inv_freq(dim, base=10000.0):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def _half_cache(positions, inv_freq):
    freqs = torch.outer(positions.float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _apply_bshd(x, cos, sin):
    """transformers' ``x cos + rotate_half(x) sin`` with cos/sin (seq, dim) cast to x's dtype."""
    cos, sin = cos[None, :, None, :].to(x.dtype), sin[None, :, None, :].to(x.dtype)
    return x * cos + _rotate_half(x) * sin


def _yarn_get_mscale(scale, mscale=1.0):
    return 0.1 * mscale * math.log(scale) + 1.0 if scale > 1 else 1.0


def _yarn_inv_freq(dim, factor, original_max, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    """transformers' YaRN frequencies: extrapolated above the correction range, interpolated below."""
    def correction_dim(num_rotations):
        return dim * math.log(original_max / (num_rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    extrapolation = 1 - ramp
    return (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (1.0 / pos_freqs) * extrapolation


def _yarn_cache(positions, head_dim, factor, attention_factor, original_max=4096):
    cos, sin = _half_cache(positions, _yarn_inv_freq(head_dim, factor, original_max))
    return cos * attention_factor, sin * attention_factor


# -- precision -----------------------------------------------------------------


@rope_wrong(bug="positions from torch.arange(seq_len, dtype=torch.bfloat16): above 256 they round and repeat",
            classes=("precision",), seen="pytorch/pytorch#137774; pytorch/pytorch#114544",
            api="rope-cache", cache_call="length")
def positions_arange_bfloat16(seq_len, head_dim):
    t = torch.arange(seq_len, dtype=torch.bfloat16).float()
    freqs = torch.outer(t, _inv_freq(head_dim))
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


@rope_wrong(bug="after model.to(bfloat16) the inv_freq buffer and the positions made from it (dtype=inv_freq.dtype) "
                "are in the activation dtype: right for float32 x, wrong for bfloat16/float16 x",
            classes=("precision",), seen="huggingface/transformers#25681",
            api="rope-cache", cache_call="x-positions")
def cache_in_activation_dtype(x, position_ids):
    inv_freq = _inv_freq(x.shape[-1]).to(x.dtype)  # the buffer, cast with the model
    t = torch.arange(int(position_ids.max()) + 1, dtype=inv_freq.dtype)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[position_ids].to(x.dtype), emb.sin()[position_ids].to(x.dtype)


@rope_wrong(bug="inv_freq @ positions inside the caller's bfloat16 autocast: the matmul, so the angle, runs in "
                "bfloat16 (the fix disables autocast around it)",
            classes=("precision",), seen="huggingface/transformers#29285", api="rope-cache")
def matmul_under_bf16_autocast(positions, head_dim):
    inv_freq = _inv_freq(head_dim)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the training loop's mixed precision
        freqs = (inv_freq[None, :, None].float() @ positions[None, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[0], emb.sin()[0]


class _MistralRotaryEmbedding(torch.nn.Module):
    """A cache built in float32 for max_position_embeddings, then cast with the model to bfloat16;
    past that length it is rebuilt from the (now bfloat16) inv_freq."""

    def __init__(self, dim, max_position_embeddings=4096, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self._set_cos_sin_cache(max_position_embeddings)
        self.to(torch.bfloat16)  # model.to(torch.bfloat16)

    def _set_cos_sin_cache(self, seq_len):
        self.max_seq_len_cached = seq_len
        t = torch.arange(seq_len, dtype=torch.int64).type_as(self.inv_freq)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, seq_len):
        if seq_len > self.max_seq_len_cached:
            self._set_cos_sin_cache(seq_len)
        return self.cos_cached[:seq_len], self.sin_cached[:seq_len]


@functools.cache
def _mistral_module(head_dim):
    return _MistralRotaryEmbedding(head_dim)


@rope_wrong(bug="past max_position_embeddings the cos/sin cache is regenerated from the bfloat16 inv_freq "
                "(and positions typed as it), and kept for later calls",
            classes=("precision", "dynamic-cache"), seen="huggingface/transformers#29496",
            api="rope-cache", cache_call="length")
def mistral_regenerates_in_bfloat16(seq_len, head_dim):
    return _mistral_module(head_dim)(seq_len)


@rope_wrong(bug="the angle table p*inv_freq is cached in the model's float16 before cos/sin: angle 1045 where "
                "1044.27 was meant",
            classes=("precision",), seen="EleutherAI/gpt-neox#1003", api="rope-cache")
def angles_cached_in_float16(positions, head_dim):
    freqs = torch.einsum("i,j->ij", positions.float(), _inv_freq(head_dim))
    emb = torch.cat((freqs, freqs), dim=-1).to(torch.float16)  # cached with the fp16 model
    return emb.float().cos(), emb.float().sin()


@rope_wrong(bug="inv_freq downcast with .to(torch.bfloat16) to match the parameters: 2**-9 relative error each",
            classes=("precision",), seen="NVIDIA/Megatron-LM#744", api="rope-freqs")
def inv_freq_downcast_to_bfloat16(head_dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    return inv_freq.to(torch.bfloat16)


@rope_wrong(bug="the apply path forms positions and inv_freq in q's dtype: right for float32 q, wrong for "
                "bfloat16/float16 q",
            classes=("precision", "apply"), api="rope-apply")
def apply_angles_in_query_dtype(x, positions):
    inv_freq = _inv_freq(x.shape[-1]).to(x.dtype)
    freqs = torch.outer(positions.to(x.dtype), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return _apply_bshd(x, emb.cos(), emb.sin())


@rope_wrong(bug="computes in float64 under torch.set_default_dtype(torch.float64) and never restores the default",
            classes=("global-state",), api="rope-cache")
def cache_leaves_default_dtype_float64(positions, head_dim):
    torch.set_default_dtype(torch.float64)  # "for accuracy"
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.get_default_dtype()) / head_dim))
    freqs = torch.outer(positions.to(torch.get_default_dtype()), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


# -- layout and permutation ---------------------------------------------------


@rope_wrong(bug="rope_interleaved is ignored: pairs (i, i + d/2) rotated where (2i, 2i + 1) was declared",
            classes=("layout",), seen="huggingface/nanotron PR #427", api="rope-apply", rope_layout="interleaved")
def interleaved_flag_ignored(x, positions):
    return _apply_bshd(x, *_half_cache(positions, _inv_freq(x.shape[-1])))


@rope_wrong(bug="Meta's view_as_complex rotation (pairs 2i, 2i + 1) run on a Hugging Face checkpoint (half layout)",
            classes=("layout",), seen="nurl-lang/nurl PR #584", api="rope-apply")
def meta_rotation_on_hf_layout(x, positions):
    freqs = torch.outer(positions.float(), _inv_freq(x.shape[-1]))
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * freqs_cis[None, :, None, :]).flatten(3).type_as(x)


@rope_wrong(bug="interleaved via the half kernel: features permuted evens-then-odds, rotated, then permuted with "
                "the same permutation instead of its inverse",
            classes=("layout",), seen="nntile/nntile PR #360", api="rope-apply", rope_layout="interleaved")
def wrong_inverse_permutation(x, positions):
    head_dim = x.shape[-1]
    perm = torch.cat([torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)])
    rotated = _apply_bshd(x[..., perm], *_half_cache(positions, _inv_freq(head_dim)))
    return rotated[..., perm]  # the inverse is torch.argsort(perm)


@rope_wrong(bug="cache in Meta's pair order (repeat_interleave) handed to a rotate_half model that declares half",
            classes=("layout",), seen="huggingface/transformers#25199; Dao-AILab/flash-attention#288",
            api="rope-cache")
def meta_order_cache_for_half_model(positions, head_dim):
    freqs = torch.outer(positions.float(), _inv_freq(head_dim))
    emb = freqs.repeat_interleave(2, dim=-1)
    return emb.cos(), emb.sin()


def _rotate_half_2d(x):
    """Written for (tokens, dim) inputs, where axis 1 holds the features."""
    half = x.shape[1] // 2
    return torch.cat((-x[:, half:], x[:, :half]), dim=1)


@rope_wrong(bug="rotate_half copied from 2-D (tokens, dim) code slices axis 1, the heads axis of a bhsd tensor",
            classes=("layout",), api="rope-apply", x_layout="bhsd")
def rotate_half_on_heads_axis(x, positions):
    cos, sin = _half_cache(positions, _inv_freq(x.shape[-1]))
    return x * cos.to(x.dtype) + _rotate_half_2d(x) * sin.to(x.dtype)


def _fixed_pos_embedding(positions, dim):
    """GPT-J's helper: returns (sin, cos)."""
    sinusoid_inp = torch.einsum("i,j->ij", positions.float(), _inv_freq(dim))
    emb = torch.cat((sinusoid_inp, sinusoid_inp), dim=-1)
    return emb.sin(), emb.cos()


@rope_wrong(bug="unpacks cos, sin from a helper that returns (sin, cos): sin and cos swapped",
            classes=("swapped-functions",), api="rope-cache")
def sin_cos_swapped(positions, head_dim):
    cos, sin = _fixed_pos_embedding(positions, head_dim)
    return cos, sin


@rope_wrong(bug="rotate_half returns cat(x2, -x1): every pair turns by -p*f", classes=("sign",), api="rope-apply")
def rotation_sign_flipped(x, positions):
    cos, sin = _half_cache(positions, _inv_freq(x.shape[-1]))
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    turned = torch.cat((x2, -x1), dim=-1)
    return x * cos[None, :, None, :].to(x.dtype) + turned * sin[None, :, None, :].to(x.dtype)


@rope_wrong(bug="1-based positions (arange(1, seq_len + 1)), as for a learned table whose row 0 is padding",
            classes=("off-by-one",), api="rope-cache", cache_call="length")
def positions_start_at_one(seq_len, head_dim):
    return _half_cache(torch.arange(1, seq_len + 1), _inv_freq(head_dim))


# -- partial rotary -------------------------------------------------------------


@rope_wrong(bug="exponent arange(0, rotary_dim, 2) / head_dim: the frequencies of a full head, cut at rotary_dim",
            classes=("partial-rotary",), seen="pie-project/pie PR #603", api="rope-freqs", partial_rotary_factor=0.25)
def exponent_over_head_dim(head_dim):
    rotary_dim = int(head_dim * 0.25)
    return 1.0 / (10000 ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32) / head_dim))


@rope_wrong(bug="partial_rotary_factor dropped on this code path: the whole head is rotated",
            classes=("partial-rotary",), seen="AI-Hypercomputer/maxtext PR #4615", api="rope-apply",
            partial_rotary_factor=0.5)
def partial_rotary_factor_dropped(x, positions):
    rotary_dim = x.shape[-1]  # config.partial_rotary_factor never reaches this layer
    return _apply_bshd(x, *_half_cache(positions, _inv_freq(rotary_dim)))


@rope_wrong(bug="the cos/sin table matches transformers, but apply takes its first seq rows instead of the rows "
                "at position_ids (cf. labscommunity/cascadia PR #69: tables tested, rotation not)",
            classes=("apply",), seen="labscommunity/cascadia PR #69", api="rope-apply")
def apply_ignores_position_ids(x, positions):
    seq_len = x.shape[1]
    cos_cached, sin_cached = _half_cache(torch.arange(seq_len), _inv_freq(x.shape[-1]))
    return _apply_bshd(x, cos_cached[:seq_len], sin_cached[:seq_len])


@rope_wrong(bug="proportional (Gemma 4) with the exponent over the rotated size 2n instead of head_dim",
            classes=("partial-rotary",), api="rope-freqs", rope_type="proportional", rope_theta=1e6,
            partial_rotary_factor=0.25)
def proportional_exponent_over_rotated_size(head_dim):
    rope_angles = int(0.25 * head_dim // 2)
    inv_freq = 1.0 / (1e6 ** (torch.arange(0, 2 * rope_angles, 2, dtype=torch.float32) / (2 * rope_angles)))
    return torch.cat([inv_freq, torch.zeros(head_dim // 2 - rope_angles)])


# -- dynamic NTK and caches ----------------------------------------------------------


@rope_wrong(bug="'dynamic' NTK built once at max_len = factor * L0: the base never follows the sequence length",
            classes=("dynamic-cache",), seen="vllm-project/vllm#3488; vllm-project/vllm#41236",
            api="rope-cache", rope_type="dynamic", rope_parameters=_DYNAMIC_2X)
def dynamic_ntk_built_once(positions, head_dim):
    factor, original_max = 2.0, 4096
    max_len = original_max * factor
    base = 10000.0 * ((factor * max_len / original_max) - (factor - 1)) ** (head_dim / (head_dim - 2))
    return _half_cache(positions, _inv_freq(head_dim, base))


class _DynamicNTKScaling:
    """The base grows with the longest sequence seen and is never scaled back."""

    def __init__(self, dim, factor=2.0, original_max=4096, base=10000.0):
        self.dim, self.factor, self.original_max, self.base = dim, factor, original_max, base
        self.inv_freq, self.max_seq_len_cached = _inv_freq(dim, base), original_max

    def __call__(self, positions):
        seq_len = int(positions.max()) + 1
        if seq_len > self.max_seq_len_cached:
            base = self.base * ((self.factor * seq_len / self.original_max) - (self.factor - 1)) ** (
                self.dim / (self.dim - 2))
            self.inv_freq, self.max_seq_len_cached = _inv_freq(self.dim, base), seq_len
        return _half_cache(positions, self.inv_freq)


@functools.cache
def _dynamic_module(head_dim):
    return _DynamicNTKScaling(head_dim)


@rope_wrong(bug="dynamic NTK recomputes inv_freq only when the sequence grows: after a long call, shorter ones keep "
                "the long call's base",
            classes=("dynamic-cache", "history"), seen="huggingface/transformers#27226",
            api="rope-cache", rope_type="dynamic", rope_parameters=_DYNAMIC_2X)
def dynamic_base_not_scaled_back(positions, head_dim):
    return _dynamic_module(head_dim)(positions)


class _GrowingCosSinCache:
    """Rows are appended for new positions with the current dynamic base; old rows stay."""

    def __init__(self, dim, factor=2.0, original_max=4096):
        self.dim, self.factor, self.original_max = dim, factor, original_max
        self.cos, self.sin = torch.empty(0, dim // 2), torch.empty(0, dim // 2)

    def __call__(self, positions):
        seq_len, cached = int(positions.max()) + 1, self.cos.shape[0]
        if seq_len > cached:
            stretch = max(seq_len, self.original_max) / self.original_max
            base = 10000.0 * (self.factor * stretch - (self.factor - 1)) ** (self.dim / (self.dim - 2))
            freqs = torch.outer(torch.arange(cached, seq_len).float(), _inv_freq(self.dim, base))
            self.cos, self.sin = torch.cat([self.cos, freqs.cos()]), torch.cat([self.sin, freqs.sin()])
        cos, sin = self.cos[positions], self.sin[positions]
        return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)


@functools.cache
def _growing_cache(head_dim):
    return _GrowingCosSinCache(head_dim)


@rope_wrong(bug="dynamic NTK cos/sin cache extended row by row: rows cached earlier (the keys already rotated) "
                "keep the base of the shorter length",
            classes=("dynamic-cache", "history"), seen="huggingface/transformers#25104",
            api="rope-cache", rope_type="dynamic", rope_parameters=_DYNAMIC_2X, head_dim=64)
def dynamic_cache_extended_row_by_row(positions, head_dim):
    return _growing_cache(head_dim)(positions)


@rope_wrong(bug="dynamic NTK without max(L, L0): below (1 - 1/factor) L0 the base is a negative number to a "
                "fractional power, NaN; up to L0 it shrinks",
            classes=("dynamic-cache",), seen="vllm-project/vllm PR #52675",
            api="rope-cache", rope_type="dynamic", rope_parameters=_DYNAMIC_2X)
def dynamic_ntk_below_trained_length(positions, head_dim):
    factor, original_max = 2.0, 4096
    served = int(positions.max()) + 1
    inner = torch.tensor(factor * served / original_max - (factor - 1), dtype=torch.float64)
    base = 10000.0 * inner ** (head_dim / (head_dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    return _half_cache(positions, inv_freq.float())


# -- YaRN and the attention factor ----------------------------------------------------


@rope_wrong(bug="YaRN's attention factor multiplies cos but not sin", classes=("attention-factor", "yarn"),
            api="rope-cache", rope_type="yarn", rope_parameters=_YARN_4X)
def attention_factor_on_cos_only(positions, head_dim):
    cos, sin = _half_cache(positions, _yarn_inv_freq(head_dim, 4.0, 4096))
    return cos * _yarn_get_mscale(4.0), sin


@rope_wrong(bug="mscale and mscale_all_dim read with .get(key, 1.0): the ratio branch always runs and A "
                "collapses to 1 where the config has neither",
            classes=("attention-factor", "yarn"), seen="turboderp-org/exllamav3#259",
            api="rope-cache", rope_type="yarn", rope_parameters=_YARN_4X)
def yarn_mscale_defaults_collapse(positions, head_dim):
    config = dict(_YARN_4X)
    mscale, mscale_all_dim = config.get("mscale", 1.0), config.get("mscale_all_dim", 1.0)
    if mscale and mscale_all_dim:
        attention = _yarn_get_mscale(4.0, mscale) / _yarn_get_mscale(4.0, mscale_all_dim)
    else:
        attention = _yarn_get_mscale(4.0)
    return _yarn_cache(positions, head_dim, 4.0, attention)


@rope_wrong(bug="generic YaRN ignores mscale/mscale_all_dim: 1.2773 where their ratio gives 1.0 (factor 16)",
            classes=("attention-factor", "yarn"), seen="vllm-project/vllm PR #48623; sgl-project/sglang PR #22711",
            api="rope-cache", rope_type="yarn",
            rope_parameters={"factor": 16.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                             "original_max_position_embeddings": 4096})
def yarn_mscale_ratio_ignored(positions, head_dim):
    return _yarn_cache(positions, head_dim, 16.0, _yarn_get_mscale(16.0))


class _YarnCache:
    """cos/sin cached with mscale folded in; forward multiplies by mscale once more."""

    def __init__(self, dim, factor=4.0, original_max=4096):
        self.mscale = _yarn_get_mscale(factor)
        self.inv_freq = _yarn_inv_freq(dim, factor, original_max)

    def forward(self, positions):
        cos, sin = _half_cache(positions, self.inv_freq)
        cos_cached, sin_cached = cos * self.mscale, sin * self.mscale
        return cos_cached * self.mscale, sin_cached * self.mscale


@rope_wrong(bug="YaRN mscale folded into the cache and applied again in forward: A squared",
            classes=("attention-factor", "yarn"), seen="sgl-project/sglang PR #33558",
            api="rope-cache", rope_type="yarn", rope_parameters=_YARN_4X)
def yarn_mscale_applied_twice(positions, head_dim):
    return _YarnCache(head_dim).forward(positions)


@rope_wrong(bug="an explicit attention_factor passed on as mscale, so 0.1 * mscale * ln(factor) + 1 logs it again",
            classes=("attention-factor", "yarn"), seen="NVIDIA/TensorRT-LLM PR #16379",
            api="rope-cache", rope_type="yarn",
            rope_parameters={"factor": 32.0, "attention_factor": 1.2, "original_max_position_embeddings": 4096})
def yarn_attention_factor_logged_again(positions, head_dim):
    mscale = 1.2  # rp.mscale = attention_factor
    return _yarn_cache(positions, head_dim, 32.0, _yarn_get_mscale(32.0, mscale))


@rope_wrong(bug="an explicit attention_factor (1.0: no scaling) is ignored; YaRN's 0.1 ln s + 1 is used",
            classes=("attention-factor", "yarn"), seen="vllm-project/vllm PR #48351; ml-explore/mlx-lm PR #1507",
            api="rope-cache", rope_type="yarn",
            rope_parameters={"factor": 8.0, "attention_factor": 1.0, "original_max_position_embeddings": 4096})
def yarn_explicit_attention_factor_ignored(positions, head_dim):
    return _yarn_cache(positions, head_dim, 8.0, _yarn_get_mscale(8.0))


@rope_wrong(bug="YaRN's factor replaced by max_position_embeddings / original_max_position_embeddings (8, not 4)",
            classes=("yarn",), seen="huggingface/transformers#38224",
            api="rope-cache", rope_type="yarn", rope_parameters=_YARN_4X, max_positions=32768)
def yarn_factor_from_length_ratio(positions, head_dim):
    factor = 32768 / _YARN_4X["original_max_position_embeddings"]
    return _yarn_cache(positions, head_dim, factor, _yarn_get_mscale(factor))


# -- LongRoPE and llama3 -----------------------------------------------


def _longrope_cache(positions, head_dim, ext_factors):
    ext = torch.tensor(ext_factors, dtype=torch.float32)
    inv_freq = 1.0 / (ext * 10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    scale = 131072 / 4096
    attention = math.sqrt(1 + math.log(scale) / math.log(4096))
    cos, sin = _half_cache(positions, inv_freq)
    return cos * attention, sin * attention


@rope_wrong(bug="LongRoPE built from long_factor alone: short_factor is parsed and never used",
            classes=("longrope",), seen="ml-explore/mlx-lm PR #660",
            api="rope-cache", rope_type="longrope", rope_parameters=_PHI3_LIKE, max_positions=131072, head_dim=64)
def longrope_short_factor_unused(positions, head_dim):
    return _longrope_cache(positions, head_dim, _PHI3_LIKE["long_factor"])


@rope_wrong(bug="long factors only when some position > L0, i.e. max(positions) + 1 > L0 + 1: a sequence of "
                "exactly L0 + 1 gets the short ones",
            classes=("longrope",), seen="vllm-project/vllm PR #27431",
            api="rope-cache", rope_type="longrope", rope_parameters=_PHI3_LIKE, max_positions=131072, head_dim=64)
def longrope_factor_by_any_position(positions, head_dim):
    long_prompt = bool(torch.any(positions > _PHI3_LIKE["original_max_position_embeddings"]))
    factors = _PHI3_LIKE["long_factor" if long_prompt else "short_factor"]
    return _longrope_cache(positions, head_dim, factors)


@rope_wrong(bug="llama3 rope_scaling parsed but never applied: Llama 3.1's frequencies unscaled at theta 500000",
            classes=("llama3",), seen="lablup/mlxcel#1355; unslothai/unsloth PR #6197",
            api="rope-freqs", rope_type="llama3", rope_theta=500000.0, rope_parameters=_LLAMA31)
def llama3_scaling_never_applied(head_dim):
    return 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
