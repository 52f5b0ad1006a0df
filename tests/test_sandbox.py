"""The bwrap sandbox of grading kernels (autograder/kernel/sandbox.py), probed directly: a Python program
runs in the same sandbox a grading kernel gets and reports what it can see and do.

Fast (a sandbox starts in well under a second); the red-team batch (test_redteam.py) then shows
the same walls hold around real kernels grading real notebooks."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from autograder.kernel import sandbox
from autograder.errors import SetupError
from autograder.kernel.execute import Limits
from autograder.kernel.limits import KERNEL_PROCESSES
from autograder.plugin import kernel_readable
from conftest import STEP4

ROOT = Path(__file__).resolve().parents[1]

# the conftest's bwrap fixture: a skip saying why where bwrap cannot run, a failure with REQUIRE_SANDBOX=1
needs_bwrap = pytest.mark.usefixtures("bwrap")


def run_inside(tmp_path: Path, program: str, env: dict | None = None, limits: Limits | None = None,
               timeout: float = 60) -> dict:
    """Run `program` (Python) in a fresh sandbox under the sandbox's resource limits; it prints one
    JSON object as its last line, returned here."""
    scratch = tmp_path / "scratch"
    corpus = [Path(env["DLCOURSE_CORPUS"])] if env and "DLCOURSE_CORPUS" in env else []
    box = sandbox.BwrapSandbox(scratch, readable=[*kernel_readable(STEP4), *corpus])
    workdir = scratch / "work"
    env = {"PYTHONPATH": str(ROOT), **(env or {})}
    argv = box.argv(workdir, limits or Limits(), env)
    # the sandbox's command up to the kernel, then this program instead of ipykernel
    argv = argv[:argv.index("ipykernel_launcher") - 2] + [sys.executable, "-c", program]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "SECRET_TOKEN": "grader-only"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


PROBE = r"""
import json, os, sys
def attempt(fn):
    try:
        return "allowed: " + str(fn())[:60]
    except BaseException as err:
        return "blocked: " + type(err).__name__
paths = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
"""


@needs_bwrap
def test_the_kernel_sees_only_what_it_needs(tmp_path):
    secret = tmp_path / "gradebook.db"
    secret.write_text("grades")
    # the grader's files the kernel must not read are here (a moved file would make its "blocked" hollow)
    assert (ROOT / "autograder" / "grading" / "grade.py").is_file() and (ROOT / "autograder" / "kernel" / "limits.py").is_file()
    assert all((ROOT / "autograder" / "checks" / name).is_file()
               for name in ("framework.py", "probeserver.py", "casekey.py"))
    from autograder.checks.casekey import case_key, key_path
    case_key(tmp_path)                                  # the course's case key, beside the gradebook
    program = PROBE + f"""
