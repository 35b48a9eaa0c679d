# An ALiBi bias as user code often writes it: fn(num_heads, q_len, k_len), the last q_len
# queries over k_len keys, m (k - q) causal, the paper's slopes (2 ** (-8 h / n) for n a power
# of two). Written for these tests after the common pattern (x-transformers' AlibiPositionalBias,
# MPT's build_alibi_bias), not copied from one file.
import math

import torch


def _slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    start = 2 ** (-8 / closest)
    slopes = [start ** (i + 1) for i in range(closest)]
    if closest < num_heads:
        extra = 2 ** (-4 / closest)
        slopes += [extra ** (2 * i + 1) for i in range(num_heads - closest)]
    return torch.tensor(slopes)


def alibi_bias(num_heads, q_len, k_len):
    keys = torch.arange(k_len)
    queries = torch.arange(k_len - q_len, k_len)
    distance = (keys[None, :] - queries[:, None]).clamp(max=0)
    return _slopes(num_heads)[:, None, None] * distance[None].float()
