"""Hidden checks of notebook 06-going-further (optional: every point here is a bonus point).

Grade ids start with `bonus_` so reports can tell these points from the step's required total.

* bonus_permutation_gaps: the four gaps of the equivariance experiment, on heads and embeddings
  the check builds (other seeds, sizes, a batch of two, float64, the identity permutation).
* bonus_online_softmax: online_softmax against softmax on rows that break naive streaming code
  (very negative, very large, -inf entries, fully masked prefixes, length 1, float64), and a
  record of the torch calls it makes (a one-shot softmax or a reduction over the key axis).
* bonus_streaming_attention: streaming_attention against causal softmax attention.
* bonus_fit_exponent: fit_exponent on synthetic data only (never on timings).
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.checks import Check, Verdict, attempt, code_before, register, student, unpack

from dlcourse.contracts import contract

from .forms import attempt_form, form_of
from .process import source_reading, streamed_work


def quiet(probe):
    """A probe that silences warnings raised by the student's code: nbgrader scores a test cell that
    writes anything to stderr as zero, and a deprecation warning is not a wrong answer."""
    @functools.wraps(probe)
    def wrapper(self, ns, ctx):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return probe(self, ns, ctx)
    return wrapper


# ---------------------------------------------------------------------------------------------
# 1. Permutation equivariance
# ---------------------------------------------------------------------------------------------

V, D, D_HEAD = 65, 32, 16
# (seed, batch, T, dtype, identity permutation?, extra rows of pos_emb) -- the notebook uses one
# sequence of 32 real characters in float32 and a pos_emb of exactly T rows; these differ in seed,
# length (past 32 too), batch, precision and permutation, and the docstring allows a pos_emb of
# more than T rows ("at least T rows"): P is its first T rows, pos_emb(torch.arange(T)).
PERM_CASES = [
    (401, 1, 12, torch.float32, False, 0),
    (402, 2, 20, torch.float32, False, 0),
    (403, 1, 9, torch.float64, False, 0),
    (404, 1, 10, torch.float32, True, 0),
    (405, 2, 40, torch.float32, False, 24),
]


def _unmasked_head(d, d_head, T_max):
    from dlcourse.head import Head

    class _Unmasked(Head):
        def forward(self, x):                                    # x: (B, T, d)
            q, k, v = self.query(x), self.key(x), self.value(x)  # (B, T, d_head)
            A = F.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)   # (B, T, T)
            self.A = A.detach()
            return A @ v                                         # (B, T, d_head)

    return _Unmasked(d, d_head, T_max)


def build_perm_case(seed, B, T, dtype, identity, extra_rows=0):
    """(head, tok_emb, pos_emb, idx, perm), the same in the student's kernel and in the grader."""
    with torch.random.fork_rng():          # leave the caller's random state alone
        torch.manual_seed(seed)
        head = _unmasked_head(D, D_HEAD, T)
        tok_emb = nn.Embedding(V, D)
        pos_emb = nn.Embedding(T + extra_rows, D)               # a table at least T long
        idx = torch.randint(0, V, (B, T))                       # (B, T)
        perm = torch.randperm(T)
    if identity:
        perm = torch.arange(T)
    elif torch.equal(perm, torch.arange(T)):
        perm = torch.roll(perm, 1)
    return head.to(dtype), tok_emb.to(dtype), pos_emb.to(dtype), idx, perm


@torch.no_grad()
def reference_gaps(head, tok_emb, pos_emb, idx, perm):
    T = idx.shape[1]
    P = pos_emb(torch.arange(T))                                 # (T, d)
    x = tok_emb(idx)                                             # (B, T, d)
    gap = lambda a, b: (a - b).abs().max().item()
    return [gap(head(x[:, perm]), head(x)[:, perm]),
            gap(head((x + P)[:, perm]), head(x + P)[:, perm]),
            gap(head(tok_emb(idx[:, perm])), head(tok_emb(idx))[:, perm]),
            gap(head(tok_emb(idx[:, perm]) + P), head(tok_emb(idx) + P)[:, perm])]


GAPS = contract("permutation_gaps")
LABELS = ("rows, no positions", "rows, positions added to x", "tokens, no positions",
          "tokens, positions added after embedding")


# the cause its feedback can name, each only where measured: the answer gave the same four numbers for every
# case, which differ (the reference's gaps differ from case to case)
GAPS_HINTS = {"same_for_every_case": "the same four numbers came back for every case: the gaps do not follow "
                                     "the arguments"}


@register
class PermutationGaps(Check):
    grade_id = "bonus_permutation_gaps"
    points = 2
    HINTS = GAPS_HINTS

    @quiet
    def probe(self, ns, ctx):
        fn = student(ns, "permutation_gaps")
        # the result as the function returned it, judged by the contract (four Python floats), then read
        return [attempt_form("permutation_gaps", fn, *build_perm_case(*case), convert=lambda r: [float(g) for g in r])
                for case in self.cases(ctx)]

    def cases(self, ctx):
        """PERM_CASES and one of this submission's own (framework.fresh_rng: its seed, length and table),
        judged as they are, so gaps recorded from an earlier grading and returned from a table earn nothing."""
        rng = self.fresh(ctx, "case")
        return PERM_CASES + [(rng.randrange(10_000, 2**31), 2, rng.randint(8, 24), torch.float32, False,
                              rng.randint(1, 16))]

    def judge(self, data, ctx):
        verdict = Verdict()
        tiny_ok, tiny_msgs = True, []
        big_ok, big_msgs = True, []
        measured_ok, measured_msgs = True, []
        # the answer's gaps where every case returned them in the contract's form, else None
        values = [value if why is None and not form_of(entry) else None
                  for entry in data for value, why in [unpack(entry)]]
        constant = (len(values) == len(self.cases(ctx)) and isinstance(values[0], list)
                    and all(v == values[0] for v in values))
        for n, (case, entry) in enumerate(zip(self.cases(ctx), data)):
            seed, B, T, dtype, identity, extra_rows = case
            # the cases after PERM_CASES are this submission's own: their sizes are not shown
            label = ("this submission's own case" if n >= len(PERM_CASES) else
                     f"T={T}, batch {B}, {str(dtype).replace('torch.', '')}" + (", identity permutation" if identity else "")
                     + (", pos_emb longer than T" if extra_rows else ""))
            value, why = unpack(entry)
            why = why or form_of(entry)
            if why is None and not (isinstance(value, list) and len(value) == 4
                                    and all(isinstance(g, float) and math.isfinite(g) for g in value)):
                why = "expected four finite numbers (the four gaps, in the order of the docstring)"
            if why:
                tiny_ok = big_ok = measured_ok = False
                if "IndexError" in why or "RuntimeError" in why:
                    why += (" (these inputs have other sizes than the notebook's; T is idx.shape[1]"
                            + ("; pos_emb may have more than T rows: P = pos_emb(torch.arange(T))" if extra_rows else "")
                            + ")")
                for msgs in (tiny_msgs, big_msgs, measured_msgs):
                    msgs.append(f"{label}: {why}")
                continue
            ref = reference_gaps(*build_perm_case(*case))
            # the contract's tolerances: float32 rounding in a head whose outputs are below 1 is ~1e-7, allow
            # 100 times that; float64 rounding is ~1e-16, and a gap typed in as "about 1e-7" is far above
            # 1e-12; with the identity permutation both sides are the same computation (the visible check's 1e-6)
            tiny = GAPS.tol("float64") if dtype == torch.float64 else GAPS.tol("float32")
            if identity:
                if max(value) > min(tiny, GAPS.tol("identity")):
                    measured_ok = False
                    measured_msgs.append(
                        f"{label}: with perm = arange(T) nothing moves, so every gap must be 0 up to rounding, "
                        "and yours are not")
                continue
            for k in range(3):
                if not (0 <= value[k] <= tiny):
                    target = measured_msgs if dtype == torch.float64 and value[k] <= 1e-5 else tiny_msgs
                    if target is measured_msgs:
                        measured_ok = False
                        measured_msgs.append(
                            f"{label}: gap {k + 1} ({LABELS[k]}) is above float64 rounding, which is "
                            "about 1e-16: float64 arguments give float64 gaps")
                    else:
                        tiny_ok = False
                        tiny_msgs.append(
                            f"{label}: gap {k + 1} ({LABELS[k]}) is above rounding level, but attention without "
                            "a mask is exactly equivariant. Permute axis 1 (positions) of a (B, T, d) tensor, on the "
                            "input of one side and on the output of the other, and take the largest absolute "
                            "difference.")
            # the trap's gap: the same inputs give the same number up to float rounding
            if not abs(value[3] - ref[3]) <= 1e-5 + 1e-4 * ref[3]:
                big_ok = False
                formula = ("gap 4 compares head(tok_emb(idx[:, perm]) + P) with head(tok_emb(idx) + P)[:, perm], "
                           "P = pos_emb(torch.arange(T)), unpermuted on both sides")
                if value[3] <= 1e-3:
                    hint = f"yours is (nearly) zero, where these inputs give a gap of order 1: {formula}"
                else:
                    hint = f"it is not the largest absolute difference of the two outputs for these inputs: {formula}"
                big_msgs.append(f"{label}: gap 4 is not the gap of these inputs; {hint}")
        if constant:                        # measured: one answer for every case
            measured_ok = False
            measured_msgs.insert(0, GAPS_HINTS["same_for_every_case"])
        if tiny_ok and not measured_ok:     # small numbers typed in earn nothing
            tiny_ok = False
            tiny_msgs.append("not credited while the gaps do not follow the inputs (see 'the gaps are measured')")
        first = lambda msgs: msgs[0] + (f" (and {len(msgs) - 1} more like it)" if len(msgs) > 1 else "") if msgs else ""
        verdict.add("gaps 1-3 are at rounding level (equivariance holds)", tiny_ok, first(tiny_msgs))
        verdict.add("gap 4 is the O(1) gap these inputs give (symmetry broken)", big_ok, first(big_msgs))
        verdict.add("the gaps are measured (identity permutation, float64)", measured_ok, first(measured_msgs))
        return verdict


