"""What runs after a hidden test shows nothing of the grader's run (issue 44): from the first hidden test cell on,
a graded notebook's code cells show the grader's fixed words (the same for every cell, with the kind of the error
the cell ended with), the outputs the student handed in for the cell (rebuilt field by field, bounded), a test
cell's score, and a hidden test's verdict; the execution counts are gone; the run's notes name an error by its
kind. A student's code that kept a hidden test's inputs (a global, a file, a thread) and shows them in a later
cell is the attack; tests/redteam_corpus.py `stash_cases` grades it end to end (feedback page, grades, result
file). The grader's run as it was is the instructor's alone (Store.run_file).

In-process: grading/judging.py `conceal_after_hidden_inputs` on notebooks built here, and the probe server's
`error_words`."""
from __future__ import annotations

import json

import nbformat

from autograder.checks.framework import OWN_CLASS, gives_hidden_inputs
from autograder.grading.judging import (CONCEALED, HANDED_IN, NONE_HANDED_IN, TOO_LARGE, conceal_after_hidden_inputs,
                                        first_hidden_inputs)
from autograder.records.model import CellResult

HIDDEN_ID = "bonus_hidden"
SECRET = "hidden-input-4711"


def _code(source, cid, outputs=(), nbgrader=None, count=3):
    cell = nbformat.v4.new_code_cell(source)
    cell["id"] = cid
    cell["execution_count"] = count
    cell["outputs"] = [nbformat.from_dict(o) for o in outputs]
    if nbgrader:
        cell["metadata"]["nbgrader"] = nbgrader
    return cell


def _stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def _graded():
    """A graded notebook as the run left it: a cell before the hidden test, the hidden test (its verdict written
    by the judge), then cells whose outputs carry what the student's code kept of the hidden inputs."""
    picture = {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": SECRET},
               "metadata": {}}
    error = {"output_type": "error", "ename": "ValueError", "evalue": SECRET, "traceback": [SECRET]}
    cells = [
        _code("x = 1\nprint(x)", "before", [_stream("1\n")], count=1),
        _code("from autograder.runtime import hidden\n### BEGIN HIDDEN TESTS\nhidden('bonus_hidden', globals())\n"
              "### END HIDDEN TESTS", HIDDEN_ID, [_stream("Hidden tests: 2 of 2 points.\n")],
              {"grade": True, "solution": False, "grade_id": HIDDEN_ID, "points": 2}, count=2),
        _code("print(_kept)", "prints", [_stream(SECRET), picture], count=4711),
        _code("check(answer)", "visible_check", [error],
              {"grade": True, "solution": False, "grade_id": "visible_check", "points": 1}, count=5),
        _code("raise ValueError(_kept)", "raises", [_stream(SECRET, "stderr"), error], count=6),
        _code("y = 2", "quiet", [], count=7),
    ]
    return nbformat.v4.new_notebook(cells=cells)


RESULTS = [CellResult(HIDDEN_ID, 2.0, 2.0, ""), CellResult("visible_check", 0.0, 1.0, "AssertionError")]
HANDED = {
    "prints": [_stream("my own run\n"), {"output_type": "display_data", "data": {"text/plain": ["a ", "b"]},
                                         "metadata": {}, "transient": {"display_id": "x"}}],
    "raises": [{"output_type": "error", "ename": "ValueError", "evalue": "mine", "traceback": ["mine"]},
               "not an output", {"output_type": "stream", "name": "stdin", "text": "bad name"},
               {"output_type": "display_data", "data": {"text/plain": 7}, "metadata": {}},
               {"output_type": "javascript"}],
    "quiet": [_stream("x" * 5000)],
}


def _texts(cell) -> str:
    return json.dumps(cell["outputs"])


