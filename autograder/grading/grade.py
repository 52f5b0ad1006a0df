"""Grade a class: `python -m autograder grade SUBMISSIONS [--step S] [--workers N] [--force] [--shard I/N]`.

  1. read the submissions in whatever shape they came (intake/collect.py);
  2. keep each received notebook, unmodified, in nbgrader's layout under autograder/submitted/;
  3. grade every (student, notebook) in parallel worker processes: rebuild the notebook from
     the instructor's cells and the student's answers (intake/assemble.py), run it in a fresh kernel
     under limits (kernel/execute.py), judge the hidden checks outside the kernel (grading/judging.py);
  4. record each notebook's result through the store (records/store.py: the graded notebook, its
     scores in the gradebook, its result file; only this process writes), then read the class back
     through the store's one `load` for the feedback HTML and the step's reports
     (autograder/grades/<step>.csv and .json).
Everything is kept per step: submitted/<student>/<step>/, autograded/, feedback/, work/results/<step>/.
A notebook whose result is already recorded for the same submission and the same grader is
not graded again (so a run killed halfway finishes where it stopped); --force regrades.
With --shard I/N or --students a,b only those students are graded (one piece of a class graded
on several machines against a shared gradebook, see shards.py); `python -m autograder report`
then writes the reports for the whole class.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

# nbformat validates notebooks with jsonschema, whose import builds the grammars of the optional
# package rfc3987_syntax (about 2 s of CPU in every grading process, far more on a loaded machine)
# for the "iri" string formats, which the notebook schema never uses and nbformat never checks.
# Grading processes (this one and its workers) go without it: jsonschema treats it as absent.
sys.modules.setdefault("rfc3987_syntax", None)

from ..intake.collect import NO_ID, collect, pick_newest  # noqa: E402
from ..course import ROOT, db_url, grader_home, use_environment_tools  # noqa: E402
from ..errors import UsageError  # noqa: E402
from ..kernel.limits import clip  # noqa: E402
from ..records import gradebook  # noqa: E402
from ..records.model import FAILED, MISSING, Budget, CellResult, NotebookResult, StudentResult  # noqa: E402
from ..records.store import STAMP_FORMAT, Store, atomic_write  # noqa: E402
from ..steps import Step  # noqa: E402


# The gradebook's address and credentials: never passed to a kernel (a PostgreSQL URL holds a password).
GRADEBOOK_SECRETS = ("NBGRADER_DB_URL", "PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE", "DATABASE_URL")


@dataclass
class Job:
    step: str  # the step's name (a worker finds it under `root`)
    root: str
    student: str
    notebook: str
    submitted: str  # path of the received notebook (autograder/submitted/...)
    key: str  # hash of everything the result depends on
    sandbox: str
    threads: int
    limits: dict = field(default_factory=dict)
    kernels: str = (
        "warm"  # forked from this worker's template (autograder/kernel/warm.py) when it can; "cold": a fresh one
    )
    allowance: float | None = None  # seconds of the student's time budget left for it (autograder/kernel/budget.py)


# ---- in a worker process -------------------------------------------------------------------


def run_job(job: Job) -> NotebookResult:
    """Grade one notebook of one student. Runs in a worker process."""
    import asyncio

    import nbformat

    from ..kernel import leftovers
    from ..intake.assemble import assemble
    from ..checks.casekey import case_key
    from ..kernel.execute import Limits, execute
    from .judging import conceal_after_hidden_inputs, judge_notebook
    from ..plugin import kernel_readable, load_plugin
    from ..checks.probeserver import ProbeServer
    from ..kernel.sandbox import make_sandbox

    started = time.monotonic()
    _reset_peak_memory()
    step = Step(job.step, Path(job.root))
    submitted = Path(job.submitted).read_bytes()  # every byte the student handed in: its cases' seed
    student_nb = json.loads(submitted.decode("utf-8"))
    release_nb = json.loads((step.release / f"{job.notebook}.ipynb").read_text(encoding="utf-8"))
    source_nb = json.loads((step.source / f"{job.notebook}.ipynb").read_text(encoding="utf-8"))
    handed_in: dict = {}  # graded cell id -> the outputs handed in for it
    graded, notes = assemble(student_nb, release_nb, source_nb, handed_in)
    nb = nbformat.from_dict(graded)
    plugin = load_plugin(step.root)
    course_env = plugin.kernel_env(step)  # the course's: its numerics, its data, its kernel hooks
    readable = kernel_readable(step)
    template = None
    if job.kernels == "warm":  # this worker's template (its scratch folders live in its sandbox)
        from ..kernel.warm import worker_template

        template = worker_template(
            job.sandbox,
            plugin.preimport(step),
            kernel_environment(job.threads, Path("/nonexistent"), "", course_env),
            readable=readable,
            passed_env=tuple(course_env),
        )
    scratch = leftovers.made("grade-", dir=getattr(template, "root", None))  # short: sockets live here
    try:
        workdir = scratch / "work"
        workdir.mkdir()
        socket_path = str(scratch / "probe.sock")
        limits = Limits(**job.limits)
        sandbox = make_sandbox(job.sandbox, scratch, readable, passed_env=tuple(course_env))
        released = {c.get("id") for c in release_nb.get("cells", [])}
        student_code = [
            c.source
            for c in nb.cells
            if c.cell_type == "code"
            and (c.get("metadata", {}).get("nbgrader", {}).get("solution") or c.get("id") not in released)
        ]
        with ProbeServer(
            socket_path,
            step,
            answer_seconds=limits.cell_wall + 30,
            sources=student_code,
            case_key=case_key(),
            program=student_program(nb, released),
            submission=submitted,
        ) as server:
            env = kernel_environment(job.threads, workdir, socket_path, course_env)
            outcome = asyncio.run(
                execute(nb, workdir, env, sandbox, limits, hooks=server, template=template, allowance=job.allowance)
            )
            cells = judge_notebook(nb, server, scratch)
            run_json = nbformat.writes(nb)  # the run as it was, for the instructor alone (Store.run_file)
            conceal_after_hidden_inputs(
                nb,
                server.checks,
                cells,
                handed_in,
                (limits.output_bytes, limits.notebook_output_bytes),
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return NotebookResult(
        student=job.student,
        notebook=job.notebook,
        key=job.key,
        notebook_json=nbformat.writes(nb),
        run_json=run_json,
        cells=[bounded_cell(c) for c in cells],
        notes=[clip(n) for n in notes + outcome.events],
        events=[clip(e) for e in outcome.events],
        seconds=round(time.monotonic() - started, 2),
        kernel_starts=outcome.kernel_starts,
        sandbox=sandbox.name,
        kernels=outcome.kernels,
        # the time its cells used (CPU, counted as its limits are) and the cells a limit stopped;
        # per kernel, the highest memory and process count of its control group
        cpu_seconds=outcome.cpu_seconds,
        metered=outcome.metered,
        stopped=outcome.stopped,
        kernel_peaks=outcome.peaks,
        worker_peak_bytes=_peak_memory(),
        # the student's time budget: what this notebook was left of it, what it counted, whether it ran
        # out here (autograder/kernel/budget.py); the cell that waited longest (Limits.cell_wait_timeout) and
        # the one that used most CPU (Limits.cell_timeout)
        budget=Budget(
            allowance=None if job.allowance is None else round(job.allowance, 2),
            used=outcome.counted_seconds,
            ran_out=outcome.budget_ran_out,
        ),
        longest_wait=outcome.longest_wait,
        heaviest_cell=outcome.heaviest_cell,
        largest_message_bytes=outcome.largest_message,
    )


def student_program(nb, released: set) -> list[tuple[str | None, str | None]]:
    """The graded notebook's code cells in the order they run: (the text, if the student wrote it: an
    answer cell, a live Python box kept as the student left it (intake/assemble.py), a cell the student added;
    else None), and the grade id of each hidden test cell (else None). A process check reads what the
    student's cells bound before its own cell runs (ProbeServer.code_before)."""
    program = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        written = bool(nbg.get("solution")) or cell.get("id") not in released or not nbg
        hidden = nbg.get("grade_id") if nbg.get("grade") and not nbg.get("solution") else None
        program.append((cell.source if written and not hidden else None, hidden))
    return program