# ---------------------------------------------------------------------------------------------
# Recording the torch calls a streaming answer makes
# ---------------------------------------------------------------------------------------------

SOFTMAX_LIKE = {"softmax", "log_softmax", "_softmax", "_log_softmax", "special_softmax",
                "special_log_softmax", "softmin", "scaled_dot_product_attention"}
# reductions and the position of their `dim` argument (after the tensor), and their default
REDUCTIONS = {"sum": 1, "nansum": 1, "mean": 1, "nanmean": 1, "max": 1, "min": 1, "amax": 1, "amin": 1,
              "aminmax": None, "logsumexp": 1, "prod": 1, "argmax": 1, "argmin": 1, "median": 1,
              "nanmedian": 1, "std": 1, "var": 1, "norm": 2, "linalg_vector_norm": 2, "topk": 2,
              "sort": 1, "kthvalue": 2, "cummax": 1, "cumsum": 1, "logcumsumexp": 1, "cumprod": 1}
CONTRACTIONS = {"matmul", "__matmul__", "mm", "bmm", "mv", "dot", "vdot", "inner", "linear"}


class Shaped:
    """A tensor of a traced call, as the trace describes it: its shape only."""

    def __init__(self, shape):
        self.shape = tuple(int(n) for n in shape)

    def dim(self) -> int:
        return len(self.shape)


def _is_tensor(x) -> bool:
    return isinstance(x, (torch.Tensor, Shaped))


def _rebuild(described, depth=0):
    """Python values again from a trace's description: tensors as Shaped."""
    if isinstance(described, dict) and "__tensor_shape__" in described:
        return Shaped(described["__tensor_shape__"])
    if isinstance(described, list) and depth < 4:
        return [_rebuild(x, depth + 1) for x in described]
    if isinstance(described, dict) and depth < 4:
        return {k: _rebuild(v, depth + 1) for k, v in described.items()}
    return described


def _reduced_dims(name, args, kwargs):
    """The axes a reduction call collapses, or None if the call is not a reduction."""
    if not args or not _is_tensor(args[0]):
        return None
    x = args[0]
    pos = REDUCTIONS[name]
    dim = kwargs.get("dim", kwargs.get("axis"))
    if dim is None and pos is not None and len(args) > pos:
        dim = args[pos]
    if _is_tensor(dim):                        # torch.max(a, b): elementwise, not a reduction
        return None
    if isinstance(dim, bool):                  # var(x, unbiased)
        dim = None
    if dim is None or dim == () or dim == []:
        if name in ("topk", "sort", "cummax", "cumsum", "logcumsumexp", "cumprod", "kthvalue"):
            dim = -1
        else:
            return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % max(x.dim(), 1) for d in dims if isinstance(d, int)]


def _einsum_contracted_sizes(args):
    if not args or not isinstance(args[0], str):
        return []
    operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    eq = args[0].replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    sizes = {}
    for term, op in zip(terms, operands):
        if not _is_tensor(op):
            return []
        if "..." in term:
            head, tail = term.split("...")
            letters = list(head) + [None] * (op.dim() - len(head) - len(tail)) + list(tail)
        else:
            letters = list(term)
        for letter, size in zip(letters, op.shape):
            if letter is not None:
                sizes[letter] = size
    if "->" not in eq:
        counts = {c: lhs.count(c) for c in sizes}
        rhs = "".join(c for c in sizes if counts[c] == 1)
    return [size for letter, size in sizes.items() if letter not in rhs]


class CallRecorder:
    """Finds, in a call's trace, every torch call that works on the whole key axis (of the
    distinctive size T) at once."""

    def __init__(self, T):
        self.T = T
        self.flagged: list[str] = []

    def _flag(self, text):
        if text not in self.flagged and len(self.flagged) < 5:
            self.flagged.append(text)

    def replay(self, trace) -> list[str]:
        for call in trace:
            if isinstance(call, list) and len(call) == 3 and isinstance(call[0], str):
                args, kwargs = _rebuild(call[1]), _rebuild(call[2])
                self.record(call[0], args if isinstance(args, list) else [], kwargs if isinstance(kwargs, dict) else {})
        return self.flagged

    def record(self, name, args, kwargs):
        try:
            if name in SOFTMAX_LIKE:
                if any(_is_tensor(a) and self.T in a.shape for a in args):
                    self._flag(f"{name}(…) on a tensor with the whole key axis")
            elif name in REDUCTIONS:
                dims = _reduced_dims(name, args, kwargs)
                if dims is not None and any(args[0].shape[d] == self.T for d in dims if d < args[0].dim()):
                    self._flag(f"{name}(…) over the key axis (all {self.T} keys at once)")
            elif name in CONTRACTIONS:
                a = args[0] if args else None
                if _is_tensor(a) and a.dim() >= 1 and a.shape[-1] == self.T:
                    self._flag(f"{name}(…) summing over all {self.T} keys at once")
            elif name == "einsum":
                if self.T in _einsum_contracted_sizes(args):
                    self._flag(f"einsum(…) summing over all {self.T} keys at once")
        except Exception:   # an odd call in the trace is not a finding
            pass


