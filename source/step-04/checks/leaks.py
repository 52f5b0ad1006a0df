"""More heads and matrices for 4.2's checks: leaks at every class of positions, leaks that cancel,
sequences longer than the notebook's, and the notebook's own Head.

A student's check must look at every position the spec names: the first, the middle and the last
of the past (outputs before t), of the future (keys after i), and positions past the notebook's 8
tokens; and it must compare entry by entry, since leaks of opposite signs cancel in a sum. Each
chaff here breaks the property at one class of positions only, so a check that looks at some of
them and not the others (or only at a sum) misses it. The wheats are the notebook's own `Head`,
unchanged, and its attention matrix at 64 tokens, as the visible checks use them.

The heads are the handout's head (suites.MutantHead's weights, from the same seeds) with a mask
or an output changed; they are served like the others (suites.BlackBox).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .suites import D, D_HEAD, SUITES, T_MAX, BlackBox, Case, MutantHead

FIRST = 8                   # the notebook's sequences: 8 tokens (the checks also try 12)
GRID = 2.0 ** -20           # outputs on a grid: sums and differences of them are exact in float64


class LeakHead(MutantHead):
    """The handout's head with a leak or a blind spot at one class of positions (`variant`)."""

    def forward(self, x):                                        # x: (B, T, d)
        x = x.to(self.key.weight.dtype)
        B, T, d = x.shape
        q, k, v = self.query(x), self.key(x), self.value(x)      # (B, T, d_head)
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5     # (B, T, T)
        i = torch.arange(T)[:, None]                             # query positions
        j = torch.arange(T)[None, :]                             # key positions
        keep = j <= i                                            # (T, T)
        variant = self.variant
        if variant == "tail_unmasked":          # a mask of the first 8 positions: later ones see everything
            keep = keep | (i >= FIRST)
        elif variant == "tail_blind":           # a position past the first 8 is seen by itself only
            keep = keep & ((j < FIRST) | (i == j))
        elif variant == "middle_row_unmasked":  # one middle position (3) sees the whole sequence
            keep = keep | (i == 3)
        elif variant == "middle_row_self_only":  # one middle position (4) sees itself only
            keep = keep & ((i != 4) | (j == 4))
        elif variant == "sees_two_ahead":       # each token sees the token two ahead, never the last one
            keep = keep | ((j == i + 2) & (j < T - 1))
        A = F.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)   # (B, T, T)
        self.A = A.detach()
        out = A @ v                                               # (B, T, d_head)
        if variant == "cancelling_past_leak":
            # the last token leaks into positions 0 and 1 with opposite signs; on a grid, so that the leaks
            # cancel exactly in any sum (float64: every partial sum of grid numbers this size is exact)
            out = torch.round(out / GRID) * GRID
            leak = torch.round(0.01 * v[:, -1] / GRID) * GRID    # (B, d_head)
            out = out.clone()
            out[:, 0] = out[:, 0] + leak
            out[:, 1] = out[:, 1] - leak
        return out


def _leak(variant, seed, **kw):
    # build() the calibrated head, build(other) its twin: the same leak, other weights (suites.Case)
    return lambda other=None: BlackBox(LeakHead(variant, seed if other is None else other, **kw))


def _real_head(seed, T_max=T_MAX):
    """The notebook's own Head (dlcourse.head), built from its own seed (a twin: from `other`)."""
    def build(other=None):
        from dlcourse.head import Head
        with torch.random.fork_rng():
            torch.manual_seed(seed if other is None else other)
            return BlackBox(Head(D, D_HEAD, T_max))
    return build


def _real_head_weights(other=None):
    """The attention matrix of the notebook's own Head on 64 tokens, as the visible check builds it (a
    twin: from the seed `other`)."""
    from dlcourse.head import Head
    with torch.random.fork_rng():
        torch.manual_seed(1 if other is None else other)
        head = Head(D, D_HEAD, T_max=64)
        head(torch.randn(2, 64, D))
    return head.A


REAL_HEAD = Case("notebook_head", "wheat", "the notebook's own Head (dlcourse.head.Head)", _real_head(41),
                 hint="call head(x) with x as it is given (float32): the notebook's head is float32")
LONGER = [
    Case("tail_unmasked", "chaff",
         "a head whose mask covers only the first 8 positions (later ones see the whole sequence)",
         _leak("tail_unmasked", 42),
         hint="the sequence may be longer than the notebook's 8 tokens: take T from x.shape[1], never 8"),
    Case("tail_blind", "chaff",
         "a head in which a position past the first 8 is seen by no later position",
         _leak("tail_blind", 43),
         hint="the sequence may be longer than the notebook's 8 tokens: every position up to T = x.shape[1] counts"),
]

SUITES["causal_perturbation"] += [REAL_HEAD] + LONGER + [
    Case("middle_row_unmasked", "chaff", "a head whose middle position 3 sees the whole sequence",
         _leak("middle_row_unmasked", 44),
         hint="compare every output before t (out[:, :t]), the middle ones too, not only the first and the last"),
    Case("middle_row_self_only", "chaff",
         "a head whose middle position 4 attends only to itself (it ignores the tokens before it)",
         _leak("middle_row_self_only", 47),
         hint="every output from t on must change, the middle ones too, not only the first and the last"),
    Case("cancelling_past_leak", "chaff",
         "a float64 head whose future leaks into positions 0 and 1 have opposite signs (they cancel in a sum)",
         _leak("cancelling_past_leak", 45, dtype=torch.float64),
         hint="compare entry by entry (torch.equal): leaks of opposite signs cancel in a sum of differences"),
]
SUITES["causal_gradient"] += [REAL_HEAD] + LONGER + [
    Case("sees_two_ahead", "chaff",
         "a head in which each token sees the token two ahead (a future key in the middle, never the last one)",
         _leak("sees_two_ahead", 46),
         hint="every future position j > i must have a zero gradient, the middle ones too, not only the next "
              "and the last"),
]
SUITES["simplex"] += [
    Case("notebook_head_t64", "wheat", "the A of the notebook's own Head on 64 tokens (as the visible check's)",
         _real_head_weights,
         hint="compare the row sums with 1 within a float32 tolerance (1e-5), never with =="),
]
