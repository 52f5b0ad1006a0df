"""Hidden checks of notebook 05-attention-as-smoothing."""
from __future__ import annotations

import numpy as np
import torch

from autograder.checks import Check, Verdict, attempt, register, student, unpack, unwritten, unwritten_verdict
from dlcourse.contracts import contract


# (T, s) pairs. The visible test uses T = 8 with s in {2, 1e-3, 1e4}, the notebook's own cells T = 64;
# these differ, and one is longer than the notebook's.
MODERATE = ((13, 1.7), (50, 6.5), (7, 0.9), (2, 1.0), (1, 2.0), (70, 3.0))
TINY = ((9, 1e-3), (30, 2e-3))             # s -> 0: the identity
HUGE = ((11, 1e4), (40, 1e5))              # s -> infinity: the causal running mean
ALL_CASES = MODERATE + TINY + HUGE

# The contract's tolerance (dlcourse/contracts.py). Weights are in [0, 1]. A float32 answer carries a
# relative error of ~1e-7 per weight (softmax of exactly representable scores; torch.cdist's square
# root adds a few ulps); 1e-5 is a hundred times that. The mistakes below move some weight by more
# than 1e-3 in every moderate case.
SMOOTHING = contract("smoothing_attention")
ATOL = SMOOTHING.tol("weights")


