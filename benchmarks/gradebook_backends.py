"""Grading the same class into a SQLite gradebook and into a PostgreSQL one: what each costs, and
what one core grades per hour (the figures behind the README's cluster throughput).

    python benchmarks/gradebook_backends.py [--workers 2] [--rounds 1] [--records 3]

1. Grade: the example class (ada: every answer; blank: the release; half: half the answers; every
   notebook of the step) graded end to end by autograder.grading.grade.grade (gradebook, reports, feedback
   HTML), once per backend per round, alternating (sqlite, postgres, postgres, sqlite, ...) so that
   a change in the machine's load hits both alike. Per run: wall time, the CPU time of the grading
   processes and kernels (getrusage of waited-for children), notebooks graded.
2. Record: the gradebook's share alone: every graded notebook's scores written again
   (autograder.records.store.Store.record, as the grader does after each notebook), --records times per backend.
The PostgreSQL server is a throwaway one (tests/pgserver.py: initdb in a temporary folder).
Nothing is asserted: the numbers depend on the machine and on whatever else runs on it; the load
average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def grade_once(home: Path, url: str, workers: int) -> dict:
    from autograder.example import build
    from autograder.grading.grade import grade

    os.environ["GRADER_HOME"], os.environ["NBGRADER_DB_URL"] = str(home), url
    from common import bench_step

    step = bench_step()
    submissions = build(step, home / "class")
    cpu, wall = children_cpu(), time.monotonic()
    out = grade(step, submissions, workers=workers, force=True, quiet=True, feedback=False)
    graded_wall, graded_cpu = time.monotonic() - wall, children_cpu() - cpu
    from autograder.grading.grade import write_feedback

    students = sorted({r["student"] for r in out["results"]})
    start = time.monotonic()
    write_feedback(bench_step(), students, quiet=True)
    return {
        "notebooks": len(out["results"]),
        "students": len(students),
        "wall": graded_wall,
        "cpu": graded_cpu,
        "feedback_wall": time.monotonic() - start,
        "kernel_seconds": [r["seconds"] for r in out["results"]],
        "load": os.getloadavg()[0],
    }


def record_again(home: Path, url: str, times: int) -> float:
    """Seconds per notebook to write its scores into the gradebook again."""
    from autograder.records.store import Store

    os.environ["GRADER_HOME"], os.environ["NBGRADER_DB_URL"] = str(home), url
    from common import bench_step

    step = bench_step()
    store = Store(home, url)
    results = store.results(step.name)
    for result in results:
        result.notebook_json = (store.autograded(result.student, step.name) / f"{result.notebook}.ipynb").read_text()
    start = time.monotonic()
    for _ in range(times):
        for result in results:
            store.record(step.name, result, time.time())
    assert all(store.result_file(step.name, r.student, r.notebook).exists() for r in results)
    return (time.monotonic() - start) / (times * len(results))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--records", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    from autograder.course import use_environment_tools
    from pgserver import PostgresServer, missing_reason

    use_environment_tools()
    if missing_reason():
        print(f"cannot benchmark PostgreSQL: {missing_reason()}")
        return 2
    runs = {"sqlite": [], "postgres": []}
    record_seconds = {}
    scratch = Path(tempfile.mkdtemp(prefix="gb-bench-"))
    try:
        with PostgresServer() as pg:
            for n in range(args.rounds):
                order = ["sqlite", "postgres"] if n % 2 == 0 else ["postgres", "sqlite"]
                for backend in order:
                    home = scratch / f"{backend}-{n}"
                    url = (
                        f"sqlite:///{home / 'gradebook.db'}" if backend == "sqlite" else pg.create_database(f"bench{n}")
                    )
                    run = grade_once(home, url, args.workers)
                    runs[backend].append(run)
                    print(
                        f"{backend:>8} round {n}: {run['notebooks']} notebooks in {run['wall']:.1f} s wall, "
                        f"{run['cpu']:.1f} s CPU, feedback {run['feedback_wall']:.1f} s, load {run['load']:.1f}",
                        flush=True,
                    )
                    if n == 0:
                        record_seconds[backend] = record_again(home, url, args.records)
                        print(
                            f"{backend:>8}: writing one notebook's scores: {record_seconds[backend] * 1000:.0f} ms",
                            flush=True,
                        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n{args.workers} workers, {os.cpu_count()} cores on this machine")
    summary = {"workers": args.workers, "cores": os.cpu_count(), "record_seconds": record_seconds, "runs": runs}
    for backend, done in runs.items():
        wall = statistics.median(r["wall"] for r in done)
        cpu = statistics.median(r["cpu"] for r in done)
        nbs = done[0]["notebooks"]
        per_core = wall * args.workers / nbs
        summary[backend] = {
            "wall": wall,
            "cpu": cpu,
            "notebooks": nbs,
            "wall_seconds_per_notebook_per_core": per_core,
            "cpu_seconds_per_notebook": cpu / nbs,
            "feedback_seconds_per_student": statistics.median(r["feedback_wall"] / r["students"] for r in done),
        }
        print(
            f"{backend:>8}: {wall:6.1f} s wall for {nbs} notebooks = {per_core:.1f} s per notebook per core "
            f"(wall x workers / notebooks); {cpu / nbs:.1f} s CPU per notebook; "
            f"feedback {summary[backend]['feedback_seconds_per_student']:.1f} s per student; "
            f"gradebook write {record_seconds[backend] * 1000:.0f} ms per notebook"
        )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
