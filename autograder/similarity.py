"""`make similarity`: answers that look alike across the class, for a person to look at. Never a grade
change, never a verdict: two students may well write the same three-line function.

Every answer cell (nbgrader `solution`) of every graded student is reduced to normalised tokens
(code: Python's tokens without comments, every name but builtins and attributes replaced by `N`,
every literal by `L`, so renaming variables changes nothing; text: lower-case words), then cut into
runs of 5 tokens. Two students' answers to the same cell are compared by the share of runs they have
in common (Jaccard); a pair at or above the threshold (default 0.8) is listed, with the cells
behind it, in `<grading home>/similarity.csv`. Answers left as released and answers shorter than
12 tokens are not compared (they are alike by nature).
"""
from __future__ import annotations

import builtins
import io
import json
import keyword
import re
import tokenize
from itertools import combinations
from pathlib import Path

from .course import RELEASE, ROOT, grader_home
from .csvout import write_csv
from .steps import find_step

SHINGLE = 5
MIN_TOKENS = 12
BUILTINS = set(dir(builtins)) | set(keyword.kwlist)


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def code_tokens(source: str) -> list[str]:
    out, previous = [], ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
                continue
            if tok.type == tokenize.NAME:
                out.append(tok.string if tok.string in BUILTINS or previous == "." else "N")
            elif tok.type in (tokenize.NUMBER, tokenize.STRING):
                out.append("L")
            else:
                out.append(tok.string)
            previous = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text_tokens(source)
    return out


def text_tokens(source: str) -> list[str]:
    return re.findall(r"\w+", source.lower())


def tokens(cell: dict) -> list[str]:
    return code_tokens(_text(cell)) if cell.get("cell_type") == "code" else text_tokens(_text(cell))


def shingles(toks: list[str]) -> set[tuple[str, ...]]:
    return {tuple(toks[i:i + SHINGLE]) for i in range(max(1, len(toks) - SHINGLE + 1))}


def answers(step: str) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(notebook, grade id) -> {student: tokens} of every answer that differs from the release."""
    home = grader_home()
    out: dict[tuple[str, str], dict[str, list[str]]] = {}
    for name in find_step(step).notebooks():
        release = json.loads((RELEASE / step / f"{name}.ipynb").read_text(encoding="utf-8"))
        stub = {c["metadata"]["nbgrader"]["grade_id"]: _text(c) for c in release["cells"]
                if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
        for path in sorted((home / "autograded").glob(f"*/{step}/{name}.ipynb")):
            sid = path.parent.parent.name
            for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                if gid not in stub or _text(cell).strip() == stub[gid].strip():
                    continue
                toks = tokens(cell)
                if len(toks) >= MIN_TOKENS:
                    out.setdefault((name, gid), {})[sid] = toks
    return out


def similar_pairs(step: str, threshold: float = 0.8) -> list[dict]:
    pairs = []
    for (name, gid), by_student in sorted(answers(step).items()):
        cut = {sid: shingles(toks) for sid, toks in by_student.items()}
        for a, b in combinations(sorted(cut), 2):
            score = len(cut[a] & cut[b]) / len(cut[a] | cut[b])
            if score >= threshold:
                pairs.append({"notebook": name, "grade_id": gid, "student_a": a, "student_b": b,
                              "similarity": round(score, 3)})
    return sorted(pairs, key=lambda p: (-p["similarity"], p["notebook"], p["grade_id"], p["student_a"]))


def report(step: str, threshold: float = 0.8, say=print) -> Path:
    pairs = similar_pairs(step, threshold)
    dest = grader_home() / "similarity.csv"
    write_csv(dest, ["notebook", "grade_id", "student_a", "student_b", "similarity"], pairs, numbers=("similarity",))
    shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
    say(f"similarity: {len(pairs)} pairs of answers at or above {threshold:g} in {shown} "
        "(for a person to look at; grades are not changed)")
    for pair in pairs[:20]:
        say(f"  {pair['similarity']:.2f}  {pair['notebook']}/{pair['grade_id']}: {pair['student_a']} and {pair['student_b']}")
    return dest
