"""The hidden tests' machinery, all of it the grader's (no graded kernel can read this folder).
How a hidden test is written: framework.py (a check is a probe, run against the student's kernel,
and a judge, run on the plain data it returned). probeserver.py: the grader's side of a hidden
test while a notebook is graded, where the probe runs; casekey.py: the course's secret key the
checks draw each submission's own cases from. Each step's checks live with the step, in
source/<step>/checks/ (autograder/steps.py imports them); autograder/runtime/ is the little a
grading kernel runs to answer a probe; autograder/selfgrade.py runs a hidden test without a grader.
"""

from .framework import (
    Check,
    StudentError,
    code_before,
    TwinnedCheck,
    Verdict,
    attempt,
    checks_of,
    fresh_rng,
    fresh_seed,
    outcome,
    register,
    student,
    twin,
    unpack,
    unwritten,
    unwritten_verdict,
)

__all__ = [
    "Check",
    "StudentError",
    "code_before",
    "TwinnedCheck",
    "Verdict",
    "attempt",
    "checks_of",
    "fresh_rng",
    "fresh_seed",
    "outcome",
    "register",
    "student",
    "twin",
    "unpack",
    "unwritten",
    "unwritten_verdict",
]
