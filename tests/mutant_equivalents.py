"""Mutants of the graded answers that behave exactly like the solution on every valid input
(tests/mutants.py): mutant id -> why. Each must keep full marks on its hidden test (a judge that
took points from one would fail a correct answer)."""

EQUIVALENT: dict[str, str] = {
}
