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

from autograder.checks import (Check, StudentError, Verdict, attempt, outcome, register, student, unpack, unwritten,
                               unwritten_verdict)
from dlcourse.contracts import contract

from .forms import attempt_form, form_of
from . import leaks  # noqa: F401  the suites' heads at every class of positions, and longer sequences
from . import families  # noqa: F401  the same fault at each place in turn, judged as one part (after leaks)
from .sampling import (ALPHA, DISTINCT, distinct_share, ks_distance, ks_threshold, moved_copy, normal_cdf, reflected,
                       serially_correlated)
from .suites import FAMILIES, SUITES, MutantHead


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


def probe_input(p, T=8, seed=None):
    """The x a head check is run on at position p: (4, T, 32), from its own generator (`seed`: a twin's)."""
    g = torch.Generator().manual_seed((X_SEED + p + (1000 * T if T != 8 else 0)) if seed is None else seed)
    return torch.randn(4, T, 32, generator=g)


def length_at(p) -> int:
    """The sequence length a head check is tried on at position p: the notebook's 8, or longer for a
    position the notebook's sequences do not have."""
    return 8 if p < 8 else T_LONG


def _crash_hint(text: str) -> str:
    """What to know about a crash, from its kind alone: a hidden test never reads the message
    (framework.shown_error), so it names no cause it has not measured: only a kind that has one cause
    (NotImplementedError from the stub, InputChanged measured by the grader) says it; others say what the
    hidden test gives the check that the notebook does not."""
    kind = text[len("crashed: "):].split(":", 1)[0] if text.startswith("crashed: ") else text.split(":", 1)[0]
    if kind == "NotImplementedError":
        return "the answer cell is not filled in yet"
    if kind == "InputChanged":
        return ("your check changes its caller's tensor in place (the notebook's own x would change too): "
                "perturb a copy, x.clone()")
    if kind == "AttributeError":
        return "the hidden test's heads answer head(x) and head.A only"
    if kind == "IndexError":
        return "the hidden test's tensors have other sizes than the notebook's (longer sequences among them)"
    if kind in ("RuntimeError", "TypeError"):
        return (f"a hidden test does not show the {kind}'s message: run your check on the notebook's own head "
                "to read it. The hidden test gives your check float32 x without requires_grad, of other sizes "
                "than the notebook's, and float32 heads among others, which refuse x of another dtype, as the "
                "notebook's head does")
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


def _joined(case) -> bool:
    """Whether `case` joined a family after its first case (families.py): such a case meets a twin only when
    its family's twin is drawn from it."""
    return bool(case.family) and case.family != case.name


class Examplar(Check):
    """A student's check run on every case of its suite, and on a twin of each drawn for the submission
    (`twins`: the case's construction from other random numbers, with inputs x of its own): a wheat
    counts as accepted, a chaff as caught, only when the check does so on both. A family of chaffs
    (families.py) is one part, caught when each of its cases is; it meets the twin of its first case and
    the twin of one other case drawn for the submission."""
    suite = ""
    function = ""
    params: tuple = (None,)
    label = ""                 # the name of the parameter in messages ("t", "i")
    thing, plural = "head", "heads"

    def arguments(self, obj, p, x_seed=None):
        raise NotImplementedError

    def twins(self, ctx) -> list:
        """[(case, seed of its twin, seed of the twin's inputs)], in an order of this submission's own."""
        rng = self.fresh(ctx, "twins")
        suite = SUITES[self.suite]
        drawn = [(case, rng.getrandbits(31), rng.getrandbits(31)) for case in suite if not _joined(case)]
        for family in dict.fromkeys(case.family for case in suite if _joined(case)):
            joined = [case for case in suite if case.family == family and _joined(case)]
            drawn.append((joined[rng.randrange(len(joined))], rng.getrandbits(31), rng.getrandbits(31)))
        rng.shuffle(drawn)
        return drawn

    def params_of(self, case) -> tuple:
        """The positions a case is tried at: its own (a family's case whose fault one position shows), or the
        check's."""
        return tuple(case.params) or self.params

    def _run(self, fn, obj, case, x_seed=None) -> list[str]:
        # the check's own randomness is reproducible: the kernel's seed is set before each call
        return [outcome(fn, *self.arguments(obj, p, x_seed), seed=CALL_SEED + (p or 0)) for p in self.params_of(case)]

    def probe(self, ns, ctx):
        fn = student(ns, self.function)
        served = dict(ctx.suite(self.suite))
        cases = {token: self._run(fn, served[token], case) for token, case in ctx.cases(self.suite)}
        twins = {case.name: self._run(fn, case.build(seed), case, x_seed) for case, seed, x_seed in self.twins(ctx)}
        return {"cases": cases, "twins": twins}

    def _outs(self, outs, case):
        ok = isinstance(outs, list) and len(outs) == len(self.params_of(case)) and all(isinstance(o, str) for o in outs)
        return outs if ok else None

    def judge(self, data, ctx):
        verdict = Verdict()
        # served in a fresh shuffle each grading; judged and told in the suite's own order, so one submission's
        # feedback reads the same every time (and a long one is cut at the same place)
        order = {c.name: n for n, c in enumerate(SUITES[self.suite])}
        cases = sorted(ctx.cases(self.suite), key=lambda tc: order.get(tc[1].name, len(order)))
        rejected, chaffs = [], []
        fixed = data.get("cases") if isinstance(data, dict) and isinstance(data.get("cases"), dict) else {}
        twins = data.get("twins") if isinstance(data, dict) and isinstance(data.get("twins"), dict) else {}
        for token, case in cases:
            outs, twin = self._outs(fixed.get(token), case), self._outs(twins.get(case.name), case)
            right = (lambda o: all(x == "returned" for x in o)) if case.kind == "wheat" else \
                (lambda o: any(x.startswith("assertion") for x in o))
            # right on the case: the twin decides (the same kind, other numbers); a family's case whose twin
            # was not drawn (the probe ran none) is decided by the case
            if outs is not None and right(outs) and not (_joined(case) and case.name not in twins):
                outs = twin
            if case.kind == "wheat":
                if outs is None:
                    rejected.append((case, "gave no result", ""))
                elif any(o != "returned" for o in outs):
                    what, hint = _what_happened(list(zip(self.params_of(case), outs)), self.label)
                    rejected.append((case, what, hint))
                else:
                    verdict.add(f"accepts {case.description}", True, weight=0)
            else:
                chaffs.append((case, outs))
        if rejected:
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
        parts: dict[str, list] = {}             # a part: a chaff, or a family of them (in the suite's order)
        for case, outs in chaffs:
            parts.setdefault(case.family or case.name, []).append((case, outs))
        if chaffs and all(outs is not None and all(o == "returned" for o in outs) for _, outs in chaffs):
            verdict.add(f"catches broken {self.plural}", False,
                        f"your check returned quietly on every broken {self.thing} ({len(chaffs)} of them): does it "
                        "assert anything? A comparison on its own line or a print raises nothing: write "
                        "`assert condition, message` for each part of the spec", weight=len(parts))
            return verdict
        for key, members in parts.items():
            first = members[0][0]
            family = FAMILIES.get(f"{self.suite}/{key}") if first.family else None
            name = f"catches {family or first.description}"
            missed = [(case, outs) for case, outs in members
                      if outs is None or not any(o.startswith("assertion") for o in outs)]
            if not missed:
                verdict.add(name, True)
                continue
            case, outs = missed[0]
            # a family names the case it missed first, and how many more
            it = "it" if family is None else case.description + (
                f" (and on {len(missed) - 1} more of the family's {len(members)} cases)" if len(missed) > 1 else "")
            if outs is None:
                verdict.add(name, False, "no result reached the grader" + ("" if family is None else f" on {it}"))
            elif any(o.startswith("crashed") for o in outs):
                what, hint = _what_happened(list(zip(self.params_of(case), outs)), self.label)
                verdict.add(name, False, f"your check {what} on {it}. A crash is not a catch: when the property "
                                         "fails, raise AssertionError (an assert with a message)"
                                         + (f"; {hint}" if hint else ""))
            else:
                verdict.add(name, False, f"your check returns quietly on {it}" + (f": {case.hint}" if case.hint else ""))
        return verdict


