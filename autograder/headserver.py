"""The grader's head server: serves the wheat and chaff suites to one student kernel.

Runs in the grading process, one per notebook being graded, on a Unix socket inside the
notebook's scratch folder. Each suite is built on first request, its cases named by fresh
random tokens in a shuffled order; the token -> case map never leaves this process, and the
judge reads it through `cases()`.
"""
from __future__ import annotations

import collections
import os
import random
import secrets
import socket
import threading

import torch

from .checks.contexts import receive, send
from .checks.plain import NotPlain, from_plain, to_plain
from .checks.suites import SUITES

MAX_ELEMENTS = 100_000     # one input tensor: the step's inputs are (4, 8, 32)
MAX_REQUESTS = 20_000      # per notebook
KEPT_GRAPHS = 256          # forward calls remembered for a later backward
MAX_CONNECTIONS = 16       # open at once, per notebook (a probe uses one)


class HeadServer:
    def __init__(self, socket_path: str):
        self.socket_path = socket_path
        self._issued: dict[str, list[tuple[str, object]]] = {}   # suite -> [(token, Case)]
        self._objects: dict[str, object] = {}
        self._graphs: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self._requests = 0
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(socket_path)
        os.chmod(socket_path, 0o666)   # the sandboxed kernel may run as another user
        self._listener.listen(8)
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    # -- the judge's view --------------------------------------------------------------
    def cases(self, name: str):
        """[(token, Case)] issued for a suite, or all its cases under fresh tokens if the
        kernel never asked (so a judge can still say what was missed)."""
        with self._lock:
            return list(self._issue(name))

    # -- serving -------------------------------------------------------------------------
    def _issue(self, name):
        if name not in self._issued:
            cases = list(SUITES[name])
            random.SystemRandom().shuffle(cases)
            issued = []
            for case in cases:
                token = secrets.token_hex(8)
                self._objects[token] = case.build()
                issued.append((token, case))
            self._issued[name] = issued
        return self._issued[name]

    def _accept_loop(self):
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):    # a kernel opening connection after connection
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            self._serve_one(conn)
        finally:
            self._slots.release()

    def _serve_one(self, conn):
        with conn:
            while True:
                try:
                    message = receive(conn)
                except (ConnectionError, OSError, ValueError):
                    return
                try:
                    reply = self._handle(message)
                except (KeyError, TypeError, ValueError, NotPlain, RuntimeError) as err:
                    reply = {"error": f"{type(err).__name__}: {err}"}
                try:
                    send(conn, reply)
                except OSError:
                    return

    def _handle(self, message: dict) -> dict:
        with self._lock:
            self._requests += 1
            if self._requests > MAX_REQUESTS:
                raise RuntimeError("too many requests to the grader's heads")
            op = message.get("op")
            if op == "suite":
                name = message["name"]
                if name not in SUITES:
                    raise KeyError(f"no suite {name!r}")
                out = []
                for token, _case in self._issue(name):
                    obj = self._objects[token]
                    if isinstance(obj, torch.Tensor):
                        out.append({"token": token, "type": "tensor", "value": to_plain(obj)})
                    else:
                        out.append({"token": token, "type": "head"})
                return {"cases": out}
            if op == "forward":
                head = self._objects[message["token"]]
                if isinstance(head, torch.Tensor):
                    raise TypeError("that token names a matrix, not a head")
                x = torch.from_numpy(_array(message["x"])).requires_grad_(True)
                out = head(x)
                call = secrets.token_hex(8)
                self._graphs[call] = (x, out)
                while len(self._graphs) > KEPT_GRAPHS:
                    self._graphs.popitem(last=False)
                A = getattr(head, "A", None)
                return {"call": call, "out": to_plain(out.detach()),
                        "A": to_plain(A) if isinstance(A, torch.Tensor) else None}
            if op == "backward":
                x, out = self._graphs[message["call"]]
                grad = torch.from_numpy(_array(message["grad"]))
                if grad.shape != out.shape:
                    raise ValueError(f"gradient of shape {tuple(grad.shape)} for an output of shape {tuple(out.shape)}")
                (grad_x,) = torch.autograd.grad(out, x, grad.to(out.dtype), retain_graph=True, allow_unused=True)
                if grad_x is None:
                    grad_x = torch.zeros_like(x)
                return {"grad_x": to_plain(grad_x)}
            raise KeyError(f"unknown request {op!r}")

    def close(self):
        self._closed = True
        try:
            self._listener.close()
        finally:
            if os.path.exists(self.socket_path):
                os.unlink(self.socket_path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _array(data):
    value = from_plain(data)
    if not hasattr(value, "shape"):
        raise TypeError("expected a tensor")
    if value.size > MAX_ELEMENTS:
        raise ValueError(f"a tensor of {value.size} elements is larger than any this step needs")
    return value
