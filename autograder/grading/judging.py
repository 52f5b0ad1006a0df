"""Turn an executed notebook into scores: hidden checks judged here, outside the student's kernel.

For every grade cell of the executed notebook:
  * a test cell that calls `hidden(...)`: the plain data its probe gathered from the kernel while
    the cell ran (kept by the probe server) is judged by the check's judge; the cell's outputs are
    replaced by the verdict, and
    a score below full marks is written as the cell's result, which is how nbgrader records
    partial credit;
  * any other test cell: nbgrader's own rule (an error or stderr output scores zero), after
    harmless warnings are stripped from stderr;
  * a manually graded answer: unscored (needs a grader), or zero when left unchanged.

A hidden test whose check could not decide a part (Verdict.needs_review: code it cannot follow)
takes nothing for it: the cell is unscored, kind "review", its `error` saying why, and its output
tells the TA (the formgrader shows the autograded notebook) and the student (the feedback) that a
person gives its score. The store then leaves the cell's auto_score empty and flags it
`needs_manual_grade` in nbgrader's gradebook, as a written answer is: the formgrader lists it among
the cells to grade by hand, and the score a TA gives there is the cell's score everywhere.

Such a cell also gets, for the TA alone, what the code computes as far as the grader can tell without
running it (`for_the_grader`, in the cell's metadata under GRADER_VIEW): every exec/eval/compile call in
the cells above it with the text it runs, decoded statically (autograder/decoding.py), and the values the
answer returned on the check's cases, when its probe kept them. The formgrader's page shows them
(autograder/templates/course_formgrade); the feedback never does (publish/feedback.py drops the key), and
neither the score nor the cell's `error` changes. Only the grader writes that key: a submission's own is
removed from every cell first.
"""

from __future__ import annotations

import json
import re
import textwrap
import nbformat
from nbgrader import utils as nbutils

from ..checks.framework import gives_hidden_inputs, judge_data, shown_cell_error, unpack
from ..decoding import GRADER_VIEW, decode_runs
from ..nbgrader_cmd import HARMLESS_STDERR  # also nbgrader's IgnorePattern (nbgrader_config.py)
from ..records.model import CellResult
from ..runtime.plain import from_plain


def _error_text(cell) -> str:
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:  # the last one: the grader's own (time limit, dead kernel) comes after the student's
        return f"{errors[-1].get('ename')}: {errors[-1].get('evalue')}".strip(": ")
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            lines = out.get("text", "").strip().splitlines()
            return "wrote to stderr" + (f": {lines[-1][:200]}" if lines else "")
    return ""


