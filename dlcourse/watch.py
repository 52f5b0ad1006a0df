"""Look inside a function that builds and runs a Head: which head it built, and on which input.

    with watch_heads() as calls:
        A = handout_attention(7)          # builds a Head and runs it on the text
    head, x = calls[-1]                   # that head (its W_Q, W_K, W_V) and its input x (B, T, d)

Notebook 4 uses it to measure why some untrained heads tilt (their W_Q and W_K, their queries and
keys) from the very heads its `handout_attention` builds, without building them a second way.
"""

from __future__ import annotations

from contextlib import contextmanager

from .head import Head


@contextmanager
def watch_heads():
    """Record (head, x) for every forward pass of a `Head` (or a subclass) run inside the block;
    x is detached. The class is restored when the block ends, also after an error."""
    calls = []
    original = Head.forward

    def forward(self, x):
        calls.append((self, x.detach()))
        return original(self, x)

    Head.forward = forward
    try:
        yield calls
    finally:
        Head.forward = original
