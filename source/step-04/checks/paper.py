"""Hidden checks of notebook 01-on-paper."""

import math

import numpy as np

from autograder.checks import (Check, TwinnedCheck, Verdict, attempt, register, student, twin, unpack, unwritten,
                               unwritten_verdict)
from .sampling import (DISTINCT, correlated_lags, dependent, distinct_share, dot_cdf, ks_distance, ks_threshold,
                       normal_cdf, reflected)

NAMES = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "A", "out")


def expected_shapes(T, d, d_k, d_v):
    return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v),
            "Q": (T, d_k), "K": (T, d_k), "V": (T, d_v), "scores": (T, T), "A": (T, T), "out": (T, d_v)}


@register
class Shapes(TwinnedCheck):
    grade_id = "bonus_shapes"
    points = 2
    CASES = [(11, 13, 5, 3), (2, 64, 16, 16), (9, 4, 6, 10)]
    LABELS = ["shapes when T, d, d_k and d_v all differ", "shapes when d_k equals d_v",
              "shapes when the values are wider than the keys"]

    # Each case has a twin drawn for this submission (framework.twin: fresh sizes in the same order,
    # equal sizes kept equal): a case's part needs both right, so sizes recorded from an earlier
    # grading and answered from a table earn nothing; an answer right on a case is right on its twin.

    def twins(self, ctx):
        rng = self.fresh(ctx, "twins")
        return [twin(rng, case, keep=(), low=2, high=96) for case in self.CASES]

    def probe(self, ns, ctx):
        fn = student(ns, "shapes")
        call = lambda *a: _as_tuples(fn(*a))          # noqa: E731
        return {"cases": [attempt(call, *case) for case in self.CASES],
                "twins": [attempt(call, *case) for case in self.twins(ctx)]}

    @staticmethod
    def _case(case, entry):
        value, why = unpack(entry)
        if why:
            return False, why
        wrong = [n for n in NAMES if tuple(value.get(n, ())) != expected_shapes(*case)[n]] \
            if isinstance(value, dict) else list(NAMES)
        hint = ""
        if any(n in wrong for n in ("scores", "A")):
            hint = " The scores compare every position with every position: one score per (query, key) pair."
        elif any(n in wrong for n in ("V", "out", "W_V")):
            hint = " The values have their own width d_v, which need not equal d_k."
        return not wrong, f"wrong or missing: {', '.join(wrong)}.{hint}"


def _as_tuples(result):
    """Shapes may come back as tuples, lists or torch.Size: compare them as tuples of ints."""
    if not isinstance(result, dict):
        return result
    out = {}
    for key, value in result.items():
        try:
            out[str(key)] = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            out[str(key)] = None
    return out


# ---- the variance lemma, by sampling ----------------------------------------------------------
# dot_variance(d_k, n, seed) hands back what it sampled: (dots, variance), the n dot products q·k of n
# pairs drawn with `seed` and their sample variance. The judge tests the samples themselves:
#   * their number: n dot products, one per pair (fewer pairs repeated are not n draws: `distinct_share`);
#   * their law: the Kolmogorov-Smirnov distance to the exact law of q·k (sampling.dot_cdf, d_k even) is
#     below sampling.ks_threshold(n): a correct sampler fails one such test with probability at most
#     sampling.ALPHA = 1e-8 (Massart's bound), six tests per grading (three widths, each with its twin) at
#     most 6e-8. Dot products drawn from a normal law of variance d_k (the lemma typed in, with noise) are
#     caught at the narrow widths: at d_k = 2 (Laplace) their distance is about 0.069, at d_k = 4 about
#     0.040, against a threshold of 0.022 at n = 20,000;
#   * their independence (sampling.dependent): their magnitudes |x| repeat no more than float32 rounding
#     allows (at most sampling.ALPHA for a correct sampler: values beside their negatives, or reused with a
#     sign pattern, are refused), and neither they nor their squares correlate with the dot product before
#     them or n/2 before them (a vector reused: q and -q), about 2e-9 a bound;
#   * the estimate: the sample variance of exactly those dot products (unbiased, biased, or the second
#     moment about the known mean 0), to float rounding: a number typed in, or the formula plus noise,
#     is not;
#   * the seed: the same seed gives the same dot products, another seed others.
# Dot products that are not n samples of q·k in any case (too few, repeated, another law) earn nothing
# anywhere: nothing else about the answer was measured.


GOF_MIN = 1000          # the law is tested where n is at least this (a handful of draws says nothing)


