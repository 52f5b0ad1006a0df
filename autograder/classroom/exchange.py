"""The course on one machine, without JupyterHub: nbgrader's own exchange in a course folder.

nbgrader hands assignments out and in through its "exchange", a folder with an outbound part
(released notebooks), an inbound part (submissions) and a feedback part. Here it lives in the
course, in exchange/ (git-ignored; $NBGRADER_EXCHANGE points it at a shared folder instead), and
nbgrader_config.py tells every nbgrader command, JupyterLab's Assignments panel and the formgrader
where it is. The commands:

  student     make fetch            the released notebooks -> notebooks/<step>/; only notebooks you do
                                    not have yet are copied: your work is never overwritten
              make validate         runs each of your notebooks as the grader would and lists the tests
                                    that fail and the answers still missing
              make submit           hands notebooks/<step>/ in (STUDENT=<id>, default: your login name)
              make my-feedback      your feedback -> notebooks/<step>/feedback/<submission time>/
  instructor  make collect          each student's newest submission -> autograder/collected/
              make grade SUBMISSIONS=autograder/collected
              make return-feedback  the feedback of every graded submission -> the exchange

On one machine the course folder is also the instructor's: `make fetch` first puts the current
release/<step> into the exchange (nbgrader release_assignment) when the exchange is the course's
own folder and does not hold it yet.

On the course's JupyterHub with ngshare as its exchange (course.toml `[hub] exchange = "ngshare"`),
the instructor's commands are run with NBGRADER_EXCHANGE=ngshare: collect, return-feedback and the
release then go through the hub's ngshare service (autograder/classroom/ngshare.py), nbgrader's
exchange commands run from the hub's environment (where ngshare-exchange is) as the hub service
ngshare.GRADER. Students hand in through the Assignments tab there; the student commands here work
on a folder exchange only.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from ..course import COURSE_ID, ENGINE_ROOT, NOTEBOOKS, RELEASE, ROOT, grader_home, kernel_env
from ..errors import GraderError
from ..nbgrader_cmd import NbgraderError, run_nbgrader

COLLECTED = "collected"  # under the grading home: what `make collect` brings in
SECRET = "submission_secret.txt"  # written by `nbgrader submit`; feedback is found by it


class ExchangeError(GraderError, RuntimeError):
    """An exchange command failed; the message says what to do."""


def uses_ngshare() -> bool:
    """Whether the course's commands go through the hub's ngshare (NBGRADER_EXCHANGE=ngshare)."""
    from .ngshare import NGSHARE

    return os.environ.get("NBGRADER_EXCHANGE", "").strip() == NGSHARE


def exchange_root() -> Path:
    return Path(os.environ.get("NBGRADER_EXCHANGE") or ROOT / "exchange").resolve()


def ngshare_setup() -> tuple[str, Path, Path]:
    """(ngshare's URL, the hub's folder, the hub's Python) for the course's commands on ngshare."""
    from .ngshare import NgshareError, course_commands

    try:
        return course_commands()
    except NgshareError as err:
        raise ExchangeError(str(err)) from None


def ngshare_client():
    from .ngshare import Client, NgshareError

    address, hub_dir, _ = ngshare_setup()
    try:
        return Client(address, hub_dir)
    except NgshareError as err:
        raise ExchangeError(str(err)) from None


def is_course_exchange() -> bool:
    return exchange_root() == (ROOT / "exchange").resolve()


def _show(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def nbgrader(*args: str) -> str:
    """run_nbgrader (autograder/nbgrader_cmd.py), failing with ExchangeError and nbgrader's own
    error lines: what a student or instructor is shown."""
    try:
        if uses_ngshare():  # ngshare-exchange, from the hub's environment, as the grader's service
            from .ngshare import client_env

            address, hub_dir, python = ngshare_setup()
            return run_nbgrader(*args, python=str(python), env=client_env(hub_dir))
        return run_nbgrader(*args)
    except NbgraderError as err:
        raise ExchangeError(
            f"`nbgrader {err.command}` failed: " + ("\n  ".join(err.errors) or err.log[-2000:])
        ) from None


def _notebooks(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(folder).glob("*.ipynb"))}


# ---- instructor ----------------------------------------------------------------------------------


def outbound(step: str) -> Path:
    return exchange_root() / COURSE_ID / "outbound" / step


def publish(step: str) -> bool:
    """Put release/<step> into the exchange (nbgrader release_assignment) unless it holds it
    already; return whether it did."""
    if uses_ngshare():
        return _publish_ngshare(step)
    if outbound(step).is_dir() and _notebooks(outbound(step)) == _notebooks(RELEASE / step):
        return False
    if not _notebooks(RELEASE / step):
        raise ExchangeError(f"release/{step} holds no notebooks: run `make release` first")
    nbgrader("release_assignment", step, "--force")
    print(f"exchange: released {len(_notebooks(RELEASE / step))} notebooks of {step} to {_show(exchange_root())}/")
    return True


def _publish_ngshare(step: str) -> bool:
    """release/<step> into the hub's ngshare unless it holds it already (the course is made there
    first: hub.publish_ngshare)."""
    from .ngshare import md5

    client = ngshare_client()
    mine = {p.name: md5(p) for p in sorted((RELEASE / step).glob("*")) if p.is_file()}
    if not any(name.endswith(".ipynb") for name in mine):
        raise ExchangeError(f"release/{step} holds no notebooks: run `make release` first")
    held = client.released(step)
    if held is not None and all(held.get(name) == digest for name, digest in mine.items()):
        return False
    nbgrader("release_assignment", step, "--force", f"--course={COURSE_ID}")
    print(f"exchange: released {len(_notebooks(RELEASE / step))} notebooks of {step} to ngshare ({client.url})")
    return True


def collect(step: str) -> list[str]:
    """Each student's newest submission -> <grading home>/collected/<student>/<step>/."""
    dest = grader_home() / COLLECTED
    inbound = exchange_root() / COURSE_ID / "inbound"
    if not uses_ngshare() and not inbound.is_dir():
        raise ExchangeError(f"no exchange at {_show(exchange_root())}: nothing was released or submitted yet")
    extra = [f"--course={COURSE_ID}"] if uses_ngshare() else []
    log = nbgrader("collect", step, "--update", f"--CourseDirectory.submitted_directory={dest}", *extra)
    new = re.findall(r"(?:Collecting|Updating) submission: (\S+) " + re.escape(step), log)
    students = sorted(p.name for p in dest.glob("*") if (p / step).is_dir())
    if uses_ngshare():
        _ngshare_notebook_times(step, dest, students)
    else:
        submitted: dict[str, list[Path]] = {}  # inbound listed once: student -> their submissions of the step
        for folder in inbound.iterdir():
            parts = folder.name.split("+")
            if len(parts) >= 3 and parts[1] == step:
                submitted.setdefault(parts[0], []).append(folder)
        for sid in students:
            write_notebook_times(submitted.get(sid, []), dest / sid / step, sid, step)
    print(
        f"collect: {len(new)} new submissions ({', '.join(new) or 'none'}); {len(students)} students in {_show(dest)}/"
    )
    if students:
        print(f"collect: grade them with  make grade SUBMISSIONS={_show(dest)}")
    return new


