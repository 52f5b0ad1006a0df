"""The red-team corpus itself (tests/redteam_corpus.py), quickly: its cases are well formed, and the
wrong answers of each profile earn what the corpus expects when the hidden checks probe and judge them
right here (so a change of a check shows up here, not as a puzzling failure of the graded batch)."""
from __future__ import annotations

import json
import math
import os

import pytest
import torch

from redteam_corpus import PROFILES, corpus


KINDS = ("honest", "runaway", "tampering", "cheating", "malformed", "argument-leak")


def test_cases_cover_every_kind_and_expect_every_test_cell():
    cases = corpus()            # corpus() itself refuses two cases with one student id
    assert {c.kind for c in cases} == set(KINDS), "a kind of attack has no case left in the corpus"
    for case in cases:
        assert set(case.scores) == set(case.profile.points), case.student
        assert set(case.reasons) <= set(case.profile.points), case.student
        assert case.kind in KINDS, case.student


def test_every_case_writes_a_submission(tmp_path):
    from redteam_corpus import Ctx
    ctx = Ctx(submissions=tmp_path, home=tmp_path / "home", port=9)
    (tmp_path / "honest-01").mkdir()
    (tmp_path / "honest-01" / "01-on-paper.ipynb").write_text("{}")     # what the symlink case points at
    for case in corpus():
        if case.student == "honest-01":
            continue
        case.write(ctx, tmp_path / case.student)
        assert any((tmp_path / case.student).iterdir()), case.student


@pytest.mark.parametrize("profile", PROFILES, ids=[p.notebook for p in PROFILES])
def test_wrong_answers_earn_what_the_corpus_expects(profile, monkeypatch):
    from autograder.runtime import hidden           # what a hidden test cell imports
    monkeypatch.delenv("GRADER_SOCKET", raising=False)       # probe and judge here, as in JupyterLab
    for test, answer in profile.uses.items():
        ns = {"torch": torch, "F": torch.nn.functional, "math": math, "json": json, "os": os}
        exec(profile.wrong[answer], ns)
        assert hidden(test, ns) == profile.wrong_scores[test], (profile.notebook, test)
