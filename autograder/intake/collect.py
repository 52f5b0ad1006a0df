"""Read submissions the way instructors receive them.

`collect(path, notebooks)` accepts a folder holding any mix of
  * one folder per student (`alice/01-on-paper.ipynb`, or nbgrader's `alice/<step>/…`),
  * one zip per student (`alice.zip`, notebooks anywhere inside),
  * loose notebooks whose names carry the student id (`alice_01-on-paper.ipynb`,
    `01-on-paper-alice.ipynb`, `alice - 01-on-paper (2).ipynb`: all three are `alice`),
  * an LMS's bulk download, unzipped or left zipped (`lms_name`): Canvas's
    `smithjohn_LATE_12345_67890_01-on-paper.ipynb` and per-student zips, Moodle's
    `Full Name_12_assignsubmission_file_/` folders; each student's LMS user id is kept
    (`Received.lms`), and Canvas's LATE marks the submission late.
A submission's time is the `timestamp.txt` that nbgrader's submit writes beside the notebooks (in a
student's folder or zip) when it holds a plausible time, else the file's modification time (a zip
entry's time); `Received.time_source` says which, and a `timestamp.txt` that is no time is reported.
`make collect`'s `notebook_times.json` gives a notebook unchanged since an earlier submission that
submission's time.
Student ids are given to the whole class at once (autograder/names.py): a name written exactly as
its id keeps it, a rewritten name that another claims is refused, other Unicode forms and look-alikes
are graded apart and reported as pairs; a name that cannot be an id is reported, its files not graded.
Nothing is extracted to disk or modified. Names and sizes are read first; then, per student and
notebook, the newest copy is read and checked, then the next newest only if that one is unreadable
(`_read_newest`), never more than MAX_STUDENT_BYTES per student: a zip bomb within every per-file cap
costs the grader one copy per notebook. A bad file, member or name becomes a `Received` with a
`problem` naming the file and the fault, for that student alone: nothing one student hands in stops
the class.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import GraderError
from ..names import UnusableId, assign_ids, lookalike_note, lookalikes
from ..safetext import printable

MAX_NOTEBOOK_BYTES = 20 * 2**20  # a Step 4 notebook with all its pictures is well under 5 MB
MAX_ZIP_MEMBERS = 200
MAX_STUDENT_BYTES = 100 * 2**20  # read from one student's uploads in all (unzipped): six notebooks, pictures and all
MAX_DEPTH = 64  # a notebook's JSON is about 10 levels deep (widget states a few more)
IGNORED_PARTS = {".ipynb_checkpoints", "__MACOSX", ".git"}
NBGRADER_FILES = {
    "timestamp.txt",
    "submission_secret.txt",  # what nbgrader's submit/collect put beside the notebooks
    "notebook_times.json",
}  # and `make collect`: each notebook's own time
NO_ID = "(no id)"  # the student of a file whose name gives no usable id: never an id itself


@dataclass
class Received:
    student: str
    notebook: str | None  # the step's notebook name, None when the file is not one of them
    origin: str  # where it came from, for messages (relative to the submissions folder)
    data: bytes | None = None
    mtime: float = 0.0
    problem: str | None = None  # why this file cannot be graded
    time_source: str = "file time"  # where `mtime` came from: "timestamp.txt", "file time", "zip entry time"
    lms_late: bool = False  # an LMS's download marked it late (Canvas's `_LATE_` in the name)
    size: int = 0  # its size as the file system or the zip says (before it is read)
    load: Callable[[], bytes] | None = field(default=None, repr=False, compare=False)  # reads it (collect)
    superseded_by: str | None = None  # a newer readable copy of the same notebook was chosen (not read)
    time_note: str | None = None  # its time stamp could not be used, and why
    lms: object = None  # LmsName: the LMS download it came from (its user id kept)
    notice: bool = False  # a problem that does not stop it being graded (a look-alike name)

    def __post_init__(self):  # a file name may hold terminal escapes: messages show them escaped
        self.origin = printable(self.origin)


SYMLINK = "a symbolic link, not a file: not read (hand in the notebook itself)"


class SubmissionError(GraderError, RuntimeError):
    """A submission that cannot be read; the message says which file and why."""


def id_problem(raw: str, err: UnusableId, what: str) -> str:
    return (
        f"no student id: the {what} name {raw!r} cannot be one because {err}; "
        "not graded: rename it (letters, digits, '.', '_', '-') and grade again"
    )


def loose_raw_id(rest: str) -> str:
    """The student's part of a loose notebook's name, without the separators around the notebook
    name and the copy numbers browsers and file managers add (`alice - 01-on-paper (2)` -> `alice`)."""
    rest = re.sub(r"\(\d{1,4}\)", " ", rest)  # "name (2).ipynb"
    rest = re.sub(r"(?i)[\s_-]+copy(?:\s+\d{1,4})?\s*$", " ", rest)  # "name copy 2", "name - Copy"
    return rest.strip(" \t_-.")


# ---- the names an LMS's bulk download gives ------------------------------------------------------
# Canvas ("Download Submissions": one zip, `submissions.zip`, of every student's files). Canvas's
# ContentZipper (lib/content_zipper.rb in instructure/canvas-lms: get_filename, sanitize_user_name,
# add_upload_submission) names each uploaded file
#     <sortable name, lower case, non-word characters removed>[_LATE]_<user id>_<attachment id>_<file name>
# (`_<digits>_` inside a name is collapsed, so the first `_<digits>_<digits>_` ends the name), or
# `[LATE_]anon_<anonymous id>_<attachment id>_<file name>` when the assignment is anonymous. A zip the
# student uploaded keeps its own name after the ids: `millerfrank_12345_67890_step04.zip`.
CANVAS_NAME = re.compile(
    r"^(?P<name>[^\W_](?:\w*?[^\W_])?)_(?:(?P<late>LATE)_)?(?P<user>\d+)_(?P<file>\d+)_(?P<rest>.+)$"
)
CANVAS_ANONYMOUS = re.compile(r"^(?:(?P<late>LATE)_)?anon_(?P<user>[^\W_]+)_(?P<file>\d+)_(?P<rest>.+)$")
# Moodle ("Download all submissions", mod/assign: StudentName_StudentID_PluginType_Plugin_FilePathAndName,
# as its feedback importer's tests spell it): with "download submissions in folders", one folder per
# student and plugin, `Full Name_<participant id>_assignsubmission_file_/<file>`; without, files
# `Full Name_<participant id>_assignsubmission_file_<file>`; text answers `..._assignsubmission_onlinetext_...`.
# Moodle writes the name with `_` turned into spaces, so the first `_<digits>_assignsubmission_` ends it.
MOODLE_NAME = re.compile(r"^(?P<name>[^_]+?)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<rest>.*)$")


@dataclass(frozen=True)
class LmsName:
    lms: str  # "canvas" or "moodle"
    name: str  # the student's name as the LMS wrote it
    user: str  # the LMS's id of the student (Canvas user id, anonymous id, Moodle participant id)
    late: bool  # Canvas marked the submission late
    rest: str  # the file's own name (or "" for a Moodle folder)


def lms_name(filename: str) -> LmsName | None:
    """The student, LMS id and file name in the name an LMS's bulk download gives a file, zip or
    folder; None for any other name."""
    if match := MOODLE_NAME.match(filename):
        return LmsName("moodle", match["name"].strip(), match["user"], False, match["rest"])
    if match := CANVAS_ANONYMOUS.match(filename):
        return LmsName("canvas", f"anon_{match['user']}", f"anon_{match['user']}", bool(match["late"]), match["rest"])
    if match := CANVAS_NAME.match(filename):
        return LmsName("canvas", match["name"], match["user"], bool(match["late"]), match["rest"])
    return None


def canvas_name(filename: str) -> tuple[str, bool, str] | None:
    """(student's name, late flag, the file's own name) of a file named as Canvas's bulk download
    names them; None for any other name."""
    found = lms_name(filename)
    return (found.name, found.late, found.rest) if found and found.lms == "canvas" else None


def _utf8(name: str) -> str:
    """A file name as UTF-8, whatever the locale the grader runs in (the same id on every machine);
    bytes that are not UTF-8 stay as surrogates, which student_id rejects."""
    return os.fsencode(name).decode("utf-8", "surrogateescape")


def match_notebook(filename: str, notebooks: list[str]) -> tuple[str | None, str]:
    """(notebook, rest of the name) for a file name that carries one of the step's notebook names."""
    stem = filename[: -len(".ipynb")] if filename.endswith(".ipynb") else filename
    for name in sorted(notebooks, key=len, reverse=True):
        if name in stem:
            rest = stem.replace(name, " ", 1)
            return name, rest
    return None, stem


