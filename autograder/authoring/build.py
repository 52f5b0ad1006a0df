"""Build what students get from the instructor sources: the release and the solutions.

python -m autograder release [--step S]     # nbgrader generate_assignment -> release/<step>
python -m autograder solutions [--step S]   # solutions (hidden tests removed), executed -> solutions/<step>,
                                            # and the step's catch-up notebook, if it has one
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

import nbformat
from nbgrader.preprocessors import (
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    IncludeHeaderFooter,
    LockCells,
    NbGraderPreprocessor,
)

from ..course import ROOT, kernel_env
from ..errors import GraderError
from ..nbgrader_cmd import run_nbgrader

SOLUTION_MARKERS = (
    "BEGIN SOLUTION",
    "END SOLUTION",
    "BEGIN HIDDEN TESTS",
    "END HIDDEN TESTS",
    "BEGIN MARK SCHEME",
    "END MARK SCHEME",
)


class BuildError(GraderError, RuntimeError):
    """The release or the solutions could not be built; the message says why."""


def release(step, db_url: str | None = None) -> list[Path]:
    """Generate release/<step> from source/<step>; return the notebooks written.

    The release depends on the sources only: it is generated against a scratch gradebook, so a
    gradebook that already holds grades is never touched (grading brings its own gradebook up
    to date with the release, see autograder/grading/grade.py)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="release-") as scratch:
        run_nbgrader(
            "generate_assignment",
            step.name,
            "--force",
            root=step.root,
            db_url=db_url or f"sqlite:///{Path(scratch) / 'gradebook.db'}",
        )
    out = sorted(step.release.glob("*.ipynb"))
    for path in out:
        text = path.read_text(encoding="utf-8")
        for marker in SOLUTION_MARKERS:
            if marker in text:
                raise BuildError(f"{path} still contains {marker!r}: check the source cell's nbgrader metadata")
    return out


def solution_preprocessors():
    """What turns an instructor notebook into a solution notebook, before it is run: the same list
    nbgrader_config.py gives `nbgrader generate_solution` (minus its Execute step)."""
    from .stamp import StampHiddenTests

    return [
        StampHiddenTests,
        IncludeHeaderFooter,
        LockCells,
        ClearOutput,
        ClearMarkScheme,
        ClearHiddenTests,
        ClearSolutionMarkers,
    ]


class ClearSolutionMarkers(NbGraderPreprocessor):
    """Solutions read like code a student wrote: the BEGIN/END SOLUTION lines are dropped."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and "BEGIN SOLUTION" in cell.source:
            cell.source = "\n".join(
                line for line in cell.source.split("\n") if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line
            )
        return cell, resources


def solution_notebook(source: Path, root: Path = ROOT):
    """The unexecuted solution notebook of one instructor notebook."""
    from traitlets.config import Config

    nb = nbformat.read(source, as_version=4)
    config = Config()
    config.IncludeHeaderFooter.header = str(root / "source" / "header.ipynb")
    resources = {"nbgrader": {"assignment": Path(source).parent.name}}  # the step: source/<step>/
    for pp in solution_preprocessors():
        nb, resources = pp(config=config).preprocess(nb, resources)
    return nb


def same_cells(a, b) -> bool:
    """Two notebooks hold the same cells (type, source, nbgrader metadata); outputs not compared."""

    def key(nb):
        return [(c.cell_type, c.source, json.dumps(c.metadata.get("nbgrader", {}), sort_keys=True)) for c in nb.cells]

    return key(a) == key(b)


def solutions(step, force: bool = False) -> list[Path]:
    """Write executed solution notebooks to solutions/<step>/ and the step's catch-up notebook (its
    check package's CATCH_UP: source/<name>/<name>.ipynb) to solutions/<name>.ipynb.
    A solution whose cells already match its source is left as it is (its outputs are kept),
    unless `force`."""
    root = step.root
    written = []
    for source in sorted(step.source.glob("*.ipynb")):
        dest = step.solutions / source.name
        fresh = solution_notebook(source, root)
        if not force and dest.exists() and same_cells(fresh, nbformat.read(dest, as_version=4)):
            continue
        run_notebook(fresh, source.parent)
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fresh, dest)
        check_executed(dest, root)
        written.append(dest)
    if not step.catch_up:
        return written
    catch_up_src = root / "source" / step.catch_up / f"{step.catch_up}.ipynb"
    catch_up = root / "solutions" / f"{step.catch_up}.ipynb"
    fresh = nbformat.read(catch_up_src, as_version=4)
    if force or not catch_up.exists() or not same_cells(fresh, nbformat.read(catch_up, as_version=4)):
        run_notebook(fresh, catch_up_src.parent)
        nbformat.write(fresh, catch_up)
        check_executed(catch_up, root)
        written.append(catch_up)
    return written


def run_notebook(nb, cwd: Path, timeout: int = 600, allow_errors: bool = False) -> None:
    """Execute a notebook in place in a fresh kernel (errors stop it unless allow_errors)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kernel-") as sockets:
        _notebook_client(nb, cwd, sockets, timeout, allow_errors).execute(env=kernel_env())


@contextmanager
def notebook_kernel(nb, cwd: Path, timeout: int = 600, allow_errors: bool = False):
    """The kernel run_notebook would run `nb` in, kept open: yields nbclient's client, whose
    `execute_cell(cell, index)` runs any cell of `nb`, in any order, as often as asked."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kernel-") as sockets:
        client = _notebook_client(nb, cwd, sockets, timeout, allow_errors)
        with client.setup_kernel(env=kernel_env()):
            yield client


def _notebook_client(nb, cwd: Path, sockets: str, timeout: int, allow_errors: bool):
    from traitlets.config import Config

    from ..kernel.execute import CourseNotebookClient

    config = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "ipc")}})
    return CourseNotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=allow_errors,
        config=config,
        resources={"metadata": {"path": str(cwd)}},
    )


def check_executed(path: Path, root: Path = ROOT) -> None:
    """A solution notebook must have run every code cell without an error, and its outputs
    must not reveal where this machine keeps the course."""
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        if cell.get("execution_count") is None:
            raise BuildError(f"{path.name}: cell {index} did not run")
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                raise BuildError(f"{path.name}: cell {index} raised {output.get('ename')}: {output.get('evalue')}")
        for text in _output_texts(cell):
            if str(root) in text or str(Path.home()) + os.sep in text:
                raise BuildError(
                    f"{path.name}: cell {index} prints a path of this machine; "
                    "print paths relative to the course folder"
                )


def _output_texts(cell) -> list[str]:
    texts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            texts.append(output["text"])
        for key, value in output.get("data", {}).items():
            if key.startswith("text/") and isinstance(value, str):
                texts.append(value)
        texts.extend(output.get("traceback", []))
    return texts
