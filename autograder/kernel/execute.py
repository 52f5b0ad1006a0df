"""Run one notebook to grade it: per-cell and per-notebook time limits, an output cap,
resource limits on the kernel, and a kernel that dies is restarted and the rest still graded.

The job's sandbox (autograder/kernel/sandbox.py) says how the kernel is wrapped, the provisioner of
autograder/kernel/provisioner.py launches it; `execute()` owns everything else.

Time limits count the student's work, not the machine's load (autograder/kernel/limits.py): while a cell
runs, the CPU time of its kernel's processes (its control group's, else theirs in /proc) is read
every POLL_STEP; a cell that uses more than `cell_timeout` CPU seconds, or all the cells together
more than `notebook_timeout`, is interrupted, and its kernel killed if the interrupt does not stop
it within INTERRUPT_GRACE of wall time or INTERRUPT_GRACE_CPU of CPU time; wall-clock ceilings (`Limits.cell_wall`, `notebook_wall`) stop cells
that wait without computing, and `Limits.cell_wait_timeout` a cell whose kernel has waited that long
(neither computing, nor waiting for a CPU, nor waiting for the grader: `GraderMeter`, the grading
process's own CPU time and waits for a CPU while it reads the kernel's output or judges, and the hooks'
`grader_seconds`, the probe server's clock). Which limit stopped a cell, and the CPU and wall seconds it had used,
are said in the cell's error, in the notes and in `Outcome.stopped`.

The student's time budget (Limits.student_budget, shared by a student's notebooks: autograder/kernel/budget.py)
gives the notebook an `allowance`: the seconds it may count, each cell's kernel CPU time, the grader's
work for it less the grader's waits for a CPU, and the kernel's own waiting (`Watched.spent`), which a
busy machine does not stretch.
When they run out the running cell is stopped (its kernel killed at once: nothing runs after it), and
every cell left gets a StudentTimeBudget error; a notebook whose allowance is spent before it starts
runs no kernel at all.

What the kernel sends is read within bounds (a kernel is hostile): the grader's client reaches the
kernel's sockets through a relay (autograder/kernel/relay.py) that counts each message's parts and sums their
sizes as they arrive, so that no message of more than limits.MESSAGE_BYTES (or limits.MESSAGE_FRAMES
parts) reaches the grader: ZeroMQ receives a multipart message whole, and each part's own cap
(KERNEL_FRAME_BYTES, ZMQ_MAXMSGSIZE) does not bound their number. Each message's JSON is checked for
its values and depth before it is decoded (runtime/wire.py), at most KERNEL_QUEUED messages wait in
the grader (the rest wait in the kernel, in its own memory), and widget (comm) messages count against
the output caps, with at most WIDGET_STATE_BYTES of widget state kept. A message past the relay's
bounds ends every connection to the kernel: the run notices (`relay.cut`), the cell gets a GraderError
saying why and the kernel is restarted. (A kernel that dies closes its connections too: that is not a
cut, and nbclient sees the dead kernel.)
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import zmq
from queue import Empty

from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete, DeadKernelError

from . import provisioner
from .cgroups import run_delays, tree_cpu_seconds, tree_pids
from .relay import Relay
from .limits import (
    ERROR_NAME_CHARS,
    ERROR_VALUE_CHARS,
    HARD_FACTOR,
    INTERRUPT_GRACE,
    INTERRUPT_GRACE_CPU,
    KERNEL_FRAME_BYTES,
    KERNEL_MESSAGE_DEPTH,
    KERNEL_MESSAGE_VALUES,
    KERNEL_QUEUED,
    KERNEL_START_SECONDS,
    LOG_TAIL_BYTES,
    MESSAGE_BYTES,
    MESSAGE_FRAMES,
    TRACEBACK_CHARS,
    WIDGET_STATE_BYTES,
    Limits,
    clip,
)

# (Limits: where callers have always found it; every limit below is declared in limits.py, with its reason)
from ..runtime.wire import MessageRefused, check_json
from .sandbox import Sandbox

# The short polls on a kernel's channels, in a module of their own that every user's server on the hub also
# gets (autograder/classroom/hub.py); POLL_STEP is also how often a running cell's clocks are read here;
# Execute, nbgrader's Execute with them, is the one nbgrader_config.py names
from .shortpolls import POLL_STEP, Execute, ShortPolls, poll_in_short_steps  # noqa: F401

RECONNECT_MS = 5  # how soon a client socket refused by a kernel still starting tries again


class CourseNotebookClient(ShortPolls, NotebookClient):
    """nbclient's NotebookClient without the widget hang."""


