"""Control groups for grading kernels: one per kernel, holding the kernel and every process it starts.

Per-process limits (autograder/kernel/limits.py: address space, processes of a uid, descriptors) do not
bound a kernel that splits its memory over forked children or fills its in-memory folders: what
a kernel and its children use together is what a control group measures and limits. Each kernel
gets a group of its own before it runs any code (a cold kernel's limit wrapper joins it before it
starts bubblewrap; a warm kernel is forked by its template while the template is in it), with
  * memory: `memory.limit_in_bytes` (cgroup v1) or `memory.max` (v2) = Limits.memory_bytes, for
    the kernel, its children and the pages of its in-memory folders (/tmp, /dev/shm and its
    working folder are tmpfs mounts the kernel's processes touch: their pages are charged to the
    group that wrote them, and freed with the kernel's mount namespace);
  * processes: `pids.max` (threads count too) = limits.KERNEL_PROCESSES;
  * CPU time: read, not limited (`cpuacct.usage` in v1, `cpu.stat` in v2): a cell's budget is the
    CPU time its kernel's processes used (autograder/kernel/execute.py), whatever else the machine runs.
Its peaks (memory, processes) and the kernels the memory limit ended are read before the group is
removed, and go into the notebook's result.

Where the groups live: below the grader's own group in each hierarchy (so that whatever limits the
grader's machine puts on the grader still hold for its kernels), in a folder `autograder/`:
  * cgroup v1 (the machines this course runs on: memory, pids and cpuacct hierarchies mounted
    read-write): `<hierarchy>/<the grader's group>/autograder/<owner>-<n>` in each of the three;
  * cgroup v2: one folder `<base>/autograder/<owner>-<n>`, where <base> is $AUTOGRADER_CGROUP, a
    delegated subtree the grader may write (e.g. `systemd-run --scope -p Delegate=yes ...` and the
    scope's folder), or the grader's own group when it is the hierarchy's root (a container with a
    cgroup namespace of its own). The memory and pids controllers are enabled for the groups
    below <base>; processes of <base> itself (the grader's, in a delegated scope) are first moved
    into a leaf <base>/grader, as cgroup v2 requires of a group that hands controllers down.
Where neither is writable (an unprivileged user, a container without its cgroups), `detect()`
says why, the run says so once, and kernels run under the per-process limits only.

Clean-up: a kernel's group is removed when the kernel is replaced or its notebook is done (every
process left in it killed first). `<owner>` is the grading process's pid and start time: a grader
that died (kill -9, a crash) leaves groups whose owner is gone, and the next grading run removes
them (`sweep`), so no group outlives the runs that follow.
"""

from __future__ import annotations

import errno
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GraderError

V1_CONTROLLERS = ("memory", "pids", "cpuacct")
V2_CONTROLLERS = ("memory", "pids")  # cpu.stat is there without the cpu controller
FOLDER = "autograder"
BASE_ENV = "AUTOGRADER_CGROUP"


def _read(path: Path) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def _write(path: Path, value) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(str(value))


def _start_time(pid: int) -> str | None:
    """The start time of a process (field 22 of /proc/<pid>/stat), None if it is gone."""
    try:
        stat = _read(Path(f"/proc/{pid}/stat"))
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def owner_tag(pid: int | None = None) -> str:
    """What names a group's owner: `<pid>.<start time>` (a pid alone may be reused)."""
    pid = pid or os.getpid()
    return f"{pid}.{_start_time(pid)}"


def _owner_alive(name: str) -> bool:
    tag = name.rsplit("-", 1)[0]
    pid, _, start = tag.partition(".")
    return pid.isdigit() and _start_time(int(pid)) == start


# ---- what this machine has -----------------------------------------------------------------------------


def _mounts() -> list[tuple[str, Path, str, set[str]]]:
    """(filesystem type, mount point, root within the hierarchy, super options) of each cgroup mount."""
    out = []
    try:
        lines = _read(Path("/proc/self/mountinfo")).splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        point = Path(fields[4].replace("\\040", " "))
        out.append((tail[0], point, fields[3], set(tail[2].split(","))))
    return out


def _own_groups(pid: str = "self") -> dict[str, str]:
    """Controller (or "" for cgroup v2) -> this process's group path, from /proc/<pid>/cgroup."""
    out = {}
    try:
        lines = _read(Path(f"/proc/{pid}/cgroup")).splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _inside(point: Path, root: str, path: str) -> Path:
    """The folder of group `path` in a hierarchy mounted at `point` whose mount shows group `root`."""
    root = root.rstrip("/")
    relative = path[len(root) :] if root and (path == root or path.startswith(root + "/")) else path
    return point / relative.lstrip("/")


