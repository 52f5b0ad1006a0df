"""The course's JupyterLab: the options every `make lab` / `make formgrader` (and the browser
tests) start it with.

    python -m autograder lab               # a student's JupyterLab on notebooks/ (after `make fetch`)
    python -m autograder lab --formgrader  # the instructor's, on the course folder, opening /formgrader

JupyterLab is started from the course folder, so nbgrader's Validate button and formgrader read
this course's nbgrader_config.py.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .course import NOTEBOOKS, ROOT

# The course's JupyterLab settings (lab_settings/overrides.json): no pop-up asking a student
# whether to fetch Jupyter's news, no update notices (a course pins its versions); and no
# request for the news feed at all.
SETTINGS = Path(__file__).resolve().parent / "lab_settings"
QUIET = [f"--LabApp.app_settings_dir={SETTINGS}", "--LabApp.news_url=None"]


def lab_arguments(root_dir: Path, default_url: str | None = None) -> list[str]:
    """The options of the course's JupyterLab serving `root_dir`."""
    args = [f"--ServerApp.root_dir={root_dir}", *QUIET]
    if default_url:
        args.append(f"--ServerApp.default_url={default_url}")
    return args


def run_lab(formgrader: bool = False, extra: list[str] | None = None) -> int:
    from .course import kernel_env
    root_dir = ROOT if formgrader else NOTEBOOKS
    args = lab_arguments(root_dir, "/formgrader" if formgrader else None)
    env = kernel_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.call([sys.executable, "-m", "jupyterlab", *args, *(extra or [])], cwd=ROOT, env=env)
