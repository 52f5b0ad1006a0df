"""Hidden checks of notebook 03-the-tests.

The three checks a student writes (check_simplex, check_causality_perturbation,
check_causality_gradient) are graded as Examplar grades tests: each is run on every case of
its suite (suites.py). A correct case ("wheat") must pass: a check that rejects one scores 0.
Otherwise each broken case ("chaff") it catches, by raising AssertionError, earns an equal share.
A crash with another exception is not a catch.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch
import torch.nn.functional as F

from autograder.checks import Check, StudentError, Verdict, attempt, outcome, register, student, unpack
from dlcourse.contracts import contract

from .forms import attempt_form, form_of
from . import leaks  # noqa: F401  the suites' heads at every class of positions, and longer sequences
from .suites import SUITES, MutantHead


# ---- the reference checks: the spec, executed (grader side; also used to prove the suites) ----

FLOAT32_ROW_SUM_TOL = 1e-5     # float32 row sums are 1 to ~1e-7 (2.4e-7 at T = 64); a real error is >= 1e-4


def reference_check_simplex(A):
    T = A.shape[-1]
    assert bool((A >= 0).all()), "negative weight (or NaN)"
    assert bool(((A.sum(dim=-1) - 1).abs() <= FLOAT32_ROW_SUM_TOL).all()), "a row does not sum to 1"
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert bool((A[..., future] == 0).all()), "weight above the diagonal"


def reference_check_causality_perturbation(head, x, t):
    out = head(x)
    x2 = x.clone()
    x2[:, t, :] = torch.randn_like(x2[:, t, :])
    out2 = head(x2)
    assert torch.equal(out[:, :t], out2[:, :t]), "an output before t changed"
    for s in range(t, x.shape[1]):
        assert not torch.equal(out[:, s], out2[:, s]), f"the output at {s} >= t did not change"


def reference_check_causality_gradient(head, x, i):
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    assert bool((g[i + 1:] == 0).all()), "nonzero gradient from the future"
    assert bool((g[: i + 1] != 0).any(dim=-1).all()), "zero gradient from a position j <= i"


REFERENCE_CHECKS = {
    "check_simplex": reference_check_simplex,
    "check_causality_perturbation": reference_check_causality_perturbation,
    "check_causality_gradient": reference_check_causality_gradient,
}


# ---- Examplar: wheats and chaffs ------------------------------------------------------------

X_SEED, CALL_SEED = 4200, 4300     # the notebook's x comes from torch.manual_seed(0)
GENERIC = "a check must return quietly whenever the property holds"
T_LONG = 12                        # a sequence longer than the notebook's 8 tokens


def probe_input(p, T=8):
    """The x a head check is run on at position p: (4, T, 32), from its own generator."""
    g = torch.Generator().manual_seed(X_SEED + p + (1000 * T if T != 8 else 0))
    return torch.randn(4, T, 32, generator=g)


def length_at(p) -> int:
    """The sequence length a head check is tried on at position p: the notebook's 8, or longer for a
    position the notebook's sequences do not have."""
    return 8 if p < 8 else T_LONG


def _crash_hint(text: str) -> str:
    if "NotImplementedError" in text:
        return "the answer cell is not filled in yet"
    if "InputChanged" in text:
        return ("your check changes its caller's tensor in place (the notebook's own x would change too): "
                "perturb a copy, x.clone()")
    if "does not require grad" in text or "grad_fn" in text or "'NoneType' object is not subscriptable" in text:
        return ("x arrives without requires_grad: make a leaf copy first, "
                "x = x.clone().requires_grad_(True)")
    if "has no attribute" in text:
        return "treat the head as a black box: call head(x) (and read head.A) only"
    if "must have the same dtype" in text:
        return ("the head is float32, as the notebook's: give it x as it comes (or convert the head too, "
                "head.double(), as you would a real module)")
    if "dtype" in text.lower() or "did not match" in text or "Double" in text:
        return "build what you compare with from A itself (torch.ones_like(...)), so dtypes match"
    if "index" in text.lower() or "size" in text.lower() or "shape" in text.lower():
        return "take B, T and d from the tensors' shapes instead of fixing them"
    return ""