class Unavailable(GraderError):
    """No control group can be made for kernels here (the message says why)."""


@dataclass
class Cgroups:
    """Where this machine lets the grader make kernel groups."""

    version: int  # 1 or 2
    bases: dict[str, Path]  # v1: controller -> this run's folder; v2: {"": the folder}

    def where(self) -> str:
        return ", ".join(str(p) for p in self.bases.values())

    def group(self, memory_bytes: int, processes: int) -> "KernelGroup":
        """A new, empty group with these limits (owned by this process)."""
        name = f"{owner_tag()}-{secrets.token_hex(4)}"
        dirs = {key: base / name for key, base in self.bases.items()}
        made = []
        try:
            for folder in dirs.values():
                folder.mkdir()
                made.append(folder)
            group = KernelGroup(self.version, dirs)
            group.set_limits(memory_bytes, processes)
            return group
        except OSError as err:
            for folder in reversed(made):
                _remove(folder)
            raise Unavailable(f"a control group could not be made in {self.where()}: {err}") from None

    def worker_group(self, memory_bytes: int) -> "KernelGroup":
        """A new group for a grading worker process (and the template it starts), limited in memory:
        a worker that a kernel's messages made hold too much ends alone (autograder/grading/worker.py).
        Named for its owner, so that `sweep` removes it once the worker is gone."""
        name = f"{owner_tag()}-worker"
        dirs = {key: base / name for key, base in self.bases.items()}
        made = []
        try:
            for folder in dirs.values():
                folder.mkdir(exist_ok=True)
                made.append(folder)
            group = KernelGroup(self.version, dirs)
            group.set_limits(memory_bytes, 0)
            return group
        except OSError as err:
            for folder in reversed(made):
                _remove(folder)
            raise Unavailable(
                f"a control group for a grading worker could not be made in {self.where()}: {err}"
            ) from None

    def sweep(self) -> int:
        """Remove the groups of graders that are gone (killed, crashed); how many were removed."""
        removed = 0
        names = set()
        for base in self.bases.values():
            try:
                names |= {e.name for e in os.scandir(base) if e.is_dir() and e.name != "grader"}
            except OSError:
                continue
        for name in sorted(names):
            if _owner_alive(name):
                continue
            group = KernelGroup(self.version, {k: b / name for k, b in self.bases.items() if (b / name).is_dir()})
            if group.close():
                removed += 1
        return removed


def detect() -> Cgroups:
    """The kernel groups this machine allows; Unavailable says why there are none."""
    mounts = _mounts()
    own = _own_groups()
    chosen = os.environ.get(BASE_ENV)
    v1 = {}
    for kind, point, root, options in mounts:
        if kind == "cgroup":
            for controller in V1_CONTROLLERS:
                if controller in options and controller in own:
                    v1[controller] = _inside(point, root, own[controller]) / FOLDER
    if not chosen and set(v1) == set(V1_CONTROLLERS):
        return _ready_v1(v1)
    unified = [(point, root) for kind, point, root, _ in mounts if kind == "cgroup2"]
    if chosen:
        base = Path(chosen)
        if (base / "cgroup.controllers").exists():
            return _ready_v2(base, delegated=True)
        raise Unavailable(f"${BASE_ENV}={chosen} is not a folder of a cgroup v2 hierarchy")
    if unified and "" in own:
        point, root = unified[0]
        base = _inside(point, root, own[""])
        if base == point:  # the hierarchy's root (a container's own cgroup namespace): no leaf rule
            return _ready_v2(base, delegated=False)
        missing_v1 = [c for c in V1_CONTROLLERS if c not in v1]
        raise Unavailable(
            f"cgroup v2 ({base}) is not delegated to the grader (run it in a delegated subtree: "
            f"systemd-run --scope -p Delegate=yes …, and set ${BASE_ENV} to that scope's folder)"
            + (f"; no cgroup v1 {', '.join(missing_v1)} hierarchy either" if len(missing_v1) < 3 else "")
        )
    missing = [c for c in V1_CONTROLLERS if c not in v1]
    raise Unavailable(f"no cgroup hierarchy with {', '.join(missing)} is mounted")


