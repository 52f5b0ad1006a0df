"""Fair late work: a grace period (course.toml [late] grace), each notebook late by its own time where
the submission carries one (a one-notebook fix does not make the other five late), a warning at
`make submit` after the due date with what it costs, and the policy and its effect in the student's
summary (`make my-feedback` and the feedback page print the same lines)."""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from autograder import term
from autograder.intake.collect import collect, pick_newest
from autograder.records.store import Store
from autograder.records.totals import summary_lines
from autograder.steps import find_step
from conftest import STEP

DUE = datetime(2026, 1, 10, 12, tzinfo=timezone.utc)


@pytest.fixture
def course_toml(tmp_path, monkeypatch):
    def write(late='policy = "per_hour"\npercent = 10\n'):
        path = tmp_path / "course.toml"
        path.write_text(f"[due]\n{STEP} = 2026-01-10T12:00:00Z\n[late]\n{late}")
        (tmp_path / "extensions.csv").write_text("student,step,extension,reason\n")
        monkeypatch.setenv("COURSE_TERM", str(path))
        monkeypatch.setenv("COURSE_EXTENSIONS", str(tmp_path / "extensions.csv"))
        return path
    return write


def test_the_default_grace_forgives_seconds_not_hours(course_toml):
    course_toml()
    assert term.grace_seconds() == 600
    plugin = term.CourseLatePenalty()
    assert plugin.late_submission_penalty("s", 6.7, 21) is None          # 21 s late: on time
    assert plugin.late_submission_penalty("s", 10.0, 600) is None
    assert plugin.late_submission_penalty("s", 10.0, 601) == pytest.approx(1.0)   # past it: from the due date
    assert "up to 10m late counts as on time" in term.describe_policy()
    assert "counts as on time" not in term.due_cell_text(STEP)        # the released header is unchanged


@pytest.mark.parametrize("grace, seconds", [('"5m"', 300), ('"1h"', 3600), ('"0m"', 0), ('"0"', 0)])
def test_grace_is_set_in_course_toml(course_toml, grace, seconds):
    course_toml(f'policy = "per_day"\npercent = 10\ngrace = {grace}\n')
    assert term.grace_seconds() == seconds
    assert term.CourseLatePenalty().late_submission_penalty("s", 10, seconds + 1) == pytest.approx(1.0)


@pytest.mark.parametrize("grace, message", [("5", "in quotes"), ('"soon"', "not a length of time")])
def test_a_bad_grace_names_the_fix(course_toml, grace, message):
    course_toml(f'policy = "per_day"\npercent = 10\ngrace = {grace}\n')
    with pytest.raises(term.TermError, match=message):
        term.grace_seconds()


def test_submit_after_the_due_date_warns_with_the_cost(course_toml, capsys):
    from autograder.classroom.exchange import _warn_if_late
    course_toml()
    stamp = lambda dt: dt.strftime("%Y-%m-%d %H:%M:%S.%f UTC")      # noqa: E731
    _warn_if_late(STEP, "ada", stamp(DUE - timedelta(minutes=1)))
    assert capsys.readouterr().out == ""
    _warn_if_late(STEP, "ada", stamp(DUE + timedelta(seconds=21)))
    assert "within the grace period" in capsys.readouterr().out
    _warn_if_late(STEP, "ada", stamp(DUE + timedelta(hours=2, minutes=5)))
    out = capsys.readouterr().out
    assert "LATE" in out and "2 hours 5 minutes" in out and "30 % of each late notebook's score" in out
    assert "3 hours begun" in out


def notebook(text: str) -> bytes:
    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": text}], "metadata": {},
                       "nbformat": 4, "nbformat_minor": 5}).encode()


def submission(inbound, student, when: datetime, notebooks: dict[str, bytes]):
    stamp = when.strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    folder = inbound / f"{student}+{STEP}+{stamp}+rnd{when.second}"
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text(stamp)
    for name, data in notebooks.items():
        (folder / f"{name}.ipynb").write_bytes(data)
    return folder


