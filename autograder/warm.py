"""Warm kernels: one template process per grading worker forks a fresh kernel for each notebook.

The template (`python -m autograder.warm`) imports ipykernel and the modules the course names
(`preimport`: the engine names none itself), then waits on a Unix socket pair for requests. For each
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

`WarmProvisioner` (a LocalProvisioner) launches kernels through a template instead of Popen.
Warm kernels are offered without a sandbox only (`--sandbox none`): inside the bwrap sandbox a
cold kernel gets namespaces, a uid and a scratch folder of its own that a forked child of one
shared template does not have yet, so there the grader starts cold kernels and says so.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from jupyter_client.provisioning import KernelProvisionerFactory, LocalProvisioner
from traitlets import Any

from .kernels import GradingKernelSpecs, kernel_command, register_provisioner
from .limits import Limits

WARM_PROVISIONER_NAME = "grading-warm-kernel"
READY_SECONDS = 120.0


# ---- in the grader ------------------------------------------------------------------------------

# what differs from one job's kernel environment to the next: set in each forked child, not in the template
PER_JOB_ENV = ("GRADER_SOCKET", "HOME")
_templates: dict[tuple, "Template"] = {}     # this worker process's template (one at a time)


def why_cold(sandbox: str) -> str:
    """Why a grading run with this sandbox cannot have warm kernels here ('' if it can)."""
    if sandbox != "none":
        return ("warm kernels are offered without a sandbox only (--sandbox none): a kernel forked from a "
                "shared template does not yet get the namespaces, uid and scratch of its own a cold bwrap kernel gets")
    if not hasattr(os, "fork") or not hasattr(os, "pidfd_open"):
        return "this system has no fork or pidfd"
    return ""


def worker_template(sandbox: str, preimport: list[str], env: dict) -> Template | None:
    """This worker's template for kernels with environment `env` (its per-job part aside), started
    on first use and again if it died; None when warm kernels cannot be had (see why_cold)."""
    if why_cold(sandbox):
        return None
    base = {k: v for k, v in env.items() if k not in PER_JOB_ENV}
    key = (tuple(preimport), tuple(sorted(base.items())))
    template = _templates.get(key)
    if template is not None and template.alive():
        return template
    for old in _templates.values():
        old.close()
    _templates.clear()
    home = tempfile.mkdtemp(prefix="warm-template-")        # the template's HOME, removed when it ends
    template = _templates[key] = Template(preimport, {**base, "HOME": home})
    return template


class TemplateError(RuntimeError):
    """The template could not fork a kernel (it died, refused, or is not ready): start a cold one."""


def _send(sock: socket.socket, data: dict, fds: list[int] = ()) -> None:
    payload = json.dumps(data).encode()
    socket.send_fds(sock, [struct.pack("!I", len(payload)) + payload], list(fds))


def _receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
    if not msg:
        return None, fds
    size = struct.unpack("!I", msg[:4])[0]
    body = msg[4:]
    while len(body) < size:
        more = sock.recv(size - len(body))
        if not more:
            return None, fds
        body += more
    return json.loads(body), fds


class Template:
    """A template process of this grading worker (started by `start`, ended by `close`)."""

    def __init__(self, preimport: list[str], env: dict):
        self.preimport = list(preimport)
        self.env = dict(env)
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.warm", str(theirs.fileno()), json.dumps(self.preimport)],
            env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=[theirs.fileno()], start_new_session=True)
        theirs.close()
        self._lock = threading.Lock()
        self.ready_error: str | None = None
        self._ready = None

    def wait_ready(self, timeout: float = READY_SECONDS) -> None:
        """Block until the template has imported its modules; raise TemplateError if it cannot."""
        if self._ready is None:
            self._sock.settimeout(timeout)
            try:
                answer, _ = _receive(self._sock)
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

    def fork(self, connection_file: str, cwd: str, env: dict, limits: Limits, log_fd: int) -> int:
        """A kernel forked from the template: its pid (not a child of this process)."""
        self.wait_ready()
        with self._lock:
            try:
                _send(self._sock, {"connection_file": connection_file, "cwd": cwd, "env": env,
                                   "limits": [limits.memory_bytes, int(limits.notebook_timeout * 2),
                                              limits.processes, limits.file_bytes]}, [log_fd])
                answer, _ = _receive(self._sock)
            except OSError as err:
                raise TemplateError(f"the warm kernel template did not answer ({err})") from None
        if answer is None:
            raise TemplateError("the warm kernel template has ended")
        if "error" in answer:
            raise TemplateError(f"the warm kernel template refused: {answer['error']}")
        return int(answer["pid"])

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


class ForkedKernel:
    """A forked kernel process as LocalProvisioner handles a Popen: poll, wait, signals. Not a child
    of the grader (the template reaps it): its end is seen through a pidfd, its exit code is not."""
    stdin = stdout = stderr = None
    GONE = -signal.SIGKILL

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None
        try:
            self._fd = os.pidfd_open(pid)
        except OSError:            # already gone
            self._fd = -1
            self.returncode = self.GONE

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
    sandbox = Any(help="the job's sandbox (only `none` is offered warm kernels)").tag(config=True)
    workdir = Any(help="the kernel's working folder").tag(config=True)
    limits = Any(help="the job's Limits").tag(config=True)

    async def pre_launch(self, **kwargs):
        kwargs = await super().pre_launch(**kwargs)
        self.sandbox.prepare(Path(self.parent.connection_file))
        return kwargs

    async def launch_kernel(self, cmd: list[str], **kwargs):
        log_fd = kwargs.get("stdout")
        pid = self.template.fork(self.parent.connection_file, str(kwargs.get("cwd") or self.workdir),
                                 dict(kwargs.get("env") or {}), self.limits,
                                 log_fd if isinstance(log_fd, int) else os.open(os.devnull, os.O_WRONLY))
        self.process = ForkedKernel(pid)
        self.pid = self.pgid = pid           # the child leads a session (and process group) of its own
        self.cwd = kwargs.get("cwd")
        return self.connection_info

    def ready(self) -> None:
        self.sandbox.started(Path(self.workdir))


def register_warm_provisioner() -> None:
    register_provisioner()
    from importlib.metadata import EntryPoint
    factory = KernelProvisionerFactory.instance()
    if WARM_PROVISIONER_NAME not in factory.provisioners:
        factory.provisioners[WARM_PROVISIONER_NAME] = EntryPoint(
            WARM_PROVISIONER_NAME, f"{__name__}:{WarmProvisioner.__name__}", KernelProvisionerFactory.GROUP_NAME)


def warm_kernel_manager(template: Template, sandbox, workdir: Path, limits: Limits):
    """A kernel manager whose kernel is forked from `template` (see kernels.kernel_manager)."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec
    from .kernels import KERNEL_NAME
    register_warm_provisioner()
    spec = KernelSpec(argv=kernel_command(), env={}, language="python", display_name="grading kernel (warm)",
                      interrupt_mode="signal",
                      metadata={"kernel_provisioner": {"provisioner_name": WARM_PROVISIONER_NAME, "config": {
                          "template": template, "sandbox": sandbox, "workdir": str(workdir), "limits": limits}}})
    conn_dir = sandbox.connection_dir(workdir)
    return AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=GradingKernelSpecs(spec),
                              transport="ipc", ip=str(conn_dir / "kernel-ipc"),
                              connection_file=str(conn_dir / "kernel.json"))


