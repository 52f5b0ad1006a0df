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
  comments) is escaped whenever it begins with one of `= + - @`, tab, carriage return or NUL, even
  when it reads as a number (`-3` in a text column is someone's text);
* **number** columns (named in `numbers=`: scores, penalties, seconds late) are the grader's own
  numbers and are written as plain numbers, a negative one too (`-0.4` must stay a number for the
  LMS); a value in a number column that is not a plain decimal number is treated as text and
  escaped, so a column declared numeric can never carry a formula.

`strict=True` (the class report, autograder/insights.py, whose cells hold students' reasons and answers
quoted) escapes by an allowlist instead: only a plain decimal number or a plain identifier (letters,
digits, `_ . - /`, starting with a letter, digit or `_`) is written as it is; every other field gets the
leading `'`, so no field can start a formula however the spreadsheet splits it (a `;` or `,` inside a
field read as a separator, a space or quote before a `=`).
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
from pathlib import Path

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")
PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
PLAIN_IDENTIFIER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")


def escape_text(value) -> str:
    """A text field as it is written: a leading `'` when it begins like a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def strict_field(value) -> str:
    """A field under the allowlist (`strict=True`): a plain number or identifier as it is, '' empty,
    anything else with a leading `'`."""
    if value is None or value == "" or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    return text if PLAIN_NUMBER.fullmatch(text) or PLAIN_IDENTIFIER.fullmatch(text) else "'" + text


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


def csv_text(columns: list[str], rows, numbers=(), header: bool = True, strict: bool = False) -> str:
    """The CSV text of `rows` (dicts by column name, or sequences in column order) under `columns`;
    `numbers`: the columns holding the grader's numbers; `strict`: the allowlist (the module's docstring)."""
    numbers = set(numbers)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    # the csv module quotes a field holding "\n" but not one holding a lone "\r" when lines end in
    # "\n": such a row is written with every field quoted, so that no reader splits it
    quoted = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    if header:
        writer.writerow([strict_field(c) if strict else escape_text(c) for c in columns])
    for row in rows:
        values = [row.get(c) for c in columns] if isinstance(row, dict) else list(row)
        fields = _row(values, columns, numbers, strict)
        (quoted if any("\r" in f for f in fields) else writer).writerow(fields)
    return out.getvalue()


def write_csv(path: Path, columns: list[str], rows, numbers=(), header: bool = True, strict: bool = False) -> Path:
    """Write `csv_text(...)` to `path` (UTF-8), atomically: a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(csv_text(columns, rows, numbers, header, strict), encoding="utf-8")
    os.replace(tmp, path)
    return path
