"""Grading a class in pieces: on several machines at once (a Slurm job array, a Kubernetes Indexed
Job), each grading one shard of the students against one shared gradebook, then one merge.

  python -m autograder gradebook                       once, before the shards: the gradebook knows the step
  python -m autograder grade SUBMISSIONS --shard I/N   shard I of N (0 <= I < N): the students whose id hashes to I
  python -m autograder grade SUBMISSIONS --students a,b   only these students
  python -m autograder report                          after the shards: grades.csv/json and feedback for the class

A student belongs to shard `sha256(id) mod N`: the same shard on every machine and in every rerun,
whatever other students are in the folder, so a late submission never moves a student to another
shard. Shards write disjoint rows (their own students') to the gradebook; the rows they share (the
step's notebooks and grade cells) are written once, under a lock (`gradebook_lock`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
from contextlib import contextmanager
from pathlib import Path

from .course import grader_home, sqlite_path

LOCK_KEY = 0x5354455034  # any fixed 64-bit number: the advisory lock that guards the gradebook's setup


def parse_shard(text: str) -> tuple[int, int]:
    """'I/N' -> (I, N), with 0 <= I < N."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected I/N, e.g. 3/50 (shard 3 of 50, counted from 0)") from None
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"--shard {text!r}: need 0 <= I < N")
    return index, count


def shard_of(student: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(student.encode("utf-8")).digest()[:8], "big") % count


def selector(shard: tuple[int, int] | None = None, students=None):
    """A predicate on student ids, or None for everyone."""
    if shard is None and not students:
        return None
    wanted = set(students or ())

    def keep(student: str) -> bool:
        if wanted and student not in wanted:
            return False
        return shard is None or shard_of(student, shard[1]) == shard[0]

    return keep


def available_cores() -> int:
    """The cores this process may use: its CPU affinity (what Slurm and taskset give it), capped by a
    cgroup CPU quota (what a Kubernetes CPU limit sets), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cores)


@contextmanager
def gradebook_lock(url: str):
    """Held while a grader sets up the gradebook's shared rows: shards that start together take turns.
    PostgreSQL: a session advisory lock (released when the connection closes, even if the holder dies).
    SQLite: an exclusive lock on a file beside the database."""
    if url.startswith("postgresql"):
        import sqlalchemy
        from sqlalchemy.pool import NullPool

        engine = sqlalchemy.create_engine(url, poolclass=NullPool)
        try:
            with engine.connect() as conn:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": LOCK_KEY})
                conn.commit()
                try:
                    yield
                finally:
                    conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
                    conn.commit()
        finally:
            engine.dispose()
    elif (path := sqlite_path(url)) is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
    else:
        yield


def shard_file(step, label: str) -> Path:
    return grader_home() / "work" / "shards" / step.name / f"{label}.json"


def shard_label(shard: tuple[int, int] | None, students) -> str:
    if shard is not None:
        return f"shard-{shard[0]:04d}-of-{shard[1]:04d}"
    return "students-" + hashlib.sha256(",".join(sorted(students)).encode()).hexdigest()[:12]


def shard_problems(step) -> list[dict]:
    """Files the shards could not grade, from every shard's record of the step (work/shards/<step>/*.json)."""
    problems, seen = [], set()
    for path in sorted((grader_home() / "work" / "shards" / step.name).glob("*.json")):
        for p in json.loads(path.read_text()).get("problems", []):
            key = json.dumps(p, sort_keys=True)
            if key not in seen:
                seen.add(key)
                problems.append(p)
    return problems