@register
class CheckSimplex(Examplar):
    grade_id = "check_simplex_hidden"
    points = 3
    suite, function, thing, plural = "simplex", "check_simplex", "matrix", "matrices"

    def arguments(self, A, p, x_seed=None):
        return (A.clone(),)


@register
class CheckPerturbation(Examplar):
    grade_id = "check_perturbation_hidden"
    points = 3
    suite, function, label = "causal_perturbation", "check_causality_perturbation", "t"
    params = (2, 5, 7, 9)              # t = 9 on 12 tokens: past every position of the notebook's sequences

    def arguments(self, head, t, x_seed=None):
        return head, probe_input(t, length_at(t), x_seed), t


@register
class CheckGradient(Examplar):
    grade_id = "check_gradient_hidden"
    points = 3
    suite, function, label = "causal_gradient", "check_causality_gradient", "i"
    # i = 5 < T - 2: a leak from the last position only is two steps away; i = 9 on 12 tokens: past every
    # position of the notebook's sequences
    params = (0, 3, 5, 9)

    def arguments(self, head, i, x_seed=None):
        return head, probe_input(10 + i, length_at(i), x_seed), i


# ---- the scale check ------------------------------------------------------------------------
# scale_table(d_heads, seed) hands back what it sampled: each row keeps its q and k, the (B, T, d_k) =
# (4, 8, d_k) tensors drawn for that width, beside the eight statistics. The judge tests the samples and
# recomputes every statistic from them (in float64):
#   * the samples: the entries of q, of k, of (q + k)/√2 and of (q - k)/√2 are N(0, 1) draws (a
#     Kolmogorov-Smirnov test below sampling.ks_threshold: a correct sampler fails one with probability at
#     most sampling.ALPHA = 1e-8; 4 series × 4 tables: at most 1.6e-7 per grading; the last two series fail
#     when k is q, or -q), and at least 99% of the entries are distinct numbers (one sequence drawn and
#     repeated is not four);
#   * the draws are independent (sampling.reflected, sampling.serially_correlated): the magnitudes |x| of q
#     and k together repeat no more than float32 rounding allows (at most sampling.ALPHA a table for a
#     correct sampler: entries paired with their reflections, reused with a sign pattern, k = -q permuted
#     are refused), and the entries of q, and of k, in their order, do not correlate with their neighbours
#     or with the entries half the tensor away (about 2e-9 a bound); and k is not q moved by one map that keeps
#     the law (sampling.moved_copy: q's entries shuffled, flipped or rolled and scaled by 1.0000001, or shifted
#     in their quantiles, k = Φ⁻¹((Φ(q) + a) mod 1), in any order: the two-sample distance between k's uniforms
#     Φ(k) and q's rotated or reflected by a is near 0, where independent draws keep it far from 0; tested on
#     the table's q and k and on each row's, a row may move its own way: at most sampling.ALPHA a table for a
#     correct sampler, over every shift of the grid). In all at most about 3e-7 per grading;
#   * every statistic is the one of the returned q and k, to float32 rounding: the stds to 1e-4 relative
#     (unbiased or biased), the max weights to 1e-4, each one-hot share exactly, up to rows whose largest
#     weight lies within 5e-5 of 0.9995 (float32 rounding moves a weight by about 1e-5 at most here: such a
#     row may count either way);
#   * the same seed gives the same table, another seed other samples;
#   * the max weights and one-hot shares of a table of one wide head (d_k = 2048, ScaleTable.WIDE) are those of
#     its raw scores, which spread over hundreds: a softmax computed as exp(s - c) with c not the row's max
#     overflows there (its q and k are reduced to their raw scores by the probe, the samples not judged).
# Statistics that are not those of the samples (typed in, the formula plus noise) earn no credit for the
# samples or the seed, and samples that are not N(0, 1) draws (too few, repeated, another law) earn none for
# the statistics: either way nothing was measured.

