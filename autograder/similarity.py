"""`make similarity`: answers that look alike across the class, for a person to look at. Never a grade
change, never a verdict: two students may well write the same three-line function.

Every answer cell (nbgrader `solution`) of every graded student is reduced to normalised tokens
(code: Python's tokens without comments, every name but builtins and attributes replaced by `N`,
every literal by `L`, so renaming variables changes nothing; text: lower-case words), then cut into
runs of 5 tokens. Two students' answers to the same cell are compared by the share of runs they have
in common (Jaccard). What the model solution and the release already say is not the students' own:
runs found in the cell's instructor answer (source/, markers removed) or in its released stub are
taken out of every answer first, so two students who both wrote the model solution are not listed,
and a copy is measured on what was written beyond it. A pair of answers at or above the threshold
(default 0.8) counts; the report, `<grading home>/similarity.csv`, lists each pair of *students* once,
with how many of their answers are alike and which (most alike first). Answers left as released,
answers shorter than 12 tokens and answers with fewer than 8 runs of their own are not compared.
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
MIN_OWN_SHINGLES = 8        # runs left once the model solution's and the release's are taken out
PAIR_COLUMNS = ["student_a", "student_b", "answers_alike", "max_similarity", "mean_similarity", "answers"]
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


def model_shingles(step: str) -> dict[tuple[str, str], set]:
    """(notebook, grade id) -> the runs of the cell's instructor answer and of its released stub."""
    from .example import answer_text
    out: dict[tuple[str, str], set] = {}
    source_step = find_step(step)
    for name in source_step.notebooks():
        for folder in (source_step.source, RELEASE / step):
            try:
                cells = json.loads((folder / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
            except (OSError, ValueError, KeyError):
                continue
            for cell in cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if meta.get("solution") and meta.get("grade_id"):
                    text = answer_text(cell)
                    out.setdefault((name, meta["grade_id"]), set()).update(shingles(tokens({**cell, "source": text})))
    return out


def similar_pairs(step: str, threshold: float = 0.8) -> list[dict]:
    """Every pair of answers to the same cell at or above `threshold`, measured on each answer's own
    runs (the model solution's and the release's taken out)."""
    pairs = []
    model = model_shingles(step)
    for (name, gid), by_student in sorted(answers(step).items()):
        given = model.get((name, gid), set())
        cut = {sid: shingles(toks) - given for sid, toks in by_student.items()}
        cut = {sid: own for sid, own in cut.items() if len(own) >= MIN_OWN_SHINGLES}
        for a, b in combinations(sorted(cut), 2):
            score = len(cut[a] & cut[b]) / len(cut[a] | cut[b])
            if score >= threshold:
                pairs.append({"notebook": name, "grade_id": gid, "student_a": a, "student_b": b,
                              "similarity": round(score, 3)})
    return sorted(pairs, key=lambda p: (-p["similarity"], p["notebook"], p["grade_id"], p["student_a"]))


def by_student_pair(pairs: list[dict]) -> list[dict]:
    """The pairs of answers grouped by pair of students: most answers alike first, then most alike."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for pair in pairs:
        groups.setdefault((pair["student_a"], pair["student_b"]), []).append(pair)
    out = []
    for (a, b), cells in groups.items():
        scores = [c["similarity"] for c in cells]
        cells = sorted(cells, key=lambda c: (-c["similarity"], c["notebook"], c["grade_id"]))
        out.append({"student_a": a, "student_b": b, "answers_alike": len(cells), "max_similarity": max(scores),
                    "mean_similarity": round(sum(scores) / len(scores), 3),
                    "answers": "; ".join(f"{c['notebook']}/{c['grade_id']} {c['similarity']:.2f}" for c in cells)})
    return sorted(out, key=lambda p: (-p["answers_alike"], -p["max_similarity"], p["student_a"], p["student_b"]))


def report(step: str, threshold: float = 0.8, say=print) -> Path:
    pairs = similar_pairs(step, threshold)
    students = by_student_pair(pairs)
    dest = grader_home() / "similarity.csv"
    write_csv(dest, PAIR_COLUMNS, students, numbers=("answers_alike", "max_similarity", "mean_similarity"))
    shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
    say(f"similarity: {len(students)} pairs of students with answers alike at or above {threshold:g} "
        f"({len(pairs)} answers; the model solution's and the release's text not counted) in {shown} "
        "(for a person to look at; grades are not changed)")
    for pair in students[:20]:
        say(f"  {pair['student_a']} and {pair['student_b']}: {pair['answers_alike']} answer"
            f"{'s' * (pair['answers_alike'] > 1)} alike (up to {pair['max_similarity']:.2f}): {pair['answers'][:120]}")
    return dest
