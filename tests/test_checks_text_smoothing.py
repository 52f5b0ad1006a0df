"""The hidden checks of notebooks 04 and 05: correct variants earn full marks, real mistakes lose
points in the part that names them, and the feedback says what most likely went wrong."""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.selfgrade import probe_and_judge
from dlcourse.data import Vocab, load_text
from dlcourse.head import Head

def verdict(grade_id, **ns):
    return probe_and_judge(grade_id, ns)


def failed(v):
    return {p.name: p.message for p in v.failures()}


# ---- attention_on_text ------------------------------------------------------------------

TEXT = load_text()
VOCAB = Vocab(TEXT)


def text_fn(order=("tok", "pos", "head"), add_pos=True, post=None, seeded=True):
    def attention_on_text(seed):
        if seeded:
            torch.manual_seed(seed)
        built = {}
        for name in order:
            built[name] = {"tok": lambda: nn.Embedding(VOCAB.size, 32), "pos": lambda: nn.Embedding(64, 32),
                           "head": lambda: Head(32, 16, T_max=64)}[name]()
        idx = torch.tensor(VOCAB.encode(TEXT[:64]))[None, :]
        x = built["tok"](idx)
        if add_pos:
            x = x + built["pos"](torch.arange(64))[None, :]
        built["head"](x)
        A = built["head"].A[0]
        return post(A) if post else A
    return attention_on_text


def text_no_batch(seed):
    torch.manual_seed(seed)
    tok_emb, pos_emb, head = nn.Embedding(VOCAB.size, 32), nn.Embedding(64, 32), Head(32, 16, T_max=64)
    x = F.embedding(torch.tensor(VOCAB.encode(TEXT[:64])), tok_emb.weight) + pos_emb.weight   # (64, 32)
    head(x[None])
    return head.A.squeeze(0).numpy()


@pytest.mark.parametrize("fn", [text_fn(), text_no_batch], ids=["handout", "F.embedding-numpy"])
def test_attention_on_text_correct_variants_get_full_marks(fn):
    v = verdict("bonus_attention_on_text", attention_on_text=fn)
    assert v.fraction == 1, failed(v)


@pytest.mark.parametrize("fn, says", [(text_fn(post=lambda A: A[None]), "the one sequence in the batch"),
                                      (text_fn(post=lambda A: A.tolist()), "not list")],
                         ids=["batch-of-one", "nested-lists"])
def test_attention_on_text_in_another_form_loses_the_form_part_only(fn, says):
    """The contract (and the visible check) ask for the (64, 64) tensor or numpy array: a batch of one or
    nested lists lose the form part, and their values are judged as the matrix's."""
    v = verdict("bonus_attention_on_text", attention_on_text=fn)
    assert list(failed(v)) == ["returns a (64, 64) matrix for every seed"] and says in failed(v)[v.failures()[0].name]


@pytest.mark.parametrize("fn, cause", [
    (text_fn(add_pos=False), "not added"),
    (text_fn(order=("tok", "head"), add_pos=False), "never built"),
    (text_fn(order=("head", "tok", "pos")), "before the embeddings"),
    (text_fn(order=("pos", "tok", "head")), "before tok_emb"),
    (text_fn(post=lambda A: A.T), "transposed"),
])
def test_attention_on_text_mistakes_are_named(fn, cause):
    v = verdict("bonus_attention_on_text", attention_on_text=fn)
    failures = failed(v)
    assert 0 < v.fraction < 1
    assert cause in failures["agrees with the handout's construction for the hidden seeds"]


def test_attention_on_text_without_seeding_loses_determinism():
    v = verdict("bonus_attention_on_text", attention_on_text=text_fn(seeded=False))
    assert "the same seed gives the same matrix" in failed(v)


def test_attention_on_text_unwritten_gets_one_clear_reason():
    def unwritten(seed):
        raise NotImplementedError()
    v = verdict("bonus_attention_on_text", attention_on_text=unwritten)
    assert v.fraction == 0 and len(v.parts) == 1 and "not filled in" in v.parts[0].message


# ---- top_key_shares ----------------------------------------------------------------------

def shares_torch(A):
    top = A[1:].argmax(dim=-1)
    rows = torch.arange(1, A.shape[0])
    return (top == rows).float().mean().item(), (top == 0).float().mean().item()


def shares_numpy_loop(A):
    A = np.asarray(A, dtype=np.float64)
    on_diagonal = on_column = 0
    for i in range(1, len(A)):
        j = int(np.argmax(A[i, :i + 1]))            # only the allowed keys: the same top key
        on_diagonal += j == i
        on_column += j == 0
    return [on_diagonal / (len(A) - 1), on_column / (len(A) - 1)]      # a list is two numbers too


def shares_numpy_float64(A):
    top = np.asarray(A)[1:].argmax(axis=-1)
    rows = np.arange(1, len(A))
    return np.mean(top == rows), np.mean(top == 0)          # numpy's float64 is a Python float


def shares_tensors(A):
    return tuple(torch.tensor(v) for v in shares_torch(A))


@pytest.mark.parametrize("fn", [shares_torch, shares_numpy_loop, shares_numpy_float64])
def test_top_key_shares_correct_variants_get_full_marks(fn):
    v = verdict("bonus_top_key_shares", top_key_shares=fn)
    assert v.fraction == 1, failed(v)


def test_top_key_shares_tensors_lose_the_form_part_only():
    # the contract (and the visible check's expect_form) asks for two Python floats; the shares are still read
    failures = failed(verdict("bonus_top_key_shares", top_key_shares=shares_tensors))
    assert list(failures) == ["returns two Python floats"] and "torch.Tensor" in failures["returns two Python floats"], \
        failures


