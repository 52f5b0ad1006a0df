"""Grading workers are forked from a fork server that imported the grader and the steps' checks once
(autograder/worker.py): a new worker starts with them imported, and with the grader's environment and
folder as they are when the pool starts, not as they were when the fork server started."""
from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import tempfile


def _look() -> dict:
    return {"GRADER_HOME": os.environ.get("GRADER_HOME"), "tmp": tempfile.gettempdir(), "cwd": os.getcwd(),
            "imported": sorted(m for m in ("torch", "autograder.judging", "autograder.probeserver", "nbformat")
                               if m in sys.modules)}


def test_a_worker_starts_with_the_grader_imported_and_the_environment_of_now(monkeypatch, tmp_path):
    from autograder.grade import prepare_workers, start_worker, worker_context
    context = worker_context()
    assert context.get_start_method() == "forkserver"
    prepare_workers()                      # the fork server runs with the environment of this moment
    monkeypatch.setenv("GRADER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with cf.ProcessPoolExecutor(1, mp_context=context, initializer=start_worker,
                                initargs=(dict(os.environ), str(tmp_path))) as pool:
        seen = pool.submit(_look).result(timeout=300)
    assert seen["GRADER_HOME"] == str(tmp_path / "home")
    assert seen["tmp"] == str(tmp_path) and seen["cwd"] == str(tmp_path)
    assert seen["imported"] == ["autograder.judging", "autograder.probeserver", "nbformat", "torch"], seen
