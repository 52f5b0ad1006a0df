"""The class list: who the students are in the LMS, so that grades go back to the right person.

`roster.csv` in the course (`$COURSE_ROSTER` names another): `student,name,canvas_id,sis_user_id,
sis_login_id,section,moodle_name` (a line per student; lines starting with # are notes). It is
written by `make roster FROM=<the LMS's gradebook export>` (`import_roster`) from

* Canvas's gradebook export (Grades > Export > CSV): `Student, ID, SIS User ID, SIS Login ID,
  Section`, then a column per assignment named `<title> (<assignment id>)`, a `Points Possible`
  line first. The student's id here is the SIS Login ID (else the SIS User ID, else the Canvas
  id); the assignment ids of the columns are kept too, in `roster-assignments.csv`
  (`step,canvas_assignment_id,title`) for the step whose title or name the column carries, so that
  `make export` writes `<title> (<id>)` and Canvas fills that column instead of creating another
  (course.toml's `[canvas_assignment] <step> = <id>` says it by hand, and wins);
* Moodle's grades export (Grades > Export > Plain text file): `First name, Last name, ID number,
  Institution, Department, Email address`, then the grade items. The student's id is the ID number
  (else the email's local part); Moodle's submission downloads carry the student's full name and a
  per-assignment participant number, so downloads are matched by name (`moodle_name`).

Grading reads the roster to give an LMS download's files the roster's student id (`lms_ids`);
`make export` to fill Canvas's `ID` and SIS columns and to name every student it cannot match.
What grading learnt from a download (a Canvas user id) is kept per student in
`<grading home>/work/lms/<step>/<student>.json` (`save_lms_ids`, `graded_lms_ids`).
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

from ..course import ROOT
from ..csvout import text_of
from ..errors import GraderError

ROSTER_COLUMNS = ["student", "name", "canvas_id", "sis_user_id", "sis_login_id", "section", "moodle_name"]
ASSIGNMENT_COLUMNS = ["step", "canvas_assignment_id", "title"]
CANVAS_ASSIGNMENT = re.compile(r"^(?P<title>.*\S)\s*\((?P<id>\d+)\)\s*$")


class RosterError(GraderError, ValueError):
    """A roster or an LMS export that cannot be used; the message says what to fix."""


def roster_file() -> Path:
    return Path(os.environ.get("COURSE_ROSTER") or ROOT / "roster.csv")


def assignments_file() -> Path:
    return roster_file().with_name("roster-assignments.csv")


def _rows(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8-sig")
    rows = csv.DictReader(line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    # the guard the CSV writer put on a field (autograder/csvout.py) taken off: a name reads as it was given
    return [{k: text_of(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]


def roster() -> dict[str, dict]:
    """student id -> its roster line ({} without a roster)."""
    path = roster_file()
    if not path.exists():
        return {}
    rows = _rows(path)
    if rows and "student" not in rows[0]:
        raise RosterError(f"{path.name}: the first line must name the columns {','.join(ROSTER_COLUMNS)}")
    return {(row.get("student") or "").strip(): row for row in rows if (row.get("student") or "").strip()}


def canvas_assignment_id(step: str) -> str | None:
    """The Canvas assignment id of the step's column: course.toml's `[canvas_assignment] <step> = <id>`
    when it says, else what the roster import found (roster-assignments.csv); None when unknown."""
    from ..term import load_term

    given = load_term().get("canvas_assignment", {}).get(step)
    if isinstance(given, int) or (isinstance(given, str) and given.strip().isdigit()):
        return str(given).strip()
    path = assignments_file()
    if not path.exists():
        return None
    for row in _rows(path):
        if (row.get("step") or "").strip() == step and (row.get("canvas_assignment_id") or "").strip().isdigit():
            return row["canvas_assignment_id"].strip()
    return None


def lms_ids() -> dict[tuple[str, str], str]:
    """(lms, key) -> student id: ("canvas", Canvas user id) and ("moodle-name", full name folded)."""
    out = {}
    for sid, row in roster().items():
        if (row.get("canvas_id") or "").strip():
            out[("canvas", row["canvas_id"].strip())] = sid
        if (row.get("moodle_name") or "").strip():
            out[("moodle-name", fold_name(row["moodle_name"]))] = sid
    return out


def fold_name(name: str) -> str:
    return " ".join(name.casefold().split())


# ---- import from the LMS -------------------------------------------------------------------------


def import_roster(export: Path, steps: list, say=print) -> tuple[Path, int]:
    """`make roster FROM=<export>`: roster.csv (and roster-assignments.csv for Canvas) from an LMS's
    gradebook export; returns (roster path, students)."""
    from ..csvout import write_csv
    from ..names import UnusableId, student_id

    export = Path(export)
    if not export.is_file():
        raise RosterError(f"{export}: no such file: give FROM=<the gradebook export you downloaded from the LMS>")
    text = export.read_text(encoding="utf-8-sig", errors="replace")
    reader = csv.reader(text.splitlines())
    header = next(reader, [])
    columns = [h.strip() for h in header]
    rows = [r for r in reader if any(cell.strip() for cell in r)]
    if "SIS Login ID" in columns or ("Student" in columns and "ID" in columns):
        kind, people, assignments = "Canvas", *_canvas_people(columns, rows, steps)
    elif "First name" in columns and "Last name" in columns:
        kind, people, assignments = "Moodle", _moodle_people(columns, rows), []
    else:
        raise RosterError(
            f"{export.name}: neither Canvas's gradebook export (columns Student, ID, SIS User ID, "
            "SIS Login ID, Section) nor Moodle's grades export (First name, Last name, ID number, "
            f"Email address); its first line is {', '.join(columns[:6])}"
        )
    out, skipped = [], []
    for person in people:
        try:
            person["student"] = student_id(person["student"])
        except UnusableId as err:
            skipped.append(f"{person.get('name')!r}: {err}")
            continue
        out.append(person)
    seen: dict[str, str] = {}
    for person in out:
        if person["student"] in seen:
            raise RosterError(
                f"{export.name}: {person['name']!r} and {seen[person['student']]!r} both have the id "
                f"{person['student']!r}: give them SIS Login IDs (Canvas) or ID numbers (Moodle)"
            )
        seen[person["student"]] = person["name"]
    path = write_csv(roster_file(), ROSTER_COLUMNS, out)
    if kind == "Canvas":  # this export's assignments, none left over from an older one
        write_csv(assignments_file(), ASSIGNMENT_COLUMNS, assignments)
    say(f"roster: {len(out)} students from {kind}'s export {export.name} -> {_shown(path)}")
    for row in assignments:
        say(
            f"roster: {row['step']} is Canvas assignment {row['canvas_assignment_id']} ({row['title']!r}): "
            f"make export fills that column -> {_shown(assignments_file())}"
        )
    if kind == "Canvas" and not assignments:
        found = [c for c in columns if CANVAS_ASSIGNMENT.match(c)]
        say(
            "roster: no assignment column is named like a step (its TITLE or folder name), so `make export` "
            "cannot name Canvas's assignment and Canvas would make a new column; say which it is in course.toml, "
            "[canvas_assignment] <step> = <id>" + (f"; the export's columns: {', '.join(found[:12])}" if found else "")
        )
    for line in skipped:
        say(f"roster: not imported (no usable id): {line}")
    return path, len(out)


def _canvas_people(columns: list[str], rows: list[list[str]], steps: list) -> tuple[list[dict], list[dict]]:
    at = {name: i for i, name in enumerate(columns)}

    def cell(row, name):
        i = at.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    people = []
    for row in rows:
        name = cell(row, "Student")
        if (
            not name
            or name.lower().lstrip().startswith(("points possible", "student, test"))
            or not cell(row, "ID").isdigit()
        ):
            continue  # Canvas's "Points Possible" and posting-policy lines; its test student
        people.append(
            {
                "student": cell(row, "SIS Login ID") or cell(row, "SIS User ID") or f"canvas-{cell(row, 'ID')}",
                "name": name,
                "canvas_id": cell(row, "ID"),
                "sis_user_id": cell(row, "SIS User ID"),
                "sis_login_id": cell(row, "SIS Login ID"),
                "section": cell(row, "Section"),
                "moodle_name": "",
            }
        )
    assignments = []
    for column in columns:
        match = CANVAS_ASSIGNMENT.match(column)
        if not match:
            continue
        for step in steps:
            if match["title"].strip() in (step.title, step.name):
                assignments.append({"step": step.name, "canvas_assignment_id": match["id"], "title": match["title"]})
    return people, assignments


def _moodle_people(columns: list[str], rows: list[list[str]]) -> list[dict]:
    at = {name: i for i, name in enumerate(columns)}

    def cell(row, name):
        i = at.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    people = []
    for row in rows:
        first, last = cell(row, "First name"), cell(row, "Last name")
        if not (first or last):
            continue
        email = cell(row, "Email address")
        full = f"{first} {last}".strip()
        people.append(
            {
                "student": cell(row, "ID number") or email.split("@")[0] or full,
                "name": f"{last}, {first}".strip(", "),
                "canvas_id": "",
                "sis_user_id": cell(row, "ID number"),
                "sis_login_id": email,
                "section": cell(row, "Department"),
                "moodle_name": full,
            }
        )
    return people


# ---- what grading learnt from an LMS download ----------------------------------------------------


def save_lms_ids(chosen: dict, home: Path, step: str) -> None:
    """Each graded student's LMS and user id, from the download their files came in."""
    folder = home / "work" / "lms" / step
    seen = {}
    for (sid, _), item in chosen.items():
        lms = getattr(item, "lms", None)
        if lms is not None:
            seen[sid] = {"lms": lms.lms, "user_id": lms.user, "name": lms.name}
    for sid, record in seen.items():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sid}.json").write_text(json.dumps(record), encoding="utf-8")


def graded_lms_ids(home: Path, step: str) -> dict[str, dict]:
    out = {}
    for path in sorted((home / "work" / "lms" / step).glob("*.json")):
        try:
            out[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return out


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
