"""What a kernel sends the grader is bounded before it is decoded (autograder/runtime/wire.py,
autograder/checks/probeserver.py): the size of a message, its values and nesting, the connections a kernel
may hold, the bytes read at once over all of them, the values of one hidden test's answers.

The attacks come from another process, as a kernel's would, and the grader's side is measured by
its own peak memory (VmHWM, reset before each attack), against a stated bound."""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import pytest

from autograder.checks.probeserver import ProbeServer
from autograder.kernel.limits import PROBE_BUFFERED_BYTES, PROBE_CONNECTIONS, PROBE_MESSAGE_BYTES, PROBE_SESSION_VALUES
from autograder.runtime.wire import MAX_DEPTH, MAX_VALUES, MessageRefused, check_json, receive, send
from conftest import STEP4

# The probe server's peak over what it held before an attack: its bounded reads (PROBE_BUFFERED_BYTES)
# and what PROBE_CONNECTIONS decoded messages of MAX_VALUES values can hold, with room to spare.
SERVER_PEAK_BYTES = 256 * 2**20


def empty_lists(nbytes: int) -> bytes:
    """`nbytes` of JSON: a list of empty lists (each 3 bytes, each a Python list once decoded)."""
    count = max(1, (nbytes - 2) // 3)
    return b"[" + b"[]," * (count - 1) + b"[]]"


def test_values_and_depth_are_counted_on_the_bytes_before_anything_is_decoded():
    body = b'{"value": ' + empty_lists(7 * 2**20) + b"}"
    tracemalloc.start()
    try:
        with pytest.raises(MessageRefused, match="more than 1,000,000 values"):
            check_json(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(body), peak          # the scan's copies of the bytes, not millions of lists
    with pytest.raises(MessageRefused, match="nested more than"):
        check_json(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    with pytest.raises(MessageRefused, match="nested more than"):
        check_json(b"[" * 100_000)                 # unbalanced: json.loads would refuse it too
    # honest messages: a tensor, a nested answer, brackets and commas inside strings
    check_json(json.dumps({"value": {"__tensor__": {"dtype": "<f4", "shape": [4, 8, 32], "b64": "A" * 200_000}}}).encode())
    check_json(json.dumps({"value": {"__dict__": {"a": [[1.5] * 1000] * 100, "s": "[[[,,,]]]" * 10_000}}}).encode())
    check_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    assert MAX_VALUES >= 5 * 200_000


def test_a_message_beyond_the_readers_cap_is_refused_before_it_is_read():
    left, right = socket.socketpair()
    with left, right:
        left.sendall(struct.pack("!Q", PROBE_MESSAGE_BYTES + 1))
        with pytest.raises(MessageRefused, match="too large"):
            receive(right, PROBE_MESSAGE_BYTES, checked=True)


HOSTILE_KERNEL = r"""
import json, os, socket, struct, sys, time
path, attack, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
def empty_lists(nbytes):
    count = max(1, (nbytes - 2) // 3)
    return b"[" + b"[]," * (count - 1) + b"[]]"
def frame(body):
    return struct.pack("!Q", len(body)) + body
if attack == "answers":
    # a hidden test's session, each request answered by `size` bytes of nested empty lists
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    body = json.dumps({"op": "session", "grade_id": "bonus_shapes"}).encode()
    s.sendall(frame(body))
    reply = b'{"value": ' + empty_lists(size - 12) + b'}'
    try:
        while True:
            head = s.recv(8)
            if len(head) < 8:
                break
            (n,) = struct.unpack("!Q", head)
            while n:
                n -= len(s.recv(min(n, 1 << 20)))
            s.sendall(frame(reply))
    except OSError:
        pass
    print("ANSWERS DONE", flush=True)
elif attack == "idle":
    # 16 connections, each sending one message of `size` bytes, then holding the connection open
    held = []
    body = b'{"op": "forward", "x": ' + empty_lists(size - 30) + b'}'
    for _ in range(16):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            s.sendall(frame(body))
        except OSError:
            pass
        held.append(s)
    print("IDLE SENT", flush=True)
    time.sleep(5)
"""


def vm_hwm() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def reset_peak() -> int:
    """Reset this process's peak memory to what it holds now; what it holds."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return vm_hwm()


@pytest.fixture
def server():
    folder = tempfile.mkdtemp(prefix="pb-")
    with ProbeServer(os.path.join(folder, "s.sock"), STEP4) as srv:
        yield srv


# A grading process of its own: a probe server that meets the hostile kernel, then reports what it
# kept and its peak memory over what it held when the kernel connected.
GRADER = r"""
import json, os, subprocess, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from autograder.checks.probeserver import ProbeServer
from autograder.steps import find_step
def hwm():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
kind, size, hostile = sys.argv[2], sys.argv[3], sys.argv[4]
folder = tempfile.mkdtemp(prefix="pb-")
with ProbeServer(os.path.join(folder, "s.sock"), find_step("step-04")) as server:
    if kind == "answers":
        server.expect("bonus_shapes")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before, started = hwm(), time.monotonic()
    proc = subprocess.run([sys.executable, "-c", hostile, server.socket_path, kind, size],
                          capture_output=True, text=True, timeout=300)
    server.expect(None)
    print(json.dumps({"out": proc.stdout + proc.stderr, "seconds": time.monotonic() - started,
                      "peak": hwm() - before, "results": server.results, "budget": server.budget.used}))
"""


def attack(kind: str, size: int) -> dict:
    """A hostile kernel against a probe server in a grading process of its own: what it printed, how
    long it took, the server's peak over its start, the results the server kept."""
    root = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, "-c", GRADER, root, kind, str(size), HOSTILE_KERNEL],
                          capture_output=True, text=True, timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("size", [31 * 2**20, PROBE_MESSAGE_BYTES - 1024])
def test_answers_of_nested_empty_lists_end_the_test_with_a_reason(size, record_property):
    """The issue's attack (31 MB replies, under the old 32 MB cap) and the same within the new cap:
    the session ends at the first answer, the hidden test scores nothing and says why."""
    got = attack("answers", size)
    assert "ANSWERS DONE" in got["out"], got["out"]
    why = got["results"]["bonus_shapes"]["__missing__"]
    assert why.startswith("the grader refused the kernel's answer: "), why
    assert ("too large" if size > PROBE_MESSAGE_BYTES else "more than 1,000,000 values") in why, why
    record_property("measured", f"probe server, answers of nested empty lists of {size / 2**20:.1f} MB: "
                                f"peak +{got['peak'] / 2**20:.0f} MiB, {got['seconds']:.1f} s")
    assert got["peak"] < SERVER_PEAK_BYTES, got["peak"]


@pytest.mark.slow
def test_idle_connections_with_one_big_message_each_hold_little(record_property):
    """The issue's attack: 16 connections with one 8 MB message each, held open. At most
    PROBE_CONNECTIONS are served; their messages are refused (values) or wait for room (bytes)."""
    got = attack("idle", PROBE_MESSAGE_BYTES - 64)
    assert "IDLE SENT" in got["out"], got["out"]
    record_property("measured", f"probe server, 16 idle connections of 8 MB each: peak +{got['peak'] / 2**20:.0f} MiB, "
                                f"{got['seconds']:.1f} s")
    assert got["peak"] < SERVER_PEAK_BYTES, got["peak"]
    assert got["budget"] == 0 and PROBE_CONNECTIONS <= 4 and PROBE_BUFFERED_BYTES <= 2 * PROBE_MESSAGE_BYTES


def test_the_answers_to_one_hidden_test_are_bounded_in_all(server):
    """Answers each within the bounds of one message, but more values together than a hidden test
    may get (PROBE_SESSION_VALUES): refused, with the reason."""
    server.expect("bonus_dot_variance")           # a test of ten calls
    per_answer = 300_000
    answered = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(server.socket_path)
        send(sock, {"op": "session", "grade_id": "bonus_dot_variance"})
        try:
            while True:
                request = receive(sock)
                send(sock, {"value": True} if request["op"] == "has" else {"value": [0] * per_answer})
                answered += request["op"] == "call"
        except (ConnectionError, OSError):
            pass
    server.expect(None)
    assert answered == PROBE_SESSION_VALUES // per_answer + 1, answered      # the first answer beyond: refused
    assert "more than 1,000,000 values" in server.results["bonus_dot_variance"]["__missing__"]


def test_an_honest_session_is_still_answered(server):
    from autograder.runtime import serve
    server.expect("bonus_shapes")
    answer = serve(server.socket_path, "bonus_shapes", {"shapes": lambda T, d, d_k, d_v: {"X": (T, d)}})
    server.expect(None)
    assert answer.startswith("Recorded") and "__missing__" not in server.results["bonus_shapes"]
