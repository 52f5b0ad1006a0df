"""What a graded notebook may use (`Limits`: every default is here, and only here; the fixed caps on a
kernel's messages, its sandbox's disks and its calls to the probe server below it), and the program
that starts a kernel under them: `python -m autograder.kernel.limits [options] -- program args…`.

The wrapper is used in front of every cold grading kernel, with or without a sandbox: it joins the
kernel's control group (autograder/kernel/cgroups.py), sets the per-process limits, then becomes the
kernel (or bubblewrap). A memory bomb, a fork bomb, a runaway loop or a huge file stop at these
limits instead of taking the machine down. (A warm kernel gets the same from its template.)

Time is counted the way the student's work is, not the machine's load: a cell's limit is CPU time
of its kernel's processes (all of them: the group's, else /proc's), so a cell stopped on a busy
machine is stopped on an idle one too; a much longer wall-clock ceiling stops only cells that wait
(sleep, block on input) without computing (autograder/kernel/execute.py). That ceiling leaves out the time
the kernel was runnable but waiting for a CPU the machine's other work held (and, for a notebook, its
kernels' start), so load moves neither limit; 4 x the ceiling of real time is the backstop.

Two limits bound what waiting costs the class (a cell that waits uses no CPU time, so no CPU limit
stops it): a cell may wait at most `cell_wait_timeout` seconds (the time its kernel neither computed,
nor waited for a CPU, nor waited for the grader's own work: reading its output, the hidden tests'
probes, the heads the grader serves), and a student's whole submission, all its notebooks together, has
`student_budget` seconds: each cell counts its kernel's CPU time, the grader's own work for the
kernel less its waits for a CPU (the class spends it on the student) and the kernel's
own waiting (its kernels' start and the machine's load, the kernel's and the grader's waits for a CPU,
left out), so a busy machine stretches none of it. How the budget is shared between a
student's notebooks, graded by parallel workers: autograder/kernel/budget.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from .kernel_template import set_limits

# Reports quote what students' code did (error messages, a dying kernel's last words). Each such
# text is clipped to this many characters wherever the grader stores it: a result file, an event, a
# row of grades.csv or grades.json.
TEXT_CHARS = 2_000


# Processes and descriptors of one kernel. Each process of a kernel may hold KERNEL_FILES open
# descriptors (RLIMIT_NOFILE, inherited by its children) and a kernel may have KERNEL_PROCESSES
# processes and threads (pids.max of its control group, and RLIMIT_NPROC of its uid in the sandbox):
# at most 128 x 1,024 = 131,072 open files per kernel. The machine's table (fs.file-max) is sized
# by Linux at about one file per 10 kB of memory: 2,466,165 on the course's 24 GiB machine, where
# the two kernels of its two workers could hold 262,144, 11 % of it (before: processes of 20,000
# descriptors each, 124 of them filled it). A grading run warns when its workers' kernels could hold
# more than half of the machine's table (descriptors_problem).
KERNEL_PROCESSES = 128
KERNEL_FILES = 1_024

# Memory of one grading worker process and the warm-kernel template it starts, together (a control group
# of their own, where the machine has them: autograder/grading/worker.py). A worker holds torch and the checks
# (about 250 MiB), its template about as much, and what its kernel's messages make it hold: at most
# KERNEL_QUEUED messages waiting and one being read, each at most MESSAGE_BYTES (128 MiB). Past
# this, the machine's memory limit ends the worker, not the machine or another worker: its notebook is
# graded again, and after three deaths scores 0 saying the grader failed on it.
WORKER_MEMORY_BYTES = 3 * 2**30

# The longest an honest cell waits (each result records its notebook's longest wait, `longest_wait`),
# measured when cell_wait_timeout was set: `make setup`'s example class (ada: the solutions; half;
# blank), warm kernels in bwrap, 2 cores at load 6-20. No honest cell waits a second: the longest, 0.08
# s, are hidden tests' cells (04's, then 'pattern_stats_hidden', now 'bonus_top_key_shares') and 06's
# checks; counting the grader's judging as waiting (the probe server's clock alone), 0.82 s
# ('bonus_dot_variance' of 01), and the sliders 0.09-0.16 s ('bandwidth_slider' of 05, 'seed_slider' of
# 04). The honest students' notebooks count 18.1 s of the budget in all (ada; half 16.7 s, blank 8.2 s).
# So the defaults: 30 s of waiting per cell, more than 30 times the longest honest wait; 600 s per
# student, 30 times ada's total.
WAIT_MEASURED = {
    "longest_honest_wait_seconds": 0.82,
    "cell": "01-on-paper/bonus_dot_variance",
    "largest_honest_total_seconds": 18.1,
}

# The wall-clock ceilings, for cells and notebooks that wait rather than compute, as multiples of
# their CPU-time limits (when not set): a cell that sleeps is stopped after 5 x its CPU budget.
CELL_WALL_FACTOR = 5.0
NOTEBOOK_WALL_FACTOR = 3.0
# The wall-clock ceilings of a cell and of a notebook count the time its kernel waited for a CPU the
# machine's other work held as not spent (and a notebook's, the time its kernels took to start); a
# kernel that keeps itself waiting (threads of the lowest priority on a busy machine) is still stopped
# at HARD_FACTOR x the ceiling of real time.
HARD_FACTOR = 4.0
# Wall seconds an interrupted cell has to stop before its kernel is killed ...
INTERRUPT_GRACE = 20.0
# ... and the CPU seconds its kernel may burn meanwhile: a cell that computes on after the interrupt (it
# catches KeyboardInterrupt, or forks) is killed as soon as it has used them, not after the whole wall
# grace; an honest cell stops within a fraction of a second of CPU (its traceback), and a kernel the
# machine's load keeps from running uses none, so only the wall grace ends its wait.
INTERRUPT_GRACE_CPU = 3.0
# Wall seconds a kernel has to start (a cold one: Python, torch and the course's imports, 3-8 s on the
# course's machine under load) and a warm template to be ready (it imports them once for all its kernels).
KERNEL_START_SECONDS = 60.0
TEMPLATE_READY_SECONDS = 120.0


# What the grader reads of a kernel's Jupyter messages. The relay (autograder/kernel/relay.py) sits
# between the kernel and the grader and cuts a message larger than these before the grader reads it;
# an honest notebook's largest messages are pictures of a few hundred kB, and a stream message holds
# at most what the kernel printed in a tenth of a second (100 MB printed at once fit).
MESSAGE_BYTES = 128 * 2**20  # one message of the kernel, all its parts together (an honest one: < 1 MB)
MESSAGE_FRAMES = 1_000  # parts of one message (an honest one: 7 to 10, a widget's with its buffers)
COMMAND_BYTES = 2**16  # one ZMTP command (READY, PING: tens of bytes)
KERNEL_FRAME_BYTES = MESSAGE_BYTES  # one frame as the grader reads it (ZMQ_MAXMSGSIZE)
KERNEL_MESSAGE_VALUES = 200_000  # JSON values in one part of a message
KERNEL_MESSAGE_DEPTH = 64  # nesting of one part (an honest one: under 10)
KERNEL_QUEUED = 4  # messages received and not yet read, per socket (ZMQ_RCVHWM)
WIDGET_STATE_BYTES = 1_000_000  # widget state kept for the graded notebook (honest sliders: a few kB)
# An error output is always kept (it decides a test cell's grade), with its parts clipped to these.
ERROR_NAME_CHARS = 200
ERROR_VALUE_CHARS = 2_000
TRACEBACK_CHARS = 20_000
LOG_TAIL_BYTES = 16_000  # what is kept of the kernel process's own stdout and stderr


# Where a sandboxed kernel may write, all in memory and capped: it never writes to the grader's disk.
# (Its processes: KERNEL_PROCESSES, as RLIMIT_NPROC of its own uid, when Limits.processes is 0.)
TMP_BYTES = 256 * 2**20  # /tmp
SHM_BYTES = 64 * 2**20  # /dev/shm
WORK_BYTES = 256 * 2**20  # its working folder and HOME


# The hidden tests' probe server (autograder/checks/probeserver.py): what one notebook's kernel may ask
# of it. One message of the kernel: an honest answer is at most runtime.plain.MAX_ITEMS (200,000)
# numbers, about 4 MB as JSON (a tensor's are base64: 2 MB); a served head's input is at most 100,000
# numbers.
PROBE_REQUESTS = 20_000  # served-object calls per notebook
PROBE_CONNECTIONS = 4  # open at once, per notebook (an honest kernel: a session and one link)
PROBE_ANSWER_SECONDS = 600.0  # longest wait for one answer of the kernel (the cell's own limit ends it sooner)
PROBE_MESSAGE_BYTES = 8 * 2**20
PROBE_BUFFERED_BYTES = 2 * PROBE_MESSAGE_BYTES  # read and not yet decoded, over all connections at once
PROBE_SESSION_VALUES = 1_000_000  # JSON values over all the answers of one hidden test (honest: < 3,000)

# Not here, by design: the caps of autograder/runtime/ (plain.MAX_ITEMS, plain.MAX_DEPTH, wire.MAX_MESSAGE,
# wire.MAX_VALUES, wire.MAX_DEPTH). The runtime is all of the grader a graded kernel is given, and it
# imports nothing else of the grader, so its caps are declared there, once.


@dataclass
class Limits:
    """What a graded notebook and its kernel may use. Every default of the grader is here: the
    command line (`--cell-timeout`), nbgrader_config.py and the tests read them from this class."""

    cell_timeout: float = 120.0  # CPU seconds one cell may use (its kernel's processes, all of them)
    notebook_timeout: float = 900.0  # CPU seconds for all the notebook's cells, restarts included
    output_bytes: int = 1_000_000  # output one cell may keep; the rest is dropped with a note
    notebook_output_bytes: int = 4_000_000  # output all the cells together may keep
    memory_bytes: int = 6 * 2**30  # a kernel and its children together (control group); each process's address space
    processes: int = 0  # processes and threads of a kernel (0: KERNEL_PROCESSES where it can be enforced)
    file_bytes: int = 256 * 2**20  # largest file the kernel may write
    restarts: int = 2  # kernel restarts after a crash or a hung cell
    cell_wall_timeout: float = 0.0  # wall seconds a cell may take (0: CELL_WALL_FACTOR x cell_timeout)
    notebook_wall_timeout: float = 0.0  # wall seconds for the notebook (0: NOTEBOOK_WALL_FACTOR x notebook_timeout)
    # Seconds one cell may wait: the wall seconds in which its kernel neither computed, nor waited for a
    # CPU, nor waited for the grader's own work. WAIT_MEASURED says what the honest notebooks wait.
    cell_wait_timeout: float = 30.0
    # Seconds for one student's whole submission, every notebook together: CPU times and the kernels'
    # own waiting (execute.Watched.spent; Gradescope's default for a whole submission: 10 minutes). When
    # it runs out the cells and notebooks left score 0, saying so (autograder/kernel/budget.py).
    student_budget: float = 600.0

    @property
    def cell_wall(self) -> float:
        return self.cell_wall_timeout or CELL_WALL_FACTOR * self.cell_timeout

    @property
    def notebook_wall(self) -> float:
        return self.notebook_wall_timeout or NOTEBOOK_WALL_FACTOR * self.notebook_timeout


def descriptors_problem(workers: int) -> str | None:
    """Why `workers` kernels at once could exhaust this machine's table of open files (None: they cannot)."""
    try:
        with open("/proc/sys/fs/file-max", encoding="ascii") as f:
            table = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    worst = workers * KERNEL_PROCESSES * KERNEL_FILES
    if worst <= table // 2:
        return None
    return (
        f"{workers} kernels at once may hold {worst:,} open files ({KERNEL_PROCESSES} processes x "
        f"{KERNEL_FILES:,} each), more than half of this machine's table (fs.file-max {table:,}): "
        f"grade with at most {max(1, table // 2 // (KERNEL_PROCESSES * KERNEL_FILES))} workers"
    )


