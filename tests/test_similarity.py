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
    before = sorted(p.read_bytes() for p in grading_home.rglob("*.ipynb"))
    dest = report(STEP, 0.8, say=lambda *a: None)
    assert "scores_entrywise,ada,bob,1.0" in dest.read_text()
    assert sorted(p.read_bytes() for p in grading_home.rglob("*.ipynb")) == before