def recorded_call(fn, T, *args):
    """Call the student's fn(*args), traced in the kernel; one-shot work over an axis of size T
    found in the trace: {'value', 'flagged'}."""
    value, trace = fn.traced(*args)
    return {"value": value, "flagged": list(CallRecorder(T).replay(trace))}


# ---------------------------------------------------------------------------------------------
# 2a. online_softmax
# ---------------------------------------------------------------------------------------------

NEG_INF = float("-inf")


def softmax_cases(seed=4242):
    """name -> list of score tensors. The visible check uses other sizes and values."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, dtype=torch.float32: torch.randn(*shape, generator=g, dtype=dtype)
    cases = {}
    cases["ordinary"] = [3 * r(4, 6, 17), r(17), 0.5 * r(2, 3, 5, 8)]
    cases["very_negative"] = [5 * r(5, 9) - 1e4, 2 * r(3, 17) - 3e4]
    cases["very_large"] = [5 * r(5, 9) + 1e4, 2 * r(2, 2, 17) + 5e4]
    cases["wide_range"] = [1e3 * r(6, 12)]
    x = 4 * r(6, 17)
    holes = torch.rand(6, 17, generator=g) < 0.4
    holes[:, 0] = False                                     # -inf only after a finite key (prefixes: below)
    holes[:, 5] = False
    cases["neg_inf"] = [x.masked_fill(holes, NEG_INF)]
    # fully masked prefixes: row i starts with i keys at -inf (the anti-causal pattern),
    # and rows whose first finite key is large or very negative
    T = 9
    prefix = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)     # row i: keys 0..i-1 masked
    y = 3 * r(T, T)
    z = torch.stack([torch.tensor([NEG_INF, NEG_INF, NEG_INF, 2.0, 3.0, -1.0]),
                     torch.tensor([NEG_INF, 7e3, NEG_INF, 7e3 + 2.0, NEG_INF, 0.0])])
    cases["masked_prefix"] = [y.masked_fill(prefix, NEG_INF), z]
    cases["length_1"] = [r(4, 1), 3 * r(2, 3, 1)]
    cases["float64"] = [4 * r(5, 17, dtype=torch.float64), 50 * r(3, 17, dtype=torch.float64)]
    return cases


def streaming_probe_scores():
    g = torch.Generator().manual_seed(77)
    return torch.randn(2, 3, 13, generator=g)           # the key axis (13) differs from every other axis


SOFTMAX_PARTS = {   # name -> (what it tests, weight, {symptom: what the spec says there})
    "ordinary": ("ordinary scores, 1-D to 4-D", 2.0, {}),
    "very_negative": ("very negative scores (around -1e4)", 2.0, {}),
    "very_large": ("very large scores (around +1e4)", 1.0, {}),
    "wide_range": ("scores spread over ±3000 (near one-hot rows)", 0.5, {}),
    "neg_inf": ("-inf entries among finite scores", 1.0, {
        "nan": "keys at -inf must get weight exactly 0 without producing NaN."}),
    "masked_prefix": ("rows that start with -inf keys (fully masked prefix)", 2.0, {}),
    "length_1": ("a single key (T = 1)", 0.5, {
        "any": "With one key, its weight is 1."}),
    "float64": ("the scores' dtype kept: a float32 tensor for float32 scores, float64 (at float64 precision) "
                "for float64", 1.0, {
        "dtype": "The weights have the scores' dtype: float64 scores give float64 weights.",
        "precision": "Float64 scores give weights right to float64 rounding."}),
}

# The mistakes a hint of online_softmax names, each computed by the judge itself (`_online_mistake`, the
# solution's loop with that one mistake, in the scores' dtype). A hint is shown only when the answer's weights
# are that mistake's weights on every case: then the judge has seen the cause. Otherwise the feedback says
# which property failed and names no cause.
ONLINE_MISTAKES = {
    "max_starts_at_zero": {"start": 0.0},
    "max_not_subtracted": {"shift": False},
    "nan_while_only_neg_inf": {"guard": False},
    "sum_not_rescaled": {"rescale": False},
    # a fixed shift other than the running max, each way an answer may choose it: shown when one way's weights
    # are the answer's on every case
    "offset_not_max": [{"offset": way} for way in ("first", "mean", "constant")],
}
ONLINE_HINTS = {
    "max_starts_at_zero": (
        "These are the weights of a running max started at 0 (or at another number far above every score of a "
        "row): on rows whose scores are all near -1e4, exp(score - 0) underflows to 0 for every key, so the sum "
        "is 0. The running max starts at -inf."),
    "max_not_subtracted": (
        "These are the weights of exp(score) with no running max subtracted: exp of a score in the thousands "
        "overflows to inf. Subtract the running max before exponentiating."),
    "nan_while_only_neg_inf": (
        "These are the weights of a loop that shifts by the running max while it is still -inf: "
        "exp(-inf - (-inf)) is NaN. The running sum is still 0 then, so nothing needs rescaling: use a rescale "
        "factor of 0 (for example, shift by 0 instead of by the max while the max is -inf)."),
    "sum_not_rescaled": (
        "These are the weights of a running sum that is not rescaled: when the running max grows from m to m', "
        "the running sum must be multiplied by exp(m - m') before the new term is added."),
    "offset_not_max": (
        "These are the weights of exp(score - c) / sum exp(score - c) with one c other than the row's max (its "
        "first score, its mean, a constant): where a row's scores spread over thousands exp overflows to inf "
        "(inf / inf is NaN), and a c of -inf gives exp(-inf - (-inf)), NaN. Keep a running max and subtract it."),
}


# the fixed shifts c of an online softmax written as exp(s - c) / sum exp(s - c) (ONLINE_MISTAKES' offset_not_max)
ONLINE_OFFSETS = {
    "first": lambda x: x[..., 0],
    "mean": lambda x: x.mean(dim=-1),
    "constant": lambda x: torch.full(x.shape[:-1], 80.0, dtype=x.dtype),
}


def _online_mistake(x: torch.Tensor, start=NEG_INF, shift=True, guard=True, rescale=True, offset=None) -> np.ndarray:
    """What the solution's loop gives on scores x (in x's dtype) with one mistake: the running max started at
    `start`; no running max subtracted (`shift`); shifted by the max even while it is -inf (`guard`); the
    running sum not rescaled when the max grows (`rescale`); a fixed shift of ONLINE_OFFSETS instead of the
    running max (`offset`: the sum of exp(s_j - c) over the keys, one at a time)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if offset is not None:
            c = ONLINE_OFFSETS[offset](x)
            z = torch.zeros(x.shape[:-1], dtype=x.dtype)
            for j in range(x.shape[-1]):
                z = z + torch.exp(x[..., j] - c)
            return (torch.exp(x - c[..., None]) / z[..., None]).numpy().astype(np.float64)
        m = torch.full(x.shape[:-1], start, dtype=x.dtype)
        z = torch.zeros(x.shape[:-1], dtype=x.dtype)
        safe = lambda t: torch.where(t == NEG_INF, torch.zeros_like(t), t) if guard else t
        for j in range(x.shape[-1]):
            s = x[..., j]
            new = torch.maximum(m, s)
            if shift:
                c = safe(new)
                z = z * (torch.exp(m - c) if rescale else 1.0) + torch.exp(s - c)
            else:
                z = z + torch.exp(s)
            m = new
        top = safe(m) if shift else torch.zeros_like(m)
        return (torch.exp(x - top[..., None]) / z[..., None]).numpy().astype(np.float64)


