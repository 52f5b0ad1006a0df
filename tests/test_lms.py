"""LMS in and out: Canvas's and Moodle's submission downloads read with their user ids kept, the
roster imported from the LMS's own gradebook export, the Canvas import filled and checked against
Canvas's documented format, and every CSV the project writes safe to open in a spreadsheet.

Formats relied on (the comments in autograder/intake/collect.py and autograder/lms/roster.py cite them):
Canvas's ContentZipper names a download's files `<name>[_LATE]_<user id>_<attachment id>_<file>`;
Moodle's "Download all submissions" `Full Name_<participant id>_assignsubmission_file_[/]<file>`;
Canvas's gradebook import (its guide "How do I import grades in the Gradebook?") reads the columns
Student, ID, SIS User ID, SIS Login ID, Section, then one column per assignment, `Name (assignment
id)` for an existing assignment (a name alone that differs makes a new one), a "Points Possible"
line optional."""
from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import zipfile
from pathlib import Path

import pytest

from autograder.intake.collect import collect, lms_name, pick_newest
from autograder.csvout import PLAIN_NUMBER, csv_text, escape_text, number_field, strict_field, text_of
from autograder.safetext import printable
from conftest import ROOT, STEP, STEP4
from test_term import small_gradebook, term_files  # noqa: F401  (a fixture)

NAMES = STEP4.notebooks()
FIRST = NAMES[0]


def nb(text="x") -> bytes:
    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": text}], "metadata": {},
                       "nbformat": 4, "nbformat_minor": 5}).encode()


# ---- the names -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,lms,who,user,late,rest", [
    ("millerfrank_12345_67890_step04.zip", "canvas", "millerfrank", "12345", False, "step04.zip"),
    ("smithjohn_LATE_12345_67890_01-on-paper.ipynb", "canvas", "smithjohn", "12345", True, "01-on-paper.ipynb"),
    ("o_brien2_555_777_01-on-paper-1.ipynb", "canvas", "o_brien2", "555", False, "01-on-paper-1.ipynb"),
    ("LATE_anon_Xy7Qz_777_01-on-paper.ipynb", "canvas", "anon_Xy7Qz", "anon_Xy7Qz", True, "01-on-paper.ipynb"),
    ("Frank Miller_4242_assignsubmission_file_", "moodle", "Frank Miller", "4242", False, ""),
    ("Zoë Dupont_17_assignsubmission_file_01-on-paper.ipynb", "moodle", "Zoë Dupont", "17", False, "01-on-paper.ipynb"),
    ("Frank Miller_4242_assignsubmission_onlinetext_onlinetext.html", "moodle", "Frank Miller", "4242", False,
     "onlinetext.html"),
])
def test_lms_download_names(name, lms, who, user, late, rest):
    found = lms_name(name)
    assert (found.lms, found.name, found.user, found.late, found.rest) == (lms, who, user, late, rest)


def test_other_names_are_not_lms_names():
    for name in ("alice_01-on-paper.ipynb", "ada", "smith_12345_01-on-paper.ipynb", "submissions.zip"):
        assert lms_name(name) is None, name


# ---- the downloads ---------------------------------------------------------------------------------

