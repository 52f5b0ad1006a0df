"""Run one notebook to grade it: per-cell and per-notebook time limits, an output cap,
resource limits on the kernel, and a kernel that dies is restarted and the rest still graded.

`Launcher` decides how the kernel process starts (plain, or inside the sandbox of
autograder/sandbox.py); `execute()` owns everything else.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from queue import Empty

from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import Execute as NbgraderExecute

POLL_STEP = 0.25   # seconds


def poll_in_short_steps(channel) -> None:
    """Make `channel.get_msg(timeout)` poll the socket in short steps instead of one long wait.

    nbclient waits for a cell's reply on the shell socket while, for an ipywidgets Output widget
    (every `interactive` slider has one), it also sends on that socket from another task. With
    pyzmq's asyncio sockets that wait can miss its wake-up and sleep until the whole cell timeout
    runs out (nbclient issue 312): a slider cell then takes the full timeout, 10 minutes with
    ours. Short polls notice the waiting message within POLL_STEP.
    """
    wait = channel.get_msg

    async def get_msg(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = POLL_STEP if deadline is None else max(0.0, min(POLL_STEP, deadline - time.monotonic()))
            try:
                return await wait(timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


class ShortPolls:
    """Mixin for nbclient clients (nbgrader's Execute included): short polls on the shell and iopub channels."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        poll_in_short_steps(kc.shell_channel)
        poll_in_short_steps(kc.iopub_channel)
        return kc


class CourseNotebookClient(ShortPolls, NotebookClient):
    """nbclient's NotebookClient without the widget hang."""


class Execute(ShortPolls, NbgraderExecute):
    """nbgrader's Execute preprocessor without the widget hang (used in nbgrader_config.py)."""

from .limits import clip



@dataclass
class Limits:
    cell_timeout: float = 120.0          # seconds one cell may run
    notebook_timeout: float = 900.0      # seconds for the whole notebook, restarts included
    output_bytes: int = 1_000_000        # output one cell may keep; the rest is dropped with a note
    notebook_output_bytes: int = 4_000_000   # output all the cells together may keep
    memory_bytes: int = 6 * 2**30        # address space of the kernel process
    processes: int = 0                   # RLIMIT_NPROC for an unprivileged kernel user (0: leave)
    file_bytes: int = 256 * 2**20        # largest file the kernel may write
    restarts: int = 2                    # kernel restarts after a crash or a hung cell


def kernel_command() -> list[str]:
    """The kernel, as every launcher starts it (after its own wrapping). quit() and exit() in a
    cell stop the kernel's event loop 0.1 s later, in whichever cell then runs: the grade would
    depend on timing. The grading kernel ignores them (the shell's ask_exit does nothing)."""
    return [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
            "--HistoryManager.hist_file=:memory:",
            "--IPKernelApp.exec_lines=['get_ipython().ask_exit = lambda: None']"]


class Launcher:
    """Starts a kernel without a sandbox, under resource limits."""
    name = "none"
    transport = "ipc"        # Unix sockets in the scratch folder: no TCP ports, nothing on the network
    interrupt_mode = "signal"

    def argv(self, workdir: Path, limits: Limits, env: dict | None = None) -> list[str]:
        return [sys.executable, "-m", "autograder.limits",
                f"--memory={limits.memory_bytes}", f"--cpu={int(limits.notebook_timeout * 2)}",
                f"--processes={limits.processes}", f"--file-size={limits.file_bytes}", "--",
                *kernel_command()]

    def connection_dir(self, workdir: Path) -> Path:
        return workdir

    def prepare(self, connection_file: Path) -> None:
        """Called once the connection file is written, before the kernel starts."""

    def started(self, workdir: Path) -> None:
        """Called once the kernel answers, before any cell runs."""

    def cleanup(self, workdir: Path) -> None:
        pass


@dataclass
class Outcome:
    events: list[str] = field(default_factory=list)   # restarts, time limits, truncated output
    seconds: float = 0.0
    kernel_starts: int = 0


# An error output is always kept (it decides a test cell's grade), with its parts clipped to these.
ERROR_NAME_CHARS = 200
ERROR_VALUE_CHARS = 2_000
TRACEBACK_CHARS = 20_000
LOG_TAIL_BYTES = 16_000      # what is kept of the kernel process's own stdout and stderr


class KernelLog:
    """The kernel process's own stdout and stderr (not the cells' outputs: ipykernel echoes there
    what code writes to file descriptors 1 and 2). A pipe that a thread drains as fast as the kernel
    writes, keeping only the last LOG_TAIL_BYTES: nothing grows, on disk or in memory, however
    much a kernel writes, and a kernel that does not start is explained by its last words."""

    def __init__(self, keep: int = LOG_TAIL_BYTES):
        self._read, self.fd = os.pipe()
        self._keep = keep
        self._tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, daemon=True, name="kernel-log")
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._read, 1 << 16):
                with self._lock:
                    self.total += len(chunk)
                    self._tail += chunk
                    del self._tail[:-self._keep]
        except OSError:
            pass
        finally:
            os.close(self._read)

    def close_writer(self) -> None:
        """After the kernel started: it holds its own copy of the pipe's end."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def tail(self, lines: int = 3, wait: float = 1.0) -> list[str]:
        """The last lines the kernel process wrote (each clipped); waits up to `wait` s for it to end."""
        self._thread.join(wait)
        with self._lock:
            text = self._tail.decode(errors="replace")
        return [clip(line, 300) for line in text.strip().splitlines()[-lines:]]


def _size(content) -> int:
    return len(json.dumps(content, default=str))


def _bounded_error(content: dict) -> dict:
    """An error message's content with its name, value and traceback clipped (the last lines of a
    long traceback are kept: they name the error)."""
    traceback = content.get("traceback")
    traceback = [clip(line, TRACEBACK_CHARS // 4) for line in traceback] \
        if isinstance(traceback, list) and all(isinstance(line, str) for line in traceback) else []
    kept, used = [], 0
    for line in reversed(traceback):
        if used + len(line) > TRACEBACK_CHARS:
            kept.append(f"[... {len(traceback) - len(kept)} more lines of the traceback left out by the grader]")
            break
        kept.append(line)
        used += len(line)
    return {**content, "ename": clip(content.get("ename", ""), ERROR_NAME_CHARS),
            "evalue": clip(content.get("evalue", ""), ERROR_VALUE_CHARS), "traceback": kept[::-1]}


class _Client(NotebookClient):
    """nbclient with output caps: what one cell keeps (limits.output_bytes) and what the notebook
    keeps (limits.notebook_output_bytes), counted over every message a cell sends, whatever its
    shape: a stream keeps its beginning up to the cap, other outputs past the cap are dropped with
    a note, an error is always kept (clipped), an update of an earlier display is charged for every
    output it rewrites."""

    def __init__(self, nb, limits: Limits, **kw):
        super().__init__(nb, timeout=int(limits.cell_timeout), allow_errors=True,
                         interrupt_on_timeout=True, record_timing=False, **kw)
        self._limit = limits.output_bytes
        self._notebook_limit = limits.notebook_output_bytes
        self._bytes: dict[int, int] = {}
        self._total = 0
        self._late_errors: dict[int, object] = {}   # per cell, the error output kept past the cap
        self._current: int | None = None             # the cell whose messages are being processed
        self.truncated: set[int] = set()      # cells whose output went beyond the cap

    def _room(self, cell_index: int) -> int:
        return max(0, min(self._limit - self._bytes.get(cell_index, 0), self._notebook_limit - self._total))

    def _use(self, cell_index: int, size: int) -> None:
        self._bytes[cell_index] = self._bytes.get(cell_index, 0) + size
        self._total += size

    def _over(self, outs, cell_index: int) -> None:
        """The cap is reached: a note, once per cell."""
        if cell_index not in self.truncated:
            self.truncated.add(cell_index)
            outs.append(nbformat.v4.new_output(
                "stream", name="stdout", text=f"\n[output beyond {self._limit // 1000} kB (or the notebook's "
                f"{self._notebook_limit // 1000} kB) was dropped by the grader]\n"))

    def process_message(self, msg, cell, cell_index):
        self._current = cell_index
        return super().process_message(msg, cell, cell_index)

    def _update_display_id(self, display_id, msg):
        rewritten = sum(len(v) for v in self._display_id_map.get(display_id, {}).values())
        if rewritten and self._current is not None:
            size = _size(msg.get("content", {})) * rewritten
            if size > self._room(self._current):
                self.truncated.add(self._current)
                return
            self._use(self._current, size)
        super()._update_display_id(display_id, msg)

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = len(json.dumps(content, default=str))
        if msg.get("msg_type") == "error":
            msg = {**msg, "content": _bounded_error(content)}
            size = _size(msg["content"])
        room = self._room(cell_index)
        if size <= room:
            self._use(cell_index, size)
            return super().output(outs, msg, display_id, cell_index)
        if msg.get("msg_type") == "error":
            # past the cap an error is still kept, one per cell (the newest): it decides the grade
            self._over(outs, cell_index)
            earlier = self._late_errors.get(cell_index)
            outs[:] = [o for o in outs if o is not earlier]
            out = super().output(outs, msg, display_id, cell_index)
            self._late_errors[cell_index] = out
            return out
        out = None
        if msg.get("msg_type") == "stream" and isinstance(content.get("text"), str) and room > 100:
            # the beginning of the text, as much as fits
            head = content["text"].encode()[:room - 100].decode(errors="ignore")
            self._use(cell_index, room)
            out = super().output(outs, {**msg, "content": {**content, "text": head}}, display_id, cell_index)
        self._over(outs, cell_index)
        return out


def _error(cell, ename: str, evalue: str) -> None:
    cell.outputs.append(nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                               traceback=[f"{ename}: {evalue}"]))


async def _start(client: _Client, launcher: Launcher, workdir: Path, env: dict, limits: Limits):
    km = AsyncKernelManager(kernel_name="python3")
    km._kernel_spec = KernelSpec(argv=launcher.argv(workdir, limits, env), env={}, language="python",
                                 display_name="grading kernel", interrupt_mode=launcher.interrupt_mode)
    km.transport = launcher.transport
    conn_dir = launcher.connection_dir(workdir)
    km.connection_file = str(conn_dir / "kernel.json")
    if launcher.transport == "ipc":
        km.ip = str(conn_dir / "kernel-ipc")
    km.write_connection_file()          # start_kernel keeps this file; the launcher may hand it over
    launcher.prepare(Path(km.connection_file))
    log = KernelLog()
    try:
        await km.start_kernel(env=env, cwd=str(workdir), stdout=log.fd, stderr=subprocess.STDOUT)
    finally:
        log.close_writer()
    client.km = km
    kc = km.client()
    kc.start_channels()
    poll_in_short_steps(kc.shell_channel)
    poll_in_short_steps(kc.iopub_channel)
    try:
        await kc.wait_for_ready(timeout=limits.cell_timeout)
    except RuntimeError as err:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
        raise RuntimeError(clip(" / ".join([str(err), *log.tail()]))) from None
    kc.allow_stdin = False
    client.kc = kc
    launcher.started(workdir)


async def _stop(client: _Client) -> None:
    if client.kc is not None:
        client.kc.stop_channels()
    if client.km is not None:
        try:
            await client.km.shutdown_kernel(now=True)
        except Exception:  # already gone
            pass
        try:
            await client.km.cleanup_resources()
        except Exception:
            pass
    client.kc = client.km = None


class CellHooks:
    """Told before and after each cell runs (not when cells are run again after a restart): the
    probe server accepts a hidden test's session only while that test's cell runs."""

    def before_cell(self, cell) -> None:
        pass

    def after_cell(self, cell) -> None:
        pass


async def execute(nb, workdir: Path, env: dict, launcher: Launcher | None = None,
                  limits: Limits | None = None, hooks: CellHooks | None = None) -> Outcome:
    """Execute `nb` in place. Errors go into the cells' outputs; nothing raises for student faults."""
    hooks = hooks or CellHooks()
    launcher = launcher or Launcher()
    limits = limits or Limits()
    outcome = Outcome()
    started = time.monotonic()
    deadline = started + limits.notebook_timeout
    client = _Client(nb, limits, resources={"metadata": {"path": str(workdir)}})
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
    done: list[int] = []          # cells that ran to the end in some kernel
    position = 0
    restarts_left = limits.restarts
    try:
        while position < len(code):
            try:
                await _start(client, launcher, workdir, env, limits)
                outcome.kernel_starts += 1
            except Exception as err:
                for i in code[position:]:
                    _error(nb.cells[i], "KernelStartError", f"the grading kernel did not start: {clip(err)}")
                outcome.events.append(f"kernel did not start: {clip(err)}")
                break
            if outcome.kernel_starts > 1 and done:
                # bring the new kernel to the same state: run the earlier cells again, outputs discarded
                ok = await _replay(client, nb, done, deadline, limits)
                if not ok:
                    for i in code[position:]:
                        _error(nb.cells[i], "KernelRestartFailed",
                               "the kernel was restarted but could not run the earlier cells again")
                    outcome.events.append("replay after restart failed")
                    break
            failed_at = None
            for i in code[position:]:
                cell = nb.cells[i]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    for j in code[code.index(i):]:
                        _error(nb.cells[j], "NotebookTimeLimit",
                               f"not run: the notebook's time limit ({limits.notebook_timeout:.0f} s) ran out")
                    outcome.events.append("notebook time limit reached")
                    position = len(code)
                    break
                cell_started = time.monotonic()
                budget = min(limits.cell_timeout + 20, remaining)
                hooks.before_cell(cell)
                try:
                    await asyncio.wait_for(client.async_execute_cell(cell, i, execution_count=i + 1),
                                           timeout=budget)
                except DeadKernelError:
                    if time.monotonic() - cell_started >= budget:
                        # wait_for gave up on a cell that ignored the interrupt; nbclient reports
                        # the cancellation as a dead kernel
                        _error(cell, "CellTimeoutError", f"this cell ran longer than {limits.cell_timeout:.0f} s "
                               "and did not stop when interrupted; the kernel was restarted")
                    else:
                        _error(cell, "DeadKernelError", "the kernel died while running this cell "
                               "(os._exit, a crash, a signal, or the memory limit)")
                    failed_at = i
                except asyncio.TimeoutError:
                    _error(cell, "CellTimeoutError",
                           f"this cell ran longer than {limits.cell_timeout:.0f} s and was stopped")
                    failed_at = i
                except Exception as err:    # the kernel sent something nbclient could not handle
                    _error(cell, "GraderError", f"the grader could not process this cell's output "
                           f"({type(err).__name__}); the kernel was restarted")
                    failed_at = i
                else:
                    if _timed_out(cell) or time.monotonic() - cell_started >= limits.cell_timeout:
                        _error(cell, "CellTimeoutError", f"this cell ran longer than {limits.cell_timeout:.0f} s "
                               "and was interrupted; the kernel was restarted")
                        failed_at = i        # restart for a clean, responsive kernel
                    else:
                        done.append(i)
                hooks.after_cell(cell)
                if failed_at is not None:
                    position = code.index(i) + 1
                    last = cell.outputs[-1]
                    outcome.events.append(clip(f"cell {_label(cell, i)}: {last.get('ename', 'error')}: "
                                               f"{last.get('evalue', '')}"))
                    break
            else:
                position = len(code)
            await _stop(client)
            if failed_at is not None and position < len(code):
                if restarts_left == 0:
                    for j in code[position:]:
                        _error(nb.cells[j], "NotRun", "not run: the kernel failed too many times")
                    outcome.events.append(f"the kernel failed {limits.restarts + 1} times: the cells after "
                                          f"{_label(nb.cells[failed_at], failed_at)} were not run")
                    break
                restarts_left -= 1
                outcome.events.append("the kernel was restarted, the cells that had run were run again, "
                                      "and grading went on")
    finally:
        await _stop(client)
        launcher.cleanup(workdir)
        outcome.seconds = time.monotonic() - started
    for i in sorted(client.truncated):
        outcome.events.append(f"cell {_label(nb.cells[i], i)}: its output went beyond "
                              f"{limits.output_bytes // 1000} kB (or the notebook's {limits.notebook_output_bytes // 1000}"
                              " kB together); the rest was dropped")
    return outcome


def _label(cell, index: int) -> str:
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    return repr(nbg.get("grade_id") or cell.get("id") or index)


def _timed_out(cell) -> bool:
    return any(o.get("output_type") == "error" and o.get("ename") == "CellTimeoutError" for o in cell.outputs)


async def _replay(client, nb, indices, deadline, limits) -> bool:
    # the replayed outputs are thrown away: they count neither against the cells' output caps
    counters = (dict(client._bytes), client._total, set(client.truncated), dict(client._late_errors))
    try:
        for i in indices:
            scratch = nbformat.from_dict(json.loads(json.dumps(nb.cells[i])))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(client.async_execute_cell(scratch, i),
                                       timeout=min(limits.cell_timeout + 20, remaining))
            except Exception:       # dead kernel, time limit, unreadable output
                return False
        return True
    finally:
        client._bytes, client._total, client.truncated, client._late_errors = counters
