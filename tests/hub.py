"""What the JupyterHub tests share: where the hub's programs are, and a clear skip (a failure with
REQUIRE_HUB=1, as in CI) when `make hub-deps` has not installed them or the machine cannot run a hub."""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT

HUB_DIR = ROOT / ".hub"
PROXY = HUB_DIR / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
REQUIRED = os.environ.get("REQUIRE_HUB") == "1"


def unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"REQUIRE_HUB=1, but {reason}", pytrace=False)
    pytest.skip(reason)


def hub_problem() -> str | None:
    """Why a hub cannot be run here, or None."""
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "JupyterHub is not installed in this environment (`make hub-deps`)"
    if not PROXY.exists():
        return f"configurable-http-proxy is not in {PROXY.relative_to(ROOT)} (`make hub-deps`)"
    if not shutil.which("node"):
        return "Node.js is not installed (`make hub-deps` installs Debian's nodejs as root)"
    if os.geteuid() != 0:
        return "a hub with local users (PAM, LocalProcessSpawner) is run by root"
    if not shutil.which("useradd"):
        return "useradd is missing: local users cannot be created"
    return None


def hub_or_skip() -> None:
    problem = hub_problem()
    if problem:
        unavailable(problem)


def pinned(path: Path) -> dict[str, str]:
    """name -> version of a requirements file's `name==version` lines."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return out


def python() -> str:
    return sys.executable
