"""Plain data: the only thing that crosses between a student's kernel and the grader.

Inputs go in and a student's results come out as JSON-safe plain data (numbers, strings,
lists, dicts, sets, arrays and tensors as raw bytes). An object that only pretends to be a
number or a tensor (an `__eq__` that is always true, say) cannot cross.

A course teaches it its own kinds of data with `register_codec` (the deep-learning course's
tensors and layers: dlcourse/grading.py). A tensor and a numpy array stay apart on the wire
(`__tensor__` and `__array__`): the kernel rebuilds tensors as tensors, so a student's function
gets what it was written for; the grader reads both as numpy arrays.
"""

from __future__ import annotations

import base64
import math
import sys
from collections import Counter, OrderedDict, defaultdict
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np

MAX_ITEMS = 200_000  # numbers in one answer: far above any honest answer of this step
MAX_DEPTH = 8


# Kinds of the standard library that hold plain data, read as the plain kind they are: a named tuple
# (collections.namedtuple, typing.NamedTuple) as a tuple, these dicts as a dict, a Fraction or a Decimal as
# a number. Exactly these classes: a subclass of one is a class of its own.
_DICTS = (OrderedDict, defaultdict, Counter)


def _named_tuple(t: type) -> bool:
    """Whether `t` is a class collections.namedtuple made (a tuple with `_fields`, straight from tuple)."""
    return t.__bases__ == (tuple,) and isinstance(t.__dict__.get("_fields"), tuple) and "_make" in t.__dict__


class NotPlain(TypeError):
    """An answer holds something that is not plain data."""


_ENCODERS: list = []  # fn(obj, budget) -> plain data, or None for an object it does not know
_DECODERS: dict = {}  # wire tag -> fn(value, rebuild): the kernel's side (from_plain(tensors=True))


def register_codec(encode=None, decoders: dict | None = None) -> None:
    """A course's own kinds of data: `encode(obj, budget)` returns plain data for the objects it
    knows (None for others; `array_plain` encodes an array's values); `decoders` map a wire tag
    (`__tensor__`: the array's values, `__module__`: a layer's spec) to a function rebuilding it."""
    if encode is not None and encode not in _ENCODERS:
        _ENCODERS.append(encode)
    _DECODERS.update(decoders or {})


def to_plain(obj: Any, _depth: int = 0, _budget: list[int] | None = None) -> Any:
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
    if _named_tuple(t):  # a tuple whatever its class says: read by its items
        return {"__tuple__": [to_plain(x, _depth + 1, budget) for x in tuple.__iter__(obj)]}
    if t in _DICTS:  # the standard library's dicts, read by their items (dict's own, not the class's)
        return to_plain(dict(dict.items(obj)), _depth, budget)
    if t is MappingProxyType:
        return to_plain(dict(obj.items()), _depth, budget)
    if t is Fraction:  # an int, or the float nearest (beyond float's range: an infinity, as float() of a Decimal)
        if obj.denominator == 1:
            return to_plain(obj.numerator, _depth, budget)
        try:
            return to_plain(obj.numerator / obj.denominator, _depth, budget)
        except OverflowError:
            return to_plain(math.inf if obj > 0 else -math.inf, _depth, budget)
    if t is Decimal:  # an int where Python's default limit on an int's digits allows one, else the float nearest
        if obj.is_nan():  # a signalling NaN too: float() refuses it
            return to_plain(math.nan, _depth, budget)
        if obj.is_finite() and obj == obj.to_integral_value() and obj.adjusted() < sys.int_info.default_max_str_digits:
            return int(obj)
        return to_plain(float(obj), _depth, budget)
    if isinstance(obj, (set, frozenset)):  # read by its elements, whatever its == says
        base = set if isinstance(obj, set) else frozenset
        items = [to_plain(x, _depth + 1, budget) for x in base.__iter__(obj)]
        return {"__set__": sorted(items, key=repr)}
    if t is dict:
        if not all(type(k) is str for k in obj):
            raise NotPlain("a dict in the answer has keys that are not strings")
        return {"__dict__": {k: to_plain(v, _depth + 1, budget) for k, v in obj.items()}}
    if isinstance(obj, np.generic) and type(obj).__module__ == "numpy":
        return to_plain(obj.item(), _depth, budget)
    if t is np.ndarray:
        return array_plain(obj, budget)
    for encode in _ENCODERS:
        plain = encode(obj, budget)
        if plain is not None:
            return plain
    raise NotPlain(
        f"the answer holds a {t.__module__}.{t.__qualname__} object; return numbers, tuples, lists, dicts or tensors"
    )


def array_plain(a: np.ndarray, budget) -> dict:
    if a.dtype.kind not in "biuf":
        raise NotPlain(f"an array of dtype {a.dtype} is not a numeric answer")
    budget[0] -= a.size
    if budget[0] < 0:
        raise NotPlain(f"the answer holds more than {MAX_ITEMS} values")
    a = np.array(a, order="C", copy=True)  # keeps 0-d arrays 0-d (ascontiguousarray would not)
    return {
        "__array__": {
            "dtype": a.dtype.str,
            "shape": list(a.shape),
            "b64": base64.b64encode(a.tobytes()).decode("ascii"),
        }
    }


def from_plain(data: Any, _depth: int = 0, tensors: bool = False, served: Any = None) -> Any:
    """Rebuild Python values. Arrays come back as numpy arrays; with `tensors` (the kernel's side),
    what was a tensor comes back as a torch tensor. `served(entry)` rebuilds an object the grader
    serves (a `__served__` entry); without it such an entry is refused."""
    if _depth > MAX_DEPTH + 2:
        raise NotPlain("nested too deeply")
    if data is None or type(data) in (bool, int, float, str):
        return data
    again = lambda x: from_plain(x, _depth + 1, tensors, served)  # noqa: E731
    if type(data) is list:
        return [again(x) for x in data]
    if type(data) is dict and len(data) == 1:
        ((key, value),) = data.items()
        if key == "__tuple__" and type(value) is list:
            return tuple(again(x) for x in value)
        if key == "__set__" and type(value) is list:
            items = [again(x) for x in value]
            try:
                return set(items)
            except TypeError:
                raise NotPlain("a set of the answer holds unhashable items") from None
        if key == "__dict__" and type(value) is dict:
            return {str(k): again(v) for k, v in value.items()}
        if key == "__float__" and value in ("nan", "inf", "-inf"):
            return float(value)
        if key == "__served__" and served is not None and type(value) is dict:
            return served(value)
        if key == "__module__" and tensors and type(value) is dict and "__module__" in _DECODERS:
            return _DECODERS["__module__"](value, again)
        if key == "__tensor__" and type(value) is dict:
            array = from_plain({"__array__": value})
            if tensors and "__tensor__" in _DECODERS:
                return _DECODERS["__tensor__"](array, again)
            return array
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
