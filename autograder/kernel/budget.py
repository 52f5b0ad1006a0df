"""One time budget per student (Limits.student_budget), shared by the student's notebooks.

The grader runs a student's notebooks in parallel workers, one job per (student, notebook). The budget
is kept here, in the grading process (autograder/grading/grade.py `run_jobs`), by a `Ledger` that hands each
job the seconds it may count (its `allowance`, which autograder/kernel/execute.py enforces, counting each
cell's kernel CPU time, the grader's work for it and the kernel's own waiting: kernels' start and
waits for a CPU left out) and settles what each job used.

The rule, a function of the submission alone: a student's notebooks are taken in notebook order, and
each is allowed what the notebooks before it left:

    allowance(k) = budget - sum(used(j) for j < k)

So the same submission gets the same allowances, and so the same grades, with one worker or many, in
whatever order the workers finish. With one worker that is what happens: the notebooks of a student
run one after another (the ledger hands out a student's next notebook once the one before it is
settled, and keeps the workers busy with other students meanwhile), and a student costs the class at
most the budget (plus each notebook's kernel starts and judging, which are not counted).

A worker that would otherwise wait (fewer students left than workers) starts a student's later
notebook early, allowed what the finished notebooks before it left (no less than the rule will give
it). When the notebooks before it are settled, its result stands if it would have been the same under
the rule: it was not stopped by the budget and used no more than the rule allows. Otherwise it is
graded again with the rule's allowance (which, once the budget is spent, runs no kernel: every cell
scores 0, saying why). Early starts therefore never change a grade; they can cost a student who
waits a few notebooks' worth of extra time, on workers that had nothing else to do.

Results recorded by an earlier run (the same submission and grader) count what they used. A
notebook's `used` is in its result (`budget`); a result without it counts 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class _Student:
    entries: list  # in notebook order: ("job", index) or ("done", seconds used)
    settled: int = 0  # entries before this one are settled
    used: float = 0.0  # seconds the settled entries used


@dataclass
class Ledger:
    """The budget of every student of a run (see the module's docstring).

    jobs: the run's jobs, each with .student and .notebook; recorded: {(student, notebook): seconds
    used} of the notebooks graded by an earlier run that are not among the jobs."""

    jobs: list
    budget: float
    recorded: dict = field(default_factory=dict)

    def __post_init__(self):
        self._students: dict[str, _Student] = {}
        notebooks: dict[str, list] = {}
        for i, job in enumerate(self.jobs):
            notebooks.setdefault(job.student, []).append((job.notebook, ("job", i)))
        for (sid, name), used in self.recorded.items():
            if sid in notebooks:
                notebooks[sid].append((name, ("done", float(used or 0.0))))
        for sid, items in notebooks.items():
            self._students[sid] = _Student([entry for _, entry in sorted(items, key=lambda item: item[0])])
        self._waiting = set(range(len(self.jobs)))  # not handed out (again)
        self._running: dict[int, float] = {}  # job -> the allowance it was given
        self._finished: dict[int, tuple] = {}  # job -> (outcome, allowance, used, ran_out), not settled
        for student in self._students.values():
            self._settle(student)

    # -- handing out --------------------------------------------------------------------------------
    def next_job(self, early: bool = True) -> tuple[int, float] | None:
        """The next job to start and its allowance, None if there is none to start now. First a
        student's next notebook in order (its allowance exact); only if there is none, and `early`,
        a student's later notebook (allowed what the finished notebooks before it left)."""
        for sid in sorted(self._students):
            student = self._students[sid]
            if student.settled < len(student.entries):
                _, i = student.entries[student.settled]
                if i in self._waiting:
                    self._waiting.discard(i)
                    allowance = self.budget - student.used
                    self._running[i] = allowance
                    return i, allowance
        if not early:
            return None
        # the student with the fewest jobs running, then by id: its first notebook not yet handed out
        candidates = []
        for sid in sorted(self._students):
            student = self._students[sid]
            running = sum(1 for kind, i in student.entries if kind == "job" and i in self._running)
            later = [k for k, (kind, i) in enumerate(student.entries) if kind == "job" and i in self._waiting]
            if later:
                candidates.append((running, sid, later[0]))
        if not candidates:
            return None
        _, sid, k = min(candidates)
        student = self._students[sid]
        spent = student.used + sum(
            self._finished[i][2]
            for kind, i in student.entries[student.settled : k]
            if kind == "job" and i in self._finished
        )
        _, i = student.entries[k]
        self._waiting.discard(i)
        self._running[i] = self.budget - spent
        return i, self.budget - spent

    def retry(self, i: int) -> None:
        """Job i did not finish (its worker died): it is handed out again."""
        self._running.pop(i, None)
        self._waiting.add(i)

    # -- settling -----------------------------------------------------------------------------------
    def finished(self, i: int, outcome) -> list[tuple[int, object]]:
        """Job i ended with `outcome` (its result, or the text of the grader's failure); the results
        that are now settled, in order, [(job, outcome)]. A result that the rule would not have given
        is dropped and its job handed out again."""
        allowance = self._running.pop(i)
        budget = getattr(outcome, "budget", None)  # a NotebookResult's; none for a grader's failure
        used = float(budget.used or 0.0) if budget is not None else 0.0
        ran_out = bool(budget.ran_out) if budget is not None else False
        self._finished[i] = (outcome, allowance, used, ran_out)
        return self._settle(self._students[self.jobs[i].student])

    def _settle(self, student: _Student) -> list[tuple[int, object]]:
        out = []
        while student.settled < len(student.entries):
            kind, value = student.entries[student.settled]
            if kind == "done":
                student.used += value
            elif value in self._finished:
                outcome, allowance, used, ran_out = self._finished[value]
                exact = self.budget - student.used
                if allowance != exact and (ran_out or used > exact):
                    del self._finished[value]  # graded again under the rule's allowance
                    self._waiting.add(value)
                    break
                del self._finished[value]
                student.used += used
                if getattr(outcome, "budget", None) is not None:
                    outcome.budget.allowance = round(exact, 2)  # the rule's, as the result stands under it
                out.append((value, outcome))
            else:
                break
            student.settled += 1
        return out

    def allowance_rule(self, student: str) -> float:
        """What the student has left of the budget after its settled notebooks."""
        return self.budget - self._students[student].used

    def done(self) -> bool:
        return not self._waiting and not self._running and not self._finished
