"""Every graded answer has one declared contract (dlcourse/contracts.py) that its visible check and its
hidden test both read, and the hidden test goes past every size the notebook itself uses.

The contract is the notebook's spec as data: what an answer takes, the form of what it returns (kind,
shape, dtype), the tolerance the spec states and the sizes of the visible check and of the notebook's
own cells. `form_problem` judges a result's form, the same function in the notebook (through
`dlcourse.checks.expect_form`) and in the grader (on the result as the student's code returned it).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from autograder.course import RELEASE
from dlcourse.checks import expect_form
from dlcourse.contracts import CONTRACTS, form_problem, tolerance

from conftest import STEP, STEP4

STEP4.package   # imports the step's checks: course_checks.step_04
from course_checks.step_04 import further, head, smoothing, tests, text  # noqa: E402


def release_cells(notebook: str) -> list[dict]:
    nb = json.loads((RELEASE / STEP / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_every_hidden_test_has_one_contract_in_its_notebook():
    by_hidden = {}
    for c in CONTRACTS.values():
        assert c.hidden not in by_hidden, f"{c.hidden}: two contracts"
        by_hidden[c.hidden] = c
    assert set(by_hidden) == set(STEP4.checks), "a hidden test without a contract, or a contract without one"
    for c in CONTRACTS.values():
        ids = [cell["metadata"].get("nbgrader", {}).get("grade_id") for cell in release_cells(c.notebook)]
        assert c.hidden in ids, f"{c.name}: {c.hidden} is not in {c.notebook}"
        defined = "\n".join("".join(cell["source"]) for cell in release_cells(c.notebook)
                            if cell["metadata"].get("nbgrader", {}).get("solution"))
        assert f"def {c.name}(" in defined or f"{c.name} =" in defined, f"{c.name}: no answer cell defines it"


def visible_check_of(name: str, notebook: str) -> str:
    """The visible check cells below the answer cell that defines `name`, up to the next answer cell."""
    found, text = False, []
    for cell in release_cells(notebook):
        meta = cell["metadata"].get("nbgrader", {})
        source = "".join(cell["source"])
        if meta.get("solution"):
            found = f"def {name}(" in source
        elif found and meta.get("grade") and not meta.get("points"):
            text.append(source)
    return "\n".join(text)


@pytest.mark.parametrize("name", [n for n, c in CONTRACTS.items() if c.form])
def test_the_visible_check_judges_the_form_by_the_contract(name):
    c = CONTRACTS[name]
    assert f'expect_form("{name}"' in visible_check_of(name, c.notebook), (
        f"{name}: its visible check does not call expect_form({name!r}, ...): the hidden test judges the form "
        "by the contract, the visible check must too")


@pytest.mark.parametrize("name", ["scores_entrywise", "mask_after_softmax_row_sums", "permutation_gaps",
                                  "online_softmax", "streaming_attention", "fit_exponent", "smoothing_attention",
                                  "top_key_shares"])
def test_the_visible_check_takes_its_tolerance_from_the_contract(name):
    assert f'tolerance("{name}"' in visible_check_of(name, CONTRACTS[name].notebook)


# ---- form_problem: the same verdict in the notebook and in the grader -------------------------------

def test_a_python_float_is_what_a_float_contract_asks():
    assert form_problem("fit_exponent", 1.5) == ""
    assert form_problem("fit_exponent", np.float64(1.5)) == ""                # numpy's float64 is a Python float
    for wrong in (np.float32(1.5), torch.tensor(1.5), 2, True, "1.5"):
        assert "Python float" in form_problem("fit_exponent", wrong)
    with pytest.raises(AssertionError, match="torch.Tensor"):
        expect_form("fit_exponent", torch.tensor(1.5))


def test_floats_come_as_many_as_the_contract_says():
    assert form_problem("permutation_gaps", (1e-8, 0.0, 2e-8, 0.4)) == ""
    assert form_problem("permutation_gaps", [1e-8, 0.0, 2e-8, 0.4]) == ""
    assert "0-dimensional" in form_problem("permutation_gaps", [torch.tensor(0.0)] * 4)
    assert "length 3" in form_problem("permutation_gaps", [0.0] * 3)


def test_tensors_arrays_shapes_and_dtypes():
    q = torch.zeros(2, 5, 3)
    assert form_problem("scores_entrywise", torch.zeros(2, 5, 5), q, q) == ""
    assert "shape (2, 5, 5)" in form_problem("scores_entrywise", torch.zeros(5, 5), q, q)
    assert "dtype of its input `q` (float32), not float64" in form_problem(
        "scores_entrywise", torch.zeros(2, 5, 5, dtype=torch.float64), q, q)
    assert "should return a tensor, not numpy.ndarray" in form_problem("scores_entrywise", np.zeros((2, 5, 5)), q, q)
    s64 = torch.zeros(3, 4, 4, dtype=torch.float64)
    assert form_problem("mask_after_softmax_row_sums", np.zeros((3, 4)), s64) == ""        # an array is fine
    assert "float64" in form_problem("mask_after_softmax_row_sums", np.zeros((3, 4), np.float32), s64)
    assert form_problem("smoothing_attention", [[1.0, 0.0], [0.5, 0.5]], 2, 1.0) == ""      # nested lists
    assert "list" in form_problem("attention_on_text", [[0.0] * 64] * 64, 0)
    assert "(64, 64)" in form_problem("attention_on_text", torch.zeros(1, 64, 64), 0)


def test_tolerances_are_read_from_one_place():
    assert tolerance("fit_exponent", "slope") == further.FIT.tol("slope")
    assert further.SOFTMAX.tol("float32") == tolerance("online_softmax")
    assert further.STREAMING is CONTRACTS["streaming_attention"] and head.ENTRYWISE is CONTRACTS["scores_entrywise"]
    assert tests.ROW_SUMS is CONTRACTS["mask_after_softmax_row_sums"] and smoothing.SMOOTHING.tol("weights") == smoothing.ATOL
    assert text.TEXT_ATOL == tolerance("attention_on_text")
    assert text.SHARES is CONTRACTS["top_key_shares"] and text.SHARE_ATOL == tolerance("top_key_shares", "shares")


# ---- the hidden tests go past the notebook's sizes ---------------------------------------------------

def largest(name: str, key: str = "T") -> int:
    c = CONTRACTS[name]
    return max(c.visible.get(key, 0), c.used.get(key, 0))


def test_hidden_cases_reach_past_every_size_the_notebook_uses():
    assert max(T for _, B, T, *_ in head.ScoresEntrywise.CASES) > largest("scores_entrywise")
    assert any(B > 1 for _, B, *_ in head.ScoresEntrywise.CASES)
    assert max(T for _, B, T, *_ in tests.MaskAfterSoftmax.CASES) > largest("mask_after_softmax_row_sums")
    assert max(tests.length_at(p) for p in tests.CheckPerturbation.params) > largest("check_causality_perturbation")
    assert max(tests.length_at(i) for i in tests.CheckGradient.params) > largest("check_causality_gradient")
    assert max(A.shape[-1] for _, A in text.share_cases()) > largest("top_key_shares")
    assert max(T for T, _ in smoothing.MODERATE) > largest("smoothing_attention")
    assert max(T for _, _, T, *_ in further.PERM_CASES) > largest("permutation_gaps")
    assert any(extra > 0 for *_, extra in further.PERM_CASES), "a pos_emb longer than T, as the docstring allows"
    assert max(x.shape[-1] for xs in further.softmax_cases().values() for x in xs) > largest("online_softmax")
    assert max(q.shape[-2] for triples in further.attention_cases().values() for q, _, _ in triples) \
        > largest("streaming_attention")


def test_large_scores_where_a_softmax_by_hand_overflows():
    assert any(scale * 3 > 88.8 and dtype == "float32" for *_, scale, dtype in tests.MaskAfterSoftmax.CASES)
    assert min(x.max().item() for x in further.softmax_cases()["very_large"]) > 88.8
