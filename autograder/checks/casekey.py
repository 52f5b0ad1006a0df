"""The course's case key: the secret the hidden tests draw their per-submission cases from.

Each hidden test keeps its calibrated fixed cases and adds cases drawn from a seed, HMAC-SHA256 of
this key and the step, the test and the submitted file (autograder/checks/framework.py `fresh_rng`):
the same submission regraded gets the same cases, another submission or another course key others,
so inputs a student's code recorded in one grading (and printed into its feedback) are worthless in
the next. The key is made once per grader home, on first grading (case-key beside gradebook.db,
mode 0600), never committed or released; the sandboxed kernel cannot read the grader home. Losing
it only changes the cases of future gradings (the results' keys include its fingerprint, so a lost
or new key means the next `make grade` regrades).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from ..course import grader_home
from ..errors import SetupError

KEY_FILE = "case-key"
KEY_BYTES = 32


def key_path(home: Path | None = None) -> Path:
    return Path(home or grader_home()) / KEY_FILE


def case_key(home: Path | None = None) -> bytes:
    """The grader home's case key, made (32 random bytes, mode 0600) the first time it is asked for."""
    path = key_path(home)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{KEY_FILE}-{os.getpid()}-{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_BYTES))
        try:
            os.link(tmp, path)  # whole or not at all; another process's key wins
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_bytes()
    if len(key) < 16:
        raise SetupError(f"{path}: the course's case key is damaged (delete it: future gradings draw new cases)")
    return key


def key_fingerprint(key: bytes) -> str:
    """What a result's key records of the case key (not the key: nothing of it can be recovered)."""
    return hashlib.sha256(b"case-key-fingerprint\0" + key).hexdigest()[:16]
