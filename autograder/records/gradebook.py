"""nbgrader's gradebook: the only module of the grader that opens it (tests/test_architecture.py).

What goes in: the step's notebooks and cells (below), each graded notebook's scores (`write_scores`:
the score the grading worker judged, written once, never re-derived from the notebook's outputs), the
hidden tests a check could not decide (flagged for a person), zeros for a notebook missing or unreadable,
submission times, due dates, extensions and late penalties (`apply_term`), the written answers' scores
a grader imports from a CSV (`write_written_scores`). What comes out: every submitted notebook's grades
(`submitted`: the manual scores a grader gave in the formgrader, the review flags, the penalties), the
term's record per student (`term_records_in`) and the written answers (`written_rows`), which the
store (store.py) turns into the one record of results every report, page and export reads.

Before a class is graded the gradebook must hold the step's notebooks and their cells with the
release's points: grade cells, solution cells, task cells and the source cells nbgrader checks
submissions against. `nbgrader generate_assignment` records them as a side effect of writing a
release (the `SaveCells` step of its preprocessors). `fill_gradebook` runs the same preprocessors,
configured by nbgrader_config.py, up to and including `SaveCells`, on the step's source notebooks
in this process, and writes no release: the same rows without a second Python process, its imports
and a release written to a scratch folder (tests/test_gradebook_fill.py compares the two
gradebooks row by row). The hidden tests' points are stamped from the release (what the students
were given) rather than from the checks: a process that records grades does not import the checks
and what they import.

A new SQLite gradebook may start as a copy of the step's gradebook as it was first filled: with
$GRADEBOOK_TEMPLATES naming a folder (the test suite sets it: it grades into about seventy new grader
homes), a fill of a new gradebook is kept there under `template_key` (the step's fingerprint: its
notebooks, checks and the engine's grading code; nbgrader's version, configuration and schema revision;
the course's id and header; this module), and the next new gradebook with that key is copied from it and
checked as any gradebook is (a template that is not one is filled anew and replaced). Without the
variable, as `make grade` runs, every new gradebook is filled.

nbgrader creates a new gradebook's tables and stamps them with its schema's alembic revision, which
it asks for by running `alembic heads` in a subprocess; `alembic_head` reads the same revision from
nbgrader's migration scripts in process.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..course import COURSE_ID, ENGINE_ROOT, db_url, shared_folder_group, sqlite_path
from ..errors import SetupError
from .model import CellResult, NotebookResult, StepLike

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

    from ..steps import Step


class GradebookInUse(SetupError, RuntimeError):
    """The gradebook holds submissions of another set of the step's notebooks."""


@functools.lru_cache(maxsize=None)
def alembic_head() -> str:
    """The alembic revision nbgrader stamps a new gradebook with (what `alembic heads` prints)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    head = ScriptDirectory.from_config(config).get_current_head()
    return str(head)


def use_in_process_alembic_version() -> None:
    """nbgrader's Gradebook asks `alembic heads` (a subprocess) for the revision of a new
    gradebook: answer from the migration scripts instead."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


@functools.lru_cache(maxsize=None)
def _config(root: str) -> Any:
    """nbgrader's configuration of the course at `root` (nbgrader_config.py, read as nbgrader reads it)."""
    import os
    from traitlets.config.loader import PyFileConfigLoader

    environ = dict(os.environ)  # the file sets variables for nbgrader's own processes: not for this one
    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(ENGINE_ROOT)).load_config()
    finally:
        os.environ.clear()
        os.environ.update(environ)
    config.CourseDirectory.root = root
    config.IncludeHeaderFooter.header = str(Path(root) / "source" / "header.ipynb")
    return config


def recording_preprocessors(config: Any) -> list[Any]:
    """generate_assignment's preprocessors (as configured) up to the one that records the cells."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import SaveCells
    from traitlets.utils.importstring import import_item

    chain = (
        list(config.GenerateAssignment.preprocessors)
        if "preprocessors" in config.GenerateAssignment
        else GenerateAssignment.class_traits()["preprocessors"].default()
    )
    chain = [import_item(p) if isinstance(p, str) else p for p in chain]
    return chain[: chain.index(SaveCells) + 1]


def release_grade_cells(step: StepLike) -> dict[str, dict[str, float]]:
    """notebook -> {grade_id: points} of every graded cell in the step's release."""
    import json

    out = {}
    for name in step.notebooks():
        path = step.release / f"{name}.ipynb"
        if not path.exists():
            raise SetupError(
                f"{step.name}: its release has no {name}.ipynb (release/{step.name}/): "
                f"generate the release first (make release STEP={step.name})"
            )
        nb = json.loads(path.read_text(encoding="utf-8"))
        out[name] = {
            c["metadata"]["nbgrader"]["grade_id"]: float(c["metadata"]["nbgrader"].get("points", 0))
            for c in nb["cells"]
            if c.get("metadata", {}).get("nbgrader", {}).get("grade")
        }
    return out


