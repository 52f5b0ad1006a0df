"""The times each notebook states at its top (required, and optional when it has an optional part)
are the README's rule applied to the release, and the required part (notebooks 1-5) fits the
handout's tasks in their time.

The rule is tests/study_time.py (prose in view at 100 words a minute, plus an allowance per cell by
kind, calibrated on a reviewer's estimates; cells under an "Optional" heading counted apart); the
README's section "How long a notebook takes" states it, and a test keeps the two equal. The handout's
tasks come to about 4 h 15 by this rule, and what the notebooks add beyond them sits in optional sections
(bonus questions, counted apart): the test holds notebooks 1-5 to REQUIRED_LIMIT, 4 h 15; notebook 1 and
the README state the required total. The handout's "~3 hours" (3 h 30 with slack) stays the README's
stated target."""
from __future__ import annotations

import re

import pytest

from conftest import NOTEBOOK_NAMES, ROOT, STEP4, load
from study_time import (ALLOWANCE, STATED_OPTIONAL, STATED_REQUIRED, WORDS_PER_MINUTE, breakdown, kind, minutes,
                        optional_flags, optional_parts, rounded, stated, table, words)

REQUIRED_TARGET = 3 * 60 + 30         # minutes: the handout's ~3 hours, with half an hour's slack
REQUIRED_LIMIT = 4 * 60 + 15          # minutes: the handout's tasks by the calibrated rule
TIMES = {name: (parts, total) for name, parts, total, _ in table(STEP4.release)}
OPTIONAL = {name: extra for name, _, _, extra in table(STEP4.release)}


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_each_notebook_states_the_time_the_rule_gives(name):
    parts, total = TIMES[name]
    shown = ", ".join(f"{k} {v:.1f}" for k, v in parts.items())
    assert stated(load(STEP4.release / f"{name}.ipynb")) == rounded(total), (
        f"{name}: the rule gives {total:.1f} minutes ({shown}): state **about {rounded(total)} minutes** at the top "
        "(python tests/study_time.py prints every notebook's figures)")


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_each_notebook_states_its_optional_time_and_each_optional_part_its_own(name):
    nb = load(STEP4.release / f"{name}.ipynb")
    extra = OPTIONAL[name]
    said = stated(nb, STATED_OPTIONAL)
    if extra:
        assert said == rounded(extra), (
            f"{name}: its optional parts take {extra:.1f} minutes by the rule: state **about {rounded(extra)} "
            "minutes optional** at the top")
    else:
        assert said is None, f"{name} states an optional time but has no optional part"
    for index, value in optional_parts(nb):
        heading = "".join(nb["cells"][index]["source"])
        assert f"about {rounded(value)} minutes" in heading, (
            f"{name}: the optional part at cell {index} takes {value:.1f} minutes: its heading cell should say "
            f"'about {rounded(value)} minutes'")



@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_points_in_an_optional_part_are_bonus_points(name):
    """Full marks never need an optional part: a cell worth points there is a bonus question (its grade id
    starts with the step's bonus prefix), and outside notebook 6 (optional as a whole) a bonus question
    sits in an optional part, where the notebook's time leaves it out."""
    nb = load(STEP4.release / f"{name}.ipynb")
    for cell, flag in zip(nb["cells"], optional_flags(nb)):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not (meta.get("grade") and meta.get("points")):
            continue
        grade_id = meta["grade_id"]
        if flag is not None:
            assert STEP4.is_bonus(grade_id), (
                f"{name}: {grade_id} is worth {meta['points']} points in an optional part: make it a bonus question "
                f"({STEP4.bonus_prefix}{grade_id}) or move it out of the optional part")
        elif not name.startswith("06"):
            assert not STEP4.is_bonus(grade_id), (
                f"{name}: the bonus question {grade_id} is outside every optional part: its time counts as required")

def test_the_required_part_fits_and_notebook_one_states_it():
    required = sum(total for name, (_, total) in TIMES.items() if not name.startswith("06"))
    assert required <= REQUIRED_LIMIT, (
        f"notebooks 1-5 take {required:.1f} minutes by the rule, more than {REQUIRED_LIMIT}: what the handout does "
        "not ask for goes under an 'Optional' heading, into a foldout or into notebook 6")
    first = load(STEP4.release / f"{NOTEBOOK_NAMES[0]}.ipynb")
    found = STATED_REQUIRED.search("\n".join("".join(c["source"]) for c in first["cells"] if c["cell_type"] == "markdown"))
    assert found, f"{NOTEBOOK_NAMES[0]} does not state the required part's time ('notebooks 1–5, is about H h M min')"
    assert 60 * int(found[1]) + int(found[2]) == rounded(required), (
        f"notebook 1 says the required part takes {found[1]} h {found[2]} min; the rule gives {required:.1f} min")


