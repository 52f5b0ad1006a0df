"""Hidden cases drawn per submission (issue 22): every check that calls a student's function on
inputs of its own also draws inputs for each submission, from the course's case key and every byte
of the submitted file (autograder/checks/framework.py `fresh_rng`, autograder/checks/casekey.py). The same
submission regraded meets the same cases and earns the same grade; another submission or another key
meets others; an answer that returns what it recorded in an earlier grading earns nothing for it;
honest answers keep full marks and wrong ones their partial credit under any key.

Every wrong answer of the proof corpus that a check with cases of its own judges is judged on every run
under one of three fixed keys; a sample of them, drawn for each such check from a seed the run reports
(FRESH_KEY_SEED=<seed> draws it and the run's own key again), under a key drawn for the run too, and
all of them with PROOF_FULL=1 (`make proof`). The judgements run on one torch thread (tests/conftest.py),
as a graded kernel does by default (autograder/grading/grade.py: a worker per core, cores // workers threads each;
tests/test_same_grade_on_every_cpu.py: the same points on 1 and 2 threads)."""
from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import random
import secrets
import stat
import types

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.checks.casekey import KEY_FILE, case_key, key_fingerprint
from autograder.checks.framework import UNKEYED, fresh_seed, twin
from autograder.selfgrade import probe_and_judge
from autograder.example import answers_of
from dlcourse.contracts import contract
from dlcourse.data import Vocab, load_text
from dlcourse.head import Head

from conftest import STEP4
from proof_corpus import WRONG
from test_grader_proof import feeds, judged_by
from test_grader_proof_quick import code_answers

REGISTRY = STEP4.checks
# grade id -> its notebook: the checks that draw cases of each submission's own
FRESH = {
    "bonus_shapes": "01-on-paper", "bonus_dot_variance": "01-on-paper",
    "bonus_scores_entrywise": "02-the-head", "bonus_count_params": "02-the-head",
    "mask_after_softmax_hidden": "03-the-tests", "scale_table_hidden": "03-the-tests",
    "check_simplex_hidden": "03-the-tests", "check_perturbation_hidden": "03-the-tests",
    "check_gradient_hidden": "03-the-tests",
    "bonus_attention_on_text": "04-attention-on-text", "bonus_top_key_shares": "04-attention-on-text",
    "smoothing_attention_hidden": "05-attention-as-smoothing",
    "bonus_permutation_gaps": "06-going-further", "bonus_online_softmax": "06-going-further",
    "bonus_streaming_attention": "06-going-further", "bonus_fit_exponent": "06-going-further",
}
KEYS = [bytes([n]) * 32 for n in (1, 2, 3)]


def namespace(notebook: str, answers: dict | None = None) -> dict:
    """A notebook's answers (the instructor's, with `answers` instead of some) run in a namespace whose
    input history is their code, as a kernel's is."""
    ns = {"torch": torch, "nn": nn, "F": F, "math": math, "np": np, "Head": Head, "__name__": "__main__"}
    if notebook.startswith("04"):
        vocab = Vocab(load_text())
        ns.update(text=load_text(), vocab=vocab, encode=vocab.encode, V=vocab.size)
    code = {**answers_of(STEP4, notebook), **(answers or {})}
    ns["In"] = [""]
    for gid in code_answers(notebook):
        exec(compile(code[gid], f"<{gid}>", "exec"), ns)
        ns["In"].append(code[gid])
    return ns


def judged(grade_id: str, ns: dict, key: bytes | None):
    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()):
        return probe_and_judge(grade_id, ns, case_key=key)


def points(verdict, grade_id) -> float:
    return round(REGISTRY[grade_id].points * verdict.fraction, 2)


# ---- the key --------------------------------------------------------------------------------------

