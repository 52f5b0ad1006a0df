"""Submissions arrive as folders, zips or loose files; bad files are named with what is wrong; student ids
keep their letters and two students never merge into one."""
import hashlib
import json
import os
import random
import re
import struct
import unicodedata
import zipfile

import pytest

from autograder.intake.collect import (NO_ID, SubmissionError, UnusableId, assign_ids, collect, loose_raw_id,
                                match_notebook, pick_newest)
from autograder.names import student_id
from autograder.shards import shard_of
from conftest import GRADES_CSV, STEP, STEP4  # noqa: E402

NAMES = ["01-on-paper", "02-the-head"]
GOOD = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def by(received):
    return {(r.student, r.notebook): r for r in received}


def test_folder_per_student_zip_per_student_and_loose_files(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "01-on-paper.ipynb").write_bytes(GOOD)
    (tmp_path / "ben" / "step-04").mkdir(parents=True)               # nbgrader's own layout
    (tmp_path / "ben" / STEP / "02-the-head.ipynb").write_bytes(GOOD)
    with zipfile.ZipFile(tmp_path / "cy.zip", "w") as z:
        z.writestr("work/01-on-paper.ipynb", GOOD)
        z.writestr("__MACOSX/._01-on-paper.ipynb", b"junk")
    (tmp_path / "dee_01-on-paper.ipynb").write_bytes(GOOD)
    (tmp_path / "02-the-head-eve.ipynb").write_bytes(GOOD)
    got = by(collect(tmp_path, NAMES))
    assert set(got) == {("ada", "01-on-paper"), ("ben", "02-the-head"), ("cy", "01-on-paper"),
                        ("dee", "01-on-paper"), ("eve", "02-the-head")}
    assert all(r.problem is None and r.data == GOOD for r in got.values())


@pytest.mark.parametrize("content,problem", [
    (b"", "empty"),
    (b"{not json", "not valid JSON"),
    (GOOD[:-7], "not valid JSON"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (json.dumps({"nbformat": 3, "worksheets": []}).encode(), "nbformat 3"),
    (json.dumps([1, 2]).encode(), "not a Jupyter notebook"),
])
def test_broken_files_are_reported_with_the_problem(tmp_path, content, problem):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "01-on-paper.ipynb").write_bytes(content)
    (item,) = collect(tmp_path, NAMES)
    assert item.student == "ada" and item.notebook == "01-on-paper"
    assert problem in item.problem and "ada/01-on-paper.ipynb" == item.origin


def test_wrong_names_zip_slip_and_huge_files(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "homework.ipynb").write_bytes(GOOD)
    (tmp_path / "ada" / "notes.txt").write_text("hi")
    big = tmp_path / "ada" / "02-the-head.ipynb"
    with open(big, "wb") as f:
        f.truncate(1 << 30)                                         # 1 GB, sparse
    with zipfile.ZipFile(tmp_path / "bob.zip", "w") as z:
        z.writestr("../../evil/01-on-paper.ipynb", GOOD)
    (tmp_path / "not-a-zip.zip").write_bytes(b"PK but no")
    problems = {(r.student, r.origin): r.problem for r in collect(tmp_path, NAMES)}
    assert "not a notebook of this step" in problems[("ada", "ada/homework.ipynb")]
    assert "not a notebook" in problems[("ada", "ada/notes.txt")]
    assert "too large" in problems[("ada", "ada/02-the-head.ipynb")]
    assert "leaves the zip" in problems[("bob", "bob.zip:../../evil/01-on-paper.ipynb")]
    assert "not a readable zip" in problems[("not-a-zip", "not-a-zip.zip")]
    assert not (tmp_path.parent / "evil").exists()


def test_loose_file_without_a_student_id_and_missing_folder(tmp_path):
    (tmp_path / "01-on-paper.ipynb").write_bytes(GOOD)
    (item,) = collect(tmp_path, NAMES)
    assert "no student id" in item.problem
    with pytest.raises(SubmissionError, match="no such folder"):
        collect(tmp_path / "nope", NAMES)


def test_collect_never_modifies_the_submissions(tmp_path):
    (tmp_path / "ada").mkdir()
    path = tmp_path / "ada" / "01-on-paper.ipynb"
    path.write_bytes(GOOD)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    collect(tmp_path, NAMES)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


# ---- student ids: letters kept, never merged, unusable names reported by name ------------------


NFD_ZOE = unicodedata.normalize("NFD", "Zoë")          # the name as a Mac writes it in a zip or a copy
assert NFD_ZOE != "Zoë"


