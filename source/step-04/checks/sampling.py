"""Samples judged as samples: a goodness-of-fit test with a stated false-fail probability.

An answer that says it sampled hands its samples back (notebook 01's dot products, notebook 03's
q and k), and the judge asks of the samples themselves whether they come from the distribution the
spec names: the Kolmogorov-Smirnov distance D between their empirical distribution and the exact
law. For n independent draws from a continuous law, Massart's form of the Dvoretzky-Kiefer-Wolfowitz
inequality bounds P(D > eps) <= 2 exp(-2 n eps^2) for every n (not only asymptotically): with
eps = sqrt(ln(2 / ALPHA) / (2 n)) a correct sampler fails one test with probability at most ALPHA.
Rounding to float32 only ties equal draws, which makes D smaller, never larger.

A law test does not see whether the draws are independent: draws paired with their reflections, reused
with a sign pattern, or k made from q have the right law. `reflected` (magnitudes |x| repeated more than
float32 rounding allows, false-fail probability at most ALPHA), `serially_correlated` (values or
squares correlated with those 1 or n // 2 positions away) and `moved_copy` (k's values those of q moved
by one rotation or reflection of their quantiles, in any order: false-fail probability at most ALPHA)
refuse them; what they allow is said below ("independence", "one sample moved onto another").

The laws:
  * N(0, 1), the entries of q and k (`normal_cdf`);
  * q·k for q, k in R^{d_k} with iid N(0, 1) entries (`dot_cdf`, d_k even): q·k = (|q+k|² - |q-k|²)/4,
    q+k and q-k are independent N(0, 2 I), so q·k = G1 - G2 with G1, G2 iid Gamma(d_k/2, 1). For
    d_k = 2m the survival function of G1 - G2 at x >= 0 is exp(-x) Σ_{i<m} c_i x^i / i! with
    c_i = Σ_{j=0}^{m-1-i} C(m-1+j, j) / 2^(m+j) (integrate P(G1 > x + g) against the density of G2;
    d_k = 2 is Laplace(0, 1), P(|q·k| > x) = exp(-x)); the law is symmetric about 0.
"""
from __future__ import annotations

import math

import numpy as np

ALPHA = 1e-8          # the false-fail probability of one test on a correct sampler (Massart's bound)
DISTINCT = 0.99       # at least this share of n continuous draws are distinct numbers (see `distinct_share`)


def ks_threshold(n: int, alpha: float = ALPHA) -> float:
    """The distance a correct sampler exceeds with probability at most alpha (Massart 1990)."""
    return math.sqrt(math.log(2 / alpha) / (2 * n))


def ks_distance(samples, cdf) -> float:
    """sup |F_n - F| for the samples' empirical distribution F_n and the law's cdf F."""
    x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    n = x.size
    f = cdf(x)
    i = np.arange(1, n + 1)
    return float(max((i / n - f).max(), (f - (i - 1) / n).max()))