# ---- reading a class -----------------------------------------------------------------------------


def collect(path: Path, notebooks: list[str], only=None, roster_ids: dict | None = None) -> list[Received]:
    """Every file under `path`, checked, and the newest readable copy of each student's notebook
    read (`Received.data`). `only(student_id)` (optional) picks the students to read: the files of
    the others are not opened (a shard of a large class reads only its own). Files whose name gives
    no usable id (student NO_ID) are reported whatever `only` picks. `roster_ids`: (lms, LMS user
    id) -> student id, from the roster (autograder/lms/roster.py), for LMS downloads."""
    path = Path(path)
    wanted = only or (lambda sid: True)
    received = _collect(path, notebooks, wanted, roster_ids or {})
    if only is not None:
        received = [item for item in received if item.student == NO_ID or only(item.student)]
    _read_newest(received)
    return received


@dataclass
class _Unit:
    """One student's part of the submissions folder, before ids are given: a folder, a zip, a
    loose file, or one student's members of an LMS's class archive."""

    kind: str  # folder, zip, file, link, other, members
    origin: str
    raw: str | None  # the name the student's id comes from
    make: Callable | None = None  # sid -> [Received] (lazy: nothing read yet)
    notebook: str | None = None
    lms: LmsName | None = None
    problem: str | None = None


