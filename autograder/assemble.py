"""Rebuild the notebook to grade from the instructor's notebooks and the student's answers.

The student's file is never trusted for anything but answers. The graded notebook is the
released notebook, cell by cell, with
  * answer cells (nbgrader `solution`) and the unmarked live Python boxes taken from the
    student's copy, matched by grade id and then by cell id;
  * test cells taken from the instructor source, hidden tests included;
  * every other cell (prose, provided code, tasks) taken from the release;
  * cells the student added kept, after the cell they followed.
So an edited, deleted, duplicated, retyped or moved test cell, changed points, a renamed
grade id, flipped nbgrader flags, stripped metadata or another kernel change nothing but
the student's own answers, and each such change is reported in a note.
"""
from __future__ import annotations

import copy


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {})
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def _text(cell) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(str(s) for s in source)
    return source if isinstance(source, str) else ""


def _is_answer(cell) -> bool:
    return bool(_nbgrader(cell).get("solution"))


def _is_test(cell) -> bool:
    nbg = _nbgrader(cell)
    return bool(nbg.get("grade")) and not nbg.get("solution")


def assemble(student: dict, release: dict, source: dict) -> tuple[dict, list[str]]:
    """Return (notebook to grade, notes on what was restored or ignored)."""
    notes: list[str] = []
    release_cells = release["cells"]
    source_by_id = {c.get("id"): c for c in source["cells"] if c.get("id")}
    release_ids = {c.get("id") for c in release_cells}
    answer_ids = {_nbgrader(c)["grade_id"]: c.get("id") for c in release_cells if _is_answer(c)}
    answer_cell_ids = set(answer_ids.values())

    # 1. Match each student cell to a released cell (or call it an extra cell).
    matched: dict[str, dict] = {}          # release cell id -> student cell
    followers: dict[str | None, list] = {}  # release cell id (None: top) -> extra student cells
    previous: str | None = None
    student_cells = student.get("cells", [])
    if not isinstance(student_cells, list):
        student_cells = []
    for cell in student_cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        grade_id = _nbgrader(cell).get("grade_id")
        grade_id = grade_id if isinstance(grade_id, str) else None    # JSON may hold anything here
        cell_id = cell.get("id")
        cell_id = cell_id if isinstance(cell_id, str) else None
        target = None
        if grade_id in answer_ids:
            target = answer_ids[grade_id]
        elif cell_id in release_ids:
            target = cell_id
        if target is not None and target in matched:
            if target in answer_cell_ids:
                notes.append(f"answer cell {target!r} appears more than once: the first copy was graded")
            target = "__duplicate__"
        if target is None:
            extra = _as_extra(cell)
            extra["id"] = f"added-{sum(len(v) for v in followers.values()) + 1}"
            followers.setdefault(previous, []).append(extra)
        elif target != "__duplicate__":
            matched[target] = cell
            previous = target

    # 2. Walk the release in order and build the graded notebook.
    cells = [copy.deepcopy(c) for c in followers.get(None, [])]
    for rel in release_cells:
        cid = rel.get("id")
        out = copy.deepcopy(rel)
        out["source"] = _text(rel)
        mine = matched.get(cid)
        if _is_answer(rel):
            name = _nbgrader(rel)["grade_id"]
            if mine is None:
                notes.append(f"answer cell {name!r} is missing: graded as unanswered")
            elif mine.get("cell_type") != rel["cell_type"]:
                notes.append(f"answer cell {name!r} was changed to {mine.get('cell_type')}: graded as unanswered")
            else:
                out["source"] = _text(mine)
        elif _is_test(rel):
            out["source"] = _text(source_by_id.get(cid, rel))
            if mine is None:
                notes.append(f"test cell {_nbgrader(rel)['grade_id']!r} was missing and was put back")
            elif _text(mine) != _text(rel) or _nbgrader(mine) != _nbgrader(rel) or mine.get("cell_type") != "code":
                notes.append(f"test cell {_nbgrader(rel)['grade_id']!r} was changed and was restored")
        elif rel["cell_type"] == "code" and not _nbgrader(rel) and mine is not None \
                and mine.get("cell_type") == "code":
            out["source"] = _text(mine)     # a live Python box or the name cell: the student's version
        if out["cell_type"] == "code":
            out["outputs"] = []
            out["execution_count"] = None
        cells.append(out)
        cells.extend(copy.deepcopy(c) for c in followers.get(cid, []))

    graded = {"cells": cells, "metadata": copy.deepcopy(release.get("metadata", {})),
              "nbformat": 4, "nbformat_minor": release.get("nbformat_minor", 5)}
    kernel = (student.get("metadata") or {}).get("kernelspec") if isinstance(student.get("metadata"), dict) else None
    if kernel and kernel != release.get("metadata", {}).get("kernelspec"):
        notes.append("the notebook's kernel was changed: it was graded with the course kernel")
    return graded, notes


def _as_extra(cell: dict) -> dict:
    """A cell the student added: kept, but never taken for a graded cell."""
    kind = cell.get("cell_type")
    meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    meta = {k: v for k, v in meta.items() if k not in ("nbgrader", "deletable", "editable")}
    out = {"cell_type": kind, "metadata": meta, "source": _text(cell)}
    if kind == "code":
        out.update(outputs=[], execution_count=None)
    return out
