"""The sliders of notebooks 04 and 05: the plain functions behind them, and the widgets themselves."""
import io

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from PIL import Image

from dlcourse.checks import needs
from dlcourse.plots import update_heatmap
from dlcourse.widgets import (BANDWIDTH_CLASS, SEED_CLASS, FrameRenderer, bandwidth_figure,
                              bandwidth_slider, seed_figure, seed_slider)

T = 12
CHARS = "First Citiz\n"


def random_attention(seed: int, T: int = T) -> torch.Tensor:
    """A causal attention matrix that depends on the seed (stands in for attention_on_text)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(T, T, generator=g) * 2
    scores = scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
    return torch.softmax(scores, dim=-1)


def gaussian_smoothing(T: int, s: float) -> torch.Tensor:
    i = torch.arange(T, dtype=torch.float64)
    scores = -(i[:, None] - i[None, :]) ** 2 / (2 * s ** 2)
    scores = scores.masked_fill(torch.tril(torch.ones(T, T, dtype=torch.bool)) == 0, float("-inf"))
    return torch.softmax(scores, dim=-1)


SIGNAL = torch.tensor([float(ch in "aeiou") for ch in CHARS])


def shown(fig: Figure, axes_index: int = 0) -> np.ma.MaskedArray:
    return fig.axes[axes_index].images[0].get_array()


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


def savefig_png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


# ---- the plain functions ------------------------------------------------------------------

def test_seed_figure_shows_the_matrix_with_the_mask_grey():
    fig = seed_figure(random_attention, 3, CHARS)
    assert isinstance(fig, Figure)
    data = shown(fig)
    A = random_attention(3).numpy()
    below = np.tril(np.ones((T, T), dtype=bool))
    assert np.allclose(data.data[below], A[below])
    assert data.mask[~below].all() and not data.mask[below].any(), "the masked triangle must be exactly j > i"
    assert "seed 3" in fig.axes[0].get_title()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[5] == "5 ␣" and labels[11] == "11 ⏎", labels


def test_seed_figure_redraws_in_place():
    fig = seed_figure(random_attention, 0, CHARS)
    before = shown(fig).copy()
    n_axes, n_images, n_texts = len(fig.axes), len(fig.axes[0].images), len(fig.axes[0].texts)
    again = seed_figure(random_attention, 1, CHARS, fig=fig)
    assert again is fig
    after = shown(fig)
    assert not np.allclose(before.filled(0), after.filled(0)), "a new seed must change the picture"
    assert np.allclose(after.filled(0), np.tril(random_attention(1).numpy()))
    assert (len(fig.axes), len(fig.axes[0].images), len(fig.axes[0].texts)) == (n_axes, n_images, n_texts)
    assert "seed 1" in fig.axes[0].get_title()


def test_update_heatmap_refuses_a_matrix_of_another_size():
    fig = seed_figure(random_attention, 0)
    with pytest.raises(ValueError, match="not"):
        update_heatmap(fig.axes[0], random_attention(0, T=5))


def test_bandwidth_figure_draws_the_smoothed_signal_and_the_matrix():
    fig = bandwidth_figure(gaussian_smoothing, 2.0, SIGNAL, CHARS)
    top, heat = fig.axes[0], fig.axes[1]
    A = gaussian_smoothing(T, 2.0).numpy()
    assert np.allclose(top.lines[0].get_ydata(), A @ SIGNAL.double().numpy())
    assert np.allclose(shown(fig, 1).filled(0), A)
    assert "2" in heat.get_title()
    before = np.array(top.lines[0].get_ydata(), dtype=float)
    again = bandwidth_figure(gaussian_smoothing, 0.3, SIGNAL, CHARS, fig=fig)
    assert again is fig
    after = np.array(top.lines[0].get_ydata(), dtype=float)
    assert not np.allclose(before, after)
    # s = 0.3: the kernel's neighbours weigh exp(-1/0.18) ≈ 0.004 of the diagonal, so out ≈ signal
    assert np.abs(after - SIGNAL.numpy()).max() < 0.01
    assert np.allclose(shown(fig, 1).filled(0), gaussian_smoothing(T, 0.3).numpy())


def test_redraws_do_not_create_figures_or_artists():
    plt.close("all")
    fig = bandwidth_figure(gaussian_smoothing, 1.0, SIGNAL, CHARS)
    counts = [(len(ax.lines), len(ax.images), len(ax.patches), len(ax.texts)) for ax in fig.axes]
    for s in np.geomspace(0.1, 100, 25):
        bandwidth_figure(gaussian_smoothing, s, SIGNAL, CHARS, fig=fig)
    heat = seed_figure(random_attention, 0, CHARS)
    heat_counts = [(len(ax.images), len(ax.texts)) for ax in heat.axes]
    for seed in range(25):
        seed_figure(random_attention, seed, CHARS, fig=heat)
    assert plt.get_fignums() == [], "the slider figures must not be registered with pyplot (nothing to close)"
    assert [(len(ax.lines), len(ax.images), len(ax.patches), len(ax.texts)) for ax in fig.axes] == counts
    assert [(len(ax.images), len(ax.texts)) for ax in heat.axes] == heat_counts


def test_frames_are_what_savefig_draws():
    fig = seed_figure(random_attention, 0, CHARS)
    frames = FrameRenderer(fig, fig.axes[:1])
    first = frames.png()
    seed_figure(random_attention, 7, CHARS, fig=fig)
    second = frames.png()
    assert np.array_equal(pixels(second), pixels(savefig_png(fig))), "a frame must equal a full drawing"
    assert not np.array_equal(pixels(first), pixels(second)), "a new seed must change the frame"

    fig = bandwidth_figure(gaussian_smoothing, 1.0, SIGNAL, CHARS)
    frames = FrameRenderer(fig, fig.axes[:2])
    bandwidth_figure(gaussian_smoothing, 5.0, SIGNAL, CHARS, fig=fig)
    assert np.array_equal(pixels(frames.png()), pixels(savefig_png(fig)))


# ---- the widgets -----------------------------------------------------------------------

def test_seed_slider_redraws_when_the_value_changes():
    from ipywidgets import IntSlider
    w = seed_slider(random_attention, CHARS, seed=2, max_seed=50)
    slider = w.children[0]
    assert isinstance(slider, IntSlider)
    assert SEED_CLASS in slider._dom_classes
    assert slider.continuous_update is False and slider.readout is True
    assert (slider.min, slider.max, slider.value) == (0, 50, 2)
    fig = w.result
    assert isinstance(fig, Figure)
    before = shown(fig).filled(0).copy()
    assert np.allclose(before, np.tril(random_attention(2).numpy()))
    slider.value = 9
    assert w.result is fig
    after = shown(w.result).filled(0)
    assert not np.allclose(before, after)
    assert np.allclose(after, np.tril(random_attention(9).numpy()))
    assert "seed 9" in fig.axes[0].get_title()


def test_bandwidth_slider_redraws_curve_and_heatmap():
    from ipywidgets import FloatLogSlider
    w = bandwidth_slider(gaussian_smoothing, SIGNAL, CHARS, s=2.0)
    slider = w.children[0]
    assert isinstance(slider, FloatLogSlider)
    assert BANDWIDTH_CLASS in slider._dom_classes
    assert slider.continuous_update is False and slider.readout is True
    assert slider.min == pytest.approx(-1) and slider.max == pytest.approx(2)
    fig = w.result
    curve_before = np.array(fig.axes[0].lines[0].get_ydata(), dtype=float)
    slider.value = 50.0
    curve_after = np.array(w.result.axes[0].lines[0].get_ydata(), dtype=float)
    assert not np.allclose(curve_before, curve_after)
    # s = 50 on 12 positions: within 1.5% of the running mean of the signal
    running_mean = np.cumsum(SIGNAL.numpy()) / np.arange(1, T + 1)
    assert np.abs(curve_after - running_mean).max() < 0.015
    assert np.allclose(shown(w.result, 1).filled(0), gaussian_smoothing(T, 50.0).numpy())


def test_builders_fail_at_once_when_the_answer_is_missing(capsys):
    def unanswered(*args):
        raise NotImplementedError()

    with pytest.raises(NotImplementedError):
        seed_slider(unanswered, CHARS)
    with pytest.raises(NotImplementedError):
        bandwidth_slider(unanswered, SIGNAL, CHARS)
    with needs("attention_on_text"):
        seed_slider(unanswered, CHARS)
    assert "attention_on_text" in capsys.readouterr().out