@pytest.mark.parametrize("raw,sid", [
    ("alice", "alice"),
    ("Zoë", "Zoë"),
    (NFD_ZOE, "Zoë"),                                   # one form: NFC
    ("Zoé", "Zoé"),
    ("李雷", "李雷"),
    ("ü ñ", "ü-ñ"),
    ("हिन्दी", "हिन्दी"),                                      # combining vowel signs are kept
    ("Bob Smith", "Bob-Smith"),
    ("alice.smith@uni.example", "alice.smith@uni.example"),
    ("alice (2)", "alice-2"),                           # ASCII: as before
    ("-rf", "rf"),                                      # never an option in a shell command
    ("=1+2", "1-2"), ("@SUM(A1)", "SUM-A1"),            # never a formula in a spreadsheet
    ("\u202eecila", "ecila"),                           # no right-to-left override in a report
])
def test_student_id_keeps_letters(raw, sid):
    assert student_id(raw) == sid


@pytest.mark.parametrize("raw,why", [
    ("", "no letter or digit"), (".", "no letter or digit"), ("..", "no letter or digit"),
    ("- _ .", "no letter or digit"), ("🙂", "no letter or digit"),
    ("ali\x1bce", "control characters"), ("ali\tce", "control characters"), ("ali\nce", "control characters"),
    ("a\\b", "path separator"), ("a/b", "path separator"),
    ("x" * 65, "too long"), ("李" * 43, "too long"),      # 43 characters, but 129 bytes
    ("Zo\udceb", "not UTF-8"),                            # a Latin-1 file name, read by Python
])
def test_unusable_ids_raise_saying_why(raw, why):
    with pytest.raises(UnusableId, match=why):
        student_id(raw)
    assert isinstance(assign_ids([raw])[raw], UnusableId)


