"""`make similarity`: answers that look alike across the class, for a person to look at. Never a grade
change, never a verdict: two students may well write the same three-line function.

The engine is MOSS's: winnowing fingerprints (Schleimer, Wilkerson and Aiken, SIGMOD 2003), through
the `copydetect` package (its winnowing, fingerprint overlap and copied-region functions). Each
student's answers to one notebook are one document per kind, code and written text, in the
notebook's order (so an answer moved to another cell, or functions put in another order, is still
the same text). The document is normalised first: code to Python's tokens without comments or
layout, every name but builtins, keywords and attributes (`.softmax`, `.shape`) written `N`, every
literal `L`, so renaming variables changes nothing; written text to its lower-case words. Every run
of K characters of the normalised document is hashed (the same hash in every run) and winnowing
keeps the smallest hash of each window of WINDOW runs: any match of at least K + WINDOW - 1
characters is found, shorter ones never count.

What the release and the model solution already say is not the students' own: every run found in
a notebook's released stubs or in its instructor answers (source/, markers removed) is taken out of
every document first, so two students who both wrote the model solution are not listed, and a copy
is measured on what was written beyond it.

Two documents are compared by the runs they share; each answer cell gets the share of its own
fingerprinted text that the other student's document holds too. A copy padded with unused code
keeps the original's share at 1.0 (every run of the original is in the copy), a renamed or
reordered copy too, where a share of the whole document would fall. A pair of students is ranked
by their largest share over the cells with at least MIN_OWN characters of their own, then by how
much they share. `make similarity` writes the pairs at or above the threshold (default 0.8) to
`<grading home>/similarity.csv` and a page that shows each listed pair's matching regions side by
side, `<grading home>/similarity.html` (what the students wrote is text there, nothing else: it is
escaped, and the page's policy loads and runs nothing).
"""

from __future__ import annotations

import builtins
import html
import io
import json
import keyword
import re
import tokenize
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np

from ..course import RELEASE, ROOT, grader_home
from ..csvout import write_csv
from ..steps import find_step

K = 25  # MOSS's noise threshold: a match shorter than this many normalised characters never counts
GUARANTEE = 30  # a match at least this long is always found (winnowing's window: GUARANTEE - K + 1 runs)
WINDOW = GUARANTEE - K + 1
MIN_OWN = 40  # a cell with less of its own fingerprinted text (the model's and the release's taken out) is not compared
PAIR_COLUMNS = ["student_a", "student_b", "answers_alike", "max_similarity", "mean_similarity", "answers"]
BUILTINS = set(dir(builtins)) | set(keyword.kwlist)
SHOWN_PAIRS = 50  # pairs shown side by side in the page


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


# ---- normalising: the text compared, and where each of its characters came from ---------------


