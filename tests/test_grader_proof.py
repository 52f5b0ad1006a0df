"""Prove the grader: every corpus submission gets exactly the points it deserves in every grade cell.

The corpus (tests/proof_corpus.py) is graded as one class through `make grade`'s code path, with
the untouched release and a half-done submission beside it. The test prints the grader's false
passes (a wrong answer scored higher than it deserves) and false fails (a right answer scored
lower); both must be zero.
"""
import json

import pytest

from autograder.example import answer_ids, build, with_answers
from autograder.grade import grade

from conftest import NOTEBOOK_NAMES, ROOT, load, nbgrader_meta
from proof_corpus import CORRECT, WRONG

pytestmark = pytest.mark.slow
CORPUS = CORRECT + WRONG


def autograded_cells(name: str) -> dict[str, float]:
    nb = load(ROOT / "release" / "step-04" / f"{name}.ipynb")
    return {nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"]) for c in nb["cells"]
            if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")}



@pytest.fixture(scope="module")
def corpus_grades(tmp_path_factory):
    home = tmp_path_factory.mktemp("proof")
    submissions = home / "class"
    for entry in CORPUS:
        (submissions / entry.name).mkdir(parents=True)
        (submissions / entry.name / f"{entry.notebook}.ipynb").write_text(
            json.dumps(with_answers(entry.notebook, entry.answers)))
    mp = pytest.MonkeyPatch()
    mp.setenv("GRADER_HOME", str(home))
    mp.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
    try:
        run = grade(submissions, workers=2, quiet=True, feedback=False)
    finally:
        mp.undo()
    scores = {(r["student"], r["notebook"], c["grade_id"]): (c["score"], c["error"])
              for r in run["results"] for c in r["cells"]}
    return scores


def test_corpus_is_large_enough_and_names_are_unique():
    assert len(CORRECT) >= 10, f"only {len(CORRECT)} correct variants"
    assert len(WRONG) >= 25, f"only {len(WRONG)} wrong submissions"
    assert len({e.name for e in CORPUS}) == len(CORPUS)
    for entry in CORPUS:
        assert entry.notebook in NOTEBOOK_NAMES
        cells = autograded_cells(entry.notebook)
        assert set(entry.expect) <= set(cells), f"{entry.name} expects unknown cells"
        assert all(0 <= v < cells[k] for k, v in entry.expect.items()), \
            f"{entry.name}: an expectation must be below the full marks of a cell that has points"
        assert entry.why, f"{entry.name} does not say what it is"


def test_no_false_pass_and_no_false_fail(corpus_grades):
    false_pass, false_fail = [], []
    for entry in CORPUS:
        for gid, full in autograded_cells(entry.notebook).items():
            expected = entry.expect.get(gid, full)
            got, error = corpus_grades[(entry.name, entry.notebook, gid)]
            if got > expected + 1e-9:
                false_pass.append(f"{entry.name} / {gid}: got {got}, deserves {expected} ({entry.why})")
            elif got < expected - 1e-9:
                false_fail.append(f"{entry.name} / {gid}: got {got}, deserves {expected} ({entry.why}): {error}")
    print(f"\ncorpus: {len(CORRECT)} correct variants, {len(WRONG)} wrong submissions")
    print(f"false passes: {len(false_pass)}" + "".join(f"\n  {x}" for x in false_pass))
    print(f"false fails: {len(false_fail)}" + "".join(f"\n  {x}" for x in false_fail))
    assert not false_pass and not false_fail


def test_every_lost_point_comes_with_a_reason_that_hides_the_tests(corpus_grades):
    for entry in WRONG:
        for gid in entry.expect:
            score, error = corpus_grades[(entry.name, entry.notebook, gid)]
            assert error, f"{entry.name} / {gid} lost points without a reason"
            for secret in ("hidden(", "BEGIN HIDDEN", "autograder.checks"):
                assert secret not in error
