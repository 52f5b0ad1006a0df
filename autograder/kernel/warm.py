"""Warm kernels: one template process per grading worker forks a fresh kernel for each notebook.

The template (kernel_template.py's text, run with `python -c`) imports ipykernel and the modules the
course names (`preimport`: the engine names none itself), then waits on a Unix socket pair for requests. For each
it forks a child that becomes a kernel exactly as a cold one starts: a session of its own, its stdout
and stderr on the pipe the grader passed with the request, every other inherited descriptor closed,
the job's working folder and environment (the template's own is replaced as a whole), the job's
resource limits, SIGCHLD and signal handlers back to their defaults; then ipykernel's app is
initialised and started in the child, which creates its ZeroMQ context, sockets and event loop
after the fork (the template never creates any). The template runs no tensor operation and holds
a single thread when it forks (checked before every fork: a template with more threads refuses,
and the grader falls back to a cold kernel): no thread pool or lock is inherited half-owned.
A child is a copy of the template's memory: nothing a notebook changes (patched modules, globals,
threads it starts) reaches the template or any other child.

Each kernel is born in its own control group (autograder/kernel/cgroups.py): the grader moves the template
into the kernel's group for the moment of the fork (the template tells its pid, as this process sees
it, with a pidfd when it is ready), then back; the kernel and everything it starts stay there.

`WarmProvisioner` (a LocalProvisioner) launches kernels through a template instead of Popen.
Warm kernels are the grader's default. In the bwrap sandbox the template itself runs in a sandbox
and gives each child what a cold kernel gets (kernel_template.py: namespaces, uid, folders, limits);
that needs a grader run by root. Where warm kernels cannot be had (`why_cold`), or a template dies or
refuses, kernels start cold and the run says so.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

from jupyter_client.provisioning import KernelProvisionerFactory, LocalProvisioner
from traitlets import Any

from . import leftovers
from ..errors import GraderError
from .kernel_template import receive, send
from .provisioner import PYTHON, GradingKernelSpecs, kernel_command, register_provisioner
from .limits import KERNEL_PROCESSES, SHM_BYTES, TEMPLATE_READY_SECONDS, TMP_BYTES, WORK_BYTES, Limits

TEMPLATE_SOURCE = (Path(__file__).parent / "kernel_template.py").read_text(encoding="utf-8")

WARM_PROVISIONER_NAME = "grading-warm-kernel"


# what differs from one job's kernel environment to the next: set in each forked child, not in the template
PER_JOB_ENV = ("GRADER_SOCKET", "HOME")
_templates: dict[tuple, "Template"] = {}  # this worker process's template (one at a time)


def why_cold(sandbox: str) -> str:
    """Why a grading run with this sandbox cannot have warm kernels here ('' if it can)."""
    if not hasattr(os, "fork") or not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
        return "this system has no fork, pidfd or descriptor passing"
    if sandbox == "bwrap" and os.geteuid() != 0:
        return (
            "in the bwrap sandbox warm kernels need a grader run by root (each kernel gets a uid of its "
            "own); run by another user, kernels start cold"
        )
    if sandbox not in ("none", "bwrap"):
        return f"unknown sandbox {sandbox!r}"
    return ""


def worker_root(sandbox: str) -> Path | None:
    """Where this worker's jobs make their scratch folders: inside the template's sandbox (bwrap),
    None when it does not matter."""
    for template in _templates.values():
        if template.alive() and template.root is not None:
            return template.root
    return None


def worker_template(
    sandbox: str, preimport: list[str], env: dict, readable: list[Path] | tuple = (), passed_env: tuple = ()
) -> Template | None:
    """This worker's template for kernels with environment `env` (its per-job part aside), started
    on first use and again if it died; None when warm kernels cannot be had (see why_cold).
    `preimport`, `readable` and `passed_env` are the course's (autograder/plugin.py)."""
    if why_cold(sandbox):
        return None
    base = {k: v for k, v in env.items() if k not in PER_JOB_ENV}
    key = (sandbox, tuple(preimport), tuple(sorted(base.items())), tuple(map(str, readable)), tuple(passed_env))
    template = _templates.get(key)
    if template is not None and template.alive():
        return template
    close_templates()
    if not _templates_closed_at_exit:
        # a pool's worker process ends through multiprocessing's exit function (no atexit): both
        import atexit
        from multiprocessing import util

        util.Finalize(None, close_templates, exitpriority=10)
        atexit.register(close_templates)
        _templates_closed_at_exit.append(True)
    template = _templates[key] = Template(preimport, base, sandbox, readable, passed_env)
    return template


