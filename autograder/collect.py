"""Read submissions the way instructors receive them.

`collect(path, notebooks)` accepts a folder holding any mix of
  * one folder per student (`alice/01-on-paper.ipynb`, or nbgrader's `alice/<step>/…`),
  * one zip per student (`alice.zip`, notebooks anywhere inside),
  * loose notebooks whose names carry the student id (`alice_01-on-paper.ipynb`,
    `01-on-paper-alice.ipynb`, `alice - 01-on-paper (2).ipynb`: all three are `alice`), among them
    the files of an LMS's bulk download (Canvas: `smithjohn_LATE_12345_67890_01-on-paper.ipynb`,
    `canvas_name`: the student is `smithjohn`, and LATE marks the submission late).
A submission's time is the `timestamp.txt` that nbgrader's submit writes beside the notebooks (in a
student's folder or zip) when there is one, else the file's modification time (a zip entry's time);
`Received.time_source` says which.
A student's id is the name as written (`student_id`): letters of every script kept, in one Unicode
form (NFC), so a name typed on Linux and the same name from a Mac are one student. A name that
cannot be an id, or two names that would become one id (`Bob Smith` and `bob-smith`), are reported
as problems and their files are not graded under any name (`assign_ids`).
Nothing is extracted to disk or modified: every file is read into memory, size-capped,
and checked; a bad file becomes a `Received` with a `problem` naming the file and the fault.
"""
from __future__ import annotations

import calendar
import json
import os
import re
import struct
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path

MAX_NOTEBOOK_BYTES = 20 * 2**20       # a Step 4 notebook with all its pictures is well under 5 MB
MAX_ZIP_MEMBERS = 200
MAX_DEPTH = 64                        # a notebook's JSON is about 10 levels deep (widget states a few more)
IGNORED_PARTS = {".ipynb_checkpoints", "__MACOSX", ".git"}
NBGRADER_FILES = {"timestamp.txt", "submission_secret.txt"}   # what nbgrader's submit/collect put beside the notebooks
MAX_ID_CHARS = 64                     # nbgrader's gradebook holds ids of up to 128 characters
MAX_ID_BYTES = 128                    # the id is a folder name: well under a file system's 255 bytes
NO_ID = "(no id)"                     # the student of a file whose name gives no usable id: never an id itself


@dataclass
class Received:
    student: str
    notebook: str | None         # the step's notebook name, None when the file is not one of them
    origin: str                  # where it came from, for messages (relative to the submissions folder)
    data: bytes | None = None
    mtime: float = 0.0
    problem: str | None = None   # why this file cannot be graded
    time_source: str = "file time"   # where `mtime` came from: "timestamp.txt", "file time", "zip entry time"
    lms_late: bool = False       # an LMS's download marked it late (Canvas's `_LATE_` in the name)

    def __post_init__(self):     # a file name may hold terminal escapes: messages show them escaped
        self.origin = printable(self.origin)


SYMLINK = "a symbolic link, not a file: not read (hand in the notebook itself)"


class SubmissionError(RuntimeError):
    pass


class UnusableId(ValueError):
    """A name that cannot be a student id; the message says why."""


def student_id(raw: str) -> str:
    """The student id that a folder's, zip's or (without its notebook name) file's name stands for.

    Letters and digits of every script are kept, in Unicode's composed form (NFC); each run of
    other characters (spaces, punctuation, symbols) becomes one `-`; `-`, `_`, `.` and `@` at either
    end are dropped. `Zoë` stays `Zoë`, `李雷` stays `李雷`, `ü ñ` becomes `ü-ñ`, `Bob Smith` becomes
    `Bob-Smith`; an ASCII id is what it has always been. The id is then safe as a folder name, a
    gradebook key, a CSV field and a shell word (it never starts with `-`, `=`, `+` or `@`).
    Raises UnusableId for a name that holds control characters, a path separator or bytes that are
    not UTF-8, that is left with no letter or digit, or that is too long."""
    name = unicodedata.normalize("NFC", raw)
    if any(unicodedata.category(c) == "Cs" for c in name):
        raise UnusableId("it is not UTF-8 text (the name was written in another encoding)")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise UnusableId("it holds control characters")
    if "/" in name or "\\" in name:
        raise UnusableId("it holds a path separator ('/' or '\\')")
    kept = "".join(c if _id_char(c) else "\0" for c in name)
    sid = re.sub("\0+", "-", kept).strip("-_.@")
    if not sid:
        raise UnusableId("it holds no letter or digit")
    if len(sid) > MAX_ID_CHARS or len(sid.encode("utf-8")) > MAX_ID_BYTES:
        raise UnusableId(f"it is too long for an id ({len(sid)} characters; at most {MAX_ID_CHARS}, "
                         f"{MAX_ID_BYTES} bytes in UTF-8)")
    return sid


