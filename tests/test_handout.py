"""The student-only hand-out holds what students need and no solution, hidden test or grader code."""
from __future__ import annotations

import subprocess
import sys
import urllib.parse

import pytest

from autograder.errors import UsageError
from autograder.authoring.handout import build_handout, nbgitpuller_link, student_requirements

from conftest import NOTEBOOK_NAMES, ROOT, SOURCE_NOTEBOOKS, STEP, STEP4, cell_text, load, nbgrader_meta


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    return build_handout(STEP, tmp_path_factory.mktemp("handout") / "handout", say=lambda *a: None)


# what the course hands out anyway: the provided cells of every notebook and the dlcourse package
PROVIDED = "\n".join([cell_text(c) for s in SOURCE_NOTEBOOKS for c in load(s)["cells"]
                      if not nbgrader_meta(c).get("solution")]
                     + [p.read_text() for p in sorted((ROOT / "dlcourse").glob("*.py"))])


def solution_lines(source: dict) -> list[str]:
    """The lines of a source notebook's solutions specific enough to be recognised (not handed out elsewhere)."""
    provided = PROVIDED
    lines = []
    for cell in source["cells"]:
        if not nbgrader_meta(cell).get("solution"):
            continue
        inside = cell["cell_type"] == "markdown"
        for line in cell_text(cell).split("\n"):
            if "BEGIN SOLUTION" in line:
                inside = True
            elif "END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) >= 12 and line.strip() not in provided:
                lines.append(line.strip())
    return lines


def test_the_handout_holds_the_release_the_package_and_the_binder_config(handout):
    names = {p.relative_to(handout).as_posix() for p in handout.rglob("*") if p.is_file()}
    assert {f"release/step-04/{n}.ipynb" for n in NOTEBOOK_NAMES} <= names
    assert {"dlcourse/__init__.py", "dlcourse/data.py", "pyproject.toml", "requirements.txt",
            "environment.yml", "postBuild", "README.md"} <= names
    for part in ("source", "autograder", "solutions", "tests", "gradebook.db", "case-key", "course.toml", "extensions.csv"):
        assert not any(n == part or n.startswith(part + "/") for n in names), part
    for name in NOTEBOOK_NAMES:
        assert (handout / "release" / "step-04" / f"{name}.ipynb").read_bytes() == \
            (STEP4.release / f"{name}.ipynb").read_bytes()


def test_the_handout_holds_no_solution_text_and_no_hidden_check(handout):
    texts = {p.relative_to(handout).as_posix(): p.read_text(encoding="utf-8", errors="replace")
             for p in handout.rglob("*") if p.is_file()}
    everything = "\n".join(texts.values())
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "hidden(", "autograder.checks",
                   "autograder.runtime", "Model answer", "def judge", "def probe"):
        assert marker not in everything, f"the hand-out holds {marker!r}"
    checked = 0
    for source in SOURCE_NOTEBOOKS:
        for line in solution_lines(load(source)):
            checked += 1
            found = [name for name, text in texts.items() if line in text]
            assert not found, f"solution line of {source.name} in the hand-out ({found}): {line!r}"
    assert checked > 50, "the solution lines were not found in the sources: the search proves nothing"
    # the step's hidden tests (source/<step>/checks/) and the engine's check framework
    checks = sorted(STEP4.checks_dir.glob("*.py")) + sorted((ROOT / "autograder" / "checks").glob("*.py"))
    assert len(checks) > 2 and any(c.name == "head.py" for c in checks), \
        f"the step's checks were not found (looked in {STEP4.checks_dir.relative_to(ROOT)}): the search proves nothing"
    searched = 0
    for check in checks:
        distinctive = [l.strip() for l in check.read_text().splitlines() if len(l.strip()) > 40 and l.strip() not in PROVIDED]
        assert distinctive, f"{check.relative_to(ROOT)}: no line distinctive enough to search for"
        searched += len(distinctive)
        found = [l for l in distinctive if l in everything]
        assert not found, f"{check.relative_to(ROOT)} in the hand-out: {found[:3]}"
    assert searched > 100, f"only {searched} distinctive lines of the checks searched for: the search proves nothing"


def test_binder_config_builds_without_the_editable_install(handout):
    env = (handout / "environment.yml").read_text()
    assert "-e ." not in env and "download.pytorch.org/whl/cpu" in env and "torch==" in env
    reqs = student_requirements()
    assert not any(r.startswith(("psycopg2", "latex2mathml")) for r in reqs)
    assert all(f"      - {r}" in env for r in reqs)
    post = (handout / "postBuild").read_text()
    assert post.startswith("#!/bin/bash") and "pip install --no-deps ." in post and "python -m dlcourse.data" in post
    assert (handout / "postBuild").stat().st_mode & 0o111
    assert subprocess.run(["bash", "-n", str(handout / "postBuild")]).returncode == 0
    readme = (handout / "README.md").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in readme


def test_the_handouts_package_installs_and_imports(handout, tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--target", str(target), str(handout)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    check = subprocess.run([sys.executable, "-c", "import dlcourse.data, sys; print(dlcourse.data.__file__)"],
                           cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True)
    assert check.returncode == 0 and str(target) in check.stdout, check.stderr


def test_nbgitpuller_link():
    link = nbgitpuller_link("https://hub.example.edu/", "https://github.com/u/course-handout.git", STEP, branch="term")
    base, query = link.split("?", 1)
    assert base == "https://hub.example.edu/hub/user-redirect/git-pull"
    assert urllib.parse.parse_qs(query) == {"repo": ["https://github.com/u/course-handout.git"], "branch": ["term"],
                                           "urlpath": [f"lab/tree/course-handout/release/{STEP}/01-on-paper.ipynb"]}


def test_a_folder_that_is_not_a_handout_is_never_replaced(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(UsageError, match="not a hand-out built here"):
        build_handout(STEP, tmp_path, say=lambda *a: None)
    assert (tmp_path / "mine.txt").read_text() == "keep"
    with pytest.raises(UsageError, match="would hold the course itself"):
        build_handout(STEP, ROOT.parent, say=lambda *a: None)