def test_ascii_ids_and_their_shards_are_as_before():
    """A class graded in shards before this change keeps every ASCII student in the same shard."""
    def before(raw):
        return re.sub(r"[^A-Za-z0-9_.@-]+", "-", raw).strip("-._")[:64]
    rng = random.Random(4)
    alphabet = "abcXYZ019_.@- ()+=,'~"
    for _ in range(2000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        old = before(raw)
        if old and not old.startswith("@") and not old.endswith("@"):
            assert student_id(raw) == old, raw
    for sid in ("ada", "blank", "half", "alice-2"):
        assert shard_of(sid, 50) == int.from_bytes(hashlib.sha256(sid.encode("ascii")).digest()[:8], "big") % 50
    assert shard_of(student_id(NFD_ZOE), 50) == shard_of(student_id("Zoë"), 50)


def test_the_docstring_example_and_other_loose_names():
    def sid(filename):
        name, rest = match_notebook(filename, NAMES)
        return name, student_id(loose_raw_id(rest))
    assert sid("alice - 01-on-paper (2).ipynb") == ("01-on-paper", "alice")
    assert sid("alice_01-on-paper.ipynb") == ("01-on-paper", "alice")
    assert sid("01-on-paper-alice.ipynb") == ("01-on-paper", "alice")
    assert sid("alice_01-on-paper copy 2.ipynb") == ("01-on-paper", "alice")
    assert sid("alice - 02-the-head - Copy.ipynb") == ("02-the-head", "alice")
    assert sid("Zoë_02-the-head (1).ipynb") == ("02-the-head", "Zoë")
    assert sid("ü ñ - 01-on-paper.ipynb") == ("01-on-paper", "ü-ñ")
    assert sid("smith_12345_67890_01-on-paper.ipynb") == ("01-on-paper", "smith_12345_67890")


def test_assign_ids_never_merges_and_an_exact_id_keeps_its_name():
    notes = {}
    ids = assign_ids(["Zoë", NFD_ZOE, "Zoé", "Zoe", "李雷", "李雷雷", "Alice", "alice", "bob smith", "bob-smith",
                      "ﬁx", "fix", "carol", "ada", "ada.", "\u202ebea", "bea"], notes)
    # one name in two Unicode forms, side by side: two students, graded apart, reported as a pair
    assert ids["Zoë"] == "Zoë" and ids[NFD_ZOE] == "Zoë-nfd"
    assert "'Zoë'" in notes[NFD_ZOE] and "NFD" in notes[NFD_ZOE] and "never merged" in notes[NFD_ZOE]
    assert (ids["Zoé"], ids["Zoe"], ids["李雷"], ids["李雷雷"], ids["carol"]) == ("Zoé", "Zoe", "李雷", "李雷雷", "carol")
    # ids written exactly as themselves keep them, whatever look-alike stands beside them
    for raw in ("Alice", "alice", "bob-smith", "ﬁx", "fix", "ada", "bea"):
        assert ids[raw] == raw, raw
    # a name that had to be rewritten into a taken id is refused, naming who keeps it
    for raw, owner in [("bob smith", "bob-smith"), ("ada.", "ada"), ("\u202ebea", "bea")]:
        assert isinstance(ids[raw], UnusableId), raw
        assert repr(owner) in str(ids[raw]) and "keeps it" in str(ids[raw])
    # two rewritten names and no exact one: neither is given the id
    both = assign_ids(["bob smith", "bob  smith"])
    assert all(isinstance(v, UnusableId) and "never be merged" in str(v) for v in both.values())


def write(path, data=GOOD, mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_zoe_and_zoe_stay_two_students(tmp_path):
    """Zoë (all correct) and Zoé (blank, handed in later) were one student `Zo` scoring 0."""
    full = GOOD.replace(b'"cells": []', b'"cells": [{"cell_type": "code", "source": "answer"}]')
    write(tmp_path / "Zoë" / "01-on-paper.ipynb", full, mtime=1_000)
    write(tmp_path / "Zoé" / "01-on-paper.ipynb", GOOD, mtime=2_000)
    write(tmp_path / "李雷" / "01-on-paper.ipynb", full)
    write(tmp_path / "ü ñ" / STEP / "01-on-paper.ipynb", full)
    chosen, problems = pick_newest(collect(tmp_path, NAMES))
    assert problems == []
    assert set(chosen) == {("Zoë", "01-on-paper"), ("Zoé", "01-on-paper"), ("李雷", "01-on-paper"),
                           ("ü-ñ", "01-on-paper")}
    assert chosen[("Zoë", "01-on-paper")].data == full and chosen[("Zoé", "01-on-paper")].data == GOOD
    assert chosen[("ü-ñ", "01-on-paper")].origin == "ü ñ/step-04/01-on-paper.ipynb"


@pytest.mark.parametrize("newer_first", [True, False])
def test_newest_copy_of_the_same_student_wins(tmp_path, newer_first):
    old, new = (GOOD, GOOD.replace(b"[]", b"[ ]"))
    t_old, t_new = 1_000_000, 2_000_000
    # the same student three ways: a folder, a zip and loose copies
    write(tmp_path / "Zoë" / "01-on-paper.ipynb", old, mtime=t_old)
    write(tmp_path / "Zoë_01-on-paper.ipynb", new if newer_first else old, mtime=t_new if newer_first else t_old - 1)
    write(tmp_path / "Zoë_01-on-paper (1).ipynb", old if newer_first else new, mtime=t_old - 2 if newer_first else t_new)
    received = collect(tmp_path, NAMES)
    assert {r.student for r in received} == {"Zoë"}
    chosen, problems = pick_newest(received)
    assert list(chosen) == [("Zoë", "01-on-paper")] and chosen[("Zoë", "01-on-paper")].data == new
    winner = chosen[("Zoë", "01-on-paper")].origin
    assert winner == ("Zoë_01-on-paper.ipynb" if newer_first else "Zoë_01-on-paper (1).ipynb")
    assert len(problems) == 2 and all(f"another copy ({winner}) is newer" in p["problem"] for p in problems)
    assert {p["file"] for p in problems} == {r.origin for r in received} - {winner}
    # equal times: the same copy whatever order the files were read in
    for r in received:
        r.mtime = 5.0
    assert pick_newest(received)[0] == pick_newest(received[::-1])[0]


def test_unusable_and_colliding_names_are_reported_by_name_and_not_graded(tmp_path):
    for name in ("Alice", "alice", "bob smith", "bob-smith", "ali\x1bce", "---", "x" * 70, "ada"):
        write(tmp_path / name / "01-on-paper.ipynb")
    write(tmp_path / "Bob_Smith.zip", b"never opened")
    with zipfile.ZipFile(tmp_path / "___.zip", "w") as z:
        z.writestr("01-on-paper.ipynb", GOOD)
    write(tmp_path / "- _01-on-paper.ipynb")
    os.mkdir(os.fsencode(tmp_path) + b"/Zo\xeb")        # Latin-1 bytes: not UTF-8
    write(tmp_path / "Zoé" / "02-the-head.ipynb")
    received = collect(tmp_path, NAMES)
    graded = {r.student for r in received if r.student != NO_ID}
    # ids written exactly as themselves are graded, look-alikes apart (never merged) and reported
    assert graded == {"ada", "Zoé", "Bob_Smith", "Alice", "alice", "bob-smith"}
    notices = {r.student: r.problem for r in received if r.notice}
    assert set(notices) == {"Alice", "alice"}
    assert "look-alike 'alice'" in notices["Alice"] and "never merged" in notices["Alice"]
    reported = {r.origin: r.problem for r in received if r.student == NO_ID}
    assert all(reported.values()) and not any(r.data for r in received if r.student == NO_ID)
    expect = {"bob smith": ["'bob smith'", "'bob-smith'", "keeps it"],
              "ali\\x1bce": ["'ali\\x1bce'", "control characters"],          # escaped: no terminal escape printed
              "---": ["'---'", "no letter or digit"], "x" * 70: ["too long"],
              "___.zip": ["zip's name '___'", "no letter or digit"],
              "- _01-on-paper.ipynb": ["no student id"],
              "Zo\\udceb": ["not UTF-8"]}
    assert set(reported) == set(expect)
    for origin, words in expect.items():
        assert all(w in reported[origin] for w in words), (origin, reported[origin])
    # a shard still sees every name without an id, and opens only its own students' files
    mine = collect(tmp_path, NAMES, only=lambda sid: sid == "ada")
    assert {r.student for r in mine} == {"ada", NO_ID}
    assert {r.origin for r in mine if r.student == NO_ID} == set(expect)


@pytest.mark.slow
def test_a_class_with_names_in_any_script_is_graded_under_those_names(grading_home, tmp_path):
    """Through grade(STEP4): Zoë (all correct) and Zoé (blank, later) are two students, 李雷 and `ü ñ`
    get their grades and feedback, Alice and alice are two students too (look-alikes: reported as a
    pair, graded apart, never merged), and `ali ce` (rewritten into `ali-ce`, which `ali-ce` is
    written as) is refused while `ali-ce` is graded."""
    from nbgrader.api import Gradebook

    from autograder.example import filled
    from autograder.grading.grade import grade
    from conftest import NOTEBOOK_NAMES
    first = NOTEBOOK_NAMES[0]
    full = json.dumps(filled(STEP4, first, lambda cid, i: True)).encode()
    blank = (STEP4.release / f"{first}.ipynb").read_bytes()
    class_ = tmp_path / "class"
    write(class_ / "Zoë" / f"{first}.ipynb", full, mtime=1_700_000_000)
    write(class_ / "Zoé" / f"{first}.ipynb", blank, mtime=1_700_000_100)
    write(class_ / "李雷" / f"{first}.ipynb", full)
    write(class_ / f"ü ñ_{first}.ipynb", full)
    write(class_ / "Alice" / f"{first}.ipynb", full)
    write(class_ / "alice" / f"{first}.ipynb", blank, mtime=1_700_000_200)
    write(class_ / "ali-ce" / f"{first}.ipynb", full)
    write(class_ / "ali ce" / f"{first}.ipynb", blank, mtime=1_700_000_300)
    out = grade(STEP4, class_, workers=2, quiet=True)
    ids = {"Zoë", "Zoé", "李雷", "ü-ñ", "Alice", "alice", "ali-ce"}
    auto = {}
    for r in out["results"]:
        if r["notebook"] == first:
            auto[r["student"]] = [(c["score"], c["max_score"]) for c in r["cells"] if c["kind"] == "auto"]
    assert set(auto) == ids
    for sid in ("Zoë", "李雷", "ü-ñ", "Alice", "ali-ce"):
        assert auto[sid] and all(score == top for score, top in auto[sid]), (sid, auto[sid])
    assert all(score == 0 for score, _ in auto["Zoé"]) and all(score == 0 for score, _ in auto["alice"])
    assert {p["file"] for p in out["problems"] if p["student"] == NO_ID} == {"ali ce"}
    assert {p["student"] for p in out["problems"] if p.get("notice")} == {"Alice", "alice"}
    for folder in ("submitted", "autograded", "feedback"):
        assert {p.name for p in (grading_home / folder).iterdir()} == ids, folder
    for sid in ids:
        assert (grading_home / "feedback" / sid / STEP / f"{first}.html").is_file(), sid
    rows = (grading_home / GRADES_CSV).read_text(encoding="utf-8")
    assert {line.split(",")[0] for line in rows.splitlines()[1:]} == ids
    with Gradebook(f"sqlite:///{grading_home / 'gradebook.db'}", "dl-course") as gb:
        assert {s.id for s in gb.students} == ids
    # names typed as the folders are named pick those students (Zoë decomposed, as a Mac types
    # it; `ü ñ` with its space), and nothing is graded again
    again = grade(STEP4, class_, workers=1, quiet=True, feedback=False, students=[NFD_ZOE, "ü ñ"])
    assert {r["student"] for r in again["results"]} == {"Zoë", "ü-ñ"}
    before, after = ([r for r in run["results"] if r["student"] in ("Zoë", "ü-ñ") and r["notebook"] == first]
                     for run in (out, again))
    assert [(r["key"], r["seconds"], r["cells"]) for r in after] == [(r["key"], r["seconds"], r["cells"]) for r in before]


def test_grading_students_that_cannot_be_ids_stops_before_any_work(tmp_path):
    from autograder.errors import UsageError
    from autograder.grading.grade import grade
    for bad, why in [("---", "no letter or digit"), ("a\x1bb", "control characters")]:
        with pytest.raises(UsageError, match=f"--students: .* cannot be a student id: .*{why}"):
            grade(STEP4, tmp_path / "class", students=["ada", bad])
    assert list(tmp_path.iterdir()) == []


def test_grade_table_keeps_its_columns_with_ids_in_any_script():
    from autograder.records.model import NotebookResult
    from autograder.publish.report import padded, table
    cells = [{"grade_id": "a", "score": 1.0, "max_score": 2.0, "kind": "auto"}]
    ids = ["ada", "李雷", "Zoë", unicodedata.normalize("NFD", "Zoé"), "ü-ñ"]
    lines = table([NotebookResult.from_json({"student": sid, "notebook": "01-on-paper", "key": "k", "cells": cells})
                   for sid in ids], STEP4).splitlines()[2:7]

    def width(text):
        return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    assert sorted(line.split()[0] for line in lines) == sorted(ids)
    assert {width(line.split("1.0")[0]) for line in lines} == {width(padded("ada", 18)) + 4}


def test_grade_table_has_a_bonus_column_only_where_the_step_has_bonus_questions():
    from autograder.records.model import NotebookResult
    from autograder.publish.report import table
    required = {"grade_id": "a", "score": 1.0, "max_score": 2.0, "kind": "auto"}
    bonus = {"grade_id": STEP4.bonus_prefix + "x", "score": 0.5, "max_score": 3.0, "kind": "auto"}
    def result(*cells):
        return NotebookResult.from_json({"student": "ada", "notebook": "01-on-paper", "key": "k", "cells": list(cells)})
    without = table([result(required)], STEP4).splitlines()
    with_bonus = table([result(required, bonus)], STEP4).splitlines()
    assert "bonus" not in without[0] and "/0 " not in without[2] and without[2].split()[2:4] == ["1.0/2", "-"]
    assert "bonus" in with_bonus[0] and with_bonus[2].split()[2:5] == ["1.0/2", "0.5/3", "-"]


def test_a_zip_copys_time_is_the_same_on_every_grading_machine(tmp_path, monkeypatch):
    """Which copy of a student's notebook is newest must not depend on the grader's time zone."""
    import time
    stamped = zipfile.ZipInfo("01-on-paper.ipynb", date_time=(2023, 11, 14, 23, 0, 0))
    stamped.extra = struct_ut(1_700_000_500)                     # Info-ZIP's UTC time stamp
    plain = zipfile.ZipInfo("02-the-head.ipynb", date_time=(2024, 1, 2, 3, 4, 6))
    with zipfile.ZipFile(tmp_path / "Zoë.zip", "w") as z:
        z.writestr(stamped, GOOD)
        z.writestr(plain, GOOD)
    write(tmp_path / "Zoë" / "01-on-paper.ipynb", GOOD, mtime=1_700_000_000)
    seen = []
    try:
        for zone in ("UTC", "Asia/Tokyo", "America/Los_Angeles"):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            received = collect(tmp_path, NAMES)
            seen.append(sorted((r.origin, r.mtime) for r in received))
            chosen, _ = pick_newest(received)
            assert chosen[("Zoë", "01-on-paper")].origin == "Zoë.zip:01-on-paper.ipynb"
    finally:
        monkeypatch.undo()
        time.tzset()
    assert seen[0] == seen[1] == seen[2]
    times = dict(seen[0])
    assert times["Zoë.zip:01-on-paper.ipynb"] == 1_700_000_500
    assert times["Zoë.zip:02-the-head.ipynb"] == 1_704_164_646            # 2024-01-02 03:04:06 read as UTC


def struct_ut(mtime: int) -> bytes:
    return struct.pack("<HHBi", 0x5455, 5, 1, mtime)
