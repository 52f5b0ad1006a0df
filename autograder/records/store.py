"""The store: the grader home's results, and the one way to read them.

Everything a grading writes about a notebook goes through `Store.record` (or `record_unreadable`):
the graded notebook in autograded/, its time stamp, its scores in the gradebook (gradebook.write_scores:
written once, as the worker judged them) and last its result file work/results/<step>/<student>/<notebook>.json
(its presence means: done). Every write is atomic (a file is whole or absent).

Every reader (the reports and grades.json, the feedback pages and `make my-feedback`, the LMS exports,
the check for stale feedback) reads `Store.load(step)`: one StudentResult per student, with the
scores graders gave in the formgrader, the term's record and the totals computed by one function
(totals.student_totals). So the table, the feedback, the export and the LMS's CSV show one total.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..course import db_url, grader_home
from ..kernel.limits import clip
from . import gradebook
from .model import IN_GRADEBOOK, CellResult, NotebookResult, StepLike, StudentResult
from .totals import student_totals

STAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's timestamp.txt


def atomic_write(path: Path, data: str | bytes) -> None:
    """`path` holds `data` whole, or what it held before (a temporary file beside it, renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass
class Store:
    home: Path
    url: str

    @classmethod
    def current(cls) -> "Store":
        """The grader home and gradebook of this process's environment ($GRADER_HOME, $NBGRADER_DB_URL)."""
        return cls(grader_home(), db_url())

    # -- where things are ------------------------------------------------------------------------------
    def result_file(self, step_name: str, student: str, notebook: str) -> Path:
        return self.home / "work" / "results" / step_name / student / f"{notebook}.json"

    def run_file(self, step_name: str, student: str, notebook: str) -> Path:
        """The grader's run of a notebook as it was, before what ran after a hidden test was concealed
        (grading/judging.py conceal_after_hidden_inputs): for the instructor alone, never published: a
        student's code may have printed a hidden test's inputs into it."""
        return self.home / "work" / "runs" / step_name / student / f"{notebook}.ipynb"

    def autograded(self, student: str, step_name: str) -> Path:
        return self.home / "autograded" / student / step_name

    def submitted(self, student: str, step_name: str) -> Path:
        return self.home / "submitted" / student / step_name

    def feedback(self, student: str, step_name: str) -> Path:
        return self.home / "feedback" / student / step_name

    def times_file(self, step_name: str, student: str) -> Path:
        return self.home / "work" / "times" / step_name / f"{student}.json"

    def grades(self, step_name: str) -> tuple[Path, Path]:
        """(csv, json) of a step's grades: grades/<step>.csv and .json."""
        return self.home / "grades" / f"{step_name}.csv", self.home / "grades" / f"{step_name}.json"

    # -- writing ---------------------------------------------------------------------------------------
    def record(self, step_name: str, result: NotebookResult, mtime: float) -> None:
        """One graded notebook: its autograded copy and time stamp, its scores in the gradebook, then
        its result file."""
        import nbformat

        stamp = datetime.fromtimestamp(mtime or datetime.now(timezone.utc).timestamp(), tz=timezone.utc)
        folder = self.autograded(result.student, step_name)
        notebook_json = result.notebook_json or ""
        atomic_write(folder / f"{result.notebook}.ipynb", notebook_json)
        atomic_write(folder / "timestamp.txt", stamp.strftime(STAMP_FORMAT))
        if result.run_json:
            atomic_write(self.run_file(step_name, result.student, result.notebook), result.run_json)
        graded = nbformat.reads(notebook_json, as_version=4)  # type: ignore[no-untyped-call]
        gradebook.write_scores(self.url, step_name, result, graded, stamp)
        atomic_write(
            self.result_file(step_name, result.student, result.notebook), json.dumps(result.to_json(), indent=1)
        )

    def record_unreadable(
        self, step_name: str, student: str, notebook: str, reason: str, key: str, gb: Any = None
    ) -> NotebookResult:
        """A notebook missing, unreadable, or one the grader failed on: zero on every grade cell, with
        the reason (in the open gradebook `gb`, else in one opened for it)."""
        if gb is None:
            with gradebook.opened(self.url) as gb:
                return self.record_unreadable(step_name, student, notebook, reason, key, gb)
        reason = clip(reason)
        self.run_file(step_name, student, notebook).unlink(missing_ok=True)  # a run of what was handed in before
        cells = gradebook.zero_scores(gb, step_name, student, notebook, reason)
        result = NotebookResult(student=student, notebook=notebook, key=key, cells=cells, notes=[reason])
        atomic_write(self.result_file(step_name, student, notebook), json.dumps(result.to_json(), indent=1))
        return result

    def stamp_submissions(self, step_name: str, submitted_at: dict[str, float]) -> None:
        """Each student's submission time, the same in autograded/ and in the gradebook (nbgrader's
        formgrader shows a submission whose stamps differ as "needs autograding")."""
        stamps = {sid: datetime.fromtimestamp(t, tz=timezone.utc) for sid, t in submitted_at.items()}
        for sid, stamp in sorted(stamps.items()):
            if self.autograded(sid, step_name).is_dir():
                atomic_write(self.autograded(sid, step_name) / "timestamp.txt", stamp.strftime(STAMP_FORMAT))
        gradebook.set_submission_times(self.url, step_name, stamps)

    def save_times(
        self, step_name: str, sources: dict[str, str], notebooks: dict[str, dict[str, float]] | None = None
    ) -> None:
        """Where each student's submission time came from, and each notebook's own time (term.py's
        notebook_times), for the reports and the late penalties: one file per student and step (shards
        write their own students' only)."""
        for sid, source in sources.items():
            record = {"time_source": source, "notebooks": (notebooks or {}).get(sid, {})}
            atomic_write(self.times_file(step_name, sid), json.dumps(record))

    def apply_term(self, step_name: str, students: list[str] | None = None) -> None:
        """Due date, extensions and late penalties in the gradebook (gradebook.apply_term), each notebook
        late by its own recorded time."""
        gradebook.apply_term(self.url, step_name, students, self.notebook_times(step_name, students))

    # -- reading ---------------------------------------------------------------------------------------
    def times(self, step_name: str, student: str) -> dict[str, Any]:
        """A student's recorded submission times: {time_source, notebooks: {notebook: time}} ({}: none)."""
        try:
            record = json.loads(self.times_file(step_name, student).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def recorded_times(self, step_name: str, students: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """student -> their recorded submission times (`times`), of `students` only when given."""
        folder = self.home / "work" / "times" / step_name
        chosen = sorted(students) if students is not None else sorted(p.stem for p in folder.glob("*.json"))
        return {sid: self.times(step_name, sid) for sid in chosen}

    def notebook_times(
        self, step_name: str, students: list[str] | None = None, recorded: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, dict[str, float]]:
        """student -> notebook -> its own recorded time (of `students` only, when given; `recorded`: the
        records recorded_times read already)."""
        recorded = self.recorded_times(step_name, students) if recorded is None else recorded
        out = {}
        for sid, record in recorded.items():
            own = record.get("notebooks")
            out[sid] = (
                {k: float(v) for k, v in own.items() if isinstance(v, (int, float))} if isinstance(own, dict) else {}
            )
        return out

    def result(self, step_name: str, student: str, notebook: str) -> NotebookResult | None:
        """A notebook's recorded result, as graded (None: not recorded, or a file that cannot be read)."""
        try:
            return NotebookResult.from_json(json.loads(self.result_file(step_name, student, notebook).read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def results(self, step_name: str, students: list[str] | None = None) -> list[NotebookResult]:
        """Every recorded result of the step (of `students` only, when given), as graded."""
        folder = self.home / "work" / "results" / step_name
        chosen = None if students is None else set(students)
        out = []
        for path in sorted(folder.glob("*/*.json")):
            if chosen is not None and path.parent.name not in chosen:
                continue
            found = self.result(step_name, path.parent.name, path.stem)
            if found is not None:
                out.append(found)
        return out

    def load(self, step: StepLike, students: list[str] | None = None, gb: Any = None) -> list[StudentResult]:
        """Every student of the step (of `students` only, when given), by id: their results with the
        scores graders gave since (the formgrader, `make written-scores`), the notebooks graded by a
        shard that wrote to another grader home (the gradebook's scores, without the reasons), the
        term's record, the totals and the recorded submission times. `gb`: an open gradebook to read (else
        the store opens its own)."""
        results = self.results(step.name, students)
        recorded = self.recorded_times(step.name, students)
        with nullcontext(gb) if gb is not None else gradebook.opened(self.url) as db:
            rows = gradebook.submitted(db, step.name, students)
            terms = gradebook.term_records_in(
                db, step.name, students, self.notebook_times(step.name, students, recorded)
            )
        by_key = {(r.student, r.notebook): r for r in results}
        order: dict[str, list[str]] | None = None
        for row in rows:
            found = by_key.get((row.student, row.notebook))
            if found is None:
                if order is None:  # the release's order of the cells (read only when needed)
                    order = {nb: list(cells) for nb, cells in gradebook.release_grade_cells(step).items()}
                found = by_key[(row.student, row.notebook)] = _from_gradebook(row, order.get(row.notebook, []))
                results.append(found)
            else:
                _with_graders_scores(found, row)
        out: dict[str, StudentResult] = {}
        for result in sorted(results, key=lambda r: (r.student, r.notebook)):
            entry = out.setdefault(result.student, StudentResult(result.student, term=terms.get(result.student, {})))
            entry.notebooks[result.notebook] = result
        for entry in out.values():
            entry.times = recorded.get(entry.student, {})
            entry.totals = student_totals(
                list(entry.notebooks.values()), step.is_bonus, entry.term.get("penalties", {})
            )
        return [out[sid] for sid in sorted(out)]


def totals_by_student(students: list[StudentResult]) -> dict[str, dict[str, Any]]:
    """student -> their totals (totals.student_totals), for the readers that want only the numbers."""
    return {s.student: s.totals for s in students}


def _with_graders_scores(result: NotebookResult, row: gradebook.SubmittedRow) -> None:
    """A recorded result with the scores graders gave in the gradebook since."""
    grades = {g.grade_id: g for g in row.grades}
    for cell in result.cells:
        grade = grades.get(cell.grade_id)
        if grade is None:
            continue
        if grade.manual_score is not None:
            cell.score = grade.manual_score
            cell.error = "" if grade.manual_score >= cell.max_score else cell.error
            if cell.kind == "review" and grade.manual_score < cell.max_score:
                why = cell.error.removeprefix("waits for review: ")
                cell.error = "scored by a grader after review" + (f" ({why})" if why else "")
        elif cell.kind in ("manual", "review"):
            cell.score = grade.auto_score


def _from_gradebook(row: gradebook.SubmittedRow, order: list[str]) -> NotebookResult:
    """A notebook with no result file here (graded by a shard that wrote to another grader home): the
    gradebook's scores, without the reasons."""

    def place(grade: gradebook.GradeRow) -> tuple[int, str]:
        return (order.index(grade.grade_id) if grade.grade_id in order else len(order), grade.grade_id)

    cells = []
    for g in sorted(row.grades, key=place):
        waiting = g.kind == "review" and g.manual_score is None
        cells.append(
            CellResult(
                grade_id=g.grade_id,
                max_score=g.max_score,
                score=None if waiting or (g.needs_manual_grade and g.manual_score is None) else g.score,
                error="waits for review" if waiting else "",
                kind=g.kind,
            )
        )
    return NotebookResult(student=row.student, notebook=row.notebook, key=IN_GRADEBOOK, cells=cells)