def _reset_peak_memory() -> None:
    """This worker's peak memory (VmHWM) starts again from what it holds now: each result records
    the peak of its own notebook's grading (what a kernel's messages made the grader hold)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def _peak_memory() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        return None


def kernel_environment(threads: int, workdir: Path, socket_path: str, course_env: dict) -> dict:
    """The environment of a graded kernel on `threads` threads (before the sandbox keeps only what it passes
    on); also the warm template's, with the per-job parts (autograder/kernel/warm.py PER_JOB_ENV) left aside."""
    from ..course import kernel_env
    from ..runtime import GRADER_SOCKET

    env = kernel_env(
        {
            **course_env,
            GRADER_SOCKET: socket_path,
            "OMP_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads),
            # OpenMP's idle threads sleep instead of spinning between parallel regions (unless the grader's own
            # environment says otherwise): a kernel's spinning counts as its CPU time, against its cells' limits
            # and the student's budget, and changes no result (on 2 threads: 03-the-tests 6.3-6.9 CPU-s spinning,
            # 1.4-1.5 sleeping)
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY") or "PASSIVE",
            # numpy's OpenBLAS starts its threads when it is imported: one, so that a warm template (which
            # imports numpy and forks only while single-threaded) can fork whatever the job's thread count
            "OPENBLAS_NUM_THREADS": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "HOME": str(workdir),
            "PYTHONHASHSEED": "0",  # set and dict order of strings: the same in every run
        }
    )
    env.pop("JPY_PARENT_PID", None)
    for secret in GRADEBOOK_SECRETS:  # student code gets no way into the gradebook
        env.pop(secret, None)
    return env


