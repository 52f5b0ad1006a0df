"""Every wheat satisfies the spec of its check and every chaff violates it.

The reference checks in source/step-04/checks/tests.py are the notebook's specs, executed.
They are run here exactly as the hidden tests run a student's check (same inputs, same seeds):
a wheat must pass at every position probed, a chaff must fail at one of them at least.
"""
import pytest
import torch

from autograder.checks.framework import outcome
from conftest import STEP4

STEP4.package   # imports the step's checks: course_checks.step_04
from course_checks.step_04.tests import (  # noqa: E402
    CALL_SEED, REFERENCE_CHECKS, CheckGradient, CheckPerturbation, CheckSimplex, fails_on_mask_after_softmax)
from course_checks.step_04.suites import SUITES  # noqa: E402

GRADERS = [CheckSimplex(), CheckPerturbation(), CheckGradient()]
CASES = [(grader, case) for grader in GRADERS for case in SUITES[grader.suite]]


@pytest.mark.parametrize("grader,case", CASES, ids=[f"{g.suite}-{c.name}" for g, c in CASES])
def test_case_is_what_it_claims(grader, case):
    check = REFERENCE_CHECKS[grader.function]
    obj = case.build()
    outcomes = []
    for p in grader.params:
        args = grader.arguments(obj, p)
        torch.manual_seed(CALL_SEED + (p or 0))
        outcomes.append(outcome(check, *args))
    assert not any(o.startswith("crashed") for o in outcomes), outcomes
    if case.kind == "wheat":
        assert all(o == "returned" for o in outcomes), f"{case.description}: {outcomes}"
    else:
        assert any(o.startswith("assertion") for o in outcomes), f"{case.description}: {outcomes}"


def test_every_suite_has_wheats_and_chaffs():
    for name in ("simplex", "causal_perturbation", "causal_gradient"):
        kinds = {case.kind for case in SUITES[name]}
        assert kinds == {"wheat", "chaff"}, name
        assert len({case.name for case in SUITES[name]}) == len(SUITES[name]), name


def test_masking_after_softmax_fails_all_three_checks():
    assert fails_on_mask_after_softmax() == set(REFERENCE_CHECKS)


# The reference checks made wrong at a boundary of the range they compare (off by one at the first or
# the last position): each must miss a broken head of its suite, so it loses points. `only`: the one broken
# head that catches the mistake, where no other does (before that head the check had full marks).
BOUNDARY = [
    ("check_causality_perturbation", "past-skips-last", "out[:, :t], out2[:, :t]", "out[:, :t - 1], out2[:, :t - 1]",
     None),
    ("check_causality_perturbation", "past-skips-first", "out[:, :t], out2[:, :t]", "out[:, 1:t], out2[:, 1:t]", None),
    ("check_causality_perturbation", "present-skips-t", "range(t, x.shape[1])", "range(t + 1, x.shape[1])", None),
    ("check_causality_perturbation", "present-skips-last", "range(t, x.shape[1])", "range(t, x.shape[1] - 1)",
     "last_row_self_only"),
    ("check_causality_gradient", "future-skips-next", "g[i + 1:] == 0", "g[i + 2:] == 0", None),
    ("check_causality_gradient", "future-skips-last", "g[i + 1:] == 0", "g[i + 1:-1] == 0", None),
    ("check_causality_gradient", "past-skips-i", "g[: i + 1]", "g[:i]", None),
    ("check_causality_gradient", "past-skips-first", "g[: i + 1]", "g[1: i + 1]", "first_key_hidden"),
]


def _boundary_check(function, old, new):
    import inspect
    source = inspect.getsource(REFERENCE_CHECKS[function]).replace("reference_", "")
    assert source.count(old) == 1, (function, old)
    ns = {"torch": torch}
    exec(source.replace(old, new), ns)
    return ns[function]


@pytest.mark.parametrize("function,name,old,new,only", BOUNDARY, ids=[f"{b[0][6:]}-{b[1]}" for b in BOUNDARY])
def test_a_check_off_by_one_at_a_boundary_misses_a_broken_head(function, name, old, new, only):
    check = _boundary_check(function, old, new)
    grader = next(g for g in GRADERS if g.function == function)
    missed = []
    for case in SUITES[grader.suite]:
        obj = case.build()
        outcomes = []
        for p in grader.params:
            torch.manual_seed(CALL_SEED + (p or 0))
            outcomes.append(outcome(check, *grader.arguments(obj, p)))
        if case.kind == "wheat":
            assert all(o == "returned" for o in outcomes), f"{name} rejects {case.description}: {outcomes}"
        elif not any(o.startswith("assertion") for o in outcomes):
            missed.append(case.name)
    assert missed, f"{name}: every broken head is caught, so the mistake keeps full marks"
    if only:
        assert missed == [only], f"{name}: missed {missed}"
