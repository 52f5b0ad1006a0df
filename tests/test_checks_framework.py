"""Only plain data crosses between a student's kernel and the grader, and the judge survives bad data."""
import math

import numpy as np
import pytest
import torch

from autograder.checks.framework import Verdict, attempt, judge_data, outcome, unpack
from autograder.runtime.plain import NotPlain, from_plain, to_plain
from conftest import STEP4

# the course's kinds of data (tensors, layers) on the wire, as a graded kernel and the grader load them
# (source/course_plugin.py names this module in $GRADER_KERNEL_HOOKS): without it, only plain Python crosses
import dlcourse.grading  # noqa: E402,F401


class AlwaysEqual:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [
    1, 2.5, float("nan"), float("-inf"), True, None, "x", (1, 2), [1, (2, 3)], {"a": (4, 5)},
    torch.arange(6, dtype=torch.float32).reshape(2, 3), np.float64(3.0), np.arange(4), torch.tensor(7),
])
def test_plain_round_trip(value):
    back = from_plain(to_plain(value))
    if isinstance(value, (torch.Tensor, np.ndarray)):
        expected = value.numpy() if isinstance(value, torch.Tensor) else value
        assert back.shape == expected.shape and back.dtype == expected.dtype and np.array_equal(back, expected)
    elif isinstance(value, float) and math.isnan(value):
        assert math.isnan(back)
    else:
        assert back == (value.item() if isinstance(value, np.generic) else value)
        assert type(back) is (type(value.item()) if isinstance(value, np.generic) else type(value))


@pytest.mark.parametrize("value", [AlwaysEqual(), {1: 2}, object(), [AlwaysEqual()], torch.zeros(3, dtype=torch.complex64)])
def test_objects_that_only_pretend_cannot_cross(value):
    with pytest.raises(NotPlain):
        to_plain(value)
    assert "error" in attempt(lambda: value)


def test_tensors_and_arrays_stay_apart_on_the_wire():
    t, a = torch.arange(3.0), np.arange(3.0)
    assert isinstance(from_plain(to_plain(t), tensors=True), torch.Tensor)
    assert isinstance(from_plain(to_plain(a), tensors=True), np.ndarray)
    assert isinstance(from_plain(to_plain(t)), np.ndarray)        # the grader reads both as arrays
    assert from_plain(to_plain(torch.Size([2, 3]))) == (2, 3)


def test_sets_and_tensor_subclasses_are_read_by_their_contents():
    class Anything(set):
        def __eq__(self, other):
            return True
    assert from_plain(to_plain(Anything())) == set()
    assert from_plain(to_plain({"b", "a"})) == {"a", "b"}

    class Marked(torch.Tensor):
        pass
    back = from_plain(to_plain(torch.ones(2).as_subclass(Marked)))
    assert isinstance(back, np.ndarray) and back.tolist() == [1.0, 1.0]


def test_subclasses_of_plain_types_cannot_cross():
    class Sneaky(float):
        def __eq__(self, other):
            return True
    with pytest.raises(NotPlain):
        to_plain(Sneaky(1.0))


def test_the_standard_library_s_plain_kinds_cross_as_what_they_hold():
    """A named tuple is a tuple, an OrderedDict, a defaultdict, a Counter and a mappingproxy a dict, a
    Fraction and a Decimal a number: read by their items, never by what their class says (a named tuple
    whose == is always true crosses as its items); a subclass of one is refused, as any class of its own."""
    import collections
    import decimal
    import fractions
    import types
    import typing
    Shape = collections.namedtuple("Shape", "rows cols")

    class Pair(typing.NamedTuple):
        rows: int
        cols: int

    class Liar(collections.namedtuple("Liar", "a")):
        pass
    Forged = collections.namedtuple("Forged", "a b")
    Forged.__eq__ = lambda self, other: True
    right = {"X": (8, 32), "A": (8, 8)}
    for value in (collections.OrderedDict(X=Shape(8, 32), A=Pair(8, 8)),
                  collections.defaultdict(tuple, {"X": (8, 32), "A": Shape(8, 8)}),
                  types.MappingProxyType({"X": Pair(8, 32), "A": (8, 8)})):
        back = from_plain(to_plain(value))
        assert back == right and type(back) is dict and all(type(v) is tuple for v in back.values()), value
    assert from_plain(to_plain(collections.Counter("aab"))) == {"a": 2, "b": 1}
    assert from_plain(to_plain(Forged(1, 2))) == (1, 2) != (3, 4)
    for number, plain in ((fractions.Fraction(1536), 1536), (decimal.Decimal("1536"), 1536),
                          (fractions.Fraction(1, 4), 0.25), (decimal.Decimal("2.5"), 2.5)):
        back = from_plain(to_plain(number))
        assert back == plain and type(back) is type(plain), number
    assert math.isnan(from_plain(to_plain(decimal.Decimal("NaN"))))
    # numbers past a float's range or an int's digits cross as the float nearest; a signalling NaN as a NaN
    assert math.isnan(from_plain(to_plain(decimal.Decimal("sNaN"))))
    for huge, inf in ((fractions.Fraction(10**400, 3), math.inf), (fractions.Fraction(-(10**400), 3), -math.inf),
                      (decimal.Decimal("1e999999999"), math.inf), (decimal.Decimal("-1e5000"), -math.inf)):
        assert from_plain(to_plain(huge)) == inf, huge
    assert from_plain(to_plain(decimal.Decimal("1e400"))) == 10**400

    class MyDict(collections.OrderedDict):
        pass
    for own in (MyDict(a=1), Liar(1)):
        with pytest.raises(NotPlain, match="class|object"):
            to_plain(own)


