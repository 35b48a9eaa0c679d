"""The real 2-D sincos code the family's facts are about, each called as its library's caller
calls it, in the family's canonical form ``(height, width, dim) -> table``.

Only ``test_real_code.py`` and the script that records ``spec_tests/data/sincos2d_real_code.json``
import this module; each entry names the distribution it needs, so a missing one is a skip.
vit-pytorch's package imports torchvision (for its DINO and JEPA trainers), which does not
install beside this torch: its ``simple_vit.py`` is loaded from the installed distribution
by file, as the only file the function needs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path

import pytest
import torch

# The libraries' modules the gate's template imports once for every target of a run (their model
# modules are slow to import), for the tests that run real code through the gate.
PRELOAD = ("diffusers.models.embeddings", "transformers.models.vit_mae.modeling_vit_mae",
           "transformers.models.rt_detr.modeling_rt_detr", "transformers.models.detr.modeling_detr",
           "transformers.models.deformable_detr.modeling_deformable_detr")
FACTS = json.loads((Path(__file__).resolve().parents[2] / "data" / "sincos2d_real_code.json").read_text())


def require(fact: dict) -> None:
    """Skip unless the fact's library is installed at the recorded version."""
    library, version = fact["library"], fact["version"]
    try:
        installed = importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{library} is not installed: pip install {library}=={version}"
                    + (" --no-deps" if library == "vit-pytorch" else "") + " to check these facts")
    if installed != version:
        pytest.skip(f"{library} {installed} is installed; these facts are for {version} "
                    f"(pip install {library}=={version})")


def vit_pytorch_file() -> str:
    """The installed ``vit_pytorch/simple_vit.py``, a file target (its package imports torchvision)."""
    return str(importlib.metadata.distribution("vit-pytorch").locate_file("vit_pytorch/simple_vit.py"))


def _vit_pytorch_simple_vit():
    spec = importlib.util.spec_from_file_location("vit_pytorch_simple_vit", vit_pytorch_file())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def diffusers_function(height, width, dim):
    from diffusers.models.embeddings import get_2d_sincos_pos_embed

    return get_2d_sincos_pos_embed(dim, (height, width))


def diffusers_sd3_crop(height, width, dim):
    from diffusers.models.embeddings import PatchEmbed

    module = PatchEmbed(height=128, width=128, patch_size=2, in_channels=4, embed_dim=dim, pos_embed_max_size=192)
    return module.cropped_pos_embed(2 * height, 2 * width)


def diffusers_patch_embed(height, width, dim):
    """PatchEmbed(height=H, width=W, patch_size=1) run on a zero latent of its own size with its
    projection zeroed: what it adds is its table (base_size = H)."""
    from diffusers.models.embeddings import PatchEmbed

    module = PatchEmbed(height=height, width=width, patch_size=1, in_channels=1, embed_dim=dim)
    with torch.no_grad():
        module.proj.weight.zero_()
        module.proj.bias.zero_()
        return module(torch.zeros(1, 1, height, width))


def transformers_build(height, width, dim):
    from transformers.models.vit_mae.modeling_vit_mae import build_2d_sinusoidal_position_embedding

    return build_2d_sinusoidal_position_embedding(height, width, embed_dim=dim)


def transformers_vit_mae(height, width, dim):
    """ViTMAE's frozen table as ``initialize_weights`` sets it (square images only: H = W)."""
    from transformers import ViTMAEConfig
    from transformers.models.vit_mae.modeling_vit_mae import ViTMAEEmbeddings

    if height != width:
        raise ValueError(f"ViTMAE's table is square, got {height}x{width}")
    config = ViTMAEConfig(image_size=height, patch_size=1, num_channels=1, hidden_size=dim)
    embeddings = ViTMAEEmbeddings(config)
    embeddings.initialize_weights()
    return embeddings.position_embeddings.detach()


def transformers_rt_detr(height, width, dim):
    from transformers.models.rt_detr.modeling_rt_detr import RTDetrSinePositionEmbedding

    return RTDetrSinePositionEmbedding(embed_dim=dim)(width=width, height=height, device=torch.device("cpu"),
                                                      dtype=torch.float32)


def transformers_rt_detr_device_text(height, width, dim):
    """The same with ``device="cpu"``, as forward's annotation (``torch.device | str``) allows."""
    from transformers.models.rt_detr.modeling_rt_detr import RTDetrSinePositionEmbedding

    return RTDetrSinePositionEmbedding(embed_dim=dim)(width=width, height=height, device="cpu", dtype=torch.float32)


def _detr(module_class, height, width, dim, dtype):
    return module_class(num_position_features=dim // 2, normalize=True)(torch.Size([1, 3, height, width]), "cpu",
                                                                          dtype)


def transformers_detr(height, width, dim):
    from transformers.models.detr.modeling_detr import DetrSinePositionEmbedding

    return _detr(DetrSinePositionEmbedding, height, width, dim, torch.float32)


def transformers_detr_float16(height, width, dim):
    from transformers.models.detr.modeling_detr import DetrSinePositionEmbedding

    return _detr(DetrSinePositionEmbedding, height, width, dim, torch.float16)


def transformers_deformable_detr(height, width, dim):
    from transformers.models.deformable_detr.modeling_deformable_detr import DeformableDetrSinePositionEmbedding

    return _detr(DeformableDetrSinePositionEmbedding, height, width, dim, torch.float32)


def vit_pytorch_posemb(height, width, dim):
    return _vit_pytorch_simple_vit().posemb_sincos_2d(height, width, dim)


CALLS = {name: function for name, function in globals().items()
         if callable(function) and not name.startswith("_") and function.__module__ == __name__
         and name not in ("require", "vit_pytorch_file")}
