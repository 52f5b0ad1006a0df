"""The term: due dates (course.toml), extensions (extensions.csv), submission times from nbgrader's
timestamp.txt, the late policy as nbgrader's LateSubmissionPlugin, applied in the gradebook."""
from __future__ import annotations

import json
import os
import zipfile
from datetime import datetime, timedelta, timezone

import pytest

from autograder import term
from autograder.intake.collect import canvas_name, collect, pick_newest
from autograder.records.gradebook import apply_term, term_records

from conftest import NOTEBOOK_NAMES, ROOT, STEP, STEP4

FIRST = NOTEBOOK_NAMES[0]
GOOD = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


@pytest.fixture
def term_files(tmp_path, monkeypatch):
    """A course.toml and an extensions.csv of the test's own."""
    toml, ext = tmp_path / "course.toml", tmp_path / "extensions.csv"
    toml.write_text('[due]\nstep-04 = 2026-01-10T12:00:00Z\n[late]\npolicy = "per_day"\npercent = 10\n')
    ext.write_text("student,step,extension,reason\n# a note\nbea,step-04,2d,illness\ncy,step-03,1d,\n")
    monkeypatch.setenv("COURSE_TERM", str(toml))
    monkeypatch.setenv("COURSE_EXTENSIONS", str(ext))
    return toml, ext


def test_the_course_has_one_due_date_per_step_and_a_valid_policy():
    os.environ.pop("COURSE_TERM", None)
    due = term.due_date("step-04", ROOT / "course.toml")
    assert due is not None and due.tzinfo is not None
    assert term.late_policy(ROOT / "course.toml")[0] in term.POLICIES
    assert term.extension_rows(ROOT / "extensions.csv") == [] or all(
        r["extension"] > timedelta(0) for r in term.extension_rows(ROOT / "extensions.csv"))


def test_due_date_and_policy_are_read_from_course_toml(term_files):
    assert term.due_date(STEP) == datetime(2026, 1, 10, 12, tzinfo=timezone.utc)
    assert term.due_date("step-99") is None
    assert term.late_policy() == ("per_day", 10.0)
    plugin = term.CourseLatePenalty()
    assert (plugin.penalty_method, plugin.percent) == ("per_day", 10.0)


@pytest.mark.parametrize("text, message", [
    ('[due]\nstep-04 = 2026-01-10T12:00:00\n', "has no UTC offset"),
    ('[due]\nstep-04 = 2026-01-10\n', "needs a time of day"),
    ('[due]\nstep-04 = "next friday"\n', "is not a date and time"),
    ('[late]\npolicy = "half"\n', "is not one of none, zero, per_hour, per_day"),
    ('[late]\npolicy = "per_hour"\n', "needs percent"),
    ('[late]\npolicy = "per_day"\npercent = 250\n', "must be a number from 0 to 100"),
    ('[due\n', "fix the file"),
])
def test_a_bad_course_toml_says_what_to_fix(tmp_path, text, message):
    path = tmp_path / "course.toml"
    path.write_text(text)
    with pytest.raises(term.TermError, match=message):
        term.due_date("step-04", path)
        term.late_policy(path)


@pytest.mark.parametrize("policy, percent, seconds, score, expected", [
    ("none", 0, 10 * 86400, 8.0, None),
    ("zero", 0, 1, 8.0, 8.0),
    ("per_day", 10, 1, 8.0, 0.8),             # any part of a day counts as a day
    ("per_day", 10, 86400, 8.0, 0.8),
    ("per_day", 10, 86401, 8.0, 1.6),
    ("per_day", 10, 30 * 86400, 8.0, 8.0),    # never more than the score
    ("per_hour", 5, 2 * 3600 + 1, 10.0, 1.5),
    ("per_day", 10, 0, 8.0, None),            # on time
])
def test_the_penalty_per_policy(policy, percent, seconds, score, expected):
    got = term.penalty(score, seconds, policy, percent)
    assert got == (None if expected is None else pytest.approx(expected))
    plugin = term.CourseLatePenalty(penalty_method=policy, percent=percent, grace=0)
    assert plugin.late_submission_penalty("s", score, seconds) == got


def test_extensions_are_one_line_per_student_and_step(term_files):
    assert term.extensions("step-04") == {"bea": timedelta(days=2)}
    assert term.extensions("step-03") == {"cy": timedelta(days=1)}
    lines = []
    term.list_extensions(STEP, say=lines.append)
    assert "due Sat 10 Jan 2026 12:00 UTC" in lines[0]
    assert any("bea" in line and "+2d" in line and "Mon 12 Jan 2026 12:00 UTC" in line and "illness" in line
               for line in lines)


