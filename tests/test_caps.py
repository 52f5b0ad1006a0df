"""Honest students must not break the batch: a picture pasted into a written answer, a kernel that
floods its output without newlines, and what each leaves behind.

A small class of 02-the-head (the quickest notebook to grade) is graded once, sandboxed, through
autograder.grading.grade.grade in a process of its own (as `make grade` runs it, so that its peak memory
is its own): an honest student; one who pasted a picture into the written answer; one whose own
cells print without newlines in a runaway loop, write to file descriptor 1 in a loop, print one
100 MB line, display 5 MB, rewrite a display and raise an error with a 10 MB message, all answers
correct. Every student gets grades and feedback, the picture is in the feedback, the flooding
student's answers are all graded, and every file the batch writes stays under a stated bound.
"""
from __future__ import annotations

import base64
import csv
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from autograder.kernel.execute import Limits
from conftest import GRADES_CSV, GRADES_JSON, ROOT, STEP, STEP4, bwrap_or_skip, run_once, uses
from redteam_corpus import Profile, cell_of, notebook_file

pytestmark = pytest.mark.slow

# graded in the sandbox only: where bwrap cannot run the batch skips, saying why (a failure with REQUIRE_SANDBOX=1)
SANDBOX = "bwrap"
# short time limits (the floods run until a cell limit: 3 s of CPU, 10 s of waiting; each floods its cell's
# output cap many times over in less: a 1 MB cap, a 1 MB write or a thousand prints of 1 kB); the output limits
# are the production ones. The CPU limit is what each of the two runaway floods burns, in its kernel and again
# in the grading worker that reads its output (5 s before: about 9 s of CPU more a run); the flooding kernel's
# other cells and restarts used about 1.4 s all together (the 100 MB line, the displays and the 10 MB error among
# them), the honest notebook 0.2 s.
LIMITS = {"cell_timeout": 3, "cell_wait_timeout": 10, "notebook_timeout": 300, "memory_bytes": 2 * 2**30}
OUTPUT = Limits()
HEAD = Profile(notebook="02-the-head",
               uses={"bonus_scores_entrywise": "scores_entrywise", "bonus_count_params": "count_params"},
               functions={"scores_entrywise": "scores_entrywise", "count_params": "count_params"})
WRITTEN = "bonus_scale_width"

# What the batch may leave behind, whatever a kernel sent.
RELEASE_BYTES = (ROOT / "release" / STEP / f"{HEAD.notebook}.ipynb").stat().st_size
BOUNDS = {
    "result file": 64_000,                                                   # work/results/<student>/<nb>.json
    "autograded notebook": RELEASE_BYTES + OUTPUT.notebook_output_bytes + 200_000,
    "feedback HTML": 1_000_000 + OUTPUT.notebook_output_bytes,              # nbconvert's page, ~300 kB, + outputs
    "grades.csv": 20_000,
    "grades.json": 100_000,
}
PEAK_RSS_BYTES = 2 * 2**30      # the grading process (its kernels and workers are other processes)

FLOODS = [
    # a progress print without newlines in a runaway loop
    "while True:\n    print('x' * 1000, end='')",
    # C-level writes to file descriptor 1 (ipykernel echoes them to the kernel process's own stdout), through
    # /dev/stdout opened unbuffered (IPython refuses open(1)): `os.write(1, ...)` does the same, but is more of
    # os than the process reader follows and would send the process part to review, not the point here
    "fd1 = open('/dev/stdout', 'wb', buffering=0)\nwhile True:\n    fd1.write(b'y' * 10**6)",
    # one huge line, one huge display, a display rewritten many times, a huge error message
    textwrap.dedent("""\
        from IPython.display import display
        print('z' * 10**8)
        display({'text/plain': 'd' * 5 * 10**6}, raw=True)
        handle = display('small', display_id=True)
        for _ in range(50):
            handle.update('u' * 10**5)
        raise ValueError('e' * 10**7)
        """),
]


