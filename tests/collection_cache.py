"""What test modules compute when they are imported, computed once per set of inputs.

tests/test_mutants.py and tests/test_rewrites.py parametrize their tests with mutants and rewrites that
libcst makes from the solutions when the module is imported: about 13 s of CPU. Every pytest-xdist worker
collects every module, so `make test` (3 workers) made them three times and `make test-quick` twice.
`cached(name, inputs, compute)` pickles compute()'s result under .pytest_cache/d/collection/, named by
a digest of every input it depends on (the files given, the installed libcst and mutmut, Python's
version): the first process to collect computes it, holding a lock, and the others wait for it and
read it. A change to any input names another file, so a stale result is never read.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".pytest_cache" / "d" / "collection"


def digest(inputs: list[Path]) -> str:
    """The digest of the files `inputs` (folders: every file below them), libcst's, mutmut's and Python's versions."""
    h = hashlib.sha256(f"{sys.version}\nlibcst {version('libcst')}\nmutmut {version('mutmut')}\n".encode())
    files = sorted({f for p in inputs for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()
                    and "__pycache__" not in f.parts})
    for f in files:
        h.update(f"{f.relative_to(ROOT)}\n".encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:20]


# what the mutants and rewrites are made from: the tests' own makers, the course's sources (the solutions)
# and the engine's code that reads them
MADE_FROM = [ROOT / "tests" / "mutants.py", ROOT / "tests" / "rewrites.py", ROOT / "tests" / "rewrite_shapes.py",
             ROOT / "source", *sorted((ROOT / "autograder").rglob("*.py"))]


def cached(name: str, inputs: list[Path], compute):
    """compute()'s result, computed by the first process to ask for these inputs and read by the rest."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}-{digest(inputs)}.pickle"
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            try:
                return pickle.loads(path.read_bytes())
            except Exception:  # noqa: BLE001  (a damaged file: made again below)
                pass
        result = compute()
        for old in CACHE.glob(f"{name}-*.pickle"):
            old.unlink(missing_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(pickle.dumps(result))
        partial.replace(path)
        return result
