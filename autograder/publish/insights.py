"""`make insights`: what the class got wrong, for the instructor. One self-contained page and its CSVs,
read from the one store of results (records/store.py `Store.load`), nothing else of the grading.

<grading home>/insights/<step>.html holds, and beside it the CSVs of the same numbers
(insights-<step>-items.csv, -review.csv, -misconceptions.csv, -escaped.csv, -notebooks.csv):

* **items**: each hidden test and each written answer (and each visible check cell), with its
  difficulty (the mean fraction of its points the students scored), its discrimination as the
  item-rest correlation (Pearson's r between a student's fraction on the item and their points on every
  other cell: the point-biserial correlation for an item scored right or wrong, its generalisation for
  partial credit) and Kelley's upper-lower index (the mean fraction of the top 27 % of the class by total
  minus that of the bottom 27 %), a small histogram of the item's fractions and its flags: too easy
  (difficulty above EASY), too hard (below HARD), negative discrimination (either index below 0), given
  only to an item scored for at least MIN_FOR_FLAGS students. Cells
  still without a score (a written answer not graded yet, a hidden test waiting for review) are left out
  of the numbers and counted in their own columns. Above the table: the histogram of the totals.
* **waiting for a person's review**: how many cells, which questions, which reasons the grader gave.
* **misconceptions**: the judges' reasons (a cell's `error` in the notebooks a grading judged: "part:
  message; ..." as a check's verdict writes it, checks/framework.py failure_text) split into their
  messages; one group per question and message (its case and spacing aside), with how many students, which (their codes) and one example,
  the students' ids taken out. A group is only as true as the judges' reasons: a reason that names a
  cause the answer does not have puts the student in the wrong group. Beside them, for notebook 3's tests
  of a check: which broken cases escaped how many students' checks (escaped).
* **per notebook**: each student's score against their submission time (the notebook's own recorded
  time, else the submission's), late or not, with an extension or not, and the written answers left to
  grade.

Students are shown by a code (pdfs.anonymous_code's, keyed by a secret kept in the insights folder:
the same code every time) unless `names=True`. Everything a student or a check wrote is text on the
page: escaped, never a link; the page's policy (CSP) allows no script, no request, only its own style.
The CSVs use csvout's allowlist (`strict=True`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..csvout import write_csv
from ..kernel.limits import clip
from ..records.model import StudentResult
from ..records.store import Store, atomic_write

EASY, HARD = 0.9, 0.2  # difficulty above EASY: too easy; below HARD: too hard
UPPER_LOWER = 0.27  # Kelley's share of the class at each end
MIN_FOR_FLAGS = 5  # an item scored for fewer students gets no flag (its numbers still shown)
EXAMPLE_CHARS = 400
REVIEW_PREFIX = "waits for review: "
SCORED_AFTER_REVIEW = "scored by a grader after review"


# ---- the judges' reasons ---------------------------------------------------------------------------

MORE_LIKE_IT = re.compile(r"\s*\(and \d+ more like it\)\s*$")


def causes(error: str) -> list[str]:
    """The messages of a cell's reason, each once, in order. A check's verdict writes its failing parts as
    `name: message`, joined by `; `, a part whose message the next part repeats by its name alone
    (framework.Verdict.failure_text); a reason of another shape (an exception's name, "no answer given")
    is one message. A review cell's reason ("waits for review: part: why; also lost: ...") gives its
    reasons for review (review_reasons) here too."""
    text = MORE_LIKE_IT.sub("", (error or "").strip())
    if text.startswith(REVIEW_PREFIX):
        text = text[len(REVIEW_PREFIX) :]
    text = text.replace("; also lost: ", "; ")
    out: list[str] = []
    pending: list[str] = []
    for segment in (s.strip() for s in text.split("; ")):
        if not segment:
            continue
        if ": " in segment:
            message = segment.split(": ", 1)[1].strip()
            pending = []
        else:
            pending.append(segment)
            continue
        if message and message not in out:
            out.append(message)
    for name in pending:  # parts that failed without a message: their names are the cause
        if name not in out:
            out.append(name)
    return out


def review_reasons(error: str) -> list[str]:
    """Why a cell waits for review: the reasons its check gave, each once."""
    text = (error or "").strip()
    if text.startswith(REVIEW_PREFIX):
        text = text[len(REVIEW_PREFIX) :]
    text = text.split("; also lost: ", 1)[0]
    out: list[str] = []
    for segment in (s.strip() for s in text.split("; ")):
        why = segment.split(": ", 1)[1].strip() if ": " in segment else segment
        if why and why not in out:
            out.append(why)
    return out or ["the grader could not decide (no reason given)"]


QUIET = "your check returns quietly on it"


def escaped(error: str) -> list[str]:
    """The broken cases a student's own check let through (notebook 3's tests of a check: a part
    `catches <case>` whose message is "your check returns quietly on it", checks/tests.py), each once."""
    out: list[str] = []
    pending: list[str] = []
    for segment in (s.strip() for s in MORE_LIKE_IT.sub("", error or "").split("; ")):
        name, sep, message = segment.partition(": ")
        if not sep:
            pending.append(segment)
            continue
        if message.startswith(QUIET):
            out += [n.removeprefix("catches ") for n in (*pending, name) if n.startswith("catches ")]
        pending = []
    return list(dict.fromkeys(out))


def cause_key(message: str) -> str:
    """Two messages are one misconception when they differ only in case or spacing. Numbers count: a
    check's message names the case it is about ("the middle position 3"); of what a student's code
    raised only its kind reaches it (checks/framework.py shown_error)."""
    return " ".join(message.lower().split())


# ---- the numbers ---------------------------------------------------------------------------------------


def pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def kelley(fractions: list[float], totals: list[float], share: float = UPPER_LOWER) -> float | None:
    """Kelley's upper-lower index: the mean fraction of the top `share` of the students by total minus
    that of the bottom `share` (at least one student each; None under four students)."""
    n = len(fractions)
    if n < 4:
        return None
    k = max(1, round(share * n))
    order = sorted(range(n), key=lambda i: totals[i])
    low, high = order[:k], order[-k:]
    return sum(fractions[i] for i in high) / k - sum(fractions[i] for i in low) / k


@dataclass
class Item:
    notebook: str
    grade_id: str
    kind: str  # "hidden test", "written answer", "check" (a visible check cell), "test"
    max_score: float
    fractions: list[float] = field(default_factory=list)
    difficulty: float | None = None
    item_rest: float | None = None
    upper_lower: float | None = None
    waiting_review: int = 0
    to_grade: int = 0
    flags: list[str] = field(default_factory=list)


@dataclass
class Group:
    notebook: str
    grade_id: str
    cause: str
    students: list[str] = field(default_factory=list)  # ids
    example: str = ""


@dataclass
class Insights:
    step: str
    students: list[str]
    shown: dict[str, str]  # id -> what the page shows (a code, or the id with --names)
    totals: dict[str, float]
    items: list[Item]
    groups: list[Group]
    review: list[dict[str, Any]]  # {notebook, grade_id, student, reasons}
    escapes: dict[tuple[str, str, str], list[str]]  # (notebook, grade id, broken case) -> the students' ids
    notebooks: dict[str, list[dict[str, Any]]]  # notebook -> one row per student


def _kind(cell_kind: str, grade_id: str, hidden: set[str] | None) -> str:
    if cell_kind == "manual":
        return "written answer"
    if hidden is None:
        return "test"
    return "hidden test" if grade_id in hidden else "check"


def id_pattern(students: list[str]) -> re.Pattern[str] | None:
    """Any of the class's ids as a word of its own (case aside), longest first; None: no id to look for."""
    ids = sorted((s for s in students if len(s) >= 2), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, ids)) + r")(?!\w)", re.IGNORECASE) if ids else None


