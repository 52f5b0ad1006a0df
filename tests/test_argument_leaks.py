"""Nothing hidden comes back (issue 32, item 6; issue 44, item 1): of what a student's code writes or
raises while a hidden test calls it, only what an allowlist names reaches the feedback
(autograder/checks/framework.py `shown_error`, `shown_outcome`, `shown_cell_error`): an error's kind
if Python or the engine names it, and the engine's own fixed words. The message never, in any encoding.

In-process and quick: each hidden test that calls a student's function is run on answers that raise
its arguments in one encoding after another (every printed form of tests/redteam_corpus.py LEAK; the
digits spelled as words; a run of letters as long as a value; a class named after the values; a
torch-like message with the values in it), and on the same answers fed constant values instead: the
two verdicts must be the same, word for word, so the feedback carries nothing of the inputs. The same
for what an answer returns: a result sized by the inputs (a tensor, a matrix, a list) or a number made
of them is described by the contract's words, never by its size or value; a result of the right form
whose numbers are moved by amounts made of the inputs is judged in words, never by the numbers it holds
(a sum, a gap, a variance, an error, a count of wrong entries). The
red-team batch (tests/test_redteam.py, kind "argument-leak") does the same through grading, feedback
page included.
"""
from __future__ import annotations

import builtins
import contextlib
import hashlib
import io
import re
import types

import pytest
import numpy as np
import torch

from autograder.checks.framework import (BUILTIN_ERRORS, GRADER_ERRORS, OWN_CLASS, SHOWN_BUILTIN_CLASSES, SHOWN_ERRORS,
                                         shown_cell_error, shown_error,
                                         shown_outcome)
from autograder.selfgrade import probe_and_judge
from autograder.grading.judging import _judge_hidden

from conftest import STEP4
from redteam_corpus import LEAK
from test_fresh_cases import KEYS, namespace

# hidden test -> (notebook, the function it calls)
CALLED = {
    "bonus_shapes": ("01-on-paper", "shapes"),
    "bonus_dot_variance": ("01-on-paper", "dot_variance"),
    "bonus_count_params": ("02-the-head", "count_params"),
    "bonus_scores_entrywise": ("02-the-head", "scores_entrywise"),
    "mask_after_softmax_hidden": ("03-the-tests", "mask_after_softmax_row_sums"),
    "scale_table_hidden": ("03-the-tests", "scale_table"),
    "smoothing_attention_hidden": ("05-attention-as-smoothing", "smoothing_attention"),
    "bonus_online_softmax": ("06-going-further", "online_softmax"),
    "bonus_streaming_attention": ("06-going-further", "streaming_attention"),
}
# ... and those whose answers' errors the in-process run reaches only with the notebook's data (04) or
# whose results are read as plain numbers (06): every hidden test that calls a student's function
RETURNING = {**CALLED,
             "bonus_attention_on_text": ("04-attention-on-text", "attention_on_text"),
             "bonus_top_key_shares": ("04-attention-on-text", "top_key_shares"),
             "bonus_permutation_gaps": ("06-going-further", "permutation_gaps"),
             "bonus_fit_exponent": ("06-going-further", "fit_exponent")}


WORDS = "zero one two three four five six seven eight nine".split()


def _spelled(text: str) -> str:
    return " ".join(WORDS[int(ch)] if ch.isdigit() else "point" if ch == "." else "" for ch in text).strip()


# (the encoding, a function of the arguments' text making the exception an answer raises)
ENCODINGS = {
    "printed forms": lambda ns, text, args: ValueError(ns["_leak"](*args)),
    "digits as words": lambda ns, text, args: ValueError(_spelled(text)),
    "a run of letters": lambda ns, text, args: ValueError("a" * (sum(map(ord, text)) % 97) + "!"),
    "a class named after them": lambda ns, text, args: type(
        "Leak" + "".join(w.title() for w in _spelled(text).split())[:80], (Exception,), {})("leak"),
    "dtype names": lambda ns, text, args: TypeError(
        " ".join(("float16", "float32", "float64", "int8", "int16", "int32", "int64")[int(ch) % 7]
                 for ch in text if ch.isdigit())),
    "inside a torch message": lambda ns, text, args: RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({text[:60]})"),
    "the engine's own words, raised": lambda ns, text, args: type("NotPlain", (TypeError,), {})(
        f"the answer holds a torch.T{_digest(text)}.d{len(text)} object; return numbers"),
}


