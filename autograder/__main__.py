"""Course commands (the Makefile's targets call these).

  python -m autograder release                 student notebooks: source/ -> release/
  python -m autograder solutions [--force]     executed solution notebooks: source/ -> solutions/
  python -m autograder grade SUBMISSIONS       grade a class (see autograder/grade.py)
      [--shard I/N] [--students a,b]           only a part of it (a class graded on a cluster: autograder/shards.py)
  python -m autograder gradebook               set the gradebook up for the step (once, before grading in shards)
  python -m autograder report                  grades.csv/json (and feedback) for the whole class from the gradebook
  python -m autograder feedback                feedback HTML and reports again, after manual grading
  python -m autograder example                 build the example class and grade it
  python -m autograder fetch                   a student's copy of the release in notebooks/ (never overwrites)
  python -m autograder validate                run a student's notebooks as the grader does: what is still to do
  python -m autograder submit [--student ID]   hand notebooks/step-04 in through the exchange
  python -m autograder my-feedback             a student's returned feedback -> notebooks/step-04/feedback/
  python -m autograder collect                 instructor: newest submissions -> autograder/collected/
  python -m autograder return-feedback         instructor: feedback of graded submissions -> the exchange
  python -m autograder lab [--formgrader]      the course's JupyterLab (students: notebooks/; instructors: formgrader)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .course import ROOT, use_environment_tools


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("release")
    p = sub.add_parser("solutions")
    p.add_argument("--force", action="store_true", help="rerun every solution, even the current ones")
    for name in ("grade", "example"):
        p = sub.add_parser(name)
        if name == "grade":
            p.add_argument("submissions", type=Path)
            p.add_argument("--shard", default=None, metavar="I/N",
                           help="grade only shard I of N (0 <= I < N): the students whose id hashes to I")
            p.add_argument("--students", default=None, metavar="A,B,...", help="grade only these students")
        p.add_argument("--workers", type=int, default=None, help="parallel notebooks (default: all cores)")
        p.add_argument("--force", action="store_true", help="regrade notebooks already graded")
        p.add_argument("--sandbox", default="auto", help="auto, bwrap or none")
        p.add_argument("--kernels", default="cold", choices=("cold", "warm"),
                       help="cold: a fresh kernel per notebook; warm: forked from a template per worker "
                            "(without a sandbox only; else cold, said on screen)")
        p.add_argument("--no-feedback", action="store_true")
    sub.add_parser("gradebook", help="create the gradebook (NBGRADER_DB_URL) and enter the step's notebooks")
    p = sub.add_parser("report", help="merge: reports for every student in the gradebook")
    p.add_argument("--no-feedback", action="store_true", help="only grades.csv and grades.json")
    sub.add_parser("feedback")
    sub.add_parser("fetch")
    sub.add_parser("validate")
    p = sub.add_parser("submit")
    p.add_argument("--student", default=None, help="your student id (default: your login name)")
    sub.add_parser("my-feedback")
    sub.add_parser("collect")
    sub.add_parser("return-feedback")
    p = sub.add_parser("lab")
    p.add_argument("--formgrader", action="store_true", help="the instructor's JupyterLab, opening nbgrader's formgrader")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    started = time.monotonic()
    use_environment_tools()

    if args.command == "release":
        from .build import release
        paths = release()
        print(f"release: {len(paths)} student notebooks in {paths[0].parent.relative_to(ROOT)}/")
    elif args.command == "solutions":
        from .build import solutions
        paths = solutions(force=args.force)
        print(f"solutions: {len(paths)} notebooks executed and written" if paths
              else "solutions: all current with the sources (nothing to run; --force reruns them)")
        for path in paths:
            print(f"  {path.relative_to(ROOT)}")
    elif args.command in ("grade", "example"):
        from .grade import grade
        target = args.submissions if args.command == "grade" else None
        if target is None:
            from .example import build
            target = build()
            shown = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
            print(f"example class: ada (all answers), blank (the release), half (half the answers) in {shown}/")
        part = {}
        if args.command == "grade":
            from .shards import parse_shard
            try:
                part["shard"] = parse_shard(args.shard) if args.shard else None
            except ValueError as err:
                parser.error(str(err))
            part["students"] = [s for s in (args.students or "").split(",") if s] or None
        grade(target, workers=args.workers, force=args.force, sandbox=args.sandbox,
              feedback=not args.no_feedback, kernels=args.kernels, **part)
    elif args.command == "gradebook":
        from .course import db_url, grader_home
        from .grade import ensure_gradebook, release_grade_cells
        grader_home().mkdir(parents=True, exist_ok=True)
        ensure_gradebook(db_url())
        cells = release_grade_cells()
        print(f"gradebook: ready for {len(cells)} notebooks, {sum(map(len, cells.values()))} grade cells")
    elif args.command in ("feedback", "report"):
        from .grade import refresh_from_gradebook
        refresh_from_gradebook(feedback=not getattr(args, "no_feedback", False))
    elif args.command in ("fetch", "validate", "submit", "my-feedback", "collect", "return-feedback"):
        from . import exchange
        try:
            if args.command == "fetch":
                exchange.fetch()
            elif args.command == "validate":
                if exchange.validate():
                    return 1
            elif args.command == "submit":
                exchange.submit(args.student)
            elif args.command == "my-feedback":
                exchange.my_feedback()
            elif args.command == "collect":
                exchange.collect()
            else:
                exchange.return_feedback()
        except exchange.ExchangeError as err:
            print(f"{args.command}: {err}", file=sys.stderr)
            return 1
    elif args.command == "lab":
        from .lab import run_lab
        return run_lab(formgrader=args.formgrader, extra=extra)
    print(f"({args.command}: {time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