def _collect(path: Path, notebooks: list[str], wanted, roster_ids: dict) -> list[Received]:
    if not path.exists():
        raise SubmissionError(f"{path}: no such folder. Give SUBMISSIONS=<folder of submissions>.")
    if path.is_file():
        if path.suffix != ".zip":
            raise SubmissionError(f"{path} is a file: give the folder that holds the submissions")
        units = _zip_units(path, path.name, notebooks)
    else:
        units = []
        for entry in sorted(path.iterdir()):
            try:
                units += _entry_units(entry, path, notebooks)
            except Exception as err:  # noqa: BLE001  one bad entry never stops the class
                units.append(
                    _Unit("other", entry.name, None, problem=f"could not be read ({type(err).__name__}: {err})")
                )
    _lms_raw_names(units, roster_ids)
    notes: dict[str, str] = {}
    ids = assign_ids((u.raw for u in units if u.raw), notes)
    received: list[Received] = []
    graded_raws: dict[str, list[str]] = {}
    for unit in units:
        sid = ids.get(unit.raw) if unit.raw else None
        if unit.problem is not None:
            received.append(Received(NO_ID, unit.notebook, unit.origin, problem=unit.problem))
        elif unit.raw is None:
            received.append(
                Received(
                    NO_ID,
                    unit.notebook,
                    unit.origin,
                    problem="the file name carries no student id (name it <student>_<notebook>.ipynb)",
                )
            )
        elif isinstance(sid, UnusableId):
            what = {
                "link": "link's",
                "folder": "folder's",
                "zip": "zip's",
                "file": "file's student",
                "members": "LMS download's student",
            }[unit.kind]
            received.append(Received(NO_ID, unit.notebook, unit.origin, problem=id_problem(unit.raw, sid, what)))
        elif not wanted(sid):
            continue
        else:
            try:
                items = unit.make(sid)
            except Exception as err:  # noqa: BLE001
                items = [Received(sid, None, unit.origin, problem=f"could not be read ({type(err).__name__}: {err})")]
            for item in items:
                item.lms = unit.lms
                item.lms_late = item.lms_late or bool(unit.lms and unit.lms.late)
            received += items
            graded_raws.setdefault(sid, []).append(unit.raw)
            if unit.raw in notes:
                received.append(Received(sid, None, unit.origin, problem=notes.pop(unit.raw), notice=True))
    for group in lookalikes(graded_raws):
        for sid in group:
            received.append(
                Received(
                    sid,
                    None,
                    ", ".join(sorted(set(graded_raws[sid]))),
                    problem=lookalike_note(sid, group, graded_raws),
                    notice=True,
                )
            )
    return received


