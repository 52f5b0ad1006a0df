"""What the JupyterHub tests share: where the hub's programs are, and a clear skip (a failure with
REQUIRE_HUB=1, as in CI) when `make hub-deps` has not installed them or the machine cannot run a hub."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT

HUB_DIR = ROOT / ".hub"
HUB_PYTHON = ROOT / ".hub-venv" / "bin" / "python"      # the hub's environment (make hub-deps)
PROXY = HUB_DIR / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
NGSHARE_PYTHON = ROOT / ".ngshare-venv" / "bin" / "python"   # ngshare's own environment (make hub-deps)
REQUIRED = os.environ.get("REQUIRE_HUB") == "1"


def unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"REQUIRE_HUB=1, but {reason}", pytrace=False)
    pytest.skip(reason)


def hub_problem() -> str | None:
    """Why a hub cannot be run here, or None."""
    if not (HUB_PYTHON.parent / "jupyterhub").exists():
        return "the hub's environment .hub-venv/ with JupyterHub is not there (`make hub-deps`)"
    if not NGSHARE_PYTHON.exists():
        return "ngshare's environment .ngshare-venv/ is not there (`make hub-deps`)"
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
    return str(HUB_PYTHON)


# ---- one hub for the run: local accounts, a temporary exchange and configuration ------------------

PREFIX = "hubt-"                          # every local account the tests create starts with this
STUDENTS = [f"{PREFIX}s1", f"{PREFIX}s2", f"{PREFIX}s3"]
INSTRUCTORS = [f"{PREFIX}teacher"]
# The step was due three hours before the hub started; every student but the last has an extension
# of a day (extensions.csv), so the last one's submission is late (by three hours and more: a day begun
# past the due date, course.toml's per_day policy) and the others' are on time.
DUE_HOURS_AGO = 3
EXTENSION = "1d"
LATE = STUDENTS[-1]
# The burst (tests/browser/test_hub_flow.py): as many more students, each handing in at the same moment
BURST = [f"{PREFIX}b{i:02d}" for i in range(1, 21)]
# Students whose servers use ngshare, which the same hub runs as its service, instead of the folder
# exchange (add_ngshare): the lines `make hub` writes with `[hub] exchange = "ngshare"`, for them alone
NGSHARE_STUDENTS = [f"{PREFIX}n1"]
# and an instructor whose server's exchange is ngshare (the instructors' lines `make hub` writes with
# `[hub] exchange = "ngshare"`): their formgrader collects from ngshare into a grading home of its own
NGSHARE_INSTRUCTORS = [f"{PREFIX}nteacher"]
NGSHARE_HOME = "grader-ngshare"           # that grading home, in the hub's folder


def free_port_block() -> int:
    """A port p with p to p+3 free (the proxy, the hub's API, the proxy's API, ngshare)."""
    import socket
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 65000:
            continue
        try:
            for p in (port + 1, port + 2, port + 3):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
    raise RuntimeError("no four free ports in a row")


def hub_env(folder: Path) -> dict:
    """The environment in which the course's commands see the test hub's term, roster, exchange,
    configuration folder and a grading home of their own."""
    env = dict(os.environ)
    env.update(COURSE_TERM=str(folder / "course.toml"), COURSE_ROSTER=str(folder / "roster.csv"),
               COURSE_HUB_DIR=str(folder / "hub"), NBGRADER_EXCHANGE=str(folder / "exchange"),
               COURSE_EXTENSIONS=str(folder / "extensions.csv"),
               GRADER_HOME=str(folder / "grader"), NBGRADER_DB_URL=f"sqlite:///{folder / 'grader' / 'gradebook.db'}",
               PATH=str(HUB_PYTHON.parent) + os.pathsep + env.get("PATH", ""))
    return env


def write_course(folder: Path, port: int) -> str:
    """course.toml (the course's own, with the step due DUE_HOURS_AGO and a [hub] of the test's), a
    roster of the test students and extensions.csv (EXTENSION for every student but LATE). Returns
    the due date."""
    import tomllib
    from datetime import datetime, timedelta, timezone

    from conftest import STEP4
    text = (ROOT / "course.toml").read_text(encoding="utf-8")
    assert "[hub]" in text and tomllib.loads(text)["hub"]
    due = (datetime.now(timezone.utc) - timedelta(hours=DUE_HOURS_AGO)).replace(microsecond=0)
    due_text = due.isoformat().replace("+00:00", "Z")
    text, found = re.subn(rf"(?m)^{re.escape(STEP4.name)} = .*$", f"{STEP4.name} = {due_text}", text)
    assert found == 1 and tomllib.loads(text)["due"][STEP4.name] == due, text[:600]
    (folder / "extensions.csv").write_text(
        "student,step,extension,reason\n"
        + "".join(f"{s},{STEP4.name},{EXTENSION},on time in the hub test\n" for s in STUDENTS + NGSHARE_STUDENTS
                  if s != LATE),
        encoding="utf-8")
    text = text[:text.index("[hub]")] + (
        f'[hub]\nip = "127.0.0.1"\nport = {port}\ninstructors = {INSTRUCTORS + NGSHARE_INSTRUCTORS!r}\n'
        f'exchange = "{folder / "exchange"}"\n').replace("'", '"')
    (folder / "course.toml").write_text(text, encoding="utf-8")
    (folder / "grader").mkdir()
    (folder / "roster.csv").write_text("student,name\n" + "".join(f"{s},Test {s}\n"
                                                                   for s in STUDENTS + BURST + NGSHARE_STUDENTS),
                                       encoding="utf-8")
    return due_text


# Each program below runs as the course's own commands and the users' servers do: without the optional
# rfc3987_syntax, which jsonschema would import (about 1.3 s of CPU building grammars no schema here uses;
# autograder/nbgrader_cmd.py).
NGSHARE_SNIPPET = """
import sys
sys.modules.setdefault("rfc3987_syntax", None)
from pathlib import Path
from autograder.classroom import hub, ngshare
folder, instructors, students = Path(sys.argv[1]), sys.argv[2].split(","), sys.argv[3:]
conf = {**hub.settings(), "exchange": ngshare.NGSHARE}
ngshare.ensure_token(folder)
own = hub.user_config(folder / "jupyter" / "ngshare-students", conf, students=True)
theirs = hub.user_config(folder / "jupyter" / "ngshare-instructors", conf, students=False)
hub.share_grading_home(instructors)
lines = ["", "# The test hub: these students and instructors on ngshare (tests/hub.py add_ngshare)",
         f"_CONFIG.update({ {s: str(own) for s in students} | {i: str(theirs) for i in instructors}!r})",
         *ngshare.service_config(folder, conf)]
