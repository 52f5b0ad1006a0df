"""The warm-kernel template process (see autograder/kernel/warm.py, which starts it and speaks to it).

Self-contained (the standard library, and ipykernel in the forked child): the grader runs this
file's text with `python -c`, so that inside the bwrap sandbox no file of the grader is needed,
and none is visible to the kernels it forks.

    python -c <this file> <socket fd> <preimport as JSON>

Once its modules are imported it says {"ready": ...}, with a pidfd of itself attached (the grader
moves it into a kernel's control group for each fork: autograder/kernel/warm.py). Requests come on the
socket as length-prefixed JSON, with the kernel's log pipe as an attached file descriptor; each
answer is {"pid": ...}, with a pidfd of the forked process attached (pids inside a PID namespace
mean nothing outside it), or {"error": ...}.

A forked child becomes the job's kernel as a cold one starts:
  * without a sandbox: its own session, the job's folder, environment and resource limits;
  * in the sandbox (the template runs in bwrap as root, with the capabilities this needs): also
    new mount, UTS, IPC, network and PID namespaces; in memory and capped, a working folder, /tmp
    and /dev/shm of its own; of the worker's scratch only this job's folder; the job's passwd and
    group files; its loopback up; /proc of its PID namespace; then, in the namespace's first
    process (which only waits, as root, like bwrap's), the kernel is forked and drops to the job's
    uid and gid, which clears every capability; no new privileges.
Then ipykernel's app is initialised and started in the child: its ZeroMQ context, sockets and
event loop are made after the fork (the template never makes any). Before each fork the template
checks that it runs a single thread (no thread pool or lock is inherited half-owned).
"""

import ctypes
import fcntl
import json
import os
import resource
import signal
import socket
import struct
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWNET, CLONE_NEWPID = 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1


def send(sock, data, fds=()):
    payload = json.dumps(data).encode()
    socket.send_fds(sock, [struct.pack("!I", len(payload)) + payload], list(fds))


def receive(sock):
    msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
    if len(msg) < 4:
        return None, fds
    size = struct.unpack("!I", msg[:4])[0]
    body = msg[4:]
    while len(body) < size:
        more = sock.recv(size - len(body))
        if not more:
            return None, fds
        body += more
    return json.loads(body), fds


def threads():
    return len(os.listdir("/proc/self/task"))


_libc = None


def _sys(name, *args):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if getattr(_libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}{args}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    _sys(
        "mount",
        source.encode(),
        str(target).encode(),
        fstype.encode() if fstype else None,
        flags,
        data.encode() if data else None,
    )


def _tmpfs(target, size, mode):
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode={mode}")


