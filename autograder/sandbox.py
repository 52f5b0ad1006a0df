"""How grading kernels are isolated.

`none`: the kernel runs as this user under resource limits (autograder/limits.py) only.
Further sandboxes plug in here by returning a Launcher (see execute.py).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from .execute import Launcher


def available() -> list[str]:
    return ["none"]


def resolve_sandbox(choice: str) -> str:
    if choice == "auto":
        return available()[0]
    if choice not in available():
        raise SystemExit(f"sandbox {choice!r} is not available here (available: {', '.join(available())})")
    return choice


def make_launcher(choice: str, scratch: Path) -> Launcher:
    if choice == "none":
        return Launcher()
    raise ValueError(f"unknown sandbox {choice!r}")