def _first_64_rows(A):
    top = A[1:64].argmax(dim=-1)                            # the notebook's 64 tokens hard-wired
    rows = torch.arange(1, 1 + len(top))
    return (top == rows).float().mean().item(), (top == 0).float().mean().item()


def test_top_key_shares_rows_past_the_notebooks_64_count():
    failures = failed(verdict("bonus_top_key_shares", top_key_shares=_first_64_rows))
    assert len(failures) == 2 and all("T = 80" in message for message in failures.values()), failures


def test_every_top_key_shares_case_has_one_largest_weight_per_row():
    from conftest import STEP4
    STEP4.package                                           # imports the step's checks: course_checks.step_04
    from course_checks.step_04.text import share_cases
    for name, A in share_cases():
        top2 = A[1:].topk(2, dim=-1).values                 # (T-1, 2)
        assert bool((top2[:, 0] > top2[:, 1]).all()), name


def _counts(A):
    top = A[1:].argmax(dim=-1)
    return float((top == torch.arange(1, A.shape[0])).sum()), float((top == 0).sum())


def _with_row_zero(A):
    top = A.argmax(dim=-1)
    return (top == torch.arange(A.shape[0])).float().mean().item(), (top == 0).float().mean().item()


def _shifted(A):
    top = A[1:].argmax(dim=-1)
    return (top == torch.arange(A.shape[0] - 1)).float().mean().item(), (top == 0).float().mean().item()


@pytest.mark.parametrize("fn, parts, hint", [
    (_with_row_zero, 2, "row 0 is counted"),
    (_counts, 2, "counts, not shares"),
    (_shifted, 1, "shifted by one"),
])
def test_top_key_shares_slips_are_named(fn, parts, hint):
    failures = failed(verdict("bonus_top_key_shares", top_key_shares=fn))
    assert len(failures) == parts and all(hint in message for message in failures.values()), failures


def test_top_key_shares_unwritten_gets_one_clear_reason():
    def unwritten(A):
        raise NotImplementedError()
    v = verdict("bonus_top_key_shares", top_key_shares=unwritten)
    assert v.fraction == 0 and len(v.parts) == 1 and "not filled in" in v.parts[0].message


# ---- smoothing_attention -----------------------------------------------------------------

def smoothing(T, s, scores_of=None, dim=-1, fill=float("-inf"), mask="before", post=None):
    i = torch.arange(T, dtype=torch.float32)
    d2 = (i[:, None] - i[None, :]) ** 2
    scores = scores_of(d2, s) if scores_of else -d2 / (2 * s ** 2)
    if mask == "after":
        return torch.softmax(scores, dim=-1) * torch.tril(torch.ones(T, T))
    if mask == "before":
        scores = scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, fill)
    A = torch.softmax(scores, dim=dim)
    return post(A) if post else A


def smoothing_cdist(T, s):
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    scores = -torch.cdist(pos, pos) ** 2 / (2 * s ** 2)
    return torch.softmax(scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), -math.inf), dim=1)


def smoothing_loops(T, s):
    A = [[0.0] * T for _ in range(T)]
    for i in range(T):
        w = [math.exp(-(i - j) ** 2 / (2 * s * s)) for j in range(i + 1)]
        for j in range(i + 1):
            A[i][j] = w[j] / sum(w)
    return A


def smoothing_numpy(T, s):
    i = np.arange(T)
    scores = -np.subtract.outer(i, i) ** 2 / (2 * s ** 2)
    scores[np.triu_indices(T, 1)] = -np.inf
    e = np.exp(scores - scores.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("fn", [smoothing, smoothing_cdist, smoothing_loops, smoothing_numpy,
                                lambda T, s: smoothing(T, s, fill=-1e9)],
                         ids=["broadcast", "cdist", "loops", "numpy", "big-negative-fill"])
def test_smoothing_correct_variants_get_full_marks(fn):
    v = verdict("smoothing_attention_hidden", smoothing_attention=fn)
    assert v.fraction == 1, failed(v)


KERNEL = "the weights of the Gaussian kernel for several T and s"


@pytest.mark.parametrize("kw, lost, cause", [
    (dict(scores_of=lambda d2, s: -d2 / (2 * s ** 4)), {KERNEL}, "squared twice"),
    (dict(scores_of=lambda d2, s: -d2 / s ** 2), {KERNEL}, "factor 2"),
    (dict(mask="none"), {"causal: exactly zero above the diagonal", KERNEL}, "no causal mask"),
    (dict(mask="after"), {"rows are on the simplex (nonnegative, summing to 1)", KERNEL}, "after the softmax"),
    (dict(dim=0), {"rows are on the simplex (nonnegative, summing to 1)",
                   "the kernel depends only on the distance i - j", KERNEL}, "dim=0"),
    (dict(post=lambda A: A.T), {"causal: exactly zero above the diagonal", KERNEL}, "transposed"),
    (dict(scores_of=lambda d2, s: d2 / (2 * s ** 2)), {"the weight decays away from the diagonal", KERNEL},
     "sign is flipped"),
])
def test_smoothing_mistakes_lose_the_right_parts(kw, lost, cause):
    v = verdict("smoothing_attention_hidden", smoothing_attention=lambda T, s: smoothing(T, s, **kw))
    failures = failed(v)
    assert lost <= set(failures), failures
    assert cause in failures[KERNEL]
    assert 0 < v.fraction < 1
