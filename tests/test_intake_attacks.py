"""Attacks on how a class is read (tests/redteam_corpus.py, `intake_attacks`): names chosen to take
or to look like another student's id, time stamps and zip members no parser should trust, a zip bomb
within every cap. Whatever one student's files hold, the honest students beside them are graded under
their own ids, and every file that is not graded is reported for that student alone.

Fast: the class read as `make grade` reads it (collect, pick_newest, the submission times). Slow: the
class graded through `make grade`'s code, and the grader's peak memory on the zip bomb measured in a
process of its own against a stated limit: the intake class and the zip bomb beside it graded once, by
`python -m autograder grade` in a process of its own (`graded`), which both slow tests read."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from autograder.intake.collect import NO_ID, collect, pick_newest
from autograder.term import submission_times
from conftest import ROOT, STEP, STEP4
from redteam_corpus import (BOMB_MEMBER_BYTES, BOMB_MEMBERS, BOMB_ZIPS, INTAKE_HONEST, INTAKE_NOTEBOOK,
                            intake_attacks, write_zip_bomb)

ATTACKS = intake_attacks()


def notebooks():
    from autograder.example import filled
    good = json.dumps(filled(STEP4, INTAKE_NOTEBOOK, lambda cid, i: True)).encode()
    blank = (STEP4.release / f"{INTAKE_NOTEBOOK}.ipynb").read_bytes()
    return good, blank


def write_class(root, attacks=ATTACKS):
    good, blank = notebooks()
    for sid in INTAKE_HONEST:
        folder = root / sid
        folder.mkdir(parents=True)
        (folder / f"{INTAKE_NOTEBOOK}.ipynb").write_bytes(good)
        os.utime(folder / f"{INTAKE_NOTEBOOK}.ipynb", (1_900_000_000, 1_900_000_000))
    for attack in attacks:
        attack.write(root, good, blank)
    return good


def test_the_corpus_has_each_class_of_intake_attack():
    names = {a.name for a in ATTACKS}
    assert {"ada-dot", "rlo-bea", "renee-nfd", "cyrillic-cyd", "dots", "bad-crc", "bad-method", "cut-zip",
            "inflate"} <= names
    assert sum(n.startswith("stamp") for n in names) >= 15 and sum(n.startswith("noise") for n in names) >= 10


def test_one_students_files_never_stop_the_class_and_are_reported_for_that_student(tmp_path):
    good = write_class(tmp_path)
    received = collect(tmp_path, STEP4.notebooks())
    chosen, problems = pick_newest(received)
    times, sources = submission_times(chosen, STEP)          # no time from a student's file overflows
    # every honest student graded under their own id, their own work
    for sid in INTAKE_HONEST:
        assert chosen[(sid, INTAKE_NOTEBOOK)].data == good, sid
        assert 1.8e9 < times[sid] < 2e9, (sid, times[sid])
    graded = {sid for sid, _ in chosen} | {p["student"] for p in problems if p["student"] != NO_ID}
    expected = set(INTAKE_HONEST).union(*(a.graded for a in ATTACKS))
    assert graded == expected, (graded ^ expected)
    for attack in ATTACKS:     # each attack named in the problems: under its own id, or (refused) under none
        mine = [p for p in problems if p["student"] in (attack.graded or {NO_ID})]
        assert any(re.search(attack.reported, f"{p['file']}: {p['problem']}") for p in mine), (attack.name, mine)
    # a look-alike pair is reported on both sides and shown by code point
    cyd = [p for p in problems if p["student"] == "cyd"]
    assert cyd and "U+0441" in cyd[0]["problem"]
    # the time stamps: only well-formed, plausible ones are used; every other one is named
    for p in problems:
        if p["student"].startswith(("stamp", "noise")):
            assert p.get("notice") and "timestamp.txt" in p["problem"], p
    for sid, source in sources.items():
        if sid.startswith(("stamp", "noise")):
            assert 0 < times[sid] < 7258118400, (sid, times[sid])


def test_nfd_twin_is_graded_apart_and_never_replaces_the_honest_work(tmp_path):
    write_class(tmp_path, [a for a in ATTACKS if a.name == "renee-nfd"])
    chosen, problems = pick_newest(collect(tmp_path, STEP4.notebooks()))
    good, blank = notebooks()
    assert chosen[("Ren\u00e9e", INTAKE_NOTEBOOK)].data == good
    assert chosen[("Ren\u00e9e-nfd", INTAKE_NOTEBOOK)].data == blank
    notes = [p["problem"] for p in problems if p.get("notice")]
    assert notes and "NFD" in notes[0] and "NFC" in notes[0]


@pytest.mark.slow
def test_the_class_is_graded_through_make_grade(graded):
    """The same class through grade(): it ends, the honest students score full marks, the attackers'
    notebooks are graded apart or refused, and the report lists every problem."""
    proc, home, _ = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = {(r["student"], r["notebook"]): r for r in
               (json.loads(p.read_text()) for p in (home / "work" / "results" / STEP).glob("*/*.json"))}
    for sid in INTAKE_HONEST:
        cells = results[(sid, INTAKE_NOTEBOOK)]["cells"]
        assert all(c["score"] == c["max_score"] for c in cells if c["kind"] == "auto"), sid
    assert "ada." not in {s for s, _ in results} and "\u202ebea" not in {s for s, _ in results}
    report = json.loads((home / "grades" / f"{STEP}.json").read_text())
    assert any("keeps it" in p["problem"] for p in report["problems"])
    assert any(p["file"] == "..." for p in report["problems"])


BOMB_LIMIT_MIB = 512        # the grader's intake of one class: the bomb student's 100 MB cap, and what reading costs

MEASURE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from autograder.intake.collect import collect, pick_newest
    from autograder.steps import find_step
    step = find_step()
    received = collect(Path(sys.argv[2]), step.notebooks())
    chosen, problems = pick_newest(received)
    held = sum(len(item.data or b"") for item in received)
    peak_kib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    print(json.dumps({"peak_kib": peak_kib, "held": held,
                      "chosen": sorted(f"{s}/{n}" for s, n in chosen), "problems": len(problems)}))
""")