def _hidden_error_text(cell) -> str:
    """What a hidden test cell that produced no result shows of why (framework.shown_cell_error): its
    last error's kind, with the grader's fixed words for the grader's own; never the text."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        return shown_cell_error(errors[-1].get("ename"))
    if any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", [])):
        return "wrote to stderr"
    return ""


def _strip_harmless_stderr(cell) -> None:
    cell.outputs = [
        o
        for o in cell.get("outputs", [])
        if not (
            o.get("output_type") == "stream"
            and o.get("name") == "stderr"
            and re.search(HARMLESS_STDERR, o.get("text", ""))
        )
    ]


# What feedback shows instead of a path of the grading machine's (named, so that a student reads it as a
# place, not as a path of theirs): the folder the notebook ran in (its working folder, the grading's scratch
# folder made for this one notebook) and the temporary folders (the worker's TMPDIR, and the kernel's, which
# the sandbox sets to /tmp).
WORK_FOLDER = "<work>"
TEMPORARY_FOLDER = "<tmp>"
KERNEL_TMP = "/tmp"  # the kernel's TMPDIR in the sandbox (autograder/kernel/sandbox.py)


def _machine_paths(scratch=None) -> list[tuple[str, str]]:
    """(prefix, what students see instead): the course folder, the Python installation, the grading's
    scratch folder `scratch` (its `work` folder, where the kernel runs: WORK_FOLDER; the rest: the folder
    named as a temporary one) and the temporary folders (TEMPORARY_FOLDER). Longest first: a path inside
    another is replaced as the inner one."""
    import sys
    import tempfile
    from ..course import ROOT

    pairs = [(str(ROOT) + "/", "")]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        pairs.append((prefix.rstrip("/") + "/", "<python>/"))
    if scratch is not None:
        pairs.append((str(scratch).rstrip("/") + "/work", WORK_FOLDER))
        pairs.append((str(scratch).rstrip("/"), TEMPORARY_FOLDER))
    for tmp in {tempfile.gettempdir(), KERNEL_TMP}:
        if tmp.rstrip("/"):
            pairs.append((tmp.rstrip("/"), TEMPORARY_FOLDER))
    return sorted(pairs, key=lambda p: -len(p[0]))


def _path_pattern(pairs) -> tuple:
    """One regex for every prefix (a folder without its slash matches only where its name ends: at a `/`,
    or a character no file name of it goes on with), and its replacements."""
    parts = [re.escape(prefix) + ("" if prefix.endswith("/") else r"(?![\w.\-~+@])") for prefix, _ in pairs]
    return re.compile("|".join(f"({p})" for p in parts)), [instead for _, instead in pairs]


def hide_machine_paths(nb, scratch=None) -> None:
    """Tracebacks and printed text of the grader's kernel name files by absolute paths (the course folder,
    the Python installation, the scratch folder the notebook ran in, the temporary folders): feedback
    shows them relative or named instead (the course folder's paths relative, as a student's own machine
    would; `<python>/...`, WORK_FOLDER, TEMPORARY_FOLDER)."""
    pattern, instead = _path_pattern(_machine_paths(scratch))

    def clean(text):
        if isinstance(text, list):
            text = "".join(text)
        return pattern.sub(lambda m: instead[m.lastindex - 1], text)

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = [clean(line) for line in out.get("traceback", [])]
                out["evalue"] = clean(out.get("evalue", ""))
            elif out.get("output_type") == "stream":
                out["text"] = clean(out.get("text", ""))
            elif "text/plain" in out.get("data", {}):
                out["data"]["text/plain"] = clean(out["data"]["text/plain"])


VALUES_SHOWN = 12  # the answer's values on the check's cases, at most this many ...
VALUE_CHARS = 600  # ... each in at most this many characters


def _cell_label(cell, n: int) -> str:
    count = cell.get("execution_count")
    return f"In [{count}]" if isinstance(count, int) and not isinstance(count, bool) else f"cell {n + 1}"


def _shown_value(value) -> str:
    import numpy as np

    try:
        array = np.asarray(value)
        if array.dtype.kind in "biufc":
            text = f"shape {tuple(array.shape)}, {array.dtype}: " + np.array2string(
                array, threshold=24, edgeitems=3, precision=5, max_line_width=96
            )
        else:
            text = repr(value)
    except Exception:  # a value numpy cannot take as an array: its text
        text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def case_values(check, data) -> list[dict]:
    """What the answer returned on the check's cases, as its probe kept them: every list of the probe's
    results ({'value': ...} or {'error': ...}) in its data, each case named by the check's own label where
    it has one (CASES). Nothing when the probe kept no such list: nothing is made up."""
    try:
        data = from_plain(data)
    except Exception:  # data the judge could not read either: nothing to show
        return []
    if not isinstance(data, dict):
        return []
    labels = [c[0] for c in getattr(check, "CASES", []) if isinstance(c, (tuple, list)) and c and isinstance(c[0], str)]
    shown = []
    for key, entries in data.items():
        if key == "source" or not isinstance(entries, list):
            continue
        if not entries or not all(isinstance(e, dict) and ("value" in e or "error" in e) for e in entries):
            continue
        for n, entry in enumerate(entries):
            if key in ("cases", "twins") and len(labels) == len(entries):  # a twin: the case's sizes, new inputs
                name = labels[n] + (", this submission's own inputs" if key == "twins" else "")
            else:
                name = f"{key} {n + 1}"
            value, why = unpack(entry)
            shown.append({"case": name, "value": f"no value: {why}" if why else _shown_value(value)})
            if len(shown) >= VALUES_SHOWN:
                return shown
    return shown


def for_the_grader(above: list, check, data) -> dict:
    """A review cell's view for the TA: the exec'd texts decoded from the code cells `above` it, and the
    answer's values on the check's cases; {} when there is neither."""
    code = [
        (n, c) for n, c in enumerate(above) if c.get("cell_type") == "code" and "hidden(" not in c.get("source", "")
    ]
    sites = decode_runs([c.source for _, c in code], [_cell_label(c, n) for n, c in code])
    view = {}
    if sites:
        view["decoded"] = [s.as_dict() for s in sites]
    values = case_values(check, data)
    if values:
        view["values"] = values
    return view


def judge_notebook(nb, server, scratch=None) -> list[CellResult]:
    """The results of the notebook's grade cells; its outputs with the machine's paths hidden (`scratch`:
    the grading's scratch folder it ran in, hide_machine_paths); a test cell that ran after a hidden test
    gives its error's kind alone (`conceal_after_hidden_inputs`)."""
    hide_machine_paths(nb, scratch)
    for cell in nb.cells:
        cell.get("metadata", {}).pop(GRADER_VIEW, None)  # only the grader writes it
    first = first_hidden_inputs(nb)
    results = []
    for index, cell in enumerate(nb.cells):
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if not nbg.get("grade"):
            continue
        grade_id, points = nbg["grade_id"], float(nbg.get("points", 0))
        if nbg.get("solution"):
            unchanged = nbg.get("checksum") and nbg["checksum"] == nbutils.compute_checksum(cell)
            results.append(
                CellResult(
                    grade_id, 0.0 if unchanged else None, points, "no answer given" if unchanged else "", "manual"
                )
            )
            continue
        if cell.cell_type != "code":
            continue
        _strip_harmless_stderr(cell)
        if judged_by_a_check(cell, server.checks):
            results.append(_judge_hidden(cell, grade_id, points, server, above=nb.cells[:index]))
        else:
            score, _ = nbutils.determine_grade(cell)
            # a check-your-work cell (0 points) that fails still says why: students read it in feedback
            failed = score < points or any(o.get("output_type") == "error" for o in cell.get("outputs", []))
            error = _error_text(cell) if first is None or index < first else _hidden_error_text(cell)
            results.append(CellResult(grade_id, float(score), points, error if failed else ""))
    return results


# ---- what a notebook shows of the cells run after hidden inputs ------------------------------------------------------
# A hidden test gives the student's code inputs the student never sees. What the code keeps of them (a global it
# appends to, a file, a thread still running) can come out in any cell that runs later: in what it prints or
# draws, in its error's words, in whether it shows anything at all, in the execution count the kernel reports.
# No filter of that output can hold (the code chooses the encoding), so from the first hidden test cell on, what
# the graded notebook (the formgrader's view) and the feedback page hold of a code cell is what this names, and
# nothing else of the grader's run: the grader's fixed words (the same for every such cell) with the kind of
# the error the cell ended with, if it did (framework.shown_cell_error, as for a hidden test), the outputs
# the student handed in for it (their own, computed without hidden inputs; rebuilt field by field, at most
# `bounds` of them), and a hidden test's verdict, which the judge wrote. Scores are the run's, unchanged.
CONCEALED = (
    "The grader's output of this cell is not shown: the cell ran after a hidden test had given your code its inputs."
)
HANDED_IN = "Below: the output you handed in."
NONE_HANDED_IN = "You handed in no output for it."
TOO_LARGE = "The output you handed in is larger than the grader shows."
OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")


def judged_by_a_check(cell, checks) -> bool:
    """A hidden test cell whose outputs the judge writes (_judge_hidden): a grade cell of a check's grade id
    that calls `hidden(...)`."""
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    return bool(nbg.get("grade")) and nbg.get("grade_id") in checks and "hidden(" in cell.get("source", "")


def first_hidden_inputs(nb) -> int | None:
    """The index of the notebook's first cell that gives the student's code hidden inputs, None if none does."""
    return next((i for i, cell in enumerate(nb.cells) if gives_hidden_inputs(cell)), None)


def conceal_after_hidden_inputs(
    nb, checks, results: list[CellResult], handed_in: dict, bounds: tuple[int, int] = (0, 0)
) -> None:
    """After judge_notebook(nb) gave `results`: `handed_in`, cell id -> the outputs the submission holds for
    it; `bounds`, the bytes kept of them for a cell and for the notebook (0: no bound). A test cell scored by
    nbgrader's rule shows its score as a hidden test's does (the value anything scoring it by that rule reads),
    not what was handed in."""
    first = first_hidden_inputs(nb)
    if first is None:
        return
    scores = {r.grade_id: (r.score, r.max_score) for r in results}
    per_cell, room = bounds[0], bounds[1] or None  # None: no bound on the notebook's
    for cell in nb.cells[first:]:
        if cell.get("cell_type") != "code":
            continue
        cell["execution_count"] = None
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if judged_by_a_check(cell, checks):
            for out in cell.get("outputs", []):  # the judge's verdict (_judge_hidden): the grader's own words
                if "execution_count" in out:
                    out["execution_count"] = None
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        raised = f"When graded, it raised {shown_cell_error(errors[-1].get('ename'))}." if errors else ""
        if nbg.get("grade") and not nbg.get("solution") and nbg.get("grade_id") in scores:
            score, points = scores[nbg["grade_id"]]
            cell["outputs"] = [_note(raised)]
            if score is not None and score < points:
                cell["outputs"].append(nbformat.v4.new_output("execute_result", data={"text/plain": f"{score:g}"}))
            continue
        mine, handed, size = _handed_in(handed_in.get(cell.get("id")), per_cell)
        if room is not None:
            if size > room:
                mine, handed, size = [], TOO_LARGE, 0
            room -= size
        cell["outputs"] = [_note(raised, handed)] + mine


def _note(*more: str):
    return nbformat.v4.new_output(
        "stream", name="stdout", text="[" + " ".join([CONCEALED, *filter(None, more)]) + "]\n"
    )


def _handed_in(outputs, per_cell: int) -> tuple[list, str, int]:
    """(the outputs a submission holds for a cell, rebuilt from the fields nbformat names; the words for them;
    their size in bytes)."""
    kept = [out for out in (_output(o) for o in outputs) if out is not None] if isinstance(outputs, list) else []
    if not kept:
        return [], NONE_HANDED_IN, 0
    size = len(json.dumps(kept).encode("utf-8"))
    if per_cell and size > per_cell:
        return [], TOO_LARGE, 0
    return kept, HANDED_IN, size


def _text(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return None


def _output(out):
    """A submission's output, rebuilt from what nbformat names for its type (strings only), or None."""
    if not isinstance(out, dict) or out.get("output_type") not in OUTPUT_TYPES:
        return None
    kind = out["output_type"]
    if kind == "stream":
        text = _text(out.get("text"))
        name = out.get("name")
        return (
            nbformat.v4.new_output("stream", name=name, text=text)
            if text is not None and name in ("stdout", "stderr")
            else None
        )
    if kind == "error":
        ename, evalue = _text(out.get("ename")), _text(out.get("evalue"))
        traceback = out.get("traceback")
        if ename is None or evalue is None or not isinstance(traceback, list):
            return None
        return nbformat.v4.new_output(
            "error", ename=ename, evalue=evalue, traceback=[t for t in traceback if isinstance(t, str)]
        )
    data = out.get("data")
    if not isinstance(data, dict):
        return None
    kept = {k: _text(v) for k, v in data.items() if isinstance(k, str) and _text(v) is not None}
    if not kept:
        return None
    made = nbformat.v4.new_output(kind, data=kept)
    if kind == "execute_result":
        made["execution_count"] = None
    return made


def _judge_hidden(cell, grade_id, points, server, above=()) -> CellResult:
    """The probe ran in the grader while this cell ran (autograder/checks/probeserver.py): its data is there.
    above: the notebook's cells before this one (a cell sent to review: what the TA is shown of them)."""
    if grade_id in server.results:
        verdict = judge_data(server.checks[grade_id], server.results[grade_id], server)
        score = round(points * verdict.fraction, 2)
        report = verdict.report(points)
        error = verdict.failure_text()
        if verdict.needs_review:
            decided = score
            report += "\n\n" + "\n".join(
                textwrap.wrap(
                    f"For the grader: this cell waits for your score (the parts decided above give {decided:g} of "
                    f"{points:g}; give the whole cell's score, {points:g} if the parts marked ? are as asked).",
                    100,
                )
            )
            # the decided points as the cell's value too: anything that scores the cell by nbgrader's own rule
            # (determine_grade) gets the points decided, never full marks (the store leaves it empty)
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=report + "\n"),
                nbformat.v4.new_output(
                    "execute_result", data={"text/plain": f"{decided:g}"}, execution_count=cell.get("execution_count")
                ),
            ]
            try:
                view = for_the_grader(list(above), server.checks[grade_id], server.results[grade_id])
            except Exception:  # the TA's view is a help: a fault in it never costs a grading
                view = {}
            if view:
                cell.metadata[GRADER_VIEW] = view
            return CellResult(grade_id, None, points, verdict.review_text(), "review")
    else:
        score = 0.0
        # what the cell shows came from the student's code run on hidden inputs (or from the grader, which
        # a student's exception can imitate): its kind only (framework.shown_cell_error)
        why = _hidden_error_text(cell)
        if why:
            error = f"the hidden tests could not run: {why}"
        else:
            error = "the hidden tests produced no result"
        report = f"Hidden tests: 0 of {points:g} points.\n  ✗ {error}"
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=report + "\n")]
    if score < points:
        cell.outputs.append(
            nbformat.v4.new_output(
                "execute_result", data={"text/plain": f"{score:g}"}, execution_count=cell.get("execution_count")
            )
        )
    return CellResult(grade_id, score, points, error)
