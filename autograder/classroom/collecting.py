"""nbgrader's collect from the folder exchange, without leaving a submission writable by everyone.

nbgrader's submit leaves each submission's folder in the exchange open to all (0777, so that the
instructor can delete it later), and its collect copies that folder with its mode: the collected copy,
in the grading home, would be writable by every account on the machine, which could then add, remove
or replace notebooks of another student's submission before it is graded. CourseCollect, nbgrader's
collect for this course (nbgrader_config.py, `ExchangeFactory.collect`, for `make collect` as for the
formgrader's Collect button), takes that right away from everyone but the owner and the group.
"""

from __future__ import annotations

import os
import stat

from nbgrader.exchange.default.collect import ExchangeCollect


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


class CourseCollect(ExchangeCollect):
    """nbgrader's collect; each copy closed to others (close_to_others)."""

    def do_copy(self, src, dest, log=None):
        super().do_copy(src, dest, log)
        close_to_others(dest)
