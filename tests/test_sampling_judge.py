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


# ---- independence: magnitudes and serial correlation, on many honest samplers and many dependent ones ----

from course_checks.step_04.tests import _samples_problem  # noqa: E402

WIDTHS = (8, 32, 128, 512)          # a fixed table's widths


def _table(seed, widths=WIDTHS, how="torch"):
    """[{q, k}] as scale_table draws them: (4, 8, d_k) each, from one generator."""
    if how == "torch":
        g = torch.Generator().manual_seed(seed)
        draw = lambda d_k: torch.randn(4, 8, d_k, generator=g).numpy()                  # noqa: E731
    elif how == "torch64":
        g = torch.Generator().manual_seed(seed)
        draw = lambda d_k: torch.randn(4, 8, d_k, generator=g, dtype=torch.float64).numpy()   # noqa: E731
    else:
        rng = np.random.default_rng(seed)
        draw = lambda d_k: rng.standard_normal((4, 8, d_k)).astype(np.float32)            # noqa: E731
    rows = []
    for d_k in widths:
        q = draw(d_k)
        rows.append({"q": q, "k": draw(d_k)})
    return rows


def test_magnitudes_of_honest_float32_draws_repeat_below_the_assumed_rate():
    """The limit assumes two honest draws share a magnitude with probability at most 2^-22; measured: about
    3e-8 on average (normal entries, dot products), at most 7e-8 in one sample, near the bound 2^-23/π of a
    law rounded to float32."""
    rates = []
    for seed in range(20):
        table = _table(seed)
        x = np.concatenate([r[key].ravel() for r in table for key in ("q", "k")])
        rates.append(S.magnitude_repeats(x) / math.comb(x.size, 2))
        for d_k in (2, 16, 128):
            d = dots(d_k, seed=seed)
            rates.append(S.magnitude_repeats(d) / math.comb(d.size, 2))
    print(f"honest float32 draws: pair rate of equal magnitudes {np.mean(rates):.2e} on average, at most "
          f"{max(rates):.2e} (the limit assumes {S.MAGNITUDE_PAIR_RATE:.2e})")
    assert max(rates) < S.MAGNITUDE_PAIR_RATE / 2
    assert round(S.magnitude_repeats_limit(N)) == 477 and round(S.magnitude_repeats_limit(43_520)) == 859


# the first 20 seeds in the quick subset (make test-quick), the other 180 in make test only
@pytest.mark.parametrize("seeds", [range(0, 20), pytest.param(range(20, 200), marks=pytest.mark.slow)],
                         ids=["seeds-0-19", "seeds-20-199"])
def test_honest_samplers_are_independent_at_every_seed(seeds):
    """200 seeds of each: the tables' q and k (fixed widths, and a twin's from other widths; torch float32,
    float64 and numpy), and dot products at four widths: none is refused."""
    rng = np.random.default_rng(0)
    twins = [tuple(int(rng.integers(low, high + 1)) for low, high in ((4, 12), (20, 48), (80, 160), (300, 480)))
             for _ in range(200)]
    refused = []
    for seed in seeds:
        twin = twins[seed]
        for widths, how in ((WIDTHS, "torch"), (twin, "torch"), (WIDTHS, ["torch64", "numpy"][seed % 2])):
            problem = _samples_problem([_table(seed, widths, how)])
            if problem:
                refused.append((seed, widths, how, problem))
        for d_k in (2, 4, 16, 64):
            d = dots(d_k, seed=seed)
            if S.distinct_share(d) < S.DISTINCT or S.dependent(d):
                refused.append((seed, d_k))
    assert not refused, refused[:3]