def png(width: int = 16, height: int = 16) -> bytes:
    """A small PNG picture (noise, so that it does not compress to nothing): about 700 bytes."""
    rows = b"".join(b"\0" + bytes((x * 37 + y * 91 + x * y * 13) % 256 for x in range(width * 3))
                    for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


PICTURE = base64.b64encode(png()).decode("ascii")


def write_class(submissions: Path) -> None:
    answer = "Dividing by the square root of the width keeps the scores' variance at 1."
    honest = HEAD.notebook_with()
    cell_of(honest, WRITTEN)["source"] = answer
    notebook_file(None, submissions / "honest", HEAD, honest)

    picture = HEAD.notebook_with()
    cell = cell_of(picture, WRITTEN)
    cell["source"] = answer + "\n\nMy derivation:\n\n![x](attachment:x.png)"
    cell["attachments"] = {"x.png": {"image/png": PICTURE}}
    notebook_file(None, submissions / "picture", HEAD, picture)

    flood = HEAD.notebook_with()
    cell_of(flood, WRITTEN)["source"] = answer
    at = flood["cells"].index(cell_of(flood, "scores_entrywise")) + 1     # the student's own cells
    flood["cells"][at:at] = [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
                              "execution_count": None} for source in FLOODS]
    notebook_file(None, submissions / "flood", HEAD, flood)


