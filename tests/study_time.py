"""The study time of a notebook, by the rule the README states ("How long a notebook takes").

    time = words of prose in view / 100 words a minute
         + an allowance for every cell the student works in or runs, by kind (ALLOWANCE)

The allowances are calibrated (CALIBRATION below): an experienced reviewer estimated each notebook's
time for a student who knows Python and basic PyTorch and is new to attention; the allowances are the
whole minutes that bring the rule closest to those estimates (least squares of the relative errors
over the six notebooks), with the reading speed and the small allowances fixed beforehand and a proof
and a written test required to weigh more than a code answer.

Prose in view: the markdown a student reads in the released notebook, without
the written-answer cells and without the ▸ foldouts (`<details>`), which are there when needed; HTML
tags are not words, and a word needs a letter or a digit (a table's `|` is not one). A live Python box
that follows a foldout, directly or after other boxes, belongs to that foldout and costs nothing. The
header every notebook starts with (the instructions, your name, the due date: every cell before the
notebook's title, `# Step ...`) is the same in every notebook and is counted in the first one only.

Optional parts: a markdown heading whose text contains "Optional" opens an optional part, which runs
until the next heading of the same or a higher level (fewer `#`); its cells are counted apart, as the
notebook's optional time, and the notebook's (required) time leaves them out. Each notebook states
both ("**about N minutes**", and "**about M minutes optional**" when it has an optional part), and
each optional part states its own time ("about K minutes") in its heading cell.

    python tests/study_time.py          the rule's figures for every notebook of the step
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

WORDS_PER_MINUTE = 100          # technical reading, with formulas to follow
ALLOWANCE = {                   # minutes per cell, by kind
    "test": 19,                 # write a check (a `def check_...`) that passes correct code and catches broken code
    "proof": 10,                # a graded proof in words (an answer cell whose grade id ends in `_proof`)
    "code answer": 9,           # write a function from its spec, run its check, fix it
    "written answer": 4,        # a graded answer in words: an explanation
    "value answer": 3,          # a graded value, not a function (a set, a number): predict it, write it
    "note": 3,                  # a description you write for yourself, not graded ("*Your description ...")
    "provided": 3,              # a provided code cell: read the code, run it, read its output or picture
    "slider": 3,                # a provided cell with a slider: move it and look
    "check": 1,                 # a "check your work" cell: run it, read its message
    "box": 1,                   # a live Python box in view (not under a foldout)
}
# The reviewer's estimates the allowances were fitted to (minutes, low and high), for the notebooks as
# they were then: notebooks 1-5 took 193 minutes by the rule before (150 words a minute; 5 per code
# answer, 4 per written answer or proof, 1 per cell run), against 290-375 by the reviewer.
CALIBRATION = {"01-on-paper": (60, 75), "02-the-head": (40, 50), "03-the-tests": (100, 130),
               "04-attention-on-text": (60, 80), "05-attention-as-smoothing": (30, 40),
               "06-going-further": (150, 210)}
DETAILS = re.compile(r"<details>.*?</details>", re.S)
TAG = re.compile(r"<[^>]+>")
WORD = re.compile(r"\S+")
SLIDER = re.compile(r"\b\w+_slider\(")
STATED = re.compile(r"\*\*about (\d+) minutes\*\*")
STATED_OPTIONAL = re.compile(r"\*\*about (\d+) minutes optional\*\*")
STATED_REQUIRED = re.compile(r"notebooks 1–5, is about (\d+) h (\d+) min")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$", re.M)


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def words(markdown: str) -> int:
    """Words of prose in view: foldouts and HTML tags left out; a word has a letter or a digit."""
    visible = TAG.sub(" ", DETAILS.sub(" ", markdown))
    return sum(1 for w in WORD.findall(visible) if any(ch.isalnum() for ch in w))


def kind(cell: dict, after_foldout: bool) -> str | None:
    """The kind of a cell for its allowance (None: no allowance)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    text = _text(cell)
    if cell["cell_type"] == "markdown":
        if meta.get("solution"):
            return "proof" if str(meta.get("grade_id", "")).endswith("_proof") else "written answer"
        return "note" if text.startswith("*Your ") else None
    if meta.get("solution"):
        if re.search(r"^def check_\w+\(", text, re.M):
            return "test"
        return "code answer" if re.search(r"^def \w+\(", text, re.M) else "value answer"
    if meta.get("grade"):
        return None if meta.get("points") else "check"     # a hidden test shows nothing to work on
    if meta:
        return "slider" if SLIDER.search(text) else "provided"
    return None if after_foldout else "box"