def normalise_code(source: str) -> tuple[str, list[tuple[int, int]]]:
    """`source` as Python tokens (names `N` but builtins, keywords and attributes; literals `L`;
    no comments or layout), and for each character of the result the span of `source` it stands
    for. Code that does not tokenise is normalised as text."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    pieces, spans, previous = [], [], ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (
                tokenize.COMMENT,
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
            ):
                continue
            if tok.type == tokenize.NAME:
                out = tok.string if tok.string in BUILTINS or previous == "." else "N"
            elif tok.type in (tokenize.NUMBER, tokenize.STRING) or tok.type == getattr(tokenize, "FSTRING_START", -1):
                out = "L"
            else:
                out = tok.string
            start = starts[tok.start[0] - 1] + tok.start[1]
            end = starts[tok.end[0] - 1] + tok.end[1]
            pieces.append(out)
            spans.extend([(start, end)] * len(out))
            previous = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return normalise_text(source)
    return "".join(pieces), spans


def normalise_text(source: str) -> tuple[str, list[tuple[int, int]]]:
    """`source`'s words in lower case, one space between them, with each character's span."""
    pieces, spans = [], []
    for match in re.finditer(r"\w+", source):
        if pieces:
            pieces.append(" ")
            spans.append((spans[-1][1], match.start()))
        pieces.append(match[0].lower())
        spans.extend([(match.start(), match.end())] * len(match[0]))
    return "".join(pieces), spans


def normalise(kind: str, source: str) -> tuple[str, list[tuple[int, int]]]:
    return normalise_code(source) if kind == "code" else normalise_text(source)


def kgram_hashes(normalised: str) -> np.ndarray:
    """The hash of every run of K characters (a polynomial hash modulo 2**64: the same in every run
    of the program, unlike Python's own string hash)."""
    codes = np.frombuffer(normalised.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = len(codes) - K + 1
    if n <= 0:
        return np.array([], dtype=np.int64)
    hashes = np.zeros(n, dtype=np.uint64)
    base = np.uint64(1_000_003)
    with np.errstate(over="ignore"):
        for j in range(K):
            hashes = hashes * base + codes[j : j + n]
    return hashes.view(np.int64)


# ---- documents: one student's answers to one notebook, of one kind ---------------------------


@dataclass
class Document:
    student: str
    notebook: str
    kind: str  # "code" or "text"
    cells: list[tuple[str, str]]  # (grade id, the answer as written), in the notebook's order
    raw: str = ""
    normalised: str = ""
    spans: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=int))
    cell_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # cell index of each normalised char
    cell_starts: list[int] = field(default_factory=list)  # where each cell begins in raw
    hashes: set = field(default_factory=set)
    hash_idx: dict = field(default_factory=dict)
    own: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # chars under a kept fingerprint

    def build(self, given: np.ndarray) -> "Document":
        """Normalise, fingerprint each answer (winnowing; no run spans two answers), and take out
        every run the release or the model has."""
        from copydetect.utils import winnow

        pieces, spans, cell_of = [], [], []
        offset = 0
        self.own = np.zeros(0, dtype=bool)
        found = []
        for index, (_, text) in enumerate(self.cells):
            self.cell_starts.append(offset)
            normalised, cell_spans = normalise(self.kind, text)
            if pieces:
                pieces.append("\n")
                spans.append((offset, offset))
                cell_of.append(index)
            start = sum(len(p) for p in pieces)
            pieces.append(normalised)
            spans.extend((offset + a, offset + b) for a, b in cell_spans)
            cell_of.extend([index] * len(normalised))
            offset += len(text) + 2
            all_hashes = kgram_hashes(normalised)
            if len(all_hashes):
                hashes, idx = winnow(all_hashes, WINDOW, remove_duplicates=False)
                keep = ~np.isin(hashes, given)
                found.extend(zip(hashes[keep].tolist(), (idx[keep] + start).tolist()))
        self.raw = "\n\n".join(text for _, text in self.cells)
        self.normalised = "".join(pieces)
        self.spans = np.array(spans, dtype=int).reshape(-1, 2)
        self.cell_of = np.array(cell_of, dtype=int)
        self.own = np.zeros(len(self.normalised), dtype=bool)
        for value, i in found:
            self.hash_idx.setdefault(value, []).append(i)
            self.own[i : i + K] = True
        self.hashes = set(self.hash_idx)
        return self

    def own_per_cell(self) -> np.ndarray:
        return np.bincount(self.cell_of[self.own], minlength=len(self.cells)) if len(self.cells) else np.zeros(0)


def matched(a: Document, b: Document) -> tuple[np.ndarray, np.ndarray]:
    """The characters of `a` and of `b` (normalised) inside a region the other document shares:
    copydetect's fingerprint overlap and copied slices, both ways."""
    from copydetect.utils import find_fingerprint_overlap, get_copied_slices

    masks = []
    idx_a, idx_b = find_fingerprint_overlap(a.hashes, b.hashes, a.hash_idx, b.hash_idx)
    for doc, idx in ((a, idx_a), (b, idx_b)):
        mask = np.zeros(len(doc.normalised), dtype=bool)
        starts, ends = get_copied_slices(idx, K)
        for start, end in zip(starts.astype(int).tolist(), ends.astype(int).tolist()):
            mask[start:end] = True
        masks.append(mask & doc.own)
    return masks[0], masks[1]


