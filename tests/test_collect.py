"""Submissions arrive as folders, zips or loose files; bad files are named with what is wrong."""
import json
import zipfile

import pytest

from autograder.collect import SubmissionError, collect

NAMES = ["01-on-paper", "02-the-head"]
GOOD = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def by(received):
    return {(r.student, r.notebook): r for r in received}


def test_folder_per_student_zip_per_student_and_loose_files(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "01-on-paper.ipynb").write_bytes(GOOD)
    (tmp_path / "ben" / "step-04").mkdir(parents=True)               # nbgrader's own layout
    (tmp_path / "ben" / "step-04" / "02-the-head.ipynb").write_bytes(GOOD)
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
