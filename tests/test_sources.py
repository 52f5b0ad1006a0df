"""Instructor sources are clean and consistent: the single truth everything else is built from."""
import ast
import re

import pytest

from autograder.nbgrader_cmd import HARMLESS_STDERR

from conftest import ROOT, SOURCE_NOTEBOOKS, STEP, STEP4, cell_text, load, nbgrader_meta

HIDDEN_CELL = re.compile(
    r"\A# Hidden tests: [^\n]+(?<!points\))\n"
    r"### BEGIN HIDDEN TESTS\n"
    r"from autograder\.runtime import hidden\n"
    r"hidden\(\"(?P<grade_id>[\w-]+)\", globals\(\)\)\n"
    r"### END HIDDEN TESTS\Z")
ALL_SOURCES = SOURCE_NOTEBOOKS + [ROOT / "source" / "header.ipynb", STEP4.source.parent / STEP4.catch_up / f"{STEP4.catch_up}.ipynb"]


def test_the_step_has_its_notebooks():
    assert SOURCE_NOTEBOOKS, f"no instructor notebooks in source/{STEP}"
    assert SOURCE_NOTEBOOKS[0].name == "01-on-paper.ipynb"


@pytest.mark.parametrize("path", ALL_SOURCES, ids=lambda p: p.name)
def test_source_is_stored_clean_with_a_kernelspec(path):
    nb = load(path)
    kernelspec = nb["metadata"].get("kernelspec", {})
    assert kernelspec.get("name") == "python3" and kernelspec.get("language") == "python", (
        "without a kernelspec JupyterLab asks for a kernel and nbgrader cannot tell the language")
    ids = [c.get("id") for c in nb["cells"]]
    assert all(ids) and len(set(ids)) == len(ids), "every cell needs a unique id (assembly matches cells by id)"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, (
                f"cell {cell['id']} stores outputs: sources are stored without them")


def _cells():
    for path in SOURCE_NOTEBOOKS:
        for cell in load(path)["cells"]:
            yield path, cell


def test_graded_and_answer_ids_are_unique_across_the_step():
    """Checks are registered by grade id, and the reports name cells by it: no two notebooks share one."""
    seen = {}
    for path, cell in _cells():
        meta = nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if gid and (meta.get("grade") or meta.get("solution") or meta.get("task")):
            assert gid not in seen, f"grade id {gid!r} is used in {seen[gid]} and {path.name}"
            seen[gid] = path.name


def test_every_hidden_test_cell_calls_its_own_registered_check_declared_once():
    """A hidden test's points are in its check only: the source cell names it in one line, and the
    release carries the check's points, stamped (autograder/authoring/stamp.py)."""
    registry = STEP4.checks
    released = {nbgrader_meta(c).get("grade_id"): c for p in STEP4.release.glob("*.ipynb") for c in load(p)["cells"]}
    used = set()
    for path, cell in _cells():
        meta = nbgrader_meta(cell)
        text = cell_text(cell)
        if "BEGIN HIDDEN TESTS" not in text:
            assert not (meta.get("grade") and not meta.get("solution") and meta.get("points", 0) > 0), (
                f"{path.name}: graded test cell {meta.get('grade_id')} has points but no hidden tests")
            continue
        match = HIDDEN_CELL.match(text)
        assert match, f"{path.name}: hidden test cell {meta.get('grade_id')} does not have the standard shape"
        gid = match["grade_id"]
        assert gid == meta["grade_id"], f"{path.name}: cell {meta['grade_id']} calls hidden({gid!r})"
        assert meta["grade"] and meta["locked"] and not meta["solution"]
        assert "points" not in meta, f"{gid}: points belong to the check alone, not the source cell"
        assert gid in registry, f"no check registered for {gid}"
        stamped = released[gid]
        assert nbgrader_meta(stamped)["points"] == registry[gid].points
        assert cell_text(stamped).split("\n")[0] == text.split("\n")[0] + f" ({registry[gid].points:g} points)"
        used.add(gid)
    assert used == set(registry), f"checks never called by a notebook: {sorted(set(registry) - used)}"


@pytest.mark.parametrize("change, error", [
    (lambda c: c.metadata.nbgrader.update(points=5.0), "the check alone says"),
    (lambda c: setattr(c, "source", c.source.replace("\n", " (5 points)\n", 1)), "comment says 5"),
    (lambda c: setattr(c, "source", c.source.replace('hidden("bonus_shapes"', 'hidden("no_such_check"')),
     "names no check"),
    (lambda c: c.metadata.nbgrader.update(grade_id="other"), "is not the 'bonus_shapes' it calls"),
])
def test_stamping_refuses_a_hidden_test_declared_twice_differently(change, error):
    import nbformat

    from autograder.authoring.stamp import HiddenTestError, stamp
    nb = nbformat.read(STEP4.source / "01-on-paper.ipynb", as_version=4)
    cell = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "bonus_shapes")
    stamp(nbformat.from_dict(nb), STEP4)                 # as it is: fine
    change(cell)
    with pytest.raises(HiddenTestError, match=re.escape(error)):
        stamp(nb, STEP4)


def test_answer_cells_hold_a_marked_solution_and_test_cells_are_locked():
    for path, cell in _cells():
        meta = nbgrader_meta(cell)
        text = cell_text(cell)
        if meta.get("solution") and cell["cell_type"] == "code":
            assert "### BEGIN SOLUTION" in text and "### END SOLUTION" in text, (
                f"{path.name}: answer cell {meta['grade_id']} has no marked solution region")
            ast.parse(text)
        if meta.get("grade") and not meta.get("solution"):
            assert meta.get("locked"), f"{path.name}: test cell {meta['grade_id']} is not locked"


def test_the_head_cell_of_notebook_two_is_the_package_head():
    nb_path = STEP4.source / "02-the-head.ipynb"
    if not nb_path.exists():
        pytest.fail(f"source/{STEP}/02-the-head.ipynb is missing")
    package = (ROOT / "dlcourse" / "head.py").read_text()
    code = package[package.index("import torch, torch.nn as nn"):].strip()
    cells = [cell_text(c).strip() for c in load(nb_path)["cells"]
             if c["cell_type"] == "code" and "class Head(nn.Module):" in cell_text(c)]
    assert cells == [code], "the Head shown in 02-the-head must be exactly dlcourse/head.py's (one cell)"


def test_nbgrader_config_agrees_with_the_grader():
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.IgnorePattern.enabled is True
    assert config.IgnorePattern.pattern == HARMLESS_STDERR
    assert config.OverwriteCells.add_missing_cells is True
    assert config.IncludeHeaderFooter.header == str(ROOT / "source" / "header.ipynb")
    assert config.CourseDirectory.solution_directory == "solutions"
    for name in ("submitted", "autograded", "feedback"):
        assert getattr(config.CourseDirectory, f"{name}_directory").endswith(f"autograder/{name}")
    from autograder.authoring.build import solution_preprocessors
    assert [p.__name__ for p in config.GenerateSolution.preprocessors] == \
        [p.__name__ for p in solution_preprocessors()] + ["Execute"]
    assert config.Execute.timeout >= 60


@pytest.mark.parametrize("text,harmless", [
    ("/x/torch/nn/modules/module.py:1234: UserWarning: something\n  warnings.warn(", True),
    ("Matplotlib is building the font cache; this may take a moment.\n", True),
    ("Traceback (most recent call last):\n  File ...\nValueError: bad", False),
    ("oops\n/x.py:1: UserWarning: late", False),
])
def test_only_warnings_are_stripped_from_stderr(text, harmless):
    assert bool(re.search(HARMLESS_STDERR, text)) is harmless
