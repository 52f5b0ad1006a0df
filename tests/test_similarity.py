"""The similarity report lists answers alike across the class (renamed variables do not hide a copy),
leaves apart answers that differ, untouched ones and short ones, and changes no grade."""
import json

from autograder.example import with_answers
from autograder.similarity import code_tokens, report, similar_pairs

from conftest import STEP, STEP4

NB = "02-the-head"
OWN = '''def scores_entrywise(q, k):
    T, d = q.shape
    out = torch.empty(T, T)
    for i in range(T):
        for j in range(T):
            out[i, j] = (q[i] * k[j]).sum() / d ** 0.5
    return out
'''
RENAMED = OWN.replace("out", "result").replace("T, d", "n, dim").replace("(T)", "(n)").replace("d ** 0.5", "dim ** 0.5") \
    .replace("torch.empty(T, T)", "torch.empty(n, n)") + "# my own work\n"
OTHER = '''def scores_entrywise(q, k):
    # the whole matrix at once, then nothing else
    return (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
'''


def test_the_model_solution_is_discounted_and_pairs_are_grouped_by_student(grading_home):
    """A class that hands in the solution everywhere (and two students who share one extra answer)
    lists one pair of students, not one line per cell for every pair."""
    from autograder.example import answers_of
    from autograder.similarity import by_student_pair
    model = answers_of(STEP4, NB)["scores_entrywise"]
    for sid in ("ada", "bob", "cy", "dan"):
        graded(grading_home, sid, model)                 # the model solution, word for word
    assert similar_pairs(STEP, 0.8) == []
    grouped = by_student_pair([
        {"notebook": "a", "grade_id": "x", "student_a": "ada", "student_b": "bob", "similarity": 0.9},
        {"notebook": "b", "grade_id": "y", "student_a": "ada", "student_b": "bob", "similarity": 1.0},
        {"notebook": "a", "grade_id": "x", "student_a": "bob", "student_b": "cy", "similarity": 0.95}])
    assert [(g["student_a"], g["student_b"], g["answers_alike"], g["max_similarity"]) for g in grouped] == \
           [("ada", "bob", 2, 1.0), ("bob", "cy", 1, 0.95)]
    assert grouped[0]["answers"] == "b/y 1.00; a/x 0.90"


def graded(home, sid, answer):
    path = home / "autograded" / sid / STEP / f"{NB}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(with_answers(STEP4, NB, {"scores_entrywise": answer})))


def test_renamed_copies_are_listed_and_different_answers_are_not(grading_home):
    assert code_tokens("a = b + 1  # x") == code_tokens("zz = yy + 2")
    graded(grading_home, "ada", OWN)
    graded(grading_home, "bob", RENAMED)
    graded(grading_home, "cy", OTHER)
    pairs = [p for p in similar_pairs(STEP, 0.8) if p["grade_id"] == "scores_entrywise"]
    assert [(p["student_a"], p["student_b"]) for p in pairs] == [("ada", "bob")] and pairs[0]["similarity"] == 1.0
    # every other answer of the three is the model solution: not listed (it is not their own text)
    assert {p["grade_id"] for p in similar_pairs(STEP, 0.8)} == {"scores_entrywise"}
    before = sorted(p.read_bytes() for p in grading_home.rglob("*.ipynb"))
    dest = report(STEP, 0.8, say=lambda *a: None)
    assert dest.read_text().splitlines() == ["student_a,student_b,answers_alike,max_similarity,mean_similarity,answers",
                                             f"ada,bob,1,1.0,1.0,{NB}/scores_entrywise 1.00"]
    assert sorted(p.read_bytes() for p in grading_home.rglob("*.ipynb")) == before
