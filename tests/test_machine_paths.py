"""Feedback names no folder of the grading machine: a cell that prints its working folder or the temporary folder shows `<work>` and `<tmp>`.

`hide_machine_paths` (autograder/grading/judging.py) rewrites every output of the graded notebook: the course
folder's paths relative, the Python installation as `<python>/`, the grading's scratch folder the
notebook ran in (the kernel's working folder: grade-w-…/grade-…/work in the temporary folder, with warm
kernels) as `<work>`, and the temporary folders (the worker's TMPDIR, whatever it is, and the kernel's,
which the sandbox sets) as `<tmp>`. A path that only begins like one of them is left as it is. The feedback is made from
this notebook. (The scratch folder and TMPDIR were shown as they were: a cell printing os.getcwd() showed
the grader's scratch folder.)
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder.course import ROOT
from autograder.grading import judging
from autograder.kernel import sandbox
from conftest import STEP4

KERNEL_TMP = judging.KERNEL_TMP      # the kernel's TMPDIR in the sandbox
SANDBOX = "bwrap" if sandbox.bwrap_problem() is None and os.geteuid() == 0 else "none"   # as a worker runs here

PRINTS = "import os, tempfile\nprint(os.getcwd())\nprint(tempfile.gettempdir())\nprint(os.path.join(os.getcwd(), 'x.txt'))"


def test_every_kind_of_output_has_the_machine_s_folders_named(tmp_path, monkeypatch):
    worker_tmp = tmp_path / "worker-tmp"
    worker_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(worker_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)          # worked out again from $TMPDIR, as a worker does
    scratch = worker_tmp / "grade-w-abc123" / "grade-def456"
    work = scratch / "work"
    text = (f"{work}\n{work}/data.txt\n{scratch}/probe.sock\n{worker_tmp}\n{KERNEL_TMP}\n{KERNEL_TMP}/ipykernel_12/345.py\n"
            f"{sys.prefix}/lib/x.py\n{ROOT}/dlcourse/a.py\n{KERNEL_TMP}x\n")
    cell = nbformat.v4.new_code_cell("pass")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text),
                    nbformat.v4.new_output("error", ename="OSError", evalue=f"no {work}/data.txt",
                                           traceback=[f"File {work}/cell.py", f"File {ROOT}/dlcourse/a.py"]),
                    nbformat.v4.new_output("execute_result", data={"text/plain": repr(str(work))}, execution_count=1)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    judging.hide_machine_paths(nb, scratch)
    stream, error, result = nb.cells[0].outputs
    assert stream["text"] == ("<work>\n<work>/data.txt\n<tmp>/probe.sock\n<tmp>\n<tmp>\n<tmp>/ipykernel_12/345.py\n"
                              f"<python>/lib/x.py\ndlcourse/a.py\n{KERNEL_TMP}x\n"), stream["text"]
    assert error["evalue"] == "no <work>/data.txt" and error["traceback"] == ["File <work>/cell.py", "File dlcourse/a.py"]
    assert result["data"]["text/plain"] == "'<work>'"


@pytest.mark.parametrize("kernels", ["warm", "cold"])
def test_a_graded_cell_printing_its_folders_shows_no_machine_path(tmp_path, monkeypatch, kernels, request):
    """Graded as a worker grades (grade.run_job: a kernel forked from the worker's template, its scratch
    folder inside the template's, or a kernel of its own), with the worker's TMPDIR a folder of the test's:
    the added cell's output names the folders, and no path of the grading's is in the notebook."""
    from autograder.grading.grade import Job, run_job
    from autograder.kernel.warm import close_templates

    # short: the probe's socket lives in the scratch folder made there, and a Unix socket's path has at most
    # 107 bytes (pytest's own temporary folders under a busy run's numbering are longer)
    worker_tmp = Path(tempfile.mkdtemp(prefix="mp-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(worker_tmp, ignore_errors=True))
    monkeypatch.setenv("TMPDIR", str(worker_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("GRADER_HOME", str(tmp_path / "home"))
    nb = json.loads((STEP4.release / "01-on-paper.ipynb").read_text(encoding="utf-8"))
    # near the top, before any hidden test: what runs after one shows the grader's words instead of its output
    # (grading/judging.py conceal_after_hidden_inputs)
    nb["cells"].insert(1, {"cell_type": "code", "metadata": {}, "source": PRINTS, "outputs": [],
                           "execution_count": None})
    path = tmp_path / "submitted.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    job = Job(STEP4.name, str(STEP4.root), "ada", "01-on-paper", str(path), "key", SANDBOX, 1, {}, kernels)
    try:
        result = run_job(job)
    finally:
        close_templates()                   # the worker's template, which a worker ends when it ends
    assert result.kernels == kernels, result.kernels
    graded = json.loads(result.notebook_json)
    cell = next(c for c in graded["cells"] if "".join(c["source"]) == PRINTS)     # kept, as an added cell
    printed = "".join("".join(o["text"]) for o in cell["outputs"] if o.get("output_type") == "stream")
    assert printed == "<work>\n<tmp>\n<work>/x.txt\n", cell["outputs"]
    assert str(worker_tmp) not in result.notebook_json and "grade-" not in printed
    assert str(worker_tmp) not in (result.run_json or ""), "the instructor's copy of the run names the machine's paths"
