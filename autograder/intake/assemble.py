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

Pictures pasted into a written answer (JupyterLab keeps them in the markdown cell's
`attachments`) are kept, up to ATTACHMENT_CHARS for the whole notebook; a picture beyond that,
or one the text names but the notebook does not hold, is shown as a small placeholder that says
so (a markdown cell naming an attachment it lacks cannot be turned into feedback HTML).
"""

from __future__ import annotations

import base64
import copy
import re

ATTACHMENT_CHARS = 8_000_000  # base64 characters of pasted pictures a notebook may keep (about 6 MB)
ATTACHMENT_NAME_CHARS = 200
# `![alt](attachment:name)`, also `<attachment:name>` and a title after the name
ATTACHMENT_REF = re.compile(r"\]\(\s*<?attachment:([^\s)>]+)")


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


def assemble(student: dict, release: dict, source: dict, handed_in: dict | None = None) -> tuple[dict, list[str]]:
    """Return (notebook to grade, notes on what was restored or ignored). `handed_in`, if given, gets the
    outputs the student's notebook holds for each code cell of the notebook to grade, by that cell's id (a cell
    the student added has an id of the grader's: "added-<n>")."""
    notes: list[str] = []
    handed: dict = {}
    matched, followers = _match(student, release, notes, handed)
    pictures = _Pictures(notes)
    source_by_id = {c.get("id"): c for c in source["cells"] if c.get("id")}
    cells = [pictures.keep(c, c) for c in followers.get(None, [])]
    for rel in release["cells"]:
        cells.append(_graded_cell(rel, matched.get(rel.get("id")), source_by_id, pictures, notes))
        cells.extend(pictures.keep(c, c) for c in followers.get(rel.get("id"), []))
    if handed_in is not None:
        handed_in.update(handed)
        for rel_id, mine in matched.items():
            if isinstance(mine, dict) and mine.get("cell_type") == "code":
                handed_in[rel_id] = mine.get("outputs")
    graded = {
        "cells": cells,
        "metadata": copy.deepcopy(release.get("metadata", {})),
        "nbformat": 4,
        "nbformat_minor": release.get("nbformat_minor", 5),
    }
    kernel = (student.get("metadata") or {}).get("kernelspec") if isinstance(student.get("metadata"), dict) else None
    if kernel and kernel != release.get("metadata", {}).get("kernelspec"):
        notes.append("the notebook's kernel was changed: it was graded with the course kernel")
    return graded, notes


def _match(
    student: dict, release: dict, notes: list[str], handed: dict
) -> tuple[dict[str, dict], dict[str | None, list]]:
    """Match each student cell to a released cell, or call it an extra cell. Returns
    (release cell id -> the student's cell, release cell id or None for the top -> the extra
    cells that follow it). A second copy of a matched cell is dropped (noted for an answer). `handed` gets an
    extra code cell's outputs as handed in, by the id it is given."""
    release_cells = release["cells"]
    release_ids = {c.get("id") for c in release_cells}
    answer_ids = {_nbgrader(c)["grade_id"]: c.get("id") for c in release_cells if _is_answer(c)}
    answer_cell_ids = set(answer_ids.values())
    matched: dict[str, dict] = {}
    followers: dict[str | None, list] = {}
    previous: str | None = None
    student_cells = student.get("cells", [])
    if not isinstance(student_cells, list):
        student_cells = []
    for cell in student_cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        grade_id = _nbgrader(cell).get("grade_id")
        grade_id = grade_id if isinstance(grade_id, str) else None  # JSON may hold anything here
        cell_id = cell.get("id")
        cell_id = cell_id if isinstance(cell_id, str) else None
        target = answer_ids.get(grade_id) if grade_id in answer_ids else (cell_id if cell_id in release_ids else None)
        if target is None:
            extra = _as_extra(cell)
            extra["id"] = f"added-{sum(len(v) for v in followers.values()) + 1}"
            if extra["cell_type"] == "code":
                handed[extra["id"]] = cell.get("outputs")
            followers.setdefault(previous, []).append(extra)
        elif target in matched:
            if target in answer_cell_ids:
                notes.append(f"answer cell {target!r} appears more than once: the first copy was graded")
        else:
            matched[target] = cell
            previous = target
    return matched, followers


def _graded_cell(rel: dict, mine: dict | None, source_by_id: dict, pictures: "_Pictures", notes: list[str]) -> dict:
    """The graded notebook's copy of released cell `rel`, given the student's matching cell `mine`."""
    out = copy.deepcopy(rel)
    out["source"] = _text(rel)
    if _is_answer(rel):
        name = _nbgrader(rel)["grade_id"]
        if mine is None:
            notes.append(f"answer cell {name!r} is missing: graded as unanswered")
        elif mine.get("cell_type") != rel["cell_type"]:
            notes.append(f"answer cell {name!r} was changed to {mine.get('cell_type')}: graded as unanswered")
        else:
            out["source"] = _text(mine)
            if out["cell_type"] == "markdown":
                out = pictures.keep(out, mine)
    elif _is_test(rel):
        out["source"] = _text(source_by_id.get(rel.get("id"), rel))
        if mine is None:
            notes.append(f"test cell {_nbgrader(rel)['grade_id']!r} was missing and was put back")
        elif _text(mine) != _text(rel) or _nbgrader(mine) != _nbgrader(rel) or mine.get("cell_type") != "code":
            notes.append(f"test cell {_nbgrader(rel)['grade_id']!r} was changed and was restored")
    elif rel["cell_type"] == "code" and not _nbgrader(rel) and mine is not None and mine.get("cell_type") == "code":
        out["source"] = _text(mine)  # a live Python box or the name cell: the student's version
    if out["cell_type"] == "code":
        out["outputs"] = []
        out["execution_count"] = None
    return out


def _as_extra(cell: dict) -> dict:
    """A cell the student added: kept, but never taken for a graded cell."""
    kind = cell.get("cell_type")
    meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    meta = {k: v for k, v in meta.items() if k not in ("nbgrader", "deletable", "editable")}
    out = {"cell_type": kind, "metadata": meta, "source": _text(cell)}
    if kind == "code":
        out.update(outputs=[], execution_count=None)
    elif "attachments" in cell:
        out["attachments"] = cell["attachments"]  # checked when the cell is placed (_Pictures)
    return out


def _placeholder(text: str) -> dict:
    """A small picture that says `text` (SVG), in place of one that could not be kept."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{12 + 7 * len(text)}" height="28">'
        f'<rect width="100%" height="100%" fill="#fff3cd" stroke="#c8a000"/>'
        f'<text x="6" y="19" font-family="sans-serif" font-size="13">{text}</text></svg>'
    )
    return {"image/svg+xml": base64.b64encode(svg.encode()).decode("ascii")}


class _Pictures:
    """Keeps the attachments of the student's markdown cells, within the notebook's budget."""

    def __init__(self, notes: list[str]):
        self.notes = notes
        self.used = 0

    def keep(self, out: dict, mine: dict) -> dict:
        """`out` (a graded cell) with the checked attachments of `mine` (the student's cell)."""
        out = copy.deepcopy(out)
        out.pop("attachments", None)
        if out.get("cell_type") not in ("markdown", "raw"):
            return out
        where = _nbgrader(out).get("grade_id") or out.get("id") or "?"
        found = mine.get("attachments")
        kept: dict = {}
        for name, bundle in found.items() if isinstance(found, dict) else []:
            if not isinstance(name, str) or not name or len(name) > ATTACHMENT_NAME_CHARS:
                continue
            clean = {}
            for mime, data in bundle.items() if isinstance(bundle, dict) else []:
                if isinstance(data, list) and all(isinstance(d, str) for d in data):
                    data = "".join(data)
                if isinstance(mime, str) and "/" in mime and len(mime) < 100 and isinstance(data, str) and data:
                    clean[mime] = data
            size = sum(len(d) for d in clean.values())
            if not clean:
                continue
            if self.used + size > ATTACHMENT_CHARS:
                self.notes.append(
                    f"cell {where!r}: the pasted picture {name!r} ({size * 3 / 4 / 1e6:.1f} MB) "
                    f"was left out: the pictures of a notebook may take about "
                    f"{ATTACHMENT_CHARS * 3 / 4 / 1e6:.0f} MB together; paste a smaller picture "
                    "(a screenshot of the part that matters, or a photo saved at a lower resolution)"
                )
                kept[name] = _placeholder(f"picture {name[:60]} left out: too large")
                continue
            self.used += size
            kept[name] = clean
        if out.get("cell_type") == "markdown":
            for name in ATTACHMENT_REF.findall(_text(out)):
                if name not in kept and len(name) <= ATTACHMENT_NAME_CHARS:
                    self.notes.append(f"cell {where!r}: the picture {name!r} is named but not in the notebook")
                    kept[name] = _placeholder(f"picture {name[:60]} missing from the notebook")
        if kept:
            out["attachments"] = kept
        return out
