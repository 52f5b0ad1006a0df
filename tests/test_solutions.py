"""Solutions are generated from the sources, current, executed, and leave the hidden tests out."""
import re

import pytest

from autograder.authoring.build import same_cells, solution_notebook

from conftest import NOTEBOOK_NAMES, ROOT, STEP, STEP4, read_nb

SOLUTIONS = ROOT / "solutions"

# a cell draws when it calls one of these (an import line naming them draws nothing)
DRAWS = re.compile(r"^(?!\s*(from|import)\b).*\b(plt\.\w+|attention_heatmap|heatmap_grid|smoothing_plot|imshow)\(", re.M)


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_solution_is_current_with_its_source(name):
    fresh = solution_notebook(STEP4.source / f"{name}.ipynb")
    committed = read_nb(SOLUTIONS / STEP / f"{name}.ipynb")
    assert same_cells(fresh, committed), f"solutions/{STEP}/{name}.ipynb is stale: run `make solutions`"


def test_catch_up_solution_is_current():
    fresh = read_nb(STEP4.source.parent / STEP4.catch_up / f"{STEP4.catch_up}.ipynb")
    assert same_cells(fresh, read_nb(SOLUTIONS / f"{STEP4.catch_up}.ipynb")), "run `make solutions`"


@pytest.mark.parametrize("path", sorted(SOLUTIONS.rglob("*.ipynb")), ids=lambda p: p.name)
def test_solution_ran_every_cell_showed_its_pictures_and_hides_the_tests(path):
    nb = read_nb(path)
    text = path.read_text(encoding="utf-8")
    for marker in ("BEGIN HIDDEN TESTS", "hidden(", "BEGIN SOLUTION", str(ROOT), "/root/", "/work/"):
        assert marker not in text, f"{path.name} contains {marker!r}"
    plotting_cells = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        assert cell.execution_count is not None, f"{path.name}: cell {index} was not run"
        for output in cell.outputs:
            assert output.output_type != "error", f"{path.name}: cell {index} raised {output.get('ename')}"
            assert not (output.output_type == "stream" and output.name == "stderr"
                        and "Warning" not in output.text), f"{path.name}: cell {index} wrote to stderr"
        if DRAWS.search(cell.source) and "def " not in cell.source.split("\n", 1)[0]:
            plotting_cells += 1
            assert any("image/png" in o.get("data", {}) for o in cell.outputs), (
                f"{path.name}: cell {index} draws a picture but the solution shows none")
    pictures = sum(any("image/png" in o.get("data", {}) for o in c.get("outputs", [])) for c in nb.cells)
    assert plotting_cells or not pictures, (
        f"{path.name} shows {pictures} pictures, but DRAWS recognises none of its drawing cells: "
        "the check above proves nothing for this notebook")
