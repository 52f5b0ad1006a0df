"""Every CSV the project writes goes through `write_csv` / `csv_text`: no field a spreadsheet would
run as a formula.

A spreadsheet (Excel, LibreOffice, Google Sheets) opening a CSV runs a field that begins with `=`,
`+`, `-` or `@` as a formula, and some read a leading tab or carriage return past it: a student
names an exception class `=HYPERLINK(...)` and the instructor's spreadsheet follows it. OWASP's
"CSV Injection" page and its ASVS (requirement 1.2.10, "CSV and Formula Injection") say to escape
such a field with a leading single quote; the `csv` module's quoting (RFC 4180 sections 2.6 and
2.7: fields holding commas, quotes or line breaks quoted, quotes doubled) does the rest.

Which fields are escaped is decided per column, not guessed from the value:

* **text** (every column by default: student ids, names, file names, reasons, notes, answers,
  comments) is guarded (`guard`, below), even when it reads as a number (`-3` in a text column is
  someone's text);
* **number** columns (named in `numbers=`: scores, penalties, seconds late) are the grader's own
  numbers and are written as plain numbers, a negative one too (`-0.4` must stay a number for the
  LMS); a value in a number column that is not a plain decimal number (ASCII digits: `-٣` is not one)
  is treated as text, so a column declared numeric can never carry a formula.

Whatever the separator the spreadsheet splits by. Many read a CSV with `;` (the default where the
decimal mark is a comma), a tab or `|`; such a reader takes a double quote only at the start of its
own cell and ends a row at any line break, so `x;=HYPERLINK(...)` inside a quoted field still gives it
a cell that starts a formula. So `guard` works by two allowlists, not by a list of what to block:

* a cell can start only after a character that is not in CELL_CONTINUE (letters, digits, marks, the
  space and a few signs that no spreadsheet offers as a separator); at every such place, and at the
  field's start (and after the spaces that begin a cell: a reader may trim them, as LibreOffice's
  "Trim spaces" does), the next character must be in SAFE_START (letters, digits, the space, signs no
  formula begins with), else a `'` is put before it (a `'` there is doubled, so `text_of` reads back
  exactly what was written); a field that ends at such a place ends with a `'` (what follows it in the
  file, the closing quote, must not start a cell either);
* a line break is written as `⏎` (LINE_BREAK), itself not in CELL_CONTINUE; any other character that is
  not printable (a tab, NUL, ESC, a bidi override: autograder/safetext.py) as its escape (`\\t`), so a
  terminal that shows the file (`cat`) runs nothing either.

A line's first field starts a cell for every reader: one that does not begin with a SAFE_START
character (a negative number) gets the `'` too. Then a field is written bare only when it is empty, a
plain number or a plain identifier; every other
field between double quotes (RFC 4180 section 2.5), so a reader splitting by `,` takes it whole.
`text_of` undoes `guard` (the written-answers import reads a TA's comment back with its lines). A
reader splitting by spaces is not covered: no spreadsheet does by default, and guarding every space
would fill every reason with quotes.

`strict=True` (the class report, autograder/publish/insights.py, whose cells hold students' reasons and answers
quoted): only a plain decimal number or a plain identifier (letters and digits of any script, `_ . - /`,
starting with a letter, digit or `_`) is written as it is; every other field gets a leading `'` as well.
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from pathlib import Path

from .safetext import printable

# ASCII digits only: `\d` alone matches every script's digits (`-٣`, `-１`), which no spreadsheet reads as
# a number, so a cell `-٣` would begin a formula
PLAIN_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
PLAIN_IDENTIFIER = re.compile(r"\w[\w./-]*")  # letters and digits of any script, `_ . / -`


LINE_BREAK = "\u23ce"  # ⏎, for "\r\n", "\r" or "\n" in a text field
BREAKS = re.compile(r"\r\n|\r|\n")
_SIGNS_CONTINUE = set("_.()[]{}'\"!?/\\#%&*<>~^$=+-@")
_SIGNS_START = set("_.()[]{}!?/\\#%&*<>~^$")


def continues_cell(c: str) -> bool:
    """No spreadsheet's reader starts a new cell after `c` (CELL_CONTINUE)."""
    return c == " " or c in _SIGNS_CONTINUE or unicodedata.category(c)[0] in "LMN"


