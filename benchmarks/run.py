"""Run the course's benchmarks and rewrite BENCHMARKS.md (`make bench`).

    python benchmarks/run.py [--sizes 10,40,160] [--repeats 3] [--quick] [--out BENCHMARKS.md]

Parts (each also callable alone with --parts): throughput (grading a synthetic class: plain
nbgrader against `make grade`, warm and cold kernels), whole_step (a class handing in all six
notebooks, graded both ways), breakdown (where a notebook's grading time goes), student (each
notebook's run time, each slider's update), head (forward time and memory against T), commands
(the everyday commands `make steps/fetch/submit/collect/extensions/export`, beside the engine of
`--against REV`; `--parts commands` alone rewrites only its section of an existing BENCHMARKS.md), insights
(the class report of `make insights` for 500 synthetic students; `--parts insights` alone rewrites only
its section).
Nothing is asserted about speed: the figures depend on the machine and on whatever else runs on
it; ratios measured in the same run are what to compare. The raw figures also go to
artifacts/bench.json (not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, fmt, machine, stats  # noqa: E402

PARTS = ("throughput", "whole_step", "breakdown", "student", "head", "commands", "insights")
SOLUTION_TARGET = 10.0  # seconds, every solution notebook
SLIDER_TARGET = 0.200  # seconds, every slider update
# class throughput against plain nbgrader on 2 cores: (target, aim) per way of grading
THROUGHPUT_TARGETS = {"ours-2": (6.0, 10.0), "ours-1": (3.0, 3.0)}
SMALL_CLASS, SMALL_CLASS_TARGET = 10, 4.0  # a class this small, 2 workers: fixed costs weigh most


def mib(n: float) -> str:
    return f"{n / 2**20:.1f}"


def _fit(points: dict[int, float], size: int) -> float:
    """Seconds at `size`, by a straight line through the two largest measured sizes (or
    proportionally from one)."""
    xs = sorted(points)
    if len(xs) == 1:
        return points[xs[0]] / xs[0] * size
    a, b = xs[-2], xs[-1]
    slope = (points[b] - points[a]) / (b - a)
    return points[b] + slope * (size - b)


WHO = {
    "plain": "plain nbgrader",
    "ours-1": "ours, 1 worker",
    "ours-2": "ours, 2 workers",
    "ours-2-cold": "ours, 2 workers, cold kernels",
}


def throughput_section(t: dict) -> tuple[list[str], list[tuple[str, bool, str]]]:
    lines, verdicts = [], []
    sizes = sorted(int(s) for s in t["sizes"])
    who = [w for w in WHO if any(t["sizes"][s]["runs"].get(w) for s in sizes)]
    med = {w: {} for w in who}
    for size in sizes:
        for w, runs in t["sizes"][size]["runs"].items():
            if runs and w in med:
                med[w][size] = stats([r["seconds"] for r in runs])
    lines += [
        f"Each synthetic student hands in one notebook, `{t['notebook']}`, drawn round-robin from "
        f"{len(t['variants'])} submissions: the solutions and every proof-corpus variant of that notebook "
        f"({', '.join(t['variants'])}). Why this notebook: it is the step's central exercise, it has no "
        "slider (a slider cell can hang upstream nbclient for the whole cell timeout, nbclient issue 312; "
        "the whole step is graded in section 1b), and its cost per notebook (kernel, torch, the head's "
        "cells, hidden checks) is typical of the step.",
        "",
        "*plain nbgrader*: `nbgrader generate_assignment` (creates the gradebook) + `nbgrader autograde` "
        "(serial), upstream Execute preprocessor. *ours*: `python -m autograder grade CLASS --workers N "
        "--no-feedback` with a fresh `GRADER_HOME` (gradebook created in the run), sandbox as `make grade` "
        "picks it, in warm kernels (the default: forked from a template per worker) or cold ones "
        "(`--kernels cold`: a kernel started per notebook). All timed as whole commands. Peak memory: the "
        "summed RSS of the command's process tree (kernels and sandboxes included), sampled every 0.25 s "
        "(an upper estimate: shared pages count once per process). Figures: median (min–max, n) over "
        "repeats; the smallest size is repeated, larger sizes run once.",
        "",
        "| students | "
        + " | ".join(f"{WHO[w]}: s" for w in who)
        + " | s/student "
        + " · ".join(who)
        + " | peak MiB "
        + " · ".join(who)
        + " | ratio to plain: "
        + " · ".join(w for w in who if w != "plain")
        + " |",
        "|---|" + "---|" * len(who) + "---|---|---|",
    ]
    for size in sizes:
        runs = t["sizes"][size]["runs"]
        cell, per, mem, est = {}, {}, {}, {}
        for w in who:
            if size in med[w]:
                cell[w] = fmt(med[w][size], 1)
                secs = med[w][size]["median"]
                mem[w] = mib(max(r["peak_rss"] for r in runs[w]))
            elif len(med[w]) >= 1:
                secs = _fit({s: v["median"] for s, v in med[w].items()}, size)
                cell[w] = f"≈{secs:.0f} (extrapolated)"
                mem[w] = "–"
                est[w] = True
            else:
                continue
            per[w] = secs / size

        def ratio(w):
            if w not in per or "plain" not in per:
                return "–"
            return f"{per['plain'] / per[w]:.2f}" + ("≈" if est.get(w) or est.get("plain") else "")

        lines.append(
            f"| {size} | "
            + " | ".join(cell.get(w, "–") for w in who)
            + " | "
            + " · ".join(f"{per[w]:.2f}" if w in per else "–" for w in who)
            + " | "
            + " · ".join(mem.get(w, "–") for w in who)
            + " | "
            + " · ".join(ratio(w) for w in who if w != "plain")
            + " |"
        )
        for w, label in (("ours-2", "2 workers"), ("ours-1", "1 worker (per core)")):
            if w in per and "plain" in per:
                r = per["plain"] / per[w]
                target, aim = THROUGHPUT_TARGETS[w]
                if w == "ours-2" and size <= SMALL_CLASS:
                    target, aim = SMALL_CLASS_TARGET, SMALL_CLASS_TARGET
                verdicts.append(
                    (
                        f"class throughput, {label}, ≥ {target:g}x plain nbgrader on 2 cores, {size} students "
                        f"(aim {aim:g}x)",
                        r >= target,
                        f"{r:.2f}x" + (" (from an extrapolation)" if est.get("plain") or est.get(w) else ""),
                    )
                )
    lines += ["", "≈: from an extrapolation."]
    plain_setup = [r["setup_seconds"] for s in sizes for r in t["sizes"][s]["runs"].get("plain", [])]
    if plain_setup:
        lines += [
            "",
            f"Of plain nbgrader's time, `generate_assignment` (the gradebook) took {fmt(stats(plain_setup), 1)} s.",
        ]
    extrap = [s for s in sizes if any(s not in med[w] for w in med if med[w])]
    if extrap:
        lines += [
            "",
            "Extrapolated cells (≈): not run at that size to keep `make bench` under half an hour; "
            "a straight line through the two largest sizes that were run (plain nbgrader grades one "
            "notebook after another, so its time grows linearly with the class).",
        ]
    lines += [
        "",
        "Load average (1, 5, 15 min) after each size: "
        + "; ".join(f"{s}: {' '.join(f'{x:.1f}' for x in t['sizes'][s]['load'])}" for s in sizes)
        + ".",
    ]
    return lines, verdicts


def whole_step_section(w: dict) -> tuple[list[str], list[tuple[str, bool, str]]]:
    runs, n, names = w["runs"], w["students"], w["notebooks"]
    plain = runs.get("plain")
    shared = w.get("shared", [])
    lines = [
        f"{n} students each hand in {len(names)} notebook{'s' if len(names) > 1 else ''} of the step "
        f"({n * len(names)} notebooks: {', '.join(names)}), each "
        "notebook drawn round-robin from the solutions and its proof-corpus variants. One run each, in this "
        "order: ours with 2 workers in warm kernels, in cold kernels, then plain nbgrader (serial)."
        + (
            f" (--quick: section 1's class; its runs {' and '.join(WHO[k] for k in WHO if k in shared)} are section 1's, "
            "the same commands on the same class, not run again.)"
            if shared
            else ""
        ),
        "",
        "| grader | s | s/student | core-s/student (2 cores) | ratio to plain | peak MiB |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in (
        ("plain", f"plain nbgrader (cell timeout {plain['timeout']:g} s)" if plain else ""),
        ("ours-2", "ours, 2 workers, warm kernels"),
        ("ours-2-cold", "ours, 2 workers, cold kernels"),
    ):
        r = runs.get(key)
        if not r:
            continue
        cores = 1 if key == "plain" else 2
        ratio = f"{plain['seconds'] / r['seconds']:.2f}" if plain else "–"
        lines.append(
            f"| {label} | {r['seconds']:.1f} | {r['seconds'] / n:.2f} | {r['seconds'] * cores / n:.1f} | "
            f"{ratio} | {mib(r['peak_rss'])} |"
        )
    if plain:
        lines += [
            "",
            f"Plain nbgrader ran every notebook of the step with the cell timeout {plain['timeout']:g} s; "
            f"{plain['timed_out_cells']} of its cells ended on that limit (a slider cell stalled by "
            "nbclient issue 312 waits it out; the grader's Execute polls in short steps and does not).",
        ]
    verdicts = []
    for key in ("ours-2", "ours-2-cold"):
        r = runs.get(key)
        if r:
            per_nb = {nb: stats(v)["median"] for nb, v in r["by_notebook"].items() if v}
            lines += [
                "",
                f"{WHO[key]}: seconds per notebook inside the worker (median over students): "
                + ", ".join(f"{nb} {v:.2f}" for nb, v in per_nb.items())
                + f"; one fully answered student, all six: {sum(per_nb.values()):.1f} core-seconds of grading "
                f"(the run's kernels: {', '.join(r['kernels'])}; points awarded in all: {r['points']:.1f}).",
            ]
    warm, cold = runs.get("ours-2"), runs.get("ours-2-cold")
    if warm:
        per_student = sum(stats(v)["median"] for v in warm["by_notebook"].values() if v)
        verdicts.append(
            ("a fully answered six-notebook student ≤ 12 core-seconds", per_student <= 12, f"{per_student:.1f} core-s")
        )
    if warm and cold:
        lines += [
            "",
            f"The same points warm and cold: {'yes' if warm['points'] == cold['points'] else 'NO'} "
            f"({warm['points']:.1f} and {cold['points']:.1f}); cold / warm wall time: "
            f"{cold['seconds'] / warm['seconds']:.2f}x.",
        ]
    lines += ["", f"Load average (1, 5, 15 min) at the end: {' '.join(f'{x:.1f}' for x in w['load'])}."]
    return lines, verdicts


WHAT_WE_DID = {
    "sandbox setup": "kept: the isolation (bwrap's own cost: benchmarks/sandbox_overhead.py)",
    "kernel start": "warm: a kernel forked from the worker's template (ipykernel imported there) instead of a new interpreter",
    "torch import": "warm: torch, numpy, matplotlib and dlcourse imported once per worker, in the template",
    "provided cells": "unchanged: the notebook's own content, as students run it",
    "student code": "unchanged: the answers",
    "hidden probes": "unchanged",
    "judging": "unchanged: in the grader process, outside the kernel",
    "rest": "assembling the notebook, the probe server, the result",
}


def breakdown_section(b: dict) -> list[str]:
    from breakdown import PHASES

    ways = b["ways"]
    med = {w: {p: stats([x[p] for x in b["phases"][w]])["median"] for p in PHASES} for w in ways}
    lines = [
        f"One notebook (`{b['notebook']}`, every answer in) graded by the function the grader's workers run "
        f"(`autograder.grading.grade.run_job`) in the `{b['sandbox']}` sandbox, one thread, timers wrapped around the "
        "grader's own functions; median (min–max, n) seconds. Runs alternate between cold kernels (a new "
        "kernel process per notebook) and warm ones (forked from the worker's template, the default).",
        "",
        "| phase | " + " | ".join(f"{w} kernels" for w in ways) + " | share (warm) | what was done about it |",
        "|---|" + "---|" * len(ways) + "---|---|",
    ]
    for phase in PHASES:
        cells = [fmt(stats([p[phase] for p in b["phases"][w]]), 2) for w in ways]
        share = med["warm"][phase] / med["warm"]["total"] if med["warm"]["total"] else 0
        lines.append(f"| {phase} | " + " | ".join(cells) + f" | {share:.0%} | {WHAT_WE_DID.get(phase, '')} |")
    overhead = {
        w: med[w]["total"] - sum(med[w][p] for p in ("provided cells", "student code", "hidden probes", "judging"))
        for w in ways
    }
    lines += [
        "",
        f"Per-notebook overhead (everything but the provided cells, the student's code, the probes and "
        f"judging): cold {overhead['cold']:.2f} s, warm {overhead['warm']:.2f} s "
        f"({overhead['cold'] / max(overhead['warm'], 1e-9):.1f}x less); the whole notebook: cold "
        f"{med['cold']['total']:.2f} s, warm {med['warm']['total']:.2f} s "
        f"({med['cold']['total'] / max(med['warm']['total'], 1e-9):.2f}x). The same points both ways: "
        + ("yes" if len({p["points"] for w in ways for p in b["phases"][w]}) == 1 else "NO")
        + f"; the warm runs were graded in {', '.join(sorted({str(p['kernels']) for p in b['phases']['warm']}))} kernels.",
        "",
        f"The warm template's start, paid once per grading worker (the first warm notebook, its start "
        f"included): {b['template start']['total']:.2f} s.",
    ]
    if b.get("notebooks"):
        shown = [p for p in PHASES if p != "sandbox setup"]
        every = b.get("every notebook", True)
        lines += [
            "",
            ("Every notebook of the step" if every else f"{len(b['notebooks'])} notebooks of the step (--quick)")
            + ", answered, graded once each in warm kernels (the same timers): "
            "what the notebook's own cells cost against the grader's overhead.",
            "",
            "| notebook | " + " | ".join(shown) + " |",
            "|---|" + "---|" * len(shown),
        ]
        for name, phases in b["notebooks"].items():
            lines.append(f"| {name} | " + " | ".join(f"{phases[p]:.2f}" for p in shown) + " |")
        totals = {p: sum(n[p] for n in b["notebooks"].values()) for p in shown}
        lines.append(
            f"| {'all six' if every else 'these ' + str(len(b['notebooks']))} | "
            + " | ".join(f"{totals[p]:.2f}" for p in shown)
            + " |"
        )
        own = totals["provided cells"] + totals["student code"] + totals["hidden probes"] + totals["judging"]
        lines += [
            "",
            f"Of {'a fully answered student' if every else 'these notebooks'}'s {totals['total']:.1f} s, "
            "the notebooks' own cells, the answers, "
            f"the probes and judging take {own:.1f} s ({own / totals['total']:.0%}); the rest, "
            f"{totals['total'] - own:.1f} s, is the grader's overhead (kernel start, assembling, the result). "
            "Notebooks 04 and 05 spend most of theirs in their own cells (the corpus, the pictures, the "
            "sliders' first draw), which every student also sees in feedback: kept.",
        ]
    once = b["once"]
    lines += [
        "",
        "Once per grading process, not per notebook:",
        "",
        f"- importing the grader and the step's checks in a new process: {fmt(stats(once['worker imports']), 2)} s, "
        "paid once per grading process by the workers' fork server (autograder/grading/worker.py), not by each "
        "worker: workers are forked from it with everything imported;",
        f"- creating a new gradebook (`ensure_gradebook`, in the grader's process: autograder/records/gradebook.py): "
        f"{fmt(stats(once['new gradebook']), 2)} s, against {fmt(stats(once['new gradebook, generate_assignment']), 2)} s "
        "through `nbgrader generate_assignment` in a subprocess as before (once per class, only when the "
        "gradebook is new or the release changed).",
    ]
    before, after = stats(once["import nbformat"]), stats(once["import nbformat without rfc3987_syntax"])
    lines += [
        "",
        "- a new Python process importing nbformat: "
        f"{fmt(before, 2)} s with the optional `rfc3987_syntax`, {fmt(after, 2)} s without it (the grader's "
        "processes go without it: `autograder/grading/grade.py`).",
    ]
    return lines


def student_section(s: dict) -> tuple[list[str], list[tuple[str, bool, str]]]:
    verdicts = []
    lines = [
        "Each notebook executed top to bottom in a fresh kernel with the course's executor "
        "(`autograder.authoring.build.run_notebook`), from its own folder; the release with errors allowed (answers "
        "missing), the solutions without. Median (min–max, n) seconds, kernel start included.",
        "",
        "| notebook | release: s | solution: s | solution < 10 s |",
        "|---|---|---|---|",
    ]
    for name in sorted(set(s["release"]) | set(s["solutions"])):
        sol = stats(s["solutions"].get(name, []))
        ok = sol["n"] > 0 and sol["median"] < SOLUTION_TARGET
        lines.append(
            f"| {name} | {fmt(stats(s['release'].get(name, [])), 1)} | {fmt(sol, 1)} | {'yes' if ok else 'NO'} |"
        )
        if sol["n"]:
            verdicts.append((f"solution {name} under {SOLUTION_TARGET:.0f} s", ok, f"{sol['median']:.1f} s"))
    lines += [
        "",
        "Sliders, moved in the kernel of their solution notebook: the notebook's function alone (what a "
        "move recomputes), and the whole update (function, redraw, PNG frame sent to the page). Median "
        "(min–max, n) milliseconds.",
        "",
        "| slider | function alone: ms | update in the kernel: ms | update < 200 ms |",
        "|---|---|---|---|",
    ]
    for name, t in sorted(s["sliders"].items()):
        up = stats(t["update"])
        ok = up["median"] < SLIDER_TARGET
        lines.append(
            f"| {name} | {fmt(stats(t['function']), 1, 1000)} | {fmt(up, 1, 1000)} | {'yes' if ok else 'NO'} |"
        )
        verdicts.append(
            (
                f"slider {name}: update under {SLIDER_TARGET * 1000:.0f} ms (in the kernel)",
                ok,
                f"{up['median'] * 1000:.0f} ms",
            )
        )
    browser = s.get("browser")
    lines += [""]
    if browser:
        lines += [
            f"In the browser (JupyterLab in Chromium, from `make test-browser` of {browser.get('date', '?')}; "
            "from pressing Enter on the slider's readout to the new picture on the page), ms:",
            "",
            "| slider | latencies: ms |",
            "|---|---|",
        ]
        for name, values in sorted(browser.get("sliders", {}).items()):
            lines.append(f"| {name} | {', '.join(f'{v:.0f}' for v in values)} |")
    else:
        lines += [
            "In the browser: no record yet. Run `make test-browser` first (it writes "
            "`artifacts/slider-latency.json`), then `make bench`."
        ]
    return lines, verdicts


def head_section(h: dict) -> list[str]:
    ts = h["T"]
    lines = [
        f"Forward pass, batch 1, d = {h['d']}, d_head = {h['d_head']}, `torch.set_num_threads({h['threads']})`, "
        "no autograd; median (min–max, n) milliseconds after a warm-up. `Head` is `dlcourse.head.Head`; "
        "SDPA is `F.scaled_dot_product_attention(q, k, v, is_causal=True)` on the head's q, k, v; streaming "
        "is `benchmarks/streaming.py` (online softmax over blocks of 256 keys: never the T×T matrix). "
        "The three agree (checked at the smallest T).",
        "",
        "| T | Head: ms | SDPA: ms | streaming: ms |",
        "|---|---|---|---|",
    ]
    for T in ts:
        lines.append(
            f"| {T} | " + " | ".join(fmt(h["time"][w][T], 2, 1000) for w in ("Head", "SDPA", "streaming")) + " |"
        )
    lines += [
        "",
        "Fitted exponents (time ∝ T^k, least squares on log–log over all T): "
        + ", ".join(f"{w} k = {k:.2f}" for w, k in h["exponent"].items())
        + ". Attention is Θ(T²) work; an exponent away from 2 comes from fixed costs at small T and from the "
        "cache and memory traffic at large T.",
        "",
        "Memory of A, the T×T attention matrix, in MiB: computed (T·T·4 bytes, float32), measured as the "
        "tensor the head keeps (`head.A`), and the rise of the process's resident memory at its peak during "
        "the forward pass (sampled each millisecond, in a process whose allocator hands large blocks back "
        "to the system when freed; the head also builds the scores matrix, another T×T, so its rise can "
        "reach 2–3 times A).",
        "",
        "| T | A computed | head.A | Head: RSS rise | SDPA: RSS rise | streaming: RSS rise |",
        "|---|---|---|---|---|---|",
    ]
    for T in ts:
        m = h["memory"][T]
        lines.append(
            f"| {T} | {mib(m['computed'])} | {mib(m['head.A'])} | {mib(m['Head (RSS)'])} | "
            f"{mib(m['SDPA (RSS)'])} | {mib(m['streaming (RSS)'])} |"
        )
    return lines


def write_report(path: Path, results: dict, command: str) -> None:
    m = results["machine"]
    v = m["versions"]
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `{command}` (benchmarks/run.py): do not edit by hand, run it again.",
        "",
        "## Machine",
        "",
        f"- date: {m['date']}; run took {results['seconds'] / 60:.1f} min",
        f"- CPU: {m['cpu_model']}, {m['cpus']} cores; RAM {m['ram_gib']} GiB; {m['platform']}",
        f"- Python {m['python']}; torch {v['torch']}; nbgrader {v['nbgrader']}; nbclient {v['nbclient']}; "
        f"jupyter_client {v['jupyter_client']}; ipykernel {v['ipykernel']}; numpy {v['numpy']}; matplotlib {v['matplotlib']}",
        f"- grading sandbox: {m['sandbox']}",
        f"- load average (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in m['load_start'])} at the start, "
        f"{' '.join(f'{x:.1f}' for x in results['load_end'])} at the end. The machine may be shared: compare "
        "figures within this run (ratios), not with another run.",
        "",
    ]
    verdicts, sections = [], []
    if "throughput" in results:
        body, v1 = throughput_section(results["throughput"])
        verdicts += v1
        sections += ["## 1. Grading throughput", "", *body, ""]
    if "whole_step" in results:
        body, v1b = whole_step_section(results["whole_step"])
        verdicts += v1b
        sections += ["## 1b. A class handing in the whole step", "", *body, ""]
    if "breakdown" in results:
        sections += ["## 2. Where the time goes per notebook", "", *breakdown_section(results["breakdown"]), ""]
    if "student" in results:
        body, v3 = student_section(results["student"])
        verdicts += v3
        sections += ["## 3. Student side", "", *body, ""]
    if "head" in results:
        sections += ["## 4. The head against T", "", *head_section(results["head"]), ""]
    if "commands" in results:
        import commands

        body, v5 = commands.section(results["commands"])
        verdicts += v5
        sections += [COMMANDS_SECTION, "", *body, ""]
    if "insights" in results:
        import insights

        sections += [INSIGHTS_SECTION, "", *insights.section(results["insights"]), ""]
    for name, why in results.get("failed", {}).items():
        sections += [f"## {name}: FAILED", "", "```", why, "```", ""]
    lines += ["## Targets", "", "| target | met | measured |", "|---|---|---|"]
    lines += [f"| {name} | {'yes' if ok else 'NO'} | {got} |" for name, ok, got in verdicts]
    lines += ["", *sections]
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


COMMANDS_SECTION = "## 5. Everyday commands"
INSIGHTS_SECTION = "## 6. The class report"


def splice_section(path: Path, title: str, body: list[str]) -> None:
    """One section measured alone: it replaces the section of that title in the existing file (or is
    added at its end); the others are kept as they are."""
    text = path.read_text(encoding="utf-8")
    new = "\n".join([title, "", *body]).rstrip() + "\n"
    if title in text:
        head, _, rest = text.partition(title)
        after = rest.split("\n## ", 1)[1] if "\n## " in rest else ""
        text = head + new + ("\n## " + after if after else "")
    else:
        text = text.rstrip() + "\n\n" + new
    path.write_text(text.rstrip() + "\n", encoding="utf-8")


def splice_commands(path: Path, results: dict) -> None:
    """`--parts commands` alone: its section and its target rows replace those in the existing file,
    the other sections (measured by a whole run) are kept as they are."""
    import commands

    body, verdicts = commands.section(results["commands"])
    m = results["machine"]
    body = [
        f"Measured by `python benchmarks/run.py --parts commands` on {m['date']} (load average "
        f"{' '.join(f'{x:.1f}' for x in m['load_start'])} at its start), apart from the sections above.",
        "",
        *body,
    ]
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition(COMMANDS_SECTION)
    after = rest.split("\n## ", 1)[1] if "\n## " in rest else ""
    text = head.rstrip() + "\n\n" + "\n".join([COMMANDS_SECTION, "", *body]) + ("\n\n## " + after if after else "\n")
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| make ") and " under " in line.split("|")[1] and line.count("|") == 4
    ]
    for line in rows:
        text = text.replace(line + "\n", "")
    new_rows = "".join(f"| {name} | {'yes' if ok else 'NO'} | {got} |\n" for name, ok, got in verdicts)
    marker = "|---|---|---|\n"
    at = text.index("## Targets")
    cut = text.index("\n\n", text.index(marker, at))
    text = text[: cut + 1] + new_rows + text[cut + 1 :]
    path.write_text(text.rstrip() + "\n", encoding="utf-8")


def load_raw(path: Path) -> dict:
    """Raw figures read back from JSON, with the integer keys (class sizes, T) restored."""
    results = json.loads(path.read_text())
    if "throughput" in results:
        results["throughput"]["sizes"] = {int(k): v for k, v in results["throughput"]["sizes"].items()}
    if "head" in results:
        h = results["head"]
        h["memory"] = {int(k): v for k, v in h["memory"].items()}
        h["time"] = {w: {int(k): v for k, v in by_t.items()} for w, by_t in h["time"].items()}
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,40,160", help="class sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--plain-max", type=int, default=40, help="largest class plain nbgrader grades (larger: extrapolated)"
    )
    parser.add_argument(
        "--serial-max", type=int, default=40, help="largest class graded with 1 worker (larger: extrapolated)"
    )
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--whole-step", type=int, default=4, help="students in the whole-step class")
    parser.add_argument(
        "--plain-timeout",
        type=float,
        default=120,
        help="plain nbgrader's cell timeout in the whole-step class (the course's: 120 s)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes, one repeat: proves the script runs end to end"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="write the report again from the raw figures of an earlier run (nothing is measured)",
    )
    parser.add_argument(
        "--against",
        default="eb30254",
        help="commands: the git revision whose engine the everyday commands are compared with",
    )
    parser.add_argument("--raw", type=Path, default=ROOT / "artifacts" / "bench.json", help="raw figures (JSON)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    parts = [p for p in args.parts.split(",") if p]
    repeats = args.repeats
    command = (
        "make bench"
        + (f" SIZES={args.sizes}" if args.sizes != "10,40,160" else "")
        + (f" REPEATS={repeats}" if repeats != 3 else "")
        + (f" PLAIN_MAX={args.plain_max}" if args.plain_max != 40 else "")
        + (f" SERIAL_MAX={args.serial_max}" if args.serial_max != 40 else "")
    )
    student_names, head_ts, whole_step_names, whole_step_class = None, None, None, None
    import student
    import throughput

    moves, ways, head_repeats = student.MOVES, throughput.WAYS, max(3, repeats * 3)
    if args.quick:
        # the least that still runs every part's code: two students (so that two workers share them),
        # two notebooks for the breakdown's every-notebook table, one notebook with a slider, two T;
        # section 1b's class is section 1's (two students, one notebook): its plain and warm runs are
        # section 1's (the same commands on the same class), and the class is graded in cold kernels by
        # section 1b only (the same command as section 1's would be)
        sizes, repeats, args.plain_max, args.serial_max = [2], 1, 2, 2
        args.whole_step = 2
        whole_step_names, whole_step_class = ["01-on-paper", "02-the-head"], [throughput.NOTEBOOK]
        student_names, head_ts, moves, head_repeats = ["05-attention-as-smoothing"], [256, 512], 3, 3
        ways = tuple(w for w in throughput.WAYS if w != "ours-2-cold")
        command = "python benchmarks/run.py --quick"

    if args.from_json:
        results = load_raw(args.from_json)
        if "command" not in results and "throughput" in results:  # raw figures of an older script
            sizes = sorted(results["throughput"]["sizes"])
            n = results["throughput"]["sizes"][sizes[0]]["repeats"]
            results["command"] = (
                "make bench"
                + (f" SIZES={','.join(map(str, sizes))}" if sizes != [10, 40, 160] else "")
                + (f" REPEATS={n}" if n != 3 else "")
            )
        write_report(args.out, results, results.get("command", command))
        print(f"bench: wrote {args.out.name} from {args.from_json.name}")
        return 0

    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)
    os.environ.pop("NBGRADER_DB_URL", None)
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    started = time.monotonic()
    say = lambda *a: print(*a, flush=True)  # noqa: E731
    results = {"machine": machine()}
    say(f"bench: {results['machine']['cpus']} cores, load {results['machine']['load_start'][0]:.1f}; parts {parts}")

    def part(name, run):
        """Run one part; a part that fails is reported in the file, and the others still run."""
        if name not in parts:
            return
        try:
            results[name] = run()
        except Exception as err:  # noqa: BLE001 (the report says what failed)
            import traceback

            traceback.print_exc()
            results.setdefault("failed", {})[name] = f"{type(err).__name__}: {str(err)[-2000:]}"

    def student_part():
        out = student.measure(repeats, say=say, names=student_names, moves=moves)
        out["browser"] = student.browser_latencies()
        return out

    import breakdown
    import head

    part("head", lambda: head.measure_in_subprocess(head_repeats, head_ts or head.TS, say=say))
    part("student", student_part)
    part(
        "breakdown",
        lambda: breakdown.measure(
            throughput.NOTEBOOK, repeats, say=say, notebooks=whole_step_names, share_warm=args.quick
        ),
    )
    part("throughput", lambda: throughput.measure(sizes, repeats, args.plain_max, args.serial_max, say=say, ways=ways))

    def whole_step_part():
        # --quick: section 1's runs of the same class are taken, not run again (measure_whole_step)
        shared = results.get("throughput", {}).get("sizes", {}).get(args.whole_step) if args.quick else None
        return throughput.measure_whole_step(
            args.whole_step, args.plain_timeout, say=say, notebooks=whole_step_class, shared=shared
        )

    part("whole_step", whole_step_part)

    def commands_part():
        import commands

        return commands.measure(
            1 if args.quick else max(3, repeats), against=None if args.quick else args.against, say=say
        )

    part("commands", commands_part)

    def insights_part():
        import insights

        return insights.measure(20 if args.quick else insights.STUDENTS, 1 if args.quick else repeats, say=say)

    part("insights", insights_part)
    results["seconds"] = time.monotonic() - started
    results["command"] = command
    results["load_end"] = os.getloadavg()
    raw = args.raw
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(results, indent=1, default=str))
    if parts == ["commands"] and args.out.exists() and "commands" in results:
        splice_commands(args.out, results)
        say(f"bench: the everyday commands' section of {args.out.name} rewritten (the other sections kept)")
        return 0
    if parts == ["insights"] and args.out.exists() and "insights" in results:
        import insights

        m = results["machine"]
        splice_section(
            args.out,
            INSIGHTS_SECTION,
            [
                f"Measured by `python benchmarks/run.py --parts insights` on {m['date']} (load average "
                f"{' '.join(f'{x:.1f}' for x in m['load_start'])} at its start), apart from the sections above.",
                "",
                *insights.section(results["insights"]),
            ],
        )
        say(f"bench: the class report's section of {args.out.name} rewritten (the other sections kept)")
        return 0
    write_report(args.out, results, command)
    say(f"bench: wrote {args.out.name} in {results['seconds'] / 60:.1f} min (raw figures in {raw.name})")
    return 1 if results.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
