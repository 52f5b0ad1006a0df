"""Read submissions the way instructors receive them.

`collect(path, notebooks)` accepts a folder holding any mix of
  * one folder per student (`alice/01-on-paper.ipynb`, or nbgrader's `alice/step-04/…`),
  * one zip per student (`alice.zip`, notebooks anywhere inside),
  * loose notebooks whose names carry the student id (`alice_01-on-paper.ipynb`,
    `01-on-paper-alice.ipynb`, `alice - 01-on-paper (2).ipynb`).
Nothing is extracted to disk or modified: every file is read into memory, size-capped,
and checked; a bad file becomes a `Received` with a `problem` naming the file and the fault.
"""
from __future__ import annotations

import json
import re
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

MAX_NOTEBOOK_BYTES = 20 * 2**20       # a Step 4 notebook with all its pictures is well under 5 MB
MAX_ZIP_MEMBERS = 200
MAX_DEPTH = 64                        # a notebook's JSON is about 10 levels deep (widget states a few more)
IGNORED_PARTS = {".ipynb_checkpoints", "__MACOSX", ".git"}
NBGRADER_FILES = {"timestamp.txt", "submission_secret.txt"}   # what nbgrader's submit/collect put beside the notebooks


@dataclass
class Received:
    student: str
    notebook: str | None         # the step's notebook name, None when the file is not one of them
    origin: str                  # where it came from, for messages (relative to the submissions folder)
    data: bytes | None = None
    mtime: float = 0.0
    problem: str | None = None   # why this file cannot be graded


SYMLINK = "a symbolic link, not a file: not read (hand in the notebook itself)"


class SubmissionError(RuntimeError):
    pass


def student_id(raw: str) -> str:
    sid = re.sub(r"[^A-Za-z0-9_.@-]+", "-", raw).strip("-._")
    return sid[:64]


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
    to read: the files of the others are not opened (a shard of a large class reads only its own)."""
    path = Path(path)
    if only is not None:
        return [item for item in _collect(path, notebooks, only) if only(item.student)]
    return _collect(path, notebooks, lambda sid: True)


def _collect(path: Path, notebooks: list[str], wanted) -> list[Received]:
    if not path.exists():
        raise SubmissionError(f"{path}: no such folder. Give SUBMISSIONS=<folder of submissions>.")
    if path.is_file():
        if path.suffix == ".zip":
            return _from_zip(path, path.name, student_id(path.stem), notebooks)
        raise SubmissionError(f"{path} is a file: give the folder that holds the submissions")
    received: list[Received] = []
    for entry in sorted(path.iterdir()):
        if entry.name in IGNORED_PARTS or entry.name.startswith("."):
            continue
        if entry.is_symlink():      # could point at another student's work, or anywhere
            received.append(Received(student_id(entry.name) or "unknown", None, entry.name, problem=SYMLINK))
            continue
        if entry.is_dir():
            sid = student_id(entry.name)
            if not wanted(sid):
                continue
            files = [p for p in sorted(entry.rglob("*")) if (p.is_file() or p.is_symlink())
                     and not IGNORED_PARTS.intersection(p.relative_to(entry).parts)]
            for file in files:
                origin = str(file.relative_to(path))
                if file.is_symlink():
                    received.append(Received(sid, None, origin, problem=SYMLINK))
                elif file.suffix == ".zip":
                    received += _from_zip(file, origin, sid, notebooks)
                elif file.suffix == ".ipynb":
                    received.append(_from_file(file, origin, sid, notebooks))
                elif file.name not in NBGRADER_FILES:
                    received.append(Received(sid, None, origin, problem="not a notebook (.ipynb): ignored"))
        elif entry.suffix == ".zip":
            if wanted(student_id(entry.stem)):
                received += _from_zip(entry, entry.name, student_id(entry.stem), notebooks)
        elif entry.suffix == ".ipynb":
            name, rest = match_notebook(entry.name, notebooks)
            sid = student_id(rest)
            if sid and not wanted(sid):
                continue
            if not sid:
                received.append(Received("unknown", name, entry.name,
                                         problem="the file name carries no student id (name it <student>_<notebook>.ipynb)"))
            else:
                received.append(_from_file(entry, entry.name, sid, notebooks))
        else:
            received.append(Received("unknown", None, entry.name, problem="not a notebook, a zip or a folder: ignored"))
    return received


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
                    item.mtime = time.mktime(member.date_time + (0, 0, -1))
            out.append(item)
    return out


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