def bounded_cell(cell: CellResult) -> CellResult:
    """A grade cell's record with its reason clipped (it may quote the student's error message)."""
    cell.error = clip(cell.error)
    return cell


# ---- in the main process -------------------------------------------------------------------

# What the workers' fork server imports, in this order: this module first (it leaves out rfc3987_syntax
# before anything imports nbformat), then the rest of the grader and every step's checks (worker.py).
WORKER_PRELOAD = ["autograder.grading.grade", "autograder.grading.worker"]


def worker_context():
    """Grading workers are forked from a fork server that has imported the grader and the steps'
    checks once (autograder/grading/worker.py); spawned, importing everything each, where there is none."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    return context


def start_worker(environ: dict, cwd: str) -> None:
    from .worker import start_worker as start

    start(environ, cwd)


def run_jobs(
    jobs: list[Job],
    workers: int,
    attempts: int = 3,
    meanwhile=None,
    budget: float | None = None,
    recorded: dict | None = None,
):
    """Run jobs in worker processes; yield (job, result dict) or (job, error text) as each is settled.
    Each student's notebooks share one time budget (`budget` seconds; `recorded`: {(student, notebook):
    seconds used} by results of an earlier run): a `Ledger` (autograder/kernel/budget.py) decides which job
    starts next and what it is allowed, so that a grade does not depend on the number of workers or the
    order they finish in; the job yielded carries its allowance.
    A worker that dies (a grader fault, never student code: that runs in kernels) takes only its
    own job down: the pool is rebuilt and unfinished jobs run again, up to `attempts` times.
    `meanwhile()` runs here while the first jobs are handed out (handing out the first one waits for
    the fork server's imports, seconds), before the first result is yielded; if it raises, the jobs not
    started are dropped and the error goes on."""
    import dataclasses
    import traceback
    from concurrent.futures.process import BrokenProcessPool

    from ..kernel.budget import Ledger
    from ..kernel.limits import Limits

    ledger = Ledger(jobs, Limits.student_budget if budget is None else budget, recorded or {})
    tries = {i: 0 for i in range(len(jobs))}
    context = worker_context()
    while not ledger.done():
        with cf.ProcessPoolExecutor(
            max_workers=max(1, min(workers, len(jobs))),
            mp_context=context,
            initializer=start_worker,
            initargs=(dict(os.environ), os.getcwd()),
        ) as pool:
            running: dict = {}

            def fill() -> None:
                while len(running) < workers:
                    nxt = ledger.next_job()
                    if nxt is None:
                        return
                    i, allowance = nxt
                    running[pool.submit(run_job, dataclasses.replace(jobs[i], allowance=allowance))] = i

            handing_out = _in_thread(fill)
            try:
                if meanwhile is not None:
                    meanwhile()
            except BaseException:
                handing_out.join()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            meanwhile = None
            handing_out.join()
            if handing_out.error is not None:
                raise handing_out.error
            broken = False
            while running:
                done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    i = running.pop(future)
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        if not broken:
                            _sweep_after_dead_workers()
                        broken = True
                        tries[i] += 1
                        if tries[i] < attempts:
                            ledger.retry(i)
                            continue
                        outcome = "its grading process died repeatedly"
                    except Exception as err:
                        traceback.print_exception(err, file=sys.stderr)
                        outcome = f"{type(err).__name__}: {err}"
                    for j, settled in ledger.finished(i, outcome):
                        yield dataclasses.replace(jobs[j], allowance=settled_allowance(settled)), settled
                if not broken:
                    fill()
        _sweep_after_dead_workers()


def settled_allowance(outcome) -> float | None:
    return outcome.budget.allowance if isinstance(outcome, NotebookResult) and outcome.budget else None


def _in_thread(fn):
    """Run `fn()` in a thread of its own; the thread (joined by the caller) has .error set if it raised."""
    import threading

    def target():
        try:
            fn()
        except BaseException as err:  # noqa: BLE001  (raised in the caller's thread)
            thread.error = err

    thread = threading.Thread(target=target, name="hand-out-jobs", daemon=True)
    thread.error = None
    thread.start()
    return thread


def _sweep_after_dead_workers() -> None:
    """What grading workers that died (or ended) left behind: their control groups, their templates',
    jobs' and relays' folders (autograder/kernel/leftovers.py)."""
    from ..kernel import cgroups, leftovers

    found = cgroups.cgroups()
    if found is not None:
        found.sweep()
    leftovers.sweep()


def grade(
    step: Step,
    submissions: Path,
    workers: int | None = None,
    force: bool = False,
    sandbox: str = "auto",
    feedback: bool = True,
    limits: dict | None = None,
    quiet: bool = False,
    shard: tuple[int, int] | None = None,
    students: list[str] | None = None,
    kernels: str = "warm",
) -> dict:
    """Grade every submission of `step` under `submissions` (or only shard (I, N) of the students, or
    only `students`); return {'results': [...], 'problems': [...]}. kernels: "warm" (forked from a
    template per worker where it can, else cold: said on screen) or "cold" (a fresh kernel per notebook)."""
    from ..kernel import cgroups
    from ..kernel.limits import descriptors_problem
    from ..kernel.sandbox import resolve_sandbox
    from ..shards import available_cores, selector

    if students:  # as ids are (`ü ñ` is `ü-ñ`; NFC, whatever form the terminal typed)
        students = [_requested_id(s) for s in students]
    only, requested = selector(shard, students), students
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    use_environment_tools()
    grader_home().mkdir(parents=True, exist_ok=True)  # a new $GRADER_HOME: the gradebook goes there
    url = db_url()
    sandbox = resolve_sandbox(sandbox)
    groups = cgroups.resolve()  # a control group per kernel, or a warning (once per run)
    from ..kernel import leftovers

    leftovers.sweep()  # the folders of grading workers that died in an earlier run
    from ..lms.roster import lms_ids, save_lms_ids

    roster_ids = lms_ids()
    received = collect(Path(submissions), step.notebooks(), only=only, roster_ids=roster_ids)
    part = (f" (shard {shard[0]} of {shard[1]})" if shard else "") + (
        f" (students: {', '.join(sorted(students))})" if students else ""
    )
    kernels = _kernels_for(kernels, sandbox)
    say(
        f"grade: {step.name}: {len(received)} files from {submissions}{part}; sandbox: {sandbox}; kernels: {kernels}; "
        f"limits per kernel: {'cgroup v%d' % groups.version if groups else 'per process only'}"
    )

    # keep the newest readable copy of each (student, notebook); report every other file
    chosen, problems = pick_newest(received)
    students = sorted({s for s, _ in chosen} | {p["student"] for p in problems if p["student"] != NO_ID})
    cores = available_cores()
    workers = workers or cores
    if descriptors_problem(workers):
        print(f"WARNING: {descriptors_problem(workers)}", file=sys.stderr, flush=True)
    plan = Plan(step, url, sandbox, threads=max(1, cores // workers), limits=dict(limits or {}), kernels=kernels)
    # one time per student's submission: from nbgrader's timestamp.txt, else the file time (an LMS's
    # late mark taken into account: autograder/term.py)
    from ..term import notebook_times, submission_times

    submitted_at, time_sources = submission_times(chosen, step.name)
    plan.store.save_times(step.name, time_sources, notebook_times(chosen, submitted_at))
    save_lms_ids(chosen, grader_home(), step.name)
    plan.keep_received(chosen, force, submitted_at)

    def set_up_gradebook():  # while the workers start and grade: only recording needs the gradebook
        gradebook.ensure_gradebook(url, step)
        plan.record_missing(students, chosen, problems)

    started = time.monotonic()
    if plan.jobs:
        say(
            f"grade: {len(plan.jobs)} notebooks to grade with {workers} worker{'s' * (workers > 1)}"
            f" ({len(plan.results)} already recorded)"
        )
        plan.run(workers, submitted_at, say, meanwhile=set_up_gradebook)
    else:
        set_up_gradebook()
    plan.store.stamp_submissions(step.name, submitted_at)
    plan.store.apply_term(step.name, sorted(students))  # due date, extensions, late penalties in the gradebook
    seconds = time.monotonic() - started
    if kernels == "warm" and plan.jobs:
        started_as = [r.kernels for r in plan.results if r.key not in (MISSING, FAILED)]
        say(f"kernels: {started_as.count('warm')} notebooks in warm kernels, {started_as.count('cold')} in cold ones")
    # by student and notebook, not in the order the workers finished: the same for every run; a grader's
    # scores count in this run's table and reports too (the store's one record)
    current = plan.store.load(step, students) if students else []
    if feedback and students:
        _note_feedback_failures(current, write_feedback(step, students, quiet=quiet, only_these=only is not None), say)
    if only is None:
        from ..publish.report import write_reports

        write_reports(step, current, problems, say=say)
    else:
        _write_shard_record(step, shard, requested, students, problems, current, len(plan.jobs), workers, seconds, say)
    return {"results": [r.to_json() for s in current for r in s.notebooks.values()], "problems": problems}


@dataclass
class Plan:
    """One grading run of a step: the notebooks to grade (jobs) and the results already known."""

    step: Step
    url: str
    sandbox: str
    threads: int
    limits: dict
    kernels: str = "warm"
    jobs: list[Job] = field(default_factory=list)
    results: list[NotebookResult] = field(default_factory=list)
    store: Store = field(default_factory=Store.current)

    def keep_received(self, chosen: dict, force: bool, submitted_at: dict[str, float]) -> None:
        """Store each chosen notebook in submitted/ (unmodified) and plan a job for each one not
        graded yet with this grader.

        One time stamp per student's submission (`submitted_at`), the same in submitted/,
        autograded/ and the gradebook: nbgrader's formgrader shows a submission whose stamps differ
        as "needs autograding"."""
        from ..checks.casekey import case_key, key_fingerprint

        # the course's case key: made here, on first grading, before any kernel runs; a new key regrades
        fingerprint = self.step.fingerprint() + key_fingerprint(case_key())
        reused: list[tuple[NotebookResult, Job]] = []
        for (sid, name), item in sorted(chosen.items()):
            path = self.store.submitted(sid, self.step.name) / f"{name}.ipynb"
            if not path.exists() or path.read_bytes() != item.data:
                atomic_write(path, item.data)
            stamp = datetime.fromtimestamp(submitted_at[sid], tz=timezone.utc)
            atomic_write(path.parent / "timestamp.txt", stamp.strftime(STAMP_FORMAT))
            # a result depends on the submission, the grader and the limits it ran under (other than the defaults)
            limits = json.dumps(self.limits, sort_keys=True).encode() if self.limits else b""
            key = hashlib.sha256(item.data + fingerprint.encode() + limits).hexdigest()
            job = Job(
                self.step.name,
                str(self.step.root),
                sid,
                name,
                str(path),
                key,
                self.sandbox,
                self.threads,
                dict(self.limits),
                self.kernels,
            )
            previous = None if force else self.store.result(self.step.name, sid, name)
            if previous is not None and previous.key == key:
                reused.append((previous, job))
                continue
            self.jobs.append(job)
        # a notebook the student's time budget stopped depends on what the student's other notebooks
        # used: if one of them is graded again, so is it (autograder/kernel/budget.py)
        regraded = {job.student for job in self.jobs}
        for previous, job in reused:
            if job.student in regraded and previous.budget is not None and previous.budget.ran_out:
                self.jobs.append(job)
            else:
                self.results.append(previous)
        self.jobs.sort(key=lambda job: (job.student, job.notebook))

    def record_missing(self, students: list[str], chosen: dict, problems: list[dict]) -> None:
        """Notebooks a student did not hand in (or handed in unreadable) score zero, with the reason."""
        missing = [(sid, name) for sid in students for name in self.step.notebooks() if (sid, name) not in chosen]
        if not missing:
            return
        with gradebook.opened(self.url) as gb:
            for sid, name in missing:
                bad = [p for p in problems if p["student"] == sid and p["notebook"] == name]
                other = [p for p in problems if p["student"] == sid and p["notebook"] is None and not p.get("notice")]
                if bad:
                    reason = f"{bad[-1]['file']}: {bad[-1]['problem']}"
                elif other:
                    reason = "not submitted; files of this student that were not used: " + "; ".join(
                        f"{p['file']}: {p['problem']}" for p in other
                    )
                else:
                    reason = "not submitted"
                self.results.append(self.store.record_unreadable(self.step.name, sid, name, reason, MISSING, gb))

    def run(self, workers: int, submitted_at: dict[str, float], say, meanwhile=None) -> None:
        """Grade the jobs in worker processes; record each result as it comes, with a progress line
        (`meanwhile()`: run once the jobs are handed out, before the first is recorded)."""
        from ..kernel.limits import Limits

        started, done = time.monotonic(), 0
        budget = float(self.limits.get("student_budget", Limits.student_budget))
        recorded = {(r.student, r.notebook): r.budget.used if r.budget else 0.0 for r in self.results}
        for job, outcome in run_jobs(self.jobs, workers, meanwhile=meanwhile, budget=budget, recorded=recorded):
            if isinstance(outcome, NotebookResult):
                self.store.record(self.step.name, outcome, submitted_at[job.student])
                outcome.notebook_json = outcome.run_json = None  # recorded: the notebooks are in their own files
                result = outcome
            else:  # a fault of the grader itself: zero with the reason, retried by the next run
                result = self.store.record_unreadable(
                    self.step.name,
                    job.student,
                    job.notebook,
                    f"the grader failed on this notebook ({outcome}); rerun `make grade` to retry it",
                    FAILED,
                )
            self.results.append(result)
            done += 1
            eta = (time.monotonic() - started) / done * (len(self.jobs) - done)
            say(
                f"  {progress_bar(done, len(self.jobs))} {job.student:<16} {job.notebook:<28} "
                f"{result.earned:5.1f} pts  {result.seconds:5.1f} s   left ~{clock(eta)}"
            )


def _kernels_for(kernels: str, sandbox: str) -> str:
    """The kernels a run uses: as asked, except warm where they cannot be had (then cold, and why)."""
    if kernels not in ("cold", "warm"):
        raise UsageError(
            f"unknown kind of kernels {kernels!r}: cold (a fresh kernel per notebook) or warm "
            "(forked from a template that has imported the course's modules)"
        )
    from ..kernel.warm import why_cold

    reason = why_cold(sandbox) if kernels == "warm" else ""
    if reason:
        print(f"grade: kernels: cold, not warm: {reason}", file=sys.stderr, flush=True)
        return "cold"
    return kernels


def _write_shard_record(
    step: Step, shard, requested, students, problems, current, graded: int, workers: int, seconds: float, say
) -> None:
    """One piece of the class: its record for the merge (`python -m autograder report`)."""
    from ..publish.report import table
    from ..shards import shard_file, shard_label

    atomic_write(
        shard_file(step, shard_label(shard, requested)),
        json.dumps(
            {
                "shard": list(shard) if shard else None,
                "students": sorted(students),
                "problems": problems,
                "notebooks_graded": graded,
                "workers": workers,
                "grading_seconds": round(seconds, 1),
            },
            indent=1,
        ),
    )
    if current:
        say(
            "\n"
            + table([r for s in current for r in s.notebooks.values()], step, {s.student: s.totals for s in current})
        )
    say(
        f"\ngrade: {len(students)} students of this part graded; when every part is done, "
        f"`python -m autograder report --step {step.name}` writes the step's reports for the whole class"
    )


def _requested_id(name: str) -> str:
    from ..names import UnusableId, student_id

    try:
        return student_id(name)
    except UnusableId as err:
        raise UsageError(f"--students: {name!r} cannot be a student id: {err}") from None


def progress_bar(done: int, total: int, width: int = 20) -> str:
    """`[########------------]  8/20`: one line per graded notebook, readable in a cluster job's log."""
    filled = width * done // max(total, 1)
    return f"[{'#' * filled}{'-' * (width - filled)}] {done:>{len(str(total))}}/{total}"


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


def write_feedback(step: Step, students: list[str], quiet: bool = False, only_these: bool = False) -> list[dict]:
    """Feedback HTML for every graded student (nbgrader generate_feedback, hidden tests stripped).
    only_these: for `students` alone (one shard of a class), through a folder that shows nbgrader
    only their autograded notebooks; the other shards' feedback is left alone.

    One nbgrader run writes the class's feedback. A notebook it cannot turn into HTML makes nbgrader
    drop that student's whole feedback and fail: then each notebook of those students is written
    alone, and the ones that still fail are returned, [{student, notebook, problem}], for the reports.
    """
    from ..nbgrader_cmd import NbgraderError, run_nbgrader

    home = grader_home()
    failures: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="feedback-") as view:
        autograded = home / "autograded"
        if only_these:
            autograded = Path(view)
            for sid in students:
                if (home / "autograded" / sid).is_dir():
                    (autograded / sid).symlink_to(home / "autograded" / sid)
        if not any(autograded.glob(f"*/{step.name}/*.ipynb")):  # nbgrader fails on nothing to do
            if not quiet:
                print("feedback: no graded notebook (every file unreadable or missing): no feedback to write")
            return failures
        args = [
            "generate_feedback",
            step.name,
            "--force",
            f"--CourseDirectory.autograded_directory={autograded}",
            f"--CourseDirectory.feedback_directory={home / 'feedback'}",
        ]
        try:
            run_nbgrader(*args, root=step.root, db_url=db_url())
        except NbgraderError as err:
            if not quiet:
                print(
                    f"feedback: nbgrader failed ({_last_error(str(err))}); the notebooks without feedback "
                    "are written one at a time"
                )
            for sid in students:
                for graded in sorted((autograded / sid / step.name).glob("*.ipynb")):
                    if (home / "feedback" / sid / step.name / f"{graded.stem}.html").exists():
                        continue
                    try:
                        run_nbgrader(
                            *args,
                            f"--CourseDirectory.student_id={sid}",
                            f"--CourseDirectory.notebook_id={graded.stem}",
                            root=step.root,
                            db_url=db_url(),
                        )
                    except NbgraderError as one:
                        failures.append({"student": sid, "notebook": graded.stem, "problem": _last_error(str(one))})
    if not quiet:
        print(
            f"feedback: HTML for {len(students)} students under {_show(home / 'feedback')}/"
            + (f", except {len(failures)} notebooks" if failures else "")
        )
    return failures


