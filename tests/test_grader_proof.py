"""Prove the grader: every corpus submission gets exactly the points it deserves in every grade cell.

The corpus (tests/proof_corpus.py) is graded as one class through `make grade`'s code path; the
untouched release (`blank`) and the half-done example submission (`half`) are judged from the
example class, which the session grades once (conftest.example_class). The test
prints the grader's false passes (a wrong answer scored higher than it deserves) and false fails
(a right answer scored lower); both must be zero.

One graded notebook of each notebook of the step is graded a second time (--force): every score and
reason must be the same, and its feedback HTML must hold no hidden test source or machine path.

Speed: a notebook of the corpus is one kernel run. Entries of the same notebook that edit
different answer cells share one graded notebook (`pack`): a grade cell judges only the answer it
follows, so each entry's expectations stay exact and are reported under the entry's own name.

A run of the suite grades a sample of the corpus through the grader (`sample`): for each answer cell
the first entry of each family (correct, wrong, waiting for review), for each grade cell with points
the first wrong entry it catches and the first it gives partial credit to, then entries drawn at
random, DRAWN of each answer cell beyond that fixed part, from a seed the run reports (PROOF_SEED=<seed>
draws the same). Every entry is judged in-process on every run (tests/test_grader_proof_quick.py: the same
checks, without the kernel between them); `make proof` (PROOF_FULL=1) grades the whole corpus through
the grader, as the release check does.
"""
from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import sys
import tempfile
import time

import pytest

from autograder.course import db_url
from autograder.example import answer_ids, with_answers
from autograder.nbgrader_cmd import run_nbgrader
from autograder.grading.grade import grade

from conftest import NOTEBOOK_NAMES, ROOT, STEP, STEP4, kernels_or_skip, load, nbgrader_meta, run_once
from proof_corpus import CORRECT, REVIEW, UNDECIDED, WRONG, Entry

pytestmark = pytest.mark.slow
CORPUS = CORRECT + WRONG + UNDECIDED
# the kernels the corpus is graded in: warm, the grader's default (GRADER_KERNELS=cold: cold ones)
KERNELS = os.environ.get("GRADER_KERNELS", "warm")
MAX_EDITS_PER_NOTEBOOK = 6
# entries a run grades through the grader per answer cell: the fixed ones, then DRAWN drawn at random
# beyond them (at least PER_ANSWER in all where an answer cell has that many; 0: no such floor): 61 entries
# in 22 or 23 notebooks (PER_ANSWER = 5 gave 84 in 30; the fixed part alone is 44 in 16); PROOF_FULL=1
# (`make proof`) grades every entry (303 in 140)
PER_ANSWER = 0
DRAWN = 1
FULL = os.environ.get("PROOF_FULL") == "1"

# What the half-done example student (autograder.example.build: the first ceil(n/2) answer cells of
# each notebook filled with the solutions, the rest as released) fills in, and what it must score.
# Written answers (markdown) count among the answer cells but are graded by hand.
HALF_FILLS = {
    # 7 answers: map_written, coupling_expectation, shapes (bonus), simplex_proof | causality_proof, variance_proof,
    # dot_variance (bonus)
    "01-on-paper": ["map_written", "coupling_expectation", "shapes", "simplex_proof"],
    # 3 answers: scores_entrywise (bonus), count_params (bonus) | bonus_scale_width
    "02-the-head": ["scores_entrywise", "count_params"],
    # 8 answers: the three checks, scale_table | mask_after_softmax_row_sums, fails_on_mask_after_softmax, two written
    "03-the-tests": ["check_simplex", "check_causality_perturbation", "check_causality_gradient", "scale_table"],
    # 4 answers: attention_on_text (bonus), family_patterns | top_key_shares (bonus), first_column_heavy
    "04-attention-on-text": ["attention_on_text", "family_patterns"],
    # 2 answers: smoothing_attention | bonus_smoothing_as_s_grows
    "05-attention-as-smoothing": ["smoothing_attention"],
    # 9 answers: permutation_gaps, bonus_equivariance_sentence, online_softmax, streaming_attention,
    # bonus_flash_answer | fit_exponent, bonus_cost_answer, vowel_head, padded_keep_mask (the last two self-checked)
    "06-going-further": ["permutation_gaps", "bonus_equivariance_sentence", "online_softmax", "streaming_attention",
                         "bonus_flash_answer"],
}
HALF_EXPECT = {
    "01-on-paper": {"bonus_shapes": 2.0,            # shapes is filled: full marks
                    "bonus_dot_variance": 0.0},     # dot_variance is not: NotImplementedError
    "02-the-head": {"bonus_scores_entrywise": 3.0,  # both answers filled
                    "bonus_count_params": 2.0},
    "03-the-tests": {"check_simplex_hidden": 3.0, "check_perturbation_hidden": 3.0,   # the first four answers
                     "check_gradient_hidden": 3.0, "scale_table_hidden": 4.0,
                     "mask_after_softmax_hidden": 0.0,                                # not filled
                     "fails_on_mask_after_softmax_hidden": 0.0},                      # not filled
    "04-attention-on-text": {"bonus_attention_on_text": 3.0,    # filled, with the family description
                             "bonus_top_key_shares": 0.0},      # not filled (nor the first-column answer)
    "05-attention-as-smoothing": {"smoothing_attention_hidden": 4.0},   # the one code answer is filled
    "06-going-further": {"bonus_permutation_gaps": 2.0, "bonus_online_softmax": 3.0,
                         "bonus_streaming_attention": 2.0,
                         "bonus_fit_exponent": 0.0},                                  # fit_exponent not filled
}

