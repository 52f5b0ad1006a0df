"""Grades out of the gradebook, as nbgrader `ExportPlugin`s: `make export` writes both files, and
`nbgrader export --exporter=autograder.lms.export.CanvasExport --to=<file>` (or `...NotebookTotalsExport`)
writes the same one.

  CanvasExport           the CSV Canvas's gradebook import accepts: Canvas's columns `Student`, `ID`,
                         `SIS User ID`, `SIS Login ID`, `Section`, then one column for the step, a
                         `Points Possible` row first; the score is the step's total after late
                         penalties (autograder/records/totals.py), out of the required points (bonus is extra)
  NotebookTotalsExport   one line per student and notebook: score, maximum, late penalty, final score,
                         written answers still to grade, submission time, due date, lateness

Canvas matches a line to a student by `ID` (Canvas's user id), `SIS User ID` or `SIS Login ID`
(Canvas's guide "How do I import grades in the Gradebook?": those columns first, then one column per
assignment, an existing assignment's column named `<name> (<assignment id>)`; a name alone that is not
exactly the assignment's makes a new assignment). The course's roster (autograder/lms/roster.py, from
`make roster FROM=<the LMS's gradebook export>`) fills those in, and the step's column carries the
assignment id it found; a student graded from Canvas's download gets the user id the download
carried; a student with neither is exported with the student id as `SIS Login ID` and the name from
the gradebook, and `make export` names them (and the roster's students with no grade). Every text field a spreadsheet could read as a
formula is written with a leading `'`; the grader's numbers stay numbers (autograder/csvout.py).
"""

from __future__ import annotations

from pathlib import Path

from nbgrader.plugins import ExportPlugin

from ..course import ROOT, grader_home
from ..csvout import csv_text
from ..records import gradebook
from ..records.store import Store, totals_by_student
from .roster import roster, roster_file  # noqa: F401  (roster_file: where the roster is)

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
NOTEBOOK_COLUMNS = [
    "student",
    "step",
    "notebook",
    "score",
    "max_score",
    "late_penalty",
    "final_score",
    "written_to_grade",
    "review_to_grade",
    "timestamp",
    "due",
    "extension",
    "seconds_late",
]
NOTEBOOK_NUMBERS = ("score", "max_score", "late_penalty", "final_score", "seconds_late")


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value == value else ""


def _steps(plugin: ExportPlugin) -> list[str]:
    from ..steps import find_step

    return [str(a) for a in plugin.assignment] or [find_step().name]  # default: the newest step


def canvas_column(step: str) -> str:
    """The step's column in Canvas's import: its title, with Canvas's assignment id in parentheses
    when the roster import found it (`Step 4: ... (12345)`): Canvas then fills that assignment's
    column; a title alone that differs in any way from the assignment's name makes a new one."""
    from .roster import canvas_assignment_id
    from ..steps import find_step

    title = find_step(step).title
    number = canvas_assignment_id(step)
    return f"{title} ({number})" if number else title


def canvas_rows(gb, steps: list[str], students: list[str] | None = None) -> tuple[list[str], list[list], list[str]]:
    """(columns, rows, who Canvas cannot match): a row per graded student, its `ID` from the roster
    or from the Canvas download the student's files came in, its SIS ids from the roster."""
    from .roster import graded_lms_ids

    people = roster()
    totals = {step: _totals(gb, step) for step in steps}
    downloaded = {}
    for step in steps:
        downloaded.update(
            {sid: r for sid, r in graded_lms_ids(grader_home(), step).items() if r.get("lms") == "canvas"}
        )
    columns = CANVAS_COLUMNS + [canvas_column(step) for step in steps]
    possible = []
    for step in steps:
        any_student = next(iter(totals[step].values()), None)
        possible.append(_number(any_student["step"]["required_max"]) if any_student else "")
    rows = [["Points Possible", "", "", "", ""] + possible]
    unmatched = []
    names = gradebook.student_names(gb)
    ids = sorted(set(names) | {sid for t in totals.values() for sid in t})
    for sid in ids:
        if students and sid not in students:
            continue
        person = people.get(sid, {})
        name = names.get(sid, sid)
        canvas_id = (person.get("canvas_id") or "").strip() or str(downloaded.get(sid, {}).get("user_id", ""))
        if canvas_id.startswith("anon_"):
            canvas_id = ""  # an anonymous id is not a Canvas user id
        row = [
            person.get("name") or name,
            canvas_id,
            person.get("sis_user_id", ""),
            person.get("sis_login_id") or sid,
            person.get("section", ""),
        ]
        row += [_number(totals[step][sid]["step"]["total"]) if sid in totals[step] else "" for step in steps]
        rows.append(row)
        if not person and not canvas_id:
            unmatched.append(
                f"graded, not on the roster: {sid!r} (no Canvas ID; Canvas matches the line only if "
                f"{sid!r} is the student's SIS Login ID)"
            )
    graded = {sid for t in totals.values() for sid in t}
    for sid in sorted(set(people) - graded):
        if not students or sid in students:
            unmatched.append(
                f"on the roster, no grade: {sid!r} ({people[sid].get('name') or ''}): nothing graded for them"
            )
    return columns, rows, unmatched