def _what_happened(outs, label):
    """'raised AssertionError (at t = 5)' or 'crashed with TypeError (at t = 5)': the first non-return."""
    for p, o in outs:
        where = f" (at {label} = {p})" if p is not None else ""
        if o.startswith("assertion"):
            return f"raised AssertionError{where}", ""
        if o.startswith("crashed: "):
            kind = o[len("crashed: "):].split(":", 1)[0]
            return f"crashed with {kind}{where}", _crash_hint(o)
    return "returned", ""


class Examplar(Check):
    suite = ""
    function = ""
    params: tuple = (None,)
    label = ""                 # the name of the parameter in messages ("t", "i")
    thing, plural = "head", "heads"

    def arguments(self, obj, p):
        raise NotImplementedError

    def probe(self, ns, ctx):
        fn = student(ns, self.function)
        results = {}
        for token, obj in ctx.suite(self.suite):
            outs = []
            for p in self.params:
                args = self.arguments(obj, p)
                # the check's own randomness is reproducible: the kernel's seed is set before each call
                outs.append(outcome(fn, *args, seed=CALL_SEED + (p or 0)))
            results[token] = outs
        return results

    def judge(self, data, ctx):
        verdict = Verdict()
        cases = ctx.cases(self.suite)
        rejected, chaffs = [], []
        for token, case in cases:
            outs = data.get(token) if isinstance(data, dict) else None
            if not (isinstance(outs, list) and len(outs) == len(self.params) and all(isinstance(o, str) for o in outs)):
                outs = None
            if case.kind == "wheat":
                if outs is None:
                    rejected.append((case, "gave no result", ""))
                elif any(o != "returned" for o in outs):
                    what, hint = _what_happened(list(zip(self.params, outs)), self.label)
                    rejected.append((case, what, hint))
                else:
                    verdict.add(f"accepts {case.description}", True, weight=0)
            else:
                chaffs.append((case, outs))
        if rejected:
            order = {c.name: n for n, c in enumerate(SUITES[self.suite])}
            rejected.sort(key=lambda r: order.get(r[0].name, len(order)))
            wheats = [c for _, c in cases if c.kind == "wheat"]
            ordinary = wheats[0] if wheats else None       # the plainest correct case of the suite
            if len(rejected) == len(wheats) > 1:
                case, what, hint = rejected[0]
                verdict.add(f"accepts correct {self.plural}", False,
                            f"your check {what} on every correct {self.thing}: {hint or case.hint or GENERIC}")
            elif ordinary is not None and rejected[0][0] is ordinary:
                # the edge cases' own hints would mislead when even the plainest correct case fails
                case, what, hint = rejected[0]
                others = len(rejected) - 1
                verdict.add(f"accepts correct {self.plural}", False,
                            f"your check {what} on {case.description}"
                            + (f" (and on {others} other correct {self.plural})" if others else "")
                            + f": {hint or case.hint or GENERIC}")
            else:
                for case, what, hint in rejected:
                    verdict.add(f"accepts {case.description}", False,
                                f"your check {what} on it, but it is correct: {hint or case.hint or GENERIC}")
            verdict.add(f"catches broken {self.plural}", False,
                        f"not counted: a check that rejects a correct {self.thing} scores 0, whatever it catches")
            return verdict
        if chaffs and all(outs is not None and all(o == "returned" for o in outs) for _, outs in chaffs):
            verdict.add(f"catches broken {self.plural}", False,
                        f"your check returned quietly on every broken {self.thing} ({len(chaffs)} of them): does it "
                        "assert anything? A comparison on its own line or a print raises nothing: write "
                        "`assert condition, message` for each part of the spec", weight=len(chaffs))
            return verdict
        for case, outs in chaffs:
            name = f"catches {case.description}"
            if outs is None:
                verdict.add(name, False, "no result reached the grader")
            elif any(o.startswith("assertion") for o in outs):
                verdict.add(name, True)
            elif any(o.startswith("crashed") for o in outs):
                what, hint = _what_happened(list(zip(self.params, outs)), self.label)
                verdict.add(name, False, f"your check {what} on it. A crash is not a catch: when the property "
                                         "fails, raise AssertionError (an assert with a message)"
                                         + (f"; {hint}" if hint else ""))
            else:
                verdict.add(name, False, "your check returns quietly on it" + (f": {case.hint}" if case.hint else ""))
        return verdict


@register
class CheckSimplex(Examplar):
    grade_id = "check_simplex_hidden"
    points = 3
    suite, function, thing, plural = "simplex", "check_simplex", "matrix", "matrices"

    def arguments(self, A, p):
        return (A.clone(),)


