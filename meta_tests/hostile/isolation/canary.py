"""The canary: a correct vaswani table that fails if another target's doing reaches it.

It computes the sines with ``torch.sin`` and the cosines with ``numpy.sin`` (``cos t =
sin(t + pi/2)``), emits a warning, and raises if torch's default dtype is not float32, a
real-time timer is pending, or autograd is off. Each polluter in this folder breaks one of these in its own
process; the victims (``victim_*.py``, distinct modules, so that the gate cannot group
them) run after the polluters. Verdict of every victim: conforms.
"""

from __future__ import annotations

import math
import signal
import warnings

import numpy as np
import torch


def canary(num_positions, dim):
    problems = []
    if torch.get_default_dtype() != torch.float32:
        problems.append(f"torch's default dtype is {torch.get_default_dtype()}")
    if signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0):
        problems.append("a real-time timer is pending")
    if torch.is_inference_mode_enabled() or not torch.is_grad_enabled():
        problems.append("autograd is off")
    if problems:
        raise RuntimeError("another target reached this one: " + "; ".join(problems))
    warnings.warn("the canary sings (a warning that an 'error' filter would raise)", UserWarning, stacklevel=1)
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = torch.arange(dim // 2, dtype=torch.float64)
    theta = torch.arange(num_positions, dtype=torch.float64)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    table = torch.empty(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(theta)
    table[:, 1::2] = torch.from_numpy(np.sin(theta.numpy() + math.pi / 2))
    return table.to(torch.float32)
