"""A throwaway PostgreSQL server for tests: its own cluster in a temporary folder, on a free port of
127.0.0.1 (and a Unix socket in that folder), trust authentication, stopped and deleted afterwards.
No system service is touched. PostgreSQL refuses to run as root: as root, the cluster belongs to
`nobody` and its programs run as `nobody` (runuser).

    with PostgresServer() as pg:
        url = pg.create_database("gradebook")     # postgresql+psycopg2://postgres@127.0.0.1:PORT/gradebook
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

UNPRIVILEGED = "nobody"


def postgres_bindir() -> Path | None:
    """Where initdb, pg_ctl and postgres live: `pg_config --bindir` if it has them, else Debian's
    /usr/lib/postgresql/<version>/bin (newest first). None when PostgreSQL's server is not installed."""
    candidates = []
    if shutil.which("pg_config"):
        try:
            out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=30).stdout
            candidates.append(Path(out.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                           key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
                                           reverse=True)]
    for folder in candidates:
        if all((folder / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def missing_reason() -> str | None:
    """Why a PostgreSQL test cannot run here, or None when it can."""
    if postgres_bindir() is None:
        return ("PostgreSQL's server programs (initdb, pg_ctl, postgres) are not installed: "
                "`sudo make system-deps` installs Debian's postgresql")
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "the PostgreSQL driver psycopg2 is not installed: `make install`"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(UNPRIVILEGED)
        except KeyError:
            return f"running as root, and there is no user {UNPRIVILEGED!r} to run PostgreSQL as"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self):
        self.bindir = postgres_bindir()
        if self.bindir is None:
            raise RuntimeError(missing_reason())
        self.folder = Path(tempfile.mkdtemp(prefix="pg-"))      # short: a socket path must be < 108 bytes
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = 0
        self.started = False
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam(UNPRIVILEGED)
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", UNPRIVILEGED, "--"]

    def _run(self, *args: str, timeout: int = 120) -> str:
        proc = subprocess.run(self.as_user + [str(a) for a in args], capture_output=True, text=True,
                              timeout=timeout, cwd=self.folder)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{Path(args[0]).name} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}{log}")
        return proc.stdout

    def start(self) -> "PostgresServer":
        self._run(self.bindir / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--locale=C", "--no-sync")
        for attempt in range(5):            # another program may take the free port first
            self.port = free_port()
            options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                       "-c max_connections=200")
            try:
                self._run(self.bindir / "pg_ctl", "-D", self.data, "-l", self.log, "-o", options, "-w",
                          "-t", "60", "start")
                self.started = True
                return self
            except RuntimeError:
                if attempt == 4 or "could not bind" not in self.log.read_text(errors="replace"):
                    raise
                time.sleep(0.5)
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg2
        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.started:
                self._run(self.bindir / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop", timeout=60)
                self.started = False
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "PostgresServer":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
