"""The grader's side of a hidden test: the probe server, one per notebook being graded.

It listens on a Unix socket in the notebook's scratch folder. Two kinds of connection come in
from the student's kernel (autograder/runtime/):

* a **session**: the hidden test cell that is running says which test it is. If that is the
  test the grader is running right now (`before_cell`), the check's probe runs here, in the
  grader: it asks the kernel whether the student's names are defined and calls the student's
  functions on the check's inputs; the answers, plain data, are kept in `results` for the judge.
  Any other session (a cell run again after a restart, a student's own call) is refused.
* **served objects**: what a probe hands to a student's function that is not plain data (a
  course's neural-network layers, say: the course plugin, autograder/plugin.py, says how). They
  stay here: the kernel gets an opaque token and sends requests, which the plugin answers.

The token -> object map, the step's suites, the course's case key and every check's code never
leave this process.

What a kernel sends here is bounded before it is decoded, and so is what the server holds at once:
at most PROBE_CONNECTIONS connections, each message at most PROBE_MESSAGE_BYTES bytes with at most
wire.MAX_VALUES JSON values nested at most wire.MAX_DEPTH deep (checked on the raw bytes), at most
PROBE_BUFFERED_BYTES read and not yet decoded over all connections together, and at most PROBE_SESSION_VALUES
values over a hidden test's answers. A message beyond these ends its connection; in a hidden
test's session the test gets no points, with the reason.
"""

from __future__ import annotations

import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from .framework import (
    KernelGone,
    Missing,
    StudentError,
    gives_hidden_inputs,
    run_probe,
    shown_cell_error,
    shown_error,
    shown_outcome,
)
from ..plugin import NotHandled, load_plugin
from ..runtime.plain import NotPlain, from_plain, to_plain
from ..kernel.limits import (
    PROBE_ANSWER_SECONDS,
    PROBE_BUFFERED_BYTES,
    PROBE_CONNECTIONS,
    PROBE_MESSAGE_BYTES,
    PROBE_REQUESTS,
    PROBE_SESSION_VALUES,
)
from ..runtime.wire import MessageRefused, receive, send


class KernelRefused(KernelGone):
    """The kernel sent a message beyond the server's bounds: its session ends without an answer."""


class Budget:
    """Bytes read and not yet decoded, over all the connections of a server."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0
        self._lock = threading.Lock()

    def take(self, n: int) -> None:
        with self._lock:
            if self.used + n > self.limit:
                raise MessageRefused(f"the kernel's messages in flight would exceed {self.limit} bytes")
            self.used += n

    def give(self, n: int) -> None:
        with self._lock:
            self.used -= n


class GraderClock:
    """How long the kernel has waited for this server's own work: a hidden test's probe between two
    requests to the kernel, a served head answering the kernel. The seconds in which any of the
    server's threads works for the kernel count once (autograder/kernel/execute.py leaves them out of the
    cell's waiting and of the student's time budget: they are the grader's, not the student's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._working = 0
        self._since = 0.0
        self._total = 0.0

    def begin(self) -> None:
        with self._lock:
            if self._working == 0:
                self._since = time.monotonic()
            self._working += 1

    def end(self) -> None:
        with self._lock:
            self._working -= 1
            if self._working == 0:
                self._total += time.monotonic() - self._since

    def seconds(self) -> float:
        with self._lock:
            return self._total + (time.monotonic() - self._since if self._working else 0.0)


