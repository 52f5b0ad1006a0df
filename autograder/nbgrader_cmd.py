"""Running nbgrader's own commands, and what the grader and nbgrader's configuration share.

`run_nbgrader("generate_assignment", "<step>", "--force")` runs one nbgrader command on this course
with its configuration (nbgrader_config.py) and returns its log; a command that fails raises
NbgraderError quoting it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .course import ENGINE_ROOT, ROOT, kernel_env
from .errors import GraderError

# Library warnings on stderr (a PyTorch UserWarning, a matplotlib font notice) that must not zero a
# correct answer: the grader strips them before judging (grading/judging.py), and nbgrader_config.py gives
# the same pattern to nbgrader's IgnorePattern for the commands nbgrader runs itself.
HARMLESS_STDERR = r"(?s)^(\S+:\d+: )?(\w+Warning|Matplotlib is building the font cache)"


def main_without_iri_grammars(module: str, first: str = "") -> str:
    """A `python -c` program that runs `module`'s `main()` as its console script does, without the optional
    rfc3987_syntax that jsonschema would import (about 1-2 s of CPU per process building grammars for the
    "iri" string formats, which no notebook schema, nbgrader, Jupyter server or JupyterHub schema uses;
    see grading/grade.py). For nbgrader's commands, each JupyterLab the course starts and each user's
    server on the hub. `first`: statements run before `module` is imported."""
    return (
        f"import sys; sys.modules.setdefault('rfc3987_syntax', None); {first}"
        f"from {module} import main; sys.exit(main())"
    )


# JupyterLab asks yarn for the npm registry it would build from when its server module is imported
# (`node yarn.js config --json`: a Node.js process, about 0.3 s of CPU, at every server start). A user's
# server on the hub and the course's own JupyterLab never build it (classroom/lab.py LEAN_PAGE: the page offers
# no build), so they do not ask: the registry, never used there, stays JupyterLab's default.
WITHOUT_YARN_CONFIG = (
    "import jupyterlab.commands as _lab; "
    "_lab._yarn_config = lambda logger=None: {'yarn config': {}, 'npm config': {}}; "
)


# `python -m nbgrader`, without rfc3987_syntax
NBGRADER_MAIN = main_without_iri_grammars("nbgrader.apps.nbgraderapp")
# `python -m jupyterlab` and `jupyterhub-singleuser`, the same way, both without yarn's look-up
JUPYTERLAB_MAIN = main_without_iri_grammars("jupyterlab.labapp", WITHOUT_YARN_CONFIG)
SINGLEUSER_MAIN = main_without_iri_grammars("jupyterhub.singleuser", WITHOUT_YARN_CONFIG)

ERROR_LINE = re.compile(r"\| (ERROR|CRITICAL|FATAL)\]")


class NbgraderError(GraderError, RuntimeError):
    """An nbgrader command failed. `errors`: its own error lines; `log`: all it wrote."""

    def __init__(self, args: tuple[str, ...], log: str):
        self.command = args[0] if args else ""
        self.log = log
        self.errors = [line for line in log.splitlines() if ERROR_LINE.search(line)]
        super().__init__(f"`nbgrader {' '.join(args)}` failed:\n{log[-4000:]}")


def run_nbgrader(
    *args: str, root: Path = ROOT, db_url: str | None = None, python: str | None = None, env: dict | None = None
) -> str:
    """Run an nbgrader command on the course at `root` with this repository's configuration (from
    the engine's folder, with this environment's tools on PATH: nbgrader runs `alembic` from there);
    return its log. A non-zero exit or an error line in the log raises NbgraderError. `python`: another
    environment's interpreter (the hub's, for ngshare's exchange classes); `env`: variables added."""
    python = python or sys.executable
    cmd = [python, "-c", NBGRADER_MAIN, *args, f"--CourseDirectory.root={root}"]
    if db_url:
        cmd.append(f"--CourseDirectory.db_url={db_url}")
    env = kernel_env({"COURSE_ROOT": str(root), **(env or {})})  # the course whose checks stamp its hidden tests
    env["PATH"] = str(Path(python).parent) + os.pathsep + env.get("PATH", "")
    # from the engine's folder: nbgrader reads nbgrader_config.py from where it runs
    proc = subprocess.run(cmd, cwd=ENGINE_ROOT, env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0 or "[ERROR]" in log or ERROR_LINE.search(log):
        raise NbgraderError(args, log)
    return log