def fill_gradebook(url: str, step: "Step") -> None:
    """Record `step`'s assignment, notebooks and cells in the gradebook at `url` as
    `nbgrader generate_assignment` does; notebooks the step no longer has are removed, unless the
    gradebook holds submissions of them (GradebookInUse)."""
    import nbformat

    use_in_process_alembic_version()
    config = _config(str(step.root))
    names = step.notebooks()
    released = release_grade_cells(step)
    with opened(url) as gb:
        assignment = gb.update_or_create_assignment(step.name)
        gone = {nb.name for nb in assignment.notebooks} - set(names)
        if gone and assignment.submissions:
            raise GradebookInUse(
                f"{step.name}: the gradebook has submissions of notebooks the step no longer "
                f"has ({', '.join(sorted(gone))})"
            )
        for name in sorted(gone):
            gb.remove_notebook(name, step.name)
    for name in names:
        nb = nbformat.read(str(step.source / f"{name}.ipynb"), as_version=4)  # type: ignore[no-untyped-call]
        resources = {
            "nbgrader": {"notebook": name, "assignment": step.name, "student": ".", "db_url": url},
            "unique_key": name,
            "metadata": {"path": str(step.source)},
            "released_points": released[name],
        }  # autograder/authoring/stamp.py: the release's points
        for preprocessor in recording_preprocessors(config):
            try:
                nb, resources = preprocessor(config=config)(nb, resources)  # as nbconvert calls it: if enabled
            except RuntimeError as err:
                if "submissions associated" in str(err):
                    raise GradebookInUse(f"{step.name}/{name}: {err}") from None
                raise


@contextmanager
def opened(url: str | None = None) -> Iterator["Gradebook"]:
    """nbgrader's Gradebook at `url` (default: the course's, $NBGRADER_DB_URL or the grader home's)."""
    from nbgrader.api import Gradebook

    use_in_process_alembic_version()
    with Gradebook(url or db_url(), COURSE_ID) as gb:
        yield gb


def ensure_gradebook(url: str, step: "Step") -> None:
    """The gradebook must know the step's notebooks and grade cells, with the release's points
    (nbgrader stores them when it generates the release). If it does not, record them as
    `nbgrader generate_assignment` does, in this process (fill_gradebook)."""
    from ..shards import gradebook_lock

    with gradebook_lock(url):  # shards that start together: one sets the gradebook up, the others wait
        _ensure_gradebook(url, step)
    path = sqlite_path(url)
    if path is not None:
        share_with_folder_group(path)


def share_with_folder_group(path: Path) -> None:
    """A SQLite gradebook in a folder shared with a group (course.py `shared_folder_group`: as `make hub`
    leaves the grading home for the instructors) is made writable by that group, so that an instructor's
    formgrader can save scores in a gradebook `make grade` made as root. Elsewhere, and for a file this
    account does not own or that is not in the folder's group, nothing changes."""
    group = shared_folder_group(path.parent)
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    if group is not None and info.st_gid == group and info.st_uid == os.geteuid():
        path.chmod(stat.S_IMODE(info.st_mode) | stat.S_IRGRP | stat.S_IWGRP)


TEMPLATES = "GRADEBOOK_TEMPLATES"  # a folder of filled gradebooks to start new SQLite gradebooks from


def template_key(step: "Step") -> str:
    """What a filled gradebook of `step` depends on: the step's notebooks, checks and the engine's grading
    code (Step.fingerprint), nbgrader's version, configuration and schema revision, the course's id and
    header notebook, and this module."""
    import hashlib

    import nbgrader

    digest = hashlib.sha256()
    for part in (step.fingerprint(), nbgrader.__version__, alembic_head(), COURSE_ID, step.name):
        digest.update(part.encode() + b"\0")
    for path in (ENGINE_ROOT / "nbgrader_config.py", step.root / "source" / "header.ipynb", Path(__file__)):
        digest.update(path.read_bytes() if path.exists() else b"-")
        digest.update(b"\0")
    return digest.hexdigest()


