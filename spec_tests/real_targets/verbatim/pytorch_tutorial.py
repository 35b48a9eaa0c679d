# The PyTorch tutorial "Language Modeling with nn.Transformer and torchtext"
# (pytorch/tutorials, beginner_source/transformer_tutorial.py, as published in 2023),
# PositionalEncoding, verbatim. BSD 3-Clause License, Copyright (c) 2017-2022, PyTorch
# contributors. The most copied sinusoidal encoding there is: forward(x) returns
# dropout(x + pe[:seq_len]) for x of shape [seq_len, batch_size, embedding_dim].
import math

import torch
from torch import Tensor, nn


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        """
        Arguments:
            x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``
        """
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)
