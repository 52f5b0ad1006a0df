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


# the causes the feedback can name (name -> its words), each only where measured: the answer's matrix is the
# variant's (text_attention(seed, name)) for every seed
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
        return "its rows do not sum to 1"
    return ""


@register
class AttentionOnText(Check):
    grade_id = "bonus_attention_on_text"
    points = 3
    HINTS = TEXT_MISTAKES

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
                reasons[seed] = (f"returned {type(value).__name__} that is not a (64, 64) matrix; "
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
                    "two calls with the same seed gave different matrices: every random number of the "
                    "construction is drawn after torch.manual_seed(seed)", weight=0.5)

        distinct = got_all and all(
            np.abs(matrices[a] - matrices[b]).max() > 1e-3
            for i, a in enumerate(TEXT_SEEDS) for b in TEXT_SEEDS[i + 1:])
        verdict.add("different seeds give different matrices", distinct,
                    no_matrix if not got_all else
                    "two seeds gave (nearly) the same matrix, where different seeds build different layers",
                    weight=0.5)

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
                # a cause only where measured: the variant's matrix for every seed
                shown = [cause for variant, cause in TEXT_MISTAKES.items()
                         if got_all and all(np.abs(a - text_attention(seed, variant)).max() <= TEXT_ATOL
                                            for seed, a in matrices.items())]
                if shown:
                    message += "".join(f" For every seed it is the matrix you get when {cause}." for cause in shown)
                else:
                    message += (" Check: torch.manual_seed(seed) first; then tok_emb = nn.Embedding(V, 32), "
                                "pos_emb = nn.Embedding(64, 32), head = Head(32, 16, T_max=64) in that order; "
                                "x from the first 64 characters of the corpus with both terms; return head.A[0].")
        verdict.add("agrees with the handout's construction for the hidden seeds", ok, message, weight=2)
        return verdict


# ---- top_key_shares -------------------------------------------------------------------------
# The visible test uses the identity, column collapse and the previous-token pattern at T = 8, the
# notebook's own cells T = 64; these differ, and one is longer. Every case has a single largest weight
# in each row (no ties), as the spec promises.

SHARES = contract("top_key_shares")