def _constant(arg):
    """The same kind of argument with nothing of the real one in it."""
    if isinstance(arg, torch.Tensor):
        return torch.zeros(1)
    if isinstance(arg, (int, float)):
        return 0
    return "constant"


def _feedback(grade_id: str, answer) -> dict:
    """{fed: (report, failure text)} of hidden test `grade_id` on `answer(fed, ns)` (the function that
    replaces the student's), fed the real inputs and constants instead."""
    notebook, function = RETURNING[grade_id]
    check = STEP4.checks[grade_id]
    reports = {}
    for fed in ("the real inputs", "constants"):
        ns = namespace(notebook)
        exec(LEAK, ns)
        seen = []

        def called(*args, _answer=answer(fed, ns), _seen=seen, **kwargs):
            _seen.append(args)
            return _answer(*args)
        ns[function] = called
        with contextlib.redirect_stdout(io.StringIO()):
            verdict = probe_and_judge(grade_id, ns, case_key=KEYS[0])
        assert seen, "the hidden test never called the answer"
        reports[fed] = (verdict.report(check.points), verdict.failure_text())
    return reports


def _text(fed: str, args) -> tuple[str, tuple]:
    """The arguments as text (and as they are shown), the real ones or constants of their kinds."""
    shown = args if fed == "the real inputs" else tuple(_constant(a) for a in args)
    return " ".join(repr(a.tolist()) if isinstance(a, torch.Tensor) else repr(a) for a in shown), shown


@pytest.mark.parametrize("grade_id", sorted(CALLED))
def test_nothing_an_answer_raises_in_a_hidden_test_comes_back(grade_id):
    for encoding, make in ENCODINGS.items():
        def raising(fed, ns, make=make):
            def answer(*args):
                text, shown = _text(fed, args)
                raise make(ns, text, shown)
            return answer
        reports = _feedback(grade_id, raising)
        real, constant = reports["the real inputs"], reports["constants"]
        assert real == constant, (
            f"{grade_id}: what the answer raised ({encoding}) changed the feedback:\n{real[0]}\n---\n{constant[0]}")
        assert "⟦" not in real[0] and "leak" not in real[0].lower(), real[0]


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


# (the encoding, a function of the arguments' text making what an answer returns): sizes no case has
RETURNS = {
    "a tensor as long as a value": lambda text: torch.zeros(_digest(text) % 37 + 100),
    "a matrix sized by values": lambda text: torch.zeros(_digest(text) % 13 + 70, _digest(text) % 7 + 90),
    "a list as long as a value": lambda text: [0.5] * (_digest(text) % 23 + 30),
    "a number made of them": lambda text: float(_digest(text) % 100_000) / 7 + 1000,
    # a class of its own that says it is torch's or numpy's: its name is the kernel's text, never shown
    "an object of a class named after them": lambda text: type(
        "x", (), {"__module__": "torch", "__qualname__": f"T{_digest(text)}.d{len(text)}"})(),
    "in numpy's name": lambda text: [type("x", (), {"__module__": "numpy", "__qualname__": f"n{_digest(text)}"})()],
}


@pytest.mark.parametrize("grade_id", sorted(RETURNING))
def test_nothing_an_answer_returns_in_a_hidden_test_comes_back_as_a_size(grade_id):
    """A result of the wrong form is described by the contract's words, never by its size or its value
    (a result's shape, length or number can carry the inputs it was computed from)."""
    for encoding, make in RETURNS.items():
        def returning(fed, ns, make=make):
            return lambda *args: make(_text(fed, args)[0])
        reports = _feedback(grade_id, returning)
        real, constant = reports["the real inputs"], reports["constants"]
        assert real == constant, (
            f"{grade_id}: what the answer returned ({encoding}) changed the feedback:\n{real[0]}\n---\n{constant[0]}")