class ProbeServer:
    def __init__(
        self,
        socket_path: str,
        step: Any,
        answer_seconds: float = PROBE_ANSWER_SECONDS,
        sources: Iterable[object] = (),
        case_key: bytes | None = None,
        program: Iterable[tuple[object, str | None]] | None = None,
        submission: bytes | None = None,
    ) -> None:
        self.step = step
        # the course's case key (autograder/checks/casekey.py): checks draw this submission's own cases from
        # it and the submission (framework.fresh_rng); it stays in this process, as the checks do
        self.case_key = case_key
        # every byte of the notebook file the student handed in (None: a run without a grader, where
        # the code cells stand for it)
        self.submission = submission
        # the text of the student's code cells, as the grader rebuilt the notebook: a check may read how
        # an answer computes from it (the kernel cannot change it, unlike anything it reports itself)
        self.sources: list[str] = [str(s) for s in sources]
        # the notebook's code cells in the order they run, as (the student's text, or None for a cell the
        # student did not write; the grade id of a hidden test cell, or None): what a hidden test meets
        # when it runs is what the student's cells above it bound (code_before)
        self.program: list[tuple[str | None, str | None]] | None = (
            [(None if t is None else str(t), g) for t, g in program] if program is not None else None
        )
        self.checks = step.checks  # grade_id -> Check, of this step only
        self.plugin = load_plugin(step.root)
        self.socket_path = socket_path
        self.answer_seconds = answer_seconds
        self.results: dict[str, object] = {}  # grade_id -> the probe's plain data
        self._expected: str | None = None
        self._claimed: set[str] = set()
        self._drivers: dict[str, threading.Thread] = {}
        self._issued: dict[str, list[tuple[str, object]]] = {}  # suite -> [(token, Case)]
        self._objects: dict[str, object] = {}  # token -> served object
        self._tokens: dict[int, str] = {}  # id(object) -> token
        self._served_state: dict[str, Any] = {}  # the course plugin's, for this notebook
        self._lock = threading.Lock()
        self._requests = 0
        self._slots = threading.BoundedSemaphore(PROBE_CONNECTIONS)
        self.budget = Budget(PROBE_BUFFERED_BYTES)
        self.clock = GraderClock()
        self.hidden_inputs_given = False  # a hidden test cell has started: the kernel may hold its inputs
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(socket_path)
        os.chmod(socket_path, 0o666)  # the sandboxed kernel may run as another user
        self._listener.listen(8)
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    # -- the grader's hooks around each cell (autograder/kernel/execute.py) ---------------------------
    def before_cell(self, cell: Any) -> None:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = nbg.get("grade_id")
        self.hidden_inputs_given = self.hidden_inputs_given or gives_hidden_inputs(cell)
        self.expect(grade_id if nbg.get("grade") and grade_id in self.checks else None)

    def after_cell(self, cell: Any) -> None:
        self.expect(None)

    def grader_seconds(self) -> float:
        """Seconds the kernel has waited for this server's own work so far (GraderClock)."""
        return self.clock.seconds()

    def error_words(self, cell: Any, ename: str, evalue: str) -> str:
        """An error in the run's events (the grade's notes): from the first hidden test cell on, its kind alone
        (as a hidden test shows one): the student's code may hold hidden inputs then, and its words could carry
        them (judging.conceal_after_hidden_inputs)."""
        if self.hidden_inputs_given:
            return shown_cell_error(ename)
        return f"{ename}: {evalue}"

    def expect(self, grade_id: str | None) -> None:
        """The hidden test whose session is accepted from now on (None: none). Ending an expectation
        waits a moment for a session still being judged to store its result."""
        with self._lock:
            previous, self._expected = self._expected, grade_id
            driver = self._drivers.get(previous) if previous else None
        if driver is not None:
            driver.join(timeout=5)

    # -- what probes and judges use -------------------------------------------------------------
    def code_before(self, grade_id: str) -> list[str]:
        """The student's code cells that run before hidden test `grade_id`'s cell, in the notebook's order
        (answer cells, live Python boxes, cells the student added): what the names its check reads are
        bound to when the test runs. Without a program (a notebook run without a grader): `sources`."""
        if self.program is None:
            return list(self.sources)
        before: list[str] = []
        for text, gid in self.program:
            if gid == grade_id:
                return before
            if text is not None:
                before.append(text)
        return before

    def suite(self, name: str) -> list[tuple[str, object]]:
        """[(token, object)] of a suite, in the shuffled order it is served in."""
        with self._lock:
            return [(token, self._objects[token]) for token, _case in self._issue(name)]

    def cases(self, name: str) -> list[tuple[str, Any]]:
        """[(token, Case)] issued for a suite, or all its cases under fresh tokens if the probe
        never asked (so a judge can still say what was missed)."""
        with self._lock:
            return list(self._issue(name))

    def serve(self, obj: object) -> str:
        """The token under which the kernel reaches `obj` (a module)."""
        with self._lock:
            token = self._tokens.get(id(obj))
            if token is None:
                token = secrets.token_hex(8)
                self._objects[token] = obj
                self._tokens[id(obj)] = token
            return token

    def _issue(self, name: str) -> list[tuple[str, Any]]:
        if name not in self._issued:
            cases = list(self.step.suites[name])
            random.SystemRandom().shuffle(cases)
            issued = []
            for case in cases:
                token = secrets.token_hex(8)
                obj = case.build()
                self._objects[token] = obj
                self._tokens[id(obj)] = token
                issued.append((token, case))
            self._issued[name] = issued
        return self._issued[name]

    # -- connections ----------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):  # a kernel opening connection after connection
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(self.answer_seconds)
                try:
                    first = self.receive(conn)
                except (ConnectionError, OSError, ValueError):
                    return
                if first.get("op") == "session":
                    self._session(conn, first.get("grade_id"))
                else:
                    self._link(conn, first)
        finally:
            self._slots.release()

    def _session(self, conn: socket.socket, asked: object) -> None:
        grade_id = asked if isinstance(asked, str) else None
        with self._lock:
            accepted = grade_id is not None and grade_id == self._expected and grade_id not in self._claimed
            if grade_id is not None and accepted:
                self._claimed.add(grade_id)
                self._drivers[grade_id] = threading.current_thread()
        if grade_id is None or not accepted:
            _quietly(send, conn, {"op": "refused", "why": "the grader runs each hidden test once, from its own cell"})
            return
        self.clock.begin()  # the kernel waits for the probe, except while it answers (request)
        try:
            data = run_probe(self.checks[grade_id], KernelNamespace(KernelSession(conn, self)), self)
        except KernelRefused as err:  # no points, and why
            self.results[grade_id] = {"__missing__": f"the grader refused the kernel's answer: {err}"}
            return
        except KernelGone:
            return  # no result: the judge says why from the cell
        except Exception as err:  # a fault of the grader's, said as such
            data = {"__grader_error__": f"{type(err).__name__}: {str(err)[:200]}"}
        finally:
            self.clock.end()
        self.results[grade_id] = data
        _quietly(send, conn, {"op": "done"})

    def receive(self, conn: socket.socket, values: list[int] | None = None) -> dict[str, Any]:
        """The kernel's next message on `conn`, within the server's bounds (MessageRefused if not).
        `values`: [JSON values still allowed], lowered by this message's."""
        message = receive(conn, PROBE_MESSAGE_BYTES, checked=True, budget=self.budget)
        if values is not None:
            values[0] -= _values(message)
            if values[0] < 0:
                raise MessageRefused(f"the answers to one hidden test held more than {PROBE_SESSION_VALUES:,} values")
        return message

    def _link(self, conn: socket.socket, message: dict[str, Any]) -> None:
        while True:
            self.clock.begin()  # the kernel waits for the served head's answer
            try:
                try:
                    reply = self._handle(message)
                except (KeyError, TypeError, ValueError, NotPlain, RuntimeError) as err:
                    reply = {"error": f"{type(err).__name__}: {err}"}
                del message  # nothing of it is kept while the next one is awaited
                sent = _quietly(send, conn, reply)
            finally:
                self.clock.end()
            if not sent:
                return
            del reply
            try:
                message = self.receive(conn)
            except (ConnectionError, OSError, ValueError):
                return

    def _handle(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._requests += 1
            if self._requests > PROBE_REQUESTS:
                raise RuntimeError("too many requests to the grader's heads")
            return self.plugin.handle(self._objects, message, self._served_state)

    def close(self) -> None:
        self._closed = True
        try:
            self._listener.close()
        finally:
            if os.path.exists(self.socket_path):
                os.unlink(self.socket_path)

    def __enter__(self) -> ProbeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _values(data: object) -> int:
    """How many JSON values `data` holds (iteratively: its depth is bounded, but not by recursion)."""
    count, todo = 0, [data]
    while todo:
        item = todo.pop()
        count += 1
        if type(item) is list:
            todo += item
        elif type(item) is dict:
            todo += item.values()
    return count


def _quietly(fn: Callable[..., object], *args: object) -> bool:
    try:
        fn(*args)
        return True
    except OSError:
        return False


# ---- the student's namespace, as a probe sees it ---------------------------------------------


class KernelSession:
    """Requests to the student's kernel over one session's connection."""

    def __init__(self, conn: socket.socket, server: ProbeServer) -> None:
        self.conn = conn
        self.server = server
        self.values = [PROBE_SESSION_VALUES]

    def request(self, message: dict[str, Any]) -> Any:
        clock = self.server.clock
        clock.end()  # from here to its answer, the time is the kernel's
        try:
            send(self.conn, message)
            reply = self.server.receive(self.conn, self.values)
        except MessageRefused as err:
            raise KernelRefused(str(err)) from None
        except (ConnectionError, OSError, ValueError) as err:
            raise KernelGone(str(err)) from None
        finally:
            clock.begin()
        return _allowed(reply, message, self.server)


def _allowed(reply: Any, message: dict[str, Any], server: ProbeServer) -> Any:
    """The kernel's reply with only what may come back of text its code wrote (framework.shown_error:
    an error's kind, a check's outcome as returned / assertion / crashed with a kind); the name of a
    missing object as the grader asked for it; the inputs a call changed in place by the names the
    grader gives them (changed_names: anything it cannot name is "an input"). The plain data of a
    value and a trace are the judge's, which quotes only what it computes."""
    if not isinstance(reply, dict):
        return reply
    out = dict(reply)
    if isinstance(out.get("error"), str):
        out["error"] = shown_error(out["error"])
    if isinstance(out.get("outcome"), str):
        out["outcome"] = shown_outcome(out["outcome"])
    if "missing" in out:
        out["missing"] = str(message.get("name"))
    if isinstance(out.get("changed"), list):
        out["changed"] = changed_names(out["changed"][:4], message, server.sources)
    return out


def changed_names(changed: list[Any], message: dict[str, Any], sources: Iterable[object] | None) -> list[str]:
    """The names the feedback gives the inputs a call changed in place, as the grader knows them: a
    position it sent (an int) by the parameter every `def` of the function in the student's code has at
    that position (positional_names), a keyword by the keyword the grader sent; anything else, or a
    position the defs name differently, is "an input". Never a name the kernel reports: the student's
    code can set a function's signature at the call (`__signature__`), and so choose among its defs'
    names by what it was given."""
    args = message.get("args")
    count = len(args) if isinstance(args, list) else 0
    kwargs = message.get("kwargs")
    keywords = kwargs.get("__dict__") if isinstance(kwargs, dict) else None
    sent_keys = set(keywords) if isinstance(keywords, dict) else set()
    positional = positional_names(sources, str(message.get("name")))
    shown = []
    for item in changed:
        name = positional[item] if type(item) is int and 0 <= item < min(count, len(positional)) else None
        if name:
            shown.append(name)
        elif type(item) is str and item in sent_keys:
            shown.append(item)
        else:
            shown.append("an input")
    return shown


def positional_names(sources: Iterable[object] | None, function: str) -> list[str | None]:
    """For each position, the parameter name every `def function(...)` in the student's code cells has
    there (None where two defs differ, or where one has no parameter there); [] if no def defines it."""
    import ast

    lists: list[list[str]] = []
    for text in sources or ():
        try:
            tree = ast.parse(str(text))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
                lists.append([a.arg for a in node.args.posonlyargs + node.args.args])
    if not lists:
        return []
    longest = max(len(names) for names in lists)
    return [
        lists[0][n] if all(len(names) > n and names[n] == lists[0][n] for names in lists) else None
        for n in range(longest)
    ]


class KernelNamespace:
    """`name in ns`, `ns[name]` (a StudentFunction) and `ns.value(name)` over a session."""

    def __init__(self, session: KernelSession) -> None:
        self._session = session
        self._known: dict[object, bool] = {}

    def __contains__(self, name: object) -> bool:
        if name not in self._known:
            self._known[name] = self._session.request({"op": "has", "name": name}).get("value") is True
        return self._known[name]

    def __getitem__(self, name: str) -> StudentFunction:
        if name not in self:
            raise KeyError(name)
        return StudentFunction(self._session, name)

    def value(self, name: str) -> Any:
        """The student's value called `name`, as plain data (StudentError if it is not plain)."""
        return _read(self._session.request({"op": "get", "name": name}))


class StudentFunction:
    """A function of the student's: calling it runs it in the kernel on these inputs."""

    def __init__(self, session: KernelSession, name: str) -> None:
        self._session = session
        self.name = name

    def _request(self, args: tuple[Any, ...], kwargs: dict[str, Any], **extra: Any) -> Any:
        server = self._session.server
        message = {
            "op": "call",
            "name": self.name,
            "args": _encode(list(args), server),
            "kwargs": _encode(dict(kwargs), server),
            **extra,
        }
        return self._session.request(message)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _read(self._request(args, kwargs))

    def returning(self, *args: Any, **kwargs: Any) -> Any:
        """The call's result as the student's code returned it: what was a tensor is a tensor again (the
        course's own kinds of data, rebuilt by its codecs), a numpy array an array. For a check that
        judges the form of a result, where plain calls read both as numpy arrays."""
        return _read(self._request(args, kwargs), tensors=True)

    def traced(self, *args: Any, **kwargs: Any) -> tuple[Any, list[Any]]:
        """(result, trace): the trace lists the torch calls it made, [name, args, kwargs] described
        by shape (autograder/runtime/__init__.py `_describe`)."""
        reply = self._request(args, kwargs, trace=True)
        trace = reply.get("trace")
        return _read(reply), trace if isinstance(trace, list) else []

    def outcome(self, *args: Any, seed: int | None = None) -> str:
        reply = self._request(args, {}, mode="outcome", seed=seed)
        if "changed" in reply:
            return f"crashed: {_changed_error(reply['changed'])}"
        text = reply.get("outcome")
        if isinstance(text, str) and (text in ("returned", "assertion") or text.startswith("crashed: ")):
            return text
        return f"crashed: {reply.get('error', 'no answer')}"


def _changed_error(names: object) -> str:
    """The error of a call that changed its inputs in place: the caller's tensors are not theirs to change."""
    names = [str(n)[:40] for n in names][:4] if isinstance(names, list) else []
    which = ", ".join(n if n == "an input" else f"`{n}`" for n in names) or "an input"
    return (
        f"InputChanged: the function changed its input {which} in place, so the caller's "
        f"{'tensor' if len(names) <= 1 else 'tensors'} changed too: work on a copy (e.g. x.clone()) "
        "or on new tensors, never on the arguments"
    )


def _read(reply: dict[str, Any], tensors: bool = False) -> Any:
    if "changed" in reply:
        raise StudentError(_changed_error(reply["changed"]))
    if "value" in reply:
        try:
            return from_plain(reply["value"], tensors=tensors)
        except Exception as err:  # NotPlain, or numpy refusing what the kernel wrote (a dtype of its own):
            # the text quotes that data, which a patched runtime makes of the inputs: only the engine's reason
            raise StudentError(shown_error(f"NotPlain: {err}")) from None
    if "missing" in reply:  # the name asked for is not defined (a NameError inside the student's code is an error)
        raise Missing(f"`{str(reply['missing'])[:80]}` is not defined: run the cell that defines it (or write it)")
    error = reply.get("error")
    raise StudentError(str(error)[:400] if error else "no answer")


def _encode(obj: object, server: ProbeServer, depth: int = 0) -> Any:
    """A probe's inputs as plain data; what the course plugin knows (a layer, a head) as it says:
    by value, or kept here under a token."""
    try:
        return server.plugin.encode(obj, server.serve)
    except NotHandled:
        pass
    if type(obj) in (list, tuple) and depth < 8:
        items = [_encode(v, server, depth + 1) for v in cast("list[Any] | tuple[Any, ...]", obj)]
        return items if type(obj) is list else {"__tuple__": items}
    if type(obj) is dict and depth < 8:
        return {"__dict__": {str(k): _encode(v, server, depth + 1) for k, v in obj.items()}}
    return to_plain(obj)
