"""A bounded reader between a grading kernel and the grader: no kernel message larger than a stated size
ever reaches the grader's memory.

ZeroMQ delivers a multipart message whole: the grader's libzmq holds every part of a message before the
grader reads its first, and ZMQ_MAXMSGSIZE bounds one part, not their number. A kernel that sends one
message of many parts, each a view of the same buffer, costs itself one buffer and the grader all of
them (issue 33: a grading worker reached 9.6 GiB). So the grader's client does not connect to the
kernel's sockets: it connects to this relay, which connects to them and passes the bytes on both ways
unchanged. On the way from the kernel it reads ZeroMQ's wire protocol (ZMTP 3, the NULL mechanism, as
every current libzmq speaks it over the kernel's ipc sockets): each frame's header, so that the parts of
a message are counted and their sizes summed as they arrive. A message of more than MESSAGE_BYTES in all,
or more than MESSAGE_FRAMES parts, a frame that is not ZMTP 3, or another mechanism, ends every
connection to the kernel at once: the grader has then received at most MESSAGE_BYTES of it (and
CHUNK bytes more), which ZeroMQ drops with the connection. `cut` says why; the relay accepts no new
connection after it (the grader replaces the kernel).

The relay's sockets are in a folder of its own (mode 0700, owned by the grader): a kernel in the sandbox
cannot reach them. It runs in a thread of the grading process; `close()` ends it and removes the folder.
"""

from __future__ import annotations

import fcntl
import os
import selectors
import shutil
import socket
import termios
import threading
import time

from . import leftovers
from ..errors import GraderError
from .limits import COMMAND_BYTES, MESSAGE_BYTES, MESSAGE_FRAMES

CHUNK = 2**18  # read at a time from either side (a buffer size, not a limit)
GREETING = 64  # ZMTP 3's greeting, in bytes (the protocol's)


class Cut(GraderError):
    """The kernel sent what the relay does not pass on (the message says what)."""


class FrameCounter:
    """Reads the bytes a kernel sends on one connection (ZMTP 3): its greeting, then frames, each a
    flags byte (MORE, LONG, COMMAND), a size (one byte, or eight when LONG) and a body. Counts each
    message's parts and bytes as their headers arrive; `feed` raises Cut past the bounds."""

    def __init__(self, max_bytes: int = MESSAGE_BYTES, max_frames: int = MESSAGE_FRAMES):
        self.max_bytes, self.max_frames = max_bytes, max_frames
        self._state = "greeting"
        self._head = bytearray()
        self._need = GREETING
        self._flags = 0
        self._skip = 0
        self.message_bytes = 0
        self.message_frames = 0
        self.largest = 0  # the largest whole message so far, in bytes (all its parts)

    def feed(self, data) -> None:
        data = memoryview(data)
        i, n = 0, len(data)
        while i < n:
            if self._skip:
                take = min(self._skip, n - i)
                self._skip -= take
                i += take
            elif self._state == "flags":
                flags = data[i]
                i += 1
                if flags & 0xF8:
                    raise Cut(f"a frame with unknown flags ({flags:#04x})")
                self._flags, self._state, self._need = flags, "size", 8 if flags & 0x02 else 1
                self._head.clear()
            else:
                take = min(self._need - len(self._head), n - i)
                self._head += data[i : i + take]
                i += take
                if len(self._head) < self._need:
                    continue
                if self._state == "greeting":
                    self._greeting(bytes(self._head))
                else:
                    self._frame(int.from_bytes(self._head, "big"))
                self._head.clear()
                self._state = "flags"

    def _greeting(self, greeting: bytes) -> None:
        if greeting[0] != 0xFF or greeting[9] & 0x01 != 0x01:
            raise Cut("not a ZeroMQ 3 greeting (an older protocol)")
        if greeting[10] < 3:
            raise Cut(f"ZeroMQ protocol {greeting[10]}.{greeting[11]}, not 3")
        mechanism = greeting[12:32].rstrip(b"\0")
        if mechanism != b"NULL":
            raise Cut(f"the security mechanism {mechanism[:20]!r}, not NULL")

    def _frame(self, size: int) -> None:
        if self._flags & 0x04:  # a command: never part of a message
            if size > COMMAND_BYTES or self._flags & 0x01:
                raise Cut(f"a protocol command of {size:,} bytes")
        else:
            self.message_frames += 1
            self.message_bytes += size
            if self.message_frames > self.max_frames:
                raise Cut(f"a message of more than {self.max_frames:,} parts")
            if self.message_bytes > self.max_bytes:
                raise Cut(f"a message of more than {self.max_bytes // 2**20} MB")
            if not self._flags & 0x01:  # its last part
                self.largest = max(self.largest, self.message_bytes)
                self.message_bytes = self.message_frames = 0
        self._skip = size


class _Pair:
    """One connection of the grader's client and the relay's connection to the kernel for it."""

    def __init__(self, client: socket.socket, kernel: socket.socket, counter: FrameCounter):
        self.client, self.kernel = client, kernel
        self.to_kernel = b""  # read from the client, not yet written to the kernel
        self.to_client = b""
        self.counter = counter

    def sockets(self):
        return (self.client, self.kernel)


