"""Grader-only checks. Hidden test cells call `hidden("<grade_id>", globals())`.

Each check module `stepNN_<part>.py` registers one Check per graded test cell; see
framework.py for how a check is split into a probe (student kernel) and a judge (grader).
"""
from .framework import REGISTRY, Check, Verdict, hidden, load_all  # noqa: F401
