"""How grading kernels are isolated.

Both give every kernel a control group of its own where the machine allows it (autograder/kernel/cgroups.py):
the kernel, its children and its in-memory folders under one memory and process limit, their CPU
time counted for the time limits; where it does not, each process is limited on its own.

`none`:  the kernel runs as this user under resource limits (autograder/kernel/limits.py) only.
`bwrap`: the kernel runs inside a bubblewrap sandbox (Debian package `bubblewrap`):
  * a filesystem of its own that holds only what a kernel needs, read-only: the system's
    /usr (and the /bin, /lib… links to it), a few files of /etc, the Python installation
    the grading environment comes from, the environment itself, and of this repository
    only autograder/__init__.py, autograder/runtime/ (what a hidden test cell runs to answer the
    grader) and what the course plugin names (autograder/plugin.py: this course's dlcourse/ and
    the verified corpus): no check, case, reference or judge;
  * where it may write, all in memory and capped: its working folder (also HOME), /tmp and
    /dev/shm. Of the job's scratch folder on disk it sees the probe server's socket, its
    connection file (read-only) and ipc/, where it creates its sockets while it starts
    (read-only once it answers): student code cannot fill the grader's disk;
  * its own network (only a loopback: no connection leaves the sandbox), PID, IPC, UTS
    and cgroup namespaces, a new terminal session, and it dies with the grader;
  * a cleared environment holding only the variables below;
  * run by root (as the course machines do), the kernel drops to an unprivileged uid of
    its own (a fresh one per kernel, a restarted kernel's too, in a range no account uses),
    so that RLIMIT_NPROC bounds a fork bomb: the kernel ignores that limit for root, also
    for root mapped into a user namespace, which is why root does not use --unshare-all (it
    adds a user namespace) but every other namespace. Run by another user, bwrap maps that user into
    a user namespace (--unshare-all) and the limits apply to that user.
Not visible inside: the gradebook, the submissions and results, source/, release/,
the checks and every other file of autograder/, .git, /root, /home, /work, the rest of /etc.

`resolve_sandbox("auto")` picks bwrap when it works here, else `none` with a warning.
"""

from __future__ import annotations

import functools
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import cgroups as _cgroups
from ..errors import SetupError, UsageError
from .provisioner import PYTHON, kernel_command
from .limits import KERNEL_FILES, KERNEL_PROCESSES, SHM_BYTES, TMP_BYTES, WORK_BYTES, Limits

# Unprivileged uids for sandboxed kernels: one drawn at random per kernel, so that no two kernels
# share a process budget: not two graded side by side, nor a restarted kernel and what is left
# of the one before it (a fork bomb's children may take seconds to end). No account uses this range.
UID_RANGE = (1_500_000_000, 1_600_000_000)

# The kernel's environment: these variables are passed through from the grader, the rest
# is cleared (no tokens, credentials or paths of the grader's own environment leak in).
PASSED_ENV = (
    "PYTHONPATH",
    "GRADER_SOCKET",
    "GRADER_KERNEL_HOOKS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    # what OpenMP's idle threads do, no result (grading/grade.py kernel_environment: PASSIVE unless the
    # grader's environment says otherwise); a kernel on two threads spinning between small operations used
    # 5 s more CPU on a notebook
    "OMP_WAIT_POLICY",
    "OPENBLAS_NUM_THREADS",
    "MPLBACKEND",
    "PYTHONHASHSEED",
    "TZ",
)  # and what the course plugin's kernel_env names

# Run by root, every namespace of --unshare-all but the user's (a user namespace maps root into it,
# and RLIMIT_NPROC does not bind root there): for a kernel and for a warm-kernel template alike.
ROOT_NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try")

_warned = False


def _cap_add(*capabilities: str) -> list[str]:
    """bwrap's options that keep `capabilities` in the sandbox."""
    return [a for cap in capabilities for a in ("--cap-add", cap)]


def _is_root() -> bool:
    return os.geteuid() == 0


