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

A course adds what its data needs (KernelHooks below, and plain.register_codec): the module named
by $GRADER_KERNEL_HOOKS is imported before the first request and installs them.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import threading

from .plain import NotPlain, from_plain, to_plain
from .wire import receive, send

GRADER_SOCKET = "GRADER_SOCKET"
KERNEL_HOOKS = "GRADER_KERNEL_HOOKS"  # a module of the course's that installs its KernelHooks
# Where a hidden test runs when no grader serves this kernel (the instructor's own kernel). Named, not
# imported: this package is all of the grader a graded kernel is given, so it imports nothing else of it.
SELF_GRADER = "autograder.selfgrade"


class KernelHooks:
    """What a course adds to the kernel's side of a hidden test. The base: plain data only."""

    def served(self, link: "Link", token: str):
        """The kernel's stand-in for an object the grader keeps (calls go over `link`)."""
        raise NotPlain("this course serves no objects")

    def seed(self, seed: int) -> None:
        """Seed the course's random generators just before a student's function runs."""
        raise NotPlain("this course has no seeded calls")

    def random_state(self):
        """The kernel's random state, kept across a hidden test (None: nothing to keep)."""
        return None

    def restore_random_state(self, state) -> None:
        pass

    def trace(self, calls: list):
        """A context in which a student's call appends what it ran to `calls`."""
        raise NotPlain("this course has no traced calls")


HOOKS = KernelHooks()


def install(hooks: KernelHooks) -> None:
    global HOOKS
    HOOKS = hooks


def load_hooks() -> None:
    """Import the course's kernel hooks ($GRADER_KERNEL_HOOKS), once."""
    name = os.environ.get(KERNEL_HOOKS)
    if name and type(HOOKS) is KernelHooks:
        importlib.import_module(name)


def hidden(grade_id: str, ns: dict):
    socket_path = os.environ.get(GRADER_SOCKET)
    if not socket_path:  # the instructor's kernel, not a graded one
        return importlib.import_module(SELF_GRADER).hidden_here(grade_id, ns)
    verdict = serve(socket_path, grade_id, ns)
    print(verdict)
    return None


def serve(socket_path: str, grade_id: str, ns: dict) -> str:
    """Answer the grader's requests for one hidden test until it is done; what to print."""
    load_hooks()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    session = Session(ns, socket_path)
    with sock, _random_state_kept(), contextlib.closing(session):
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
def _random_state_kept():
    """The kernel's random state is the same after a hidden test as before (a student's notebook
    has no hidden cells: the cells after one see what they would see at home)."""
    state = HOOKS.random_state()
    try:
        yield
    finally:
        if state is not None:
            HOOKS.restore_random_state(state)


class Link:
    """One connection to the grader for every served object of a kernel."""

    def __init__(self, socket_path: str):
        self._path = socket_path
        self._sock = None
        self._lock = threading.Lock()

    def request(self, message: dict) -> dict:
        with self._lock:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sock.connect(self._path)
            send(self._sock, message)
            reply = receive(self._sock)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def close(self) -> None:
        """Hang up; a served object called later connects again."""
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


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
            except Exception as err:  # anything the student's object does when read
                return {"error": f"{type(err).__name__}: {str(err)[:300]}"}
        if op == "call":
            return self.call(request)
        return {"error": f"GraderError: unknown request {op!r}"}

    def close(self) -> None:
        if self._link is not None:
            self._link.close()

    def _served(self, entry: dict):
        if self._link is None:
            self._link = Link(self._socket_path)
        return HOOKS.served(self._link, str(entry.get("token")))

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
        trace = [] if request.get("trace") else None
        reply: dict = {}
        try:
            result = _run(fn, args, kwargs, request.get("seed"), trace)
            reply = {"outcome": "returned"} if request.get("mode") == "outcome" else {"value": to_plain(result)}
        except AssertionError as err:
            reply = (
                {"outcome": f"assertion: {str(err)[:200]}"}
                if request.get("mode") == "outcome"
                else {"error": f"AssertionError: {str(err)[:300]}"}
            )
        except NotPlain as err:
            reply = {"error": f"NotPlain: {err}"}
        except (Exception, SystemExit) as err:  # a student's error is an answer, not a crash
            text = f"{type(err).__name__}: {str(err)[:300]}"
            reply = {"outcome": f"crashed: {text[:220]}"} if request.get("mode") == "outcome" else {"error": text}
        try:
            changed = _changed_inputs(request, args, kwargs)
        except Exception:  # a student's object that cannot even be read back changed: say so
            changed = ["an input"]
        if changed:
            reply = {"changed": changed}
        if trace is not None:
            reply["trace"] = trace
        return reply


def _changed_inputs(request: dict, args, kwargs) -> list:
    """The inputs the call changed in place: each plain input (numbers, lists, arrays, tensors) read
    again after the call and compared with what the grader sent, by its position (an int) or its
    keyword (the grader's own). The grader names them (autograder/checks/probeserver.py `_allowed`):
    not from the function's signature at the call, which the student's code can set. Served objects and
    layers are not compared (a module's own state is its business)."""
    sent_args = request.get("args", [])
    sent_kwargs = (request.get("kwargs") or {}).get("__dict__", {})
    changed: list = []
    pairs: list = [
        (n, sent, now) for n, (sent, now) in enumerate(zip(sent_args if isinstance(sent_args, list) else [], args))
    ]
    pairs += [(str(k), sent_kwargs[k], kwargs.get(k)) for k in (sent_kwargs if isinstance(sent_kwargs, dict) else {})]
    for which, sent, now in pairs:
        if _has_served(sent):
            continue
        try:
            if to_plain(now) != sent:
                changed.append(which)
        except NotPlain:
            changed.append(which)
    return changed


def _has_served(sent, depth=0) -> bool:
    if isinstance(sent, dict):
        if "__served__" in sent or "__module__" in sent:
            return True
        return depth < 8 and any(_has_served(v, depth + 1) for v in sent.values())
    if isinstance(sent, list):
        return depth < 8 and any(_has_served(v, depth + 1) for v in sent)
    return False


def _run(fn, args, kwargs, seed, trace):
    with contextlib.ExitStack() as stack:
        if seed is not None:
            HOOKS.seed(int(seed))
        if trace is not None:
            stack.enter_context(HOOKS.trace(trace))
        return fn(*args, **kwargs)