def canvas_csv(gb, steps: list[str], students: list[str] | None = None) -> str:
    columns, rows, _ = canvas_rows(gb, steps, students)
    return csv_text(columns, rows, numbers=columns[len(CANVAS_COLUMNS) :])


def _totals(gb, step: str) -> dict[str, dict]:
    """student -> their totals for `step` (the store's one record, read from the gradebook `gb`)."""
    from ..steps import find_step

    return totals_by_student(Store.current().load(find_step(step), gb=gb))


def notebooks_csv(gb, steps: list[str], students: list[str] | None = None) -> str:
    from ..steps import find_step

    rows = []
    for step in steps:
        for student in Store.current().load(find_step(step), gb=gb):
            sid, entry, record = student.student, student.totals, student.term
            if students and sid not in students:
                continue
            for name, nb in sorted(entry["notebooks"].items()):
                rows.append(
                    {
                        "student": sid,
                        "step": step,
                        "notebook": name,
                        "score": _number(nb["score"]),
                        "max_score": _number(nb["max_score"]),
                        "late_penalty": _number(nb["late_penalty"]),
                        "final_score": _number(nb["final_score"]),
                        "written_to_grade": " ".join(nb["to_grade"]),
                        "review_to_grade": " ".join(nb.get("to_review", [])),
                        "timestamp": record.get("timestamp", ""),
                        "due": record.get("due", ""),
                        "extension": record.get("extension", ""),
                        "seconds_late": record.get("seconds_late", ""),
                    }
                )
    return csv_text(NOTEBOOK_COLUMNS, rows, numbers=NOTEBOOK_NUMBERS)


def default_path(kind: str, steps: list[str]) -> Path:
    return grader_home() / "export" / f"{kind}-{'+'.join(steps)}.csv"


def _shown_roster() -> str:
    path = roster_file()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class CanvasExport(ExportPlugin):
    """nbgrader export --exporter=autograder.lms.export.CanvasExport [--to=file.csv] [--assignment=<step>]"""

    def export(self, gradebook) -> None:
        steps = _steps(self)
        dest = Path(self.to) if self.to else default_path("canvas", steps)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(canvas_csv(gradebook, steps, [str(s) for s in self.student] or None), encoding="utf-8")
        self.log.info("Canvas gradebook import written to %s", dest)


class NotebookTotalsExport(ExportPlugin):
    """nbgrader export --exporter=autograder.lms.export.NotebookTotalsExport [--to=file.csv]"""

    def export(self, gradebook) -> None:
        steps = _steps(self)
        dest = Path(self.to) if self.to else default_path("notebooks", steps)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(notebooks_csv(gradebook, steps, [str(s) for s in self.student] or None), encoding="utf-8")
        self.log.info("per-notebook totals written to %s", dest)


def export_all(step: str, say=print) -> list[Path]:
    """`make export`: both files, from the gradebook, through the plugins nbgrader would use."""
    store = Store.current()
    store.apply_term(step)  # penalties as of now (scores may have changed in the formgrader)
    written = []
    with gradebook.opened(store.url) as gb:
        for plugin in (CanvasExport(assignment=[step]), NotebookTotalsExport(assignment=[step])):
            plugin.export(gb)
            written.append(default_path("canvas" if isinstance(plugin, CanvasExport) else "notebooks", [step]))
        _, _, unmatched = canvas_rows(gb, [step])
    for path in written:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        lines = path.read_text(encoding="utf-8").splitlines()
        say(f"export: {shown} ({len(lines) - 1} lines)")
    if unmatched:
        say(
            f"export: {len(unmatched)} not matched between the grades and the roster "
            f"({_shown_roster()}; `make roster FROM=<the LMS's gradebook export>` writes it):"
        )
        for line in unmatched:
            say(f"  {line}")
    return written
