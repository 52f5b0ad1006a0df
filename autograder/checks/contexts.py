"""Where the heads and matrices that students' checks are tried on come from.

LocalContext builds them in the kernel (nbgrader, JupyterLab: nothing to hide from).
RemoteContext asks the grader's head server for them over a Unix socket: the kernel gets
opaque tokens and black-box heads (forward and backward run in the grader), so a student's
code cannot tell a correct head from a broken one except by testing it.
"""
from __future__ import annotations

import json
import socket
import struct

import torch

from .plain import from_plain, to_plain

MAX_MESSAGE = 32 * 1024 * 1024


def send(sock: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode("utf-8")
    sock.sendall(struct.pack("!Q", len(body)) + body)


def receive(sock: socket.socket) -> dict:
    header = _read_exactly(sock, 8)
    (length,) = struct.unpack("!Q", header)
    if length > MAX_MESSAGE:
        raise ValueError(f"message of {length} bytes is too large")
    return json.loads(_read_exactly(sock, length).decode("utf-8"))


def _read_exactly(sock, n):
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class LocalContext:
    """Suites built here, named by case: for nbgrader and JupyterLab runs."""

    def __init__(self):
        from .suites import SUITES
        self._suites = SUITES

    def suite(self, name: str) -> list[tuple[str, object]]:
        return [(case.name, case.build()) for case in self._suites[name]]

    def cases(self, name: str):
        return [(case.name, case) for case in self._suites[name]]


class RemoteContext:
    """Suites served by the grader: tokens are opaque, heads are black boxes."""

    def __init__(self, socket_path: str):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(socket_path)

    def request(self, message: dict) -> dict:
        send(self._sock, message)
        reply = receive(self._sock)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def suite(self, name: str) -> list[tuple[str, object]]:
        reply = self.request({"op": "suite", "name": name})
        items = []
        for entry in reply["cases"]:
            if entry["type"] == "tensor":
                items.append((entry["token"], torch.from_numpy(from_plain(entry["value"]))))
            else:
                items.append((entry["token"], RemoteHead(self, entry["token"])))
        return items


class RemoteHead(torch.nn.Module):
    """A head that lives in the grader: call it like any head; `.A` holds the last weights."""

    def __init__(self, ctx: RemoteContext, token: str):
        super().__init__()
        self._ctx = ctx
        self._token = token
        self.A = None

    def forward(self, x):
        return _RemoteForward.apply(x, self)


class _RemoteForward(torch.autograd.Function):
    @staticmethod
    def forward(fctx, x, head):
        reply = head._ctx.request({"op": "forward", "token": head._token, "x": to_plain(x.detach())})
        fctx.call_id, fctx.remote = reply["call"], head._ctx
        head.A = torch.from_numpy(from_plain(reply["A"])) if reply.get("A") is not None else None
        return torch.from_numpy(from_plain(reply["out"]))

    @staticmethod
    def backward(fctx, grad_out):
        reply = fctx.remote.request({"op": "backward", "call": fctx.call_id, "grad": to_plain(grad_out.detach())})
        return torch.from_numpy(from_plain(reply["grad_x"])), None
