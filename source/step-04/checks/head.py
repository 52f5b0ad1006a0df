"""Hidden checks of notebook 02-the-head."""
from __future__ import annotations

import math

import numpy as np
import torch

from autograder.checks import Check, TwinnedCheck, Verdict, attempt, code_before, register, student, twin, unpack

from dlcourse.contracts import contract

from .forms import attempt_form, form_of
from .process import entrywise_work, source_reading

ENTRYWISE = contract("scores_entrywise")


# ---- scores_entrywise ----------------------------------------------------------------------

def entrywise_inputs(B, T, d_head, seed, dtype):
    """The q, k a case is run on: the probe and the judge both build them from this recipe."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, d_head, generator=g, dtype=torch.float64).to(dtype)
    k = torch.randn(B, T, d_head, generator=g, dtype=torch.float64).to(dtype)
    return q, k


# operations that multiply: called on operands larger than one entry's d numbers, they compute many entries at once
PRODUCTS = {"matmul", "__matmul__", "__rmatmul__", "bmm", "mm", "mv", "einsum", "baddbmm", "addbmm", "addmm",
            "tensordot", "linear", "mul", "__mul__", "__rmul__", "prod", "inner", "outer", "cdist"}


def products_of(trace, d: int) -> list[str]:
    """The products in a call's trace (autograder/runtime `_describe`) with an operand of more than d
    numbers: such a product multiplies more than one entry's worth at once. Judged by how much one
    call multiplies, never by the op's name or its operands' rank: (1×d)@(d×1) is one entry."""
    found = set()

    def sizes(described, depth=0):
        if isinstance(described, dict) and "__tensor_shape__" in described:
            yield math.prod(int(n) for n in described["__tensor_shape__"])
        elif isinstance(described, list) and depth < 4:
            for item in described:
                yield from sizes(item, depth + 1)
        elif isinstance(described, dict) and depth < 4:
            for item in described.values():
                yield from sizes(item, depth + 1)

    for name, args, kwargs in (c for c in trace if isinstance(c, list) and len(c) == 3):
        operands = list(sizes([args, kwargs]))
        if name in PRODUCTS and len(operands) >= 2 and max(operands) > d:
            found.add(name)
    return sorted(found)


MODEL_WIDTH = 32          # the notebooks' model width d (notebooks 02 and 03: d = 32)
# the causes scores_entrywise's feedback names, each measured: the answer's scores are that computation's
ENTRYWISE_HINTS = {
    "divided_by_sqrt_d_k": "your scores are divided by sqrt(d_k)",
    "divided_by_d_k": "your scores are divided by d_k",
    "divided_by_model_width": "your scores are divided by the model width d = 32",
    "divided_by_model_width_root": "your scores are divided by sqrt(32), the model width's square root",
    "transposed": "your scores are transposed",
    "first_sequence": "every sequence got the scores of the first one",
    "divided_by_constant": "your scores are divided by a constant",
    "multiplied_by_constant": "your scores are multiplied by a constant",
}


@register
class ScoresEntrywise(Check):
    """Values on edge cases (B = 1, T = 1, T > d_head, float64), and the process: one entry at a time.

    The process is judged from the answer's source in the grader (process.py: its threat model), as
    the binding the hidden test calls (the last definition above it, helpers as bound then), by how
    much one operation multiplies: a product of q and k spanning more than one entry's d features (a
    row, a matrix, a broadcast), in torch, numpy or anything else, loses the process points. Code the
    reader cannot decide on (exec, a library function replaced, a binding or call it cannot follow)
    takes nothing: the part goes to a person (review). The kernel's own trace of torch calls can only
    take points away."""
    grade_id = "bonus_scores_entrywise"
    points = 3
    HINTS = ENTRYWISE_HINTS
    # (label, B, T, d_head, seed, dtype); the visible test uses (2, 3, 5), the notebook's next cell the
    # head's (4, 8, 16): one case is longer than that
    CASES = [
        ("one sequence of one token (B = 1, T = 1)", 1, 1, 4, 31, "float32"),
        ("more tokens than features (T = 6 > d_head = 2)", 3, 6, 2, 32, "float32"),
        ("a single sequence longer than the notebook's (B = 1, T = 10, d_head = 16)", 1, 10, 16, 33, "float32"),
        ("float64 input (B = 2, T = 4, d_head = 7)", 2, 4, 7, 34, "float64"),
    ]
    SPY_CASE = (2, 3, 4, 35)

    # Each case has a twin of this submission's own: the same sizes and dtype, q and k drawn from a
    # seed of framework.fresh_rng. A case's part needs both right, and the process part counts a case
    # as computed only if its twin is too, so scores recorded from an earlier grading earn nothing.

    def twins(self, ctx):
        rng = self.fresh(ctx, "twins")
        return [(label, B, T, d_head, rng.getrandbits(62), dtype) for label, B, T, d_head, _, dtype in self.CASES]

    def probe(self, ns, ctx):
        fn = student(ns, "scores_entrywise")
        results, twins = [], []
        for cases, out in ((self.CASES, results), (self.twins(ctx), twins)):
            for _, B, T, d_head, seed, dtype in cases:
                q, k = entrywise_inputs(B, T, d_head, seed, getattr(torch, dtype))
                out.append(attempt_form("scores_entrywise", fn, q, k))     # judged by the contract: (B, T, T), q's dtype
        source = entrywise_work(code_before(ctx, self), "scores_entrywise",
                                {"q": ("B", "T", "D"), "k": ("B", "T", "D")})
        return {"cases": results, "twins": twins, "spy": attempt(self._spy, fn), "source": source}

    def _spy(self, fn):
        """Which products the student's function takes (it runs once more, traced in the kernel)."""
        B, T, d_head, seed = self.SPY_CASE
        q, k = entrywise_inputs(B, T, d_head, seed, torch.float32)
        _, trace = fn.traced(q, k)
        return products_of(trace, d_head)

    def judge(self, data, ctx):
        verdict = Verdict()
        computed = False           # right on some case, at least up to a transpose or a scale
        for case, other, entry, fresh in zip(self.CASES, self.twins(ctx), data["cases"], data["twins"]):
            label, B, T, d_head, seed, dtype = case
            q, k = entrywise_inputs(B, T, d_head, seed, torch.float64)   # the exact inputs, in float64
            ok, message, near = self._judge_case(entry, q.numpy(), k.numpy(), dtype)
            if near:                    # the twin too: scores recorded for the fixed case only are not computed
                q, k = entrywise_inputs(B, T, d_head, other[4], torch.float64)
                twin_ok, twin_message, near = self._judge_case(fresh, q.numpy(), k.numpy(), dtype)
                if ok:
                    ok, message = twin_ok, twin_message
            computed |= near
            verdict.add(label, ok, message)
        spy, why = unpack(data.get("spy"))
        traced = spy if why is None and isinstance(spy, list) else []
        found, review, notes = source_reading(data.get("source"))
        if found or traced:
            what = "; ".join(found) if found else f"{', '.join(map(str, traced))} on more than one entry's numbers"
            verdict.add("one entry at a time", False,
                        f"your function multiplies whole matrices or rows at once ({what}). The task is to make "
                        "each entry yourself: loop over b, i and j, and take one dot product of two vectors "
                        "(d_head numbers each) per entry." + "".join(f" ({n})" for n in notes), weight=2)
        elif not computed:
            verdict.add("one entry at a time", False,
                        "this part counts once your loops compute the scores: fix the values first", weight=2)
        elif review:
            verdict.add_review("one entry at a time", review, weight=2)
        else:
            # no whole-matrix work in the source or the trace, and the loops compute the scores
            verdict.add("one entry at a time", True, weight=2)
        return verdict

    @staticmethod
    def _judge_case(entry, q, k, dtype):
        """(ok, message, near): near means right up to a transpose, a scale or float32 rounding."""
        value, why = unpack(entry)
        if why:
            return False, why, False
        got = np.asarray(value)
        B, T, d_head = q.shape
        if got.shape != (B, T, T):
            hint = ": one (T, T) matrix per sequence, so keep the batch axis b" if got.shape == (T, T) else ""
            return False, (f"q and k of shape (B, T, d_head) give scores of shape (B, T, T), one score per query and "
                           f"key of each sequence; yours has another shape{hint}"), False
        if not np.isfinite(got).all():
            return False, "your scores contain NaN or inf", False
        ref = q @ np.swapaxes(k, -2, -1)                                  # float64 reference
        # a float32 dot product of length d is off by at most about d * 6e-8 * sum_m |q_m k_m|;
        # 1e-5 * sum_m |q_m k_m| leaves a margin of 10 or more for every length used here
        size = (np.abs(q)[:, :, None, :] * np.abs(k)[:, None, :, :]).sum(-1)   # (B, T, T)
        tol = ENTRYWISE.tol(dtype) * size + 1e-30                           # the contract's, per dtype
        loose = 1e-5 * size + 1e-6

        def close(a, b, t):
            return bool((np.abs(a - b) <= t).all())

        if close(got, ref, tol):
            if dtype == "float64" and got.dtype != np.float64:
                return False, ("float64 inputs gave float32 scores: the tensor the scores are written into is "
                               "created with the default dtype, not the inputs' one"), True
            if form_of(entry):
                return False, form_of(entry), True
            return True, "", True
        if dtype == "float64" and close(got, ref, loose):
            return False, ("right to float32 precision only: float64 inputs lost precision somewhere (a tensor "
                           "created with the default dtype, or a conversion to float32)"), True
        if close(got, ref / math.sqrt(d_head), loose):
            return False, (f"{ENTRYWISE_HINTS['divided_by_sqrt_d_k']}: this function computes the raw q kᵀ; "
                           "the head divides by sqrt(d_k) afterwards"), True
        scale = _constant_factor(got, ref)
        if scale is not None:
            # the entries are right up to one factor: the loops work, the scaling is the mistake
            # measured: the factor is d_k, the notebook's model width or its root (no guess at any other constant)
            if d_head > 1 and abs(scale * d_head - 1) < 1e-4:
                what = ENTRYWISE_HINTS["divided_by_d_k"]
            elif abs(scale * MODEL_WIDTH - 1) < 1e-4:
                what = ENTRYWISE_HINTS["divided_by_model_width"]
            elif abs(scale * math.sqrt(MODEL_WIDTH) - 1) < 1e-4:
                what = ENTRYWISE_HINTS["divided_by_model_width_root"]
            elif abs(scale) < 1:
                what = ENTRYWISE_HINTS["divided_by_constant"]
            else:
                what = ENTRYWISE_HINTS["multiplied_by_constant"]
            return False, (f"{what}: this function computes the raw q kᵀ with no scaling; "
                           "the head divides by sqrt(d_k) afterwards"), True
        if T > 1 and close(got, np.swapaxes(ref, -2, -1), loose):
            return False, (f"{ENTRYWISE_HINTS['transposed']}: entry [b, i, j] is query i (a row) against key j "
                           "(a column), q[b, i] · k[b, j]"), True
        if B > 1 and close(got, np.broadcast_to(ref[:1], ref.shape), loose):
            return False, f"{ENTRYWISE_HINTS['first_sequence']}: use q[b] and k[b] for sequence b", False
        every = bool((np.abs(got - ref) > tol).all())
        return False, (("every entry is wrong" if every else "some entries are wrong") + ": entry [b, i, j] should be the dot product "
                       "of q[b, i] and k[b, j], a sum over the d_head axis"), False


