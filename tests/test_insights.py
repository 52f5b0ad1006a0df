"""`make insights`: the class report (autograder/publish/insights.py), read through the store's `load` only.

On the synthetic class of tests/insights_class.py (proof-corpus entries given to 200 students, their
judged outcomes written as the store writes them, no kernel) every misconception group, every cell
waiting for review, every written answer left, every late and extended student is the known one; on a
class of five worked by hand the item statistics are; student text stays text, in the page and the CSVs;
ids are shown only with --names.
"""
from __future__ import annotations

import csv
import io
import re
import time

import pytest

from autograder.csvout import csv_text, strict_field
from autograder.publish.insights import (analyse, anonymised, build_report, cause_key, causes, escaped, id_pattern,
                                 kelley, pearson, review_reasons)
from autograder.records.model import CellResult, NotebookResult, StudentResult
from autograder.records.store import Store
from conftest import STEP4
from insights_class import HOSTILE, build_class

N_STUDENTS = 200


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """(store, known counts, the report, its files, seconds to load and build)."""
    from proof_corpus import CORRECT, UNDECIDED, WRONG
    home = tmp_path_factory.mktemp("insights") / "grader"
    home.mkdir()
    known = build_class(home, STEP4.release, STEP4.name, N_STUDENTS, WRONG, UNDECIDED, CORRECT)
    store = Store(home, f"sqlite:///{home / 'gradebook.db'}")
    started = time.perf_counter()
    report, paths = build_report(STEP4, store, named=False)
    return store, known, report, paths, time.perf_counter() - started


def test_every_misconception_count_on_the_synthetic_class_is_the_known_one(synthetic, record_property):
    store, known, report, paths, seconds = synthetic
    found = {(g.notebook, g.grade_id, g.cause): set(g.students) for g in report.groups}
    assert len(known.groups) > 100 and len(report.students) == N_STUDENTS + 1
    assert found == known.groups
    assert all(len(found[key]) == len(ids) for key, ids in known.groups.items())
    record_property("measured", f"insights: synthetic class of {len(report.students)} students, "
                                f"{len(found)} misconception groups ({sum(map(len, found.values()))} student-groups), "
                                f"{len(report.review)} cells to review: loaded and written in {seconds:.1f} s")


def test_cells_waiting_for_review_written_answers_left_late_and_extended_are_the_known_ones(synthetic):
    store, known, report, paths, seconds = synthetic
    waiting: dict = {}
    for r in report.review:
        waiting.setdefault((r["notebook"], r["grade_id"]), set()).add(r["student"])
        assert r["reasons"] == [known.review_reasons[(r["notebook"], r["grade_id"], r["student"])]]
    assert waiting == known.review and waiting
    items = {(i.notebook, i.grade_id): i for i in report.items}
    assert {k: items[k].waiting_review for k in known.review} == {k: len(v) for k, v in known.review.items()}
    left = {nb: sum(r["to_grade"] for r in rows) for nb, rows in report.notebooks.items()}
    assert {nb: n for nb, n in left.items() if n} == known.to_grade
    for nb, rows in report.notebooks.items():
        assert {r["student"] for r in rows if r["late"]} == known.late, nb
        assert {r["student"] for r in rows if r["extension"]} == known.extended, nb
    text = paths[0].read_text(encoding="utf-8")
    for nb in report.notebooks:
        assert (f"{len(known.late)} late, {len(known.extended)} with an extension; "
                f"{known.to_grade.get(nb, 0)} written answer") in text


def test_the_page_is_self_contained_and_student_text_stays_text(synthetic):
    store, known, report, paths, seconds = synthetic
    text = paths[0].read_text(encoding="utf-8")
    csp = re.search(r"http-equiv='Content-Security-Policy' content=\"([^\"]+)\"", text)[1]
    assert "default-src 'none'" in csp and "script-src 'none'" in csp and "unsafe-inline" not in csp
    assert "<script" not in text.lower() and 'onerror="' not in text.lower()
    assert "&lt;script&gt;document.title=&#x27;owned&#x27;&lt;/script&gt;&lt;img src=x onerror=&quot;" in text
    assert not re.search(r"<(a|link|img|iframe|object|embed|form)\b", text, re.I)
    assert not re.search(r"\b(href|src)\s*=", text.replace("src=x", ""), re.I)
    assert "groups are only as true as the judges' reasons" in text
    for section in ("totals", "items", "review", "misconceptions", "notebooks"):
        assert f"<section id='{section}'>" in text


