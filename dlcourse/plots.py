"""Pictures of attention: queries on rows, keys on columns, one colour scale for every picture."""
from __future__ import annotations

import matplotlib

import numpy as np
import torch
from matplotlib import pyplot as plt
from matplotlib.colors import ListedColormap

GLYPHS = {" ": "␣", "\n": "⏎", "\t": "⇥"}
MASKED_COLOUR = "#d9d9d9"  # the causal mask's triangle: grey, never a shade of the colour scale


def glyph(ch: str) -> str:
    """A character made visible on an axis: space, newline and tab get a symbol."""
    return GLYPHS.get(ch, ch)


def tick_labels(chars: str) -> list[str]:
    """`index + character` for each position, e.g. '0 F', '5 ␣'."""
    return [f"{i} {glyph(ch)}" for i, ch in enumerate(chars)]


def attention_heatmap(A, chars: str | None = None, ax=None, title: str | None = None,
                      colorbar: bool = True, causal: bool = True, cmap: str = "Blues"):
    """Draw one attention matrix A (T, T) and return the Axes.

    Row i is query position i, column j is key position j. The colour range is fixed to
    [0, 1] so pictures compare across seeds and bandwidths. With `causal=True` the entries
    above the diagonal are drawn grey (masked), so a weight of 0.001 is never confused
    with a weight the mask removed.
    """
    weights = A.detach().cpu().numpy() if isinstance(A, torch.Tensor) else np.asarray(A)
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1]:
        raise ValueError(f"attention_heatmap wants one (T, T) matrix, got shape {weights.shape}")
    T = weights.shape[0]
    if ax is None:
        size = 4.5 if T <= 16 else 7
        _, ax = plt.subplots(figsize=(size + (1 if colorbar else 0), size))
    colours = matplotlib.colormaps[cmap].copy()
    colours.set_bad(MASKED_COLOUR)
    shown = np.ma.masked_where(np.triu(np.ones((T, T), dtype=bool), k=1), weights) if causal else weights
    image = ax.imshow(shown, cmap=colours, vmin=0.0, vmax=1.0, interpolation="nearest")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    if chars is not None:
        if len(chars) != T:
            raise ValueError(f"{len(chars)} characters for a {T}x{T} matrix")
        labels = tick_labels(chars)
        fontsize = 8 if T <= 16 else 5
        ax.set_xticks(range(T), labels, rotation=90, fontsize=fontsize)
        ax.set_yticks(range(T), labels, fontsize=fontsize)
    ax.set_xlabel("key position j (attended to)")
    ax.set_ylabel("query position i (attending)")
    if title:
        ax.set_title(title)
    return ax


def heatmap_grid(matrices, titles, chars: str | None = None, ncols: int | None = None):
    """Several attention matrices side by side on the same colour scale; returns the Figure."""
    n = len(matrices)
    ncols = ncols or n
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 3.3 * nrows), squeeze=False)
    for ax, A, title in zip(axes.flat, matrices, titles):
        attention_heatmap(A, chars=None, ax=ax, title=title, colorbar=False)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        if chars is not None and len(chars) <= 16:
            ax.set_xticks(range(len(chars)), tick_labels(chars), rotation=90, fontsize=6)
            ax.set_yticks(range(len(chars)), tick_labels(chars), fontsize=6)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    image = axes.flat[0].images[0]
    fig.colorbar(image, ax=axes, fraction=0.02, pad=0.02, label="attention weight")
    return fig
