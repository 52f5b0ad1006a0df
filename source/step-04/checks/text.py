"""Hidden checks of notebook 04-attention-on-text."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from autograder.checks import Check, Verdict, attempt, register, student, unpack, unwritten, unwritten_verdict

from dlcourse.contracts import contract

from .forms import attempt_form, form_of


T_TEXT, D_MODEL, D_HEAD = 64, 32, 16

# ---- attention_on_text ---------------------------------------------------------------------

# The visible test uses seeds 0-3; these differ.
TEXT_SEEDS = (7, 123, 2024)

# Weights are float32 softmax outputs in [0, 1]. The grader repeats the handout's construction with
# the same operations; an equivalent formulation (F.embedding, pos_emb.weight instead of
# pos_emb(arange), another matmul order or thread count) moves a score of size O(1) by a few float32
# ulps (~1e-7 relative) and a weight by less than 1e-6. Any change to the construction (another
# order, a missing positional term, another seed) moves weights by more than 1e-3.
TEXT_ATOL = contract("attention_on_text").tol("float32")         # 1e-5, the contract's


@lru_cache(maxsize=1)
def _vocab():
    from dlcourse.data import Vocab, load_text
    text = load_text()
    return Vocab(text), text


def _text_ids(text_len: int = T_TEXT) -> torch.Tensor:
    vocab, text = _vocab()
    return torch.tensor(vocab.encode(text[:text_len]))[None, :]                 # (1, 64)


def _vocab_size() -> int:
    return _vocab()[0].size


def text_attention(seed: int, variant: str = "handout") -> np.ndarray:
    """The grader's own construction of head.A[0] (64, 64), and the variants that real mistakes give."""
    import torch.nn as nn
    from dlcourse.head import Head
    V = _vocab_size()
    idx = _text_ids()
    with torch.random.fork_rng():                       # leave the caller's random state alone
        torch.manual_seed(seed)
        if variant == "head_first":
            head = Head(D_MODEL, D_HEAD, T_max=T_TEXT)
            tok_emb, pos_emb = nn.Embedding(V, D_MODEL), nn.Embedding(T_TEXT, D_MODEL)
        elif variant == "pos_first":
            pos_emb, tok_emb = nn.Embedding(T_TEXT, D_MODEL), nn.Embedding(V, D_MODEL)
            head = Head(D_MODEL, D_HEAD, T_max=T_TEXT)
        elif variant == "no_pos_embedding":
            tok_emb, pos_emb = nn.Embedding(V, D_MODEL), None
            head = Head(D_MODEL, D_HEAD, T_max=T_TEXT)
        else:
            tok_emb, pos_emb = nn.Embedding(V, D_MODEL), nn.Embedding(T_TEXT, D_MODEL)
            head = Head(D_MODEL, D_HEAD, T_max=T_TEXT)
        with torch.no_grad():
            x = tok_emb(idx)                                                       # (1, 64, 32)
            if variant not in ("no_pos_term", "no_pos_embedding"):
                x = x + pos_emb(torch.arange(T_TEXT))[None, :]                     # (1, 64, 32)
            head(x)
    A = head.A[0].numpy().astype(np.float64)                                       # (64, 64)
    return A.T.copy() if variant == "transposed" else A


TEXT_MISTAKES = {
    "no_pos_term": "the positional embedding is built but not added to x: x = tok_emb(idx) + pos_emb(torch.arange(64))[None, :]",
    "no_pos_embedding": "pos_emb is never built, so the head's weights come from other random numbers "
                        "and x has no positional term",
    "head_first": "the Head is built before the embeddings: the order of construction decides which "
                  "random numbers each layer gets (tok_emb, then pos_emb, then head, as in the handout)",
    "pos_first": "pos_emb is built before tok_emb: the handout builds tok_emb, then pos_emb, then the head",
    "transposed": "the matrix is transposed: head.A[0] already has queries on rows (return it as it is)",
}


def _square(value) -> np.ndarray | None:
    """The answer as a (64, 64) float64 array (a (1, 64, 64) batch of one and nested lists count too), or None."""
    try:
        a = np.asarray(value, dtype=np.float64) if isinstance(value, (np.ndarray, list, tuple)) else None
    except (TypeError, ValueError):
        return None
    if a is None:
        return None
    if a.ndim == 3 and a.shape[0] == 1:
        a = a[0]
    return a if a.ndim == 2 and a.shape == (T_TEXT, T_TEXT) else None


