"""The grader's import structure (.importlinter): no circles between its modules and folders, its layers
kept, the runtime a graded kernel is given importing nothing else of the grader, the hidden tests'
framework free of grading and records; pyflakes' defects and pycodestyle's errors in none of its code, and
its code in ruff's format; the records
and the checks' framework strictly typed (mypy --strict); nbgrader's gradebook opened by one module."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / args[0]), *args[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_are_kept():
    done = _run("lint-imports", "--config", ".importlinter", "--no-cache")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_a_circle_or_an_upward_import_breaks_a_contract(tmp_path):
    """The contracts can fail: a copy of the package with the runtime importing the course's settings
    (an upward import, and a circle through them) is refused by both."""
    import shutil
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "autograder", copy / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "dlcourse", copy / "dlcourse", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", copy / ".importlinter")
    wire = copy / "autograder" / "runtime" / "wire.py"
    wire.write_text(wire.read_text() + "\n\ndef _settings():\n    from autograder import course  # noqa: F401\n")
    course = copy / "autograder" / "course.py"
    course.write_text(course.read_text() + "\n\ndef _wire():\n    from .runtime import wire  # noqa: F401\n")
    done = subprocess.run([str(BIN / "lint-imports"), "--config", ".importlinter", "--no-cache"], cwd=copy,
                          capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(copy), "PATH": ""})
    assert done.returncode != 0
    assert "No circles between the modules and folders of autograder/ BROKEN" in done.stdout, done.stdout[-3000:]
    assert "The grader's layers, highest first BROKEN" in done.stdout


LINTED = ("autograder", "dlcourse", "source/course_plugin.py", "source/step-04/checks", "benchmarks")
FORMATTED = ("autograder", "dlcourse", "source/course_plugin.py", "benchmarks")


def test_no_pyflakes_or_pycodestyle_error_in_the_course_code():
    """ruff's rules of pyproject.toml ([tool.ruff.lint]: pyflakes' defects and pycodestyle's errors)."""
    done = _run("ruff", "check", "--no-cache", *LINTED)
    assert done.returncode == 0, done.stdout[-4000:]


def test_the_grader_and_the_course_package_are_in_ruffs_format():
    """One format for the grader, the course package and the benchmarks (`ruff format`; dlcourse/head.py,
    the handout's code as printed, left out by pyproject.toml), so that a change shows as what it changes."""
    done = _run("ruff", "format", "--check", "--no-cache", *FORMATTED)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "would be reformatted" not in done.stdout


