"""The grade report: a table on screen, autograder/grades.csv and autograder/grades.json.

One record per student, notebook and grade cell: student, notebook, grade_id, score,
max_score, error (why the cell scored less than full marks), kind (auto or manual).
"""
from __future__ import annotations

import csv
import io
import json

from .course import ROOT, grader_home

FIELDS = ["student", "notebook", "grade_id", "score", "max_score", "error", "kind"]


def records(results: list[dict]) -> list[dict]:
    rows = []
    for result in sorted(results, key=lambda r: (r["student"], r["notebook"])):
        for cell in result["cells"]:
            rows.append({"student": result["student"], "notebook": result["notebook"],
                         "grade_id": cell["grade_id"], "score": cell["score"],
                         "max_score": cell["max_score"], "error": cell.get("error", ""),
                         "kind": cell.get("kind", "auto")})
    return rows


def table(results: list[dict]) -> str:
    """Per student: autograded points per notebook, the total, and what waits for a manual grade."""
    notebooks = sorted({r["notebook"] for r in results})
    students = sorted({r["student"] for r in results})
    by = {(r["student"], r["notebook"]): r for r in results}
    short = [n.split("-", 1)[0] for n in notebooks]
    header = f"{'student':<18}" + "".join(f"{s:>9}" for s in short) + f"{'auto':>12}{'manual':>12}"
    lines = [header, "-" * len(header)]
    for sid in students:
        cells, total, maximum, manual_max, manual_open = [], 0.0, 0.0, 0.0, 0
        for name in notebooks:
            result = by.get((sid, name))
            auto = [c for c in (result or {}).get("cells", []) if c.get("kind") != "manual"]
            got = sum(c["score"] or 0 for c in auto)
            cells.append(f"{got:>9.1f}" if result else f"{'-':>9}")
            total += got
            maximum += sum(c["max_score"] for c in auto)
            manual = [c for c in (result or {}).get("cells", []) if c.get("kind") == "manual"]
            manual_max += sum(c["max_score"] for c in manual)
            manual_open += sum(1 for c in manual if c["score"] is None)
        lines.append(f"{sid:<18}" + "".join(cells) + f"{total:>7.1f}/{maximum:<4.0f}"
                     + f"{manual_open:>4} open/{manual_max:<3.0f}")
    return "\n".join(lines)


def write_reports(results: list[dict], problems: list[dict], say=print) -> None:
    rows = records(results)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    home = grader_home()
    home.mkdir(parents=True, exist_ok=True)
    (home / "grades.csv").write_text(out.getvalue(), encoding="utf-8")
    (home / "grades.json").write_text(json.dumps({"grades": rows, "problems": problems,
                                                        "notes": {f"{r['student']}/{r['notebook']}": r.get("notes", [])
                                                                  for r in results if r.get("notes")}},
                                                       indent=1), encoding="utf-8")
    say("")
    say(table(results))
    if problems:
        say("\nfiles that could not be graded:")
        for p in problems:
            say(f"  {p['student']}: {p['file']}: {p['problem']}")
    shown = home.relative_to(ROOT) if home.is_relative_to(ROOT) else home
    say(f"\ngrades: {shown}/grades.csv and {shown}/grades.json ({len(rows)} records)")
