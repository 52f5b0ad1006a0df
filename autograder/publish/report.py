"""The grade report of a step: a table on screen, autograder/grades/<step>.csv and <step>.json.

One record per student, notebook and grade cell: student, notebook, grade_id, score,
max_score, error (why the cell scored less than full marks, or why it waits for review), kind (auto,
manual: a written answer, or review: a hidden test a check could not decide, scored by a person; its
score is empty until then).
<step>.json (its shape: GRADES_SCHEMA below, `schema_version` SCHEMA_VERSION) adds, per student, the
submission's time, due date, extension, lateness and per-notebook totals with the late penalty
(autograder/records/totals.py, autograder/term.py).
Every reason and note is clipped to limits.TEXT_CHARS characters, and a notebook keeps at most
MAX_NOTES notes: the reports stay small whatever a submission printed or raised.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from ..course import ROOT
from ..csvout import write_csv
from .insights import review_reasons
from ..kernel.limits import clip
from ..records.model import NotebookResult, StudentResult
from ..records.store import Store, atomic_write
from ..records.totals import from_results

MAX_NOTES = 50

FIELDS = ["student", "notebook", "grade_id", "score", "max_score", "error", "kind", "bonus"]
NUMBER_FIELDS = ("score", "max_score")  # the grader's numbers; the rest is text, escaped (csvout.py)

# <step>.json, version 2 (version 1 had no schema_version, term or submissions). A reader checks
# schema_version; a new field is a new minor thing readers ignore, a changed or removed one a new version.
SCHEMA_VERSION = 2
GRADES_SCHEMA = {
    "schema_version": "int: 2",
    "step": "str: the step graded (its folder's name in source/)",
    "term": {
        "due": "str: ISO 8601 UTC or ''",
        "late_policy": "str: none, zero, per_hour or per_day",
        "late_percent": "float",
        "late_grace_seconds": "float: this late still counts as on time",
    },
    "grades": [{field: "one record per student, notebook and grade cell (<step>.csv's columns)" for field in FIELDS}],
    "submissions": [
        {
            "student": "str",
            "timestamp": "str: ISO 8601 UTC",
            "time_source": "str",
            "due": "str: ISO 8601 UTC, the extension included, or ''",
            "extension": "str: e.g. 2d or ''",
            "seconds_late": "float",
            "notebooks": {"<notebook>": "totals.notebook_totals"},
            "step": "totals.step_totals",
        }
    ],
    "problems": [{"student": "str", "notebook": "str or null", "file": "str", "problem": "str"}],
    "notes": {"<student>/<notebook>": ["str"]},
    "time_budget": {
        "ran_out": [
            "str: the students whose time budget (Limits.student_budget) ran out: the "
            "cells and notebooks after it scored 0"
        ]
    },
}


def report_paths(step) -> tuple[Path, Path]:
    """(csv, json) of a step's grades: autograder/grades/<step>.csv and .json."""
    return Store.current().grades(step.name)


def records(results: list[NotebookResult], step) -> list[dict]:
    rows = []
    for result in sorted(results, key=lambda r: (r.student, r.notebook)):
        for cell in result.cells:
            rows.append(
                {
                    "student": result.student,
                    "notebook": result.notebook,
                    "grade_id": cell.grade_id,
                    "score": cell.score,
                    "max_score": cell.max_score,
                    "error": clip(cell.error),
                    "kind": cell.kind,
                    "bonus": step.is_bonus(cell.grade_id),
                }
            )
    return rows