def _causal_softmax(scores: torch.Tensor) -> torch.Tensor:
    T = scores.shape[-1]
    return torch.softmax(scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf")), dim=-1)


def share_cases() -> list[tuple[str, torch.Tensor]]:
    """The matrices top_key_shares is tried on (float32, as the notebook's matrices are)."""
    from dlcourse.head import Head
    cases = [("the identity (T = 10)", torch.eye(10))]
    collapse = torch.zeros(20, 20)
    collapse[:, 0] = 1
    cases.append(("all weight on column 0 (T = 20)", collapse))
    previous = torch.zeros(16, 16)
    previous[0, 0] = 1
    previous[torch.arange(1, 16), torch.arange(0, 15)] = 1
    cases.append(("a previous-token head (T = 16)", previous))
    with torch.random.fork_rng():
        torch.manual_seed(31)
        head = Head(D_MODEL, D_HEAD, T_max=40)
        with torch.no_grad():
            head(2 * torch.randn(1, 40, D_MODEL))
        cases.append(("an untrained head on random input (T = 40)", head.A[0].clone()))
        cases.append(("a sharp random causal matrix (T = 9)", _causal_softmax(3 * torch.randn(9, 9))))
        diagonal_heavy = torch.randn(30, 30) + 2.5 * torch.eye(30)
        diagonal_heavy[:, 0] += 1.5
        cases.append(("a matrix leaning on the diagonal and column 0 (T = 30)", _causal_softmax(diagonal_heavy)))
        # longer than the notebook's 64 tokens, its diagonal rows spread over the whole length: rows past
        # 64 count as the others do
        long_scores = torch.randn(80, 80) + 2.0 * torch.eye(80)
        long_scores[:, 0] += 1.0
        cases.append(("a matrix longer than the notebook's (T = 80)", _causal_softmax(long_scores)))
    cases.append(("two positions (T = 2)", torch.tensor([[1.0, 0.0], [0.3, 0.7]])))
    return cases


def reference_shares(A: np.ndarray) -> tuple[float, float]:
    """Rows 1..T-1: the share whose largest weight is on the diagonal, and the share on column 0."""
    A = np.asarray(A, dtype=np.float64)
    top = A[1:].argmax(axis=1)                                       # (T-1,)
    rows = np.arange(1, A.shape[0])
    return float(np.mean(top == rows)), float(np.mean(top == 0))


# the causes the feedback can name (name -> its words), each only where measured: the answer's share is the
# slip's (`_share_mistakes`) on every matrix
SHARE_HINTS = {
    "row_zero_counted": "row 0 is counted (its only key is 0, both the diagonal and column 0: leave it out)",
    "counts": "these are counts, not shares: divide by the number of rows, T - 1",
    "divided_by_T": "the shares are divided by T, where T - 1 rows are counted",
    "index_shifted": ("the top key is compared with the row's index shifted by one (row i's diagonal key is i, "
                      "not i - 1: the rows counted start at 1)"),
    "by_column": ("the largest weight is taken down each column (over the queries), where the top key of a row is "
                  "taken along the row (over the keys, the last axis)"),
}


def _share_mistakes(A: np.ndarray) -> dict:
    """What the two shares become under each slip of SHARE_HINTS (name -> (diagonal, column 0))."""
    A = np.asarray(A, dtype=np.float64)
    T = A.shape[0]
    top_all = A.argmax(axis=1)                                       # (T,) row 0 included
    top = top_all[1:]
    rows = np.arange(1, T)
    by_query = A[:, 1:].argmax(axis=0) if T > 1 else top             # (T-1,) the largest weight of each column
    return {
        "row_zero_counted": (float(np.mean(top_all == np.arange(T))), float(np.mean(top_all == 0))),
        "counts": (float(np.sum(top == rows)), float(np.sum(top == 0))),
        "divided_by_T": (float(np.sum(top == rows) / T), float(np.sum(top == 0) / T)),
        "index_shifted": (float(np.mean(top == rows - 1)), float(np.mean(top == 0))),
        "by_column": (float(np.mean(by_query == rows)), float(np.mean(by_query == 0))),
    }


# Shares are means of T - 1 booleans: exact in float32 to ~6e-8. Any real mistake moves one by 1/(T-1) or more.
SHARE_ATOL = SHARES.tol("shares")                                   # 1e-6, the contract's (the visible check's)


def _as_shares(result) -> tuple[float, float]:
    """The student's pair as two floats (0-dim tensors and numpy scalars become floats)."""
    if isinstance(result, (str, bytes)) or not hasattr(result, "__len__") or len(result) != 2:
        raise TypeError(f"top_key_shares should return two numbers (diagonal, column 0), not {result!r:.80}")
    return float(result[0]), float(result[1])


@register
class TopKeyShares(Check):
    grade_id = "bonus_top_key_shares"
    points = 3
    HINTS = SHARE_HINTS

    def cases(self, ctx) -> list[tuple[str, torch.Tensor]]:
        """share_cases() and a random causal matrix of this submission's own (framework.fresh_rng), so
        shares recorded from an earlier grading and returned from a table earn nothing."""
        rng = self.fresh(ctx, "matrix")
        T = rng.randint(5, 40)
        g = torch.Generator().manual_seed(rng.getrandbits(62))
        scores = rng.uniform(0.5, 3.0) * torch.randn(T, T, generator=g, dtype=torch.float64)
        scores += rng.uniform(0.0, 2.0) * torch.eye(T, dtype=torch.float64)
        return share_cases() + [("a random causal matrix", _causal_softmax(scores).float())]

    def probe(self, ns, ctx):
        fn = student(ns, "top_key_shares")
        # each pair as the function returned it, its form judged by the contract (two Python floats), then read
        return [attempt_form("top_key_shares", fn, A.clone(), convert=_as_shares) for _, A in self.cases(ctx)]

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
            if why is None and not (isinstance(value, (list, tuple)) and len(value) == 2
                                    and all(isinstance(v, float) for v in value)):
                why = "did not return two numbers"
            values.append(tuple(value) if why is None else None)
            if why:
                errors[name] = why
        references = [reference_shares(A.numpy()) for _, A in cases]

        for k, (label, part) in enumerate((("the share of rows whose top key is on the diagonal", "diagonal"),
                                           ("the share of rows whose top key is on column 0", "column 0"))):
            wrong = [name for (name, _), v, ref in zip(cases, values, references)
                     if v is None or math.isnan(v[k]) or not abs(v[k] - ref[k]) <= SHARE_ATOL]
            message = ""
            if wrong:
                first = wrong[0]
                if first in errors:
                    message = f"for {first}: {errors[first]}"
                else:
                    hint = ("the top key of row i is A[i].argmax() over the keys j, counted over the rows 1..T-1, "
                            "as a share of those T - 1 rows")
                    # a slip only where measured: its share is the answer's on every matrix
                    slips = [SHARE_HINTS[slip] for slip in SHARE_HINTS
                             if all(v is not None and abs(v[k] - _share_mistakes(A.numpy())[slip][k]) <= SHARE_ATOL
                                    for (_, A), v in zip(cases, values))]
                    if slips:
                        hint = "on every matrix, " + "; ".join(slips)
                    message = f"{part} wrong for {len(wrong)} of {len(cases)} matrices (first: {first}): {hint}"
            verdict.add(f"{part}: {label}", not wrong, message, weight=1.5)
        # the contract's form, as the visible check's expect_form reads it: two Python floats (0-dim tensors or
        # numpy float32 scalars are read for the shares above, but they are not the form asked for)
        forms = [f for entry in data if (f := form_of(entry))]
        message = f"{forms[0]}, e.g. (top == rows).float().mean().item()" if forms else \
            "" if not errors else f"for {next(iter(errors))}: {next(iter(errors.values()))}"
        verdict.add("returns two Python floats", not forms and not errors, message, weight=0.5)
        return verdict
