"""Wheats and chaffs: the heads and attention matrices a student's checks are tried on.

A check written in 4.2 must return quietly on every wheat (a correct head or matrix) and
raise AssertionError on every chaff (a head or matrix that breaks the property it checks).
Each chaff is a real mistake, described in the words the feedback shows.

`Case.build()` makes the calibrated head or matrix; `Case.build(seed)` one of the same kind from
other random numbers (other weights, other scores): each submission meets a twin of every case,
drawn for it (tests.py, Examplar), and a case counts only when the check is right on both. Every
mistake below shows whatever the draw (a leak, a missing mask, a wrong sum are properties of the
construction, not of the numbers), so a check's verdict on a twin is its verdict on the case.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

D, D_HEAD, B, T = 32, 16, 4, 8
T_MAX = 16                  # the heads take the checks' longer sequences too (12 tokens: past the notebook's 8)


def seed_cpu(seed: int) -> None:
    """torch.manual_seed(seed) as the checks' CPU heads see it: the CPU generator's seed is all it changes on
    a machine without accelerators (the same draws after it). torch.manual_seed also queues a seeding for
    every device type not yet started (CUDA, XPU, MTIA), each with the call's stack formatted as text, so a
    call costs more the deeper it is made: measured (torch 2.13 on CPU, the fastest of 5 x 2,000 calls, on a
    quiet and on a busy machine) 0.12-0.24 ms at the top of a script, 0.33-0.46 ms 30 frames deep, 0.55-0.87
    ms at 60, 0.82-1.32 ms at 100, 0.37 ms at the top of a kernel's cell (22 frames); the generator's own
    manual_seed, 0.001 ms. A head is built, and seeded, for every case a student's check is tried on."""
    torch.random.default_generator.manual_seed(int(seed))


@dataclass(frozen=True)
class Case:
    name: str
    kind: str            # "wheat" (must pass) or "chaff" (must be caught)
    description: str     # what the head or matrix does, as the feedback says it
    build: Callable[..., object]     # build() the calibrated object, build(seed) a twin of the same kind
    hint: str = ""       # the feedback's advice when a check gets this case wrong
    family: str = ""     # a chaff of a family (families.py): the name of the family's first case. A family
                         # is one part of the verdict, caught only when every one of its cases is
    params: tuple = ()   # the positions (t, i) the check is tried at on this case (empty: every one of the
                         # check's own): a family's case whose fault only one position shows is tried there


@functools.lru_cache(maxsize=None)
def _lower_triangle(t: int, dtype=torch.float32) -> torch.Tensor:
    """torch.tril(torch.ones(t, t)), made once per size: a head, or a forward pass, copies it (torch.tril
    starts the CPU's threads even for a 16 x 16 matrix, for every head built)."""
    return torch.tril(torch.ones(t, t, dtype=dtype))