def test_attempt_and_outcome_report_student_errors_without_raising():
    assert attempt(lambda: 1 / 0)["error"].startswith("ZeroDivisionError")
    def stub():
        raise NotImplementedError()
    assert unpack(attempt(stub))[1].startswith("raises NotImplementedError")
    assert outcome(lambda: None) == "returned"
    def fails():
        assert False, "nope"
    assert outcome(fails) == "assertion"                     # the message is the student's: never kept
    assert outcome(lambda: [][1]) == "crashed: IndexError"


def test_judge_gives_zero_with_a_reason_for_malformed_data():
    check = STEP4.checks["bonus_shapes"]
    verdict = judge_data(check, {"__array__": {"dtype": "<f4", "shape": [10], "b64": "AAAA"}}, None)
    assert verdict.fraction == 0 and verdict.failures()
    verdict = judge_data(check, {"__missing__": "`shapes` is not defined"}, None)
    assert verdict.fraction == 0 and "not defined" in verdict.failures()[0].message


def test_partial_credit_is_the_weighted_share_of_properties():
    v = Verdict()
    v.add("a", True)
    v.add("b", False, "why", weight=3)
    assert v.fraction == 0.25
    assert "✗ b: why" in v.report(4) and "1 of 4 points" in v.report(4)


def test_a_message_shared_by_several_failures_is_shown_once():
    """An answer that raises fails every case the same way: the feedback names the cases on one line
    with the message once, instead of the message once per case."""
    v = Verdict()
    for size in ("narrow", "medium", "wide"):
        v.add(f"a {size} head", False, "raises NotImplementedError: the answer cell is not filled in yet")
    v.add("the same seed", True)
    v.add("from samples", False, "checked once the estimate is close")
    v.add("spread", False, "checked once the estimate is close")
    text = v.report(2)
    assert text.count("raises NotImplementedError") == 1 and text.count("checked once") == 1, text
    assert "✗ a narrow head; a medium head; a wide head: raises NotImplementedError" in text
    assert "✓ the same seed" in text and "✗ from samples; spread: checked once" in text
    assert text.index("a narrow head") < text.index("the same seed") < text.index("from samples")


def test_a_checks_seed_in_the_kernel_draws_what_torch_manual_seed_draws():
    """The kernel's hook seeds the CPU generator alone: every draw after it is the draw after
    torch.manual_seed with the same seed, and it queues nothing for devices not started."""
    import torch.cuda
    hooks = dlcourse.grading.TorchHooks()
    for seed in (0, 1, 4300, 2**40 + 7):
        torch.manual_seed(seed)
        expected = (torch.randn(5), torch.rand(3), torch.randint(0, 100, (4,)), torch.randperm(7))
        torch.manual_seed(123)
        hooks.seed(seed)
        got = (torch.randn(5), torch.rand(3), torch.randint(0, 100, (4,)), torch.randperm(7))
        assert all(torch.equal(a, b) for a, b in zip(expected, got)), seed
    queued = len(torch.cuda._queued_calls)
    for _ in range(20):
        hooks.seed(3)
    assert len(torch.cuda._queued_calls) == queued