def _ngshare_notebook_times(step: str, dest: Path, students: list[str]) -> None:
    """write_notebook_times for submissions in ngshare: each student with more than one submission has
    their earlier ones downloaded (into a temporary folder) to find since when each notebook is unchanged."""
    client = ngshare_client()
    for sid in students:
        stamps = client.submissions(step, sid)
        if len(stamps) <= 1:
            history = [dest / sid / step] if stamps else []
            write_notebook_times(history, dest / sid / step, sid, step)
            continue
        with tempfile.TemporaryDirectory(prefix="ngshare-") as tmp:
            folders = [client.download(step, sid, stamp, Path(tmp) / str(i)) for i, stamp in enumerate(stamps)]
            write_notebook_times(folders, dest / sid / step, sid, step)


NOTEBOOK_TIMES = "notebook_times.json"  # beside nbgrader's timestamp.txt in a collected submission


def write_notebook_times(submissions: list[Path], collected: Path, student: str, step: str) -> dict[str, str]:
    """Each notebook of a collected submission with its own time: the time of the earliest of the
    student's submissions since which it has not changed. nbgrader's exchange keeps one time stamp
    per submission; a student who fixes one notebook after the due date and submits again hands the
    other five in unchanged, and they keep the time of the on-time submission that held them."""
    import json
    from ..term import format_timestamp, parse_timestamp

    history = []  # (time, {notebook: digest}) of every submission of this student
    for folder in submissions:  # the exchange's `<student>+<step>+<time>+<random>` folders of this student
        stamp = folder / "timestamp.txt"
        when = parse_timestamp(stamp.read_text(encoding="utf-8", errors="replace")) if stamp.is_file() else None
        if folder.is_dir() and when is not None:
            history.append((when, _digests(folder)))
    mine = _digests(collected)
    if not history or not (collected / "timestamp.txt").is_file():
        return {}
    history.sort(key=lambda entry: entry[0])
    newest = parse_timestamp((collected / "timestamp.txt").read_text(encoding="utf-8", errors="replace"))
    history = [entry for entry in history if newest is None or entry[0] <= newest]
    times = {}
    for name, data in mine.items():
        when = newest
        for earlier, notebooks in reversed(history):
            if notebooks.get(name) != data:
                break
            when = earlier
        if when is not None:
            times[name] = format_timestamp(when)
    (collected / NOTEBOOK_TIMES).write_text(json.dumps(times, indent=1, sort_keys=True), encoding="utf-8")
    return times