SCALE_KEYS = ("d_k", "raw_std", "sqrt_d_k", "scaled_std", "max_weight_raw", "max_weight_scaled",
              "one_hot_raw", "one_hot_scaled")
SAMPLE_KEYS = ("q", "k")
# statistics of the weights: one that is NaN or inf (a softmax that overflowed) is a wrong value of its part,
# judged there, not a table of the wrong form
WEIGHT_KEYS = ("max_weight_raw", "max_weight_scaled", "one_hot_raw", "one_hot_scaled")
B_SCALE, T_SCALE = 4, 8
ONE_HOT = 0.9995
ONE_HOT_BAND = 5e-5      # rows whose largest weight is this close to ONE_HOT may count either way
STD_RTOL, WEIGHT_ATOL = 1e-4, 1e-4


def scale_scores(q, k, divide=None, dim=-1):
    """The row maxima of softmax(q kᵀ / divide) (default sqrt(d_k); 1: the raw scores), in float64:
    ((B, T, T) scores, (B, T) each row's largest weight). `dim`: the axis the softmax runs over."""
    q, k = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (q, k))
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if divide is None else divide)   # (B, T, T)
    return scores, F.softmax(scores, dim=dim).amax(dim=-1)                                       # (B, T)


def _stds(scores) -> tuple[float, float]:
    return scores.std().item(), scores.std(correction=0).item()


def _close_std(value, scores) -> bool:
    return any(abs(value - s) <= STD_RTOL * s for s in _stds(scores))


def _share_fits(value, top) -> bool:
    low = (top >= ONE_HOT + ONE_HOT_BAND).double().mean().item()
    high = (top >= ONE_HOT - ONE_HOT_BAND).double().mean().item()
    return low - 1e-9 <= value <= high + 1e-9


def exp_overflow_top(scores: torch.Tensor, dim=-1) -> torch.Tensor:
    """Each row's largest weight of a softmax written as exp(s) / sum exp(s), no max subtracted, in float32
    (the answer's dtype): a score above log(float32 max) = 88.72 makes exp inf and its row NaN (inf / inf)."""
    e = scores.float().exp()
    return (e / e.sum(dim=dim, keepdim=True)).amax(dim=-1).double()


# offsets other than the row's max that a softmax written by hand may subtract before exp: each is right in
# exact arithmetic, and in float32 exp(s - c) overflows (inf / inf: NaN) where a score is more than 88.72 above c,
# or underflows to 0 for every key of a row (0 / 0) where all its scores are more than 103.97 below c
OFFSETS = {
    "mean": lambda s: s.mean(dim=-1, keepdim=True),
    "diagonal": lambda s: s.diagonal(dim1=-2, dim2=-1)[..., None],
    "constant": lambda s: torch.full_like(s[..., :1], 80.0),
    "half_max": lambda s: s.amax(dim=-1, keepdim=True) / 2,
}


def exp_offset_tops(scores: torch.Tensor, dim=-1) -> list[torch.Tensor]:
    """Each row's largest weight of a softmax written as exp(s - c) / sum exp(s - c) in float32, for each c of
    OFFSETS (computed from the float32 scores, as an answer computes it)."""
    s = scores.float()
    tops = []
    for offset in OFFSETS.values():
        e = (s - offset(s)).exp()
        tops.append((e / e.sum(dim=dim, keepdim=True)).amax(dim=-1).double())
    return tops


# other computations a wrong table may have made: (what it is, divide (None: sqrt(d_k)), softmax axis, and
# "exp32" for a softmax computed as exp(s) / sum exp(s) in float32, without the row's max subtracted, or
# "offset32" for one computed as exp(s - c) / sum exp(s - c) with some c of OFFSETS, not the row's max)
RAW_VARIANTS = [
    ("the softmax runs over the queries (dim=-2); each row is normalised over its keys, dim=-1", 1, -2),
    ("the raw scores are large (std sqrt(d_k), 22.6 at d_k = 512: some pass 88.7) and exp(s) overflows to inf in "
     "float32 (exp(89) is inf), so a softmax written as exp(s) / sum exp(s) gives NaN rows: subtract each row's "
     "max before exp, or use F.softmax(scores, dim=-1)", 1, -1, "exp32"),
    ("exp(s - c) is computed with c other than the row's max (its mean, the diagonal score, a constant, half the "
     "max): at d_k = 2048 the raw scores spread over hundreds (std 45), some score is more than 88.7 above c and "
     "exp overflows to inf in float32 (NaN rows): subtract each row's max before exp, or use "
     "F.softmax(scores, dim=-1)", 1, -1, "offset32"),
]
SCALED_VARIANTS = [
    ("the scores are divided by d_k, not sqrt(d_k): the rows are too flat (too low)", "d_k", -1),
    ("the scores are not divided by sqrt(d_k) at all: the rows are as peaked as the raw ones (too peaked)", 1, -1),
    ("the scores are divided by a constant, the model width's root sqrt(32), not by sqrt(d_k)", math.sqrt(32), -1),
    ("the softmax runs over the queries (dim=-2); each row is normalised over its keys, dim=-1", None, -2),
]


