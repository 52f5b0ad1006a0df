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