def test_the_key_is_made_once_private_and_kept(tmp_path):
    key = case_key(tmp_path)
    path = tmp_path / KEY_FILE
    assert len(key) == 32 and path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert case_key(tmp_path) == key                        # a regrade uses the same key
    assert case_key(tmp_path / "other") != key              # another grader home (another term) another
    assert key.hex() not in key_fingerprint(key) and key_fingerprint(key) == key_fingerprint(case_key(tmp_path))
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == [KEY_FILE]     # no temporary file left


def test_grading_makes_the_key_in_the_grader_home_and_a_new_key_regrades(tmp_path, monkeypatch):
    """The results' keys carry the case key's fingerprint: a lost key cannot leave stale results."""
    from autograder.grading.grade import Plan
    monkeypatch.setenv("GRADER_HOME", str(tmp_path))
    item = types.SimpleNamespace(data=b"{}")
    plan = Plan(STEP4, "sqlite://", "none", 1, {})
    plan.keep_received({("s1", "01-on-paper"): item}, False, {"s1": 0.0})
    assert (tmp_path / KEY_FILE).is_file()
    first = plan.jobs[0].key
    (tmp_path / KEY_FILE).unlink()
    again = Plan(STEP4, "sqlite://", "none", 1, {})
    again.keep_received({("s1", "01-on-paper"): item}, False, {"s1": 0.0})
    assert again.jobs[0].key != first


# ---- the seed -------------------------------------------------------------------------------------

def test_the_seed_follows_the_key_the_step_the_check_and_the_code():
    check = REGISTRY["bonus_count_params"]

    def ctx(key=KEYS[0], step="step-04", sources=("def count_params(d, d_head):\n    return 3 * d * d_head\n",)):
        return types.SimpleNamespace(case_key=key, step=types.SimpleNamespace(name=step), sources=list(sources))

    seed = fresh_seed(ctx(), check, "twins")
    assert seed == fresh_seed(ctx(), check, "twins")
    others = [fresh_seed(ctx(key=KEYS[1]), check, "twins"), fresh_seed(ctx(step="step-05"), check, "twins"),
              fresh_seed(ctx(sources=("def count_params(d, d_head):\n    return 3*d*d_head\n",)), check, "twins"),
              fresh_seed(ctx(sources=()), check, "twins"), fresh_seed(ctx(), REGISTRY["bonus_shapes"], "twins"),
              fresh_seed(ctx(), check, "other"), fresh_seed(ctx(key=None), check, "twins")]
    assert len({seed, *others}) == len(others) + 1
    # without a key (the instructor's kernel) the draw is UNKEYED's
    assert fresh_seed(ctx(key=None), check, "twins") == fresh_seed(ctx(key=UNKEYED), check, "twins")


def test_a_twin_keeps_every_relation_of_its_case():
    import random
    rng = random.Random(5)
    for case in [(12, 5), (5, 12), (100, 7), (3, 1), (11, 13, 5, 3), (2, 64, 16, 16), (9, 4, 6, 10)]:
        for _ in range(200):
            new = twin(rng, case, keep=(1,) if len(case) == 2 else (), high=400)
            for a, b in [(a, b) for a in range(len(case)) for b in range(len(case))]:
                assert (case[a] < case[b]) == (new[a] < new[b]) and (case[a] == case[b]) == (new[a] == new[b])
            assert all(n == 1 for c, n in zip(case, new) if c == 1 and len(case) == 2)


# ---- grading with fresh cases ---------------------------------------------------------------------------

@pytest.mark.parametrize("grade_id", sorted(FRESH))
def test_honest_answers_keep_full_marks_under_every_key(grade_id):
    ns = namespace(FRESH[grade_id])
    for key in KEYS + [None]:
        verdict = judged(grade_id, ns, key)
        assert verdict.fraction == 1.0, (grade_id, key, verdict.report(REGISTRY[grade_id].points))


@functools.lru_cache(maxsize=None)
def _feeds(notebook: str) -> dict[str, list[str]]:
    return feeds(notebook)


