"""Grading throughput: a synthetic class graded by plain nbgrader and by `make grade`'s code path.

Each synthetic student hands in ONE notebook of the step (NOTEBOOK), drawn round-robin from the
proof corpus's variants of that notebook (tests/proof_corpus.py: correct variants and real
mistakes, each a copy of the solutions with some answers edited) and the untouched solutions.

* plain nbgrader: `nbgrader generate_assignment` (creates the gradebook, as a course must once)
  then `nbgrader autograde` (serial, the real CLI) in a temporary course folder holding only that
  notebook, with upstream nbgrader's own Execute preprocessor (the course's timeouts and warning
  filter, nothing else of its configuration).
* ours: `python -m autograder grade CLASS --workers N --no-feedback` with a fresh $GRADER_HOME
  (the gradebook is created inside the run), in warm kernels (the default) and, with 2 workers,
  in cold ones (`--kernels cold`) side by side.
Both are timed end to end as commands (interpreter start, gradebook creation and all).

`measure_whole_step`: a class handing in all six notebooks, graded by plain nbgrader (every
notebook of the step, with the course's cell timeout unless told otherwise) and by ours, warm and
cold, with 2 workers.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from common import BENCH_STEP, ROOT, bench_step, run_measured

NOTEBOOK = "02-the-head"
PLAIN_CONFIG = """
c = get_config()
c.CourseDirectory.course_id = "dl-course"
c.CourseDirectory.root = {root!r}
c.IncludeHeaderFooter.header = "source/header.ipynb"
c.Execute.timeout = 120
c.Execute.startup_timeout = 120
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = {pattern!r}
c.OverwriteCells.add_missing_cells = True
"""


def variants(notebook: str = NOTEBOOK) -> list[tuple[str, dict]]:
    """[(name, submitted notebook)]: the solutions, then every corpus entry of `notebook`."""
    sys.path.insert(0, str(ROOT / "tests"))
    from autograder.example import with_answers
    from proof_corpus import CORRECT, WRONG

    step = bench_step()
    out = [("solutions", with_answers(step, notebook, {}))]
    out += [(e.name, with_answers(step, notebook, e.answers)) for e in CORRECT + WRONG if e.notebook == notebook]
    return out


def build_whole_class(folder: Path, size: int, notebooks: list[str]) -> dict[str, list[str]]:
    """`size` students handing in each of `notebooks`, folder/<sid>/<notebook>.ipynb, each notebook
    drawn round-robin from its variants; returns {notebook: [variant of each student]}."""
    used = {}
    for notebook in notebooks:
        pool = variants(notebook)
        used[notebook] = []
        for i in range(size):
            name, nb = pool[i % len(pool)]
            sid = f"s{i:03d}"
            (folder / sid).mkdir(parents=True, exist_ok=True)
            (folder / sid / f"{notebook}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
            used[notebook].append(name)
    return used


def build_class(folder: Path, size: int, notebook: str = NOTEBOOK) -> list[str]:
    """`size` students, folder/<sid>/<notebook>.ipynb; returns the variant each one got."""
    pool = variants(notebook)
    used = []
    for i in range(size):
        name, nb = pool[i % len(pool)]
        sid = f"s{i:03d}"
        (folder / sid).mkdir(parents=True, exist_ok=True)
        (folder / sid / f"{notebook}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        used.append(name)
    return used


def _env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.pop("NBGRADER_DB_URL", None)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env.update(extra or {})
    return env


def plain_nbgrader(
    cls: Path, work: Path, notebook: str = NOTEBOOK, notebooks: list[str] | None = None, timeout: float = 120
) -> dict:
    """Grade the class with upstream nbgrader, serially, in a course folder of its own: `notebook`,
    or every one of `notebooks`, with cells limited to `timeout` seconds."""
    from autograder.nbgrader_cmd import HARMLESS_STDERR

    notebooks = notebooks or [notebook]
    course = work / "plain-course"
    shutil.rmtree(course, ignore_errors=True)
    (course / "source" / BENCH_STEP).mkdir(parents=True)
    shutil.copy(ROOT / "source" / "header.ipynb", course / "source" / "header.ipynb")
    # the instructor notebook as nbgrader gets it through this course's configuration: each hidden
    # test's points stamped from its check (autograder/authoring/stamp.py), which plain nbgrader does not do
    import nbformat
    from autograder.authoring.stamp import stamp

    for name in notebooks:
        source = nbformat.read(ROOT / "source" / BENCH_STEP / f"{name}.ipynb", as_version=4)
        stamp(source, bench_step())
        nbformat.write(source, course / "source" / BENCH_STEP / f"{name}.ipynb")
    config = PLAIN_CONFIG.format(root=str(course), pattern=HARMLESS_STDERR).replace(
        "c.Execute.timeout = 120", f"c.Execute.timeout = {timeout:g}"
    )
    (course / "nbgrader_config.py").write_text(config)
    env = _env()
    nbgrader = [sys.executable, "-m", "nbgrader"]
    setup = run_measured([*nbgrader, "generate_assignment", BENCH_STEP, "--force"], course, env)
    if setup["returncode"]:
        raise RuntimeError("nbgrader generate_assignment failed:\n" + setup["output"][-3000:])
    students = sorted(p.name for p in cls.iterdir() if p.is_dir())
    for sid in students:
        dest = course / "submitted" / sid / BENCH_STEP
        dest.mkdir(parents=True)
        for name in notebooks:
            shutil.copy(cls / sid / f"{name}.ipynb", dest)
    run = run_measured([*nbgrader, "autograde", BENCH_STEP], course, env)
    graded = [course / "autograded" / sid / BENCH_STEP / f"{name}.ipynb" for sid in students for name in notebooks]
    graded = [path for path in graded if path.exists()]
    if run["returncode"] or len(graded) != len(students) * len(notebooks):
        raise RuntimeError(
            f"nbgrader autograde graded {len(graded)} of {len(students) * len(notebooks)}:\n" + run["output"][-3000:]
        )
    # cells that ran into the time limit (a slider cell stalled by nbclient issue 312, or a slow one)
    timed_out = sum(
        "timed out" in json.dumps(cell.get("outputs", [])).lower()
        or "KeyboardInterrupt" in json.dumps(cell.get("outputs", []))
        for path in graded
        for cell in json.loads(path.read_text())["cells"]
    )
    return {
        "seconds": setup["seconds"] + run["seconds"],
        "setup_seconds": setup["seconds"],
        "autograde_seconds": run["seconds"],
        "peak_rss": max(setup["peak_rss"], run["peak_rss"]),
        "graded": len(graded),
        "timed_out_cells": timed_out,
        "timeout": timeout,
    }


def ours(cls: Path, work: Path, workers: int, kernels: str = "warm", notebooks: list[str] | None = None) -> dict:
    """Grade the class with `python -m autograder grade` (make grade's command) in a fresh home."""
    notebooks = notebooks or [NOTEBOOK]
    home = work / f"home-{workers}-{kernels}"
    shutil.rmtree(home, ignore_errors=True)
    env = _env({"GRADER_HOME": str(home)})
    run = run_measured(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(cls),
            "--workers",
            str(workers),
            "--kernels",
            kernels,
            "--no-feedback",
        ],
        ROOT,
        env,
    )
    results = [p for name in notebooks for p in (home / "work" / "results" / BENCH_STEP).glob(f"*/{name}.json")]
    students = sorted(p.name for p in cls.iterdir() if p.is_dir())
    if run["returncode"] or len(results) != len(students) * len(notebooks):
        raise RuntimeError(
            f"autograder grade graded {len(results)} of {len(students) * len(notebooks)}:\n" + run["output"][-3000:]
        )
    records = [json.loads(p.read_text()) for p in results]
    kinds = sorted({r.get("kernels", "?") for r in records})
    shutil.rmtree(home, ignore_errors=True)
    return {
        "seconds": run["seconds"],
        "peak_rss": run["peak_rss"],
        "graded": len(results),
        "notebook_seconds": [r.get("seconds", 0.0) for r in records],
        "kernels": kinds,
        "by_notebook": {name: [r.get("seconds", 0.0) for r in records if r["notebook"] == name] for name in notebooks},
        "points": sum(c["score"] or 0 for r in records for c in r["cells"]),
    }