GRADE = """
import json, resource, sys
from pathlib import Path
from autograder.grading.grade import grade
from autograder.steps import find_step
returned = grade(find_step(sys.argv[4]), Path(sys.argv[1]), workers=2, sandbox=sys.argv[2], limits=json.loads(sys.argv[3]), quiet=True)
print(json.dumps({"students": sorted({r["student"] for r in returned["results"]}),
                  "peak_rss": next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) * 1024,
                  "children_peak_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


def grade_the_class(base: Path) -> dict:
    submissions, home = base / "submissions", base / "home"
    write_class(submissions)
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_DB_URL"}
    env.update(GRADER_HOME=str(home), PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    proc = subprocess.run([sys.executable, "-c", GRADE, str(submissions), SANDBOX, json.dumps(LIMITS), STEP],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    from autograder.kernel.warm import why_cold
    bwrap_or_skip()
    uses("cold" if why_cold(SANDBOX) else "warm")       # the grader's default kernels, warm where they can be
    base, data = run_once(tmp_path_factory, "caps", grade_the_class)
    home = base / "home"
    with open(home / GRADES_CSV, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return home, rows, json.loads((home / GRADES_JSON).read_text(encoding="utf-8")), data


def files(home: Path, student: str) -> dict[str, Path]:
    return {"result file": home / "work" / "results" / STEP / student / f"{HEAD.notebook}.json",
            "autograded notebook": home / "autograded" / student / STEP / f"{HEAD.notebook}.ipynb",
            "feedback HTML": home / "feedback" / student / STEP / f"{HEAD.notebook}.html"}


def scores(rows, student: str) -> dict:
    return {r["grade_id"]: r["score"] for r in rows
            if r["student"] == student and r["notebook"] == HEAD.notebook and r["kind"] == "auto"}


def test_every_student_gets_grades_and_feedback(batch):
    home, rows, report, data = batch
    assert data["students"] == ["flood", "honest", "picture"]
    for student in data["students"]:
        assert scores(rows, student), student
        for what, path in files(home, student).items():
            assert path.is_file(), (student, what)
    full = {gid: f"{points}" for gid, points in HEAD.points.items()}
    assert scores(rows, "honest") == full
    assert scores(rows, "picture") == full


def test_the_pasted_picture_is_kept(batch):
    home, rows, report, _ = batch
    graded = json.loads(files(home, "picture")["autograded notebook"].read_text(encoding="utf-8"))
    assert cell_of(graded, WRITTEN)["attachments"] == {"x.png": {"image/png": PICTURE}}
    html = files(home, "picture")["feedback HTML"].read_text(encoding="utf-8")
    assert f"data:image/png;base64,{PICTURE}" in html
    assert "picture/02-the-head" not in report["notes"]      # nothing to say about it
    written = [r for r in rows if r["student"] == "picture" and r["notebook"] == HEAD.notebook
               and r["grade_id"] == WRITTEN]
    assert written and written[0]["kind"] == "manual" and written[0]["score"] == ""   # waits for a grader


def test_the_flooding_student_is_graded_on_every_answer(batch):
    home, rows, report, _ = batch
    assert scores(rows, "flood") == {gid: f"{points}" for gid, points in HEAD.points.items()}
    notes = report["notes"]["flood/02-the-head"]
    assert any(n.startswith("cell 'added-1': CellTimeoutError") for n in notes), notes
    assert any(n.startswith("cell 'added-2': CellTimeoutError") for n in notes), notes
    for cell in ("added-1", "added-2", "added-3"):
        assert any(n.startswith(f"cell '{cell}': its output went beyond") for n in notes), (cell, notes)
    graded = json.loads(files(home, "flood")["autograded notebook"].read_text(encoding="utf-8"))
    added = {c["id"]: c for c in graded["cells"] if c["id"].startswith("added-")}
    for cell in added.values():
        text = "".join("".join(o.get("text", "")) for o in cell["outputs"])
        assert "dropped by the grader" in text, cell["id"]
        assert sum(len(json.dumps(o)) for o in cell["outputs"]) < OUTPUT.output_bytes + 30_000, cell["id"]
    # the printed line keeps its beginning; the error is kept, its message clipped
    assert "z" * 1000 in "".join("".join(o.get("text", "")) for o in added["added-3"]["outputs"])
    error = [o for o in added["added-3"]["outputs"] if o["output_type"] == "error"]
    assert [o["ename"] for o in error] == ["ValueError"] and 1000 < len(error[0]["evalue"]) < 5000


def test_everything_the_batch_writes_stays_small(batch, record_property):
    home, _, _, data = batch
    sizes = {}
    for student in ("honest", "picture", "flood"):
        for what, path in files(home, student).items():
            sizes[f"{student} {what}"] = path.stat().st_size
            assert path.stat().st_size < BOUNDS[what], (student, what, path.stat().st_size, BOUNDS[what])
    for what, path in (("grades.csv", GRADES_CSV), ("grades.json", GRADES_JSON)):     # the step's reports
        sizes[what] = (home / path).stat().st_size
        assert sizes[what] < BOUNDS[what], (what, sizes[what])
    leftovers = [p for p in home.rglob("*") if p.is_file() and p.stat().st_size > BOUNDS["autograded notebook"]]
    assert leftovers == []
    assert data["peak_rss"] < PEAK_RSS_BYTES, data
    record_property("measured", "caps: " + ", ".join(f"{k} {v / 1e3:.0f} kB" for k, v in sizes.items())
                    + f"; grading process peak RSS {data['peak_rss'] / 2**20:.0f} MiB, its children's (workers, "
                    f"kernels) largest {data['children_peak_rss'] / 2**20:.0f} MiB")


def test_a_notebook_without_feedback_stops_nothing_else(batch, tmp_path, monkeypatch):
    """`make feedback`'s code path over the graded class, two notebooks changed behind the grader's
    back: honest's graded notebook damaged (nbgrader cannot read it), picture's without its
    attachment (as graded before pictures were kept). Honest's feedback is reported missing, with
    the reason; picture's is written, a placeholder in place of the picture; flood's is written;
    grades.csv and grades.json are written."""
    from autograder.grading.grade import refresh_from_gradebook
    home = tmp_path / "home"
    shutil.copytree(batch[0], home)
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.delenv("NBGRADER_DB_URL", raising=False)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    files(home, "honest")["autograded notebook"].write_text('{"cells": [', encoding="utf-8")
    graded = files(home, "picture")["autograded notebook"]
    nb = json.loads(graded.read_text(encoding="utf-8"))
    del cell_of(nb, WRITTEN)["attachments"]
    graded.write_text(json.dumps(nb), encoding="utf-8")
    for path in [*home.glob("feedback/*/*/*.html"), home / GRADES_CSV, home / GRADES_JSON]:
        path.unlink()

    refresh_from_gradebook(STEP4, quiet=True)

    assert not files(home, "honest")["feedback HTML"].exists()
    assert files(home, "flood")["feedback HTML"].is_file()
    html = files(home, "picture")["feedback HTML"].read_text(encoding="utf-8")
    assert "data:image/svg+xml;base64," in html and PICTURE not in html
    notes = json.loads((home / GRADES_JSON).read_text(encoding="utf-8"))["notes"]
    assert any(re.search(r"feedback HTML could not be written: \S", n) for n in notes["honest/02-the-head"]), notes
    assert not any("feedback" in n for n in notes.get("picture/02-the-head", []) + notes["flood/02-the-head"])
    with open(home / GRADES_CSV, newline="", encoding="utf-8") as f:
        assert {r["student"] for r in csv.DictReader(f)} == {"flood", "honest", "picture"}
