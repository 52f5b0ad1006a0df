"""Nothing hidden comes back (issue 32, item 6): text a student's code writes while a hidden test calls it
(an exception's message, a check's failed assertion, the names it reports) reaches the feedback with
its words and without its numbers (autograder/checks/framework.py `scrub`: kinds, not numbers), so the
inputs the grader called it on, fixed or drawn for the submission, stay hidden.

In-process and quick: each hidden test that calls a student's function is run on an answer that raises
its arguments in every printed form (tests/redteam_corpus.py LEAK: repr, f-strings rounded and
padded, scientific, hex, lists, numpy arrays, shapes, tensors under other print options); the verdict
must quote the raised text (between ⟦ and ⟧) with no digit left in it. The red-team batch
(tests/test_redteam.py, kind "argument-leak") does the same through grading, feedback page included.
"""
from __future__ import annotations

import contextlib
import io
import types

import pytest
import torch

from autograder.checks.framework import scrub
from autograder.selfgrade import probe_and_judge
from autograder.judging import _judge_hidden

from conftest import STEP4
from redteam_corpus import LEAK, leaked_digits
from test_fresh_cases import KEYS, namespace

# hidden test -> (notebook, the function it calls)
CALLED = {
    "shapes_hidden": ("01-on-paper", "shapes"),
    "bonus_dot_variance": ("01-on-paper", "dot_variance"),
    "bonus_count_params": ("02-the-head", "count_params"),
    "scores_entrywise_hidden": ("02-the-head", "scores_entrywise"),
    "mask_after_softmax_hidden": ("03-the-tests", "mask_after_softmax_row_sums"),
    "scale_table_hidden": ("03-the-tests", "scale_table"),
    "smoothing_attention_hidden": ("05-attention-as-smoothing", "smoothing_attention"),
    "bonus_online_softmax": ("06-going-further", "online_softmax"),
    "bonus_streaming_attention": ("06-going-further", "streaming_attention"),
}


def test_scrub_keeps_words_and_kinds_and_drops_every_number():
    x = torch.tensor([[0.12345678, -3.5e-7], [12.0, 2.0 ** 31 - 5]])
    forms = [repr(x), str(x.shape), str(x.tolist()), str(x.numpy()), f"{1 / 3:.2f}", f"{2 ** 40:_}",
             hex(2 ** 31 - 5), "-4.5E+12", "1,000", "٣٤", "²", "½", "Ⅻ", f"{x.sum():.3e}", "x11y", "0b101", "0o17"]
    torch.set_printoptions(precision=10, sci_mode=True)
    forms.append(str(x))
    torch.set_printoptions(profile="default")
    for form in forms:
        assert not any(ch.isnumeric() for ch in scrub(form)), (form, scrub(form))
    assert scrub("RuntimeError: mat1 and mat2 shapes cannot be multiplied (11x13 and 5x3)") == \
        "RuntimeError: mat# and mat# shapes cannot be multiplied (#x# and #x#)"
    assert scrub("expected float32 or bfloat16, got int64 at 7") == "expected float32 or bfloat16, got int64 at #"
    assert scrub("NaN in the output; inf too") == "NaN in the output; inf too"


@pytest.mark.parametrize("grade_id", sorted(CALLED))
def test_arguments_raised_by_an_answer_come_back_without_numbers(grade_id):
    notebook, function = CALLED[grade_id]
    ns = namespace(notebook)
    exec(LEAK, ns)
    seen = []

    def leaky(*args, **kwargs):
        seen.append(args)
        raise ValueError(ns["_leak"](*args))
    ns[function] = leaky
    for key in (None, KEYS[0]):
        with contextlib.redirect_stdout(io.StringIO()):
            verdict = probe_and_judge(grade_id, ns, case_key=key)
        check = STEP4.checks[grade_id]
        report = verdict.report(check.points)
        assert seen, "the hidden test never called the answer"
        assert "⟦" in report and "⟦" in verdict.failure_text(), f"the raised text does not reach the verdict:\n{report}"
        assert "ValueError" in report
        # the report (each part on a line) and each reason (the reports' `error` joins them with '; ')
        assert leaked_digits(report) == [], report
        assert all(leaked_digits(part.message) == [] for part in verdict.parts), report


def test_a_hidden_cell_that_failed_shows_its_error_without_numbers():
    """No result (the kernel died, the runtime was patched): the cell's own error is the reason, scrubbed."""
    cell = {"source": 'hidden("shapes_hidden", globals())', "outputs": [
        {"output_type": "error", "ename": "ValueError", "evalue": "⟦(11, 13, 5, 3) tensor([0.1234])⟧",
         "traceback": []}], "execution_count": 3}
    import nbformat
    cell = nbformat.from_dict({"cell_type": "code", "metadata": {}, **cell})
    server = types.SimpleNamespace(results={}, checks=STEP4.checks)
    result = _judge_hidden(cell, "shapes_hidden", 2.0, server)
    assert result.score == 0.0 and "ValueError: ⟦" in result.error
    assert leaked_digits(result.error) == [] and leaked_digits(cell.outputs[0]["text"]) == []
