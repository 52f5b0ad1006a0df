"""Messages between a grading kernel and the grader: length-prefixed JSON over a Unix socket."""
from __future__ import annotations

import json
import socket
import struct

MAX_MESSAGE = 32 * 1024 * 1024


def send(sock: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode("utf-8")
    if len(body) > MAX_MESSAGE:
        raise ValueError(f"a message of {len(body)} bytes is larger than {MAX_MESSAGE}")
    sock.sendall(struct.pack("!Q", len(body)) + body)


def receive(sock: socket.socket) -> dict:
    header = _read_exactly(sock, 8)
    (length,) = struct.unpack("!Q", header)
    if length > MAX_MESSAGE:
        raise ValueError(f"message of {length} bytes is too large")
    message = json.loads(_read_exactly(sock, length).decode("utf-8"))
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message


def _read_exactly(sock, n):
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
