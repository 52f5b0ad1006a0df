"""Shared fixtures: the course's paths, a scratch grading home, and a notebook runner."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

# nbformat (imported next) validates with jsonschema, whose import builds the grammars of the optional
# rfc3987_syntax for the "iri" string formats, which no notebook schema uses and nothing here checks:
# about 1.3 s of CPU in every process that imports this file (each test worker, the proof corpus's
# scoring processes, the pytest runs tests start). Left out, as the grader's own processes leave it
# out (autograder/grading/grade.py, autograder/__main__.py): jsonschema treats it as absent.
sys.modules.setdefault("rfc3987_syntax", None)

import nbformat  # noqa: E402
import pytest  # noqa: E402

# The suite runs more processes than the machine has cores (test workers, the grader's workers, kernels,
# JupyterLab, plain nbgrader), most of them with torch. torch's OpenMP threads spin-wait after every
# parallel region by default: on an oversubscribed machine that spinning takes the cores the other
# processes are waiting for (the proof corpus scored in two processes at once, two threads each: 26 s
# each spinning, 17 s each with PASSIVE). Set before torch is imported anywhere (every child inherits
# it, the sandboxed kernels too: autograder/kernel/sandbox.py PASSED_ENV; a grading on one worker gives
# its kernels two threads); it changes no result, only what idle threads do.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from profiling import Profiler  # noqa: E402
from autograder.steps import find_step  # noqa: E402

STEP4 = find_step("step-04")       # the step these tests are about
STEP = STEP4.name
SOURCE_NOTEBOOKS = sorted(STEP4.source.glob("*.ipynb"))
NOTEBOOK_NAMES = STEP4.notebooks()
GRADES_CSV = f"grades/{STEP}.csv"          # a step's reports, under a grading home
GRADES_JSON = f"grades/{STEP}.json"


# What a course copy needs: the code kernels import, the notebooks, the corpus, nbgrader's config.
COURSE_PARTS = ("autograder", "dlcourse", "source", "release", "solutions", "data", "notebooks",
                "nbgrader_config.py", "Makefile", "pyproject.toml", "course.toml", "extensions.csv")
GRADING_OUTPUTS = ("submitted", "autograded", "feedback", "work", "example-class", "example", "collected",
                   "gradebook.db", "case-key", "grades", "export", "pdfs", "written", "insights", "similarity.csv",
                   "similarity.html")


def make(course: Path, *args: str, ok: bool = True) -> str:
    """`make -s <args>` in a copy of the course (copy_course), as a newcomer's shell runs it: this
    environment's Python first on PATH, no grading home, gradebook or exchange of the test run's own;
    its output (stdout and stderr). With ok, a failure is an assertion error showing the output."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GRADER_HOME", "NBGRADER_DB_URL", "NBGRADER_EXCHANGE", "PYTHONPATH", "MAKEFLAGS")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["make", "-s", *args, f"VENV={Path(sys.executable).parent.parent}"], cwd=course, env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    if ok:
        assert proc.returncode == 0, f"make {' '.join(args)} failed:\n{out[-4000:]}"
    return out