def table(results: list[NotebookResult], step, totals: dict | None = None) -> str:
    """Per student: points per notebook (autograded and written answers graded so far), the required
    points out of the required maximum (written answers included, as in the LMS export), the bonus,
    the late penalty, the step's total (required + bonus - penalty: the number the Canvas export,
    the feedback page and `make my-feedback` show) and the written answers still waiting for a
    grader. `totals`: student -> totals.student_totals (with the term's penalties: the store's
    StudentResult.totals); without, no penalties."""
    totals = totals or from_results(results, {}, step)
    notebooks = sorted({r.notebook for r in results})
    students = sorted({r.student for r in results})
    by = {(r.student, r.notebook): r for r in results}
    short = [n.split("-", 1)[0] for n in notebooks]
    # a bonus column where the step has bonus questions (a step without any would show 0.0/0)
    has_bonus = any(c.kind != "manual" and step.is_bonus(c.grade_id) for r in results for c in r.cells)
    header = (
        f"{'student':<18}"
        + "".join(f"{s:>7}" for s in short)
        + f"{'required':>13}"
        + (f"{'bonus':>10}" if has_bonus else "")
        + f"{'late':>7}"
        + f"{'total':>8}"
        + "  written answers"
    )
    lines = [header, "-" * len(header)]
    from ..names import lookalikes, shown_id

    alike = {sid: [o for o in group if o != sid] for group in lookalikes(students) for sid in group}
    for sid in students:
        cols, got, top, bonus, bonus_top, open_, written, waiting = [], 0.0, 0.0, 0.0, 0.0, 0, 0, 0
        for name in notebooks:
            found = by.get((sid, name))
            cells = found.cells if found is not None else []
            cols.append(f"{sum(c.score or 0 for c in cells):>7.1f}" if cells else f"{'-':>7}")
            for c in cells:
                if c.kind == "manual":
                    written += 1
                    open_ += c.score is None
                elif c.kind == "review" and c.score is None:
                    waiting += 1
                if step.is_bonus(c.grade_id):
                    bonus, bonus_top = bonus + (c.score or 0), bonus_top + c.max_score
                else:
                    got, top = got + (c.score or 0), top + c.max_score
        late = totals.get(sid, {}).get("step", {}).get("late_penalty", 0)
        total = totals.get(sid, {}).get("step", {}).get("total", got + bonus - late)
        lines.append(
            padded(sid, 18)
            + "".join(cols)
            + f"{got:>8.1f}/{top:<4.0f}"
            + (f"{bonus:>6.1f}/{bonus_top:<3.0f}" if has_bonus else "")
            + (f"{-late:>7.1f}" if late else f"{'-':>7}")
            + f"{total:>8.1f}"
            + f"  {open_} of {written} to grade"
            + (f", {waiting} to review" if waiting else "")
            + (
                f"  ({shown_id(sid)}: another student than the look-alike {', '.join(shown_id(o) for o in alike[sid])})"
                if sid in alike
                else ""
            )
        )
    lines.append(
        "(notebook columns: points, autograded and written answers graded so far; required: out of "
        "the required notebooks' points; late: the late penalty (course.toml); total: required + "
        "bonus - late, as in the LMS export and the feedback; written answers: those left to grade "
        "by hand in the formgrader, an unanswered one is scored 0 already; to review: hidden tests the "
        "grader could not decide, graded by hand in the formgrader too, counting nothing until then)"
    )
    return "\n".join(lines)


def review_lines(results: list[NotebookResult], step) -> list[str]:
    """The cells waiting for a person's review (a check could not decide them), one line each with the
    check's reason, for `make grade`'s summary."""
    waiting = [
        (r.student, r.notebook, c)
        for r in sorted(results, key=lambda r: (r.student, r.notebook))
        for c in r.cells
        if c.kind == "review" and c.score is None
    ]
    if not waiting:
        return []
    n = len(waiting)
    lines = [
        f"review: {n} cell{'s' * (n > 1)} wait{'s' * (n == 1)} for a person's review (the grader could not "
        "decide how the answer computes, so it took no points): grade them in the formgrader (`make "
        "formgrader`, Manual Grading), then `make feedback`"
    ]
    # one item per student and reason: a student whose cells share a reason (one line of theirs that the
    # reader cannot follow reaches every process cell) fills one line of the queue, not one per cell
    items: dict[tuple, list] = {}
    for sid, name, c in waiting:
        items.setdefault((sid, tuple(review_reasons(c.error))), []).append((name, c))
    for (sid, _), cells in list(items.items())[:20]:
        name, c = cells[0]
        if len(cells) == 1:
            lines.append(f"  {sid} {name} {c.grade_id}: {clip(c.error, 300)}")
        else:
            where = ", ".join(f"{n} {cell.grade_id}" for n, cell in cells)
            lines.append(f"  {sid}, {len(cells)} cells for one reason ({clip(where, 300)}): {clip(c.error, 300)}")
    if len(items) > 20:
        lines.append(f"  ... and {len(items) - 20} more (grades/{step.name}.csv: kind review)")
    return lines


MAX_ITEMS = 20  # lines of one list in `make grade`'s summary; the rest are in grades/<step>.csv and .json