_templates_closed_at_exit: list = []


def close_templates() -> None:
    """End this process's template (and remove its folders)."""
    for template in list(_templates.values()):
        template.close()
    _templates.clear()


class TemplateError(GraderError, RuntimeError):
    """The template could not fork a kernel (it died, refused, or is not ready): start a cold one."""


class Template:
    """A template process of this grading worker: started here, ended by `close` (or when this
    process ends: its socket closes, and in the sandbox bwrap dies with its parent)."""

    def __init__(
        self,
        preimport: list[str],
        env: dict,
        sandbox: str = "none",
        readable: list[Path] | tuple = (),
        passed_env: tuple = (),
    ):
        self.preimport = list(preimport)
        self.sandbox = sandbox
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        program = [PYTHON, "-c", TEMPLATE_SOURCE, str(theirs.fileno()), json.dumps(self.preimport)]
        if sandbox == "bwrap":
            from .sandbox import BwrapSandbox

            self.root = leftovers.made("grade-w-")  # short: Unix socket paths live below
            self.home = None
            box = BwrapSandbox(self.root, readable=readable, passed_env=passed_env, use_cgroups=False)
            home = self.root / "work"
            command = box.command(home, {**env, "HOME": str(home)}, template=True) + program
            popen_env = None
        else:
            self.root = None
            home = self.home = leftovers.made("warm-template-")  # its HOME, removed with it
            command = program
            popen_env = {**env, "HOME": str(home)}
        self.proc = subprocess.Popen(
            command,
            env=popen_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=[theirs.fileno()],
            start_new_session=True,
        )
        theirs.close()
        self._lock = threading.Lock()
        self._ready = None
        self.pid: int | None = None  # the template's pid as this process sees it (inside bwrap: not self.proc's)

    def wait_ready(self, timeout: float = TEMPLATE_READY_SECONDS) -> None:
        """Block until the template has imported its modules; raise TemplateError if it cannot."""
        if self._ready is None:
            self._sock.settimeout(timeout)
            try:
                answer, fds = receive(self._sock)
                for fd in fds:
                    self.pid = pidfd_pid(fd)
                    os.close(fd)
            except (OSError, ValueError) as err:
                answer = {"error": f"no answer ({err})"}
            finally:
                self._sock.settimeout(None)
            if answer is None:
                answer = {"error": "it ended while importing: " + self._stderr_tail()}
            self._ready = answer
        if "error" in self._ready:
            raise TemplateError(f"the warm kernel template is not usable: {self._ready['error']}")

    def _stderr_tail(self) -> str:
        try:
            self.proc.wait(5)
            return (self.proc.stderr.read() or b"").decode(errors="replace")[-500:]
        except Exception:
            return "(no message)"

    def fork(self, request: dict, log_fd: int, group=None) -> "ForkedKernel":
        """A kernel forked from the template (not a child of this process). `group`: the kernel's
        control group (autograder/kernel/cgroups.py): the template is in it while it forks, so that the
        kernel is born there (and every process it starts), then it returns to this worker's group."""
        self.wait_ready()
        with self._lock:
            try:
                if group is not None:
                    if not self.pid:
                        raise TemplateError(
                            "the template's pid is not known: its kernels could not join a control group"
                        )
                    group.join(self.pid)
                try:
                    send(self._sock, request, [log_fd])
                    answer, fds = receive(self._sock)
                finally:
                    if group is not None:
                        return_home(self.pid)
            except OSError as err:
                raise TemplateError(f"the warm kernel template did not answer ({err})") from None
        if answer is None:
            raise TemplateError("the warm kernel template has ended")
        if "error" in answer or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise TemplateError(f"the warm kernel template refused: {answer.get('error', 'no pidfd')}")
        return ForkedKernel(fds[0])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self._sock.close()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
            for folder in (self.root, self.home):
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)


def pidfd_pid(fd: int) -> int | None:
    """The pid, in this process's PID namespace, of the process a pidfd refers to (its fdinfo says)."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def return_home(pid: int) -> None:
    """Move process `pid` back into this process's own control groups."""
    from .cgroups import home_procs_files

    for path in home_procs_files():
        try:
            with open(path, "w", encoding="ascii") as f:
                f.write(str(pid))
        except ProcessLookupError:
            pass