WAYS = ("plain", "ours-1", "ours-2", "ours-2-cold")


def measure(
    sizes: list[int], repeats: int, plain_max: int, serial_max: int, say=print, ways: tuple[str, ...] = WAYS
) -> dict:
    """For each size: plain (up to plain_max students, else extrapolated), ours with 1 worker (up to
    serial_max) and 2 workers, warm kernels and cold (of `ways`: --quick leaves out the cold run, whose
    command section 1b runs too). Repeats for the smallest size; one run per larger size. The runs of
    one repeat alternate their order so that a change in the machine's load hits all alike."""
    out = {"notebook": NOTEBOOK, "variants": [n for n, _ in variants()], "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        tmp = Path(tmp)
        for size in sizes:
            cls = tmp / f"class-{size}"
            used = build_class(cls, size)
            runs = {"plain": [], "ours-1": [], "ours-2": [], "ours-2-cold": []}
            n = repeats if size == min(sizes) else 1
            for r in range(n):
                order = [w for w in WAYS if w in ways]
                if r % 2:
                    order.reverse()
                for what in order:
                    if what == "plain" and size > plain_max or what == "ours-1" and size > serial_max:
                        continue
                    say(f"  throughput: {size} students, {what}, run {r + 1} of {n}")
                    if what == "plain":
                        runs[what].append(plain_nbgrader(cls, tmp))
                    else:
                        workers, kernels = int(what.split("-")[1]), "cold" if what.endswith("cold") else "warm"
                        runs[what].append(ours(cls, tmp, workers, kernels))
            out["sizes"][size] = {"runs": runs, "repeats": n, "load": os.getloadavg(), "students": used}
    return out


def measure_whole_step(
    size: int, plain_timeout: float, say=print, notebooks: list[str] | None = None, shared: dict | None = None
) -> dict:
    """A class of `size` students handing in all six notebooks (or only `notebooks`: --quick): plain
    nbgrader (serial, cells limited to `plain_timeout` s), ours with 2 workers in warm kernels and in
    cold ones; one run each. `shared` (--quick): section 1's figures for one size (`measure`'s
    out["sizes"][size]); when this class is that one (the same notebook, the same variant for each
    student), its plain and warm 2-worker runs (the same commands on the same class) are taken, not
    run again, and the cold run is this part's own."""
    notebooks = notebooks or bench_step().notebooks()
    with tempfile.TemporaryDirectory(prefix="bench-step-") as tmp:
        tmp = Path(tmp)
        cls = tmp / "class"
        used = build_whole_class(cls, size, notebooks)
        out = {"students": size, "notebooks": notebooks, "variants": used, "runs": {}, "shared": []}
        same = shared is not None and notebooks == [NOTEBOOK] and used[NOTEBOOK] == shared.get("students")
        for what in ("ours-2", "ours-2-cold", "plain"):
            if same and shared["runs"].get(what):
                out["runs"][what] = shared["runs"][what][0]
                out["shared"].append(what)
                continue
            say(f"  whole step: {size} students x {len(notebooks)} notebooks, {what}")
            if what == "plain":
                out["runs"][what] = plain_nbgrader(cls, tmp, notebooks=notebooks, timeout=plain_timeout)
            else:
                out["runs"][what] = ours(cls, tmp, 2, "cold" if what.endswith("cold") else "warm", notebooks)
        out["load"] = os.getloadavg()
    return out