def test_only_named_kinds_and_the_engine_s_words_are_shown():
    assert shown_error("ValueError: eleven thirteen ⟦(11, 13)⟧") == "ValueError"
    assert shown_error("LeakElevenThirteen: x") == OWN_CLASS == shown_error("Leak: x")
    assert shown_error("RuntimeError: mat1 and mat2 shapes cannot be multiplied (11x13 and 5x3)") == "RuntimeError"
    assert shown_error("NotPlain: the answer holds a __main__.ElevenThirteen object; return numbers") == \
        shown_error("NotPlain: the answer holds a __main__.Count object; return numbers")
    assert shown_error("NotPlain: the answer holds more than 11 values") == \
        "NotPlain: the answer holds too many values"
    assert shown_error("NotPlain: eleven") == shown_error("NotPlain: twelve")
    # a class's name is shown only when the grader's own builtins, torch or numpy hold that class
    assert shown_error("NotPlain: the answer holds a torch.T11.d13 object; return numbers") == \
        shown_error("NotPlain: the answer holds a numpy.random.T5 object; return numbers") == \
        shown_error("NotPlain: the answer holds a torch.__class__ object; return numbers") == \
        "NotPlain: the answer holds an object of another class; return numbers, tuples, lists, dicts or tensors"
    for real, named in (("torch.nn.modules.linear.Linear", "a torch.nn.Module object"),
                        ("torch.nn.modules.activation.ReLU", "a torch.nn.Module object"),
                        ("torch.return_types.max", "a torch.return_types object"),
                        ("torch.dtype", "a torch object"), ("numpy.matrix", "a numpy object"),
                        ("builtins.generator", "a builtins.generator object"), ("builtins.map", "a builtins.map object")):
        assert f"holds {named};" in shown_error(f"NotPlain: the answer holds a {real} object; return numbers"), real
    # every builtin class on the list is found under its name (a list's iterator, a dict's views too)
    for name in SHOWN_BUILTIN_CLASSES:
        assert f"holds a builtins.{name} object;" in shown_error(f"NotPlain: the answer holds a builtins.{name} object; "
                                                                  "return numbers"), name
    # a real class of the builtins outside the few named is "another class", as a student's own is
    assert shown_error("NotPlain: the answer holds a builtins.memoryview object; return numbers") == \
        shown_error("NotPlain: the answer holds a __main__.Count object; return numbers")
    # the kinds named are the seventeen an answer meets; the other built-in kinds are one "another kind"
    assert all(shown_error(f"{name}: x") == name for name in SHOWN_ERRORS)
    assert {shown_error(f"{name}: x") for name in BUILTIN_ERRORS - SHOWN_ERRORS} == {OWN_CLASS}
    assert len({shown_error(f"{name}: x") for name in BUILTIN_ERRORS}) == len(SHOWN_ERRORS) + 1 == 18
    names = {shown_error(f"NotPlain: the answer holds a {m}.{n} object; return numbers")
             for m, module in (("builtins", builtins), ("torch", torch), ("numpy", np))
             for n, value in vars(module).items() if isinstance(value, type)}
    assert len(names) <= 24, sorted(names)       # hundreds of classes, a few names
    assert shown_outcome("assertion: ⟦11⟧") == "assertion" and shown_outcome("returned") == "returned"
    assert shown_outcome("crashed: Leak11: ⟦11⟧") == f"crashed: {OWN_CLASS}"
    assert shown_outcome("anything else ⟦11⟧") == f"crashed: {OWN_CLASS}"
    for name, meaning in GRADER_ERRORS.items():
        assert shown_cell_error(name) == f"{name} ({meaning})"
    assert shown_cell_error("ValueError") == "ValueError" and shown_cell_error("Eleven") == OWN_CLASS


