"""`make formgrader` as an instructor starts it: as root too (Jupyter refuses root without
--allow-root), with the port, address and no-browser given through make."""
from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from autograder.classroom.lab import server_flags

ROOT = Path(__file__).resolve().parents[1]


def test_root_gets_allow_root_once_and_others_do_not():
    assert server_flags([], euid=0) == ["--allow-root"]
    assert server_flags(["--port=9000", "--allow-root"], euid=0) == ["--port=9000", "--allow-root"]
    assert server_flags(["--ServerApp.allow_root=True"], euid=0) == ["--ServerApp.allow_root=True"]
    assert server_flags(["--port=9000"], euid=1000) == ["--port=9000"]


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_make_formgrader_starts_with_make_variables(tmp_path):
    """The Makefile's PORT, IP, NO_BROWSER and LAB_ARGS reach JupyterLab; as root it starts."""
    port = _free_port()
    env = dict(os.environ, GRADER_HOME=str(tmp_path / "home"),
               NBGRADER_DB_URL=f"sqlite:///{tmp_path / 'home' / 'gradebook.db'}",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    (tmp_path / "home").mkdir()
    log = open(tmp_path / "make.log", "wb")
    proc = subprocess.Popen(["make", "--no-print-directory", "formgrader", f"PORT={port}", "IP=127.0.0.1",
                             "NO_BROWSER=1", "LAB_ARGS=--IdentityProvider.token= --port-retries=0"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline, status = time.monotonic() + 120, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/formgrader", timeout=2) as response:
                    status, policy = response.status, response.headers.get("Content-Security-Policy", "")
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                time.sleep(0.5)
        text = (tmp_path / "make.log").read_text(errors="replace")
        assert status == 200, f"the formgrader did not answer on port {port}:\n{text[-3000:]}"
        assert "Running as root is not recommended" not in text
        assert "img-src 'self' data: blob:" in policy and "object-src 'none'" in policy, policy   # its pages fetch no student's URL
        if os.geteuid() == 0:
            assert "--allow-root" in " ".join(Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
                                              .replace("\0", " ") for p in _group(proc.pid))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _group(pgid: int) -> list[str]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    found.append(entry.name)
            except OSError:
                pass
    return found
