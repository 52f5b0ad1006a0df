"""Families of chaffs: one fault put at each place in turn, judged as one part of the verdict.

A chaff with its fault at one fixed place (row 3 of A, output position 3, feature 17) is missed by a check
that looks everywhere but there, and caught by a check that skips any other place: a check broken at a place
no chaff isolates keeps full marks. So the chaffs below come in families: the same fault at every row, every
entry above the diagonal, every past or later position (absolute, and counted from t or i), every sequence of
the batch, every output coordinate, several features of a token and a function of its features that no
reordering or sign change of them moves. A family counts as one part (the chaff already in the suite that it
grows from is its first case, and names it: suites.FAMILIES), caught only when every one of its cases is; the
feedback names the first case the check missed, and where its fault is.

A case whose fault only one position shows (output s seeing token t only shows when token t changes) is tried
at that position alone (Case.params); each family meets one twin of its cases, drawn for the submission
(tests.py, Examplar.twins), beside the twin of its first case.

The gradient suite also gets two correct heads whose past reaches out_i through a single input feature of
x_0 (an odd one, an even one): a check that looks for the past's gradient on some features only rejects one.
"""
from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F

from . import leaks  # noqa: F401  the chaffs some families grow from are there: leaks first
from .suites import (B, FAMILIES, SUITES, T, BlackBox, Case, MutantHead, _causal_softmax, _lower_triangle,
                     _scores)

PERTURBATION_T = (2, 5, 7, 9)       # tests.CheckPerturbation.params
GRADIENT_I = (0, 3, 9)              # of tests.CheckGradient.params: not 5, so that any i < 8 on 8 tokens, or
                                    # 9 on 12, shows a case tried at all of them (tests/test_probeserver.py)
LEAK = 0.01
# the output coordinates of 16 a perturbation case leaks into, one each (every call of a student's check costs its
# hidden test's CPU, which the perturbation test has least of): odd and even ones, each remainder mod 3 and mod 4,
# both halves, the first and the last (the gradient's cases take every coordinate and every feature)
COORDINATES = (0, 2, 5, 7, 8, 10, 13, 15)


class PlaceHead(MutantHead):
    """The handout's head with one fault at one place, named by `variant` ("kind:place:place"):

    sees:q:k          query q also sees the future key k (one entry of the mask opened)
    blind:q:k         query q does not see key k <= q (one entry of the mask closed)
    sequence:b        sequence b of the batch is not masked at all
    feature:f         input feature f of every token reaches every output
    squares           the sorted squares of every token's features reach every output: a permutation, a flip
                      or a sign change of a token's features leaves them bit for bit the same
    coordinate:c      output coordinate c sums its values over the whole sequence
    past_feature:f    (correct) key 0 is hidden from every later query, which gets x_0 back through feature f
    """

    def forward(self, x):                                        # x: (B, T, d)
        x = x.to(self.key.weight.dtype)
        b, t, d = x.shape
        q, k, v = self.query(x), self.key(x), self.value(x)      # (B, T, d_head)
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5     # (B, T, T)
        kind, *at = self.variant.split(":")
        at = [int(a) for a in at]
        keep = _lower_triangle(t, torch.bool).expand(b, t, t).clone()                      # (B, T, T)
        if kind in ("sees", "blind") and max(at) < t:           # a place past the sequence: the head is correct
            keep[:, at[0], at[1]] = kind == "sees"
        elif kind == "sequence" and at[0] < b:
            keep[at[0]] = True
        elif kind == "past_feature":
            keep[:, 1:, 0] = False
        A = F.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)    # (B, T, T)
        self.A = A.detach()
        out = A @ v                                               # (B, T, d_head)
        if kind == "feature":
            out = out + LEAK * x[:, :, at[0]].sum(dim=1)[:, None, None]
        elif kind == "squares":
            out = out + LEAK * x.pow(2).sort(dim=-1).values.sum(dim=-1).sum(dim=1)[:, None, None]
        elif kind == "coordinate":
            out = out.clone()
            out[:, :, at[0]] = out[:, :, at[0]] + LEAK * v[:, :, at[0]].sum(dim=1, keepdim=True)
        elif kind == "past_feature":
            out = out.clone()
            out[:, 1:] = out[:, 1:] + LEAK * x[:, 0, at[0]][:, None, None]
        return out


def _place(variant, seed):
    return lambda other=None: BlackBox(PlaceHead(variant, seed if other is None else other))