@register
class CheckPerturbation(Examplar):
    grade_id = "check_perturbation_hidden"
    points = 3
    suite, function, label = "causal_perturbation", "check_causality_perturbation", "t"
    params = (2, 5, 7, 9)              # t = 9 on 12 tokens: past every position of the notebook's sequences

    def arguments(self, head, t):
        return head, probe_input(t, length_at(t)), t


@register
class CheckGradient(Examplar):
    grade_id = "check_gradient_hidden"
    points = 3
    suite, function, label = "causal_gradient", "check_causality_gradient", "i"
    # i = 5 < T - 2: a leak from the last position only is two steps away; i = 9 on 12 tokens: past every
    # position of the notebook's sequences
    params = (0, 3, 5, 9)

    def arguments(self, head, i):
        return head, probe_input(10 + i, length_at(i)), i


# ---- the scale check ------------------------------------------------------------------------

SCALE_KEYS = ("d_k", "raw_std", "sqrt_d_k", "scaled_std", "max_weight_raw", "max_weight_scaled",
              "one_hot_raw", "one_hot_scaled")
B_SCALE, T_SCALE = 4, 8
ONE_HOT = 0.9995


def scale_statistics(q, k):
    """The table's statistics for q, k of shape (..., B, T, d_k): one value per leading index."""
    d_k = q.shape[-1]
    raw = q @ k.transpose(-2, -1)                                      # (..., B, T, T)
    scaled = raw / math.sqrt(d_k)
    lead = raw.shape[:-3]
    p_raw, p_scaled = F.softmax(raw, dim=-1), F.softmax(scaled, dim=-1)
    row_max_raw, row_max_scaled = p_raw.amax(dim=-1), p_scaled.amax(dim=-1)     # (..., B, T)
    return {
        "ratio": raw.reshape(*lead, -1).std(dim=-1) / math.sqrt(d_k),
        "max_weight_raw": row_max_raw.reshape(*lead, -1).amax(dim=-1),
        "max_weight_scaled": row_max_scaled.reshape(*lead, -1).amax(dim=-1),
        "one_hot_raw": (row_max_raw >= ONE_HOT).reshape(*lead, -1).double().mean(dim=-1),
        "one_hot_scaled": (row_max_scaled >= ONE_HOT).reshape(*lead, -1).double().mean(dim=-1),
    }