def _digests(folder: Path) -> dict[str, str]:
    """notebook file name -> sha256 of its bytes (a student's many submissions are not held in memory)."""
    import hashlib

    out = {}
    for path in sorted(Path(folder).glob("*.ipynb")):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        out[path.name] = digest.hexdigest()
    return out


def return_feedback(step: str) -> list[str]:
    """Release the feedback HTML of every graded submission that came through the exchange (`make
    collect`'s or the formgrader's Collect's: handed_in). Pages older than a grader's latest scores are
    written again first (grade.refresh_stale_feedback).

    nbgrader finds a student's feedback by the secret their submission carried; the secret is
    copied next to the feedback only when the graded notebooks are exactly the collected ones,
    so feedback on an older submission is never handed out as if it were about a newer one; for a
    submission the formgrader collected into submitted/, where the grader grades it in place, when the
    feedback carries the submission's time. On ngshare, feedback goes back by the submission's time,
    which the feedback carries: that of `make collect`'s folder or of the formgrader's (handed_in)."""
    from ..names import UnusableId, assign_ids
    from ..grading.grade import refresh_stale_feedback
    from ..steps import find_step

    home = grader_home()
    returned = []
    folders = handed_in(home, step)
    if folders and (home / "feedback").is_dir():
        refresh_stale_feedback(find_step(step))  # a score given in the formgrader since: in the pages
    ids = assign_ids(p.parent.name for p in folders)  # the ids grading gave these folders
    for collected in folders:
        sid = ids[collected.parent.name]
        if isinstance(sid, UnusableId):
            print(f"return-feedback: {collected.parent.name!r}: not graded, no student id ({sid})")
            continue
        feedback = home / "feedback" / sid / step
        graded = home / "submitted" / sid / step
        if uses_ngshare():  # ngshare finds the submission by its time stamp, which the feedback carries
            if not (collected / "timestamp.txt").is_file():
                continue
        elif not (collected / SECRET).is_file():
            continue
        if collected.parent.parent != home / COLLECTED:  # the formgrader's Collect: graded where it was collected
            fresh = feedback.is_dir() and _stamp(feedback) is not None and _stamp(feedback) == _stamp(collected)
        else:
            fresh = feedback.is_dir() and _notebooks(collected) == {
                name: data for name, data in _notebooks(graded).items() if name in _notebooks(collected)
            }
        if not fresh:
            print(
                f"return-feedback: {sid}: the newest submission is not graded yet "
                f"(make grade SUBMISSIONS={_show(home / COLLECTED)})"
            )
            continue
        if uses_ngshare():
            if _stamp(feedback) is None or _stamp(feedback) != _stamp(collected):
                print(f"return-feedback: {sid}: the feedback is not about the newest submission: make grade")
                continue
            nbgrader("release_feedback", step, f"--student={sid}", f"--course={COURSE_ID}")
            returned.append(sid)
            continue
        shutil.copyfile(collected / SECRET, feedback / SECRET)
        nbgrader("release_feedback", step, f"--student={sid}")
        returned.append(sid)
    if returned:
        print(
            f"return-feedback: feedback for {len(returned)} students in the exchange: {', '.join(returned)}"
            " (each fetches it with `make my-feedback`)"
        )
    else:
        print("return-feedback: no graded submission from the exchange: `make collect`, then `make grade`")
    through = {sid for sid in ids.values() if not isinstance(sid, UnusableId)}
    elsewhere = sorted(p.parent.name for p in (home / "feedback").glob(f"*/{step}") if p.parent.name not in through)
    if elsewhere:
        from ..lms.roster import graded_lms_ids

        lms = graded_lms_ids(home, step)
        print(
            f"return-feedback: {len(elsewhere)} graded students did not hand in through the exchange, so their "
            f"feedback cannot go back through it; hand it back yourself from {_show(home / 'feedback')}/<student>/{step}/:"
        )
        for sid in elsewhere:
            where = lms.get(sid)
            print(f"    {sid}" + (f" ({where['lms']} user {where['user_id']}, {where['name']!r})" if where else ""))
    return returned


