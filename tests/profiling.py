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

Every process, sampled: the controller (xdist's, or the one process without xdist) starts a sampler, a
small process of its own (`python tests/profiling.py --sample FOLDER PID`), which every `EVERY` seconds
reads every process's CPU time from /proc and gives what each used since the last reading to the module
its worker is running then (`$TEST_PROFILE/<worker>.now`, written by the worker as each test starts).
A process counts for the worker it was below when the sampler first saw it (its pid and start time):
one that left the tree since (Chromium's zygote, a daemon, a warm kernel the system reaps) still counts
for that worker; one first seen outside the run's tree (other work on the machine, and a daemon that
left the tree before the first reading) never counts. A process's last seconds, once it ended, count
where its parent's do if the parent waited for it, else are lost: nothing is made up. Between two
readings a worker that changed modules splits the CPU between the module it ran at each, by the time
each held it. The sampler writes `$TEST_PROFILE/sampler.jsonl` when the controller closes its stdin:
the CPU per module, the run's CPU no module was running on (the controller's, a worker's before its
first test), its own CPU, and the machine's busy and idle CPU time from /proc/stat over the run.

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
import select
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import pytest

README = Path(__file__).resolve().parent / "README.md"
BEGIN, END = "<!-- profile: begin -->", "<!-- profile: end -->"
EVERY = float(os.environ.get("TEST_PROFILE_EVERY", "1"))  # seconds between two readings of every process
_TICK = os.sysconf("SC_CLK_TCK")


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
        self.since = 0.0  # when the worker started its first test of that module (time.time())
        self.sampler: subprocess.Popen | None = None
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
        module = Path(str(item.fspath)).stem
        if module != self.module:
            self.module, self.since = module, time.time()
        self._now(item.nodeid)
        yield from self._measured(_tree_cpu, {"kind": "test", "test": item.nodeid})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        reading = _cpu if fixturedef.scope == "function" else _tree_cpu
        row = {"kind": "fixture", "fixture": fixturedef.argname, "scope": fixturedef.scope}
        yield from self._measured(reading, row)

    def _now(self, nodeid: str) -> None:
        """What this worker runs now, for the sampler: its pid, the module and since when, the test (here,
        not in pytest_runtest_logstart, which xdist's controller is given too)."""
        now = self.folder / f"{self.worker}.now"
        part = now.with_suffix(".now-part")
        part.write_text(json.dumps({"pid": os.getpid(), "module": self.module, "since": self.since, "test": nodeid}))
        os.replace(part, now)

    def pytest_sessionstart(self, session):
        if self.worker == "main":  # before xdist starts its workers (its hook is trylast)
            for stale in self.folder.glob("*.now"):  # an earlier run's: its pids may be reused
                stale.unlink()
            command = [sys.executable, str(Path(__file__).resolve()), "--sample", str(self.folder), str(os.getpid())]
            self.sampler = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.sampler.stdout.readline()  # its first reading is made: what the run does from now on counts

    def pytest_sessionfinish(self, session):
        if self.worker != "main":
            return
        if self.sampler is not None:  # its last reading, then its row in sampler.jsonl
            self.sampler.stdin.close()
            try:
                self.sampler.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.sampler.kill()
                self.sampler.wait()
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


class Proc(NamedTuple):
    """One process as /proc/<pid>/stat shows it."""

    ppid: int
    start: int  # clock ticks after boot: with its pid, it names one process (pids are reused)
    own: float  # CPU seconds, user and system (utime, stime)
    reaped: float  # CPU seconds of the children it waited for (cutime, cstime)


def parse_stat(text: str) -> tuple[int, Proc]:
    """/proc/<pid>/stat's pid and the fields a Proc keeps (the name, in brackets, may hold spaces)."""
    fields = text.rpartition(")")[2].split()  # fields[0] is the stat's field 3, the state
    pid = int(text.split(None, 1)[0])
    own, reaped = int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    return pid, Proc(int(fields[1]), int(fields[19]), own / _TICK, reaped / _TICK)


def read_procs(proc: str = "/proc") -> dict[int, Proc]:
    """Every process now."""
    procs = {}
    for name in os.listdir(proc):
        if name.isdigit():
            try:  # os.open and os.read: half the CPU of open()'s buffered file
                fd = os.open(f"{proc}/{name}/stat", os.O_RDONLY)
                try:
                    text = os.read(fd, 4096).decode(errors="replace")
                finally:
                    os.close(fd)
            except OSError:  # it ended
                continue
            pid, p = parse_stat(text)
            procs[pid] = p
    return procs


