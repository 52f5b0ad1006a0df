"""The judge of samples (source/step-04/checks/sampling.py): the exact law of q·k, the false-fail rate
of its tests on correct samplers, and their power against samples that imitate the work (the formula plus
noise, fewer draws repeated, another law with the right variance)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from conftest import STEP4

STEP4.package                                               # imports the step's checks: course_checks.step_04
from course_checks.step_04 import sampling as S  # noqa: E402

N = 20_000


def dots(d_k, n=N, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(n, d_k, generator=g, dtype=dtype), torch.randn(n, d_k, generator=g, dtype=dtype)
    return (q * k).sum(dim=-1).numpy()                     # (n,)


def test_the_law_of_q_dot_k_in_closed_form():
    assert S.dot_cdf(2)(np.array([0.0]))[0] == pytest.approx(0.5)
    x = np.linspace(0, 6, 13)
    assert np.allclose(S.dot_survival(x, 2), np.exp(-x) / 2)                      # d_k = 2: Laplace(0, 1)
    assert np.allclose(S.dot_survival(x, 4), (2 + x) * np.exp(-x) / 4)             # d_k = 4, integrated by hand
    for d_k in (2, 8, 128):
        cdf = S.dot_cdf(d_k)
        assert np.allclose(cdf(-x) + cdf(x), 1)                                    # symmetric about 0
        big = dots(d_k, 100_000, seed=1, dtype=torch.float64)
        assert S.ks_distance(big, cdf) < S.ks_threshold(big.size) / 2              # the law the samples follow
    with pytest.raises(ValueError):
        S.dot_survival(x, 3)


def test_correct_samplers_pass_far_inside_the_threshold():
    """Massart's bound says at most 1e-8 a test; measured: the largest distance over 60 honest samples,
    as a share of the threshold."""
    worst = 0.0
    for seed in range(20):
        for d_k in (2, 16, 64):
            worst = max(worst, S.ks_distance(dots(d_k, seed=seed), S.dot_cdf(d_k)) / S.ks_threshold(N))
    print(f"honest dot products: largest Kolmogorov-Smirnov distance {worst:.2f} of the threshold")
    assert worst < 0.75


def test_imitations_fail_the_law():
    rng = np.random.default_rng(0)
    for d_k in (2, 4):                                      # the narrow widths the judge always has
        normal = rng.standard_normal(N) * math.sqrt(d_k)     # the lemma's answer as noise of variance d_k
        assert S.ks_distance(normal, S.dot_cdf(d_k)) > 1.3 * S.ks_threshold(N), d_k
        u = (rng.random((N, d_k)) * 2 - 1) * math.sqrt(3)    # entries of mean 0, variance 1, not normal
        v = (rng.random((N, d_k)) * 2 - 1) * math.sqrt(3)
        assert S.ks_distance((u * v).sum(-1), S.dot_cdf(d_k)) > 1.3 * S.ks_threshold(N), d_k
    scaled = dots(16) / 4                                    # divided by sqrt(d_k)
    assert S.ks_distance(scaled, S.dot_cdf(16)) > 10 * S.ks_threshold(N)


def test_repeats_tell_fewer_draws_from_n():
    repeats = [N - np.unique(dots(d_k, seed=seed)).size for seed in range(25) for d_k in (2, 16, 128)]
    print(f"honest float32 dot products: {np.mean(repeats):.1f} repeats in {N:,} on average, at most {max(repeats)}")
    assert max(repeats) < 0.1 * (1 - S.DISTINCT) * N              # 1% is 200: far above what rounding gives
    tiled = np.tile(dots(16, N // 10), 10)
    assert S.distinct_share(tiled) == pytest.approx(0.1, abs=1e-3)


def test_independence_false_fails_no_honest_sample_and_catches_reflections_and_chains():
    """Honest samplers (60 samples over three widths) are never called dependent; draws paired with their
    negatives, and a chain of vectors q_i·q_(i+1), are, at every width the judge's cases have."""
    assert not any(S.dependent(dots(d_k, seed=seed)) for seed in range(20) for d_k in (2, 16, 64))
    for d_k in (2, 4, 16):
        half = dots(d_k, N // 2, seed=1)
        assert S.dependent(np.concatenate([half, -half])), d_k                    # reflected after
        assert S.dependent(np.ravel(np.column_stack([half, -half]))), d_k         # each beside its reflection
        g = torch.Generator().manual_seed(2)
        q = torch.randn(N + 1, d_k, generator=g)
        chain = (q[:-1] * q[1:]).sum(dim=-1).numpy()                               # (N,)
        if d_k <= 4:                         # the squares' lag-1 correlation 1 / (d_k + 3) against 6 / sqrt(N)
            assert S.dependent(chain), d_k


def test_normal_entries_and_their_imitations():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(4, 8, 512, generator=g).numpy().ravel()
    k = torch.randn(4, 8, 512, generator=g).numpy().ravel()
    threshold = S.ks_threshold(q.size)
    for series in (q, k, (q + k) / math.sqrt(2), (q - k) / math.sqrt(2)):
        assert S.ks_distance(series, S.normal_cdf) < threshold
    assert S.ks_distance((q - q) / math.sqrt(2), S.normal_cdf) > threshold           # k drawn as q
    uniform = (np.random.default_rng(1).random(q.size) * 2 - 1) * math.sqrt(3)
    assert S.ks_distance(uniform, S.normal_cdf) > threshold