def problem_lines(problems: list[dict], step) -> list[str]:
    """The files that could not be graded, for `make grade`'s summary: one line per student and problem (a
    student who hands in a thousand stray files fills one line, not a thousand), at most MAX_ITEMS lines;
    every file stays in grades/<step>.json's problems."""
    if not problems:
        return []
    items: dict[tuple, list] = {}
    for p in problems:
        items.setdefault((p.get("student"), p.get("problem")), []).append(p)
    lines = ["", "files that could not be graded:"]
    for (sid, problem), files in list(items.items())[:MAX_ITEMS]:
        if len(files) == 1:
            lines.append(f"  {sid}: {files[0].get('file')}: {problem}")
        else:
            where = clip(", ".join(str(f.get("file")) for f in files), 300)
            lines.append(f"  {sid}, {len(files)} files ({where}): {problem}")
    if len(items) > MAX_ITEMS:
        lines.append(f"  ... and {len(items) - MAX_ITEMS} more (grades/{step.name}.json: problems)")
    return lines


def padded(text: str, width: int) -> str:
    """`text` padded with spaces to `width` columns of a terminal: a Chinese character takes two
    columns, a combining accent none (so ids in any script keep the table's columns straight)."""
    used = sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * max(0, width - used)


def _notes(result: NotebookResult) -> list[str]:
    notes = [clip(n) for n in result.notes]
    if len(notes) > MAX_NOTES:
        notes = notes[: MAX_NOTES - 1] + [f"[... {len(notes) - MAX_NOTES + 1} more notes left out]"]
    return notes


def write_reports(step, students: list[StudentResult], problems: list[dict], say=print) -> None:
    """grades/<step>.csv and .json and the table on screen, from the store's record of each student."""
    results = [r for s in students for r in s.notebooks.values()]
    rows = records(results, step)
    problems = [{k: clip(v) if isinstance(v, str) else v for k, v in p.items()} for p in problems]
    csv_path, json_path = report_paths(step)
    write_csv(csv_path, FIELDS, rows, numbers=NUMBER_FIELDS)
    term, submissions = _term_part(step, students, Store.current())
    totals = {s.student: s.totals for s in students}
    atomic_write(
        json_path,
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "step": step.name,
                "term": term,
                "grades": rows,
                "submissions": submissions,
                "problems": problems,
                "notes": {f"{r.student}/{r.notebook}": _notes(r) for r in results if r.notes},
                "time_budget": {"ran_out": budget_ran_out(results)},
            },
            indent=1,
        ),
    )
    say("")
    say(table(results, step, totals))
    for line in review_lines(results, step):
        say(line)
    if budget_ran_out(results):
        say(
            "\nstudents whose time budget ran out (the cells and notebooks after it scored 0, saying so): "
            + ", ".join(budget_ran_out(results))
        )
    for line in problem_lines(problems, step):
        say(line)
    shown = [p.relative_to(ROOT) if p.is_relative_to(ROOT) else p for p in (csv_path, json_path)]
    say(f"\ngrades: {shown[0]} and {shown[1]} ({len(rows)} records)")


def budget_ran_out(results: list[NotebookResult]) -> list[str]:
    """The students whose time budget for all their notebooks ran out (autograder/kernel/budget.py)."""
    return sorted({r.student for r in results if r.budget is not None and r.budget.ran_out})


def _term_part(step, students: list[StudentResult], store: Store) -> tuple[dict, list[dict]]:
    """grades.json's term and its submissions list (the gradebook's submission times, due dates and
    penalties, as the store read them; autograder/term.py)."""
    from ..term import due_date, grace_seconds, late_policy

    due = due_date(step.name)
    policy, percent = late_policy()
    term = {
        "due": due.isoformat() if due else "",
        "late_policy": policy,
        "late_percent": percent,
        "late_grace_seconds": grace_seconds(),
    }
    submissions = []
    for student in students:
        record = student.term
        submissions.append(
            {
                "student": student.student,
                "timestamp": record.get("timestamp", ""),
                "time_source": str(store.times(step.name, student.student).get("time_source", "")),
                "due": record.get("due", ""),
                "extension": record.get("extension", ""),
                "seconds_late": record.get("seconds_late", 0.0),
                **student.totals,
            }
        )
    return term, submissions