def fresh_cells(entry) -> list[str]:
    """The checks with cases of their own that judge a corpus entry's answers (test_grader_proof.judged_by,
    each released notebook read once)."""
    cells = _feeds(entry.notebook)
    return sorted({gid for answer in entry.answers for gid in cells.get(answer, [])} & set(FRESH))


WRONG_FRESH = [e for e in WRONG if fresh_cells(e)]


# the wrong answers of each check with cases of its own judged under the run's key as well as under one of KEYS:
# 32 judgements more, about 7 s of CPU (one of 03's student checks takes about 0.7 s a key)
PER_CHECK = 2
FULL = os.environ.get("PROOF_FULL") == "1"          # `make proof`: every wrong answer under the run's key


def run_sample(entries, rng: random.Random, per_check: int = PER_CHECK) -> set[str]:
    """The names of the wrong answers judged under the run's key: for each check with cases of its own,
    `per_check` of the entries it judges (every one it judges if fewer), drawn with `rng`."""
    judging: dict[str, list[str]] = {}
    for entry in entries:
        for gid in fresh_cells(entry):
            judging.setdefault(gid, []).append(entry.name)
    return {name for gid in sorted(judging) for name in rng.sample(judging[gid], min(per_check, len(judging[gid])))}


# a key of this run's own, and the wrong answers it judges besides one of KEYS each: FRESH_KEY_SEED=<seed>
# draws both again
RUN_SEED = int(os.environ.get("FRESH_KEY_SEED") or secrets.randbelow(2**31))
_RUN_RNG = random.Random(RUN_SEED)
RUN_KEY = _RUN_RNG.randbytes(32)
RUN_SAMPLE = {e.name for e in WRONG_FRESH} if FULL else run_sample(WRONG_FRESH, _RUN_RNG)


def test_the_run_key_judges_wrong_answers_of_every_check_drawn_again_from_its_seed():
    """The run's sample: PER_CHECK wrong answers of each check with cases of its own (each one of a check
    judging fewer), the same from the same seed, another from another seed."""
    assert all(fresh_cells(e) == sorted(set(judged_by(e)) & set(FRESH)) for e in WRONG[::10])
    sample = run_sample(WRONG_FRESH, random.Random(5))
    assert sample == run_sample(WRONG_FRESH, random.Random(5))
    assert sample != run_sample(WRONG_FRESH, random.Random(6))
    for gid in FRESH:
        judged_here = {e.name for e in WRONG_FRESH if gid in fresh_cells(e)}
        assert judged_here, gid                                        # every check has wrong answers to judge
        assert len(sample & judged_here) >= min(PER_CHECK, len(judged_here)), gid
    assert len(sample) < len(WRONG_FRESH)
    seeded = random.Random(RUN_SEED)                                   # the run's: its key, then its sample
    assert seeded.randbytes(32) == RUN_KEY
    assert RUN_SAMPLE == ({e.name for e in WRONG_FRESH} if FULL else run_sample(WRONG_FRESH, seeded))


@pytest.mark.slow                      # 239 wrong answers judged once, 32 of them twice: about 45 s of CPU
@pytest.mark.parametrize("index", range(len(WRONG_FRESH)), ids=[e.name for e in WRONG_FRESH])
def test_wrong_answers_keep_their_partial_credit_under_any_key(index, record_property):
    """The proof corpus's exact partial scores were measured on the fixed cases; they hold for any draw:
    each wrong answer is judged under one of KEYS (in turn, so each key judges a third of them), and those
    of the run's sample (RUN_SAMPLE: every one with PROOF_FULL=1) under a key drawn for the run from a seed
    it reports."""
    entry = WRONG_FRESH[index]
    if index == 0:
        record_property("measured", f"fresh cases: the wrong answers' run key and the {len(RUN_SAMPLE)} of "
                                    f"{len(WRONG_FRESH)} it judges are drawn from seed {RUN_SEED} "
                                    f"(FRESH_KEY_SEED={RUN_SEED} draws them again; PROOF_FULL=1 judges all)")
    ns = namespace(entry.notebook, entry.answers)
    keys = [KEYS[index % len(KEYS)]] + ([RUN_KEY] if entry.name in RUN_SAMPLE else [])
    for gid in fresh_cells(entry):
        expected = entry.expect.get(gid, REGISTRY[gid].points)
        for key in keys:
            assert points(judged(gid, ns, key), gid) == pytest.approx(expected, abs=1e-9), \
                (entry.name, gid, key.hex(), f"FRESH_KEY_SEED={RUN_SEED}")