def _is_causal_attention(a: np.ndarray, tol: float = 1e-5) -> str:
    """'' if a is causal attention (finite, >= 0, zero above the diagonal, rows sum to 1), else why not."""
    if not np.isfinite(a).all():
        return "it holds NaN or inf"
    if (a < 0).any():
        return "it has negative weights"
    if (np.triu(a, 1) != 0).any():
        return "it has weight above the diagonal (the future is visible)"
    worst = np.abs(a.sum(axis=1) - 1).max()
    if worst > tol:
        return f"its rows sum to between {a.sum(axis=1).min():.3f} and {a.sum(axis=1).max():.3f}, not 1"
    return ""


@register
class AttentionOnText(Check):
    grade_id = "attention_on_text_hidden"
    points = 3

    def seeds(self, ctx) -> tuple:
        """TEXT_SEEDS and a seed of this submission's own (framework.fresh_rng): every part checks it
        as it checks the fixed ones, so matrices recorded from an earlier grading earn nothing."""
        return TEXT_SEEDS + (self.fresh(ctx, "seed").randrange(10_000, 2**31),)

    def probe(self, ns, ctx):
        fn = student(ns, "attention_on_text")
        # each result as the function returned it, its form judged by the contract: a (64, 64) tensor or array
        results = {str(seed): attempt_form("attention_on_text", fn, seed) for seed in self.seeds(ctx)}
        results["again"] = attempt(fn, TEXT_SEEDS[1])
        return results

    def judge(self, data, ctx):
        TEXT_SEEDS = self.seeds(ctx)                      # noqa: N806  (the module's, with this submission's own)
        if reason := unwritten([data.get(str(seed)) for seed in TEXT_SEEDS] + [data.get("again")]):
            return unwritten_verdict(reason)
        verdict = Verdict()
        matrices, reasons = {}, {}
        for seed in TEXT_SEEDS:
            value, why = unpack(data.get(str(seed)))
            if why:
                reasons[seed] = why
                continue
            a = _square(value)
            if a is None:
                shape = getattr(value, "shape", None)
                reasons[seed] = (f"returned {type(value).__name__} of shape {tuple(shape) if shape is not None else '?'}; "
                                 "expected the (64, 64) tensor head.A[0] (queries on rows, keys on columns)")
                continue
            matrices[seed] = a
        got_all = len(matrices) == len(TEXT_SEEDS)
        # the contract's form (the visible check's): a (64, 64) tensor or numpy array. A batch of one or nested
        # lists are read for the other parts, but they are not the form asked for
        forms = [f for seed in TEXT_SEEDS if seed in matrices and (f := form_of(data.get(str(seed))))]
        message = "; ".join(f"for a hidden seed, attention_on_text {r}" if r.startswith("raise")
                            else f"for a hidden seed: {r}" for r in dict.fromkeys(reasons.values()))
        if got_all and forms:
            message = f"{forms[0]}: return head.A[0], the matrix of the one sequence in the batch"
        verdict.add("returns a (64, 64) matrix for every seed", got_all and not forms, message, weight=0.5)

        problems = [why for a in matrices.values() if (why := _is_causal_attention(a))]
        verdict.add("each matrix is causal attention (zero above the diagonal, rows on the simplex)",
                    got_all and not problems,
                    f"for a hidden seed, {problems[0]}" if problems else "not every seed gave a matrix to check",
                    weight=1)

        no_matrix = "not every seed gave a (64, 64) matrix to compare"
        again, why_again = unpack(data.get("again"))
        again = _square(again) if why_again is None else None
        middle = matrices.get(TEXT_SEEDS[1])
        verdict.add("the same seed gives the same matrix",
                    again is not None and middle is not None and np.array_equal(again, middle),
                    no_matrix if again is None or middle is None else
                    "two calls with the same seed gave different matrices: call torch.manual_seed(seed) "
                    "first thing in the function, before any layer is built", weight=0.5)

        distinct = got_all and all(
            np.abs(matrices[a] - matrices[b]).max() > 1e-3
            for i, a in enumerate(TEXT_SEEDS) for b in TEXT_SEEDS[i + 1:])
        verdict.add("different seeds give different matrices", distinct,
                    no_matrix if not got_all else
                    "two seeds gave (nearly) the same matrix: is `seed` passed to torch.manual_seed?", weight=0.5)

        mismatched = []
        for seed, a in matrices.items():
            if np.abs(a - text_attention(seed)).max() > TEXT_ATOL:
                mismatched.append(seed)
        ok = got_all and not mismatched
        message = ""
        if not matrices:
            message = no_matrix
        elif not ok:
            message = ("not the matrix of the handout's construction under torch.manual_seed(seed) "
                       f"(for {len(mismatched)} of the {len(TEXT_SEEDS)} seeds checked).")
            if mismatched:
                seed = mismatched[0]
                for variant, cause in TEXT_MISTAKES.items():
                    if np.abs(matrices[seed] - text_attention(seed, variant)).max() <= TEXT_ATOL:
                        message += f" It matches what you get when {cause}."
                        break
                else:
                    message += (" Check: torch.manual_seed(seed) first; then tok_emb = nn.Embedding(V, 32), "
                                "pos_emb = nn.Embedding(64, 32), head = Head(32, 16, T_max=64) in that order; "
                                "x from the first 64 characters of the corpus with both terms; return head.A[0].")
        verdict.add("agrees with the handout's construction for the hidden seeds", ok, message, weight=2)
        return verdict


