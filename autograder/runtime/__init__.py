"""What a grading kernel runs of the grader: the hidden test cell's `hidden()`, and nothing more.

A hidden test cell is `from autograder.runtime import hidden` and `hidden("<grade_id>", globals())`.
Under `make grade` (GRADER_SOCKET is set), `hidden` connects to the grader and serves it: the
grader sends requests (is `name` defined? call `name` on these inputs), this module runs the
student's own code on them and sends back what it returned or raised, as plain data. The
check itself, its cases, seeds, references and judge, stays in the grader process: none of it
is importable or readable here (the sandbox gives the kernel this package and nothing else of
the grader). A student's code that forges or replaces this module can only report results its
own code could have computed.

Without GRADER_SOCKET (the instructor's own kernel, `make solutions`, plain `nbgrader autograde`)
`hidden` runs the check in this process, through the same requests, and prints the verdict.
"""
from __future__ import annotations

import contextlib
import os
import socket
import sys

from .plain import NotPlain, from_plain, to_plain
from .wire import receive, send

GRADER_SOCKET = "GRADER_SOCKET"
MAX_TRACE = 4000            # torch calls recorded during one traced call


def hidden(grade_id: str, ns: dict):
    socket_path = os.environ.get(GRADER_SOCKET)
    if not socket_path:
        from autograder.checks.framework import hidden_here     # the instructor's kernel, not a graded one
        return hidden_here(grade_id, ns)
    verdict = serve(socket_path, grade_id, ns)
    print(verdict)
    return None


def serve(socket_path: str, grade_id: str, ns: dict) -> str:
    """Answer the grader's requests for one hidden test until it is done; what to print."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    session = Session(ns, socket_path)
    with sock, _torch_rng_kept(), contextlib.closing(session):
        send(sock, {"op": "session", "grade_id": grade_id})
        while True:
            request = receive(sock)
            op = request.get("op")
            if op == "done":
                return "Recorded for the grader; your points and the reasons appear in your feedback."
            if op == "refused":
                return f"Not recorded: {request.get('why', 'the grader did not expect this test now')}."
            send(sock, session.answer(request))


@contextlib.contextmanager
def _torch_rng_kept():
    """The kernel's torch random state is the same after a hidden test as before (a student's
    notebook has no hidden cells: the cells after one see what they would see at home)."""
    torch = sys.modules.get("torch")
    state = torch.random.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        if state is not None:
            torch.random.set_rng_state(state)


class Session:
    """One hidden test's requests, answered from the student's namespace."""

    def __init__(self, ns: dict, socket_path: str | None):
        self.ns = ns
        self._socket_path = socket_path
        self._link = None

    def answer(self, request: dict) -> dict:
        op = request.get("op")
        name = request.get("name")
        if op == "has":
            return {"value": isinstance(name, str) and name in self.ns}
        if op == "get":
            try:
                return {"value": to_plain(self.ns[name])}
            except KeyError:
                return {"missing": str(name)}
            except NotPlain as err:
                return {"error": f"NotPlain: {err}"}
            except Exception as err:       # anything the student's object does when read
                return {"error": f"{type(err).__name__}: {str(err)[:300]}"}
        if op == "call":
            return self.call(request)
        return {"error": f"GraderError: unknown request {op!r}"}

    def close(self) -> None:
        if self._link is not None:
            self._link.close()

    def _served(self, entry: dict):
        from .served import Link, ServedModule
        if self._link is None:
            self._link = Link(self._socket_path)
        return ServedModule(self._link, str(entry.get("token")))

    def call(self, request: dict) -> dict:
        """Call the student's function on the request's inputs: its result as plain data, or its error.
        mode "outcome": only whether it returned, failed an assertion or crashed (a student's check)."""
        try:
            fn = self.ns[request["name"]]
            args = from_plain(request.get("args", []), tensors=True, served=self._served)
            kwargs = from_plain(request.get("kwargs", {"__dict__": {}}), tensors=True, served=self._served)
        except KeyError:
            return {"missing": str(request.get("name"))}
        except NotPlain as err:
            return {"error": f"GraderError: {err}"}
        tracer = _Trace() if request.get("trace") else None
        reply: dict = {}
        try:
            result = _run(fn, args, kwargs, request.get("seed"), tracer)
            reply = {"outcome": "returned"} if request.get("mode") == "outcome" else {"value": to_plain(result)}
        except AssertionError as err:
            reply = {"outcome": f"assertion: {str(err)[:200]}"} if request.get("mode") == "outcome" \
                else {"error": f"AssertionError: {str(err)[:300]}"}
        except NotPlain as err:
            reply = {"error": f"NotPlain: {err}"}
        except (Exception, SystemExit) as err:   # a student's error is an answer, not a crash
            text = f"{type(err).__name__}: {str(err)[:300]}"
            reply = {"outcome": f"crashed: {text[:220]}"} if request.get("mode") == "outcome" else {"error": text}
        if tracer is not None:
            reply["trace"] = tracer.calls
        return reply


def _run(fn, args, kwargs, seed, tracer):
    if seed is None and tracer is None:
        return fn(*args, **kwargs)
    import torch
    with contextlib.ExitStack() as stack:
        if seed is not None:
            torch.manual_seed(int(seed))
        if tracer is not None:
            stack.enter_context(tracer.mode())
        return fn(*args, **kwargs)


class _Trace:
    """Records which torch functions a call used, on operands of which shapes (no values)."""

    def __init__(self):
        self.calls: list = []

    def mode(self):
        from torch.overrides import TorchFunctionMode
        calls = self.calls

        class Recorder(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if len(calls) < MAX_TRACE:
                    try:
                        calls.append([str(getattr(func, "__name__", "")), _describe(args), _describe(kwargs)])
                    except Exception:     # never let the record break the student's call
                        pass
                return func(*args, **kwargs)

        return Recorder()


def _describe(obj, depth=0):
    """A JSON-safe description: tensors by shape, small values as they are, the rest by type."""
    import torch
    if isinstance(obj, torch.Tensor):
        return {"__tensor_shape__": [int(n) for n in obj.shape]}
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj if not isinstance(obj, str) else obj[:200]
    if isinstance(obj, float):
        return obj if obj == obj and abs(obj) != float("inf") else repr(obj)
    if isinstance(obj, (list, tuple)) and depth < 3:
        return [_describe(x, depth + 1) for x in list(obj)[:16]]
    if isinstance(obj, dict) and depth < 3:
        return {str(k): _describe(v, depth + 1) for k, v in list(obj.items())[:16]}
    return {"type": type(obj).__name__}