def test_a_hidden_cell_that_failed_shows_only_its_error_s_kind():
    """No result (the kernel died, the runtime was patched): the cell's last error's kind is the reason;
    its text never (a student's exception can take a grader error's name)."""
    import nbformat
    for ename, shown in (("ValueError", "ValueError"), ("CellTimeoutError", "CellTimeoutError ("),
                         ("LeakEleven", OWN_CLASS)):
        cell = nbformat.from_dict({"cell_type": "code", "metadata": {}, "source": 'hidden("bonus_shapes", globals())',
                                   "outputs": [{"output_type": "error", "ename": ename,
                                                "evalue": "⟦(11, 13, 5, 3) eleven⟧", "traceback": ["⟦11⟧"]}],
                                   "execution_count": 3})
        server = types.SimpleNamespace(results={}, checks=STEP4.checks)
        result = _judge_hidden(cell, "bonus_shapes", 2.0, server)
        assert result.score == 0.0 and f"could not run: {shown}" in result.error, result.error
        text = result.error + "".join(o.get("text", "") for o in cell.outputs)
        assert "⟦" not in text and "eleven" not in text.lower()


def _moved(result, move):
    """`result` with every number `x` replaced by `move(x)` (a tensor, a number, or lists, tuples and
    dicts of them): the form of a right answer, values of the answer's own making."""
    if isinstance(result, torch.Tensor):
        return move(result) if result.is_floating_point() else move(result.double()).round().to(result.dtype)
    if isinstance(result, bool):
        return result
    if isinstance(result, int):
        return round(move(float(result)))
    if isinstance(result, float):
        return float(move(result))
    if isinstance(result, (list, tuple)):
        return type(result)(_moved(r, move) for r in result)
    if isinstance(result, dict):
        return {k: _moved(v, move) for k, v in result.items()}
    return result


# the moves, by an amount u in [1, 2) made of what the answer was fed: far off, off by a little, near the
# judges' tolerances, and scaled (a statistic off by a factor)
MOVES = {"far": lambda x, u: x + u, "a little": lambda x, u: x + 1e-2 * u, "near": lambda x, u: x + 1e-5 * u,
         "scaled": lambda x, u: x * (1 + u)}


@pytest.mark.parametrize("move", sorted(MOVES))
@pytest.mark.parametrize("grade_id", sorted(RETURNING))
def test_nothing_an_answer_returns_in_the_right_form_comes_back_as_a_number(grade_id, move):
    """A result of the right form and wrong values is judged in words: the numbers it holds never come
    back (they can be made of the inputs). The answer returns the right answer's form with every number
    moved by an amount made of the real inputs, or of constants; the two verdicts must be the same."""
    def returning(fed, ns):
        right = ns[RETURNING[grade_id][1]]
        def answer(*args):
            text = _text(fed, args)[0]
            amount = 1 + (_digest(text) % 1000) / 1000
            return _moved(right(*args), lambda x: MOVES[move](x, amount))
        return answer
    reports = _feedback(grade_id, returning)
    real, constant = reports["the real inputs"], reports["constants"]
    # the two verdicts may differ in kind (a move can cross a judge's tolerance, or look like a known
    # mistake), never by a number: each number of one is in the other or is the grader's own (a literal
    # of the step's checks: a case's label, a tolerance)
    for one, other in ((real, constant), (constant, real)):
        strays = _numbers(one[0]) - _numbers(other[0]) - CHECKS_NUMBERS
        assert not strays, (f"{grade_id}: the numbers the answer returned ({sorted(strays)}) came back in the "
                            f"feedback:\n{real[0]}\n---\n{constant[0]}")


NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def _numbers(text: str) -> set[float]:
    return {float(n) for n in NUMBER.findall(text)}


# the numbers the step's checks write themselves (literals in their source)
CHECKS_NUMBERS = set().union(*(_numbers(p.read_text()) for p in sorted((STEP4.checks_dir).rglob("*.py"))))