def recorder(notebook: str, function: str) -> dict:
    """The instructor's answer, wrapped to record every input the hidden test calls it with."""
    ns = namespace(notebook)
    seen, original = [], ns[function]

    def recording(*args):
        seen.append(tuple(a.tolist() if isinstance(a, torch.Tensor) else a for a in args))
        return original(*args)
    ns[function] = recording
    ns["SEEN"] = seen
    return ns


def test_the_same_submission_meets_the_same_cases_and_another_does_not():
    runs = {}
    for name, key, extra in [("first", KEYS[0], ""), ("regrade", KEYS[0], ""), ("other key", KEYS[1], ""),
                             ("other code", KEYS[0], "# another student's comment")]:
        ns = recorder("02-the-head", "count_params")
        ns["In"].append(extra)
        verdict = judged("bonus_count_params", ns, key)
        runs[name] = (list(ns["SEEN"]), [(p.name, p.ok, p.message) for p in verdict.parts])
    assert runs["first"] == runs["regrade"]
    fixed = [tuple(c) for c in REGISTRY["bonus_count_params"].CASES]
    assert runs["first"][0][:4] == fixed                            # the calibrated cases, then this submission's own
    for other in ("other key", "other code"):
        assert runs[other][0][:4] == fixed and runs[other][0][4:] != runs["first"][0][4:], other
        assert runs[other][1] == runs["first"][1]                   # full marks all the same


LOOKUP = {
    "bonus_count_params": ("02-the-head", "count_params", "count_params",
                            "def count_params(d, d_head):\n    return TABLE.get((d, d_head), 0)\n"),
    "bonus_shapes": ("01-on-paper", "shapes", "shapes",
                      "def shapes(T, d, d_k, d_v):\n    return TABLE.get((T, d, d_k, d_v), {})\n"),
    "smoothing_attention_hidden": ("05-attention-as-smoothing", "smoothing_attention", "smoothing_attention",
                                   "def smoothing_attention(T, s):\n"
                                   "    return torch.tensor(TABLE.get((T, s), [[0.0]]))\n"),
    "bonus_attention_on_text": ("04-attention-on-text", "attention_on_text", "attention_on_text",
                                 "def attention_on_text(seed):\n    return torch.tensor(TABLE[seed])\n"),
}


@pytest.mark.parametrize("grade_id", sorted(LOOKUP))
def test_answers_recorded_in_one_grading_earn_nothing_in_the_next(grade_id):
    """A student's cell records every input and the right answer in one grading (its feedback prints
    them); the resubmission answers from that table: new code, so new cases of its own."""
    notebook, answer_id, function, lookup = LOOKUP[grade_id]
    ns = recorder(notebook, function)
    results = []
    original = ns[function]

    def answering(*args):                          # the answer as it is, its value recorded as plain data
        value = original(*args)
        results.append((args, _plain(value)))
        return value
    ns[function] = answering
    assert judged(grade_id, ns, KEYS[0]).fraction == 1.0
    table = {args[0] if len(args) == 1 else tuple(args): value for args, value in results}
    cheat = namespace(notebook, {answer_id: f"TABLE = {table!r}\n" + lookup})
    verdict = judged(grade_id, cheat, KEYS[0])
    assert verdict.fraction <= 0.25, verdict.report(REGISTRY[grade_id].points)
    if grade_id in ("bonus_count_params", "bonus_shapes"):
        assert verdict.fraction == 0.0, verdict.report(REGISTRY[grade_id].points)


