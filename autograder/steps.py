"""A step of the course as a value.

A step is a folder `source/<step>/` holding its instructor notebooks and a check package
`source/<step>/checks/` (its hidden tests, grader-only: never released, never in a kernel).
The package's `__init__.py` may say, as module-level names:

    TITLE = "Step 5: ..."      # the step's name where people read it (an LMS's gradebook column)
    CATCH_UP = "<an earlier step>"   # source/<it>/<it>.ipynb -> solutions/<it>.ipynb, to catch a student up
    BONUS_PREFIX = "bonus_"    # grade ids counted apart from the step's required total
    DATA = ["corpus.txt"]      # files of data/ the step's kernels read
    SUITES = {...}             # objects its checks serve to a student's code, by suite name

TITLE, CATCH_UP, BONUS_PREFIX and DATA are read from the file without importing the package
(which imports what its judges use) when each is set once, to a literal, at the top level; else
from the imported package.

Every command takes `--step` (default: the only step, or the newest by name). Nothing in the
engine names a step.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .course import ROOT
from .errors import SetupError, UsageError

CHECKS_PACKAGE = "checks"
MODULE_PREFIX = "course_checks"  # a step's check package is imported as course_checks.<step_with_underscores>
# The engine's files whose change regrades every step (with checks/ and runtime/), relative to autograder/.
ENGINE_FILES = ("intake/assemble.py", "grading/judging.py", "plugin.py")
ENGINE_FOLDERS = ("kernel", "checks", "runtime")  # every module in them: how a kernel runs and is judged


class UnknownStep(UsageError):
    """No such step, or a folder that is not a gradable step."""


@dataclass(frozen=True)
class Step:
    name: str
    root: Path = ROOT

    # -- folders ------------------------------------------------------------------------------
    @property
    def source(self) -> Path:
        return self.root / "source" / self.name

    @property
    def release(self) -> Path:
        return self.root / "release" / self.name

    @property
    def solutions(self) -> Path:
        return self.root / "solutions" / self.name

    @property
    def checks_dir(self) -> Path:
        return self.source / CHECKS_PACKAGE

    def notebooks(self) -> list[str]:
        """The step's notebooks, in order, without the .ipynb suffix."""
        return sorted(p.stem for p in self.source.glob("*.ipynb"))

    # -- what its check package says ----------------------------------------------------------
    @cached_property
    def package(self):
        """The step's check package, imported (once) with all its modules."""
        return load_package(self)

    def declared(self, name: str, default=None):
        """What the check package sets `name` to: a literal read from its __init__.py (a grading
        process that only records and reports need not import torch for a title), else the
        imported package's attribute."""
        if module_name(self.name) not in sys.modules:
            value = self._declared_literals.get(name, NOT_LITERAL)
            if value is not NOT_LITERAL:
                return default if value is UNSET else value
        return getattr(self.package, name, default)

    @cached_property
    def _declared_literals(self) -> dict:
        """DECLARED names as literal_assignment reads them, the file parsed once per Step value
        (a report asks for BONUS_PREFIX once per grade cell)."""
        return literal_assignments(self.checks_dir / "__init__.py", DECLARED)

    @property
    def title(self) -> str:
        return self.declared("TITLE", self.name)

    @property
    def catch_up(self) -> str | None:
        return self.declared("CATCH_UP")

    @property
    def bonus_prefix(self) -> str | None:
        return self.declared("BONUS_PREFIX")

    @property
    def data(self) -> list[Path]:
        return [self.root / "data" / name for name in self.declared("DATA", [])]

    @property
    def suites(self) -> dict:
        return getattr(self.package, "SUITES", {})

    @property
    def checks(self) -> dict:
        """grade_id -> Check: this step's hidden tests."""
        from .checks.framework import checks_of

        return checks_of(self.package.__name__)

    def hidden_test_count(self) -> int:
        """How many hidden test cells the step's instructor notebooks hold (hidden_grade_ids)."""
        return len(self.hidden_grade_ids())

    def hidden_grade_ids(self) -> set[str]:
        """The grade ids of the step's hidden test cells (a cell is one line,
        `hidden("<grade_id>", globals())`), read from the instructor notebooks without importing the
        checks (`make steps`, the class report)."""
        import json
        import re

        found = set()
        for path in sorted(self.source.glob("*.ipynb")):
            try:
                cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
            except (OSError, ValueError):
                continue
            for cell in cells:
                text = (
                    "".join(cell.get("source", "")) if isinstance(cell.get("source"), list) else cell.get("source", "")
                )
                found.update(re.findall(r"""\bhidden\(\s*["']([^"']+)["']""", text or ""))
        return found

    def is_bonus(self, grade_id: str) -> bool:
        return bool(self.bonus_prefix) and grade_id.startswith(self.bonus_prefix)

    def fingerprint(self) -> str:
        """Changes whenever this step's notebooks or checks, the course plugin or the engine's grading
        code change; another step's changes leave it alone."""
        digest = hashlib.sha256()
        paths = (
            sorted(self.source.glob("*.ipynb"))
            + sorted(self.release.glob("*.ipynb"))
            + sorted(self.checks_dir.rglob("*.py"))
            + engine_files()
            + [self.root / "source" / "course_plugin.py"]
        )  # a course may have no plugin
        for path in paths:
            if path.exists():
                rel = path.relative_to(self.root) if path.is_relative_to(self.root) else Path(path.name)
                digest.update(str(rel).encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()


def engine_files() -> list[Path]:
    """Every module of ENGINE_FOLDERS, then ENGINE_FILES, where they are; a file or folder named there and
    not found is an error, not a file left out (a moved file would silently stop its changes from
    regrading)."""
    engine = Path(__file__).parent
    missing = [name for name in ENGINE_FOLDERS if not (engine / name / "__init__.py").is_file()]
    missing += [name for name in ENGINE_FILES if not (engine / name).is_file()]
    paths = [path for folder in ENGINE_FOLDERS for path in sorted((engine / folder).glob("*.py"))]
    paths += [engine / name for name in ENGINE_FILES]
    if missing:
        raise SetupError(
            f"the grader's fingerprint names engine files that are not there: "
            f"{', '.join('autograder/' + name for name in missing)}; name each where it is now "
            f"in ENGINE_FILES or ENGINE_FOLDERS (autograder/steps.py), so that changing it still regrades"
        )
    return paths


NOT_LITERAL, UNSET = object(), object()
DECLARED = ("TITLE", "CATCH_UP", "BONUS_PREFIX", "DATA")


def literal_assignments(path: Path, names) -> dict:
    """{name: literal_assignment(...)} for each of `names`, the file parsed once."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {name: NOT_LITERAL for name in names}
    return {name: literal_assignment(tree, name) for name in names}


def literal_assignment(tree: ast.Module, name: str):
    """The value a parsed module gives `name`: UNSET if nothing in it binds it (and it imports no
    `*`), the literal if one top-level `name = <literal>` is its only binding, else NOT_LITERAL (a
    computed value, an import, a second binding: ask the imported module)."""
    bindings = [
        node
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load))
        or (isinstance(node, ast.alias) and (node.asname or node.name).split(".")[0] in (name, "*"))
        or (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name)
        or (isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names)
    ]
    if not bindings:
        return UNSET
    top = [
        stmt
        for stmt in tree.body
        if isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    ]
    if len(bindings) != 1 or len(top) != 1:
        return NOT_LITERAL
    try:
        return ast.literal_eval(top[0].value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def module_name(step_name: str) -> str:
    return f"{MODULE_PREFIX}.{''.join(ch if ch.isalnum() else '_' for ch in step_name)}"


def load_package(step: Step):
    """Import source/<step>/checks/ as course_checks.<step> with every module in it (each registers
    its checks); a step without a check package is not a step."""
    name = module_name(step.name)
    if name in sys.modules:
        return sys.modules[name]
    init = step.checks_dir / "__init__.py"
    if not init.exists():
        raise UnknownStep(f"{step.source} has no check package ({CHECKS_PACKAGE}/__init__.py): not a gradable step")
    if MODULE_PREFIX not in sys.modules:
        parent = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(MODULE_PREFIX, None, is_package=True))
        parent.__path__ = []
        sys.modules[MODULE_PREFIX] = parent
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(step.checks_dir)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    try:
        spec.loader.exec_module(package)
        for path in sorted(step.checks_dir.glob("*.py")):
            if path.stem != "__init__":
                importlib.import_module(f"{name}.{path.stem}")
    except BaseException:
        unload(step)
        raise
    return package


def unload(step: Step) -> None:
    """Forget a step's imported check package (its modules and registered checks): the next Step
    value imports it afresh (after `new-check` wrote into it)."""
    from .checks.framework import REGISTRIES

    name = module_name(step.name)
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    REGISTRIES.pop(name, None)


def all_steps(root: Path = ROOT) -> list[Step]:
    """Every step in source/ (a folder with notebooks and a check package), ordered by name."""
    return [
        Step(p.name, root)
        for p in sorted((root / "source").iterdir())
        if p.is_dir() and (p / CHECKS_PACKAGE / "__init__.py").exists() and any(p.glob("*.ipynb"))
    ]


def find_step(name: str | None = None, root: Path = ROOT) -> Step:
    """The step called `name`; without a name, the only step, or the newest (last by name)."""
    steps = all_steps(root)
    if name is None:
        if not steps:
            raise UnknownStep(
                f"no step in {root / 'source'}: a step is source/<step>/ with notebooks and a {CHECKS_PACKAGE}/ package"
            )
        return steps[-1]
    for step in steps:
        if step.name == name:
            return step
    known = ", ".join(s.name for s in steps) or "none"
    raise UnknownStep(f"no step called {name!r} in {root / 'source'} (steps: {known})")


def step_of_notebook(path: Path | str, root: Path = ROOT) -> Step | None:
    """The step a notebook folder belongs to (source/<step>/, release/<step>/, solutions/<step>/,
    a student's notebooks/<step>/ or a submission's .../<step>/), if its folder names one."""
    names = {s.name: s for s in all_steps(root)}
    for part in reversed(Path(path).resolve().parts):
        if part in names:
            return names[part]
    return None