def same_numbers(value, expected, atol=1e-5, rtol=1e-4) -> bool:
    """Whether an answer's array is `expected`: the same shape, NaN and inf in the same places, the finite
    numbers equal to float32 rounding."""
    if not isinstance(value, np.ndarray) or value.shape != expected.shape:
        return False
    got = value.astype(np.float64)
    if not all(np.array_equal(where(got), where(expected)) for where in (np.isnan, np.isposinf, np.isneginf)):
        return False
    finite = np.isfinite(expected)
    return bool(np.all(np.abs(got[finite] - expected[finite]) <= atol + rtol * np.abs(expected[finite])))


def case_values(cases: dict, data: dict) -> list:
    """The answer's value on every case, in the order of `cases` (name -> list), None where none came back."""
    values = []
    for name, items in cases.items():
        entries = data.get(name, [])
        values += [unpack(entries[i])[0] if i < len(entries) else None for i in range(len(items))]
    return values


def shown_mistakes(cases, values, mistakes, compute) -> list[str]:
    """The names of `mistakes` whose output, computed by the judge (`compute(case, **kwargs)`), is the answer's
    on every case: the causes the judge has evidence of. None when a case returned no value. A mistake made in
    several ways (a list of kwargs) is shown when one way's output is the answer's on every case."""
    if len(values) != len(cases) or any(v is None for v in values):
        return []
    return [name for name, kwargs in mistakes.items()
            if any(all(same_numbers(v, compute(c, **way)) for c, v in zip(cases, values))
                   for way in (kwargs if isinstance(kwargs, list) else [kwargs]))]


SOFTMAX = contract("online_softmax")


def _softmax_reference(x: np.ndarray) -> np.ndarray:
    t = torch.from_numpy(np.asarray(x, dtype=np.float64))
    return torch.softmax(t, dim=-1).numpy()


@register
class OnlineSoftmax(Check):
    grade_id = "bonus_online_softmax"
    points = 3
    HINTS = ONLINE_HINTS

    @quiet
    def probe(self, ns, ctx):
        fn = student(ns, "online_softmax")
        # each result as the function returned it, its form judged by the contract (a tensor of the scores'
        # shape and dtype)
        out = {name: [attempt_form("online_softmax", fn, x.clone()) for x in xs] for name, xs in self.cases(ctx).items()}
        out["streaming"] = attempt(recorded_call, fn, 13, streaming_probe_scores())
        out["source"] = streamed_work(code_before(ctx, self), "online_softmax", {"scores": ("*", "K")})
        return out

    def cases(self, ctx):
        """softmax_cases(), each kind with the same recipe drawn again from a seed of this submission's
        own (framework.fresh_rng): scores recorded from an earlier grading earn nothing."""
        fresh = softmax_cases(self.fresh(ctx, "scores").getrandbits(62))
        return {name: xs + fresh[name] for name, xs in softmax_cases().items()}

    def judge(self, data, ctx):
        verdict = Verdict()
        cases = self.cases(ctx)
        # the contract's form (a tensor of the scores' shape and dtype) is one property: the dtype part's
        forms = [f for name in cases for e in data.get(name, []) if (f := form_of(e))]
        # the mistakes whose weights are the answer's on every case (the only causes a hint may name)
        shown = shown_mistakes([x for xs in cases.values() for x in xs], case_values(cases, data),
                               ONLINE_MISTAKES, _online_mistake)
        for name, xs in cases.items():
            label, weight, hint = SOFTMAX_PARTS[name]
            problems = []
            for x, entry in zip(xs, data.get(name, [])):
                value, why = unpack(entry)
                if why:
                    problems.append(why)
                    break
                found = _compare_softmax(x, value, name)
                if found:
                    symptom, problem = found
                    extra = [hint.get(symptom) or hint.get("any")] + [ONLINE_HINTS[m] for m in shown]
                    problems.append(" ".join([problem] + [e for e in extra if e]))
                    break
            if len(data.get(name, [])) != len(xs) and not problems:
                problems.append("no result reached the grader")
            if name == "float64" and not problems and forms:
                problems.append(forms[0] + ".")
            verdict.add(label, not problems, problems[0] if problems else "", weight)
        value, why = unpack(data.get("streaming"))
        if why:
            verdict.add("keys visited one at a time", False, why, 3.0)
        else:
            x = streaming_probe_scores()
            wrong = _compare_softmax(x, value.get("value") if isinstance(value, dict) else None, "ordinary")
            flagged = value.get("flagged", []) if isinstance(value, dict) else ["no record"]
            found, review, notes = source_reading(data.get("source"))
            flagged = found + flagged
            if wrong:
                verdict.add("keys visited one at a time", False,
                            "cannot tell: the result on ordinary scores is wrong (see above)", 3.0)
            elif flagged:
                verdict.add("keys visited one at a time", False,
                            "the result is right, but it is not computed in one pass over the keys: we found "
                            + "; ".join(flagged) + ". The exercise is to visit key j = 0, 1, …, T-1 one at a time, "
                            "keeping a running max and running sum (the final division may be done on the whole "
                            "row). (Read from the function's source, and from the torch calls it made on a (2, 3, 13) "
                            "input, where a reduction over an axis of 13 counts.)"
                            + "".join(f" ({n})" for n in notes), 3.0)
            elif review:
                verdict.add_review("keys visited one at a time", review, 3.0)
            else:
                verdict.add("keys visited one at a time", True, "", 3.0)
        return verdict


def _compare_softmax(x: torch.Tensor, value, name):
    """None if `value` is softmax(x) over the last axis to the right precision;
    else (symptom, what is wrong), symptom one of shape, dtype, nan, inf, zero, sums, precision, values."""
    finite_rows = np.isfinite(x.numpy()).any(axis=-1)
    if not isinstance(value, np.ndarray):
        return "shape", f"expected a tensor, got {type(value).__name__}."
    if value.shape != tuple(x.shape):
        return "shape", "the result has another shape than the scores: it should be the same."
    ref = _softmax_reference(x.numpy())
    got = value.astype(np.float64)
    float64 = x.dtype == torch.float64
    if float64 and value.dtype != np.float64:
        return "dtype", "float64 scores gave a result of another dtype: keep the running quantities in the scores' dtype."
    got, ref = got[finite_rows], ref[finite_rows]
    if np.isnan(got).any():
        return "nan", "Some weights are NaN."
    if np.isinf(got).any():
        return "inf", "Some weights are inf."
    # the contract's: float32, each weight is exp(s - m) / sum with ~T roundings of 6e-8; float64, ~T * 1e-16
    atol, rtol = SOFTMAX.tol("float64" if float64 else "float32")
    if np.all(np.abs(got - ref) <= atol + rtol * np.abs(ref)):
        return None
    full = value.astype(np.float64)
    for axis in range(x.dim() - 1):                     # a softmax along another axis than the keys'
        other = torch.softmax(torch.from_numpy(x.numpy().astype(np.float64)), dim=axis).numpy()
        if np.all(np.abs(full - other) <= atol + rtol * np.abs(other)):
            return "axis", (f"The weights sum to 1 along axis {axis}, not along the last axis (the keys): visit the "
                            "keys as scores[..., j], and keep one running max and sum per row, of shape "
                            "scores.shape[:-1].")
    sums = got.sum(axis=-1)
    if np.all(got == 0, axis=-1).any():
        return "zero", "Some rows are all zeros."
    if np.abs(sums - 1).max() > 1e-4:
        return "sums", "Rows do not sum to 1."
    err = np.abs(got - ref).max()
    if float64 and err < 1e-5:
        return "precision", "The weights are right only to float32 precision: float64 scores need float64 work."
    return "values", "The rows sum to 1 but the weights differ from softmax(scores)."


