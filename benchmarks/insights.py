"""The class report (`make insights`) for a large class: a synthetic class (tests/insights_class.py:
proof-corpus entries given to N students, written into a grader home as the store writes them), then
the time to read it back (`Store.load`: every result file, the gradebook's submissions and terms, the
totals) and the time to build the report from those records (item analysis, review cells,
misconception groups, per-notebook rows: the page and its four CSVs written). Median over repeats.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT

STUDENTS = 500


def measure(students: int = STUDENTS, repeats: int = 3, say=print) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from insights_class import build_class
    from proof_corpus import CORRECT, UNDECIDED, WRONG

    from autograder.publish.insights import build_report
    from autograder.records.store import Store
    from autograder.steps import find_step

    step = find_step("step-04")
    with tempfile.TemporaryDirectory(prefix="bench-insights-") as tmp:
        home = Path(tmp) / "grader"
        home.mkdir()
        started = time.perf_counter()
        known = build_class(home, step.release, step.name, students, WRONG, UNDECIDED, CORRECT)
        setup = time.perf_counter() - started
        store = Store(home, f"sqlite:///{home / 'gradebook.db'}")
        loads, builds, load_cpu, build_cpu = [], [], [], []
        for _ in range(repeats):
            started, cpu = time.perf_counter(), time.process_time()
            loaded = store.load(step)
            loads.append(time.perf_counter() - started)
            load_cpu.append(time.process_time() - cpu)
            started, cpu = time.perf_counter(), time.process_time()
            report, paths = build_report(step, store, students=loaded)
            builds.append(time.perf_counter() - started)
            build_cpu.append(time.process_time() - cpu)
        size = sum(p.stat().st_size for p in paths)
        out = {
            "students": len(loaded),
            "notebooks": sum(len(s.notebooks) for s in loaded),
            "cells": sum(len(r.cells) for s in loaded for r in s.notebooks.values()),
            "groups": len(report.groups),
            "review": len(report.review),
            "items": len(report.items),
            "known_groups": len(known.groups),
            "setup": setup,
            "load": loads,
            "build": builds,
            "load_cpu": load_cpu,
            "build_cpu": build_cpu,
            "page_bytes": paths[0].stat().st_size,
            "bytes": size,
        }
    say(
        f"insights: {out['students']} students: load {statistics.median(loads):.2f} s "
        f"({statistics.median(load_cpu):.2f} s CPU), build {statistics.median(builds):.2f} s "
        f"({statistics.median(build_cpu):.2f} s CPU)"
    )
    return out


def section(r: dict) -> list[str]:
    from common import fmt, stats

    return [
        f"A synthetic class of {r['students']} students (tests/insights_class.py: proof-corpus entries given "
        f"to each, their judged outcomes written into a grader home as the store writes them; written in "
        f"{r['setup']:.1f} s, not timed below): {r['notebooks']} notebooks, {r['cells']} graded cells, "
        f"{r['groups']} misconception groups, {r['review']} cells waiting for review, {r['items']} items. "
        "*load*: `Store.load` (every result file, the gradebook's submissions and term records, the "
        "totals); *build*: the report from those records, the page "
        f"({r['page_bytes'] / 1024:.0f} KiB) and its CSVs written. Wall-clock seconds, median (min–max, n), "
        "and the process's CPU seconds (median), which a shared machine's load changes less.",
        "",
        "| students | load: s | build: s | total: s | load: CPU s | build: CPU s |",
        "|---|---|---|---|---|---|",
        f"| {r['students']} | {fmt(stats(r['load']))} | {fmt(stats(r['build']))} | "
        f"{statistics.median(r['load']) + statistics.median(r['build']):.2f} | "
        f"{_median(r, 'load_cpu')} | {_median(r, 'build_cpu')} |",
    ]


def _median(r: dict, key: str) -> str:
    return f"{statistics.median(r[key]):.2f}" if r.get(key) else "–"