def _constant_factor(got, ref):
    """c if got = c * ref (c != 1) to float32 precision, else None. Measured on two nonzero entries at least:
    a single number is a multiple of any other (adding 1, squaring, q·q all read as a factor on a 1 x 1 case)."""
    denom = float((ref * ref).sum())
    if denom == 0 or got.shape != ref.shape or np.count_nonzero(ref) < 2:
        return None
    c = float((got * ref).sum()) / denom
    if not math.isfinite(c) or c == 0 or abs(c - 1) < 1e-6:
        return None
    # float32 rounding of each entry is ~1e-7 of its size; 1e-5 of the largest entry is far above it
    return c if np.abs(got - c * ref).max() <= 1e-5 * max(np.abs(c * ref).max(), 1e-30) else None


# ---- count_params --------------------------------------------------------------------------

# the causes the feedback can name (name -> its words), each only where measured: the answer is that count
# (COUNT_MISTAKES) on every case and twin
COUNT_HINTS = {
    "biases": "this counts biases too: the handout's three nn.Linear layers have bias=False",
    "square": "each projection maps width d to width d_head: a (d_head, d) matrix, not a square one",
    "one_projection": "that is one projection: the head has three (query, key, value)",
    "buffer": ("the same square number above 3·d·d_head for every width: the tril buffer (T_max × T_max numbers) "
               "is state, not a parameter, and head.parameters() does not yield it"),
}
COUNT_MISTAKES = {
    "biases": lambda n, d, d_head: n == 3 * d * d_head + 3 * d_head,
    "square": lambda n, d, d_head: n in (3 * d * d, 3 * d_head * d_head),
    "one_projection": lambda n, d, d_head: n == d * d_head,
}


