"""The course's JupyterLab: the options every `make lab` / `make formgrader` (and the browser
tests) start it with.

    python -m autograder lab               # a student's JupyterLab on notebooks/ (after `make fetch`)
    python -m autograder lab --formgrader  # the instructor's, on the course folder, opening /formgrader

JupyterLab is started from the course folder, so nbgrader's Validate button, its Assignments
panel and the formgrader read this course's nbgrader_config.py.

Each kind of user gets its own JupyterLab settings (lab_settings/<role>/): nobody is asked
whether to fetch Jupyter's news or told about updates (a course pins its versions), and a
student's JupyterLab leaves out nbgrader's instructor tools (the "Create Assignment" panel and the
formgrader), keeping Validate and the Assignments panel.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .course import ENGINE_ROOT, NOTEBOOKS, ROOT

SETTINGS = Path(__file__).resolve().parent / "lab_settings"
ROLES = ("student", "instructor")


def lab_arguments(root_dir: Path, role: str = "student", default_url: str | None = None) -> list[str]:
    """The options of the course's JupyterLab serving `root_dir` for a student or an instructor."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    args = [f"--ServerApp.root_dir={root_dir}", f"--LabApp.app_settings_dir={SETTINGS / role}",
            "--LabApp.news_url=None"]
    if default_url:
        args.append(f"--ServerApp.default_url={default_url}")
    return args


def run_lab(formgrader: bool = False, extra: list[str] | None = None) -> int:
    from .course import kernel_env
    if formgrader:
        args = lab_arguments(ROOT, "instructor", "/formgrader")
    else:
        args = lab_arguments(NOTEBOOKS, "student")
    env = kernel_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.call([sys.executable, "-m", "jupyterlab", *args, *(extra or [])], cwd=ENGINE_ROOT, env=env)