def _plain(value):
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, dict):
        return {k: tuple(v) for k, v in value.items()}
    return value


def test_no_kernel_file_names_the_key():
    """The kernel's side of a hidden test (autograder/runtime) never reads the key: only the grader does."""
    from autograder.course import ENGINE_ROOT
    for path in (ENGINE_ROOT / "autograder" / "runtime").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "case_key" not in text and "casekey" not in text and KEY_FILE not in text, path


# ---- the suites of 4.2 and the large-scores case --------------------------------------------------

def test_every_suite_case_has_a_twin_of_its_kind_from_other_numbers():
    from course_checks.step_04.suites import SUITES
    for name, cases in SUITES.items():
        for case in cases:
            fixed, twin_ = case.build(), case.build(2024)
            if isinstance(fixed, torch.Tensor):          # a one-token matrix is [[1]] whatever the numbers
                assert fixed.shape == twin_.shape and fixed.dtype == twin_.dtype
                assert fixed.shape[-1] == 1 or not torch.equal(fixed, twin_), (name, case.name)
            else:
                # the same class and variant (the notebook's own Head has none: another seed of it)
                assert type(fixed.head) is type(twin_.head)
                assert getattr(fixed.head, "variant", None) == getattr(twin_.head, "variant", None)
                assert not torch.equal(fixed.head.query.weight, twin_.head.query.weight), (name, case.name)
                assert torch.equal(case.build().head.query.weight, fixed.head.query.weight)   # build(): calibrated


def test_a_check_that_knows_the_calibrated_matrices_catches_nothing():
    """check_simplex answering from a table of the calibrated broken matrices (recorded from an earlier
    grading): right on every case, wrong on every twin, so no broken matrix counts."""
    from course_checks.step_04.suites import SUITES
    def fingerprint(A):
        return f"{A.double().pow(2).sum().item():.9f} {A.double().pow(3).sum().item():.9f}"
    table = [fingerprint(case.build()) for case in SUITES["simplex"] if case.kind == "chaff"]
    parts = len({case.family or case.name for case in SUITES["simplex"] if case.kind == "chaff"})   # a family: one
    code = ("TABLE = " + repr(table) + "\n\ndef check_simplex(A):\n"
            "    seen = f'{A.double().pow(2).sum().item():.9f} {A.double().pow(3).sum().item():.9f}'\n"
            "    assert seen not in TABLE, 'a broken matrix I have seen'\n")
    ns = namespace("03-the-tests", {"check_simplex": code})
    check = REGISTRY["check_simplex_hidden"]
    for key in KEYS[:2]:
        verdict = judged("check_simplex_hidden", ns, key)
        report = verdict.report(check.points)
        # only the NaN matrix's fingerprint ("nan nan") is the same whatever the numbers: one chaff of them all
        assert points(verdict, "check_simplex_hidden") == round(check.points / parts, 2), report
        assert "✓ catches a matrix with a NaN row" in report and report.count("✓ catches") == 1, report


