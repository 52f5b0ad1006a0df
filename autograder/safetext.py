"""Student text on the instructor's terminal is only text.

A review reason quotes a student's exception message, a note names a student's file: printed raw, an
escape sequence in it would set the terminal's title, write to its clipboard (OSC 52), colour or clear
the screen, and a right-to-left override would turn the line round. What may pass is named, not what
may not: a character is printed as it is only when Python calls it printable (letters, marks, digits,
punctuation, symbols and the plain space of every script: `str.isprintable`), or when it is a line
break or a tab; every other character (C0 and C1 controls, ESC, format characters such as the bidi
overrides, unassigned and private-use code points, lone surrogates) is shown as its escape, `\\x1b`,
`\\u202e`, so the reader still sees that it was there. Nor do the printable characters Unicode says a
display may show as nothing (its Default_Ignorable_Code_Point property: the Hangul fillers, the
variation selectors, the combining grapheme joiner...): a file name holding one looks like another.

`python -m autograder` puts its standard output and error behind `TerminalText` (autograder/__main__.py),
so every command's printing passes here, whichever module prints.
"""

from __future__ import annotations

import io

PASSES = "\n\t"  # besides the printable characters

# Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt), first and last code point
IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)


def _shown(c: str) -> bool:
    """Whether `c` is printable and a display shows it as something."""
    return c.isprintable() and not any(first <= ord(c) <= last for first, last in IGNORABLE)


def printable(text: str, keep: str = "") -> str:
    r"""`text` with every character that is not printable (nor in `keep`) shown as its escape (`\x1b`)."""
    return "".join(
        c if _shown(c) or c in keep else c.encode("unicode_escape", "backslashreplace").decode("ascii") for c in text
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
