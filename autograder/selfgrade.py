"""A hidden test run without a grader: the instructor's kernel (JupyterLab on a source notebook),
`make solutions`, plain `nbgrader autograde`, and tests that call a check on answers of their own.

`hidden("<grade_id>", globals())` in a kernel with no grader to serve (no GRADER_SOCKET) comes here
(autograder/runtime names this module; it imports nothing of the grader, so a graded kernel, which
is given the runtime and nothing else, cannot reach it): the same requests as in grading, answered
by the runtime from the notebook's namespace through a probe server on a socket of its own, judged
in this process.
"""

from __future__ import annotations

import ast
import inspect
import os
import shutil
import tempfile
import textwrap
from pathlib import Path

from .checks.framework import Verdict, judge_data
from .checks.probeserver import ProbeServer
from .runtime import serve
from .authoring.hidden import HiddenTestError, hidden_call
from .steps import all_steps, find_step, step_of_notebook


def probe_and_judge(grade_id: str, ns: dict, step=None, case_key: bytes | None = None) -> Verdict:
    """The whole hidden test in this process, through the same requests as in grading. The student's
    code, for checks that read it, is the kernel's input history (IPython's `In`). `case_key`: the
    course key this submission's own cases are drawn with (None: UNKEYED, as without a grader)."""
    step = step or step_with(grade_id)
    folder = tempfile.mkdtemp(prefix="probe-")
    try:
        with ProbeServer(str(Path(folder) / "probe.sock"), step) as server:
            server.expect(grade_id)
            server.sources = _sources_of(ns)
            server.case_key = case_key
            serve(server.socket_path, grade_id, ns)
            server.expect(None)
            return judge_data(step.checks[grade_id], server.results.get(grade_id), server)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sources_of(ns: dict) -> list[str]:
    """The student's code, for checks that read it, without a grader: the kernel's input history
    (IPython's `In`), or else the source of each function in the namespace (a test calling a check
    on functions of its own)."""
    history = ns.get("In")
    if isinstance(history, list) and any(isinstance(cell, str) and cell for cell in history):
        # the instructor's own hidden test cells (`hidden("<id>", globals())`, run in process when the
        # source notebook runs) are the grader's code, not the student's: left out, as grading leaves them out
        return [cell for cell in history if isinstance(cell, str) and not _is_hidden_cell(cell)]
    sources = []
    for name, value in list(ns.items()):
        if inspect.isfunction(value):
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(value)))
            except (OSError, TypeError, SyntaxError):
                continue
            if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
                tree.body[0].name = str(name)  # defined under another name, given as `name`
            sources.append(ast.unparse(tree))
    return sources


def _is_hidden_cell(text: str) -> bool:
    try:
        return hidden_call(text) is not None
    except HiddenTestError:
        return False


def step_with(grade_id: str):
    """The step whose hidden test `grade_id` is, for a notebook run without a grader (JupyterLab,
    `make solutions`): $COURSE_STEP, else the step its folder names, else the one step that has it."""
    if os.environ.get("COURSE_STEP"):
        return find_step(os.environ["COURSE_STEP"])
    here = step_of_notebook(os.getcwd())
    if here is not None and grade_id in here.checks:
        return here
    having = [s for s in all_steps() if grade_id in s.checks]
    if len(having) != 1:
        raise LookupError(
            f"hidden test {grade_id!r}: found in {len(having)} steps "
            f"({', '.join(s.name for s in having) or 'none'}); set COURSE_STEP to the step's name"
        )
    return having[0]


def hidden_here(grade_id: str, ns: dict):
    """A hidden test cell run without a grader: prints the verdict, returns the points (nbgrader
    reads a number returned by a test cell as partial credit)."""
    step = step_with(grade_id)
    check = step.checks[grade_id]
    verdict = probe_and_judge(grade_id, ns, step)
    print(verdict.report(check.points))
    return round(check.points * verdict.fraction, 2)


hidden = hidden_here
