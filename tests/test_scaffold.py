"""`new-check` starts a hidden test from a working example: the check it writes loads, is called by
the one-line cell it inserts, is stamped into the release with its points, and once its CASES and
reference are written it tells a right answer from a wrong one. Tried on a copy of the demonstration
step (tests/fixtures/step-00-demo), in a course folder of its own."""
from __future__ import annotations

import json
import shutil

import nbformat
import pytest

from autograder.selfgrade import probe_and_judge
from autograder.authoring.scaffold import ScaffoldError, new_check
from autograder.authoring.stamp import stamp
from autograder.steps import Step
from conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "step-00-demo"


@pytest.fixture
def step(tmp_path):
    name = f"step-00-scaffold-{tmp_path.name[-12:].replace('_', '-')}"      # a module name of its own
    shutil.copytree(FIXTURE, tmp_path / "source" / name)
    return Step(name, tmp_path)


def test_a_new_check_is_a_working_example(step, capsys):
    written = new_check(step, "01-word-counts", "word_count_more_hidden", points=2,
                        answer="word_count")
    assert [p.name for p in written] == ["word_counts.py", "01-word-counts.ipynb"]
    assert "proof_corpus.py" in capsys.readouterr().out
    nb = json.loads(written[1].read_text())
    ids = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in nb["cells"]]
    assert ids.index("word_count_more_hidden") == ids.index("word_count_check") + 1

    # the author writes the cases and the reference: the stub becomes a check that works
    check_file = written[0]
    check_file.write_text(check_file.read_text()
                          .replace("CASES = [(1,), (2,)]", "CASES = [('a b',), ('',)]")
                          .replace('raise NotImplementedError("word_count_more_hidden: write the reference answer")',
                                   "return len(args[0].split())"))
    step = Step(step.name, step.root)       # the step as a new command sees it
    assert set(step.checks) == {"word_count_hidden", "longest_word_hidden", "word_count_more_hidden"}
    released = nbformat.read(written[1], as_version=4)
    stamp(released, step)
    cell = next(c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "word_count_more_hidden")
    assert cell.metadata.nbgrader.points == 2.0 and cell.source.startswith("# Hidden tests: ") \
        and cell.source.split("\n")[0].endswith("(2 points)")

    right = probe_and_judge("word_count_more_hidden", {"word_count": lambda t: len(t.split())}, step)
    wrong = probe_and_judge("word_count_more_hidden", {"word_count": lambda t: len(t.split(" "))}, step)
    assert right.fraction == 1.0 and wrong.fraction == 0.5, (right.report(2), wrong.report(2))


@pytest.mark.parametrize("args, error", [
    (("01-word-counts", "word_count_hidden"), "has a check 'word_count_hidden' already"),
    (("02-nothing", "x_hidden"), "no notebook 02-nothing.ipynb"),
    (("01-word-counts", "nothing_hidden"), "no answer cell 'nothing'"),
    (("01-word-counts", "not an id"), "is not a grade id"),
])
def test_new_check_refuses_what_it_cannot_do_and_writes_nothing(step, args, error):
    before = {p: p.read_bytes() for p in step.source.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    with pytest.raises(ScaffoldError, match=error):
        new_check(step, *args)
    after = {p: p.read_bytes() for p in step.source.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert after == before
