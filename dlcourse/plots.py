"""Pictures of attention: queries on rows, keys on columns, one colour scale for every picture."""

from __future__ import annotations

import matplotlib
from matplotlib.colors import LogNorm

import numpy as np
import torch
from matplotlib import pyplot as plt

GLYPHS = {" ": "␣", "\n": "⏎", "\t": "⇥"}
MASKED_COLOUR = "#d9d9d9"  # the causal mask's triangle: grey, never a shade of the colour scale
RELATIVE_RANGE = 4.0  # scale="relative" shows weight / uniform weight from 1/4 to 4 (log scale)
RELATIVE_LABEL = "weight ÷ uniform weight 1/(i+1)\nlog scale: 1 = uniform"
WEIGHT_LABEL = "attention weight"


def heatmap_size(T: int) -> float:
    """Side of a heatmap with character ticks, in inches: large enough for 8-point labels on every position."""
    return 4.5 if T <= 16 else max(8.0, 0.16 * T)


def tick_fontsize(T: int) -> float:
    return 8 if T <= 64 else 6


def glyph(ch: str) -> str:
    """A character made visible on an axis: space, newline and tab get a symbol."""
    return GLYPHS.get(ch, ch)


def tick_labels(chars: str) -> list[str]:
    """`index + character` for each position, e.g. '0 F', '5 ␣'."""
    return [f"{i} {glyph(ch)}" for i, ch in enumerate(chars)]


def as_matrix(A) -> np.ndarray:
    """One (T, T) attention matrix as a float numpy array (tensors are detached and copied)."""
    weights = A.detach().cpu().numpy() if isinstance(A, torch.Tensor) else np.asarray(A)
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1]:
        raise ValueError(f"an attention picture wants one (T, T) matrix, got shape {weights.shape}")
    return weights.astype(float)


def relative_to_uniform(weights: np.ndarray, causal: bool = True) -> np.ndarray:
    """Each weight divided by the uniform weight of its row: (i + 1) A_ij with the mask, T A_ij without.

    1 means "as much as the uniform matrix gives", 2 twice as much. Weights of 0 become a small
    positive number below the colour range, drawn in the darkest blue (not grey, the mask's colour).
    """
    T = weights.shape[0]
    uniform = 1.0 / np.arange(1, T + 1)[:, None] if causal else np.full((T, 1), 1.0 / T)
    return np.maximum(weights / uniform, 0.5 / RELATIVE_RANGE)


def relative_ticks(colorbar) -> None:
    """Ticks of a relative colour bar as plain factors: 1/4, 1/2, 1, 2, 4."""
    colorbar.set_ticks([1 / 4, 1 / 2, 1, 2, 4], labels=["1/4", "1/2", "1", "2", "4"])
    colorbar.ax.minorticks_off()


def masked_above_diagonal(weights: np.ndarray) -> np.ma.MaskedArray:
    """The entries above the diagonal marked as masked, so the colour map draws them grey."""
    T = weights.shape[0]
    return np.ma.masked_where(np.triu(np.ones((T, T), dtype=bool), k=1), weights)


def attention_heatmap(
    A,
    chars: str | None = None,
    ax=None,
    title: str | None = None,
    colorbar: bool = True,
    causal: bool = True,
    cmap: str = "Blues",
    vmax: float = 1.0,
    scale: str = "weight",
):
    """Draw one attention matrix A (T, T) and return the Axes.

    Row i is query position i, column j is key position j. With `scale="weight"` (the default)
    the colour range is fixed to [0, 1] so pictures compare across seeds and bandwidths (`vmax`
    below 1 stretches the scale; weights above it saturate). With `scale="relative"` each weight
    is divided by its row's uniform weight 1/(i+1) and drawn on a log scale from 1/4 to 4 (white:
    exactly uniform; red: more weight than uniform; blue: less), which shows the small departures
    of an untrained head that the [0, 1] scale hides. With `causal=True` the entries above the
    diagonal are drawn grey (masked), so a weight of 0.001 is never confused with a weight the
    mask removed.
    """
    if scale not in ("weight", "relative"):
        raise ValueError(f"scale must be 'weight' or 'relative', not {scale!r}")
    weights = as_matrix(A)
    T = weights.shape[0]
    if ax is None:
        size = heatmap_size(T) if chars is not None else (4.5 if T <= 16 else 8)
        _, ax = plt.subplots(figsize=(size + (1 if colorbar else 0), size))
    if scale == "relative":
        colours = matplotlib.colormaps["RdBu_r"].with_extremes(bad=MASKED_COLOUR)
        values = relative_to_uniform(weights, causal)
        shown = masked_above_diagonal(values) if causal else values
        image = ax.imshow(
            shown, cmap=colours, norm=LogNorm(1 / RELATIVE_RANGE, RELATIVE_RANGE), interpolation="nearest"
        )
    else:
        colours = matplotlib.colormaps[cmap].with_extremes(bad=MASKED_COLOUR)
        shown = masked_above_diagonal(weights) if causal else weights
        image = ax.imshow(shown, cmap=colours, vmin=0.0, vmax=vmax, interpolation="nearest")
    if colorbar:
        if scale == "relative":
            relative_ticks(
                ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, extend="both", label=RELATIVE_LABEL)
            )
        else:
            ax.figure.colorbar(
                image,
                ax=ax,
                fraction=0.046,
                pad=0.04,
                extend="max" if vmax < 1 else "neither",
                label=WEIGHT_LABEL + (f" (scale stretched to [0, {vmax:g}])" if vmax < 1 else ""),
            )
    if chars is not None:
        if len(chars) != T:
            raise ValueError(f"{len(chars)} characters for a {T}x{T} matrix")
        labels = tick_labels(chars)
        fontsize = tick_fontsize(T)
        ax.set_xticks(range(T), labels, rotation=90, fontsize=fontsize)
        ax.set_yticks(range(T), labels, fontsize=fontsize)
    ax.set_xlabel("key position j (attended to)")
    ax.set_ylabel("query position i (attending)")
    if title:
        ax.set_title(title)
    return ax


