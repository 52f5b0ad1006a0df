"""A class with a hostile student, graded once per test session: the example class (ada, blank,
half) and `mallory`, whose 01-on-paper puts every vector of tests/hostile.py where a page shows it
(the written answers, and HTML, markdown, JavaScript, SVG and picture outputs of an answer cell:
script, requests to REQUEST_HOST, and overlays of a fake score, the last in the written answer
`variance_proof` and in an output),
beside what a page must keep showing (markdown formatting, formulas, a table, a picture pasted into
a written answer, a matplotlib picture, an HTML table). Her answers are otherwise the solutions, so
she is graded like anyone else."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import STEP4, bwrap_or_skip, run_once
from hostile import (HOSTILE_HTML, HOSTILE_MARKDOWN, OVERLAY_HTML, OVERLAY_MATH, PAYLOAD, PNG_1PX, REQUEST_HOST,
                     REQUEST_HTML, REQUEST_MARKDOWN)

HOSTILE = "mallory"
LEGIT_MARKDOWN = ("**Legit bold** and *legit italic*, a formula $\\frac{QK^\\top}{\\sqrt{d_k}}$ and\n\n"
                  "| legit | table |\n|---|---|\n| 1 | 2 |\n\n![pasted picture](attachment:pasted.png)\n")
# A picture big enough to see: 24 x 24 red square (PNG), made without any imaging library.


def _red_square_png() -> str:
    import base64
    import struct
    import zlib
    size = 24
    raw = b"".join(b"\x00" + b"\xd0\x20\x20" * size for _ in range(size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


RED_SQUARE = _red_square_png()


def _code_outputs(solution: str) -> str:
    """The answer cell `shapes`: the solution, then outputs of every kind a page shows."""
    vectors = json.dumps(HOSTILE_HTML + REQUEST_HTML + OVERLAY_HTML)
    markdown = json.dumps(HOSTILE_HTML + HOSTILE_MARKDOWN + REQUEST_MARKDOWN)
    return solution + f"""

from IPython.display import HTML, Markdown, Javascript, SVG, display
for v in {vectors}:
    display(HTML(v))
for v in {markdown}:
    display(Markdown(v))
display(Javascript({PAYLOAD!r}))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="{PAYLOAD}"><script>{PAYLOAD}</script><rect width="5" height="5"/></svg>'))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><image href="http://{REQUEST_HOST}/r70-svg-output.png" width="10" height="10"/></svg>'))
display({{"image/svg+xml": '<svg xmlns="http://www.w3.org/2000/svg"><style>@import url(http://{REQUEST_HOST}/r71-svg-output.css);</style></svg>'}},
        raw=True, metadata={{"image/svg+xml": {{"width": 10}}}})
display({{"image/png": {PNG_1PX!r}}}, raw=True, metadata={{"image/png": {{"width": "1 onerror={PAYLOAD.replace(' ', '')}"}}}})
display({{"image/png": 'x" onerror="{PAYLOAD}'}}, raw=True)
display({{"text/html": '<b>isolated</b><script>{PAYLOAD}</script>'}}, raw=True, metadata={{"text/html": {{"isolated": True}}}})
display({{"application/vnd.jupyter.widget-view+json": {{"model_id": "x", "version_major": 2, "version_minor": 0}},
         "text/plain": "widget"}}, raw=True)
print("A line as long as a check's longest message (270 characters): " + "wrap " * 42)
display(HTML('<table class="legit-table"><tr><th>legit html</th></tr><tr><td>42</td></tr></table>'))
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot([0, 1], [0, 1])
ax.set_title("legit plot")
plt.show()
"""


def hostile_submission(dest: Path) -> Path:
    """mallory/01-on-paper.ipynb in `dest`."""
    from autograder.example import answers_of, with_answers
    answers = answers_of(STEP4, "01-on-paper")
    half = len(HOSTILE_HTML) // 2
    nb = with_answers(STEP4, "01-on-paper", {
        "map_written": "Answer with HTML:\n\n" + "\n\n".join(HOSTILE_HTML[:half] + REQUEST_HTML),
        "simplex_proof": "More HTML:\n\n" + "\n\n".join(HOSTILE_HTML[half:]),
        "causality_proof": "Markdown links:\n\n" + "\n\n".join(HOSTILE_MARKDOWN + REQUEST_MARKDOWN),
        "variance_proof": "The variance is d_k.\n\n" + "\n\n".join(OVERLAY_HTML + OVERLAY_MATH),
        "coupling_expectation": LEGIT_MARKDOWN,
        "shapes": _code_outputs(answers["shapes"]),
    })
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "coupling_expectation":
            cell["attachments"] = {"pasted.png": {"image/png": RED_SQUARE}}
    folder = dest / HOSTILE
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "01-on-paper.ipynb").write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return dest


def grade_hostile_class(example_home: Path, home: Path, sandbox: str) -> dict:
    """The example class's grading home copied to `home`, mallory graded into it, her feedback page
    written (nbgrader's generate_feedback on her graded notebook alone, as for one shard of a class) and
    the reports written again for the whole class. The other students' feedback pages are the example
    class's, as copied: nothing here reads them (`make grade` and `make feedback` would turn each of the
    class's 19 graded notebooks into HTML again, for the one page the tests open)."""
    import pytest

    from autograder.grading.grade import grade, refresh_from_gradebook, write_feedback
    shutil.copytree(example_home, home, ignore=shutil.ignore_patterns("*.lock"), dirs_exist_ok=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("GRADER_HOME", str(home))
    mp.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
    try:
        grade(STEP4, hostile_submission(home / "hostile-class"), workers=1, sandbox=sandbox, quiet=True,
              feedback=False)
        refresh_from_gradebook(STEP4, quiet=True, feedback=False)
        failed = write_feedback(STEP4, [HOSTILE], quiet=True, only_these=True)
        assert not failed, failed
    finally:
        mp.undo()
    return {"students": ["ada", "blank", "half", HOSTILE]}


def hostile_class(tmp_path_factory, example_class) -> Path:
    """The grading home of the class with mallory (read it, never write into it: copy it first)."""
    box = bwrap_or_skip()
    folder, _ = run_once(tmp_path_factory, "hostile-class",
                         lambda home: grade_hostile_class(example_class[0], home, box))
    return folder
