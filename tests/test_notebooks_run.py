"""Every notebook runs: the instructor's with full marks on its own hidden tests; the student's
release top to bottom before answering, where only the unanswered cells may complain."""
import re

import pytest

from conftest import NOTEBOOK_NAMES, ROOT, STEP4, errors, execute, nbgrader_meta, read_nb

pytestmark = pytest.mark.slow
FULL_MARKS = re.compile(r"Hidden tests: ([\d.]+) of ([\d.]+) points\.")


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_source_notebook_runs_top_to_bottom_with_full_marks(name):
    path = STEP4.source / f"{name}.ipynb"
    nb = execute(read_nb(path), path.parent)
    hidden_cells = 0
    for index, cell in enumerate(nb.cells):
        assert not errors(cell), f"{name}: cell {index} ({cell.get('id')}) raised {errors(cell)[0].get('ename')}: " \
                                 f"{errors(cell)[0].get('evalue')}"
        if "BEGIN HIDDEN TESTS" in cell.source:
            hidden_cells += 1
            text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
            got = FULL_MARKS.search(text)
            assert got and got[1] == got[2], f"{name}: the solution loses points in {cell.id}:\n{text}"
    assert hidden_cells > 0, f"{name}: no hidden test cell ran: full marks on them proves nothing"


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_release_runs_for_a_student_who_has_not_answered_yet(name):
    path = STEP4.release / f"{name}.ipynb"
    nb = execute(read_nb(path), path.parent)
    answers = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        meta = nbgrader_meta(cell)
        found = errors(cell)
        where = f"{name}: cell {index} ({cell.get('id')})"
        if meta.get("solution"):
            answers += 1   # runs the stub: raises NotImplementedError, or defines a function that will
            assert all(e["ename"] == "NotImplementedError" for e in found), \
                f"{where}: an unanswered cell raised {found[0]['ename']} instead of NotImplementedError"
        elif meta.get("grade"):
            # a check-your-work cell may fail before the answer exists, but only because of it
            for e in found:
                assert e["ename"] in ("NotImplementedError", "AssertionError", "NameError"), \
                    f"{where}: a test cell crashed with {e['ename']}: {e['evalue']}"
        else:
            assert not found, f"{where}: provided code crashed with {found[0]['ename']}: {found[0]['evalue']}"
    assert answers > 0
    complaints = [e["ename"] for c in nb.cells for e in errors(c)]
    assert "NotImplementedError" in complaints, f"{name}: nothing tells the student an answer is missing"
