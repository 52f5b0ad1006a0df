"""Feedback students can read: verdicts, never hidden test code.

nbgrader puts a test cell's full source, hidden tests included, into the feedback HTML
(upstream issues 917 and 1363). This preprocessor, listed first in
`GenerateFeedback.preprocessors` (nbgrader_config.py), cuts the hidden region out of every
cell before the HTML is written; the cell's outputs (the verdict) stay.

It also makes every markdown cell renderable: a picture the text names (`attachment:x.png`) but
the cell does not hold, which makes nbconvert fail the notebook's feedback ("missing
attachment"), is shown as a small placeholder instead (a notebook graded before pasted
pictures were kept, see intake/assemble.py).

`ForStudents`, listed after nbgrader's GetGrades, makes the page a student's: it opens with the
summary `make my-feedback` prints (totals per notebook and for the step, the late penalty, the
written answers still to be graded, the hidden tests waiting for a person's review; also as JSON for
that command), marks a hidden test waiting for review as such in its heading, shows formulas (in the cells and
in the graders' comments) as MathML (no
MathJax from a network, autograder/publish/mathml.py) and drops the value a test cell returns (its score is in
the cell's heading); the page's template (autograder/templates/course_feedback) puts the summary
first and indexes only the cells worth points. What the grader keeps for the TA alone on a cell sent to
review (grading/judging.py GRADER_VIEW: the decoded source, the values on the hidden cases) is dropped
from every cell before anything else reads the notebook: a student's page never holds it.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from ..decoding import GRADER_VIEW  # for the formgrader's page alone
from ..intake.assemble import ATTACHMENT_REF, _placeholder

BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


def strip_hidden(source: str) -> str:
    kept, hidden = [], False
    for line in source.split("\n"):
        if BEGIN in line:
            hidden = True
        elif END in line:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept).rstrip("\n")


def missing_pictures(cell) -> None:
    """A placeholder for each picture a markdown cell names but does not hold (or holds empty)."""
    attachments = cell.get("attachments")
    attachments = dict(attachments) if isinstance(attachments, dict) else {}
    changed = False
    for name in ATTACHMENT_REF.findall(cell.get("source", "")):
        bundle = attachments.get(name)
        if not (isinstance(bundle, dict) and bundle and all(isinstance(v, str) for v in bundle.values())):
            attachments[name] = _placeholder(f"picture {name[:60]} missing from the notebook")
            changed = True
    if changed:
        cell["attachments"] = nbformat.from_dict(attachments)


class StripHiddenTests(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        cell.get("metadata", {}).pop(GRADER_VIEW, None)
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = strip_hidden(cell.source)
        elif cell.cell_type == "markdown" and "attachment:" in cell.source:
            missing_pictures(cell)
        return cell, resources


SUMMARY_ID = "course-feedback-summary"


def summary_for(db_url: str, step: str, student: str) -> dict | None:
    """{student, step, notebooks, step_totals, term, lines} for one student, from the store's record."""
    from ..course import grader_home
    from ..records.store import Store
    from ..records.totals import summary_lines
    from ..steps import find_step

    found = Store(grader_home(), db_url).load(find_step(step), [student])
    if not found:
        return None
    record = found[0].term
    totals = found[0].totals
    return {
        "student": student,
        "step": step,
        "notebooks": totals["notebooks"],
        "step_totals": totals["step"],
        "term": {k: v for k, v in record.items() if k != "penalties"},
        "lines": summary_lines(student, totals, record),
    }


def feedback_summary(folder: Path) -> dict | None:
    """The scores summary the feedback pages in `folder` carry (autograder/publish/feedback.py); None when
    they carry none (feedback written before there was one)."""
    import json

    pattern = re.compile(r'<script[^>]*id="' + SUMMARY_ID + r'"[^>]*>(.*?)</script>', re.S)
    for page in sorted(Path(folder).glob("*.html")):
        match = pattern.search(page.read_text(encoding="utf-8", errors="replace"))
        if match:
            try:
                return json.loads(match[1])
            except ValueError:
                continue
    return None


def summary_html(summary: dict) -> str:
    import html
    import json

    data = json.dumps(summary, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<div class="course-summary"><b>Your scores for {html.escape(summary["step"])}</b>'
        f"<pre>{html.escape(chr(10).join(summary['lines']))}</pre></div>"
        f'<script type="application/json" id="{SUMMARY_ID}">{data}</script>'
    )


class ForStudents(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        from .mathml import markdown_math_to_mathml

        info = resources.get("nbgrader", {})
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "markdown":
                cell.source = markdown_math_to_mathml(cell.source)
            if isinstance(meta.get("comment"), str) and meta["comment"]:
                meta["comment"] = markdown_math_to_mathml(meta["comment"])  # a grader's formulas too
            if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
                cell.outputs = [o for o in cell.get("outputs", []) if o.get("output_type") != "execute_result"]
        summary = None
        if info.get("db_url") and info.get("student") and info.get("assignment"):
            summary = summary_for(info["db_url"], info["assignment"], info["student"])
        resources["course_summary_html"] = summary_html(summary) if summary else ""
        # a hidden test waiting for a person's review: its heading says so, not "Score: 0"
        waiting = set((summary or {}).get("notebooks", {}).get(info.get("notebook"), {}).get("to_review", []))
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") in waiting:
                cell.metadata["course_review"] = True
        return nb, resources
