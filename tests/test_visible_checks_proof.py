"""The "check your work" cells (visible, 0 points) proved on the corpus, in-process and without a kernel.

A visible check that accepts a wrong answer misleads the student before they submit. For each corpus
entry, the notebook's provided cells, the entry's answers and the visible check cells run in order in
one fresh namespace, as "Restart and run all" would run them (hidden test cells are left out). Then:

* a correct variant passes every visible check of its notebook;
* a wrong entry makes the visible check of every answer it replaces fail (raise AssertionError: any
  other error is the answer's or the check's code breaking, not the check catching it), unless the entry
  says why that check cannot see its mistake (`visible_passes={"<grade_id>": "why"}`);
* every visible check cell is made to fail by at least one wrong entry;
* a message names a cause only where the answer has it: each cause a visible check's message can name is
  listed below (CAUSES) with the words that name it, and those words appear only in the messages of entries
  that declare that cause (the hidden check's hint, in `hints`, which tests/test_hints.py proves against the
  judge; or words of the entry's `why` for a cause no hidden check names). Each listed cause is shown by some
  entry, and no message of a visible check cell, nor of the helpers in dlcourse/checks.py, guesses in words
  ("most likely", a question) where it could measure.

The visible check cells are read from the released notebooks (code cells with `grade` and 0 points);
the answer a check belongs to is the nearest answer cell above it. Provided cells that define nothing a
later answer or check reads (plots, sliders, explorations, timings) are skipped to keep this fast; what a
cell reads and stores is read by Python's own scoping (a function's parameters are not the notebook's names).

`make test` runs every entry. The quick subset (`make test-quick`) runs a fixed sample that holds each property
once (`QUICK`: the first correct variant of each notebook; for each visible check, the first wrong entry that
must fail it and the first recorded as passing it; for each cause, the first entry that has it; the crashes);
the other entries, and the test that every cause is named by some entry (it runs them all), are marked slow.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import symtable

import matplotlib
import pytest

matplotlib.use("Agg")       # pictures drawn in this process, never shown (the kernels it starts keep theirs)

from autograder.course import RELEASE  # noqa: E402
from autograder.example import answers_of  # noqa: E402

from proof_corpus import CORRECT, WRONG, Entry, code  # noqa: E402
from conftest import STEP, STEP4  # noqa: E402

def release_cells(notebook: str) -> list[dict]:
    nb = json.loads((RELEASE / STEP / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    cells = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        meta = c.get("metadata", {}).get("nbgrader", {})
        source = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if meta.get("solution"):
            kind = "answer"
        elif meta.get("grade"):
            kind = "visible" if not meta.get("points") else "hidden"
        else:
            kind = "provided"
        cells.append({"kind": kind, "grade_id": meta.get("grade_id", ""), "source": source})
    return cells


NOTEBOOKS = sorted(p.stem for p in (RELEASE / STEP).glob("*.ipynb"))
VISIBLE = {nb: [c["grade_id"] for c in release_cells(nb) if c["kind"] == "visible"] for nb in NOTEBOOKS}


def checked_answers(notebook: str) -> dict[str, str]:
    """{visible check grade_id: the answer cell it checks}: the nearest code answer cell above it."""
    result, answer = {}, None
    for cell in release_cells(notebook):
        if cell["kind"] == "answer":
            answer = cell["grade_id"]
        elif cell["kind"] == "visible":
            assert answer, f"{notebook}: the visible check {cell['grade_id']} follows no answer cell"
            result[cell["grade_id"]] = answer
    return result


CHECKS = {nb: checked_answers(nb) for nb in NOTEBOOKS}


def names(source: str) -> tuple[set[str], set[str]]:
    """(the global names a cell stores, the global names it reads), by Python's own scoping (symtable): a
    function's parameters and locals, a comprehension's variables are not the notebook's names; a read
    inside a function of a name it does not bind is. A mutation (`x.a = 1`, `x[0] = 1`) reads x."""
    stored, read = set(), set()

    def walk(table, top: bool) -> None:
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if top and (symbol.is_assigned() or symbol.is_imported()):
                stored.add(name)
            elif symbol.is_declared_global() and symbol.is_assigned():
                stored.add(name)
            if symbol.is_referenced() and (top or symbol.is_global()):
                read.add(name)
        for child in table.get_children():
            walk(child, False)

    walk(symtable.symtable(source, "<cell>", "exec"), True)
    return stored, read


def plan(notebook: str, answers: dict[str, str]) -> list[tuple[str, str, str]]:
    """(kind, grade_id, source) of the cells to run: answers, visible checks, and the provided cells
    that store a name some later cell that runs reads."""
    cells = release_cells(notebook)
    needed: set[str] = set()
    keep = []
    for cell in reversed(cells):
        if cell["kind"] == "hidden":
            continue
        source = answers[cell["grade_id"]] if cell["kind"] == "answer" else cell["source"]
        stored, read = names(source)
        if cell["kind"] == "provided" and not stored & needed:
            continue
        needed |= read
        keep.append((cell["kind"], cell["grade_id"], source))
    return keep[::-1]


def run_visible_checks(entry: Entry) -> dict[str, str]:
    """{visible check grade_id: "" if it passed, else what it raised}, once per entry and session."""
    if entry.name not in _RUN:
        _RUN[entry.name] = _run_visible_checks(entry)
    return _RUN[entry.name]


_RUN: dict[str, dict[str, str]] = {}


def _run_visible_checks(entry: Entry) -> dict[str, str]:
    answers = {**answers_of(STEP4, entry.notebook), **entry.answers}
    ns: dict = {"__name__": "__main__", "__builtins__": builtins, "display": lambda *a, **k: None}
    results = {}
    import matplotlib.pyplot as plt
    import torch
    torch.manual_seed(0)
    for kind, gid, source in plan(entry.notebook, answers):
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(source, f"<{gid or 'provided'}>", "exec"), ns)
            failure = ""
        except (Exception, SystemExit) as err:  # noqa: BLE001 - the student's code or the check raised
            failure = f"{type(err).__name__}: {err}"
        finally:
            plt.close("all")
        if kind == "visible":
            results[gid] = failure
    return results


# ---- a cause named only where the answer has it ----------------------------------------------------------

# visible check -> {the words its message names a cause with: that cause}. A cause is a set of alternatives,
# any of which the entry must have: (hidden grade cell, hint name) for a hint the entry declares in `hints`, or
# a string found in the entry's `why`. Each message names these only on a branch where the cell measured the
# cause (the answer's value is the one that mistake gives, or the error raised says so); the test below holds
# the corpus to it.
CAUSES = {
    "dot_variance_check": {"(n, d_k) is the shape of the products": {"(n, d_k)"},
                           "that is a normal law's share": {("bonus_dot_variance", "normal_law")}},
    "scores_entrywise_check": {"divided by sqrt(d_head)": {("bonus_scores_entrywise", "divided_by_sqrt_d_k")},
                               "your scores are transposed": {("bonus_scores_entrywise", "transposed")}},
    "count_params_check": {"with a bias in each of query, key and value": {("bonus_count_params", "biases")},
                           "entries of the tril buffer": {("bonus_count_params", "buffer")},
                           "the count of three square": {("bonus_count_params", "square")},
                           "the count of one projection": {("bonus_count_params", "one_projection")}},
    "check_simplex_check": {"only the dtype differs": {"dtype"}},
    "check_causality_gradient_check": {"x arrives without requires_grad": {"requires_grad"}},
    "scale_table_check": {"yours is raw_std itself": {("scale_table_hidden", "scores_unscaled")},
                          "yours is raw_std / d_k": {("scale_table_hidden", "scores_by_d_k")},
                          "yours is raw_std / sqrt(32)": {("scale_table_hidden", "scores_by_model_width")},
                          "k equals q": {"k is q"}},
    "attention_on_text_check": {"its weight is on keys j >= i": {("bonus_attention_on_text", "transposed")}},
    "top_key_shares_check": {"Row 0 is counted": {("bonus_top_key_shares", "row_zero_counted")},
                             "These are counts": {("bonus_top_key_shares", "counts")}},
    "smoothing_attention_check": {"its weight is on keys j >= i": {("smoothing_attention_hidden", "reversed_mask"),
                                                                   ("smoothing_attention_hidden", "transposed")},
                                  "its columns sum to 1 instead": {("smoothing_attention_hidden", "wrong_axis")}},
    "fit_exponent_check": {"the axes swapped": {("bonus_fit_exponent", "axes_swapped")},
                           "the two end points only": {("bonus_fit_exponent", "two_points")}},
}

# Wrong answers no hidden expectation needs: their checks crash where the visible check reads the error for a
# cause (these entries are judged by the visible checks only, here)
CRASHES = [
    Entry("v03-simplex-float32-ones", "03-the-tests", {"check_simplex": code('''
def check_simplex(A):
    B, T, _ = A.shape
    assert (A >= 0).all(), "a negative weight"
    assert torch.allclose(A.sum(dim=-1), torch.ones(B, T), atol=1e-5), "a row does not sum to 1"
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert (A[:, future] == 0).all(), "weight above the diagonal"
''')}, why="the row sums compared with a float32 torch.ones whatever A's dtype: a float64 A raises (the dtypes "
          "differ)"),
    Entry("v03-gradient-x-as-given", "03-the-tests", {"check_causality_gradient": code('''
def check_causality_gradient(head, x, i):
    (grad,) = torch.autograd.grad(head(x)[0, i].sum(), x)
    assert (grad[0, i + 1:] == 0).all(), "the future leaks"
    assert all((grad[0, j] != 0).any() for j in range(i + 1)), "a zero gradient from the past"
''')}, why="the gradient taken with respect to x as given, without requires_grad: autograd raises"),
]


def named_causes(gid: str, message: str) -> dict[str, set]:
    return {words: cause for words, cause in CAUSES.get(gid, {}).items() if words in message}


def has(entry: Entry, cause: set) -> bool:
    return any(alt in entry.why if isinstance(alt, str) else alt[1] in entry.hints.get(alt[0], ())
               for alt in cause)


# ---- the quick subset's sample ----------------------------------------------------------------------------

def quick_sample() -> set[str]:
    """The entries the quick subset runs (the module's docstring): every kind of verdict this module proves, once."""
    keep = {next(e for e in CORRECT if e.notebook == nb).name for nb in {e.notebook for e in CORRECT}}
    for nb, checks in CHECKS.items():
        for gid, answer in checks.items():
            for must in (lambda e: answer in e.answers and gid not in e.visible_passes, lambda e: gid in e.visible_passes):
                keep.update(e.name for e in [e for e in WRONG if e.notebook == nb and must(e)][:1])
    for causes in CAUSES.values():
        for cause in causes.values():
            keep.update(e.name for e in [e for e in WRONG + CRASHES if has(e, cause)][:1])
    return keep | {e.name for e in CRASHES}


def sampled(entries: list[Entry]) -> list:
    """The entries as parameters, those outside the quick sample marked slow."""
    return [pytest.param(e, id=e.name, marks=() if e.name in QUICK else pytest.mark.slow) for e in entries]


QUICK = quick_sample()


@pytest.mark.parametrize("entry", sampled(CORRECT))
def test_correct_variants_pass_every_visible_check(entry):
    results = run_visible_checks(entry)
    assert set(results) == set(VISIBLE[entry.notebook])
    failed = {gid: why for gid, why in results.items() if why}
    assert not failed, f"{entry.name} ({entry.why}) fails visible checks: {failed}"


@pytest.mark.parametrize("entry", sampled(WRONG))
def test_wrong_entries_fail_the_visible_check_of_their_answer(entry):
    checked = {answer: gid for gid, answer in CHECKS[entry.notebook].items()}
    unknown = set(entry.visible_passes) - set(VISIBLE[entry.notebook])
    assert not unknown, f"{entry.name}: visible_passes names no visible check of {entry.notebook}: {unknown}"
    assert all(str(why).strip() for why in entry.visible_passes.values()), f"{entry.name}: say why"
    results = run_visible_checks(entry)
    for answer in entry.answers:
        gid = checked.get(answer)
        if gid is None:
            continue                                  # an answer without a visible check
        if gid in entry.visible_passes:
            assert not results[gid], (f"{entry.name}: {gid} is recorded as too weak to see this mistake, "
                                      f"but it fails ({results[gid]}): remove it from visible_passes")
        else:
            assert results[gid], (f"{entry.name}: the visible check {gid} accepts this wrong answer "
                                  f"({entry.why}); make the check see it, or record why it cannot in "
                                  f"visible_passes")
            assert results[gid].startswith("AssertionError:"), (
                f"{entry.name}: the visible check {gid} broke instead of catching the mistake: {results[gid]}")


def test_every_visible_check_is_failed_by_some_wrong_entry():
    """Parsed from the notebooks: each visible check has a wrong entry that must make it fail."""
    failing = {(e.notebook, gid) for e in WRONG for gid, answer in CHECKS[e.notebook].items()
               if answer in e.answers and gid not in e.visible_passes}
    all_checks = [(nb, gid) for nb, checks in CHECKS.items() for gid in checks]
    assert len(all_checks) >= 17 and len(set(all_checks)) == len(all_checks)
    missing = [gid for nb, gid in all_checks if (nb, gid) not in failing]
    assert not missing, f"no wrong entry of the corpus is expected to fail these visible checks: {missing}"


def test_the_causes_are_those_of_visible_checks():
    visible = {gid for checks in CHECKS.values() for gid in checks}
    assert set(CAUSES) <= visible, sorted(set(CAUSES) - visible)
    hidden = {gid for e in CORRECT + WRONG for gid in e.expect}
    for gid, causes in CAUSES.items():
        for words, cause in causes.items():
            assert cause and all(isinstance(a, str) or a[0] in hidden for a in cause), (gid, words)


@pytest.mark.parametrize("entry", sampled(WRONG + CRASHES))
def test_a_message_names_a_cause_only_where_the_answer_has_it(entry):
    for gid, message in run_visible_checks(entry).items():
        for words, cause in named_causes(gid, message).items():
            assert has(entry, cause), (f"{entry.name}: the visible check {gid} names a cause ({words!r}) this answer "
                                       f"does not have ({entry.why}):\n{message}")


@pytest.mark.slow                  # it runs every entry's visible checks (in the quick subset, about 45 s of CPU)
def test_every_cause_is_named_for_some_entry():
    """A listed cause whose words no message holds is a wording the cells no longer use (or a branch never
    reached): both are worth knowing."""
    named = {(gid, words) for entry in WRONG + CRASHES for gid, message in run_visible_checks(entry).items()
             for words in named_causes(gid, message)}
    missing = [f"{gid}: {words!r}" for gid, causes in CAUSES.items() for words in causes if (gid, words) not in named]
    assert not missing, f"causes no corpus entry's visible message names: {missing}"


def test_the_quick_sample_holds_each_kind_of_entry():
    """The quick subset proves each property of this module on some entry: a correct variant of every notebook, a
    wrong entry that must fail each visible check, and an entry for each cause a message can name."""
    quick = [e for e in CORRECT + WRONG + CRASHES if e.name in QUICK]
    assert {e.notebook for e in quick if e.correct} == set(NOTEBOOKS)
    failing = {(e.notebook, gid) for e in quick if not e.correct for gid, answer in CHECKS[e.notebook].items()
               if answer in e.answers and gid not in e.visible_passes}
    assert failing == {(nb, gid) for nb, checks in CHECKS.items() for gid in checks}
    assert all(any(has(e, cause) for e in quick) for causes in CAUSES.values() for cause in causes.values())


def test_crashes_fail_their_visible_check():
    for entry in CRASHES:
        results = run_visible_checks(entry)
        failed = [gid for gid, answer in CHECKS[entry.notebook].items() if answer in entry.answers and results[gid]]
        assert failed and all(results[gid].startswith("AssertionError:") for gid in failed), (entry.name, results)


GUESSES = ("probably", "likely", "usually", "most often", "perhaps", "maybe", "might be", "?")


def message_texts(source: str) -> list[str]:
    """The string constants of a cell or module, f-strings' literal parts included (docstrings left out)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_message_guesses():
    """Guessing words and questions ("is the mask applied?") in a visible check cell or a checks helper: a cause
    is named as what was measured, or not at all."""
    from pathlib import Path

    import dlcourse.checks

    sources = {f"{nb}/{c['grade_id']}": c["source"] for nb in NOTEBOOKS for c in release_cells(nb)
               if c["kind"] == "visible"}
    helpers = Path(dlcourse.checks.__file__).read_text(encoding="utf-8")
    sources["dlcourse/checks.py"] = helpers[helpers.index("def expect_attention_rows"):]   # the messages' part
    found = [f"{where}: {text!r}" for where, source in sources.items() for text in message_texts(source)
             if any(word in text.lower() for word in GUESSES)]
    assert not found, "messages that guess:\n" + "\n".join(found)
