"""The contract of every graded answer: what its spec promises and asks, declared once.

A contract says what an answer takes (kinds, shapes, dtypes), what it returns (kind, shape, dtype),
how close its numbers must be (the tolerance the notebook states), and which sizes the notebook's
own cells use. Both sides read it: a "check your work" cell checks a result's form with
`dlcourse.checks.expect_form` and takes its tolerance from here, and the hidden test (the grader's
`source/<step>/checks/`) judges the same form with the same function and the same tolerance, on
its own cases, past every size named here. The contract is public: it is the notebook's spec as
data, never a hidden case, seed or reference.

    >>> form_problem("fit_exponent", 1.5)
    ''
    >>> form_problem("fit_exponent", np.float32(1.5))
    'fit_exponent should return a Python float, not numpy.float32: use float(...) or .item()'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch


@dataclass(frozen=True)
class Contract:
    name: str  # the answer: the function (or value) the student defines
    notebook: str
    hidden: str  # the grade id of its hidden test
    takes: dict  # argument -> the kinds, shapes and dtypes it may be
    returns: str  # what it gives back, in words
    form: str = ""  # the result's kind, checked by form_problem: "tensor" (a torch tensor),
    # "array" (a tensor or a numpy array), "array_like" (also nested lists),
    # "float" (a Python float), "floats" (a tuple or list of Python floats);
    # "" where the hidden test judges the form itself (shapes, tables, sets)
    shape: Callable | None = None  # the result's shape from the arguments (form "tensor"/"array"/...)
    length: int = 0  # form "floats": how many
    dtype: str = ""  # "" any; "float" any floating dtype; "as <argument>": that argument's dtype
    tolerance: dict = field(default_factory=dict)  # name -> the largest error the spec allows
    visible: dict = field(default_factory=dict)  # the sizes and values of the visible check
    used: dict = field(default_factory=dict)  # the largest sizes the notebook's own cells use

    def tol(self, key: str = "float32") -> float:
        return self.tolerance[key]


def _batch(*dims):
    return tuple(dims)


CONTRACTS: dict[str, Contract] = {
    c.name: c
    for c in [
        # ---- 01-on-paper
        Contract(
            "shapes",
            "01-on-paper",
            "bonus_shapes",
            takes={"T, d, d_k, d_v": "positive ints"},
            returns="a dict: each of X, W_Q, W_K, W_V, Q, K, V, scores, A, out -> its shape (a tuple of ints; "
            "a list or torch.Size reads the same)",
            visible={"T": 5, "d": 7, "d_k": 3, "d_v": 2},
        ),
        Contract(
            "dot_variance",
            "01-on-paper",
            "bonus_dot_variance",
            takes={"d_k": "a positive int", "n": "a positive int (pairs)", "seed": "an int"},
            returns="(dots, variance): the n dot products q·k of n pairs drawn with `seed`, a (n,) tensor (or "
            "numpy array), and their sample variance, a Python float (the hidden test judges the dot "
            "products as samples: their number, their law, and the variance as theirs)",
            visible={"d_k": 16, "n": 20_000, "seed": 0},
        ),
        # ---- 02-the-head
        Contract(
            "scores_entrywise",
            "02-the-head",
            "bonus_scores_entrywise",
            takes={"q": "a (B, T, d_head) tensor, float32 or float64", "k": "a tensor of q's shape and dtype"},
            returns="the raw scores, a (B, T, T) tensor of q's dtype: scores[b, i, j] = q[b, i] · k[b, j]",
            form="tensor",
            shape=lambda q, k: _batch(q.shape[0], q.shape[1], k.shape[1]),
            dtype="as q",
            # |error| <= tol * sum_m |q_m k_m| per entry: float32 rounding of a d-term dot product is ~d * 6e-8
            tolerance={"float32": 1e-5, "float64": 1e-12},
            visible={"B": 2, "T": 3, "d_head": 5},
            used={"B": 4, "T": 8, "d_head": 16},
        ),
        Contract(
            "count_params",
            "02-the-head",
            "bonus_count_params",
            takes={"d, d_head": "positive ints"},
            returns="the number of trainable parameters of Head(d, d_head, T_max), any T_max",
            visible={"d": 32, "d_head": 16},
        ),
        # ---- 03-the-tests
        Contract(
            "check_simplex",
            "03-the-tests",
            "check_simplex_hidden",
            takes={"A": "a (B, T, T) attention matrix, float32 or float64"},
            returns="nothing when A is causal attention; raises AssertionError otherwise",
            tolerance={"row_sum": 1e-5},
            visible={"T": 8},
            used={"T": 64},
        ),
        Contract(
            "check_causality_perturbation",
            "03-the-tests",
            "check_perturbation_hidden",
            takes={
                "head": "a module taking (B, T, d) float32 input (call it, read .A)",
                "x": "a (B, T, d) float32 tensor",
                "t": "a position, 0 <= t < T",
            },
            returns="nothing when outputs before t are bitwise unchanged and every output from t on changes "
            "when token t changes; raises AssertionError otherwise",
            visible={"t": 5},
            used={"T": 8},
        ),
        Contract(
            "check_causality_gradient",
            "03-the-tests",
            "check_gradient_hidden",
            takes={
                "head": "a module taking (B, T, d) float32 input",
                "x": "a (B, T, d) float32 tensor",
                "i": "a position, 0 <= i < T",
            },
            returns="nothing when d out[0, i] / d x[0, j] is exactly zero for j > i and nonzero for j <= i; "
            "raises AssertionError otherwise",
            visible={"i": 3},
            used={"T": 8},
        ),
        Contract(
            "scale_table",
            "03-the-tests",
            "scale_table_hidden",
            takes={"d_heads": "a list of ints", "seed": "an int"},
            returns="a list with one dict per d_k: d_k, raw_std, sqrt_d_k, scaled_std, max_weight_raw, "
            "max_weight_scaled, one_hot_raw, one_hot_scaled (Python numbers), and q, k: the (4, 8, d_k) "
            "tensors drawn, every statistic theirs (the hidden test judges q and k as N(0, 1) samples)",
            visible={"seed": 0, "d_k": 16},
        ),
        Contract(
            "mask_after_softmax_row_sums",
            "03-the-tests",
            "mask_after_softmax_hidden",
            takes={"scores": "a (B, T, T) tensor of scores, float32 or float64, any size (large ones too)"},
            returns="the row sums of softmax(scores) with the future zeroed after the softmax: a (B, T) tensor "
            "(or numpy array) of the scores' dtype",
            form="array",
            shape=lambda scores: tuple(scores.shape[:-1]),
            dtype="as scores",
            tolerance={"float32": 1e-5, "float64": 1e-12},  # absolute: row sums lie in [0, 1]
            visible={"T": 4},
            used={"B": 4, "T": 8},
        ),
        Contract(
            "FAILS_ON_MASK_AFTER_SOFTMAX",
            "03-the-tests",
            "fails_on_mask_after_softmax_hidden",
            takes={},
            returns="a set of the names of the checks that fail on a mask-after-softmax head",
        ),
        # ---- 04-attention-on-text
        Contract(
            "attention_on_text",
            "04-attention-on-text",
            "bonus_attention_on_text",
            takes={"seed": "an int"},
            returns="head.A[0] of the handout's construction under torch.manual_seed(seed): a (64, 64) tensor "
            "(a numpy array is fine too)",
            form="array",
            shape=lambda seed: (64, 64),
            dtype="float",
            tolerance={"float32": 1e-5},
            visible={"seed": 0},
        ),
        Contract(
            "top_key_shares",
            "04-attention-on-text",
            "bonus_top_key_shares",
            takes={
                "A": "one (T, T) causal attention matrix, T >= 2, a float32 tensor, a single largest weight "
                "in every row"
            },
            returns="(the share of rows 1..T-1 whose top key is on the diagonal, the share on column 0), "
            "two Python floats (a tuple or a list)",
            form="floats",
            length=2,
            # shares are means of T - 1 booleans: exact up to float32 rounding (~6e-8); a slip moves one by 1/(T-1)
            tolerance={"shares": 1e-6},
            visible={"T": 8},
            used={"T": 64},
        ),
        # ---- 05-attention-as-smoothing
        Contract(
            "smoothing_attention",
            "05-attention-as-smoothing",
            "smoothing_attention_hidden",
            takes={"T": "a positive int", "s": "a positive float"},
            returns="the (T, T) positions-only causal attention matrix: a tensor of any float dtype (a numpy "
            "array or nested lists are fine too)",
            form="array_like",
            shape=lambda T, s: (T, T),
            tolerance={"weights": 1e-5, "identity": 1e-6},
            visible={"T": 8, "s": 2.0},
            used={"T": 64},
        ),
        # ---- 06-going-further
        Contract(
            "permutation_gaps",
            "06-going-further",
            "bonus_permutation_gaps",
            takes={
                "head": "an unmasked head",
                "tok_emb": "an nn.Embedding",
                "pos_emb": "an nn.Embedding with at least T rows",
                "idx": "(B, T) token ids",
                "perm": "(T,) a permutation of range(T)",
            },
            returns="the four gaps as Python floats (a tuple or a list)",
            form="floats",
            length=4,
            # gaps 1-3 at float32 rounding (outputs below 1); the identity permutation moves nothing
            tolerance={"float32": 1e-5, "float64": 1e-12, "identity": 1e-6, "broken": 0.05},
            visible={"T": 32},
            used={"T": 32},
        ),
        Contract(
            "online_softmax",
            "06-going-further",
            "bonus_online_softmax",
            takes={"scores": "a (..., T) tensor, float32 or float64, any values (-inf, very large, very negative)"},
            returns="softmax over the last axis: a tensor of the scores' shape and dtype",
            form="tensor",
            shape=lambda scores: tuple(scores.shape),
            dtype="as scores",
            # (atol, rtol): |weight - softmax| <= atol + rtol * softmax, as torch.allclose reads them; a float32
            # online softmax of 17 keys is off by at most 3.3e-7 (301 draws of every hidden kind)
            tolerance={"float32": (1e-6, 1e-5), "float64": (1e-12, 1e-10)},
            visible={"T": 7},
            used={"T": 7},
        ),
        Contract(
            "streaming_attention",
            "06-going-further",
            "bonus_streaming_attention",
            takes={"q, k": "(..., T, d_k) tensors, float32 or float64", "v": "a (..., T, d_v) tensor of q's dtype"},
            returns="causal softmax attention: a (..., T, d_v) tensor of q's dtype",
            form="tensor",
            shape=lambda q, k, v: tuple(v.shape[:-2]) + (q.shape[-2], v.shape[-1]),
            dtype="as q",
            tolerance={"float32": 1e-5, "float64": 1e-11, "large_scores": 1e-3},
            visible={"T": 64, "d_k": 16},
            used={"T": 64},
        ),
        Contract(
            "fit_exponent",
            "06-going-further",
            "bonus_fit_exponent",
            takes={"Ts": "sizes, a list or numpy array", "times": "times of the same length, a list or numpy array"},
            returns="the least-squares slope of log(time) against log(T), a Python float",
            form="float",
            tolerance={"slope": 1e-5},
        ),  # float32 logs and sums: within 1e-6
    ]
}


def contract(name: str) -> Contract:
    return CONTRACTS[name]


def tolerance(name: str, key: str = "float32") -> float:
    """The tolerance the spec of answer `name` states (for float32 results unless `key` says otherwise)."""
    return CONTRACTS[name].tolerance[key]


# ---- the form of a result ----------------------------------------------------------------------


def _type_name(value) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _shape_of(value):
    return tuple(int(n) for n in value.shape)


def form_problem(name: str, value, *args, hidden: bool = False) -> str:
    """'' if `value`, returned by answer `name` for `args`, has the form its contract states; else
    what is wrong, in words a student can act on. The same function runs in the notebook (on the
    result as it is) and in the grader (on the result as it came back: tensors stay tensors).
    `hidden`: for a hidden test, whose inputs the student does not see: no size is quoted, neither the
    inputs' nor the result's (a result's shape can carry the inputs back), only the contract's words."""
    c = CONTRACTS[name]
    if c.form == "float":
        if isinstance(value, bool) or not isinstance(value, float):
            return f"{name} should return a Python float, not {_type_name(value)}: use float(...) or .item()"
        return ""
    if c.form == "floats":
        if not isinstance(value, (tuple, list)) or len(value) != c.length:
            length = (
                ""
                if not isinstance(value, (tuple, list))
                else " of another length"
                if hidden
                else f" of length {len(value)}"
            )
            return f"{name} should return {c.length} Python floats (a tuple or a list), not {_type_name(value)}{length}"
        wrong = sorted({_type_name(v) for v in value if isinstance(v, bool) or not isinstance(v, float)})
        if wrong:
            return (
                f"{name} should return {c.length} Python floats, but some are {', '.join(wrong)}: "
                "use .item() on a 0-dimensional tensor"
            )
        return ""
    if c.form in ("tensor", "array", "array_like"):
        if c.form == "array_like" and isinstance(value, (list, tuple)):
            try:
                value = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                return f"{name} returned a list that is not a matrix of numbers"
        kinds = (torch.Tensor,) if c.form == "tensor" else (torch.Tensor, np.ndarray)
        if not isinstance(value, kinds):
            what = "a tensor" if c.form == "tensor" else "a tensor (or a numpy array)"
            return f"{name} should return {what}, not {_type_name(value)}"
        if c.shape is not None:
            expected = tuple(int(n) for n in c.shape(*args))
            if _shape_of(value) != expected:
                if hidden:
                    return f"{name} should return {c.returns}; the result has another shape"
                return f"{name} should return shape {expected} here, not {_shape_of(value)}"
        got = _dtype_name(value.dtype)
        if c.dtype == "float" or c.dtype.startswith("as "):
            if not (got.startswith("float") or got == "bfloat16"):
                return f"{name} should return floating-point numbers, not {got}"
        if c.dtype.startswith("as "):
            argument = c.dtype[3:]
            names = _parameters(name)
            source = args[names.index(argument)] if argument in names and names.index(argument) < len(args) else None
            if source is not None and got != _dtype_name(source.dtype):
                return (
                    f"{name} should return the dtype of its input `{argument}` ({_dtype_name(source.dtype)}), "
                    f"not {got}: create what you return with dtype={argument}.dtype, and keep every running "
                    f"quantity in it"
                )
        return ""
    return ""


def _parameters(name: str) -> list[str]:
    """The argument names of answer `name`, in order, as its contract lists them."""
    out = []
    for key in CONTRACTS[name].takes:
        out += [part.strip() for part in key.split(",")]
    return out
