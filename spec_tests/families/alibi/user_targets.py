"""Small ALiBi targets as a user writes them: the text of a module the gate tests put in a folder."""

TARGETS = """\
import math

import torch


def paper_slopes(n):
    closest = 2 ** math.floor(math.log2(n))
    first = [2.0 ** (-8.0 * h / closest) for h in range(1, closest + 1)]
    extra = [2.0 ** (-8.0 * (2 * k - 1) / (2 * closest)) for k in range(1, n - closest + 1)]
    return torch.tensor(first + extra, dtype=torch.float32)


def geometric_slopes(n):
    return torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float32)


def mpt_bias(num_heads, length, alibi_bias_max=8):
    return paper_slopes(num_heads)[:, None, None] * torch.arange(1 - length, 1, dtype=torch.float32)[None, None]


class Bidirectional(torch.nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.slopes = paper_slopes(heads)[:, None, None]

    def forward(self, i, j):
        q = torch.arange(j - i, j)[:, None]
        return -(torch.arange(j)[None, :] - q).abs()[None] * self.slopes


class FullSquare(torch.nn.Module):
    # Baichuan's idiom: the whole (heads, keys, keys) causal bias, -inf above the diagonal,
    # sliced to the last i queries.

    def __init__(self, heads):
        super().__init__()
        self.slopes = paper_slopes(heads)[:, None, None]

    def forward(self, i, j):
        future = torch.triu(torch.full((j, j), float("-inf")), 1)
        positions = torch.arange(j, dtype=torch.float32)
        return (self.slopes * (positions[None, :] - positions[:, None]) + future)[:, j - i:, :]


def sign_flipped(num_heads, length):
    q = torch.arange(length)[:, None]
    return -(torch.arange(length)[None, :] - q)[None] * paper_slopes(num_heads)[:, None, None]
"""
