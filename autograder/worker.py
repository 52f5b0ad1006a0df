"""What a grading worker process needs, imported once per grading process in its fork server.

Grading workers are forked from a fork server (multiprocessing's "forkserver") that imports this
module first: the grader's modules and every step's checks (which import what their judges use,
torch for Step 4). A worker forked from it starts with all of that imported, instead of importing
it again in each new process (seconds per worker), and a grading process that runs several batches
(a test session, a pool rebuilt after a worker died) pays it once. The fork server is a fresh
process, not a copy of the grader: it holds no gradebook connection, thread or open file of it.
`start_worker` runs first in every worker: the grader's current environment and folder (the fork
server keeps those it started with).
"""
from __future__ import annotations

import os
import tempfile

from . import grade  # noqa: F401  (first: it leaves out rfc3987_syntax before anything imports nbformat)
from . import assemble, execute, judging, plugin, probeserver, sandbox, warm  # noqa: F401


def _import_checks() -> None:
    from .steps import all_steps
    for step in all_steps():
        try:
            step.checks
        except Exception:       # noqa: BLE001  (a step that cannot load is reported by the grading itself)
            pass


_import_checks()


def start_worker(environ: dict, cwd: str) -> None:
    """A new worker takes the grader's environment and folder as they are now."""
    os.environ.clear()
    os.environ.update(environ)
    tempfile.tempdir = None         # worked out again from $TMPDIR
    os.chdir(cwd)
