"""The cluster recipe holds together: shards are stable and disjoint, a shard reads only its own
students' files, and the scripts and manifests (autograder/cluster/) and the README's section call
commands and options that exist. (tests/test_grading_postgres.py runs the recipe for real.)"""
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from collections import Counter

import pytest
import yaml

from autograder import collect as collect_module
from autograder.course import RELEASE, STEP
from autograder.shards import parse_shard, selector, shard_of

from conftest import NOTEBOOK_NAMES, ROOT

CLUSTER = ROOT / "autograder" / "cluster"
SCRIPTS = sorted(p for p in CLUSTER.iterdir() if p.suffix in (".sh", ".sbatch"))
MANIFESTS = sorted(CLUSTER.glob("*.yaml"))


def test_shard_option_is_read_and_checked():
    assert parse_shard("0/1") == (0, 1) and parse_shard("49/50") == (49, 50)
    for bad in ("50/50", "-1/4", "3", "a/b", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_every_student_is_in_exactly_one_shard_and_shards_are_balanced():
    students = [f"student{i:04d}" for i in range(2000)]
    sizes = Counter(shard_of(s, 50) for s in students)
    assert set(sizes) == set(range(50))
    assert max(sizes.values()) <= 70 and min(sizes.values()) >= 15, sizes      # 40 on average
    for s in students[:50]:
        assert [i for i in range(50) if selector((i, 50))(s)] == [shard_of(s, 50)]
    # the README's rule, sha256(student id) mod N, and the same in another process (another hash seed)
    ids = ["alice", "bob", "student0042", "zoë"]
    rule = [int.from_bytes(hashlib.sha256(s.encode("utf-8")).digest()[:8], "big") % 7 for s in ids]
    assert [shard_of(s, 7) for s in ids] == rule
    assert len(set(rule)) > 1
    elsewhere = subprocess.run(
        [sys.executable, "-c", f"from autograder.shards import shard_of; print([shard_of(s, 7) for s in {ids!r}])"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True)
    assert elsewhere.stdout.strip() == str(rule), elsewhere.stderr
    keep = selector(None, ["alice", "bob"])
    assert keep("alice") and not keep("carol")
    assert selector() is None


def test_a_shard_opens_only_its_own_students_files(tmp_path, monkeypatch):
    release = (RELEASE / STEP / f"{NOTEBOOK_NAMES[0]}.ipynb").read_bytes()
    for sid in ("alice", "bob", "carol"):
        (tmp_path / sid).mkdir()
        (tmp_path / sid / f"{NOTEBOOK_NAMES[0]}.ipynb").write_bytes(release)
    (tmp_path / f"dave_{NOTEBOOK_NAMES[0]}.ipynb").write_bytes(release)
    opened = []
    real = collect_module._from_file
    monkeypatch.setattr(collect_module, "_from_file", lambda file, *a: opened.append(file.parent.name) or real(file, *a))
    everyone = collect_module.collect(tmp_path, NOTEBOOK_NAMES)
    assert sorted(r.student for r in everyone) == ["alice", "bob", "carol", "dave"]
    opened.clear()
    some = collect_module.collect(tmp_path, NOTEBOOK_NAMES, only=lambda s: s in ("bob", "dave"))
    assert sorted(r.student for r in some) == ["bob", "dave"]
    assert "alice" not in opened and "carol" not in opened


def autograder_calls(text: str) -> list[list[str]]:
    """Every `python -m autograder <command> [options]` in a script, a manifest or the README."""
    text = text.replace("\\\n", " ")
    calls = []
    for line in text.splitlines():
        if "-m autograder" not in line and '"-m", "autograder"' not in line:
            continue
        line = re.sub(r"\$\{\w+:[-+]|\}", " ", line)        # ${WORKERS:+--workers "$WORKERS"}
        line = re.sub(r'[\[\]",`();:]', " ", line.split("#", 1)[0] if not line.lstrip().startswith("#") else line)
        tokens = line.split()
        for i, token in enumerate(tokens[:-2]):
            if token == "-m" and tokens[i + 1] == "autograder":
                calls.append(tokens[i + 2:])
    return calls


def test_scripts_are_valid_shell():
    assert SCRIPTS, "autograder/cluster/ holds the Slurm and shard scripts"
    for script in SCRIPTS:
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{script.name}: {proc.stderr}"


def test_scripts_manifests_and_readme_call_commands_and_options_that_exist():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Grading a large course on a cluster", 1)[1].split("\n## ", 1)[0]
    calls = []
    for path in SCRIPTS + MANIFESTS:
        calls += [(path.name, c) for c in autograder_calls(path.read_text())]
    calls += [("README.md", c) for c in autograder_calls(section)]
    commands = {c[0] for _, c in calls}
    assert {"grade", "gradebook", "report"} <= commands, commands
    helps = {}
    for command in commands:
        proc = subprocess.run([sys.executable, "-m", "autograder", command, "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"`python -m autograder {command}` does not exist: {proc.stderr}"
        helps[command] = proc.stdout
    for where, call in calls:
        for option in (t for t in call[1:] if t.startswith("--")):
            option = option.split("=", 1)[0]
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", helps[call[0]]), \
                f"{where}: `python -m autograder {call[0]}` has no option {option}"


def test_grade_shard_script_passes_the_shard_to_the_grader():
    text = (CLUSTER / "grade-shard.sh").read_text()
    assert '--shard "$SHARD_INDEX/$SHARD_COUNT"' in text
    for variable in ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX"):
        assert variable in text
    assert "grade-shard.sh" in (CLUSTER / "slurm-grade.sbatch").read_text()


def test_kubernetes_manifests_run_the_course_scripts_with_a_consistent_shard_count():
    job = yaml.safe_load((CLUSTER / "k8s-grade-job.yaml").read_text())
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert int(env["SHARD_COUNT"]) == spec["completions"]
    assert {"SUBMISSIONS", "GRADER_HOME", "NBGRADER_DB_URL"} <= set(env)
    script = container["command"][0]
    assert (ROOT / script.replace(env["COURSE_DIR"] + "/", "")).is_file(), script
    report = yaml.safe_load((CLUSTER / "k8s-report-job.yaml").read_text())
    command = report["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[1:4] == ["-m", "autograder", "report"]


def test_readme_names_every_cluster_file():
    readme = (ROOT / "README.md").read_text()
    for path in SCRIPTS + MANIFESTS:
        assert f"autograder/cluster/{path.name}" in readme, path.name


@pytest.mark.slow
def test_grading_some_students_grades_only_them_and_leaves_the_class_reports_to_the_merge(grading_home, tmp_path):
    """--students with notebooks that need no kernel (unreadable, or not handed in): quick."""
    from autograder.grade import grade, refresh_from_gradebook
    submissions = tmp_path / "class"
    for sid in ("alice", "bob"):
        (submissions / sid).mkdir(parents=True)
        (submissions / sid / f"{NOTEBOOK_NAMES[0]}.ipynb").write_text("{ not json")
    out = grade(submissions, students=["bob"], quiet=True, feedback=False)
    assert {r["student"] for r in out["results"]} == {"bob"}
    assert not (grading_home / "grades.csv").exists(), "a part of the class writes no class report"
    (record,) = (grading_home / "work" / "shards").glob("students-*.json")
    data = json.loads(record.read_text())
    assert data["students"] == ["bob"] and data["problems"] and data["problems"][0]["student"] == "bob"
    refresh_from_gradebook(quiet=True, feedback=False)
    merged = json.loads((grading_home / "grades.json").read_text())
    assert {g["student"] for g in merged["grades"]} == {"bob"}
    assert merged["problems"] == data["problems"], "the merge lists the parts' unreadable files"
