"""Results judged by their answer's contract (dlcourse/contracts.py), as the notebook's "check your
work" cell judges them (`dlcourse.checks.expect_form`): the same function, on the result as the
student's code returned it (a tensor stays a tensor, a Python float a float)."""
from __future__ import annotations

from autograder.checks import attempt
from dlcourse.contracts import form_problem


def attempt_form(name: str, fn, *args, convert=None) -> dict:
    """attempt(fn, *args), with the result's form judged by the contract of answer `name`:
    {'value': the result (through `convert`), 'form': '' or what breaks the contract}, or {'error'}."""
    forms = []
    returning = getattr(fn, "returning", fn)         # a student's function: its result with its own types

    def call(*a):
        result = returning(*a)
        forms.append(form_problem(name, result, *a, hidden=True))      # no size quoted: the inputs are hidden
        return convert(result) if convert is not None else result

    entry = attempt(call, *args)
    if "value" in entry:
        entry["form"] = forms[-1] if forms else ""
    return entry


def form_of(entry) -> str:
    """The contract's verdict on a probe entry's form ('' when it holds or there is no value)."""
    return entry.get("form") or "" if isinstance(entry, dict) and "value" in entry else ""
