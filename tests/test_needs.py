"""`needs()` in provided cells: an answer not written yet, or a cell not run yet, gets a short note;
every other error, a NameError inside a student's function above all, is shown for what it is.

Each "cell" is compiled under its own file name, as IPython compiles each notebook cell, and runs in
one shared namespace, as a notebook's cells do."""
import pytest

from dlcourse.checks import needs

CELL = 0


def run(source: str, ns: dict) -> None:
    global CELL
    CELL += 1
    exec(compile(source, f"<cell {CELL}>", "exec"), ns)


@pytest.fixture
def ns():
    return {"needs": needs, "__name__": "__main__"}


def test_an_answer_still_a_stub_says_fill_it_in(ns, capsys):
    run("def top_key_shares(A):\n    raise NotImplementedError()", ns)
    run('with needs("top_key_shares"):\n    top_key_shares(1)', ns)
    assert "fill in the answer above" in capsys.readouterr().out


def test_a_name_the_cell_needs_from_a_cell_not_run_says_run_the_cells_above(ns, capsys):
    run('with needs("As"):\n    print(As.sum())', ns)
    assert "needs 'As', which is not defined yet: run the cells above first" in capsys.readouterr().out


def test_a_name_read_by_the_cells_own_code_or_its_own_functions_counts_too(ns, capsys):
    run('def helper():\n    return FAMILIES\nwith needs("top_key_shares"):\n    helper()', ns)
    assert "needs 'FAMILIES'" in capsys.readouterr().out


def test_a_typo_inside_a_students_function_is_shown_as_a_name_error(ns, capsys):
    run("def attention_on_text(seed):\n    return tok_embb(seed)", ns)       # a typo in the answer
    with pytest.raises(NameError, match="tok_embb"):
        run('with needs("attention_on_text"):\n    attention_on_text(0)', ns)
    assert "run the cells above" not in capsys.readouterr().out


def test_a_variable_used_before_it_is_set_is_shown_as_it_is(ns, capsys):
    run("def f():\n    total += 1\n    return total", ns)
    with pytest.raises(UnboundLocalError):
        run('with needs("f"):\n    f()', ns)
    assert capsys.readouterr().out == ""


def test_a_name_that_exists_at_top_level_is_never_blamed_on_cells_not_run(ns, capsys):
    ns["x"] = 1
    with pytest.raises(NameError):
        run('with needs("x"):\n    raise NameError("name \'x\' is not defined", name="x")', ns)
    assert capsys.readouterr().out == ""


def test_other_errors_pass_through(ns):
    with pytest.raises(TypeError):
        run('with needs("f"):\n    len(3)', ns)