class ForkedKernel:
    """A forked kernel process as LocalProvisioner handles a Popen: poll, wait, signals, through a
    pidfd (its pid may be in another PID namespace; it is not a child of the grader: its exit code
    is not known). `pid` is its pid as this process sees it."""

    stdin = stdout = stderr = None
    GONE = -signal.SIGKILL

    def __init__(self, pidfd: int):
        self._fd = pidfd
        self.pid = pidfd_pid(pidfd)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._fd], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None:
            if select.select([self._fd], [], [], timeout)[0]:
                self._ended()
            else:
                raise subprocess.TimeoutExpired("warm kernel", timeout)
        return self.returncode

    def _ended(self) -> None:
        self.returncode = self.GONE
        os.close(self._fd)
        self._fd = -1

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            signal.pidfd_send_signal(self._fd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class WarmProvisioner(LocalProvisioner):
    """Launches a grading kernel by asking the worker's template to fork one."""

    template = Any(help="the worker's Template").tag(config=True)
    sandbox = Any(help="the job's sandbox").tag(config=True)
    workdir = Any(help="the kernel's working folder").tag(config=True)
    limits = Any(help="the job's Limits").tag(config=True)

    async def pre_launch(self, **kwargs):
        kwargs = await super().pre_launch(**kwargs)
        self.sandbox.prepare(Path(self.parent.connection_file))
        return kwargs

    async def launch_kernel(self, cmd: list[str], **kwargs):
        from .limits import KERNEL_FILES

        limits, box, workdir = self.limits, self.sandbox, Path(self.workdir)
        env = dict(kwargs.get("env") or {})
        argv = [a.replace("{connection_file}", self.parent.connection_file) for a in kernel_command()[3:]]
        request = {
            "cwd": str(workdir),
            "argv": argv,
            "env": env,
            "parent_poller": True,
            "limits": {
                "memory_bytes": limits.memory_bytes,
                "cpu_seconds": int(limits.notebook_timeout * 2),
                "processes": limits.processes,
                "file_bytes": limits.file_bytes,
                "files": KERNEL_FILES,
            },
        }
        if box.name == "bwrap":
            request.update(
                env=box.kernel_environment(workdir, env),
                parent_poller=False,
                sandbox={
                    "uid": box.uid,
                    "gid": box.gid,
                    "scratch": str(box.scratch),
                    "worker_root": str(self.template.root),
                    "workdir": str(workdir),
                    "tmp_bytes": TMP_BYTES,
                    "shm_bytes": SHM_BYTES,
                    "work_bytes": WORK_BYTES,
                },
            )
            request["limits"]["processes"] = limits.processes or KERNEL_PROCESSES
        log_fd = kwargs.get("stdout")
        self.process = self.template.fork(
            request, log_fd if isinstance(log_fd, int) else os.open(os.devnull, os.O_WRONLY), group=box.group
        )
        self.pid = self.pgid = None  # signals go through the pidfd
        self.cwd = str(workdir)
        return self.connection_info

    def ready(self) -> None:
        self.sandbox.started(Path(self.workdir))


def register_warm_provisioner() -> None:
    register_provisioner()
    from importlib.metadata import EntryPoint

    factory = KernelProvisionerFactory.instance()
    if WARM_PROVISIONER_NAME not in factory.provisioners:
        factory.provisioners[WARM_PROVISIONER_NAME] = EntryPoint(
            WARM_PROVISIONER_NAME, f"{__name__}:{WarmProvisioner.__name__}", KernelProvisionerFactory.GROUP_NAME
        )


def warm_kernel_manager(template: Template, sandbox, workdir: Path, limits: Limits):
    """A kernel manager whose kernel is forked from `template` (see provisioner.kernel_manager)."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec
    from .provisioner import KERNEL_NAME

    register_warm_provisioner()
    spec = KernelSpec(
        argv=kernel_command(),
        env={},
        language="python",
        display_name="grading kernel (warm)",
        interrupt_mode=sandbox.interrupt_mode,
        metadata={
            "kernel_provisioner": {
                "provisioner_name": WARM_PROVISIONER_NAME,
                "config": {"template": template, "sandbox": sandbox, "workdir": str(workdir), "limits": limits},
            }
        },
    )
    conn_dir = sandbox.connection_dir(workdir)
    return AsyncKernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=GradingKernelSpecs(spec),
        transport="ipc",
        ip=str(conn_dir / "kernel-ipc"),
        connection_file=str(conn_dir / "kernel.json"),
    )