def _entry_units(entry: Path, top: Path, notebooks: list[str]) -> list[_Unit]:
    name = _utf8(entry.name)
    if entry.name in IGNORED_PARTS:
        return [
            _Unit(
                "other",
                name,
                None,
                problem="an editor's or the system's folder (checkpoints, __MACOSX, .git): not read",
            )
        ]
    if entry.is_symlink():
        return [_Unit("link", name, name, make=lambda sid: [Received(sid, None, name, problem=SYMLINK)])]
    if name.startswith("."):
        return [
            _Unit(
                "other",
                name,
                None,
                problem="a hidden file or folder (its name starts with '.'): not read; "
                "rename it to the student's id if it is a submission",
            )
        ]
    if entry.is_dir():
        lms = lms_name(name)
        return [
            _Unit(
                "folder",
                name,
                lms.name if lms else name,
                lms=lms,
                make=lambda sid: _from_folder(entry, top, sid, notebooks),
            )
        ]
    if entry.suffix == ".zip":
        return _zip_units(entry, name, notebooks)
    if entry.suffix == ".ipynb":
        lms = lms_name(name)
        notebook, rest = match_notebook(lms.rest if lms else name, notebooks)
        raw = lms.name if lms else loose_raw_id(rest)

        def make(sid, entry=entry, name=name):
            return [_from_file(entry, name, sid, notebooks)]

        return [_Unit("file", name, raw or None, make=make, notebook=notebook, lms=lms)]
    return [_Unit("other", name, None, problem="not a notebook, a zip or a folder: ignored")]


def _zip_units(file: Path, origin: str, notebooks: list[str]) -> list[_Unit]:
    """A zip: one student's (named after the student, or by an LMS for one student), or an LMS's
    whole class download (its members named by the LMS: one unit per student in it)."""
    stem = _utf8(file.name)[: -len(".zip")] if file.name.endswith(".zip") else _utf8(file.name)
    lms = lms_name(stem)
    try:
        with zipfile.ZipFile(file) as archive:
            names = [m.filename for m in archive.infolist()]
    except Exception as err:  # noqa: BLE001
        raw, why = (lms.name if lms else stem), f"not a readable zip file ({type(err).__name__}: {err})"
        return [_Unit("zip", origin, raw, lms=lms, make=lambda sid: [Received(sid, None, origin, problem=why)])]
    if lms is None and any(lms_name(_member_top(n)) for n in names):
        return _class_archive_units(file, origin, notebooks, names)
    raw = lms.name if lms else stem
    return [
        _Unit(
            "zip",
            origin,
            raw,
            lms=lms,
            make=lambda sid: _from_zip(lambda: zipfile.ZipFile(file), origin, sid, notebooks),
        )
    ]


def _member_top(name: str) -> str:
    return name.split("/", 1)[0]


def _class_archive_units(file: Path, origin: str, notebooks: list[str], names: list[str]) -> list[_Unit]:
    """An LMS's class download left zipped (Canvas's `submissions.zip`, Moodle's "Download all
    submissions"): each member belongs to the student its name (or its folder's) carries."""
    by_student: dict[tuple[str, str], list[str]] = {}
    units = []
    for name in names:
        lms = lms_name(_member_top(name))
        if lms is None:
            if not name.endswith("/"):
                units.append(
                    _Unit(
                        "other",
                        f"{origin}:{name}",
                        None,
                        problem="not named by the LMS (no student or user id in its name): not read",
                    )
                )
            continue
        by_student.setdefault((lms.lms, lms.user), []).append(name)
    for (_, _), members in sorted(by_student.items()):
        lms = lms_name(_member_top(members[0]))

        def make(sid, members=members):
            return _from_zip(
                lambda: zipfile.ZipFile(file), origin, sid, notebooks, only_members=set(members), lms_files=True
            )

        units.append(_Unit("members", f"{origin}:{_member_top(members[0])}", lms.name, make=make, lms=lms))
    return units