def _family(suite: str, first: str, what: str, members: list[Case]) -> None:
    """Make the suite's chaff `first` the first case of a family that `members` join (appended to the suite)."""
    cases = SUITES[suite]
    n = next(n for n, c in enumerate(cases) if c.name == first)
    cases[n] = replace(cases[n], family=first)
    FAMILIES[f"{suite}/{first}"] = what
    cases += [replace(m, name=f"{first}@{m.name}", family=first) for m in members]


def _cycle(params, n):
    return (params[n % len(params)],)


# ---- check_simplex: a fault in one row, one entry, one sequence -------------------------------

def _negative_diagonal(r, b, seed):
    def build(other=None):
        A = _causal_softmax(_scores(seed if other is None else other)).clone()
        shift = A[b, r, r] + 0.01
        A[b, r, r] -= shift                   # -0.01 on the diagonal ...
        A[b, r, 0] += shift                   # ... the row still sums to 1 and stays causal
        return A
    return build


def _row_scaled(r, b, seed):
    def build(other=None):
        A = _causal_softmax(_scores(seed if other is None else other)).clone()
        A[b, r] *= 0.9
        return A
    return build


def _future_weight(i, j, b, seed):
    def build(other=None):
        A = _causal_softmax(_scores(seed if other is None else other)).clone()
        A[b, i] *= 0.9
        A[b, i, j] = 0.1                      # the row still sums to 1
        return A
    return build


_family("simplex", "negative_entry",
        "a matrix with a negative weight whose row still sums to 1 (the same fault in each row in turn)",
        [Case(f"row{r}", "chaff", f"a matrix whose row {r} of sequence {r % B} has a -0.01 weight on its diagonal "
              "(its row still sums to 1)", _negative_diagonal(r, r % B, 100 + r),
              hint=f"only row {r} of sequence {r % B} has a negative weight here: check every entry of every row "
                   "and sequence, (A >= 0).all() over the whole A")
         for r in range(1, T)])
_family("simplex", "row_sum_0.9",
        "a matrix with one row summing to 0.9 (each row in turn)",
        [Case(f"row{r}", "chaff", f"a matrix whose row {r} of sequence {r % B} alone sums to 0.9",
              _row_scaled(r, r % B, 110 + r),
              hint=f"only row {r} of sequence {r % B} is wrong here: check the sum of every row of every sequence, "
                   "A.sum(dim=-1) whole")
         for r in range(T)])
_PAIRS = [(i, j) for i in range(T) for j in range(i + 1, T)]
_family("simplex", "first_row_future",
        "a matrix with a single weight above the diagonal, its row still summing to 1 (each entry above the "
        "diagonal in turn)",
        [Case(f"r{i}k{j}", "chaff", f"a matrix whose only future weight is 0.1 at row {i}, key {j} of sequence "
              f"{n % B} (its row still sums to 1)", _future_weight(i, j, n % B, 120 + n),
              hint=f"only the entry at row {i}, key {j} is wrong here: every entry above the diagonal must be zero, "
                   "each one (torch.triu(..., diagonal=1) over the whole T x T, in every sequence)")
         for n, (i, j) in enumerate(_PAIRS)])


# ---- check_causality_perturbation: a leak into one place of the past, one later output blind --------

_PAST = [(s, t) for t in (5, 9) for s in range(t)]          # 8 and 12 tokens: every position, every distance
_family("causal_perturbation", "middle_row_unmasked",
        "a head whose future leaks into one place of the past only (one output position, or one coordinate of "
        "every output: each in turn)",
        [Case(f"s{s}t{t}", "chaff", f"a head in which output {s} alone sees token {t} (one future key open in its "
              "mask)", _place(f"sees:{s}:{t}", 200 + n), params=(t,),
              hint=f"only output {s} moves when token {t} changes: compare every output before t, out[:, :t] "
                   "whole, not some positions")
         for n, (s, t) in enumerate(_PAST)]
        + [Case(f"coordinate{c}", "chaff", f"a head whose future leaks into output coordinate {c} only",
                _place(f"coordinate:{c}", 220 + c), params=_cycle(PERTURBATION_T, n),
                hint=f"only coordinate {c} of each output sees the future here: compare every coordinate, "
                     "torch.equal on out[:, :t] whole, not some of them")
           for n, c in enumerate(COORDINATES)])
