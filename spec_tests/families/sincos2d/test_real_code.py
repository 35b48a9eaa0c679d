"""The presets against the real code they name, and the facts recorded about it.

``spec_tests/data/sincos2d_real_code.json`` records, per implementation, the library version,
the call, the preset it implements and its values at one small grid; per deviation from the
library's own intent, the smallest call that shows it. Each test runs where the library is
installed at the recorded version and skips otherwise, saying how to enable it (diffusers and
vit-pytorch are not test dependencies; vit-pytorch installs with ``--no-deps``, its package
importing torchvision). Nothing here needs the network.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc_spec.families.sincos2d import oracle
from posenc_spec.families.sincos2d.conventions import PRESETS
from posenc_spec.families.sincos2d.tolerance import table_tolerance
from posenc_spec.tolerance import compare, dtype_name
from spec_tests.families.sincos2d.real_code import CALLS, FACTS, require

IMPLEMENTATIONS = {fact["id"]: fact for fact in FACTS["implementations"]}
DEVIATIONS = {fact["id"]: fact for fact in FACTS["deviations"]}
# Grids each implementation is held to its preset on, beyond the recorded one (square for ViTMAE).
GRIDS = ((1, 1, 8), (1, 7, 12), (7, 1, 8), (7, 11, 64), (13, 32, 64))
SQUARE_GRIDS = ((1, 1, 8), (7, 7, 12), (16, 16, 64))


def as_array(result) -> tuple[np.ndarray, str]:
    if isinstance(result, torch.Tensor):
        return result.detach().to(torch.float64).numpy(), dtype_name(result.dtype)
    array = np.asarray(result)
    return array.astype(np.float64), dtype_name(array.dtype)


def ratio_to_preset(name: str, preset: str, height: int, width: int, dim: int) -> tuple[float, str]:
    actual, dtype = as_array(CALLS[name](height, width, dim))
    conv = PRESETS[preset]
    expected_shape = conv.shape(height, width, dim)
    while actual.ndim > len(expected_shape) and actual.shape[0] == 1:
        actual = actual[0]
    if actual.shape != expected_shape:
        return np.inf, f"shape {actual.shape}, declared {expected_shape}"
    result = compare(actual, oracle.table(height, width, dim, conv), table_tolerance(height, width, dim, conv, dtype))
    return result.max_ratio, result.describe()


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
def test_real_code_still_computes_the_recorded_values(name):
    """The installed library returns the recorded dtype, shape and values (within the bound of
    its dtype) at the recorded grid."""
    fact = IMPLEMENTATIONS[name]
    require(fact)
    actual, dtype = as_array(CALLS[name](*fact["grid"]))
    assert (dtype, list(actual.shape)) == (fact["dtype"], fact["shape"]), f"{fact['function']}: {dtype} {actual.shape}"
    recorded = np.array(fact["values"]).reshape(fact["shape"])
    conv = PRESETS[fact["preset"]]
    bound = table_tolerance(*fact["grid"], conv, dtype).reshape(fact["shape"])
    result = compare(actual, recorded, bound)
    assert result.ok, f"{fact['function']} at {fact['grid']}: {result.describe()}"


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
def test_each_preset_is_the_real_code_it_names(name):
    """Each implementation conforms to its preset on non-square, degenerate and prime grids
    (square ones for ViTMAE, whose table is square), element by element within the bound."""
    fact = IMPLEMENTATIONS[name]
    require(fact)
    for height, width, dim in SQUARE_GRIDS if fact["signature"] == "dim-size" else GRIDS:
        ratio, why = ratio_to_preset(name, fact["preset"], height, width, dim)
        assert ratio <= 1, f"{fact['call']} under preset {fact['preset']} at {height}x{width}:d={dim}: {why}"


def test_vit_pytorch_is_nan_at_width_4():
    """Deviation: vit-pytorch's posemb_sincos_2d divides by dim // 4 - 1, 0 at dim 4: every value NaN."""
    fact = DEVIATIONS["vit_pytorch_posemb"]
    require(fact)
    values, _ = as_array(CALLS["vit_pytorch_posemb"](*fact["smallest"]))
    assert np.isnan(values).all(), values


def test_transformers_detr_float16_is_out_of_its_bound():
    """Deviation: DETR's sine table asked for in float16 is computed in float16, off by more than
    three times the bound a float32-computed table rounded to float16 meets, at a 1x1 grid;
    the float32 table is within bound there."""
    fact = DEVIATIONS["transformers_detr_float16"]
    require(fact)
    height, width, dim = fact["smallest"]
    conv = PRESETS["detr"]
    actual, dtype = as_array(CALLS["transformers_detr_float16"](height, width, dim))
    assert dtype == "float16"
    bound = table_tolerance(height, width, dim, conv, dtype)
    result = compare(actual[0], oracle.table(height, width, dim, conv), bound)
    assert result.max_ratio > 3, result.describe()
    assert ratio_to_preset("transformers_detr", "detr", height, width, dim)[0] <= 1


def test_transformers_rt_detr_refuses_a_device_given_as_text():
    """Deviation: RT-DETR's position embedding annotates ``device: torch.device | str`` but
    raises AttributeError on ``"cpu"``."""
    fact = DEVIATIONS["transformers_rt_detr_device_text"]
    require(fact)
    with pytest.raises(AttributeError, match="'str' object has no attribute 'type'"):
        CALLS["transformers_rt_detr_device_text"](*fact["smallest"])


def test_diffusers_patch_embed_broadcasts_one_row_over_a_1x2_sample():
    """Deviation: PatchEmbed built for a 1 x 2 sample holds a 1-row table and adds it to both
    patches: the second gets the first's embedding, not its own (base_size = 1: column 1 at 0.5)."""
    fact = DEVIATIONS["diffusers_patch_embed"]
    require(fact)
    height, width, dim = fact["smallest"]
    added, _ = as_array(CALLS["diffusers_patch_embed"](height, width, dim))
    np.testing.assert_array_equal(added[0, 1], added[0, 0])
    own = oracle.table(height, width, dim, PRESETS["diffusers"].replace(base_size=float(height)))
    assert abs(own[1, 0] - added[0, 1, 0]) > 0.4, (own, added)
    with pytest.raises(RuntimeError, match="must match the size"):
        CALLS["diffusers_patch_embed"](2, 3, dim)


def test_diffusers_cls_token_alone_adds_no_row():
    """Deviation: get_2d_sincos_pos_embed's docstring gives 1 + grid_size**2 rows with
    cls_token=True, but the row comes only with extra_tokens > 0 too."""
    fact = DEVIATIONS["diffusers_cls_token"]
    require(fact)
    from diffusers.models.embeddings import get_2d_sincos_pos_embed

    dim = fact["smallest"][2]
    assert tuple(get_2d_sincos_pos_embed(dim, 1, cls_token=True).shape) == (1, dim)
    assert tuple(get_2d_sincos_pos_embed(dim, 1, cls_token=True, extra_tokens=1).shape) == (2, dim)