# ---- pattern_stats --------------------------------------------------------------------------

STAT_KEYS = ("diagonal", "first_column", "entropy")


def _causal_uniform(T: int) -> torch.Tensor:
    U = torch.tril(torch.ones(T, T))
    return U / U.sum(dim=-1, keepdim=True)


def stat_cases() -> list[tuple[str, torch.Tensor]]:
    """The matrices pattern_stats is tried on (float32, as the notebook's matrices are). The visible
    test uses the identity, the uniform matrix and column collapse at T = 8, the notebook's own cells
    T = 64; these differ, and one is longer."""
    from dlcourse.head import Head
    cases = []
    cases.append(("the identity", torch.eye(10)))
    cases.append(("the uniform causal matrix", _causal_uniform(64)))
    collapse = torch.zeros(20, 20)
    collapse[:, 0] = 1
    cases.append(("all weight on column 0", collapse))
    previous = torch.zeros(16, 16)
    previous[0, 0] = 1
    previous[torch.arange(1, 16), torch.arange(0, 15)] = 1
    cases.append(("a previous-token head", previous))
    with torch.random.fork_rng():
        torch.manual_seed(31)
        head = Head(D_MODEL, D_HEAD, T_max=40)
        with torch.no_grad():
            head(2 * torch.randn(1, 40, D_MODEL))
        A = head.A[0].clone()
        cases.append(("an untrained head on random input", A))
        scores = 3 * torch.randn(9, 9)
    sharp = torch.softmax(scores.masked_fill(torch.tril(torch.ones(9, 9)) == 0, float("-inf")), dim=-1)
    cases.append(("a sharp random causal matrix", sharp))
    with torch.random.fork_rng():                  # longer than the notebook's 64 tokens
        torch.manual_seed(32)
        long_scores = 2 * torch.randn(80, 80)
    cases.append(("a random causal matrix longer than the notebook's",
                  torch.softmax(long_scores.masked_fill(torch.tril(torch.ones(80, 80)) == 0, float("-inf")), dim=-1)))
    half = _causal_uniform(12).clone()
    half[6:] = 0
    half[6:, 0] = 0.5
    half[6:, 3] = 0.5
    cases.append(("rows with exact zeros inside the allowed region", half))
    return cases


def reference_stats(A: np.ndarray) -> dict:
    """The definitions, in float64: mean diagonal weight, mean weight on column 0, and the mean over
    rows i = 1..T-1 of H_i / log(i + 1) with H_i = -sum_j A_ij log A_ij (0 log 0 = 0)."""
    A = np.asarray(A, dtype=np.float64)
    T = A.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(A > 0, A * np.log(np.where(A > 0, A, 1.0)), 0.0)
    H = -plogp.sum(axis=1)                                           # (T,)
    normalised = H[1:] / np.log(np.arange(2, T + 1))                 # (T-1,)
    return {"diagonal": float(np.mean(np.diag(A))), "first_column": float(A[:, 0].mean()),
            "entropy": float(normalised.mean())}


def _entropy_mistakes(A: np.ndarray) -> dict:
    """What the entropy statistic becomes under common slips (for the messages)."""
    A = np.asarray(A, dtype=np.float64)
    T = A.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(A > 0, A * np.log(np.where(A > 0, A, 1.0)), 0.0)
    H = -plogp.sum(axis=1)
    logs = np.log(np.arange(1, T + 1))
    ratio = H[1:] / logs[1:]
    return {
        "the mean runs over all T rows, with row 0 counted as 0 (it has one allowed key: leave it out)":
            float(np.concatenate([[0.0], ratio]).mean()),
        "the mean runs over all T rows, with row 0 counted as 1 (it has one allowed key: leave it out)":
            float(np.concatenate([[1.0], ratio]).mean()),
        "the entropy is not divided by its maximum log(i + 1), the entropy of the uniform row i":
            float(H[1:].mean()),
        "each row's entropy is divided by log(T), the maximum of the last row only, instead of log(i + 1)":
            float((H[1:] / math.log(T)).mean()),
        "the mean entropy is divided by the mean of log(i + 1); divide row by row, then average":
            float(H[1:].mean() / logs[1:].mean()),
        "the sign is flipped: entropy is -sum p log p":
            float(-ratio.mean()),
    }