def measure_intake(engine, submissions) -> dict:
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(engine), str(submissions)], cwd=engine,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(engine)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_zip_bomb_within_every_cap_keeps_the_grader_small(tmp_path, record_property):
    """2 zips x 60 members x 19.5 MB (2.3 GB unzipped, a few MB uploaded) beside an honest student:
    the grader's process reads at most MAX_STUDENT_BYTES of it, newest copy first, and holds one copy
    per notebook; its peak resident memory stays under BOMB_LIMIT_MIB."""
    from autograder.intake.collect import MAX_STUDENT_BYTES
    uploaded = write_zip_bomb(tmp_path / "class")
    good, _ = notebooks()
    (tmp_path / "class" / "ada").mkdir()
    (tmp_path / "class" / "ada" / f"{INTAKE_NOTEBOOK}.ipynb").write_bytes(good)
    assert uploaded < 8 * 2**20 and BOMB_ZIPS * BOMB_MEMBERS * BOMB_MEMBER_BYTES > 2 * 2**30
    got = measure_intake(ROOT, tmp_path / "class")
    peak_mib = got["peak_kib"] / 1024
    record_property("measured", f"zip bomb ({uploaded / 2**20:.1f} MB uploaded, {BOMB_ZIPS} x {BOMB_MEMBERS} x "
                                f"{BOMB_MEMBER_BYTES / 2**20:.1f} MB): the grader's intake peaked at {peak_mib:.0f} MiB "
                                f"(limit {BOMB_LIMIT_MIB}), holding {got['held'] / 2**20:.0f} MB of notebooks")
    assert f"ada/{INTAKE_NOTEBOOK}" in got["chosen"]
    assert got["held"] <= MAX_STUDENT_BYTES + len(good)
    assert peak_mib < BOMB_LIMIT_MIB, peak_mib


