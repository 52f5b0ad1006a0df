"""The proof corpus, judged in-process: each entry's answers are defined in a namespace and the
hidden checks that judge them are called as JupyterLab and nbgrader call them (`hidden(grade_id, ns)`
is `probe_and_judge` and the verdict's report): a cell the check cannot decide is REVIEW.

No kernel, no notebook: seconds per entry, for working on a check. The proof itself goes through
grading (tests/test_grader_proof.py); this test also shows that the in-kernel path (JupyterLab,
plain nbgrader) gives the same points as the grader's, and the untouched release, as released, nothing
in every hidden check with points (plain `nbgrader autograde` itself grades the solutions in
tests/test_grading.py).

The corpus is judged once per test session, in a process of its own with torch's own choice of CPU
kernels on 2 threads (`native_run`): these tests read that run, and tests/test_same_grade_on_every_cpu.py
compares it, as one of its settings, with the corpus scored under other CPU kernels.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.selfgrade import hidden_here, probe_and_judge
from autograder.course import RELEASE, SOURCE
from autograder.example import answers_of
from dlcourse.data import Vocab, load_text
from dlcourse.head import Head

from proof_corpus import CORRECT, REVIEW, UNDECIDED, WRONG, Entry
from test_grader_proof import judged_by
from conftest import NOTEBOOK_NAMES, ROOT, STEP, STEP4, run_once  # noqa: E402

REGISTRY = STEP4.checks
# what chooses torch's CPU kernels, threads and MKL's code path in a process: each scoring sets its own
NUMERIC_ENV = ("ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS",
               "MKL_DEBUG_CPU_TYPE")
MKL = {"MKL_CBWR": "COMPATIBLE", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
NATIVE_THREADS = 2


def code_answers(notebook: str) -> list[str]:
    release = json.loads((RELEASE / STEP / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    return [c["metadata"]["nbgrader"]["grade_id"] for c in release["cells"]
            if c["cell_type"] == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution")]


def base_namespace(notebook: str) -> dict:
    ns = {"torch": torch, "nn": nn, "F": F, "math": math, "np": np, "Head": Head, "__name__": "__main__"}
    if notebook.startswith("04"):                       # the corpus and vocabulary notebook 04 builds
        vocab = Vocab(load_text())
        ns.update(text=load_text(), vocab=vocab, encode=vocab.encode, V=vocab.size)
    ns["In"] = [""]                     # the input history a notebook's kernel keeps: the cells run, in order
    return ns


def namespace(entry: Entry) -> dict:
    ns = base_namespace(entry.notebook)
    answers = {**answers_of(STEP4, entry.notebook), **entry.answers}
    for gid in code_answers(entry.notebook):
        # an answer may stand for several cells (a list): a student's cells around the answer cell
        for cell in [answers[gid]] if isinstance(answers[gid], str) else answers[gid]:
            exec(compile(cell, f"<{gid}>", "exec"), ns)
            ns["In"].append(cell)
    return ns


def judge_entry(entry: Entry) -> dict[str, tuple[float, str]]:
    """{grade cell: (points, the feedback's text)} of every hidden check that judges the entry's answers."""
    ns = namespace(entry)
    torch.manual_seed(0)
    judged = {}
    for gid in sorted(judged_by(entry)):
        if gid not in REGISTRY:
            continue                                # a visible check-your-work cell (0 points)
        with contextlib.redirect_stdout(io.StringIO()):
            verdict = probe_and_judge(gid, ns, STEP4)
        points = REGISTRY[gid].points
        got = REVIEW if verdict.needs_review else round(points * verdict.fraction, 2)
        text = verdict.report(points) + ("\n" + verdict.review_text() if verdict.needs_review else "")
        judged[gid] = (got, text)
    return judged


def corpus_scores(only: set[str] | None = None) -> dict[str, dict[str, float]]:
    """{entry: {grade cell: points}} for the whole corpus (or the entries named in `only`), judged in
    this process."""
    return {entry.name: {gid: got for gid, (got, _) in judge_entry(entry).items()} for entry in CORRECT + WRONG
            if only is None or entry.name in only}


def score_in_subprocess(cap: str | None, mkl: bool, threads: tuple[int, ...], reports: bool = False,
                        only: list[str] | None = None) -> list[dict]:
    """The corpus scored by this file run as a script, in a process of its own: CPU kernel set `cap`
    (None: torch's own choice), MKL's vendor-independent path or not (both chosen when torch is
    imported), each thread count of `threads` one after the other. With `reports`, each run also has
    every entry's judgement with its text (`judged`), UNDECIDED entries included. With `only`, the
    scores of those entries alone."""
    env = {k: v for k, v in os.environ.items() if k not in NUMERIC_ENV}
    env.update(OMP_NUM_THREADS=str(threads[0]), MKL_NUM_THREADS=str(threads[0]),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]), **(MKL if mkl else {}))
    if cap is not None:
        env["ATEN_CPU_CAPABILITY"] = cap
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "test_grader_proof_quick.py"),
                           *(["--reports"] if reports else []), *([f"--only={','.join(only)}"] if only else []),
                           *map(str, threads)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"{cap}{' mkl' if mkl else ''}: the scoring failed\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


def native_run(tmp_path_factory) -> dict:
    """The corpus judged once per session (shared by the test workers), torch's own CPU kernels on
    NATIVE_THREADS threads: {"capability", "threads", "scores", "judged"}."""
    return run_once(tmp_path_factory, "proof-quick-native",
                    lambda folder: score_in_subprocess(None, False, (NATIVE_THREADS,), reports=True)[0])[1]


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict:
    return native_run(tmp_path_factory)["judged"]


def test_the_corpus_is_judged_with_every_entry(judged):
    assert set(judged) == {e.name for e in CORRECT + WRONG + UNDECIDED}


@pytest.mark.parametrize("entry", CORRECT + WRONG + UNDECIDED, ids=lambda e: e.name)
def test_in_process_points_match_the_corpus(entry, judged):
    judgements = judged[entry.name]
    assert set(judgements) == {gid for gid in judged_by(entry) if gid in REGISTRY}, entry.name
    for gid, (got, report) in judgements.items():
        expected = entry.expect.get(gid, REGISTRY[gid].points)
        if expected == REVIEW or got == REVIEW:
            assert got == expected, f"{entry.name} / {gid}: {entry.why}\n{report}"
        assert got == pytest.approx(expected, abs=1e-9), f"{entry.name} / {gid}: {entry.why}\n{report}"
        for word in entry.says.get(gid, []):
            assert word.lower() in report.lower(), f"{entry.name} / {gid} does not say {word!r}"


def test_the_untouched_release_scores_nothing_in_process():
    """Each notebook's untouched release (its answer cells as released, run with errors allowed, as
    nbgrader's Execute runs them) judged as a kernel without a grader judges it (`hidden_here`, what a
    hidden test cell runs under plain `nbgrader autograde`; the number it returns is the cell's partial
    credit): every hidden check with points returns 0 and says why, as the grader gives the example
    class's `blank` nothing in every cell (tests/test_grading.py). Plain nbgrader's autograde itself
    grades the solutions there, every autograded cell."""
    judged = 0
    for notebook in NOTEBOOK_NAMES:
        release = json.loads((RELEASE / STEP / f"{notebook}.ipynb").read_text(encoding="utf-8"))
        ns = base_namespace(notebook)
        graded = []
        for cell in release["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell["cell_type"] == "code" and meta.get("solution"):
                source = "".join(cell["source"])
                with contextlib.suppress(Exception):     # a released answer cell may raise NotImplementedError
                    exec(compile(source, f"<{meta['grade_id']}>", "exec"), ns)
                ns["In"].append(source)
            elif meta.get("grade") and meta.get("grade_id") in REGISTRY and REGISTRY[meta["grade_id"]].points:
                graded.append(meta["grade_id"])
        assert graded, f"{notebook}: no hidden check with points"
        for gid in graded:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                points = hidden_here(gid, ns)
            assert points == 0, f"{notebook} / {gid}: the untouched release gets {points} without a grader"
            assert printed.getvalue().strip(), f"{notebook} / {gid}: no reason printed"
            judged += 1
    assert judged >= len(NOTEBOOK_NAMES)


if __name__ == "__main__":
    # `python tests/test_grader_proof_quick.py [--reports] [--only=NAME,...] THREADS...`: for each thread count, every entry's
    # points per grade cell, as JSON (score_in_subprocess runs this under chosen CPU kernels; they are
    # chosen when torch is imported, the thread count can change between runs); with --reports, also
    # every entry's judgement with the feedback's text, UNDECIDED entries included

    def clear_caches():
        """Forget what the checks cached (their references' sampling distributions...): each thread
        count computes them again, as a grader running with it would."""
        for module in list(sys.modules.values()):
            if str(getattr(module, "__file__", None) or "").startswith(str(SOURCE)):
                for value in list(vars(module).values()):
                    if callable(getattr(value, "cache_clear", None)):
                        value.cache_clear()

    with_reports = "--reports" in sys.argv
    only = next((set(a.split("=", 1)[1].split(",")) for a in sys.argv[1:] if a.startswith("--only=")), None)
    runs = []
    for threads in [int(n) for n in sys.argv[1:] if not n.startswith("--")] or [torch.get_num_threads()]:
        clear_caches()
        torch.set_num_threads(threads)
        run = {"capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}
        if with_reports:
            run["judged"] = {entry.name: judge_entry(entry) for entry in CORRECT + WRONG + UNDECIDED}
            run["scores"] = {name: {gid: got for gid, (got, _) in cells.items()} for name, cells in run["judged"].items()
                             if name in {e.name for e in CORRECT + WRONG}}
        else:
            run["scores"] = corpus_scores(only)
        runs.append(run)
    print(json.dumps(runs, sort_keys=True))