with open(folder / "jupyterhub_config.py", "a") as f:
    f.write("\\n".join(lines) + "\\n")
"""


# What a user's server's Validate runs, read as it reads it: nbgrader's Validate handler's own
# load_config (the folders of JUPYTER_CONFIG_PATH and the working folder), then the Validator it makes.
# Prints, as JSON, each preprocessor's module and name, whether its Execute polls in short steps, and
# whether the grader was imported or could be.
VALIDATE_PROBE = """
import importlib.util, json, sys
sys.modules.setdefault("rfc3987_syntax", None)
from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler
from nbgrader.validator import Validator
used = Validator(config=ValidateAssignmentHandler.load_config(None)).preprocessors
mixin = {p: next((k for k in p.__mro__ if k.__name__ == "ShortPolls"), None) for p in used if p.__name__ == "Execute"}
print(json.dumps({"preprocessors": [f"{p.__module__}.{p.__name__}" for p in used],
                  "short_polls": [k is not None and p.start_new_kernel_client is k.start_new_kernel_client
                                  for p, k in mixin.items()],
                  "grader_imported": sorted(m for m in sys.modules if m.split(".")[0] == "autograder"),
                  "grader_found": importlib.util.find_spec("autograder") is not None}))
"""


def add_ngshare(env: dict, folder: Path, students: list[str], instructors: list[str], home: Path) -> None:
    """The configuration `make hub` wrote (the folder exchange) with ngshare added as the hub's service
    and `students` and `instructors` on it: their servers read the nbgrader configuration `make hub`
    writes with `[hub] exchange = "ngshare"` (autograder/classroom/hub.py, ngshare.py), the instructors'
    formgrader grading into `home`, shared with the instructors' group as `make hub` shares its own."""
    import subprocess
    env = {**env, "GRADER_HOME": str(home), "NBGRADER_DB_URL": f"sqlite:///{home / 'gradebook.db'}"}
    done = subprocess.run([str(HUB_PYTHON), "-c", NGSHARE_SNIPPET, str(folder), ",".join(instructors), *students],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def remove_accounts(names: list[str]) -> None:
    """Each test account's processes ended (by their pids) and the account removed with its home, forced:
    a process killed but not yet reaped still counts as the user's, and a plain userdel would then keep
    the account and its home (the next run's student would find this run's work in it)."""
    import pwd
    import signal
    import subprocess
    for name in names:
        assert name.startswith(PREFIX)
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            continue
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if os.stat(entry.path).st_uid == uid:
                        os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass
        subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)


def remove_empty_group() -> None:
    """`make hub`'s group of the instructors, once the test accounts are gone and it holds nobody."""
    import grp
    import subprocess

    from autograder.classroom.hub import GRADERS_GROUP
    try:
        members = grp.getgrnam(GRADERS_GROUP).gr_mem
    except KeyError:
        return
    if not members:
        subprocess.run(["groupdel", GRADERS_GROUP], capture_output=True)