def heatmap_grid(matrices, titles, chars: str | None = None, ncols: int | None = None, scale: str = "weight"):
    """Several attention matrices side by side on the same colour scale; returns the Figure.

    `scale` as in `attention_heatmap`: "weight" ([0, 1]) or "relative" (weight ÷ 1/(i+1), log scale);
    the colour bar says which.
    """
    n = len(matrices)
    ncols = ncols or n
    nrows = (n + ncols - 1) // ncols
    labelled = chars is not None and len(chars) <= 16  # character ticks only where they stay legible
    size = 4.2 if labelled else 3.3
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(size * ncols + 0.8, size * nrows), squeeze=False, layout="constrained"
    )
    for ax, A, title in zip(axes.flat, matrices, titles):
        attention_heatmap(A, chars=None, ax=ax, title=title, colorbar=False, scale=scale)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        if labelled:
            ax.set_xticks(range(len(chars)), tick_labels(chars), rotation=90, fontsize=8)
            ax.set_yticks(range(len(chars)), tick_labels(chars), fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    image = axes.flat[0].images[0]
    colorbar = fig.colorbar(
        image,
        ax=axes,
        fraction=0.02,
        pad=0.01,
        extend="both" if scale == "relative" else "neither",
        label=RELATIVE_LABEL if scale == "relative" else WEIGHT_LABEL,
    )
    if scale == "relative":
        relative_ticks(colorbar)
    return fig


def sharpen(A, beta: float) -> torch.Tensor:
    """The weights softmax(beta * scores) from A = softmax(scores), without the scores: A ** beta, each
    row renormalised (computed in float64, returned as float32; 0 stays 0 above the diagonal).

    Multiplying every score by beta is multiplying W_Q and W_K by sqrt(beta). A power keeps the order of
    a row's weights, so each row's largest weight (its top key) is the same for every beta > 0.
    """
    powered = torch.as_tensor(A).double() ** beta  # (..., T, T)
    return (powered / powered.sum(dim=-1, keepdim=True)).float()  # (..., T, T)


def update_heatmap(ax, A, title: str | None = None) -> None:
    """Put a new matrix into a heatmap drawn by `attention_heatmap` (same size and masking):
    only the pixels change, so a slider redraws in milliseconds."""
    image = ax.images[0]
    weights = as_matrix(A)
    if weights.shape != image.get_array().shape:
        raise ValueError(f"the heatmap shows a {image.get_array().shape} matrix, not {weights.shape}")
    causal = np.ma.is_masked(image.get_array())
    if isinstance(image.norm, LogNorm):  # drawn with scale="relative"
        weights = relative_to_uniform(weights, causal)
    image.set_data(masked_above_diagonal(weights) if causal else weights)
    if title is not None:
        ax.set_title(title)


def sequence_ticks(ax, chars: str, fontsize: float = 7) -> None:
    """Label the x axis of a plot along the sequence with its characters (glyphs for space, newline)."""
    ax.set_xticks(range(len(chars)), [glyph(ch) for ch in chars], fontsize=fontsize, family="monospace")


def smoothing_plot(
    ax,
    signal,
    curves: dict,
    chars: str | None = None,
    ylabel: str = "",
    reference: float | None = None,
    legend: str = "right",
):
    """A 0/1 (or real) signal along the sequence as grey bars, and smoothed versions of it as lines.

    `curves` maps a label (e.g. "s = 2") to a sequence of the same length. `reference` draws a
    dotted horizontal line (say, the signal's mean over the whole corpus). The legend goes outside
    the axes, never on a curve: to the right (`legend="right"`) or in a row above (`"above"`).
    Returns the Axes.
    """
    values = np.asarray(signal.detach().cpu() if isinstance(signal, torch.Tensor) else signal, dtype=float)
    T = len(values)
    ax.bar(range(T), values, width=0.8, color="0.85", label="signal")
    for label, curve in curves.items():
        y = np.asarray(curve.detach().cpu() if isinstance(curve, torch.Tensor) else curve, dtype=float)
        ax.plot(range(T), y, marker=".", markersize=3, linewidth=1.6, label=label)
    if reference is not None:
        ax.axhline(reference, color="0.3", linestyle=":", linewidth=1, label=f"corpus mean {reference:.2f}")
    if chars is not None:
        sequence_ticks(ax, chars)
    ax.set_xlim(-0.6, T - 0.4)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("position i")
    ax.set_ylabel(ylabel)
    if legend == "above":
        ax.legend(
            fontsize=8,
            loc="lower left",
            bbox_to_anchor=(0.0, 1.01),
            borderaxespad=0.0,
            ncols=len(curves) + 1 + (reference is not None),
            frameon=False,
        )
    else:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0.0)
    return ax
