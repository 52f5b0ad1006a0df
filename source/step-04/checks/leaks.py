"""More heads and matrices for 4.2's checks: leaks at every class of positions, leaks that cancel,
sequences longer than the notebook's, leaks in one part of a tensor only, and the notebook's own Head.

A student's check must look at every position the spec names: the first, the middle and the last
of the past (outputs before t), of the future (keys after i), and positions past the notebook's 8
tokens; and it must compare entry by entry, since leaks of opposite signs cancel in a sum. Each
chaff here breaks the property at one class of positions only, so a check that looks at some of
them and not the others (or only at a sum) misses it. The wheats are the notebook's own `Head`,
unchanged, and its attention matrix at 64 tokens, as the visible checks use them.

A check must also look at the whole of each tensor it compares: every row of A, every feature of
x.grad, every coordinate of an output, every sequence of the batch; and a perturbation must change the
token's direction, not only its length (a head may ignore the length). The chaffs at the end of this module
are broken in one part only (a row, a feature, a coordinate, a key, a direction), so a check that samples
the parts misses them.

The last chaffs put a fault at the edge of a part (row 0 or the last row of A, the last key), make it cancel
within one position (opposite leaks into two output coordinates, a leak through the difference of two input
features: a sum over coordinates or features misses them), leak through one feature of token t (a perturbation
that changes a few features misses it), hide the keys more than 7 positions back (a sliding window of 8: only the
longer sequences show it), or stay below a tolerance a check should not have (a future gradient of about 1e-14, a
row summing to 1.00015: 15 times the spec's 1e-5, above every tolerance a correct check may have, up to 1e-4).

The heads are the handout's head (suites.MutantHead's weights, from the same seeds) with a mask
or an output changed; they are served like the others (suites.BlackBox).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .suites import D, D_HEAD, SUITES, T_MAX, BlackBox, Case, MutantHead, _causal_softmax, _scores, seed_cpu

FIRST = 8                   # the notebook's sequences: 8 tokens (the checks also try 12)
GRID = 2.0 ** -20           # outputs on a grid: sums and differences of them are exact in float64
LEAK_FEATURE = 17           # an input feature of 32: neither the first nor the last, odd, past the first half
LEAK_COORDINATE = 9         # an output coordinate of 16: neither the first nor the last, odd, past the first half
HIDDEN_KEY = 3              # a middle position, odd: no later query sees it
WINDOW = 8                  # a sliding window as long as the notebook's sequences: only longer ones show it
LEAK_POSITION = 1           # an output position before every t tried (2, 5, 7, 9)
CANCELLING_COORDINATES = (4, 11)    # two output coordinates of 16, neither the first nor the last
CANCELLING_FEATURES = (5, 22)       # two input features of 32, one in each half, neither the first nor 17
FAINT_GRAD = 1e-14          # a leak whose gradient (1e-14 at most) is below any tolerance, its square still normal


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
        elif variant == "middle_key_hidden":    # key 3 is seen by position 3 only
            keep = keep & ((j != HIDDEN_KEY) | (i == HIDDEN_KEY))
        elif variant == "window_8":             # each token sees itself and the 7 before it, no further back
            keep = keep & (j > i - WINDOW)
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
        elif variant == "cancelling_coordinate_leak":
            # every token leaks into two coordinates of one early position, with opposite signs; on a grid, so
            # that the two leaks cancel exactly in the position's sum over its coordinates
            out = torch.round(out / GRID) * GRID
            leak = torch.round(0.01 * v[:, :, 0].sum(dim=1) / GRID) * GRID     # (B,)
            out = out.clone()
            a, b = CANCELLING_COORDINATES
            out[:, LEAK_POSITION, a] = out[:, LEAK_POSITION, a] + leak
            out[:, LEAK_POSITION, b] = out[:, LEAK_POSITION, b] - leak
        elif variant == "cancelling_feature_leak":   # every token leaks through x_j[a] - x_j[b]: the gradients of
            a, b = CANCELLING_FEATURES               # the two features are +c and -c, which cancel in their sum
            out = out + 0.01 * (x[:, :, a] - x[:, :, b]).sum(dim=1)[:, None, None]
        elif variant == "faint_grad_leak":      # every position sees the future, with a gradient of 1e-14 at most
            out = out + FAINT_GRAD * v.sum(dim=1, keepdim=True)
        elif variant == "feature_leak":         # one input feature of every position reaches every output
            out = out + 0.01 * x[:, :, LEAK_FEATURE].sum(dim=1)[:, None, None]
        elif variant == "coordinate_leak":      # one output coordinate sums its values over the whole sequence
            out = out.clone()
            out[:, :, LEAK_COORDINATE] = out[:, :, LEAK_COORDINATE] + 0.01 * v[:, :, LEAK_COORDINATE].sum(dim=1,
                                                                                                  keepdim=True)
        elif variant == "direction_leak":       # every output sees the mean direction x / |x| of the sequence's
            # tokens: scaling a token by 2 leaves its direction unchanged, bit for bit (2 x and its norm are
            # exactly twice x and its norm: a power of two scales without rounding, so their quotient is the
            # same), and only a token changed otherwise shows the leak
            out = out + 0.1 * self.value(F.normalize(x, dim=-1)).mean(dim=1, keepdim=True)
        return out


def _leak(variant, seed, **kw):
    # build() the calibrated head, build(other) its twin: the same leak, other weights (suites.Case)
    return lambda other=None: BlackBox(LeakHead(variant, seed if other is None else other, **kw))


def _real_head(seed, T_max=T_MAX):
    """The notebook's own Head (dlcourse.head), built from its own seed (a twin: from `other`)."""
    def build(other=None):
        from dlcourse.head import Head
        with torch.random.fork_rng():
            seed_cpu(seed if other is None else other)
            return BlackBox(Head(D, D_HEAD, T_max))
    return build


