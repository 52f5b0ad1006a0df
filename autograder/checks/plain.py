"""Plain data: the only thing that crosses from a student's kernel to the grader.

A student's answer is turned into JSON-safe plain data inside the kernel (numbers, strings,
lists, dicts, tensors as raw bytes) and judged by the grader outside it. An object that only
pretends to be a number or a tensor (an `__eq__` that is always true, say) cannot cross.
"""
from __future__ import annotations

import base64
import math

import numpy as np

MAX_ITEMS = 200_000      # numbers in one answer: far above any honest answer of this step
MAX_DEPTH = 8


class NotPlain(TypeError):
    """An answer holds something that is not plain data."""


def to_plain(obj, _depth=0, _budget=None):
    budget = _budget if _budget is not None else [MAX_ITEMS]
    if _depth > MAX_DEPTH:
        raise NotPlain("the answer is nested too deeply")
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain(f"the answer holds more than {MAX_ITEMS} values")
    t = type(obj)
    if obj is None or t in (bool, str):
        return obj
    if t is int:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}
    if t in (list, tuple):
        items = [to_plain(x, _depth + 1, budget) for x in obj]
        return items if t is list else {"__tuple__": items}
    if t is dict:
        if not all(type(k) is str for k in obj):
            raise NotPlain("a dict in the answer has keys that are not strings")
        return {"__dict__": {k: to_plain(v, _depth + 1, budget) for k, v in obj.items()}}
    if isinstance(obj, np.generic) and type(obj).__module__ == "numpy":
        return to_plain(obj.item(), _depth, budget)
    if t is np.ndarray:
        return _array(obj, budget)
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and t in (torch.Tensor, torch.nn.Parameter):
        return _array(obj.detach().cpu().numpy(), budget)
    raise NotPlain(f"the answer holds a {t.__module__}.{t.__qualname__} object; "
                   "return numbers, tuples, lists, dicts or tensors")


def _array(a: np.ndarray, budget) -> dict:
    if a.dtype.kind not in "biuf":
        raise NotPlain(f"an array of dtype {a.dtype} is not a numeric answer")
    budget[0] -= a.size
    if budget[0] < 0:
        raise NotPlain(f"the answer holds more than {MAX_ITEMS} values")
    a = np.array(a, order="C", copy=True)   # keeps 0-d arrays 0-d (ascontiguousarray would not)
    return {"__array__": {"dtype": a.dtype.str, "shape": list(a.shape),
                          "b64": base64.b64encode(a.tobytes()).decode("ascii")}}


def from_plain(data, _depth=0):
    """The grader's side: rebuild Python values; arrays come back as numpy arrays."""
    if _depth > MAX_DEPTH + 2:
        raise NotPlain("nested too deeply")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [from_plain(x, _depth + 1) for x in data]
    if type(data) is dict and len(data) == 1:
        (key, value), = data.items()
        if key == "__tuple__" and type(value) is list:
            return tuple(from_plain(x, _depth + 1) for x in value)
        if key == "__dict__" and type(value) is dict:
            return {str(k): from_plain(v, _depth + 1) for k, v in value.items()}
        if key == "__float__" and value in ("nan", "inf", "-inf"):
            return float(value)
        if key == "__array__" and type(value) is dict:
            dtype = np.dtype(value["dtype"])
            if dtype.kind not in "biuf":
                raise NotPlain(f"dtype {dtype} is not numeric")
            shape = [int(s) for s in value["shape"]]
            raw = base64.b64decode(value["b64"], validate=True)
            count = int(np.prod(shape)) if shape else 1
            if count > MAX_ITEMS or len(raw) != count * dtype.itemsize:
                raise NotPlain("an array's bytes do not match its shape")
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    raise NotPlain(f"unexpected data: {str(data)[:80]}")
