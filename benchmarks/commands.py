"""The everyday commands, timed: `make steps`, `fetch`, `submit`, `collect`, `extensions`, `export`.

Each runs as `python -m autograder <command>` would, in a throwaway course (its own copy of source/
and release/, exchange, notebooks and grader home, holding the example class's gradebook when
autograder/example/ has one), and is timed whole: wall-clock seconds and the CPU seconds of the
process and every process it started (`nbgrader` runs in one of its own for fetch, submit and
collect). The wrapper also reports what the command imported (torch, a step's checks, nbgrader).

Each course runs the commands twice: the first time also sets the course up (`fetch` releases the
step into the exchange, `collect` opens a new gradebook), the second is the everyday case (nothing new
to fetch, a second submission to collect); both are recorded, the table shows the everyday one.

`measure(repeats, against=REF)` runs the same commands with the engine of git revision REF too
(a `git worktree`, the same Python environment), side by side in one run: the before and after of
a change. `python benchmarks/commands.py [--repeats 5] [--against eb30254]` prints the table.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("steps", "fetch", "submit", "collect", "extensions", "export")
# The engine before these commands stopped importing torch, the checks and nbgrader when they grade nothing.
BASELINE = "eb30254"
TARGET_SECONDS = 2.0

WRAPPER = (
    "import atexit, json, os, runpy, sys\n"
    "def _report():\n"
    "    mods = sys.modules\n"
    "    seen = {'torch': 'torch' in mods, 'checks': any(m.startswith('course_checks') for m in mods),\n"
    "            'nbgrader': 'nbgrader' in mods}\n"
    "    with open(os.environ['COMMAND_IMPORTS'], 'w') as f: json.dump(seen, f)\n"
    "atexit.register(_report)\n"
    "sys.argv = ['autograder'] + sys.argv[1:]\n"
    "runpy.run_module('autograder', run_name='__main__', alter_sys=True)\n"
)


def make_course(folder: Path, engine: Path = ROOT) -> dict:
    """A throwaway course in `folder` for the commands: its source/ and release/ (copies), course.toml
    and extensions.csv; returns the environment that points the commands at it."""
    course = folder / "course"
    course.mkdir(parents=True)
    for name in ("source", "release"):
        shutil.copytree(ROOT / name, course / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("course.toml", "extensions.csv"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, course / name)
    home = course / "autograder"
    home.mkdir()
    example = ROOT / "autograder" / "example" / "gradebook.db"
    if example.exists():  # a gradebook with students, for `export` to read
        shutil.copy(example, home / "gradebook.db")
    env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_DB_URL", "NBGRADER_EXCHANGE", "GRADER_HOME")}
    env.update(
        {
            "COURSE_ROOT": str(course),
            "GRADER_HOME": str(home),
            "USER": "benchstudent",
            "COURSE_TERM": str(course / "course.toml"),
            "COURSE_EXTENSIONS": str(course / "extensions.csv"),
            "PYTHONPATH": str(engine),
            "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        }
    )
    return env


def run_command(command: str, env: dict, engine: Path = ROOT, timeout: float = 600) -> dict:
    """One command, as `python -m autograder <command>` from the engine's folder: {seconds, cpu,
    code, imports: {torch, checks, nbgrader}, output}."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as seen:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", WRAPPER, command],
            cwd=engine,
            env={**env, "COMMAND_IMPORTS": seen.name, "PYTHONPATH": str(engine)},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            imports = json.loads(Path(seen.name).read_text() or "{}")
        except ValueError:
            imports = {}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "seconds": seconds,
        "cpu": cpu,
        "code": proc.returncode,
        "imports": imports,
        "output": (proc.stdout + proc.stderr)[-2000:],
    }


def run_all(env: dict, engine: Path = ROOT) -> dict[str, dict]:
    """Every command once, in the order a term uses them (fetch before submit before collect)."""
    return {command: run_command(command, env, engine) for command in COMMANDS}