# Never in feedback: hidden test source, grader internals, machine paths (the course folder, the
# Python installation, the temporary folder where kernels run).
MACHINE_PATHS = (str(ROOT) + "/", sys.prefix + "/", tempfile.gettempdir() + "/")
LEAK_MARKERS = ("hidden(", "BEGIN HIDDEN", "autograder.checks", "course_checks", "MutantHead", "REFERENCE") + MACHINE_PATHS


def autograded_cells(name: str) -> dict[str, float]:
    nb = load(STEP4.release / f"{name}.ipynb")
    return {nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"]) for c in nb["cells"]
            if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")}


def manual_cells(name: str) -> list[str]:
    nb = load(STEP4.release / f"{name}.ipynb")
    return [nbgrader_meta(c)["grade_id"] for c in nb["cells"]
            if nbgrader_meta(c).get("grade") and nbgrader_meta(c).get("solution")]


def feeds(name: str) -> dict[str, list[str]]:
    """answer grade_id -> the autograded cells that judge it: in the release, the grade cells after a
    code answer cell, up to the next code answer cell (written answers are graded by hand)."""
    nb = load(STEP4.release / f"{name}.ipynb")
    out, current = {}, None
    for cell in nb["cells"]:
        meta = nbgrader_meta(cell)
        if meta.get("solution") and cell["cell_type"] == "code":
            current = meta["grade_id"]
            out[current] = []
        elif meta.get("grade") and not meta.get("solution") and current is not None:
            out[current].append(meta["grade_id"])
    return out


def judged_by(entry: Entry) -> set[str]:
    cells = feeds(entry.notebook)
    return {gid for answer in entry.answers for gid in cells.get(answer, [])}


def pack(entries: list[Entry]) -> list[tuple[str, list[Entry]]]:
    """Graded notebooks: (student id, entries). Entries of one notebook share a notebook when they edit
    different answer cells; first fit, in corpus order, so the packing is the same every run."""
    bins: list[tuple[str, list[Entry]]] = []
    for entry in entries:
        for sid, members in bins:
            if (members[0].notebook == entry.notebook and len(members) < MAX_EDITS_PER_NOTEBOOK
                    and not any(set(m.answers) & set(entry.answers) for m in members)):
                members.append(entry)
                break
        else:
            bins.append((f"proof-{entry.notebook[:2]}-{len(bins):02d}", [entry]))
    return bins


def sample(entries: list[Entry], seed: int, per_answer: int = PER_ANSWER, drawn: int = DRAWN) -> list[Entry]:
    """The entries a run grades, in corpus order. Fixed: for each answer cell the first entry of each
    family (correct, wrong, waiting for review); for each grade cell with points the first wrong entry
    that loses points there and the first that keeps part of them. Then, for each answer cell, entries
    drawn with `seed` until it has `per_answer` (an entry editing two answers counts for both), and at
    least `drawn` of them drawn (where it has that many more)."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        for answer in entry.answers:
            groups.setdefault((entry.notebook, answer), []).append(entry)
    chosen: set[str] = set()
    for members in groups.values():
        for family in (CORRECT, WRONG, UNDECIDED):
            first = next((m for m in members if m in family), None)
            if first is not None:
                chosen.add(first.name)
    for name in {e.notebook for e in entries}:
        for gid, points in autograded_cells(name).items():
            if points > 0:
                caught = [e for e in WRONG if e in entries and e.notebook == name and gid in e.expect]
                partial = [e for e in caught if 0 < e.expect[gid]]
                chosen.update(e.name for e in (caught[:1] + partial[:1]))
    rng = random.Random(seed)
    for key in sorted(groups):
        members = groups[key]
        rest = [m for m in members if m.name not in chosen]
        room = max(per_answer - (len(members) - len(rest)), drawn)
        if room > 0 and rest:
            chosen.update(m.name for m in rng.sample(rest, min(room, len(rest))))
    return [e for e in entries if e.name in chosen]


def proof_seed() -> int:
    """PROOF_SEED, or a fresh one: the run reports it."""
    return int(os.environ["PROOF_SEED"]) if os.environ.get("PROOF_SEED") else secrets.randbelow(2**31)


def packed_from(data: dict) -> list[tuple[str, list[Entry]]]:
    """The graded notebooks of a run (grade_the_corpus's data): (student id, entries)."""
    by_name = {e.name: e for e in CORPUS}
    return [(sid, [by_name[n] for n in names]) for sid, names in data["packed"]]


def expected_scores(packed: list[tuple[str, list[Entry]]]) -> dict[tuple[str, str, str], tuple[float, str]]:
    """(student, notebook, grade cell) -> (the exact score it deserves, who says so)."""
    out = {}
    for sid, members in packed:
        name = members[0].notebook
        owner = {gid: m for m in members for gid in judged_by(m)}
        for gid, full in autograded_cells(name).items():
            entry = owner.get(gid)
            if entry is None:
                out[(sid, name, gid)] = (full, "+".join(m.name for m in members) + " (an answer none of them edits)")
            else:
                out[(sid, name, gid)] = (entry.expect.get(gid, full), f"{entry.name} ({entry.why})")
    for name in NOTEBOOK_NAMES:
        for gid, full in autograded_cells(name).items():
            out[("blank", name, gid)] = (0.0, "blank (the untouched release)")
            out[("half", name, gid)] = (HALF_EXPECT[name][gid] if full else 0.0, "half (the first half of the answers)")
    return out


def write_class(folder, packed):
    for sid, members in packed:
        answers = {k: v for m in members for k, v in m.answers.items()}
        (folder / sid).mkdir(parents=True)
        (folder / sid / f"{members[0].notebook}.ipynb").write_text(json.dumps(with_answers(STEP4, members[0].notebook, answers)))


def grade_the_corpus(home):
    """Grade the corpus class (2 workers), then regrade one notebook of each kind from scratch (1 worker)
    with its feedback: JSON-able results for run_once."""
    seed = proof_seed()
    graded = CORPUS if FULL else sample(CORPUS, seed)
    packed = pack(graded)
    submissions = home / "class"
    write_class(submissions, packed)
    mp = pytest.MonkeyPatch()
    mp.setenv("GRADER_HOME", str(home))
    mp.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
    try:
        started = time.monotonic()
        run = grade(STEP4, submissions, workers=2, quiet=True, feedback=False, kernels=KERNELS)
        seconds = time.monotonic() - started
        kinds = {r["kernels"] for r in run["results"] if "kernels" in r}
        assert kinds == {KERNELS}, f"the proof asked for {KERNELS} kernels and was graded in {kinds}"
        # grade a subset again from scratch (--force): one packed notebook of each notebook of the step
        again = home / "again"
        again.mkdir()
        firsts = {}
        for sid, members in packed:
            firsts.setdefault(members[0].notebook, sid)
        for sid in firsts.values():
            shutil.copytree(submissions / sid, again / sid)
        # one worker: six notebooks are not worth a second worker's kernel template, and the same scores
        # from another number of workers is part of what the rerun shows
        rerun = grade(STEP4, again, workers=1, force=True, quiet=True, feedback=False, kernels=KERNELS)
        # feedback HTML for the regraded students (every notebook of the step is among them); the
        # rest of the class is left out only to save time (grade() writes feedback for everyone)
        others = sorted({sid for sid, _ in packed} - set(firsts.values()))
        run_nbgrader("generate_feedback", STEP, "--force",
                     f"--CourseDirectory.autograded_directory={home / 'autograded'}",
                     f"--CourseDirectory.feedback_directory={home / 'feedback'}",
                     f"--CourseDirectory.student_id_exclude={','.join(others)}", db_url=db_url())
    finally:
        mp.undo()
    print(f"\nproof: {len(packed)} corpus notebooks graded in {seconds:.0f} s (2 workers); "
          f"{len(firsts)} graded again in {time.monotonic() - started - seconds:.0f} s (1 worker) with their feedback")
    cells = lambda results: [[r["student"], r["notebook"], c["grade_id"], c] for r in results for c in r["cells"]]  # noqa: E731
    return {"scores": cells(run["results"]), "rescores": cells(rerun["results"]), "problems": run["problems"],
            "packed": [[sid, [m.name for m in members]] for sid, members in packed],
            "seed": None if FULL else seed, "seconds": seconds}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, example_class):
    """The corpus graded once per test session, whichever xdist worker asks first; blank and half
    are the example class's (graded once per session too, conftest.example_class). Where the kernels
    asked for cannot be had (warm in bwrap needs root) it skips, never grading other kernels instead."""
    from autograder.kernel.sandbox import resolve_sandbox
    kernels_or_skip(resolve_sandbox("auto"), KERNELS)
    home, data = run_once(tmp_path_factory, "proof", grade_the_corpus)
    keyed = lambda rows: {(s, n, g): cell for s, n, g, cell in rows}  # noqa: E731
    example = {(r["student"], r["notebook"], c["grade_id"]): c for r in example_class[1]["run"]["results"]
               if r["student"] in ("blank", "half") for c in r["cells"]}
    return {"home": home, "scores": keyed(data["scores"]) | example, "rescores": keyed(data["rescores"]),
            "problems": data["problems"], "packed": packed_from(data), "seed": data["seed"],
            "seconds": data["seconds"]}


def test_corpus_is_large_enough_and_well_formed():
    assert len(CORRECT) >= 10, f"only {len(CORRECT)} correct variants"
    assert len(WRONG) >= 25, f"only {len(WRONG)} wrong submissions"
    assert len({e.name for e in CORPUS}) == len(CORPUS)
    for entry in CORPUS:
        assert entry.notebook in NOTEBOOK_NAMES
        cells = autograded_cells(entry.notebook)
        assert entry.answers, f"{entry.name} edits nothing"
        assert set(entry.expect) <= set(cells), f"{entry.name} expects unknown cells"
        assert set(entry.expect) <= judged_by(entry), \
            f"{entry.name}: expects points lost in a cell that does not judge the answers it edits"
        assert all(v == REVIEW or 0 <= v < cells[k] for k, v in entry.expect.items()), \
            f"{entry.name}: an expectation must be below the full marks of a cell that has points, or REVIEW"
        assert (entry in UNDECIDED) == (REVIEW in entry.expect.values()), \
            f"{entry.name}: an entry expecting REVIEW belongs in UNDECIDED, and only such an entry"
        assert entry.why, f"{entry.name} does not say what it is"
        if not entry.correct:
            assert set(entry.says) == set(entry.expect), \
                f"{entry.name}: say which words the feedback of each catching cell must contain"
    # every autograded cell with points is shown both a right and a wrong answer
    for name in {e.notebook for e in CORPUS}:
        caught = {gid for e in WRONG if e.notebook == name for gid in e.expect}
        varied = {gid for e in CORRECT if e.notebook == name for gid in judged_by(e)}
        for gid, points in autograded_cells(name).items():
            if points > 0:
                assert gid in caught, f"no wrong submission is caught by {name} / {gid}"
                # every check here scores several properties: show partial credit once for each
                assert any(0 < e.expect.get(gid, 0) for e in WRONG if e.notebook == name), \
                    f"no wrong submission gets partial credit in {name} / {gid}"
                assert gid in varied, f"no correct variant other than the solution reaches {name} / {gid}"


def test_half_fills_what_the_comments_say():
    for name in NOTEBOOK_NAMES:
        ids = answer_ids(load(STEP4.release / f"{name}.ipynb"))
        grade_ids = {c["id"]: nbgrader_meta(c).get("grade_id") for c in load(STEP4.release / f"{name}.ipynb")["cells"]}
        half = [grade_ids[i] for i in ids[:(len(ids) + 1) // 2]]
        assert half == HALF_FILLS[name], name
        assert set(HALF_EXPECT[name]) == set(autograded_cells(name)) - {
            g for g, p in autograded_cells(name).items() if p == 0}, name
        filled_cells = {g for a in HALF_FILLS[name] for g in feeds(name).get(a, [])}
        for gid, points in HALF_EXPECT[name].items():
            assert points == (autograded_cells(name)[gid] if gid in filled_cells else 0.0), (name, gid)


def check_sample(entries: list[Entry], seeds: tuple[int, ...]) -> None:
    """What `sample(entries, seed)` holds for each seed (this module's and the same-CPU proof's): the fixed
    part, whatever the seed; the same seed, the same sample; another seed, another draw; each answer cell
    has every family it has (correct, wrong, waiting for review) and DRAWN entries drawn beyond the fixed
    part, or all it has; each grade cell with points a wrong entry it catches and one it gives partial
    credit to; the sample leaves entries out (it is a sample)."""
    samples = [sample(entries, seed) for seed in seeds]
    fixed = {e.name for e in sample(entries, seeds[0], 0, 0)}
    assert fixed == {e.name for e in sample(entries, seeds[-1], 0, 0)}, "the fixed part depends on the seed"
    assert [e.name for e in sample(entries, seeds[0])] == [e.name for e in samples[0]]
    if len(seeds) > 1:
        assert len({tuple(e.name for e in s) for s in samples}) > 1, "the seed draws nothing"
    for chosen in samples:
        assert len(chosen) < len(entries)
        for (notebook, answer) in {(e.notebook, a) for e in entries for a in e.answers}:
            mates = [e for e in entries if e.notebook == notebook and answer in e.answers]
            in_sample = [e for e in chosen if e in mates]
            for family in (CORRECT, WRONG, UNDECIDED):
                if any(e in family for e in mates):
                    assert any(e in family for e in in_sample), (notebook, answer, family is CORRECT)
            drawn = [e for e in in_sample if e.name not in fixed]
            assert len(drawn) >= min(DRAWN, len([e for e in mates if e.name not in fixed])), \
                (notebook, answer, len(drawn))
        for name in {e.notebook for e in entries}:
            for gid, points in autograded_cells(name).items():
                if points > 0:
                    wrong = [e for e in chosen if e in WRONG and e.notebook == name]
                    assert any(gid in e.expect for e in wrong), (name, gid, "no wrong entry it catches")
                    assert any(0 < e.expect.get(gid, 0) for e in wrong), (name, gid, "no partial credit")


def test_the_sample_has_every_family_of_every_answer_and_its_seed_draws_it_again():
    """check_sample on the whole corpus, for three seeds."""
    check_sample(CORPUS, (0, 1, 2**31 - 1))
    assert {e.notebook for e in CORPUS} == set(NOTEBOOK_NAMES)


def test_no_false_pass_and_no_false_fail(graded, record_property):
    scores = graded["scores"]
    packed = graded["packed"]
    entries = [m for _, members in packed for m in members]
    if graded["seed"] is None:
        record_property("measured", f"grader proof: the whole corpus ({len(entries)} entries in {len(packed)} "
                                    f"notebooks) graded in {graded['seconds']:.0f} s")
    else:
        record_property("measured", f"grader proof: {len(entries)} of {len(CORPUS)} corpus entries in {len(packed)} "
                                    f"notebooks graded in {graded['seconds']:.0f} s, sample seed {graded['seed']} "
                                    f"(PROOF_SEED={graded['seed']} draws it again; `make proof` grades them all)")
    false_pass, false_fail, missing, review = [], [], [], []
    for key, (expected, who) in expected_scores(packed).items():
        cell = scores.get(key)
        if cell is None:
            missing.append(f"{key}: not graded")
            continue
        got = cell["score"]
        if expected == REVIEW or cell.get("kind") == "review":
            if (expected == REVIEW) != (cell.get("kind") == "review" and got is None):
                review.append(f"{key[0]} / {key[2]}: got {got} ({cell.get('kind')}), deserves {expected}: {who}: "
                              f"{cell['error']}")
            continue
        if got > expected + 1e-9:
            false_pass.append(f"{key[0]} / {key[2]}: got {got}, deserves {expected}: {who}")
        elif got < expected - 1e-9:
            false_fail.append(f"{key[0]} / {key[2]}: got {got}, deserves {expected}: {who}: {cell['error']}")
    print(f"\ncorpus: {len(CORRECT)} correct variants, {len(WRONG)} wrong submissions; graded: {len(entries)}, in "
          f"{len(packed)} "
          f"graded notebooks; cells with points covered: "
          f"{len({(e.notebook, g) for e in entries for g in judged_by(e) if autograded_cells(e.notebook)[g] > 0})}")
    print(f"false passes: {len(false_pass)}" + "".join(f"\n  {x}" for x in false_pass))
    print(f"false fails: {len(false_fail)}" + "".join(f"\n  {x}" for x in false_fail))
    waiting = sorted(k for k, c in scores.items() if c.get("kind") == "review" and c["score"] is None)
    print(f"cells waiting for review: {len(waiting)} (the corpus's REVIEW entries: {len(UNDECIDED)})"
          + "".join(f"\n  {s} / {g}" for s, _, g in waiting))
    print(f"reviews not as expected: {len(review)}" + "".join(f"\n  {x}" for x in review))
    assert not missing, missing
    assert not false_pass and not false_fail and not review


def test_blank_and_half_written_answers(graded):
    scores = graded["scores"]
    for name in NOTEBOOK_NAMES:
        for gid in manual_cells(name):
            blank, half = scores[("blank", name, gid)], scores[("half", name, gid)]
            assert blank["score"] == 0 and blank["error"] == "no answer given", (name, gid)
            if gid in HALF_FILLS[name]:
                assert half["score"] is None, f"{name} / {gid}: a written answer waits for a grader"
            else:
                assert half["score"] == 0, (name, gid)


def test_every_lost_point_comes_with_a_reason_that_teaches_and_hides_the_tests(graded):
    scores = graded["scores"]
    sid_of = {m.name: sid for sid, members in graded["packed"] for m in members}
    problems = []
    losing = [e for e in WRONG + UNDECIDED if e.name in sid_of]       # those this run graded
    assert losing
    for entry in losing:
        for gid in entry.expect:
            error = scores[(sid_of[entry.name], entry.notebook, gid)]["error"]
            if not error:
                problems.append(f"{entry.name} / {gid} lost points without a reason")
            for secret in LEAK_MARKERS:
                if secret in error:
                    problems.append(f"{entry.name} / {gid}: the reason shows {secret!r}")
            for word in entry.says[gid]:
                if word.lower() not in error.lower():
                    problems.append(f"{entry.name} / {gid}: the reason does not say {word!r}: {error}")
    assert not problems, "\n".join(problems)


def test_a_cell_the_reader_cannot_decide_waits_for_a_manual_grade_in_the_gradebook(graded):
    """The REVIEW entries' cells: no auto_score and `needs_manual_grade`, as nbgrader keeps a written answer
    nobody has graded (the formgrader lists them so); every other autograded cell has its score."""
    from nbgrader.api import Gradebook
    sid_of = {m.name: sid for sid, members in graded["packed"] for m in members}
    with Gradebook(f"sqlite:///{graded['home'] / 'gradebook.db'}", "dl-course") as gb:
        undecided = [e for e in UNDECIDED if e.name in sid_of]          # those this run graded
        assert undecided
        for entry in undecided:
            for gid in entry.expect:
                grade = gb.find_grade(gid, entry.notebook, STEP, sid_of[entry.name])
                assert (grade.auto_score, grade.manual_score, grade.needs_manual_grade) == (None, None, True), \
                    (entry.name, gid)
        for entry in [e for e in CORRECT if e.name in sid_of][:3]:
            for gid in judged_by(entry):
                grade = gb.find_grade(gid, entry.notebook, STEP, sid_of[entry.name])
                assert grade.auto_score is not None and not grade.needs_manual_grade, (entry.name, gid)


def test_grading_twice_gives_the_same_scores_and_reasons(graded):
    scores, rescores = graded["scores"], graded["rescores"]
    assert rescores
    differ = [f"{k}: {scores[k]} then {v}" for k, v in rescores.items() if scores.get(k) != v]
    assert not differ, "\n".join(differ)


def test_feedback_holds_no_hidden_test_source(graded):
    feedback = graded["home"] / "feedback"
    pages = sorted(feedback.rglob("*.html"))
    seen = {p.stem for p in pages}
    assert seen >= set(NOTEBOOK_NAMES), f"feedback on corpus notebooks {sorted(seen)} only"
    for page in pages:
        html = page.read_text()
        for secret in ("BEGIN HIDDEN TESTS", "hidden(", "autograder.checks", "BEGIN SOLUTION") + MACHINE_PATHS:
            assert secret not in html, f"{page.relative_to(feedback)} shows {secret!r}"
        assert "Hidden tests:" in html, page
