"""Start a program under resource limits: `python -m autograder.limits [options] -- program args…`.

Used in front of every grading kernel, with or without a sandbox: a memory bomb, a fork bomb,
a runaway loop or a huge file stop at these limits instead of taking the machine down.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
from dataclasses import dataclass

# Reports quote what students' code did (error messages, a dying kernel's last words). Each such
# text is clipped to this many characters wherever the grader stores it: a result file, an event, a
# row of grades.csv or grades.json.
TEXT_CHARS = 2_000


@dataclass
class Limits:
    """What a graded notebook and its kernel may use."""
    cell_timeout: float = 120.0          # seconds one cell may run
    notebook_timeout: float = 900.0      # seconds for the whole notebook, restarts included
    output_bytes: int = 1_000_000        # output one cell may keep; the rest is dropped with a note
    notebook_output_bytes: int = 4_000_000   # output all the cells together may keep
    memory_bytes: int = 6 * 2**30        # address space of the kernel process
    processes: int = 0                   # RLIMIT_NPROC for an unprivileged kernel user (0: leave)
    file_bytes: int = 256 * 2**20        # largest file the kernel may write
    restarts: int = 2                    # kernel restarts after a crash or a hung cell


def clip(text: object, limit: int = TEXT_CHARS) -> str:
    """`text` as a string of at most about `limit` characters, saying how much was left out."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... {len(text) - limit} more characters left out by the grader]"


def apply(memory_bytes: int, cpu_seconds: int, processes: int, file_bytes: int) -> None:
    limits = [
        (resource.RLIMIT_AS, memory_bytes),
        (resource.RLIMIT_CPU, cpu_seconds),
        (resource.RLIMIT_FSIZE, file_bytes),
        (resource.RLIMIT_CORE, 0),
    ]
    if processes:
        limits.append((resource.RLIMIT_NPROC, processes))
    for which, value in limits:
        if value:
            resource.setrlimit(which, (value, value))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memory", type=int, default=0, help="address-space limit in bytes")
    parser.add_argument("--cpu", type=int, default=0, help="CPU-time limit in seconds")
    parser.add_argument("--processes", type=int, default=0, help="limit on processes of this user")
    parser.add_argument("--file-size", type=int, default=0, help="largest file it may write, in bytes")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")
    apply(args.memory, args.cpu, args.processes, args.file_size)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