def _last_error(log: str) -> str:
    """The exception a failed nbgrader run ended with, from its log."""
    found = re.findall(r"^\s*((?:[\w.]+\.)?\w*(?:Error|Exception|InvalidNotebook)\b:?.*)$", log, flags=re.M)
    return clip(found[-1].strip() if found else "nbgrader generate_feedback failed", 500)


def _note_feedback_failures(students: list[StudentResult], failures: list[dict], say) -> None:
    """Each notebook whose feedback could not be written: a note in the reports and a line on screen."""
    by_id = {s.student: s for s in students}
    for failure in failures:
        note = f"its feedback HTML could not be written: {failure['problem']}"
        say(f"feedback: {failure['student']}/{failure['notebook']}: {note}")
        result = by_id[failure["student"]].notebooks.get(failure["notebook"]) if failure["student"] in by_id else None
        if result is not None:
            result.notes = [*result.notes, note]


def _show(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def refresh_from_gradebook(
    step: Step, quiet: bool = False, feedback: bool = True, only: list[str] | None = None
) -> list[StudentResult]:
    """After manual grading (formgrader): feedback HTML and reports again, with the graders' scores.
    Also the merge after a class graded in shards (`python -m autograder report`): every student in
    the gradebook is reported, also one whose grader's result files are not in this grader home.

    only: the feedback of these students alone is written again (refresh_stale_feedback), with that of
    every student a page is missing for (its feedback failed before: written again, so the reports keep
    naming the failure); the other students' pages are left as they are. The reports are the class's."""
    from ..publish.report import write_reports
    from ..shards import shard_problems

    store = Store.current()
    store.apply_term(step.name)  # manual scores change a notebook's score, and so its late penalty
    students = store.load(step)
    if feedback and (store.home / "autograded").is_dir():
        if only is None:
            written = write_feedback(step, [s.student for s in students], quiet=quiet)
        else:
            again = set(only) | set(missing_feedback(step, [s.student for s in students]))
            written = write_feedback(step, [s.student for s in students if s.student in again], quiet, only_these=True)
        _note_feedback_failures(students, written, (lambda *a: None) if quiet else print)
    write_reports(step, students, shard_problems(step), say=(lambda *a: None) if quiet else print)
    return students


def stale_feedback(step: Step) -> list[str]:
    """The students whose feedback pages show other totals than the gradebook holds now (a grader
    scored a written answer in the formgrader after the pages were written)."""
    from ..publish.feedback import feedback_summary

    store = Store.current()
    stale = []
    for now in store.load(step):
        folder = store.feedback(now.student, step.name)
        if not folder.is_dir():
            continue
        shown = feedback_summary(folder)
        if (
            shown is None
            or shown.get("step_totals") != json.loads(json.dumps(now.totals["step"]))
            or shown.get("notebooks") != json.loads(json.dumps(now.totals["notebooks"]))
        ):
            stale.append(now.student)
    return stale


def missing_feedback(step: Step, students: list[str]) -> list[str]:
    """The students among `students` with an autograded notebook of `step` that has no feedback page."""
    home = grader_home()
    return [
        sid
        for sid in students
        if any(
            not (home / "feedback" / sid / step.name / f"{graded.stem}.html").is_file()
            for graded in (home / "autograded" / sid / step.name).glob("*.ipynb")
        )
    ]


def refresh_stale_feedback(step: Step, say=print) -> list[str]:
    """Feedback and reports written again when a grader's score is not in them yet: returning
    feedback never hands back an older total than the gradebook, the export and the table show.
    Only the stale students' pages are written again (and those of a student a page is missing for):
    one answer scored in a class of hundreds rewrites that student's pages, not the class's."""
    stale = stale_feedback(step)
    if stale:
        say(
            f"feedback: {len(stale)} students' pages are older than their scores in the gradebook "
            f"({', '.join(stale[:10])}{' ...' if len(stale) > 10 else ''}): written again"
        )
        refresh_from_gradebook(step, quiet=True, only=stale)
    return stale
