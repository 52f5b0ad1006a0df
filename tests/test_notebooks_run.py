"""The student's release runs top to bottom before answering, where only the unanswered cells may
complain. (The instructor's notebooks, run to their end with full marks: tests/test_rerun_safe.py.)"""

import pytest

from conftest import NOTEBOOK_NAMES, STEP4, errors, execute, nbgrader_meta, read_nb

pytestmark = pytest.mark.slow


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
