"""Hidden checks of notebook 06-going-further: correct variants get full marks, real mistakes lose
points in the part that names them. Probe and judge run here, as in nbgrader, through the same requests as in grading."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from autograder.selfgrade import probe_and_judge
from conftest import STEP4

GAPS_HINTS = STEP4.checks["bonus_permutation_gaps"].HINTS
STREAMING_HINTS = STEP4.checks["bonus_streaming_attention"].HINTS

NEG = float("-inf")


def verdict(grade_id, **answers):
    return probe_and_judge(grade_id, answers)


def failed(v):
    return {p.name for p in v.failures()}


# ---- permutation_gaps ----------------------------------------------------------------------

def gaps_right(head, tok_emb, pos_emb, idx, perm):
    T = idx.shape[1]
    P = pos_emb(torch.arange(T))
    x = tok_emb(idx)
    g = lambda a, b: (a - b).abs().max().item()
    return (g(head(x[:, perm]), head(x)[:, perm]), g(head((x + P)[:, perm]), head(x + P)[:, perm]),
            g(head(tok_emb(idx[:, perm])), head(tok_emb(idx))[:, perm]),
            g(head(tok_emb(idx[:, perm]) + P), head(tok_emb(idx) + P)[:, perm]))


def gaps_numpy(head, tok_emb, pos_emb, idx, perm):
    with torch.no_grad():
        P = pos_emb.weight[: idx.shape[1]]
        pairs = [(head(tok_emb(idx)[:, perm]), head(tok_emb(idx))[:, perm]),
                 (head((tok_emb(idx) + P)[:, perm]), head(tok_emb(idx) + P)[:, perm]),
                 (head(tok_emb(idx[:, perm])), head(tok_emb(idx))[:, perm]),
                 (head(tok_emb(idx[:, perm]) + P), head(tok_emb(idx) + P)[:, perm])]
    return [np.abs(a.numpy() - b.numpy()).max() for a, b in pairs]


def gaps_typed_in(*args):
    return (6e-8, 1.2e-7, 6e-8, 0.57)


def gaps_p_permuted(head, tok_emb, pos_emb, idx, perm):
    r = list(gaps_right(head, tok_emb, pos_emb, idx, perm))
    P = pos_emb(torch.arange(idx.shape[1]))
    r[3] = (head(tok_emb(idx[:, perm]) + P[perm]) - head(tok_emb(idx) + P)[:, perm]).abs().max().item()
    return r


@pytest.mark.parametrize("fn", [gaps_right, gaps_numpy])
def test_permutation_wheats(fn):
    v = verdict("bonus_permutation_gaps", permutation_gaps=fn)
    assert v.fraction == 1, v.report(2)


@pytest.mark.parametrize("fn, part", [
    (gaps_typed_in, "the gaps are measured (identity permutation, float64)"),
    (gaps_p_permuted, "gap 4 is the O(1) gap these inputs give (symmetry broken)"),
])
def test_permutation_chaffs(fn, part):
    v = verdict("bonus_permutation_gaps", permutation_gaps=fn)
    assert part in failed(v), v.report(2)
    assert v.fraction < 1


def test_typed_in_gaps_earn_nothing():
    assert verdict("bonus_permutation_gaps", permutation_gaps=gaps_typed_in).fraction == 0


def test_permutation_hint_only_for_an_answer_that_ignores_its_arguments():
    """The same four numbers on every case is measured; P moved with the tokens is not (gap 4 at rounding level
    is what leaving P out gives too): its feedback says what gap 4 compares, and names no cause."""
    words = GAPS_HINTS["same_for_every_case"]
    assert words in verdict("bonus_permutation_gaps", permutation_gaps=gaps_typed_in).report(2)
    report = verdict("bonus_permutation_gaps", permutation_gaps=gaps_p_permuted).report(2)
    assert words not in report and "unpermuted on both sides" in report, report


# ---- online_softmax ------------------------------------------------------------------------

def softmax_vectorised(scores):
    m = torch.full(scores.shape[:-1], NEG, dtype=scores.dtype)
    s = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for j in range(scores.shape[-1]):
        new = torch.maximum(m, scores[..., j])
        shift = torch.where(new == NEG, 0.0, new)
        s = s * torch.exp(m - shift) + torch.exp(scores[..., j] - shift)
        m = new
    shift = torch.where(m == NEG, 0.0, m)
    return torch.exp(scores - shift[..., None]) / s[..., None]


def softmax_rows_python(scores):
    flat = scores.reshape(-1, scores.shape[-1])
    out = torch.empty_like(flat)
    for r, row in enumerate(flat):
        m, s = NEG, 0.0
        for x in row.tolist():
            if x > m:
                s, m = (s * math.exp(m - x) if m != NEG else 0.0), x
            if x != NEG:
                s += math.exp(x - m)
        out[r] = torch.tensor([math.exp(x - m) / s if x != NEG else 0.0 for x in row.tolist()], dtype=flat.dtype)
    return out.reshape(scores.shape)


def softmax_running_output(scores):
    m = torch.full(scores.shape[:-1], NEG, dtype=scores.dtype)
    s = torch.zeros_like(m)
    w = torch.zeros_like(scores)
    for j in range(scores.shape[-1]):
        new = torch.maximum(m, scores[..., j])
        shift = torch.where(new == NEG, torch.zeros_like(new), new)
        scale = torch.exp(m - shift)
        w = w * scale[..., None]
        w[..., j] = torch.exp(scores[..., j] - shift)
        s, m = s * scale + w[..., j], new
    return w / s[..., None]


def softmax_zero_start(scores):
    m = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    s = torch.zeros_like(m)
    for j in range(scores.shape[-1]):
        new = torch.maximum(m, scores[..., j])
        s, m = s * torch.exp(m - new) + torch.exp(scores[..., j] - new), new
    return torch.exp(scores - m[..., None]) / s[..., None]


def softmax_no_guard(scores):
    m = torch.full(scores.shape[:-1], NEG, dtype=scores.dtype)
    s = torch.zeros_like(m)
    for j in range(scores.shape[-1]):
        new = torch.maximum(m, scores[..., j])
        s, m = s * torch.exp(m - new) + torch.exp(scores[..., j] - new), new
    return torch.exp(scores - m[..., None]) / s[..., None]


def softmax_no_rescale(scores):
    m = torch.full(scores.shape[:-1], NEG, dtype=scores.dtype)
    s = torch.zeros_like(m)
    for j in range(scores.shape[-1]):
        new = torch.maximum(m, scores[..., j])
        shift = torch.where(new == NEG, 0.0, new)
        s, m = s + torch.exp(scores[..., j] - shift), new
    shift = torch.where(m == NEG, 0.0, m)
    return torch.exp(scores - shift[..., None]) / s[..., None]


def softmax_torch_inside(scores):
    for j in range(scores.shape[-1]):
        scores[..., j]
    return torch.softmax(scores, dim=-1)


def softmax_one_shot(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


@pytest.mark.parametrize("fn", [softmax_vectorised, softmax_rows_python, softmax_running_output])
def test_online_softmax_wheats(fn):
    v = verdict("bonus_online_softmax", online_softmax=fn)
    assert v.fraction == 1, v.report(3)


@pytest.mark.parametrize("fn, part", [
    (softmax_zero_start, "very negative scores (around -1e4)"),
    (softmax_no_guard, "rows that start with -inf keys (fully masked prefix)"),
    (softmax_no_rescale, "ordinary scores, 1-D to 4-D"),
    (softmax_torch_inside, "keys visited one at a time"),
    (F.softmax, "keys visited one at a time"),
    (softmax_one_shot, "keys visited one at a time"),
])
def test_online_softmax_chaffs(fn, part):
    v = verdict("bonus_online_softmax", online_softmax=fn)
    assert part in failed(v), v.report(3)


def test_zero_start_is_named():
    v = verdict("bonus_online_softmax", online_softmax=softmax_zero_start)
    message = next(p.message for p in v.failures() if p.name.startswith("very negative"))
    assert "running max started at 0" in message and "starts at -inf" in message


# ---- streaming_attention -------------------------------------------------------------------

def attention_streamed(q, k, v):
    T, d_k = q.shape[-2], q.shape[-1]
    m = torch.full(q.shape[:-1], NEG, dtype=q.dtype)
    s = torch.zeros(q.shape[:-1], dtype=q.dtype)
    o = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j in range(T):
        sj = (q @ k[..., j, :, None]).squeeze(-1) / d_k ** 0.5
        sj = sj.masked_fill(torch.arange(T) < j, NEG)
        new = torch.maximum(m, sj)
        scale, w = torch.exp(m - new), torch.exp(sj - new)
        s, o, m = s * scale + w, o * scale[..., None] + w[..., None] * v[..., j, None, :], new
    return o / s[..., None]


def attention_rows(q, k, v):
    T, d = q.shape[-2], q.shape[-1]
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for i in range(T):
        m = torch.full(q.shape[:-2], NEG, dtype=q.dtype)
        s = torch.zeros_like(m)
        o = torch.zeros(*q.shape[:-2], v.shape[-1], dtype=q.dtype)
        for j in range(i + 1):
            sj = (q[..., i, :] * k[..., j, :]).sum(-1) / math.sqrt(d)
            new = torch.maximum(m, sj)
            scale, w = torch.exp(m - new), torch.exp(sj - new)
            s, o, m = s * scale + w, o * scale[..., None] + w[..., None] * v[..., j, :], new
        out[..., i, :] = o / s[..., None]
    return out


def attention_one_shot(q, k, v):
    T = q.shape[-2]
    S = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(torch.tril(torch.ones(T, T)) == 0, NEG)
    return F.softmax(S, dim=-1) @ v


def attention_no_max(q, k, v):
    T, d = q.shape[-2], q.shape[-1]
    s = torch.zeros(q.shape[:-1], dtype=q.dtype)
    o = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j in range(T):
        w = torch.exp((q @ k[..., j, :, None]).squeeze(-1) / d ** 0.5).masked_fill(torch.arange(T) < j, 0.0)
        s, o = s + w, o + w[..., None] * v[..., j, None, :]
    return o / s[..., None]


@pytest.mark.parametrize("fn", [attention_streamed, attention_rows])
def test_streaming_attention_wheats(fn):
    v = verdict("bonus_streaming_attention", streaming_attention=fn)
    assert v.fraction == 1, v.report(2)


@pytest.mark.parametrize("fn, part", [
    (attention_one_shot, "keys and values visited one at a time"),
    (attention_no_max, "large scores (q·k/√d_k in the hundreds, and rows whose scores are all near -1e4)"),
])
def test_streaming_attention_chaffs(fn, part):
    v = verdict("bonus_streaming_attention", streaming_attention=fn)
    assert part in failed(v), v.report(2)


def attention_scaled_by_length(q, k, v):
    """Attention with its scores divided by sqrt(T), not sqrt(d_k): a scale on each case, not one constant."""
    T = q.shape[-2]
    S = (q @ k.transpose(-2, -1) / T ** 0.5).masked_fill(torch.tril(torch.ones(T, T)) == 0, NEG)
    return F.softmax(S, dim=-1) @ v


def test_streaming_attention_names_a_constant_scale_only_where_one_constant_fits_every_case():
    """The hint "scaled by a constant" needs one constant on every case where the scale shows: a scale that
    follows T gets what each case measured (right attention but for the scale), no cause."""
    v = verdict("bonus_streaming_attention", streaming_attention=attention_scaled_by_length)
    report = v.report(2)
    assert any(name.startswith("causal attention, batch 2") for name in failed(v)), report
    assert "right causal attention but for the scale of the scores" in report, report
    assert STREAMING_HINTS["scores_other_scale"] not in report, report


# ---- fit_exponent --------------------------------------------------------------------------

def fit_polyfit(Ts, times):
    return float(np.polyfit(np.log(Ts), np.log(times), 1)[0])


def fit_torch_log10(Ts, times):
    x = torch.log10(torch.tensor(np.asarray(Ts, dtype=float)))
    y = torch.log10(torch.tensor(np.asarray(times, dtype=float)))
    return (((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()).item()


@pytest.mark.parametrize("fn", [fit_polyfit, fit_torch_log10])
def test_fit_exponent_wheats(fn):
    v = verdict("bonus_fit_exponent", fit_exponent=fn)
    assert v.fraction == 1, v.report(2)


@pytest.mark.parametrize("fn, hint", [
    (lambda Ts, times: 2.0, "typed in"),
    (lambda Ts, times: math.log(times[-1] / times[0]) / math.log(Ts[-1] / Ts[0]), "two points"),
    (lambda Ts, times: float(np.polyfit(np.log(times), np.log(Ts), 1)[0]), "log T against log time"),
    (lambda Ts, times: float(np.polyfit(np.log(Ts), np.log10(times), 1)[0]), "mixed bases"),
])
def test_fit_exponent_chaffs(fn, hint):
    v = verdict("bonus_fit_exponent", fit_exponent=fn)
    assert "noisy power laws: the least-squares slope over all points" in failed(v), v.report(2)
    assert any(hint in p.message for p in v.failures()), v.report(2)
