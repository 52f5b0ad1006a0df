"""Warm kernels (forked from a template, autograder/kernel/warm.py) against cold ones, per graded notebook.

    python benchmarks/warm_kernels.py [--notebook 02-the-head] [--repeats 10] [--sandbox bwrap|none]

The answered notebook (the solutions) is graded --repeats times each way, alternating (cold, warm,
warm, cold, ...) so that a change in the machine's load hits both alike, by the function the
grader's workers run (autograder.grading.grade.run_job: assemble, kernel start, every cell, the hidden
checks judged), in the sandbox (default: bwrap when it works here, else none) with one thread.
The template's own start (its imports, paid once per worker) is timed apart, before the first
warm notebook. Both ways must give the same scores. Nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYTHONPATH", str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notebook", default="02-the-head")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sandbox", default="auto", help="bwrap, none or auto")
    args = parser.parse_args()
    sys.modules.setdefault("rfc3987_syntax", None)
    from autograder.kernel.sandbox import resolve_sandbox

    box = resolve_sandbox(args.sandbox)
    from autograder.example import filled
    from autograder.grading.grade import Job, run_job
    from common import bench_step

    step = bench_step()
    from autograder.kernel import warm

    with tempfile.TemporaryDirectory(prefix="warm-bench-") as tmp:
        path = Path(tmp) / f"{args.notebook}.ipynb"
        path.write_text(json.dumps(filled(step, args.notebook, lambda cid, i: True)), encoding="utf-8")
        # the template's start, once: the first warm job starts it and waits for its imports
        started = time.monotonic()
        first = run_job(
            Job(step.name, str(step.root), "bench", args.notebook, str(path), "bench", box, 1, kernels="warm")
        )
        first_seconds = time.monotonic() - started
        times: dict[str, list[float]] = {"cold": [], "warm": []}
        scores: dict[str, set] = {"cold": set(), "warm": set()}
        for r in range(args.repeats):
            for kind in ("cold", "warm") if r % 2 == 0 else ("warm", "cold"):
                started = time.monotonic()
                result = run_job(
                    Job(step.name, str(step.root), "bench", args.notebook, str(path), "bench", box, 1, kernels=kind)
                )
                times[kind].append(time.monotonic() - started)
                assert result.kernels == kind, (kind, result.events)
                scores[kind].add(tuple((c.grade_id, c.score) for c in result.cells))
        for template in warm._templates.values():
            template.close()
    assert scores["cold"] == scores["warm"] and len(scores["cold"]) == 1, scores
    print(f"{args.notebook}, answered, graded by run_job, sandbox {box}, 1 thread, {args.repeats} times each way")
    print(f"  first warm notebook, template start included: {first_seconds:.2f} s ({first['kernels']})")
    print(f"  {'kernels':<8}{'median':>9}{'min':>8}{'max':>8}   (seconds per notebook)")
    for kind, values in times.items():
        print(f"  {kind:<8}{statistics.median(values):9.2f}{min(values):8.2f}{max(values):8.2f}")
    ratio = statistics.median(times["cold"]) / statistics.median(times["warm"])
    print(
        f"  cold / warm (medians): {ratio:.2f}x; the same scores both ways: "
        f"{sum(s for _, s in next(iter(scores['warm'])) if s is not None):.1f} points"
    )


if __name__ == "__main__":
    main()