# float32 inputs: each p log p is within ~1e-7 relative; a row of 64 terms sums to H <= log 64 within
# ~1e-5, and dividing by log(i + 1) >= log 2 keeps the error below 2e-5. Means of weights are within 1e-6.
STAT_ATOL = 1e-4


def _as_stats(result) -> dict:
    """The student's dict with float values (0-dim tensors and numpy scalars become floats)."""
    if not isinstance(result, dict):
        raise TypeError(f"pattern_stats should return a dict, not {type(result).__name__}")
    missing = [k for k in STAT_KEYS if k not in result]
    if missing:
        raise KeyError(f"the dict has no key {missing[0]!r} (keys: {', '.join(STAT_KEYS)})")
    return {k: float(result[k]) for k in STAT_KEYS}


@register
class PatternStats(Check):
    grade_id = "pattern_stats_hidden"
    points = 3

    def cases(self, ctx) -> list[tuple[str, torch.Tensor]]:
        """stat_cases() and a random causal matrix of this submission's own (framework.fresh_rng), so
        statistics recorded from an earlier grading and returned from a table earn nothing."""
        rng = self.fresh(ctx, "matrix")
        T = rng.randint(5, 40)
        g = torch.Generator().manual_seed(rng.getrandbits(62))
        scores = rng.uniform(0.5, 3.0) * torch.randn(T, T, generator=g, dtype=torch.float64)
        A = torch.softmax(scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf")), dim=-1)
        return stat_cases() + [("a random causal matrix", A.float())]

    def probe(self, ns, ctx):
        fn = student(ns, "pattern_stats")
        return [attempt(lambda A: _as_stats(fn(A)), A.clone()) for _, A in self.cases(ctx)]

    def judge(self, data, ctx):
        verdict = Verdict()
        cases = self.cases(ctx)
        data = list(data) if isinstance(data, (list, tuple)) else []
        data += [None] * (len(cases) - len(data))
        if reason := unwritten(data):
            return unwritten_verdict(reason)
        values, errors = [], {}
        for (name, A), entry in zip(cases, data):
            value, why = unpack(entry)
            if why is None and not (isinstance(value, dict) and all(isinstance(value.get(k), float) for k in STAT_KEYS)):
                why = "did not return a dict of three numbers"
            values.append(value if why is None else None)
            if why:
                errors[name] = why
        references = [reference_stats(A.numpy()) for _, A in cases]

        def wrong_for(key):
            return [name for (name, _), v, ref in zip(cases, values, references)
                    if v is None or not abs(v[key] - ref[key]) <= STAT_ATOL]

        def first_failure(wrong, hint):
            if not wrong:
                return ""
            if wrong[0] in errors:
                return f"for {wrong[0]}: {errors[wrong[0]]}"
            return f"wrong for {len(wrong)} of {len(cases)} matrices (first: {wrong[0]}): {hint}"

        for key, label, hint in (
            ("diagonal", "the mean weight on the diagonal",
             "it is the mean over rows of A[i, i] (torch.diagonal(A).mean()), a number between 0 and 1"),
            ("first_column", "the mean weight on column 0",
             "it is the mean over rows i of A[i, 0]: the column A[:, 0] (not the row A[0]), averaged (not summed)"),
        ):
            wrong = wrong_for(key)
            verdict.add(f"{key}: {label}", not wrong, first_failure(wrong, hint), weight=1)

        wrong = wrong_for("entropy")
        hint = "per row H_i = -sum_j A_ij log A_ij, divided by log(i + 1); then the mean over rows 1..T-1"
        for (name, A), v, ref in zip(cases, values, references):
            if name not in wrong or v is None:
                continue
            if math.isnan(v["entropy"]):
                hint = ("NaN: masked and exact-zero weights give 0 * log 0 = 0 * (-inf) = NaN; count them as 0 "
                        "(torch.xlogy(A, A), or A * log(A) only where A > 0)")
                break
            slips = [d for d, slip in _entropy_mistakes(A.numpy()).items()
                     if abs(v["entropy"] - slip) <= STAT_ATOL and abs(slip - ref["entropy"]) > STAT_ATOL]
            if slips:
                hint = f"it looks as if {slips[0]}"
                break
        verdict.add("entropy: the mean normalised row entropy", not wrong, first_failure(wrong, hint), weight=2)
        return verdict