# ---------------------------------------------------------------------------------------------
# 2b. streaming_attention
# ---------------------------------------------------------------------------------------------

def attention_cases(seed=5151):
    """name -> list of (q, k, v). The visible check uses a Head's q, k, v on real text."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, dtype=torch.float32: torch.randn(*shape, generator=g, dtype=dtype)
    # a sequence longer than the notebook's 64 tokens, from a generator of its own (the other kinds keep
    # their draws: large scores are calibrated)
    g_long = torch.Generator().manual_seed(seed + 1)
    long = lambda *shape: torch.randn(*shape, generator=g_long)
    return {
        "ordinary": [(r(2, 11, 5), r(2, 11, 5), r(2, 11, 3)), (long(2, 70, 5), long(2, 70, 5), long(2, 70, 3))],
        "large_scores": [(20 * r(3, 9, 4), 20 * r(3, 9, 4), r(3, 9, 2)), very_negative_scores(seed + 2)],
        "single_position": [(r(2, 1, 4), r(2, 1, 4), r(2, 1, 6))],
        "float64": [(r(3, 17, 4, dtype=torch.float64), r(3, 17, 4, dtype=torch.float64),
                     r(3, 17, 6, dtype=torch.float64))],
        "other_ranks": [(r(7, 4), r(7, 4), r(7, 2)), (r(2, 3, 6, 4), r(2, 3, 6, 4), r(2, 3, 6, 5))],
    }


def very_negative_scores(seed) -> tuple:
    """(q, k, v) whose scores q·k/sqrt(d_k) are all the same number near -1e4 in every row, exactly in
    float32 (small integers times a vector of ±1): causal attention is the running mean of v whatever the
    scale of the scores, and a running max started anywhere above -1e4 (0, -1e3) makes every weight
    exp(score - max) underflow to 0 and the output 0/0. From a generator of its own (the other kinds keep
    their draws)."""
    g = torch.Generator().manual_seed(seed)
    sign = torch.randint(0, 2, (2, 1, 4), generator=g) * 2 - 1                 # (B, 1, d_k) of ±1
    a = torch.randint(100, 201, (2, 1, 1), generator=g)                       # (B, 1, 1)
    b = torch.round(5000 / a)                                                 # score -2ab = -1e4 (± 1 %)
    q = (a * sign).expand(2, 9, 4).float()                                    # (B, T, d_k), every row the same
    k = (-b * sign).expand(2, 9, 4).float()
    return q.contiguous(), k.contiguous(), torch.randn(2, 9, 3, generator=g)  # v: (B, T, d_v)


def _one_hot_errors(triple, scales) -> list[float]:
    """How far causal attention of `triple` with scores scaled by each of `scales` is from the same at
    1/sqrt(d_k) (computed once), one error a scale."""
    q, k, v = triple
    reference = _attention_reference(q, k, v)
    return [float(np.abs(_attention_reference(q, k, v, scale=c) - reference).max()) for c in scales]


@functools.cache
def _calibrated_one_hot_scale() -> float:
    """The smallest scale of the scores from which on the calibrated large-scores case's attention is the
    same as at 1/sqrt(d_k) within the contract's tolerance (on a grid of ratio 1.02; 0.153 for d_k = 4, whose
    1/sqrt(d_k) is 0.5): an answer scaling its scores by any constant above it is right on that case."""
    triple = attention_cases()["large_scores"][0]
    atol = STREAMING.tol("large_scores")
    grid = np.geomspace(1e-3, 10, 466)
    failing = [c for c, error in zip(grid, _one_hot_errors(triple, grid)) if error > atol]
    return float(grid[grid > max(failing)][0]) if failing else float(grid[0])


def large_scores_twin(rng) -> list:
    """A large-scores case of the calibrated recipe, drawn from `rng` until its attention is one-hot from a
    lower scale of the scores on than the calibrated case's: the same as at 1/sqrt(d_k) (to 2e-4, a fifth of
    the contract's tolerance) at every scale from 0.9 × `_calibrated_one_hot_scale()` up to 10, 1/d_k among
    them. So an answer whose scores are scaled by a constant other than 1/sqrt(d_k) (1, 1/d_k, 1/sqrt(32),
    ...) is right on the twin wherever it is right on the calibrated case, and wrong on the calibrated case
    wherever it could be wrong on the twin: the part's credit is the calibrated case's, whatever the draw.
    About one draw in fourteen has it (measured over 400); 1,000 draws all without it have a probability
    below 1e-25 (then the last draw is used)."""
    low = 0.9 * _calibrated_one_hot_scale()
    for _ in range(1000):
        triple = attention_cases(rng.getrandbits(62))["large_scores"][0]
        scales = np.append(np.geomspace(low, 10, 12), 1 / triple[0].shape[-1])
        if all(error <= 2e-4 for error in _one_hot_errors(triple, scales)):
            break
    return [triple]


ATTENTION_PARTS = {
    "ordinary": ("causal attention, batch 2, T = 11, d_k = 5, d_v = 3, and a sequence longer than the notebook's", 2.0),
    "large_scores": ("large scores (q·k/√d_k in the hundreds, and rows whose scores are all near -1e4)", 1.0),
    "single_position": ("T = 1: the output is v", 0.5),
    "float64": ("q's dtype kept: a float32 tensor for float32 inputs, float64 (at float64 precision) for float64",
                1.0),
    "other_ranks": ("no batch axis, and two batch axes", 0.5),
}


STREAMING = contract("streaming_attention")


def _attention_reference(q, k, v, scale=None, masked_score=NEG_INF):
    """Causal softmax attention in float64; scores scaled by `scale` (default 1/sqrt(d_k)), the future
    keys' scores set to `masked_score`."""
    q, k, v = (torch.as_tensor(np.asarray(t, dtype=np.float64)) for t in (q, k, v))
    T = q.shape[-2]
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale                                  # (..., T, T)
    keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
    return (torch.softmax(scores.masked_fill(~keep, masked_score), dim=-1) @ v).numpy()   # (..., T, d_v)