def _id_char(c: str) -> bool:
    """Letters (with their combining marks: Devanagari, Arabic, decomposed accents), decimal digits,
    and `_ . @ -`."""
    return c in "_.@-" or unicodedata.category(c)[0] in "LM" or unicodedata.category(c) == "Nd"


def id_key(sid: str) -> str:
    """Ids equal under this key cannot be told apart everywhere an id is used: `Alice` and `alice`
    are one folder on a case-insensitive file system (macOS, Windows shares), `ﬁ` looks like `fi`."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", sid).casefold())


def assign_ids(raws) -> dict[str, str | UnusableId]:
    """Each raw name of a class -> its student id, or UnusableId saying why it gets none.

    Raw names equal after Unicode normalisation (NFC) are one student. Different raw names that
    would become the same id (`Bob Smith`, `Bob-Smith`), or ids that differ only in case or
    compatibility form (`Alice`, `alice`), would merge two students: none of them gets an id."""
    out: dict[str, str | UnusableId] = {}
    groups: dict[str, dict[str, list[str]]] = {}       # key -> NFC name -> its raw names
    for raw in sorted(set(raws)):
        try:
            out[raw] = student_id(raw)
        except UnusableId as err:
            out[raw] = err
            continue
        groups.setdefault(id_key(out[raw]), {}).setdefault(unicodedata.normalize("NFC", raw), []).append(raw)
    for names in groups.values():
        if len(names) < 2:
            continue
        sids = {name: out[members[0]] for name, members in names.items()}
        for name, members in names.items():
            others = [n for n in sorted(names) if n != name]
            if len(set(sids.values())) == 1:
                why = f"it and {_listed(others)} would become the same id {sids[name]!r}"
            else:
                why = (f"its id {sids[name]!r} and the id{'s' * (len(others) > 1)} of {_listed(others)} "
                       f"({_listed([sids[n] for n in others])}) differ only in upper and lower case or in the "
                       "form of a letter (one folder on a case-insensitive file system; hard to tell apart)")
            for raw in members:
                out[raw] = UnusableId(f"{why}, and two students must never be merged")
    return out


def _listed(names) -> str:
    return ", ".join(repr(n) for n in names)


def id_problem(raw: str, err: UnusableId, what: str) -> str:
    return (f"no student id: the {what} name {raw!r} cannot be one because {err}; "
            "not graded: rename it (letters, digits, '.', '_', '-') and grade again")


def loose_raw_id(rest: str) -> str:
    """The student's part of a loose notebook's name, without the separators around the notebook
    name and the copy numbers browsers and file managers add (`alice - 01-on-paper (2)` -> `alice`)."""
    rest = re.sub(r"\(\d{1,4}\)", " ", rest)                     # "name (2).ipynb"
    rest = re.sub(r"(?i)[\s_-]+copy(?:\s+\d{1,4})?\s*$", " ", rest)  # "name copy 2", "name - Copy"
    return rest.strip(" \t_-.")


# Canvas's bulk download of an assignment's submissions: `<name>_[LATE_]<user id>_<file id>_<file name>`
# (the name in lower case, letters only; `LATE` when it came after Canvas's due date).
CANVAS_NAME = re.compile(r"^(?P<name>[^\W_]+)_(?:(?P<late>LATE)_)?(?P<user>\d+)_(?P<file>\d+)_(?P<rest>.+)$")


def canvas_name(filename: str) -> tuple[str, bool, str] | None:
    """(student's name, late flag, the file's own name) of a file named as Canvas's bulk download
    names them; None for any other name."""
    match = CANVAS_NAME.match(filename)
    if not match:
        return None
    return match["name"], bool(match["late"]), match["rest"]


def printable(text: str) -> str:
    r"""`text` with control and other unprintable characters escaped (`\x1b`, `\udceb`)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


def _utf8(name: str) -> str:
    """A file name as UTF-8, whatever the locale the grader runs in (the same id on every machine);
    bytes that are not UTF-8 stay as surrogates, which student_id rejects."""
    return os.fsencode(name).decode("utf-8", "surrogateescape")