def test_the_format_check_finds_an_unformatted_module(tmp_path):
    """The format check can fail: a module written the old way (aligned comments, a hanging indent) is
    reported, with the project's settings."""
    import shutil
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "module.py").write_text("LIMIT = 4      # aligned\nvalue = dict(a=1,\n             b=2)\n")
    done = subprocess.run([str(BIN / "ruff"), "format", "--check", "--no-cache", "module.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "module.py" in done.stdout, done.stdout + done.stderr


def test_only_the_records_gradebook_module_opens_nbgraders_gradebook():
    """One module reads and writes nbgrader's gradebook (autograder/records/gradebook.py): no other module
    of the grader imports nbgrader's database API or reaches into a gradebook's database session. (import-linter
    cannot forbid a sub-module of an external package: this reads every module's syntax tree.)"""
    import ast
    allowed = {ROOT / "autograder" / "records" / "gradebook.py"}
    found = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nbgrader.api"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}")
            elif isinstance(node, ast.Import) and any(a.name.startswith("nbgrader.api") for a in node.names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports nbgrader.api")
            elif isinstance(node, ast.Attribute) and node.attr in ("Gradebook", "db") and \
                    isinstance(node.value, ast.Name) and node.value.id in ("api", "gb", "gradebook"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert found == [], "\n".join(found)
    # and the check can fail: the module that may, does
    text = (ROOT / "autograder" / "records" / "gradebook.py").read_text(encoding="utf-8")
    assert "from nbgrader.api import Gradebook" in text and "gb.db.query" in text


@pytest.mark.slow      # mypy on its own, without a cache: 5 to 7 s of CPU; `make lint` runs the same mypy
def test_the_records_and_the_checks_are_strictly_typed():
    """mypy --strict on autograder/records and every module of autograder/checks, the probe server included
    (pyproject.toml's [tool.mypy])."""
    done = _run("mypy", "--cache-dir=/dev/null", "--no-color-output")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def _reads_besides_the_store(source: str) -> list[str]:
    """What a module does to read results other than `Store.load`: the gradebook's module, a store's other
    readers, a file opened or read, JSON parsed."""
    import ast
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(("gradebook", "json")):
            found.append(f"{node.lineno}: imports from {node.module}")
        elif isinstance(node, ast.Import) and any(a.name in ("json", "sqlite3") for a in node.names):
            found.append(f"{node.lineno}: imports {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "results", "result", "result_file", "times", "recorded_times", "notebook_times", "read_text",
                "read_bytes", "glob", "rglob"):
            found.append(f"{node.lineno}: .{node.func.attr}()")
        elif isinstance(node, ast.Attribute) and node.attr == "url":
            found.append(f"{node.lineno}: .url (the gradebook's address)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            found.append(f"{node.lineno}: open()")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_the_class_report_reads_results_through_the_stores_load_only():
    """`make insights` (autograder/publish/insights.py) reads the records only through `Store.load`: no gradebook,
    no result or times file of its own, no other reader of the store."""
    source = (ROOT / "autograder" / "publish" / "insights.py").read_text(encoding="utf-8")
    assert _reads_besides_the_store(source) == []
    assert "store.load(step)" in source
    # and the check can fail
    assert _reads_besides_the_store("store.results(step.name)\nimport json\nopen('x')\nstore.times('s', 'a')\n") == [
        "1: .results()", "2: imports json", "3: open()", "4: .times()"]


# What a module that runs, serves or judges a graded kernel may declare as a number of its own: names
# that are not limits, each with why. Every other number such a module declares at its top level is a
# limit, and a limit is declared in autograder/kernel/limits.py, once, with its reason.
NOT_LIMITS = {
    ("kernel/shortpolls.py", "POLL_STEP"): "a cadence: how often a kernel's channel is polled (and, in execute.py, "
                                            "a running cell's clocks read)",
    ("kernel/execute.py", "RECONNECT_MS"): "a cadence: how soon a refused client socket tries again",
    ("kernel/relay.py", "CHUNK"): "a buffer size for each read, not a bound on what is read",
    ("kernel/relay.py", "GREETING"): "the ZMTP 3 protocol's greeting length",
    ("kernel/kernel_template.py", "MNT_DETACH"): "a Linux flag of umount2",
    ("kernel/sandbox.py", "UID_RANGE"): "where a sandboxed kernel's uid is drawn from, not an amount it may use",
    ("kernel/cgroups.py", "_TICK"): "the machine's clock ticks per second",
    ("checks/casekey.py", "KEY_BYTES"): "the case key's length, a cryptographic choice",
}
# The runtime is all of the grader a graded kernel is given and imports nothing else of it (a contract):
# its caps are declared there, once, and limits.py says so.
LIMITS_ELSEWHERE = ("runtime/plain.py", "runtime/wire.py")


def _top_level_numbers(path: Path) -> list[str]:
    """Names bound at the top level of `path` to a number or to arithmetic of numbers and such names."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def numeric(node) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        if isinstance(node, ast.BinOp):
            return numeric(node.left) and numeric(node.right)
        if isinstance(node, ast.UnaryOp):
            return numeric(node.operand)
        if isinstance(node, ast.Tuple):
            return bool(node.elts) and all(numeric(e) for e in node.elts)
        if isinstance(node, ast.Name):
            return node.id.isupper()
        if isinstance(node, ast.IfExp):
            return numeric(node.body) or numeric(node.orelse)
        return False

    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        if value is not None and numeric(value):
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def test_every_limit_on_a_kernel_is_declared_once_in_limits():
    """Every number the kernel's folder and the checks' folder declare at their top level is in
    kernel/limits.py, or is named in NOT_LIMITS with why it is not a limit (an allowlist: a new cap
    declared anywhere else fails here, naming it)."""
    engine = ROOT / "autograder"
    declared, strays = {}, []
    for path in sorted([*(engine / "kernel").glob("*.py"), *(engine / "checks").glob("*.py")]):
        rel = path.relative_to(engine).as_posix()
        for name in _top_level_numbers(path):
            if rel == "kernel/limits.py":
                declared[name] = rel
            elif (rel, name) not in NOT_LIMITS:
                strays.append(f"{rel}: {name}")
    assert not strays, ("numbers declared outside autograder/kernel/limits.py; declare each limit there, "
                        f"with its reason, or say in NOT_LIMITS why it is not one: {strays}")
    assert {"HARD_FACTOR", "INTERRUPT_GRACE", "MESSAGE_BYTES", "TMP_BYTES", "PROBE_REQUESTS",
            "KERNEL_PROCESSES"} <= set(declared)
    stale = [key for key in NOT_LIMITS if key[1] not in _top_level_numbers(engine / key[0])]
    assert not stale, f"NOT_LIMITS names what is no longer declared: {stale}"
    limits_text = (engine / "kernel" / "limits.py").read_text(encoding="utf-8")
    for rel in LIMITS_ELSEWHERE:
        for name in _top_level_numbers(engine / rel):
            assert f"{Path(rel).stem}.{name}" in limits_text, f"limits.py does not name {rel}'s {name}"


def test_the_limit_check_finds_a_stray_cap(tmp_path):
    """The check above can fail: a cap declared in a module of kernel/ is found, with arithmetic too."""
    module = tmp_path / "stray.py"
    module.write_text("import os\nLIMIT = 4 * 2**20\nNAME = 'x'\nTWICE = 2 * LIMIT\nflag = True\n")
    assert _top_level_numbers(module) == ["LIMIT", "TWICE"]


def test_a_hidden_test_run_without_a_grader_imports_no_nbgrader():
    """A hidden test cell run in a kernel with no grader (the instructor's, `make solutions`, plain
    `nbgrader autograde`) reaches autograder/selfgrade.py, which reads the cell's call through
    authoring/hidden.py: a kernel judging a hidden test loads neither nbgrader nor nbformat (about 1.8 s
    of CPU in every such kernel)."""
    code = ("import sys\nimport torch\n"
            "from autograder.runtime import hidden\n"
            "def scores_entrywise(q, k):\n"
            "    return q @ k.transpose(-2, -1)\n"
            "In = ['', 'def scores_entrywise(q, k):\\n    return q @ k.transpose(-2, -1)\\n']\n"
            "hidden('bonus_scores_entrywise', globals())\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'nbgrader', 'nbformat', 'nbconvert'}))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Hidden tests" in done.stdout, done.stdout[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]
