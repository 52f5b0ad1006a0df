"""Notebook 04's families of untrained heads, measured over 2,000 seeds (the notebook counts 200).

Building 2,000 heads takes longer than a notebook cell should (about 15 s on one core), so notebook
04 states these figures as measured here, and tests/test_prose_numbers.py recomputes them and checks
the notebook's sentences against them. Each head is the handout's construction (seed, then tok_emb,
pos_emb, Head(32, 16, T_max=64), in that order, on the first 64 characters of the corpus).

What is measured, with the notebook's own rule and its null (each row i's top key one of its i + 1
keys at random, each row on its own):
  * the diagonal: how many heads have 9 or more of their 63 rows' top keys on the diagonal (the line
    chance reaches in fewer than 1% of heads), against what chance gives, and the probability of so
    many or more by chance alone (binomial, one-sided);
  * every key 0..55 under that same null: the heads in which key j tops more rows than chance reaches
    in 1% of heads, over the number chance gives; key 0's place among the 56 keys;
  * the diagonal's tilt, the mean over the rows 1..63 of log A_ii minus the mean of log A_ij over the
    row's keys j <= i (0: no preference), and the older measure, the mean of log((i+1) A_ii), whose
    value for a head without preference is below 0.

    python tests/measure_04_heads.py [seeds]     prints the figures (default 2,000 seeds)
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

SEEDS = 2000


def chance_tail(first: int, T: int = 64):
    """P(count >= n), n = 0..T: how many of the rows first..T-1 have their top key on one given place
    that every one of them sees, when row i's top key is that place with probability 1/(i+1)."""
    import torch
    p = torch.zeros(T + 1, dtype=torch.float64)
    p[0] = 1.0
    for i in range(first, T):
        q = 1 / (i + 1)
        p = p * (1 - q) + torch.cat([p.new_zeros(1), p[:-1]]) * q
    return p.flip(0).cumsum(0).flip(0)


def binomial_at_least(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.exp(math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1)
                        + m * math.log(p) + (n - m) * math.log1p(-p)) for m in range(k, n + 1))


def heads(n: int = SEEDS):
    """A (n, 64, 64) and the traces of W_Q W_K^T (n,), for the seeds 0..n-1."""
    import torch
    import torch.nn as nn

    from dlcourse.data import Vocab, load_text
    from dlcourse.head import Head
    text = load_text()
    vocab = Vocab(text)
    idx = torch.tensor(vocab.encode(text[:64]))[None, :]
    As, traces = [], []
    with torch.no_grad():
        for seed in range(n):
            torch.manual_seed(seed)
            tok, pos, head = nn.Embedding(vocab.size, 32), nn.Embedding(64, 32), Head(32, 16, T_max=64)
            head(tok(idx) + pos(torch.arange(64))[None, :])
            As.append(head.A[0])
            traces.append((head.query.weight * head.key.weight).sum().item())
    return torch.stack(As), torch.tensor(traces)


def measure(n: int = SEEDS) -> dict:
    import torch
    As, traces = heads(n)
    rows = torch.arange(1, 64)
    top = As[:, 1:].argmax(dim=-1)                                        # (n, 63) each row's top key
    tail = chance_tail(1)
    line = int((tail < 0.01).nonzero()[0])                                # 9 rows
    diagonal = int(((top == rows).sum(1) >= line).sum())
    per_head = tail[line].item()
    tops = torch.stack([torch.bincount(t, minlength=64) for t in top])   # (n, 64) rows topped by each key
    crossed, by_chance = [], []
    for key in range(56):
        key_tail = chance_tail(max(key, 1))
        key_line = int((key_tail < 0.01).nonzero()[0])
        crossed.append(int((tops[:, key] >= key_line).sum()))
        by_chance.append(n * key_tail[key_line].item())
    excess = torch.tensor(crossed) / torch.tensor(by_chance)
    logs = As.double().log()                                              # -inf above the diagonal
    allowed = torch.tril(torch.ones(64, 64, dtype=torch.bool))
    row_mean = torch.where(allowed, logs, 0).sum(-1) / allowed.sum(-1)    # (n, 64) mean log weight of a row
    tilt = (logs.diagonal(dim1=1, dim2=2) - row_mean)[:, 1:].mean(1)      # (n,) 0: no preference
    old = (As.diagonal(dim1=1, dim2=2)[:, 1:] * (rows + 1)).log().double().mean(1)
    share = (As.diagonal(dim1=1, dim2=2)[:, 1:] * (rows + 1)).mean(1)    # (n,) mean of (i+1) A_ii
    bonus = 2 * traces.double() / 4                                       # 2 tr / sqrt(d_k), d_k = 16
    r = torch.corrcoef(torch.stack([bonus, tilt]))[0, 1].item()
    return {
        "seeds": n, "line": line,
        "diagonal_heads": diagonal, "diagonal_chance": n * per_head, "diagonal_excess": diagonal / (n * per_head),
        "diagonal_p": binomial_at_least(diagonal, n, per_head),
        "key0_heads": crossed[0], "key0_chance": by_chance[0], "key0_excess": excess[0].item(),
        "key0_rank": int((excess > excess[0]).sum()) + 1,
        "other_keys_excess": sum(crossed[1:]) / sum(by_chance[1:]),
        "tilt_mean": tilt.mean().item(), "tilt_positive": (tilt > 0).double().mean().item(),
        "old_tilt_mean": old.mean().item(), "old_tilt_positive": (old > 0).double().mean().item(),
        "more_than_share": (share > 1).double().mean().item(), "r_trace_tilt": r,
    }


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import torch
    torch.set_num_threads(1)
    for name, value in measure(int(sys.argv[1]) if len(sys.argv) > 1 else SEEDS).items():
        print(f"{name:20s} {value:.4g}" if isinstance(value, float) else f"{name:20s} {value}")