read = {{
    "gradebook": lambda: open({str(secret)!r}).read(),
    "case key": lambda: open({str(key_path(tmp_path))!r}, "rb").read(),
    "the default grader home's case key": lambda: open({str(ROOT / 'autograder' / 'case-key')!r}, "rb").read(),
    "source": lambda: open({str(ROOT / 'source' / 'step-04' / '01-on-paper.ipynb')!r}).read(),
    "release": lambda: os.listdir({str(ROOT / 'release')!r}),
    "grade.py": lambda: open({str(ROOT / 'autograder' / 'grading' / 'grade.py')!r}).read(),
    "limits.py": lambda: open({str(ROOT / 'autograder' / 'kernel' / 'limits.py')!r}).read(),
    "git": lambda: os.listdir({str(ROOT / '.git')!r}) if os.path.isdir({str(ROOT / '.git')!r})
                   else open({str(ROOT / '.git')!r}).read(),
    "shadow": lambda: open("/etc/shadow").read(),
    "home": lambda: os.listdir("/home"),
    "root's files": lambda: open("/root/.profile").read(),
    "ssh": lambda: os.listdir("/root/.ssh"),
    "pyenv shims": lambda: os.listdir("/root/.pyenv/shims"),
    "pid1 environ": lambda: open("/proc/1/environ").read(),
    "checks": lambda: os.listdir({str(ROOT / 'autograder' / 'checks')!r}),
    "a check's source": lambda: open({str(ROOT / 'autograder' / 'checks' / 'framework.py')!r}).read(),
    "import checks": lambda: __import__("autograder.checks").checks.__name__,
    "the probe server's source": lambda: open({str(ROOT / 'autograder' / 'checks' / 'probeserver.py')!r}).read(),
    "the case key's module": lambda: open({str(ROOT / 'autograder' / 'checks' / 'casekey.py')!r}).read(),
    "import the probe server": lambda: __import__("autograder.checks.probeserver").checks.probeserver.__name__,
    "import the case key's module": lambda: __import__("autograder.checks.casekey").checks.casekey.__name__,
}}
need = {{
    "runtime": lambda: os.listdir({str(ROOT / 'autograder' / 'runtime')!r}),
    "dlcourse": lambda: os.listdir({str(ROOT / 'dlcourse')!r}),
    "import runtime": lambda: __import__("autograder.runtime").runtime.__name__,
    "import torch": lambda: __import__("torch").__version__,
}}
write = {{
    "runtime": lambda: open({str(ROOT / 'autograder' / 'runtime' / 'x.py')!r}, "w"),
    "venv": lambda: open(os.path.join(sys.prefix, "x"), "w"),
    "usr": lambda: open("/usr/x", "w"),
    "workdir": lambda: open("mine.txt", "w").write("ok"),
    "tmp": lambda: open("/tmp/mine.txt", "w").write("ok"),
}}
print(json.dumps({{
    "read": {{k: attempt(f) for k, f in read.items()}},
    "need": {{k: attempt(f) for k, f in need.items()}},
    "write": {{k: attempt(f) for k, f in write.items()}},
    "uid": os.getuid(), "euid": os.geteuid(), "groups": os.getgroups(),
    "caps": open("/proc/self/status").read().split("CapEff:")[1].split()[0],
    "env": sorted(os.environ), "cwd": os.getcwd(), "tmp": os.listdir("/tmp"),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
}}))
"""
    seen = run_inside(tmp_path, program)
    assert {k: v for k, v in seen["read"].items() if not v.startswith("blocked")} == {}
    assert all(v.startswith("allowed") for v in seen["need"].values()), seen["need"]
    assert seen["write"]["workdir"].startswith("allowed") and seen["write"]["tmp"].startswith("allowed")
    assert all(seen["write"][k].startswith("blocked") for k in ("runtime", "venv", "usr")), seen["write"]
    # an unprivileged uid of its own, no capabilities, no supplementary groups
    if os.geteuid() == 0:
        assert sandbox.UID_RANGE[0] <= seen["uid"] < sandbox.UID_RANGE[1] and seen["euid"] == seen["uid"]
        assert seen["groups"] == [] and int(seen["caps"], 16) == 0
    else:       # bwrap run by another user maps that user into the sandbox, without capabilities
        assert seen["uid"] == seen["euid"] == os.getuid(), seen
        assert int(seen["caps"], 16) == 0, seen["caps"]
    # the environment was cleared: the grader's variables (a token, say) do not reach the kernel
    assert "SECRET_TOKEN" not in seen["env"] and "JPY_PARENT_PID" not in seen["env"]
    assert set(seen["env"]) <= set(sandbox.PASSED_ENV) | {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL",
                                                           "PYTHONDONTWRITEBYTECODE", "USER", "LOGNAME",
                                                           "PWD"}  # PWD: set by bwrap --chdir
    assert seen["cwd"] == str(tmp_path / "scratch" / "work")
    # a private /tmp (the host's is not visible: only the job's scratch folder is bound into it)
    bound = [(tmp_path / "scratch").resolve(), *sandbox._python_dirs(), *kernel_readable(STEP4)]  # under /tmp?
    expected = {b.relative_to("/tmp").parts[0] for b in bound if Path("/tmp") in b.parents}
    assert sorted(seen["tmp"]) == sorted(expected | {"mine.txt"}), seen["tmp"]   # mine.txt: written above
    # its own PID namespace: a handful of processes, none of the host's
    assert len(seen["pids"]) <= 4, seen["pids"]


@needs_bwrap
def test_no_network_not_even_the_hosts_loopback(tmp_path):
    accepted = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    program = PROBE + f"""
import socket
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("8.8.8.8", 53))
print(json.dumps({{
    "host loopback": attempt(lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3)),
    "internet": attempt(lambda: socket.create_connection(("1.1.1.1", 80), timeout=3)),
    "dns": attempt(lambda: socket.getaddrinfo("pypi.org", 443)),
    "udp": attempt(udp),
    "interfaces": [name for _, name in socket.if_nameindex()],
}}))
"""
    try:
        seen = run_inside(tmp_path, program)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert accepted == []
    for what in ("host loopback", "internet", "dns", "udp"):
        assert seen[what].startswith("blocked"), (what, seen[what])
    assert seen["interfaces"] == ["lo"]


FORK_COUNT = r"""
import json, os, time, signal
children = []
try:
    while len(children) < 2000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    outcome = "no limit"
except OSError as err:
    outcome = type(err).__name__
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


