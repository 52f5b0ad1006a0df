"""Samples judged as samples: a goodness-of-fit test with a stated false-fail probability.

An answer that says it sampled hands its samples back (notebook 01's dot products, notebook 03's
q and k), and the judge asks of the samples themselves whether they come from the distribution the
spec names: the Kolmogorov-Smirnov distance D between their empirical distribution and the exact
law. For n independent draws from a continuous law, Massart's form of the Dvoretzky-Kiefer-Wolfowitz
inequality bounds P(D > eps) <= 2 exp(-2 n eps^2) for every n (not only asymptotically): with
eps = sqrt(ln(2 / ALPHA) / (2 n)) a correct sampler fails one test with probability at most ALPHA.
Rounding to float32 only ties equal draws, which makes D smaller, never larger.

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


# n independent draws of a continuous law: almost no value's negative is among the others, and the
# lag-1 correlation of the sequence (and of its squares) is about N(0, 1/n); a reflection of each draw
# (x, -x), or draws made from the one before, give a share of 0.5 or a correlation outside 6/sqrt(n)
# (an honest sample crosses it with a probability below 1e-8)
REFLECTED = 0.05
SERIAL_SIGMAS = 6.0


def dependent(dots: np.ndarray) -> bool:
    """Whether n dot products are plainly not independent draws: values paired with their negatives,
    or each correlated with the one before."""
    n = dots.size
    nonzero = dots[dots != 0]
    if nonzero.size and np.isin(-nonzero, nonzero).mean() > REFLECTED:
        return True
    if n < 3:
        return False
    # the values, and their squares (draws that share a vector with the next are uncorrelated, but their
    # sizes are: the lag-1 correlation of the squares is 1 / (d_k + 3) for a chain q_i·q_(i+1))
    for series in (dots, dots * dots):
        centred = series - series.mean()
        scale = float((centred * centred).sum())
        if scale > 0 and abs(float((centred[1:] * centred[:-1]).sum()) / scale) > SERIAL_SIGMAS / math.sqrt(n):
            return True
    return False
