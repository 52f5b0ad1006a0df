"""The similarity report lists answers alike across the class (renamed variables, unused padding and
another order do not hide a copy), leaves apart answers that differ, untouched ones and short ones,
ranks every copy of the synthetic class above every pair of honest students, shows the matching
regions side by side in a page where a student's text is only text, and changes no grade."""
import json
import re

from autograder.example import with_answers
from autograder.publish.similarity import matches, normalise_code, ranked, report, similar_pairs

from conftest import STEP, STEP4
from hostile import REQUEST_HOST, dangers

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
    from autograder.publish.similarity import by_student_pair
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


def graded(home, sid, answer, grade_id="scores_entrywise"):
    path = home / "autograded" / sid / STEP / f"{NB}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(with_answers(STEP4, NB, {grade_id: answer})))


def test_renamed_copies_are_listed_and_different_answers_are_not(grading_home):
    assert normalise_code("a = b + 1  # x")[0] == normalise_code("zz = yy + 2")[0] == "N=N+L"
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
                                             f"ada,bob,1,1.0,1.0,\"{NB}/scores_entrywise 1.00\""]
    assert sorted(p.read_bytes() for p in grading_home.rglob("*.ipynb")) == before


PADDING = '''

def _spread(values):
    """Not used: ten lines that are not the copied answer."""
    total = 0.0
    for value in values:
        total += value
    mean = total / max(len(values), 1)
    square = 0.0
    for value in values:
        square += (value - mean) ** 2
    return (square / max(len(values), 1)) ** 0.5
'''
TWO_FUNCTIONS = '''def _row(q_i, k, d):
    """One row of scores."""
    return torch.stack([(q_i * k_j).sum() / d ** 0.5 for k_j in k])


def scores_entrywise(q, k):
    T, d = q.shape
    rows = []
    for i in range(T):
        rows.append(_row(q[i], k, d))
    return torch.stack(rows)
'''


def _reordered(source: str) -> str:
    first, second = source.split("\n\n\n")
    return second.rstrip("\n") + "\n\n\n" + first + "\n"


def test_a_copy_padded_with_an_unused_helper_or_reordered_is_listed(grading_home):
    """The issue's case: the same copy with an unused ten-line helper added (0.29 against 0.8 by the
    share of the whole answer); and a copy with its functions in the other order."""
    graded(grading_home, "ada", OWN)
    graded(grading_home, "bob", RENAMED + PADDING)
    graded(grading_home, "cy", OTHER)
    graded(grading_home, "dan", TWO_FUNCTIONS)
    graded(grading_home, "eve", _reordered(TWO_FUNCTIONS).replace("rows", "out").replace("q_i", "x"))
    pairs = {(p["student_a"], p["student_b"]): p["similarity"] for p in similar_pairs(STEP, 0.8)}
    assert set(pairs) == {("ada", "bob"), ("dan", "eve")}, pairs
    assert pairs[("ada", "bob")] == 1.0 and pairs[("dan", "eve")] >= 0.9, pairs
    order = [(p["student_a"], p["student_b"]) for p in ranked(STEP)]
    assert set(order[:2]) == {("ada", "bob"), ("dan", "eve")}, order


def test_the_synthetic_class_ranks_each_copy_above_every_honest_pair(grading_home, capsys):
    """Six honest students (the proof corpus's correct variants, written answers of their own) and
    three who copied one of them: renamed, padded with an unused helper, reordered. Each copy is
    listed at the default threshold, and ranked above every pair of students who did not copy."""
    from similarity_class import COPIES, build
    build(grading_home)
    computed = matches(STEP)
    pairs = ranked(STEP, found=computed)
    copies = {tuple(sorted((copier, victim))): copier for copier, victim in COPIES.items()}
    found = {copies[(p["student_a"], p["student_b"])]: p for p in pairs if (p["student_a"], p["student_b"]) in copies}
    honest = [p for p in pairs if not {p["student_a"], p["student_b"]} & set(COPIES)]
    with capsys.disabled():
        print(f"\nsynthetic class: {len(pairs)} pairs sharing text; "
              + "; ".join(f"{c}: rank {found[c]['rank']}, {found[c]['score']:.2f}" for c in COPIES)
              + f"; best honest pair: rank {honest[0]['rank']}, {honest[0]['score']:.2f} "
              f"({honest[0]['student_a']}, {honest[0]['student_b']})")
    assert set(found) == set(COPIES), sorted(found)
    assert all(found[c]["score"] >= 0.8 for c in COPIES), {c: found[c]["score"] for c in COPIES}
    assert max(found[c]["rank"] for c in COPIES) < honest[0]["rank"], (found, honest[0])
    assert honest[0]["score"] < 0.8, honest[0]
    listed = {(p["student_a"], p["student_b"]) for p in similar_pairs(STEP, 0.8, found=computed)}
    assert set(copies) <= listed and not {pair for pair in listed if not set(pair) & set(COPIES)}, listed


def test_the_page_shows_matching_regions_side_by_side_and_student_text_only_as_text(grading_home):
    hostile = OWN.replace("# my own work", "") + (
        f'    # </pre><img src="http://{REQUEST_HOST}/sim.png"><script>alert(1)</script>\n'
        f'    note = "<style>body{{background:url(//{REQUEST_HOST}/x)}}</style><div class=navbar-fixed-top>"\n')
    graded(grading_home, "ada", hostile)
    graded(grading_home, "bob", RENAMED + PADDING)
    report(STEP, 0.8, say=lambda *a: None)
    page = (grading_home / "similarity.html").read_text()
    head, body = page.split("</head>")
    assert "Content-Security-Policy" in head and "default-src 'none'" in head and "img-src 'self' data:" in head
    assert not [d for d in dangers(body) if d != "<body>"], dangers(body)
    assert REQUEST_HOST not in re.sub(r"&lt;.*?&gt;|&quot;.*?&quot;", "", body.replace("\n", " "))
    assert "&lt;img src=&quot;http://" in body and "&lt;script&gt;" in body       # shown, as text
    assert re.findall(r"class='side'", body) == ["class='side'", "class='side'"]
    assert body.count("<mark>") >= 2 and "_spread" in body                      # shared regions marked, the rest shown
    assert not re.search(r"<mark>[^<]*_spread", body), "the unused helper is marked as shared"