@functools.lru_cache(maxsize=16)
def sampling_distribution(d_k, n=1000, chunk=250):
    """Mean and standard deviation of each statistic over n independent tables (fixed seed)."""
    g = torch.Generator().manual_seed(20_240 + d_k)
    parts = []
    for _ in range(n // chunk):
        q = torch.randn(chunk, B_SCALE, T_SCALE, d_k, generator=g)
        k = torch.randn(chunk, B_SCALE, T_SCALE, d_k, generator=g)
        parts.append(scale_statistics(q, k))
    return {name: (torch.cat([p[name] for p in parts]).double().mean().item(),
                   torch.cat([p[name] for p in parts]).double().std().item()) for name in parts[0]}


@register
class ScaleTable(Check):
    grade_id = "scale_table_hidden"
    points = 4
    # the notebook prints 16, 64, 256. At d_k = 1024 most raw rows are one-hot, and a softmax over the
    # wrong axis shows: its "one-hot rows" are the columns holding a one-hot row's peak, and two rows
    # often peak in the same column (share about 0.52 instead of 0.70, with a spread of 0.08 per table)
    D_HEADS = [8, 32, 128, 1024]
    SEEDS = list(range(1000, 1024))            # averages over 24 tables: the spread shrinks by sqrt(24)
    PARTS = {                               # key: (what the feedback calls it, weight)
        "form": ("one row per d_k, with the eight keys", 1),
        "sqrt": ("sqrt_d_k is sqrt(d_k)", 0.5),
        "scaled": ("scaled_std = raw_std / sqrt(d_k)", 0.5),
        "raw_std": ("raw std tracks sqrt(d_k)", 1),
        "max_consistent": ("max weights are consistent", 0.5),
        "max_sampled": ("max weights match the sampling", 1),
        "one_hot_consistent": ("one-hot shares are consistent", 0.5),
        "one_hot_sampled": ("one-hot shares match the sampling", 1),
        "seeded": ("the table comes from seeded samples", 1),
    }

    def probe(self, ns, ctx):
        fn = student(ns, "scale_table")
        tables = [attempt(fn, list(self.D_HEADS), seed) for seed in self.SEEDS]
        return {"tables": tables, "again": attempt(fn, list(self.D_HEADS), self.SEEDS[0])}

    def judge(self, data, ctx):
        verdict = Verdict()

        def add(key, ok, message=""):
            name, weight = self.PARTS[key]
            verdict.add(name, ok, message, weight)

        tables, problem = [], None
        for entry in data["tables"]:
            value, why = unpack(entry)
            if why:
                problem = why
                break
            problem = _table_problem(value, self.D_HEADS)
            if problem:
                break
            tables.append([{key: float(_number(row[key])) for key in SCALE_KEYS} for row in value])
        if problem:
            add("form", False, problem)
            for key in list(self.PARTS)[1:]:
                add(key, False, "needs a table of the right form first")
            return verdict
        add("form", True)
        rows = [row for table in tables for row in table]
        add("sqrt", all(abs(r["sqrt_d_k"] - math.sqrt(r["d_k"])) <= 1e-6 * math.sqrt(r["d_k"]) for r in rows),
            "sqrt_d_k should be math.sqrt(d_k) exactly")

        again, why = unpack(data["again"])
        same = why is None and _table_problem(again, self.D_HEADS) is None and \
            [{key: float(_number(row[key])) for key in SCALE_KEYS} for row in again] == tables[0]
        differ = len({tuple(t[0][key] for key in ("raw_std", "max_weight_raw")) for t in tables}) > len(tables) // 2
        if not differ:
            # the same numbers whatever the seed: they are not measurements, so nothing they say is credited
            for key in list(self.PARTS)[2:-1]:
                add(key, False, "not credited: the table is the same for every seed, so its numbers "
                                "were not measured (see 'the table comes from seeded samples')")
            add("seeded", False, "other seeds must give other tables: sample q and k with torch.randn "
                                 "from a generator seeded with `seed`, do not type numbers in")
            return verdict

        # exact: scaled std is the raw std divided by sqrt(d_k) (same scores, float32 rounding ~1e-7)
        ok = all(abs(r["scaled_std"] - r["raw_std"] / math.sqrt(r["d_k"])) <= 1e-5 * r["scaled_std"] + 1e-12 for r in rows)
        add("scaled", ok, "" if ok else _scaled_std_hint(rows))

        # statistical: average each statistic over the 24 seeds and compare with the sampling distribution
        # (mean and sd measured over 1000 simulated tables): the average of 24 independent tables has
        # sd/sqrt(24); allowing 6 of those (and the simulation's own error) makes a false failure
        # of a correct table about 1e-9 per statistic. The max weights have a long thin tail (one table in
        # thousands has a raw max of 0.9999 at large d_k), so no tolerance is below 1e-3.
        # The feedback says in which direction a statistic is off, never the value sampling predicts.
        def averages(name_of_row):
            return [np.mean([table[n][name_of_row] for table in tables]) for n in range(len(self.D_HEADS))]

        def off(stat, values, transform=lambda r, d: r):
            """[(key, 'high' or 'low', the student's average)] for the widths where a statistic is off."""
            bad = []
            for d_k, value in zip(self.D_HEADS, values):
                mean, sd = sampling_distribution(d_k)[stat]
                tol = max(6 * sd * math.sqrt(1 / len(self.SEEDS) + 1 / 1000), 1e-3)
                v = transform(value, d_k)
                if not abs(v - mean) <= tol:
                    bad.append((stat, "high" if v > mean else "low", v))
            return bad

        bad = off("ratio", averages("raw_std"), lambda v, d: v / math.sqrt(d))
        add("raw_std", not bad,
            (f"averaged over several seeds, raw_std / sqrt(d_k) is {bad[0][2]:.3f} at one of the widths, "
             "while the variance lemma says about 1: are q and k drawn with unit-variance entries "
             "(torch.randn), and is raw_std the std of q kᵀ, unmasked and unscaled?") if bad else "")

        T = T_SCALE
        consistent = all(1 / T - 1e-6 <= r[key] <= 1 + 1e-6 for r in rows for key in ("max_weight_raw", "max_weight_scaled")) \
            and all(r["max_weight_raw"] >= r["max_weight_scaled"] - 1e-6 for r in rows)
        add("max_consistent", consistent,
            "every max weight lies in [1/T, 1] (a row of T weights summing to 1 has a largest weight >= 1/T), "
            "and the raw one is at least the scaled one (dividing scores by sqrt(d_k) >= 1 flattens every row)")
        bad = off("max_weight_raw", averages("max_weight_raw")) + off("max_weight_scaled", averages("max_weight_scaled"))
        add("max_sampled", not bad, _max_weight_hint(bad[0]) if bad else "")

        consistent = all(0 <= r[key] <= 1 and abs(r[key] * B_SCALE * T - round(r[key] * B_SCALE * T)) <= 1e-6
                         for r in rows for key in ("one_hot_raw", "one_hot_scaled")) \
            and all(r["one_hot_raw"] >= r["one_hot_scaled"] for r in rows)
        add("one_hot_consistent", consistent,
            f"a share of rows is a count out of B·T = {B_SCALE * T} rows, in [0, 1], and the raw share is at "
            "least the scaled one")
        bad = off("one_hot_raw", averages("one_hot_raw")) + off("one_hot_scaled", averages("one_hot_scaled"))
        add("one_hot_sampled", not bad, _one_hot_hint(bad[0]) if bad else "")

        add("seeded", same,
            "the same seed must give the same table: seed a torch.Generator (or torch.manual_seed) with "
            "`seed` before sampling")
        return verdict


def _scaled_std_hint(rows) -> str:
    ratios = [(r["d_k"], r["scaled_std"] / r["raw_std"]) for r in rows if r["raw_std"] > 0]
    if ratios and all(abs(q * d - 1) <= 1e-4 for d, q in ratios):
        return "scaled_std / raw_std is 1/d_k: the scores are divided by d_k; the lemma's scale is sqrt(d_k)"
    if ratios and all(abs(q - 1) <= 1e-4 for _, q in ratios):
        return "scaled_std equals raw_std: the scaled scores are not divided by sqrt(d_k) at all"
    if ratios and max(q for _, q in ratios) - min(q for _, q in ratios) <= 1e-4 * max(q for _, q in ratios):
        return ("scaled_std / raw_std is the same at every width: the scores are divided by a constant (the model "
                "width?), but the scale must follow the head: sqrt(d_k)")
    return ("scaled_std should be the std of the same scores divided by sqrt(d_k), which is raw_std / sqrt(d_k): "
            "divide the raw scores you already have, do not draw new q and k")


def _max_weight_hint(bad) -> str:
    stat, direction, value = bad
    which = "raw" if stat.endswith("raw") else "scaled"
    text = (f"averaged over several seeds, max_weight_{which} is {value:.3f} at one of the widths, too {direction} "
            "for the largest softmax weight over the batch")
    if which == "scaled" and direction == "low":
        return text + ": the scaled rows are too flat. Are the scores divided by more than sqrt(d_k) (by d_k, say)?"
    if which == "scaled":
        return text + ": the scaled rows are too peaked. Are the scores divided by sqrt(d_k) (not by less, or not at all)?"
    return text + ": the raw weights come from the softmax of q kᵀ itself, unscaled and unmasked (a masked row 0 always has weight 1)"


def _one_hot_hint(bad) -> str:
    stat, direction, value = bad
    which = "raw" if stat.endswith("raw") else "scaled"
    return (f"averaged over several seeds, one_hot_{which} is {value:.3f} at one of the widths, too {direction}: it is "
            f"the share of the B·T rows whose largest weight is >= {ONE_HOT}, with the softmax over each row's "
            "keys (dim=-1)" + (" and the raw scores unscaled" if which == "raw" else " and the scores divided by sqrt(d_k)"))


def _number(v):
    if isinstance(v, np.ndarray) and v.size == 1:
        return v.item()
    return v


def _table_problem(value, d_heads):
    if not isinstance(value, (list, tuple)) or len(value) != len(d_heads):
        return f"scale_table(d_heads, seed) should return a list with one dict per d_k ({len(d_heads)} here)"
    for row, d_k in zip(value, d_heads):
        if not isinstance(row, dict):
            return "each row of the table should be a dict"
        missing = [key for key in SCALE_KEYS if key not in row]
        if missing:
            return f"a row lacks the keys {missing}; the keys are {list(SCALE_KEYS)}"
        for key in SCALE_KEYS:
            v = _number(row[key])
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return f"row[{key!r}] should be a number (use .item() on a one-element tensor)"
            if not math.isfinite(v):
                return (f"row[{key!r}] is {v}: every statistic of the table is finite. Are the scores masked "
                        "(-inf above the diagonal)? The table is about the unmasked scores")
        if _number(row["d_k"]) != d_k:
            return "the rows should come in the order of d_heads, each with its own d_k"
    return None


# ---- mask after softmax ---------------------------------------------------------------------

def mask_after_inputs(B, T, seed, scale, dtype):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(B, T, T, generator=g, dtype=torch.float64)).to(dtype)


