"""What a graded answer does on inputs of its own, in this process: the evidence that a rewrite of a
solution is equivalent to it (tests/rewrites.py), and which mutants of a rewrite are not.

`behaviour(name, source)` defines the notebook's answers with `source` in place of answer `name`'s
(as tests/mutants.py judges a mutant), calls it on every draw of `DRAWS[name]` (fresh inputs each
time, the same on every call: sizes, dtypes, batches and edge cases beyond the hidden test's own,
never its cases) and records per draw what came back (a value, or the exception's type), and which
inputs the call changed in place. `differs(a, b)` says where two records part (None: the same).

The same means: the same kind of result (a tensor, an array, a Python float or int, a dict with
the same keys, a tuple or a list of the same length), tensors of the same dtype and shape, numbers
within float32 rounding (relative 1e-4, absolute 1e-5), float64 tensors and arrays within float64
rounding (relative 1e-9), the same signs, infinities and NaNs, the same exception type, the same
inputs changed. A rewrite that computes in float64 and casts back, or in
numpy, is the same; one that returns a list where the solution returns a tuple, a float64 tensor for
a float32 one, or changes its input, is not, except where the answer's contract takes any floating
dtype in any array form (smoothing_attention: a tensor, an array or nested lists of any float dtype;
attention_on_text: any float dtype): there results are compared by their values, read as float32.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import mutants  # noqa: E402
from conftest import STEP4  # noqa: E402
from dlcourse.contracts import CONTRACTS  # noqa: E402

STEP4.package               # the step's checks, importable as course_checks.step_04
from course_checks.step_04 import further, suites  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
SECONDS = 60               # a source still running its draws then is recorded as "ran too long"


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(seed, *shape, dtype=torch.float32, scale=1.0):
    return (scale * torch.randn(*shape, generator=_gen(seed), dtype=torch.float64)).to(dtype)


def _causal(scores):
    t = scores.shape[-1]
    keep = torch.tril(torch.ones(t, t, dtype=torch.bool))
    return torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)


# ---- the draws: per answer, a function giving fresh argument tuples --------------------------

def _shapes():
    return [(5, 7, 3, 2), (1, 1, 1, 1), (12, 3, 9, 4), (2, 64, 16, 16), (30, 5, 5, 11)]


def _dot_variance():
    return [(16, 2_000, 0), (3, 500, 7), (50, 1_000, 12), (1, 40, 3), (8, 2, 5)]


def _scores_entrywise():
    return [(_randn(1, 2, 3, 5), _randn(2, 2, 3, 5)),
            (_randn(3, 1, 1, 1), _randn(4, 1, 1, 1)),
            (_randn(5, 3, 4, 2, dtype=torch.float64), _randn(6, 3, 4, 2, dtype=torch.float64)),
            (_randn(7, 2, 6, 3, scale=30.0), _randn(8, 2, 6, 3, scale=30.0))]


def _count_params():
    return [(32, 16), (1, 1), (7, 3), (100, 64)]


def _simplex_matrices():
    As = [case.build() for case in suites.SUITES["simplex"]]
    for n, (b, t, scale, dtype) in enumerate([(3, 6, 1.0, torch.float32), (1, 1, 1.0, torch.float64),
                                              (2, 9, 40.0, torch.float32), (5, 4, 0.1, torch.float64)]):
        good = _causal(_randn(900 + n, b, t, t, scale=scale)).to(dtype)
        As.append(good)
        if t > 1:
            leak = good.clone()
            leak[0, t - 1, t - 2] += 1e-3
            leak[0, t - 2, t - 1] = 1e-3 * (n + 1)       # a weight above the diagonal
            As.append(leak)
            off = good.clone()
            off[-1, -1] *= 1.00003                       # a row 3e-5 off
            As.append(off)
    return [(A,) for A in As]


def _heads(kind):
    """Heads of every variant the suite's cases use, with other weights (seeds)."""
    built = [case.build().head for case in suites.SUITES[kind]]
    # the suites' drawn heads (MutantHead, LeakHead, ...; the notebook's own Head has no variant to redraw)
    variants = sorted({(type(head).__name__, head.variant): type(head) for head in built
                       if isinstance(head, suites.MutantHead)}.items())
    return [suites.BlackBox(cls(v, seed=500 + n)) for n, ((_, v), cls) in enumerate(variants)]


def _perturbation():
    heads = _heads("causal_perturbation")
    return [(head, _randn(40 + t, 3, 8, 32), t) for head in heads for t in (0, 2, 5, 7)]


def _gradient():
    heads = _heads("causal_gradient")
    return [(head, _randn(60 + i, 2, 8, 32), i) for head in heads for i in (0, 3, 6)]


def _scale_table():
    return [([16, 64, 256], 0), ([1, 8], 3), ([4], 11), ([32, 2], 5)]


def _mask_after_softmax():
    # the last: scores in the hundreds whose rows' maxima lie hundreds apart (a softmax shifted by one max
    # for the whole tensor, not each row's, underflows to 0/0 on the lower rows), as the hidden test's are
    return [(_randn(21, 2, 4, 4),), (_randn(22, 1, 1, 1),), (_randn(23, 3, 6, 6, dtype=torch.float64),),
            (_randn(24, 2, 5, 5, scale=50.0),), (_randn(25, 2, 9, 9, scale=300.0),)]