# ---- in the template process ----------------------------------------------------------------------

def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _child(request: dict, log_fd: int, sock_fd: int) -> None:
    """In the forked child: become the job's kernel. Never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setsid()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))         # the template's socket and the log's copy
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # as jupyter_client's launcher tells a cold kernel: its parent, which it outlives by no more
        # than a moment (ipykernel's parent poller); here the template, which ends with the grader
        os.environ["JPY_PARENT_PID"] = str(os.getppid())
        from .limits import apply
        apply(*request["limits"])
        argv = [a.replace("{connection_file}", request["connection_file"]) for a in kernel_command()[3:]]
        argv.append(f"--IPKernelApp.parent_handle={os.getppid()}")    # its default was read at import
        from ipykernel.kernelapp import IPKernelApp
        app = IPKernelApp.instance()
        app.initialize(argv)
        app.start()
    except BaseException as err:      # the kernel's last words go to its log, as a cold kernel's would
        try:
            os.write(2, f"warm kernel: {type(err).__name__}: {err}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(1)


def template_main(sock_fd: int, preimport: list[str]) -> None:
    try:
        _serve(sock_fd, preimport)
    finally:
        home = os.environ.get("HOME", "")
        if Path(home).name.startswith("warm-template-"):
            shutil.rmtree(home, ignore_errors=True)


def _serve(sock_fd: int, preimport: list[str]) -> None:
    import importlib
    sock = socket.socket(fileno=sock_fd)
    try:
        # the kernel's own imports first (no ZeroMQ context is made by importing), then the course's
        import ipykernel.kernelapp  # noqa: F401
        for name in preimport:
            importlib.import_module(name)
    except BaseException as err:
        _send(sock, {"error": f"import failed: {type(err).__name__}: {err}"})
        return
    _send(sock, {"ready": True, "threads": _threads()})
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)      # forked kernels are reaped by the system
    while True:
        request, fds = _receive(sock)
        if request is None:
            return                                     # the grader's worker is gone: so is the template
        if _threads() != 1:
            _send(sock, {"error": f"the template runs {_threads()} threads: a fork would copy them half-done"})
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            _child(request, fds[0], sock_fd)
        for fd in fds:
            os.close(fd)
        _send(sock, {"pid": pid})


if __name__ == "__main__":
    template_main(int(sys.argv[1]), json.loads(sys.argv[2]))