def mask_after_reference(scores):
    T = scores.shape[-1]
    keep = torch.tril(torch.ones(T, T, dtype=torch.float64))
    return (F.softmax(scores.double(), dim=-1) * keep).sum(dim=-1)


ROW_SUMS = contract("mask_after_softmax_row_sums")


@register
class MaskAfterSoftmax(Check):
    grade_id = "mask_after_softmax_hidden"
    points = 2
    # the notebook's own scores are (4, 8, 8) and small; the contract allows any scores, large ones too,
    # where a softmax written as exp(s) / sum exp(s) overflows in float32 (exp(89) is inf)
    CASES = [("a batch of 3 sequences of 6 tokens", 3, 6, 51, 1.5, "float32"),
             ("one token (T = 1)", 2, 1, 52, 1.0, "float32"),
             ("float64 scores, 10 tokens", 2, 10, 53, 3.0, "float64"),
             ("large scores (in the hundreds), 9 tokens", 2, 9, 54, 100.0, "float32")]

    # Each case has a twin of this submission's own: the same sizes, scale and dtype, scores drawn
    # from a seed of framework.fresh_rng. A case's part needs both right, so row sums recorded from
    # an earlier grading and returned from a table earn nothing.

    def twins(self, ctx):
        rng = self.fresh(ctx, "twins")
        return [(label, B, T, rng.getrandbits(62), scale, dtype) for label, B, T, _, scale, dtype in self.CASES]

    def probe(self, ns, ctx):
        fn = student(ns, "mask_after_softmax_row_sums")
        # each result as the function returned it, its form judged by the contract ((B, T), the scores' dtype)
        return {which: [attempt_form("mask_after_softmax_row_sums", fn, mask_after_inputs(B, T, seed, scale, getattr(torch, dtype)))
                        for _, B, T, seed, scale, dtype in cases]
                for which, cases in (("cases", self.CASES), ("twins", self.twins(ctx)))}

    def judge(self, data, ctx):
        verdict = Verdict()
        for case, other, entry, fresh in zip(self.CASES, self.twins(ctx), data["cases"], data["twins"]):
            ok, message = self._case(case, entry)
            if ok:
                ok, message = self._case(other, fresh)
            verdict.add(case[0], ok, message)
        return verdict

    @staticmethod
    def _case(case, entry):
        """(ok, message) of one case."""
        label, B, T, seed, scale, dtype = case
        value, why = unpack(entry)
        if why:
            return False, why
        scores = mask_after_inputs(B, T, seed, scale, getattr(torch, dtype)).double()   # the scores it was given
        ref = mask_after_reference(scores).numpy()
        got = np.asarray(value, dtype=np.float64) if isinstance(value, (np.ndarray, list, float, int)) else None
        if got is None or got.shape != (B, T):
            shape = None if got is None else got.shape
            hint = ": the row sums of A, A.sum(dim=-1)" if shape == (B, T, T) else ""
            return False, (f"scores of shape {(B, T, T)} should give row sums of shape {(B, T)}; "
                           f"got {shape}{hint}")
        # the contract's: float32 softmax and sum, error ~1e-7 per row, 1e-5 far from any real mistake; float64
        # ~1e-16, 1e-12 (float32 precision somewhere in a float64 computation is ~1e-8)
        if np.all(np.abs(got - ref) <= ROW_SUMS.tol(dtype)):
            if form_of(entry):
                return False, form_of(entry)
            return True, ""
        upper = torch.triu(torch.ones(T, T, dtype=torch.float64))
        flipped = (F.softmax(scores, dim=-1) * upper).sum(dim=-1).numpy()
        lower = torch.tril(torch.ones(T, T, dtype=torch.float64))
        by_column = (F.softmax(scores, dim=-2) * lower).sum(dim=-1).numpy()
        no_diagonal = (F.softmax(scores, dim=-1) * torch.tril(lower, diagonal=-1)).sum(dim=-1).numpy()
        if not np.isfinite(got).all() and scale >= 100:
            hint = ("NaN or inf for scores in the hundreds: exp(s) overflows in float32 (exp(89) is inf), and a "
                    "row whose kept weights all underflow to 0 gives 0/0 when divided by their sum. F.softmax "
                    "subtracts each row's max first; zero the future after it, and do not renormalise")
        elif not np.isfinite(got).all():
            hint = ("NaN or inf: after the softmax, set the future weights to 0 (multiply by the mask, or "
                    "masked_fill with 0.0), not to -inf")
        elif dtype == "float64" and np.all(np.abs(got - ref) <= 1e-5):
            hint = ("right to float32 precision only: float64 scores lost precision somewhere (a tensor created "
                    "with the default dtype, or a conversion to float32)")
        elif T > 1 and np.allclose(got, 1, atol=1e-5):
            hint = ("every row sums to 1: that is masking before the softmax (or renormalising). Here the "
                    "softmax runs over all keys first, then the future weights are zeroed")
        elif T > 1 and np.allclose(got, flipped, atol=1e-5):
            hint = "you kept the future and zeroed the past: tril keeps j <= i"
        elif np.allclose(got, no_diagonal, atol=1e-5):
            hint = "the diagonal was zeroed too: row i keeps keys j <= i, its own key j = i included (tril, not tril(-1))"
        elif T > 1 and np.allclose(got, by_column, atol=1e-5):
            hint = ("the softmax ran over the queries (dim=-2 or dim=1): each row is normalised over its keys, "
                    "F.softmax(scores, dim=-1)")
        else:
            hint = "row i keeps the softmax weights of keys j <= i (computed over all T keys) and sums them"
        return False, hint


