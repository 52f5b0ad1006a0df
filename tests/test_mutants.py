"""The hidden checks against mechanically made wrong answers (tests/mutants.py, `make mutants`).

Every CI run judges a fixed sample of the mutants (every 12th by id) in-process, as `make mutants`
judges them all: each must lose points on its hidden test, unless it is listed as equivalent (then
it must keep full marks) or as a survivor with its reason. The table in tests/mutation_table.md
must be the one the current solutions give (the same mutants), and every listed mutant must exist.
"""
from __future__ import annotations

import json
import re

import pytest

import mutants
from collection_cache import MADE_FROM, cached
from conftest import STEP4
from mutant_equivalents import EQUIVALENT, SURVIVING

ALL = cached("all-mutants", MADE_FROM, mutants.all_mutants)  # made once per change of the solutions
# Code answers no hidden test judges: notebook 06's parts 4 and 5 (a head built by hand, the
# mask-convention trap) are explorations checked by their own visible self-checks, for no points.
SELF_CHECKED = {"vowel_head", "padded_keep_mask"}
SAMPLE = sorted(ALL, key=lambda m: m.id)[::12]


def test_every_graded_code_answer_is_mutated():
    """Each hidden test that judges a code answer has its answer in tests/mutants.py."""
    covered = {a.check for a in mutants.ANSWERS.values()}
    code_answers, self_checked_graded = set(), set()
    for notebook in STEP4.notebooks():
        cells = json.loads((STEP4.source / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
        code_answers |= {c["metadata"]["nbgrader"]["grade_id"] for c in cells if c["cell_type"] == "code"
                         and c.get("metadata", {}).get("nbgrader", {}).get("solution")}
        self_checked_graded |= {c["metadata"]["nbgrader"]["grade_id"] for c in cells
                                if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") in SELF_CHECKED
                                and (c["metadata"]["nbgrader"].get("grade") or c["metadata"]["nbgrader"].get("points"))}
    assert SELF_CHECKED <= code_answers, "an answer listed as self-checked is no longer in the notebooks"
    assert not self_checked_graded, f"self-checked answers that now carry points need a mutant entry: {self_checked_graded}"
    assert code_answers - SELF_CHECKED == set(mutants.ANSWERS), \
        "tests/mutants.py ANSWERS should name every code answer cell a hidden test judges"
    assert covered <= set(STEP4.checks)
    hidden_of_code = {gid for gid in STEP4.checks} - covered
    assert not hidden_of_code, f"hidden tests no mutant is tried on: {sorted(hidden_of_code)}"


def test_the_table_is_current_and_every_listed_mutant_exists():
    ids = {m.id for m in ALL}
    stale = (set(EQUIVALENT) | set(SURVIVING)) - ids
    assert not stale, f"tests/mutant_equivalents.py lists mutants the solutions no longer give: {sorted(stale)}"
    text = mutants.TABLE.read_text(encoding="utf-8")
    for name in mutants.ANSWERS:
        made = sum(m.answer == name for m in ALL)
        row = re.search(rf"^\| `{name}` \| `[^`]+` \| (\d+) \|", text, re.M)
        assert row and int(row.group(1)) == made, f"{name}: the table is stale (make mutants): {made} mutants now"


@pytest.mark.parametrize("mutant", SAMPLE, ids=lambda m: m.id)
def test_a_mutant_loses_points_unless_listed(mutant):
    state, got, full, why = mutants.outcome(mutant)
    detail = f"{mutant.operator}, line {mutant.line}: {mutant.before!r} -> {mutant.after!r}; {got} of {full}: {why}"
    assert state != "survived", f"the hidden test does not see this mutant: {detail}"
    assert state != "equivalent-but-killed", f"an equivalent mutant lost points (a false fail): {detail}"
