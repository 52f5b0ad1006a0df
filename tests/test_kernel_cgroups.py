"""One control group per kernel (autograder/kernel/cgroups.py): a kernel, its forked children and its
in-memory folders are limited together, in cold and in warm kernels, in the sandbox; descriptors per
process and processes per kernel are bounded; no group outlives its kernel, a restart or a grader
that was killed; where there are no groups, the run says so once and the kernels still run.

The peaks are the machine's own record (the group's memory.max_usage_in_bytes / memory.peak), read
when the group is removed and kept in the notebook's outcome."""
from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from autograder.kernel import cgroups, sandbox
from autograder.course import kernel_env
from autograder.kernel.execute import Limits, execute
from autograder.kernel.limits import KERNEL_FILES, KERNEL_PROCESSES
from autograder.plugin import kernel_readable
from conftest import STEP4, bwrap_or_skip, kernels_or_skip

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


def needs_cgroups():
    if cgroups.cgroups() is None:
        if os.environ.get("REQUIRE_CGROUPS") == "1":
            pytest.fail(f"REQUIRE_CGROUPS=1, but there are no kernel groups here: {cgroups.problem()}")
        pytest.skip(f"no control groups for kernels here: {cgroups.problem()}")


def groups_of_this_process() -> list[str]:
    found = cgroups.cgroups()
    me = cgroups.owner_tag()
    return sorted(e.name for base in found.bases.values() for e in os.scandir(base)
                  if e.is_dir() and e.name.startswith(me + "-"))


def run_sandboxed(tmp_path, sources, kernels="cold", **limits):
    """Run cells in a sandboxed kernel (cold, or forked from a warm template) under `limits`."""
    from autograder.kernel.warm import close_templates, worker_template
    kernels_or_skip(bwrap_or_skip(), kernels)       # warm needs root: a skip, a failure with REQUIRE_WARM=1
    readable = kernel_readable(STEP4)
    env = kernel_env()
    template = worker_template("bwrap", [], env, readable=readable) if kernels == "warm" else None
    try:
        scratch = Path(tempfile.mkdtemp(prefix="cg-", dir=getattr(template, "root", None) or tmp_path))
        workdir = scratch / "work"
        workdir.mkdir()
        box = sandbox.BwrapSandbox(scratch, readable=readable)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        outcome = asyncio.run(execute(nb, workdir, env, box, Limits(**limits), template=template))
    finally:
        close_templates()
    return nb, outcome


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


# Three children of 700 MB each (each under the 1.5 GiB address-space limit of a process) and the
# in-memory folders filled: 2.4 GB in all, beyond the kernel's 1.5 GiB. Each child reports what it
# held; the kernel reports how its children ended.
SPLIT = r"""
import os, signal, time
def fill(path, mb):
    try:
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(b"t" * 2**20)
    except OSError as err:
        print("FOLDER", path, type(err).__name__)
fill("/tmp/held", 200)
fill("/dev/shm/held", 60)
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(700 * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
ends = []
for pid in kids:
    _, status = os.waitpid(pid, 0)
    ends.append("killed" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL else "ended")
print("CHILDREN", sorted(ends))
"""
TMPFS = 'with open("/tmp/big", "wb") as f:\n    for _ in range(200):\n        f.write(b"t" * 2**20)\nprint("WROTE")'


@pytest.mark.parametrize("kernels", ["cold", "warm"])
def test_a_kernel_and_its_children_and_folders_are_limited_together(tmp_path, kernels):
    needs_cgroups()
    limit = int(1.5 * GiB)
    nb, outcome = run_sandboxed(tmp_path, ["x = 1", SPLIT, "print(x)"], kernels, memory_bytes=limit,
                                cell_timeout=60)
    assert outcome.kernels == kernels
    text = printed(nb.cells[1])
    assert "CHILDREN" in text and "killed" in text, (text, nb.cells[1].outputs)
    (peak,) = outcome.peaks
    assert peak["memory_bytes"] <= limit and peak["oom_kills"] >= 1, peak
    assert printed(nb.cells[2]) == "1\n"              # the kernel itself survived its children
    assert groups_of_this_process() == []


@pytest.mark.parametrize("kernels", ["cold", "warm"])
def test_the_in_memory_folders_count_against_the_kernel(tmp_path, kernels):
    needs_cgroups()
    nb, outcome = run_sandboxed(tmp_path, [TMPFS], kernels, cell_timeout=60)
    assert printed(nb.cells[0]) == "WROTE\n"
    (peak,) = outcome.peaks
    assert peak["memory_bytes"] >= 200 * 2**20, peak


DESCRIPTORS = r"""
import os, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError as err:
    os.close(held.pop())
    print("FILES", soft, hard, len(os.listdir("/proc/self/fd")) >= soft - 1, type(err).__name__)
for fd in held:
    os.close(fd)
# the child's limit comes back through a pipe the parent prints from: a child's own write to fd 1 reaches
# the cell's output through the kernel's capture thread, which may forward it after the cell has ended
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write_end, f"CHILD {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}\n".encode())
    os._exit(0)
os.close(write_end)
os.waitpid(pid, 0)
print(os.read(read_end, 100).decode(), end="")
"""

