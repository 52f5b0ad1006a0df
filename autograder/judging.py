"""Turn an executed notebook into scores: hidden checks judged here, outside the student's kernel.

For every grade cell of the executed notebook:
  * a test cell that calls `hidden(...)`: its probe's plain data (a display output of type
    MIME) is judged by the check's judge; the cell's outputs are replaced by the verdict, and
    a score below full marks is written as the cell's result, which is how nbgrader records
    partial credit;
  * any other test cell: nbgrader's own rule (an error or stderr output scores zero), after
    harmless warnings are stripped from stderr;
  * a manually graded answer: unscored (needs a grader), or zero when left unchanged.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

import nbformat
from nbgrader import utils as nbutils

from .checks.framework import MIME, REGISTRY, judge_data, load_all

# the same pattern as IgnorePattern.pattern in nbgrader_config.py (a test keeps them equal)
HARMLESS_STDERR = r"(?s)^(\S+:\d+: )?(\w+Warning|Matplotlib is building the font cache)"


@dataclass
class CellResult:
    grade_id: str
    score: float | None       # None: waits for a manual grade
    max_score: float
    error: str = ""           # why points were lost, in the student's terms
    kind: str = "auto"        # "auto" or "manual"

    def as_dict(self):
        return asdict(self)


def _error_text(cell) -> str:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename')}: {out.get('evalue')}".strip(": ")
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            lines = out.get("text", "").strip().splitlines()
            return "wrote to stderr" + (f": {lines[-1][:200]}" if lines else "")
    return ""


def _strip_harmless_stderr(cell) -> None:
    cell.outputs = [o for o in cell.get("outputs", [])
                    if not (o.get("output_type") == "stream" and o.get("name") == "stderr"
                            and re.search(HARMLESS_STDERR, o.get("text", "")))]


def judge_notebook(nb, ctx) -> list[CellResult]:
    load_all()
    results = []
    for cell in nb.cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if not nbg.get("grade"):
            continue
        grade_id, points = nbg["grade_id"], float(nbg.get("points", 0))
        if nbg.get("solution"):
            unchanged = nbg.get("checksum") and nbg["checksum"] == nbutils.compute_checksum(cell)
            results.append(CellResult(grade_id, 0.0 if unchanged else None, points,
                                      "no answer given" if unchanged else "", "manual"))
            continue
        if cell.cell_type != "code":
            continue
        _strip_harmless_stderr(cell)
        if grade_id in REGISTRY and "hidden(" in cell.source:
            results.append(_judge_hidden(cell, grade_id, points, ctx))
        else:
            score, _ = nbutils.determine_grade(cell)
            # a check-your-work cell (0 points) that fails still says why: students read it in feedback
            failed = score < points or any(o.get("output_type") == "error" for o in cell.get("outputs", []))
            results.append(CellResult(grade_id, float(score), points, _error_text(cell) if failed else ""))
    return results


def _judge_hidden(cell, grade_id, points, ctx) -> CellResult:
    payloads = [json.loads(json.dumps(o["data"][MIME]))          # plain dicts and lists, not NotebookNodes
                for o in cell.outputs if o.get("output_type") == "display_data" and MIME in o.get("data", {})]
    if len(payloads) == 1 and isinstance(payloads[0], dict) and payloads[0].get("grade_id") == grade_id:
        verdict = judge_data(REGISTRY[grade_id], payloads[0].get("data"), ctx)
        score = round(points * verdict.fraction, 2)
        report = verdict.report(points)
        error = "; ".join(f"{p.name}: {p.message}" if p.message else p.name for p in verdict.failures())
    else:
        score = 0.0
        why = _error_text(cell)
        if len(payloads) > 1:
            error = "the hidden tests produced more than one result (was the checking code changed?)"
        elif why:
            error = f"the hidden tests could not run: {why}"
        else:
            error = "the hidden tests produced no result"
        report = f"Hidden tests: 0 of {points:g} points.\n  ✗ {error}"
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=report + "\n")]
    if score < points:
        cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": f"{score:g}"},
                                                   execution_count=cell.get("execution_count")))
    return CellResult(grade_id, score, points, error)