def machine_cpu(stat: str = "/proc/stat") -> tuple[float, float]:
    """The machine's CPU seconds since boot, all CPUs together: busy (user, nice, system, irq, softirq,
    steal) and idle (idle, iowait)."""
    with open(stat) as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / _TICK, (idle + iowait) / _TICK


def read_now(folder: Path) -> dict[int, tuple[str, float]]:
    """What each worker runs now (`<worker>.now`): its pid -> (module, since when)."""
    now = {}
    for path in folder.glob("*.now"):
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        now[row["pid"]] = (row["module"], row["since"])
    return now


def split(used: float, t0: float | None, t1: float, before: str | None, module: str | None,
          since: float) -> list[tuple[str | None, float]]:
    """The CPU a worker's processes `used` between readings at t0 and t1, by module: a worker that ran
    `before` at t0 and `module` (since `since`) at t1 gives each the share of the interval it held it."""
    if t0 is None or before == module or not t0 < since < t1:
        return [(module, used)]
    first = used * (since - t0) / (t1 - t0)
    return [(before, first), (module, used - first)]


class Seen(NamedTuple):
    start: int
    lane: int | None  # the run's worker it counts for (a child of the run's pid, or that pid); None: not the run's
    ppid: int  # at the last reading
    own: float
    reaped: float


class Attribution:
    """The run's CPU by module, from readings of every process (`read_procs`) and of what each worker is
    running (`read_now`). Only processes below `root` (the run's pid) when first seen count, each for the
    worker (`lane`) below which it was; `exclude` (the sampler) never counts."""

    def __init__(self, root: int, exclude: tuple[int, ...] = ()):
        self.root, self.exclude = root, set(exclude)
        self.seen: dict[int, Seen] = {}
        self.at: float | None = None  # the last reading's time
        self.running: dict[int, str | None] = {}  # a worker's pid -> the module it ran at the last reading
        self.modules: dict[str | None, float] = defaultdict(float)  # None: the run's CPU while no module ran

    def _lanes(self, procs: dict[int, Proc], fresh: set[int], alone: bool) -> dict[int, int | None]:
        """The worker each process seen for the first time counts for, from its ancestry now. `alone`: the
        run's own process runs the tests (no xdist: it is the one worker), so its children count for it,
        as a worker's do; under xdist each child of the run's pid is a worker, its own lane."""
        lanes: dict[int, int | None] = {}

        def lane(pid: int) -> int | None:
            if pid not in lanes:
                lanes[pid] = None  # a loop in the ancestry (a pid reused under us) ends outside
                ppid = procs[pid].ppid
                if pid in self.exclude:
                    found = None
                elif pid == self.root:
                    found = pid
                elif ppid == self.root:
                    found = self.root if alone else pid
                elif ppid in procs and ppid not in fresh:
                    found = self.seen[ppid].lane
                elif ppid in procs:
                    found = lane(ppid)
                else:
                    found = None
                lanes[pid] = found
            return lanes[pid]

        for pid in fresh:
            lane(pid)
        return lanes

    def read(self, t: float, procs: dict[int, Proc], now: dict[int, tuple[str, float]]) -> dict[str | None, float]:
        """One reading at time t: what the run's processes used since the last one, given to modules (and
        added to `modules`). The first reading is the baseline: it gives nothing."""
        seen = self.seen
        fresh = {pid for pid, p in procs.items() if pid not in seen or seen[pid].start != p.start}
        gone = {pid for pid, s in seen.items() if pid not in procs or procs[pid].start != s.start}
        # what a process that ended had used by its last reading is in its reaper's `reaped` now, if it was
        # waited for: owed by the first of its ancestors (when last seen) that still runs
        owed: dict[int, float] = defaultdict(float)
        for pid in gone:
            if seen[pid].lane is None:
                continue
            up, steps = seen[pid].ppid, 0
            while up in gone and steps < 1000:
                up, steps = seen[up].ppid, steps + 1
            if up in seen and up not in gone:
                owed[up] += seen[pid].own + seen[pid].reaped
        lanes = self._lanes(procs, fresh, alone=self.root in now)
        used: dict[int, float] = defaultdict(float)
        for pid, p in procs.items():
            lane = lanes[pid] if pid in fresh else seen[pid].lane
            if lane is None:
                continue
            if pid not in fresh:  # an ended child's last seconds, never less than nothing: none made up
                s = seen[pid]
                used[lane] += p.own - s.own + max(0.0, p.reaped - s.reaped - owed[pid])
            elif self.at is not None:  # started since the last reading
                used[lane] += p.own + p.reaped
        given: dict[str | None, float] = defaultdict(float)
        for lane, cpu in used.items():
            module, since = now.get(lane, (None, t))
            for name, share in split(cpu, self.at, t, self.running.get(lane), module, since):
                if share > 0:
                    given[name] += share
                    self.modules[name] += share
        for lane in {*used, *now}:
            self.running[lane] = now.get(lane, (None, t))[0]
        self.seen = {
            pid: Seen(p.start, lanes[pid] if pid in fresh else seen[pid].lane, p.ppid, p.own, p.reaped)
            for pid, p in procs.items()
        }
        self.at = t
        return dict(given)


