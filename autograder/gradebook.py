"""The gradebook's record of a step, written in the grader's own process.

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

nbgrader creates a new gradebook's tables and stamps them with its schema's alembic revision, which
it asks for by running `alembic heads` in a subprocess; `alembic_head` reads the same revision from
nbgrader's migration scripts in process.
"""
from __future__ import annotations

import functools
from pathlib import Path

from .course import COURSE_ID, ENGINE_ROOT
from .errors import SetupError


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
    return ScriptDirectory.from_config(config).get_current_head()


def use_in_process_alembic_version() -> None:
    """nbgrader's Gradebook asks `alembic heads` (a subprocess) for the revision of a new
    gradebook: answer from the migration scripts instead."""
    import nbgrader.api
    nbgrader.api.get_alembic_version = alembic_head


@functools.lru_cache(maxsize=None)
def _config(root: str):
    """nbgrader's configuration of the course at `root` (nbgrader_config.py, read as nbgrader reads it)."""
    import os
    from traitlets.config.loader import PyFileConfigLoader
    environ = dict(os.environ)          # the file sets variables for nbgrader's own processes: not for this one
    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(ENGINE_ROOT)).load_config()
    finally:
        os.environ.clear()
        os.environ.update(environ)
    config.CourseDirectory.root = root
    config.IncludeHeaderFooter.header = str(Path(root) / "source" / "header.ipynb")
    return config


def recording_preprocessors(config) -> list:
    """generate_assignment's preprocessors (as configured) up to the one that records the cells."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import SaveCells
    from traitlets.utils.importstring import import_item
    chain = list(config.GenerateAssignment.preprocessors) if "preprocessors" in config.GenerateAssignment \
        else GenerateAssignment.class_traits()["preprocessors"].default()
    chain = [import_item(p) if isinstance(p, str) else p for p in chain]
    return chain[:chain.index(SaveCells) + 1]


def release_grade_cells(step) -> dict[str, dict[str, float]]:
    """notebook -> {grade_id: points} of every graded cell in the step's release."""
    import json
    out = {}
    for name in step.notebooks():
        path = step.release / f"{name}.ipynb"
        if not path.exists():
            raise SetupError(f"{step.name}: its release has no {name}.ipynb (release/{step.name}/): "
                             f"generate the release first (make release STEP={step.name})")
        nb = json.loads(path.read_text(encoding="utf-8"))
        out[name] = {c["metadata"]["nbgrader"]["grade_id"]: float(c["metadata"]["nbgrader"].get("points", 0))
                     for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade")}
    return out


def fill_gradebook(url: str, step) -> None:
    """Record `step`'s assignment, notebooks and cells in the gradebook at `url` as
    `nbgrader generate_assignment` does; notebooks the step no longer has are removed, unless the
    gradebook holds submissions of them (GradebookInUse)."""
    import nbformat
    from nbgrader.api import Gradebook
    use_in_process_alembic_version()
    config = _config(str(step.root))
    names = step.notebooks()
    released = release_grade_cells(step)
    with Gradebook(url, COURSE_ID) as gb:
        assignment = gb.update_or_create_assignment(step.name)
        gone = {nb.name for nb in assignment.notebooks} - set(names)
        if gone and assignment.submissions:
            raise GradebookInUse(f"{step.name}: the gradebook has submissions of notebooks the step no longer "
                                 f"has ({', '.join(sorted(gone))})")
        for name in sorted(gone):
            gb.remove_notebook(name, step.name)
    for name in names:
        nb = nbformat.read(step.source / f"{name}.ipynb", as_version=4)
        resources = {"nbgrader": {"notebook": name, "assignment": step.name, "student": ".", "db_url": url},
                     "unique_key": name, "metadata": {"path": str(step.source)},
                     "released_points": released[name]}     # autograder/stamp.py: the release's points
        for preprocessor in recording_preprocessors(config):
            try:
                nb, resources = preprocessor(config=config)(nb, resources)    # as nbconvert calls it: if enabled
            except RuntimeError as err:
                if "submissions associated" in str(err):
                    raise GradebookInUse(f"{step.name}/{name}: {err}") from None
                raise