def match_notebook(filename: str, notebooks: list[str]) -> tuple[str | None, str]:
    """(notebook, rest of the name) for a file name that carries one of the step's notebook names."""
    stem = filename[:-len(".ipynb")] if filename.endswith(".ipynb") else filename
    for name in sorted(notebooks, key=len, reverse=True):
        if name in stem:
            rest = stem.replace(name, " ", 1)
            return name, rest
    return None, stem


def collect(path: Path, notebooks: list[str], only=None) -> list[Received]:
    """Every file under `path`, read and checked. `only(student_id)` (optional) picks the students
    to read: the files of the others are not opened (a shard of a large class reads only its own).
    Files whose name gives no usable id (student NO_ID) are reported whatever `only` picks."""
    path = Path(path)
    if only is not None:
        return [item for item in _collect(path, notebooks, only) if item.student == NO_ID or only(item.student)]
    return _collect(path, notebooks, lambda sid: True)


def _collect(path: Path, notebooks: list[str], wanted) -> list[Received]:
    if not path.exists():
        raise SubmissionError(f"{path}: no such folder. Give SUBMISSIONS=<folder of submissions>.")
    if path.is_file():
        if path.suffix == ".zip":
            raw = _utf8(path.stem)
            sid = assign_ids([raw])[raw]
            if isinstance(sid, UnusableId):
                return [Received(NO_ID, None, path.name, problem=id_problem(raw, sid, "zip's"))]
            return _from_zip(path, path.name, sid, notebooks)
        raise SubmissionError(f"{path} is a file: give the folder that holds the submissions")
    # every name first: ids are given to the whole class at once, so that no two names merge
    entries = []            # (entry, kind, raw name of the student or None, notebook of a loose file)
    for entry in sorted(path.iterdir()):
        if entry.name in IGNORED_PARTS or entry.name.startswith("."):
            continue
        if entry.is_symlink():
            entries.append((entry, "link", _utf8(entry.name), None))
        elif entry.is_dir():
            entries.append((entry, "folder", _utf8(entry.name), None))
        elif entry.suffix == ".zip":
            entries.append((entry, "zip", _utf8(entry.stem), None))
        elif entry.suffix == ".ipynb":
            canvas = canvas_name(_utf8(entry.name))
            name, rest = match_notebook(canvas[2] if canvas else _utf8(entry.name), notebooks)
            entries.append((entry, "file", canvas[0] if canvas else loose_raw_id(rest), name))
        else:
            entries.append((entry, "other", None, None))
    ids = assign_ids(raw for _, kind, raw, _ in entries if raw)
    received: list[Received] = []
    for entry, kind, raw, name in entries:
        sid = ids.get(raw) if raw else None
        if kind == "other":
            received.append(Received(NO_ID, None, entry.name, problem="not a notebook, a zip or a folder: ignored"))
        elif kind == "file" and not raw:
            received.append(Received(NO_ID, name, entry.name,
                                     problem="the file name carries no student id (name it <student>_<notebook>.ipynb)"))
        elif isinstance(sid, UnusableId):
            what = {"link": "link's", "folder": "folder's", "zip": "zip's", "file": "file's student"}[kind]
            received.append(Received(NO_ID, name, entry.name, problem=id_problem(raw, sid, what)))
        elif not wanted(sid):
            continue
        elif kind == "link":        # could point at another student's work, or anywhere
            received.append(Received(sid, None, entry.name, problem=SYMLINK))
        elif kind == "folder":
            files = [p for p in sorted(entry.rglob("*")) if (p.is_file() or p.is_symlink())
                     and not IGNORED_PARTS.intersection(p.relative_to(entry).parts)]
            for file in files:
                origin = str(file.relative_to(path))
                if file.is_symlink():
                    received.append(Received(sid, None, origin, problem=SYMLINK))
                elif file.suffix == ".zip":
                    received += _from_zip(file, origin, sid, notebooks)
                elif file.suffix == ".ipynb":
                    item = _from_file(file, origin, sid, notebooks)
                    _stamp(item, _folder_timestamp(file.parent, entry))
                    received.append(item)
                elif file.name not in NBGRADER_FILES:
                    received.append(Received(sid, None, origin, problem="not a notebook (.ipynb): ignored"))
        elif kind == "zip":
            received += _from_zip(entry, entry.name, sid, notebooks)
        else:
            item = _from_file(entry, entry.name, sid, notebooks)
            item.lms_late = bool((canvas_name(_utf8(entry.name)) or ("", False))[1])
            received.append(item)
    return received