@pytest.mark.parametrize("text, message", [
    ("student,step,extension\nbea,step-04,2 weeks\n", "line 2: '2 weeks' is not a length of time"),
    ("student,step,extension\nbea,step-04,2d\nbea,step-04,3d\n", "line 3: bea already has an extension"),
    ("name,step,extension\nbea,step-04,2d\n", "missing: student"),
    ("student,step,extension\n---,step-04,2d\n", "cannot be a student id"),
])
def test_a_bad_extensions_file_names_the_line(tmp_path, text, message):
    path = tmp_path / "extensions.csv"
    path.write_text(text)
    with pytest.raises(term.TermError, match=message):
        term.extension_rows(path)


def test_durations():
    assert term.parse_duration("1d12h") == timedelta(hours=36)
    assert term.parse_duration("90m") == timedelta(minutes=90)
    assert term.show_duration(timedelta(hours=36)) == "1d12h"
    for bad in ("", "12", "d", "-1d", "1w"):
        with pytest.raises(ValueError):
            term.parse_duration(bad)


def test_nbgraders_timestamp_is_parsed_and_written_back():
    seconds = term.parse_timestamp("2026-01-10 11:00:00.500000 UTC")
    assert seconds == datetime(2026, 1, 10, 11, 0, 0, 500000, tzinfo=timezone.utc).timestamp()
    assert term.format_timestamp(seconds) == "2026-01-10 11:00:00.500000 UTC"
    assert term.parse_timestamp("2026-01-10 12:00:00 +0100") == datetime(2026, 1, 10, 11, tzinfo=timezone.utc).timestamp()
    for bad in ("", "yesterday", "x" * 100):
        assert term.parse_timestamp(bad) is None