def _ready_v1(dirs: dict[str, Path]) -> Cgroups:
    for controller, folder in dirs.items():
        try:
            folder.mkdir(exist_ok=True)
            if controller == "memory":
                # a group's usage includes its children's (the v1 default on every current kernel)
                if (folder / "memory.use_hierarchy").exists() and _read(folder / "memory.use_hierarchy").strip() != "1":
                    raise Unavailable(f"{folder}: memory.use_hierarchy is off")
        except OSError as err:
            raise Unavailable(
                f"the cgroup v1 {controller} hierarchy is not writable here ({folder}: {err.strerror or err})"
            ) from None
    return Cgroups(1, dirs)


def _ready_v2(base: Path, delegated: bool) -> Cgroups:
    try:
        available = set(_read(base / "cgroup.controllers").split())
        missing = [c for c in V2_CONTROLLERS if c not in available]
        if missing:
            raise Unavailable(f"cgroup v2 at {base} offers no {', '.join(missing)} controller")
        if not set(V2_CONTROLLERS) <= set(_read(base / "cgroup.subtree_control").split()):
            _hand_down(base, delegated)
        folder = base / FOLDER
        folder.mkdir(exist_ok=True)
        if not set(V2_CONTROLLERS) <= set(_read(folder / "cgroup.subtree_control").split()):
            _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in V2_CONTROLLERS))
    except OSError as err:
        raise Unavailable(f"cgroup v2 at {base} is not writable here ({err.strerror or err})") from None
    return Cgroups(2, {"": folder})


def _hand_down(base: Path, delegated: bool) -> None:
    """Enable the controllers for the groups below `base`. A v2 group that hands controllers down
    may hold no process itself: in a delegated subtree the processes there (the grader's own) move
    into a leaf `grader` first."""
    enable = " ".join(f"+{c}" for c in V2_CONTROLLERS)
    try:
        _write(base / "cgroup.subtree_control", enable)
        return
    except OSError as err:
        if err.errno != errno.EBUSY or not delegated:
            raise
    leaf = base / "grader"
    leaf.mkdir(exist_ok=True)
    for pid in _read(base / "cgroup.procs").split():
        try:
            _write(leaf / "cgroup.procs", pid)
        except ProcessLookupError:
            pass
    _write(base / "cgroup.subtree_control", enable)


# ---- one kernel's group ---------------------------------------------------------------------------------