def safe_start(c: str) -> bool:
    """A cell may begin with `c` (SAFE_START): no formula does."""
    return c == " " or c in _SIGNS_START or unicodedata.category(c)[0] == "L" or c in "0123456789"


def guard(text: str) -> str:
    """`text` on one line, with a `'` before every character that could start a cell of some reader
    and is not safe there (the module's docstring)."""
    text = BREAKS.sub(LINE_BREAK, printable(text, keep="\r\n"))
    out, at_start = [], True
    for c in text:
        if at_start and not safe_start(c):
            out.append("'")
        out.append(c)
        at_start = not continues_cell(c) or (at_start and c == " ")  # a reader may trim a cell's spaces
    if at_start and out:
        out.append("'")  # what follows the field in the file (a quote, a comma) must not start a cell
    return "".join(out)


def text_of(field: str) -> str:
    """A text field read back: `guard` undone."""
    out, at_start = [], True
    for c in field:
        if at_start and c == "'":
            at_start = False  # the guard's quote: the character after it is the text's
            continue
        out.append(c)
        at_start = not continues_cell(c) or (at_start and c == " ")
    return "".join(out).replace(LINE_BREAK, "\n")


def escape_text(value) -> str:
    """A text field as it is written: guarded."""
    return guard("" if value is None else str(value))


def strict_field(value) -> str:
    """A field under the allowlist (`strict=True`): a plain number or identifier as it is, '' empty,
    anything else guarded, with a leading `'`."""
    if value is None or value == "" or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    if PLAIN_NUMBER.fullmatch(text) or PLAIN_IDENTIFIER.fullmatch(text):
        return text
    guarded = guard(text)
    return guarded if guarded.startswith("'") else "'" + guarded


def number_field(value) -> str:
    """A number column's field: a plain decimal number is written as it is (negative ones too);
    None, NaN and '' are empty; anything else is text, escaped."""
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        return escape_text(value)
    if isinstance(value, (int, float)):
        return "" if isinstance(value, float) and not math.isfinite(value) else str(value)
    text = str(value)
    return text if PLAIN_NUMBER.fullmatch(text) else escape_text(text)


def _row(values, columns, numbers, strict: bool = False) -> list[str]:
    if strict:
        return [strict_field(v) for v in values]
    return [number_field(v) if c in numbers else escape_text(v) for c, v in zip(columns, values)]


def _field(text: str) -> str:
    """A field as it stands in the file: bare when empty, a plain number or a plain identifier,
    otherwise between double quotes, its own quotes doubled."""
    if text == "" or PLAIN_NUMBER.fullmatch(text) or PLAIN_IDENTIFIER.fullmatch(text):
        return text
    return '"' + text.replace('"', '""') + '"'


def csv_text(columns: list[str], rows, numbers=(), header: bool = True, strict: bool = False) -> str:
    """The CSV text of `rows` (dicts by column name, or sequences in column order) under `columns`;
    `numbers`: the columns holding the grader's numbers; `strict`: the allowlist (the module's docstring)."""
    numbers = set(numbers)
    lines = []
    if header:
        lines.append([strict_field(c) if strict else escape_text(c) for c in columns])
    for row in rows:
        values = [row.get(c) for c in columns] if isinstance(row, dict) else list(row)
        lines.append(_row(values, columns, numbers, strict))
    return "".join(",".join(_field(f) for f in _first_guarded(fields)) + "\n" for fields in lines)


def _first_guarded(fields: list[str]) -> list[str]:
    """A line's first field starts a cell for every reader: a plain number there (`-1` as an id) gets
    the guard's `'` too."""
    if fields and fields[0] and fields[0][0] != "'" and not safe_start(fields[0][0]):
        return ["'" + fields[0], *fields[1:]]
    return fields


def write_csv(path: Path, columns: list[str], rows, numbers=(), header: bool = True, strict: bool = False) -> Path:
    """Write `csv_text(...)` to `path` (UTF-8), atomically: a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(csv_text(columns, rows, numbers, header, strict), encoding="utf-8")
    os.replace(tmp, path)
    return path
