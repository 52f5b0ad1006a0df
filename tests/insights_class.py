"""A synthetic class for the class report (autograder/publish/insights.py), whose every count is known.

Each student is given one or two entries of the proof corpus (tests/proof_corpus.py): a wrong entry's
grade cells get exactly the points the corpus expects of them (`expect`) and a reason built as a check's
verdict writes one (checks/framework.py failure_text: parts that share a message listed by name, the
last with the message), its message made of the words the corpus says that cell's feedback contains
(`says`); an undecided entry's cell waits for review with its reason; every other cell keeps full marks.
Written answers are graded, except a known few left to grade; a known few students are late, a known few
have an extension. The records are written into a grader home as the store writes them (result files,
submission times, a gradebook with the submissions, their due date and extensions): no kernel runs, the
judging's outcomes are the corpus's known ones, and `Store.load` reads them back as it reads a graded class.

`expected(...)` is what the report must find: per (notebook, grade id, message) the students concerned,
the cells waiting for review, the written answers left, the late and extended students.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.records import gradebook
from autograder.records.model import CellResult, NotebookResult
from autograder.records.store import Store, atomic_write

DUE = datetime(2026, 12, 14, 23, 59, tzinfo=timezone.utc)
LATE_BY = timedelta(days=2)
EXTENSION = timedelta(days=3)
# a reason a student's own text could put into a check's message (an exception's text, a name): the page
# must show it as text
HOSTILE = "<script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">"


def release_cells(release: Path) -> dict[str, list[tuple[str, float, str]]]:
    """notebook -> [(grade id, points, kind)] in the release's order (kind: auto or manual)."""
    out = {}
    for path in sorted(release.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        out[path.stem] = [(m["grade_id"], float(m.get("points", 0)),
                           "manual" if m.get("solution") else "auto")
                          for m in (c.get("metadata", {}).get("nbgrader", {}) for c in cells) if m.get("grade")]
    return out


def message(words: list[str]) -> str:
    """The message a judge writes for a cell the corpus says contains `words`."""
    return f"{words[0]}" + "".join(f" ({w})" for w in words[1:])


@dataclass
class Known:
    groups: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)   # (nb, gid, message) -> ids
    review: dict[tuple[str, str], set[str]] = field(default_factory=dict)        # (nb, gid) -> ids
    review_reasons: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (nb, gid, id) -> reason
    to_grade: dict[str, int] = field(default_factory=dict)                       # nb -> written answers left
    late: set[str] = field(default_factory=set)
    extended: set[str] = field(default_factory=set)
    students: list[str] = field(default_factory=list)


def plan(n_students: int, wrong: list, undecided: list, correct: list, hostile: bool = True):
    """student -> the corpus entries they are given, in a fixed pattern."""
    out: dict[str, list] = {}
    for k in range(n_students):
        sid = f"s{k:03d}"
        if k % 25 == 24 and correct:
            out[sid] = [correct[k % len(correct)]]
            continue
        if k % 40 == 7 and undecided:
            out[sid] = [undecided[k % len(undecided)]]
            continue
        mine = [wrong[k % len(wrong)]]
        other = wrong[(k * 7 + 3) % len(wrong)]
        if k % 5 == 0 and other.notebook != mine[0].notebook:
            mine.append(other)
        out[sid] = mine
    if hostile:
        out["s-hostile"] = ["hostile"]
    return out


def build_class(home: Path, release: Path, step_name: str, n_students: int, wrong: list, undecided: list,
                correct: list, with_gradebook: bool = True) -> Known:
    """The synthetic class's records in the grader home `home` (its gradebook: home/gradebook.db); returns
    what the report must find."""
    cells = release_cells(release)
    store = Store(home, f"sqlite:///{home / 'gradebook.db'}")
    known = Known()
    assigned = plan(n_students, wrong, undecided, correct)
    known.students = sorted(assigned)
    stamps: dict[str, datetime] = {}
    for k, (sid, entries) in enumerate(sorted(assigned.items())):
        by_nb: dict[str, dict[str, CellResult]] = {}
        for entry in entries:
            if entry == "hostile":
                nb = next(iter(cells))
                gid = next(g for g, p, kind in cells[nb] if kind == "auto" and p > 0)
                text = message([HOSTILE, "a name the student chose"])
                by_nb.setdefault(nb, {})[gid] = CellResult(gid, 0.0, dict((g, p) for g, p, _ in cells[nb])[gid],
                                                            f"the first case: {text}")
                known.groups.setdefault((nb, gid, text), set()).add(sid)
                continue
            points = {g: p for g, p, _ in cells[entry.notebook]}
            for gid, expect in entry.expect.items():
                if expect == "review":
                    why = message(entry.says[gid])
                    cell = CellResult(gid, None, points[gid], f"waits for review: process: {why}", "review")
                    known.review.setdefault((entry.notebook, gid), set()).add(sid)
                    known.review_reasons[(entry.notebook, gid, sid)] = why
                else:
                    text = message(entry.says[gid])
                    # two parts failing alike (the first by its name only), numbers in the names varying
                    error = f"the case n = {1000 + k}; the case with T = {k % 9 + 1}: {text}"
                    if k % 3 == 0:
                        error += f" (and {k % 4 + 1} more like it)"
                    cell = CellResult(gid, float(expect), points[gid], error if expect < points[gid] else "")
                    if expect < points[gid]:
                        known.groups.setdefault((entry.notebook, gid, text), set()).add(sid)
                by_nb.setdefault(entry.notebook, {})[gid] = cell
        for nb, graded in cells.items():
            result = NotebookResult(student=sid, notebook=nb, key=f"synthetic-{sid}-{nb}")
            for n, (gid, points, kind) in enumerate(graded):
                if gid in by_nb.get(nb, {}):
                    result.cells.append(by_nb[nb][gid])
                elif kind == "manual" and k % 10 == 1 and n == next(i for i, c in enumerate(graded) if c[2] == "manual"):
                    result.cells.append(CellResult(gid, None, points, "", "manual"))      # left to grade
                    known.to_grade[nb] = known.to_grade.get(nb, 0) + 1
                else:
                    result.cells.append(CellResult(gid, points, points, "", kind))
            atomic_write(store.result_file(step_name, sid, nb), json.dumps(result.to_json()))
        late, extended = k % 7 == 3, k % 11 == 5
        stamp = DUE + LATE_BY if late else DUE - timedelta(hours=1 + k % 24)
        stamps[sid] = stamp
        if late and not extended:
            known.late.add(sid)
        if extended:
            known.extended.add(sid)
        store.save_times(step_name, {sid: "synthetic"}, {sid: {nb: stamp.timestamp() for nb in cells}})
    with gradebook.opened(store.url) as gb:
        gb.update_or_create_assignment(step_name, duedate=DUE.replace(tzinfo=None))
        if with_gradebook:
            for sid, stamp in sorted(stamps.items()):
                gradebook.create_submission(gb, step_name, sid, timestamp=stamp.replace(tzinfo=None),
                                            extension=EXTENSION if sid in known.extended else None)
    return known