def test_cells_from_the_first_hidden_test_on_show_the_graders_words_and_what_was_handed_in():
    nb = _graded()
    before = json.dumps(nb.cells[0])
    assert first_hidden_inputs(nb) == 1 and gives_hidden_inputs(nb.cells[1]) and not gives_hidden_inputs(nb.cells[2])
    conceal_after_hidden_inputs(nb, {HIDDEN_ID}, RESULTS, HANDED, (4000, 0))
    nbformat.validate(nb)
    assert json.dumps(nb.cells[0]) == before, "a cell before the first hidden test keeps the grader's run"
    assert SECRET not in json.dumps(nb), "what the student's code kept reached the graded notebook"
    assert [c.execution_count for c in nb.cells[1:]] == [None] * 5
    assert nb.cells[1].outputs[0]["text"].startswith("Hidden tests: 2 of 2"), "the verdict is the judge's"
    prints, check, raises, quiet = (nb.cells[i].outputs for i in (2, 3, 4, 5))
    assert CONCEALED in prints[0]["text"] and HANDED_IN in prints[0]["text"] and "raised" not in prints[0]["text"]
    assert prints[1:] == [nbformat.from_dict(_stream("my own run\n")),
                          nbformat.v4.new_output("display_data", data={"text/plain": "a b"})]
    assert "When graded, it raised ValueError." in raises[0]["text"] and HANDED_IN in raises[0]["text"]
    assert [o["output_type"] for o in raises[1:]] == ["error"] and raises[1]["evalue"] == "mine", \
        "only outputs nbformat names, rebuilt from their strings"
    assert TOO_LARGE in quiet[0]["text"] and len(quiet) == 1, "a handed-in output over the cell's bound"
    # a test cell scored by nbgrader's rule: its score as the value, nothing handed in
    assert "When graded, it raised ValueError." in check[0]["text"] and check[1]["data"]["text/plain"] == "0"


def test_the_words_do_not_tell_a_cell_that_printed_from_one_that_did_not():
    """Whether a cell showed anything, and what, is the student's code's choice after a hidden test: a bit per
    cell. The words are the same either way."""
    nb = _graded()
    nb.cells[5].outputs = [nbformat.from_dict(_stream(SECRET))]
    quiet, loud = _graded(), nb
    for graded in (quiet, loud):
        conceal_after_hidden_inputs(graded, {HIDDEN_ID}, RESULTS, {}, (0, 0))
    assert _texts(quiet.cells[5]) == _texts(loud.cells[5]) and NONE_HANDED_IN in _texts(loud.cells[5])
    assert _texts(quiet.cells[2]) == _texts(loud.cells[5]), "every concealed cell without an error reads the same"


def test_the_notebooks_bound_on_what_was_handed_in():
    nb = _graded()
    size = len(json.dumps(HANDED["prints"][:1]))
    conceal_after_hidden_inputs(nb, {HIDDEN_ID}, RESULTS, {"prints": HANDED["prints"][:1], "quiet": HANDED["prints"][:1]},
                                (0, size + 10))
    assert HANDED_IN in nb.cells[2].outputs[0]["text"] and TOO_LARGE in nb.cells[5].outputs[0]["text"]


def test_a_notebook_without_hidden_tests_is_left_as_run():
    nb = _graded()
    del nb.cells[1]
    nb.cells[2]["metadata"] = {}          # the visible check, no longer a test cell
    before = json.dumps(nb)
    conceal_after_hidden_inputs(nb, {HIDDEN_ID}, RESULTS, HANDED, (0, 0))
    assert json.dumps(nb) == before


def test_the_runs_notes_name_an_error_after_a_hidden_test_by_its_kind(tmp_path):
    from autograder.checks.probeserver import ProbeServer
    from conftest import STEP4
    nb = _graded()
    with ProbeServer(str(tmp_path / "probe.sock"), STEP4) as server:
        assert server.error_words(nb.cells[0], "ValueError", SECRET) == f"ValueError: {SECRET}"
        server.before_cell(nb.cells[0])
        assert server.error_words(nb.cells[0], "ValueError", SECRET) == f"ValueError: {SECRET}"
        server.before_cell(nb.cells[1])       # the hidden test starts: from now on, kinds alone
        server.after_cell(nb.cells[1])
        assert server.error_words(nb.cells[2], "ValueError", SECRET) == "ValueError"
        assert server.error_words(nb.cells[2], "MyOwn" + SECRET, SECRET) == OWN_CLASS
