"""Messages between a grading kernel and the grader: length-prefixed JSON over a Unix socket.

What the grader reads from a kernel is bounded before it is decoded (`receive(..., limit=...)` and
`check_json`): its length against the cap the reader gives, then the number of JSON values and the
nesting depth, counted on the raw bytes (a C-speed scan, no object made), so that a message the
kernel crafted (31 MB of nested empty lists would be ten million lists, gigabytes once decoded)
is refused before `json.loads` allocates anything. The kernel reads the grader's messages, which
are the grader's own, under the plain size cap.
"""

from __future__ import annotations

import json
import re
import socket
import struct

MAX_MESSAGE = 32 * 1024 * 1024  # any message, either way
# What the grader decodes of a kernel's message: plain data (runtime/plain.py) holds at most
# plain.MAX_ITEMS (200,000) values, each at most a few JSON values (a tuple, a dict entry, a NaN),
# nested at most plain.MAX_DEPTH (8) levels, each at most two JSON levels, under the message's own.
MAX_VALUES = 1_000_000
MAX_DEPTH = 32

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string (its escapes included)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


class MessageRefused(ValueError):
    """A message larger, longer or deeper than its reader accepts."""


def check_json(body: bytes, max_values: int = MAX_VALUES, max_depth: int = MAX_DEPTH) -> None:
    """Raise MessageRefused if the JSON text `body` holds more than `max_values` values or nests
    deeper than `max_depth` (an upper bound of both, counted without decoding: a malformed text
    may be refused for it, and json.loads refuses it anyway)."""
    skeleton = _STRING.sub(b'""', body) if b'"' in body else body
    values = skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{") + skeleton.count(b":")
    if values > max_values:
        raise MessageRefused(f"a message of more than {max_values:,} values")
    brackets = _NOT_BRACKET.sub(b"", skeleton)
    del skeleton
    # each pass takes the innermost pairs away: a text nested n levels deep is empty after n passes
    for _ in range(max_depth):
        if not brackets:
            return
        brackets = brackets.replace(b"[]", b"").replace(b"{}", b"")
    if brackets:
        raise MessageRefused(f"a message nested more than {max_depth} levels deep")


def send(sock: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode("utf-8")
    if len(body) > MAX_MESSAGE:
        raise ValueError(f"a message of {len(body)} bytes is larger than {MAX_MESSAGE}")
    sock.sendall(struct.pack("!Q", len(body)) + body)


def receive(sock: socket.socket, limit: int = MAX_MESSAGE, checked: bool = False, budget=None) -> dict:
    """The next message. `limit`: the largest accepted, in bytes; `checked`: its values and depth are
    bounded too (check_json); `budget`: shared by a reader's connections, `budget.take(n)` before n
    bytes are read (raising MessageRefused if they would be too many at once), `budget.give(n)` after."""
    header = _read_exactly(sock, 8)
    (length,) = struct.unpack("!Q", bytes(header))
    if length > limit:
        raise MessageRefused(f"message of {length} bytes is too large (at most {limit})")
    if budget is not None:
        budget.take(length)
    try:
        body = _read_exactly(sock, length)
        if checked:
            check_json(body)
        message = json.loads(body)
    finally:
        if budget is not None:
            budget.give(length)
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message


def _read_exactly(sock, n):
    """n bytes from `sock`, read into one buffer (never more than n bytes held)."""
    data = bytearray(n)
    view, got = memoryview(data), 0
    while got < n:
        count = sock.recv_into(view[got:], min(n - got, 1 << 20))
        if not count:
            raise ConnectionError("the other side closed the connection")
        got += count
    view.release()
    return data
