"""A grading run's plan (autograder/grading/grade.py Plan): which notebooks it grades again."""
from types import SimpleNamespace

from autograder.grading.grade import Plan
from conftest import NOTEBOOK_NAMES, STEP4


def plan_for(limits: dict, data: bytes = b'{"cells": []}') -> Plan:
    plan = Plan(STEP4, "sqlite://", "none", threads=1, limits=limits)
    plan.keep_received({("ada", NOTEBOOK_NAMES[0]): SimpleNamespace(data=data, mtime=1.0)}, False, {"ada": 1.0})
    return plan


def test_a_result_stands_for_the_same_submission_grader_and_limits_only(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_HOME", str(tmp_path))
    default, short, short_again = (plan_for(limits).jobs[0].key for limits in ({}, {"cell_timeout": 30},
                                                                              {"cell_timeout": 30}))
    assert default != short == short_again, "a result graded under another cell limit must be graded again"
    assert plan_for({}, b'{"cells": [1]}').jobs[0].key != default, "another submission, another key"
    assert plan_for({}).jobs[0].key == default
    received = tmp_path / "submitted" / "ada" / STEP4.name / f"{NOTEBOOK_NAMES[0]}.ipynb"
    assert received.read_bytes() == b'{"cells": []}', "the received notebook is kept as it came"