def _statistics(dots: np.ndarray) -> list[float]:
    """The estimates of Var(q·k) an answer may return: unbiased and biased sample variance, and the
    second moment about the known mean 0."""
    out = [float(dots.var()), float((dots ** 2).mean())]
    if dots.size > 1:
        out.append(float(dots.var(ddof=1)))
    return out


def _read_sample(value, d_k, n):
    """(dots as float64, estimate, None), or (None, None, (kind, message)): kind 'form' or 'samples'."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        return None, None, ("form", "dot_variance should return a pair (dots, variance): the n dot products, "
                                    "a tensor of shape (n,), and their sample variance, a Python float")
    dots, estimate = value
    if isinstance(dots, (list, tuple)):
        try:
            dots = np.asarray(dots, dtype=np.float64)
        except (TypeError, ValueError):
            dots = None
    if not isinstance(dots, np.ndarray) or dots.dtype.kind not in "fiu":
        return None, None, ("form", "the first item should be the dot products: a tensor of shape (n,)")
    if dots.shape != (n,):
        if dots.shape == (n, d_k):
            why = ("the first item holds every product q_m·k_m, shape (n, d_k): a dot product is one number per "
                   "pair, so sum over the d_k axis first")
        elif dots.ndim == 1 and dots.size < n:
            why = "fewer dot products than pairs asked for: draw n pairs and return all n dot products"
        elif dots.ndim == 1:
            why = "more numbers than pairs asked for: one dot product per pair, n in all"
        else:
            why = f"the dot products should be a tensor of shape (n,), one per pair; yours has {dots.ndim} axes"
        return None, None, ("samples", why)
    dots = dots.astype(np.float64)
    if not np.isfinite(dots).all():
        return None, None, ("samples", "some dot products are NaN or infinite")
    if isinstance(estimate, bool) or not isinstance(estimate, float):
        return None, None, ("form", f"the variance should be a Python float (use .item()), not "
                                    f"{type(estimate).__name__}")
    return dots, estimate, None


def _judge_sample(case, entry):
    """(None, None) if the case is right, else (kind, message): kind 'samples' (the dot products are not
    n draws of q·k), 'form' or 'estimate'."""
    d_k, n, _ = case
    value, why = unpack(entry)
    if why:
        return "form", why
    dots, estimate, problem = _read_sample(value, d_k, n)
    if problem:
        return problem
    if n >= GOF_MIN:
        if distinct_share(dots) < DISTINCT:
            return "samples", ("too few of the dot products are distinct numbers: n "
                               "independent pairs give n different ones")
        if dependent(dots):
            # which test failed, as measured: magnitudes shared (x beside -x), or a correlation at a shift
            if reflected(dots):
                what = ("more of them share their size with another than independent draws give (some are the "
                        "negatives of others)")
            else:
                what = " and ".join("each correlates with the one before it" if lag == 1 else
                                    "each correlates with the one n/2 before it" for lag in correlated_lags(dots))
            return "samples", (f"the dot products are not independent draws: {what}. n fresh pairs q, k give n "
                               "independent dot products")
        distance = ks_distance(dots, dot_cdf(d_k))
        if distance > ks_threshold(n):
            return "samples", f"the dot products do not follow the law of q·k: {_law_hint(dots, d_k)}"
    if not any(abs(estimate - s) <= 1e-4 * abs(s) + 1e-12 for s in _statistics(dots)):
        return "estimate", ("the variance returned is not the sample variance of the dot products returned: compute "
                            "it from those n dot products (dots.var())")
    return None, None


# What the feedback says when the dot products fail the law test. A cause is named only when the samples pass
# the law test of that cause's own law (the same Kolmogorov-Smirnov test, the same threshold): then they are
# samples of it. Otherwise the feedback says what was measured (their variance against d_k) and names none.
LAW_HINTS = {
    "divided_by_sqrt_d_k": ("their law is that of q·k / sqrt(d_k): the dot products are divided by sqrt(d_k). The "
                            "lemma is about q·k itself, unscaled"),
    "scaled_law": ("their law has the shape of q·k's but another scale (scaled to variance d_k they pass the "
                   "test): the variance is not d_k"),
    # measured: their law passes the test of a normal law (with their own mean and variance), which q·k's does
    # not; that is all it says (a law near a normal one, such as sums of products of uniform entries, passes too)
    "normal_law": ("their law passes the test of a normal law, which q·k's does not (at small d_k its tails are "
                   "heavier than a normal law's): each dot product is the sum of q_m·k_m for a pair q, k with "
                   "standard normal entries (torch.randn)"),
}


def _law_hint(dots: np.ndarray, d_k: int) -> str:
    """What is wrong with dots that fail the law test of q·k: a cause, when they pass the law test of that
    cause's law (the tests with an estimated scale are no stricter than with a known one), else what was
    measured. The exact law of q·k comes first: a scaled q·k at a wide d_k is nearly normal too."""
    n, var = dots.size, float(dots.var())
    passes = lambda samples, cdf: ks_distance(samples, cdf) <= ks_threshold(n)
    # no number measured on the answer's samples is shown: an answer's values may carry what it was given
    measured = " (the variance of the dot products is not d_k)" if abs(var / d_k - 1) >= 0.1 else ""
    if passes(dots * math.sqrt(d_k), dot_cdf(d_k)):
        return LAW_HINTS["divided_by_sqrt_d_k"]
    if var > 0 and passes(dots * math.sqrt(d_k / var), dot_cdf(d_k)):
        return LAW_HINTS["scaled_law"] + measured
    if var > 0 and passes((dots - dots.mean()) / math.sqrt(var), normal_cdf):
        return LAW_HINTS["normal_law"] + measured
    if abs(var / d_k - 1) < 0.1:
        return ("their variance is about d_k, but their distribution is not that of q·k, the sum of d_k products "
                "of independent standard normal entries")
    return ("their variance is not d_k, and their distribution is not that of q·k, the sum of "
            "d_k products of independent standard normal entries")


@register
class DotVariance(Check):
    grade_id = "bonus_dot_variance"
    points = 2
    HINTS = LAW_HINTS
    N = 20_000
    # (d_k, n, seed); a twin of each (below) has a fresh even d_k of the same kind and a fresh seed
    CASES = [(2, N, 11), (16, N, 12), (64, N, 13), (16, 2, 14)]
    LABELS = ["Var(q·k) by sampling, a narrow head", "Var(q·k) by sampling, a medium head",
              "Var(q·k) by sampling, a wide head", "Var(q·k) from two pairs only"]
    # even d_k in these ranges (dot_cdf needs even); the narrow one at most 4, where a normal law of variance
    # d_k is at a distance of 1.8 thresholds or more (tests/test_sampling_judge.py)
    TWIN_WIDTHS = [(2, 4), (10, 30), (40, 128), (10, 30)]
    AGAIN, OTHER_SEED = CASES[1], (16, N, 99)

    def twins(self, ctx):
        rng = self.fresh(ctx, "twins")
        return [(2 * rng.randint(low // 2, high // 2), n, rng.randrange(2 ** 31))
                for (_, n, _), (low, high) in zip(self.CASES, self.TWIN_WIDTHS)]

    def probe(self, ns, ctx):
        fn = student(ns, "dot_variance")
        return {"cases": [attempt(fn, *case) for case in self.CASES],
                "twins": [attempt(fn, *case) for case in self.twins(ctx)],
                "again": attempt(fn, *self.AGAIN), "other_seed": attempt(fn, *self.OTHER_SEED)}

    def judge(self, data, ctx):
        reason = unwritten(data["cases"])
        if reason:
            return unwritten_verdict(reason)
        verdict = Verdict()
        outcomes = []
        for case, other, entry, fresh in zip(self.CASES, self.twins(ctx), data["cases"], data["twins"]):
            kind, message = _judge_sample(case, entry)
            if kind is None:
                kind, message = _judge_sample(other, fresh)
            outcomes.append((kind, message))
        sampled = not any(kind == "samples" for kind, _ in outcomes)
        for label, (kind, message) in zip(self.LABELS, outcomes):
            if kind is None and not sampled:
                verdict.add(label, False, "not credited: in another case the dot products are not n samples of "
                                          "q·k (see there), so nothing the answer returns was measured")
            else:
                verdict.add(label, kind is None, message or "")
        name = "the same seed gives the same dot products, another seed others"
        if not sampled or outcomes[1][0] is not None:
            verdict.add(name, False, "checked once the dot products are right")
            return verdict
        first = np.asarray(unpack(data["cases"][1])[0][0], dtype=np.float64)
        again, other = (_read_sample(unpack(data[k])[0], *case[:2])[0] if unpack(data[k])[1] is None else None
                        for k, case in (("again", self.AGAIN), ("other_seed", self.OTHER_SEED)))
        if again is None or not np.array_equal(again, first):
            verdict.add(name, False, "calling twice with the same seed gave different dot products: draw q and k "
                                     "from a torch.Generator seeded with `seed` (or call torch.manual_seed(seed))")
        elif other is None or np.array_equal(other, first):
            verdict.add(name, False, "another seed gave the same dot products: draw them from a generator seeded "
                                     "with `seed`")
        else:
            verdict.add(name, True)
        return verdict