# the cause raw_std's feedback can name, only where measured: raw_std is the std of the scaled scores on every row
RAW_STD_HINTS = {"raw_std_of_scaled": "yours is the std of the scaled scores"}
# the causes scaled_std's feedback can name, each only where measured: scaled_std / raw_std is that cause's
# ratio on every row of every table
SCALED_STD_HINTS = {
    "std_by_d_k": "scaled_std / raw_std is 1/d_k: the scores are divided by d_k; the lemma's scale is sqrt(d_k)",
    "std_unscaled": "scaled_std equals raw_std: the scaled scores are not divided by sqrt(d_k) at all",
    "std_by_model_width": ("scaled_std / raw_std is 1/sqrt(32) at every width: the scores are divided by the model "
                           "width's root, but the scale must follow the head: sqrt(d_k)"),
    "std_by_constant": ("scaled_std / raw_std is the same at every width: the scores are divided by a constant, but "
                        "the scale must follow the head: sqrt(d_k)"),
}


def _variant_tops(row, divide, dim, weights="softmax") -> list[torch.Tensor]:
    """Each row's largest weight of the variant, one tensor (B, T) per way it may be computed (the offsets of
    "offset32"). A wide row (no q and k: `wide_row`) has its raw scores."""
    d_k = int(row["d_k"])
    divide = d_k if divide == "d_k" else divide
    if "q" in row:
        scores, top = scale_scores(row["q"], row["k"], divide, dim)
    else:
        scores = row["_raw"] / (math.sqrt(d_k) if divide is None else divide)
        top = F.softmax(scores, dim=dim).amax(dim=-1)
    if weights == "exp32":
        return [exp_overflow_top(scores, dim)]
    return exp_offset_tops(scores, dim) if weights == "offset32" else [top]


def _same_weight(value, expected) -> bool:
    """A largest weight, to float32 rounding; NaN where the computation it is compared with gives NaN."""
    if math.isnan(expected) or math.isnan(value):
        return math.isnan(expected) and math.isnan(value)
    return abs(value - expected) <= WEIGHT_ATOL


def _explained(rows, which, fits) -> str:
    """The hint of the first variant that explains the statistic `which` on every row (a variant computed in
    several ways explains it when one of its ways does, on every row)."""
    for what, *computed in RAW_VARIANTS if which == "raw" else SCALED_VARIANTS:
        ways = [_variant_tops(row, *computed) for row in rows]
        if any(all(fits(row, tops[way]) for row, tops in zip(rows, ways)) for way in range(len(ways[0]))):
            return what
    return ""


def _max_problem(rows) -> str | None:
    for which in ("raw", "scaled"):
        key = f"max_weight_{which}"
        fits = lambda row, top: _same_weight(row[key], top.max().item())              # noqa: E731
        if all(fits(row, row[f"_top_{which}"]) for row in rows):
            continue
        hint = _explained(rows, which, fits) or (
            "the raw weights come from the softmax of q kᵀ itself, unscaled and unmasked" if which == "raw"
            else "the scaled weights come from the softmax of q kᵀ / sqrt(d_k)")
        return (f"{key} is not the largest softmax weight of the row's scores (the largest over all B·T rows, "
                f"each softmax over its keys): {hint}")
    return None


def _one_hot_problem(rows) -> str | None:
    for which in ("raw", "scaled"):
        key = f"one_hot_{which}"
        fits = lambda row, top: _share_fits(row[key], top)           # noqa: E731
        if all(fits(row, row[f"_top_{which}"]) for row in rows):
            continue
        hint = _explained(rows, which, fits) or (
            f"count the rows whose largest weight is >= {ONE_HOT} (softmax over each row's keys, dim=-1) and "
            "divide by the number of rows, B·T")
        return f"{key} is not the share of the B·T rows of the row's scores that are one-hot: {hint}"
    return None


def _samples_problem(tables) -> str | None:
    """Why the q and k of the tables are not independent N(0, 1) draws (None if they are)."""
    for table in tables:
        if any(np.array_equal(row["q"], row["k"]) or np.array_equal(row["q"], -row["k"]) for row in table):
            return ("q and k are not independent draws: k is the same tensor as q (or -q). Draw q, then k, from "
                    "one generator")
        q = np.concatenate([row["q"].ravel() for row in table])
        k = np.concatenate([row["k"].ravel() for row in table])
        share = distinct_share(np.concatenate([q, k]))
        if share < DISTINCT:
            return ("too few of the entries of q and k are distinct numbers: draw every sequence, "
                    "B·T·d_k fresh numbers for q and as many for k, none repeated")
        if reflected(np.concatenate([q, k])):
            return ("q and k are not independent draws: too many of their entries are the negatives of others "
                    "(a draw paired with its reflection, reused with a sign pattern, or k made from -q): draw "
                    "q, then k, from one generator, every number fresh")
        if serially_correlated(q) or serially_correlated(k):
            return ("the entries of q or k are not independent draws: each follows from the one before it (or "
                    "from one half the tensor away): draw them with torch.randn, every number fresh")
        # the table's q and k, and each row's (a row may have moved its own way): ALPHA in all
        if any(moved_copy(a, b, ALPHA / (len(table) + 1))
               for a, b in [(q, k)] + [(row["q"], row["k"]) for row in table]):
            return (f"q and k are not independent draws: {SAMPLE_HINTS['k_moved_from_q']} (shuffled, flipped or "
                    "rolled, and scaled by about 1 or shifted in their quantiles, Φ⁻¹((Φ(q) + a) mod 1)): the values "
                    "of k match those of q far more closely than two independent samples' do. Draw q, then k, from "
                    "one generator, every number fresh")
        for series, what in ((q, "q"), (k, "k"), ((q + k) / math.sqrt(2), "q + k"),
                             ((q - k) / math.sqrt(2), "q - k")):
            if ks_distance(series, normal_cdf) > ks_threshold(series.size):
                if what in ("q + k", "q - k"):
                    return _dependence_problem(what)
                return _law_problem(series, what)
    return None


