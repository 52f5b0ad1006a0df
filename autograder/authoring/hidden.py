"""How a hidden test cell names its check: `hidden("<grade_id>", globals())`, once, in a cell marked
BEGIN HIDDEN TESTS. Read when the release is stamped (stamp.py) and when a hidden test runs without a
grader (autograder/selfgrade.py, in a kernel): apart from stamp.py, so that a kernel reading a cell does
not import nbgrader (about 1.8 s of a new process's start).
"""

from __future__ import annotations

import re

from ..errors import GraderError

HIDDEN_CALL = re.compile(r"""^hidden\(\s*["'](?P<grade_id>[\w-]+)["']\s*,\s*globals\(\)\s*\)\s*$""", re.M)


class HiddenTestError(GraderError, ValueError):
    """A hidden test cell that does not name its check as the engine expects."""


def hidden_call(source: str) -> str | None:
    """The grade_id a hidden test cell names, or None for any other cell."""
    if "BEGIN HIDDEN TESTS" not in source:
        return None
    calls = HIDDEN_CALL.findall(source)
    if len(calls) != 1:
        raise HiddenTestError(
            f'a hidden test cell must call hidden("<grade_id>", globals()) once, not {len(calls)} times:\n{source}'
        )
    return calls[0]