def test_students_are_shown_by_a_code_unless_names_are_asked_for(synthetic, tmp_path):
    store, known, report, paths, seconds = synthetic
    everything = "".join(p.read_text(encoding="utf-8") for p in paths)
    assert not re.search(r"\bs\d{3}\b", everything)           # no id of the class
    codes = set(report.shown.values())
    assert len(codes) == len(report.students) and all(re.fullmatch(r"S-[A-Z2-9]{6,}", c) for c in codes)
    again, _ = build_report(STEP4, store, named=False, folder=paths[0].parent)
    assert again.shown == report.shown                         # the same code every time
    named, named_paths = build_report(STEP4, store, named=True, folder=tmp_path)
    assert named.shown == {s: s for s in named.students}
    assert "s000" in named_paths[0].read_text(encoding="utf-8")


def test_the_csvs_hold_no_field_a_spreadsheet_would_run(synthetic):
    store, known, report, paths, seconds = synthetic
    by_name = {p.name: p for p in paths}
    groups = list(csv.DictReader(io.StringIO(by_name[f"insights-{STEP4.name}-misconceptions.csv"].read_text())))
    assert sum(int(g["students"]) for g in groups) == sum(map(len, known.groups.values()))
    hostile = [g for g in groups if "<script>" in g["reason"]]
    assert len(hostile) == 1 and hostile[0]["reason"].startswith("'")
    for path in paths[1:]:
        for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))):
            for value in row:
                assert value == "" or value.startswith("'") or re.fullmatch(r"\w[\w./-]*", value) \
                    or re.fullmatch(r"-?\d+(\.\d*)?(e-?\d+)?", value), (path.name, value)


def test_the_allowlist_quotes_what_is_not_a_plain_number_or_identifier():
    assert [strict_field(v) for v in (3, -0.5, "-0.5", "01-on-paper/bonus_shapes", "S-AB23CD", "", None)] == \
        ["3", "-0.5", "-0.5", "01-on-paper/bonus_shapes", "S-AB23CD", "", ""]
    for text in ("=1+1", "+1", "-A1", "@SUM(A1)", "a b", "'x", "1+1"):
        assert strict_field(text) == "'" + text, text
    assert strict_field(" =1") == "' '=1"          # guarded after the space too: a reader may trim it
    assert strict_field("\rx") == "'\u23cex" and strict_field("\tx") == "'\\tx" and strict_field("x;=1+1") == "'x;'=1+1" \
        and strict_field("x,=1+1") == "'x,'=1+1"
    assert csv_text(["a", "b"], [["x;=cmd", 2]], strict=True) == "a,b\n\"'x;'=cmd\",2\n"


def test_reasons_split_into_their_messages():
    assert causes("case 1; case 2: too big; case 3: raises X: why") == ["too big", "raises X: why"]
    assert causes("NotImplementedError") == ["NotImplementedError"]
    assert causes("a: m (and 5 more like it)") == ["m"]
    assert causes("waits for review: process: unknown call; also lost: values: wrong") == ["unknown call", "wrong"]
    assert review_reasons("waits for review: process: unknown call; also lost: values: wrong") == ["unknown call"]
    assert cause_key("Middle position 3  escaped") == cause_key("middle position 3 escaped") \
        != cause_key("middle position 4 escaped")


def test_an_example_has_the_class_ids_taken_out_and_nothing_else():
    ids = id_pattern(["ada", "bo", "x"])
    assert anonymised("NameError: name 'ada' is not defined; Ada's adaptive bo-test", ids) == \
        "NameError: name '[student]' is not defined; [student]'s adaptive [student]-test"
    assert anonymised("x marks", ids) == "x marks" and anonymised("a", None) == "a"


def test_the_broken_cases_that_escaped_a_students_check_are_counted():
    """Notebook 3's reasons (checks/tests.py): `catches <case>` parts whose message is that the check returned
    quietly, those sharing the message listed by name first; a crash is not an escape."""
    quiet = ("catches a head that sees the next token; catches a head whose middle position 3 sees the future: "
             "your check returns quietly on it; catches an unmasked head: your check crashed with ValueError on it. "
             "A crash is not a catch: when the property fails, raise AssertionError (an assert with a message)")
    assert escaped(quiet) == ["a head that sees the next token", "a head whose middle position 3 sees the future"]
    hinted = "catches a head that sees the next token: your check returns quietly on it: compare out_t before and after"
    assert escaped(hinted) == ["a head that sees the next token"] and escaped("no answer given") == []
    top = 4.0
    students = [StudentResult(sid, {"03": NotebookResult(sid, "03", "k", [CellResult("check_hidden", score, top, error)])})
                for sid, score, error in (("a", 2.0, quiet), ("b", 3.0, hinted), ("c", 4.0, ""))]
    report = analyse("x", students, {s.student: s.student for s in students})
    assert report.escapes == {("03", "check_hidden", "a head that sees the next token"): ["a", "b"],
                              ("03", "check_hidden", "a head whose middle position 3 sees the future"): ["a"]}


