"""Written answers graded offline: `make written-scores` writes a CSV of every written answer (the
cells graded by hand) with the student's answer, and `make written-scores FROM=<that file>` reads
the scores and comments a TA filled in back into the gradebook, as the formgrader would save them.

The file, `<grading home>/written/written-<step>.csv`, one line per student and written answer:

    student, notebook, grade_id, max_score, score, comment, answer

`score` and `comment` hold what the gradebook has now (empty: not graded yet); fill them in (a
spreadsheet is fine) and import. An imported line sets the answer's manual score and comment and
marks it graded (nbgrader's `needs_manual_grade` off: the formgrader lists it as graded); a line
whose score is left empty is skipped. Every line is checked before anything is written: an unknown
student, notebook or grade id, a score that is not a number or not within 0..max_score, or a line
repeated, and nothing is imported, each bad line named by its line number. Then `make feedback`.

Like every CSV the project writes, text that begins like a spreadsheet formula is written with a
leading `'` (autograder/csvout.py); the import takes that `'` off again.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from ..course import ROOT, db_url, grader_home
from ..csvout import text_of, write_csv
from ..errors import GraderError
from ..records import gradebook

COLUMNS = ["student", "notebook", "grade_id", "max_score", "score", "comment", "answer"]
NUMBERS = ("max_score", "score")
MAX_ANSWER_CHARS = 20_000


class WrittenScoresError(GraderError, ValueError):
    """The file cannot be imported; the message names every bad line."""


def written_path(step: str) -> Path:
    return grader_home() / "written" / f"written-{step}.csv"


def _answers(step: str, sid: str, notebook: str) -> dict[str, str]:
    """grade_id -> the student's text in each answer cell (the graded notebook, else the submitted one)."""
    home = grader_home()
    for folder in ("autograded", "submitted"):
        path = home / folder / sid / step / f"{notebook}.ipynb"
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue
        out = {}
        for cell in cells if isinstance(cells, list) else []:
            meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
            if isinstance(meta, dict) and meta.get("solution") and isinstance(meta.get("grade_id"), str):
                source = cell.get("source", "")
                out[meta["grade_id"]] = "".join(source) if isinstance(source, list) else str(source)
        return out
    return {}


def written_rows(gb, step: str) -> list[dict]:
    """Every written answer of every submission of `step`, with its current score and comment, and
    the student's text."""
    rows, texts = gradebook.written_grades(gb, step), {}
    for row in rows:
        where = (row["student"], row["notebook"])
        if where not in texts:
            texts[where] = _answers(step, *where)
        row["answer"] = texts[where].get(row["grade_id"], "")[:MAX_ANSWER_CHARS]
    return rows


def export_written(step: str, say=print) -> Path:
    with gradebook.opened(db_url()) as gb:
        rows = written_rows(gb, step)
    path = write_csv(written_path(step), COLUMNS, rows, numbers=NUMBERS)
    open_rows = sum(r["score"] is None for r in rows)
    say(
        f"written-scores: {len(rows)} written answers ({open_rows} not graded yet) in {_shown(path)}: fill in "
        f"score and comment, then `make written-scores FROM={_shown(path)}`"
    )
    return path


def _unescape(text: str) -> str:
    """A comment as the CSV writer guarded it, read back (autograder/csvout.py `text_of`)."""
    return text_of(text)


def import_written(step: str, path: Path, say=print) -> int:
    """Check every line of `path`, then write them all, in one transaction; returns the number of
    answers scored. Raises WrittenScoresError naming every bad line (nothing written)."""
    path = Path(path)
    if not path.is_file():
        raise WrittenScoresError(f"{path}: no such file (make written-scores writes {_shown(written_path(step))})")
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        missing = {"student", "notebook", "grade_id", "score"} - set(reader.fieldnames or [])
        if missing:
            raise WrittenScoresError(
                f"{path.name}: the first line must name the columns {', '.join(COLUMNS)} "
                f"(missing: {', '.join(sorted(missing))})"
            )
        lines = list(enumerate(reader, start=2))
    with gradebook.opened(db_url()) as gb:
        known = {(r["student"], r["notebook"], r["grade_id"]): r for r in gradebook.written_grades(gb, step)}
        errors, updates, seen = [], [], {}
        for number, row in lines:
            key = tuple(_unescape((row.get(k) or "").strip()) for k in ("student", "notebook", "grade_id"))
            score_text = _unescape((row.get("score") or "").strip())
            if not score_text:
                continue
            where = f"line {number} ({'/'.join(key)})"
            if key not in known:
                students = {k[0] for k in known}
                what = (
                    "no such student"
                    if key[0] not in students
                    else "no written answer with that notebook and grade id for this student"
                )
                errors.append(f"{where}: {what} in {step}'s gradebook")
                continue
            if key in seen:
                errors.append(f"{where}: the same answer as line {seen[key]}")
                continue
            seen[key] = number
            try:
                score = float(score_text)
            except ValueError:
                errors.append(f"{where}: score {score_text!r} is not a number")
                continue
            top = known[key]["max_score"]
            if not math.isfinite(score) or not 0 <= score <= top:
                errors.append(f"{where}: score {score_text} is not within 0..{top:g}")
                continue
            updates.append((key, score, _unescape(row.get("comment") or "") if "comment" in row else None))
        if errors:
            raise WrittenScoresError(
                f"{path.name}: nothing imported; {len(errors)} line(s) to fix:\n  " + "\n  ".join(errors)
            )
        gradebook.write_written_scores(gb, step, updates)
    say(
        f"written-scores: {len(updates)} written answers scored from {path.name} (the formgrader shows them "
        "graded); `make feedback` writes the feedback and reports with them"
    )
    return len(updates)


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
