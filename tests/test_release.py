"""The student release is generated from the sources, is current, and gives nothing away."""
import shutil

import pytest

from autograder.authoring.build import release

from autograder.steps import Step
from conftest import NOTEBOOK_NAMES, SOURCE_NOTEBOOKS, STEP, STEP4, cell_text, load, nbgrader_meta

RELEASE = STEP4.release


def solution_lines(source_cell: dict) -> list[str]:
    """The lines between the solution markers that are specific enough to be recognised."""
    lines, inside = [], False
    for line in cell_text(source_cell).split("\n"):
        if "BEGIN SOLUTION" in line:
            inside = True
        elif "END SOLUTION" in line:
            inside = False
        elif inside and len(line.strip()) >= 12:
            lines.append(line.strip())
    return lines


@pytest.mark.slow
def test_release_is_current_with_the_sources(tmp_path):
    """Generate the release afresh in a scratch course and compare it byte for byte."""
    shutil.copytree(STEP4.root / "source", tmp_path / "source")
    shutil.copy(STEP4.root / "course.toml", tmp_path / "course.toml")      # the due date the header shows
    generated = release(Step(STEP, tmp_path), db_url=f"sqlite:///{tmp_path / 'gradebook.db'}")
    assert sorted(p.name for p in generated) == sorted(p.name for p in RELEASE.glob("*.ipynb")), (
        "release/ holds other notebooks than the sources give: run `make release`")
    for path in generated:
        assert path.read_bytes() == (RELEASE / path.name).read_bytes(), (
            f"release/{STEP}/{path.name} differs from a fresh generation: run `make release` and commit")
    assert sorted(p.name for p in RELEASE.iterdir()) == sorted(p.name for p in generated), \
        f"release/{STEP} holds files that are not generated (its checks/ must never be released)"
    assert (tmp_path / "source" / STEP / "checks").is_dir() and not (tmp_path / "release" / STEP / "checks").exists()


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_release_holds_no_solution_and_no_hidden_test(name):
    source = load(STEP4.source / f"{name}.ipynb")
    released = load(RELEASE / f"{name}.ipynb")
    text = (RELEASE / f"{name}.ipynb").read_text(encoding="utf-8")
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "hidden(",
                   "autograder", "Model answer"):
        assert marker not in text, f"release/{name}.ipynb contains {marker!r}"
    by_id = {c["id"]: c for c in released["cells"]}
    # lines the instructor also wrote outside any solution (a provided cell may use the same idiom)
    provided = "\n".join(cell_text(c) for c in source["cells"] if not nbgrader_meta(c).get("solution"))
    for cell in source["cells"]:
        meta = nbgrader_meta(cell)
        if not meta.get("solution"):
            continue
        shipped = cell_text(by_id[cell["id"]])
        if cell["cell_type"] == "markdown":
            assert shipped == "YOUR ANSWER HERE", f"{name}: written answer {meta['grade_id']} not cleared"
            continue
        assert "raise NotImplementedError()" in shipped
        for line in solution_lines(cell):
            if line not in provided:
                assert line not in text, f"{name}: solution line of {meta['grade_id']} shipped: {line!r}"


def test_release_has_a_notebook_for_each_source_with_the_header():
    assert sorted(p.stem for p in RELEASE.glob("*.ipynb")) == sorted(p.stem for p in SOURCE_NOTEBOOKS)
    header = load(STEP4.root / "source" / "header.ipynb")
    for path in RELEASE.glob("*.ipynb"):
        nb = load(path)
        assert [cell_text(c) for c in nb["cells"][:len(header["cells"])]] == \
            [cell_text(c) for c in header["cells"]], f"{path.name} does not start with the header"
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