class MutantHead(nn.Module):
    """The handout's head, with one deliberate change selected by `variant`."""

    def __init__(self, variant: str = "correct", seed: int = 0, d=D, d_head=D_HEAD, T_max=T_MAX,
                 dtype=torch.float32):
        super().__init__()
        self.variant = variant
        with torch.random.fork_rng():          # build with its own seed, leave the caller's RNG alone
            seed_cpu(seed)
            self.key = nn.Linear(d, d_head, bias=False)
            self.query = nn.Linear(d, d_head, bias=False)
            self.value = nn.Linear(d, d_head, bias=False)
            self.constant = nn.Parameter(torch.randn(d_head))
        self.register_buffer("tril", _lower_triangle(T_max).clone())
        self.to(dtype)                         # float64: a leak through rounding is ~1e-16, far below any tolerance

    def forward(self, x):                                        # x: (B, T, d)
        x = x.to(self.key.weight.dtype)                          # a float32 head leaves x as it is
        B, T, d = x.shape
        q, k, v = self.query(x), self.key(x), self.value(x)      # (B, T, d_head)
        variant = self.variant
        if variant == "sdpa":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # (B, T, d_head)
            scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5           # (B, T, T)
            self.A = F.softmax(scores.masked_fill(self.tril[:T, :T] == 0, float("-inf")), dim=-1).detach()
            return out
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5     # (B, T, T)
        keep = self.tril[:T, :T] == 1                            # (T, T) True where j <= i
        if variant == "triu":
            keep = torch.triu(torch.ones(T, T, dtype=torch.bool))
        elif variant == "diagonal_masked":
            keep = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
        elif variant == "one_future_token":
            keep = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        elif variant == "self_only":
            keep = torch.eye(T, dtype=torch.bool)
        elif variant == "first_row_unmasked":                    # a mask loop that starts at row 1
            keep = keep.clone()
            keep[0] = True
        elif variant == "window":                                # each token sees itself and the one before
            keep = keep & torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
        elif variant == "skips_previous":                        # the mask also hides key j = i - 1
            keep = keep & ~torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1).triu(diagonal=-1)
        elif variant == "last_row_self_only":                    # a mask loop that stops before the last row
            keep = keep.clone()                                  # and leaves it the diagonal only
            keep[-1, :-1] = False
        elif variant == "first_key_hidden":                      # key 0 is seen by position 0 only
            keep = keep.clone()
            keep[1:, 0] = False
        if variant == "no_mask":
            A = F.softmax(scores, dim=-1)
        elif variant == "mask_zero":
            A = F.softmax(scores.masked_fill(~keep, 0.0), dim=-1)
        elif variant in ("mask_after_softmax", "mask_after_softmax_renorm"):
            A = F.softmax(scores, dim=-1) * keep
            if variant == "mask_after_softmax_renorm":
                A = A / A.sum(dim=-1, keepdim=True)
        elif variant == "batch_leak":
            masked = scores.masked_fill(~keep, float("-inf"))
            masked = torch.cat([masked[:1], scores[1:]], dim=0)   # only the first sequence is masked
            A = F.softmax(masked, dim=-1)
        else:
            A = F.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)   # (B, T, T)
        self.A = A.detach()
        out = A @ v                                               # (B, T, d_head)
        if variant == "tiny_leak":
            out = out + 1e-7 * v.sum(dim=1, keepdim=True)          # every position sees the future, faintly
        elif variant == "relative_leak":                           # a few ulps of each output: allclose never sees it
            out = out * (1 + 3e-7 * torch.tanh(v.sum(dim=1, keepdim=True)))
        elif variant == "tiny_grad_leak":                          # a gradient of 1e-10: below allclose's atol
            out = out + 1e-10 * v.sum(dim=1, keepdim=True)
        elif variant == "sequence_mean":
            out = out + 0.1 * v.mean(dim=1, keepdim=True)         # mixes in the mean over all positions
        elif variant == "ignores_input":
            out = self.constant.expand(B, T, -1) + 0.0 * x[..., : out.shape[-1]]
        elif variant == "last_leaks_back":
            out = out + 0.01 * v[:, -1:, :]                        # the last position leaks into all others
        elif variant == "cancelling_leak":                         # two future leaks of opposite signs: they
            out = out + 0.01 * (v[:, -1:, :] - v[:, -2:-1, :])     # cancel in a sum over positions, not one by one
        elif variant == "shifted":                                 # output i is the attention output of i - 1
            out = torch.cat([torch.zeros_like(out[:, :1]), out[:, :-1]], dim=1)
        return out


class BlackBox(nn.Module):
    """A head as a student's check sees it: call it, read .A after a call. It is served by the
    grader (autograder/checks/probeserver.py): the kernel holds a token, never this object."""

    def __init__(self, head: nn.Module):
        super().__init__()
        self.head = head

    def forward(self, x):
        # as the notebook's own head: nn.Linear refuses an input of another dtype than its weights (a student's
        # check that turns x to float64 crashes on a real head, so it crashes here). A float64 head takes the
        # float32 inputs the checks themselves give it (its precision only keeps its leak below any tolerance).
        own = self.head.key.weight.dtype
        if x.dtype != own and not (own == torch.float64 and x.dtype == torch.float32):
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_type_name(x.dtype)} and "
                               f"{_type_name(own)}")
        return self.head(x)

    @property
    def A(self):
        return getattr(self.head, "A", None)


def _type_name(dtype) -> str:
    """torch's own name of a dtype in its error messages: Float, Double, Half, Long..."""
    return torch.empty((), dtype=dtype).type().replace("torch.", "").replace("Tensor", "")


def _head(variant, seed=0, **kw):
    return lambda other=None: BlackBox(MutantHead(variant, seed if other is None else other, **kw))


