# keras-hub's Falcon ALiBi (keras-team/keras-hub, keras_hub/src/models/falcon/
# falcon_transformer_decoder.py, FalconTransformerDecoder._build_alibi_tensor and
# _get_slopes), its logic transcribed to torch: keras is not installed here, so ops.* become
# their torch equivalents and the layer keeps only what the two methods read (compute_dtype).
# Apache License 2.0, Copyright The KerasHub Authors. _build_alibi_tensor(num_heads,
# attention_mask) returns (batch * heads, 1, keys): BLOOM's key-only bias m (cumsum(mask) - 1) * mask.
import math

import torch


class FalconTransformerDecoder:
    def __init__(self, compute_dtype=torch.float32):
        self.compute_dtype = compute_dtype

    def _build_alibi_tensor(self, num_heads, attention_mask):
        batch_size, seq_length = attention_mask.shape
        slopes = torch.as_tensor(self._get_slopes(num_heads), dtype=self.compute_dtype)  # num_heads
        arange_tensor = (
            (torch.cumsum(attention_mask, dim=-1) - 1).to(torch.int32) * attention_mask
        )[:, None, :]  # (batch_size, 1, seq_length)
        alibi = slopes[..., None] * arange_tensor.to(self.compute_dtype)
        alibi = torch.unsqueeze(alibi, 1)  # (batch_size, num_heads, 1, seq_length)
        return torch.reshape(alibi, (batch_size * num_heads, 1, seq_length))

    def _get_slopes(self, num_heads):
        closest_power_of_2 = int(2 ** math.floor(math.log2(num_heads)))
        base = float(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))))
        powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.float32)
        slopes = torch.pow(base, powers)

        if closest_power_of_2 != num_heads:
            extra_base = float(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))))
            num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
            extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=torch.float32)
            slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)

        return slopes