def _attention_on_text():
    return [(0,), (1,), (7,)]


def _top_key_shares():
    # T >= 2 (the shares average rows 1..T-1); random weights have no ties, as the spec promises
    previous = torch.zeros(7, 7)
    previous[0, 0] = 1
    previous[torch.arange(1, 7), torch.arange(0, 6)] = 1
    return [(_causal(_randn(31, 8, 8)),), (_causal(_randn(32, 2, 2)),), (torch.eye(6),), (previous,),
            (_causal(_randn(33, 12, 12, dtype=torch.float64, scale=4.0)),),
            (_causal(_randn(34, 25, 25, scale=3.0)),)]


def _smoothing():
    return [(8, 2.0), (1, 1.0), (5, 0.3), (16, 10.0), (3, 1)]


def _permutation_gaps():
    return [further.build_perm_case(seed, B, T, dtype, identity)
            for seed, B, T, dtype, identity in [(71, 2, 6, torch.float32, False), (72, 1, 11, torch.float64, False),
                                                (73, 3, 4, torch.float32, True)]]


def _online_softmax():
    inf = float("-inf")
    prefix = _randn(54, 3, 6)
    prefix[:, :2] = inf
    prefix[0] = inf                                           # a row with every key masked
    return [(_randn(51, 4, 7),), (_randn(52, 2, 3, 5, dtype=torch.float64),), (_randn(53, 6),),
            (prefix,), (_randn(55, 3, 5, scale=1e4),), (_randn(56, 2, 4) - 1e4,), (_randn(57, 2, 1),)]


def _streaming():
    return [(_randn(61, 2, 5, 4), _randn(62, 2, 5, 4), _randn(63, 2, 5, 3)),
            (_randn(64, 1, 1, 1), _randn(65, 1, 1, 1), _randn(66, 1, 1, 1)),
            (_randn(67, 7, 4, dtype=torch.float64), _randn(68, 7, 4, dtype=torch.float64),
             _randn(69, 7, 2, dtype=torch.float64)),
            (_randn(70, 2, 3, 6, 5, scale=8.0), _randn(71, 2, 3, 6, 5, scale=8.0), _randn(72, 2, 3, 6, 2)),
            # scores in the hundreds: exp overflows unless the running max is subtracted
            (_randn(73, 2, 5, 4, scale=25.0), _randn(74, 2, 5, 4, scale=25.0), _randn(75, 2, 5, 3))]


def _fit_exponent():
    return [([256, 512, 1024, 2048], [1.0, 4.1, 15.9, 64.5]), ([10, 20], [3.0, 3.0]),
            (np.array([3, 9, 27, 81]), np.array([0.5, 0.6, 0.9, 1.4])), ((1, 2, 4), (2.0, 8.0, 31.0))]


DRAWS = {
    "shapes": _shapes, "dot_variance": _dot_variance, "scores_entrywise": _scores_entrywise,
    "count_params": _count_params, "check_simplex": _simplex_matrices,
    "check_causality_perturbation": _perturbation, "check_causality_gradient": _gradient,
    "scale_table": _scale_table, "mask_after_softmax_row_sums": _mask_after_softmax,
    "fails_on_mask_after_softmax": None,             # not a function: the value it binds
    "attention_on_text": _attention_on_text, "top_key_shares": _top_key_shares,
    "smoothing_attention": _smoothing, "permutation_gaps": _permutation_gaps, "online_softmax": _online_softmax,
    "streaming_attention": _streaming, "fit_exponent": _fit_exponent,
}
BOUND = {"fails_on_mask_after_softmax": "FAILS_ON_MASK_AFTER_SOFTMAX"}      # answers that bind a value


# ---- recording ---------------------------------------------------------------------------------

def _snapshot(value, depth=0):
    """A copy of a result that later calls cannot change."""
    if depth > 6:
        return "…"
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _snapshot(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_snapshot(v, depth + 1) for v in value) if not isinstance(value, torch.Size) \
            else tuple(value)
    return value


def _as_the_spec_reads(name: str, value):
    """A result as its contract reads it: where the spec takes any floating dtype in any array form (a
    tensor, a numpy array, nested lists: dlcourse/contracts.py form "array"/"array_like" with dtype "" or
    "float"), its values as float32, the precision its tolerance asks; any other result as it is."""
    contract = CONTRACTS.get(name)
    if contract is None or contract.form not in ("array", "array_like") or contract.dtype not in ("", "float"):
        return value
    try:
        values = value.detach().numpy() if isinstance(value, torch.Tensor) else value
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError):
        return value
    return array.astype(np.float32) if array.ndim else value


def _copy(a):
    if isinstance(a, torch.Tensor):
        return a.detach().clone()
    if isinstance(a, np.ndarray):
        return a.copy()
    return list(a)


def _mutable(args):
    """(position, argument) of every argument a call could change in place: tensors, arrays, lists."""
    return [(n, a) for n, a in enumerate(args) if isinstance(a, (torch.Tensor, np.ndarray, list))]


