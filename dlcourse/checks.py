"""Checks for "check your work" cells: each failure says which property failed and what was found; it names a
cause only where it measured it."""

from __future__ import annotations

import builtins
import sys

import torch


class needs:
    """Run a provided cell that uses your answers; if one is not written yet, say so instead of crashing.

        with needs("smoothing_attention"):
            plot(smoothing_attention(64, 4.0))

    A `NotImplementedError` (an answer cell still holding its stub) prints "fill in the answer above".
    A `NameError` prints "run the cells above first" only when the missing name is one this cell needs
    (one it names, or one read by its own code, functions it defines included) and no cell has defined
    it yet. A `NameError` raised inside a function from another cell, yours for instance, for a name
    that function reads (a typo, a variable used before it is set) is a bug in that function: it is
    shown as it is, with its traceback, so you can find the line.
    """

    def __init__(self, *names: str):
        self.names = names

    def __enter__(self):
        self.cell = sys._getframe(1)  # the frame of the cell that says `with needs(...)`
        return self

    def __exit__(self, kind, error, traceback):
        if kind is None:
            return False
        if issubclass(kind, NotImplementedError):
            print(
                f"(This cell uses {', '.join(self.names)}: fill in the answer above, run it, then run this cell again.)"
            )
            return True
        if (
            issubclass(kind, NameError)
            and not issubclass(kind, UnboundLocalError)
            and self._not_run_yet(error, traceback)
        ):
            print(f"(This cell needs {error.name!r}, which is not defined yet: run the cells above first.)")
            return True
        return False  # anything else, shown as it is

    def _not_run_yet(self, error: NameError, traceback) -> bool:
        name = getattr(error, "name", None)
        if name is None or name in self.cell.f_globals or hasattr(builtins, name):
            return False
        while traceback.tb_next is not None:  # the frame that raised: the cell's code, or a function it called
            traceback = traceback.tb_next
        in_this_cell = traceback.tb_frame.f_code.co_filename == self.cell.f_code.co_filename  # functions it defines too
        return name in self.names or in_this_cell


def rel_error(x, y) -> float:
    """max |x - y| / max(1e-8, |x| + |y|): 1e-7 is float32 agreement, 1e-3 a real difference."""
    x, y = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)
    return ((x - y).abs() / (x.abs() + y.abs()).clamp(min=1e-8)).max().item()


def expect_attention_rows(A: torch.Tensor, tol: float = 1e-6) -> None:
    """A (…, T, T) must be causal attention: finite, nonnegative, zero above the diagonal,
    rows summing to 1. Raises AssertionError saying which of these fails first, and what A holds instead
    (A alone does not say how it was computed: no cause is named)."""
    T = A.shape[-1]
    if torch.isnan(A).any():
        rows = torch.isnan(A).any(dim=-1).nonzero()[0].tolist()
        every = ", every entry of A" if torch.isnan(A).all() else ""
        raise AssertionError(
            f"A has NaN (first at index {rows}{every}), where every attention weight is a number in [0, 1]"
        )
    if (A < 0).any():
        raise AssertionError(f"A has negative weights (min {A.min().item():.3g}): a softmax never does.")
    above = torch.triu(torch.ones(T, T, dtype=torch.bool, device=A.device), diagonal=1)
    if (A[..., above] != 0).any():
        below_zero = T > 1 and bool((A[..., above.T] == 0).all())  # the weight sits on keys j >= i instead
        raise AssertionError(
            f"A has weight above the diagonal (max {A[..., above].abs().max().item():.3g}): the future is visible, "
            "where every weight on a key j > i is exactly 0"
            + (". Below the diagonal A is 0: its weight is on keys j >= i" if below_zero else "")
        )
    sums = A.sum(dim=-1)
    worst = (sums - 1).abs().max().item()
    if worst > tol:
        low = sums.min().item()
        columns = (A.sum(dim=-2) - 1).abs().max().item() <= tol  # normalised down each column instead
        raise AssertionError(
            f"rows of A sum to between {low:.4f} and {sums.max().item():.4f}, not 1 (worst error {worst:.2e})"
            + (": its columns sum to 1 instead" if columns else "")
        )


# ---- trying a check you wrote (notebook 3) ------------------------------------------------


ACCEPT = "A check must return quietly whenever the property holds."


def _name(check) -> str:
    return getattr(check, "__name__", "your check")


def expect_accepts(check, what: str, *args, hint: str = "", crash_hint: str | dict[str, str] = "") -> None:
    """`check(*args)` must return quietly: `what` is correct. Prints ✓, or raises AssertionError
    saying that the check rejects something correct, with `hint` (or `crash_hint` if it crashed):
    what the cell knows about that case. A `crash_hint` {words: hint} gives a hint only when the
    crash's message holds its words."""
    try:
        check(*args)
    except NotImplementedError:
        raise
    except AssertionError as err:
        raise AssertionError(
            f"{_name(check)} rejects {what}, which is correct (it said: {str(err)[:200] or 'AssertionError'}). "
            + (hint or ACCEPT)
        ) from None
    except Exception as err:
        if isinstance(crash_hint, dict):
            crash_hint = next((h for words, h in crash_hint.items() if words in str(err)), "") or ACCEPT
        raise AssertionError(
            f"{_name(check)} crashed on {what}: {type(err).__name__}: {str(err)[:200]}. "
            + (crash_hint or hint or ACCEPT)
        ) from None
    print(f"  ✓ returns quietly on {what}")


def expect_rejects(check, what: str, *args, hint: str = "") -> None:
    """`check(*args)` must raise AssertionError: `what` is broken. Prints ✓, or raises AssertionError
    saying that the check lets the mistake through (or crashed on it, which is not a catch)."""
    try:
        check(*args)
    except NotImplementedError:
        raise
    except AssertionError:
        print(f"  ✓ raises AssertionError on {what}")
        return
    except Exception as err:
        raise AssertionError(
            f"{_name(check)} crashed on {what} with {type(err).__name__}: {str(err)[:200]}. A crash is not a catch: "
            "when the property fails, the check must raise AssertionError (an `assert` with a message)."
        ) from None
    raise AssertionError(
        f"{_name(check)} returns quietly on {what}, which breaks the property. "
        + (hint or "A check raises AssertionError whenever a part of the property fails.")
    )


# ---- the form of an answer's result (dlcourse/contracts.py) --------------------------------


def expect_form(name: str, value, *args) -> None:
    """The result `value` of answer `name` on `args` must have the form its contract states (the kind,
    shape and dtype the hidden tests judge too): raises AssertionError saying what differs."""
    from .contracts import form_problem

    problem = form_problem(name, value, *args)
    assert not problem, problem
