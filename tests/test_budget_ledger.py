"""The ledger of the students' time budgets (autograder/kernel/budget.py), on simulated notebooks: whatever the
number of workers and the order they finish in, every notebook is settled with the allowance, the
seconds and the outcome it gets when a student's notebooks run one after another."""
from __future__ import annotations

import heapq
import random
from types import SimpleNamespace

import pytest

from autograder.kernel.budget import Ledger
from autograder.records.model import Budget, NotebookResult

BUDGET = 100.0


def job(student, notebook):
    return SimpleNamespace(student=student, notebook=notebook)


def outcome(need: float, allowance: float) -> NotebookResult:
    """What a notebook that would count `need` seconds reports when allowed `allowance`."""
    if allowance <= 0:
        budget = Budget(allowance=allowance, used=0.0, ran_out=True)
    else:
        budget = Budget(allowance=allowance, used=min(need, allowance), ran_out=need > allowance)
    return NotebookResult(student="s", notebook="n", key="k", budget=budget)


def simulate(needs: dict, workers: int, seed: int, recorded=None):
    """Run the class on `workers` simulated workers (a job takes the seconds it counts, plus a random
    start-up); finishing ties broken at random. Returns {(student, notebook): settled budget}, the
    order they were settled in and the seconds the workers spent per student."""
    rng = random.Random(seed)
    jobs = [job(s, n) for (s, n) in sorted(needs)]
    ledger = Ledger(jobs, BUDGET, recorded or {})
    clock, running, settled, order, spent = 0.0, [], {}, [], {}

    def fill():
        while len(running) < workers:
            nxt = ledger.next_job()
            if nxt is None:
                return
            i, allowance = nxt
            result = outcome(needs[(jobs[i].student, jobs[i].notebook)], allowance)
            took = result.budget.used + rng.uniform(0.1, 3.0)
            spent[jobs[i].student] = spent.get(jobs[i].student, 0.0) + took
            heapq.heappush(running, (clock + took, rng.random(), i, result))

    fill()
    while running:
        clock, _, i, result = heapq.heappop(running)
        for j, out in ledger.finished(i, result):
            key = (jobs[j].student, jobs[j].notebook)
            assert key not in settled, f"{key} settled twice"
            settled[key] = out.budget.to_json()
            order.append(key)
        fill()
    assert ledger.done() and len(settled) == len(jobs)
    return settled, order, spent


CLASSES = {
    "honest": {(s, f"0{k}"): 5.0 + k for s in ("ada", "bea", "cy") for k in range(1, 7)},
    "one waiter": {**{(s, f"0{k}"): 4.0 for s in ("ada", "bea") for k in range(1, 7)},
                   **{("mallory", f"0{k}"): 45.0 for k in range(1, 7)}},
    "alone": {("mallory", f"0{k}"): need for k, need in enumerate([10, 80, 5, 30, 0.5, 60], 1)},
    "two waiters": {**{("mallory", f"0{k}"): 1000.0 for k in range(1, 7)},
                    **{("trudy", f"0{k}"): [3, 97, 2, 1, 50, 4][k - 1] for k in range(1, 7)},
                    ("ada", "01"): 7.0},
}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_worker_count_and_finishing_order_settles_what_one_worker_does(name):
    needs = CLASSES[name]
    alone, order, _ = simulate(needs, workers=1, seed=0)
    for student in {s for s, _ in needs}:         # one worker: notebook order, each allowed what is left
        left = BUDGET
        for notebook in sorted(n for s, n in needs if s == student):
            got = alone[(student, notebook)]
            assert got["allowance"] == left
            left -= got["used"]
        assert sum(alone[k]["used"] for k in needs if k[0] == student) <= BUDGET
    for workers in (2, 3, 5, 8):
        for seed in range(25):
            settled, order, _ = simulate(needs, workers, seed)
            assert settled == alone, (workers, seed)
            for student in {s for s, _ in needs}:    # each student's notebooks are settled in order
                theirs = [n for s, n in order if s == student]
                assert theirs == sorted(theirs)


def test_a_waiting_student_costs_one_worker_at_most_the_budget_plus_start_ups():
    needs = CLASSES["one waiter"]
    _, _, spent = simulate(needs, workers=1, seed=3)
    assert BUDGET <= spent["mallory"] <= BUDGET + 6 * 3.0
    settled, _, _ = simulate(needs, workers=1, seed=3)
    assert [settled[("mallory", f"0{k}")]["ran_out"] for k in range(1, 7)] == [False, False, True, True, True, True]


def test_notebooks_recorded_by_an_earlier_run_count_what_they_used():
    needs = {("ada", "02"): 30.0, ("ada", "04"): 30.0}
    settled, _, _ = simulate(needs, workers=2, seed=1, recorded={("ada", "01"): 50.0, ("ada", "03"): 15.0})
    assert settled[("ada", "02")] == {"allowance": 50.0, "used": 30.0, "ran_out": False}
    assert settled[("ada", "04")] == {"allowance": 5.0, "used": 5.0, "ran_out": True}


def test_an_early_start_is_graded_again_when_the_rule_allows_it_less():
    """Two workers, one student: 02 starts beside 01, allowed the whole budget; 01 then uses 90, so 02
    (which would use 40) is graded again with the 10 the rule leaves it."""
    ledger = Ledger([job("m", "01"), job("m", "02")], BUDGET)
    assert ledger.next_job() == (0, BUDGET)
    assert ledger.next_job() == (1, BUDGET)
    assert ledger.finished(1, outcome(40, BUDGET)) == []             # waits for 01
    settled = ledger.finished(0, outcome(90, BUDGET))
    assert [i for i, _ in settled] == [0]
    assert ledger.next_job() == (1, 10.0)
    (i, out), = ledger.finished(1, outcome(40, 10.0))
    assert i == 1 and out.budget == Budget(allowance=10.0, used=10.0, ran_out=True) and ledger.done()


def test_a_notebook_of_a_worker_that_died_is_handed_out_again_with_the_same_allowance():
    ledger = Ledger([job("m", "01"), job("m", "02")], BUDGET)
    assert ledger.next_job(early=False) == (0, BUDGET)
    assert ledger.next_job(early=False) is None         # 02 waits for 01 unless a worker is idle
    ledger.retry(0)
    assert ledger.next_job(early=False) == (0, BUDGET)
    assert ledger.finished(0, "its grading process died repeatedly") == [(0, "its grading process died repeatedly")]
    assert ledger.next_job(early=False) == (1, BUDGET)