def cell_shares(doc: Document, mask: np.ndarray) -> dict[str, float]:
    """{grade id: the share of the cell's own fingerprinted text inside the shared regions}, for the
    cells with at least MIN_OWN characters of their own."""
    own = doc.own_per_cell()
    hit = np.bincount(doc.cell_of[mask], minlength=len(doc.cells)) if len(doc.cells) else np.zeros(0)
    return {doc.cells[i][0]: float(hit[i] / own[i]) for i in range(len(doc.cells)) if own[i] >= MIN_OWN}


# ---- the class --------------------------------------------------------------------------------


def _kind(cell: dict) -> str:
    return "code" if cell.get("cell_type") == "code" else "text"


def documents(step: str, home: Path | None = None) -> dict[tuple[str, str], list[Document]]:
    """(notebook, kind) -> every graded student's document of the answers that differ from the release."""
    home = home or grader_home()
    given = model_hashes(step)
    out: dict[tuple[str, str], list[Document]] = {}
    for name in find_step(step).notebooks():
        release = json.loads((RELEASE / step / f"{name}.ipynb").read_text(encoding="utf-8"))
        stub = {
            c["metadata"]["nbgrader"]["grade_id"]: _text(c)
            for c in release["cells"]
            if c.get("metadata", {}).get("nbgrader", {}).get("solution")
        }
        for path in sorted((home / "autograded").glob(f"*/{step}/{name}.ipynb")):
            sid = path.parent.parent.name
            cells: dict[str, list[tuple[str, str]]] = {"code": [], "text": []}
            for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                if gid in stub and _text(cell).strip() != stub[gid].strip():
                    cells[_kind(cell)].append((gid, _text(cell)))
            for kind, answers in cells.items():
                if answers:
                    doc = Document(sid, name, kind, answers).build(
                        given.get((name, kind), np.array([], dtype=np.int64))
                    )
                    out.setdefault((name, kind), []).append(doc)
    return out


def model_hashes(step: str) -> dict[tuple[str, str], np.ndarray]:
    """(notebook, kind) -> the hash of every run of K characters in the notebook's instructor
    answers and released stubs (all of them, not winnowed: none of it is a student's own)."""
    from ..example import answer_text

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
                    kind = _kind(cell)
                    for text in {answer_text(cell), _text(cell)}:
                        normalised, _ = normalise(kind, text)
                        out.setdefault((name, kind), set()).update(kgram_hashes(normalised).tolist())
    return {key: np.array(sorted(values), dtype=np.int64) for key, values in out.items()}


@dataclass
class Match:
    """Two students' documents of one notebook and kind that share fingerprinted text."""

    a: Document
    b: Document
    mask_a: np.ndarray
    mask_b: np.ndarray
    shares: dict[str, float]  # grade id -> the larger of the two cells' shares

    @property
    def score(self) -> float:
        return max(self.shares.values(), default=0.0)

    @property
    def shared(self) -> int:
        return int(self.mask_a.sum() + self.mask_b.sum())


def matches(step: str, home: Path | None = None) -> list[Match]:
    """Every pair of documents (same notebook, same kind) that share a fingerprint, with the shares
    of their cells; only pairs that share one are compared (an index of fingerprints)."""
    out = []
    for (name, kind), docs in sorted(documents(step, home).items()):
        by_hash: dict[int, list[int]] = {}
        for i, doc in enumerate(docs):
            for value in doc.hashes:
                by_hash.setdefault(value, []).append(i)
        candidates = {(i, j) for holders in by_hash.values() for i, j in combinations(holders, 2)}
        for i, j in sorted(candidates):
            a, b = sorted((docs[i], docs[j]), key=lambda d: d.student)
            mask_a, mask_b = matched(a, b)
            shares: dict[str, float] = {}
            for doc, mask in ((a, mask_a), (b, mask_b)):
                for gid, share in cell_shares(doc, mask).items():
                    shares[gid] = max(shares.get(gid, 0.0), share)
            if any(shares.values()):
                out.append(Match(a, b, mask_a, mask_b, shares))
    return out