def _python_dirs() -> list[Path]:
    """The Python installation and environment the kernel runs from: the environment
    (sys.prefix), the installation it was made from (sys.base_prefix, and the `home` of the
    environment's pyvenv.cfg), and wherever the interpreter binary really lives."""
    dirs = [Path(sys.prefix), Path(sys.base_prefix)]
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                home = Path(value.strip())
                dirs.append(home.parent if home.name == "bin" else home)
    dirs.append(Path(os.path.realpath(sys.executable)).parent.parent)
    dirs.append(Path(PYTHON).parent.parent)  # as the kernel command names it
    # each as named (a bind follows a link: .venv -> elsewhere) and where it really is
    return _outermost(
        [Path(os.path.abspath(d)) for d in dirs if d.exists()] + [d.resolve() for d in dirs if d.exists()]
    )


def _outermost(paths) -> list[Path]:
    """Drop duplicates, paths inside another path of the list, and paths under /usr (bound anyway)."""
    out: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if path == Path("/usr") or Path("/usr") in path.parents:
            continue
        if not any(path == p or p in path.parents for p in out):
            out.append(path)
    return out


class Sandbox:
    """How a grading kernel is wrapped (the kernel itself is launched by the provisioner of
    autograder/kernel/provisioner.py): without a sandbox, under resource limits only.

    Every sandbox also gives each kernel a control group of its own where the machine allows it
    (autograder/kernel/cgroups.py): the kernel and all its processes together under the memory and
    process limits, their CPU time counted. `group` is the current kernel's (None without one),
    `peaks` what each of the job's kernels reached (read when its group is removed)."""

    name = "none"
    transport = "ipc"  # Unix sockets in the scratch folder: no TCP ports, nothing on the network
    interrupt_mode = "signal"

    def __init__(self, use_cgroups: bool = True):
        self.cgroups = _cgroups.cgroups() if use_cgroups else None
        self.group: _cgroups.KernelGroup | None = None
        self.group_problem: str | None = None
        self.peaks: list[dict] = []

    def argv(self, workdir: Path, limits: Limits, env: dict | None = None) -> list[str]:
        return self.limit_command(limits, limits.processes) + kernel_command()

    def limit_command(self, limits: Limits, processes: int) -> list[str]:
        """autograder/kernel/limits.py in front of the kernel: its rlimits, and its control group joined."""
        return [
            PYTHON,
            "-m",
            "autograder.kernel.limits",
            f"--memory={limits.memory_bytes}",
            f"--cpu={int(limits.notebook_timeout * 2)}",
            f"--processes={processes}",
            f"--file-size={limits.file_bytes}",
            f"--files={KERNEL_FILES}",
            *[f"--cgroup={path}" for path in (self.group.procs_files() if self.group else [])],
            "--",
        ]

    def connection_dir(self, workdir: Path) -> Path:
        return workdir

    def next_kernel(self, limits: Limits | None = None) -> None:
        """Called before each kernel of the job is made (its command, or its request to a template):
        the previous kernel's group is removed, a new one made for this kernel."""
        self._close_group()
        if self.cgroups is not None and limits is not None:
            try:
                self.group = self.cgroups.group(limits.memory_bytes, limits.processes or KERNEL_PROCESSES)
                self.group_problem = None
            except _cgroups.Unavailable as err:
                self.group_problem = str(err)

    def _close_group(self) -> None:
        if self.group is not None:
            group, self.group = self.group, None
            peaks = group.peaks()
            group.close()
            self.peaks.append(peaks)

    def prepare(self, connection_file: Path) -> None:
        """Called once the connection file is written, before the kernel starts."""

    def started(self, workdir: Path) -> None:
        """Called once the kernel answers, before any cell runs."""

    def cleanup(self, workdir: Path) -> None:
        self._close_group()


