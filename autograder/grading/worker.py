"""What a grading worker process needs, imported once per grading process in its fork server.

Grading workers are forked from a fork server (multiprocessing's "forkserver") that imports
autograder/grading/grade.py and then this module (grade.WORKER_PRELOAD): the grader's modules and every
step's checks (which import what their judges use, torch for Step 4). A worker forked from it starts
with all of that imported, instead of importing it again in each new process (seconds per worker),
and a grading process that runs several batches (a test session, a pool rebuilt after a worker died)
pays it once. The fork server is a fresh
process, not a copy of the grader: it holds no gradebook connection, thread or open file of it.
`start_worker` runs first in every worker: the grader's current environment and folder (the fork
server keeps those it started with).
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile

from . import judging  # noqa: F401
from .. import plugin  # noqa: F401
from ..intake import assemble  # noqa: F401
from ..checks import probeserver  # noqa: F401
from ..kernel import execute, sandbox, warm  # noqa: F401


def _import_checks() -> None:
    from ..steps import all_steps

    for step in all_steps():
        try:
            step.checks
        except Exception:  # noqa: BLE001  (a step that cannot load is reported by the grading itself)
            pass


_import_checks()


def _in_fork_server() -> bool:
    """Whether this module is being imported by multiprocessing's fork server (its preload)."""
    from multiprocessing import forkserver

    frame = sys._getframe()
    while frame is not None:
        if frame.f_code is forkserver.main.__code__:
            return True
        frame = frame.f_back
    return False


def _end_at_once(pid: int = os.getpid()) -> None:
    """The fork server ends with the grader (its last worker gone), and then without tearing down
    torch and everything else module by module: 1.7 s of CPU after the grader has finished, which a
    command that waits for its output also waited for. Nothing of its own needs cleaning up."""
    if os.getpid() == pid:  # the fork server itself (its workers end through os._exit anyway)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


ENDS_AT_ONCE = _in_fork_server()  # the fork server only: elsewhere an exit code must be kept
if ENDS_AT_ONCE:
    atexit.register(_end_at_once)


def start_worker(environ: dict, cwd: str) -> None:
    """A new worker takes the grader's environment and folder as they are now, and joins a control
    group of its own, limited to limits.WORKER_MEMORY_BYTES (where the machine has them)."""
    os.environ.clear()
    os.environ.update(environ)
    tempfile.tempdir = None  # worked out again from $TMPDIR
    os.chdir(cwd)
    join_worker_group()


def join_worker_group():
    """Put this worker in a memory-limited control group of its own (None where there is none). The
    kernels' groups are made where the grader's are (cgroups.detect, run before joining: they are not
    below the worker's), and the template this worker starts is in the worker's group."""
    from ..kernel import cgroups
    from ..kernel.limits import WORKER_MEMORY_BYTES

    found = cgroups.cgroups()
    if found is None:
        return None
    try:
        group = found.worker_group(WORKER_MEMORY_BYTES)
        group.join(os.getpid())
    except (cgroups.Unavailable, OSError):
        return None
    return group
