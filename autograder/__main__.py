"""Course commands (the Makefile's targets call these). Every command takes --step S (default: the
only step in source/, or the newest).

  python -m autograder release                 student notebooks: source/<step> -> release/<step>
  python -m autograder solutions [--force]     executed solution notebooks: source/<step> -> solutions/<step>
  python -m autograder grade SUBMISSIONS       grade a class (see autograder/grading/grade.py)
      [--shard I/N] [--students a,b]           only a part of it (a class graded on a cluster: autograder/shards.py)
  python -m autograder gradebook               set the gradebook up for the step (once, before grading in shards)
  python -m autograder report                  the step's reports for the whole class from the gradebook
  python -m autograder feedback                feedback HTML and reports again, after manual grading
  python -m autograder example                 build the example class and grade it
  python -m autograder fetch                   a student's copy of the release in notebooks/ (never overwrites)
  python -m autograder validate                run a student's notebooks as the grader does: what is still to do
  python -m autograder submit [--student ID]   hand notebooks/<step> in through the exchange
  python -m autograder my-feedback             a student's returned feedback -> notebooks/<step>/feedback/
  python -m autograder collect                 instructor: newest submissions -> autograder/collected/
  python -m autograder return-feedback         instructor: feedback of graded submissions -> the exchange
  python -m autograder export                  grades for the LMS: autograder/export/canvas-<step>.csv, notebooks-<step>.csv
  python -m autograder pdfs [--anonymous]      every student's written answers, one PDF each (autograder/pdfs/)
  python -m autograder handout [--to DIR]      the student-only hand-out (release, dlcourse, Binder config) -> handout/
      [--hub URL --repo URL]                   and the nbgitpuller link that opens it on a JupyterHub
  python -m autograder similarity [--threshold X]   answers alike across the class, for a person to look at
  python -m autograder insights [--names] [--example]   what the class got wrong: a page and CSVs (autograder/insights/)
  python -m autograder extensions              the extensions granted (extensions.csv) and the due dates they give
  python -m autograder roster FILE             roster.csv from the LMS's gradebook export (Canvas or Moodle CSV)
  python -m autograder written-scores [--from F]   the written answers to grade offline, as a CSV; --from: import it
  python -m autograder lab [--formgrader]      the course's JupyterLab (students: notebooks/; instructors: formgrader)
  python -m autograder hub [--no-start]        root: the course on a JupyterHub (autograder/classroom/hub.py): configuration
      [--no-passwords] [--exchange ngshare]    from course.toml [hub] and roster.csv, local accounts, the exchange
      [--publish]                              (a folder, or ngshare as a hub service); --publish: into a running hub's
      [--k8s-values DIR]                       instead: Helm values for Zero to JupyterHub, validated (hub_values.py)
  python -m autograder steps                   the steps in source/
  python -m autograder new-check NOTEBOOK ID   a new hidden test: its check (probe, judge) and its cell, stubbed
      [--points P] [--answer NAME] [--module M]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# nbformat validates with jsonschema, whose import builds the grammars of the optional package
# rfc3987_syntax (seconds of CPU) for string formats no notebook schema uses: no command needs it
# (grading/grade.py and nbgrader_cmd.py say the same for the grading processes and nbgrader's).
sys.modules.setdefault("rfc3987_syntax", None)

from .course import ROOT, share_with_home_group, use_environment_tools  # noqa: E402 (imported after the line above)
from .errors import GraderError, UsageError  # noqa: E402
from .safetext import TerminalText  # noqa: E402


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


# ---- one function per command: (step, args, extra) -> exit code ---------------------------------


def cmd_release(step, args, extra) -> int:
    from .authoring.build import release

    paths = release(step)
    print(f"release: {len(paths)} student notebooks in {_shown(step.release)}/")
    return 0


def cmd_solutions(step, args, extra) -> int:
    from .authoring.build import solutions

    paths = solutions(step, force=args.force)
    print(
        f"solutions: {len(paths)} notebooks executed and written"
        if paths
        else "solutions: all current with the sources (nothing to run; --force reruns them)"
    )
    for path in paths:
        print(f"  {_shown(path)}")
    return 0


def _grade_options(args) -> dict:
    given = {
        "cell_timeout": args.cell_timeout,
        "cell_wait_timeout": args.cell_wait,
        "student_budget": args.student_budget,
    }
    limits = {key: value for key, value in given.items() if value} or None
    return {
        "workers": args.workers,
        "force": args.force,
        "sandbox": args.sandbox,
        "feedback": not args.no_feedback,
        "limits": limits,
        "kernels": args.kernels,
    }


def cmd_grade(step, args, extra) -> int:
    from .grading.grade import grade
    from .shards import parse_shard

    try:
        shard = parse_shard(args.shard) if args.shard else None
    except ValueError as err:
        raise UsageError(str(err)) from None
    students = [s for s in (args.students or "").split(",") if s] or None
    grade(step, args.submissions, shard=shard, students=students, **_grade_options(args))
    return 0


def cmd_example(step, args, extra) -> int:
    """The example class, graded in a grader home of its own (never the course's gradebook)."""
    import os

    from .example import build, example_home
    from .grading.grade import grade

    home = example_home()
    target = build(step)
    print(
        f"example class: ada (all answers), blank (the release), half (half the answers) in {_shown(target)}/, "
        f"graded in its own grader home {_shown(home)}/ (the course's gradebook is not touched)"
    )
    os.environ["GRADER_HOME"] = str(home)
    os.environ.pop("NBGRADER_DB_URL", None)  # its own SQLite gradebook in that home
    grade(step, target, **_grade_options(args))
    print(
        f"example: its grades are in {_shown(home / 'grades')}/, its feedback in {_shown(home / 'feedback')}/; "
        "`make clean-grades` removes them with every other grading result"
    )
    return 0


def cmd_gradebook(step, args, extra) -> int:
    from .course import db_url, grader_home
    from .records.gradebook import ensure_gradebook, release_grade_cells

    grader_home().mkdir(parents=True, exist_ok=True)
    ensure_gradebook(db_url(), step)
    cells = release_grade_cells(step)
    print(f"gradebook: ready for {step.name}: {len(cells)} notebooks, {sum(map(len, cells.values()))} grade cells")
    return 0


def cmd_report(step, args, extra) -> int:
    from .grading.grade import refresh_from_gradebook

    refresh_from_gradebook(step, feedback=not getattr(args, "no_feedback", False))
    return 0


def _exchange(action):
    def run(step, args, extra) -> int:
        from .classroom import exchange

        return action(exchange, step.name, args) or 0

    return run


def cmd_lab(step, args, extra) -> int:
    from .classroom.lab import run_lab

    return run_lab(formgrader=args.formgrader, extra=extra)


def cmd_steps(step, args, extra) -> int:
    from .steps import all_steps

    for each in all_steps():  # the hidden tests counted in the notebooks: no check (nor torch) imported
        print(
            f"{each.name}: {len(each.notebooks())} notebooks, {each.hidden_test_count()} hidden tests"
            + (f", catch-up {each.catch_up}" if each.catch_up else "")
        )
    return 0


def cmd_new_check(step, args, extra) -> int:
    from .authoring.scaffold import new_check

    for path in new_check(step, args.notebook, args.grade_id, args.points, args.answer, args.module):
        print(f"new-check: wrote {_shown(path)}")
    return 0


def cmd_export(step, args, extra) -> int:
    from .lms.export import export_all

    export_all(step.name)
    return 0


def cmd_pdfs(step, args, extra) -> int:
    from .publish.pdfs import make_pdfs

    make_pdfs(step.name, anonymous=args.anonymous)
    return 0


def cmd_handout(step, args, extra) -> int:
    from .authoring.handout import build_handout, nbgitpuller_link

    build_handout(step.name, args.to)
    if args.hub and args.repo:
        print(f"handout: nbgitpuller link: {nbgitpuller_link(args.hub, args.repo, step.name)}")
    return 0


def cmd_similarity(step, args, extra) -> int:
    if not 0 < args.threshold <= 1:
        raise UsageError("--threshold must be above 0 and at most 1")
    from .publish.similarity import report

    report(step.name, args.threshold)
    return 0


def cmd_insights(step, args, extra) -> int:
    from .publish.insights import make_insights
    from .records.store import Store

    store = None
    if args.example:  # the example class's own grader home (make example)
        from .example import example_home

        home = example_home()
        store = Store(home, f"sqlite:///{home / 'gradebook.db'}")
        if not (home / "gradebook.db").exists():
            raise UsageError(f"no example class graded in {_shown(home)}/: run `make example` first")
    make_insights(step, store, named=args.names, say=lambda line: print(line))
    return 0


def cmd_extensions(step, args, extra) -> int:
    from .term import list_extensions

    list_extensions(step.name)
    return 0


def cmd_roster(step, args, extra) -> int:
    from .lms.roster import import_roster
    from .steps import all_steps

    import_roster(args.export, all_steps())
    return 0


def cmd_written_scores(step, args, extra) -> int:
    from .publish.written import export_written, import_written

    if args.from_file:
        import_written(step.name, args.from_file)
    else:
        export_written(step.name)
    return 0


def cmd_hub(step, args, extra) -> int:
    import os
    from .classroom import ngshare
    from .classroom.hub import setup

    if args.k8s_values:
        from .classroom.hub import settings
        from .classroom.hub_values import CHART_VERSION, write

        for path in write(args.k8s_values):
            print(f"hub: {_shown(path)}")
        print(f"hub: the students' image: docker build -t {settings()['student_image']} {_shown(path)}")
        print(f"hub: values valid for Zero to JupyterHub {CHART_VERSION} (README: On Kubernetes)")
        return 0
    if args.publish:  # a running hub's exchange: the course (ngshare) and the step
        from .classroom.exchange import publish
        from .classroom.hub import publish_ngshare

        if os.environ.get("NBGRADER_EXCHANGE", "").strip() == ngshare.NGSHARE:
            publish_ngshare(step.name)
        else:
            publish(step.name)
        return 0
    cmd = setup(step.name, passwords=not args.no_passwords, exchange=args.exchange)
    if args.no_start:
        print("hub: start it with  " + " ".join(cmd))
        return 0
    sys.stdout.flush()
    if os.environ.get("NBGRADER_EXCHANGE") == ngshare.NGSHARE:  # the hub, then the course into its ngshare
        import subprocess

        from .classroom.hub import publish_when_up

        hub = subprocess.Popen(cmd)
        try:
            publish_when_up(step.name, hub)
            return hub.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the hub too: it stops its services and the servers
            return hub.wait()
        except BaseException:
            hub.terminate()
            hub.wait()
            raise
    os.execv(cmd[0], cmd)  # the hub in this process's place: Ctrl-C stops it
    return 0


COMMANDS = {
    "release": cmd_release,
    "solutions": cmd_solutions,
    "grade": cmd_grade,
    "example": cmd_example,
    "gradebook": cmd_gradebook,
    "report": cmd_report,
    "feedback": cmd_report,
    "fetch": _exchange(lambda ex, step, args: ex.fetch(step) and None),
    "validate": _exchange(lambda ex, step, args: 1 if ex.validate(step) else 0),
    "submit": _exchange(lambda ex, step, args: ex.submit(step, args.student) and None),
    "my-feedback": _exchange(lambda ex, step, args: ex.my_feedback(step) and None),
    "collect": _exchange(lambda ex, step, args: ex.collect(step) and None),
    "return-feedback": _exchange(lambda ex, step, args: ex.return_feedback(step) and None),
    "export": cmd_export,
    "pdfs": cmd_pdfs,
    "handout": cmd_handout,
    "similarity": cmd_similarity,
    "insights": cmd_insights,
    "extensions": cmd_extensions,
    "roster": cmd_roster,
    "written-scores": cmd_written_scores,
    "lab": cmd_lab,
    "hub": cmd_hub,
    "steps": cmd_steps,
    "new-check": cmd_new_check,
}


def parser() -> argparse.ArgumentParser:
    from .kernel.limits import CELL_WALL_FACTOR, Limits  # every limit's default is there

    top = argparse.ArgumentParser(
        prog="python -m autograder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = top.add_subparsers(dest="command", required=True)
    made = {name: sub.add_parser(name) for name in COMMANDS}
    for p in made.values():
        p.add_argument("--step", default=None, help="the step (default: the only or newest in source/)")
    made["solutions"].add_argument("--force", action="store_true", help="rerun every solution, even the current ones")
    made["grade"].add_argument("submissions", type=Path)
    made["grade"].add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="grade only shard I of N (0 <= I < N): the students whose id hashes to I",
    )
    made["grade"].add_argument("--students", default=None, metavar="A,B,...", help="grade only these students")
    for name in ("grade", "example"):
        p = made[name]
        p.add_argument("--workers", type=int, default=None, help="parallel notebooks (default: all cores)")
        p.add_argument("--force", action="store_true", help="regrade notebooks already graded")
        p.add_argument("--sandbox", default="auto", help="auto, bwrap or none")
        p.add_argument(
            "--kernels",
            default="warm",
            choices=("warm", "cold"),
            help="warm (the default): forked from a template per worker where it can be had "
            "(else cold, said on screen); cold: a fresh kernel started per notebook",
        )
        p.add_argument("--no-feedback", action="store_true")
        p.add_argument(
            "--cell-timeout",
            type=float,
            default=None,
            metavar="SECONDS",
            help=f"seconds of CPU time one cell may use (default: {Limits.cell_timeout:g}; a cell that "
            f"waits is stopped after {CELL_WALL_FACTOR:g} times as long on the clock); a result "
            "graded under another limit is graded again",
        )
        p.add_argument(
            "--cell-wait",
            type=float,
            default=None,
            metavar="SECONDS",
            help=f"seconds one cell may wait without computing (default: {Limits.cell_wait_timeout:g})",
        )
        p.add_argument(
            "--student-budget",
            type=float,
            default=None,
            metavar="SECONDS",
            help=f"seconds for all of a student's notebooks together (default: {Limits.student_budget:g}); "
            "past it the cells and notebooks left score 0, saying so",
        )
    made["report"].add_argument("--no-feedback", action="store_true", help="only the grade reports")
    made["pdfs"].add_argument(
        "--anonymous", action="store_true", help="each PDF named by a code, not the student id; the key written beside"
    )
    made["roster"].add_argument("export", type=Path, help="the gradebook export downloaded from Canvas or Moodle (CSV)")
    made["written-scores"].add_argument(
        "--from", dest="from_file", type=Path, default=None, help="import the scores and comments filled into this CSV"
    )
    made["submit"].add_argument("--student", default=None, help="your student id (default: your login name)")
    made["lab"].add_argument(
        "--formgrader", action="store_true", help="the instructor's JupyterLab, opening nbgrader's formgrader"
    )
    made["hub"].add_argument(
        "--no-start", action="store_true", help="set everything up, print the command that starts it"
    )
    made["hub"].add_argument(
        "--exchange",
        default=None,
        metavar="FOLDER|ngshare",
        help="the exchange instead of course.toml's [hub] exchange: a folder, or ngshare (a service of the hub)",
    )
    made["hub"].add_argument(
        "--publish",
        action="store_true",
        help="with the hub running: the course and the step into its exchange (NBGRADER_EXCHANGE=ngshare: its ngshare)",
    )
    made["hub"].add_argument(
        "--no-passwords",
        action="store_true",
        help="leave the local accounts' passwords alone (no development passwords)",
    )
    made["hub"].add_argument(
        "--k8s-values",
        type=Path,
        default=None,
        metavar="DIR",
        help="write Helm values for Zero to JupyterHub and the exchange's volume into DIR, validated "
        "against the chart's schema; starts nothing, needs no root",
    )
    made["handout"].add_argument("--to", type=Path, default=None, help="where to build it (default: handout/)")
    made["handout"].add_argument("--hub", default=None, help="a JupyterHub's address: print the nbgitpuller link")
    made["handout"].add_argument("--repo", default=None, help="the repository students pull the hand-out from")
    made["similarity"].add_argument(
        "--threshold", type=float, default=0.8, help="list pairs at or above this similarity (0..1)"
    )
    made["insights"].add_argument(
        "--names", action="store_true", help="show the students' ids (default: a code per student)"
    )
    made["insights"].add_argument(
        "--example", action="store_true", help="the example class (make example), not the course's"
    )
    made["new-check"].add_argument("notebook", help="the notebook's name in source/<step>/, without .ipynb")
    made["new-check"].add_argument("grade_id", help="the hidden test's grade id (letters, digits, _)")
    made["new-check"].add_argument("--points", type=float, default=1.0)
    made["new-check"].add_argument(
        "--answer", default=None, help="the answer cell (and function) it tests (default: the grade id without _hidden)"
    )
    made["new-check"].add_argument("--module", default=None, help="the check module (default: from the notebook)")
    return top


def main(argv=None) -> int:
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra and args.command != "lab":
        top.error(f"unrecognized arguments: {' '.join(extra)}")
    started = time.monotonic()
    # every command's printing passes the terminal's allowlist (autograder/safetext.py): student text
    # quoted in a reason or a note is shown, never run by the terminal
    streams = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, TerminalText):
        sys.stdout, sys.stderr = TerminalText(sys.stdout), TerminalText(sys.stderr)
    try:
        return _run(args, extra, started)
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = streams


def _run(args, extra, started: float) -> int:
    use_environment_tools()
    share_with_home_group()
    from .steps import find_step

    try:  # the one place an error becomes an exit code: modules raise, never exit
        step = find_step(args.step) if args.command != "steps" else None
        code = COMMANDS[args.command](step, args, extra)
    except GraderError as err:
        print(f"{args.command}: {err}", file=sys.stderr)
        return err.exit_code
    if args.command != "lab":
        print(f"({args.command}: {time.monotonic() - started:.1f} s)")
    return code


if __name__ == "__main__":
    sys.exit(main())