CAUSAL_WHEATS = [
    Case("correct_seed0", "wheat", "a correct head", _head("correct", 0),
         hint="a token sees itself (tril keeps the diagonal), so out_i depends on x_i"),
    Case("correct_seed7", "wheat", "a correct head with other weights", _head("correct", 7),
         hint="a token sees itself (tril keeps the diagonal), so out_i depends on x_i"),
    Case("correct_tmax16", "wheat", "a correct head whose mask buffer is larger than T", _head("correct", 3, T_max=16),
         hint="its mask buffer is 16 x 16 for 8 tokens: treat the head as a black box (call head(x), never head.tril)"),
    Case("correct_sdpa", "wheat", "a correct head built on F.scaled_dot_product_attention", _head("sdpa", 5),
         hint="call head(x) only: a correct head need not have the handout's attributes or code"),
]

COMMON_CAUSAL_CHAFFS = [
    Case("no_mask", "chaff", "a head with no causal mask", _head("no_mask", 1)),
    Case("mask_zero", "chaff", "a head that fills the mask with 0 instead of -inf", _head("mask_zero", 2),
         hint="a score of 0 is not a weight of 0: exp(0) = 1"),
    Case("mask_after_softmax", "chaff", "a head that masks after the softmax", _head("mask_after_softmax", 3),
         hint="the softmax's denominator sums over every key, the future ones too"),
    Case("triu", "chaff", "a head whose mask is upper- instead of lower-triangular", _head("triu", 4)),
    Case("one_future_token", "chaff", "a head that lets each position see one future token", _head("one_future_token", 5),
         hint="compare every position before t, the one right before t included"),
    Case("tiny_leak", "chaff", "a head whose future leak is about 1e-7", _head("tiny_leak", 6),
         hint="'unchanged' and 'zero' mean exactly: torch.equal and == 0, not allclose"),
    Case("sequence_mean", "chaff", "a head that mixes in the mean over the whole sequence", _head("sequence_mean", 7)),
    Case("ignores_input", "chaff", "a head whose output ignores its input", _head("ignores_input", 8),
         hint="the property has two halves: the past must not move, and the present and past must matter"),
    Case("self_only", "chaff", "a head where each token attends only to itself (the past is ignored)",
         _head("self_only", 13),
         hint="the property has two halves: the future must not matter, and every position up to the boundary must"),
    Case("last_leaks_back", "chaff", "a head where only the last position leaks into the others", _head("last_leaks_back", 9),
         hint="it leaks only from the last position: test every future position, not only the next one "
              "(every x.grad[0, j] for j > i; every t, the last one included)"),
    Case("window", "chaff", "a head where each token sees only itself and the token before it",
         _head("window", 17),
         hint="the property's second half holds for every later position: each output from the boundary to the "
              "end of the sequence (or each j <= i) must depend on it, not only the nearest ones"),
    Case("skips_previous", "chaff", "a head whose mask also hides the previous token (key j = i - 1)",
         _head("skips_previous", 18),
         hint="every position up to the boundary must matter, the one right before it included"),
    Case("shifted", "chaff", "a head whose output at i is the attention output of i - 1 (shifted by one)",
         _head("shifted", 19),
         hint="a token must matter to its own output: out_i depends on x_i (j = i is allowed)"),
    Case("cancelling_leak", "chaff", "a head with two future leaks of opposite signs that cancel in a sum",
         _head("cancelling_leak", 20),
         hint="compare position by position (and entry by entry): leaks of opposite signs cancel in a sum"),
]

# family name (its first case's) -> what the family's cases share, as the verdict's part names it (families.py)
FAMILIES: dict[str, str] = {}

