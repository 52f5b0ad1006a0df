"""The typed records of a grading: a cell's result, a notebook's, a student's.

A `NotebookResult` is made in a grading worker (grade.run_job) or by the grader for a notebook it
could not grade (missing, unreadable, the grader failed on it), recorded once (store.Store.record) and read
back from its result file by every later command. `to_json` / `from_json` are the only conversions:
the result file keeps the shape it had (`RESULT_FIELDS`), a file of an older grader reads as one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol


class StepLike(Protocol):
    """What the records need of a step (steps.Step): its name, which grade ids are bonus questions, its
    notebooks and its release (the order of a notebook's grade cells)."""

    @property
    def name(self) -> str: ...

    @property
    def release(self) -> Path: ...

    def is_bonus(self, grade_id: str) -> bool: ...

    def notebooks(self) -> list[str]: ...


# Where a result came from, when no grading of the notebook made it. A result file keeps it in `key`,
# where a graded notebook's result keeps the hash of everything its grading depended on.
MISSING = "missing"  # not handed in, or handed in unreadable: zero, with the reason
FAILED = "failed"  # the grader itself failed on it: zero, with the reason; the next run retries it
IN_GRADEBOOK = "gradebook"  # graded by a shard that wrote to another grader home: the gradebook's rows only
NOT_GRADED = (MISSING, FAILED, IN_GRADEBOOK)


@dataclass
class CellResult:
    """One grade cell of one student's notebook."""

    grade_id: str
    score: float | None  # None: waits for a person (a written answer, or a hidden test to review)
    max_score: float
    error: str = ""  # why points were lost, in the student's terms (a review cell: why it waits)
    kind: str = "auto"  # "auto", "manual" (a written answer) or "review" (a hidden test a person scores)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CellResult":
        score = data.get("score")
        return cls(
            grade_id=str(data["grade_id"]),
            score=None if score is None else float(score),
            max_score=float(data.get("max_score") or 0.0),
            error=str(data.get("error") or ""),
            kind=str(data.get("kind") or "auto"),
        )


@dataclass
class Budget:
    """The student's time budget as one notebook met it (autograder/kernel/budget.py)."""

    allowance: float | None = None  # seconds it was left of it (None: no budget applied)
    used: float = 0.0  # seconds it counted
    ran_out: bool = False  # the budget ran out in this notebook

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class NotebookResult:
    """One student's notebook, graded (or why it could not be)."""

    student: str
    notebook: str
    key: str  # hash of what the grading depended on, or MISSING / FAILED / IN_GRADEBOOK
    cells: list[CellResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    seconds: float = 0.0
    kernel_starts: int = 0
    sandbox: str | None = None
    kernels: str | None = None  # "warm" or "cold": how its last kernel started
    cpu_seconds: float | None = None  # the CPU time its cells used, counted as its limits are
    metered: str | None = None
    stopped: list[dict[str, Any]] | None = None  # the cells a limit stopped
    kernel_peaks: list[dict[str, Any]] | None = None  # per kernel: its group's highest memory and process count
    worker_peak_bytes: int | None = None
    budget: Budget | None = None
    longest_wait: dict[str, Any] | None = None  # the cell that waited longest: {"cell", "seconds"}
    heaviest_cell: dict[str, Any] | None = None  # the cell that used most CPU: {"cell", "cpu_seconds"}
    largest_message_bytes: int | None = None
    notebook_json: str | None = None  # the graded notebook (from a worker, until it is recorded)
    # the grader's run of it before what runs after a hidden test was concealed (grading/judging.py
    # conceal_after_hidden_inputs): for the instructor alone, in its own file (Store.run_file)
    run_json: str | None = None

    @property
    def graded(self) -> bool:
        """A grading of the submitted notebook made this result (not a missing or failed notebook)."""
        return self.key not in NOT_GRADED

    @property
    def earned(self) -> float:
        return sum(c.score or 0.0 for c in self.cells)

    def to_json(self) -> dict[str, Any]:
        """The result file's shape (`notebook_json` and `run_json` are not in it: each has its own file)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("notebook_json", "run_json") or (f.name in OPTIONAL and not self.graded):
                continue
            if f.name == "cells":
                value = [c.to_json() for c in value]
            elif f.name == "budget" and value is not None:
                value = value.to_json()
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "NotebookResult":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known and k not in ("notebook_json", "run_json")}
        values["cells"] = [CellResult.from_json(c) for c in data.get("cells") or []]
        budget = data.get("budget")
        values["budget"] = (
            Budget(**{k: budget[k] for k in ("allowance", "used", "ran_out") if k in budget})
            if isinstance(budget, dict)
            else None
        )
        values["notes"] = [str(n) for n in data.get("notes") or []]
        values["events"] = [str(e) for e in data.get("events") or []]
        return cls(**values)


# Fields a result file has only when a grading made the result (a missing or failed notebook's has none).
OPTIONAL = (
    "sandbox",
    "kernels",
    "cpu_seconds",
    "metered",
    "stopped",
    "kernel_peaks",
    "worker_peak_bytes",
    "budget",
    "longest_wait",
    "heaviest_cell",
    "largest_message_bytes",
)


@dataclass
class StudentResult:
    """One student's results for a step, as every report, page and export reads them (store.load): their
    notebooks (a grader's scores in them), the term's record (submission time, due date, extension,
    lateness, penalties: term_records_in), their totals (totals.student_totals) and the recorded
    submission times (store.save_times: {time_source, notebooks: {notebook: seconds since the epoch}},
    {} when none were recorded)."""

    student: str
    notebooks: dict[str, NotebookResult] = field(default_factory=dict)
    term: dict[str, Any] = field(default_factory=dict)
    totals: dict[str, Any] = field(default_factory=dict)
    times: dict[str, Any] = field(default_factory=dict)