def test_a_one_notebook_fix_makes_only_that_notebook_late(tmp_path, course_toml, monkeypatch):
    """Through the exchange: an on-time submission of two notebooks, then a fix of one after the
    due date. `make collect`'s notebook times, then grading's reading of them, then the penalty in
    the gradebook: only the fixed notebook pays, and the summary says why the other does not."""
    import shutil

    from nbgrader.api import Gradebook

    from autograder.classroom.exchange import write_notebook_times
    from autograder.term import notebook_times, submission_times
    course_toml()
    inbound = tmp_path / "inbound"
    submission(inbound, "ada", DUE - timedelta(hours=1), {"a": notebook("a1"), "b": notebook("b1")})
    newest = submission(inbound, "ada", DUE + timedelta(hours=3), {"a": notebook("a1"), "b": notebook("b2")})
    submission(inbound, "bob", DUE + timedelta(hours=5), {"a": notebook("not ada's")})
    collected = tmp_path / "collected" / "ada" / STEP
    shutil.copytree(newest, collected)                       # what nbgrader collect copies
    times = write_notebook_times(sorted(inbound.glob(f"ada+{STEP}+*")), collected, "ada", STEP)
    assert times == {"a.ipynb": term.format_timestamp((DUE - timedelta(hours=1)).timestamp()),
                     "b.ipynb": term.format_timestamp((DUE + timedelta(hours=3)).timestamp())}
    chosen, problems = pick_newest(collect(tmp_path / "collected", ["a", "b"]))
    assert problems == []
    submitted_at, sources = submission_times(chosen, STEP)
    own = notebook_times(chosen, submitted_at)
    assert submitted_at["ada"] == (DUE + timedelta(hours=3)).timestamp()
    assert own["ada"] == {"a": (DUE - timedelta(hours=1)).timestamp(), "b": (DUE + timedelta(hours=3)).timestamp()}
    home = tmp_path / "home"
    monkeypatch.setenv("GRADER_HOME", str(home))
    store = Store(home, f"sqlite:///{tmp_path / 'gb.db'}")
    store.save_times(STEP, sources, own)
    monkeypatch.setenv("PATH", os.path.dirname(os.sys.executable) + os.pathsep + os.environ["PATH"])
    url = f"sqlite:///{tmp_path / 'gb.db'}"
    with Gradebook(url, "dl-course") as gb:
        gb.add_assignment(STEP)
        for name in ("a", "b"):
            gb.add_notebook(name, STEP)
            gb.add_grade_cell("t", name, STEP, max_score=10, cell_type="code")
            gb.add_source_cell("t", name, STEP, cell_type="code", source="", locked=True, checksum="")
        gb.add_student("ada")
        gb.add_submission(STEP, "ada", timestamp=datetime.fromtimestamp(submitted_at["ada"], timezone.utc))
        for name in ("a", "b"):
            grade = gb.find_grade("t", name, STEP, "ada")
            grade.auto_score, grade.needs_manual_grade = 10, False
        gb.db.commit()
    store.apply_term(STEP)
    ada = store.load(find_step(STEP))[0]
    record = ada.term
    assert record["penalties"] == {"a": 0.0, "b": pytest.approx(3.0)}           # 3 hours begun x 10 %
    assert record["notebook_seconds_late"] == {"a": 0.0, "b": 3 * 3600}
    totals = ada.totals
    lines = summary_lines("ada", totals, record)
    text = "\n".join(lines)
    assert "on time: unchanged since a submission before the due date" in lines[0]
    assert "late penalty -3, 3 hours late" in lines[1]
    assert "3 hours late" in text and "late work: 10 % of a notebook's score off per hour" in text
    assert "(up to 10m late counts as on time)" in text


def test_a_late_mark_from_the_lms_keeps_one_time_for_all(tmp_path, course_toml):
    """Canvas's LATE mark applies to the whole submission; its files' times are the download's."""
    from autograder.term import notebook_times, submission_times
    course_toml()
    for name in ("01-on-paper", "02-the-head"):
        path = tmp_path / f"smithjohn_LATE_12_34_{name}.ipynb"
        path.write_bytes(notebook(name))
        os.utime(path, (DUE.timestamp() - 7200, DUE.timestamp() - 7200))
    chosen, _ = pick_newest(collect(tmp_path, ["01-on-paper", "02-the-head"]))
    submitted_at, _ = submission_times(chosen, STEP)
    own = notebook_times(chosen, submitted_at)
    assert set(own["smithjohn"].values()) == {submitted_at["smithjohn"]} and submitted_at["smithjohn"] > DUE.timestamp()


@pytest.mark.slow
def test_make_submit_after_the_due_date_says_how_late_and_what_it_costs(tmp_path_factory):
    """As a student meets it: `make fetch`, then `make submit` once the step is due."""
    from conftest import copy_course
    from conftest import make
    course = copy_course(tmp_path_factory.mktemp("late"))
    (course / "course.toml").write_text(f'[due]\n{STEP} = 2026-01-10T12:00:00Z\n[late]\npolicy = "per_day"\n'
                                        'percent = 10\ngrace = "5m"\n')
    out = make(course, "fetch")
    assert "(up to 5m late counts as on time)" in out
    out = make(course, "submit", "STUDENT=ada")
    assert "handed in as ada" in out and "submit: LATE: handed in" in out
    assert "% of each late notebook's score (10 % per day or part of one" in out
    (course / "course.toml").write_text(f'[due]\n{STEP} = 2099-01-10T12:00:00Z\n[late]\npolicy = "per_day"\npercent = 10\n')
    out = make(course, "submit", "STUDENT=bea")
    assert "LATE" not in out
    # bea fixes one notebook and hands everything in again; make collect keeps the five unchanged
    # notebooks at the time of her first submission
    import time
    time.sleep(1.1)
    mine = course / "notebooks" / STEP
    first = sorted(mine.glob("*.ipynb"))[0]
    first.write_text(first.read_text().replace('"cells": [', '"cells": [{"cell_type": "markdown", "id": "fix", '
                                                '"metadata": {}, "source": "a fix"}, ', 1))
    make(course, "submit", "STUDENT=bea")
    make(course, "collect")
    collected = course / "autograder" / "collected" / "bea" / STEP
    times = json.loads((collected / "notebook_times.json").read_text())
    newest = (collected / "timestamp.txt").read_text().strip()
    assert times[first.name] == newest
    assert len(times) == 6 and all(t < newest for name, t in times.items() if name != first.name), times
    chosen, problems = pick_newest(collect(course / "autograder" / "collected", [p.stem for p in mine.glob("*.ipynb")]))
    bea = {name: item for (sid, name), item in chosen.items() if sid == "bea"}
    assert bea[first.stem].time_source == "timestamp.txt"
    assert all(item.time_source == "timestamp.txt (unchanged since an earlier submission)"
               for name, item in bea.items() if name != first.stem)
