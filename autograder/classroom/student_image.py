"""The students' image on Kubernetes: what every student's server runs, holding only what a student may
see. The course image (`[hub] image`: the course at /course, as the grading Job's) holds the grader, its
checks, the instructors' sources and solutions; a student's server must not, as the graded kernel must
not reach them. So students get an image of their own (`[hub] student_image`), built from a context
that `make hub-values` writes beside the values (.hub/k8s/student-image/) and that holds nothing else:

  Dockerfile         the recipe (DOCKERFILE): Python 3.11, the student environment in /srv/student/venv
                     (torch's CPU build, then the rest pinned), dlcourse installed from /srv/student,
                     the corpus checked (fetched if data/ was empty), the user jovyan (uid 1000)
  requirements.txt   the students' pins of the hand-out (requirements.txt without the grader's packages)
                     plus jupyterhub at the chart's hub's version, for jupyterhub-singleuser
  dlcourse/, pyproject.toml   the course package as the hand-out has it (without grading.py)
  data/              the corpus, when `make data` has fetched it

  docker build -t <[hub] student_image> .hub/k8s/student-image

The Dockerfile copies only the ALLOWED paths of the context, and the context holds only those
(tests/test_hub_values.py checks both, and searches the context for solutions and hidden checks).
The Assignments tab (nbgrader), JupyterLab and ipywidgets come from the pins; each user's Jupyter
configuration, the short-polling Execute's copy beside it, is mounted from the values.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..authoring.handout import TORCH_CPU_INDEX, copy_package, student_requirements
from ..course import ENGINE_ROOT

HOME = "/srv/student"  # where the image holds the student environment: nothing of the course's /course
SINGLEUSER = f"{HOME}/venv/bin/jupyterhub-singleuser"
# What the Dockerfile may copy from its context, and all the context holds: nothing else may pass.
ALLOWED = ("requirements.txt", "pyproject.toml", "dlcourse/", "data/")
CORPUS = "tinyshakespeare.txt"
DOCKERFILE = """\
# The students' servers of the course on Kubernetes: the student environment and the dlcourse package,
# nothing of the grader. Written by `make hub-values` (autograder/classroom/student_image.py): do not
# edit, rerun it. Build from this folder: docker build -t <course.toml [hub] student_image> .
FROM python:3.11-slim
RUN useradd --create-home --uid 1000 --shell /bin/bash jovyan
COPY requirements.txt pyproject.toml {home}/
COPY dlcourse/ {home}/dlcourse/
COPY data/ {home}/data/
RUN python -m venv {home}/venv \\
 && {home}/venv/bin/pip install --no-cache-dir {torch} --index-url {torch_index} \\
 && {home}/venv/bin/pip install --no-cache-dir -r {home}/requirements.txt \\
 && {home}/venv/bin/pip install --no-cache-dir --no-deps --editable {home} \\
 && {home}/venv/bin/python -m dlcourse.data \\
 && chmod -R a+rX {home}
ENV PATH={home}/venv/bin:$PATH
USER jovyan
WORKDIR /home/jovyan
"""


def requirements(jupyterhub: str) -> list[str]:
    """The image's pins: the hand-out's, then jupyterhub at the chart's hub's version."""
    return student_requirements() + [f"jupyterhub=={jupyterhub}"]


def dockerfile() -> str:
    torch = next(r for r in student_requirements() if r.startswith("torch=="))
    return DOCKERFILE.format(home=HOME, torch=torch, torch_index=TORCH_CPU_INDEX)


def write_context(folder: Path, jupyterhub: str) -> Path:
    """The image's build context, made afresh in `folder`: the Dockerfile and the ALLOWED paths."""
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "Dockerfile").write_text(dockerfile(), encoding="utf-8")
    (folder / "requirements.txt").write_text(
        "# The students' image's packages, pinned (autograder/classroom/student_image.py).\n"
        + "\n".join(requirements(jupyterhub))
        + "\n",
        encoding="utf-8",
    )
    copy_package(folder)
    (folder / "data").mkdir()
    corpus = ENGINE_ROOT / "data" / CORPUS
    if corpus.is_file():  # else the build fetches it (python -m dlcourse.data checks its sha256 either way)
        shutil.copy2(corpus, folder / "data" / CORPUS)
    else:
        (folder / "data" / ".keep").write_text("")
    return folder
