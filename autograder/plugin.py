"""What a course adds to the grading engine, and the engine's one way to ask for it.

The engine grades notebooks of any course; a course tells it, through a `CoursePlugin` defined in
`source/course_plugin.py` (a module-level `plugin`), what only the course knows:

* `kernel_files(step)`: what of the repository a graded kernel may read (read-only), besides the
  grader's runtime: the course's own package, the step's data;
* `kernel_env(step)`: environment variables its kernels need;
* `preimport(step)`: modules a kernel imports before the student's first cell runs (a warm kernel
  template imports them once);
* `encode(obj, serve)` and `handle(objects, message)`: objects (a neural-network layer, say) that its
  checks hand to a student's code: sent by value as plain data, or kept in the grader under a token
  (`serve(obj)`) and called over the probe server's link (`handle`: the course's requests).

A course without a plugin gets this base class: plain data only, nothing else readable.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
import sys
from pathlib import Path

from .course import ROOT
from .errors import GraderError, SetupError

PLUGIN_FILE = Path("source") / "course_plugin.py"


class NotHandled(GraderError):
    """`encode` does not know this object: the engine sends it as plain data."""


class CoursePlugin:
    def kernel_files(self, step) -> list[Path]:
        return [p for p in step.data if p.exists()]

    def kernel_env(self, step) -> dict[str, str]:
        return {}

    def preimport(self, step) -> list[str]:
        return []

    def encode(self, obj: object, serve: Callable[[object], str]) -> object:
        raise NotHandled

    def handle(self, objects: dict, message: dict, state: dict) -> dict:
        """One request of the kernel's link about served objects (`objects`: token -> object); `state`:
        a dict that lives as long as the notebook's probe server."""
        raise KeyError(f"unknown request {message.get('op')!r}")


def load_plugin(root: Path = ROOT) -> CoursePlugin:
    """The course's plugin (source/course_plugin.py's `plugin`), or the base one if there is none."""
    path = root / PLUGIN_FILE
    if not path.exists():
        return CoursePlugin()
    name = "course_plugin"
    module = sys.modules.get(name)
    if module is None or Path(getattr(module, "__file__", "")) != path:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    plugin = getattr(module, "plugin", None)
    if not isinstance(plugin, CoursePlugin):
        raise SetupError(f"{path} must define `plugin`, an instance of autograder.plugin.CoursePlugin")
    return plugin


def kernel_readable(step) -> list[Path]:
    """What of the repository a graded kernel may read: the runtime that answers the grader's probes
    (autograder/__init__.py and autograder/runtime/, which know no check) and what the course says."""
    engine = Path(__file__).resolve().parent
    files = [engine / "__init__.py", engine / "runtime", *load_plugin(step.root).kernel_files(step)]
    missing = [str(f) for f in files if not Path(f).exists()]
    if missing:  # left out, the kernel would fail on the student's first import of it, saying nothing of why
        raise SetupError(
            f"a graded kernel is to read {', '.join(missing)}, which is not there: the course plugin "
            f"(source/course_plugin.py, kernel_files) names it; install or restore it, or stop naming it"
        )
    return [Path(f) for f in files]