def test_the_readme_states_the_required_time_and_the_target():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### How long a notebook takes"):]
    section = " ".join(section[:section.index("\n#", 1)].split())
    required = sum(total for name, (_, total) in TIMES.items() if not name.startswith("06"))
    hours, minutes = divmod(rounded(required), 60)
    assert f"(the required part, {hours} h {minutes} min)" in section, "the README does not state the required time"
    assert f"{REQUIRED_TARGET // 60} h {REQUIRED_TARGET % 60}" in section, "the README does not state the target"
    today = section[section.index("**Today's times**"):]
    for number, name in enumerate(NOTEBOOK_NAMES, start=1):
        figure = rf"{rounded(TIMES[name][1])}" + (rf" \(\+ {rounded(OPTIONAL[name])} optional\)" if OPTIONAL[name] else "")
        assert re.search(rf"\b{number} {figure}", today), (
            f"the README's 'Today's times' do not give notebook {number} its {rounded(TIMES[name][1])} minutes "
            f"(and its optional {rounded(OPTIONAL[name])})")


def test_tests_and_proofs_weigh_more_than_a_code_answer():
    from study_time import CALIBRATION
    assert set(CALIBRATION) == set(NOTEBOOK_NAMES)          # the estimates the allowances were fitted to
    assert ALLOWANCE["test"] > ALLOWANCE["code answer"] and ALLOWANCE["proof"] > ALLOWANCE["code answer"]


def test_the_readme_states_the_rule_the_test_applies():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### How long a notebook takes"):]
    section = section[:section.index("\n#", 1)]
    assert f"{WORDS_PER_MINUTE} words a minute" in section
    for part, minutes in ALLOWANCE.items():
        assert re.search(rf"\| {re.escape(part)} \| {minutes} \|", section), (
            f"the README's table of allowances should have the row '| {part} | {minutes} |'")


def test_words_in_view_leave_out_foldouts_tags_and_punctuation():
    assert words("Two words | and\n<details><summary>▸ hidden</summary>\nmany hidden words\n</details>") == 3
    assert words("<b>bold</b> $q_i\\cdot k_j$ — 4") == 4         # bold, $q_i\\cdot, k_j$, 4


def _cells(*specs):
    out = []
    for cell_type, text, nbgrader in specs:
        cell = {"cell_type": cell_type, "source": text, "metadata": {"nbgrader": nbgrader} if nbgrader else {}}
        out.append(cell)
    return {"cells": out}


def test_each_kind_of_cell_gets_its_allowance():
    nb = _cells(("markdown", "# Step 9 · a title of seven words", None),
                ("code", "def f(): ...", {"solution": True}),
                ("code", "def check_f(x):\n    ...", {"solution": True}),
                ("code", "NAMES = {...}", {"solution": True}),
                ("markdown", "YOUR ANSWER HERE", {"solution": True, "grade": True, "points": 3, "grade_id": "f_proof"}),
                ("markdown", "YOUR ANSWER HERE", {"solution": True, "grade": True, "points": 2}),
                ("code", "assert f()", {"grade": True, "points": 0}),
                ("code", "hidden(...)", {"grade": True, "points": 2}),
                ("code", "plot()", {"grade": False, "locked": True}),
                ("code", "display(seed_slider(f))", {"grade": False, "locked": True}),
                ("code", "print(1)", None),
                ("markdown", "<details><summary>▸ more</summary>\nwords\n</details>", None),
                ("code", "print(2)", None),
                ("code", "print(3)", None),
                ("markdown", "*Your description (not graded):*", None))
    parts = breakdown(nb)
    assert parts == {"reading": 7 / WORDS_PER_MINUTE, "code answer": ALLOWANCE["code answer"],
                     "test": ALLOWANCE["test"], "value answer": ALLOWANCE["value answer"], "proof": ALLOWANCE["proof"],
                     "written answer": ALLOWANCE["written answer"], "check": ALLOWANCE["check"],
                     "provided": ALLOWANCE["provided"], "slider": ALLOWANCE["slider"], "box": ALLOWANCE["box"],
                     "note": ALLOWANCE["note"]}
    assert kind(nb["cells"][12], after_foldout=True) is None


def test_cells_under_an_optional_heading_count_apart():
    nb = _cells(("markdown", "# Step 9 · title", None),
                ("markdown", "## 1. Required", None),
                ("code", "plot()", {"grade": False, "locked": True}),
                ("markdown", "## 2. Optional: more", None),
                ("code", "plot()", {"grade": False, "locked": True}),
                ("markdown", "### A subsection stays optional", None),
                ("code", "def f(): ...", {"solution": True}),
                ("markdown", "## 3. Required again", None),
                ("code", "plot()", {"grade": False, "locked": True}),
                ("markdown", "### Optional: a deeper look", None),
                ("code", "plot()", {"grade": False, "locked": True}),
                ("markdown", "## 4. Back", None))
    assert breakdown(nb)["provided"] == 2 * ALLOWANCE["provided"]
    optional = breakdown(nb, part="optional")
    assert optional["provided"] == 2 * ALLOWANCE["provided"] and optional["code answer"] == ALLOWANCE["code answer"]
    assert [index for index, _ in optional_parts(nb)] == [3, 9]
    assert minutes(nb) + minutes(nb, part="optional") == sum(minutes(nb, part=i) for i in (3, 9)) + minutes(nb)


def test_the_header_counts_once_in_the_first_notebook():
    first, second = NOTEBOOK_NAMES[:2]
    nb = load(STEP4.release / f"{second}.ipynb")
    assert TIMES[second][1] < sum(breakdown(nb, with_header=True).values())
    assert TIMES[first][1] == sum(breakdown(load(STEP4.release / f"{first}.ipynb"), with_header=True).values())