def _score_scale(q, k, v, value, atol):
    """The factor c such that `value` is causal attention with scores c·q·k (None if there is none).
    A grid over c from 1e-3 to 10, then a local refinement: attention is smooth in c."""
    if not isinstance(value, np.ndarray) or not np.isfinite(value).all():
        return None
    got = value.astype(np.float64)

    def err(c):
        return np.abs(got - _attention_reference(q, k, v, scale=c)).max()
    grid = np.geomspace(1e-3, 10, 241)
    errors = [err(c) for c in grid]
    n = int(np.argmin(errors))
    lo, hi = grid[max(n - 1, 0)], grid[min(n + 1, len(grid) - 1)]
    for _ in range(40):                                                       # golden-section search
        a, b = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        lo, hi = (lo, b) if err(a) < err(b) else (a, hi)
    c = (lo + hi) / 2
    return c if err(c) <= atol else None


# The mistakes a hint of streaming_attention names, each computed by the judge (`_streaming_mistake`: the
# solution's loop with that one mistake, in q's dtype). A hint is shown only when the answer's output is that
# mistake's on every case; otherwise the feedback says which property failed. (A scale of the scores other
# than these is fitted on every case where it shows: `_one_constant_scale`.)
STREAMING_MISTAKES = {
    "no_mask": {"mask": "none"},
    "future_score_zero": {"mask": "zero"},
    "scores_unscaled": {"scale": "one"},
    "scores_by_d_k": {"scale": "d_k"},
    "mask_reversed": {"mask": "reversed"},
    "diagonal_masked": {"mask": "diagonal"},
    "max_starts_at_zero": {"start": 0.0},
    "max_not_subtracted": {"shift": False},
    "output_not_rescaled": {"rescale_out": False},
    "output_and_sum_not_rescaled": {"rescale_out": False, "rescale_sum": False},
    # a fixed shift per query other than the running max, each way an answer may choose it: shown when one
    # way's output is the answer's on every case
    "offset_not_max": [{"offset": way} for way in ("first", "diagonal", "constant")],
}
STREAMING_HINTS = {
    "no_mask": "this is attention without the causal mask: query i may only see keys j ≤ i",
    "future_score_zero": ("the future keys get score 0 instead of -inf: exp(0) = 1 gives them weight. Mask the "
                          "scores of keys j > i with -inf (or skip those keys)"),
    "scores_unscaled": "right causal attention, but your scores are not divided by sqrt(d_k) at all",
    "scores_by_d_k": "right causal attention, but your scores are divided by d_k",
    # measured on every case where a scale shows (`_one_constant_scale`): the answer is attention with its
    # scores × one constant on each of them
    "scores_other_scale": "right causal attention, but your scores are scaled by a constant that is not 1/sqrt(d_k)",
    "mask_reversed": ("this is the output of a reversed mask: a query whose first keys are masked gets "
                      "exp(-inf - (-inf)) = NaN. Query i sees keys 0, 1, ..., i and not the "
                      "keys after it"),
    "diagonal_masked": ("this is the output of a mask that hides the diagonal too: query 0 sees no key at all. "
                        "Query i sees keys j <= i, j = i included"),
    "max_starts_at_zero": ("this is the output of a running max started at 0 (or at another number far above "
                           "every score of a query): where every score of a query is far below 0, exp(s - 0) "
                           "underflows to 0 for every key and 0/0 is NaN. The running max is started at -inf "
                           "(not 0)"),
    "max_not_subtracted": ("this is the output of exp(s) with no running max subtracted: scores in the hundreds "
                           "make exp overflow. Subtract the running max before exponentiating"),
    "output_not_rescaled": ("this is the output of a running output that is not rescaled: when the max grows from "
                            "m to m', the running output is rescaled by exp(m - m'), like the running sum"),
    "output_and_sum_not_rescaled": ("this is the output of a running sum and output that are not rescaled: when "
                                    "the max grows from m to m', the running sum and the running output are "
                                    "both rescaled by exp(m - m')"),
    "offset_not_max": ("this is the output of weights exp(s - c) with one c per query other than its max (its "
                       "score with key 0, with its own key, a constant): where a query's scores spread over "
                       "hundreds some score is more than 88.7 above c and exp overflows to inf in float32 (inf / inf "
                       "is NaN). Keep a running max and subtract it"),
}
# the fixed shifts c, one per query, of STREAMING_MISTAKES' offset_not_max: (q, k, divisor) -> (..., T)
STREAMING_OFFSETS = {
    "first": lambda q, k, divisor: (q @ k[..., 0, :, None]).squeeze(-1) / divisor,
    "diagonal": lambda q, k, divisor: (q * k).sum(dim=-1) / divisor,
    "constant": lambda q, k, divisor: torch.full(q.shape[:-1], 80.0, dtype=q.dtype),
}


def _streaming_mistake(triple, start=NEG_INF, shift=True, rescale_out=True, rescale_sum=True, mask="causal",
                       scale="root", offset=None):
    """What the solution's loop gives on (q, k, v) (in q's dtype) with one mistake: the running max started at
    `start`; no running max subtracted (`shift`); the running output or sum not rescaled when the max grows;
    the mask `reversed` (query i sees keys j >= i), hiding the `diagonal` too, `none` at all, or giving the
    future score `zero`; the scores divided by 1 (`one`) or by `d_k` instead of sqrt(d_k); a fixed shift per
    query of STREAMING_OFFSETS instead of the running max (`offset`: nothing to rescale)."""
    q, k, v = (torch.as_tensor(t) for t in triple)
    T, d_k = q.shape[-2], q.shape[-1]
    pos = torch.arange(T)
    hidden = {"causal": lambda j: pos < j, "reversed": lambda j: pos > j, "diagonal": lambda j: pos <= j,
              "none": lambda j: torch.zeros_like(pos, dtype=torch.bool), "zero": lambda j: pos < j}[mask]
    fill = 0.0 if mask == "zero" else NEG_INF
    divisor = {"root": d_k ** 0.5, "one": 1, "d_k": d_k}[scale]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = torch.full(q.shape[:-1], start, dtype=q.dtype)
        z = torch.zeros(q.shape[:-1], dtype=q.dtype)
        out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
        c = STREAMING_OFFSETS[offset](q, k, divisor) if offset is not None else None
        for j in range(T):
            s = ((q @ k[..., j, :, None]).squeeze(-1) / divisor).masked_fill(hidden(j), fill)
            if c is not None:
                w = torch.exp(s - c)
                z, out = z + w, out + w[..., None] * v[..., j, None, :]
                continue
            new = torch.maximum(m, s)
            scale, w = (torch.exp(m - new), torch.exp(s - new)) if shift else (torch.ones_like(new), torch.exp(s))
            z = z * (scale if rescale_sum else 1.0) + w
            out = out * (scale[..., None] if rescale_out else 1.0) + w[..., None] * v[..., j, None, :]
            m = new
        return (out / z[..., None]).numpy().astype(np.float64)


