"""`make handout`: what students get, and nothing else, in `handout/` (`--to` elsewhere).

  release/<step>/        the student notebooks (`make release`), the due date in their header
  dlcourse/, pyproject.toml   the course package the notebooks import (`pip install .`)
  data/                  empty: `python -m dlcourse.data` fetches the corpus and checks its sha256
  requirements.txt       the student's packages, pinned (the grader-only ones left out)
  environment.yml, postBuild   Binder / repo2docker: the packages (torch's CPU build), then postBuild
                         installs dlcourse and fetches and verifies the corpus
  README.md              how to install on a laptop (torch's CPU build), on Binder, on a JupyterHub
                         through nbgitpuller (the link template)

Never in it: source/ (solutions and hidden tests), autograder/ (the grader and its checks),
solutions/, tests/, the gradebook or any grading result. `tests/test_handout.py` builds one and
searches every file for the instructors' solution lines and the hidden checks.
"""

from __future__ import annotations

import shutil
import urllib.parse
from pathlib import Path

from ..course import ENGINE_ROOT, RELEASE, ROOT
from ..errors import SetupError, UsageError

GRADER_ONLY = {
    "psycopg2-binary",
    "latex2mathml",
    "nh3",
    "jupyter-server-mathjax",  # gradebook driver, feedback formulas, sanitiser,
    "confusable-homoglyphs",
}  # formgrader MathJax, look-alike ids
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def student_requirements() -> list[str]:
    lines = []
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        spec = line.split("#", 1)[0].strip()
        if spec and spec.split("==")[0].strip().lower() not in GRADER_ONLY:
            lines.append(spec)
    return lines


def nbgitpuller_link(
    hub: str, repo: str, step: str, branch: str = "main", notebook: str | None = None, interface: str = "lab"
) -> str:
    """The link that clones (or updates, never overwriting a student's edits) `repo` into each student's
    home on the JupyterHub `hub` and opens `notebook` (default: the step's first)."""
    from ..steps import find_step

    notebook = notebook or f"{find_step(step).notebooks()[0]}.ipynb"
    folder = repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    urlpath = f"{interface}/tree/{folder}/release/{step}/{notebook}"
    query = urllib.parse.urlencode({"repo": repo, "branch": branch, "urlpath": urlpath})
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def environment_yml(requirements: list[str]) -> str:
    pins = "\n".join(f"      - {r}" for r in requirements if not r.startswith("torch"))
    torch = next(r for r in requirements if r.startswith("torch"))
    return f"""# Binder / repo2docker and conda: the packages of requirements.txt, torch's CPU build (no CUDA
# wheels). The course package and the corpus come in postBuild (no editable install here).
name: dl-course-student
channels:
  - conda-forge
dependencies:
  - python=3.11
  - pip
  - pip:
      - --extra-index-url {TORCH_CPU_INDEX}
      - {torch}
{pins}
"""


POST_BUILD = """#!/bin/bash
# Binder / repo2docker runs this after installing environment.yml: the course package, then the
# corpus, fetched and checked against its sha256 (the build fails if it does not match).
set -euo pipefail
python -m pip install --no-deps .
python -m dlcourse.data
"""


def readme(step: str, requirements: list[str]) -> str:
    torch = next(r for r in requirements if r.startswith("torch"))
    return f"""# {step}: the student hand-out

The notebooks are in `release/{step}/`; work through them in order. They import the small `dlcourse`
package from this folder and read the corpus from `data/`.

## On a Linux laptop

Python 3.11. Install PyTorch's **CPU build** first: a plain `pip install torch` from PyPI pulls
several gigabytes of CUDA libraries you do not need for this course.

```bash
python3.11 -m venv .venv && . .venv/bin/activate
pip install {torch} --index-url {TORCH_CPU_INDEX}
pip install -r requirements.txt          # the rest, pinned (torch is already there)
pip install --no-deps .                  # the course package, dlcourse
python -m dlcourse.data                  # the corpus into data/, checked against its sha256
jupyter lab release/{step}
```

(macOS and Windows: `pip install {torch}` is the CPU build already.)

## On Binder or repo2docker

`environment.yml` and `postBuild` in this folder are the configuration: push this folder to a
repository and open it on Binder; `postBuild` installs `dlcourse` and fetches the corpus.

## On a JupyterHub (nbgitpuller)

Your instructor gives you a link of this shape; it copies this folder into your home on the hub (an
update later never overwrites your edits) and opens the first notebook:

    https://<hub>/hub/user-redirect/git-pull?repo=<this repository, URL-encoded>&branch=main&urlpath=lab/tree/<folder>/release/{step}/<the first notebook>

Instructors: `python -m autograder handout --hub https://hub.example.edu --repo https://github.com/<you>/<handout>`
prints the exact link.

## Handing in

Your instructor tells you how: nbgrader's Assignments panel on a JupyterHub, or the notebooks
uploaded to the course's LMS. Before you hand in: Kernel, Restart Kernel and Run All Cells.
"""


def copy_package(dest: Path) -> None:
    """dlcourse/ and pyproject.toml into `dest`, as students get them (the hand-out, the students' image
    on Kubernetes): dlcourse without grading.py, the graded kernel's side of the grader's wire, which a
    student's own kernel never runs (what students get holds nothing of the grader)."""
    shutil.copytree(
        ENGINE_ROOT / "dlcourse",
        Path(dest) / "dlcourse",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "grading.py"),
    )
    shutil.copy2(ENGINE_ROOT / "pyproject.toml", Path(dest) / "pyproject.toml")


def build_handout(step: str, dest: Path | None = None, say=print) -> Path:
    dest = Path(dest or ROOT / "handout").resolve()
    if dest == ROOT or ROOT.is_relative_to(dest):
        raise UsageError(f"{dest} would hold the course itself: give a folder of its own")
    if dest.exists():
        if not (dest / ".course-handout").exists():
            raise UsageError(
                f"{dest} exists and is not a hand-out built here: give another folder (nothing was changed)"
            )
        shutil.rmtree(dest)
    notebooks = sorted((RELEASE / step).glob("*.ipynb"))
    if not notebooks:
        raise SetupError(f"release/{step} holds no notebooks: run `make release` first")
    (dest / "release" / step).mkdir(parents=True)
    for path in notebooks:
        shutil.copy2(path, dest / "release" / step / path.name)
    copy_package(dest)
    (dest / "data").mkdir()
    (dest / "data" / ".gitkeep").write_text("")
    requirements = student_requirements()
    (dest / "requirements.txt").write_text(
        "# The course's packages for students, pinned. Install torch's CPU build first (README.md).\n"
        + "\n".join(requirements)
        + "\n",
        encoding="utf-8",
    )
    (dest / "environment.yml").write_text(environment_yml(requirements), encoding="utf-8")
    (dest / "postBuild").write_text(POST_BUILD, encoding="utf-8")
    (dest / "postBuild").chmod(0o755)
    (dest / "README.md").write_text(readme(step, requirements), encoding="utf-8")
    (dest / ".gitignore").write_text(".venv/\n__pycache__/\n*.egg-info/\ndata/*.txt\n.ipynb_checkpoints/\n")
    (dest / ".course-handout").write_text(f"{step}\n")
    shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
    say(f"handout: {len(notebooks)} notebooks, dlcourse, requirements.txt, environment.yml and postBuild in {shown}/")
    return dest