MAX_TIMESTAMP_BYTES = 256


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
    """Use a `timestamp.txt`'s time for a readable notebook, when it holds one."""
    from .term import parse_timestamp
    when = parse_timestamp(text) if text is not None else None
    if when is not None and item.problem is None:
        item.mtime, item.time_source = when, "timestamp.txt"


def pick_newest(received: list[Received]) -> tuple[dict[tuple[str, str], Received], list[dict]]:
    """The copy of each (student, notebook) to grade: the newest readable one (on equal times, the
    last by origin: the same choice in every run); and every other file as a problem."""
    copies: dict[tuple[str, str], list[Received]] = {}
    problems: list[dict] = []
    for item in received:
        if item.problem or item.notebook is None:
            problems.append({"student": item.student, "notebook": item.notebook, "file": item.origin,
                             "problem": item.problem})
        else:
            copies.setdefault((item.student, item.notebook), []).append(item)
    chosen: dict[tuple[str, str], Received] = {}
    for key, items in copies.items():
        chosen[key] = newest = max(items, key=lambda r: (r.mtime, r.origin))
        for item in sorted(items, key=lambda r: r.origin):
            if item is not newest:
                problems.append({"student": item.student, "notebook": item.notebook, "file": item.origin,
                                 "problem": f"another copy ({newest.origin}) is newer and was graded instead"})
    return chosen, problems


def _from_file(file: Path, origin: str, sid: str, notebooks: list[str]) -> Received:
    name, _ = match_notebook(file.name, notebooks)
    size = file.stat().st_size
    item = Received(sid, name, origin, mtime=file.stat().st_mtime)
    if name is None:
        item.problem = f"not a notebook of this step (expected one of: {', '.join(notebooks)})"
    elif size > MAX_NOTEBOOK_BYTES:
        item.problem = f"{size / 2**20:.0f} MB is too large for a notebook (limit {MAX_NOTEBOOK_BYTES // 2**20} MB)"
    else:
        with open(file, "rb") as f:
            item.data = f.read(MAX_NOTEBOOK_BYTES + 1)
        item.problem = check_notebook(item.data)
    return item


def _from_zip(file: Path, origin: str, sid: str, notebooks: list[str]) -> list[Received]:
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError) as err:
        return [Received(sid, None, origin, problem=f"not a readable zip file ({err})")]
    out = []
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_ZIP_MEMBERS:
            return [Received(sid, None, origin, problem=f"the zip holds {len(members)} files; expected a few notebooks")]
        stamps = {}             # folder inside the zip -> its timestamp.txt's text
        for member in members:
            if Path(member.filename).name == "timestamp.txt" and member.file_size <= MAX_TIMESTAMP_BYTES:
                try:
                    stamps[str(Path(member.filename).parent)] = archive.read(member).decode("utf-8", "replace")
                except (zipfile.BadZipFile, OSError, RuntimeError, EOFError):
                    pass
        for member in members:
            inner = f"{origin}:{member.filename}"
            parts = Path(member.filename).parts
            if IGNORED_PARTS.intersection(parts) or Path(member.filename).name.startswith("."):
                continue
            if member.filename.startswith("/") or ".." in parts:
                out.append(Received(sid, match_notebook(Path(member.filename).name, notebooks)[0], inner,
                                    problem="a path that leaves the zip (absolute or '..'): ignored"))
                continue
            if not member.filename.endswith(".ipynb"):
                if Path(member.filename).name not in NBGRADER_FILES:
                    out.append(Received(sid, None, inner, problem="not a notebook (.ipynb): ignored"))
                continue
            name, _ = match_notebook(Path(member.filename).name, notebooks)
            item = Received(sid, name, inner)
            if name is None:
                item.problem = f"not a notebook of this step (expected one of: {', '.join(notebooks)})"
            elif member.file_size > MAX_NOTEBOOK_BYTES:
                item.problem = f"{member.file_size / 2**20:.0f} MB is too large for a notebook"
            else:
                try:
                    with archive.open(member) as f:
                        item.data = f.read(MAX_NOTEBOOK_BYTES + 1)
                except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as err:
                    item.problem = f"could not be read from the zip ({err})"
                else:
                    item.problem = check_notebook(item.data)
                    item.mtime, item.time_source = zip_mtime(member), "zip entry time"
                    _stamp(item, _zip_timestamp(stamps, Path(member.filename).parent))
            out.append(item)
    return out


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
        body = extra[4:4 + size]
        if kind == 0x5455 and len(body) >= 5 and body[0] & 1:
            return float(struct.unpack("<i", body[1:5])[0])
        extra = extra[4 + size:]
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