def listening(port: int) -> bool:
    import socket
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start_hub() -> dict:
    """`python -m autograder hub --no-start` for the test course in a fresh folder (accounts, config,
    exchange, the step released), then JupyterHub started there; returns what a test needs. The folder
    is outside pytest's own (which only root may enter): every user's server reads its configuration."""
    import subprocess
    import tempfile
    import time
    import urllib.request
    folder = Path(tempfile.mkdtemp(prefix="course-hub-"))
    folder.chmod(0o755)
    port = free_port_block()
    due = write_course(folder, port)
    env = hub_env(folder)
    # an earlier run's test accounts, had it left any: their homes would hold its fetched and submitted
    # work (nbgrader's cache), which the Assignments tab lists
    remove_accounts(STUDENTS + BURST + NGSHARE_STUDENTS + INSTRUCTORS + NGSHARE_INSTRUCTORS)
    started = time.monotonic()
    hub = {"folder": str(folder), "port": port, "url": f"http://127.0.0.1:{port}", "students": STUDENTS, "burst": BURST,
           "ngshare": NGSHARE_STUDENTS, "ngshare_instructors": NGSHARE_INSTRUCTORS,
           "ngshare_home": str(folder / NGSHARE_HOME),
           "instructors": INSTRUCTORS, "due": due, "late": LATE, "extension": EXTENSION,
           "env": {k: env[k] for k in env if k.startswith(("COURSE_", "NBGRADER_", "GRADER_"))}}
    setup = subprocess.run([str(HUB_PYTHON), "-m", "autograder", "hub", "--no-start"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    if setup.returncode != 0:
        remove_accounts(STUDENTS + BURST + NGSHARE_STUDENTS + INSTRUCTORS + NGSHARE_INSTRUCTORS)
        raise RuntimeError(f"make hub failed:\n{setup.stdout[-3000:]}\n{setup.stderr[-3000:]}")
    hub["setup_output"] = setup.stdout
    try:
        add_ngshare(env, folder / "hub", NGSHARE_STUDENTS, NGSHARE_INSTRUCTORS, folder / NGSHARE_HOME)
    except BaseException:
        remove_accounts(STUDENTS + BURST + NGSHARE_STUDENTS + INSTRUCTORS + NGSHARE_INSTRUCTORS)
        remove_empty_group()
        raise
    log = open(folder / "hub.log", "wb")
    proc = subprocess.Popen([str(HUB_PYTHON.parent / "jupyterhub"), "-f",
                             str(folder / "hub" / "jupyterhub_config.py")],
                            cwd=folder / "hub", env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    hub["pid"] = proc.pid
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{hub['url']}/hub/login", timeout=5) as r:
                if r.status == 200 and b"password" in r.read():
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_hub(hub)
            raise RuntimeError("the hub did not serve its login page:\n" + (folder / "hub.log").read_text()[-5000:])
        time.sleep(0.3)
    hub["seconds_to_login"] = time.monotonic() - started
    return hub


def naming(folder: str) -> list[int]:
    """The processes whose command line names `folder` (the hub's folder: the hub, and ngshare, its service,
    whose database and files are there)."""
    found, inside = [], (folder.rstrip("/") + "/").encode()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if inside in Path(entry.path, "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def stop_hub(hub: dict) -> None:
    """The hub (and with it the proxy and every user's server) ended, the test accounts removed, the
    folder deleted. Nothing of the hub is left listening. ngshare, the hub's service, runs in a session
    of its own and is ended first: the hub's own stop of it sends SIGINT, which a process started with
    SIGINT ignored (a run from a background job) never sees, so the hub waited it out, past this
    function's deadline, and the service outlived the run."""
    import signal
    import time
    pid = hub.get("pid")
    if pid:
        for service in naming(hub["folder"]):
            if service != pid:
                try:
                    os.kill(service, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        def gone() -> bool:
            try:
                return os.waitpid(pid, os.WNOHANG)[0] == pid
            except ChildProcessError:               # started by another process: is it still there?
                try:
                    os.kill(pid, 0)
                    return False
                except ProcessLookupError:
                    return True
        try:
            os.killpg(pid, signal.SIGTERM)              # the hub stops the users' servers and its proxy
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 30
        while not gone() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not gone():
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for left in naming(hub["folder"]):           # a service the hub started again meanwhile
            try:
                os.kill(left, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for name in ("proxy.pid",):                  # a proxy the hub left behind
            pidfile = Path(hub["folder"]) / "hub" / name
            if pidfile.exists():
                try:
                    os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
                except (ValueError, OSError):
                    pass
    remove_accounts(hub["students"] + hub.get("burst", []) + hub.get("ngshare", []) + hub["instructors"]
                    + hub.get("ngshare_instructors", []))
    remove_empty_group()
    deadline = time.monotonic() + 30                    # sockets closed by the processes' ends
    while any(listening(p) for p in range(hub["port"], hub["port"] + 4)) and time.monotonic() < deadline:
        time.sleep(0.2)
    shutil.rmtree(hub["folder"], ignore_errors=True)