def copy_course(dest: Path) -> Path:
    """A copy of the course in `dest` (without a student's notebooks, the exchange or grading results)."""
    dest.mkdir(parents=True, exist_ok=True)

    def ignore(folder, names):
        skip = {n for n in names if n in ("__pycache__", ".ipynb_checkpoints") or n.endswith(".pyc")}
        if Path(folder).resolve() == (ROOT / "autograder").resolve():
            skip |= {n for n in names if n in GRADING_OUTPUTS}
        if Path(folder).resolve() == (ROOT / "notebooks").resolve():
            skip |= {n for n in names if n != "README.md"}
        return skip

    for part in COURSE_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=ignore)
        elif src.is_file():
            shutil.copy2(src, dest / part)
    return dest


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def nbgrader_meta(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def cell_text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


@pytest.fixture
def grading_home(tmp_path, monkeypatch):
    """Grade into a temporary folder with its own gradebook: the instructor's autograder/ is untouched."""
    home = tmp_path / "grader"
    home.mkdir()
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    return home


def execute(nb, cwd: Path, timeout: int = 300):
    """Run a notebook like a student who presses Run All: errors are recorded, not raised."""
    # imported here: it imports nbgrader (about a second of CPU), which the processes that import this file
    # only for its paths and steps (the proof corpus's scoring processes) never use
    from autograder.authoring.build import run_notebook
    run_notebook(nb, cwd, timeout=timeout, allow_errors=True)
    return nb


def execute_warm(nb, timeout: int = 300):
    """Run a notebook as `execute` does (Run All; errors recorded, not raised), in a kernel forked from
    a warm template: the grader's own (autograder/kernel/warm.py, without the sandbox), whose children
    are the kernels notebooks are graded in, with the course's kernel environment. The template
    imports torch and the course's modules once per test process; each run still gets a process and
    a namespace of its own (the same outputs as a fresh kernel: tests/test_warm_kernels.py). In a
    scratch folder, as a graded notebook runs."""
    import asyncio
    import tempfile

    from autograder.grading.grade import kernel_environment
    from autograder.kernel.execute import Limits
    from autograder.kernel.execute import execute as run_cells
    from autograder.kernel.sandbox import make_sandbox
    from autograder.kernel.warm import worker_template
    from autograder.plugin import load_plugin

    plugin = load_plugin(STEP4.root)
    course_env = plugin.kernel_env(STEP4)
    with tempfile.TemporaryDirectory(prefix="warm-") as scratch:
        workdir = Path(scratch) / "work"
        workdir.mkdir()
        env = kernel_environment(1, workdir, "", course_env)      # a graded kernel's, on one thread
        template = worker_template("none", plugin.preimport(STEP4), env, passed_env=tuple(course_env))
        assert template is not None, "no warm template here"
        sandbox = make_sandbox("none", Path(scratch), passed_env=tuple(course_env))
        outcome = asyncio.run(run_cells(nb, workdir, env, sandbox, Limits(cell_timeout=timeout), template=template))
    assert outcome.kernels == "warm", f"the notebook ran in a {outcome.kernels} kernel: {outcome.events}"
    return nb


def errors(cell) -> list[dict]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def read_nb(path: Path):
    return nbformat.read(path, as_version=4)


# ---- the longest modules start first ------------------------------------------------------
# `make test` hands whole modules to its workers (--dist loadscope --no-loadscope-reorder: without
# the last flag xdist reorders modules by their number of tests, and a one-test module of eight
# minutes starts last). A long module started last keeps one worker busy after the others have
# finished: these, the longest in a full run on 2 cores, are collected first; the rest keep their
# order. xdist gives a worker whose module has two tests or fewer left the next module at once, so
# each short-listed module (one or two tests) is followed by one with more tests, not by another
# long one.
LONGEST_FIRST = ["test_same_grade_on_every_cpu", "test_busy_machine", "test_grading", "test_redteam_cold",
                 "test_cluster_slurm", "test_grader_proof", "test_bench", "test_lab_validate",
                 "test_grading_postgres", "test_grading_guarantees", "test_lab_student", "test_redteam",
                 "test_hub_flow", "test_lab_solutions", "test_visible_checks_proof",
                 "test_answer_variants_run", "test_caps", "test_release", "test_term_flow", "test_grading_by_hand", "test_review_by_hand",
                 "test_hostile_pages", "test_intake_attacks", "test_collect", "test_second_step",
                 "test_gradebook_fill", "test_hints"]

# Modules that measure a kernel's time under load they make themselves (a quarter of a CPU, tests/starve.py; waits
# of a few seconds against ceilings of a few seconds) run last, when the long modules above have ended:
# next to them a kernel's start alone could take longer than their ceilings.
QUIET_LAST = ["test_cpu_limits", "test_student_budget"]

# Beside them the other workers would idle (the quiet modules mostly wait): these modules, which compute
# in their own process with nothing timed (judges called in-process on every entry of a corpus), come
# after them and run at the lowest priority (`os.nice(19)`, the worker's whole process from then on), so
# the quiet modules' kernels get a CPU whenever they ask for one and the idle CPUs do the judging.
# The longest first: the last to end runs alone.
NICE_TAIL = ["test_fresh_cases", "test_visible_checks_proof", "test_rewrites", "test_mutants", "test_argument_leaks",
             "test_grader_proof_quick"]


# ---- markers by what a module needs (pyproject.toml; the README's test section) ---------------
# sandbox: grades or runs code in the bwrap sandbox; services: starts PostgreSQL or Slurm;
# browser: drives Chromium (the modules under tests/browser mark themselves); hub: needs the JupyterHub of
# `make hub-deps` (tests/hub.py). tests/test_markers.py
# checks that every module needing one of them is listed here.
MODULE_MARKS = {
    "sandbox": ("test_busy_machine", "test_caps", "test_example_apart", "test_grader_proof", "test_grading", "test_grading_guarantees",
                "test_kernel_cgroups", "test_redteam", "test_redteam_cold", "test_sandbox", "test_second_step",
                "test_warm_kernels", "test_hostile_pages", "test_lab_formgrader", "test_student_budget", "test_cluster_slurm",
                "test_feedback_refresh"),
    "services": ("test_grading_postgres", "test_cluster_slurm"),
    "browser": ("test_term_flow",),
    "hub": ("test_hub_deps",),
}


def pytest_configure(config):
    """TEST_PROFILE=folder (make test-profile) records where the run's time goes: tests/profiling.py.
    A process that runs tests judges in-process on one torch thread, as a graded kernel does by default
    (cores // workers): the tensors are tiny, and a second thread waiting between two small operations
    burns a core the other test workers need (test_step04_suites: 19-39 CPU-s on 2 threads, 10 on one).
    The 2-thread numerics are proven where they are asked for (tests/test_same_grade_on_every_cpu.py)."""
    folder = os.environ.get("TEST_PROFILE")
    if folder and Profiler.records_here():
        config.pluginmanager.register(Profiler(Path(folder).resolve()), "test-profiler")
    if not (getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")):
        import torch                   # not the xdist controller: it runs no test

        torch.set_num_threads(1)


@pytest.hookimpl(tryfirst=True)        # the markers are added before `-m` deselects by them
def pytest_collection_modifyitems(session, config, items):
    for item in items:
        module = Path(str(item.fspath)).stem
        for marker, modules in MODULE_MARKS.items():
            if module in modules:
                item.add_marker(marker)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    rank.update({name: len(LONGEST_FIRST) + 1 + i for i, name in enumerate(QUIET_LAST + NICE_TAIL)})
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).stem, len(LONGEST_FIRST)))


