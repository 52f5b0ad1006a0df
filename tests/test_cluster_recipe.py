"""The cluster recipe holds together: shards are stable and disjoint, a shard reads only its own
students' files, and the scripts and manifests (autograder/cluster/) and the README's section call
commands and options that exist. (tests/test_grading_postgres.py runs the recipe for real.)"""
import hashlib
import json
import os
import re
import string
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from autograder.intake import collect as collect_module
from autograder.course import RELEASE
from autograder.shards import parse_shard, selector, shard_of

from conftest import GRADES_CSV, GRADES_JSON, NOTEBOOK_NAMES, ROOT, STEP, STEP4

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
    from autograder.grading.grade import grade, refresh_from_gradebook
    submissions = tmp_path / "class"
    for sid in ("alice", "bob"):
        (submissions / sid).mkdir(parents=True)
        (submissions / sid / f"{NOTEBOOK_NAMES[0]}.ipynb").write_text("{ not json")
    out = grade(STEP4, submissions, students=["bob"], quiet=True, feedback=False)
    assert {r["student"] for r in out["results"]} == {"bob"}
    assert not (grading_home / GRADES_CSV).exists(), "a part of the class writes no class report"
    (record,) = (grading_home / "work" / "shards" / STEP).glob("students-*.json")
    data = json.loads(record.read_text())
    assert data["students"] == ["bob"] and data["problems"] and data["problems"][0]["student"] == "bob"
    refresh_from_gradebook(STEP4, quiet=True, feedback=False)
    merged = json.loads((grading_home / GRADES_JSON).read_text())
    assert {g["student"] for g in merged["grades"]} == {"bob"}
    assert merged["problems"] == data["problems"], "the merge lists the parts' unreadable files"


def shard_script(env: dict) -> subprocess.CompletedProcess:
    """grade-shard.sh with a stand-in Python that prints the arguments it was given."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SHARD_", "JOB_COMPLETION"))}
    base.update({"SUBMISSIONS": "/nowhere", "GRADER_HOME": "/nowhere", "NBGRADER_DB_URL": "sqlite://",
                 "PYTHON": "echo"}, **env)
    return subprocess.run(["bash", str(CLUSTER / "grade-shard.sh")], env=base, capture_output=True, text=True, timeout=60)


def test_an_array_task_takes_its_shard_count_from_a_whole_array_only():
    """`sbatch --array=0-3%2`: task 2 is shard 2/4. `sbatch --array=2` (a task rerun alone) is an array
    of one task: without SHARD_COUNT it is refused (2/1 is no shard; 0/1 would grade the whole class)."""
    whole = shard_script({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4",
                          "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"})
    assert whole.returncode == 0 and "--shard 2/4" in whole.stdout, whole.stdout + whole.stderr
    for task in ("2", "0"):
        alone = {"SLURM_ARRAY_TASK_ID": task, "SLURM_ARRAY_TASK_COUNT": "1",
                 "SLURM_ARRAY_TASK_MIN": task, "SLURM_ARRAY_TASK_MAX": task}
        refused = shard_script(alone)
        assert refused.returncode == 2 and "--shard" not in refused.stdout, refused.stdout
        assert "set SHARD_COUNT" in refused.stderr and f"--array={task}" in refused.stderr, refused.stderr
        rerun = shard_script(dict(alone, SHARD_COUNT="4"))
        assert rerun.returncode == 0 and f"--shard {task}/4" in rerun.stdout, rerun.stdout + rerun.stderr
    stepped = shard_script({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "2",
                            "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "2"})     # --array=0-2:2
    assert stepped.returncode == 2 and "set SHARD_COUNT" in stepped.stderr


def test_a_failing_shard_says_how_to_rerun_it():
    failing = shard_script({"PYTHON": "false", "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4",
                            "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"})
    assert failing.returncode == 1
    assert ("shard 3 of 4 failed (exit 1)" in failing.stderr and
            "SHARD_COUNT=4 sbatch --array=3 autograder/cluster/slurm-grade.sbatch" in failing.stderr), failing.stderr
    pod = shard_script({"PYTHON": "false", "JOB_COMPLETION_INDEX": "1", "SHARD_COUNT": "2"})
    assert pod.returncode == 1 and "SHARD_INDEX=1 SHARD_COUNT=2 autograder/cluster/grade-shard.sh" in pod.stderr


# Kubernetes versions whose API schemas the manifests are checked against (kubernetes-validate ships
# them): the oldest it has and the newest.
def kubernetes_versions() -> list[str]:
    import kubernetes_validate
    shipped = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    versions = sorted((p.name[1:].split("-")[0] for p in shipped.glob("v*-local-strict")),
                      key=lambda v: tuple(int(x) for x in v.split(".")))
    assert versions, f"kubernetes-validate ships no schemas in {shipped}"
    return [versions[0], versions[-1]]


def for_step(path: Path) -> str:
    """A manifest as `envsubst '$STEP'` fills it in; it names the step only through ${STEP}."""
    text = path.read_text()
    assert "${STEP}" in text and STEP not in text, f"{path.name} should name the step only as ${{STEP}}"
    return string.Template(text).safe_substitute(STEP=STEP)


def test_kubernetes_manifests_are_valid_against_the_api_schema():
    """No cluster runs here: each manifest is checked offline, strictly (an unknown field is an
    error), against the Kubernetes API's JSON schemas; a manifest with a misspelt or mistyped field
    is rejected, so the check can fail."""
    import kubernetes_validate
    for version in kubernetes_versions():
        for path in MANIFESTS:
            for doc in yaml.safe_load_all(for_step(path)):
                kubernetes_validate.validate(doc, version, strict=True)
        job = yaml.safe_load(for_step(CLUSTER / "k8s-grade-job.yaml"))
        misspelt = json.loads(json.dumps(job))
        misspelt["spec"]["completionsMode"] = misspelt["spec"].pop("completionMode")
        mistyped = json.loads(json.dumps(job))
        mistyped["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = 50    # not a string
        for bad in (misspelt, mistyped):
            with pytest.raises(kubernetes_validate.ValidationError):
                kubernetes_validate.validate(bad, version, strict=True)


@pytest.mark.slow
def test_a_shard_whose_students_handed_in_nothing_readable_succeeds(grading_home, tmp_path):
    """On a cluster a failing shard holds the merge (afterok) and fails again when rerun: a shard (or a
    class) with no notebook to grade writes no feedback instead of failing in nbgrader."""
    from autograder.grading.grade import grade
    submissions = tmp_path / "class"
    for sid in ("alice", "bob"):
        (submissions / sid).mkdir(parents=True)
        (submissions / sid / f"{NOTEBOOK_NAMES[0]}.ipynb").write_text("{ not json")
    out = grade(STEP4, submissions, students=["bob"], quiet=True)
    assert {r["student"] for r in out["results"]} == {"bob"}
    assert not list(grading_home.glob("feedback/**/*.html")), "feedback for notebooks never graded"
    everyone = grade(STEP4, submissions, quiet=True)
    assert {r["student"] for r in everyone["results"]} == {"alice", "bob"}