def similar_pairs(
    step: str, threshold: float = 0.8, home: Path | None = None, found: list[Match] | None = None
) -> list[dict]:
    """Every pair of answers to the same cell at or above `threshold`: the share of a cell's own
    text (the model solution's and the release's taken out) that the other student's answers hold
    (`found`: the class's matches, when already computed)."""
    pairs = []
    for m in matches(step, home) if found is None else found:
        for gid, share in m.shares.items():
            if share >= threshold:
                pairs.append(
                    {
                        "notebook": m.a.notebook,
                        "grade_id": gid,
                        "student_a": m.a.student,
                        "student_b": m.b.student,
                        "similarity": round(share, 3),
                    }
                )
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
        out.append(
            {
                "student_a": a,
                "student_b": b,
                "answers_alike": len(cells),
                "max_similarity": max(scores),
                "mean_similarity": round(sum(scores) / len(scores), 3),
                "answers": "; ".join(f"{c['notebook']}/{c['grade_id']} {c['similarity']:.2f}" for c in cells),
            }
        )
    return sorted(out, key=lambda p: (-p["answers_alike"], -p["max_similarity"], p["student_a"], p["student_b"]))


def ranked(step: str, home: Path | None = None, found: list[Match] | None = None) -> list[dict]:
    """Every pair of students who share any fingerprinted text, ranked: largest share of a cell
    first, then the most text shared. {rank, student_a, student_b, score, shared, matches}."""
    groups: dict[tuple[str, str], list[Match]] = {}
    for m in matches(step, home) if found is None else found:
        groups.setdefault((m.a.student, m.b.student), []).append(m)
    out = [
        {
            "student_a": a,
            "student_b": b,
            "score": round(max(m.score for m in ms), 3),
            "shared": sum(m.shared for m in ms),
            "matches": ms,
        }
        for (a, b), ms in groups.items()
    ]
    out.sort(key=lambda p: (-p["score"], -p["shared"], p["student_a"], p["student_b"]))
    for rank, pair in enumerate(out, 1):
        pair["rank"] = rank
    return out


# ---- the page: each listed pair's matching regions side by side -------------------------------

PAGE_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
PAGE_STYLE = """
body { font-family: sans-serif; font-size: 14px; margin: 1.5em; color: #222; }
table.ranking { border-collapse: collapse; } table.ranking td, table.ranking th { border: 1px solid #bbb; padding: 2px 8px; }
section.pair { margin-top: 2em; border-top: 2px solid #444; }
div.side-by-side { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
div.side { min-width: 0; overflow: auto; position: relative; contain: paint; }
pre.answer { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 0.5em; border: 1px solid #ddd;
             line-height: 1.5; }
mark { background: #ffe08a; padding: 0 0 2px 0; }
h4 { margin: 0.8em 0 0.2em 0; font-size: 13px; color: #555; }
"""


def _highlighted(doc: Document, mask: np.ndarray, index: int) -> str:
    """Cell `index` of `doc` as escaped text, its shared regions in <mark>."""
    start = doc.cell_starts[index]
    text = doc.cells[index][1]
    marked = np.zeros(len(text), dtype=bool)
    for a, b in doc.spans[mask & (doc.cell_of == index)].tolist():
        marked[max(a - start, 0) : max(b - start, 0)] = True
    out, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and marked[j] == marked[i]:
            j += 1
        piece = html.escape(text[i:j])
        out.append(f"<mark>{piece}</mark>" if marked[i] else piece)
        i = j
    return "".join(out)