def _compare_attention(q, k, v, value, name, shown=(), one_scale=lambda: False) -> str | None:
    """None if `value` is causal attention of (q, k, v); else what is wrong. `shown`: the mistakes of
    STREAMING_MISTAKES the answer's output is on every case (the causes a hint may name); `one_scale()`:
    whether the answer is attention with its scores times one constant on every case where a scale shows
    (`_one_constant_scale`), the evidence "scores_other_scale" needs."""
    hints = [STREAMING_HINTS[m] for m in shown]
    if not isinstance(value, np.ndarray):
        return f"expected a tensor, got {type(value).__name__}"
    expected_shape = tuple(v.shape[:-2]) + (q.shape[-2], v.shape[-1])
    if value.shape != expected_shape:
        return ("the output has another shape than (..., T, d_v): one row per query, d_v wide, with q's "
                "batch axes")
    if q.dtype == torch.float64 and value.dtype != np.float64:
        return "float64 inputs gave a result of another dtype: keep the running quantities in q.dtype"
    if np.isnan(value).any() or np.isinf(value).any():
        bad = np.isnan(value).any(axis=-1) | np.isinf(value).any(axis=-1)             # (..., T)
        always = bad.reshape(-1, value.shape[-2]).all(axis=0)                         # (T,) NaN in every sequence
        if not always[0] and always[1:].size and always[1:].all():
            where = "the output is NaN for every query but the first"
        elif always[0] and not always[1:].any():
            where = "the output of query 0 is NaN (it sees only key 0, its own)"
        else:
            where = "the output has NaN or inf"
        return "; ".join([where] + hints)
    ref = _attention_reference(q, k, v)
    # the contract's: float32 scores of size ~400 carry rounding ~4e-5, which the weights inherit; ordinary
    # ones ~1e-7
    atol = STREAMING.tol("large_scores" if name == "large_scores" else
                         "float64" if q.dtype == torch.float64 else "float32")
    err = np.abs(value.astype(np.float64) - ref).max()
    if err <= atol:
        return None
    d_k = q.shape[-1]
    c = _score_scale(q, k, v, value, max(atol, 1e-5))
    if c is not None:
        # a scale of 1 or 1/d_k is named only where it is the answer's on every case (`shown`)
        named = [STREAMING_HINTS[m] for m in ("scores_unscaled", "scores_by_d_k") if m in shown]
        if not named and abs(c - 1) >= 1e-3 and abs(c * d_k - 1) >= 1e-3 and one_scale():
            named = [STREAMING_HINTS["scores_other_scale"]]
        what = "; ".join(named) or "right causal attention but for the scale of the scores"
        return f"{what}: the scores are q·k / sqrt(d_k), d_k = q.shape[-1]"
    if q.shape[-2] > 1 and np.abs(value[..., 0, :] - ref[..., 0, :]).max() > 1e-4:
        what = "already the first query (which sees only key 0, so its output is v_0) is wrong"
    else:
        what = "the first rows are right and later ones differ"
    return "; ".join([f"differs from causal softmax attention: {what}"] + hints)


# the cases whose output shows the scale of the scores: not T = 1 (the output is v at any scale), nor the
# large scores (one-hot at every scale from 0.153 on: `_calibrated_one_hot_scale`)
SCALE_SHOWS = ("ordinary", "float64", "other_ranks")


def _one_constant_scale(cases, data) -> bool:
    """Whether the answer is causal attention with its scores multiplied by one constant (the same within
    1e-3) on every case of SCALE_SHOWS, the fixed ones and this submission's: then, and only then, a hint
    may say that the scores are scaled by a constant (a scale that follows T, or the batch, is not one)."""
    scales = []
    for name in SCALE_SHOWS:
        entries = data.get(name, [])
        if len(entries) != len(cases[name]):
            return False
        for (q, k, v), entry in zip(cases[name], entries):
            value, why = unpack(entry)
            atol = STREAMING.tol("float64" if q.dtype == torch.float64 else "float32")
            c = None if why else _score_scale(q, k, v, value, max(atol, 1e-5))
            if c is None:
                return False
            scales.append(c)
    return max(scales) - min(scales) <= 1e-3 * max(scales)


def _attention_like(q, k, v, value) -> bool:
    """Right, or right but for the scale of the scores: the computation is attention either way."""
    return _compare_attention(q, k, v, value, "ordinary") is None or \
        _score_scale(q, k, v, value, 1e-5) is not None


@register
class StreamingAttention(Check):
    grade_id = "bonus_streaming_attention"
    points = 2
    HINTS = STREAMING_HINTS

    @quiet
    def probe(self, ns, ctx):
        fn = student(ns, "streaming_attention")
        # each result as the function returned it, its form judged by the contract (a tensor of q's dtype)
        out = {name: [attempt_form("streaming_attention", fn, q.clone(), k.clone(), v.clone()) for q, k, v in triples]
               for name, triples in self.cases(ctx).items()}
        q, k, v = attention_cases()["ordinary"][0]
        out["streaming"] = attempt(recorded_call, fn, 11, q.clone(), k.clone(), v.clone())
        out["source"] = streamed_work(code_before(ctx, self), "streaming_attention",
                                   {"q": ("*", "Q", "D"), "k": ("*", "K", "D"), "v": ("*", "K", "E")})
        return out

    def cases(self, ctx):
        """attention_cases(), each kind with the same recipe drawn again from a seed of this submission's
        own (framework.fresh_rng): outputs recorded from an earlier grading earn nothing. The large-scores
        twin is one-hot wherever its calibrated case is (`large_scores_twin`): a wrong scale of the scores
        earns that part or not whatever the draw."""
        fresh = attention_cases(self.fresh(ctx, "qkv").getrandbits(62))
        fresh["large_scores"] = large_scores_twin(self.fresh(ctx, "large scores")) + fresh["large_scores"][1:]
        return {name: triples + fresh[name] for name, triples in attention_cases().items()}

    def judge(self, data, ctx):
        verdict = Verdict()
        cases = self.cases(ctx)
        # the contract's form (a tensor of q's dtype) is one property: the dtype part's
        forms = [f for name in cases for e in data.get(name, []) if (f := form_of(e))]
        # the mistakes whose output is the answer's on every case (the only causes a hint may name)
        shown = shown_mistakes([t for triples in cases.values() for t in triples], case_values(cases, data),
                               STREAMING_MISTAKES, _streaming_mistake)
        one_scale = functools.cache(lambda: _one_constant_scale(cases, data))    # measured once, if a hint needs it
        for name, triples in cases.items():
            label, weight = ATTENTION_PARTS[name]
            problem = None
            entries = data.get(name, [])
            if len(entries) != len(triples):
                problem = "no result reached the grader"
            for (q, k, v), entry in zip(triples, entries):
                value, why = unpack(entry)
                problem = why or _compare_attention(q, k, v, value, name, shown, one_scale)
                if problem:
                    break
            if name == "float64" and problem is None and forms:
                problem = forms[0]
            verdict.add(label, problem is None, problem or "", weight)
        value, why = unpack(data.get("streaming"))
        if why:
            verdict.add("keys and values visited one at a time", False, why, 1.5)
        else:
            q, k, v = attention_cases()["ordinary"][0]
            out = value.get("value") if isinstance(value, dict) else None
            flagged = value.get("flagged", []) if isinstance(value, dict) else ["no record"]
            found, review, notes = source_reading(data.get("source"))
            flagged = found + flagged
            if not _attention_like(q, k, v, out):
                verdict.add("keys and values visited one at a time", False,
                            "cannot tell: the result on the ordinary case is wrong (see above)", 1.5)
            elif flagged:
                verdict.add("keys and values visited one at a time", False,
                            "the output is right, but not streamed: we found " + "; ".join(flagged)
                            + ". Visit key j (and value j) one at a time, updating a running max, running sum and "
                            "running weighted sum of values for every query row. (Recorded by watching torch "
                            "calls on inputs with T = 11, where a reduction or product over an axis of 11 counts; and read from "
                            "the function's source.)" + "".join(f" ({n})" for n in notes),
                            1.5)
            elif review:
                verdict.add_review("keys and values visited one at a time", review, 1.5)
            else:
                verdict.add("keys and values visited one at a time", True, "", 1.5)
        return verdict


