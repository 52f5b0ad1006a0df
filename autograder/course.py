"""Where everything lives. One place for the paths that commands, tests and the grader share.

ENGINE_ROOT is this checkout (the engine, the course package); ROOT is the course's folder (source/,
release/, solutions/, data/): the same folder unless $COURSE_ROOT names another.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

ENGINE_ROOT = Path(__file__).resolve().parent.parent
ROOT = Path(os.environ.get("COURSE_ROOT") or ENGINE_ROOT).resolve()
SOURCE = ROOT / "source"
RELEASE = ROOT / "release"
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
AUTOGRADER = ROOT / "autograder"
COURSE_ID = "dl-course"


def grader_home() -> Path:
    """Where grading writes (submitted, autograded, feedback, work, grades/): autograder/ unless
    $GRADER_HOME names another folder (the tests grade in temporary folders)."""
    return Path(os.environ.get("GRADER_HOME") or AUTOGRADER).resolve()


def db_url() -> str:
    return os.environ.get("NBGRADER_DB_URL") or f"sqlite:///{grader_home() / 'gradebook.db'}"


def sqlite_path(url: str) -> Path | None:
    """The file a SQLite database URL (`sqlite:///<path>`) names; None for another database or for
    SQLite in memory."""
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url.removeprefix("sqlite:///"))
    return None


def shared_folder_group(folder: Path) -> int | None:
    """The group `folder` is shared with: its group if it is setgid (`make hub` leaves the grading home so
    for the instructors, classroom/hub.py share_grading_home), so that what is made in it is in that group;
    None for a folder not shared, or not there."""
    try:
        info = folder.stat()
    except OSError:
        return None
    return info.st_gid if info.st_mode & stat.S_ISGID else None


def share_with_home_group() -> None:
    """In a grading home shared with a group (`shared_folder_group`), what a command makes there is
    writable by that group too: the folders `make grade` makes as root (submitted/, autograded/,
    feedback/, ...) are the ones an instructor's formgrader collects and grades into. Elsewhere the umask
    is left as it is."""
    if shared_folder_group(grader_home()) is not None:
        os.umask(os.umask(0) & ~0o070)


def use_environment_tools() -> None:
    """Put this Python environment's bin/ first on PATH: nbgrader runs `alembic` from there when it
    creates a gradebook, and a shell that never activated the environment would not find it."""
    import sys

    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def kernel_env(extra: dict | None = None) -> dict:
    """Environment for kernels that run course notebooks from this checkout: the checkout on the
    path (hidden test cells import autograder.runtime, notebooks import dlcourse), the course's
    folder, pictures without a display. The inline backend is set whatever the calling process has
    (a shell's or a test's MPLBACKEND=Agg would leave every picture out of the notebook)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ENGINE_ROOT), env.get("PYTHONPATH", "")] if p)
    env["COURSE_ROOT"] = str(ROOT)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env.update(extra or {})
    return env
