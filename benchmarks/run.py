"""Run the course's benchmarks and rewrite BENCHMARKS.md (`make bench`).

    python benchmarks/run.py [--sizes 10,40,160] [--repeats 3] [--quick] [--out BENCHMARKS.md]

Parts (each also callable alone with --parts): throughput (grading a synthetic class: plain
nbgrader against `make grade`), breakdown (where a notebook's grading time goes), student (each
notebook's run time, each slider's update), head (forward time and memory against T).
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

PARTS = ("throughput", "breakdown", "student", "head")
SOLUTION_TARGET = 10.0      # seconds, every solution notebook
SLIDER_TARGET = 0.200       # seconds, every slider update
THROUGHPUT_TARGET, THROUGHPUT_AIM = 2.0, 4.0


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


def throughput_section(t: dict) -> tuple[list[str], list[tuple[str, bool, str]]]:
    lines, verdicts = [], []
    sizes = sorted(int(s) for s in t["sizes"])
    med = {w: {} for w in ("plain", "ours-1", "ours-2")}
    for size in sizes:
        for w, runs in t["sizes"][size]["runs"].items():
            if runs:
                med[w][size] = stats([r["seconds"] for r in runs])
    lines += [f"Each synthetic student hands in one notebook, `{t['notebook']}`, drawn round-robin from "
              f"{len(t['variants'])} submissions: the solutions and every proof-corpus variant of that notebook "
              f"({', '.join(t['variants'])}). Why this notebook: it is the step's central exercise, it has no "
              "slider (a slider cell hangs upstream nbclient for the whole cell timeout, nbclient issue 312, "
              "so plain nbgrader cannot run notebooks 04 and 05 in reasonable time), and its cost per "
              "notebook (kernel, torch, the head's cells, hidden checks) is typical of the step.",
              "",
              "*plain nbgrader*: `nbgrader generate_assignment` (creates the gradebook) + `nbgrader autograde` "
              "(serial), upstream Execute preprocessor. *ours*: `python -m autograder grade CLASS --workers N "
              "--no-feedback` with a fresh `GRADER_HOME` (gradebook created in the run), sandbox as `make grade` "
              "picks it. Both timed as whole commands. Peak memory: the summed RSS of the command's process tree "
              "(kernels and sandboxes included), sampled every 0.25 s (an upper estimate: shared pages count "
              "once per process). Figures: median (min–max, n) over repeats; the smallest size is repeated, "
              "larger sizes run once.", "",
              "| students | plain nbgrader: s | ours, 1 worker: s | ours, 2 workers: s | s/student plain · 1w · 2w "
              "| students/min plain · 1w · 2w | peak MiB plain · 1w · 2w | ratio 1w/plain | ratio 2w/plain |",
              "|---|---|---|---|---|---|---|---|---|"]
    for size in sizes:
        runs = t["sizes"][size]["runs"]
        cell, per, rate, mem, est = {}, {}, {}, {}, {}
        for w in ("plain", "ours-1", "ours-2"):
            if size in med[w]:
                cell[w] = fmt(med[w][size], 1)
                secs = med[w][size]["median"]
                mem[w] = mib(max(r["peak_rss"] for r in runs[w]))
            elif med[w]:
                secs = _fit({s: v["median"] for s, v in med[w].items()}, size)
                cell[w] = f"≈{secs:.0f} (extrapolated)"
                mem[w] = "–"
                est[w] = True
            else:
                continue
            per[w] = secs / size
            rate[w] = 60 / per[w]
        def ratio(w):
            if w not in per or "plain" not in per:
                return "–"
            r = per["plain"] / per[w]
            return f"{r:.2f}" + (" (from an extrapolation)" if est.get(w) or est.get("plain") else "")
        lines.append(f"| {size} | {cell.get('plain', '–')} | {cell.get('ours-1', '–')} | {cell.get('ours-2', '–')} | "
                     + " · ".join(f"{per[w]:.2f}" if w in per else "–" for w in ("plain", "ours-1", "ours-2")) + " | "
                     + " · ".join(f"{rate[w]:.1f}" if w in rate else "–" for w in ("plain", "ours-1", "ours-2")) + " | "
                     + " · ".join(mem.get(w, "–") for w in ("plain", "ours-1", "ours-2")) + f" | {ratio('ours-1')} | {ratio('ours-2')} |")
        if "ours-2" in per and "plain" in per:
            r = per["plain"] / per["ours-2"]
            verdicts.append((f"class throughput ≥ {THROUGHPUT_TARGET:.0f}x plain nbgrader on 2 cores, {size} students "
                             f"(aim {THROUGHPUT_AIM:.0f}x)", r >= THROUGHPUT_TARGET,
                             f"{r:.2f}x" + (" (from an extrapolation)" if est.get("plain") or est.get("ours-2") else "")))
    plain_setup = [r["setup_seconds"] for s in sizes for r in t["sizes"][s]["runs"]["plain"]]
    if plain_setup:
        lines += ["", f"Of plain nbgrader's time, `generate_assignment` (the gradebook) took {fmt(stats(plain_setup), 1)} s."]
    extrap = [s for s in sizes if any(s not in med[w] for w in med if med[w])]
    if extrap:
        lines += ["", f"Extrapolated cells (≈): not run at that size to keep `make bench` under half an hour; "
                      "a straight line through the two largest sizes that were run (plain nbgrader grades one "
                      "notebook after another, so its time grows linearly with the class)."]
    lines += ["", "Load average (1, 5, 15 min) after each size: "
              + "; ".join(f"{s}: {' '.join(f'{x:.1f}' for x in t['sizes'][s]['load'])}" for s in sizes) + "."]
    return lines, verdicts


WHAT_WE_DID = {
    "sandbox setup": "kept: the isolation; bwrap's whole cost per notebook is the difference of the two columns",
    "kernel start": "not cut: a fresh kernel per notebook keeps students apart (see below)",
    "torch import": "not cut: the largest share (see below)",
    "provided cells": "unchanged: the notebook's own content, as students run it",
    "student code": "unchanged: the answers",
    "hidden probes": "unchanged",
    "judging": "unchanged: in the grader process, outside the kernel",
    "rest": "assembling the notebook, the probe server, the result; imports trimmed (below)",
}


def breakdown_section(b: dict) -> list[str]:
    from breakdown import PHASES
    sandboxes = b["sandboxes"]
    lines = [f"One notebook (`{b['notebook']}`, every answer in) graded by the function the grader's workers run "
             f"(`autograder.grade.run_job`), timers wrapped around the grader's own functions; median (min–max, n) "
             f"seconds. Runs alternate between the sandboxes.", "",
             "| phase | " + " | ".join(f"sandbox `{s}`" for s in sandboxes) + " | share (" + sandboxes[-1] + ") | what was done about it |",
             "|---|" + "---|" * len(sandboxes) + "---|---|"]
    total = stats([p["total"] for p in b["phases"][sandboxes[-1]]])["median"]
    for phase in PHASES:
        cells = [fmt(stats([p[phase] for p in b["phases"][s]]), 2) for s in sandboxes]
        share = stats([p[phase] for p in b["phases"][sandboxes[-1]]])["median"] / total if total else 0
        lines.append(f"| {phase} | " + " | ".join(cells) + f" | {share:.0%} | {WHAT_WE_DID.get(phase, '')} |")
    per_phase = {p: stats([x[p] for x in b["phases"][sandboxes[-1]]])["median"] for p in PHASES if p != "total"}
    top = sorted(per_phase, key=per_phase.get, reverse=True)[:2]
    lines += ["", f"Largest costs per notebook: {top[0]} ({per_phase[top[0]]:.2f} s) and {top[1]} "
              f"({per_phase[top[1]]:.2f} s), of {total:.2f} s."]
    once = b["once"]
    lines += ["", "Once per grading process, not per notebook:", "",
              f"- importing the grader in a new worker process: {fmt(stats(once['worker imports']), 2)} s "
              "(each of `--workers N` processes pays it once);",
              f"- creating a new gradebook (`ensure_gradebook`: nbgrader generate_assignment): "
              f"{fmt(stats(once['new gradebook']), 2)} s (once per class, only when the gradebook is new or the release changed)."]
    before, after = stats(once["import nbformat"]), stats(once["import nbformat without rfc3987_syntax"])
    lines += ["", "What was done, and its effect measured in this run:", "",
              "- **Imports of the grading processes.** `nbformat` imports `jsonschema`, which builds the grammars of "
              "the optional package `rfc3987_syntax` (for \"iri\" string formats that the notebook schema never uses "
              "and nbformat never checks). The grader's processes (the main one, each worker, each nbgrader "
              "command it runs) now go without it (`autograder/grade.py`, `autograder/build.py`). A new Python "
              f"process importing nbformat: {fmt(before, 2)} s before, {fmt(after, 2)} s after "
              f"({before['median'] - after['median']:.2f} s less per process, median).",
              "- **Kernel start, torch import.** Each notebook gets a fresh kernel (students must not share one), and "
              "every kernel imports torch: together the largest cost per notebook (table above), and not cut in "
              "this round. The next step would be a kernel started (and torch imported) while the previous "
              "notebook is judged and recorded; it would overlap that cost with other work, not remove it.",
              "- **Sandbox.** Its cost per notebook is the difference of the two columns; kept as it is.",
              "- **New gradebook.** `ensure_gradebook` runs `alembic heads` and `nbgrader generate_assignment` in "
              "subprocesses once per new gradebook: the largest fixed cost of a small class; left to the gradebook "
              "work (PostgreSQL), which owns that code."]
    return lines


def student_section(s: dict) -> tuple[list[str], list[tuple[str, bool, str]]]:
    verdicts = []
    lines = ["Each notebook executed top to bottom in a fresh kernel with the course's executor "
             "(`autograder.build.run_notebook`), from its own folder; the release with errors allowed (answers "
             "missing), the solutions without. Median (min–max, n) seconds, kernel start included.", "",
             "| notebook | release: s | solution: s | solution < 10 s |", "|---|---|---|---|"]
    for name in sorted(set(s["release"]) | set(s["solutions"])):
        sol = stats(s["solutions"].get(name, []))
        ok = sol["n"] > 0 and sol["median"] < SOLUTION_TARGET
        lines.append(f"| {name} | {fmt(stats(s['release'].get(name, [])), 1)} | {fmt(sol, 1)} | {'yes' if ok else 'NO'} |")
        if sol["n"]:
            verdicts.append((f"solution {name} under {SOLUTION_TARGET:.0f} s", ok, f"{sol['median']:.1f} s"))
    lines += ["", "Sliders, moved in the kernel of their solution notebook: the notebook's function alone (what a "
              "move recomputes), and the whole update (function, redraw, PNG frame sent to the page). Median "
              "(min–max, n) milliseconds.", "",
              "| slider | function alone: ms | update in the kernel: ms | update < 200 ms |", "|---|---|---|---|"]
    for name, t in sorted(s["sliders"].items()):
        up = stats(t["update"])
        ok = up["median"] < SLIDER_TARGET
        lines.append(f"| {name} | {fmt(stats(t['function']), 1, 1000)} | {fmt(up, 1, 1000)} | {'yes' if ok else 'NO'} |")
        verdicts.append((f"slider {name}: update under {SLIDER_TARGET * 1000:.0f} ms (in the kernel)", ok,
                         f"{up['median'] * 1000:.0f} ms"))
    browser = s.get("browser")
    lines += [""]
    if browser:
        lines += [f"In the browser (JupyterLab in Chromium, from `make test-browser` of {browser.get('date', '?')}; "
                  "from pressing Enter on the slider's readout to the new picture on the page), ms:", "",
                  "| slider | latencies: ms |", "|---|---|"]
        for name, values in sorted(browser.get("sliders", {}).items()):
            lines.append(f"| {name} | {', '.join(f'{v:.0f}' for v in values)} |")
    else:
        lines += ["In the browser: no record yet. Run `make test-browser` first (it writes "
                  "`artifacts/slider-latency.json`), then `make bench`."]
    return lines, verdicts


def head_section(h: dict) -> list[str]:
    ts = h["T"]
    lines = [f"Forward pass, batch 1, d = {h['d']}, d_head = {h['d_head']}, `torch.set_num_threads({h['threads']})`, "
             "no autograd; median (min–max, n) milliseconds after a warm-up. `Head` is `dlcourse.head.Head`; "
             "SDPA is `F.scaled_dot_product_attention(q, k, v, is_causal=True)` on the head's q, k, v; streaming "
             "is `benchmarks/streaming.py` (online softmax over blocks of 256 keys: never the T×T matrix). "
             "The three agree (checked at the smallest T).", "",
             "| T | Head: ms | SDPA: ms | streaming: ms |", "|---|---|---|---|"]
    for T in ts:
        lines.append(f"| {T} | " + " | ".join(fmt(h["time"][w][T], 2, 1000) for w in ("Head", "SDPA", "streaming")) + " |")
    lines += ["", "Fitted exponents (time ∝ T^k, least squares on log–log over all T): "
              + ", ".join(f"{w} k = {k:.2f}" for w, k in h["exponent"].items())
              + ". Attention is Θ(T²) work; an exponent away from 2 comes from fixed costs at small T and from the "
              "cache and memory traffic at large T.", "",
              "Memory of A, the T×T attention matrix, in MiB: computed (T·T·4 bytes, float32), measured as the "
              "tensor the head keeps (`head.A`), and the rise of the process's resident memory at its peak during "
              "the forward pass (sampled each millisecond, in a process whose allocator hands large blocks back "
              "to the system when freed; the head also builds the scores matrix, another T×T, so its rise can "
              "reach 2–3 times A).", "",
              "| T | A computed | head.A | Head: RSS rise | SDPA: RSS rise | streaming: RSS rise |", "|---|---|---|---|---|---|"]
    for T in ts:
        m = h["memory"][T]
        lines.append(f"| {T} | {mib(m['computed'])} | {mib(m['head.A'])} | {mib(m['Head (RSS)'])} | "
                     f"{mib(m['SDPA (RSS)'])} | {mib(m['streaming (RSS)'])} |")
    return lines


def write_report(path: Path, results: dict, command: str) -> None:
    m = results["machine"]
    v = m["versions"]
    lines = ["# Benchmarks", "",
             f"Generated by `{command}` (benchmarks/run.py): do not edit by hand, run it again.", "",
             "## Machine", "",
             f"- date: {m['date']}; run took {results['seconds'] / 60:.1f} min",
             f"- CPU: {m['cpu_model']}, {m['cpus']} cores; RAM {m['ram_gib']} GiB; {m['platform']}",
             f"- Python {m['python']}; torch {v['torch']}; nbgrader {v['nbgrader']}; nbclient {v['nbclient']}; "
             f"jupyter_client {v['jupyter_client']}; ipykernel {v['ipykernel']}; numpy {v['numpy']}; matplotlib {v['matplotlib']}",
             f"- grading sandbox: {m['sandbox']}",
             f"- load average (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in m['load_start'])} at the start, "
             f"{' '.join(f'{x:.1f}' for x in results['load_end'])} at the end. The machine may be shared: compare "
             "figures within this run (ratios), not with another run.", ""]
    verdicts, sections = [], []
    if "throughput" in results:
        body, v1 = throughput_section(results["throughput"])
        verdicts += v1
        sections += ["## 1. Grading throughput", "", *body, ""]
    if "breakdown" in results:
        sections += ["## 2. Where the time goes per notebook", "", *breakdown_section(results["breakdown"]), ""]
    if "student" in results:
        body, v3 = student_section(results["student"])
        verdicts += v3
        sections += ["## 3. Student side", "", *body, ""]
    if "head" in results:
        sections += ["## 4. The head against T", "", *head_section(results["head"]), ""]
    for name, why in results.get("failed", {}).items():
        sections += [f"## {name}: FAILED", "", "```", why, "```", ""]
    lines += ["## Targets", "", "| target | met | measured |", "|---|---|---|"]
    lines += [f"| {name} | {'yes' if ok else 'NO'} | {got} |" for name, ok, got in verdicts]
    lines += ["", *sections]
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


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
    parser.add_argument("--plain-max", type=int, default=40, help="largest class plain nbgrader grades (larger: extrapolated)")
    parser.add_argument("--serial-max", type=int, default=40, help="largest class graded with 1 worker (larger: extrapolated)")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat: proves the script runs end to end")
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="write the report again from the raw figures of an earlier run (nothing is measured)")
    parser.add_argument("--raw", type=Path, default=ROOT / "artifacts" / "bench.json", help="raw figures (JSON)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    parts = [p for p in args.parts.split(",") if p]
    repeats = args.repeats
    command = "make bench" + (f" SIZES={args.sizes}" if args.sizes != "10,40,160" else "") \
        + (f" REPEATS={repeats}" if repeats != 3 else "")
    student_names, head_ts = None, None
    if args.quick:
        sizes, repeats, args.plain_max, args.serial_max = [2], 1, 2, 2
        student_names, head_ts = ["01-on-paper", "05-attention-as-smoothing"], [256, 512]
        command = "python benchmarks/run.py --quick"

    if args.from_json:
        results = load_raw(args.from_json)
        if "command" not in results and "throughput" in results:     # raw figures of an older script
            sizes = sorted(results["throughput"]["sizes"])
            n = results["throughput"]["sizes"][sizes[0]]["repeats"]
            results["command"] = "make bench" + (f" SIZES={','.join(map(str, sizes))}" if sizes != [10, 40, 160] else "") \
                + (f" REPEATS={n}" if n != 3 else "")
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
        except Exception as err:      # noqa: BLE001 (the report says what failed)
            import traceback
            traceback.print_exc()
            results.setdefault("failed", {})[name] = f"{type(err).__name__}: {str(err)[-2000:]}"

    def student_part():
        import student
        out = student.measure(repeats, say=say, names=student_names)
        out["browser"] = student.browser_latencies()
        return out

    import breakdown
    import head
    import throughput
    part("head", lambda: head.measure_in_subprocess(max(3, repeats * 3), head_ts or head.TS, say=say))
    part("student", student_part)
    part("breakdown", lambda: breakdown.measure(throughput.NOTEBOOK, repeats, say=say))
    part("throughput", lambda: throughput.measure(sizes, repeats, args.plain_max, args.serial_max, say=say))
    results["seconds"] = time.monotonic() - started
    results["command"] = command
    results["load_end"] = os.getloadavg()
    raw = args.raw
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(results, indent=1, default=str))
    write_report(args.out, results, command)
    say(f"bench: wrote {args.out.name} in {results['seconds'] / 60:.1f} min (raw figures in {raw.name})")
    return 1 if results.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