def _from_template(path: Path | None, step: "Step") -> tuple[Path | None, bool]:
    """(the template of `step`'s filled gradebook in $GRADEBOOK_TEMPLATES, whether the new SQLite
    gradebook at `path` was copied from it). (None, False) when that folder is not set, or the
    gradebook is not SQLite or is there already: then nothing is copied or kept."""
    folder = os.environ.get(TEMPLATES)
    if not folder or path is None or path.exists():
        return None, False
    template = Path(folder) / f"{template_key(step)}.db"
    if not template.is_file():
        return template, False
    scratch = path.with_name(f".{path.name}.{os.getpid()}.template")
    try:
        shutil.copyfile(template, scratch)
        os.replace(scratch, path)
    except OSError:  # a folder this account cannot read: filled here, as without templates
        scratch.unlink(missing_ok=True)
        return None, False
    return template, True


def _keep_as_template(path: Path, template: Path) -> None:
    """The gradebook just filled at `path`, kept as `template` for the next new one (written whole, or not)."""
    scratch = template.with_name(f".{template.name}.{os.getpid()}")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, scratch)
        os.replace(scratch, template)
    except OSError:  # a folder this account cannot write: the next gradebook is filled too
        scratch.unlink(missing_ok=True)


def _ensure_gradebook(url: str, step: "Step") -> None:
    from nbgrader.api import MissingEntry

    path = sqlite_path(url)
    template, copied = _from_template(path, step)
    wanted = release_grade_cells(step)
    try:
        with opened(url) as gb:
            known = {
                nb.name: {c.name: float(c.max_score) for c in nb.grade_cells}
                for nb in gb.find_assignment(step.name).notebooks
            }
    except MissingEntry:
        known = {}
    except Exception:  # noqa: BLE001 (a template that is no gradebook of this step is filled anew below)
        if not copied:
            raise
        known = None
    if known == wanted:
        return
    if copied and path is not None:  # the template was not this step's gradebook as filled: filled anew here
        path.unlink()
    try:
        fill_gradebook(url, step)
        if template is not None and path is not None:
            _keep_as_template(path, template)
    except GradebookInUse as err:
        raise GradebookInUse(
            f"The gradebook ({url}) holds grades for another set of {step.name} notebooks than the release "
            f"has now ({', '.join(sorted(wanted))}): {err}. nbgrader will not change an assignment that has "
            "submissions. Grade this release with a new gradebook: move autograder/ aside (or run "
            "`make clean-grades`), or set NBGRADER_DB_URL to a new database."
        ) from None


def create_submission(gb: "Gradebook", step_name: str, sid: str, **kwargs: Any) -> None:
    """nbgrader's update_or_create_submission (the student too), without the SQLAlchemy 2 autoflush
    warning it raises when it creates a submission (the rows are written correctly; the tests read them back)."""
    from sqlalchemy.exc import SAWarning

    gb.update_or_create_student(sid)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SAWarning, message=".*not in session.*")
        gb.update_or_create_submission(step_name, sid, **kwargs)


# ---- a graded notebook's scores ---------------------------------------------------------------------


def write_scores(url: str, step_name: str, result: NotebookResult, nb: Any, stamp: datetime) -> None:
    """One graded notebook's scores, as the worker judged them: each grade cell's auto_score is its
    result's score (a written answer: none until a grader gives one, or 0 for an answer left as
    released). A hidden test a check could not decide waits for a person as a written answer does: no
    auto_score and `needs_manual_grade`, so the formgrader lists it among the cells to grade by hand and
    the TA's score there is the cell's score. A cell a grader scored before keeps its manual score and
    is listed again (nbgrader's rule, SaveAutoGrades). The answer cells' "No response." comments come
    from their checksums, as nbgrader writes them. `nb`: the graded notebook."""
    from nbgrader import utils as nbutils

    scores = {c.grade_id: c for c in result.cells}
    with opened(url) as gb:
        create_submission(gb, step_name, result.student, timestamp=stamp)
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if not meta.get("grade_id"):
                continue
            if nbutils.is_grade(cell):
                grade = gb.find_grade(meta["grade_id"], result.notebook, step_name, result.student)
                judged = scores.get(meta["grade_id"])
                grade.auto_score = None if judged is None or judged.kind == "review" else judged.score
                grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
            if nbutils.is_solution(cell) or nbutils.is_task(cell):
                comment = gb.find_comment(meta["grade_id"], result.notebook, step_name, result.student)
                unchanged = meta.get("checksum") == nbutils.compute_checksum(cell) and not nbutils.is_task(cell)
                comment.auto_comment = "No response." if unchanged else None
        gb.db.commit()