def test_the_large_scores_twin_is_new_and_one_hot_wherever_its_calibrated_case_is():
    """The twin's attention is the same as at 1/sqrt(d_k) at every scale of the scores at which the calibrated
    case's is (from a little below that case's lowest): a constant scale of the scores that the calibrated
    case credits, the twin credits too, so the part's credit does not depend on the draw."""
    from course_checks.step_04.further import _calibrated_one_hot_scale, _one_hot_errors, attention_cases
    check = REGISTRY["bonus_streaming_attention"]
    fixed = attention_cases()["large_scores"][0]
    lowest = _calibrated_one_hot_scale()
    # the calibrated case: right within the contract's tolerance from `lowest` on, wrong just below it
    tolerance = contract("streaming_attention").tol("large_scores")
    at_lowest, just_below = _one_hot_errors(fixed, [lowest, lowest / 1.03])
    assert at_lowest <= tolerance < just_below, lowest
    seen = []
    for key in KEYS + [random.Random(2097614058).randbytes(32)]:
        ctx = types.SimpleNamespace(case_key=key, step=types.SimpleNamespace(name="step-04"), sources=["pass"])
        cases = check.cases(ctx)["large_scores"]      # the calibrated and very negative cases, then their twins
        assert len(cases) == 4 and all(torch.equal(a, b) for a, b in zip(cases[0], fixed))
        q, k, v = twin = cases[2]
        assert not torch.equal(q, fixed[0]) and not any(torch.equal(q, s) for s in seen)
        seen.append(q)
        d_k = q.shape[-1]
        scales = [*np.geomspace(0.9 * lowest, 10, 40), 1 / d_k, 32 ** -0.5, 1.0]
        for scale, error in zip(scales, _one_hot_errors(twin, scales)):
            assert error <= tolerance / 5, (key.hex(), scale)


def test_the_very_negative_case_and_its_twins_have_every_score_near_minus_1e4():
    """The scores of each sequence of the very negative case (the fixed one and each submission's) are one
    number within 2 % of -1e4, the same in float32 whatever the order of the sum, so causal attention is the running mean of v at
    any scale of the scores (a wrong scale earns this case as it did before it was added), and a running max
    started at -1e3 or 0 gives NaN where one started at -inf is right."""
    from course_checks.step_04.further import (_attention_reference, _streaming_mistake, attention_cases,
                                               very_negative_scores)
    check = REGISTRY["bonus_streaming_attention"]
    assert all(torch.equal(a, b) for a, b in zip(attention_cases()["large_scores"][1], very_negative_scores(5153)))
    for key in KEYS:
        ctx = types.SimpleNamespace(case_key=key, step=types.SimpleNamespace(name="step-04"), sources=["pass"])
        fixed, twin = check.cases(ctx)["large_scores"][1::2]
        assert not torch.equal(twin[2], fixed[2])
        for q, k, v in (fixed, twin):
            scores = torch.einsum("btd,bsd->bts", q, k) / q.shape[-1] ** 0.5           # (B, T, T), another order
            assert torch.equal(scores, (q @ k.transpose(-2, -1)) / 2) and all(s.unique().numel() == 1 for s in scores)
            assert (scores + 1e4).abs().max() < 200
            T = q.shape[-2]
            running_mean = (v.cumsum(-2) / torch.arange(1, T + 1)[:, None]).numpy()
            for scale in (1.0, 0.25, 0.5):
                assert np.abs(_attention_reference(q, k, v, scale=scale) - running_mean).max() < 1e-6
            assert np.abs(_streaming_mistake((q, k, v)) - running_mean).max() < 1e-5
            assert all(np.isnan(_streaming_mistake((q, k, v), start=start)).all() for start in (-1e3, 0.0))


# A key under which a twin one-hot only at 1/sqrt(d_k) and 1/d_k (the twin's old condition) took the
# large-scores part from scores scaled by 1/sqrt(32): 0.62 instead of 0.92 (found by a key drawn for a run)
SCALE_MISTAKES = ["w06-hint-streaming-unscaled", "w06-hint-streaming-by-width", "w06-streaming-by-d_k"]


@pytest.mark.parametrize("name", SCALE_MISTAKES)
def test_a_wrong_scale_of_the_scores_earns_the_same_under_six_keys(name):
    """That key and five others (the wrong answers' test draws a key of its own every run)."""
    entry = next(e for e in WRONG_FRESH if e.name == name)
    gid = "bonus_streaming_attention"
    ns = namespace(entry.notebook, entry.answers)
    keys = [random.Random(seed).randbytes(32) for seed in [2097614058, *range(5)]]
    got = {key.hex()[:8]: points(judged(gid, ns, key), gid) for key in keys}
    assert all(g == pytest.approx(entry.expect[gid], abs=1e-9) for g in got.values()), got