# A process's peak resident memory is VmHWM, its own memory's high-water mark: getrusage's ru_maxrss
# starts a process started from a large one (a test worker holding torch) at its parent's size.
GRADE_PEAK = textwrap.dedent("""
    import atexit, sys
    atexit.register(lambda: print("PEAK", next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:"))))
    from autograder.__main__ import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The intake class (every attack but the noise in time stamps) and the zip bomb beside it, graded
    once as `make grade` grades them (`python -m autograder grade`, two workers, no feedback) in a process
    of its own whose peak resident memory it prints: (the finished process, the grading home, the
    grading process's peak in MiB)."""
    root = tmp_path_factory.mktemp("intake-graded")
    write_class(root / "class", [a for a in ATTACKS if not a.name.startswith("noise")])   # ada is among the honest
    write_zip_bomb(root / "class")
    home = root / "home"
    env = {**os.environ, "GRADER_HOME": str(home)}
    env.pop("NBGRADER_DB_URL", None)
    proc = subprocess.run([sys.executable, "-c", GRADE_PEAK, "grade", str(root / "class"), "--workers", "2",
                           "--no-feedback"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    peak = proc.stdout.rsplit("PEAK", 1)[1].strip() if "PEAK" in proc.stdout else None
    return proc, home, int(peak) / 1024 if peak else None


@pytest.mark.slow
def test_make_grade_on_the_zip_bomb_keeps_its_own_process_small(graded, record_property):
    """The same bomb through the whole `make grade` (its workers and kernels are processes of their
    own, limited elsewhere), beside the intake class: the grading process itself stays under
    BOMB_LIMIT_MIB, the honest student is graded, and the bomb's unread copies are reported."""
    proc, home, peak_mib = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record_property("measured", f"zip bomb through make grade: the grading process peaked at {peak_mib:.0f} MiB "
                                f"(limit {BOMB_LIMIT_MIB})")
    report = json.loads((home / "grades" / f"{STEP}.json").read_text())
    ada = [g for g in report["grades"] if g["student"] == "ada" and g["notebook"] == INTAKE_NOTEBOOK and g["kind"] == "auto"]
    assert ada and all(g["score"] == g["max_score"] for g in ada)
    assert any(p["student"] == "bomb" and "more than 100 MB" in p["problem"] for p in report["problems"])
    assert any(p["student"] == "bomb" and "is newer and was graded instead" in p["problem"] for p in report["problems"])
    assert peak_mib < BOMB_LIMIT_MIB, peak_mib


def generated_names(count: int = 60, seed: int = 22) -> list[str]:
    """Folder names a student could choose, generated: letters of several scripts and their look-alikes,
    combining marks, bidirectional and zero-width controls, spaces, dots, digits, symbols, control
    characters, and the honest students' own names with something added."""
    import random
    rng = random.Random(seed)
    parts = (list("adaebcyd.- _@+=") + ["\u0441", "\u0443", "\u0430", "\u0301", "\u0308", "\u202e", "\u200d", "\u200b",
             "\u2028", "\x1b", "\x7f", "\u00e9", "\u0435", "\u03bf", "\uff41", "\u2160", "🙂", "李", "0", "1", "l", "I"])
    names = set()
    while len(names) < count:
        base = rng.choice(INTAKE_HONEST + [""])
        extra = "".join(rng.choice(parts) for _ in range(rng.randint(1, 4)))
        name = rng.choice([base + extra, extra + base, extra])
        if name and "/" not in name and name not in (".", "..") and name not in INTAKE_HONEST:
            names.add(name)
    return sorted(names)


def test_generated_names_never_take_an_honest_students_id_or_work(tmp_path):
    good = write_class(tmp_path, [])
    _, blank = notebooks()
    names = generated_names()
    for name in names:
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{INTAKE_NOTEBOOK}.ipynb").write_bytes(blank)
        os.utime(folder / f"{INTAKE_NOTEBOOK}.ipynb", (2_000_000_000, 2_000_000_000))      # newer than the honest
    received = collect(tmp_path, STEP4.notebooks())
    chosen, problems = pick_newest(received)
    for sid in INTAKE_HONEST:
        assert chosen[(sid, INTAKE_NOTEBOOK)].data == good, sid          # their own id, their own work
    graded_generated = {item.origin.split("/")[0] for (sid, _), item in chosen.items() if sid not in INTAKE_HONEST}
    refused = {p["file"] for p in problems if p["student"] == NO_ID}
    from autograder.safetext import printable
    assert {printable(n) for n in names} == graded_generated | refused, "a name neither graded nor reported"
    assert len({sid for sid, _ in chosen}) == len(chosen)               # one copy each: nobody merged


def test_lookalikes_as_written_and_case_folded():
    from autograder.names import lookalikes, shown_id
    assert lookalikes(["l1", "Il", "ada", "bob", "Alice", "alice", "\u0441\u0443d", "cyd", "CYD", "fix", "\ufb01x"]) == \
        [["Alice", "alice"], ["CYD", "cyd", "\u0441\u0443d"], ["Il", "l1"], ["fix", "\ufb01x"]]
    assert lookalikes(["ada", "bea", "Zoë", "Zoé", "Zoe", "李雷", "李雷雷"]) == []
    assert shown_id("\u0441\u0443d") == "\u0441\u0443d [U+0441 U+0443]" and shown_id("cyd") == "cyd"
