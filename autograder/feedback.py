"""Feedback students can read: verdicts, never hidden test code.

nbgrader puts a test cell's full source, hidden tests included, into the feedback HTML
(upstream issues 917 and 1363). This preprocessor, listed first in
`GenerateFeedback.preprocessors` (nbgrader_config.py), cuts the hidden region out of every
cell before the HTML is written; the cell's outputs (the verdict) stay.
"""
from nbgrader.preprocessors import NbGraderPreprocessor

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


class StripHiddenTests(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = strip_hidden(cell.source)
        return cell, resources
