"""A small example class, built from the instructor notebooks, in the shapes instructors receive
(`make setup` grades it in a grader home of its own, `example_home()`: autograder/example/, so that
the course's gradebook, formgrader, reports and exports hold only the course's real students):

  ada/            a folder per student: every answer filled in (the solutions)
  blank.zip       a zip per student: the release, untouched
  half_<nb>.ipynb loose files named with the student id: the first half of each notebook's
                  answers filled in, the rest left as released
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from .course import grader_home

MARKERS = ("BEGIN SOLUTION", "END SOLUTION")


def answer_text(source_cell: dict) -> str:
    """The instructor's answer as a student would type it: the solution without its markers."""
    text = "".join(source_cell["source"]) if isinstance(source_cell["source"], list) else source_cell["source"]
    return "\n".join(line for line in text.split("\n") if not any(m in line for m in MARKERS))


def answer_ids(release: dict) -> list[str]:
    return [c["id"] for c in release["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution")]


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def filled(step, name: str, keep) -> dict:
    """The released notebook `name` with the instructor's answer in every answer cell for which
    keep(cell_id, position) is true."""
    release = _read(step.release / f"{name}.ipynb")
    source = {c["id"]: c for c in _read(step.source / f"{name}.ipynb")["cells"]}
    for position, cid in enumerate(answer_ids(release)):
        if keep(cid, position):
            cell = next(c for c in release["cells"] if c["id"] == cid)
            cell["source"] = answer_text(source[cid])
    return release


def example_home() -> Path:
    """Where `make example` (and so `make setup`) grades the example class: its own grader home,
    with its own gradebook, beside the course's (<grading home>/example/)."""
    return grader_home() / "example"


def build(step, dest: Path | None = None) -> Path:
    """The example class of a step in `dest` (default: <example home>/class/<step>/)."""
    dest = dest or example_home() / "class" / step.name
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "ada").mkdir(parents=True)
    with zipfile.ZipFile(dest / "blank.zip", "w") as archive:
        for name in step.notebooks():
            archive.write(step.release / f"{name}.ipynb", f"{step.name}/{name}.ipynb")
    for name in step.notebooks():
        (dest / "ada" / f"{name}.ipynb").write_text(json.dumps(filled(step, name, lambda cid, i: True), indent=1))
        half = (len(answer_ids(_read(step.release / f"{name}.ipynb"))) + 1) // 2
        (dest / f"half_{name}.ipynb").write_text(json.dumps(filled(step, name, lambda cid, i: i < half), indent=1))
    return dest


def answers_of(step, name: str) -> dict[str, str]:
    """grade_id -> the instructor's answer (solution markers removed) for every answer cell of a notebook."""
    source = _read(step.source / f"{name}.ipynb")
    return {
        c["metadata"]["nbgrader"]["grade_id"]: answer_text(c)
        for c in source["cells"]
        if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }


def with_answers(step, name: str, overrides: dict[str, str]) -> dict:
    """The released notebook with the instructor's answers, except `overrides` (grade_id -> source):
    a submission that differs from the solutions only where a test wants it to."""
    release = _read(step.release / f"{name}.ipynb")
    answers = answers_of(step, name)
    unknown = set(overrides) - set(answers)
    if unknown:
        raise KeyError(f"{name} has no answer cells {sorted(unknown)}")
    answers.update(overrides)
    for cell in release["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            cell["source"] = answers[meta["grade_id"]]
    return release
