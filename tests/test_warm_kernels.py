"""Warm kernels forked from one template share nothing mutable: a notebook that patches torch, sets
module globals, writes into its folder and leaves a thread running changes nothing for the next
notebook forked from the same template, which gets the score and outputs a cold kernel gives it, and
the same per-process limits (memory, CPU, file size, no core file, processes, descriptors)."""
import json
import os

import pytest

from autograder.example import filled
from autograder.grading.grade import grade
from conftest import STEP4, bwrap_or_skip, kernels_or_skip, uses

pytestmark = pytest.mark.slow

NOTEBOOK = "02-the-head"


@pytest.fixture
def box() -> str:
    """The sandbox these notebooks are graded in: bwrap, never none where bwrap cannot run (a skip
    saying why; a failure with REQUIRE_SANDBOX=1). Warm kernels in bwrap need a grader run by root:
    run by another user this skips (a failure with REQUIRE_WARM=1)."""
    box = bwrap_or_skip()
    kernels_or_skip(box, "warm")
    return box


HOSTILE = r"""
import threading, time, builtins, torch, numpy, dlcourse
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: True
numpy.allclose = lambda *a, **k: True
dlcourse.HACKED = "yes"
builtins.EVIL = "yes"
open("left-behind.txt", "w").write("x")
import os; os.environ["LEFT_BEHIND"] = "yes"
threading.Thread(target=lambda: time.sleep(600), name="left-running", daemon=True).start()
"""

# what an honest kernel can see of the hostile one: printed in a cell of its own
LOOK = r"""
import os, threading, builtins, torch, numpy, dlcourse
print(sorted(os.listdir(".")))
print(sorted(t.name for t in threading.enumerate() if not t.name.startswith("Thread-")))
print(hasattr(builtins, "EVIL"), hasattr(dlcourse, "HACKED"), "LEFT_BEHIND" in os.environ)
print(torch.allclose(torch.zeros(1), torch.ones(1)), numpy.allclose(0, 1), bool((torch.zeros(1) == torch.ones(1)).all()))
import resource
print([resource.getrlimit(getattr(resource, f"RLIMIT_{n}")) for n in ("AS", "CPU", "FSIZE", "CORE", "NPROC", "NOFILE")])
"""


def _student(tmp_path, sid: str, extra_cell: str | None) -> None:
    """`sid`'s answered 02-the-head with `extra_cell` as the first answer cell's first lines."""
    nb = filled(STEP4, NOTEBOOK, lambda cid, i: True)
    if extra_cell:
        for cell in nb["cells"]:
            if cell["cell_type"] == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                cell["source"] = extra_cell + "\n" + src
                break
    # an added cell at the end shows what the kernel sees
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": LOOK, "outputs": [], "execution_count": None})
    folder = tmp_path / "class" / sid
    folder.mkdir(parents=True)
    (folder / f"{NOTEBOOK}.ipynb").write_text(json.dumps(nb))


def _text(text) -> str:
    return "".join(text) if isinstance(text, list) else text


def _graded(tmp_path, monkeypatch, box: str, kernels: str, students: dict) -> dict:
    home = tmp_path / f"home-{kernels}"
    # one worker with one thread: a template forks only while it is single-threaded, and with two
    # threads numpy's OpenBLAS keeps a thread of its own (then the kernels start cold: tested below)
    monkeypatch.setattr("autograder.shards.available_cores", lambda: 1)
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
    for sid, extra in students.items():
        if not (tmp_path / "class" / sid).exists():
            _student(tmp_path, sid, extra)
    run = grade(STEP4, tmp_path / "class", workers=1, sandbox=box, kernels=kernels, feedback=False, quiet=True)
    out = {}
    for r in (r for r in run["results"] if r["notebook"] == NOTEBOOK):
        # the grader's run as it was (the graded notebook shows the grader's words for what ran after a hidden test)
        nb = json.loads((home / "work" / "runs" / "step-04" / r["student"] / f"{r['notebook']}.ipynb").read_text())
        texts = ["".join(_text(o.get("text", "")) for o in c.get("outputs", []) if o.get("output_type") == "stream")
                 for c in nb["cells"] if c["cell_type"] == "code"]
        out[r["student"]] = {"scores": [(c["grade_id"], c["score"]) for c in r["cells"]], "outputs": texts,
                             "kernels": r.get("kernels"), "events": r.get("events")}
    return out


@pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "pidfd_open"), reason="no fork or pidfd here")
def test_an_honest_notebook_after_a_hostile_one_from_the_same_template(tmp_path, monkeypatch, box):
    # one worker: the hostile student's notebook ('a-hostile' sorts first) is forked from the
    # template before the honest one ('b-honest')
    students = {"a-hostile": HOSTILE, "b-honest": None}
    warm = _graded(tmp_path, monkeypatch, box, "warm", students)
    cold = _graded(tmp_path, monkeypatch, box, "cold", students)
    uses("cold")
    assert warm["a-hostile"]["kernels"] == "warm" and warm["b-honest"]["kernels"] == "warm", warm
    assert cold["b-honest"]["kernels"] == "cold"
    honest = warm["b-honest"]
    look = honest["outputs"][-1].splitlines()
    assert "left-behind.txt" not in look[0], "the hostile notebook's file is not in the honest one's folder"
    assert "left-running" not in look[1], look
    assert look[2] == "False False False" and look[3] == "False False False", look
    # the hostile notebook did see its own changes (the test would prove nothing otherwise)
    mine = warm["a-hostile"]["outputs"][-1].splitlines()
    assert "left-behind.txt" in mine[0] and "left-running" in mine[1] and mine[2] == "True True True", mine
    # the kernel's own limits, by name from the worker's request (warm) or the wrapper's options (cold)
    assert look[4] == cold["b-honest"]["outputs"][-1].splitlines()[4] and "(0, 0)" in look[4], look
    # the honest notebook: the same scores and outputs, warm or cold
    assert honest["scores"] == cold["b-honest"]["scores"]
    assert honest["outputs"] == cold["b-honest"]["outputs"]
    assert all(score == dict(warm["b-honest"]["scores"]).get(gid) for gid, score in cold["b-honest"]["scores"])


@pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "pidfd_open"), reason="no fork or pidfd here")
def test_a_template_that_cannot_fork_safely_gives_cold_kernels_and_says_why(tmp_path):
    """With two BLAS threads numpy's OpenBLAS starts a thread in the template at import (the grader
    asks for one: OPENBLAS_NUM_THREADS=1): the template refuses to fork, the kernel starts cold, and
    the outcome says so."""
    import asyncio

    import nbformat

    from autograder.course import kernel_env
    from autograder.kernel.execute import Limits, execute
    from autograder.plugin import load_plugin
    from autograder.kernel.warm import Template
    from conftest import STEP4

    env = kernel_env({"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2",
                      "HOME": str(tmp_path)})
    env.pop("JPY_PARENT_PID", None)
    template = Template(load_plugin().preimport(STEP4), env)
    try:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
        outcome = asyncio.run(execute(nb, tmp_path, env, limits=Limits(cell_timeout=60), template=template))
    finally:
        template.close()
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert outcome.kernels == "cold"
    assert any("a warm kernel did not start" in e and "threads" in e for e in outcome.events), outcome.events