THREADS = r"""
import threading, time
started = 0
try:
    for _ in range(10_000):
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        started += 1
except RuntimeError as err:
    print("THREADS", started, type(err).__name__)
"""


@pytest.mark.parametrize("kernels", ["cold", "warm"])
def test_descriptors_and_processes_are_bounded_per_kernel(tmp_path, kernels):
    nb, outcome = run_sandboxed(tmp_path, [DESCRIPTORS, THREADS], kernels, cell_timeout=60)
    files, child = printed(nb.cells[0]).split("\n")[:2]
    assert files == f"FILES {KERNEL_FILES} {KERNEL_FILES} True OSError" and child == f"CHILD {KERNEL_FILES}", files
    threads = printed(nb.cells[1]).split()
    assert threads[0] == "THREADS" and 0 < int(threads[1]) < KERNEL_PROCESSES, threads
    if cgroups.cgroups() is not None:
        assert outcome.peaks[0]["processes"] <= KERNEL_PROCESSES, outcome.peaks


@pytest.mark.parametrize("kernels", ["cold", "warm"])
def test_no_group_outlives_its_kernel_or_a_restart(tmp_path, kernels):
    needs_cgroups()
    nb, outcome = run_sandboxed(tmp_path, ["import os\nos.fork() or os.fork()\nimport time",
                                           "import os; os._exit(1)", "print('after')"], kernels, cell_timeout=60)
    assert outcome.kernel_starts == 2 and printed(nb.cells[2]) == "after\n"
    assert len(outcome.peaks) == 2                     # one group per kernel, each read and removed
    assert groups_of_this_process() == []


KILLED_GRADER = r"""
import asyncio, pathlib, sys, nbformat
sys.path.insert(0, {root!r})
from autograder.course import kernel_env
from autograder.kernel.execute import Limits, execute
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('GROUPED', flush=True)\nimport time\ntime.sleep(600)")])
asyncio.run(execute(nb, pathlib.Path({work!r}), kernel_env(), limits=Limits(cell_timeout=600)))
"""


def test_the_groups_of_a_grader_that_was_killed_are_removed_by_the_next_run(tmp_path):
    needs_cgroups()
    found = cgroups.cgroups()
    grader = subprocess.Popen([sys.executable, "-c", KILLED_GRADER.format(root=str(ROOT), work=str(tmp_path))],
                              start_new_session=True)
    tag = cgroups.owner_tag(grader.pid)
    deadline = time.monotonic() + 60
    mine = []
    while time.monotonic() < deadline:
        mine = [base / e.name for base in found.bases.values() for e in os.scandir(base)
                if e.name.startswith(tag + "-")]
        if mine and any(cgroups._read(d / "cgroup.procs").split() for d in mine):
            break
        time.sleep(0.2)
    os.killpg(grader.pid, signal.SIGKILL)                # the grader and its kernel, at once
    grader.wait()
    assert mine and all(d.exists() for d in mine)        # left behind
    assert cgroups.Cgroups(found.version, found.bases).sweep() >= 1
    assert not any(d.exists() for d in mine)


def test_without_groups_the_run_says_so_once_and_kernels_still_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cgroups, "_detected", cgroups.Unavailable("no cgroup hierarchy is writable here"))
    monkeypatch.setattr(cgroups, "_warned", False)
    assert cgroups.resolve() is None and cgroups.resolve() is None
    err = capsys.readouterr().err
    assert err.count("WARNING: no control group per kernel: no cgroup hierarchy is writable here") == 1
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    outcome = asyncio.run(execute(nb, tmp_path, kernel_env(), limits=Limits()))
    assert printed(nb.cells[0]) == "42\n" and outcome.metered == "proc" and outcome.peaks == []


def test_cgroup_v2_groups_work_in_a_unified_hierarchy(tmp_path):
    """cgroup v2's files (cgroup.procs, cpu.stat, cgroup.kill) on the machine's unified hierarchy,
    where there is one: joined, counted, killed and removed. (Its memory and pids controllers may be
    held by v1 hierarchies, as on the course's machines: the limits themselves are not tried here.)"""
    unified = [point for kind, point, _, _ in cgroups._mounts() if kind == "cgroup2"]
    if not unified or not os.access(unified[0], os.W_OK):
        if os.environ.get("REQUIRE_CGROUPS") == "1":
            pytest.fail("REQUIRE_CGROUPS=1, but no cgroup v2 hierarchy is writable here")
        pytest.skip("no writable cgroup v2 hierarchy here")
    folder = unified[0] / f"autograder-test-{os.getpid()}"
    folder.mkdir()
    group = cgroups.KernelGroup(2, {"": folder})
    # the child computes 0.5 s of CPU time once it is in the group, says so, then waits: however busy
    # the machine, the group has counted its work when the line arrives
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nsys.stdin.readline()\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.5: pass\nprint('done', flush=True)\ntime.sleep(600)"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        group.join(child.pid)
        child.stdin.write("go\n")
        child.stdin.flush()
        ready, _, _ = select.select([child.stdout], [], [], 300)
        assert ready and child.stdout.readline() == "done\n"
        assert group.pids() == [child.pid] and group.cpu_seconds() >= 0.5
    finally:
        assert group.close()
        child.wait(10)
    assert child.returncode == -signal.SIGKILL and not folder.exists()
