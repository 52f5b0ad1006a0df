"""What the suite proves, module by module: the first sentence of each test module's docstring.

    python tests/proven.py            print the map
    python tests/proven.py --readme   put it into tests/README.md (between the proven: markers)

tests/test_markers.py checks that the README's map is this one, so a module added, removed or re-described
shows in the README's diff: a property the suite stops proving cannot leave without a trace.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
README = TESTS / "README.md"
BEGIN, END = "<!-- proven: begin -->", "<!-- proven: end -->"


def first_sentence(doc: str) -> str:
    text = " ".join(doc.split()).split(" * ", 1)[0]
    match = re.search(r"(?<=[.:])\s(?=[A-Z`(*])", text)
    return (text[:match.start()] if match else text).rstrip(":")


def proven() -> list[tuple[str, str]]:
    rows = []
    for path in sorted(TESTS.rglob("test_*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        rows.append((path.relative_to(TESTS).as_posix(), first_sentence(doc)))
    return rows


def table() -> str:
    lines = ["| module | what it proves (its docstring's first sentence) |", "|---|---|"]
    lines += [f"| `{name}` | {what.replace('|', '&#124;')} |" for name, what in proven()]
    return "\n".join(lines) + "\n"


def readme_map(readme: Path = README) -> str:
    text = readme.read_text(encoding="utf-8")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n") if BEGIN in text and END in text else ""


def into_readme(readme: Path = README) -> None:
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme}: no {BEGIN} ... {END} section to put the map in")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    readme.write_text(f"{head}{BEGIN}\n{table()}{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    if "--readme" in sys.argv:
        into_readme()
    else:
        print(table(), end="")