def normal_cdf(x):
    import torch
    return torch.special.ndtr(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


def _dot_coefficients(m: int) -> np.ndarray:
    return np.array([sum(math.comb(m - 1 + j, j) / 2 ** (m + j) for j in range(m - i)) for i in range(m)])


def dot_survival(x, d_k: int):
    """P(q·k > x) for x >= 0 (d_k even): exp(-x) Σ_i c_i x^i / i!, each term a Poisson probability."""
    if d_k % 2 or d_k < 2:
        raise ValueError("the closed form is for even d_k")
    m = d_k // 2
    c = _dot_coefficients(m)
    x = np.asarray(x, dtype=np.float64)
    i = np.arange(m, dtype=np.float64)
    log_x = np.log(np.where(x > 0, x, 1.0))[..., None]
    log_terms = -x[..., None] + i * log_x - np.array([math.lgamma(k + 1) for k in i])
    log_terms = np.where((x[..., None] > 0) | (i == 0), log_terms, -np.inf)      # 0^i = 0 for i > 0
    return (np.exp(log_terms) * c).sum(axis=-1)


def dot_cdf(d_k: int):
    """The cdf of q·k, q and k iid N(0, I_{d_k}), d_k even."""
    def cdf(x):
        x = np.asarray(x, dtype=np.float64)
        tail = dot_survival(np.abs(x), d_k)
        return np.where(x >= 0, 1 - tail, tail)
    return cdf


def distinct_share(samples) -> float:
    """The share of the samples that are distinct numbers. Independent float32 draws of a continuous
    law repeat a value only by rounding: of 20,000 float32 dot products 2 to 4 are repeats on average (at
    most 9 in 100 draws; of 76,288 float32 normal entries about 38), so a correct sampler comes nowhere
    near 1% repeats (tests/test_sampling_judge.py measures it), while samples drawn once and repeated
    (n/2 draws, each twice) are 50% distinct."""
    x = np.asarray(samples).ravel()
    return np.unique(x).size / x.size if x.size else 0.0


# ---- independence ------------------------------------------------------------------------------
# The tests above see each sample's law, not whether its draws are independent: half the draws with their
# reflections (x and -x, anywhere in the tensor), draws reused with a sign pattern, or k made from q
# (-q permuted, flipped, rolled) have the right law and all-distinct values. Two tests refuse them:
#
#   * magnitudes: the |x| of n independent draws of a continuous law are distinct numbers up to float32
#     rounding. The number of repeats R = n - #distinct(|x|) changes by at most 1 when one draw changes, so
#     McDiarmid's inequality bounds P(R > E[R] + s) <= exp(-2 s² / n), and s = sqrt(n ln(1 / ALPHA) / 2)
#     makes a correct sampler fail with probability at most ALPHA. E[R] is at most the expected number of
#     equal pairs, C(n, 2) Σ_v p_v², where p_v is the chance of the float32 value v of |x|: for a law
#     rounded to float32 that sum is at most 2^-23 ∫ f(x)² x dx, which is 1/π · 2^-23 ≈ 3.8e-8 for |x| of
#     any normal law (it does not depend on the scale); measured, torch's float32 normal entries and dot
#     products give about 3e-8, at most 7e-8 in one sample (tests/test_sampling_judge.py). The limit takes 2^-22, about six times
#     that. At n = 20,000 it allows 477 repeats (2.4 % of the draws), at n = 43,520 (a table's q and k)
#     859 (2.0 %); a sample in which at least that share of the draws is another's reflection is refused.
#   * serial correlation: the correlation of the series with itself shifted by one and by n // 2 positions,
#     of the values and of their squares, is about N(0, 1/n) for independent draws (central limit theorem)
#     and is refused beyond SERIAL_SIGMAS / sqrt(n): an honest sample crosses one such bound with a
#     probability of about 2e-9 (four bounds: below ALPHA). Draws made from the one before, or from the
#     one n/2 before (vectors reused with a sign: q and -q), show there: the squares of two dot products
#     that share a vector correlate by 1 / (d_k + 3), 0.2 at d_k = 2.
#
# What they allow (`moved_copy` below refuses k made from q by a rotation or reflection of the quantiles):
# repeats of |x| below the limit (a few percent of the draws reflected or reused), and
# dependence at positions no fixed shift finds (vectors reused in a random order, at wide d_k) when only
# the dot products are handed back: no test of the dot products alone can see every such pairing.

MAGNITUDE_PAIR_RATE = 2.0 ** -22       # a bound on the chance two honest float32 draws have one |x|
SERIAL_SIGMAS = 6.0


def magnitude_repeats(samples) -> int:
    """How many of the samples repeat the magnitude |x| of another."""
    x = np.abs(np.asarray(samples, dtype=np.float64).ravel())
    return int(x.size - np.unique(x).size)


def magnitude_repeats_limit(n: int, alpha: float = ALPHA) -> float:
    """The number of repeated magnitudes a correct sampler of n draws exceeds with probability at most
    alpha: a bound on their mean plus McDiarmid's deviation (see above)."""
    return MAGNITUDE_PAIR_RATE * n * (n - 1) / 2 + math.sqrt(n * math.log(1 / alpha) / 2)


def reflected(samples) -> bool:
    """Whether more of the samples share their magnitude with another than independent draws allow
    (x beside -x, draws reused with a sign pattern)."""
    n = np.asarray(samples).size
    return n > 1 and magnitude_repeats(samples) > magnitude_repeats_limit(n)


def correlated_lags(samples) -> list[int]:
    """The shifts, of 1 and n // 2 positions, by which the sequence (or its squares) correlates with itself
    beyond what independent draws give (SERIAL_SIGMAS standard deviations)."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    n = x.size
    if n < 3:
        return []
    lags = []
    for series in (x, x * x):
        centred = series - series.mean()
        scale = float((centred * centred).sum())
        if scale <= 0:
            continue
        for lag in sorted({1, n // 2}):
            if abs(float((centred[lag:] * centred[:-lag]).sum()) / scale) > SERIAL_SIGMAS / math.sqrt(n):
                lags.append(lag)
    return sorted(set(lags))


def serially_correlated(samples) -> bool:
    """Whether the sequence (or its squares) correlates with itself shifted by 1 or by n // 2 positions
    beyond what independent draws give (SERIAL_SIGMAS standard deviations)."""
    return bool(correlated_lags(samples))


def dependent(dots: np.ndarray) -> bool:
    """Whether n dot products are plainly not independent draws: magnitudes repeated (values paired with
    their negatives), or each correlated with the one before it or the one n/2 before (a shared vector)."""
    return reflected(dots) or serially_correlated(dots)


# ---- one sample moved onto another ---------------------------------------------------------------
# The tests above do not see k made from q by a map that keeps the law: q's entries shuffled and scaled by
# 1.0000001 (no number repeats, no magnitude either), or moved in their quantiles, k = Φ⁻¹((Φ(q) + a) mod 1),
# in any order (flipped, rolled, shuffled). Their uniforms u = Φ(x) are then one set moved by one rotation of the
# circle [0, 1): {Φ(k)} = {(Φ(q) + a) mod 1} (a = 0: the shuffled copy), or by one reflection,
# {Φ(k)} = {(a - Φ(q)) mod 1}. `moved_copy` tests it: for a shift a on the grid j / SHIFT_GRID it takes the
# two-sample Kolmogorov-Smirnov distance D between the uniforms of k and those of q moved by a, which for
# independent samples is far from 0 (about 0.87 sqrt(2 / n)) and for a moved copy is about the share of q's
# uniforms within |a - j / SHIFT_GRID| <= 1 / (2 SHIFT_GRID) of a point: nearly 0.
#
# The bound, exact and for every n. For q and k of n iid draws each of a continuous law, and a fixed shift,
# the moved uniforms of q and the uniforms of k are 2n iid uniforms, so every order of the pooled sample is as
# likely, and n·D is the largest |S_t| of a walk of n steps +1 and n steps -1 in a random order. It stays
# within |S| <= c - 1 with probability P(that, and S_2n = 0) / P(S_2n = 0): the numerator is e_0ᵀ P^2n e_0 for
# the simple random walk killed outside {-(c-1), .., c-1}, whose transition matrix has eigenvalues
# cos(π j / (2c)), so it is at most cos(π / (2c))^2n; the denominator C(2n, n) / 4^n is at least 1 / (2 sqrt(n)).
# So P(n·D < c) <= 2 sqrt(n) cos(π / (2c))^2n, and over all 2 · SHIFT_GRID shifts of both families (a union
# bound, whichever shifts the search below looks at) a correct sampler is refused with probability at most
# ALPHA. At n = 12,928 (the q of a twin's narrowest table) that refuses n·D <= 28 (with the slack below; about 0.2
# of its typical value 0.87 sqrt(2n)), at n = 21,760 (a fixed table's q) n·D <= 37, at n = 4,096 (a row of
# d_k = 128) n·D <= 15, where a moved copy gives 8 to 10, most of it the slack (tests/test_sampling_judge.py).
#
# Float32 draws are the continuous ones rounded: Φ of a float32 number lies within 2^-24 · max |x| φ(x) < 1.5e-8
# of Φ of the number it rounds (plus float64 rounding), and a point moves the walk at u only if it crosses u. So
# the continuous n·D is at most the computed one plus the largest number of computed points within ROUNDING of
# one value (ties included), plus the moved points within ROUNDING of the circle's cut at 0 (a point that may have
# wrapped around): the test adds both before comparing.
#
# The shifts searched: for each family, the one where the histograms of the two sets of uniforms correlate most
# (a fast Fourier transform; bins of 1 / SHIFT_GRID, or wider when n is small: about 4n bins, a divisor of the
# grid) and its neighbours, walked exactly where the walk at the bins' edges, a part of it, is within the limit.
# Any search is covered by the bound (it only chooses where to look); a moved copy's histograms match bin for bin
# at its shift.
#
# What it allows: maps that cut the quantiles into several pieces and move them apart (an interval exchange), maps
# that are not one to one (k = Φ⁻¹(2Φ(q) mod 1)), k made from another row's q or from a part of q only, and rows
# too small for the bound (n = 256 at d_k = 8: n·D <= 3).

SHIFT_GRID = 2 ** 16
ROUNDING = 1e-6


def moved_walk(uq: np.ndarray, uk: np.ndarray, shift: float, reflect: bool) -> int:
    """n·D between the uniforms uk and uq moved by (shift ± uq) mod 1, plus what rounding may account for: a
    bound on the n·D of the continuous draws the float ones round. (Points that tie are taken one by one, which
    can only make n·D larger.)"""
    moved = np.mod((shift - uq) if reflect else (uq + shift), 1.0)
    pooled = np.concatenate([moved, uk])
    order = np.argsort(pooled, kind="stable")
    walk = int(np.abs(np.cumsum(np.where(order < moved.size, 1, -1))).max())
    points = pooled[order]
    slack = int((np.searchsorted(points, points + 2 * ROUNDING, side="right") - np.arange(points.size)).max())
    wrapped = int(((moved < ROUNDING) | (moved > 1 - ROUNDING)).sum())
    return walk + slack + wrapped


def walk_bound(n: int, c: int) -> float:
    """A bound on P(n·D < c) for the two-sample distance of n and n independent draws of a continuous law."""
    if c <= 1:
        return 0.0
    return 2 * math.sqrt(n) * math.cos(math.pi / (2 * c)) ** (2 * n)


def moved_limit(n: int, alpha: float = ALPHA) -> int:
    """The largest n·D (rounding's slack included) refused: a correct sampler's samples give at most that with
    probability at most alpha over all 2 · SHIFT_GRID shifts."""
    c = 1
    while 2 * SHIFT_GRID * walk_bound(n, c + 1) <= alpha:
        c += 1
    return c - 1


def _histogram(u: np.ndarray, bins: int) -> np.ndarray:
    return np.bincount(np.minimum((u * bins).astype(np.int64), bins - 1), minlength=bins)


def _candidate_shifts(uq: np.ndarray, uk: np.ndarray, reflect: bool, limit: int) -> list[int]:
    """Shifts of the grid (as j of j / SHIFT_GRID) worth the exact walk: the one where the histograms of uk and
    of the moved uq correlate most (bins of 1 / SHIFT_GRID, or wider, as many as about 4n) and its neighbours,
    kept where the walk at the bins' edges, a part of the walk, is within the limit."""
    bins = min(SHIFT_GRID, 1 << max(4, (4 * uq.size - 1).bit_length()))
    hq, hk = _histogram(uq, bins), _histogram(uk, bins)
    if reflect:               # (-u) mod 1 lies in bin bins - 1 - b for u in bin b
        hq = hq[::-1].copy()
    corr = np.fft.irfft(np.fft.rfft(hk) * np.conj(np.fft.rfft(hq)), n=bins)      # corr[j]: hq moved j bins
    top = int(np.argmax(corr))
    keep = []
    for j in {(top + d) % bins for d in (-1, 0, 1)}:
        if np.abs(np.cumsum(hk - np.roll(hq, j))).max() <= limit:
            keep.append(j * (SHIFT_GRID // bins))
    return sorted(keep)


def moved_copy(q, k, alpha: float = ALPHA) -> tuple[int, int, float, bool] | None:
    """Whether k's entries are q's moved by one rotation or reflection of their uniforms Φ(x) (a shuffled copy,
    scaled by about 1, or shifted in its quantiles, in any order), beyond what independent draws allow: the
    shift found (n·D with its slack, the limit, a, reflected), or None. A correct sampler's q and k are called
    a moved copy with probability at most alpha."""
    uq = normal_cdf(np.asarray(q).ravel())
    uk = normal_cdf(np.asarray(k).ravel())
    n = uq.size
    if n != uk.size or n < 2:
        return None
    limit = moved_limit(n, alpha)
    for reflect in (False, True):
        for j in _candidate_shifts(uq, uk, reflect, limit):
            walk = moved_walk(uq, uk, j / SHIFT_GRID, reflect)
            if walk <= limit:
                return walk, limit, j / SHIFT_GRID, reflect
    return None