def handed_in(home: Path, step: str) -> list[Path]:
    """Each student's newest submission of `step` that came through the exchange: the folder `make
    collect` put it in (<home>/collected/<student>/<step>/) or the one nbgrader's formgrader put it in
    with its Collect button (<home>/submitted/<student>/<step>/, the folder the grader keeps what it
    grades in). On the folder exchange the formgrader's Collect copies nbgrader's submission secret
    along, which the grader never writes; on ngshare it writes the submission's time stamp as ngshare
    keeps it, and a folder there is the formgrader's when ngshare holds a submission of that student at
    that time (a folder graded from elsewhere, an LMS's download, is not). A student in both: the newer
    submission, `make collect`'s if they are the same."""
    folders = {p.parent.name: p for p in sorted((home / COLLECTED).glob(f"*/{step}"))}
    held = _ngshare_held(step) if uses_ngshare() else None
    for folder in sorted((home / "submitted").glob(f"*/{step}")):
        sid, mine = folder.parent.name, folders.get(folder.parent.name)
        through = (_stamp(folder) in held(sid)) if held else (folder / SECRET).is_file()
        if through and (mine is None or (_stamp(folder) or 0) > (_stamp(mine) or 0)):
            folders[sid] = folder
    return [folders[name] for name in sorted(folders)]


def _ngshare_held(step: str):
    """student -> the times (seconds) of their submissions of `step` in the hub's ngshare, asked once
    for each student."""
    from ..term import parse_timestamp

    client, known = ngshare_client(), {}

    def held(sid: str) -> set[float]:
        if sid not in known:
            known[sid] = {parse_timestamp(stamp) for stamp in client.submissions(step, sid)} - {None}
        return known[sid]

    return held


def _stamp(folder: Path) -> float | None:
    """The time of a submission's timestamp.txt (ngshare's own or as the grader writes it), or None."""
    from ..term import parse_timestamp

    stamp = folder / "timestamp.txt"
    return parse_timestamp(stamp.read_text(encoding="utf-8", errors="replace")) if stamp.is_file() else None


# ---- student -------------------------------------------------------------------------------------


def _folder_exchange_only(command: str) -> None:
    if uses_ngshare():
        raise ExchangeError(
            f"`make {command}` works on a folder exchange; on the hub's ngshare, use the Assignments tab in JupyterLab"
        )