def behaviour(name: str, source: str) -> list:
    """[(what happened: "returned" or an exception's type, the result, positions of inputs changed)]
    per draw; [("cannot define", type, ())] when the source cannot even be run."""
    from proof_corpus import Entry
    from test_grader_proof_quick import namespace

    answer = mutants.ANSWERS[name]
    cells = mutants.cells_of(source)
    records = []
    try:
        with mutants.time_limit(SECONDS):
            try:
                ns = namespace(Entry(f"behaviour-{name}", answer.notebook, {name: cells if len(cells) > 1 else source}))
            except mutants.TimeUp:
                raise
            except BaseException as err:
                return [("cannot define", type(err).__name__, ())]
            if DRAWS[name] is None:
                return [("returned", _snapshot(ns.get(BOUND[name])), ())]
            fn = ns.get(name)
            for n, args in enumerate(DRAWS[name]()):
                before = [(i, _copy(a)) for i, a in _mutable(args)]
                torch.manual_seed(10_000 + n)
                np.random.seed(n)
                try:
                    with np.errstate(all="ignore"):
                        value = fn(*args)
                    what, value = "returned", _as_the_spec_reads(name, _snapshot(value))
                except mutants.TimeUp:
                    raise
                except BaseException as err:     # noqa: BLE001 -- what the code raised is its behaviour
                    what, value = type(err).__name__, None
                changed = tuple(i for i, old in before if not _equal_exactly(old, args[i]))
                records.append((what, value, changed))
    except mutants.TimeUp:
        records.append(("ran too long", None, ()))
    return records


def _equal_exactly(a, b) -> bool:
    if isinstance(a, list):
        return type(b) is list and len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype \
            and bool(torch.equal(a.nan_to_num(7.0), b.detach().nan_to_num(7.0)))
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


# ---- comparing ---------------------------------------------------------------------------------

def _kind(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor {x.dtype} {tuple(x.shape)}"
    if isinstance(x, np.ndarray):
        return f"array {x.dtype} {x.shape}"
    if isinstance(x, bool) or isinstance(x, np.bool_):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):
        return "float"
    if isinstance(x, np.generic):
        return f"numpy {x.dtype}"
    if isinstance(x, dict):
        return "dict"
    if isinstance(x, (set, frozenset)):
        return "set"
    return type(x).__name__


def _close(a: np.ndarray, b: np.ndarray, exact64: bool = False) -> bool:
    """Equal within float32 rounding; within float64 rounding for float64 tensors and arrays (`exact64`):
    float64 inputs must keep float64 precision."""
    rtol, atol = (1e-9, 1e-12) if exact64 else (RTOL, ATOL)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(np.isposinf(a), np.isposinf(b)) \
            or not np.array_equal(np.isneginf(a), np.isneginf(b)):
        return False
    finite = np.isfinite(a)
    a, b = a[finite], b[finite]
    if np.any((a * b < 0) & (np.abs(a) > 1e-12) & (np.abs(b) > 1e-12)):
        return False                   # a sign flipped, however small the numbers (a gap of 1e-7 against -1e-7)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


def value_differs(a, b, where="the result") -> str | None:
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return f"{where}: {ka} against {kb}"
    if isinstance(a, torch.Tensor):
        return None if _close(a.detach().double().numpy(), b.detach().double().numpy(), a.dtype == torch.float64) \
            else f"{where}: other values"
    if isinstance(a, np.ndarray):
        return None if a.dtype.kind not in "fc" and np.array_equal(a, b) \
            or a.dtype.kind in "fc" and _close(a, b, a.dtype == np.float64) else f"{where}: other values"
    if isinstance(a, (float, np.floating)):
        return None if _close(np.array(a), np.array(b)) else f"{where}: {a!r} against {b!r}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} against {list(b)}"
        return next((d for k in a if (d := value_differs(a[k], b[k], f"{where}[{k!r}]"))), None)
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: {len(a)} items against {len(b)}"
        return next((d for n, (x, y) in enumerate(zip(a, b)) if (d := value_differs(x, y, f"{where}[{n}]"))), None)
    return None if a == b else f"{where}: {a!r} against {b!r}"


def differs(a: list, b: list) -> str | None:
    """Where records `a` and `b` part (the first draw that differs), or None when they are the same."""
    if len(a) != len(b):
        return f"{len(a)} calls recorded against {len(b)}"
    for n, ((what_a, va, ch_a), (what_b, vb, ch_b)) in enumerate(zip(a, b)):
        if what_a != what_b:
            return f"draw {n}: {what_a if what_a != 'returned' else 'returned'} against {what_b}"
        if ch_a != ch_b:
            return f"draw {n}: changes inputs {list(ch_a)} in place against {list(ch_b)}"
        if what_a == "cannot define" and va != vb:
            return f"cannot be defined: {va} against {vb}"
        if what_a == "returned" and (d := value_differs(va, vb)):
            return f"draw {n}: {d}"
    return None


def same(a: list, b: list) -> bool:
    return differs(a, b) is None
