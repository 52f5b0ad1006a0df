"""Grader-only checks: they run in the grader process, never in a student's kernel.

Each check module `stepNN_<part>.py` registers one Check per graded test cell; see
framework.py for how a check is split into a probe and a judge, and autograder/runtime/ for
the little a grading kernel runs to answer a probe.
"""
from .framework import REGISTRY, Check, Verdict, hidden, load_all  # noqa: F401