def fetch(step: str) -> list[str]:
    """The released notebooks -> notebooks/<step>/, copying only those not there yet."""
    _folder_exchange_only("fetch")
    if is_course_exchange():
        publish(step)
    elif not outbound(step).is_dir():
        raise ExchangeError(f"{step} is not released in the exchange at {exchange_root()} yet: ask your instructor")
    mine = NOTEBOOKS / step
    before = set(_notebooks(mine)) if mine.is_dir() else set()
    nbgrader("fetch_assignment", step, f"--course={COURSE_ID}", "--replace")
    after = set(_notebooks(mine))
    copied, kept = sorted(after - before), sorted(before)
    if copied:
        print(f"fetch: copied {len(copied)} notebooks to {_show(mine)}/: {', '.join(copied)}")
    if kept:
        print(f"fetch: kept your {len(kept)} notebooks already in {_show(mine)}/ (never overwritten)")
    _say_due("fetch", step)
    return copied


def _say_due(command: str, step: str) -> None:
    """When the step is due (course.toml), how long from now, and what late work costs."""
    from ..term import TermError, due_line

    try:
        print(f"{command}: {due_line(step)}")
    except TermError as err:
        print(f"{command}: no due date shown: {err}")


def validate(step: str) -> int:
    """Run each of the student's notebooks as nbgrader's Validate button does; print, per notebook,
    the answers still missing and the tests that fail. Returns the number of notebooks that fail."""
    import nbformat
    from nbgrader.validator import Validator
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    os.environ.update(kernel_env())
    mine = sorted((NOTEBOOKS / step).glob("*.ipynb"))
    if not mine:
        raise ExchangeError(f"no notebooks in {_show(NOTEBOOKS / step)}/: run `make fetch` first")
    failing = 0
    with tempfile.TemporaryDirectory(prefix="validate-") as sockets:
        # the course's nbgrader configuration (time limits, the Execute that does not hang on a
        # slider cell), and kernels that talk over Unix sockets: no "running over TCP without
        # encryption" warning
        config = PyFileConfigLoader("nbgrader_config.py", path=str(ENGINE_ROOT)).load_config()
        config.merge(Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "kernel")}}))
        for path in mine:
            problems = _validation_problems(
                Validator(config=config).validate(str(path)), nbformat.read(path, as_version=4).cells
            )
            if problems:
                failing += 1
                print(f"validate: {path.name}: {len(problems)} to do")
                for problem in problems:
                    print(f"    {problem[:160]}")
            else:
                print(f"validate: {path.name}: passes every test")
    if failing:
        print(
            f"validate: {failing} of {len(mine)} notebooks have work left "
            "(written answers are graded by hand after you submit; the tests' verdicts are shown above)"
        )
    _say_due("validate", step)
    return failing


def _validation_problems(result: dict, cells) -> list[str]:
    """One line per problem nbgrader's Validator found, named by the cell's grade id. Its list
    of failing cells is in notebook order; several cells may share a source ("YOUR ANSWER HERE")."""
    problems = [
        f"a cell you may not change was changed: {item['source'][:60]!r}"
        for kind in ("type_changed", "changed")
        for item in result.get(kind, [])
    ]
    position = 0
    for item in result.get("failed", []):
        cell = None
        while position < len(cells):
            position += 1
            if cells[position - 1].source.strip() == item["source"].strip():
                cell = cells[position - 1]
                break
        cid = cell.metadata.get("nbgrader", {}).get("grade_id", "?") if cell is not None else "?"
        if cell is not None and cell.cell_type == "markdown":
            problems.append(f"{cid}: no answer yet")
        else:
            error = re.sub(r"\x1b\[[0-9;]*m", "", item.get("raw_error", ""))  # no terminal colours
            last = [line for line in error.strip().splitlines() if line.strip()]
            problems.append(f"{cid}: {last[-1].rstrip(':') if last else 'fails'}")
    return problems