def _real_head_weights(other=None):
    """The attention matrix of the notebook's own Head on 64 tokens, as the visible check builds it (a
    twin: from the seed `other`)."""
    from dlcourse.head import Head
    with torch.random.fork_rng():
        seed_cpu(1 if other is None else other)
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


# ---- leaks in one part of a tensor only ------------------------------------------------------

def _simplex_odd_row(other=None):
    """A correct A but for one odd row (sequence 1, row 3) scaled to sum to 0.9: every other row sums to 1."""
    A = _causal_softmax(_scores(33 if other is None else other)).clone()
    A[1, 3] *= 0.9
    return A


def _simplex_negative_last_row(other=None):
    """A correct A but for a -0.01 weight in the last row (sequence 2), its row still summing to 1."""
    A = _causal_softmax(_scores(34 if other is None else other)).clone()
    shift = A[2, -1, 0] + 0.01
    A[2, -1, 0] -= shift
    A[2, -1, 1] += shift
    return A


SUITES["simplex"] += [
    Case("row_sum_odd_row", "chaff", "a matrix whose row 3 alone sums to 0.9 (every even row sums to 1)",
         _simplex_odd_row,
         hint="only row 3 is wrong here: check the sum of every row, A.sum(dim=-1), not every other row or a sample"),
    Case("negative_last_row", "chaff", "a matrix with a negative weight in its last row (the row still sums to 1)",
         _simplex_negative_last_row,
         hint="the negative weight is in the last row: check every entry, (A >= 0).all() over the whole matrix, "
              "the first and the last rows included"),
]
SUITES["causal_perturbation"] += [
    Case("direction_leak", "chaff",
         "a head whose every output sees the direction x / |x| of every token (a token's length does not leak)",
         _leak("direction_leak", 48),
         hint="scaling a token keeps its direction, which is all that leaks here: perturb token t by drawing it "
              "anew (torch.randn_like), not by multiplying it"),
]
SUITES["causal_gradient"] += [
    Case("feature_leak", "chaff",
         f"a head whose future leaks through one input feature only (x[..., {LEAK_FEATURE}] of 32)",
         _leak("feature_leak", 49),
         hint=f"only feature {LEAK_FEATURE} of the future has a gradient here: compare every feature, "
              "x.grad[0, j] whole, not x.grad[..., 0] or a few features"),
    Case("coordinate_leak", "chaff",
         f"a head whose future leaks into one output coordinate only (out[..., {LEAK_COORDINATE}] of 16)",
         _leak("coordinate_leak", 50),
         hint=f"only coordinate {LEAK_COORDINATE} of out_i sees the future here: run backward from the whole "
              "output, out[0, i].sum(), not from one coordinate such as out[0, i, 0]"),
    Case("middle_key_hidden", "chaff",
         f"a head in which no later position sees token {HIDDEN_KEY} (a middle key is masked for every query "
         f"i > {HIDDEN_KEY})",
         _leak("middle_key_hidden", 51),
         hint=f"only position {HIDDEN_KEY} is missing here: every j <= i must have a nonzero gradient, each one "
              "(range(i + 1)), not every other one"),
]


# ---- faults at the edge of a part, or that cancel within a position ---------------------------

def _simplex_first_row_sum(other=None):
    """A correct A but for row 0 of sequence 1 (its single weight on key 0) scaled to 0.9."""
    A = _causal_softmax(_scores(35 if other is None else other)).clone()
    A[1, 0] *= 0.9
    return A


def _simplex_first_row_future(other=None):
    """A correct A but for row 0 of sequence 2 putting 0.1 on the future key 5, its row still summing to 1."""
    A = _causal_softmax(_scores(36 if other is None else other)).clone()
    A[2, 0, 0] = 0.9
    A[2, 0, 5] = 0.1
    return A