def anonymised(text: str, ids: re.Pattern[str] | None) -> str:
    """A reason with every student id of the class taken out (id_pattern), clipped."""
    return clip(ids.sub("[student]", text) if ids is not None else text, EXAMPLE_CHARS)


def analyse(
    step_name: str, students: list[StudentResult], shown: dict[str, str], hidden: set[str] | None = None
) -> Insights:
    """The report's numbers from the store's records; `hidden`: the step's hidden tests' grade ids."""
    ids = [s.student for s in students]
    any_id = id_pattern(ids)
    points: dict[str, dict[tuple[str, str], float]] = {}
    items: dict[tuple[str, str], Item] = {}
    groups: dict[tuple[str, str, str], Group] = {}
    review: list[dict[str, Any]] = []
    escapes: dict[tuple[str, str, str], list[str]] = {}
    per_notebook: dict[str, list[dict[str, Any]]] = {}
    for s in students:
        mine = points.setdefault(s.student, {})
        term = s.term or {}
        grace = float(term.get("grace_seconds") or 0.0)
        own_late = term.get("notebook_seconds_late") or {}
        times = (s.times or {}).get("notebooks") or {}
        for name, result in sorted(s.notebooks.items()):
            nb_totals = (s.totals.get("notebooks") or {}).get(name, {})
            when = times.get(name)
            stamp = _epoch(term.get("timestamp")) if when is None else float(when)
            late = float(own_late.get(name, term.get("seconds_late") or 0.0) or 0.0)
            per_notebook.setdefault(name, []).append(
                {
                    "student": s.student,
                    "score": sum(c.score or 0.0 for c in result.cells),
                    "max_score": sum(c.max_score for c in result.cells),
                    "time": stamp,
                    "late": late > grace,
                    "seconds_late": late,
                    "extension": term.get("extension") or "",
                    "to_grade": len(
                        nb_totals.get(
                            "to_grade", [c.grade_id for c in result.cells if c.kind == "manual" and c.score is None]
                        )
                    ),
                    "graded": result.graded,
                }
            )
            for cell in result.cells:
                key = (name, cell.grade_id)
                item = items.get(key)
                if item is None:
                    item = items[key] = Item(
                        name, cell.grade_id, _kind(cell.kind, cell.grade_id, hidden), cell.max_score
                    )
                if cell.score is None:
                    if cell.kind == "review":
                        item.waiting_review += 1
                        review.append(
                            {
                                "notebook": name,
                                "grade_id": cell.grade_id,
                                "student": s.student,
                                "reasons": review_reasons(cell.error),
                            }
                        )
                    else:
                        item.to_grade += 1
                    continue
                mine[key] = cell.score
                if not result.graded:  # missing, unreadable or failed: its reason is no misconception
                    continue
                if cell.score < cell.max_score and cell.error and not cell.error.startswith(SCORED_AFTER_REVIEW):
                    for message in causes(cell.error):
                        group = groups.get((name, cell.grade_id, cause_key(message)))
                        if group is None:
                            group = groups[(name, cell.grade_id, cause_key(message))] = Group(
                                name, cell.grade_id, message, example=anonymised(cell.error, any_id)
                            )
                        if s.student not in group.students:
                            group.students.append(s.student)
                    for case in escaped(cell.error):
                        escapes.setdefault((name, cell.grade_id, case), []).append(s.student)
    totals = {sid: sum(p.values()) for sid, p in points.items()}
    for key, item in items.items():
        answered = [sid for sid in ids if key in points.get(sid, {})]
        if not answered or item.max_score <= 0:
            continue
        item.fractions = [points[sid][key] / item.max_score for sid in answered]
        item.difficulty = sum(item.fractions) / len(item.fractions)
        rest = [totals[sid] - points[sid][key] for sid in answered]
        item.item_rest = pearson(item.fractions, rest)
        item.upper_lower = kelley(item.fractions, [totals[sid] for sid in answered])
        if len(item.fractions) < MIN_FOR_FLAGS:
            continue
        if item.difficulty > EASY:
            item.flags.append("too easy")
        if item.difficulty < HARD:
            item.flags.append("too hard")
        if (item.item_rest is not None and item.item_rest < 0) or (
            item.upper_lower is not None and item.upper_lower < 0
        ):
            item.flags.append("negative discrimination")
    ordered_groups = sorted(groups.values(), key=lambda g: (-len(g.students), g.notebook, g.grade_id, g.cause))
    # by notebook, each in the order of its cells (the first student's notebook's: a stable sort)
    return Insights(
        step_name,
        ids,
        shown,
        totals,
        sorted(items.values(), key=lambda i: i.notebook),
        ordered_groups,
        review,
        dict(sorted(escapes.items(), key=lambda kv: (-len(kv[1]), kv[0]))),
        per_notebook,
    )