def header_length(nb: dict) -> int:
    """The number of cells before the notebook's title (`# Step ...`): the header."""
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown" and _text(cell).startswith("# Step"):
            return index
    return 0


def headings(cell: dict) -> list[tuple[int, str]]:
    """The markdown headings of a cell, outside its foldouts: (level, text)."""
    if cell["cell_type"] != "markdown":
        return []
    return [(len(m[1]), m[2]) for m in HEADING.finditer(DETAILS.sub(" ", _text(cell)))]


def optional_flags(nb: dict) -> list[int | None]:
    """For every cell, the index of the heading cell of the optional part it lies in, or None."""
    flags, opened = [], None              # opened: (level, index of the heading cell) of the optional part
    for index, cell in enumerate(nb["cells"]):
        for level, title in headings(cell):
            if opened and level <= opened[0]:
                opened = None
            if opened is None and "optional" in title.lower():
                opened = (level, index)
        flags.append(opened[1] if opened else None)
    return flags


def breakdown(nb: dict, with_header: bool = True, part: str = "required") -> dict[str, float]:
    """Minutes by part: "reading" and one entry per kind of cell (the header left out unless with_header).
    part: "required" (the cells outside the optional parts), "optional" (the cells inside them), or
    the index of an optional part's heading cell (that part alone)."""
    parts = {"reading": 0.0}
    after_foldout = False
    flags = optional_flags(nb)
    start = 0 if with_header else header_length(nb)
    for index, cell in enumerate(nb["cells"]):
        text = _text(cell)
        counted = index >= start and (flags[index] is None if part == "required" else
                                      flags[index] is not None if part == "optional" else flags[index] == part)
        if cell["cell_type"] == "markdown":
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if counted and not meta.get("solution") and not text.startswith("*Your "):
                parts["reading"] += words(text) / WORDS_PER_MINUTE
            after_foldout = text.rstrip().endswith("</details>")
        kind_ = kind(cell, after_foldout)
        if kind_ and counted:
            parts[kind_] = parts.get(kind_, 0) + ALLOWANCE[kind_]
        if cell["cell_type"] == "code" and cell.get("metadata", {}).get("nbgrader"):
            after_foldout = False                 # a provided or graded cell ends the foldout's boxes
    return parts


def minutes(nb: dict, with_header: bool = True, part: str = "required") -> float:
    return sum(breakdown(nb, with_header, part).values())


def optional_parts(nb: dict) -> list[tuple[int, float]]:
    """(index of the heading cell, minutes) for every optional part of a notebook, in order."""
    return [(index, minutes(nb, True, index)) for index in dict.fromkeys(f for f in optional_flags(nb) if f is not None)]


def rounded(value: float) -> int:
    """To the nearest 5 minutes (halves up), as the notebooks state it."""
    return 5 * math.floor(value / 5 + 0.5)


def stated(nb: dict, pattern: re.Pattern = STATED) -> int | None:
    """The minutes a notebook states at its top ("**about 45 minutes**"), or None; with
    pattern=STATED_OPTIONAL, its optional time ("**about 20 minutes optional**")."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            found = pattern.search(_text(cell))
            if found:
                return int(found[1])
    return None


def table(release: Path) -> list[tuple[str, dict[str, float], float, float]]:
    """(notebook, required minutes by part, required minutes, optional minutes) for every notebook of
    a release, in order; the header is counted in the first notebook only."""
    rows = []
    for index, path in enumerate(sorted(release.glob("*.ipynb"))):
        nb = json.loads(path.read_text(encoding="utf-8"))
        rows.append((path.stem, breakdown(nb, index == 0), minutes(nb, index == 0),
                     minutes(nb, index == 0, "optional")))
    return rows


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from autograder.steps import find_step
    step = find_step(None)
    required = optional = 0.0
    for name, parts, total, extra in table(step.release):
        shown = ", ".join(f"{k} {v:.1f}" for k, v in parts.items())
        print(f"{name:28s} {total:6.1f} min -> states {rounded(total)}, optional {extra:5.1f} -> {rounded(extra)}"
              f"   ({shown})")
        nb = json.loads((step.release / f"{name}.ipynb").read_text(encoding="utf-8"))
        for index, value in optional_parts(nb):
            title = headings(nb["cells"][index])[0][1]
            print(f"    optional part at cell {index} ({title[:50]}): {value:.1f} min -> {rounded(value)}")
        if not name.startswith("06"):
            required += total
            optional += extra
    print(f"required part (notebooks 1-5): {required:.1f} min -> {rounded(required)} min; "
          f"their optional parts {optional:.1f} min -> {rounded(optional)} min")
