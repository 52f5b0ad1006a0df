"""Correct answers in other shapes against the hidden checks (tests/rewrites.py, `make rewrites`).

Every CI run judges a fixed sample in-process, as `make rewrites` judges them all. Per answer:

* a hand-written shape with the cosmetic families combined and an earlier definition left above it
  (the released stub, or a wrong attempt in a class), and the solution under one family alone: each
  must behave as the solution on tests/behaviour.py's draws, and keep full marks on its hidden test;
* two mutants of a mutated rewrite: each must lose points, unless it behaves as the solution (then it
  must keep full marks) or as a mutant of the solution listed in tests/mutant_equivalents.py
  (equivalent: full marks; surviving with a reason: either), or is a mutant of a rewrite listed there.

The answers whose hidden test reads the process from the source (source/step-04/checks/process.py)
are sampled under an earlier definition (the reader judges the last one) and as a class instance:
these keep full marks too. A mutant the check cannot decide goes to a person (review): neither
killed nor survived.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import re
from pathlib import Path

import pytest

import behaviour
import mutants
import rewrites
from collection_cache import MADE_FROM, cached
from conftest import STEP4
from mutant_equivalents import EQUIVALENT, REWRITE_SURVIVING, SURVIVING

# judged in-process, but about half a minute of one core: kept out of `make test-quick`
pytestmark = pytest.mark.slow

NAMES = list(mutants.ANSWERS)
# the answers whose hidden test reads the process from the source (source/step-04/checks/process.py)
PROCESS_READ = {"scores_entrywise", "online_softmax", "streaming_attention"}


def _hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)


def _shapes(name):
    return sorted(s for s in rewrites.bases(name) if s != "solution" and (name, s) not in rewrites.SLOW)


def sample_rewrites():
    """Per answer (n-th in ANSWERS): a hand-written shape, combined, under an earlier stub (even n) or an
    attempt and a class (odd n); the solution under the n-th family alone."""
    picked = []
    families = list(rewrites.FAMILIES)
    for n, name in enumerate(NAMES):
        shapes = _shapes(name)
        extra = ("stub above",) if n % 2 == 0 else ("attempt above", "class")
        picked.append(rewrites.build(name, shapes[n % len(shapes)], rewrites.COMBINED + extra))
        family = families[n % len(families)]
        picked.append(rewrites.build(name, "solution", [family])
                      or rewrites.build(name, "solution", [families[(n + 1) % len(families)]]))
    return [r for r in picked if r is not None]


def sample_mutants():
    """Per answer: two mutants of another hand-written shape with the cosmetic families combined."""
    picked = []
    for n, name in enumerate(NAMES):
        shapes = _shapes(name)
        rewrite = rewrites.build(name, shapes[(n + 1) % len(shapes)], rewrites.COMBINED, mutate=True)
        made = sorted(mutants.mutants_of(name, rewrite.source), key=lambda m: _hash(m.id))
        picked += [(rewrite, m) for m in made[:2]]
    return picked


# made once per change of their sources, not once per test worker (tests/collection_cache.py)
REWRITES, MUTANTS = cached("rewrite-sample", MADE_FROM + [Path(__file__)], lambda: (sample_rewrites(), sample_mutants()))


def test_the_process_read_answers_are_those_whose_check_reads_the_source():
    reads = {name for name, answer in mutants.ANSWERS.items()
             if re.search(r"_work\(code_before\(ctx", inspect.getsource(type(STEP4.checks[answer.check])))}
    assert reads == PROCESS_READ


def test_the_process_read_answers_are_sampled_under_an_earlier_definition_and_as_a_class():
    for name in PROCESS_READ:
        families = [set(r.families) for r in REWRITES if r.answer == name]
        assert any(f & {"stub above", "attempt above"} for f in families), f"{name}: no earlier definition sampled"
    assert any("class" in r.families for r in REWRITES if r.answer in PROCESS_READ)


def test_every_answer_has_shapes_and_every_family_fits_somewhere():
    assert set(rewrites.SHAPES) == set(mutants.ANSWERS), "a graded answer without hand-written shapes"
    fitted = {f for r in REWRITES for f in r.families}
    for family in rewrites.FAMILIES:
        assert any(rewrites.build(name, "solution", [family]) for name in NAMES), f"{family} fits no answer"
    assert {"stub above", "attempt above", "class"} <= fitted


@pytest.mark.parametrize("rewrite", REWRITES, ids=[r.id for r in REWRITES])
def test_a_correct_rewrite_keeps_full_marks(rewrite):
    parted = behaviour.differs(reference(rewrite.answer), behaviour.behaviour(rewrite.answer, rewrite.source))
    assert parted is None, f"{rewrite.id} is no rewrite: it behaves otherwise than the solution ({parted})"
    got, full, why = mutants.judge_source(rewrite.answer, rewrite.source)
    assert got is not None, f"{rewrite.id} goes to review: {why}\n{rewrite.source}"
    assert got == pytest.approx(full), f"{rewrite.id}: {got} of {full}: {why}\n{rewrite.source}"


@functools.cache
def reference(name):
    return behaviour.behaviour(name, mutants.solution_of(name))


@functools.cache
def listed_twins(name, operator):
    """(mutant, behaviour) of the solution's mutants made by `operator` and listed in
    tests/mutant_equivalents.py (`make rewrites` compares with every mutant of the solution; the same
    mistake is made by the same operator)."""
    return [(m, behaviour.behaviour(name, m.source)) for m in mutants.mutants_of(name, mutants.solution_of(name))
            if m.operator == operator and (m.id in EQUIVALENT or m.id in SURVIVING)]


@pytest.mark.parametrize("rewrite,mutant", MUTANTS, ids=[f"{r.id} / {m.id}" for r, m in MUTANTS])
def test_a_mutant_of_a_rewrite_loses_points_unless_equivalent(rewrite, mutant):
    name = rewrite.answer
    seen = behaviour.behaviour(name, mutant.source)
    got, full, why = mutants.judge_source(name, mutant.source)
    detail = f"{mutant.operator}, line {mutant.line}: {mutant.before!r} -> {mutant.after!r}; {got} of {full}: {why}"
    twin = next((m for m, b in listed_twins(name, mutant.operator) if behaviour.same(seen, b)), None)
    if got is None:
        pass                                     # the check cannot decide: a person scores it (review)
    elif behaviour.same(seen, reference(name)) or (twin is not None and twin.id in EQUIVALENT):
        assert got == pytest.approx(full), f"an equivalent mutant of {rewrite.id} loses points: {detail}"
    elif mutant.id in REWRITE_SURVIVING or (twin is not None and twin.id in SURVIVING):
        pass                                     # a survivor with its reason written down
    else:
        assert got < full, f"the hidden test does not see this mutant of {rewrite.id}: {detail}"


def test_the_table_is_current():
    text = rewrites.TABLE.read_text(encoding="utf-8")
    for name in NAMES:
        made = len(rewrites.rewrites_of(name))
        row = re.search(rf"^\| `{name}` \| `[^`]+` \| (\d+) \|", text, re.M)
        assert row and int(row.group(1)) == made, f"{name}: the table is stale (make rewrites): {made} rewrites now"
    # | rewrites | kept | review | lost | of which: defined twice | other | not equivalent |
    total = re.search(r"^\| \*\*all\*\* \| \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", text, re.M)
    assert total, "the table has no totals row"
    assert int(total.group(4)) == 0, "a correct rewrite loses points (tests/rewrite_table.md says which and why)"