def sample(folder: Path, root: int, every: float = EVERY) -> None:
    """The sampler's process: reads every `every` seconds until its stdin closes (or the controller ends),
    then writes its row to `folder/sampler.jsonl`."""
    attribution = Attribution(root, exclude=(os.getpid(),))
    began, (busy, idle) = time.time(), machine_cpu()
    readings = 0
    while True:
        attribution.read(time.time(), read_procs(), read_now(folder))
        if not readings:
            print("ready", flush=True)
        readings += 1
        if select.select([sys.stdin], [], [], every)[0]:  # the controller closed it: the run is over
            break
    attribution.read(time.time(), read_procs(), read_now(folder))
    ended, (busy_end, idle_end) = time.time(), machine_cpu()
    own = resource.getrusage(resource.RUSAGE_SELF)
    modules = {name: cpu for name, cpu in attribution.modules.items() if name is not None}
    row = {"kind": "sampler", "every": every, "readings": readings + 1, "wall": ended - began,
           "own_cpu": own.ru_utime + own.ru_stime, "modules": modules,
           "unattributed": attribution.modules.get(None, 0.0),
           "machine_busy": busy_end - busy, "machine_idle": idle_end - idle, "ended": ended}
    part = folder / "sampler.part"
    part.write_text(json.dumps(row) + "\n")
    os.replace(part, folder / "sampler.jsonl")


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
    sampler = next((r for r in rows if r["kind"] == "sampler"), None)
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} cores"
        + (
            f", {session['workers']} test workers: the run took {session['wall'] / 60:.1f} min of wall time"
            f", the workers were busy {busy / 60:.1f} min in all."
            if session
            else "."
        ),
    ]
    if sampler:
        lines.append(sampled_header(sampler))
    lines += [
        "",
        "| module | tests | wall s | CPU s | CPU s, every process | share of the workers' time |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in sorted(modules.items(), key=lambda kv: -kv[1]["wall"]):
        every = f"{sampler['modules'].get(name, 0.0):.0f}" if sampler else "-"
        lines.append(
            f"| {name} | {m['tests']} | {m['wall']:.0f} | {m['cpu']:.0f} | {every} | {100 * m['wall'] / busy:.1f} % |"
        )
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


def sampled_header(sampler: dict) -> str:
    """The table's line on the sampled column: what the run's processes used, what the modules got of it,
    what the machine's CPUs did over the run, and what the sampler cost."""
    given = sum(sampler["modules"].values())
    total = given + sampler["unattributed"]
    busy, idle, own = sampler["machine_busy"], sampler["machine_idle"], sampler["own_cpu"]
    return (
        f"CPU s, every process: each process's CPU read from /proc every {sampler['every']:g} s"
        f" ({sampler['readings']} readings; the sampler used {own:.1f} s of CPU,"
        f" {100 * own / max(sampler['wall'], 1e-9):.2f} % of one CPU): the run's processes used"
        f" {total / 60:.1f} CPU-minutes, {given / 60:.1f} of them given to modules"
        f" ({100 * given / max(total, 1e-9):.1f} %); the machine's CPUs were busy {busy / 60:.1f} CPU-minutes"
        f" and idle {idle / 60:.1f} over the run (/proc/stat), the modules' share of the busy time"
        f" {100 * given / max(busy, 1e-9):.1f} %."
    )


def into_readme(table: str, readme: Path = README) -> None:
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme}: no {BEGIN} ... {END} section to put the profile in")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sample"]:
        sample(Path(sys.argv[2]), int(sys.argv[3]))
        raise SystemExit
    if len(sys.argv) < 2:
        raise SystemExit("usage: python tests/profiling.py FOLDER [--readme]")
    table = summarise(Path(sys.argv[1]))
    print(table)
    if "--readme" in sys.argv:
        into_readme(table)
