"""The course's JupyterLab: the options every `make lab` / `make formgrader` (and the browser
tests) start it with.

    python -m autograder lab               # a student's JupyterLab on notebooks/ (after `make fetch`)
    python -m autograder lab --formgrader  # the instructor's, on the course folder, opening /formgrader
    python -m autograder lab --formgrader --port=8890 --ip=0.0.0.0 --no-browser   # any Jupyter option

As root, `--allow-root` is added (Jupyter refuses root otherwise). The Makefile passes PORT, IP,
NO_BROWSER=1 and LAB_ARGS (any other options) through.

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

from ..course import ENGINE_ROOT, NOTEBOOKS, ROOT
from ..nbgrader_cmd import JUPYTERLAB_MAIN

SETTINGS = Path(__file__).resolve().parent / "lab_settings"
ROLES = ("student", "instructor")
# Server extensions every JupyterLab of the course leaves off (`make lab`, `make formgrader`, each user's
# server on the hub: hub.user_config_files): jupyter_lsp serves language servers, and the course environment
# installs none (JupyterLab's own LSP client is off by default), yet at each start it looks for some twenty
# of them and runs `npm prefix -g`, a Node.js process (about 0.4 s of CPU in all).
LEAN_SERVER = {"jupyter_lsp": False}
# What JupyterLab's page is told: no build. Nobody rebuilds the course's JupyterLab from its page (the
# environment is pinned; on the hub it is root's, or the image's), and with the build check on, every page
# load asks the server whether a build is needed (GET lab/api/build: about 0.4 s of the server's CPU).
LEAN_PAGE = {"buildAvailable": False, "buildCheck": False}


# The instructor's JupyterLab opens students' notebooks (the formgrader's "Open live notebook", the
# autograded and feedback folders): every page it serves may show pictures only from the server itself
# and its own data (data:, blob:), and nothing that fetches from or frames an address a student chose.
# Scripts and connections are JupyterLab's own business, so they are left as Jupyter sets them.
INSTRUCTOR_CSP = (
    "frame-ancestors 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; "
    "font-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'"
)


def lab_arguments(root_dir: Path, role: str = "student", default_url: str | None = None) -> list[str]:
    """The options of the course's JupyterLab serving `root_dir` for a student or an instructor."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    args = [
        f"--ServerApp.root_dir={root_dir}",
        f"--LabApp.app_settings_dir={SETTINGS / role}",
        "--LabApp.news_url=None",
        *(f"--ServerApp.jpserver_extensions={name}={on}" for name, on in LEAN_SERVER.items()),
    ]
    # the page's configuration (LEAN_PAGE) and the instructor's headers, as a Python literal (what traitlets
    # reads a dict option as: JSON's `false` is not one)
    settings: dict = {"page_config_data": dict(LEAN_PAGE)}
    if role == "instructor":
        settings["headers"] = {"Content-Security-Policy": INSTRUCTOR_CSP}
    args.append(f"--ServerApp.tornado_settings={settings!r}")
    if default_url:
        args.append(f"--ServerApp.default_url={default_url}")
    return args


def server_flags(extra: list[str] | None = None, euid: int | None = None) -> list[str]:
    """The server options given on the command line (`make formgrader PORT=8890 IP=0.0.0.0
    NO_BROWSER=1`), plus `--allow-root` when run as root: Jupyter refuses to start as root
    without it ("Running as root is not recommended"), and a course machine or container often is."""
    flags = list(extra or [])
    euid = os.geteuid() if euid is None and hasattr(os, "geteuid") else euid
    if euid == 0 and not any(f.split("=")[0] in ("--allow-root", "--ServerApp.allow_root") for f in flags):
        flags.append("--allow-root")
    return flags


def run_lab(formgrader: bool = False, extra: list[str] | None = None) -> int:
    from ..course import kernel_env

    if formgrader:
        args = lab_arguments(ROOT, "instructor", "/formgrader")
    else:
        args = lab_arguments(NOTEBOOKS, "student")
    extra = server_flags(extra)
    env = kernel_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.call([sys.executable, "-c", JUPYTERLAB_MAIN, *args, *(extra or [])], cwd=ENGINE_ROOT, env=env)
