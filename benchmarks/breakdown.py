"""Where the time goes when one notebook is graded.

The function the grader's workers run (autograder.grading.grade.run_job) is timed phase by phase, with
timers wrapped around the grader's own functions (nothing in the grader changes):
  sandbox setup   making the sandbox (scratch folder, bind list) and its cleanup;
  kernel start    launching the kernel process until it answers (inside the sandbox for bwrap);
  torch import    the first code cell that imports torch (the handout's Head cell);
  provided cells  the other cells students do not write (pictures, visible checks...);
  student code    the answer cells;
  hidden probes   the hidden-test cells (the checks' probes, in the student's kernel);
  judging         the checks' judges, in the grader;
  rest            assembling the notebook, the probe server, writing the result.
Once per grading process (not per notebook): importing what the workers need (their fork server
does), and creating a new gradebook (`ensure_gradebook`, in process; against nbgrader
generate_assignment in a subprocess, the way it was done before).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, bench_step

from autograder.grading.grade import WORKER_PRELOAD

PHASES = [
    "sandbox setup",
    "kernel start",
    "torch import",
    "provided cells",
    "student code",
    "hidden probes",
    "judging",
    "rest",
    "total",
]

# what the workers' fork server imports (the grader's modules and every step's checks): autograder/grading/worker.py
WORKER_IMPORTS = "".join(f"import {module}\n" for module in WORKER_PRELOAD)


def _kind(cell) -> str:
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("grade"):
        return "hidden probes"
    if meta.get("solution"):
        return "student code"
    return "torch import" if "import torch" in cell.source else "provided cells"


def time_notebook(path: Path, notebook: str, sandbox: str, kernels: str = "warm") -> dict:
    """Grade one notebook with run_job, timing each phase; returns {phase: seconds}."""
    import autograder.kernel.execute as ex
    import autograder.grading.judging as judging
    import autograder.kernel.sandbox as sb
    from autograder.grading.grade import Job, run_job

    spent = {p: 0.0 for p in PHASES}
    seen_torch = []
    originals = (ex._start, ex._Client.async_execute_cell, judging.judge_notebook, sb.make_sandbox)

    async def start(*args, **kw):
        t = time.monotonic()
        try:
            return await originals[0](*args, **kw)
        finally:
            spent["kernel start"] += time.monotonic() - t

    async def execute_cell(self, cell, index, **kw):
        t = time.monotonic()
        try:
            return await originals[1](self, cell, index, **kw)
        finally:
            kind = _kind(cell)
            if kind == "torch import":
                if seen_torch:
                    kind = "provided cells"
                seen_torch.append(index)
            spent[kind] += time.monotonic() - t

    def judge(*args, **kw):
        t = time.monotonic()
        try:
            return originals[2](*args, **kw)
        finally:
            spent["judging"] += time.monotonic() - t

    def make_sandbox(choice, scratch, *args, **kwargs):
        t = time.monotonic()
        box = originals[3](choice, scratch, *args, **kwargs)
        spent["sandbox setup"] += time.monotonic() - t
        cleanup = box.cleanup

        def timed_cleanup(workdir):
            c = time.monotonic()
            try:
                cleanup(workdir)
            finally:
                spent["sandbox setup"] += time.monotonic() - c

        box.cleanup = timed_cleanup
        return box

    ex._start, ex._Client.async_execute_cell, judging.judge_notebook, sb.make_sandbox = (
        start,
        execute_cell,
        judge,
        make_sandbox,
    )
    try:
        t = time.monotonic()
        step = bench_step()
        result = run_job(
            Job(step.name, str(step.root), "bench", notebook, str(path), "bench", sandbox, 1, kernels=kernels)
        )
        spent["total"] = time.monotonic() - t
    finally:
        ex._start, ex._Client.async_execute_cell, judging.judge_notebook, sb.make_sandbox = originals
    spent["rest"] = spent["total"] - sum(spent[p] for p in PHASES if p not in ("rest", "total"))
    spent["points"] = result.earned
    spent["kernels"] = result.kernels
    return spent


def once_per_process(repeats: int) -> dict:
    """Seconds to import the grader in a new process, and to create a new gradebook."""
    imports, gradebook, with_iri, without_iri = [], [], [], []
    for r in range(repeats):
        t = time.monotonic()
        subprocess.run([sys.executable, "-c", WORKER_IMPORTS], cwd=ROOT, check=True)
        imports.append(time.monotonic() - t)
        # the effect of leaving out rfc3987_syntax (autograder/grading/grade.py), side by side
        for blocked in (False, True) if r % 2 == 0 else (True, False):
            code = ("import sys; sys.modules['rfc3987_syntax'] = None; " if blocked else "") + "import nbformat"
            t = time.monotonic()
            subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
            (without_iri if blocked else with_iri).append(time.monotonic() - t)
    by_subprocess = []
    from autograder.course import use_environment_tools
    from autograder.records.gradebook import ensure_gradebook
    from autograder.nbgrader_cmd import run_nbgrader

    use_environment_tools()
    for r in range(max(1, repeats // 2) * 2):
        with tempfile.TemporaryDirectory(prefix="bench-db-") as tmp:
            t = time.monotonic()
            if r % 2 == 0:  # the grader's way: in its own process (autograder/records/gradebook.py)
                ensure_gradebook(f"sqlite:///{tmp}/gradebook.db", bench_step())
                gradebook.append(time.monotonic() - t)
            else:  # the way it was done before: nbgrader generate_assignment in a subprocess
                step = bench_step()
                run_nbgrader(
                    "generate_assignment",
                    step.name,
                    "--force",
                    f"--CourseDirectory.release_directory={tmp}/release",
                    root=step.root,
                    db_url=f"sqlite:///{tmp}/gradebook.db",
                )
                by_subprocess.append(time.monotonic() - t)
    return {
        "worker imports": imports,
        "new gradebook": gradebook,
        "new gradebook, generate_assignment": by_subprocess,
        "import nbformat": with_iri,
        "import nbformat without rfc3987_syntax": without_iri,
    }


def measure(
    notebook: str, repeats: int, say=print, notebooks: list[str] | None = None, share_warm: bool = False
) -> dict:
    """The phases of one notebook graded in cold kernels and in warm ones, in the sandbox `make grade`
    picks, alternating; the warm template's own start (once per worker) timed apart, first; then every
    notebook of the step (or those of `notebooks`) once in warm kernels. `share_warm` (--quick): `notebook`
    is not graded again for that table, its last warm run above (the same grading, template started) is
    shown there."""
    from autograder.kernel import warm
    from autograder.example import filled
    from autograder.kernel.sandbox import resolve_sandbox

    sandbox = resolve_sandbox("auto")
    ways = ["cold", "warm"]
    out = {"notebook": notebook, "sandbox": sandbox, "ways": ways, "phases": {w: [] for w in ways}}
    with tempfile.TemporaryDirectory(prefix="bench-nb-") as tmp:
        path = Path(tmp) / f"{notebook}.ipynb"
        path.write_text(json.dumps(filled(bench_step(), notebook, lambda cid, i: True)), encoding="utf-8")
        say(f"  breakdown: {notebook}, the warm template's start")
        out["template start"] = time_notebook(path, notebook, sandbox, "warm")
        for r in range(repeats):
            for way in ways if r % 2 == 0 else ways[::-1]:
                say(f"  breakdown: {notebook}, sandbox {sandbox}, {way} kernels, run {r + 1} of {repeats}")
                out["phases"][way].append(time_notebook(path, notebook, sandbox, way))
        # every notebook of the step, answered, once in warm kernels: where a whole student's time goes
        out["notebooks"], out["every notebook"] = {}, notebooks is None
        for name in notebooks or bench_step().notebooks():
            if share_warm and name == notebook and out["phases"]["warm"]:
                out["notebooks"][name] = out["phases"]["warm"][-1]
                continue
            one = Path(tmp) / f"{name}.ipynb"
            one.write_text(json.dumps(filled(bench_step(), name, lambda cid, i: True)), encoding="utf-8")
            say(f"  breakdown: {name}, sandbox {sandbox}, warm kernels")
            out["notebooks"][name] = time_notebook(one, name, sandbox, "warm")
        warm.close_templates()
    say("  breakdown: once per process")
    out["once"] = once_per_process(repeats)
    return out