@needs_bwrap
def test_process_limit_holds_for_the_kernels_user(tmp_path):
    """A fork bomb stops at RLIMIT_NPROC. Root ignores that limit (also root mapped into a user
    namespace), which is why the sandboxed kernel runs as an unprivileged uid of its own."""
    program = FORK_COUNT + '\nprint(json.dumps({"children": len(children), "outcome": outcome}))\n'
    seen = run_inside(tmp_path, program, limits=Limits(processes=40))
    assert seen["outcome"] == "BlockingIOError"
    assert 30 <= seen["children"] < 40, seen
    # and with the sandbox's default limit
    seen = run_inside(tmp_path, program)
    assert seen["outcome"] == "BlockingIOError" and seen["children"] < KERNEL_PROCESSES


ESCAPE_LIMITS = r"""
import ctypes, json, os, resource
libc = ctypes.CDLL(None, use_errno=True)
# a user namespace of its own: every capability inside it, none outside
entered = libc.unshare(0x10000000) == 0            # CLONE_NEWUSER
caps = int(open("/proc/self/status").read().split("CapEff:")[1].split()[0], 16)
raised = {}
for name in ("RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_CPU"):
    which = getattr(resource, name)
    soft, hard = resource.getrlimit(which)
    try:
        resource.setrlimit(which, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        raised[name] = "raised"
    except (ValueError, OSError) as err:
        raised[name] = type(err).__name__
"""


@needs_bwrap
def test_limits_hold_in_a_user_namespace_of_the_kernels_own(tmp_path):
    """Student code may create a user namespace (and hold every capability in it); it still cannot
    raise its limits, and its processes still count against the kernel's RLIMIT_NPROC."""
    program = ESCAPE_LIMITS + FORK_COUNT + r"""
print(json.dumps({"entered": entered, "caps": caps, "raised": raised, "children": len(children), "outcome": outcome}))
"""
    seen = run_inside(tmp_path, program, limits=Limits(processes=40))
    assert seen["entered"] and seen["caps"] != 0                 # the namespace was made, with capabilities
    assert seen["raised"] == {"RLIMIT_NPROC": "ValueError", "RLIMIT_AS": "ValueError", "RLIMIT_CPU": "ValueError"}
    assert seen["outcome"] == "BlockingIOError" and seen["children"] < 40, seen


def test_every_sandboxed_kernel_gets_a_uid_of_its_own(tmp_path):
    uids = {sandbox.BwrapSandbox(tmp_path / f"s{i}").uid for i in range(20)}
    if os.geteuid() == 0:
        assert len(uids) == 20
        assert all(sandbox.UID_RANGE[0] <= uid < sandbox.UID_RANGE[1] for uid in uids)
    else:       # bwrap run by another user maps that user into the sandbox
        assert uids == {os.getuid()}