# What the feedback says when samples fail a law test: a cause only where it was measured (the samples pass
# the test of the law that cause gives), else the property that failed.
SAMPLE_HINTS = {"normal_other_scale": "follow a normal law, but not N(0, 1)",
                # measured by sampling.moved_copy: k's uniforms are q's rotated or reflected, at a shift it found
                "k_moved_from_q": "k's numbers are q's moved by one map"}


def _law_problem(series: np.ndarray, what: str) -> str:
    """Why entries that fail the test of N(0, 1) are not standard normal draws: when they pass the test of a
    normal law with their own mean and variance (no stricter than with known ones), the law is normal and its
    mean or variance is what is wrong; otherwise the law is not normal."""
    mean, std = float(series.mean()), float(series.std())
    if std > 0 and ks_distance((series - mean) / std, normal_cdf) <= ks_threshold(series.size):
        # what is off, in words: no number measured on the answer's samples is shown (its values may carry
        # what it was given)
        off = [part for part, wrong in (("mean is not 0", abs(mean) > 0.05), ("variance is not 1", abs(std * std - 1) > 0.05))
               if wrong] or ["mean or variance is not that of N(0, 1)"]
        return (f"the entries of {what} {SAMPLE_HINTS['normal_other_scale']}: their {' and their '.join(off)}, "
                "where standard normal draws (torch.randn, as drawn) have mean 0 and variance 1")
    return (f"the entries of {what} do not follow a normal law (a Kolmogorov-Smirnov test of their standardised "
            "values): draw them with torch.randn from a generator seeded with `seed`")


def _dependence_problem(what: str) -> str:
    """Why q and k, each N(0, 1), are not independent: (q ± k)/√2 is not N(0, 1). (k equal to q is found before:
    the whole tensor by `_samples_problem`, a part of it as repeated numbers.)"""
    return (f"q and k are not independent draws: (q {what[2]} k)/√2 is not N(0, 1), so they are correlated. Draw "
            "q, then k, from one generator, every number fresh")


def _row(value: dict) -> dict:
    row = {key: float(_number(value[key])) for key in SCALE_KEYS}
    row["q"], row["k"] = (np.asarray(value[key], dtype=np.float64) for key in SAMPLE_KEYS)
    row["_raw"], row["_top_raw"] = scale_scores(row["q"], row["k"], 1)
    row["_scaled"], row["_top_scaled"] = scale_scores(row["q"], row["k"])
    return row


