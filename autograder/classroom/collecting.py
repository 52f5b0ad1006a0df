"""nbgrader's collect from the folder exchange, without leaving a submission writable by everyone.

nbgrader's submit leaves each submission's folder in the exchange open to all (0777, so that the
instructor can delete it later), and its collect copies that folder with its mode: the collected copy,
in the grading home, would be writable by every account on the machine, which could then add, remove
or replace notebooks of another student's submission before it is graded. CourseCollect, nbgrader's
collect for this course (nbgrader_config.py, `ExchangeFactory.collect`, for `make collect` as for the
formgrader's Collect button), takes that right away from everyone but the owner and the group.
On a hub whose exchange is ngshare the course's collect is NgshareCollect, ngshare-exchange's collect with
the same care, and a submission's file that would land outside its folder left out.
"""

from __future__ import annotations

import functools
import os
import posixpath
import stat

from nbgrader.exchange.default.collect import ExchangeCollect


# The course's collect from ngshare, for nbgrader's ExchangeFactory.collect (hub.user_config, nbgrader_config.py)
NGSHARE_COLLECT = "autograder.classroom.collecting.NgshareCollect"

# The permission bits a collected file or folder may keep: everything for its owner and its group, the
# group's setgid on a folder (a group-shared grading home), and reading (listing) for the others. Any other
# bit (writing for others, setuid, sticky) is dropped.
KEPT_MODE = stat.S_IRWXU | stat.S_IRWXG | stat.S_ISGID | stat.S_IROTH | stat.S_IXOTH


def close_to_others(folder: str) -> None:
    """Nothing in `folder` (itself included) keeps a permission bit beyond KEPT_MODE: none writable by
    others than its owner and its group."""
    for root, dirs, files in os.walk(folder):
        for path in [root, *(os.path.join(root, name) for name in files)]:
            if os.path.islink(path):
                continue
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & ~KEPT_MODE:
                os.chmod(path, mode & KEPT_MODE)


def inside(path: str) -> bool:
    """Whether a file's path as a submission names it (relative, `/`-separated, as ngshare keeps it)
    stays inside the submission's folder: not empty, not absolute, not climbing out with `..`."""
    normal = posixpath.normpath(path.replace("\\", "/")) if path else ""
    return bool(normal) and normal != "." and not normal.startswith(("/", "../")) and normal != ".."


class CourseCollect(ExchangeCollect):
    """nbgrader's collect; each copy closed to others (close_to_others)."""

    def do_copy(self, src, dest, log=None):
        super().do_copy(src, dest, log)
        close_to_others(dest)


@functools.cache
def _ngshare_collect() -> type:
    """NgshareCollect, made when first asked for: ngshare-exchange is in the hub's environment alone
    (.hub-venv, where the instructors' servers and the course's commands on ngshare run nbgrader)."""
    from ngshare_exchange import ExchangeCollect as NgshareExchangeCollect

    class NgshareCollect(NgshareExchangeCollect):
        """ngshare-exchange's collect, which writes a file for each path ngshare's answer names: only the
        files inside the submission's folder (inside), each copy closed to others (close_to_others)."""

        def do_copy(self, src, dest):
            kept = [entry for entry in src if inside(str(entry.get("path", "")))]
            for entry in src:
                if entry not in kept:
                    self.log.warning("Not collected (outside the submission's folder): %r", entry.get("path"))
            super().do_copy(kept, dest)
            close_to_others(dest)

    NgshareCollect.__module__ = __name__
    return NgshareCollect


def __getattr__(name: str):
    """`NgshareCollect`, the import path NGSHARE_COLLECT names, only where ngshare-exchange is installed."""
    if name == "NgshareCollect":
        return _ngshare_collect()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