def measure(repeats: int = 3, against: str | None = BASELINE, say=print) -> dict:
    """{engine label: {command: {seconds: [..], cpu: [..], imports}}}: this engine, and the one of
    git revision `against` (when it exists), each in fresh throwaway courses, interleaved."""
    engines = {"now": ROOT}
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as tmp:
        tmp = Path(tmp)
        if against:
            worktree = tmp / "baseline"
            made = subprocess.run(
                ["git", "worktree", "add", "--detach", str(worktree), against], cwd=ROOT, capture_output=True, text=True
            )
            if made.returncode == 0:
                engines[against] = worktree
            else:
                say(f"bench: commands: no baseline ({against}: {made.stderr.strip()[-200:]})")
        try:
            out: dict = {
                label: {c: {"seconds": [], "cpu": [], "first": [], "imports": {}} for c in COMMANDS}
                for label in engines
            }
            for repeat in range(repeats):
                for label, engine in engines.items():
                    env = make_course(tmp / f"{label}-{repeat}", engine)
                    first = run_all(env, engine)
                    for command, got in run_all(env, engine).items():
                        for run in (first[command], got):
                            if run["code"] != 0:
                                raise RuntimeError(f"{label}: `{command}` failed:\n{run['output']}")
                        entry = out[label][command]
                        entry["seconds"].append(round(got["seconds"], 3))
                        entry["cpu"].append(round(got["cpu"], 3))
                        entry["first"].append(round(first[command]["seconds"], 3))
                        entry["imports"] = got["imports"]
                    say(
                        f"bench: commands ({label}), repeat {repeat + 1}: "
                        + ", ".join(f"{c} {out[label][c]['seconds'][-1]:.2f} s" for c in COMMANDS)
                    )
            return {
                "engines": out,
                "against": against if against in engines else None,
                "repeats": repeats,
                "target": TARGET_SECONDS,
            }
        finally:
            if len(engines) > 1:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(engines[against])], cwd=ROOT, capture_output=True
                )


def section(results: dict) -> tuple[list[str], list]:
    """BENCHMARKS.md's section: a row per command, this engine beside the baseline."""
    from statistics import median

    engines = results["engines"]
    against = results.get("against")
    labels = ["now"] + ([against] if against else [])
    lines = [
        f"Each command run as `python -m autograder <command>` in a throwaway course, {results['repeats']} "
        "times per engine, interleaved, the everyday case (the course already set up: nothing new to "
        "fetch, a second submission to collect): median wall-clock seconds (CPU seconds of the command "
        "and the processes it started). `imports`: what the command imported (torch, a step's checks, "
        "nbgrader; fetch, submit and collect run nbgrader's own command in a process of its own)."
        + (
            f" `{against}` is the engine before these commands stopped importing what they do not use."
            if against
            else ""
        ),
        "",
        "| command | "
        + " | ".join(f"{label}: s (CPU s) | {label}: imports" for label in labels)
        + (" | CPU ratio |" if against else " |"),
        "|---|" + "---|---|" * len(labels) + ("---|" if against else ""),
    ]
    verdicts = []
    for command in COMMANDS:
        cells = []
        for label in labels:
            e = engines[label][command]
            imported = ", ".join(k for k, v in sorted(e["imports"].items()) if v) or "none of them"
            cells += [f"{median(e['seconds']):.2f} ({median(e['cpu']):.2f})", imported]
        row = f"| make {command} | " + " | ".join(cells)
        if against:
            row += f" | {median(engines[against][command]['cpu']) / max(median(engines['now'][command]['cpu']), 1e-3):.1f}x"
        lines.append(row + " |")
        now = median(engines["now"][command]["seconds"])
        cpu = median(engines["now"][command]["cpu"])
        # on a shared machine the CPU seconds (the command's processes run one after the other) are
        # what the command takes on an idle one; the wall-clock figure is given beside them
        verdicts.append(
            (
                f"make {command} under {results['target']:g} s on an idle machine (its CPU seconds)",
                cpu < results["target"],
                f"{cpu:.2f} CPU s ({now:.2f} s wall)",
            )
        )
    lines += [
        "",
        "The first time, in a new course (fetch releases the step into the exchange, collect opens a "
        "new gradebook), median seconds: "
        + "; ".join(
            f"{label}: " + ", ".join(f"{c} {median(engines[label][c]['first']):.2f}" for c in COMMANDS)
            for label in labels
        )
        + ".",
        "",
        "A wall-clock figure depends on what else the machine runs (see the load average above); the "
        "CPU seconds less so.",
    ]
    return lines, verdicts


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--against", default=BASELINE, help="git revision to compare with ('' for none)")
    args = parser.parse_args(argv)
    results = measure(args.repeats, args.against or None)
    print("\n".join(section(results)[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