def _side(doc: Document, mask: np.ndarray, shares: dict[str, float]) -> str:
    parts = [f"<h3>{html.escape(doc.student)}</h3>"]
    for index, (gid, _) in enumerate(doc.cells):
        if not mask[doc.cell_of == index].any():
            continue
        share = cell_shares(doc, mask).get(gid)
        parts.append(
            f"<h4>{html.escape(doc.notebook)} / {html.escape(gid)}"
            + (f": {share:.0%} of its own text shared" if share is not None else "")
            + "</h4>"
        )
        parts.append(f"<pre class='answer'>{_highlighted(doc, mask, index)}</pre>")
    return "".join(parts)


def page(pairs: list[dict], threshold: float, step: str) -> str:
    """The report as one HTML page: the ranking, then each listed pair side by side."""
    rows = "".join(
        f"<tr><td>{p['rank']}</td><td><a href='#pair-{p['rank']}'>{html.escape(p['student_a'])}</a></td>"
        f"<td>{html.escape(p['student_b'])}</td><td>{p['score']:.2f}</td><td>{p['shared']}</td></tr>"
        for p in pairs
    )
    sections = []
    for p in pairs[:SHOWN_PAIRS]:
        blocks = []
        for m in sorted(p["matches"], key=lambda m: -m.score):
            blocks.append(
                f"<p>{html.escape(m.a.notebook)}, {m.a.kind}: largest share {m.score:.2f}</p>"
                f"<div class='side-by-side'><div class='side'>{_side(m.a, m.mask_a, m.shares)}</div>"
                f"<div class='side'>{_side(m.b, m.mask_b, m.shares)}</div></div>"
            )
        sections.append(
            f"<section class='pair' id='pair-{p['rank']}'><h2>{p['rank']}. "
            f"{html.escape(p['student_a'])} and {html.escape(p['student_b'])}: {p['score']:.2f}</h2>"
            + "".join(blocks)
            + "</section>"
        )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{PAGE_CSP}\">"
        f"<title>Answers alike: {html.escape(step)}</title><style>{PAGE_STYLE}</style></head><body>"
        f"<h1>Answers alike in {html.escape(step)}</h1>"
        f"<p>For a person to look at; grades are not changed. A pair's score is the largest share of one "
        f"answer's own text (what the release and the model solution say taken out) that the other "
        f"student's answers to the same notebook hold too, matched as MOSS does (winnowing; names and "
        f"literals do not count, matches shorter than {K} normalised characters never count). "
        f"{len(pairs)} pairs at or above {threshold:g}; the first {min(len(pairs), SHOWN_PAIRS)} side by side, "
        f"shared regions marked.</p>"
        f"<table class='ranking'><tr><th>rank</th><th>student</th><th>student</th><th>score</th>"
        f"<th>characters shared</th></tr>{rows}</table>" + "".join(sections) + "</body></html>"
    )


def report(step: str, threshold: float = 0.8, say=print) -> Path:
    found = matches(step)
    pairs = similar_pairs(step, threshold, found=found)
    students = by_student_pair(pairs)
    home = grader_home()
    dest = home / "similarity.csv"
    write_csv(dest, PAIR_COLUMNS, students, numbers=("answers_alike", "max_similarity", "mean_similarity"))
    listed = [p for p in ranked(step, found=found) if p["score"] >= threshold]
    (home / "similarity.html").write_text(page(listed, threshold, step), encoding="utf-8")
    shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
    say(
        f"similarity: {len(students)} pairs of students with answers alike at or above {threshold:g} "
        f"({len(pairs)} answers; the model solution's and the release's text not counted) in {shown}, "
        f"side by side in {shown.with_suffix('.html')} (for a person to look at; grades are not changed)"
    )
    for pair in students[:20]:
        say(
            f"  {pair['student_a']} and {pair['student_b']}: {pair['answers_alike']} answer"
            f"{'s' * (pair['answers_alike'] > 1)} alike (up to {pair['max_similarity']:.2f}): {pair['answers'][:120]}"
        )
    return dest
