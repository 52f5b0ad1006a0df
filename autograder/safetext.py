"""Student text on the instructor's terminal is only text.

A review reason quotes a student's exception message, a note names a student's file: printed raw, an
escape sequence in it would set the terminal's title, write to its clipboard (OSC 52), colour or clear
the screen, and a right-to-left override would turn the line round. What may pass is named, not what
may not: a character is printed as it is only when Python calls it printable (letters, marks, digits,
punctuation, symbols and the plain space of every script: `str.isprintable`), or when it is a line
break or a tab; every other character (C0 and C1 controls, ESC, format characters such as the bidi
overrides, unassigned and private-use code points, lone surrogates) is shown as its escape, `\\x1b`,
`\\u202e`, so the reader still sees that it was there.

`python -m autograder` puts its standard output and error behind `TerminalText` (autograder/__main__.py),
so every command's printing passes here, whichever module prints.
"""

from __future__ import annotations

import io

PASSES = "\n\t"  # besides the printable characters


def printable(text: str, keep: str = "") -> str:
    r"""`text` with every character that is not printable (nor in `keep`) shown as its escape (`\x1b`)."""
    return "".join(
        c if c.isprintable() or c in keep else c.encode("unicode_escape", "backslashreplace").decode("ascii")
        for c in text
    )


def terminal_text(text: str) -> str:
    """What a terminal is given of `text`: printable characters, line breaks and tabs as they are."""
    return printable(text, PASSES)


class TerminalText(io.TextIOBase):
    """A text stream that writes `terminal_text` of everything written to it into `stream`."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self):
        return self.stream.encoding

    def writable(self) -> bool:
        return True