@dataclass
class KernelGroup:
    """The group of one kernel: `dirs` maps a v1 controller (or "" for v2) to its folder."""

    version: int
    dirs: dict[str, Path]
    closed: bool = field(default=False)

    def _dir(self, controller: str) -> Path | None:
        return self.dirs.get("" if self.version == 2 else controller)

    def set_limits(self, memory_bytes: int, processes: int) -> None:
        if self.version == 1:
            memory = self.dirs["memory"]
            _write(memory / "memory.limit_in_bytes", memory_bytes)
            # with swap accounting, memory + swap too: no way around the limit through swap
            if (memory / "memory.memsw.limit_in_bytes").exists():
                _write(memory / "memory.memsw.limit_in_bytes", memory_bytes)
            if processes:
                _write(self.dirs["pids"] / "pids.max", processes)
        else:
            folder = self.dirs[""]
            _write(folder / "memory.max", memory_bytes)
            if (folder / "memory.swap.max").exists():
                _write(folder / "memory.swap.max", 0)
            if processes:
                _write(folder / "pids.max", processes)

    def procs_files(self) -> list[Path]:
        """The files a process writes its pid into to join the group (every hierarchy's)."""
        return [folder / "cgroup.procs" for folder in self.dirs.values()]

    def join(self, pid: int) -> None:
        """Put process `pid` (all its threads) into the group; the children it starts later follow."""
        for path in self.procs_files():
            _write(path, pid)

    def cpu_seconds(self) -> float:
        """CPU time (user and system) used by every process that has been in the group."""
        if self.version == 1:
            return int(_read(self.dirs["cpuacct"] / "cpuacct.usage")) / 1e9
        for line in _read(self.dirs[""] / "cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        return 0.0

    def peaks(self) -> dict:
        """The highest memory use and process count the group reached (what the machine records of
        them), and how many of its processes the memory limit ended."""
        out: dict = {}
        memory, pids = self._dir("memory"), self._dir("pids")
        for key, path in (
            ("memory_bytes", memory / ("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak")),
            ("processes", pids / "pids.peak"),
        ):
            try:
                out[key] = int(_read(path).split()[0])
            except (OSError, ValueError, IndexError):
                pass
        try:
            events = _read(memory / ("memory.oom_control" if self.version == 1 else "memory.events"))
            out["oom_kills"] = next(
                (int(line.split()[1]) for line in events.splitlines() if line.startswith("oom_kill ")), 0
            )
        except (OSError, ValueError):
            pass
        return out

    def pids(self) -> list[int]:
        """The processes in the group now (in any of its controllers' folders)."""
        found: set[int] = set()
        for folder in self.dirs.values():
            try:
                found |= {int(p) for p in _read(folder / "cgroup.procs").split()}
            except (OSError, ValueError):
                pass
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process in the group (v2: cgroup.kill, which also catches those being forked)."""
        if self.version == 2 and (self.dirs[""] / "cgroup.kill").exists():
            try:
                _write(self.dirs[""] / "cgroup.kill", 1)
                return
            except OSError:
                pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self, wait: float = 10.0) -> bool:
        """Kill what is left in the group and remove its folders; False if one could not be removed."""
        if self.closed:
            return True
        deadline = time.monotonic() + wait
        while True:
            self.kill()
            left = [folder for folder in self.dirs.values() if not _remove(folder)]
            if not left:
                self.closed = True
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def _remove(folder: Path) -> bool:
    try:
        folder.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def home_procs_files() -> list[Path]:
    """The cgroup.procs files of this process's own groups (where a process moved out of them returns)."""
    found = cgroups()
    if found is None:
        return []
    own = _own_groups()
    mounts = _mounts()
    out = []
    for key in found.bases:
        kind = "cgroup2" if found.version == 2 else "cgroup"
        for fs, point, root, options in mounts:
            if fs == kind and (found.version == 2 or key in options) and key in own:
                out.append(_inside(point, root, own[key]) / "cgroup.procs")
                break
    return out


# ---- once per run ---------------------------------------------------------------------------------------

_detected: Cgroups | Unavailable | None = None
_warned = False


def cgroups() -> Cgroups | None:
    """This machine's kernel groups (detected once per process), None where there are none."""
    global _detected
    if _detected is None:
        try:
            _detected = detect()
        except Unavailable as err:
            _detected = err
    return _detected if isinstance(_detected, Cgroups) else None


def problem() -> str | None:
    cgroups()
    return str(_detected) if isinstance(_detected, Unavailable) else None


def resolve(say_once=None) -> Cgroups | None:
    """At the start of a grading run: the kernel groups to use, the leftovers of graders that died
    removed; where there are none, a warning once per run (as for a missing sandbox)."""
    global _warned
    import sys

    found = cgroups()
    if found is not None:
        found.sweep()
        return found
    if not _warned:
        bar = "!" * 78
        print(
            f"{bar}\nWARNING: no control group per kernel: {problem()}.\nEach kernel process is limited on its own "
            "(address space, processes of its uid, descriptors), not a kernel and its\nchildren together: one "
            f"student's processes can use more memory than the limit in all.\n{bar}",
            file=sys.stderr,
            flush=True,
        )
        _warned = True
    return None


# ---- without a group: a kernel's CPU time from /proc ---------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_table() -> tuple[dict[int, list[int]], dict[int, float]]:
    """Every process /proc shows now: its children by parent, and each one's CPU seconds (its own time
    and its children's that it has waited for)."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = _read(Path(entry.path, "stat")).rpartition(")")[2].split()
        except OSError:
            continue
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)  # field 4: ppid
        times[pid] = sum(int(v) for v in fields[11:15]) / _TICK  # fields 14-17: utime stime cutime cstime
    return children, times


def _below(children: dict[int, list[int]], root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def tree_pids(root: int) -> list[int]:
    """Process `root` and every process below it, as /proc shows them now."""
    return _below(_proc_table()[0], root)


def run_delays(pids: list[int]) -> dict[int, float]:
    """Seconds each thread of processes `pids` has spent runnable but waiting for a CPU, by thread id
    (/proc/<pid>/task/<tid>/schedstat, its second field): the time the machine's load cost it."""
    delays: dict[int, float] = {}
    for pid in pids:
        try:
            tasks = os.scandir(f"/proc/{pid}/task")
        except OSError:
            continue
        with tasks:
            for task in tasks:
                try:
                    delays[int(task.name)] = int(_read(Path(task.path, "schedstat")).split()[1]) / 1e9
                except (OSError, ValueError, IndexError):
                    continue
    return delays


def tree_cpu_seconds(root: int) -> float:
    """CPU time (user and system) of process `root` and every process below it, as /proc shows them:
    each one's own time and its children's that it has waited for. (Children that left the tree
    before they ended, double-forked daemons, are not counted: a group counts them.)"""
    children, times = _proc_table()
    return sum(times.get(pid, 0.0) for pid in _below(children, root))