def _lms_raw_names(units: list[_Unit], roster_ids: dict) -> None:
    """The name each LMS unit's id comes from: the roster's student for its LMS id when the roster
    knows it; else the LMS's name, with the LMS id added where one name stands for two LMS users
    (two students called `smithjohn`)."""
    users: dict[str, set[tuple[str, str]]] = {}
    for unit in units:
        if unit.lms is not None and unit.raw:
            users.setdefault(unit.raw, set()).add((unit.lms.lms, unit.lms.user))
    for unit in units:
        if unit.lms is None or not unit.raw:
            continue
        from ..lms.roster import fold_name

        key = (unit.lms.lms, unit.lms.user) if unit.lms.lms == "canvas" else ("moodle-name", fold_name(unit.lms.name))
        if key in roster_ids:
            unit.raw = roster_ids[key]
        elif len(users.get(unit.raw, ())) > 1:
            unit.raw = f"{unit.raw}_{unit.lms.user}"


MAX_TIMESTAMP_BYTES = 256
# Submission times the grader accepts: a `timestamp.txt` or file time outside these is not a time
# anyone submitted at (a student's `9999-12-31 23:59:59.999999 UTC` would overflow the dates
# computed from it); the file's own time is used instead, and the report says so.
EARLIEST_TIME = 315532800.0  # 1980-01-01, the earliest time a zip can hold
LATEST_TIME = 7258118400.0  # 2200-01-01


def plausible_time(seconds) -> bool:
    try:
        return EARLIEST_TIME <= float(seconds) < LATEST_TIME
    except (TypeError, ValueError, OverflowError):
        return False


def _folder_timestamp(folder: Path, top: Path) -> str | None:
    """The text of the `timestamp.txt` nearest a notebook: in its folder or a parent up to the
    student's folder `top` (nbgrader's collect puts it beside the notebooks)."""
    while True:
        stamp = folder / "timestamp.txt"
        if stamp.is_file() and not stamp.is_symlink():
            with open(stamp, "rb") as f:
                return f.read(MAX_TIMESTAMP_BYTES).decode("utf-8", "replace")
        if folder == top or top not in folder.parents:
            return None
        folder = folder.parent


def _stamp(item: Received, text: str | None) -> None:
    """Use a `timestamp.txt`'s time for a notebook, when it holds a plausible one; say so when it
    holds something else."""
    from ..term import parse_timestamp

    if text is None:
        return
    try:
        when = parse_timestamp(text)
    except Exception:  # noqa: BLE001  a student's file: never stops the class
        when = None
    if when is not None and plausible_time(when):
        item.mtime, item.time_source = when, "timestamp.txt"
    else:
        item.time_note = (
            f"its timestamp.txt ({printable(text.strip()[:64])!r}) is not a time it could have been "
            f"submitted at: the {item.time_source} is used instead"
        )


def _own_time(item: Received, file: Path) -> None:
    """A notebook's own time from the `notebook_times.json` that `make collect` writes beside a
    submission's timestamp.txt (unchanged since an earlier submission): only ever earlier than the
    submission's time, never later."""
    from ..term import parse_timestamp

    times = file.parent / "notebook_times.json"
    if item.time_source != "timestamp.txt" or not times.is_file() or times.is_symlink():
        return
    try:
        with open(times, "rb") as f:
            when = parse_timestamp(json.loads(f.read(64 * 1024).decode("utf-8")).get(file.name))
    except Exception:  # noqa: BLE001  a damaged file: the submission's time stands
        return
    if when is not None and plausible_time(when) and when < item.mtime:
        item.mtime, item.time_source = when, "timestamp.txt (unchanged since an earlier submission)"