# ---------------------------------------------------------------------------------------------
# 3. fit_exponent
# ---------------------------------------------------------------------------------------------

def _power_law(Ts, p, c, factors=None):
    Ts = np.asarray(Ts, dtype=np.float64)
    f = np.ones_like(Ts) if factors is None else np.asarray(factors, dtype=np.float64)
    return c * Ts ** p * f


_NOISY_T = [100, 200, 400, 800, 1600, 3200]
_NOISY_F = [1.4, 0.9, 1.1, 1.0, 0.95, 0.7]        # end points alone give 1.80; least squares 1.86
_NOISY2_T = [300, 1000, 3000, 10000, 30000]
_NOISY2_F = [0.8, 1.25, 1.0, 0.9, 1.3]             # end points alone give 1.61; least squares 1.56
_ORDER = [3, 0, 5, 1, 4, 2]


def fit_cases():
    """name -> list of (Ts, times) as the student's function receives them (lists or numpy arrays)."""
    noisy_T, noisy_t = _NOISY_T, list(_power_law(_NOISY_T, 2.0, 2e-8, _NOISY_F))
    return {
        "exact": [
            ([64, 128, 256, 512, 1024], [float(t) for t in _power_law([64, 128, 256, 512, 1024], 1.5, 3e-7)]),
            ([10, 30, 100, 300, 1000], [float(t) for t in _power_law([10, 30, 100, 300, 1000], 3.0, 0.02)]),
            ([5, 50, 500, 5000], [float(t) for t in _power_law([5, 50, 500, 5000], 0.5, 40.0)]),
        ],
        "noisy": [
            (noisy_T, noisy_t),
            (_NOISY2_T, [float(t) for t in _power_law(_NOISY2_T, 1.5, 5e-3, _NOISY2_F)]),
        ],
        "unsorted": [
            ([noisy_T[i] for i in _ORDER], [noisy_t[i] for i in _ORDER]),
        ],
        "numpy": [
            (np.array([256, 512, 1024, 2048]), _power_law([256, 512, 1024, 2048], 2.0, 1e-8, [1.1, 0.95, 1.0, 1.02])),
            (np.array([1.5, 3.0, 6.0, 12.0, 24.0]), _power_law([1.5, 3.0, 6.0, 12.0, 24.0], 1.0, 7.0)),
        ],
    }


FIT_PARTS = {
    "exact": "exact power laws (exponents 1.5, 3, 0.5; different constants)",
    "noisy": "noisy power laws: the least-squares slope over all points",
    "unsorted": "points given in no particular order",
    "numpy": "numpy arrays as well as lists",
}


FIT = contract("fit_exponent")


def _least_squares_slope(Ts, times):
    x = np.log(np.asarray(Ts, dtype=np.float64))
    y = np.log(np.asarray(times, dtype=np.float64))
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


# The causes fit_exponent's feedback can name, each measured: the slope that mistake gives on the case is the
# answer's (`typed_in`: the answer is 2 on every case, whatever the data)
FIT_HINTS = {
    "typed_in": "got 2 on every data set: the exponent is typed in, not fitted",
    "axes_swapped": ("this is the slope of log T against log time: the exponent is the slope of log(time) against "
                     "log(T)."),
    "rounded": "the slope is rounded: return it as computed (round only where you print it).",
    "two_points": ("this is the slope through two points only; with noisy timings use the least-squares slope "
                   "through all of them (np.polyfit(log T, log time, 1)[0], say)."),
    "mixed_bases": "mixed bases: take the same logarithm (natural or base 10) of both T and time.",
}


def _fit_hint(Ts, times, got, always_two=False) -> str:
    x = np.log(np.asarray(Ts, dtype=np.float64))
    y = np.log(np.asarray(times, dtype=np.float64))
    ref = _least_squares_slope(Ts, times)
    close = lambda a: abs(got - a) <= 1e-3 * max(1.0, abs(a))
    swapped = float(((x - x.mean()) * (y - y.mean())).sum() / ((y - y.mean()) ** 2).sum())
    if always_two and close(2.0) and not close(ref):
        return FIT_HINTS["typed_in"]
    if close(swapped):
        return FIT_HINTS["axes_swapped"]
    if got != ref and abs(got - round(ref, 4)) <= 1e-12 or abs(got - round(ref, 3)) <= 1e-12:
        return FIT_HINTS["rounded"]
    if close((y[-1] - y[0]) / (x[-1] - x[0])) or close((y[x.argmax()] - y[x.argmin()]) / (x.max() - x.min())):
        return FIT_HINTS["two_points"]
    if close(ref / math.log(10)) or close(ref * math.log(10)):
        return FIT_HINTS["mixed_bases"]
    return "expected the least-squares slope of log(time) against log(T); yours is another number."


@register
class FitExponent(Check):
    grade_id = "bonus_fit_exponent"
    points = 2
    HINTS = FIT_HINTS

    @quiet
    def probe(self, ns, ctx):
        fn = student(ns, "fit_exponent")
        # the result as the function returned it, judged by the contract (a Python float)
        return {name: [attempt_form("fit_exponent", fn, Ts, times, convert=float) for Ts, times in pairs]
                for name, pairs in self.cases(ctx).items()}

    def cases(self, ctx):
        """fit_cases(), with an exact and a noisy power law of this submission's own (framework.fresh_rng:
        sizes, exponent, constant, noise), so slopes recorded from an earlier grading earn nothing."""
        rng = self.fresh(ctx, "laws")
        cases = fit_cases()
        for name, noise in (("exact", 0.0), ("noisy", 0.3)):
            Ts = [rng.randint(4, 200)]
            for _ in range(rng.randint(3, 6)):          # spread out (each 1.5 to 4 times the last): a well-posed slope
                Ts.append(int(Ts[-1] * rng.uniform(1.5, 4.0)) + 1)
            factors = [1.0 + rng.uniform(-noise, noise) for _ in Ts]
            law = _power_law(Ts, round(rng.uniform(0.3, 3.2), 3), 10 ** rng.uniform(-8, 1), factors)
            cases[name] = cases[name] + [(Ts, [float(t) for t in law])]
        return cases

    def judge(self, data, ctx):
        verdict = Verdict()
        values = case_values(self.cases(ctx), data)
        always_two = all(isinstance(v, float) and abs(v - 2.0) <= 1e-3 for v in values)
        for name, pairs in self.cases(ctx).items():
            problem = None
            entries = data.get(name, [])
            if len(entries) != len(pairs):
                problem = "no result reached the grader"
            for (Ts, times), entry in zip(pairs, entries):
                value, why = unpack(entry)
                why = why or form_of(entry)
                if why:
                    problem = why
                    break
                ref = _least_squares_slope(Ts, times)
                # the contract's tolerance: float32 logs and sums are good to 1e-6 here (worst of 3,000 drawn
                # laws: 9.3e-7), so a float32 fit passes with a margin of 10; a slope rounded to 4 decimals
                # (off by up to 5e-5) or any real mistake (0.01 or more) does not
                if not (isinstance(value, float) and abs(value - ref) <= FIT.tol("slope")):
                    problem = _fit_hint(Ts, times, value, always_two)
                    break
            verdict.add(FIT_PARTS[name], problem is None, problem or "")
        return verdict
