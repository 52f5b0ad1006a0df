"""A student's totals, one definition for every place that shows them: the report table and
grades.json, the feedback HTML's summary, `make my-feedback`, the exports to an LMS.

Per notebook: points scored (autograded and written answers), the most it can give, the late
penalty (autograder/term.py), the written answers still waiting for a grader (`to_grade`) and the
hidden tests waiting for a person's review (`to_review`: a check could not decide them, grading/judging.py).
A cell that waits counts nothing until a grader gives its score, as nbgrader's gradebook counts it
(its auto_score is empty): the totals rise when it is graded. For the step:

  required    points of the required notebooks' cells,   out of required_max
  bonus       points of the bonus questions (grade ids the step declares so: its BONUS_PREFIX), out of bonus_max
  penalty     the late penalties of every notebook
  total       required + bonus - penalty                  (out of required_max: the bonus is extra)
"""

from __future__ import annotations

from typing import Any, Callable

from .model import CellResult, NotebookResult, StepLike


def notebook_totals(cells: list[CellResult], is_bonus: Callable[[str], bool], penalty: float = 0.0) -> dict[str, Any]:
    """A notebook's totals; `is_bonus`: whether a grade id is a bonus question (the step's declaration,
    Step.is_bonus)."""
    required = [c for c in cells if not is_bonus(c.grade_id)]
    bonus = [c for c in cells if is_bonus(c.grade_id)]
    score = sum(c.score or 0 for c in cells)
    return {
        "score": round(score, 6),
        "max_score": round(sum(c.max_score for c in cells), 6),
        "required": round(sum(c.score or 0 for c in required), 6),
        "required_max": round(sum(c.max_score for c in required), 6),
        "bonus": round(sum(c.score or 0 for c in bonus), 6),
        "bonus_max": round(sum(c.max_score for c in bonus), 6),
        "late_penalty": round(float(penalty or 0), 6),
        "final_score": round(score - float(penalty or 0), 6),
        "to_grade": [c.grade_id for c in cells if c.kind == "manual" and c.score is None],
        "to_review": [c.grade_id for c in cells if c.kind == "review" and c.score is None],
    }


def step_totals(notebooks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """notebook name -> notebook_totals(...) => the step's totals."""
    out = {
        key: round(sum(nb[key] for nb in notebooks.values()), 6)
        for key in ("required", "required_max", "bonus", "bonus_max")
    }
    out["late_penalty"] = round(sum(nb["late_penalty"] for nb in notebooks.values()), 6)
    out["total"] = round(out["required"] + out["bonus"] - out["late_penalty"], 6)
    out["to_grade"] = [f"{name}/{gid}" for name, nb in sorted(notebooks.items()) for gid in nb["to_grade"]]
    out["to_review"] = [f"{name}/{gid}" for name, nb in sorted(notebooks.items()) for gid in nb.get("to_review", [])]
    return out


def student_totals(
    notebooks: list[NotebookResult], is_bonus: Callable[[str], bool], penalties: dict[str, float] | None = None
) -> dict[str, Any]:
    """The one computation of a student's totals: {notebooks: {name: notebook_totals}, step: step_totals}
    from their notebooks' results (a grader's scores in them: store.load), bonus questions as the step
    declares them and the late penalty of each notebook (the term's record)."""
    penalties = penalties or {}
    per_notebook = {r.notebook: notebook_totals(r.cells, is_bonus, penalties.get(r.notebook, 0.0)) for r in notebooks}
    return {"notebooks": per_notebook, "step": step_totals(per_notebook)}


def from_results(
    results: list[NotebookResult], term: dict[str, dict[str, Any]], step: StepLike
) -> dict[str, dict[str, Any]]:
    """student -> student_totals, for results of several students, with the term records' penalties."""
    by_student: dict[str, list[NotebookResult]] = {}
    for result in results:
        by_student.setdefault(result.student, []).append(result)
    return {
        sid: student_totals(mine, step.is_bonus, term.get(sid, {}).get("penalties", {}))
        for sid, mine in by_student.items()
    }


def summary_lines(sid: str, totals: dict[str, Any], term: dict[str, Any] | None = None) -> list[str]:
    """The summary a student reads (make my-feedback, the top of the feedback HTML)."""
    from ..term import late_text

    term = term or {}
    step = totals["step"]
    lines = []
    own = term.get("notebook_seconds_late") or {}
    grace = float(term.get("grace_seconds") or 0)
    late = float(term.get("seconds_late") or 0)
    for name, nb in sorted(totals["notebooks"].items()):
        extra = []
        if nb["late_penalty"]:
            extra.append(
                f"late penalty -{nb['late_penalty']:g}"
                + (f", {late_text(own[name])} late" if own.get(name, 0) > 0 else "")
            )
        elif late > grace and name in own and own[name] <= grace:
            extra.append("on time: unchanged since a submission before the due date")
        if nb["to_grade"]:
            extra.append(f"{len(nb['to_grade'])} written answer{'s' * (len(nb['to_grade']) > 1)} still to be graded")
        if nb.get("to_review"):
            n = len(nb["to_review"])
            extra.append(f"{n} hidden test{'s' * (n > 1)} waiting for a person's review")
        lines.append(
            (
                f"{name:<28} {nb['final_score']:6.1f} / {nb['max_score']:<5g}"
                + (f"  ({'; '.join(extra)})" if extra else "")
            ).rstrip()
        )
    lines.append(
        f"{'step total':<28} {step['total']:6.1f} / {step['required_max']:<5g}"
        f"  (required {step['required']:g} / {step['required_max']:g}, bonus {step['bonus']:g} / "
        f"{step['bonus_max']:g}, "
        + (f"late penalty -{step['late_penalty']:g})" if step["late_penalty"] else "no late penalty)")
    )
    if term.get("timestamp"):
        when = (
            f"submitted {term['timestamp'][:19].replace('T', ' ')} UTC, due {term['due'][:19].replace('T', ' ')} UTC"
            if term.get("due")
            else f"submitted {term['timestamp'][:19].replace('T', ' ')} UTC"
        )
        if term.get("extension"):
            when += f" (with an extension of {term['extension']})"
        if late > grace:
            lines.append(when + f": {late_text(late)} late")
        elif late > 0:
            lines.append(when + f": {late_text(late)} after it, within the grace period of {late_text(grace)}: on time")
        else:
            lines.append(when + ": on time")
        if term.get("due") and term.get("policy"):
            lines.append(f"late work: {term['policy']}")
    if step["to_grade"]:
        lines.append("still to be graded by hand: " + ", ".join(step["to_grade"]) + " (the total rises when they are)")
    if step.get("to_review"):
        lines.append(
            "waiting for a person's review: "
            + ", ".join(step["to_review"])
            + " (the grader could not decide how your code computes there, so it took no points: "
            "a person will look at your code and give them; the total rises when they do)"
        )
    return lines