def reference(T: int, s: float, variant: str = "correct") -> np.ndarray:
    """scores[i, j] = -(i - j)^2 / (2 s^2), -inf above the diagonal, softmax over j (float64);
    and what real mistakes give instead."""
    i = np.arange(T, dtype=np.float64)
    d2 = (i[:, None] - i[None, :]) ** 2                                   # (T, T)
    scores = {
        "squared_twice": -d2 / (2 * s ** 4),
        "no_factor_2": -d2 / s ** 2,
        "s_not_squared": -d2 / (2 * s),
        "distance_not_squared": -np.sqrt(d2) / (2 * s ** 2),
        "sign": d2 / (2 * s ** 2),
    }.get(variant, -d2 / (2 * s ** 2))
    above = np.triu(np.ones((T, T), dtype=bool), k=1)
    if variant == "reversed_mask":
        above = np.tril(np.ones((T, T), dtype=bool), k=-1)
    if variant in ("no_mask", "mask_after_softmax"):
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        A = e / e.sum(axis=1, keepdims=True)
        return np.where(above, 0.0, A) if variant == "mask_after_softmax" else A
    masked = np.where(above, -np.inf, scores)
    if variant == "mask_zero":
        masked = np.where(above, 0.0, scores)
    if variant == "wrong_axis":
        e = np.exp(masked - masked.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
    e = np.exp(masked - masked.max(axis=1, keepdims=True))
    A = e / e.sum(axis=1, keepdims=True)
    return A.T.copy() if variant == "transposed" else A


# the causes the feedback can name (name -> its words), each only where measured: the variant's matrix
# (`reference(T, s, name)`) is the answer's on every case
MISTAKES = {
    "squared_twice": "the bandwidth is squared twice: s enters the score with too high a power",
    "no_factor_2": "the factor 2 is missing: the score is -(i - j)^2 / (2 s^2)",
    "s_not_squared": "the bandwidth is not squared: s enters the score with too low a power",
    "distance_not_squared": "the distance is not squared: the score uses (i - j)^2, not |i - j|",
    "sign": "the sign is flipped: the score is MINUS (i - j)^2 / (2 s^2), so far keys score low",
    "no_mask": "there is no causal mask: fill the scores above the diagonal with -inf before the softmax",
    "mask_after_softmax": "the mask is applied after the softmax: mask the scores with -inf, then take the softmax",
    "mask_zero": "the scores above the diagonal are set to 0 instead of -inf: exp(0) = 1 gives the future weight",
    "wrong_axis": "the softmax runs over the queries (dim=0): it must normalise each row, over the keys j (dim=-1)",
    "reversed_mask": "the mask is reversed (tril for triu): the scores to fill with -inf are the future ones, j > i",
    "transposed": "the matrix is transposed: rows are queries i, columns keys j, and the weight sits at j <= i",
}


# A softmax written by hand as exp(s - c) / sum exp(s - c) with c the row's mean, not its max (the diagonal's 0):
# with a tiny s the far keys' scores are about -500,000 and the mean far below 0, so exp(0 - c) overflows to inf
# in float32 (inf / inf: NaN). Its cause is named only where measured: `offset_matrix`, computed one of the ways
# an answer may compute it (the mean over all T keys or over the keys j <= i, in float32 or float64), is the
# answer's matrix on every case, NaN in the same places.
OFFSET_HINTS = {
    "offset_not_max": ("these are the weights of exp(s - c) / sum exp(s - c) with c the row's mean, not its max: "
                       "with a tiny s the far keys' scores are about -500,000, the mean far below 0, and exp(0 - c) "
                       "overflows to inf in float32 (inf / inf is NaN). Subtract each row's max (the diagonal's "
                       "score, 0), or use torch.softmax"),
}
OFFSET_WAYS = [(keys, dtype) for keys in ("all", "allowed") for dtype in (torch.float32, torch.float64)]


def offset_matrix(T: int, s: float, keys: str = "all", dtype=torch.float32) -> np.ndarray:
    """The smoothing matrix computed as exp(scores - c) / sum exp(scores - c), masked after exp, with c the mean of
    each row's scores over all T keys (`keys="all"`) or over the keys j <= i, in `dtype`."""
    i = torch.arange(T, dtype=dtype)
    scores = -(i[:, None] - i[None, :]) ** 2 / (2 * s ** 2)                    # (T, T)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    if keys == "all":
        c = scores.mean(dim=-1, keepdim=True)
    else:
        c = scores.masked_fill(future, 0.0).sum(dim=-1, keepdim=True) / torch.arange(1, T + 1, dtype=dtype)[:, None]
    e = (scores - c).exp().masked_fill(future, 0.0)                           # inf where exp overflows
    return (e / e.sum(dim=-1, keepdim=True)).numpy().astype(np.float64)


def _same_matrix(a: np.ndarray, b: np.ndarray) -> bool:
    """NaN and inf in the same places, the finite weights within the contract's tolerance."""
    if a.shape != b.shape or not all(np.array_equal(f(a), f(b)) for f in (np.isnan, np.isposinf, np.isneginf)):
        return False
    finite = np.isfinite(b)
    return bool(np.all(np.abs(a[finite] - b[finite]) <= ATOL))


def offset_shown(matrices: dict) -> bool:
    """Whether the answer's matrices ((T, s) -> matrix, every case) hold NaN or inf and are those of a softmax
    shifted by the row's mean (`offset_matrix`, one way on every case)."""
    if any(a is None for a in matrices.values()) or all(np.isfinite(a).all() for a in matrices.values()):
        return False
    return any(all(_same_matrix(a, offset_matrix(T, s, *way)) for (T, s), a in matrices.items())
               for way in OFFSET_WAYS)


def _label(case) -> str:
    """How a case is named in feedback: the limits by their kind, the others not at all (hidden inputs)."""
    if case[1] <= 0.01:
        return "with a tiny s (0.001 or so)"
    if case[1] >= 1e4:
        return "with a huge s (10^4 or more)"
    return "for one of the hidden (T, s)"


def _matrix(value, T) -> np.ndarray | None:
    if not isinstance(value, np.ndarray):
        return None
    a = value.astype(np.float64)
    return a if a.shape == (T, T) else None


def _as_array(result):
    """Tensors (any dtype, with or without grad) and numpy arrays both count; lists are turned into arrays."""
    if isinstance(result, torch.Tensor):
        return result.detach().to(torch.float64)
    return np.asarray(result, dtype=np.float64)


@register
class SmoothingAttention(Check):
    grade_id = "smoothing_attention_hidden"
    points = 4
    HINTS = {**MISTAKES, **OFFSET_HINTS}

    def cases(self, ctx):
        """(moderate, tiny, huge): the fixed cases, each kind with cases of this submission's own
        (framework.fresh_rng) checked by every property the fixed ones are, so that matrices recorded
        from an earlier grading and returned from a table fail them."""
        rng = self.fresh(ctx, "cases")
        moderate = tuple((rng.randint(3, 40), round(rng.uniform(0.6, 8.0), 4)) for _ in range(3))
        tiny = ((rng.randint(3, 30), round(rng.uniform(1e-3, 3e-3), 6)),)
        huge = ((rng.randint(3, 48), float(rng.randint(10_000, 100_000))),)
        return MODERATE + moderate, TINY + tiny, HUGE + huge

    def probe(self, ns, ctx):
        fn = student(ns, "smoothing_attention")
        return [attempt(lambda T, s: _as_array(fn(T, s)), T, s) for T, s in sum(self.cases(ctx), ())]

    def judge(self, data, ctx):
        verdict = Verdict()
        MODERATE, TINY, HUGE = self.cases(ctx)          # noqa: N806  (the module's, with this submission's own)
        ALL_CASES = MODERATE + TINY + HUGE              # noqa: N806
        data = list(data) if isinstance(data, (list, tuple)) else []
        data += [None] * (len(ALL_CASES) - len(data))
        if reason := unwritten(data):
            return unwritten_verdict(reason)
        got, problems = {}, {}
        matrices = {}
        for (T, s), entry in zip(ALL_CASES, data):
            value, why = unpack(entry)
            matrices[(T, s)] = _matrix(value, T) if why is None else None
        offset = offset_shown(matrices)
        for (T, s), entry in zip(ALL_CASES, data):
            value, why = unpack(entry)
            a = _matrix(value, T) if why is None else None
            if why is None and a is None:
                why = "returned something that is not a (T, T) matrix"
            if why is None and not np.isfinite(a).all():
                if T > 1 and not np.isfinite(a[0]).any() and np.isfinite(a[1:]).all():
                    why = ("gives a matrix whose row 0 is NaN, where row 0 has one key, j = 0, itself, of weight 1: "
                           "the mask hides j > i only, the diagonal stays")
                else:
                    why = "the matrix holds NaN or inf: every weight is a finite number in [0, 1]" + (
                        f"; {OFFSET_HINTS['offset_not_max']}" if offset else "")
                a = None
            if why:
                problems[(T, s)] = f"smoothing_attention(T, s) {_label((T, s))} {why}"
            else:
                got[(T, s)] = a

        def failed(cases, test):
            """The first case (of `cases`) that is missing or fails `test`, or None."""
            for T, s in cases:
                a = got.get((T, s))
                if a is None or not test(a, T, s):
                    return (T, s)
            return None

        def why(case, text):
            if case is None:
                return ""
            if case in problems:
                return problems[case]
            return f"{_label(case)}: {text}"

        # 1. rows on the simplex
        bad = failed(ALL_CASES, lambda a, T, s: (a >= 0).all() and np.abs(a.sum(axis=1) - 1).max() <= ATOL)
        verdict.add("rows are on the simplex (nonnegative, summing to 1)", bad is None,
                    why(bad, "a row has a negative weight or does not sum to 1"), weight=1)

        # 2. causality: exactly zero above the diagonal
        bad = failed(ALL_CASES, lambda a, T, s: (np.triu(a, 1) == 0).all())
        verdict.add("causal: exactly zero above the diagonal", bad is None,
                    why(bad, "weight above the diagonal, where A[i, j] is exactly 0 for every key j > i"), weight=1)

        # 3. s -> 0: each position keeps only itself
        bad = failed(TINY, lambda a, T, s: np.abs(a - np.eye(T)).max() <= SMOOTHING.tol("identity"))
        verdict.add("tiny s gives the identity", bad is None,
                    why(bad, "with s = 0.001 the neighbours' scores are about -500,000 and their weights exactly 0: "
                             "A must be the identity"), weight=0.75)

        # 4. s -> infinity: the causal running mean, A[i, j] = 1 / (i + 1) for j <= i
        def running_mean(T):
            return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
        bad = failed(HUGE, lambda a, T, s: np.abs(a - running_mean(T)).max() <= ATOL)
        verdict.add("huge s gives the causal running mean", bad is None,
                    why(bad, "with a huge s all allowed scores are about 0: row i must be 1/(i + 1) on j <= i"),
                    weight=0.75)

        # 5. the kernel depends on the distance i - j only: A[i, i-d] / A[i, i] is the same in every row
        def distance_only(a, T, s):
            diag = np.diag(a)
            if (diag <= 0).any():
                return False
            last = a[T - 1, ::-1] / a[T - 1, T - 1]                       # ratio at distance d = 0..T-1
            for i in range(T):
                ratios = a[i, i::-1] / diag[i]                            # distances 0..i
                if np.abs(ratios - last[: i + 1]).max() > ATOL + 1e-4 * last[: i + 1].max():
                    return False
            return True
        bad = failed(MODERATE, distance_only)
        verdict.add("the kernel depends only on the distance i - j", bad is None,
                    why(bad, "the ratio A[i, i-d] / A[i, i] changes from row to row: the scores must depend on "
                             "i - j only, and the softmax must normalise each row (dim=-1)"), weight=0.5)

        # 6. the weight decays away from the diagonal
        def decays(a, T, s):
            for i in range(T):
                row = a[i, i::-1]                                          # distances 0..i
                if (np.diff(row) > ATOL).any():
                    return False
            return True
        bad = failed(MODERATE, decays)
        verdict.add("the weight decays away from the diagonal", bad is None,
                    why(bad, "along a row, keys further from i must weigh less"),
                    weight=0.5)

        # 7. the values of the Gaussian kernel for moderate bandwidths
        mismatch = [(T, s) for T, s in MODERATE
                    if got.get((T, s)) is None or np.abs(got[(T, s)] - reference(T, s)).max() > ATOL]
        message = ""
        if mismatch and mismatch[0] in problems:
            message = problems[mismatch[0]]
        elif mismatch:
            message = (f"{_label(mismatch[0])}: not the Gaussian kernel "
                       "scores[i, j] = -(i - j)^2 / (2 s^2), masked, softmax over j.")
            # a cause only where measured: the variant's matrix for every case
            for variant, cause in MISTAKES.items():
                if all(case in got and np.abs(got[case] - reference(*case, variant)).max() <= ATOL
                       for case in ALL_CASES):
                    message += f" For every T and s it is the matrix you get when {cause}."
        verdict.add("the weights of the Gaussian kernel for several T and s", not mismatch, message, weight=1.5)
        return verdict
