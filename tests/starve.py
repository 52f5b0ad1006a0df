"""A busy machine, made on demand and cheaply: the processes inside get a fixed share of a CPU.

A grade must not depend on how busy the machine was (tests/test_busy_machine.py, tests/test_cpu_limits.py).
What a busy machine does to a grading is to give its processes less CPU time per second of the clock:
cells take longer on the clock for the same CPU time, and their processes wait, runnable, for a CPU. A CPU
quota on a control group does exactly that, to the processes inside only, and costs no CPU: `Starved(0.5)`
puts this process (and every process it starts while inside) in a group of the cpu controller with
`cpu.cfs_quota_us` half of `cpu.cfs_period_us` (cgroup v1), so together they get half a CPU, however many
cores are idle (the processes already below this process go in too: multiprocessing's fork server,
started by an earlier grading in this process, forks the next grading's workers). The kernel counts the time a throttled process waits as its run delay
(`/proc/<pid>/schedstat`), as it counts the time it waits behind other processes for a core
(tests/test_cpu_limits.py proves both): the grader's meters see a quota and a core shared with hogs alike.

Processes that only compute (hogs, at the grader's priority) gave the same load before, and burnt one
core each for as long as the grading ran, slowing every other test of the suite; they remain the way
where no cpu controller can be written (cgroup v2, or an unprivileged user): `busy(cpus)` picks the
quota where it can and hogs otherwise, and says which it used (`how`).
"""
from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from autograder.kernel.cgroups import _inside, _mounts, _own_groups, tree_pids

PERIOD_US = 100_000
HOG_SECONDS = 600           # a hog ends by itself after this, whatever happens to the test


def cpu_folder() -> Path | None:
    """This process's group in a writable cgroup v1 hierarchy with the cpu controller, or None."""
    own = _own_groups()
    for kind, point, root, options in _mounts():
        if kind == "cgroup" and "cpu" in options and "cpu" in own:
            folder = _inside(point, root, own["cpu"])
            if (folder / "cpu.cfs_quota_us").exists() and os.access(folder, os.W_OK):
                return folder
    return None


def _hog(seconds: float, cpu: int | None = None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


class Starved:
    """This process, the processes below it (a pool's fork server started before, which will fork the
    grading's workers), and what they start while inside, in a new cpu group whose quota is `cpus` CPUs.

    `leave()` takes this process out early (its children stay in); on exit every process still in the
    group goes back to the group this process came from, and the group is removed. `throttled_seconds`
    is the time the group was held back (its cpu.stat), read at exit."""

    how = "quota"

    def __init__(self, cpus: float, folder: Path | None = None):
        self.cpus = cpus
        self.home = folder or cpu_folder()
        if self.home is None:
            raise RuntimeError("no writable cgroup v1 cpu controller: use busy(), which falls back to hogs")
        self.group = self.home / f"starved-{os.getpid()}-{time.monotonic_ns()}"
        self.throttled_seconds = 0.0

    def __enter__(self):
        self.group.mkdir()
        (self.group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (self.group / "cpu.cfs_quota_us").write_text(str(max(1000, int(self.cpus * PERIOD_US))))
        for pid in tree_pids(os.getpid()):
            try:
                (self.group / "cgroup.procs").write_text(str(pid))
            except OSError:               # it ended meanwhile
                pass
        return self

    def leave(self) -> None:
        (self.home / "cgroup.procs").write_text(str(os.getpid()))

    def __exit__(self, *exc):
        for _ in range(50):
            pids = (self.group / "cgroup.procs").read_text().split()
            if not pids:
                break
            for pid in pids:
                try:
                    (self.home / "cgroup.procs").write_text(pid)
                except OSError:           # it ended meanwhile
                    pass
        stat = dict(line.split() for line in (self.group / "cpu.stat").read_text().splitlines() if line.strip())
        self.throttled_seconds = int(stat.get("throttled_time", 0)) / 1e9
        self.group.rmdir()


class Hogs:
    """Processes that only compute, for at most HOG_SECONDS: `per_core` on every core this process may
    use, or, with `core`, `per_core` on that one core with this process (and what it starts inside)
    moved to it too."""

    how = "hogs"

    def __init__(self, per_core: int = 1, core: bool = False):
        self.per_core, self.core = per_core, core
        self.throttled_seconds = 0.0

    def __enter__(self):
        self.mine = os.sched_getaffinity(0)
        cores = [min(self.mine)] if self.core else sorted(self.mine)
        context = multiprocessing.get_context("fork")
        self.procs = [context.Process(target=_hog, args=(HOG_SECONDS, cpu if self.core else None), daemon=True)
                      for cpu in cores for _ in range(self.per_core)]
        for proc in self.procs:
            proc.start()
        if self.core:
            os.sched_setaffinity(0, set(cores))
        return self

    def leave(self) -> None:
        os.sched_setaffinity(0, self.mine)

    def __exit__(self, *exc):
        self.leave()
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.join()


def busy(cpus: float, hogs: Hogs | None = None):
    """A busy machine for what runs inside: `cpus` CPUs of quota where a cpu controller is writable, else
    the hogs given (by default one per core, at the grader's priority: about half of each core left)."""
    if cpu_folder() is not None:
        return Starved(cpus)
    return hogs or Hogs()
