"""Run by ``borrowed_attribution.names_numpy_as_its_origin`` as if it were NumPy: leaves
torch's default dtype float64."""

import torch

torch.set_default_dtype(torch.float64)
