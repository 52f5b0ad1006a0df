"""What the bwrap sandbox costs per graded notebook.

    python benchmarks/sandbox_overhead.py [--repeats 5] [--students 4] [--starts 10] [--batches 2]

1. Kernel starts: a one-cell notebook (`1 + 1`) executed with each sandbox, --starts times:
   the sandbox's own cost (bwrap, the scratch folder, the uid switch), without a notebook around it.
2. Notebooks: every notebook of a small class (every notebook of the step; half the students with
   every answer, half with the release) graded --repeats times with each sandbox by the function
   the grader's workers run (autograder.grading.grade.run_job: assemble, kernel start, every cell, the
   hidden checks judged), one notebook at a time.
3. Batches: the same class graded end to end with autograder.grading.grade.grade (--force, gradebook and
   reports included), --batches times with each sandbox.
Runs alternate between the sandboxes (none, bwrap, bwrap, none, ...) so that a change in the
machine's load hits both alike. For each part: the median, the spread (min-max and interquartile
range), the median overhead and the ratio bwrap/none. Nothing is asserted: the numbers depend on
the machine and on whatever else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SANDBOXES = ("none", "bwrap")


def alternate(i: int) -> tuple[str, str]:
    return SANDBOXES if i % 2 == 0 else SANDBOXES[::-1]


def build_class(folder: Path, students: int) -> list[tuple[str, str, Path]]:
    """[(student, notebook, path)] of a class written into `folder`."""
    from common import bench_step

    step = bench_step()
    from autograder.example import filled

    out = []
    for i in range(students):
        sid = f"student{i:02d}"
        (folder / sid).mkdir(parents=True)
        for name in step.notebooks():
            nb = (
                filled(step, name, lambda cid, pos: True)
                if i % 2 == 0
                else json.loads((step.release / f"{name}.ipynb").read_text(encoding="utf-8"))
            )
            path = folder / sid / f"{name}.ipynb"
            path.write_text(json.dumps(nb), encoding="utf-8")
            out.append((sid, name, path))
    return out


def kernel_starts(count: int) -> dict[str, list[float]]:
    import asyncio

    import nbformat

    from autograder.course import kernel_env
    from autograder.kernel.execute import Limits, execute
    from autograder.kernel.sandbox import make_sandbox

    times: dict[str, list[float]] = {s: [] for s in SANDBOXES}
    for i in range(count):
        for choice in alternate(i):
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
            scratch = Path(tempfile.mkdtemp(prefix="grade-"))
            try:
                (scratch / "work").mkdir()
                started = time.monotonic()
                box = make_sandbox(choice, scratch)
                env = kernel_env({"HOME": str(scratch / "work"), "PYTHONHASHSEED": "0"})
                env.pop("JPY_PARENT_PID", None)
                outcome = asyncio.run(execute(nb, scratch / "work", env, box, Limits()))
                assert outcome.kernel_starts == 1 and not outcome.events, outcome.events
                times[choice].append(time.monotonic() - started)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return times


def notebooks(cls: list, repeats: int) -> dict[str, list[float]]:
    from autograder.grading.grade import Job, run_job
    from common import bench_step

    step = bench_step()
    times: dict[str, list[float]] = {s: [] for s in SANDBOXES}
    threads = os.cpu_count() or 1
    for r in range(repeats):
        for k, (sid, name, path) in enumerate(cls):
            for choice in alternate(r + k):
                started = time.monotonic()
                result = run_job(Job(step.name, str(step.root), sid, name, str(path), "bench", choice, threads))
                times[choice].append(time.monotonic() - started)
                assert result.sandbox == choice
    return times


def batches(folder: Path, home: Path, count: int) -> dict[str, list[float]]:
    from autograder.grading.grade import grade
    from common import bench_step

    times: dict[str, list[float]] = {s: [] for s in SANDBOXES}
    for i in range(count):
        for choice in alternate(i):
            os.environ["GRADER_HOME"] = str(home / choice)
            started = time.monotonic()
            out = grade(bench_step(), folder, workers=1, force=True, sandbox=choice, feedback=False, quiet=True)
            times[choice].append(time.monotonic() - started)
            assert all(r.get("sandbox") == choice for r in out["results"])
    return times


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 4:
        return min(values), max(values)
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def summary(title: str, values_by_sandbox: dict[str, list[float]], unit: str) -> None:
    print(f"\n{title}")
    print(f"  {'sandbox':<8}{'median':>9}{'min':>8}{'max':>8}{'IQR':>16}{'n':>5}   ({unit})")
    medians = {}
    for choice, values in values_by_sandbox.items():
        lo, hi = quartiles(values)
        medians[choice] = statistics.median(values)
        print(
            f"  {choice:<8}{medians[choice]:9.2f}{min(values):8.2f}{max(values):8.2f}"
            f"{f'{lo:.2f}-{hi:.2f}':>16}{len(values):5d}"
        )
    # paired: runs i of both sandboxes were made back to back
    diffs = [b - a for a, b in zip(values_by_sandbox["none"], values_by_sandbox["bwrap"])]
    lo, hi = quartiles(diffs)
    print(
        f"  overhead bwrap - none: {medians['bwrap'] - medians['none']:+.2f} s (difference of the medians); "
        f"paired runs: median {statistics.median(diffs):+.2f} s, IQR {lo:+.2f} to {hi:+.2f} s; "
        f"ratio of the medians {medians['bwrap'] / medians['none']:.2f}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=10, help="kernel starts per sandbox (0: skip)")
    parser.add_argument("--repeats", type=int, default=5, help="times each notebook is graded per sandbox")
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--batches", type=int, default=2, help="whole batches per sandbox (0: skip)")
    args = parser.parse_args(argv)

    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's gradebook: noisy and harmless
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    os.environ.pop("NBGRADER_DB_URL", None)
    from autograder.kernel.sandbox import bwrap_problem

    if bwrap_problem():
        print(f"bwrap is not usable here: {bwrap_problem()}")
        return 1
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the start")

    if args.starts:
        summary(
            f"1. kernel starts ({args.starts} per sandbox): start, run `1 + 1`, stop",
            kernel_starts(args.starts),
            "seconds per kernel start",
        )
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as tmp:
        tmp = Path(tmp)
        cls = build_class(tmp / "class", args.students)
        if args.repeats:
            summary(
                f"2. notebooks ({len(cls)} notebooks x {args.repeats} repeats per sandbox, one at a time)",
                notebooks(cls, args.repeats),
                "seconds per notebook, kernel start to verdict",
            )
        if args.batches:
            times = batches(tmp / "class", tmp / "home", args.batches)
            summary(
                f"3. whole batches ({len(cls)} notebooks, one worker, {args.batches} per sandbox; "
                "gradebook and reports included)",
                times,
                "seconds per batch",
            )
            per = {k: [t / len(cls) for t in v] for k, v in times.items()}
            print(
                f"  per notebook: none {statistics.median(per['none']):.2f} s, "
                f"bwrap {statistics.median(per['bwrap']):.2f} s"
            )
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