def _simplex_last_row_sum(other=None):
    """A correct A but for the last row of sequence 1 scaled to sum to 0.9."""
    A = _causal_softmax(_scores(37 if other is None else other)).clone()
    A[1, -1] *= 0.9
    return A


def _simplex_last_key_future(other=None):
    """A correct A but for row 2 of sequence 3 putting 0.1 on the last key (T - 1), its row still summing to 1."""
    A = _causal_softmax(_scores(38 if other is None else other)).clone()
    A[3, 2] *= 0.9
    A[3, 2, -1] = 0.1
    return A


def _simplex_row_sum_1_5e_4(other=None):
    """A correct A but for one row (sequence 0, row 6) summing to 1.00015: 15 times the spec's tolerance, and
    1.5 times 1e-4, the loosest tolerance that still tells a float32 row sum from a real error (tests/mutant_equivalents.py)."""
    A = _causal_softmax(_scores(39 if other is None else other)).clone()
    A[0, 6] *= 1.00015
    return A


SUITES["simplex"] += [
    Case("first_row_sum", "chaff", "a matrix whose first row (row 0) of sequence 1 alone sums to 0.9",
         _simplex_first_row_sum,
         hint="only row 0 of sequence 1 is wrong here: check the sum of every row of every sequence, the first one "
              "included (A.sum(dim=-1) whole; a slice such as A[:, 1:] leaves row 0 out)"),
    Case("first_row_future", "chaff",
         "a matrix whose first row (row 0) of sequence 2 puts 0.1 on a future key (the row still sums to 1)",
         _simplex_first_row_future,
         hint="only row 0 of sequence 2 has a future weight here: every entry above the diagonal must be zero, in "
              "row 0 too (its keys 1 to T - 1 are all in the future)"),
    Case("last_row_sum", "chaff", "a matrix whose last row of sequence 1 alone sums to 0.9", _simplex_last_row_sum,
         hint="only the last row of sequence 1 is wrong here: check the sum of every row of every sequence, the "
              "last one included (A.sum(dim=-1) whole; a slice such as A[:, :-1] leaves the last row out)"),
    Case("last_key_future", "chaff",
         "a matrix whose only future weight is on the last key, j = T - 1, in row 2 of sequence 3 (its row still "
         "sums to 1)",
         _simplex_last_key_future,
         hint="the future weight is in the last column (row 2 of sequence 3): every key j > i must be zero, the "
              "last key included (torch.triu(..., diagonal=1) over the whole T x T; a slice such as A[..., :-1] "
              "leaves the last key out)"),
    Case("row_sum_1.00015", "chaff", "a matrix with one row summing to 1.00015 (15 times the spec's tolerance)",
         _simplex_row_sum_1_5e_4,
         hint="float32 row sums are 1 to about 1e-7, and the spec's tolerance is 1e-5: a tolerance of 1.5e-4 or "
              "more lets this row through"),
]
SUITES["causal_perturbation"] += [
    Case("cancelling_coordinate_leak", "chaff",
         f"a float64 head whose future leaks into two coordinates of position {LEAK_POSITION} with opposite signs "
         "(they cancel in a sum over coordinates)",
         _leak("cancelling_coordinate_leak", 52, dtype=torch.float64),
         hint="compare every coordinate of each output (torch.equal on out[:, :t] whole), not out[:, :t].sum(-1): "
              "leaks of opposite signs into two coordinates cancel in their sum"),
    Case("feature_leak", "chaff",
         f"a head whose future leaks through one input feature only (x[..., {LEAK_FEATURE}] of 32)",
         _leak("feature_leak", 53),
         hint=f"only feature {LEAK_FEATURE} of a token leaks here: change the whole token, every feature of "
              "x[:, t, :] (torch.randn_like(x[:, t, :])), not a few of its features"),
]
SUITES["causal_gradient"] += [
    Case("cancelling_feature_leak", "chaff",
         f"a head whose future leaks through x_j[{CANCELLING_FEATURES[0]}] - x_j[{CANCELLING_FEATURES[1]}] (the two "
         "features' gradients cancel in a sum over features)",
         _leak("cancelling_feature_leak", 54),
         hint="compare every entry of x.grad[0, j] with 0, not its sum over the features: the leak's gradients "
              "on two features have opposite signs"),
    Case("window_8", "chaff",
         f"a head in which each token sees only itself and the {WINDOW - 1} tokens before it (a sliding window of "
         f"{WINDOW})",
         _leak("window_8", 55),
         hint="at i = 9 of 12 tokens, positions 0 and 1 lie outside its window: every j <= i must have a nonzero "
              "gradient, however far back (range(i + 1), not the last few positions)"),
    Case("faint_grad_leak", "chaff", "a head whose future gradient is about 1e-14, below any tolerance",
         _leak("faint_grad_leak", 56),
         hint="'exactly zero' means == 0, with no tolerance however small: this leak's gradient is about 1e-14"),
]