def _file_time(seconds: float, what: str, item: Received) -> float:
    if 0 <= seconds < LATEST_TIME:  # a file time is the file system's: only an overflow is refused
        return float(seconds)
    item.time_note = f"its {what} ({seconds!r}) is not a plausible time: taken as the moment it was graded"
    return 0.0  # no time: term.submission_times takes the time of grading


def _read_newest(received: list[Received]) -> None:
    """Read the newest copy of each (student, notebook), newest first, until one is a readable
    notebook: older copies are never read (and never held), and no student's files are read past
    MAX_STUDENT_BYTES in all."""
    copies: dict[tuple[str, str], list[Received]] = {}
    for item in received:
        if item.problem is None and item.notebook is not None and item.load is not None:
            copies.setdefault((item.student, item.notebook), []).append(item)
    spent: dict[str, int] = {}
    for (sid, _), items in sorted(copies.items()):
        winner = None
        for item in sorted(items, key=lambda r: (r.mtime, r.origin), reverse=True):
            if winner is not None:
                item.superseded_by = winner.origin
            elif spent.get(sid, 0) + min(item.size, MAX_NOTEBOOK_BYTES) > MAX_STUDENT_BYTES:
                item.problem = (
                    f"not read: this student's files come to more than {MAX_STUDENT_BYTES // 2**20} MB "
                    "in all (the notebooks of a step are a few MB)"
                )
            else:
                try:
                    data = item.load()
                except Exception as err:  # noqa: BLE001
                    item.problem = f"could not be read ({type(err).__name__}: {err})"
                else:
                    spent[sid] = spent.get(sid, 0) + len(data)
                    item.problem = check_notebook(data)
                    if item.problem is None:
                        item.data, winner = data, item
                    del data
            item.load = None


def pick_newest(received: list[Received]) -> tuple[dict[tuple[str, str], Received], list[dict]]:
    """The copy of each (student, notebook) to grade: the newest readable one (on equal times, the
    last by origin: the same choice in every run); and every other file as a problem. (collect has
    read only the copies it chose; a list built by hand, with `data` set on every copy, is chosen
    from here the same way.)"""
    copies: dict[tuple[str, str], list[Received]] = {}
    problems: list[dict] = []
    for item in received:
        if item.problem or item.notebook is None:
            problems.append(
                {
                    "student": item.student,
                    "notebook": item.notebook,
                    "file": item.origin,
                    "problem": item.problem or "not a notebook of this step",
                    **({"notice": True} if item.notice else {}),
                }
            )
        elif item.superseded_by is not None:
            problems.append(
                {
                    "student": item.student,
                    "notebook": item.notebook,
                    "file": item.origin,
                    "problem": f"another copy ({item.superseded_by}) is newer and was graded instead",
                }
            )
        else:
            copies.setdefault((item.student, item.notebook), []).append(item)
    chosen: dict[tuple[str, str], Received] = {}
    for key, items in copies.items():
        chosen[key] = newest = max(items, key=lambda r: (r.mtime, r.origin))
        for item in sorted(items, key=lambda r: r.origin):
            if item is not newest:
                problems.append(
                    {
                        "student": item.student,
                        "notebook": item.notebook,
                        "file": item.origin,
                        "problem": f"another copy ({newest.origin}) is newer and was graded instead",
                    }
                )
        if newest.time_note:
            problems.append(
                {
                    "student": newest.student,
                    "notebook": newest.notebook,
                    "file": newest.origin,
                    "problem": f"graded, but {newest.time_note}",
                    "notice": True,
                }
            )
    return chosen, problems


def _from_folder(entry: Path, top: Path, sid: str, notebooks: list[str]) -> list[Received]:
    out = []
    files = [
        p
        for p in sorted(entry.rglob("*"))
        if (p.is_file() or p.is_symlink()) and not IGNORED_PARTS.intersection(p.relative_to(entry).parts)
    ]
    for file in files:
        origin = _utf8(str(file.relative_to(top)))
        if file.is_symlink():
            out.append(Received(sid, None, origin, problem=SYMLINK))
        elif file.suffix == ".zip":
            out += _from_zip(lambda file=file: zipfile.ZipFile(file), origin, sid, notebooks)
        elif file.suffix == ".ipynb":
            item = _from_file(file, origin, sid, notebooks)
            _stamp(item, _folder_timestamp(file.parent, entry))
            _own_time(item, file)
            out.append(item)
        elif file.name not in NBGRADER_FILES:
            out.append(Received(sid, None, origin, problem="not a notebook (.ipynb): ignored"))
    return out