def _student(sid: str, scores: dict[str, float], top: dict[str, float]) -> StudentResult:
    cells = [CellResult(g, s, top[g], "" if s == top[g] else f"part: wrong {g}") for g, s in scores.items()]
    return StudentResult(sid, {"nb": NotebookResult(sid, "nb", "k", cells)})


def test_item_statistics_on_a_class_worked_by_hand():
    """Five students, four items of 1 point: rows (a, b, c, d) = (1,1,0,1), (1,1,0,1), (1,1,0,0), (0,1,1,0),
    (0,1,0,0); totals 3, 3, 2, 2, 1.
    a = (1,1,1,0,0): difficulty 0.6; its rest (the total minus a) = (2,2,1,2,1), deviations from the means
    (0.4,0.4,0.4,-0.6,-0.6) and (0.4,0.4,-0.6,0.4,-0.6): r = 0.2 / sqrt(1.2 * 1.2) = 1/6; Kelley with
    k = round(0.27 * 5) = 1: the top student by total (p1, a = 1) minus the bottom one (p4, a = 0) = 1.
    b = 1 for all: difficulty 1, too easy, r undefined (no variance).
    c = (0,0,0,1,0): difficulty 0.2 (not below HARD), rest (3,3,2,1,1): r = -0.559, negative discrimination."""
    top = {g: 1.0 for g in "abcd"}
    rows = [(1, 1, 0, 1), (1, 1, 0, 1), (1, 1, 0, 0), (0, 1, 1, 0), (0, 1, 0, 0)]
    students = [_student(f"p{i}", dict(zip("abcd", map(float, r))), top) for i, r in enumerate(rows)]
    report = analyse("x", students, {s.student: s.student for s in students}, hidden={"a", "b", "c"})
    items = {i.grade_id: i for i in report.items}
    assert [i.grade_id for i in report.items] == ["a", "b", "c", "d"]
    assert items["a"].difficulty == pytest.approx(0.6) and items["a"].item_rest == pytest.approx(1 / 6)
    assert items["a"].upper_lower == pytest.approx(1.0) and items["a"].flags == []
    assert items["b"].difficulty == 1.0 and items["b"].item_rest is None and items["b"].flags == ["too easy"]
    assert items["c"].difficulty == pytest.approx(0.2) and items["c"].item_rest == pytest.approx(-0.5590170)
    assert items["c"].upper_lower == pytest.approx(0.0) and items["c"].flags == ["negative discrimination"]
    assert items["a"].kind == "hidden test" and items["d"].kind == "check"
    assert report.totals == {"p0": 3, "p1": 3, "p2": 2, "p3": 2, "p4": 1}
    assert pearson([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0) and kelley([1, 0, 1], [1, 2, 3]) is None
    assert {(g.grade_id, len(g.students)) for g in report.groups} == {("a", 2), ("c", 4), ("d", 3)}
    # a notebook that was not handed in scores 0 on every cell, and its reason is no misconception
    gone = StudentResult("p5", {"nb": NotebookResult("p5", "nb", "missing", [
        CellResult(g, 0.0, 1.0, "not submitted") for g in "abcd"])})
    again = analyse("x", [*students, gone], {s: s for s in ["p0", "p1", "p2", "p3", "p4", "p5"]})
    assert {(g.grade_id, len(g.students)) for g in again.groups} == {("a", 2), ("c", 4), ("d", 3)}
    assert {i.grade_id: len(i.fractions) for i in again.items} == dict.fromkeys("abcd", 6)


def test_make_insights_writes_the_page_and_csvs_of_the_grader_home(synthetic, monkeypatch, capsys):
    from autograder.__main__ import main
    store, known, report, paths, seconds = synthetic
    monkeypatch.setenv("GRADER_HOME", str(store.home))
    monkeypatch.setenv("NBGRADER_DB_URL", store.url)
    for p in paths:
        p.unlink()
    assert main(["insights", "--step", STEP4.name]) == 0
    out = capsys.readouterr().out
    assert f"insights: {N_STUDENTS + 1} students" in out
    assert all(p.is_file() for p in paths)
    assert HOSTILE not in paths[0].read_text(encoding="utf-8")
