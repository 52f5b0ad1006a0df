"""The instructor's notebooks run top to bottom with full marks on their own hidden tests, and a student
who re-runs an earlier cell after later ones gets what the cell showed the first time.

Each source notebook is run once, in one kernel, for both: first to its end (no cell may raise, every
hidden test cell must print full marks, and at least one must run), then the re-runs below.

Students re-run cells out of order all the time: a check after reading further, a picture after a
later section. A later cell that rebinds a name an earlier cell reads (`head`, `x`, `T`, `q`) turns
that re-run into a false failure message, an IndexError, or a picture of something else under the
old title. This test runs each instructor's notebook to its end in one kernel, then re-runs every code
cell that is neither an answer nor a hidden test, from the last one back to the first, in that same
kernel: each cell meets the state the whole notebook left (plus the re-runs of the cells after it,
which give back the same names). Every re-run must raise nothing and print what the first run printed.

What is compared: the text a cell shows (its stream output, and the text/plain form of its results
and displays; a figure's text is its size and axes count). Pictures are not compared byte for byte;
a picture drawn from a rebound name shows in the numbers its cell prints beside it.
"""
import re

import pytest

from autograder.authoring.build import notebook_kernel

from conftest import NOTEBOOK_NAMES, STEP4, errors, nbgrader_meta, read_nb

pytestmark = pytest.mark.slow

# Cells whose printed text differs from run to run by design, by cell id, and why: they are still
# re-run (and must not fail), but their text is not compared.
DIFFERS_BY_DESIGN = {
    "timing": "06 part 3 times the head's forward pass: every run reads the clock anew",
    "06-going-further-047": "06 part 3's Python background box times a loop with time.perf_counter()",
    "online_softmax_check": "06 part 2's check draws its random scores from the global generator without a seed, "
                            "so a re-run prints the float32 rounding error of other scores (about 1e-8 either way)",
}
# In a widget's text form, the model id names the widget object, new at every run.
MODEL_ID = re.compile(r"model_id='?[0-9a-f]{32}'?")
# What a hidden test cell prints at its end (source/course_plugin.py's self-grading).
FULL_MARKS = re.compile(r"Hidden tests: ([\d.]+) of ([\d.]+) points\.")


def shown(cell) -> str:
    """The text a cell shows: what it printed to each stream (however the kernel split it into
    messages), then the text/plain of its results and displays, in order."""
    streams, results = {}, []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            streams[output["name"]] = streams.get(output["name"], "") + output["text"]
        elif output.get("output_type") in ("execute_result", "display_data"):
            results.append(MODEL_ID.sub("model_id=…", output.get("data", {}).get("text/plain", "")))
    return "".join(f"[{name}]\n{text}" for name, text in sorted(streams.items())) + "\n".join(results)


def hidden_test_ids(name: str) -> set[str]:
    source = read_nb(STEP4.source / f"{name}.ipynb")
    return {c.get("id") for c in source.cells if "BEGIN HIDDEN TESTS" in c.source}


def rerun_cells(nb, name: str) -> list[int]:
    """The code cells a student re-runs: neither answers (nbgrader `solution`) nor hidden tests."""
    hidden = hidden_test_ids(name)
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and c.source.strip() and not nbgrader_meta(c).get("solution")
            and c.get("id") not in hidden]


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_runs_with_full_marks_and_every_earlier_cell_reruns_after_the_end_as_it_first_ran(name):
    nb = read_nb(STEP4.source / f"{name}.ipynb")
    assert set(DIFFERS_BY_DESIGN) <= {c.get("id") for n in NOTEBOOK_NAMES
                                   for c in read_nb(STEP4.source / f"{n}.ipynb").cells}, \
        "DIFFERS_BY_DESIGN names a cell that no longer exists"
    cells = rerun_cells(nb, name)
    assert cells, f"{name}: no cell to re-run"
    problems = []
    with notebook_kernel(nb, STEP4.source, timeout=300, allow_errors=True) as client:
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
        hidden_cells = 0
        for index, cell in enumerate(nb.cells):
            if errors(cell):
                problems.append(f"cell {index} ({cell.get('id')}) failed on the first run: "
                                f"{errors(cell)[0]['ename']}: {errors(cell)[0]['evalue']}")
            if "BEGIN HIDDEN TESTS" in cell.source:
                hidden_cells += 1
                got = FULL_MARKS.search(shown(cell))
                if not (got and got[1] == got[2]):
                    problems.append(f"the solution loses points in cell {index} ({cell.get('id')}):\n{shown(cell)}")
        assert hidden_cells > 0, f"{name}: no hidden test cell ran: full marks on them proves nothing"
        first = {index: shown(nb.cells[index]) for index in cells}
        for index in reversed(cells):
            cell = nb.cells[index]
            client.execute_cell(cell, index)
            where = f"cell {index} ({cell.get('id')}), re-run after the notebook's end"
            if errors(cell):
                problems.append(f"{where} raised {errors(cell)[0]['ename']}: {errors(cell)[0]['evalue']}")
            elif cell.get("id") not in DIFFERS_BY_DESIGN and shown(cell) != first[index]:
                problems.append(f"{where} shows another text.\nfirst run:\n{first[index][:1500]}\n"
                                f"re-run:\n{shown(cell)[:1500]}")
    assert not problems, f"{name}: " + "\n\n".join(problems)