@register
class ScaleTable(Check):
    grade_id = "scale_table_hidden"
    points = 4
    # the causes its feedback can name: each shown only where measured (`_explained`: the variant's statistic
    # on every row; raw_std and `_scaled_std_hint`: the stds on every row; `_law_problem`, `_dependence_problem`)
    HINTS = {**SAMPLE_HINTS, "softmax_over_queries": RAW_VARIANTS[0][0], "max_not_subtracted": RAW_VARIANTS[1][0],
             "offset_not_max": RAW_VARIANTS[2][0],
             "scores_by_d_k": SCALED_VARIANTS[0][0], "scores_unscaled": SCALED_VARIANTS[1][0],
             "scores_by_model_width": SCALED_VARIANTS[2][0], **RAW_STD_HINTS, **SCALED_STD_HINTS}
    # the notebook prints 16, 64, 256; the fixed cases go below and beyond (at 512 most raw rows are one-hot).
    # Every table sends its q and k to the grader: 4 tables of these widths are 181,995 values with the twins at
    # their widest, 182,532 with the two wide tables' raw scores (WIDE), within the 200,000 one probe may gather
    # (autograder/runtime/plain.py MAX_ITEMS; measured by tests/test_step04_suites.py)
    D_HEADS = [8, 32, 128, 512]
    # the fixed seeds' tables (drawn as the notebook's recipe draws) each hold a row at d_k = 512 that is
    # one-hot when the scores are divided by sqrt(32), the model width, instead of sqrt(d_k): that mistake
    # shows in the one-hot shares on the fixed tables whatever the twins draw (41% of tables do).
    # The second seed's d_k = 512 row also reaches float32 exp's overflow: one raw score, 97.6, is above
    # log(float32 max) = 88.72 (a 3.9-sigma score at std sqrt(512) = 22.6: 41 of the seeds 1000 to 3999 have
    # one; 1068 is the first after 1008, and it keeps the sqrt(32) row), in a row that is one-hot. So a softmax
    # written as exp(s) / sum exp(s), without the row's max subtracted, gives that row NaN and loses the raw max
    # weight and the one-hot share on this table whatever the twins draw (tests/test_step04_suites.py). An
    # answer that draws other samples than the recipe's meets the overflow only where its own draws reach it
    # (about 1.4% of d_k = 512 tables, under 0.7% of the twins' widest). A fixed table of its own would not fit:
    # one more d_k = 512 table is 32,768 values, about 214,800 in all with the twins at their widest
    SEEDS = [1008, 1068]
    # each fixed table has a twin of this submission's own: widths in these ranges (the same order, the
    # largest mostly one-hot too) and a fresh seed
    TWIN_WIDTHS = [(4, 12), (20, 48), (80, 160), (300, 480)]
    AGAIN = ([8, 32], 1002)                 # called twice: the same seed must give the same table
    # A table of one wide head, d_k = 2048, judged on its max weights and one-hot shares: its raw scores (std 45)
    # spread over hundreds, where a softmax written as exp(s - c) / sum exp(s - c) with c other than the row's
    # max overflows in float32 (a score more than 88.72 above c: inf / inf, NaN). Its seed's table (drawn as the
    # notebook's recipe draws) has a raw score of 204.1, so that every c of OFFSETS (the row's mean, the diagonal
    # score, 80, half the row's max) and c = 0 give a NaN row (20 of the seeds 2000 to 3999 do; this one has the
    # largest score, tests/test_step04_suites.py); F.softmax, or exp of the scores minus each row's max, is right
    # there. The table's q and k (131,072 numbers: one call may return 200,000, but one probe could not send
    # them with the other tables') are turned into their raw scores q kᵀ in float64 by the probe
    # (`wide_scores`), before they are sent; the table has a twin of the same width and a fresh seed.
    WIDE = (2048, 3670)
    PARTS = {                               # key: (what the feedback calls it, weight)
        "form": ("one row per d_k: the eight statistics, and q and k of shape (B, T, d_k)", 1),
        "sqrt": ("sqrt_d_k is sqrt(d_k)", 0.5),
        "samples": ("q and k are samples with independent N(0, 1) entries", 1),
        "raw_std": ("raw_std is the std of q kᵀ", 1),
        "scaled": ("scaled_std = raw_std / sqrt(d_k)", 0.5),
        "max": ("the max weights are those of the raw and the scaled scores", 1.5),
        "one_hot": ("the one-hot shares are those of the raw and the scaled scores", 1.5),
        "seeded": ("the same seed gives the same table, another seed others", 1),
    }

    def cases(self, ctx):
        """The fixed tables (D_HEADS, seed), then their twins."""
        rng = self.fresh(ctx, "twins")
        twins = [([rng.randint(low, high) for low, high in self.TWIN_WIDTHS], rng.randrange(2 ** 31))
                 for _ in self.SEEDS]
        return [(list(self.D_HEADS), seed) for seed in self.SEEDS] + twins

    def wide_cases(self, ctx):
        """The wide table's (d_heads, seed), then its twin's."""
        width, seed = self.WIDE
        return [([width], seed), ([width], self.fresh(ctx, "wide").randrange(2 ** 31))]

    def probe(self, ns, ctx):
        fn = student(ns, "scale_table")
        d_heads, seed = self.AGAIN
        return {"tables": [attempt(fn, list(d_heads), seed) for d_heads, seed in self.cases(ctx)],
                "again": [attempt(fn, list(d_heads), seed) for _ in range(2)],
                "wide": [attempt(lambda d, s: wide_scores(fn(d, s)), list(d_heads), seed)
                         for d_heads, seed in self.wide_cases(ctx)]}

    def judge(self, data, ctx):
        reason = unwritten(data["tables"])
        if reason:
            return unwritten_verdict(reason)
        verdict = Verdict()

        def add(key, ok, message=""):
            name, weight = self.PARTS[key]
            verdict.add(name, ok, message, weight)

        tables, problem = [], None
        for (d_heads, _), entry in zip(self.cases(ctx), data["tables"]):
            value, why = unpack(entry)
            problem = why or _table_problem(value, d_heads)
            if problem:
                break
            tables.append([_row(row) for row in value])
        if problem:
            add("form", False, problem)
            for key in list(self.PARTS)[1:]:
                add(key, False, "needs a table of the right form first")
            return verdict
        add("form", True)
        rows = [row for table in tables for row in table]
        wide, wide_problem = [], None
        for (d_heads, _), entry in zip(self.wide_cases(ctx), data.get("wide") or [None, None]):
            value, why = unpack(entry) if entry is not None else (None, "the wide table was not made")
            wide_problem = why or _wide_problem(value, d_heads[0])
            if wide_problem:
                break
            wide.append(wide_row(value[0]))
        add("sqrt", all(abs(r["sqrt_d_k"] - math.sqrt(r["d_k"])) <= 1e-6 * math.sqrt(r["d_k"]) for r in rows),
            "sqrt_d_k should be math.sqrt(d_k) exactly")

        samples = _samples_problem(tables)
        stats = {
            "raw_std": None if all(_close_std(r["raw_std"], r["_raw"]) for r in rows) else (
                "raw_std should be the std of all B·T·T raw scores q kᵀ of the row's q and k, unmasked and "
                "unscaled" + (f"; {RAW_STD_HINTS['raw_std_of_scaled']}" if all(
                    _close_std(r["raw_std"], r["_scaled"]) for r in rows) else "")),
            "scaled": None if all(_close_std(r["scaled_std"], r["_scaled"]) for r in rows) else _scaled_std_hint(rows),
            "max": _wide_said(wide_problem) or _max_problem(rows + wide),
            "one_hot": _wide_said(wide_problem) or _one_hot_problem(rows + wide),
        }
        measured = stats["raw_std"] is None
        if samples:
            add("samples", False, samples)
        elif not measured:
            add("samples", False, "not credited: the table's numbers are not measured from its q and k (see "
                                  "raw_std), so the samples measured nothing")
        else:
            add("samples", True)
        for key in ("raw_std", "scaled", "max", "one_hot"):
            if samples and stats[key] is None:
                add(key, False, "not credited: q and k are not samples with independent N(0, 1) entries (see "
                                "there), so the table measured nothing the spec asks for")
            else:
                add(key, stats[key] is None, stats[key] or "")

        if samples or not measured:
            add("seeded", False, "checked once q and k are samples and the table is measured from them")
            return verdict
        (first, why), (again, why_again) = map(unpack, data["again"])
        same = why is None and why_again is None and all(_table_problem(t, self.AGAIN[0]) is None
                                                         for t in (first, again)) and all(
            all(_same_number(float(_number(a[key])), float(_number(r[key]))) for key in SCALE_KEYS)
            and all(np.array_equal(np.asarray(a[key], dtype=np.float64), np.asarray(r[key], dtype=np.float64))
                    for key in SAMPLE_KEYS)
            for a, r in zip(again, first))
        differ = not all(np.array_equal(a["q"], b["q"]) for a, b in zip(tables[0], tables[1]))
        add("seeded", same and differ,
            "the same seed must give the same table (the same q and k): seed a torch.Generator (or "
            "torch.manual_seed) with `seed` before sampling" if not same else
            "another seed gave the same q: draw q and k from a generator seeded with `seed`")
        return verdict