# ---- which checks fail on a mask-after-softmax head -----------------------------------------

@functools.lru_cache(maxsize=1)
def fails_on_mask_after_softmax() -> frozenset:
    """The truth, by experiment: run the reference checks on a head that masks after the softmax
    (the notebook's setting: Head(32, 16, T_max=8), x = randn(4, 8, 32), t = 5, i = 3)."""
    head = MutantHead("mask_after_softmax", seed=0, T_max=8)
    torch.manual_seed(0)
    x = torch.randn(4, 8, 32)
    head(x)
    failing = set()
    for name, args in [("check_simplex", (head.A,)), ("check_causality_perturbation", (head, x, 5)),
                       ("check_causality_gradient", (head, x, 3))]:
        torch.manual_seed(1)
        if outcome(REFERENCE_CHECKS[name], *args).startswith("assertion"):
            failing.add(name)
    return frozenset(failing)


@register
class FailsOnMaskAfterSoftmax(Check):
    grade_id = "fails_on_mask_after_softmax_hidden"
    points = 2

    def probe(self, ns, ctx):
        student(ns, "FAILS_ON_MASK_AFTER_SOFTMAX")
        try:
            value = ns.value("FAILS_ON_MASK_AFTER_SOFTMAX")
        except StudentError as err:
            return {"error": f"TypeError: FAILS_ON_MASK_AFTER_SOFTMAX should be a set of names ({err})"}
        if isinstance(value, (set, frozenset, list, tuple)):
            return {"value": sorted(str(v) for v in value)}
        return {"error": f"TypeError: FAILS_ON_MASK_AFTER_SOFTMAX should be a set of names, not {type(value).__name__}"}

    def judge(self, data, ctx):
        verdict = Verdict()
        value, why = unpack(data)
        if why:
            verdict.add("a set of check names", False, why)
            return verdict
        named = set(value)
        unknown = named - set(REFERENCE_CHECKS)
        truth = fails_on_mask_after_softmax()
        for name in REFERENCE_CHECKS:
            says, fails = name in named, name in truth
            if says == fails:
                verdict.add(name, True)
            elif fails and name == "check_simplex":
                verdict.add(name, False, "it fails: rows of A sum to less than 1 once the future weights are zeroed")
            elif fails:
                verdict.add(name, False, "it fails too: the softmax's denominator sums over the future keys, so "
                                         "out_i depends on x_j for j > i even though A[i, j] is set to 0")
            else:
                verdict.add(name, False, "run it on BrokenHead(..., 'mask after softmax'): it passes")
        if unknown:
            verdict.add("only the names of your checks", False,
                        f"{sorted(unknown)} is not one of {sorted(REFERENCE_CHECKS)}")
        return verdict