@dataclass
class Outcome:
    events: list[str] = field(default_factory=list)  # restarts, time limits, truncated output
    seconds: float = 0.0
    kernel_starts: int = 0
    kernels: str = "cold"  # how the last kernel started: "cold", or "warm" (forked from a template)
    cpu_seconds: float = 0.0  # CPU time the notebook's cells used (replays after a restart included)
    metered: str = ""  # how: "cgroup" (the kernel's control group) or "proc" (its processes in /proc)
    # cells a limit stopped: {"cell", "limit", "limit_seconds", "cpu_seconds", "wall_seconds", "queued_seconds",
    # "killed"}: queued, of the wall seconds, those the kernel waited for a CPU the machine's load held
    stopped: list[dict] = field(default_factory=list)
    peaks: list[dict] = field(default_factory=list)  # per kernel: its control group's highest memory, processes
    # the seconds of the student's budget this notebook counted (autograder/kernel/budget.py), and whether the
    # budget ran out in it (a cell stopped by it, or cells left unrun)
    counted_seconds: float = 0.0
    budget_ran_out: bool = False
    longest_wait: dict = field(default_factory=dict)  # the cell that waited longest: {"cell", "seconds"}
    heaviest_cell: dict = field(default_factory=dict)  # the cell that used most CPU: {"cell", "cpu_seconds"}
    largest_message: int = 0  # bytes of the largest message a kernel of the notebook sent (relay.py)


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
                    del self._tail[: -self._keep]
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
    traceback = (
        [clip(line, TRACEBACK_CHARS // 4) for line in traceback]
        if isinstance(traceback, list) and all(isinstance(line, str) for line in traceback)
        else []
    )
    kept, used = [], 0
    for line in reversed(traceback):
        if used + len(line) > TRACEBACK_CHARS:
            kept.append(f"[... {len(traceback) - len(kept)} more lines of the traceback left out by the grader]")
            break
        kept.append(line)
        used += len(line)
    return {
        **content,
        "ename": clip(content.get("ename", ""), ERROR_NAME_CHARS),
        "evalue": clip(content.get("evalue", ""), ERROR_VALUE_CHARS),
        "traceback": kept[::-1],
    }


class _Client(NotebookClient):
    """nbclient with output caps: what one cell keeps (limits.output_bytes) and what the notebook
    keeps (limits.notebook_output_bytes), counted over every message a cell sends, whatever its
    shape: a stream keeps its beginning up to the cap, other outputs past the cap are dropped with
    a note, an error is always kept (clipped), an update of an earlier display is charged for every
    output it rewrites."""

    def __init__(self, nb, limits: Limits, **kw):
        # no time limit of nbclient's: the run watches each cell (_Run._watch)
        super().__init__(nb, timeout=None, allow_errors=True, record_timing=False, **kw)
        self._limit = limits.output_bytes
        self._widget_bytes = 0
        self._last_iopub = 0.0
        self.relay: Relay | None = None
        self._notebook_limit = limits.notebook_output_bytes
        self._bytes: dict[int, int] = {}
        self._total = 0
        self._late_errors: dict[int, object] = {}  # per cell, the error output kept past the cap
        self._current: int | None = None  # the cell whose messages are being processed
        self.truncated: set[int] = set()  # cells whose output went beyond the cap

    async def _async_poll_for_reply(self, msg_id, cell, timeout, task_poll_output_msg, task_poll_kernel_alive):
        """nbclient's, without a time limit of its own (the run watches the cell), and waiting for the
        cell's outputs after its reply for as long as the kernel's messages keep coming: nbclient gives
        up after `iopub_timeout` (4 s) whatever it is still reading, and a cell after a flood of output
        (or on a busy machine, any cell) lost outputs that were on their way (an error among them
        decides a test cell's grade). It gives up only after iopub_timeout of silence."""
        while True:
            msg = await self.kc.shell_channel.get_msg(timeout=None)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            while True:
                done, _ = await asyncio.wait({task_poll_output_msg}, timeout=self.iopub_timeout)
                if done:
                    task_poll_output_msg.result()  # its error, if it failed
                    break
                if (
                    time.monotonic() - self._last_iopub > self.iopub_timeout
                    and not await self.kc.iopub_channel.msg_ready()
                    and not (self.relay is not None and self.relay.busy(self.iopub_timeout))
                ):
                    task_poll_output_msg.cancel()
                    self.log.warning("Timeout waiting for IOPub output")
                    break
            task_poll_kernel_alive.cancel()
            return msg

    async def _async_poll_output_msg(self, parent_msg_id, cell, cell_index):
        while True:
            msg = await self.kc.iopub_channel.get_msg(timeout=None)
            self._last_iopub = time.monotonic()
            if msg["parent_header"].get("msg_id") == parent_msg_id:
                try:
                    self.process_message(msg, cell, cell_index)
                except CellExecutionComplete:
                    return

    def _room(self, cell_index: int) -> int:
        return max(0, min(self._limit - self._bytes.get(cell_index, 0), self._notebook_limit - self._total))

    def _use(self, cell_index: int, size: int) -> None:
        self._bytes[cell_index] = self._bytes.get(cell_index, 0) + size
        self._total += size

    def _over(self, outs, cell_index: int) -> None:
        """The cap is reached: a note, once per cell."""
        if cell_index not in self.truncated:
            self.truncated.add(cell_index)
            outs.append(
                nbformat.v4.new_output(
                    "stream",
                    name="stdout",
                    text=f"\n[output beyond {self._limit // 1000} kB (or the notebook's "
                    f"{self._notebook_limit // 1000} kB) was dropped by the grader]\n",
                )
            )

    async def _async_poll_kernel_alive(self) -> None:
        """nbclient's, ending when the kernel it watches is no longer the client's. A cell cut short
        other than by a dead kernel (the notebook's time limit) leaves this task running; once the
        kernel is stopped nbclient's would fail on the cleared `kc` ("Task exception was never
        retrieved" on the grader's stderr) or watch the next kernel on behalf of a finished cell."""
        watched = self.kc
        while True:
            await asyncio.sleep(1)
            if self.kc is not watched or watched is None:
                return
            try:
                await self._async_check_alive()
            except DeadKernelError:
                assert self.task_poll_for_reply is not None
                self.task_poll_for_reply.cancel()
                return

    def process_message(self, msg, cell, cell_index):
        self._current = cell_index
        return super().process_message(msg, cell, cell_index)

    def handle_comm_msg(self, outs, msg, cell_index):
        """A widget's message is output too: it counts against the caps, and the widget state kept
        for the notebook stays within WIDGET_STATE_BYTES; beyond either it is dropped, with a note."""
        content = msg.get("content", {})
        size = _size(content) + sum(len(b) for b in msg.get("buffers") or [])
        if size > self._room(cell_index) or self._widget_bytes + size > WIDGET_STATE_BYTES:
            self._over(outs, cell_index)
            return None
        self._use(cell_index, size)
        self._widget_bytes += size
        return super().handle_comm_msg(outs, msg, cell_index)

    def _update_display_id(self, display_id, msg):
        """A display's update (update_display, or a display with the same display_id) rewrites the outputs
        of that display in the cell that is running, never in a cell that ran before: a hidden test calls
        the student's code, which could otherwise write what it was given into one of the student's own
        earlier outputs, where the feedback would show it."""
        shown = self._display_id_map.get(display_id, {})
        if self._current is None or self._current not in shown:
            return
        own = {self._current: shown[self._current]}
        size = _size(msg.get("content", {})) * len(own[self._current])
        if size > self._room(self._current):
            self.truncated.add(self._current)
            return
        self._use(self._current, size)
        self._display_id_map[display_id] = own
        try:
            super()._update_display_id(display_id, msg)
        finally:
            self._display_id_map[display_id] = shown

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
            head = content["text"].encode()[: room - 100].decode(errors="ignore")
            self._use(cell_index, room)
            out = super().output(outs, {**msg, "content": {**content, "text": head}}, display_id, cell_index)
        self._over(outs, cell_index)
        return out


def _error(cell, ename: str, evalue: str) -> None:
    cell.outputs.append(nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"]))


async def wait_for_ready(kc, timeout: float) -> None:
    """jupyter_client's `wait_for_ready` without its last step, which reads IOPub until 0.2 s pass in
    silence (a fifth of a second per notebook, most of a warm kernel's start). The kernel is ready
    when it has answered a kernel_info request on the shell channel and the idle status of one of
    those requests has come on IOPub, which shows that the IOPub subscription is connected (a
    subscriber misses what is published before it is: then the request is sent again). A kernel
    slow to start answers every request sent meanwhile: any of them will do. What else IOPub carries
    from before is not for any cell: nbclient reads only the messages of the cell it runs."""
    deadline = time.monotonic() + timeout
    asked: set[str] = set()
    while time.monotonic() < deadline:
        asked.add(kc.kernel_info())
        try:
            reply = await kc.shell_channel.get_msg(timeout=1)
        except Empty:
            if not await kc.is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info") from None
            continue
        if reply["msg_type"] != "kernel_info_reply":
            continue
        heard_until = time.monotonic() + 0.1  # not heard by then: asked again
        while time.monotonic() < heard_until:
            try:
                msg = await kc.iopub_channel.get_msg(timeout=max(0.01, heard_until - time.monotonic()))
            except Empty:
                break
            if (
                msg["parent_header"].get("msg_id") in asked
                and msg["msg_type"] == "status"
                and msg["content"].get("execution_state") == "idle"
            ):
                kc._handle_kernel_info_reply(reply)
                return
    raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")


def bounded_unpack(unpack):
    """A Session's `unpack` that refuses a part of a kernel's message before decoding it if it is
    larger, holds more values or nests deeper than the grader reads (MessageRefused)."""

    def checked(data):
        if len(data) > KERNEL_FRAME_BYTES:
            raise MessageRefused(f"a message part of {len(data)} bytes")
        check_json(data if isinstance(data, bytes) else bytes(data), KERNEL_MESSAGE_VALUES, KERNEL_MESSAGE_DEPTH)
        return unpack(data)

    checked.bounded = True
    return checked


def bound_client(kc) -> None:
    """Bounds on what `kc` reads from its kernel (before its channels start)."""
    kc.context.setsockopt(zmq.MAXMSGSIZE, KERNEL_FRAME_BYTES)
    kc.context.setsockopt(zmq.RCVHWM, KERNEL_QUEUED)
    if not getattr(kc.session.unpack, "bounded", False):
        kc.session.unpack = bounded_unpack(kc.session.unpack)


async def _start(client: _Client, sandbox: Sandbox, workdir: Path, env: dict, limits: Limits, template=None):
    """Start a kernel (forked from `template`, autograder/kernel/warm.py, when given) and connect `client`."""
    sandbox.next_kernel(limits)
    if template is not None:
        from .warm import warm_kernel_manager

        km = warm_kernel_manager(template, sandbox, workdir, limits)
    else:
        km = provisioner.kernel_manager(sandbox, workdir, env, limits)
    log = KernelLog()
    try:
        await provisioner.launch(km, workdir, env, log.fd)
    finally:
        log.close_writer()
    client.km = km
    # every connection to the kernel goes through the relay (autograder/kernel/relay.py): the client's, and the
    # kernel manager's own control socket (it asks a sandboxed kernel to interrupt itself there)
    relay = client.relay = Relay(km.ip, [km.shell_port, km.iopub_port, km.stdin_port, km.control_port, km.hb_port])
    # the client connects as soon as the kernel is launched, before the kernel has bound its sockets;
    # a refused connect is retried after RECONNECT_IVL, 100 ms by default (half a warm kernel's start)
    kc = km.client()
    kc.ip = relay.ip
    kc.context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
    bound_client(kc)
    km._control_socket = _relayed_control_socket(km, relay)
    kc.start_channels()
    poll_in_short_steps(kc.shell_channel)
    poll_in_short_steps(kc.iopub_channel)
    try:
        # a kernel's start is the machine's time, not the student's: at least a minute, however short the
        # cells' ceiling (on a busy machine a start alone can take longer than a few seconds)
        await wait_for_ready(kc, timeout=max(limits.cell_wall, KERNEL_START_SECONDS))
    except RuntimeError as err:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
        raise RuntimeError(clip(" / ".join([str(err), *log.tail()]))) from None
    kc.allow_stdin = False
    client.kc = kc
    km.provisioner.ready()


def _relayed_control_socket(km, relay: Relay):
    """The kernel manager's control socket (jupyter_client makes it on first use, straight to the kernel),
    through the relay and under the client's bounds."""
    sock = km.context.socket(zmq.DEALER)
    sock.linger = 100
    sock.setsockopt(zmq.MAXMSGSIZE, KERNEL_FRAME_BYTES)
    sock.setsockopt(zmq.RCVHWM, KERNEL_QUEUED)
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
    sock.connect(f"ipc://{relay.ip}-{km.control_port}")
    return sock


async def _kill(km) -> None:
    """SIGKILL the kernel and wait for its end in short steps: jupyter_client's shutdown_kernel(now=True)
    looks 0.1 s after the signal (a tenth of a second per notebook; a killed kernel ends within ms).
    Once the provisioner has waited for it, shutdown_kernel finds no kernel: it only cleans up."""
    if not km.has_kernel:
        return
    await km.provisioner.kill()
    deadline = time.monotonic() + 5
    while await km.provisioner.poll() is None:
        if time.monotonic() > deadline:
            return  # shutdown_kernel tries again, as it would have
        await asyncio.sleep(0.005)
    await km.provisioner.wait()


async def _stop(client: _Client, outcome: Outcome | None = None) -> None:
    if client.relay is not None:
        if outcome is not None:
            outcome.largest_message = max(outcome.largest_message, client.relay.largest())
        client.relay.close()
        client.relay = None
    if client.kc is not None:
        client.kc.stop_channels()
    if client.km is not None:
        try:
            await _kill(client.km)
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
    probe server accepts a hidden test's session only while that test's cell runs. `grader_seconds`:
    how long, so far, the kernel has waited for the grader's own work (probes, served heads): not
    the student's waiting."""

    def before_cell(self, cell) -> None:
        pass

    def after_cell(self, cell) -> None:
        pass

    def grader_seconds(self) -> float:
        return 0.0

    def error_words(self, cell, ename: str, evalue: str) -> str:
        """How the run's events name an error a cell ended with (the grader's hooks may say less)."""
        return f"{ename}: {evalue}"


async def execute(
    nb,
    workdir: Path,
    env: dict,
    sandbox: Sandbox | None = None,
    limits: Limits | None = None,
    hooks: CellHooks | None = None,
    template=None,
    allowance: float | None = None,
) -> Outcome:
    """Execute `nb` in place. Errors go into the cells' outputs; nothing raises for student faults.
    template: a warm-kernel template (autograder/kernel/warm.py) to fork kernels from; a kernel it cannot
    give is started cold, and the outcome says so. allowance: the seconds of the student's budget
    left for this notebook (autograder/kernel/budget.py; None: the whole budget, a notebook graded alone)."""
    limits = limits or Limits()
    run = _Run(nb, workdir, env, sandbox or Sandbox(), limits, hooks or CellHooks())
    run.template = template
    run.allowance = limits.student_budget if allowance is None else allowance
    return await run.run()


class _Run:
    """One notebook's execution: kernels started one after another (a first one, then one after
    each crash or hung cell, up to limits.restarts more), each running the cells not yet run.

    `todo` are the code cells still to run, in order; `done` the cells that ran to the end in some
    kernel (a new kernel runs them again, outputs discarded, to reach the same state)."""

    def __init__(self, nb, workdir: Path, env: dict, sandbox: Sandbox, limits: Limits, hooks: CellHooks):
        self.nb, self.workdir, self.env = nb, workdir, env
        self.sandbox, self.limits, self.hooks = sandbox, limits, hooks
        self.outcome = Outcome()
        self.started = time.monotonic()
        self.deadline = self.started + limits.notebook_wall
        self.uncounted = 0.0  # seconds the notebook's wall clock does not count: kernels starting, waits for a CPU
        self.spent = 0.0  # seconds the cells counted of the student's budget (Watched.spent)
        self.client = _Client(nb, limits, resources={"metadata": {"path": str(workdir)}})
        self.todo = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
        self.done: list[int] = []
        self.restarts_left = limits.restarts
        self.template = None
        self.meter: CpuMeter | None = None
        # the meter's reading when the last cell of this kernel ended: what the kernel computes between two
        # cells (a thread left running) is counted by the next cell, and after the last one by the notebook
        self.cpu_mark: float | None = None
        self.allowance = limits.student_budget
        self.grader_meter = GraderMeter()
        self.own_errors: list = []  # the error outputs the run wrote itself (its words, not the kernel's)

    def _error(self, cell, ename: str, evalue: str) -> None:
        _error(cell, ename, evalue)
        self.own_errors.append(cell.outputs[-1])

    def _grader_seconds(self) -> tuple[float, float, float]:
        """(the hooks' clock of the grader's work for the kernel, this grading process's own CPU time, its
        waits for a CPU), cumulative (`_grown` makes a cell's figures of them)."""
        try:
            clock = float(self.hooks.grader_seconds())
        except Exception:  # noqa: BLE001  (hooks without the clock: nothing is the grader's)
            clock = 0.0
        return (clock, *self.grader_meter.read())

    def counted(self, running: "Watched | None" = None) -> float:
        """The seconds the notebook has counted of the student's budget: what each cell run spent
        (`Watched.spent`), the running cell's so far included."""
        return self.spent + (running.spent if running is not None else 0.0)

    async def run(self) -> Outcome:
        try:
            if self.todo and self.allowance <= 0:
                self._out_of_budget(before=True)
            while self.todo and await self._one_kernel():
                pass
        finally:
            self._count_after_last_cell()
            await _stop(self.client, self.outcome)
            self.sandbox.cleanup(self.workdir)
            self.outcome.seconds = time.monotonic() - self.started
            # what it counted of the student's budget: nothing if no kernel ran
            self.outcome.counted_seconds = round(self.counted(), 2) if self.outcome.kernel_starts else 0.0
            self.outcome.peaks = list(getattr(self.sandbox, "peaks", []))
            self.outcome.cpu_seconds = round(self.outcome.cpu_seconds, 2)
        for i in sorted(self.client.truncated):
            self.outcome.events.append(
                f"cell {_label(self.nb.cells[i], i)}: its output went beyond {self.limits.output_bytes // 1000} kB "
                f"(or the notebook's {self.limits.notebook_output_bytes // 1000} kB together); the rest was dropped"
            )
        return self.outcome

    def _count_after_last_cell(self) -> None:
        """What the kernel computed after its last cell ended (a thread the student left running) counts
        like a cell's CPU time: in the notebook's and against the student's budget."""
        if self.meter is None or self.cpu_mark is None:
            return
        after = max(0.0, self.meter.read() - self.cpu_mark)
        self.cpu_mark = None
        self.outcome.cpu_seconds += after
        self.spent += after

    async def _one_kernel(self) -> bool:
        """Start a kernel, bring it to the state of the cells done, run cells until one fails.
        True: a cell failed and a new kernel is to run the rest."""
        try:
            await self._start()
            self.outcome.kernel_starts += 1
        except Exception as err:
            self._give_up(
                "KernelStartError",
                f"the grading kernel did not start: {clip(err)}",
                f"kernel did not start: {clip(err)}",
            )
            return False
        if self.outcome.kernel_starts > 1 and self.done and not await self._replay():
            spent = self._out_of_time()
            if self.outcome.budget_ran_out or self.counted() >= self.allowance:
                self._out_of_budget()
            elif spent:
                self._give_up(
                    "NotebookTimeLimit",
                    f"not run: the notebook's time limit ran out ({spent})",
                    f"notebook time limit reached: {spent}",
                )
            else:
                self._give_up(
                    "KernelRestartFailed",
                    "the kernel was restarted but could not run the earlier cells again",
                    "replay after restart failed",
                )
            return False
        failed = await self._run_cells()
        self._count_after_last_cell()
        await _stop(self.client, self.outcome)
        if failed is None or not self.todo:
            return False
        if self.restarts_left == 0:
            self._give_up(
                "NotRun",
                "not run: the kernel failed too many times",
                f"the kernel failed {self.limits.restarts + 1} times: the cells after "
                f"{_label(self.nb.cells[failed], failed)} were not run",
            )
            return False
        self.restarts_left -= 1
        self.outcome.events.append(
            "the kernel was restarted, the cells that had run were run again, and grading went on"
        )
        return True

    async def _start(self) -> None:
        """A warm kernel when there is a template; a cold one otherwise, or when the warm one fails
        to start (then for the rest of this notebook too). The time it takes is not the notebook's."""
        started = time.monotonic()
        try:
            await self._start_kernel()
        finally:
            self.uncounted += time.monotonic() - started

    async def _start_kernel(self) -> None:
        if self.template is not None:
            try:
                await _start(self.client, self.sandbox, self.workdir, self.env, self.limits, self.template)
                self.outcome.kernels = "warm"
                self._metered()
                return
            except Exception as err:
                await _stop(self.client, self.outcome)
                self.template = None
                self.outcome.events.append(clip(f"a warm kernel did not start ({err}): a cold kernel was started"))
        await _start(self.client, self.sandbox, self.workdir, self.env, self.limits)
        self.outcome.kernels = "cold"
        self._metered()

    def _metered(self) -> None:
        self.meter = CpuMeter(self.sandbox, self.client.km)
        self.cpu_mark = None
        self.outcome.metered = self.meter.how
        if self.sandbox.group_problem:
            self.outcome.events.append(
                clip(
                    f"no control group for this kernel ({self.sandbox.group_problem}): "
                    "its processes were limited one by one"
                )
            )

    def _out_of_budget(self, before: bool = False) -> None:
        """The student's time budget is spent: every cell left gets a StudentTimeBudget error."""
        self.outcome.budget_ran_out = True
        budget = self.limits.student_budget
        why = f"not run: the student's time budget ({budget:g} s for all the notebooks together) was used up " + (
            "by the notebooks graded before this one" if before else "in this notebook"
        )
        self._give_up(
            "StudentTimeBudget",
            why,
            f"the student's time budget of {budget:g} s ran out: {len(self.todo)} cells were not run",
        )

    def _out_of_time(self) -> str:
        """Why the notebook has no time left for another cell ('' if it has)."""
        if self.outcome.cpu_seconds >= self.limits.notebook_timeout:
            return f"its cells used the notebook's {self.limits.notebook_timeout:g} s of CPU time"
        if self._past_deadline(time.monotonic()):
            return f"the notebook's wall-clock ceiling ({self.limits.notebook_wall:g} s) was reached"
        return ""

    async def _run_cells(self) -> int | None:
        """Run the cells to do in the current kernel; the index of the cell that failed, or None."""
        while self.todo:
            i = self.todo[0]
            if self.counted() >= self.allowance:
                self._out_of_budget()
                return None
            spent = self._out_of_time()
            if spent:
                self._give_up(
                    "NotebookTimeLimit",
                    f"not run: the notebook's time limit ran out ({spent})",
                    f"notebook time limit reached: {spent}",
                )
                return None
            self.todo.pop(0)
            cell = self.nb.cells[i]
            self.hooks.before_cell(cell)
            ok = await self._run_cell(cell, i)
            self.hooks.after_cell(cell)
            if not ok:
                last = cell.outputs[-1]
                self.outcome.events.append(clip(f"cell {_label(cell, i)}: {self._error_words(cell, last)}"))
                if self.outcome.budget_ran_out:  # the budget stopped this cell: nothing else runs
                    self._out_of_budget()
                    return None
                return i
            self.done.append(i)
        return None

    def _error_words(self, cell, error) -> str:
        """An error in the run's events: the run's own in its words; the kernel's as the hooks say."""
        ename, evalue = str(error.get("ename", "error")), str(error.get("evalue", ""))
        if any(error is own for own in self.own_errors):
            return f"{ename}: {evalue}"
        return self.hooks.error_words(cell, ename, evalue)

    async def _watch(self, task) -> "Watched":
        """Wait for a cell's task under the time limits: interrupt the kernel when one is reached,
        and cancel the task (its kernel is then killed) if the interrupt does not stop the cell in
        time. The CPU and wall seconds the cell used are added to the notebook's."""
        meter = self.meter
        now_read = meter.read()
        cpu_before = now_read if self.cpu_mark is None else min(self.cpu_mark, now_read)
        started, waited_before = time.monotonic(), meter.waited_for_cpu()
        grader_before = self._grader_seconds()
        used_before = self.outcome.cpu_seconds
        watched = Watched()
        interrupted, cpu_interrupted = 0.0, 0.0
        while not task.done():
            await asyncio.wait({task}, timeout=POLL_STEP)
            if task.done():
                break
            now = time.monotonic()
            watched.cpu, watched.wall = meter.read() - cpu_before, now - started
            watched.queued = meter.waited_for_cpu() - waited_before
            watched.grader, watched.grader_queued, watched.grader_cpu = _grown(self._grader_seconds(), grader_before)
            relay = self.client.relay
            if relay is not None and relay.cut:
                watched.cut = True  # its outputs can no longer be read: the kernel is replaced
                watched.cut_why = relay.cut
                task.cancel()
                break
            if watched.limit is None:
                watched.limit = self._reached(watched, used_before, now)
                if watched.limit is not None and watched.limit[0] == "student budget":
                    watched.killed = True  # nothing runs after it: no need to wait for an interrupt
                    self.outcome.budget_ran_out = True
                    task.cancel()
                    break
                if watched.limit is not None:
                    watched.waited_at_limit = watched.waited
                    interrupted, cpu_interrupted = now, watched.cpu
                    try:
                        await self.client.km.interrupt_kernel()
                    except Exception:  # a kernel already gone: its cell ends as a dead kernel
                        pass
            elif now - interrupted > INTERRUPT_GRACE or watched.cpu - cpu_interrupted > INTERRUPT_GRACE_CPU:
                watched.killed = True
                task.cancel()
                break
        try:
            await task
        except asyncio.CancelledError:
            if not (watched.killed or watched.cut):
                raise
        except BaseException as err:  # noqa: BLE001  (the caller decides what it means)
            watched.error = err
        self.cpu_mark = meter.read()
        watched.cpu, watched.wall = self.cpu_mark - cpu_before, time.monotonic() - started
        watched.queued = meter.waited_for_cpu() - waited_before
        watched.grader, watched.grader_queued, watched.grader_cpu = _grown(self._grader_seconds(), grader_before)
        self.outcome.cpu_seconds += watched.cpu
        self.uncounted += watched.queued + watched.grader_queued
        self.spent += watched.spent
        if watched.limit is None:  # ended between two looks, having used more than it may
            watched.limit = self._reached(watched, used_before, time.monotonic(), ended=True)
        return watched

    def _past_deadline(self, now: float, queued: float = 0.0) -> bool:
        """Whether the notebook has used its wall-clock ceiling (`queued`: the running cell's wait for a CPU)."""
        return (
            now - self.uncounted - queued > self.deadline
            or now > self.started + HARD_FACTOR * self.limits.notebook_wall
        )

    def _reached(self, watched: "Watched", used_before: float, now: float, ended: bool = False):
        """The limit the running cell has reached (None: none): (what, seconds)."""
        limits = self.limits
        if watched.cpu > limits.cell_timeout:
            return ("cell CPU time", limits.cell_timeout)
        if used_before + watched.cpu > limits.notebook_timeout:
            return ("notebook CPU time", limits.notebook_timeout)
        if ended:  # a cell that ended is judged on its CPU time only: waiting costs nothing
            return None
        uncounted = watched.queued + watched.grader_queued
        if self.counted(watched) > self.allowance:
            return ("student budget", limits.student_budget)
        if watched.wall - uncounted > limits.cell_wall or watched.wall > HARD_FACTOR * limits.cell_wall:
            return ("cell wall clock", limits.cell_wall)
        if watched.waited > limits.cell_wait_timeout:
            return ("cell waiting", limits.cell_wait_timeout)
        if self._past_deadline(now, uncounted):
            return ("notebook wall clock", limits.notebook_wall)
        return None

    async def _run_cell(self, cell, i: int) -> bool:
        """Run one cell; False (and an error output saying why) if the kernel must be replaced."""
        group = self.sandbox.group
        ooms = group.peaks().get("oom_kills", 0) if group is not None else 0
        task = asyncio.ensure_future(self.client.async_execute_cell(cell, i, execution_count=i + 1))
        watched = await self._watch(task)
        if watched.waited > self.outcome.longest_wait.get("seconds", 0.0):
            self.outcome.longest_wait = {"cell": _label(cell, i).strip("'"), "seconds": round(watched.waited, 2)}
        if watched.cpu > self.outcome.heaviest_cell.get("cpu_seconds", 0.0):
            self.outcome.heaviest_cell = {"cell": _label(cell, i).strip("'"), "cpu_seconds": round(watched.cpu, 2)}
        if watched.cut:
            self._error(
                cell,
                "GraderError",
                clip(
                    f"the kernel sent a message larger than the grader reads ({MESSAGE_BYTES // 2**20} MB a message, "
                    f"in at most {MESSAGE_FRAMES:,} parts: it sent {watched.cut_why}): its outputs could not be read; "
                    "the kernel was restarted",
                    400,
                ),
            )
            return False
        if watched.limit is not None:
            what, seconds = watched.limit
            self.outcome.stopped.append(
                {
                    "cell": _label(cell, i).strip("'"),
                    "limit": what,
                    "limit_seconds": seconds,
                    "cpu_seconds": round(watched.cpu, 2),
                    "wall_seconds": round(watched.wall, 2),
                    "queued_seconds": round(watched.queued, 2),
                    "grader_seconds": round(watched.grader, 2),
                    "grader_queued_seconds": round(watched.grader_queued, 2),
                    "waited_seconds": round(watched.waited_seconds, 2),
                    "killed": watched.killed,
                }
            )
            self._error(cell, "CellTimeoutError", watched.reason())
            return False  # restart for a clean, responsive kernel
        err = watched.error
        if isinstance(err, DeadKernelError):
            ended_by_memory = group is not None and group.peaks().get("oom_kills", 0) > ooms
            self._error(
                cell,
                "DeadKernelError",
                "the kernel died while running this cell "
                + (
                    f"(its processes together reached the memory limit, {self.limits.memory_bytes / 2**30:g} GiB)"
                    if ended_by_memory
                    else "(os._exit, a crash, a signal, or the memory limit)"
                ),
            )
            return False
        if err is not None:  # the kernel sent something nbclient could not handle
            detail = f"{type(err).__name__}: {err}" if isinstance(err, MessageRefused) else type(err).__name__
            self._error(
                cell,
                "GraderError",
                clip(f"the grader could not process this cell's output ({detail}); the kernel was restarted", 400),
            )
            return False
        if _timed_out(cell):
            self._error(cell, "CellTimeoutError", "this cell was stopped; the kernel was restarted")
            return False
        return True

    async def _replay(self) -> bool:
        """Run the cells done again in a new kernel, within the same time limits."""
        # the replayed outputs are thrown away: they count neither against the cells' output caps, nor
        # replace what the cell showed when it ran (nbclient puts the cell it ran into the notebook: the
        # copy run here is taken out again), which is what is graded and what the student sees
        client, nb = self.client, self.nb
        counters = (
            dict(client._bytes),
            client._total,
            set(client.truncated),
            dict(client._late_errors),
            client._widget_bytes,
        )
        try:
            for i in self.done:
                ran = nb.cells[i]
                scratch = nbformat.from_dict(json.loads(json.dumps(ran)))
                if self._out_of_time() or self.counted() >= self.allowance:
                    return False
                try:
                    watched = await self._watch(asyncio.ensure_future(client.async_execute_cell(scratch, i)))
                finally:
                    nb.cells[i] = ran
                if (
                    watched.limit is not None or watched.error is not None or watched.cut
                ):  # dead kernel, time limit, unreadable output
                    return False
            return True
        finally:
            (client._bytes, client._total, client.truncated, client._late_errors, client._widget_bytes) = counters

    def _give_up(self, ename: str, evalue: str, event: str) -> None:
        """The cells still to do are not run: each gets `ename: evalue`; the run notes `event`."""
        for i in self.todo:
            self._error(self.nb.cells[i], ename, evalue)
        self.todo = []
        self.outcome.events.append(event)


@dataclass
class Watched:
    """How a cell's run ended: the limit it reached ((what, seconds) or None), whether its kernel had
    to be killed, the error its task raised, and the CPU and wall seconds it used."""

    limit: tuple | None = None
    killed: bool = False
    cut: bool = False  # the relay cut the kernel's connections (a message too large)
    cut_why: str = ""
    error: BaseException | None = None
    cpu: float = 0.0
    wall: float = 0.0
    queued: float = 0.0  # of the wall seconds, those its kernel waited for a CPU the machine's load held
    grader: float = 0.0  # the grader's own work meanwhile (reading the kernel's output, probes)
    grader_queued: float = 0.0  # the grader's waits for a CPU meanwhile
    grader_cpu: float = 0.0  # the grading process's CPU time meanwhile (part of `grader`)
    waited_at_limit: float = 0.0  # its waiting when the limit was reached (the interrupt's own CPU time,
    # counted after, can take a little off the waiting measured at the end)

    @property
    def spent(self) -> float:
        """What the cell counts of the student's budget: its kernel's CPU time, the grader's work for it
        (the class spends it on the student: the probe server's clock less the grader's waits for a CPU,
        and at least the grading process's CPU time meanwhile) and the kernel's own waiting. CPU times,
        which a busy machine does not stretch, and clocks with every wait for a CPU taken out once: the
        kernel's and the grader's waits, each measured apart, can overlap, and the cell's clock less both
        fell below what its kernel computed on a busy machine (to 0 s for a whole notebook)."""
        return self.cpu + max(self.grader_cpu, self.grader - self.grader_queued) + self.waited

    @property
    def waited_seconds(self) -> float:
        """The waiting to report: what it was when the limit was reached, or more if it grew after."""
        return max(self.waited, self.waited_at_limit)

    @property
    def waited(self) -> float:
        """The seconds the cell's kernel waited of its own: neither computing, nor queued for a CPU,
        nor waiting for the grader (a kernel whose threads compute side by side waits for none)."""
        return max(0.0, self.wall - self.cpu - self.queued - self.grader - self.grader_queued)

    def reason(self) -> str:
        what, seconds = self.limit
        used = f"{self.cpu:.1f} s of CPU time in {self.wall:.1f} s"
        why = {
            "cell CPU time": f"this cell used more than its {seconds:g} s of CPU time ({used})",
            "notebook CPU time": f"the notebook's cells used their {seconds:g} s of CPU time (this cell: {used})",
            "cell wall clock": f"this cell was still running after {seconds:g} s, the limit for a cell that "
            f"waits rather than computes ({used})",
            "notebook wall clock": f"the notebook reached its wall-clock ceiling of {seconds:g} s (this cell: {used})",
            "cell waiting": f"this cell waited for more than {seconds:g} s without computing (sleeping, or "
            f"blocked on a read, a lock, an event or a child process), the limit for a cell's "
            f"waiting ({used}, {self.waited_seconds:.1f} s of it waiting)",
            "student budget": f"the student's time budget of {seconds:g} s for all the notebooks together ran "
            f"out during this cell ({used}); the cells after it were not run",
        }[what]
        if what == "student budget":
            return why
        return why + (
            "; it did not stop when interrupted, and the kernel was restarted"
            if self.killed
            else "; it was interrupted, and the kernel was restarted"
        )


def _grown(now: tuple[float, float, float], before: tuple[float, float, float]) -> tuple[float, float, float]:
    """(the grader's work, its waits for a CPU, its CPU time) since `before`: the work is the larger of
    the probe server's clock and this process's CPU time (they overlap)."""
    cpu = max(now[1] - before[1], 0.0)
    return max(now[0] - before[0], cpu), max(now[2] - before[2], 0.0), cpu


class GraderMeter:
    """How busy this grading process has been: its CPU time (every thread: reading the kernel's
    messages, the relay, the probe server's checks) and the time its threads waited for a CPU (the
    most-delayed thread's, each look). A kernel waits for the grader while the grader reads a flood
    of its output or judges an answer: that waiting is not the student's (the ceiling for a cell's
    waiting leaves it out), but the class spends it on the student (the budget counts the work, not
    the waits for a CPU)."""

    def __init__(self):
        self._delays: dict[int, float] = {}
        self._waited = 0.0

    def read(self) -> tuple[float, float]:
        """(CPU seconds, seconds waited for a CPU), cumulative."""
        try:
            delays = run_delays([os.getpid()])
        except OSError:
            delays = {}
        step = max((now - self._delays.get(tid, now) for tid, now in delays.items()), default=0.0)
        self._delays = delays
        self._waited += max(0.0, step)
        return time.process_time(), self._waited


class CpuMeter:
    """The CPU time the current kernel's processes have used: its control group's count, or what
    /proc shows of the kernel's process and those below it (autograder/kernel/cgroups.py)."""

    def __init__(self, sandbox: Sandbox, km):
        self.group = sandbox.group
        process = getattr(getattr(km, "provisioner", None), "process", None)
        self.pid = getattr(process, "pid", None)
        self.how = "cgroup" if self.group is not None else "proc"
        self._last = 0.0
        self._delays: dict[int, float] = {}
        self._waited = 0.0

    def read(self) -> float:
        try:
            if self.group is not None:
                value = self.group.cpu_seconds()
            elif self.pid:
                value = tree_cpu_seconds(self.pid)
            else:
                value = self._last
        except (OSError, ValueError):
            value = self._last
        self._last = max(self._last, value)  # a kernel gone reads less: its time stays counted
        return self._last

    def waited_for_cpu(self) -> float:
        """Seconds the kernel spent runnable but waiting for a CPU the machine's other work held,
        summed since this meter's first look (its most-delayed thread's, each look: threads that
        wait side by side wait once). Subtracted from a cell's wall clock, so that the ceiling for
        cells that wait counts their own waiting, not the machine's load."""
        try:
            pids = self.group.pids() if self.group is not None else tree_pids(self.pid) if self.pid else []
            delays = run_delays(pids)
        except OSError:
            return self._waited
        step = max((now - self._delays.get(tid, now) for tid, now in delays.items()), default=0.0)
        self._delays = delays
        self._waited += max(0.0, step)
        return self._waited


def _label(cell, index: int) -> str:
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    return repr(nbg.get("grade_id") or cell.get("id") or index)


def _timed_out(cell) -> bool:
    return any(o.get("output_type") == "error" and o.get("ename") == "CellTimeoutError" for o in cell.outputs)
