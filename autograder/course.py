"""Where everything lives. One place for the paths that commands, tests and the grader share."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "source"
RELEASE = ROOT / "release"
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
AUTOGRADER = ROOT / "autograder"
DATA = ROOT / "data"
STEP = "step-04"
CATCH_UP = "step-03"
COURSE_ID = "dl-course"
# What a warm-kernel template imports before it forks a kernel per notebook (autograder/warm.py).
KERNEL_PREIMPORT = ["torch", "numpy", "matplotlib", "matplotlib_inline.backend_inline", "dlcourse"]


def grader_home() -> Path:
    """Where grading writes (submitted, autograded, feedback, work, grades.*): autograder/ unless
    $GRADER_HOME names another folder (the tests grade in temporary folders)."""
    import os
    return Path(os.environ.get("GRADER_HOME") or AUTOGRADER).resolve()


def db_url() -> str:
    import os
    return os.environ.get("NBGRADER_DB_URL") or f"sqlite:///{grader_home() / 'gradebook.db'}"


def notebook_names(step: str = STEP) -> list[str]:
    """The step's notebooks, in order, without the .ipynb suffix."""
    return sorted(p.stem for p in (SOURCE / step).glob("*.ipynb"))


def points_of(path: Path) -> dict[str, float]:
    """grade_id -> points of every graded cell of a notebook."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    out = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") or meta.get("task"):
            out[meta["grade_id"]] = float(meta.get("points", 0))
    return out


def use_environment_tools() -> None:
    """Put this Python environment's bin/ first on PATH: nbgrader runs `alembic` from there when it
    creates a gradebook, and a shell that never activated the environment would not find it."""
    import os
    import sys
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def kernel_env(extra: dict | None = None) -> dict:
    """Environment for kernels that run course notebooks from this checkout: the checkout on the
    path (hidden tests import autograder.checks), pictures without a display."""
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    env.update(extra or {})
    return env