def wide_scores(value):
    """A table of one width as scale_table returned it, its row's q and k replaced by their raw scores q kᵀ,
    in float64 ("scores", (B, T, T)); a table not of that form, as a sentence of what is wrong."""
    if not isinstance(value, (list, tuple)) or len(value) != 1 or not isinstance(value[0], dict):
        return "scale_table(d_heads, seed) should return a list with one dict per d_k in d_heads"
    row = dict(value[0])
    try:
        q, k = (torch.as_tensor(np.asarray(_detached(row.pop(key)), dtype=np.float64)) for key in SAMPLE_KEYS)
    except (KeyError, TypeError, ValueError, RuntimeError):
        return "each row should hold q and k, the tensors of shape (B, T, d_k) drawn for its d_k"
    if q.dim() != 3 or q.shape != k.shape or q.shape[:2] != (B_SCALE, T_SCALE):
        return "row['q'] and row['k'] should be the tensors of shape (B, T, d_k) = (4, 8, d_k) drawn for this d_k"
    row["scores"] = (q @ k.transpose(-2, -1)).numpy()                                  # (B, T, T)
    return [row]


def _detached(x):
    return x.detach() if isinstance(x, torch.Tensor) else x


def _wide_problem(value, d_k) -> str | None:
    """What is wrong with a wide table `wide_scores` made (None: a row of numbers and its raw scores)."""
    if isinstance(value, str):
        return value
    row = value[0]
    missing = [key for key in SCALE_KEYS if key not in row]
    if missing:
        return f"a row lacks the keys {missing}; the keys are {list(SCALE_KEYS + SAMPLE_KEYS)}"
    for key in SCALE_KEYS:
        v = _number(row[key])
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"row[{key!r}] should be a number (use .item() on a one-element tensor)"
    if _number(row["d_k"]) != d_k or np.shape(row["scores"]) != (B_SCALE, T_SCALE, T_SCALE):
        return f"the row of d_k = {d_k} should hold q and k of shape (4, 8, {d_k})"
    if not np.isfinite(np.asarray(row["scores"], dtype=np.float64)).all():
        return "row['q'] or row['k'] holds NaN or infinite values"
    return None


def wide_row(value: dict) -> dict:
    """A wide table's row for the weights' parts: its statistics, its raw scores and each row's largest weight
    (no q and k: `_variant_tops` works from the raw scores)."""
    row = {key: float(_number(value[key])) for key in SCALE_KEYS}
    row["_raw"] = torch.as_tensor(np.asarray(value["scores"], dtype=np.float64))            # (B, T, T)
    row["_scaled"] = row["_raw"] / math.sqrt(row["d_k"])
    row["_top_raw"], row["_top_scaled"] = (F.softmax(row[key], dim=-1).amax(dim=-1) for key in ("_raw", "_scaled"))
    return row


def _wide_said(problem) -> str | None:
    return problem and f"the table of a wide head (d_k = 2048): {problem}"


def _scaled_std_hint(rows) -> str:
    ratios = [(r["d_k"], r["scaled_std"] / r["raw_std"]) for r in rows if r["raw_std"] > 0]
    if ratios and all(abs(q * d - 1) <= 1e-4 for d, q in ratios):
        return SCALED_STD_HINTS["std_by_d_k"]
    if ratios and all(abs(q - 1) <= 1e-4 for _, q in ratios):
        return SCALED_STD_HINTS["std_unscaled"]
    if ratios and all(abs(q * math.sqrt(32) - 1) <= 1e-4 for _, q in ratios):
        return SCALED_STD_HINTS["std_by_model_width"]
    if ratios and max(q for _, q in ratios) - min(q for _, q in ratios) <= 1e-4 * max(q for _, q in ratios):
        return SCALED_STD_HINTS["std_by_constant"]
    return ("scaled_std should be the std of the same scores divided by sqrt(d_k), which is raw_std / sqrt(d_k), "
            "and yours is not")