def _epoch(iso: Any) -> float | None:
    if not iso:
        return None
    try:
        stamp = datetime.fromisoformat(str(iso))
    except ValueError:
        return None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()


# ---- the page ------------------------------------------------------------------------------------------

STYLE = """
body { font-family: sans-serif; font-size: 14px; margin: 1.5em; color: #222; max-width: 80em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.flag { color: #a00; font-weight: bold; }
.note { background: #fff6d6; border: 1px solid #e0c96b; padding: 0.5em 0.8em; }
.example { font-family: monospace; white-space: pre-wrap; font-size: 12px; }
svg { display: block; }
"""
STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
PAGE_CSP = (
    f"default-src 'none'; style-src 'sha256-{STYLE_HASH}'; script-src 'none'; img-src 'none'; "
    "connect-src 'none'; form-action 'none'; base-uri 'none'"
)
BINS = 10


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def histogram_svg(
    values: list[float], low: float, high: float, bins: int = BINS, width: int = 420, height: int = 120, label: str = ""
) -> str:
    """Bars of how many of `values` fall in each of `bins` equal ranges of [low, high], inline SVG."""
    counts = [0] * bins
    span = (high - low) or 1.0
    for v in values:
        counts[min(bins - 1, max(0, int((v - low) / span * bins)))] += 1
    top = max(counts) or 1
    bar = width / bins
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 18}" role="img" '
        f'aria-label="{esc(label)}"><title>{esc(label)}</title>'
    ]
    for i, c in enumerate(counts):
        h = height * c / top
        parts.append(
            f'<rect x="{i * bar + 1:.1f}" y="{height - h:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
            f'fill="#4a7ab5"><title>{low + i * span / bins:g} to {low + (i + 1) * span / bins:g}: {c}'
            f"</title></rect>"
        )
    parts.append(
        f'<text x="0" y="{height + 14}" font-size="11">{low:g}</text>'
        f'<text x="{width}" y="{height + 14}" font-size="11" text-anchor="end">{high:g}</text></svg>'
    )
    return "".join(parts)


