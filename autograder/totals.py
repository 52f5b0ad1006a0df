"""A student's totals, one definition for every place that shows them: the report table and
grades.json, the feedback HTML's summary, `make my-feedback`, the exports to an LMS.

Per notebook: points scored (autograded and written answers), the most it can give, the late
penalty (autograder/term.py), the written answers still waiting for a grader (`to_grade`) and the
hidden tests waiting for a person's review (`to_review`: a check could not decide them, judging.py).
A cell that waits counts nothing until a grader gives its score, as nbgrader's gradebook counts it
(its auto_score is empty): the totals rise when it is graded. For the step:

  required    points of the required notebooks' cells,   out of required_max
  bonus       points of the bonus questions (grade ids the step declares so: its BONUS_PREFIX), out of bonus_max
  penalty     the late penalties of every notebook
  total       required + bonus - penalty                  (out of required_max: the bonus is extra)
"""
from __future__ import annotations

from typing import Callable

from .records.model import CellResult, NotebookResult


def notebook_totals(cells: list[CellResult], is_bonus: Callable[[str], bool], penalty: float = 0.0) -> dict:
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


def step_totals(notebooks: dict[str, dict]) -> dict:
    """notebook name -> notebook_totals(...) => the step's totals."""
    out = {key: round(sum(nb[key] for nb in notebooks.values()), 6)
           for key in ("required", "required_max", "bonus", "bonus_max")}
    out["late_penalty"] = round(sum(nb["late_penalty"] for nb in notebooks.values()), 6)
    out["total"] = round(out["required"] + out["bonus"] - out["late_penalty"], 6)
    out["to_grade"] = [f"{name}/{gid}" for name, nb in sorted(notebooks.items()) for gid in nb["to_grade"]]
    out["to_review"] = [f"{name}/{gid}" for name, nb in sorted(notebooks.items()) for gid in nb.get("to_review", [])]
    return out


def from_results(results: list[NotebookResult], term: dict[str, dict], step) -> dict[str, dict]:
    """student -> {notebooks: {name: notebook_totals}, step: step_totals} from graded results and
    term records (term.term_records), bonus questions as `step` declares them."""
    out: dict[str, dict] = {}
    for result in results:
        sid = result.student
        penalty = term.get(sid, {}).get("penalties", {}).get(result.notebook, 0.0)
        out.setdefault(sid, {"notebooks": {}})["notebooks"][result.notebook] = \
            notebook_totals(result.cells, step.is_bonus, penalty)
    for entry in out.values():
        entry["step"] = step_totals(entry["notebooks"])
    return out


def from_gradebook(gb, step: str, student: str | None = None) -> dict[str, dict]:
    """The same totals from nbgrader's gradebook alone (what `nbgrader export` sees); one student's only
    with `student`."""
    from nbgrader.api import Assignment, Student, SubmittedAssignment

    from .steps import find_step
    is_bonus = find_step(step).is_bonus
    out: dict[str, dict] = {}
    query = gb.db.query(SubmittedAssignment).join(Assignment).filter(Assignment.name == step)
    if student is not None:
        query = query.join(Student).filter(Student.id == student)
    rows = query.all()
    for submission in rows:
        notebooks = {}
        for nb in submission.notebooks:
            manual = {c.name for c in nb.notebook.solution_cells}
            # a written answer nobody has scored yet: nbgrader's `score` reads 0, `needs_manual_grade` says so;
            # so for a hidden test flagged for review (no auto_score: grade.flag_for_review)
            cells = [CellResult(grade_id=g.name, max_score=float(g.max_score),
                                score=None if g.needs_manual_grade and g.manual_score is None else float(g.score or 0),
                                kind="manual" if g.name in manual else
                                "review" if g.auto_score is None and (g.needs_manual_grade or g.manual_score is not None)
                                else "auto") for g in nb.grades]
            notebooks[nb.notebook.name] = notebook_totals(cells, is_bonus, nb.late_submission_penalty or 0.0)
        out[submission.student.id] = {"notebooks": notebooks, "step": step_totals(notebooks)}
    return out


def summary_lines(sid: str, totals: dict, term: dict | None = None) -> list[str]:
    """The summary a student reads (make my-feedback, the top of the feedback HTML)."""
    from .term import late_text
    term = term or {}
    step = totals["step"]
    lines = []
    own = term.get("notebook_seconds_late") or {}
    grace = float(term.get("grace_seconds") or 0)
    late = float(term.get("seconds_late") or 0)
    for name, nb in sorted(totals["notebooks"].items()):
        extra = []
        if nb["late_penalty"]:
            extra.append(f"late penalty -{nb['late_penalty']:g}"
                         + (f", {late_text(own[name])} late" if own.get(name, 0) > 0 else ""))
        elif late > grace and name in own and own[name] <= grace:
            extra.append("on time: unchanged since a submission before the due date")
        if nb["to_grade"]:
            extra.append(f"{len(nb['to_grade'])} written answer{'s' * (len(nb['to_grade']) > 1)} still to be graded")
        if nb.get("to_review"):
            n = len(nb["to_review"])
            extra.append(f"{n} hidden test{'s' * (n > 1)} waiting for a person's review")
        lines.append((f"{name:<28} {nb['final_score']:6.1f} / {nb['max_score']:<5g}"
                      + (f"  ({'; '.join(extra)})" if extra else "")).rstrip())
    lines.append(f"{'step total':<28} {step['total']:6.1f} / {step['required_max']:<5g}"
                 f"  (required {step['required']:g} / {step['required_max']:g}, bonus {step['bonus']:g} / "
                 f"{step['bonus_max']:g}, "
                 + (f"late penalty -{step['late_penalty']:g})" if step["late_penalty"] else "no late penalty)"))
    if term.get("timestamp"):
        when = (f"submitted {term['timestamp'][:19].replace('T', ' ')} UTC, due {term['due'][:19].replace('T', ' ')} UTC"
                if term.get("due") else f"submitted {term['timestamp'][:19].replace('T', ' ')} UTC")
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
        lines.append("still to be graded by hand: " + ", ".join(step["to_grade"])
                     + " (the total rises when they are)")
    if step.get("to_review"):
        lines.append("waiting for a person's review: " + ", ".join(step["to_review"])
                     + " (the grader could not decide how your code computes there, so it took no points: "
                       "a person will look at your code and give them; the total rises when they do)")
    return lines