def _same_number(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _number(v):
    if isinstance(v, np.ndarray) and v.size == 1:
        return v.item()
    return v


def _table_problem(value, d_heads):
    if not isinstance(value, (list, tuple)) or len(value) != len(d_heads):
        return "scale_table(d_heads, seed) should return a list with one dict per d_k in d_heads"
    for row, d_k in zip(value, d_heads):
        if not isinstance(row, dict):
            return "each row of the table should be a dict"
        missing = [key for key in SCALE_KEYS + SAMPLE_KEYS if key not in row]
        if missing:
            return f"a row lacks the keys {missing}; the keys are {list(SCALE_KEYS + SAMPLE_KEYS)}"
        for key in SCALE_KEYS:
            v = _number(row[key])
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return f"row[{key!r}] should be a number (use .item() on a one-element tensor)"
            if not math.isfinite(v) and key not in WEIGHT_KEYS:
                return (f"row[{key!r}] is {v}, where every statistic of the table is finite: the table is about "
                        "the unmasked scores q kᵀ")
        if _number(row["d_k"]) != d_k:
            return "the rows should come in the order of d_heads, each with its own d_k"
        for key in SAMPLE_KEYS:
            try:
                sample = np.asarray(row[key], dtype=np.float64)
            except (TypeError, ValueError):
                return f"row[{key!r}] should be the tensor of shape (B, T, d_k) drawn for this d_k"
            if sample.shape != (B_SCALE, T_SCALE, d_k):
                fewer = sample.size < B_SCALE * T_SCALE * d_k
                return (f"row[{key!r}] should be the tensor of shape (B, T, d_k) = (4, 8, d_k) drawn for this d_k: "
                        "B = 4 sequences of T = 8 tokens" + (" (yours holds fewer numbers: draw all of them)"
                                                             if fewer else ""))
            if not np.isfinite(sample).all():
                return f"row[{key!r}] holds NaN or infinite values"
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

# the causes the feedback can name (name -> its words), each only where measured: the mistake's row sums,
# computed by the judge in the scores' dtype (`row_sums_mistake`), are the answer's on every case and twin
ROW_SUM_HINTS = {
    "future_kept": "these are the row sums with the past zeroed and the future kept: tril keeps j <= i",
    "diagonal_zeroed": ("these are the row sums with the diagonal zeroed too: row i keeps keys j <= i, its own key "
                        "j = i included (tril, not tril(-1))"),
    "softmax_over_queries": ("these are the row sums of a softmax over the queries (dim=-2): each row is normalised "
                             "over its keys, F.softmax(scores, dim=-1)"),
    "future_minus_inf": ("these are the row sums with the future weights set to -inf after the softmax: set them "
                         "to 0 (multiply by the mask, or masked_fill with 0.0)"),
    "renormalised": ("these are the row sums of the kept weights divided by their sum (renormalised): 1, or NaN "
                     "where every kept weight underflows to 0. The kept weights are summed as they are"),
    "max_not_subtracted": ("these are the row sums of a softmax written as exp(s) / sum exp(s): exp(s) overflows "
                           "in float32 for scores in the hundreds (exp(89) is inf). F.softmax subtracts each row's "
                           "max first"),
    "offset_not_max": ("these are the row sums of a softmax written as exp(s - c) / sum exp(s - c) with c other than "
                       "the row's max (its mean, the diagonal score, a constant, half the max): for scores in the "
                       "hundreds some score is more than 88.7 above c and exp overflows in float32. Subtract each "
                       "row's max"),
}
# a mistake computed in several ways (row_sums_mistake's `way`): it is measured when one way gives the answer's
# row sums on every case
ROW_SUM_WAYS = {"offset_not_max": list(OFFSETS)}


def row_sums_mistake(scores: torch.Tensor, mistake: str, way: str | None = None) -> np.ndarray:
    """The solution's row sums on `scores` (in their dtype) with one mistake of ROW_SUM_HINTS (`way`: one of
    ROW_SUM_WAYS[mistake], for a mistake made in several ways)."""
    T = scores.shape[-1]
    ones = torch.ones(T, T, dtype=scores.dtype)
    keep = {"future_kept": torch.triu(ones), "diagonal_zeroed": torch.tril(ones, diagonal=-1)}.get(mistake, torch.tril(ones))
    if mistake == "softmax_over_queries":
        A = F.softmax(scores, dim=-2)
    elif mistake in ("max_not_subtracted", "offset_not_max"):
        e = (scores - OFFSETS[way](scores)).exp() if mistake == "offset_not_max" else scores.exp()
        A = e / e.sum(dim=-1, keepdim=True)
    else:
        A = F.softmax(scores, dim=-1)
    A = A.masked_fill(keep == 0, float("-inf")) if mistake == "future_minus_inf" else A * keep
    if mistake == "renormalised":
        A = A / A.sum(dim=-1, keepdim=True)
    return A.sum(dim=-1).numpy().astype(np.float64)


def _same_row_sums(got, expected: np.ndarray) -> bool:
    """The same shape, NaN and inf in the same places, the finite sums equal to float32 rounding."""
    if got is None or got.shape != expected.shape:
        return False
    if not all(np.array_equal(where(got), where(expected)) for where in (np.isnan, np.isposinf, np.isneginf)):
        return False
    finite = np.isfinite(expected)
    return bool(np.all(np.abs(got[finite] - expected[finite]) <= 1e-5 + 1e-4 * np.abs(expected[finite])))


def _row_sums_of(entry):
    value, why = unpack(entry)
    if why or not isinstance(value, (np.ndarray, list, float, int)):
        return None
    return np.asarray(value, dtype=np.float64)


@register
class MaskAfterSoftmax(Check):
    grade_id = "mask_after_softmax_hidden"
    points = 2
    HINTS = ROW_SUM_HINTS
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
        cases = self.CASES + self.twins(ctx)
        values = [_row_sums_of(entry) for entry in list(data["cases"]) + list(data["twins"])]
        # the mistakes whose row sums are the answer's on every case and twin: the only causes a hint may name
        shown = [name for name in ROW_SUM_HINTS if len(values) == len(cases) and any(all(
            _same_row_sums(got, row_sums_mistake(mask_after_inputs(B, T, seed, scale, getattr(torch, dtype)), name, way))
            for (_, B, T, seed, scale, dtype), got in zip(cases, values)) for way in ROW_SUM_WAYS.get(name, [None]))]
        for case, other, entry, fresh in zip(self.CASES, self.twins(ctx), data["cases"], data["twins"]):
            ok, message = self._case(case, entry)
            if ok:
                ok, message = self._case(other, fresh)
            if not ok and shown and not message.startswith(("raised", "scores of shape")):
                message = "; ".join([message] + [ROW_SUM_HINTS[name] for name in shown])
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
                           f"yours has another shape{hint}")
        # the contract's: float32 softmax and sum, error ~1e-7 per row, 1e-5 far from any real mistake; float64
        # ~1e-16, 1e-12 (float32 precision somewhere in a float64 computation is ~1e-8)
        if np.all(np.abs(got - ref) <= ROW_SUMS.tol(dtype)):
            if form_of(entry):
                return False, form_of(entry)
            return True, ""
        # which property failed; a cause is named by `judge`, only where measured on every case
        if not np.isfinite(got).all():
            hint = ("NaN or inf" + (" for scores in the hundreds" if scale >= 100 else "") + ", where every row "
                    "sum is finite (the kept weights of a softmax, between 0 and 1)")
        elif dtype == "float64" and np.all(np.abs(got - ref) <= 1e-5):
            hint = ("right to float32 precision only: on float64 scores the row sums are right to float64 "
                    "rounding (1e-12)")
        elif T > 1 and np.allclose(got, 1, atol=1e-5):
            hint = ("every row sums to 1, where the weights row i keeps (keys j <= i of a softmax over all T keys) "
                    "sum to less than 1 before the last row")
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