@pytest.fixture(autouse=True, scope="module")
def _nice_tail(request):
    """A NICE_TAIL module's worker yields the CPU to every other process (see NICE_TAIL)."""
    if Path(str(request.node.fspath)).stem in NICE_TAIL and os.environ.get("PYTEST_XDIST_WORKER"):
        os.nice(19 - os.nice(0))
    yield


@pytest.fixture(autouse=True, scope="session")
def _gradebook_templates(tmp_path_factory):
    """Every new SQLite gradebook of the session starts from a copy of the step's gradebook as the session
    first filled it (autograder/records/gradebook.py GRADEBOOK_TEMPLATES: about 1 s of CPU a grading, in
    the grading's own process and in each command a test runs): the workers of a session share one folder.
    tests/test_gradebook_fill.py proves a copy is the gradebook a fill writes, and fills without it."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent                      # shared by the workers of this session
    os.environ["GRADEBOOK_TEMPLATES"] = str(base / "gradebook-templates")
    yield


@pytest.fixture(autouse=True)
def _environment_restored():
    """The environment as it was before each test, whatever the test left in it: code a test runs in this
    process may set variables for the processes it configures (nbgrader_config.py sets PYTHONPATH; a hub
    user's configuration sets COURSE_ROOT, GRADER_HOME and NBGRADER_DB_URL), and a later test of the same
    worker would run its commands on another course (a `make fetch` in a copied course read the checkout's
    course.toml so)."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


# ---- measurements a test reports (record_property("measured", "...")): printed after the run ----
_MEASURED: list[str] = []
# ---- and the real components each passed test ran (uses(...)): counted after the run ----
COMPONENTS = ("sandbox", "warm", "cold", "browser", "PostgreSQL", "Slurm")
_RAN: dict[str, int] = dict.fromkeys(COMPONENTS, 0)


def pytest_runtest_logreport(report):
    if report.when == "call":
        _MEASURED.extend(value for key, value in getattr(report, "user_properties", []) if key == "measured")
        if report.passed:
            for key, value in getattr(report, "user_properties", []):
                if key == "component":
                    _RAN[value] += 1


def pytest_terminal_summary(terminalreporter):
    if _MEASURED:
        terminalreporter.section("measurements")
        for line in _MEASURED:
            terminalreporter.write_line(line)
    terminalreporter.section("real components")
    terminalreporter.write_line("tests that ran each real component and succeeded: "
                                + ", ".join(f"{name} {_RAN[name]}" for name in COMPONENTS))


# ---- under CI, a skip is a failure unless it is allowed here, with its reason ----------------
# (start of the test's id, pattern of the skip's reason, why that skip may happen in CI)
ALLOWED_SKIPS = [
    ("tests/test_warm_kernels.py::", r"no fork or pidfd here",
     "a system without fork or pidfd_open cannot have warm kernels at all (never on Linux, as in CI)"),
]


def allowed_skip(nodeid: str, reason: str) -> bool:
    import re
    return any(nodeid.startswith(start) and re.search(pattern, reason) for start, pattern, _ in ALLOWED_SKIPS)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


# which component each fixture being set up, or else the test itself, used (see uses())
_FIXTURES_SETTING_UP: list = []
_FIXTURE_USES: dict[int, set[str]] = {}
_TEST_USES: set[str] = set()


def uses(component: str) -> None:
    """Say that the fixture being set up (or else the test running) really uses `component`, one of
    COMPONENTS: each passed test that needs it (directly or through its fixtures) is counted."""
    assert component in COMPONENTS, component
    if _FIXTURES_SETTING_UP:
        _FIXTURE_USES.setdefault(id(_FIXTURES_SETTING_UP[-1]), set()).add(component)
    else:
        _TEST_USES.add(component)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    _FIXTURES_SETTING_UP.append(fixturedef)
    try:
        yield
    finally:
        _FIXTURES_SETTING_UP.pop()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _TEST_USES.clear()


def components_of(item) -> set[str]:
    found = set(_TEST_USES)
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in getattr(item, "fixturenames", ()):
        if defs.get(name):
            found |= _FIXTURE_USES.get(id(defs[name][-1]), set())
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.passed:
        report.user_properties = [*report.user_properties, *(("component", c) for c in sorted(components_of(item)))]
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if not allowed_skip(report.nodeid, reason):
            report.outcome = "failed"
            report.longrepr = (f"CI=true: this test skipped, and its skip is not allowed in CI "
                               f"(tests/conftest.py ALLOWED_SKIPS): {reason}")


# ---- one expensive batch per test session ------------------------------------------------

def run_once(tmp_path_factory, name: str, build) -> tuple[Path, dict]:
    """build(folder) -> JSON-able data, run once per test session although pytest-xdist may spread the
    tests that need it over several workers (its xdist_group marks do not hold them together with
    this pytest): the first worker to get here builds, the others wait for it and read the result."""
    import fcntl
    import traceback
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent                      # shared by the workers of this session
    folder = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done, failed = base / f"{name}.json", base / f"{name}.failed"
        if failed.exists():
            raise RuntimeError(f"building {name} failed in another worker:\n{failed.read_text()}")
        if not done.exists():
            folder.mkdir(exist_ok=True)
            try:
                data = build(folder)
            except BaseException:
                failed.write_text(traceback.format_exc())
                raise
            done.write_text(json.dumps(data))
        return folder, json.loads(done.read_text())


def grade_example_class(base: Path, sandbox: str) -> dict:
    """The example class (ada: the solutions, blank: the release, half: half the answers) graded as
    `make setup` grades it: `python -m autograder example`, run in this process with GRADER_HOME=base,
    so in its own grader home base/example/, with its feedback; then graded again (nothing to
    regrade). What the command printed is kept (test_example_apart reads it)."""
    import contextlib
    import io

    from autograder import __main__ as cli
    from autograder.grading import grade as grading
    mp = pytest.MonkeyPatch()
    mp.setenv("GRADER_HOME", str(base))
    mp.delenv("NBGRADER_DB_URL", raising=False)       # the command gives the example its own gradebook
    real_grade, runs = grading.grade, []
    mp.setattr(grading, "grade", lambda *args, **options: runs.append(real_grade(*args, **options)) or runs[-1])
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            code = cli.main(["example", "--workers", "2", "--sandbox", sandbox])
        assert code == 0 and len(runs) == 1, printed.getvalue()[-3000:]
        home = base / "example"
        results = sorted((home / "work" / "results").rglob("*.json"))
        stamps = {str(p): p.stat().st_mtime_ns for p in results}
        mp.setenv("GRADER_HOME", str(home))
        mp.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
        rerun = real_grade(STEP4, home / "class" / STEP4.name, workers=2, sandbox=sandbox, quiet=True, feedback=False)
        return {"run": runs[0], "rerun": rerun, "stamps": stamps, "printed": printed.getvalue(),
                "stamps_after_rerun": {str(p): p.stat().st_mtime_ns for p in results}}
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def example_class(tmp_path_factory) -> tuple[Path, dict]:
    """(the example's grading home, what grade_example_class returned): graded once per test session,
    shared by the modules that read it (test_grading, test_grader_proof, test_example_apart, the
    formgrader's browser test). The home is <the run's course grading home>/example, as `make setup`
    leaves it. Read it, never write into it."""
    box = bwrap_or_skip()
    from autograder.kernel.warm import why_cold
    uses("cold" if why_cold(box) else "warm")           # the grader's default: warm where it can
    base, data = run_once(tmp_path_factory, "example-class", lambda base: grade_example_class(base, box))
    return base / "example", data


def kernels_under(folder: Path) -> list[str]:
    """Command lines of the processes that name `folder` (a kernel names its connection file)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmdline:
                found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def bwrap_or_skip() -> str:
    """"bwrap", for a batch that grades student code: the grading tests run in the sandbox, never
    quietly without it. Where bwrap cannot run they skip and say why; with REQUIRE_SANDBOX=1 (CI)
    that is a failure."""
    from autograder.kernel import sandbox
    problem = sandbox.bwrap_problem()
    if problem is None:
        uses("sandbox")
        return "bwrap"
    if os.environ.get("REQUIRE_SANDBOX") == "1":
        pytest.fail(f"REQUIRE_SANDBOX=1, but the bwrap sandbox cannot run here: {problem} "
                    "(install Debian's bubblewrap: sudo make system-deps)", pytrace=False)
    pytest.skip(f"grades only in the bwrap sandbox, which cannot run here: {problem}")


@pytest.fixture
def bwrap() -> str:
    """"bwrap" for a test that runs code in the sandbox (bwrap_or_skip: a failure with REQUIRE_SANDBOX=1)."""
    return bwrap_or_skip()


def kernels_or_skip(sandbox: str, kernels: str) -> str:
    """`kernels` ("warm" or "cold") for a test that grades in them with `sandbox`. Where warm kernels
    cannot be had (autograder.kernel.warm.why_cold: in bwrap they need a grader run by root) a warm test
    skips and says why, never grading cold kernels in their place; with REQUIRE_WARM=1 (CI, run by
    root) that is a failure."""
    from autograder.kernel.warm import why_cold
    if kernels == "warm" and why_cold(sandbox):
        if os.environ.get("REQUIRE_WARM") == "1":
            pytest.fail(f"REQUIRE_WARM=1, but warm kernels cannot be had here: {why_cold(sandbox)}", pytrace=False)
        pytest.skip(f"warm kernels cannot be had here: {why_cold(sandbox)}")
    uses(kernels)
    return kernels


# ---- one JupyterHub for the whole run (tests/hub.py) ---------------------------------------------

@pytest.fixture(scope="session")
def hub_session(tmp_path_factory):
    """ONE JupyterHub for the test session, whichever modules and workers use it: `make hub`'s setup
    (local test accounts `hubt-*`, configuration, exchange, the step released, in a temporary folder),
    then the hub. Under pytest-xdist the first worker to get here starts it (a lock, as run_once) and
    the others read where it is; the worker that started it stops it when its session ends (the hub
    tests run as one module, on one worker, under --dist loadscope), removing the test accounts, and
    nothing of it is left listening. A skip without the hub (a failure with REQUIRE_HUB=1, as in CI)."""
    import fcntl
    from hub import hub_or_skip, start_hub, stop_hub
    hub_or_skip()
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    owner = False
    with open(base / "hub.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        info = base / "hub.json"
        if info.exists():
            hub = json.loads(info.read_text())
        else:
            hub = start_hub()
            owner = True
            info.write_text(json.dumps(hub))
    try:
        yield hub
    finally:
        if owner:
            stop_hub(hub)