def submit(step: str, student: str | None = None) -> str:
    """Hand notebooks/<step>/ in to the grader's inbox; return the submission's time stamp."""
    _folder_exchange_only("submit")
    mine = NOTEBOOKS / step
    if not _notebooks(mine):
        raise ExchangeError(f"nothing to submit in {_show(mine)}/: run `make fetch` and work there first")
    args = ["submit", step, f"--course={COURSE_ID}"] + ([f"--student={student}"] if student else [])
    log = nbgrader(*args)
    stamp = re.search(r"Submitted as: \S+ \S+ (.+)", log)
    who = student or re.search(r"inbound/([^+]+)\+", log)[1]
    missing = re.findall(r"(\S+\.ipynb): MISSING", log)
    print(
        f"submit: {len(_notebooks(mine))} notebooks of {step} handed in as {who}"
        + (f" at {stamp[1].strip()}" if stamp else "")
    )
    if missing:
        print(f"submit: not handed in (not in {_show(mine)}/): {', '.join(missing)}")
    _warn_if_late(step, who, stamp[1].strip() if stamp else "")
    return stamp[1].strip() if stamp else ""


def _warn_if_late(step: str, student: str, stamp: str) -> None:
    """After the due date (the student's extension included): say so, and what it costs."""
    import time as _time
    from datetime import timedelta

    from ..names import UnusableId, student_id
    from ..term import (
        TermError,
        UNIT_SECONDS,
        due_date,
        extensions,
        grace_seconds,
        late_policy,
        late_text,
        parse_timestamp,
        show_time,
    )

    try:
        due = due_date(step)
        if due is None:
            return
        try:
            sid = student_id(student)
        except UnusableId:
            sid = student
        own_due = due + extensions(step).get(sid, timedelta(0))
        when = parse_timestamp(stamp) or _time.time()
        late = when - own_due.timestamp()
        grace = grace_seconds()
        policy, percent = late_policy()
    except TermError as err:
        print(f"submit: the due date could not be checked: {err}")
        return
    if late <= 0:
        return
    if late <= grace:
        print(
            f"submit: {late_text(late)} after the due date ({show_time(own_due)}), within the grace period of "
            f"{late_text(grace)}: counted as on time"
        )
        return
    cost = {
        "none": "late work is graded in full, its lateness is reported",
        "zero": "each notebook handed in late scores 0",
        "per_hour": "",
        "per_day": "",
    }[policy]
    if policy in UNIT_SECONDS:
        import math

        units = math.ceil(late / UNIT_SECONDS[policy])
        unit = "hour" if policy == "per_hour" else "day"
        cost = (
            f"{min(100.0, percent * units):g} % of each late notebook's score ({percent:g} % per {unit} or part "
            f"of one, {units} {unit}{'s' * (units > 1)} begun)"
        )
    print(
        f"submit: LATE: handed in {late_text(late)} after the due date ({show_time(own_due)}): {cost}. "
        "Notebooks unchanged since a submission before the due date keep its time."
    )


def my_feedback(step: str) -> list[Path]:
    """Fetch the feedback on your submissions -> notebooks/<step>/feedback/<submission time>/."""
    from ..publish.feedback import feedback_summary

    _folder_exchange_only("my-feedback")
    if not (exchange_root() / COURSE_ID / "feedback").is_dir():
        print("my-feedback: no feedback has been returned yet")
        return []
    nbgrader("fetch_feedback", step, f"--course={COURSE_ID}")
    found = sorted((NOTEBOOKS / step / "feedback").glob("*/*.html"))
    if found:
        newest = max(p.parent for p in found)
        print(
            f"my-feedback: {len(found)} feedback pages; the newest in {_show(newest)}/: "
            + ", ".join(p.name for p in sorted(newest.glob("*.html")))
        )
        summary = feedback_summary(newest)
        if summary:
            print(
                f"my-feedback: scores of {summary['student']} for {summary['step']} (each page opens with the same summary):"
            )
            for line in summary["lines"]:
                print(f"    {line}")
    else:
        print("my-feedback: no feedback on your submissions yet")
    return found
