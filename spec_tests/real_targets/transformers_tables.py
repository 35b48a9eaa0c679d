"""Sinusoidal tables of transformers 5, behind the gate's ``fn(num_positions, dim)``.

Two groups: the functions a model calls to build its table (DistilBERT
``create_sinusoidal_embeddings``, Marian ``create_weight``, M2M100 ``get_embedding``,
Whisper ``sinusoids``; Marian's module is built inside ``fork_rng`` so that only
``create_weight`` is judged), and whole modules built inside the call as a model builds
them, drawing their random (unused) weight from torch's global generator (Marian, Pegasus,
RoFormer, Autoformer, Informer, TimeSeriesTransformer, FSMT). See
``spec_tests/families/sinusoidal/test_gate_transformers.py`` and
``spec_tests/families/sinusoidal/test_gate_real_rng.py``.
"""

from __future__ import annotations

import torch
from transformers.models.autoformer.modeling_autoformer import AutoformerSinusoidalPositionalEmbedding
from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings
from transformers.models.fsmt.modeling_fsmt import SinusoidalPositionalEmbedding as FSMTSinusoidalPositionalEmbedding
from transformers.models.informer.modeling_informer import InformerSinusoidalPositionalEmbedding
from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding
from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding
from transformers.models.pegasus.modeling_pegasus import PegasusSinusoidalPositionalEmbedding
from transformers.models.roformer.modeling_roformer import RoFormerSinusoidalPositionalEmbedding
from transformers.models.time_series_transformer.modeling_time_series_transformer import (
    TimeSeriesSinusoidalPositionalEmbedding,
)
from transformers.models.whisper.modeling_whisper import sinusoids

FSMT_PADDING_INDEX = 1  # FSMT's configs use pad_token_id 1

# -- the functions a model calls --------------------------------------------------------


def distilbert(num_positions, dim):
    out = torch.empty(num_positions, dim)
    create_sinusoidal_embeddings(num_positions, dim, out)
    return out


def marian(num_positions, dim):
    # Building the module draws its random (unused) weight: keep the random stream as it was,
    # so that the gate's global-state check judges create_weight() alone.
    with torch.random.fork_rng(devices=[]):
        module = MarianSinusoidalPositionalEmbedding(num_positions, dim)
    return module.create_weight()


def m2m100(num_positions, dim):
    return M2M100SinusoidalPositionalEmbedding.get_embedding(num_positions, dim)


def whisper(num_positions, dim):
    return sinusoids(num_positions, dim)


# -- whole modules, built inside the call ---------------------------------------------------


def _initialised(module_class, num_positions, dim):
    """Construct (drawing the random weight), copy ``create_weight()`` over it as the
    model's ``_init_weights`` does, and look up positions 0 .. num_positions - 1."""
    module = module_class(num_positions, dim)
    with torch.no_grad():
        module.weight.copy_(module.create_weight())
    return module(torch.Size([1, num_positions]))


def marian_module(num_positions, dim):
    return _initialised(MarianSinusoidalPositionalEmbedding, num_positions, dim)


def pegasus(num_positions, dim):
    return _initialised(PegasusSinusoidalPositionalEmbedding, num_positions, dim)


def roformer(num_positions, dim):
    return _initialised(RoFormerSinusoidalPositionalEmbedding, num_positions, dim)


def autoformer(num_positions, dim):
    return _initialised(AutoformerSinusoidalPositionalEmbedding, num_positions, dim)


def informer(num_positions, dim):
    return _initialised(InformerSinusoidalPositionalEmbedding, num_positions, dim)


def time_series_transformer(num_positions, dim):
    return _initialised(TimeSeriesSinusoidalPositionalEmbedding, num_positions, dim)


def fsmt(num_positions, dim):
    """Built for the padding row alone; ``forward`` on a row of non-padding tokens grows
    the table and returns positions ``padding_idx + 1`` onwards."""
    module = FSMTSinusoidalPositionalEmbedding(FSMT_PADDING_INDEX + 1, dim, FSMT_PADDING_INDEX)
    tokens = torch.full((1, num_positions), FSMT_PADDING_INDEX + 1, dtype=torch.long)
    return module(tokens)[0]