class BwrapSandbox(Sandbox):
    """Starts the kernel inside bubblewrap (see the module's docstring)."""

    name = "bwrap"
    transport = "ipc"
    # ipykernel interrupts itself when asked on the control channel; a SIGINT sent by the
    # kernel manager would stop at bwrap, whose child runs in a session of its own
    interrupt_mode = "message"

    def __init__(
        self,
        scratch: Path,
        uid: int | None = None,
        readable: list[Path] | tuple = (),
        passed_env: tuple = (),
        use_cgroups: bool = True,
    ):
        super().__init__(use_cgroups)
        self.readable = list(readable)  # what of the repository the kernel may read (plugin.kernel_readable)
        self.passed_env = PASSED_ENV + tuple(passed_env)  # the course's variables (plugin.kernel_env) too
        self.scratch = Path(scratch)
        self.root = _is_root()
        self.uid = uid if uid is not None else (_fresh_uid() if self.root else os.getuid())
        self.gid = self.uid if self.root else os.getgid()
        self.uids = [self.uid]  # every uid this job's kernels have had (see _end_leftovers)
        self._kernels = 0
        self.ipc = self.scratch / "ipc"
        self._prepare_scratch()

    # -- the scratch folder, as the kernel's user will see it ---------------------------------
    def _prepare_scratch(self) -> None:
        """scratch/ (the grader's: the kernel passes through) holds the probe server's socket, the
        passwd and group files and ipc/, where the kernel creates its sockets while it starts (then
        ipc/ is locked: see started). The kernel's working folder is a tmpfs of its own."""
        scratch = self.scratch
        scratch.mkdir(parents=True, exist_ok=True)
        os.chmod(scratch, 0o711)
        (scratch / "work").mkdir(exist_ok=True)
        self.ipc.mkdir(exist_ok=True)
        self._identity()

    def _identity(self) -> None:
        """The kernel's uid and gid as the scratch folder knows them: ipc/'s group, passwd and group."""
        scratch = self.scratch
        if self.root:
            os.chown(self.ipc, 0, self.gid)
        # who the kernel is: some libraries ask (getpass, pwd), and nobody else is listed
        (scratch / "passwd").write_text(
            f"student:x:{self.uid}:{self.gid}:student:{scratch / 'work'}:/usr/sbin/nologin\n"
            "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
        )
        (scratch / "group").write_text(f"student:x:{self.gid}:\nroot:x:0:\n")
        for name in ("passwd", "group"):
            os.chmod(scratch / name, 0o644)

    def _readable(self, path: Path) -> Path:
        """`path`, or a readable copy of it in the scratch folder if the kernel's user could not read
        it (a corpus written by an older `make data` is private to its owner)."""
        if not self.root or path.is_dir() or path.stat().st_mode & 0o004:
            return path
        copy = self.scratch / f"readable-{path.name}"
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o644)
        return copy

    def connection_dir(self, workdir: Path) -> Path:
        return self.ipc

    def next_kernel(self, limits: Limits | None = None) -> None:
        """Run by root, every kernel after the job's first gets a fresh uid: a fork bomb's children
        still being torn down (seconds, on a busy machine) would otherwise count against the new
        kernel's RLIMIT_NPROC and it could not even start its threads."""
        super().next_kernel(limits)
        self._kernels += 1
        if self._kernels > 1 and self.root:
            self.uid = self.gid = _fresh_uid()
            self.uids.append(self.uid)
            self._identity()

    def prepare(self, connection_file: Path) -> None:
        """Before a kernel starts: what is left of the job's earlier kernels (a fork bomb's
        children, say) is ended, ipc/ is opened to the kernel's group, and the connection file
        (written by the grader, mode 0600) is made readable, not writable, for that group."""
        self._end_leftovers()
        if self.root:
            os.chmod(self.ipc, 0o770)
            os.chown(connection_file, 0, self.gid)
            os.chmod(connection_file, 0o640)

    def started(self, workdir: Path) -> None:
        """Once the kernel has bound its sockets: ipc/ becomes read-only for it."""
        if self.root:
            os.chmod(self.ipc, 0o750)

    def cleanup(self, workdir: Path) -> None:
        super().cleanup(workdir)
        self._end_leftovers()

    def _end_leftovers(self) -> None:
        """End every process of this job's uids (only sandboxed kernels of this job use them)."""
        if not self.root:
            return  # without a uid of its own, the PID namespace ends with bwrap (--die-with-parent)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pids = [(pid, uid) for uid in self.uids for pid in processes_of(uid)]
            if not pids:
                return
            for pid, uid in pids:
                _kill(pid, uid)
            time.sleep(0.05)

    # -- the command ------------------------------------------------------------------------------
    def argv(self, workdir: Path, limits: Limits, env: dict | None = None) -> list[str]:
        # RLIMIT_NPROC counts the processes of a uid: only meaningful for the kernel's own uid
        processes = limits.processes or (KERNEL_PROCESSES if self.root else 0)  # RLIMIT_NPROC: threads count too
        return self.limit_command(limits, processes) + self.command(workdir, env or {}) + kernel_command()

    def command(self, workdir: Path, env: dict, template: bool = False) -> list[str]:
        """bwrap and its options, up to the program to run in the sandbox. template: for a warm-kernel
        template (autograder/kernel/kernel_template.py), run by root: it stays root, with the capabilities
        it needs to give each kernel it forks namespaces, mounts and a uid of its own (every one is
        cleared when the kernel drops to its uid)."""
        if template:
            namespaces = [*ROOT_NAMESPACES, *_cap_add("CAP_SETUID", "CAP_SETGID", "CAP_SYS_ADMIN", "CAP_NET_ADMIN")]
            drop = []
        elif self.root:
            # no user namespace: the kernel becomes a real unprivileged uid (setpriv, util-linux),
            # which needs these two capabilities for that one step; setuid clears every capability
            namespaces = [*ROOT_NAMESPACES, *_cap_add("CAP_SETUID", "CAP_SETGID")]
            drop = [
                shutil.which("setpriv") or "/usr/bin/setpriv",
                f"--reuid={self.uid}",
                f"--regid={self.gid}",
                "--clear-groups",
                "--",
            ]
        else:
            namespaces = ["--unshare-all"]
            drop = []
        return [
            bwrap_path(),
            *namespaces,
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "grading",
            *self._filesystem(workdir, env),
            "--chdir",
            str(workdir),
            *self._environment(workdir, env),
            "--",
            *drop,
        ]

    def _filesystem(self, workdir: Path, env: dict) -> list[str]:
        args = [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--perms",
            "1777",
            "--size",
            str(TMP_BYTES),
            "--tmpfs",
            "/tmp",
            "--perms",
            "1777",
            "--size",
            str(SHM_BYTES),
            "--tmpfs",
            "/dev/shm",
        ]
        made = {Path("/"), Path("/tmp"), Path("/dev"), Path("/proc"), Path("/dev/shm")}

        def parents(dest: Path) -> list[str]:
            out = []
            for parent in reversed(dest.parents):
                if parent not in made:
                    out += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
            return out

        def bind(src: Path, dest: Path | None = None, mode: str = "--ro-bind") -> list[str]:
            dest = dest or src
            out = parents(dest) + [mode, str(src), str(dest)]
            made.add(dest)
            return out

        # the system: /usr, and /bin, /lib… as they are here (links into /usr, or folders)
        args += bind(Path("/usr"))
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            top = Path("/") / name
            if top.is_symlink():
                args += ["--symlink", os.readlink(top), str(top)]
                made.add(top)
            elif top.is_dir():
                args += bind(top)
        for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime"):
            if (Path("/etc") / name).exists():
                args += bind(Path("/etc") / name)
        args += bind(self.scratch / "passwd", Path("/etc/passwd"))
        args += bind(self.scratch / "group", Path("/etc/group"))
        for folder in _python_dirs():
            args += bind(folder)
        for path in self.readable:
            args += bind(self._readable(path), path)
        # the job's scratch folder (what the kernel may change there: see _prepare_scratch), and
        # the kernel's working folder, in memory
        args += bind(self.scratch, mode="--bind")
        args += parents(workdir) + ["--perms", "0777", "--size", str(WORK_BYTES), "--tmpfs", str(workdir)]
        return args

    def _environment(self, workdir: Path, env: dict) -> list[str]:
        out = ["--clearenv", "--unsetenv", "JPY_PARENT_PID"]  # with --unshare-pid there is no parent to watch
        for key, value in sorted(self.kernel_environment(workdir, env).items()):
            out += ["--setenv", key, str(value)]
        return out

    def kernel_environment(self, workdir: Path, env: dict) -> dict:
        """The kernel's whole environment: the variables of PASSED_ENV, and these."""
        kept = {k: env[k] for k in self.passed_env if k in env}
        kept.update(
            {
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
                "HOME": str(workdir),
                "TMPDIR": "/tmp",
                "LANG": "C.UTF-8",
                "LC_ALL": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1",
                "USER": "student",
                "LOGNAME": "student",
            }
        )
        return {k: str(v) for k, v in kept.items()}