def count_hints(numbers: list, cases: list) -> list[str]:
    """The COUNT_HINTS whose count is the answer's on every case (`numbers`, None where none came back)."""
    if any(n is None for n in numbers):
        return []
    shown = [name for name, made in COUNT_MISTAKES.items() if all(made(n, *c) for n, c in zip(numbers, cases))]
    extras = {n - 3 * d * d_head for n, (d, d_head) in zip(numbers, cases)}
    if len(extras) == 1 and (extra := extras.pop()) > 0 and float(extra) ** 0.5 == int(float(extra) ** 0.5):
        shown.append("buffer")
    return [COUNT_HINTS[name] for name in shown]


@register
class CountParams(TwinnedCheck):
    grade_id = "bonus_count_params"
    points = 2
    HINTS = COUNT_HINTS
    CASES = [(12, 5), (5, 12), (100, 7), (3, 1)]        # the visible test uses (32, 16) and (40, 24)
    # the feedback names a case by its kind, never by its numbers: printed inputs and counts
    # would let an answer return the hidden counts without computing them
    LABELS = ["a head narrower than its input", "a head wider than its input",
              "a wide input and a narrow head", "a head of width 1"]

    # Each case has a twin drawn for this submission (framework.twin: fresh numbers in the same order,
    # a width of 1 kept): a kind's part needs both right, so an answer that recorded the fixed cases
    # (and returns them from a table) earns nothing, while an answer's partial credit is what it was
    # (a formula right on a case is right on its twin; one that fails a kind fails its fixed case).

    def twins(self, ctx):
        rng = self.fresh(ctx, "twins")
        return [twin(rng, case, high=400) for case in self.CASES]

    def probe(self, ns, ctx):
        fn = student(ns, "count_params")
        return {"cases": [attempt(fn, d, d_head) for d, d_head in self.CASES],
                "twins": [attempt(fn, d, d_head) for d, d_head in self.twins(ctx)]}

    def judge(self, data, ctx):
        verdict = super().judge(data, ctx)
        entries = list(data["cases"]) + list(data["twins"])
        numbers = [_as_number(value) if why is None else None for value, why in map(unpack, entries)]
        hints = count_hints(numbers, self.CASES + self.twins(ctx))
        if hints:
            for part in verdict.parts:
                if not part.ok and part.message == COUNT_PROPERTY:
                    part.message = "; ".join(hints)
        return verdict

    @staticmethod
    def _case(case, entry):
        d, d_head = case
        value, why = unpack(entry)
        if why:
            return False, why
        number = _as_number(value)
        return number == 3 * d * d_head, ("return one number (an int)" if number is None else COUNT_PROPERTY)


def _as_number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.item()
    return None


# what a wrong count's feedback says, unless a cause is measured on every case (`count_hints`)
COUNT_PROPERTY = "count the numbers in the three weight matrices of query, key and value, as a formula in d and d_head"
