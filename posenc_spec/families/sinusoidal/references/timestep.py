"""Seed 003's diffusion timestep embedding: the sine half, then the cosine half."""

import torch

from posenc_spec.families.sinusoidal.conventions import check_base, check_even_width


def timestep_embedding(timesteps: torch.Tensor, dim: int, base: float = 10000.0) -> torch.Tensor:
    """One row per timestep, float32, on the timesteps' device::

        factor[k] = base ** (k / (dim/2))            k = 0 .. dim/2 - 1   (= 2k/dim)
        emb[t]    = [sin(t / factor) | cos(t / factor)]

    ``timesteps`` is a 1-D tensor of integer or floating steps (NaN, Inf, bool and complex
    refused); ``dim`` even, ``base`` finite, positive and not 1.
    """
    if not isinstance(timesteps, torch.Tensor):
        raise TypeError(f"timesteps must be a 1-D torch.Tensor, got {type(timesteps).__name__}")
    if timesteps.ndim != 1:
        raise ValueError(f"timesteps must be 1-D, got shape {tuple(timesteps.shape)}")
    if timesteps.is_complex() or timesteps.dtype == torch.bool:
        raise TypeError(f"timesteps must hold real numbers, got dtype {timesteps.dtype}")
    steps = timesteps.to(torch.float32)
    if not torch.isfinite(steps).all():
        raise ValueError(f"timesteps must be finite, got {steps[~torch.isfinite(steps)][:3].tolist()}")
    dim = check_even_width(dim, "dim")
    base = check_base(base)
    half = dim // 2
    factor = base ** (torch.arange(half, dtype=torch.float32, device=timesteps.device) / half)
    angle = steps[:, None] / factor
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)
