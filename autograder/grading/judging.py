"""Turn an executed notebook into scores: hidden checks judged here, outside the student's kernel.

For every grade cell of the executed notebook:
  * a test cell that calls `hidden(...)`: the plain data its probe gathered from the kernel while
    the cell ran (kept by the probe server) is judged by the check's judge; the cell's outputs are
    replaced by the verdict, and
    a score below full marks is written as the cell's result, which is how nbgrader records
    partial credit;
  * any other test cell: nbgrader's own rule (an error or stderr output scores zero), after
    harmless warnings are stripped from stderr;
  * a manually graded answer: unscored (needs a grader), or zero when left unchanged.

A hidden test whose check could not decide a part (Verdict.needs_review: code it cannot follow)
takes nothing for it: the cell is unscored, kind "review", its `error` saying why, and its output
tells the TA (the formgrader shows the autograded notebook) and the student (the feedback) that a
person gives its score. The store then leaves the cell's auto_score empty and flags it
`needs_manual_grade` in nbgrader's gradebook, as a written answer is: the formgrader lists it among
the cells to grade by hand, and the score a TA gives there is the cell's score everywhere.
"""

from __future__ import annotations

import re
import textwrap
import nbformat
from nbgrader import utils as nbutils

from ..checks.framework import judge_data, shown_cell_error
from ..nbgrader_cmd import HARMLESS_STDERR  # also nbgrader's IgnorePattern (nbgrader_config.py)
from ..records.model import CellResult


def _error_text(cell) -> str:
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:  # the last one: the grader's own (time limit, dead kernel) comes after the student's
        return f"{errors[-1].get('ename')}: {errors[-1].get('evalue')}".strip(": ")
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            lines = out.get("text", "").strip().splitlines()
            return "wrote to stderr" + (f": {lines[-1][:200]}" if lines else "")
    return ""


def _hidden_error_text(cell) -> str:
    """What a hidden test cell that produced no result shows of why (framework.shown_cell_error): its
    last error's kind, with the grader's fixed words for the grader's own; never the text."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        return shown_cell_error(errors[-1].get("ename"))
    if any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", [])):
        return "wrote to stderr"
    return ""


def _strip_harmless_stderr(cell) -> None:
    cell.outputs = [
        o
        for o in cell.get("outputs", [])
        if not (
            o.get("output_type") == "stream"
            and o.get("name") == "stderr"
            and re.search(HARMLESS_STDERR, o.get("text", ""))
        )
    ]


def _machine_paths() -> list[tuple[str, str]]:
    """(prefix, what students see instead): the course folder and the Python installation."""
    import sys
    from ..course import ROOT

    pairs = [(str(ROOT) + "/", "")]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        pairs.append((prefix.rstrip("/") + "/", "<python>/"))
    return sorted(pairs, key=lambda p: -len(p[0]))


def hide_machine_paths(nb) -> None:
    """Tracebacks of the grader's kernel name files by absolute paths (the course folder, the Python
    installation): feedback shows them relative instead, as a student's own machine would."""
    pairs = _machine_paths()

    def clean(text):
        if isinstance(text, list):
            text = "".join(text)
        for prefix, instead in pairs:
            text = text.replace(prefix, instead)
        return text

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = [clean(line) for line in out.get("traceback", [])]
                out["evalue"] = clean(out.get("evalue", ""))
            elif out.get("output_type") == "stream":
                out["text"] = clean(out.get("text", ""))
            elif "text/plain" in out.get("data", {}):
                out["data"]["text/plain"] = clean(out["data"]["text/plain"])


def judge_notebook(nb, server) -> list[CellResult]:
    hide_machine_paths(nb)
    results = []
    for cell in nb.cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if not nbg.get("grade"):
            continue
        grade_id, points = nbg["grade_id"], float(nbg.get("points", 0))
        if nbg.get("solution"):
            unchanged = nbg.get("checksum") and nbg["checksum"] == nbutils.compute_checksum(cell)
            results.append(
                CellResult(
                    grade_id, 0.0 if unchanged else None, points, "no answer given" if unchanged else "", "manual"
                )
            )
            continue
        if cell.cell_type != "code":
            continue
        _strip_harmless_stderr(cell)
        if grade_id in server.checks and "hidden(" in cell.source:
            results.append(_judge_hidden(cell, grade_id, points, server))
        else:
            score, _ = nbutils.determine_grade(cell)
            # a check-your-work cell (0 points) that fails still says why: students read it in feedback
            failed = score < points or any(o.get("output_type") == "error" for o in cell.get("outputs", []))
            results.append(CellResult(grade_id, float(score), points, _error_text(cell) if failed else ""))
    return results


def _judge_hidden(cell, grade_id, points, server) -> CellResult:
    """The probe ran in the grader while this cell ran (autograder/checks/probeserver.py): its data is there."""
    if grade_id in server.results:
        verdict = judge_data(server.checks[grade_id], server.results[grade_id], server)
        score = round(points * verdict.fraction, 2)
        report = verdict.report(points)
        error = verdict.failure_text()
        if verdict.needs_review:
            decided = score
            report += "\n\n" + "\n".join(
                textwrap.wrap(
                    f"For the grader: this cell waits for your score (the parts decided above give {decided:g} of "
                    f"{points:g}; give the whole cell's score, {points:g} if the parts marked ? are as asked).",
                    100,
                )
            )
            # the decided points as the cell's value too: anything that scores the cell by nbgrader's own rule
            # (determine_grade) gets the points decided, never full marks (the store leaves it empty)
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=report + "\n"),
                nbformat.v4.new_output(
                    "execute_result", data={"text/plain": f"{decided:g}"}, execution_count=cell.get("execution_count")
                ),
            ]
            return CellResult(grade_id, None, points, verdict.review_text(), "review")
    else:
        score = 0.0
        # what the cell shows came from the student's code run on hidden inputs (or from the grader, which
        # a student's exception can imitate): its kind only (framework.shown_cell_error)
        why = _hidden_error_text(cell)
        if why:
            error = f"the hidden tests could not run: {why}"
        else:
            error = "the hidden tests produced no result"
        report = f"Hidden tests: 0 of {points:g} points.\n  ✗ {error}"
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=report + "\n")]
    if score < points:
        cell.outputs.append(
            nbformat.v4.new_output(
                "execute_result", data={"text/plain": f"{score:g}"}, execution_count=cell.get("execution_count")
            )
        )
    return CellResult(grade_id, score, points, error)