# ---- every byte a student controls ---------------------------------------------------------------

def _payloads() -> dict:
    """Each kind of place a student controls in a notebook, as a function putting a payload (a table of
    answers, say) there in a copy of the notebook."""
    table = "TABLE = {(12, 5): 180}"

    def cell(nb, test):
        return next(c for c in nb["cells"] if test(c))

    def answer(kind):
        return lambda c: c["cell_type"] == kind and c["metadata"].get("nbgrader", {}).get("solution")

    def provided(c):
        return c["cell_type"] == "code" and not c["metadata"].get("nbgrader") and c.get("id") != "header_name"
    return {
        "the header cell": lambda nb: cell(nb, lambda c: c.get("id") == "header_name")["source"].append(
            "\n" + table),
        "a markdown cell": lambda nb: cell(nb, lambda c: c["cell_type"] == "markdown")["source"].append(
            "\n" + table),
        "a provided code cell": lambda nb: cell(nb, provided)["source"].append("\n# " + table),
        "an answer cell": lambda nb: cell(nb, answer("code"))["source"].append("\n# " + table),
        "a written answer": lambda nb: cell(nb, answer("markdown"))["source"].append("\n" + table),
        "a cell's outputs": lambda nb: cell(nb, provided)["outputs"].append(
            {"output_type": "stream", "name": "stdout", "text": [table]}),
        "a cell's metadata": lambda nb: cell(nb, provided)["metadata"].__setitem__("table", table),
        "an attachment": lambda nb: cell(nb, lambda c: c["cell_type"] == "markdown").__setitem__(
            "attachments", {"t.txt": {"text/plain": table}}),
        "the notebook's metadata": lambda nb: nb["metadata"].__setitem__("table", table),
        "a cell added": lambda nb: nb["cells"].insert(5, {"cell_type": "raw", "id": "added-1", "metadata": {},
                                                          "source": [table]}),
    }


def test_every_byte_a_student_controls_moves_the_cases(tmp_path, monkeypatch):
    """The grader seeds a submission's cases from every byte of the file handed in (issue 44): a payload
    put in any kind of place a student controls (the header, a markdown or provided cell, outputs,
    metadata, attachments, an added cell) gives other cases, and the same file the same cases. Read
    where a worker grades (grade.run_job), from the server the checks draw from."""
    import copy
    import json

    from autograder.checks import probeserver
    from autograder.grading.grade import Job, run_job

    class Drawn(Exception):
        pass

    class Capturing(probeserver.ProbeServer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            raise Drawn(self)

    monkeypatch.setattr(probeserver, "ProbeServer", Capturing)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / KEY_FILE).write_bytes(KEYS[0])
    (tmp_path / "home" / KEY_FILE).chmod(0o600)
    monkeypatch.setenv("GRADER_HOME", str(tmp_path / "home"))
    check = REGISTRY["bonus_scores_entrywise"]
    released = json.loads((STEP4.release / "02-the-head.ipynb").read_text(encoding="utf-8"))

    def seed(nb: dict, name: str) -> int:
        path = tmp_path / f"{name}.ipynb"
        path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
        job = Job(STEP4.name, str(STEP4.root), "ada", "02-the-head", str(path), "key", "none", 1, {}, "cold")
        with pytest.raises(Drawn) as drawn:
            run_job(job)
        server = drawn.value.args[0]
        assert server.submission == path.read_bytes() and server.case_key == KEYS[0]
        return fresh_seed(server, check, "twins")

    first = seed(released, "first")
    assert seed(copy.deepcopy(released), "regrade") == first
    for place, put in _payloads().items():
        payload = copy.deepcopy(released)
        put(payload)
        assert payload != released, place
        assert seed(payload, place.replace(" ", "-").replace("'", "")) != first, (
            f"a payload in {place} left this submission's cases as they were")
