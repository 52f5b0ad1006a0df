"""The "check your work" cells (visible, 0 points) proved on the corpus, in-process and without a kernel.

A visible check that accepts a wrong answer misleads the student before they submit. For each corpus
entry, the notebook's provided cells, the entry's answers and the visible check cells run in order in
one fresh namespace, as "Restart and run all" would run them (hidden test cells are left out). Then:

* a correct variant passes every visible check of its notebook;
* a wrong entry makes the visible check of every answer it replaces fail (raise AssertionError: any
  other error is the answer's or the check's code breaking, not the check catching it), unless the entry
  says why that check cannot see its mistake (`visible_passes={"<grade_id>": "why"}`);
* every visible check cell is made to fail by at least one wrong entry.

The visible check cells are read from the released notebooks (code cells with `grade` and 0 points);
the answer a check belongs to is the nearest answer cell above it. Provided cells that define nothing a
later answer or check reads (plots, sliders, explorations) are skipped to keep this fast.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json

import matplotlib
import pytest

matplotlib.use("Agg")       # pictures drawn in this process, never shown (the kernels it starts keep theirs)

from autograder.course import RELEASE  # noqa: E402
from autograder.example import answers_of  # noqa: E402

from proof_corpus import CORRECT, WRONG, Entry  # noqa: E402
from conftest import STEP, STEP4  # noqa: E402

def release_cells(notebook: str) -> list[dict]:
    nb = json.loads((RELEASE / STEP / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    cells = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        meta = c.get("metadata", {}).get("nbgrader", {})
        source = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if meta.get("solution"):
            kind = "answer"
        elif meta.get("grade"):
            kind = "visible" if not meta.get("points") else "hidden"
        else:
            kind = "provided"
        cells.append({"kind": kind, "grade_id": meta.get("grade_id", ""), "source": source})
    return cells


NOTEBOOKS = sorted(p.stem for p in (RELEASE / STEP).glob("*.ipynb"))
VISIBLE = {nb: [c["grade_id"] for c in release_cells(nb) if c["kind"] == "visible"] for nb in NOTEBOOKS}


def checked_answers(notebook: str) -> dict[str, str]:
    """{visible check grade_id: the answer cell it checks}: the nearest code answer cell above it."""
    result, answer = {}, None
    for cell in release_cells(notebook):
        if cell["kind"] == "answer":
            answer = cell["grade_id"]
        elif cell["kind"] == "visible":
            assert answer, f"{notebook}: the visible check {cell['grade_id']} follows no answer cell"
            result[cell["grade_id"]] = answer
    return result


CHECKS = {nb: checked_answers(nb) for nb in NOTEBOOKS}


def names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell stores at any depth of its top level, names it reads)."""
    stored, read = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stored.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            read.add(node.value.id)
    return stored, read


def plan(notebook: str, answers: dict[str, str]) -> list[tuple[str, str, str]]:
    """(kind, grade_id, source) of the cells to run: answers, visible checks, and the provided cells
    that store a name some later cell that runs reads."""
    cells = release_cells(notebook)
    needed: set[str] = set()
    keep = []
    for cell in reversed(cells):
        if cell["kind"] == "hidden":
            continue
        source = answers[cell["grade_id"]] if cell["kind"] == "answer" else cell["source"]
        stored, read = names(source)
        if cell["kind"] == "provided" and not stored & needed:
            continue
        needed |= read
        keep.append((cell["kind"], cell["grade_id"], source))
    return keep[::-1]


def run_visible_checks(entry: Entry) -> dict[str, str]:
    """{visible check grade_id: "" if it passed, else what it raised}."""
    answers = {**answers_of(STEP4, entry.notebook), **entry.answers}
    ns: dict = {"__name__": "__main__", "__builtins__": builtins, "display": lambda *a, **k: None}
    results = {}
    import matplotlib.pyplot as plt
    import torch
    torch.manual_seed(0)
    for kind, gid, source in plan(entry.notebook, answers):
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(source, f"<{gid or 'provided'}>", "exec"), ns)
            failure = ""
        except (Exception, SystemExit) as err:  # noqa: BLE001 - the student's code or the check raised
            failure = f"{type(err).__name__}: {str(err)[:300]}"
        finally:
            plt.close("all")
        if kind == "visible":
            results[gid] = failure
    return results


@pytest.mark.parametrize("entry", CORRECT, ids=lambda e: e.name)
def test_correct_variants_pass_every_visible_check(entry):
    results = run_visible_checks(entry)
    assert set(results) == set(VISIBLE[entry.notebook])
    failed = {gid: why for gid, why in results.items() if why}
    assert not failed, f"{entry.name} ({entry.why}) fails visible checks: {failed}"


@pytest.mark.parametrize("entry", WRONG, ids=lambda e: e.name)
def test_wrong_entries_fail_the_visible_check_of_their_answer(entry):
    checked = {answer: gid for gid, answer in CHECKS[entry.notebook].items()}
    unknown = set(entry.visible_passes) - set(VISIBLE[entry.notebook])
    assert not unknown, f"{entry.name}: visible_passes names no visible check of {entry.notebook}: {unknown}"
    assert all(str(why).strip() for why in entry.visible_passes.values()), f"{entry.name}: say why"
    results = run_visible_checks(entry)
    for answer in entry.answers:
        gid = checked.get(answer)
        if gid is None:
            continue                                  # an answer without a visible check
        if gid in entry.visible_passes:
            assert not results[gid], (f"{entry.name}: {gid} is recorded as too weak to see this mistake, "
                                      f"but it fails ({results[gid]}): remove it from visible_passes")
        else:
            assert results[gid], (f"{entry.name}: the visible check {gid} accepts this wrong answer "
                                  f"({entry.why}); make the check see it, or record why it cannot in "
                                  f"visible_passes")
            assert results[gid].startswith("AssertionError:"), (
                f"{entry.name}: the visible check {gid} broke instead of catching the mistake: {results[gid]}")


def test_every_visible_check_is_failed_by_some_wrong_entry():
    """Parsed from the notebooks: each visible check has a wrong entry that must make it fail."""
    failing = {(e.notebook, gid) for e in WRONG for gid, answer in CHECKS[e.notebook].items()
               if answer in e.answers and gid not in e.visible_passes}
    all_checks = [(nb, gid) for nb, checks in CHECKS.items() for gid in checks]
    assert len(all_checks) >= 17 and len(set(all_checks)) == len(all_checks)
    missing = [gid for nb, gid in all_checks if (nb, gid) not in failing]
    assert not missing, f"no wrong entry of the corpus is expected to fail these visible checks: {missing}"