def zero_scores(gb: "Gradebook", step_name: str, sid: str, notebook: str, reason: str) -> list[CellResult]:
    """A notebook that is missing or cannot be read: zero on every grade cell, with the reason."""
    create_submission(gb, step_name, sid)
    submission = gb.find_submission_notebook(notebook, step_name, sid)
    manual = {c.name for c in submission.notebook.solution_cells}
    cells = []
    for grade in submission.grades:
        grade.auto_score = 0
        grade.needs_manual_grade = False
        cells.append(
            CellResult(grade.name, 0.0, float(grade.max_score), reason, "manual" if grade.name in manual else "auto")
        )
    gb.db.commit()
    return cells


def set_submission_times(url: str, step_name: str, stamps: dict[str, datetime]) -> None:
    """Each student's submission time (one per submission, as nbgrader keeps it)."""
    with opened(url) as gb:
        for sid, stamp in sorted(stamps.items()):
            create_submission(gb, step_name, sid, timestamp=stamp)


# ---- reading back -------------------------------------------------------------------------------------


@dataclass
class GradeRow:
    """One grade cell of a submitted notebook, as the gradebook holds it now."""

    grade_id: str
    max_score: float
    auto_score: float | None
    manual_score: float | None
    needs_manual_grade: bool
    score: float  # nbgrader's: the manual score if a grader gave one, else the auto score, else 0
    kind: str  # "manual" (a written answer), "review" (a hidden test for a person) or "auto"


@dataclass
class SubmittedRow:
    student: str
    notebook: str
    grades: list[GradeRow] = field(default_factory=list)
    late_penalty: float = 0.0


def is_review_grade(grade: Any) -> bool:
    """A hidden test's grade that was flagged for review (write_scores): an autograded cell with no
    auto_score, waiting for a person's score or given one."""
    return grade.auto_score is None and (bool(grade.needs_manual_grade) or grade.manual_score is not None)


def submitted(gb: "Gradebook", step_name: str, students: list[str] | None = None) -> list[SubmittedRow]:
    """Every submitted notebook of the step (of `students` only, when given), with its grades."""
    from nbgrader.api import Assignment, Student, SubmittedAssignment

    query = gb.db.query(SubmittedAssignment).join(Assignment).filter(Assignment.name == step_name)
    if students is not None:
        query = query.join(Student).filter(Student.id.in_(list(students)))
    out = []
    for submission in query.all():
        for nb in submission.notebooks:
            manual = {c.name for c in nb.notebook.solution_cells}
            out.append(
                SubmittedRow(
                    submission.student.id,
                    nb.notebook.name,
                    [
                        GradeRow(
                            g.name,
                            float(g.max_score),
                            None if g.auto_score is None else float(g.auto_score),
                            None if g.manual_score is None else float(g.manual_score),
                            bool(g.needs_manual_grade),
                            float(g.score or 0.0),
                            "manual" if g.name in manual else "review" if is_review_grade(g) else "auto",
                        )
                        for g in nb.grades
                    ],
                    float(nb.late_submission_penalty or 0.0),
                )
            )
    return sorted(out, key=lambda r: (r.student, r.notebook))


def student_names(gb: "Gradebook") -> dict[str, str]:
    """student id -> "Last, First" as the gradebook has it (the id where it has no name)."""
    return {s.id: ", ".join(n for n in (s.last_name, s.first_name) if n) or s.id for s in gb.students}


# ---- the term: due dates, extensions, late penalties ----------------------------------------------------


def apply_term(
    url: str, step: str, students: list[str] | None = None, times: dict[str, dict[str, float]] | None = None
) -> None:
    """nbgrader's late-penalty step for the submissions of `students` (all when None): the due date
    on the assignment, each student's extension on their submission, then the plugin's penalty on
    each submitted notebook (as AssignLatePenalties: reset, then clamped to 0..score). A notebook
    whose own time is known (`times`: student -> notebook -> its time, the store's record; see
    term.notebook_lateness) is late by its own time, not by its submission's: a one-notebook fix after
    the due date makes that notebook late, not the other five."""
    from nbgrader.api import Assignment as DbAssignment
    from nbgrader.api import Student as DbStudent
    from nbgrader.api import SubmittedAssignment as Submission

    from .. import term

    granted = term.extensions(step)
    plugin = term.late_penalty_plugin()
    due = term.due_date(step)
    with opened(url) as gb:
        gb.update_or_create_assignment(step, duedate=due.replace(tzinfo=None) if due else None)
        query = gb.db.query(Submission).join(DbAssignment).filter(DbAssignment.name == step)
        if students is not None:
            query = query.join(DbStudent).filter(DbStudent.id.in_(list(students)))
        for submission in query.all():
            submission.extension = granted.get(submission.student.id)
            lateness = term.notebook_lateness(submission, (times or {}).get(submission.student.id, {}))
            for notebook in submission.notebooks:
                notebook.late_submission_penalty = None
                seconds = lateness.get(notebook.notebook.name, 0.0)
                if seconds > 0:
                    points = plugin.late_submission_penalty(submission.student.id, notebook.score, seconds)
                    if points is not None:
                        notebook.late_submission_penalty = min(max(points, 0.0), notebook.score)
        gb.db.commit()


