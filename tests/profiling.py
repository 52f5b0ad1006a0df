"""Where the suite's time goes: `make test` runs with this plugin on (TEST_PROFILE=folder); `make
test-profile` then puts the table into tests/README.md.

Each test worker appends one line per test (its module, wall time of setup + call + teardown, and the CPU
time of the worker's whole process tree: the worker, the processes it waited for, and every descendant
still running or reaped by a descendant, such as the grader's fork server, its workers and their
kernels, a JupyterLab server, Chromium) and one line per fixture set up (wall and CPU, including the
fixtures it asked for; the tree is read for fixtures wider than a function's; its module, the module of
the test it was set up for: for a session's fixture, the test that first asked for it on that worker) to
`$TEST_PROFILE/<worker>.jsonl`; at the end of the run the controller sums them into a table sorted by
wall time, per module and per fixture, printed and written to `$TEST_PROFILE/profile.md`.
`python tests/profiling.py FOLDER --readme` puts that table into tests/README.md.

Under `--dist loadscope` a module runs on one worker, so a module's wall time is the time it held that
worker. The tree's CPU time is read from /proc (each descendant's own and its reaped children's time);
what a daemon that left the tree used (PostgreSQL's server, Slurm's daemons) is not counted, nor a batch
another worker graded for this one (`run_once`), nor a warm kernel once it has ended (its template lets
the system reap it: its time is in its result's `cpu_seconds`, read from its control group): where CPU
is far below wall, the tests were waiting (on such a batch, a time limit, a loaded machine) or their
kernels were warm.
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent / "README.md"
BEGIN, END = "<!-- profile: begin -->", "<!-- profile: end -->"


def _cpu() -> float:
    """CPU seconds of this process and of the children it reaped."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _tree_cpu() -> float:
    """CPU seconds of this process's whole tree: for it and every descendant still running, its own time
    and its reaped children's (/proc/<pid>/stat: utime, stime, cutime, cstime; the grader's own reading,
    autograder.kernel.cgroups.tree_cpu_seconds). A process that ends between two readings moves from its
    own line into its parent's, so the difference of two readings is what the tree used between them."""
    from autograder.kernel.cgroups import tree_cpu_seconds  # here: `python tests/profiling.py` runs without it

    return tree_cpu_seconds(os.getpid())


class Profiler:
    OWNER = "TEST_PROFILE_OWNER"  # the pid of the run that records; its xdist workers are its children

    @classmethod
    def records_here(cls) -> bool:
        """True in the run `make test` started and in its xdist workers; False in a pytest run that a test
        starts (tests/test_markers.py, tests/test_browser_setup.py), which inherits TEST_PROFILE but is
        part of its test's time, not a run of its own."""
        owner = os.environ.get(cls.OWNER)
        if owner is None:
            os.environ[cls.OWNER] = str(os.getpid())
            return "PYTEST_XDIST_WORKER" not in os.environ
        return "PYTEST_XDIST_WORKER" in os.environ and str(os.getppid()) == owner

    def __init__(self, folder: Path):
        self.folder = folder
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.started = time.monotonic()
        self.module = ""  # the module of the test being run: the one its fixtures are set up for
        folder.mkdir(parents=True, exist_ok=True)

    def _write(self, row: dict) -> None:
        with open(self.folder / f"{self.worker}.jsonl", "a") as out:
            out.write(json.dumps(row) + "\n")

    def _measured(self, reading, row: dict):
        """A hook wrapper's body: `row` written once the hook has run, with the module of the test being
        run, the wall time and the CPU time (`reading`) it took, the worker and when it ended."""
        wall, cpu = time.monotonic(), reading()
        yield
        self._write({**row, "module": self.module, "wall": time.monotonic() - wall, "cpu": reading() - cpu,
                     "worker": self.worker, "ended": time.time()})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.module = Path(str(item.fspath)).stem
        yield from self._measured(_tree_cpu, {"kind": "test", "test": item.nodeid})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        reading = _cpu if fixturedef.scope == "function" else _tree_cpu
        row = {"kind": "fixture", "fixture": fixturedef.argname, "scope": fixturedef.scope}
        yield from self._measured(reading, row)

    def pytest_sessionfinish(self, session):
        if self.worker != "main":
            return
        self._write(
            {
                "kind": "session",
                "wall": time.monotonic() - self.started,
                "workers": getattr(session.config.option, "numprocesses", None) or 1,
            }
        )
        table = summarise(self.folder)
        (self.folder / "profile.md").write_text(table)

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker == "main" and (self.folder / "profile.md").exists():
            terminalreporter.section("profile")
            for line in (self.folder / "profile.md").read_text().splitlines():
                terminalreporter.write_line(line)


def read(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def summarise(folder: Path, top_fixtures: int = 25) -> str:
    rows = read(folder)
    session = max((r for r in rows if r["kind"] == "session"), key=lambda r: r["wall"], default=None)
    modules: dict[str, dict] = defaultdict(lambda: {"tests": 0, "wall": 0.0, "cpu": 0.0, "workers": set()})
    for r in rows:
        if r["kind"] == "test":
            m = modules[r["module"]]
            m["tests"] += 1
            m["wall"] += r["wall"]
            m["cpu"] += r["cpu"]
            m["workers"].add(r["worker"])
    fixtures: dict[tuple, dict] = defaultdict(lambda: {"setups": 0, "wall": 0.0, "cpu": 0.0, "modules": set()})
    for r in rows:
        if r["kind"] == "fixture" and r["wall"] >= 0.05:
            f = fixtures[(r["fixture"], r["scope"])]
            f["setups"] += 1
            f["wall"] += r["wall"]
            f["cpu"] += r["cpu"]
            f["modules"].add(r["module"])
    busy = sum(m["wall"] for m in modules.values())
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} cores"
        + (
            f", {session['workers']} test workers: the run took {session['wall'] / 60:.1f} min of wall time"
            f", the workers were busy {busy / 60:.1f} min in all."
            if session
            else "."
        ),
        "",
        "| module | tests | wall s | CPU s | share of the workers' time |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, m in sorted(modules.items(), key=lambda kv: -kv[1]["wall"]):
        lines.append(f"| {name} | {m['tests']} | {m['wall']:.0f} | {m['cpu']:.0f} | {100 * m['wall'] / busy:.1f} % |")
    lines += [
        "",
        "Fixtures (set-up time, including the fixtures each one asks for; the slowest "
        f"{top_fixtures}, set-ups under 0.05 s left out):",
        "",
        "| fixture | scope | set-ups | wall s | CPU s | modules |",
        "|---|---|---:|---:|---:|---|",
    ]
    ranked = sorted(fixtures.items(), key=lambda kv: -kv[1]["wall"])[:top_fixtures]
    for (name, scope), f in ranked:
        mods = sorted(f["modules"])
        shown = ", ".join(mods[:3]) + (f" and {len(mods) - 3} more" if len(mods) > 3 else "")
        lines.append(f"| {name} | {scope} | {f['setups']} | {f['wall']:.0f} | {f['cpu']:.0f} | {shown} |")
    return "\n".join(lines) + "\n"


def into_readme(table: str, readme: Path = README) -> None:
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme}: no {BEGIN} ... {END} section to put the profile in")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python tests/profiling.py FOLDER [--readme]")
    table = summarise(Path(sys.argv[1]))
    print(table)
    if "--readme" in sys.argv:
        into_readme(table)
