"""Sliders for the attention pictures.

Each slider calls a plain function that returns a matplotlib Figure, so the pictures can be
tested without a browser:

    seed_figure(attention_fn, seed, chars, beta)      the heatmap of attention_fn(seed), scores times beta
    bandwidth_figure(smoothing_fn, s, signal, chars)  A = smoothing_fn(T, s) and A @ signal

and a builder wraps it in an ipywidgets `interactive`:

    seed_slider(handout_attention, chars=text[:64], beta=16)  # IntSlider,      CSS class "seed-slider",
                                                              # and a choice of beta, CSS class "beta-choice"
    bandwidth_slider(smoothing_attention, signal, chars)      # FloatLogSlider, CSS class "bandwidth-slider"

The builders draw the first picture before they create the slider, so a function that is not
written yet raises its NotImplementedError at once (and `dlcourse.checks.needs` can catch it)
instead of printing a traceback inside the widget. Each builder keeps one Figure (made
without pyplot, so the inline backend never shows or keeps a copy) and a slider move only
replaces the pixels of the heatmap and the y-values of the curves: updating the Figure costs
the attention function plus about a millisecond, and memory does not grow however often the
slider moves. The widget shows each state as a PNG from `FrameRenderer`, which redraws only
what changed (the tick labels of a 64-character heatmap are most of a full drawing's time).
"""

from __future__ import annotations

import io
from typing import Callable

import numpy as np
import torch
from matplotlib.figure import Figure

from .plots import attention_heatmap, heatmap_size, sharpen, smoothing_plot, update_heatmap

SEED_CLASS = "seed-slider"
BETA_CLASS = "beta-choice"
BANDWIDTH_CLASS = "bandwidth-slider"
BETAS = (1, 4, 16, 64)  # the score scales the seed slider offers: 1 is the head as built


def _seed_title(seed: int, beta: float = 1) -> str:
    if beta == 1:
        return f"attention A of an untrained head, seed {seed}, as built"
    return f"untrained head, seed {seed}, scores × {beta:g}: each row commits to its top key"


def _bandwidth_title(s: float) -> str:
    return f"positions-only attention, bandwidth s = {s:.3g}"


def seed_figure(
    attention_fn: Callable[[int], torch.Tensor],
    seed: int,
    chars: str | None = None,
    fig: Figure | None = None,
    beta: float = 1,
) -> Figure:
    """The heatmap of `attention_fn(seed)`, a (T, T) attention matrix, with its scores times `beta`
    (`dlcourse.plots.sharpen`; beta = 1 draws the matrix as it is).

    Without `fig`, draws a new Figure. With `fig` (one this function returned before), puts the
    new matrix into it and returns the same Figure: nothing is added, nothing needs closing.
    The layout is matplotlib's "compressed" one, made for a square image: with "constrained", the
    y label of a 64-character heatmap fell off the figure's left edge.
    """
    A = attention_fn(int(seed))
    if beta != 1:
        A = sharpen(A, beta)
    if fig is None:
        T = A.shape[-1]
        size = heatmap_size(T) if chars is not None else (4.5 if T <= 16 else 8)
        fig = Figure(figsize=(size + 1, size), layout="compressed")
        attention_heatmap(A, chars=chars, ax=fig.add_subplot(), title=_seed_title(seed, beta))
    else:
        update_heatmap(fig.axes[0], A, title=_seed_title(seed, beta))
    return fig


def smoothed(smoothing_fn: Callable[[int, float], torch.Tensor], s: float, signal: torch.Tensor):
    """(A, A @ signal) for A = smoothing_fn(T, s) with T = len(signal), as float64 numpy arrays."""
    values = torch.as_tensor(signal, dtype=torch.float64)
    A = torch.as_tensor(smoothing_fn(len(values), float(s))).to(torch.float64)
    return A.numpy(), (A @ values).numpy()


def bandwidth_figure(
    smoothing_fn: Callable[[int, float], torch.Tensor],
    s: float,
    signal,
    chars: str | None = None,
    fig: Figure | None = None,
    ylabel: str = "signal",
    reference: float | None = None,
) -> Figure:
    """Two panels for one bandwidth s: the signal with its smoothed version A @ signal along the
    sequence (top), and the matrix A = smoothing_fn(T, s) as a heatmap with s in its title (bottom).

    With `fig` (one this function returned before), redraws in place and returns the same Figure.
    """
    A, out = smoothed(smoothing_fn, s, signal)
    if fig is None:
        fig = Figure(figsize=(11, 13), layout="constrained")
        top, bottom = fig.subplots(2, 1, height_ratios=[1, 2.7])
        smoothing_plot(
            top, signal, {"A @ signal": out}, chars=chars, ylabel=ylabel, reference=reference, legend="above"
        )
        attention_heatmap(A, chars=chars, ax=bottom, title=_bandwidth_title(s))
    else:
        top, bottom = fig.axes[0], fig.axes[1]
        top.lines[0].set_ydata(out)
        update_heatmap(bottom, A, title=_bandwidth_title(s))
    return fig


