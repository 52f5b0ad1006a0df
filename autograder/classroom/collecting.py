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


def close_to_others(folder: str) -> None:
    """Nothing in `folder` (itself included) writable by others than its owner and its group."""
    for root, dirs, files in os.walk(folder):
        for path in [root, *(os.path.join(root, name) for name in files)]:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & stat.S_IWOTH and not os.path.islink(path):
                os.chmod(path, mode & ~stat.S_IWOTH)


class CourseCollect(ExchangeCollect):
    """nbgrader's collect; each copy closed to others (close_to_others)."""

    def do_copy(self, src, dest, log=None):
        super().do_copy(src, dest, log)
        close_to_others(dest)