def _reflect_anywhere(x, rng):
    flat = x.ravel()
    half = flat[: flat.size // 2]
    return np.concatenate([half, -half, flat[2 * half.size:]])[rng.permutation(flat.size)].reshape(x.shape)


DEPENDENT_TABLES = {
    "q reflected anywhere": lambda q, k, rng: (_reflect_anywhere(q, rng), k),
    "k reflected anywhere": lambda q, k, rng: (q, _reflect_anywhere(k, rng)),
    "q's sequences 2, 3 = -(0, 1)": lambda q, k, rng: (np.concatenate([q[:2], -q[:2]]), k),
    "q's tokens beside their negatives": lambda q, k, rng: (np.stack([q[:, :4], -q[:, :4]], 2).reshape(q.shape), k),
    "q repeated with a sign pattern": lambda q, k, rng: (q[:1] * np.array([1, -1, -1, 1])[:, None, None], k),
    "k = -q permuted": lambda q, k, rng: (q, -q.ravel()[rng.permutation(q.size)].reshape(q.shape)),
    "k = q permuted, random signs": lambda q, k, rng: (q, (q.ravel()[rng.permutation(q.size)]
                                                           * rng.choice([-1, 1], q.size)).reshape(q.shape)),
    "k = -q flipped": lambda q, k, rng: (q, -q[::-1].copy()),
    "k = -q rolled": lambda q, k, rng: (q, -np.roll(q, 1, axis=-1)),
    "q a chain": lambda q, k, rng: (np.cumsum(q.ravel()).reshape(q.shape) / np.sqrt(q.size), k),
}


def _quantile_shift(x, a):
    """Φ⁻¹((Φ(x) + a) mod 1), in float32 as an answer computes it: N(0, 1) when x is."""
    x = torch.as_tensor(x)
    return torch.special.ndtri(torch.remainder(torch.special.ndtr(x) + a, 1.0)).numpy()


# k made from q by a map that keeps the law, in some order: no number or magnitude repeats, q ± k pass the law
# test (all but the first two, which are positional); sampling.moved_copy refuses them, the tests before it not
MOVED_TABLES = {
    "k = q shuffled, times 1.0000001": lambda q, k, rng: (q, q.ravel()[rng.permutation(q.size)].reshape(q.shape)
                                                          * np.float32(1.0000001)),
    "k = q flipped, times 1.0000001": lambda q, k, rng: (q, q[::-1] * np.float32(1.0000001)),
    "k = q's quantiles shifted by 0.5, flipped": lambda q, k, rng: (q, _quantile_shift(q, 0.5)[:, ::-1].copy()),
    "k = q's quantiles shifted by a random a, rolled": lambda q, k, rng: (
        q, np.roll(_quantile_shift(q, rng.random()), 1, axis=-1)),
    "k = q's quantiles shifted, shuffled": lambda q, k, rng: (
        q, _quantile_shift(q, rng.random()).ravel()[rng.permutation(q.size)].reshape(q.shape)),
    "k = q's quantiles reflected about a random a, rolled": lambda q, k, rng: (
        q, np.roll(torch.special.ndtri(torch.remainder(rng.random() - torch.special.ndtr(torch.as_tensor(q)), 1.0))
                   .numpy(), 3, axis=0)),
}
DEPENDENT_TABLES.update(MOVED_TABLES)


@pytest.mark.parametrize("kind", list(DEPENDENT_TABLES))
def test_dependent_q_and_k_are_refused(kind):
    """Each kind of dependent q and k, from ten seeds and the fixed and twin widths: refused every time."""
    make = DEPENDENT_TABLES[kind]
    for seed in range(10):
        rng = np.random.default_rng(seed)
        for widths in (WIDTHS, (5, 21, 99, 301)):
            table = [dict(zip(("q", "k"), make(r["q"], r["k"], rng))) for r in _table(seed, widths)]
            assert _samples_problem([table]), (kind, seed, widths)


@pytest.mark.parametrize("kind", list(MOVED_TABLES))
def test_moved_copies_pass_every_test_but_moved_copy(kind, monkeypatch):
    """What the judge refused these with: without sampling.moved_copy each passes (it had full marks), with it
    each is refused as k moved from q."""
    import course_checks.step_04.tests as T
    make = MOVED_TABLES[kind]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        table = [dict(zip(("q", "k"), make(r["q"], r["k"], rng))) for r in _table(seed)]
        assert "q's moved by one map" in _samples_problem([table]), (kind, seed)
        with monkeypatch.context() as m:
            m.setattr(T, "moved_copy", lambda q, k, alpha: None)
            assert _samples_problem([table]) is None, (kind, seed)


def _exact_walk_stays(n: int, c: int) -> float:
    """P(n·D < c) for two samples of n: paths of n steps +1 and n steps -1 (every order as likely) that keep
    |S| <= c - 1, counted exactly."""
    ways = {0: 1}
    for _ in range(2 * n):
        step = {}
        for s, w in ways.items():
            for t in (s - 1, s + 1):
                if abs(t) < c:
                    step[t] = step.get(t, 0) + w
        ways = step
    return ways.get(0, 0) / math.comb(2 * n, n)


def test_the_moved_copy_bound_holds_exactly():
    """walk_bound (2 sqrt(n) cos(π / 2c)^2n) is above the exact chance that two independent samples' n·D is
    below c, at every c of small n (counted path by path), and the limits are the largest a union over every
    shift of both families allows."""
    for n in (1, 2, 5, 12, 40, 150):
        for c in range(1, n + 2):
            exact = _exact_walk_stays(n, c)
            assert exact <= S.walk_bound(n, c) + 1e-15, (n, c, exact)
        assert _exact_walk_stays(n, n + 1) == 1.0                     # |S| <= n always
    for n in (12_928, 13_632, 21_760):
        limit = S.moved_limit(n)
        assert 2 * S.SHIFT_GRID * S.walk_bound(n, limit + 1) <= S.ALPHA < 2 * S.SHIFT_GRID * S.walk_bound(n, limit + 2)
        assert limit < 0.25 * 0.87 * math.sqrt(2 * n)                # far below what independent draws give
    assert (S.moved_limit(12_928), S.moved_limit(21_760)) == (28, 37)


def test_honest_tables_are_far_from_a_moved_copy():
    """Measured: over 30 tables, independent q and k are at n·D (with its slack) of at least twice the limit at
    each shift the search may walk (each family's histogram peak and its neighbours, unfiltered); a moved copy at
    most half of it."""
    closest, moved = [], []
    for seed in range(30):
        table = _table(seed)
        q = np.concatenate([r["q"].ravel() for r in table])
        k = np.concatenate([r["k"].ravel() for r in table])
        uq, uk = S.normal_cdf(q), S.normal_cdf(k)
        closest.append(min(S.moved_walk(uq, uk, j / S.SHIFT_GRID, reflect) for reflect in (False, True)
                           for j in S._candidate_shifts(uq, uk, reflect, uq.size)))
        copy = _quantile_shift(q, np.random.default_rng(seed).random())[::-1].copy()
        moved.append(S.moved_copy(q, copy)[0])
    limit = S.moved_limit(q.size)
    print(f"independent q and k: n·D at least {min(closest)}; moved copies at most {max(moved)}; the limit {limit}")
    assert min(closest) > 2 * limit and max(moved) < limit / 2


DEPENDENT_DOTS = {
    "reflected after": lambda d, rng: np.concatenate([d[: N // 2], -d[: N // 2]]),
    "each beside its reflection": lambda d, rng: np.ravel(np.column_stack([d[: N // 2], -d[: N // 2]])),
    "reflected anywhere": lambda d, rng: np.concatenate([d[: N // 2], -d[: N // 2]])[rng.permutation(N)],
    "3 % reflected": lambda d, rng: np.concatenate([d[: N - 600], -d[:600]]),
    "repeated with a sign pattern": lambda d, rng: np.concatenate([d[: N // 2],
                                                                   d[: N // 2] * rng.choice([-1, 1], N // 2)]),
}


@pytest.mark.parametrize("kind", list(DEPENDENT_DOTS))
def test_dependent_dot_products_are_refused(kind):
    make = DEPENDENT_DOTS[kind]
    for seed in range(10):
        rng = np.random.default_rng(seed)
        for d_k in (2, 16, 64):
            d = make(dots(d_k, seed=seed), rng)
            assert S.distinct_share(d) < S.DISTINCT or S.dependent(d), (kind, seed, d_k)


def test_vectors_reused_half_the_sample_apart_are_refused_at_the_narrow_widths():
    """q's second half the negatives of its first, each with a fresh k: the dot products are all distinct,
    but m and m + n/2 share a vector (their squares correlate by 1 / (d_k + 3))."""
    for seed in range(10):
        for d_k in (2, 4):
            g = torch.Generator().manual_seed(seed)
            q, k = torch.randn(N // 2, d_k, generator=g), torch.randn(N, d_k, generator=g)
            assert S.dependent((torch.cat([q, -q]) * k).sum(-1).numpy()), (seed, d_k)