class FrameRenderer:
    """PNG frames of a Figure in which only the data of some axes changes between frames.

    The first frame lays the figure out, freezes that layout, and keeps a picture of everything
    that never changes (tick labels, axis labels, colour bars: most of the drawing time). Each
    later frame restores that picture and draws only the artists inside `axes` that a slider
    changes (images, lines, bars, legends, titles), in the order matplotlib itself draws them,
    so a frame is pixel for pixel what `savefig` would give, in a fraction of the time.
    """

    def __init__(self, fig: Figure, axes):
        from matplotlib.axis import Axis
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.fig = fig
        self.canvas = FigureCanvasAgg(fig)
        engine = fig.get_layout_engine()
        if engine is not None:
            engine.execute(fig)  # place everything once, as a drawing would ...
            fig.set_layout_engine("none")  # ... and keep those positions from now on
        self.dynamic = []
        for ax in axes:
            children = [a for a in ax.get_children() if not isinstance(a, Axis) and a is not ax.patch]
            self.dynamic += sorted(children, key=lambda a: a.get_zorder())  # Axes.draw's order
        for artist in self.dynamic:
            artist.set_animated(True)  # left out of the background
        try:
            self.canvas.draw()
            self.background = self.canvas.copy_from_bbox(fig.bbox)
        finally:
            for artist in self.dynamic:
                artist.set_animated(False)

    def png(self) -> bytes:
        from PIL import Image as PILImage

        self.canvas.restore_region(self.background)
        renderer = self.canvas.get_renderer()
        for artist in self.dynamic:
            if artist.get_visible():
                artist.draw(renderer)
        buffer = io.BytesIO()
        PILImage.fromarray(np.asarray(self.canvas.buffer_rgba())).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


def _show(png: bytes) -> None:
    from IPython.display import Image, display

    display(Image(data=png, format="png"))


def seed_slider(
    attention_fn: Callable[[int], torch.Tensor],
    chars: str | None = None,
    seed: int = 0,
    max_seed: int = 199,
    beta: float = 1,
    betas=BETAS,
):
    """An IntSlider over seeds (CSS class "seed-slider") and a choice of score scale beta among `betas`
    (CSS class "beta-choice", starting at `beta`) that redraw the heatmap of attention_fn(seed) with its
    scores times beta (`dlcourse.plots.sharpen`).

    Returns the `interactive`; its `.result` is the Figure after the last move (the same Figure
    every time, redrawn in place) and its `.kwargs` the seed and beta drawn.
    """
    from ipywidgets import IntSlider, Layout, ToggleButtons, interactive

    if beta not in betas:
        raise ValueError(f"beta = {beta!r} is not one of the choices {tuple(betas)}")
    fig = seed_figure(attention_fn, seed, chars, beta=beta)  # fails here, not inside the widget, if attention_fn does
    frames = FrameRenderer(fig, fig.axes[:1])  # only the heatmap's pixels and title change
    slider = IntSlider(
        value=seed,
        min=0,
        max=max_seed,
        step=1,
        description="seed",
        continuous_update=False,
        readout=True,
        layout=Layout(width="560px"),
    )
    slider.add_class(SEED_CLASS)
    choice = ToggleButtons(
        options=[(f"× {b:g}" if b != 1 else "as built", b) for b in betas],
        value=beta,
        description="scores",
        style={"button_width": "70px"},
    )
    choice.add_class(BETA_CLASS)

    def redraw(seed, beta):
        figure = seed_figure(attention_fn, seed, chars, fig=fig, beta=beta)
        _show(frames.png())
        return figure

    return interactive(redraw, seed=slider, beta=choice)


def bandwidth_slider(
    smoothing_fn: Callable[[int, float], torch.Tensor],
    signal,
    chars: str | None = None,
    s: float = 2.0,
    s_min: float = 0.1,
    s_max: float = 100.0,
    ylabel: str = "signal",
    reference: float | None = None,
):
    """A logarithmic slider over the bandwidth s (CSS class "bandwidth-slider") that redraws the
    smoothed signal and the matrix A = smoothing_fn(T, s). Returns the `interactive`."""
    from ipywidgets import FloatLogSlider, Layout, interactive

    fig = bandwidth_figure(smoothing_fn, s, signal, chars, ylabel=ylabel, reference=reference)
    frames = FrameRenderer(fig, fig.axes[:2])  # the curve panel and the heatmap change; the colour bar does not
    slider = FloatLogSlider(
        value=s,
        base=10,
        min=float(np.log10(s_min)),
        max=float(np.log10(s_max)),
        step=0.05,
        description="bandwidth s",
        readout=True,
        readout_format=".3g",
        continuous_update=False,
        layout=Layout(width="560px"),
        style={"description_width": "initial"},
    )
    slider.add_class(BANDWIDTH_CLASS)

    def redraw(s):
        figure = bandwidth_figure(smoothing_fn, s, signal, chars, fig=fig)
        _show(frames.png())
        return figure

    return interactive(redraw, s=slider)