def term_records(url: str, step: str, times: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, Any]]:
    """student -> {timestamp, due, extension, seconds_late, penalties: {notebook: points}} from the
    gradebook (what the reports, feedback and exports show)."""
    from nbgrader.api import MissingEntry

    try:
        with opened(url) as gb:
            return term_records_in(gb, step, times=times)
    except MissingEntry:
        return {}


def term_records_in(
    gb: "Gradebook", step: str, students: list[str] | None = None, times: dict[str, dict[str, float]] | None = None
) -> dict[str, dict[str, Any]]:
    """student -> the term's record of their submission (times: student -> notebook -> its own time)."""
    from nbgrader.api import Assignment as DbAssignment
    from nbgrader.api import Student as DbStudent
    from nbgrader.api import SubmittedAssignment as Submission

    from .. import term

    out = {}
    query = gb.db.query(Submission).join(DbAssignment).filter(DbAssignment.name == step)
    if students is not None:
        query = query.join(DbStudent).filter(DbStudent.id.in_(list(students)))
    try:
        policy, grace = term.describe_policy(), term.grace_seconds()
    except term.TermError:
        policy, grace = "", 0.0
    for submission in query.all():
        out[submission.student.id] = {
            "timestamp": term.iso(submission.timestamp),
            "due": term.iso(submission.duedate),
            "extension": term.show_duration(submission.extension) if submission.extension else "",
            "seconds_late": round(submission.total_seconds_late, 1),
            "notebook_seconds_late": term.notebook_lateness(submission, (times or {}).get(submission.student.id, {})),
            "penalties": {nb.notebook.name: float(nb.late_submission_penalty or 0) for nb in submission.notebooks},
            "policy": policy,
            "grace_seconds": grace,
        }
    return out


# ---- written answers -------------------------------------------------------------------------------------


def written_grades(gb: "Gradebook", step: str) -> list[dict[str, Any]]:
    """Every written answer of every submission of `step`: {student, notebook, grade_id, max_score,
    score (a grader's, None until given), comment}."""
    from nbgrader.api import Assignment, SubmittedAssignment

    rows = []
    submissions = gb.db.query(SubmittedAssignment).join(Assignment).filter(Assignment.name == step).all()
    for submission in sorted(submissions, key=lambda s: s.student.id):
        for nb in sorted(submission.notebooks, key=lambda n: n.notebook.name):
            manual = {c.name for c in nb.notebook.solution_cells}
            comments = {c.name: c for c in nb.comments}
            for grade in sorted(nb.grades, key=lambda g: g.name):
                if grade.name not in manual:
                    continue
                comment = comments.get(grade.name)
                rows.append(
                    {
                        "student": submission.student.id,
                        "notebook": nb.notebook.name,
                        "grade_id": grade.name,
                        "max_score": float(grade.max_score),
                        "score": None if grade.manual_score is None else float(grade.manual_score),
                        "comment": (comment.manual_comment or "") if comment is not None else "",
                    }
                )
    return rows


def write_written_scores(
    gb: "Gradebook", step: str, updates: list[tuple[tuple[str, str, str], float, str | None]]
) -> None:
    """[((student, notebook, grade_id), score, comment or None)] into the gradebook, in one transaction."""
    try:
        for (sid, notebook, grade_id), score, comment in updates:
            grade = gb.find_grade(grade_id, notebook, step, sid)
            grade.manual_score = score
            grade.needs_manual_grade = False
            if comment is not None:
                try:
                    gb.find_comment(grade_id, notebook, step, sid).manual_comment = comment
                except Exception:  # noqa: BLE001  (a cell without a comment slot: the score still counts)
                    pass
        gb.db.commit()
    except BaseException:
        gb.db.rollback()
        raise