def _from_file(file: Path, origin: str, sid: str, notebooks: list[str]) -> Received:
    lms = lms_name(_utf8(file.name))
    name, _ = match_notebook(lms.rest if lms else _utf8(file.name), notebooks)
    stat = file.stat()
    item = Received(sid, name, origin, size=stat.st_size)
    item.mtime = _file_time(stat.st_mtime, "file time", item)
    if name is None:
        item.problem = f"not a notebook of this step (expected one of: {', '.join(notebooks)})"
    elif stat.st_size > MAX_NOTEBOOK_BYTES:
        item.problem = (
            f"{stat.st_size / 2**20:.0f} MB is too large for a notebook (limit {MAX_NOTEBOOK_BYTES // 2**20} MB)"
        )
    else:

        def load(file=file):
            with open(file, "rb") as f:
                return f.read(MAX_NOTEBOOK_BYTES + 1)

        item.load = load
    return item


def _from_zip(
    opener,
    origin: str,
    sid: str,
    notebooks: list[str],
    only_members: set | None = None,
    lms_files: bool = False,
    depth: int = 0,
) -> list[Received]:
    """A student's notebooks in a zip (`opener()` opens it); `only_members`: only these members (one
    student's part of a class archive), whose names carry the LMS's prefix (`lms_files`)."""
    try:
        archive = opener()
    except Exception as err:  # noqa: BLE001
        return [Received(sid, None, origin, problem=f"not a readable zip file ({type(err).__name__}: {err})")]
    out = []
    with archive:
        members = [
            m for m in archive.infolist() if not m.is_dir() and (only_members is None or m.filename in only_members)
        ]
        if len(members) > MAX_ZIP_MEMBERS:
            return [
                Received(sid, None, origin, problem=f"the zip holds {len(members)} files; expected a few notebooks")
            ]
        stamps = {}  # folder inside the zip -> its timestamp.txt's text
        for member in members:
            if Path(member.filename).name == "timestamp.txt" and member.file_size <= MAX_TIMESTAMP_BYTES:
                try:
                    stamps[str(Path(member.filename).parent)] = archive.read(member).decode("utf-8", "replace")
                except Exception:  # noqa: BLE001
                    pass
        for member in members:
            try:
                out += _zip_member(archive, opener, member, origin, sid, notebooks, stamps, lms_files, depth)
            except Exception as err:  # noqa: BLE001
                out.append(
                    Received(
                        sid,
                        None,
                        f"{origin}:{member.filename}",
                        problem=f"could not be read ({type(err).__name__}: {err})",
                    )
                )
    return out


MAX_NESTED_ZIP_BYTES = 64 * 2**20  # a student's zip inside an LMS's class zip, read whole (compressed)