SUITES: dict[str, list[Case]] = {
    "causal_perturbation": CAUSAL_WHEATS + COMMON_CAUSAL_CHAFFS + [
        # float64, so that its leak (rounding, ~1e-16) is far below every tolerance a check may use: in
        # float32 the leak (~1e-8) sits at allclose's atol, and whether allclose saw it depended on the CPU
        Case("mask_after_softmax_renorm", "chaff",
             "a float64 head that masks after the softmax and renormalises (the future leaks through rounding)",
             _head("mask_after_softmax_renorm", 10, dtype=torch.float64),
             hint="its outputs move by about 1e-16 when the future changes: only a bitwise comparison sees it"),
        Case("batch_leak", "chaff", "a head that masks only the first sequence of the batch", _head("batch_leak", 11),
             hint="compare the whole batch, out[:, :t], not one sequence"),
        Case("relative_leak", "chaff", "a head whose future leak is 3e-7 of each output, inside allclose's tolerance",
             _head("relative_leak", 14),
             hint="'unchanged' means bitwise: torch.equal, not allclose"),
        Case("first_row_unmasked", "chaff",
             "a head whose mask leaves the first row open (position 0 sees the whole sequence)",
             _head("first_row_unmasked", 16),
             hint="only position 0 sees the future here: compare every output before t, out[:, :t], "
                  "not only the one right before t"),
        # a token t < T - 1 changes every output from t on but the last one: only a check that reaches the
        # last position (range(t, T), not range(t, T - 1)) sees it
        Case("last_row_self_only", "chaff",
             "a head whose last position attends only to itself (it ignores every earlier token)",
             _head("last_row_self_only", 21),
             hint="only the last output fails to change here: every output from t to the end must change, "
                  "the last one included (range(t, x.shape[1]), not x.shape[1] - 1)"),
    ],
    # masking after the softmax and renormalising leaks only through rounding in the backward pass too,
    # but whether that rounding error is exactly zero depends on the inputs: it is not a fair chaff here.
    "causal_gradient": CAUSAL_WHEATS + COMMON_CAUSAL_CHAFFS + [
        Case("first_row_unmasked", "chaff",
             "a head whose mask leaves the first row open (position 0 sees the whole sequence)",
             _head("first_row_unmasked", 16),
             hint="only position 0 sees the future here: look at the position i you are given, not a fixed one"),
        Case("diagonal_masked", "chaff", "a head that masks the diagonal too (no token sees itself)",
             _head("diagonal_masked", 12),
             hint="its first row is NaN: NaN is not zero, and a check must say so"),
        Case("tiny_grad_leak", "chaff", "a head whose future gradient is about 1e-10, below allclose's tolerance",
             _head("tiny_grad_leak", 15),
             hint="'zero' means exactly zero: == 0, not allclose"),
        # out_i has a zero gradient from x_0 for every i > 0, and only from x_0: only a check that reaches
        # position 0 (every j in range(i + 1), not range(1, i + 1)) sees it
        Case("first_key_hidden", "chaff",
             "a head in which no later position sees the first token (key 0 is masked for every query i > 0)",
             _head("first_key_hidden", 22),
             hint="only position 0 is missing here: every j <= i must have a nonzero gradient, the first "
                  "position j = 0 included (range(i + 1), not range(1, i + 1))"),
    ],
}


# ---- attention matrices for check_simplex(A) ---------------------------------------------

def _scores(seed, b=B, t=T, scale=1.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(b, t, t, generator=g)).to(dtype)


def _causal_softmax(scores):
    keep = _lower_triangle(scores.shape[-1], torch.bool)
    return F.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)


def _good(seed, **kw):
    return lambda other=None: _causal_softmax(_scores(seed if other is None else other, **kw))


def _negative_entry(seed=21):
    A = _causal_softmax(_scores(seed)).clone()
    shift = A[1, 5, 0] + 0.01
    A[1, 5, 0] -= shift                     # one weight set to -0.01 ...
    A[1, 5, 1] += shift                     # ... the row still sums to 1 and stays causal
    return A


def _row_scaled(factor, row=(2, 4)):
    def build(seed=22):
        A = _causal_softmax(_scores(seed)).clone()
        A[row[0], row[1]] *= factor
        return A
    return build


def _tiny_upper(seed=23):
    A = _causal_softmax(_scores(seed)).clone()
    A[0, 2, 6] = 1e-12                       # a weight on a future key, too small for allclose
    return A


def _mask_after_softmax(seed=24):
    s = _scores(seed)
    return F.softmax(s, dim=-1) * torch.tril(torch.ones(T, T))


def _no_mask(seed=25):
    return F.softmax(_scores(seed), dim=-1)


def _nan_row(seed=26):
    s = _scores(seed)
    keep = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
    return F.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)     # row 0 has no key left: NaN


def _bad_second_sequence(seed=27):
    A = _causal_softmax(_scores(seed)).clone()
    A[3] = F.softmax(_scores(seed + 1)[3], dim=-1)                    # the last sequence is unmasked
    return A


def _transposed(seed=29):
    return _causal_softmax(_scores(seed)).transpose(-2, -1).contiguous()


def _one_future_key(seed=31):
    s = _scores(seed)
    keep = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=1)       # j <= i + 1: one key too many
    return F.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)


def _cancelling_future(seed=32):
    A = _causal_softmax(_scores(seed)).clone()
    A[2, 3, 5] = 1e-3                        # a future weight ...
    A[2, 3, 6] = -1e-3                       # ... and a negative one beside it: the row's future sums to 0
    return A


def _mask_zero(seed=30):
    s = _scores(seed)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return F.softmax(s.masked_fill(future, 0.0), dim=-1)               # rows sum to 1, future weights > 0


SUITES["simplex"] = [
    Case("softmax_b4_t8", "wheat", "a correct attention matrix", _good(1),
         hint="a correct A has entries >= 0, rows (A.sum(dim=-1)) summing to 1 within 1e-5, and zeros strictly "
              "above the diagonal (j > i: torch.triu(..., diagonal=1)); the diagonal itself holds weight"),
    Case("softmax_b2_t64", "wheat", "a correct 64-token float32 matrix: row sums are 1 only to ~1e-7",
         _good(2, b=2, t=64, scale=3.0),
         hint="its float32 row sums differ from 1 by rounding alone (about 1e-7), within the spec's 1e-5"),
    Case("softmax_saturated", "wheat", "a correct matrix with one-hot rows (large scores)", _good(3, scale=60.0),
         hint="exp underflows to exactly 0 there: a weight of 0 below the diagonal is allowed (nonnegative, not positive)"),
    Case("softmax_float64", "wheat", "a correct float64 matrix", _good(4, dtype=torch.float64),
         hint="the same property in float64: a correct A of any floating dtype is accepted"),
    Case("softmax_t1", "wheat", "a correct matrix of a one-token sequence (T = 1)", _good(5, t=1),
         hint="each row is the single weight 1 on key 0: the upper triangle is empty, nothing lies above the "
              "diagonal"),
    Case("softmax_b1_t5", "wheat", "a correct matrix of a single 5-token sequence (B = 1)", _good(6, b=1, t=5),
         hint="one sequence of 5 tokens, not the notebook's 4 of 8: a correct A of any size is accepted"),
    Case("negative_entry", "chaff", "a matrix with a negative weight whose row still sums to 1", _negative_entry,
         hint="the negative weight is at row 5, key 0 of sequence 1: check every entry of every row and sequence, "
              "(A >= 0).all() over the whole A"),
    Case("row_sum_0.9", "chaff", "a matrix with one row summing to 0.9", _row_scaled(0.9),
         hint="only row 4 of sequence 2 is wrong here: check the sum of every row of every sequence, "
              "A.sum(dim=-1) whole"),
    Case("row_sum_1.0002", "chaff", "a matrix with one row summing to 1.0002", _row_scaled(1.0002),
         hint="a float32 row sum is 1 to about 1e-7: a tolerance of 1e-5 is plenty, 1e-3 lets real errors through"),
    Case("tiny_future_weight", "chaff", "a matrix with a 1e-12 weight above the diagonal", _tiny_upper,
         hint="'exactly zero' means == 0, not allclose"),
    Case("mask_after_softmax", "chaff", "masking after the softmax (rows sum to less than 1)", _mask_after_softmax),
    Case("mask_zero", "chaff", "a mask filled with 0 instead of -inf (rows sum to 1, weights above the diagonal)",
         _mask_zero, hint="the upper triangle must be exactly zero"),
    Case("no_mask", "chaff", "an unmasked softmax (weights above the diagonal)", _no_mask),
    Case("nan_row", "chaff", "a matrix with a NaN row (the diagonal was masked too)", _nan_row,
         hint="every comparison with NaN is False: assert that the good thing holds ((A >= 0).all()), "
              "not that the bad thing is absent (not (A < 0).any())"),
    Case("bad_last_sequence", "chaff", "a matrix whose last sequence in the batch is unmasked", _bad_second_sequence,
         hint="check every A[b] of the batch, not only A[0]"),
    Case("transposed", "chaff", "a transposed attention matrix (columns sum to 1, not rows)", _transposed,
         hint="rows are A.sum(dim=-1)"),
    Case("one_future_key", "chaff", "a matrix whose only future weight is on key j = i + 1 (rows sum to 1)",
         _one_future_key, hint="every entry strictly above the diagonal (j > i, torch.triu(..., diagonal=1)) must be "
                               "zero, the one right above it included"),
    Case("cancelling_future", "chaff", "a matrix with a +0.001 and a -0.001 weight above the diagonal (they cancel "
         "in a sum)", _cancelling_future, hint="compare each entry with 0, not their sum"),
]