def write(path, data=GOOD, mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


STAMP = "2026-01-10 11:00:00.000000 UTC"
STAMPED = datetime(2026, 1, 10, 11, tzinfo=timezone.utc).timestamp()


def test_submission_time_comes_from_timestamp_txt_in_folders_and_zips(tmp_path):
    write(tmp_path / "ada" / "step-04" / f"{FIRST}.ipynb", mtime=2_000_000_000)
    write(tmp_path / "ada" / "step-04" / "timestamp.txt", STAMP.encode())
    with zipfile.ZipFile(tmp_path / "bea.zip", "w") as archive:
        archive.writestr(f"step-04/{FIRST}.ipynb", GOOD)
        archive.writestr("step-04/timestamp.txt", STAMP)
    write(tmp_path / "cy" / f"{FIRST}.ipynb", mtime=1_800_000_000)                  # no timestamp.txt
    write(tmp_path / "dan" / f"{FIRST}.ipynb", mtime=1_800_000_000)
    write(tmp_path / "dan" / "timestamp.txt", b"not a time")                        # unreadable: file time
    write(tmp_path / f"eve_{FIRST}.ipynb", mtime=1_700_000_000)                     # loose: its own time
    chosen, problems = pick_newest(collect(tmp_path, NOTEBOOK_NAMES))
    assert [(p["student"], p.get("notice")) for p in problems] == [("dan", True)]      # reported, still graded
    assert "timestamp.txt ('not a time')" in problems[0]["problem"]
    got = {sid: (item.mtime, item.time_source) for (sid, _), item in chosen.items()}
    assert got == {"ada": (STAMPED, "timestamp.txt"), "bea": (STAMPED, "timestamp.txt"),
                   "cy": (1_800_000_000, "file time"), "dan": (1_800_000_000, "file time"),
                   "eve": (1_700_000_000, "file time")}


def test_canvas_bulk_download_names_and_their_late_flag(tmp_path, term_files):
    assert canvas_name(f"smithjohn_LATE_12345_67890_{FIRST}.ipynb") == ("smithjohn", True, f"{FIRST}.ipynb")
    assert canvas_name(f"doejane_2345_7890_{FIRST}-1.ipynb") == ("doejane", False, f"{FIRST}-1.ipynb")
    assert canvas_name(f"alice_{FIRST}.ipynb") is None
    on_time = datetime(2026, 1, 9, tzinfo=timezone.utc).timestamp()          # file times before the due date
    tmp_path = tmp_path / "download"
    write(tmp_path / f"smithjohn_LATE_12345_67890_{FIRST}.ipynb", mtime=on_time)
    write(tmp_path / f"doejane_2345_7890_{FIRST}-1.ipynb", mtime=on_time)
    write(tmp_path / f"bea_LATE_3456_8901_{FIRST}.ipynb", mtime=on_time)      # late by Canvas, has an extension
    chosen, problems = pick_newest(collect(tmp_path, NOTEBOOK_NAMES))
    assert problems == [] and sorted(sid for sid, _ in chosen) == ["bea", "doejane", "smithjohn"]
    assert {sid: item.lms_late for (sid, _), item in chosen.items()} == \
        {"smithjohn": True, "doejane": False, "bea": True}
    times, sources = term.submission_times(chosen, STEP)
    due = term.due_date(STEP).timestamp()
    assert times["smithjohn"] == due + 1 and "marked late by the LMS" in sources["smithjohn"]
    assert times["doejane"] == on_time and sources["doejane"] == "file time"
    assert times["bea"] == due + 2 * 86400 + 1                                # past her own due date


def test_released_notebooks_show_the_due_date_after_the_header():
    os.environ.pop("COURSE_TERM", None)
    text = term.due_cell_text("step-04")
    assert text.startswith("**Due: ") and "UTC" in text
    for name in NOTEBOOK_NAMES:
        nb = json.loads((STEP4.release / f"{name}.ipynb").read_text(encoding="utf-8"))
        ids = [c.get("id") for c in nb["cells"]]
        assert ids.index(term.DUE_CELL_ID) == ids.index("header_name") + 1, name
        assert "".join(nb["cells"][ids.index(term.DUE_CELL_ID)]["source"]) == text, \
            f"{name}: the release shows another due date than course.toml: run `make release`"


def test_nbgrader_is_configured_with_the_course_policy_and_the_due_date_cell():
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.AssignLatePenalties.plugin_class is term.CourseLatePenalty
    assert term.ShowDueDate in config.GenerateAssignment.preprocessors


def small_gradebook(path, monkeypatch) -> str:
    """A gradebook with one step of one notebook (a 10-point test, a 4-point written answer) and
    three submissions: ada on time, bea and cy 26 h late (bea has a 2-day extension)."""
    from nbgrader.api import Gradebook
    monkeypatch.setenv("PATH", os.path.dirname(os.sys.executable) + os.pathsep + os.environ["PATH"])
    url = f"sqlite:///{path}"
    with Gradebook(url, "dl-course") as gb:
        gb.add_assignment("step-04")
        gb.add_notebook("nb", "step-04")
        gb.add_grade_cell("t1", "nb", "step-04", max_score=10, cell_type="code")
        gb.add_source_cell("t1", "nb", "step-04", cell_type="code", source="", locked=True, checksum="")
        gb.add_grade_cell("w1", "nb", "step-04", max_score=4, cell_type="markdown")
        gb.add_solution_cell("w1", "nb", "step-04")
        gb.add_source_cell("w1", "nb", "step-04", cell_type="markdown", source="", locked=False, checksum="")
        for sid, stamp in (("ada", "2026-01-10 11:00:00 UTC"), ("bea", "2026-01-11 14:00:00 UTC"),
                           ("cy", "2026-01-11 14:00:00 UTC")):
            gb.add_student(sid)
            gb.add_submission("step-04", sid, timestamp=stamp)
            test = gb.find_grade("t1", "nb", "step-04", sid)
            test.auto_score, test.needs_manual_grade = 5, False
            written = gb.find_grade("w1", "nb", "step-04", sid)
            written.needs_manual_grade = True
        gb.db.commit()
    return url


def test_apply_term_writes_due_date_extension_and_penalties_into_the_gradebook(tmp_path, term_files, monkeypatch):
    """nbgrader's own late-penalty bookkeeping, filled in without nbgrader autograde."""
    from nbgrader.api import Gradebook
    url = small_gradebook(tmp_path / "gb.db", monkeypatch)
    apply_term(url, STEP)
    records = term_records(url, STEP)
    assert records["ada"]["seconds_late"] == 0 and records["ada"]["penalties"] == {"nb": 0.0}
    assert records["bea"]["seconds_late"] == 0 and records["bea"]["extension"] == "2d"      # on time thanks to it
    assert records["cy"]["seconds_late"] == 26 * 3600
    assert records["cy"]["penalties"] == {"nb": pytest.approx(1.0)}                          # 2 days x 10 % of 5
    with Gradebook(url, "dl-course") as gb:
        assert gb.find_assignment("step-04").duedate == datetime(2026, 1, 10, 12)
        assert gb.find_submission("step-04", "cy").late_submission_penalty == pytest.approx(1.0)
    # the extension taken away again: bea is late like cy
    term_files[1].write_text("student,step,extension\n")
    apply_term(url, STEP, ["bea"])
    assert term_records(url, STEP)["bea"]["penalties"] == {"nb": pytest.approx(1.0)}


def test_exports_are_nbgrader_export_plugins_giving_the_same_files(tmp_path, term_files, monkeypatch):
    """`make export` and `nbgrader export --exporter=...` write the same Canvas import and per-notebook CSV."""
    import csv
    import subprocess
    import sys

    from autograder.lms.export import CANVAS_COLUMNS, export_all
    home = tmp_path / "home"
    home.mkdir()
    url = small_gradebook(home / "gradebook.db", monkeypatch)
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", url)
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,canvas_id,sis_user_id,sis_login_id,section\n"
                      "ada,\"Lovelace, Ada\",1001,S-1,ada.l,Mon\ncy,=HYPERLINK(1),1003,,,\n")
    monkeypatch.setenv("COURSE_ROSTER", str(roster))
    canvas, notebooks = export_all(STEP, say=lambda *a: None)
    rows = list(csv.reader(canvas.read_text().splitlines()))
    assert rows[0] == CANVAS_COLUMNS + ["Step 4: A Causal Self-Attention Head"]
    assert rows[1] == ["Points Possible", "", "", "", "", "14"]
    assert rows[2:] == [["Lovelace, Ada", "1001", "S-1", "ada.l", "Mon", "5"],
                        ["bea", "", "", "bea", "", "5"],                      # on time through her extension
                        ["'=HYPERLINK(1)", "1003", "", "cy", "", "4"]]        # 5 - 2 days x 10 %
    per_notebook = list(csv.DictReader(notebooks.read_text().splitlines()))
    assert [(r["student"], r["score"], r["late_penalty"], r["final_score"], r["written_to_grade"])
            for r in per_notebook] == [("ada", "5", "0", "5", "w1"), ("bea", "5", "0", "5", "w1"),
                                       ("cy", "5", "1", "4", "w1")]
    assert per_notebook[1]["extension"] == "2d" and float(per_notebook[2]["seconds_late"]) == 26 * 3600
    for exporter, ours in (("CanvasExport", canvas), ("NotebookTotalsExport", notebooks)):
        theirs = tmp_path / f"{exporter}.csv"
        proc = subprocess.run([sys.executable, "-m", "nbgrader", "export", f"--exporter=autograder.lms.export.{exporter}",
                               f"--to={theirs}"], cwd=ROOT, capture_output=True, text=True, env=os.environ)
        assert proc.returncode == 0, proc.stderr
        assert theirs.read_text() == ours.read_text(), exporter