def _loopback_up():
    with socket.socket() as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0)))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def _mounts_under(folder):
    """The mount points below `folder` (as /proc/self/mountinfo lists them, in order), with whether each is read-only."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = fields[4].replace("\\040", " ")
            if point.startswith(folder.rstrip("/") + "/"):
                out.append((point, "ro" in fields[5].split(",")))
    return out


def _fresh_tmpfs(target, size, mode, drop=()):
    """A new, empty tmpfs on `target`, with what was mounted below it (bwrap's binds of the Python
    environment, the course files, the job's scratch) mounted there again, except `drop`."""
    kept = [
        (point, ro)
        for point, ro in _mounts_under(target)
        if not any(point == d or point.startswith(d.rstrip("/") + "/") for d in drop)
    ]
    aside = []
    for i, (point, ro) in enumerate(kept):
        where = f"/dev/.kept-{i}"
        if os.path.isdir(point):
            os.makedirs(where, exist_ok=True)
        else:
            open(where, "w").close()
        _mount(point, where, None, MS_BIND | MS_REC)
        aside.append(where)
    _tmpfs(target, size, mode)
    for (point, ro), where in zip(kept, aside):
        parent = os.path.dirname(point)
        os.makedirs(parent, mode=0o755, exist_ok=True)
        if os.path.isdir(where):
            os.makedirs(point, exist_ok=True)
        elif not os.path.exists(point):
            open(point, "w").close()
        _mount(where, point, None, MS_BIND | MS_REC)
        if ro:
            _mount("none", point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        _sys("umount2", where.encode(), MNT_DETACH)
        if os.path.isdir(where):
            os.rmdir(where)
        else:
            os.unlink(where)


def _isolate(box):
    """In the sandbox: namespaces and a filesystem of the job's own (see the module's docstring)."""
    _sys("unshare", CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID)
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    _sys("sethostname", b"grading", 7)
    _loopback_up()
    scratch, root = box["scratch"], box["worker_root"]
    # of the worker's scratch folder only this job's: the job's folder is taken aside, the worker's
    # covered, the job's put back (as part of /tmp when the worker's folder is there)
    aside = "/dev/.job"
    os.makedirs(aside, exist_ok=True)
    _mount(scratch, aside, None, MS_BIND | MS_REC)
    if root.startswith("/tmp/"):
        _fresh_tmpfs("/tmp", box["tmp_bytes"], "1777", drop=[root])
    else:
        _fresh_tmpfs("/tmp", box["tmp_bytes"], "1777")
        _tmpfs(root, 1 << 20, "0755")
    os.makedirs(scratch, mode=0o755, exist_ok=True)
    _mount(aside, scratch, None, MS_BIND | MS_REC)
    _sys("umount2", aside.encode(), MNT_DETACH)
    os.rmdir(aside)
    _fresh_tmpfs("/dev/shm", box["shm_bytes"], "1777")
    _tmpfs(box["workdir"], box["work_bytes"], "0777")
    for name in ("passwd", "group"):
        _mount(os.path.join(scratch, name), f"/etc/{name}", None, MS_BIND)
        _mount("none", f"/etc/{name}", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _drop(box):
    """Become the job's unprivileged uid: every capability is cleared; no new privileges."""
    _sys("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    os.setgroups([])
    os.setresgid(box["gid"], box["gid"], box["gid"])
    os.setresuid(box["uid"], box["uid"], box["uid"])


def set_limits(*, memory_bytes, cpu_seconds, processes, file_bytes, files):
    """The kernel's per-process limits, by name (the worker's request names each: a limit added there
    and not here, or the other way round, is an error, not a value in the wrong place). A cold
    kernel's wrapper (limits.py) sets them with this function too: one definition for both kernels."""
    for which, value in (
        (resource.RLIMIT_AS, memory_bytes),
        (resource.RLIMIT_CPU, cpu_seconds),
        (resource.RLIMIT_FSIZE, file_bytes),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_NOFILE, files),
    ):
        if value or which == resource.RLIMIT_CORE:
            resource.setrlimit(which, (value, value))


def _init(kernel_pid, parent):
    """The first process of the job's PID namespace: waits for the kernel, then ends (and with it,
    every process left in the namespace). It ends too when the template's child above it ends."""
    _sys("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == kernel_pid:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _kernel(request):
    """Become the kernel. Never returns."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = list(request["argv"])
    if request.get("parent_poller"):
        # as jupyter_client's launcher tells a cold kernel outside a sandbox: its parent, which it
        # outlives by no more than a moment (here the template, which ends with the grader); the
        # option's default was read when the template imported ipykernel
        os.environ["JPY_PARENT_PID"] = str(os.getppid())
        argv.append(f"--IPKernelApp.parent_handle={os.getppid()}")
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(argv)
    _inline_pictures(app.shell)
    app.start()


def _inline_pictures(shell) -> None:
    """What importing matplotlib's inline backend does in a cold kernel, done again in the forked
    one: the template imported it before any IPython shell existed, so the shell would never learn
    to show a figure as a picture (plt.show() and a displayed Figure gave only "<Figure size ...>",
    and the feedback lost every plot and heat map)."""
    if "matplotlib_inline.backend_inline" not in sys.modules or shell is None:
        return
    import matplotlib

    backend = matplotlib.get_backend()
    if backend not in ("inline", "module://matplotlib_inline.backend_inline"):
        return
    from IPython.core.pylabtools import activate_matplotlib
    from matplotlib_inline.backend_inline import configure_inline_support

    activate_matplotlib(backend)
    configure_inline_support(shell, backend)


def child(request, log_fd):
    """In the forked child. Never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setsid()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the template's socket, the log's copy
        box = request.get("sandbox")
        if box:
            _isolate(box)
            set_limits(**request["limits"])
            # this process and the namespace's first process stay root, as bwrap and its first
            # process do for a cold kernel: the kernel may signal neither; each ends with its parent
            pid = os.fork()  # the namespace's first process
            if pid:
                _sys("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                _, status = os.waitpid(pid, 0)
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV)
            parent = os.getppid()
            kernel = os.fork()
            if kernel:
                _init(kernel, parent)
            _drop(box)
            _sys("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        else:
            set_limits(**request["limits"])
        _kernel(request)
    except BaseException as err:  # its last words go to the kernel's log, as a cold kernel's would
        try:
            os.write(2, f"warm kernel: {type(err).__name__}: {err}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(1)


def serve(sock_fd, preimport):
    import importlib

    sock = socket.socket(fileno=sock_fd)
    try:
        import ipykernel.kernelapp  # noqa: F401  (the kernel's own imports; no ZeroMQ context is made)
        import ipykernel.ipkernel  # noqa: F401  (what the app's initialize imports: the kernel, its shell
        import ipykernel.zmqshell  # noqa: F401   and its debugger, debugpy: a tenth of a second per kernel)

        try:
            import ipykernel.debugger  # noqa: F401
        except ImportError:
            pass
        for name in preimport:
            importlib.import_module(name)
    except BaseException as err:
        send(sock, {"error": f"import failed: {type(err).__name__}: {err}"})
        return
    me = os.pidfd_open(os.getpid())  # who the template is, in the grader's PID namespace too
    send(sock, {"ready": True, "threads": threads()}, [me])
    os.close(me)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked kernels are reaped by the system
    while True:
        request, fds = receive(sock)
        if request is None:
            return  # the grading worker is gone: so is the template
        if threads() != 1 or len(fds) != 1:
            send(
                sock,
                {
                    "error": f"the template runs {threads()} threads: a fork would copy them half-done"
                    if threads() != 1
                    else "no log pipe came with the request"
                },
            )
        else:
            pid = os.fork()
            if pid == 0:
                child(request, fds[0])
            pidfd = os.pidfd_open(pid)
            send(sock, {"pid": pid}, [pidfd])
            os.close(pidfd)
        for fd in fds:
            os.close(fd)


def main(argv):
    serve(int(argv[0]), json.loads(argv[1]))
    home = os.environ.get("HOME", "")
    if os.path.basename(home).startswith("warm-template-"):
        import shutil

        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