def test_data_the_grader_cannot_read_comes_back_only_as_the_engine_s_reason():
    """A kernel whose runtime a student patched answers with plain data the grader does not know (a dict
    with a key of its own, an array whose dtype's field names are the student's): the grader's reason is
    one of its fixed words, never the data (which a patched runtime makes of the hidden inputs)."""
    from autograder.checks.framework import StudentError
    from autograder.checks.probeserver import _read

    def reason(value) -> str:
        with pytest.raises(StudentError) as raised:
            _read({"value": value})
        return str(raised.value)

    for make in (lambda text: {"leak": text},
                 lambda text: {"__array__": {"dtype": [[f"T{text}", "<f8"]], "shape": [1], "b64": "AAAAAAAAAAA="}},
                 lambda text: {"__array__": {"dtype": f"T{text}", "shape": [1], "b64": "AAAAAAAAAAA="}}):
        real, constant = reason(make("args=11 13 5 3")), reason(make("args=1 1 1 1"))
        assert real == constant and "11" not in real and "args" not in real, (real, constant)
        assert real.startswith("NotPlain: ") and real == shown_error(real), real


# A function that changes its input in place, and names that input by what it was given: a dead def
# offers ten names, and the live one sets its own signature to the one the hidden input picks.
SIGNATURE_PICKS = '''
import inspect
if False:
    def mask_after_softmax_row_sums(p0=None, p1=None, p2=None, p3=None, p4=None,
                                    p5=None, p6=None, p7=None, p8=None, p9=None):
        pass
def mask_after_softmax_row_sums(scores):
    T = scores.shape[-1]
    pick = int(scores.shape[0] + T) % 10                       # a digit of the hidden case
    mask_after_softmax_row_sums.__signature__ = inspect.Signature(
        [inspect.Parameter(f"p{pick}", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    scores -= scores.max(dim=-1, keepdim=True).values          # the caller's scores change
    keep = torch.tril(torch.ones(T, T, dtype=scores.dtype))
    return (F.softmax(scores, dim=-1) * keep).sum(dim=-1)
'''


def test_an_input_changed_in_place_is_named_by_the_grader_not_by_the_signature_at_the_call():
    """The feedback names an input a call changed by its position in the call the grader made and the
    parameter every def of the function has there (probeserver.changed_names): a signature the student's
    code sets at the call (`__signature__`, chosen by the hidden input among a dead def's names) names
    nothing; one def, as written, names its parameter."""
    ns = namespace("03-the-tests", {"mask_after_softmax_row_sums": SIGNATURE_PICKS})
    check = STEP4.checks["mask_after_softmax_hidden"]
    with contextlib.redirect_stdout(io.StringIO()):
        verdict = probe_and_judge("mask_after_softmax_hidden", ns, case_key=KEYS[0])
    report = verdict.report(check.points)
    assert "changed its input an input in place" in report, report
    assert not re.search(r"`p\d`", report), report
    honest = SIGNATURE_PICKS[SIGNATURE_PICKS.index("def mask_after_softmax_row_sums(scores)"):].replace(
        "    mask_after_softmax_row_sums.__signature__ = inspect.Signature(\n"
        "        [inspect.Parameter(f\"p{pick}\", inspect.Parameter.POSITIONAL_OR_KEYWORD)])\n", "")
    ns = namespace("03-the-tests", {"mask_after_softmax_row_sums": "import inspect\n" + honest})
    with contextlib.redirect_stdout(io.StringIO()):
        verdict = probe_and_judge("mask_after_softmax_hidden", ns, case_key=KEYS[0])
    assert "changed its input `scores` in place" in verdict.report(check.points), verdict.report(check.points)


def test_the_grader_names_only_the_positions_and_keywords_it_sent():
    """What a kernel reports as changed is read as a position the grader sent, named by the defs, or a
    keyword the grader sent; anything else (a name, a position it did not send, a keyword it did not
    send, a bool) is "an input"."""
    from autograder.checks.probeserver import changed_names
    sources = ["def f(a, b, *, c=1):\n    pass\n", "if False:\n    def f(a, z):\n        pass\n"]
    message = {"name": "f", "args": [[1.0], [2.0]], "kwargs": {"__dict__": {"c": 3}}}
    got = changed_names([0, 1, 2, -1, True, "c", "d", "a", "b"], message, sources)
    assert got == ["a", "an input", "an input", "an input", "an input", "c", "an input", "an input", "an input"]
    assert changed_names([0], {"name": "g", "args": [1]}, sources) == ["an input"]          # no def of g
    assert changed_names([0], {"name": "f", "args": "junk"}, sources) == ["an input"]       # nothing sent
