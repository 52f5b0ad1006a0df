"""Feedback students can read: verdicts, never hidden test code.

nbgrader puts a test cell's full source, hidden tests included, into the feedback HTML
(upstream issues 917 and 1363). This preprocessor, listed first in
`GenerateFeedback.preprocessors` (nbgrader_config.py), cuts the hidden region out of every
cell before the HTML is written; the cell's outputs (the verdict) stay.

It also makes every markdown cell renderable: a picture the text names (`attachment:x.png`) but
the cell does not hold, which makes nbconvert fail the notebook's feedback ("missing
attachment"), is shown as a small placeholder instead (a notebook graded before pasted
pictures were kept, see assemble.py).
"""
import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from .assemble import ATTACHMENT_REF, _placeholder

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
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = strip_hidden(cell.source)
        elif cell.cell_type == "markdown" and "attachment:" in cell.source:
            missing_pictures(cell)
        return cell, resources
