"""A hidden test is declared once: in its check (grade_id, points). The instructor's hidden test cell
names it in one line, `hidden("<grade_id>", globals())`; when the release (and the solutions) are
generated, StampHiddenTests writes the cell's nbgrader metadata (grade_id, points, locked) and the
points at the end of its first comment line from the check, before nbgrader records the cell in the
gradebook. A source cell that states other points, or names another grade_id, is an error.

    # Hidden tests: other sizes                       <- source/<step>/01-on-paper.ipynb
    # Hidden tests: other sizes (2 points)            <- release/ and solutions/
"""

from __future__ import annotations

import re

from nbgrader.preprocessors import NbGraderPreprocessor

from .hidden import HiddenTestError, hidden_call

POINTS_LABEL = re.compile(r"\s*\((?P<points>[\d.]+) points?\)\s*$")


def points_label(points: float) -> str:
    return f"({points:g} point{'' if points == 1 else 's'})"


def stamp_cell(cell, points_of: dict[str, float], where: str) -> None:
    grade_id = hidden_call(cell.source) if cell.cell_type == "code" else None
    if grade_id is None:
        return
    if grade_id not in points_of:
        raise HiddenTestError(
            f"{where}: hidden({grade_id!r}) names no check of this step (make new-check, or see its checks/ package)"
        )
    points = float(points_of[grade_id])
    meta = cell.metadata.setdefault("nbgrader", {})
    if meta.get("grade_id", grade_id) != grade_id:
        raise HiddenTestError(f"{where}: the cell's grade_id {meta['grade_id']!r} is not the {grade_id!r} it calls")
    if "points" in meta and float(meta["points"]) != points:
        raise HiddenTestError(
            f"{where}: {grade_id} is worth {points:g} points in its check, {meta['points']} in the "
            "cell: the check alone says (remove the cell's points)"
        )
    meta.update(
        {
            "grade": True,
            "solution": False,
            "locked": True,
            "task": False,
            "schema_version": 3,
            "grade_id": grade_id,
            "points": points,
        }
    )
    lines = cell.source.split("\n")
    if lines and lines[0].startswith("#") and "BEGIN HIDDEN TESTS" not in lines[0]:
        label = POINTS_LABEL.search(lines[0])
        if label and float(label["points"]) != points:
            raise HiddenTestError(f"{where}: {grade_id}'s comment says {label['points']} points, its check {points:g}")
        lines[0] = POINTS_LABEL.sub("", lines[0]) + " " + points_label(points)
        cell.source = "\n".join(lines)


def stamp(nb, step, points_of: dict[str, float] | None = None) -> None:
    """Every hidden test cell of `nb` stamped from `step`'s checks (or from `points_of`, grade_id ->
    points, as the release states them: autograder/records/gradebook.py records a released step)."""
    if points_of is None:
        points_of = {grade_id: check.points for grade_id, check in step.checks.items()}
    for index, cell in enumerate(nb.cells):
        stamp_cell(cell, points_of, f"{step.name} cell {index}")


class StampHiddenTests(NbGraderPreprocessor):
    """nbgrader's first step of `generate_assignment` (nbgrader_config.py) and of the solutions:
    the step is the assignment being generated. resources["released_points"], when given: the
    points to stamp (grade_id -> points) instead of the checks'."""

    def preprocess(self, nb, resources):
        from ..steps import find_step

        name = (resources.get("nbgrader") or {}).get("assignment")
        if not name:
            raise HiddenTestError("StampHiddenTests needs the step: resources['nbgrader']['assignment']")
        stamp(nb, find_step(name), resources.get("released_points"))
        return nb, resources
