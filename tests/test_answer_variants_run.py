"""Every correct answer carries the student to the end of the notebook.

A correct answer that passes its check must not break a provided cell further down: a numpy array
where the spec allows one, a float64 matrix where the spec gives no dtype, a list of lists. For every
notebook, each correct variant of the proof corpus (tests/proof_corpus.py) and each further form the
spec allows (FORMS below: numpy, float64, float32, a list) is put into the released notebook, which
runs top to bottom in a kernel of its own, as "Restart and run all" runs it. The kernel is forked from
a warm template (conftest.execute_warm: the grader's kernels, which import torch once per test process
instead of once per run, 3 s of CPU each; the same outputs as a fresh kernel, tests/test_warm_kernels.py;
the release and the solutions themselves run in fresh kernels in JupyterLab, tests/browser/test_lab_student.py
and tests/browser/test_lab_solutions.py). Then:

* no cell raises (provided cells, the student's answers, the "check your work" cells);
* no provided cell falls back to `needs()`'s notes ("fill in the answer above", "run the cells above
  first"): with every answer written, such a note means a section was lost;
* every provided cell that draws shows its picture, and every slider its widget: the pictures the
  written answers ask about are all there.

The variants of different answers are independent, so one run takes one variant of each answer (the
k-th run the k-th variant, the solution where an answer has fewer): a notebook runs as often as its
most varied answer has variants, not once per variant. The forms are also judged by the hidden tests,
in-process (they must keep full marks: a form the spec allows is a correct answer).
"""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from autograder.example import with_answers

from conftest import NOTEBOOK_NAMES, STEP4, errors, execute_warm
from proof_corpus import CORRECT, P04, P05, P06, Entry, edit

# Forms the spec of an answer allows beyond the corpus's variants, as edits of the solution.
SMOOTH_RETURN = "return torch.softmax(scores, dim=-1)"
FORMS: list[Entry] = [
    Entry("f04-text-numpy-float32", P04, edit(P04, "attention_on_text", (
        "return head.A[0]                                        # (64, 64)",
        "return head.A[0].numpy()                                # (64, 64) numpy: 'a numpy array is fine too'")),
          why="the visible check says a numpy array is fine too"),
    Entry("f05-smoothing-float64", P05, edit(P05, "smoothing_attention", (SMOOTH_RETURN, SMOOTH_RETURN + ".double()")),
          why="the spec gives no dtype: a float64 tensor"),
    Entry("f05-smoothing-numpy-float64", P05, edit(P05, "smoothing_attention", (
        SMOOTH_RETURN, SMOOTH_RETURN + ".double().numpy()")), why="the spec gives no dtype: a float64 numpy array"),
    Entry("f05-smoothing-numpy-float32", P05, edit(P05, "smoothing_attention", (SMOOTH_RETURN, SMOOTH_RETURN + ".numpy()")),
          why="a float32 numpy array"),
    Entry("f06-gaps-list", P06, edit(P06, "permutation_gaps", (
        "return rows, rows_pos, tokens, tokens_pos", "return [rows, rows_pos, tokens, tokens_pos]")),
          why="the four gaps as a list instead of a tuple"),
]

NOTES = ("fill in the answer above", "run the cells above first")
# a cell draws when it calls one of these (an import line naming them draws nothing)
DRAWS = re.compile(r"^(?!\s*(from|import)\b).*\b(plt\.\w+|attention_heatmap|heatmap_grid|smoothing_plot|imshow|"
                   r"\w+_plot)\(", re.M)
SLIDER = re.compile(r"\b\w+_slider\(")
WIDGET = "application/vnd.jupyter.widget-view+json"


def variants(notebook: str) -> dict[str, list[tuple[str, str]]]:
    """{answer grade id: [(variant name, source), ...]}: the corpus's correct variants, then the forms."""
    found: dict[str, list[tuple[str, str]]] = {}
    for entry in CORRECT + FORMS:
        if entry.notebook == notebook:
            for answer, source in entry.answers.items():
                found.setdefault(answer, []).append((entry.name, source))
    return found


def runs(notebook: str) -> list[dict[str, tuple[str, str]]]:
    """The runs of one notebook: run k takes the k-th variant of every answer that has one."""
    by_answer = variants(notebook)
    count = max((len(v) for v in by_answer.values()), default=0)
    return [{answer: options[k] for answer, options in by_answer.items() if k < len(options)} for k in range(count)]


def test_every_notebook_has_variants_and_each_run_keeps_answers_apart():
    for name in NOTEBOOK_NAMES:
        planned = runs(name)
        assert planned, f"{name}: no correct variant in the corpus or in FORMS"
        used = [variant for run in planned for variant, _ in run.values()]
        assert sorted(used) == sorted(v for vs in variants(name).values() for v, _ in vs), "a variant was left out"


def problems_of_run(name: str, run: dict[str, tuple[str, str]]) -> list[str]:
    nb = nbformat.reads(json.dumps(with_answers(STEP4, name, {a: source for a, (_, source) in run.items()})), as_version=4)
    execute_warm(nb)
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        where = f"cell {index} ({cell.metadata.get('nbgrader', {}).get('grade_id') or cell.get('id')})"
        for error in errors(cell):
            found.append(f"{where} raised {error['ename']}: {error['evalue'][:300]}")
        text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        for note in NOTES:
            if note in text:
                found.append(f"{where} printed {note!r}: a section was lost")
        if cell.metadata.get("nbgrader", {}).get("solution") or "def " in cell.source.split("\n", 1)[0]:
            continue
        if DRAWS.search(cell.source) and not any("image/png" in o.get("data", {}) for o in cell.outputs):
            found.append(f"{where} draws a picture, but none appeared")
        if SLIDER.search(cell.source) and not any(WIDGET in o.get("data", {}) for o in cell.outputs):
            found.append(f"{where} makes a slider, but no widget appeared")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_correct_variant_runs_the_release_to_its_end_with_every_picture(name):
    failures = []
    for run in runs(name):
        label = ", ".join(f"{answer}={variant}" for answer, (variant, _) in sorted(run.items()))
        failures += [f"[{label}] {p}" for p in problems_of_run(name, run)]
    assert not failures, f"{name}:\n  " + "\n  ".join(failures)


@pytest.mark.parametrize("entry", FORMS, ids=lambda e: e.name)
def test_each_form_the_spec_allows_keeps_full_marks(entry):
    from test_grader_proof_quick import judge_entry
    lost = {gid: (points, text[:300]) for gid, (points, text) in judge_entry(entry).items()
            if points < STEP4.checks[gid].points}
    assert not lost, f"{entry.name} ({entry.why}) loses points: {lost}"