def _uid_of(pid: int) -> int | None:
    """The real uid of a process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def processes_of(uid: int) -> list[int]:
    """The processes whose real uid is `uid`."""
    return [int(e.name) for e in os.scandir("/proc") if e.name.isdigit() and _uid_of(int(e.name)) == uid]


def _kill(pid: int, uid: int) -> None:
    """SIGKILL one process if it still is a process of `uid` (a pidfd pins it: no pid-reuse race)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if _uid_of(pid) == uid:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fresh_uid() -> int:
    while True:
        uid = UID_RANGE[0] + secrets.randbelow(UID_RANGE[1] - UID_RANGE[0])
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid


def bwrap_path() -> str:
    return shutil.which("bwrap") or "/usr/bin/bwrap"


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None if a bwrap sandbox can start here, else why not."""
    if not shutil.which("bwrap"):
        return "bwrap is not installed (Debian: apt-get install bubblewrap; `make system-deps`)"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bwrap-probe-") as tmp:
        box = BwrapSandbox(Path(tmp), use_cgroups=False)
        command = box.command(Path(tmp) / "work", {})
        command += [PYTHON, "-c", "import os; print(os.getuid())"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"bwrap could not run: {err}"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if proc.returncode != 0 or proc.stdout.strip() != str(box.uid):
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        return f"bwrap is installed but a sandbox did not start here ({detail[-1] if detail else proc.returncode})"
    return None


def available() -> list[str]:
    return (["bwrap"] if bwrap_problem() is None else []) + ["none"]


def resolve_sandbox(choice: str) -> str:
    global _warned
    if choice == "auto":
        problem = bwrap_problem()
        if problem is None:
            return "bwrap"
        if not _warned:
            bar = "!" * 78
            print(
                f"{bar}\nWARNING: grading WITHOUT a sandbox: {problem}.\n"
                "Student code will run with the grader's rights (it can read the gradebook and other\n"
                f"students' files). Install bubblewrap, or pass --sandbox none to silence this.\n{bar}",
                file=sys.stderr,
                flush=True,
            )
            _warned = True
        return "none"
    if choice == "bwrap" and bwrap_problem() is not None:
        raise SetupError(f"sandbox 'bwrap' is not available here: {bwrap_problem()}")
    if choice not in ("bwrap", "none"):
        raise UsageError(f"unknown sandbox {choice!r} (available: {', '.join(available())}, auto)")
    return choice


def make_sandbox(
    choice: str, scratch: Path, readable: list[Path] | tuple = (), passed_env: tuple = (), use_cgroups: bool = True
) -> Sandbox:
    """`readable`: what of the repository a sandboxed kernel may read, `passed_env`: the course's
    environment variables it gets (autograder/plugin.py); `use_cgroups`: a control group per kernel
    where the machine allows it (autograder/kernel/cgroups.py)."""
    if choice == "none":
        return Sandbox(use_cgroups)
    if choice == "bwrap":
        return BwrapSandbox(scratch, readable=readable, passed_env=passed_env, use_cgroups=use_cgroups)
    raise ValueError(f"unknown sandbox {choice!r}")