_LATER = [(s, 2) for s in range(3, T)] + [(s, 9) for s in (10, 11)]     # s = t: q_t still sees x_t
_family("causal_perturbation", "middle_row_self_only",
        "a head in which one output from t on ignores token t (each output in turn)",
        [Case(f"s{s}t{t}", "chaff", f"a head in which output {s} alone ignores token {t} (one key closed in its "
              "mask)", _place(f"blind:{s}:{t}", 240 + n), params=(t,),
              hint=f"only output {s} stays the same when token {t} changes: every output from t to the end must "
                   "change, each one (range(t, x.shape[1]))")
         for n, (s, t) in enumerate(_LATER)])
_family("causal_perturbation", "batch_leak",
        "a head that leaks in some sequences of the batch only (each sequence in turn)",
        [Case(f"sequence{b}", "chaff", f"a head that leaves sequence {b} of the batch unmasked (the others are "
              "masked)", _place(f"sequence:{b}", 260 + b), params=_cycle(PERTURBATION_T, b),
              hint=f"only sequence {b} of the batch leaks here: compare every sequence, out[:, :t], not some of them")
         for b in range(B)])
_family("causal_perturbation", "feature_leak",
        "a head whose future leaks through a part or a function of a token's features only (each in turn)",
        [Case(f"feature{f}", "chaff", f"a head whose future leaks through input feature {f} only",
              _place(f"feature:{f}", 270 + f), params=_cycle(PERTURBATION_T, n),
              hint=f"only feature {f} of a token leaks here: change the whole token, every feature of x[:, t, :] "
                   "(torch.randn_like(x[:, t, :]))")
         for n, f in enumerate((0, 3, 6, 28, 31))]
        + [Case("squares", "chaff", "a head whose future leaks through the sorted squares of a token's features "
                "only", _place("squares", 310), params=(5,),
                hint="only the sorted squares of a token's features leak here, which a flip, a permutation or a "
                     "change of sign of the features keeps: draw token t anew (torch.randn_like(x[:, t, :]))")])


# ---- check_causality_gradient: a leak from one future token, one past token missing, one feature --------

_FUTURE = [(0, j) for j in range(1, T)] + [(3, j) for j in range(4, T)] + [(9, j) for j in (10, 11)]
_family("causal_gradient", "sees_two_ahead",
        "a head in which one position sees one future token (each pair in turn)",
        [Case(f"i{i}j{j}", "chaff", f"a head in which position {i} alone sees the future token {j}",
              _place(f"sees:{i}:{j}", 320 + n), params=(i,),
              hint=f"only x_{j} leaks into out_{i} here: every j > i must have a zero gradient, each one "
                   "(x.grad[0, i + 1:] whole), not some of them")
         for n, (i, j) in enumerate(_FUTURE)])
_HIDDEN = [(3, j) for j in range(3)] + [(9, j) for j in range(9)]        # j = i: q_i still sees x_i
_family("causal_gradient", "middle_key_hidden",
        "a head in which one position ignores one token at or before it (each pair in turn)",
        [Case(f"i{i}j{j}", "chaff", f"a head in which position {i} alone ignores token {j}",
              _place(f"blind:{i}:{j}", 340 + n), params=(i,),
              hint=f"only x_{j} is missing from out_{i} here: every j <= i must have a nonzero gradient, each one "
                   "(range(i + 1))")
         for n, (i, j) in enumerate(_HIDDEN)])
_family("causal_gradient", "feature_leak",
        "a head whose future leaks through one input feature only (each feature in turn)",
        [Case(f"feature{f}", "chaff", f"a head whose future leaks through input feature {f} only",
              _place(f"feature:{f}", 360 + f), params=_cycle(GRADIENT_I, f),
              hint=f"only feature {f} of the future has a gradient here: compare every feature, x.grad[0, j] "
                   "whole, not some of them")
         for f in range(32) if f != 17])
_family("causal_gradient", "coordinate_leak",
        "a head whose future leaks into one output coordinate only (each coordinate in turn)",
        [Case(f"coordinate{c}", "chaff", f"a head whose future leaks into output coordinate {c} only",
              _place(f"coordinate:{c}", 400 + c), params=_cycle(GRADIENT_I, c),
              hint=f"only coordinate {c} of out_i sees the future here: run backward from the whole output, "
                   "out[0, i].sum(), not from some coordinates")
         for c in range(16) if c != 9])
SUITES["causal_gradient"] += [
    Case(f"past_through_feature_{f}", "wheat",
         f"a correct head whose past reaches out_i only through feature {f} of x_0 (for i > 0)",
         _place(f"past_feature:{f}", 420 + f),
         hint=f"out_i depends on x_0 through feature {f} alone: a nonzero gradient on any feature of x.grad[0, j] "
              "counts, look at every feature")
    for f in (6, 17)]