class Relay:
    """Relays the kernel's channels: the grader connects to `ip` (the ipc transport's path prefix:
    `<ip>-<port>` for each port) instead of the kernel's `kernel_ip`."""

    def __init__(
        self, kernel_ip: str, ports: list[int], max_bytes: int = MESSAGE_BYTES, max_frames: int = MESSAGE_FRAMES
    ):
        self.kernel_ip = kernel_ip
        self.max_bytes, self.max_frames = max_bytes, max_frames
        self.folder = leftovers.made("relay-")  # 0700: the kernel's user cannot enter it
        self.ip = str(self.folder / "k")
        self.cut: str | None = None
        self.last_read = 0.0  # when the relay last read from the kernel (time.monotonic())
        self._largest_closed = 0  # the largest message of the connections closed so far
        self._selector = selectors.DefaultSelector()
        self._listeners: dict[socket.socket, int] = {}
        self._pairs: dict[socket.socket, _Pair] = {}
        self._watched: set[socket.socket] = set()  # the pairs' sockets registered with the selector
        self._lock = threading.Lock()
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        for port in sorted(set(ports)):
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(f"{self.ip}-{port}")
            listener.listen(16)
            listener.setblocking(False)
            self._listeners[listener] = port
            self._selector.register(listener, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._loop, name="kernel-relay", daemon=True)
        self._thread.start()

    # -- the loop ---------------------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while not self._closed:
                for key, events in self._selector.select():
                    sock = key.fileobj
                    if sock == self._wake_r:
                        continue
                    if sock in self._listeners:
                        self._accept(sock)
                    elif sock in self._pairs:
                        self._pump(self._pairs[sock], sock, events)
        except Exception as err:  # noqa: BLE001  (the relay's own fault: the kernel cannot be read)
            self._cut_all(f"the grader's relay failed ({type(err).__name__}: {err})")
        finally:
            self._end()

    def _accept(self, listener: socket.socket) -> None:
        try:
            client, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        kernel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            kernel.connect(f"{self.kernel_ip}-{self._listeners[listener]}")
        except OSError:  # the kernel has not bound it yet: the client connects again soon
            kernel.close()
            client.close()
            return
        client.setblocking(False)
        kernel.setblocking(False)
        pair = _Pair(client, kernel, FrameCounter(self.max_bytes, self.max_frames))
        self._pairs[client] = self._pairs[kernel] = pair
        self._interest(pair)

    def _pump(self, pair: _Pair, sock: socket.socket, events: int) -> None:
        try:
            if events & selectors.EVENT_READ:
                if sock is pair.client and not pair.to_kernel:
                    data = sock.recv(CHUNK)
                    if not data:
                        return self._drop(pair)
                    pair.to_kernel = data
                elif sock is pair.kernel and not pair.to_client:
                    data = sock.recv(CHUNK)
                    if not data:
                        return self._drop(pair)
                    self.last_read = time.monotonic()
                    pair.counter.feed(data)
                    pair.to_client = data
            if pair.to_kernel:
                pair.to_kernel = pair.to_kernel[pair.kernel.send(pair.to_kernel) :]
            if pair.to_client:
                pair.to_client = pair.to_client[pair.client.send(pair.to_client) :]
        except (BlockingIOError, InterruptedError):
            pass
        except Cut as err:
            return self._cut_all(str(err))
        except OSError:
            return self._drop(pair)
        self._interest(pair)

    def _interest(self, pair: _Pair) -> None:
        """Read a side only when what it sent before is passed on; write a side when it has something."""
        for sock, reading, writing in (
            (pair.client, not pair.to_kernel, bool(pair.to_client)),
            (pair.kernel, not pair.to_client, bool(pair.to_kernel)),
        ):
            events = (selectors.EVENT_READ if reading else 0) | (selectors.EVENT_WRITE if writing else 0)
            registered = sock in self._watched
            if events and registered:
                self._selector.modify(sock, events, None)
            elif events:
                self._selector.register(sock, events, None)
                self._watched.add(sock)
            elif registered:
                self._selector.unregister(sock)
                self._watched.discard(sock)

    def _drop(self, pair: _Pair) -> None:
        self._largest_closed = max(self._largest_closed, pair.counter.largest)
        for sock in pair.sockets():
            self._pairs.pop(sock, None)
            if sock in self._watched:
                self._selector.unregister(sock)
                self._watched.discard(sock)
            sock.close()

    def _cut_all(self, why: str) -> None:
        with self._lock:
            if self.cut is None:
                self.cut = why
        for pair in {id(p): p for p in self._pairs.values()}.values():
            self._drop(pair)
        for listener in list(self._listeners):
            try:
                self._selector.unregister(listener)
            except (KeyError, ValueError):
                pass
            listener.close()
        self._listeners.clear()

    def _end(self) -> None:
        for pair in {id(p): p for p in self._pairs.values()}.values():
            self._drop(pair)
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        self._selector.close()
        os.close(self._wake_r)

    # -- from the grader ---------------------------------------------------------------------------
    def largest(self) -> int:
        """The largest whole message the kernel has sent, in bytes (all its parts)."""
        try:
            return max([self._largest_closed, *(pair.counter.largest for pair in list(self._pairs.values()))])
        except RuntimeError:
            return self._largest_closed

    def busy(self, within: float) -> bool:
        """Whether the kernel's messages may still be on their way to the grader: the relay read from the
        kernel within the last `within` seconds, holds bytes not yet passed on, or bytes wait for it
        (a relay starved of a CPU on a busy machine is slow, not silent)."""
        if time.monotonic() - self.last_read < within:
            return True
        try:
            pairs = list(self._pairs.values())
        except RuntimeError:  # changed while being copied: the relay is at work
            return True
        for pair in pairs:
            if pair.to_client:
                return True
            try:
                if fcntl.ioctl(pair.kernel.fileno(), termios.FIONREAD, b"\0\0\0\0") != b"\0\0\0\0":
                    return True
            except (OSError, ValueError):
                continue
        return False

    def close(self) -> None:
        """End the relay (every connection closed) and remove its folder."""
        if not self._closed:
            self._closed = True
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass
            self._thread.join(5)
            os.close(self._wake_w)
        shutil.rmtree(self.folder, ignore_errors=True)