def test_auto_falls_back_to_none_with_one_loud_warning(monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bwrap is not installed (test)")
    monkeypatch.setattr(sandbox, "_warned", False)
    assert sandbox.resolve_sandbox("auto") == "none"
    assert sandbox.resolve_sandbox("auto") == "none"
    err = capsys.readouterr().err
    assert err.count("WARNING: grading WITHOUT a sandbox: bwrap is not installed (test)") == 1
    with pytest.raises(SetupError, match="not available here: bwrap is not installed"):
        sandbox.resolve_sandbox("bwrap")
    assert sandbox.resolve_sandbox("none") == "none"
    assert type(sandbox.make_sandbox("none", Path("/nonexistent"))) is sandbox.Sandbox


@needs_bwrap
def test_auto_picks_bwrap_when_it_works():
    assert sandbox.resolve_sandbox("auto") == "bwrap"
    assert sandbox.available() == ["bwrap", "none"]


def test_python_installation_found_from_the_environment():
    dirs = sandbox._python_dirs()
    assert Path(sys.prefix).resolve() in dirs or Path("/usr") in Path(sys.prefix).resolve().parents
    real = Path(os.path.realpath(sys.executable))
    assert any(d == real.parent.parent or d in real.parents for d in dirs) or Path("/usr") in real.parents


@needs_bwrap
def test_course_files_are_readable_inside_even_a_private_corpus(tmp_path):
    """The corpus written by an older `make data` was private to its owner (mkstemp, mode 0600):
    the kernel's user gets a readable copy at the same path."""
    corpus = tmp_path / "data" / "corpus.txt"
    corpus.parent.mkdir()
    corpus.write_text("To be, or not to be\n")
    os.chmod(corpus, 0o600)
    program = PROBE + f"""
import dlcourse, autograder.runtime
print(json.dumps({{"corpus": open({str(corpus)!r}).read(), "writable": os.access({str(corpus)!r}, os.W_OK),
                  "dlcourse": dlcourse.__file__}}))
"""
    seen = run_inside(tmp_path, program, env={"DLCOURSE_CORPUS": str(corpus)})
    assert seen == {"corpus": "To be, or not to be\n", "writable": False,
                    "dlcourse": str(ROOT / "dlcourse" / "__init__.py")}


def test_the_sandbox_is_here_when_required():
    """CI sets REQUIRE_SANDBOX=1 after installing bubblewrap: there, a sandbox that cannot start is a
    failure, never a quiet skip of the sandbox and red-team tests."""
    if os.environ.get("REQUIRE_SANDBOX") != "1":
        pytest.skip("REQUIRE_SANDBOX is not set: the sandbox tests skip, saying why, where bwrap cannot run")
    assert sandbox.bwrap_problem() is None, sandbox.bwrap_problem()


def test_the_sandbox_starts_for_a_python_named_through_a_folder_it_does_not_bind(tmp_path):
    """Python started by a relative name, from a folder the sandbox does not bind (a script run from
    a subfolder as ../.venv/bin/python): its sys.executable keeps the "..", through that folder.
    Kernels are started with the interpreter inside the sandbox, where that folder does not exist;
    the sandbox names it without the "..", and starts."""
    from conftest import bwrap_or_skip
    bwrap_or_skip()
    detour = tmp_path / "elsewhere"
    detour.mkdir()
    python = os.path.relpath(sys.executable, detour)
    done = subprocess.run([python, "-c", "import sys; from autograder.kernel.sandbox import bwrap_problem; "
                           "print(sys.executable); print(bwrap_problem())"],
                          cwd=detour, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=120)
    executable, problem = (done.stdout.splitlines() + ["", ""])[:2]
    assert str(detour) in executable and ".." in executable, executable   # the case this test is about
    assert done.returncode == 0 and problem == "None", done.stdout + done.stderr


WHO = "import os, pwd; print(os.getuid(), pwd.getpwuid(os.getuid()).pw_name)"


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["cold", "warm"])
def test_a_restarted_kernel_gets_a_uid_of_its_own(tmp_path, kernels):
    """RLIMIT_NPROC is a budget per uid. A kernel killed after a fork bomb leaves its children to be
    torn down, which takes seconds on a busy machine; a restarted kernel under the same uid found
    the budget spent and could not start its threads ("can't start new thread"): the rest of the
    notebook lost its kernel. Each kernel of a notebook gets a uid of its own; none is left running."""
    import asyncio

    import nbformat

    from autograder.course import kernel_env
    from autograder.kernel.execute import execute
    from autograder.kernel.warm import close_templates, worker_template
    from conftest import bwrap_or_skip, kernels_or_skip
    kernels_or_skip(bwrap_or_skip(), kernels)       # warm needs root: a skip, a failure with REQUIRE_WARM=1
    readable = kernel_readable(STEP4)
    env = kernel_env()
    template = worker_template("bwrap", [], env, readable=readable) if kernels == "warm" else None
    try:
        scratch = Path(tempfile.mkdtemp(prefix="uid-", dir=getattr(template, "root", None) or tmp_path))
        workdir = scratch / "work"
        workdir.mkdir()
        box = sandbox.BwrapSandbox(scratch, readable=readable)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in
                                             [WHO, "import os; os._exit(1)", WHO]])
        outcome = asyncio.run(execute(nb, workdir, env, box, Limits(cell_timeout=60), template=template))
    finally:
        close_templates()
    first, again = (nb.cells[i].outputs[0]["text"].split() for i in (0, 2))
    assert outcome.kernel_starts == 2 and outcome.kernels == kernels, outcome
    assert first[1] == again[1] == "student"              # the passwd file names each kernel's uid
    if os.geteuid() == 0:
        assert int(first[0]) != int(again[0]) and box.uids == [int(first[0]), int(again[0])], (first, again)
        assert all(sandbox.UID_RANGE[0] <= uid < sandbox.UID_RANGE[1] for uid in box.uids)
        assert [sandbox.processes_of(uid) for uid in box.uids] == [[], []]
    else:       # bwrap run by another user maps that user into the sandbox: one uid for all
        assert int(first[0]) == int(again[0]) == os.getuid()


def test_a_file_the_course_gives_the_kernel_that_is_missing_is_an_error(monkeypatch, tmp_path):
    """What the course plugin names for the kernel to read and is not there stops grading, naming it (left
    out, the student's import of it would fail in every notebook with nothing saying why)."""
    from autograder import plugin
    gone = tmp_path / "not-installed"

    class Plugin(plugin.CoursePlugin):
        def kernel_files(self, step):
            return [gone]

    assert all(path.exists() for path in kernel_readable(STEP4))
    monkeypatch.setattr(plugin, "load_plugin", lambda root: Plugin())
    with pytest.raises(SetupError, match="not-installed.*course plugin"):
        plugin.kernel_readable(STEP4)