def canvas_class_zip(path: Path) -> None:
    """Canvas's submissions.zip: two students' loose notebooks, one student's own zip, one late."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr(f"step04/{FIRST}.ipynb", nb("miller's"))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"smithjohn_12345_90001_{FIRST}.ipynb", nb("smith's"))
        z.writestr(f"leeanna_LATE_23456_90002_{FIRST}.ipynb", nb("lee's"))
        z.writestr("millerfrank_34567_90003_step04.zip", inner.getvalue())


def test_canvas_whole_class_zip_left_zipped_is_read_as_its_students_with_their_user_ids(tmp_path):
    canvas_class_zip(tmp_path / "submissions.zip")
    received = collect(tmp_path, NAMES)
    chosen, problems = pick_newest(received)
    assert problems == []
    assert {s for s, _ in chosen} == {"smithjohn", "leeanna", "millerfrank"}        # never one student `submissions`
    assert chosen[("millerfrank", FIRST)].data == nb("miller's")
    assert chosen[("smithjohn", FIRST)].lms.user == "12345" and chosen[("leeanna", FIRST)].lms_late
    # the zip itself given as the submissions (make grade SUBMISSIONS=submissions.zip): the same class
    again, _ = pick_newest(collect(tmp_path / "submissions.zip", NAMES))
    assert {key: item.data for key, item in again.items()} == {key: item.data for key, item in chosen.items()}


def test_canvas_per_student_zip_is_the_student_not_the_file_name(tmp_path):
    with zipfile.ZipFile(tmp_path / "millerfrank_12345_67890_step04.zip", "w") as z:
        z.writestr(f"step04/{FIRST}.ipynb", nb())
    chosen, problems = pick_newest(collect(tmp_path, NAMES))
    assert list(chosen) == [("millerfrank", FIRST)] and problems == []
    assert chosen[("millerfrank", FIRST)].lms.user == "12345"


def test_moodle_download_folders_files_and_whole_zip(tmp_path):
    (tmp_path / "Frank Miller_4242_assignsubmission_file_").mkdir()
    (tmp_path / "Frank Miller_4242_assignsubmission_file_" / f"{FIRST}.ipynb").write_bytes(nb("frank"))
    (tmp_path / f"Zoë Dupont_17_assignsubmission_file_{FIRST}.ipynb").write_bytes(nb("zoe"))
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr(f"work/{FIRST}.ipynb", nb("bo"))
    with zipfile.ZipFile(tmp_path / "DL-course-Step 4-12.zip", "w") as z:
        z.writestr(f"Ann Lee_99_assignsubmission_file_/{FIRST}.ipynb", nb("ann"))
        z.writestr("Ann Lee_99_assignsubmission_onlinetext_onlinetext.html", b"<p>hi</p>")
        z.writestr("Bo Chen_7_assignsubmission_file_/step04.zip", inner.getvalue())     # a student's own zip
    chosen, problems = pick_newest(collect(tmp_path, NAMES))
    assert {s for s, _ in chosen} == {"Frank-Miller", "Zoë-Dupont", "Ann-Lee", "Bo-Chen"}
    assert chosen[("Bo-Chen", FIRST)].data == nb("bo") and chosen[("Bo-Chen", FIRST)].lms.user == "7"
    assert chosen[("Ann-Lee", FIRST)].data == nb("ann") and chosen[("Ann-Lee", FIRST)].lms.lms == "moodle"
    assert [p["student"] for p in problems] == ["Ann-Lee"] and "not a notebook" in problems[0]["problem"]


def test_two_canvas_students_of_one_name_stay_two(tmp_path):
    (tmp_path / f"smithjohn_111_1_{FIRST}.ipynb").write_bytes(nb("first"))
    (tmp_path / f"smithjohn_222_2_{FIRST}.ipynb").write_bytes(nb("second"))
    chosen, _ = pick_newest(collect(tmp_path, NAMES))
    assert {s for s, _ in chosen} == {"smithjohn_111", "smithjohn_222"}


def test_the_roster_gives_lms_students_their_ids(tmp_path, monkeypatch):
    from autograder.lms.roster import lms_ids
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,canvas_id,sis_user_id,sis_login_id,section,moodle_name\n"
                      "jsmith,\"Smith, John\",12345,S1,jsmith,A,\nalee,\"Lee, Ann\",,,,,Ann Lee\n")
    monkeypatch.setenv("COURSE_ROSTER", str(roster))
    subs = tmp_path / "subs"
    subs.mkdir()
    canvas_class_zip(subs / "submissions.zip")
    with zipfile.ZipFile(subs / "moodle.zip", "w") as z:
        z.writestr(f"Ann Lee_99_assignsubmission_file_/{FIRST}.ipynb", nb("ann"))
    chosen, _ = pick_newest(collect(subs, NAMES, roster_ids=lms_ids()))
    assert {s for s, _ in chosen} == {"jsmith", "leeanna", "millerfrank", "alee"}


# ---- the roster from the LMS's export, and the Canvas import -------------------------------------

CANVAS_EXPORT = (
    'Student,ID,SIS User ID,SIS Login ID,Section,Step 4: A Causal Self-Attention Head (55501),Quiz 1 (55502),'
    'Current Score\n'
    '    Points Possible,,,,,57,10,(read only)\n'
    '"Lovelace, Ada",1001,S-1,ada.l,Mon,,8,\n'
    '"Smith, John",12345,S-2,jsmith,Mon,,7,\n'
    '"Student, Test",999,,,Mon,,,\n'
    '"Never, Submitted",1004,S-4,nsub,Tue,,,\n')
MOODLE_EXPORT = ('First name,Last name,ID number,Institution,Department,Email address,Assignment: Step 4 (Real),'
                 'Last downloaded from this course\n'
                 'Ann,Lee,,Uni,CS,ann.lee@uni.example,-,1700000000\nFrank,Miller,M-7,Uni,CS,fm@uni.example,-,1700000000\n')


def test_roster_imported_from_canvas_and_moodle_exports(tmp_path, monkeypatch):
    from autograder.lms.roster import ROSTER_COLUMNS, canvas_assignment_id, import_roster, roster
    from autograder.steps import all_steps
    monkeypatch.setenv("COURSE_ROSTER", str(tmp_path / "roster.csv"))
    (tmp_path / "canvas.csv").write_text(CANVAS_EXPORT)
    said = []
    import_roster(tmp_path / "canvas.csv", all_steps(), say=said.append)
    people = roster()
    assert set(people) == {"ada.l", "jsmith", "nsub"}                   # no Points Possible line, no test student
    assert people["jsmith"]["canvas_id"] == "12345" and people["ada.l"]["sis_user_id"] == "S-1"
    assert canvas_assignment_id(STEP) == "55501" and any("55501" in line for line in said)
    assert next(csv.reader(io.StringIO((tmp_path / "roster.csv").read_text()))) == ROSTER_COLUMNS
    # an export whose assignment is named otherwise: the import says so; course.toml names it by hand
    monkeypatch.setenv("COURSE_TERM", str(tmp_path / "course.toml"))
    (tmp_path / "course.toml").write_text(f"[due]\n{STEP} = 2026-01-10T12:00:00Z\n")
    (tmp_path / "other.csv").write_text(CANVAS_EXPORT.replace("Step 4: A Causal Self-Attention Head (55501)",
                                                              "Attention homework (55503)"))
    said.clear()
    import_roster(tmp_path / "other.csv", all_steps(), say=said.append)
    assert canvas_assignment_id(STEP) is None
    assert any("[canvas_assignment]" in line and "Attention homework (55503)" in line for line in said)
    (tmp_path / "course.toml").write_text(f"[due]\n{STEP} = 2026-01-10T12:00:00Z\n[canvas_assignment]\n{STEP} = 55503\n")
    assert canvas_assignment_id(STEP) == "55503"
    (tmp_path / "moodle.csv").write_text(MOODLE_EXPORT)
    import_roster(tmp_path / "moodle.csv", all_steps(), say=said.append)
    people = roster()
    assert set(people) == {"ann.lee", "M-7"} and people["ann.lee"]["moodle_name"] == "Ann Lee"


def test_canvas_export_fills_ids_heads_the_assignment_id_and_names_the_unmatched(tmp_path, term_files, monkeypatch):
    """After `make roster` from Canvas's own export: ID and SIS columns filled, the step's column
    `<title> (<assignment id>)` as Canvas names an existing assignment, and both kinds of unmatched
    lines named (graded but not on the roster; on the roster but not graded)."""
    from autograder.lms.export import CANVAS_COLUMNS, export_all
    from autograder.lms.roster import import_roster
    from autograder.steps import all_steps
    home = tmp_path / "home"
    home.mkdir()
    url = small_gradebook(home / "gradebook.db", monkeypatch)          # students ada, bea, cy
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", url)
    monkeypatch.setenv("COURSE_ROSTER", str(tmp_path / "roster.csv"))
    export = CANVAS_EXPORT.replace('"Lovelace, Ada",1001,S-1,ada.l', '"Lovelace, Ada",1001,S-1,ada')
    (tmp_path / "canvas.csv").write_text(export)
    import_roster(tmp_path / "canvas.csv", all_steps(), say=lambda *a: None)
    (home / "work" / "lms" / STEP).mkdir(parents=True)                 # cy came in Canvas's download as user 777
    (home / "work" / "lms" / STEP / "cy.json").write_text(json.dumps({"lms": "canvas", "user_id": "777", "name": "cy"}))
    said = []
    canvas, _ = export_all(STEP, say=said.append)
    rows = list(csv.reader(canvas.read_text().splitlines()))
    # Canvas's documented import: these five columns first, then `Assignment (id)`; a Points Possible line
    assert rows[0][:5] == CANVAS_COLUMNS == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert re.fullmatch(r".+ \((\d+)\)", rows[0][5]) and rows[0][5] == "Step 4: A Causal Self-Attention Head (55501)"
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == 14
    by_login = {r[3]: r for r in rows[2:]}
    assert by_login["ada"][:5] == ["Lovelace, Ada", "1001", "S-1", "ada", "Mon"]
    assert by_login["cy"][1] == "777"                                  # the user id the download carried
    assert by_login["bea"][1] == ""                                    # nobody can tell Canvas who bea is...
    text = "\n".join(said)
    assert "graded, not on the roster: 'bea'" in text                  # ...so the export says so
    assert "on the roster, no grade: 'jsmith'" in text and "on the roster, no grade: 'nsub'" in text
    for row in rows[2:]:
        assert all(float(v) >= 0 for v in row[5:])                     # numbers, never quoted text


# ---- every CSV ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\")", "+1", "-1", "-3+4", "@SUM(A1)"])
def test_text_that_begins_like_a_formula_is_escaped(text):
    assert escape_text(text) == "'" + text
    out = list(csv.reader(io.StringIO(csv_text(["error", "score"], [{"error": text, "score": -0.4}], numbers=["score"]))))
    assert out[1] == ["'" + text, "-0.4"]                              # the penalty stays a number


def test_what_is_not_printable_is_written_as_its_escape():
    """A tab, NUL, ESC or a bidi override is shown, not kept: `cat grades.csv` runs nothing."""
    assert escape_text("\tx") == "\\tx" and escape_text("\0x") == "\\x00x"
    assert escape_text("a\x1b]52;c;SGVsbG8=\x07b") == "a\\x1b]52;c;SGVsbG8=\\x07b"
    assert escape_text("\u202eabc") == "\\u202eabc"


def test_a_line_break_is_marked_and_read_back():
    """A reader splitting by `;` ends a row at a line break even inside quotes: the break is marked."""
    assert escape_text("\rx") == "'\u23cex" and escape_text("a\r\nb\nc\rd") == "a\u23ceb\u23cec\u23ced"
    assert escape_text("a\n=cmd") == "a\u23ce'=cmd" and text_of(escape_text("a\nb")) == "a\nb"
    assert escape_text("x;=1") == "x;'=1" and escape_text("x;'y") == "x;''y" and text_of("x;''y") == "x;'y"
    assert csv_text(["a"], [["x\n=1+1"]]).count("\n") == 2       # the header's and the row's


def test_numbers_stay_numbers_and_a_number_column_carries_no_formula():
    assert [number_field(v) for v in (-0.4, 3, 0.0, "-0.4", "57", None, float("nan"), "")] == \
           ["-0.4", "3", "0.0", "-0.4", "57", "", "", ""]
    assert number_field("=1+1") == "'=1+1" and number_field("-1+1") == "'-1+1" and number_field(True) == "True"
    assert escape_text("ada") == "ada" and escape_text("Zoë") == "Zoë" and escape_text(None) == ""


@pytest.mark.parametrize("text", ["-\u0663", "-\u0661\u0660", "+\u0661", "-\uff11", "-\u0661e\u0662", "-\u0967.5"])
def test_a_number_in_another_scripts_digits_is_text(text):
    """Only ASCII digits make a plain number: `-٣` (Arabic-Indic digits) or `-１` (full-width) is no
    number a spreadsheet reads, so it is guarded like any text that begins with `-`, in a number
    column and under the allowlist (`strict`) alike, and no cell read with any separator begins with it."""
    assert not PLAIN_NUMBER.fullmatch(text)
    assert number_field(text) == strict_field(text) == escape_text(text) == "'" + text
    for strict in (False, True):
        out = csv_text(["who", "score", "error"], [{"who": "ada", "score": text, "error": text}], numbers=["score"],
                       strict=strict)
        for separator in SEPARATORS:
            for line in csv.reader(io.StringIO(out, newline=""), delimiter=separator):
                assert not any(cell.lstrip(" ").startswith(("-", "+")) for cell in line), (strict, separator, line)


SEPARATORS = (",", ";", "\t", "|", ":")


def random_seed() -> int:
    """A fresh seed each run (CSV_SEED=n repeats one)."""
    return int(os.environ.get("CSV_SEED") or int.from_bytes(os.urandom(4), "big"))


def hostile_fields(seed: int, n: int = 400) -> list[str]:
    """Mechanically made text a student controls: fragments of formulas, separators, quotes, spaces
    and line breaks joined at random (the seed is printed by the test that draws them)."""
    draw = random.Random(seed)
    parts = ["=", "+", "-", "@", "=HYPERLINK(\"http://x\")", "cmd|' /C calc'!A0", ";", ",", "\t", "|", ":",
             "\"", "'", " ", "\r", "\n", "\0", "1", "-1", "0.5", "ada", "a b", "Zoë", "\u202e", "\u00a0"]
    return ["".join(draw.choice(parts) for _ in range(draw.randint(1, 6))) for _ in range(n)]


@pytest.mark.parametrize("strict", [False, True])
def test_no_cell_starts_a_formula_whatever_separator_the_spreadsheet_splits_by(strict):
    """Read as a spreadsheet reads it, with `;` (the default where the decimal mark is a comma), a tab,
    `|` or `:` as the separator as well as `,`: every cell of every line is a plain number or begins
    with no formula character, and read with `,` every field comes back as written (escaped)."""
    seed = random_seed()
    print(f"hostile fields drawn with seed {seed}")
    fields = hostile_fields(seed)
    rows = [{"error": text, "student": fields[-1 - i], "score": -0.4} for i, text in enumerate(fields)]
    text = csv_text(["student", "error", "score"], rows, numbers=["score"], strict=strict)
    for separator in SEPARATORS:
        for line in csv.reader(io.StringIO(text, newline=""), delimiter=separator):
            for cell in line:
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r", "\0")) or \
                    PLAIN_NUMBER.fullmatch(cell), (seed, repr(separator), cell)
    back = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(back) == len(rows)
    for row, got in zip(rows, back):
        want = strict_field(row["error"]) if strict else escape_text(row["error"])
        assert got["error"] == want and got["score"] == "-0.4", (seed, row, got)
        if not strict:          # read back exactly, its line breaks as "\n", what is not printable as its escape
            assert text_of(got["error"]) == printable(row["error"], keep="\r\n").replace("\r\n", "\n").replace("\r", "\n"), \
                (seed, row)
        assert all(c.isprintable() for c in got["error"]), (seed, got)


@pytest.mark.parametrize("strict", [False, True])
def test_no_cell_starts_a_formula_after_its_leading_spaces_are_trimmed(strict):
    """A reader that trims a cell's spaces (LibreOffice's "Trim spaces") must not find a formula behind
    them: `x; =1+1`, ` =1+1`, `x,  @SUM(A1)` are guarded after the spaces, and read back as written."""
    fields = [" =1+1", "x; =HYPERLINK(\"http://x\")", "x,  @SUM(A1)", "x\t -1+2", "a |  +1", " ", "x; ", " 'y"]
    rows = [{"student": f, "error": f} for f in fields]
    text = csv_text(["student", "error"], rows, strict=strict)
    for separator in SEPARATORS:
        for line in csv.reader(io.StringIO(text, newline=""), delimiter=separator):
            for cell in line:
                assert not cell.lstrip(" ").startswith(("=", "+", "-", "@")), (repr(separator), cell)
    if not strict:
        back = list(csv.DictReader(io.StringIO(text, newline="")))
        assert [text_of(r["error"]) for r in back] == [f.replace("\t", "\\t") for f in fields]


def test_a_roster_written_by_the_grader_reads_back_as_it_was_given(tmp_path, monkeypatch):
    from autograder.csvout import write_csv
    from autograder.lms.roster import ROSTER_COLUMNS, roster
    monkeypatch.setenv("COURSE_ROSTER", str(tmp_path / "roster.csv"))
    names = ["Zoë Müller", "O'Neil, Ann", "=HYPERLINK(\"x\")", "a;=1+1", "-1", "x:'y", "two\nlines"]
    write_csv(tmp_path / "roster.csv", ROSTER_COLUMNS, [{"student": f"s{i}", "name": n} for i, n in enumerate(names)])
    assert [roster()[f"s{i}"]["name"] for i in range(len(names))] == names


def test_every_csv_the_grader_writes_goes_through_the_shared_writer():
    writers = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        if path.name == "csvout.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"csv\.(writer|DictWriter)\b", line):
                writers.append(f"{path.relative_to(ROOT)}:{number}")
    assert writers == [], writers


def test_the_grades_report_escapes_student_text_and_keeps_scores(tmp_path):
    from autograder.publish.report import FIELDS, NUMBER_FIELDS
    row = {"student": "ada", "notebook": "01", "grade_id": "t", "score": 0.0, "max_score": 2.0,
           "error": "=HYPERLINK(\"http://evil\",\"x\") raised", "kind": "auto", "bonus": False}
    out = list(csv.DictReader(io.StringIO(csv_text(FIELDS, [row], numbers=NUMBER_FIELDS))))[0]
    assert out["error"].startswith("'=HYPERLINK") and out["score"] == "0.0" and out["max_score"] == "2.0"


@pytest.mark.slow
def test_a_canvas_class_download_graded_and_exported_with_ids(grading_home, tmp_path, monkeypatch):
    """The instructor's path: `make roster` from Canvas's gradebook export, `make grade` on Canvas's
    submissions.zip left zipped, `make export`: every line of the import carries the Canvas ID and the
    SIS ids, the column names the existing assignment, and only the class's real students are in it."""
    from autograder.example import answer_ids, filled
    from autograder.lms.export import export_all
    from autograder.grading.grade import grade
    from autograder.lms.roster import import_roster
    from autograder.steps import all_steps
    monkeypatch.setenv("COURSE_ROSTER", str(tmp_path / "roster.csv"))
    monkeypatch.setenv("COURSE_TERM", str(tmp_path / "course.toml"))
    (tmp_path / "course.toml").write_text(f'[due]\n{STEP} = 2030-01-01T00:00:00Z\n[late]\npolicy = "none"\n')
    (tmp_path / "canvas.csv").write_text(CANVAS_EXPORT)
    import_roster(tmp_path / "canvas.csv", all_steps(), say=lambda *a: None)
    # jsmith answers the first half of the answers: the written ones wait for a TA, a code answer scores
    answers = len(answer_ids(json.loads((STEP4.release / f"{FIRST}.ipynb").read_text(encoding="utf-8"))))
    full = json.dumps(filled(STEP4, FIRST, lambda cid, i: True)).encode()
    half = json.dumps(filled(STEP4, FIRST, lambda cid, i: i < answers // 2)).encode()
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr(f"step04/{FIRST}.ipynb", half)
    (tmp_path / "class").mkdir()
    with zipfile.ZipFile(tmp_path / "class" / "submissions.zip", "w") as z:
        z.writestr(f"lovelaceada_1001_90001_{FIRST}.ipynb", full)
        z.writestr("smithjohn_12345_90002_step04.zip", inner.getvalue())
    out = grade(STEP4, tmp_path / "class", workers=2, quiet=True, feedback=False)
    assert {r["student"] for r in out["results"]} == {"ada.l", "jsmith"}        # the roster's ids
    said = []
    canvas, _ = export_all(STEP, say=said.append)
    rows = list(csv.reader(canvas.read_text().splitlines()))
    assert rows[0][5] == "Step 4: A Causal Self-Attention Head (55501)"
    lines = {r[3]: r for r in rows[2:]}
    assert set(lines) == {"ada.l", "jsmith"}
    assert lines["ada.l"][:5] == ["Lovelace, Ada", "1001", "S-1", "ada.l", "Mon"]
    assert lines["jsmith"][:5] == ["Smith, John", "12345", "S-2", "jsmith", "Mon"]
    assert float(lines["ada.l"][5]) > float(lines["jsmith"][5]) > 0
    text = "\n".join(said)
    assert "on the roster, no grade: 'nsub'" in text and "graded, not on the roster" not in text


def test_return_feedback_names_the_students_it_cannot_return_to(tmp_path, monkeypatch, capsys):
    """Graded from an LMS's download, a student has no exchange submission to return feedback to:
    `make return-feedback` says who, with their LMS user id, instead of skipping them without a word."""
    from autograder.classroom.exchange import return_feedback
    home = tmp_path / "home"
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(tmp_path / "exchange"))
    for sid in ("smithjohn", "ada"):
        (home / "feedback" / sid / STEP).mkdir(parents=True)
        (home / "feedback" / sid / STEP / f"{FIRST}.html").write_text("<html></html>")
    (home / "work" / "lms" / STEP).mkdir(parents=True)
    (home / "work" / "lms" / STEP / "smithjohn.json").write_text(
        json.dumps({"lms": "canvas", "user_id": "12345", "name": "smithjohn"}))
    assert return_feedback(STEP) == []
    out = capsys.readouterr().out
    assert "2 graded students did not hand in through the exchange" in out
    assert "smithjohn (canvas user 12345, 'smithjohn')" in out and "\n    ada\n" in out
