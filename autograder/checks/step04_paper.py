"""Hidden checks of notebook 01-on-paper."""
import math

from .framework import Check, Verdict, attempt, register, student, unpack

NAMES = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "A", "out")


def expected_shapes(T, d, d_k, d_v):
    return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v),
            "Q": (T, d_k), "K": (T, d_k), "V": (T, d_v), "scores": (T, T), "A": (T, T), "out": (T, d_v)}


@register
class Shapes(Check):
    grade_id = "shapes_hidden"
    points = 2
    CASES = [(11, 13, 5, 3), (2, 64, 16, 16), (9, 4, 6, 10)]
    LABELS = ["shapes when T, d, d_k and d_v all differ", "shapes when d_k equals d_v",
              "shapes when the values are wider than the keys"]

    def probe(self, ns, ctx):
        fn = student(ns, "shapes")
        return [attempt(lambda *a: _as_tuples(fn(*a)), *case) for case in self.CASES]

    def judge(self, data, ctx):
        verdict = Verdict()
        for case, label, entry in zip(self.CASES, self.LABELS, data):
            value, why = unpack(entry)
            if why:
                verdict.add(label, False, why)
                continue
            wrong = [n for n in NAMES if tuple(value.get(n, ())) != expected_shapes(*case)[n]] \
                if isinstance(value, dict) else list(NAMES)
            hint = ""
            if any(n in wrong for n in ("scores", "A")):
                hint = " The scores compare every position with every position: which two sizes is that?"
            elif any(n in wrong for n in ("V", "out", "W_V")):
                hint = " The values have their own width d_v, which need not equal d_k."
            verdict.add(label, not wrong, f"wrong or missing: {', '.join(wrong)}.{hint}")
        return verdict


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


@register
class DotVariance(Check):
    grade_id = "dot_variance_hidden"
    points = 2
    N = 40_000
    CASES = [(3, 11), (50, 12), (200, 13)]
    LABELS = ["a narrow head", "a medium head", "a wide head"]

    def probe(self, ns, ctx):
        fn = student(ns, "dot_variance")
        return {
            "cases": [attempt(lambda d, s: float(fn(d, self.N, s)), d, s) for d, s in self.CASES],
            "again": attempt(lambda: float(fn(50, self.N, 12))),
            "other_seed": attempt(lambda: float(fn(50, self.N, 99))),
        }

    def judge(self, data, ctx):
        verdict = Verdict()
        estimates = {}
        for (d_k, seed), label, entry in zip(self.CASES, self.LABELS, data["cases"]):
            value, why = unpack(entry)
            if why:
                verdict.add(f"Var(q·k) for {label}", False, why)
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
        again, why_again = unpack(data["again"])
        other, why_other = unpack(data["other_seed"])
        first = estimates.get(50)
        accurate = first is not None and abs(first - 50) <= 6 * math.sqrt((2 + 6 / 50) / self.N) * 50
        later = "checked once the estimate is close to d_k"
        verdict.add("the same seed gives the same estimate", accurate and why_again is None and again == first,
                    later if not accurate else "calling twice with the same seed gave different numbers: seed a "
                    "torch.Generator (or torch.manual_seed) with `seed` before sampling")
        verdict.add("the estimate comes from samples", accurate and why_other is None and other != first
                    and first != 50.0,
                    later if not accurate else "a different seed gave the same number, or the result is exactly "
                    "d_k: estimate the variance from n sampled pairs, not from the formula", weight=2)
        return verdict
