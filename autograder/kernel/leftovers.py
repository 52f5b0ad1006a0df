"""What a grading worker leaves in the temporary folder when it dies: its warm-kernel template's folders,
its jobs' scratch folders and its kernels' relays (a worker killed by its memory limit, or by kill -9,
runs no clean-up of its own). Each such folder is marked with its owner, the worker's pid and start
time (cgroups.owner_tag), when it is made; `sweep()` removes the marked folders whose owner is gone:
at the start of every grading run and whenever a worker has died. A folder of a process still alive,
or one without a mark, is left alone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .cgroups import _owner_alive, owner_tag

MARK = ".grader-owner"
PREFIXES = ("grade-", "warm-template-", "relay-")  # grade-w-* (a template's sandbox root) included


def mark(folder: Path) -> Path:
    """Mark `folder` as this process's (removed by `sweep` once this process is gone)."""
    (Path(folder) / MARK).write_text(owner_tag() + "-", encoding="ascii")
    return Path(folder)


def made(prefix: str, dir: str | Path | None = None) -> Path:
    """A new folder (tempfile.mkdtemp: mode 0700), marked as this process's."""
    return mark(Path(tempfile.mkdtemp(prefix=prefix, dir=dir)))


def sweep(folder: str | Path | None = None) -> list[Path]:
    """Remove the marked folders of processes that are gone from `folder` (default: the temporary
    folder); the folders removed."""
    root = Path(folder or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(PREFIXES) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            owner = Path(entry.path, MARK).read_text(encoding="ascii")
        except (OSError, ValueError):
            continue
        if not _owner_alive(owner):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed
