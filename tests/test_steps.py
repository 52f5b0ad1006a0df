"""A step's declared names (TITLE, CATCH_UP, BONUS_PREFIX, DATA) are read without importing its check
package where the file gives them as literals, and are what the imported package says. Its fingerprint
hashes every engine file it names: one not found is an error, not a file left out."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, STEP
from autograder.steps import NOT_LITERAL, UNSET, literal_assignments

NAMES = ("title", "catch_up", "bonus_prefix", "data")


def test_declared_names_match_the_imported_package_and_import_nothing():
    """In a fresh process: the names read from the file, then the package imported and read again."""
    code = f"""
import sys
from autograder.steps import find_step, module_name
step = find_step({STEP!r})
read = [repr(getattr(step, n)) for n in {NAMES!r}]
assert module_name(step.name) not in sys.modules and "torch" not in sys.modules, "the checks were imported"
step.package
assert module_name(step.name) in sys.modules
assert read == [repr(getattr(step, n)) for n in {NAMES!r}], (read, [repr(getattr(step, n)) for n in {NAMES!r}])
print(read)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Step 4" in done.stdout and "bonus_" in done.stdout


@pytest.mark.parametrize("source, value", [
    ('TITLE = "Step 9"\n', "Step 9"),
    ('X = 1\n', UNSET),                                              # not set: the default
    ('TITLE = "a" + "b"\n', NOT_LITERAL),                            # computed
    ('TITLE = "a"\nTITLE = "b"\n', NOT_LITERAL),                     # set twice
    ('from .meta import TITLE\n', NOT_LITERAL),                      # imported
    ('from .meta import *\n', NOT_LITERAL),                          # may be imported
    ('TITLE = "a"\nif True:\n    TITLE = "b"\n', NOT_LITERAL),       # rebound below
    ('TITLE = "a"\ndef TITLE():\n    pass\n', NOT_LITERAL),          # rebound by a def
    ('TITLE, X = "a", 1\n', NOT_LITERAL),                            # not a plain assignment
    ('def f(:\n', NOT_LITERAL),                                      # not Python
])
def test_a_literal_is_taken_only_when_it_is_the_one_binding(tmp_path, source, value):
    init = tmp_path / "__init__.py"
    init.write_text(source)
    found = literal_assignments(init, ["TITLE"])["TITLE"]
    assert found is value if value in (UNSET, NOT_LITERAL) else found == value


def test_a_computed_name_comes_from_the_imported_package(tmp_path):
    from autograder.steps import Step, unload
    root = tmp_path / "course"
    checks = root / "source" / "step-09" / "checks"
    checks.mkdir(parents=True)
    (checks / "__init__.py").write_text('TITLE = "Step " + str(9)\nDATA = ["a.txt"]\n')
    step = Step("step-09", root)
    try:
        assert step.title == "Step 9" and step.data == [root / "data" / "a.txt"] and step.catch_up is None
    finally:
        unload(step)


def test_a_missing_engine_file_of_the_fingerprint_is_an_error(monkeypatch):
    """A file of the engine moved away from where the fingerprint names it would stop its changes from
    regrading: the fingerprint refuses, naming it, instead of hashing the files that are left."""
    from autograder import steps
    from autograder.errors import SetupError
    step = steps.find_step(STEP)
    assert all(path.is_file() for path in steps.engine_files())
    before = step.fingerprint()
    monkeypatch.setattr(steps, "ENGINE_FILES", (*steps.ENGINE_FILES, "kernel/moved_away.py"))
    with pytest.raises(SetupError, match=r"autograder/kernel/moved_away\.py.*ENGINE_FILES"):
        step.fingerprint()
    monkeypatch.setattr(steps, "ENGINE_FOLDERS", (*steps.ENGINE_FOLDERS, "moved_folder"))
    with pytest.raises(SetupError, match=r"autograder/moved_folder.*ENGINE_FOLDERS"):
        step.fingerprint()
    monkeypatch.undo()
    assert step.fingerprint() == before


def test_every_module_that_runs_or_judges_a_kernel_is_in_the_fingerprint():
    """A change to any limit (kernel/limits.py), the sandbox, the relay or the probe server regrades: every
    module of kernel/, checks/ and runtime/ is hashed, not a list of them that a new module misses."""
    from autograder import steps
    engine = Path(steps.__file__).parent
    hashed = set(steps.engine_files())
    for folder in ("kernel", "checks", "runtime"):
        modules = set((engine / folder).glob("*.py"))
        assert modules and modules <= hashed, sorted(map(str, modules - hashed))
    assert engine / "kernel" / "limits.py" in hashed