def test_grades_json_schema_is_versioned_and_documented():
    from autograder.publish.report import FIELDS, GRADES_SCHEMA, SCHEMA_VERSION
    assert SCHEMA_VERSION == 2 and GRADES_SCHEMA["schema_version"] == "int: 2"
    assert set(GRADES_SCHEMA) == {"schema_version", "step", "term", "grades", "submissions", "problems", "notes", "time_budget"}
    assert set(GRADES_SCHEMA["grades"][0]) == set(FIELDS)


def test_formulas_become_mathml_outside_code_and_survive_what_cannot_convert():
    from autograder.publish.mathml import markdown_math_to_mathml
    out = markdown_math_to_mathml("Scores $q_i \\cdot k_j$ cost \\$5; `$x$` and\n```\n$y$\n```\n$$\\sum_j a_{ij} = 1$$")
    assert out.count("<math") == 2 and 'display="block"' in out and 'display="inline"' in out
    assert "`$x$`" in out and "\n$y$\n" in out and "\\$5" in out
    assert "$q_i" not in out and "$$" not in out
    broken = markdown_math_to_mathml("$\\frac{1}{$ and text")
    assert "<math" not in broken or "<code>" in broken
    smuggled = markdown_math_to_mathml("$\\text{<img src=x onerror=alert(1)>}$ and $a<script>b$")
    assert "<img" not in smuggled and "<script" not in smuggled and "&lt;img" in smuggled


def test_my_feedback_reads_the_summary_the_feedback_page_carries(tmp_path):
    from autograder.publish.feedback import feedback_summary, summary_html
    summary = {"student": "cy", "step": "step-04", "lines": ["step total 3.2 / 57 </script><b>"],
               "notebooks": {}, "step_totals": {"total": 3.2}, "term": {}}
    (tmp_path / "01-on-paper.html").write_text(f"<html><body>{summary_html(summary)}</body></html>")
    assert feedback_summary(tmp_path) == summary
    assert "</script><b>" not in summary_html(summary).split("<script", 1)[1].split("</script>", 1)[0]
    assert feedback_summary(tmp_path / "none") is None
