"""Hidden checks of notebook 01-on-paper."""
import math

from autograder.checks import Check, TwinnedCheck, Verdict, attempt, register, student, twin, unpack

NAMES = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "A", "out")


def expected_shapes(T, d, d_k, d_v):
    return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v),
            "Q": (T, d_k), "K": (T, d_k), "V": (T, d_v), "scores": (T, T), "A": (T, T), "out": (T, d_v)}


@register
class Shapes(TwinnedCheck):
    grade_id = "shapes_hidden"
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
            hint = " The scores compare every position with every position: which two sizes is that?"
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


def _spread(values):
    """The sample standard deviation of a list of numbers (None if fewer than two)."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def standard_error(d_k, n):
    """The standard deviation of the sample variance of n draws of q·k, q and k standard normal in d_k
    dimensions: Var(q·k) = d_k, fourth central moment 3 d_k² + 6 d_k, so sqrt((2 + 6/d_k)/n) · d_k."""
    return math.sqrt((2 + 6 / d_k) / n) * d_k


@register
class DotVariance(Check):
    grade_id = "dot_variance_hidden"
    points = 2
    N = 40_000
    CASES = [(3, 11), (50, 12), (200, 13)]
    LABELS = ["a narrow head", "a medium head", "a wide head"]
    # Only real sampling has these (a number typed in, with or without a seed-dependent wobble, has not):
    # the spread of the estimate across seeds is the sampling error sqrt((2 + 6/d_k)/n)·d_k at every n, so
    # it shrinks like 1/sqrt(n); and at n = 2 the estimate is a scaled chi-square with one degree of
    # freedom, often far below d_k, never below 0.
    SPREAD_DK = 4
    SPREAD_NS = (200, 3200)                 # 16 times the samples: a quarter of the spread
    SPREAD_SEEDS = range(1000, 1030)        # 30 seeds per n
    # Verdict on a correct sampler: (S-1) s²/SE² is close to chi-square with 29 degrees of freedom
    # (at n = 200 the estimates are nearly normal: 1,500 simulated sets of 30 seeds gave ratios 0.58..1.45;
    # 4,000 sets of 20 seeds at n = 100 gave 0.49..1.79). P(ratio < 0.4) = P(chi2_29 < 4.64) < 1e-7, P(ratio > 2.5) = P(chi2_29 > 181)
    # < 1e-14: a false fail at one n below 1e-7.
    SPREAD_RANGE = (0.4, 2.5)
    SMALL_DK, SMALL_N = 16, 2
    SMALL_SEEDS = range(2000, 2040)         # 40 seeds
    # At n = 2 the unbiased estimate is d_k·chi2_1 (approximately: q·k is nearly normal at d_k = 16), the
    # biased one half of it: P(estimate < d_k/4) is 0.38 (unbiased) or 0.52 (biased). A correct sampler
    # fails "at least 2 of 40 below d_k/4" with probability P(Bin(40, 0.38) <= 1) < 2e-7.
    SMALL_BELOW, SMALL_AT_LEAST = 0.25, 2

    def probe(self, ns, ctx):
        fn = student(ns, "dot_variance")
        return {
            "cases": [attempt(lambda d, s: float(fn(d, self.N, s)), d, s) for d, s in self.CASES],
            "again": attempt(lambda: float(fn(50, self.N, 12))),
            "other_seed": attempt(lambda: float(fn(50, self.N, 99))),
            "spread": [[attempt(lambda n, s: float(fn(self.SPREAD_DK, n, s)), n, s) for s in self.SPREAD_SEEDS]
                       for n in self.SPREAD_NS],
            "small": [attempt(lambda s: float(fn(self.SMALL_DK, self.SMALL_N, s)), s) for s in self.SMALL_SEEDS],
        }

    def judge(self, data, ctx):
        verdict = Verdict()
        values = [unpack(entry) for entry in data["cases"]]
        again, why_again = unpack(data["again"])
        other, why_other = unpack(data["other_seed"])
        first = values[1][0] if values[1][1] is None else None          # the d_k = 50 case, seed 12
        # an estimate that ignores the seed, or is exactly d_k, was not sampled: its closeness to d_k is
        # the formula typed in, and earns nothing (as typed-in numbers earn nothing elsewhere)
        typed_in = (first is not None and why_other is None and other == first) or any(
            why is None and value == d_k for (d_k, _), (value, why) in zip(self.CASES, values))
        estimates = {}
        for (d_k, seed), label, (value, why) in zip(self.CASES, self.LABELS, values):
            if why:
                verdict.add(f"Var(q·k) for {label}", False, why)
                continue
            if typed_in:
                verdict.add(f"Var(q·k) for {label} is close to d_k", False,
                            "not credited: the estimate does not come from samples (see below)")
                continue
            # the sample variance of N draws of q·k has relative standard error sqrt((2 + 6/d_k)/N)
            tolerance = 6 * math.sqrt((2 + 6 / d_k) / self.N)
            ok = isinstance(value, float) and math.isfinite(value) and abs(value - d_k) <= tolerance * d_k
            estimates[d_k] = value
            hint = ""
            if isinstance(value, float) and abs(value - 1) < 0.2:
                hint = " A value near 1 is the variance of one product q_m·k_m: sum over the d_k axis first."
            elif isinstance(value, float) and d_k > 1 and abs(value - d_k ** 2) < 0.2 * d_k ** 2:
                hint = " A value near d_k² suggests a sum of squares or a variance of a variance."
            off = abs(value - d_k) / d_k if isinstance(value, float) and math.isfinite(value) else float("inf")
            verdict.add(f"Var(q·k) for {label} is close to d_k", ok,
                        f"your estimate is {off:.0%} away from d_k; sampling error explains at most "
                        f"{tolerance:.0%}.{hint}")
        accurate = estimates.get(50) is not None and abs(first - 50) <= 6 * math.sqrt((2 + 6 / 50) / self.N) * 50
        later = "checked once the estimate is close to d_k"
        verdict.add("the same seed gives the same estimate", accurate and why_again is None and again == first,
                    later if not accurate else "calling twice with the same seed gave different numbers: seed a "
                    "torch.Generator (or torch.manual_seed) with `seed` before sampling")
        not_sampled = ("the estimate does not come from samples: a different seed gave the same number, or the "
                       "result is exactly d_k: estimate the variance from n sampled pairs, not from the formula")
        for n, entries in zip(self.SPREAD_NS, data["spread"]):
            name = f"the estimate comes from samples: its spread across seeds at n = {n} is the sampling error"
            if typed_in or not accurate:
                verdict.add(name, False, not_sampled if typed_in else later, weight=2 / 3)
                continue
            got = [v for v, why in map(unpack, entries) if why is None and isinstance(v, float) and math.isfinite(v)]
            spread, se = _spread(got), standard_error(self.SPREAD_DK, n)
            low, high = self.SPREAD_RANGE
            ok = len(got) == len(entries) and spread is not None and low <= spread / se <= high
            verdict.add(name, ok,
                        f"over {len(entries)} seeds your estimates for d_k = {self.SPREAD_DK}, n = {n} spread by "
                        f"{spread if spread is not None else float('nan'):.3g}; n sampled pairs spread by about "
                        f"{se:.3g} (sqrt((2 + 6/d_k)/n)·d_k), shrinking like 1/sqrt(n): is the estimate the "
                        "sample variance of n pairs drawn with `seed`, not the formula (not from the formula "
                        "plus noise)?", weight=2 / 3)
        name = (f"the estimate comes from samples: with n = {self.SMALL_N} pairs it is often far below d_k, "
                "as a sample variance is")
        if typed_in or not accurate:
            verdict.add(name, False, not_sampled if typed_in else later, weight=2 / 3)
        else:
            got = [v for v, why in map(unpack, data["small"]) if why is None and isinstance(v, float)]
            below = sum(v < self.SMALL_BELOW * self.SMALL_DK for v in got)
            negative = sum(v < 0 for v in got)
            verdict.add(name, len(got) == len(data["small"]) and below >= self.SMALL_AT_LEAST and not negative,
                        f"over {len(data['small'])} seeds with d_k = {self.SMALL_DK} and n = {self.SMALL_N}, "
                        f"{below} estimates were below d_k/4 and {negative} below 0; the sample variance of 2 "
                        "pairs is below d_k/4 about 4 times in 10 and never negative: compute it from the n pairs "
                        "you drew, not from the formula",
                        weight=2 / 3)
        sampling = verdict.parts[-3:]
        if accurate and not typed_in and not any(p.ok for p in sampling):
            # close to d_k, but nothing about it behaves like a sample: the formula with a wobble (or an n
            # that is not used) earns no closeness either
            for part in verdict.parts[:-3]:
                part.ok, part.message = False, ("not credited: the estimate does not vary across seeds and n "
                                                "as a sample variance does (see below)")
        return verdict
