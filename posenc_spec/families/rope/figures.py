"""Figures of rotary position embeddings (RoPE), each drawn from given arrays.

- :func:`rope_wavelength_figure`: the wavelength ``2 pi / f'_i`` of every pair under
  several scaling types, on a log scale, with ``original_max_position_embeddings`` (``L0``)
  drawn across: the pairs whose wavelength exceeds ``L0`` are the ones llama3 and yarn
  rescale, and their ramps show where each curve leaves the default one.
- :func:`rope_score_figure`: the score ``q(m) . k(n)`` of one pair of rotated vectors for
  every query position ``m`` and key position ``n``. RoPE makes it a function of ``m - n``
  alone, so the matrix is constant along each diagonal.
- :func:`rope_difference_figure` and :func:`rope_difference_figures`: the pictures of
  ``posenc-spec plot --api rope-*``: one array a RoPE target returned (``inv_freq``, the cos or
  sin cache, the rotated ``x``) against the expected one, element by element over its
  tolerance, in the style of :func:`~posenc_spec.figures.difference.difference_figure`.

The frequencies, scores and expected values come from the caller (the oracle of
:mod:`posenc_spec.families.rope.oracle`, a target under test); nothing here computes a RoPE value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from posenc_spec.figures.arrays import as_table
from posenc_spec.figures.difference import difference_figure
from posenc_spec.figures.style import DPI, HEADING_SIZE, figure_style, heading, new_figure, save_png

WAVELENGTH_FIGSIZE = (10, 5.5)
SCORE_FIGSIZE = (7, 6)
# One marker per curve, so that curves that coincide over some pairs (default and llama3 at
# the high frequencies, linear and llama3 at the low ones) stay told apart.
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">")
ORIGINAL_LENGTH_COLOUR = "black"
WAVELENGTH = r"$2\pi\,/\,f'_i$"  # mathtext, in the bundled DejaVu fonts
DIFFERENCE_FILE = "difference_{}.png"  # the file of each picture of rope_difference_figures, by its name
# How the columns of each kind of array :func:`rope_difference_figures` draws are named.
COLUMN_LABELS = {
    "inv_freq": "Pair i",
    "cache": "Cache column",
    "x": "Feature",
}


def _title(title) -> str:
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    return title


def _frequencies(label, values) -> np.ndarray:
    if not isinstance(label, str) or not label:
        raise TypeError(f"each frequencies key must be a non-empty str (the curve's label), got {label!r}")
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"frequencies[{label!r}] must be a 1-D array of numbers, got {type(values).__name__}") from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"frequencies[{label!r}] must be a non-empty 1-D array (one f' per pair), got shape "
                         f"{array.shape}")
    bad = array[~(np.isfinite(array) & (array >= 0))]
    if bad.size:
        raise ValueError(f"frequencies[{label!r}] must be finite and >= 0, got {bad[:3]}")
    return array


def rope_wavelength_figure(frequencies: Mapping, *, original_length: int, title: str, dpi: float = DPI) -> Figure:
    """The wavelength ``2 pi / f'_i`` (in positions) of every pair ``i`` on 10 x 5.5 inches,
    one curve with its own marker per entry of ``frequencies`` (label -> ``f'``, one value
    per pair), on a log scale; ``original_length`` (``L0``) is a dashed black line across,
    named in the legend. A pair of frequency 0 (``proportional``'s unrotated pairs) has no
    wavelength: it is left out of its curve, and the legend says how many there are.
    ``title`` heads a line saying what is drawn."""
    title = _title(title)
    if not isinstance(frequencies, Mapping) or not frequencies:
        raise TypeError(f"frequencies must be a non-empty mapping of label -> f' per pair, got {frequencies!r}")
    if len(frequencies) > len(MARKERS):
        raise ValueError(f"frequencies must hold at most {len(MARKERS)} curves, got {len(frequencies)}")
    curves = {label: _frequencies(label, values) for label, values in frequencies.items()}
    if isinstance(original_length, bool) or not isinstance(original_length, (int, np.integer)) or original_length < 1:
        raise ValueError(f"original_length must be an int >= 1 (original_max_position_embeddings), got "
                         f"{original_length!r}")
    description = f"wavelength {WAVELENGTH} of each pair; dashed: original_max_position_embeddings"
    with figure_style():
        figure = new_figure(WAVELENGTH_FIGSIZE, dpi)
        figure.set_layout_engine("constrained")
        axes = figure.add_subplot()
        for (label, f), marker in zip(curves.items(), MARKERS, strict=False):
            unrotated = int(np.count_nonzero(f == 0))
            with np.errstate(divide="ignore"):
                wavelength = np.where(f > 0, 2 * np.pi / f, np.nan)  # NaN: not drawn
            if unrotated:
                label = f"{label} ({unrotated} pairs not rotated: f' = 0)"
            axes.plot(np.arange(f.size), wavelength, marker=marker, markersize=4, linewidth=1.2, label=label)
        axes.axhline(original_length, color=ORIGINAL_LENGTH_COLOUR, linestyle="--", linewidth=1.2,
                     label=f"original_max_position_embeddings = {int(original_length)}")
        axes.set_yscale("log")
        axes.set(xlabel="Pair i", ylabel=f"Wavelength {WAVELENGTH} (positions, log scale)")
        axes.grid(True, which="major", linewidth=0.5, alpha=0.5)
        axes.legend(loc="upper left", fontsize=8)
        figure.suptitle(heading(title, description, WAVELENGTH_FIGSIZE[0]), fontsize=HEADING_SIZE)
    return figure


def rope_score_figure(scores, *, title: str, dpi: float = DPI) -> Figure:
    """The scores ``q(m) . k(n)`` (query positions ``m`` down, key positions ``n`` across,
    both from 0) on 7 x 6 inches in ``RdBu_r``, symmetric about 0, with a colorbar of
    scores. ``title`` heads a line saying that RoPE makes each diagonal constant."""
    title = _title(title)
    scores = as_table(scores, "scores")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"scores must be finite, got {np.count_nonzero(~np.isfinite(scores))} NaN or infinite values")
    limit = float(np.abs(scores).max()) or 1.0
    description = "q(m) \N{MIDDLE DOT} k(n) depends on m - n alone: constant along each diagonal"
    with figure_style():
        figure = new_figure(SCORE_FIGSIZE, dpi)
        figure.set_layout_engine("constrained")
        axes = figure.add_subplot()
        image = axes.imshow(scores, cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
        axes.set(xlabel="Key position n", ylabel="Query position m")
        figure.colorbar(image, ax=axes, label="q(m) \N{MIDDLE DOT} k(n)")
        figure.suptitle(heading(title, description, SCORE_FIGSIZE[0]), fontsize=HEADING_SIZE)
    return figure


def rope_difference_figure(actual, expected, bound, *, title: str, columns: str, positions=None,
                           dpi: float = DPI) -> Figure:
    """:func:`~posenc_spec.figures.difference.difference_figure` of one RoPE array:
    ``actual``, ``expected`` and ``bound`` (its tolerance) are ``(positions, columns)`` or,
    for ``inv_freq``, one value per pair (drawn as one row, its axis unnamed). ``columns``
    names the x axis (:data:`COLUMN_LABELS`); ``positions`` are the rows' positions (None:
    ``0 .. n - 1``), named on the y axis."""
    title = _title(title)
    if not isinstance(columns, str):
        raise TypeError(f"columns must be a str (the x axis label), got {type(columns).__name__}")
    one_row = np.ndim(actual) == 1
    if one_row:
        if positions is not None:
            raise ValueError("positions must be None for a 1-D array (one value per pair, no positions)")
        actual, expected, bound = (np.reshape(value, (1, -1)) for value in (actual, expected, bound))
    figure = difference_figure(actual, expected, bound, title=title, positions=positions, row_kind="position",
                               dpi=dpi)
    for axes in figure.axes:
        if axes.get_label() == "<colorbar>":
            continue
        axes.set_xlabel(columns)
        if one_row:
            axes.set_ylabel("")
            axes.set_yticks([])
    return figure


def rope_difference_figures(parts: Mapping, *, title: str, columns: str, positions=None,
                            dpi: float = DPI) -> dict[str, Figure]:
    """For each ``name -> (actual, expected, bound)`` of ``parts`` (``inv_freq``; ``cos``
    and ``sin``, or ``angles``; ``x``), :func:`rope_difference_figure` titled ``"TITLE:
    NAME"``, by name; each is saved as :data:`DIFFERENCE_FILE` of its name."""
    if not isinstance(parts, Mapping) or not parts:
        raise TypeError(f"parts must be a non-empty mapping of name -> (actual, expected, bound), got {parts!r}")
    return {name: rope_difference_figure(*arrays, title=f"{title}: {name}", columns=columns, positions=positions,
                                         dpi=dpi)
            for name, arrays in parts.items()}


def write_rope_difference_figures(parts: Mapping, out_dir, *, title: str, columns: str, positions=None,
                                  dpi: float = DPI) -> dict[str, Path]:
    """:func:`rope_difference_figures` written as ``difference_NAME.png`` in ``out_dir``
    (created if needed); returns the paths by name."""
    figures = rope_difference_figures(parts, title=title, columns=columns, positions=positions, dpi=dpi)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return {name: save_png(figure, out_dir / DIFFERENCE_FILE.format(name)) for name, figure in figures.items()}