def scatter_svg(rows: list[dict[str, Any]], width: int = 520, height: int = 160) -> str:
    """Each student's score (up) against their submission time (across); late ones in red."""
    timed = [r for r in rows if r["time"] is not None]
    if not timed:
        return "<p>No submission times recorded for this notebook.</p>"
    t0, t1 = min(r["time"] for r in timed), max(r["time"] for r in timed)
    top = max((r["max_score"] for r in timed), default=1.0) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 18}" role="img" '
        f'aria-label="score against submission time"><title>score against submission time</title>'
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="none" stroke="#ccc"/>'
    ]
    for r in timed:
        x = 6 + (width - 12) * ((r["time"] - t0) / (t1 - t0) if t1 > t0 else 0.5)
        y = height - 6 - (height - 12) * r["score"] / top
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{"#c33" if r["late"] else "#4a7ab5"}"/>')
    first = datetime.fromtimestamp(t0, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
    last = datetime.fromtimestamp(t1, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
    parts.append(
        f'<text x="0" y="{height + 14}" font-size="11">{first} UTC</text>'
        f'<text x="{width}" y="{height + 14}" font-size="11" text-anchor="end">{last} UTC</text></svg>'
    )
    return "".join(parts)


def _who(report: Insights, ids: list[str], limit: int = 40) -> str:
    names = sorted(report.shown[s] for s in ids)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return esc(", ".join(names[:limit]) + more)


def page(report: Insights, named: bool) -> str:
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{PAGE_CSP}\">",
        "<meta name='referrer' content='no-referrer'>",
        f"<title>What the class got wrong: {esc(report.step)}</title><style>{STYLE}</style></head><body>",
        f"<h1>What the class got wrong: {esc(report.step)}</h1>",
        f"<p>{len(report.students)} students, "
        + (
            "shown by their ids (<code>--names</code>)."
            if named
            else "shown by a code (the same code every time; <code>--names</code> shows their ids)."
        )
        + "</p>",
    ]
    top = max(report.totals.values(), default=0.0)
    parts.append(
        "<section id='totals'><h2>Totals</h2><p>Points scored on every cell with a score (without late "
        "penalties), how many students in each tenth of the range.</p>"
        + histogram_svg(list(report.totals.values()), 0.0, max(top, 1.0), label="histogram of totals")
        + "</section>"
    )
    parts.append(
        "<section id='items'><h2>Items</h2><p>Difficulty: the mean fraction of the points scored (1: "
        "everyone full marks). Item-rest r: the correlation of the item's fraction with the points on "
        "every other cell; upper-lower: Kelley's index, top 27 % minus bottom 27 %. An item whose "
        "discrimination is negative was done better by the students who did worse overall: read its "
        f"question and its check again. Flags need at least {MIN_FOR_FLAGS} scores. Cells waiting for a "
        "grader count in their own columns, not in the numbers.</p><table><tr><th>notebook</th>"
        "<th>grade id</th><th>kind</th><th>points</th><th>scored</th><th>difficulty</th><th>item-rest r</th><th>upper-lower</th><th>waiting for "
        "review</th><th>written, to grade</th><th>flags</th><th>fractions</th></tr>"
    )
    for item in report.items:
        parts.append(
            f"<tr><td>{esc(item.notebook)}</td><td>{esc(item.grade_id)}</td><td>{esc(item.kind)}</td>"
            f"<td class='n'>{item.max_score:g}</td><td class='n'>{len(item.fractions)}</td>"
            f"<td class='n'>{_num(item.difficulty)}</td><td class='n'>{_num(item.item_rest)}</td>"
            f"<td class='n'>{_num(item.upper_lower)}</td><td class='n'>{item.waiting_review}</td>"
            f"<td class='n'>{item.to_grade}</td><td class='flag'>{esc(', '.join(item.flags))}</td>"
            f"<td>{histogram_svg(item.fractions, 0.0, 1.0, bins=5, width=100, height=24, label='fractions') if item.fractions else ''}</td></tr>"
        )
    parts.append("</table></section>")
    n_review = len(report.review)
    parts.append(f"<section id='review'><h2>Waiting for a person's review ({n_review})</h2>")
    if report.review:
        by_question: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in report.review:
            by_question.setdefault((r["notebook"], r["grade_id"]), []).append(r)
        parts.append(
            "<p>The grader could not decide these cells and asked for help: grade them in the formgrader. "
            "</p><table><tr><th>notebook</th><th>grade id</th><th>cells</th><th>reasons</th><th>students</th></tr>"
        )
        for (nb, gid), rows in sorted(by_question.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            reasons: dict[str, int] = {}
            for r in rows:
                for why in r["reasons"]:
                    reasons[why] = reasons.get(why, 0) + 1
            listed = "<br>".join(
                f"{esc(clip(why, EXAMPLE_CHARS))} ({n})" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])
            )
            parts.append(
                f"<tr><td>{esc(nb)}</td><td>{esc(gid)}</td><td class='n'>{len(rows)}</td><td>{listed}</td>"
                f"<td>{_who(report, [r['student'] for r in rows])}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>No cell waits for review.</p>")
    parts.append("</section>")
    parts.append(
        "<section id='misconceptions'><h2>Misconceptions</h2><p class='note'>Grouped from the judges' "
        "reasons: groups are only as true as the judges' reasons. Where a check names a cause the answer does "
        "not have, its students are in the wrong group here; read the example and an answer or two before "
        "teaching to a group.</p><table><tr><th>students</th><th>notebook</th><th>grade id</th>"
        "<th>reason</th><th>who</th><th>one example (ids taken out)</th></tr>"
    )
    for g in report.groups:
        parts.append(
            f"<tr><td class='n'>{len(g.students)}</td><td>{esc(g.notebook)}</td><td>{esc(g.grade_id)}</td>"
            f"<td>{esc(clip(g.cause, EXAMPLE_CHARS))}</td><td>{_who(report, g.students)}</td>"
            f"<td class='example'>{esc(g.example)}</td></tr>"
        )
    parts.append("</table><h3>Broken cases that escaped the students' own checks</h3>")
    if report.escapes:
        parts.append(
            "<p>Notebook 3's tests of a check: each broken case a student's check returned quietly on."
            "</p><table><tr><th>students</th><th>notebook</th><th>grade id</th><th>broken case</th>"
            "<th>who</th></tr>"
        )
        for (nb, gid, case), ids in report.escapes.items():
            parts.append(
                f"<tr><td class='n'>{len(ids)}</td><td>{esc(nb)}</td><td>{esc(gid)}</td>"
                f"<td>{esc(clip(case, EXAMPLE_CHARS))}</td><td>{_who(report, ids)}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>No broken case escaped a student's check.</p>")
    parts.append("</section><section id='notebooks'><h2>Per notebook</h2>")
    for name, rows in sorted(report.notebooks.items()):
        late = sum(r["late"] for r in rows)
        extended = sum(bool(r["extension"]) for r in rows)
        left = sum(r["to_grade"] for r in rows)
        parts.append(
            f"<h3>{esc(name)}</h3><p>{len(rows)} students; {late} late, {extended} with an extension; "
            f"{left} written answer{'s' * (left != 1)} left to grade.</p>"
            + scatter_svg(rows)
            + "<table><tr><th>student</th><th>score</th><th>of</th><th>submitted (UTC)</th><th>late</th>"
            "<th>extension</th><th>written, to grade</th></tr>"
        )
        for r in sorted(rows, key=lambda r: report.shown[r["student"]]):
            when = (
                ""
                if r["time"] is None
                else datetime.fromtimestamp(r["time"], tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
            )
            parts.append(
                f"<tr><td>{esc(report.shown[r['student']])}</td><td class='n'>{r['score']:g}</td>"
                f"<td class='n'>{r['max_score']:g}</td><td>{esc(when)}</td>"
                f"<td>{'late' if r['late'] else ''}</td><td>{esc(r['extension'])}</td>"
                f"<td class='n'>{r['to_grade']}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</section></body></html>")
    return "".join(parts)


# ---- the files -----------------------------------------------------------------------------------------


def csv_files(report: Insights, folder: Path) -> list[Path]:
    name = report.step
    show = report.shown
    items = [
        {
            "notebook": i.notebook,
            "grade_id": i.grade_id,
            "kind": i.kind,
            "max_score": i.max_score,
            "scored": len(i.fractions),
            "difficulty": _round(i.difficulty),
            "item_rest": _round(i.item_rest),
            "upper_lower": _round(i.upper_lower),
            "waiting_review": i.waiting_review,
            "to_grade": i.to_grade,
            "flags": ", ".join(i.flags),
        }
        for i in report.items
    ]
    review = [
        {
            "notebook": r["notebook"],
            "grade_id": r["grade_id"],
            "student": show[r["student"]],
            "reasons": "; ".join(r["reasons"]),
        }
        for r in report.review
    ]
    groups = [
        {
            "notebook": g.notebook,
            "grade_id": g.grade_id,
            "reason": g.cause,
            "students": len(g.students),
            "who": " ".join(sorted(show[s] for s in g.students)),
            "example": g.example,
        }
        for g in report.groups
    ]
    escapes = [
        {
            "notebook": nb,
            "grade_id": gid,
            "broken_case": case,
            "students": len(ids),
            "who": " ".join(sorted(show[s] for s in ids)),
        }
        for (nb, gid, case), ids in report.escapes.items()
    ]
    notebooks = [
        {
            "notebook": nb,
            "student": show[r["student"]],
            "score": r["score"],
            "max_score": r["max_score"],
            "submitted": ""
            if r["time"] is None
            else datetime.fromtimestamp(r["time"], tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "late": int(r["late"]),
            "seconds_late": r["seconds_late"],
            "extension": r["extension"],
            "to_grade": r["to_grade"],
        }
        for nb, rows in sorted(report.notebooks.items())
        for r in rows
    ]
    out = []
    for suffix, rows in (
        ("items", items),
        ("review", review),
        ("misconceptions", groups),
        ("escaped", escapes),
        ("notebooks", notebooks),
    ):
        columns = (
            list(rows[0])
            if rows
            else {
                "items": ["notebook", "grade_id"],
                "review": ["notebook", "grade_id", "student", "reasons"],
                "misconceptions": ["notebook", "grade_id", "reason", "students"],
                "escaped": ["notebook", "grade_id", "broken_case", "students"],
                "notebooks": ["notebook", "student"],
            }[suffix]
        )
        out.append(write_csv(folder / f"insights-{name}-{suffix}.csv", columns, rows, strict=True))
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def student_codes(folder: Path, step_name: str, students: list[str], named: bool) -> dict[str, str]:
    """id -> what the page shows: the id itself with `named`, else the student's code (pdfs.anonymous_code,
    keyed by a secret made once in `folder`)."""
    if named:
        return {s: s for s in students}
    from .pdfs import anonymous_codes

    return {sid: f"S-{code}" for sid, code in anonymous_codes(folder, step_name, students).items()}


def build_report(
    step: Any,
    store: Store,
    named: bool = False,
    folder: Path | None = None,
    students: list[StudentResult] | None = None,
    hidden: set[str] | None = None,
) -> tuple[Insights, list[Path]]:
    """The page and the CSVs of `step` from `store` (its `load`, unless `students` are given: the
    store's records already loaded) in `folder` (default: <grading home>/insights/)."""
    folder = folder or store.home / "insights"
    loaded = store.load(step) if students is None else students
    if hidden is None:
        finder = getattr(step, "hidden_grade_ids", None)
        hidden = finder() if callable(finder) else None
    shown = student_codes(folder, step.name, [s.student for s in loaded], named)
    report = analyse(step.name, loaded, shown, hidden)
    html_path = folder / f"{step.name}.html"
    atomic_write(html_path, page(report, named))
    return report, [html_path, *csv_files(report, folder)]


def make_insights(step: Any, store: Store | None = None, named: bool = False, say: Any = print) -> list[Path]:
    """`make insights`: the page and CSVs of the store's class (the course's, or another grader home's)."""
    store = store or Store.current()
    report, paths = build_report(step, store, named)
    say(
        f"insights: {len(report.students)} students, {len(report.items)} items, {len(report.groups)} "
        f"misconception groups, {len(report.review)} cells waiting for review"
    )
    from ..course import ROOT

    for path in paths:
        say(f"  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return paths
