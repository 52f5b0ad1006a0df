"""Every instruction to change a cell points at a cell the student can change.

"Put `my_head` in place of `head` in the cell" under a locked cell, or "change `lam` to 1 and run
the cell again" after one, asks for what JupyterLab refuses (nbgrader's LockCells makes a locked
cell `editable: false`), and a student who copies the cell to get round it learns nothing the
sentence meant. This test reads the released notebooks' markdown, finds the sentences that ask the
student to change something in a cell, works out which cell they name, and checks that cell is the
student's: editable in JupyterLab, and kept as the student left it when graded (an answer cell, or a
live Python box: a code cell without nbgrader metadata; autograder/intake/assemble.py resets every other).

A sentence asks for a change when one of EDIT's verbs is an imperative (it starts the sentence or a
clause: "Change ...", ", put ...", "then change ...", "for you to change") and it says "cell" or
"box"; a description ("boxes you can edit") is not an instruction. The cell it names is:
  * the nearest code cell above the sentence's markdown cell when it says "the cell/box above" or
    "run the cell/box again";
  * otherwise the code cells right below it (the first code cell after it and the code cells that
    follow that one directly): "the box below", "the boxes under them", "in the cell";
  * and, when the verb is followed by a `name` ("change `lam` ..."), also the cell that binds that
    name (the nearest one above, else the first below).
"""
import ast
import re

import pytest

from conftest import NOTEBOOK_NAMES, STEP4, cell_text, load, nbgrader_meta

EDIT = re.compile(r"(?:^|[:;,(]|\bthen|\band|\bfor you to)\s*(change|edit|modify|replace|put)\b", re.I)
CELL = re.compile(r"\b(cell|box)(e?s)?\b", re.I)
ABOVE = re.compile(r"\b(cell|box)\s+(above|again)\b", re.I)
NAMED = re.compile(r"\b(?:change|edit|modify|replace|put)\s+`(\w+)`", re.I)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def instructions(markdown: str) -> list[str]:
    """The sentences of a markdown cell that ask the student to change something in a cell."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    return [s.strip() for s in SENTENCE.split(text) if EDIT.search(s.strip()) and CELL.search(s)]


def binds(source: str, name: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
    return False


def named_cells(cells: list[dict], at: int, sentence: str) -> list[int]:
    """The indices of the code cells the sentence of markdown cell `at` asks to change."""
    code = [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    above = [i for i in code if i < at]
    below = [i for i in code if i > at]
    if ABOVE.search(sentence):
        found = above[-1:]
    else:
        found = []
        for i in below:
            if found and i != found[-1] + 1:
                break
            found.append(i)
    for name in NAMED.findall(sentence):
        binding = [i for i in above if binds(cell_text(cells[i]), name)][-1:] or \
                  [i for i in below if binds(cell_text(cells[i]), name)][:1]
        assert binding, f"the sentence asks to change `{name}`, which no code cell binds: {sentence!r}"
        found += binding
    return sorted(set(found))


def students(cell: dict) -> bool:
    """Editable in JupyterLab, and graded as the student left it."""
    meta = nbgrader_meta(cell)
    editable = cell.get("metadata", {}).get("editable", True) is not False and not meta.get("locked")
    kept = meta.get("solution") or not meta
    return bool(editable and kept)


def problems(nb: dict) -> tuple[int, list[str]]:
    """(how many instructions were read, the ones that name a cell the student cannot change)."""
    cells, read, wrong = nb["cells"], 0, []
    for at, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for sentence in instructions(cell_text(cell)):
            read += 1
            targets = named_cells(cells, at, sentence)
            if not targets:
                wrong.append(f"cell {at}: {sentence!r} names no code cell")
            for i in targets:
                if not students(cells[i]):
                    wrong.append(f"cell {at}: {sentence!r} asks to change cell {i} ({cells[i].get('id')}), "
                                 "which the student cannot change (locked, or reset when graded)")
    return read, wrong


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_instruction_to_change_a_cell_names_a_cell_the_student_can_change(name):
    read, wrong = problems(load(STEP4.release / f"{name}.ipynb"))
    assert read, f"{name}: no instruction found (every notebook's header asks for the student's name below)"
    assert not wrong, f"{name}:\n" + "\n".join(wrong)


def test_the_rule_finds_the_cell_each_kind_of_sentence_names():
    def md(text):
        return {"cell_type": "markdown", "metadata": {}, "source": text}

    def box(text, **nbgrader):
        meta = {"nbgrader": {"locked": True, "grade_id": "g", **nbgrader}, "editable": False} if nbgrader else {}
        return {"cell_type": "code", "metadata": meta, "source": text}

    locked = box("lam = 10\nprint(lam)", grade=False, solution=False)
    nb = {"cells": [locked, md("Change `lam` to 1 and run the cell again."), box("y = 1"), box("z = 2"),
                    md("Put `y` in place of `z` in the cell."), locked, md("No instruction here.")]}
    read, wrong = problems(nb)
    assert read == 2
    assert [w.split(":")[0] for w in wrong] == ["cell 1", "cell 4"], wrong
    assert named_cells(nb["cells"], 1, "Change `lam` to 1 and run the cell again.") == [0]
    assert named_cells(nb["cells"], 1, "Edit the boxes below.") == [2, 3]
    assert named_cells(nb["cells"], 4, "Put `y` in place of `z` in the cell.") == [2, 5]
    assert instructions("The box below changes token 5. Try it in the box below. Boxes you can edit.") == []
    assert len(instructions("Open them, run the boxes, change them. Then change `a` in the box below.")) == 2