def clip(text: object, limit: int = TEXT_CHARS) -> str:
    """`text` as a string of at most about `limit` characters, saying how much was left out."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... {len(text) - limit} more characters left out by the grader]"


def apply(memory_bytes: int, cpu_seconds: int, processes: int, file_bytes: int, files: int = KERNEL_FILES) -> None:
    """A cold kernel's per-process limits, set as a warm kernel's are (kernel_template.set_limits)."""
    set_limits(
        memory_bytes=memory_bytes, cpu_seconds=cpu_seconds, processes=processes, file_bytes=file_bytes, files=files
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memory", type=int, default=0, help="address-space limit in bytes")
    parser.add_argument("--cpu", type=int, default=0, help="CPU-time limit in seconds")
    parser.add_argument("--processes", type=int, default=0, help="limit on processes of this user")
    parser.add_argument("--file-size", type=int, default=0, help="largest file it may write, in bytes")
    parser.add_argument("--files", type=int, default=KERNEL_FILES, help="open descriptors per process")
    parser.add_argument(
        "--cgroup",
        action="append",
        default=[],
        metavar="PROCS_FILE",
        help="a control group's cgroup.procs to join first (repeatable: one per hierarchy)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")
    for procs in args.cgroup:  # before anything runs: every process the program starts is in it too
        with open(procs, "w", encoding="ascii") as f:
            f.write(str(os.getpid()))
    apply(args.memory, args.cpu, args.processes, args.file_size, args.files)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