def _zip_member(archive, opener, member, origin, sid, notebooks, stamps, lms_files, depth) -> list[Received]:
    filename = _utf8_member(member)
    inner = f"{origin}:{filename}"
    parts = Path(filename).parts
    base = Path(filename).name
    if IGNORED_PARTS.intersection(parts):
        return []
    if filename.startswith("/") or ".." in parts:
        return [
            Received(
                sid,
                match_notebook(base, notebooks)[0],
                inner,
                problem="a path that leaves the zip (absolute or '..'): ignored",
            )
        ]
    if base.startswith(".") or any(p.startswith(".") for p in parts[:-1]):
        return [Received(sid, None, inner, problem="a hidden file (its name starts with '.'): ignored")]
    lms = lms_name(parts[0]) if lms_files else None
    own = lms.rest if lms and len(parts) == 1 else base
    if base.endswith(".zip") and depth == 0 and lms_files:  # a student's zip inside the class download
        if member.compress_size > MAX_NESTED_ZIP_BYTES:
            return [
                Received(sid, None, inner, problem=f"a zip of {member.compress_size / 2**20:.0f} MB: too large to read")
            ]
        import io

        def nested(opener=opener, key=member.filename):  # read again for each use: never held
            with opener() as outer:
                return zipfile.ZipFile(io.BytesIO(outer.read(key)))

        return _from_zip(nested, inner, sid, notebooks, depth=1)
    if not base.endswith(".ipynb"):
        if base not in NBGRADER_FILES:
            return [Received(sid, None, inner, problem="not a notebook (.ipynb): ignored")]
        return []
    name, _ = match_notebook(own, notebooks)
    item = Received(sid, name, inner, size=member.file_size)
    if name is None:
        item.problem = f"not a notebook of this step (expected one of: {', '.join(notebooks)})"
    elif member.file_size > MAX_NOTEBOOK_BYTES:
        item.problem = f"{member.file_size / 2**20:.0f} MB is too large for a notebook"
    else:
        item.time_source = "zip entry time"
        item.mtime = _file_time(zip_mtime(member), "zip entry time", item)
        _stamp(item, _zip_timestamp(stamps, Path(member.filename).parent))
        key = member.filename

        def load(opener=opener, key=key):
            with opener() as again, again.open(key) as f:
                return f.read(MAX_NOTEBOOK_BYTES + 1)

        item.load = load
    return [item]


def _utf8_member(member: zipfile.ZipInfo) -> str:
    """A member's name as text: zips without the UTF-8 flag are read as cp437 by Python; a name that
    is UTF-8 all the same (most zip tools write it so) is read as UTF-8."""
    if member.flag_bits & 0x800:
        return member.filename
    try:
        return member.filename.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return member.filename


def _zip_timestamp(stamps: dict[str, str], folder: Path) -> str | None:
    """The `timestamp.txt` nearest a zip member: in its folder or a parent folder of the zip."""
    for candidate in [folder, *folder.parents]:
        if str(candidate) in stamps:
            return stamps[str(candidate)]
    return None


def zip_mtime(member: zipfile.ZipInfo) -> float:
    """When a zip member was last modified, the same on every grading machine: the UTC time of its
    extended timestamp (extra field 0x5455, written by Info-ZIP and macOS) when it has one, else its
    date and time as UTC (a zip stores them without a time zone: reading them in the grader's own
    zone would make the newest of a student's copies depend on the machine)."""
    extra = member.extra
    while len(extra) >= 4:
        kind, size = struct.unpack("<HH", extra[:4])
        body = extra[4 : 4 + size]
        if kind == 0x5455 and len(body) >= 5 and body[0] & 1:
            return float(struct.unpack("<i", body[1:5])[0])
        extra = extra[4 + size :]
    return float(calendar.timegm(member.date_time + (0, 0, 0)))


def check_notebook(data: bytes) -> str | None:
    """None if `data` is a notebook we can grade, else what is wrong with it."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        return f"larger than {MAX_NOTEBOOK_BYTES // 2**20} MB"
    if not data.strip():
        return "the file is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"not UTF-8 text (byte {err.start}): save the notebook from JupyterLab again"
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as err:
        return f"not valid JSON ({err.msg}, line {err.lineno}): the file is damaged or truncated"
    except RecursionError:
        return f"not a notebook: its JSON is nested more than {MAX_DEPTH} levels deep"
    except ValueError as err:
        return f"not a notebook: the JSON could not be read ({err})"
    if _depth(nb) > MAX_DEPTH:
        return f"not a notebook: its JSON is nested more than {MAX_DEPTH} levels deep"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", None), list):
        if isinstance(nb, dict) and nb.get("nbformat") == 3:
            return "an old notebook (nbformat 3): open it in JupyterLab and save it again"
        return "JSON, but not a Jupyter notebook (no list of cells)"
    if nb.get("nbformat") != 4:
        return f"nbformat {nb.get('nbformat')!r} is not supported: open it in JupyterLab and save it again"
    return None


def _depth(value) -> int:
    """How deeply lists and dicts nest in `value` (iteratively: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            if deepest > MAX_DEPTH:
                break
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest
