"""The README's Slurm recipe on a real (one-node) Slurm cluster, writing into a real PostgreSQL
gradebook: `SHARDS=4 autograder/cluster/slurm-submit.sh` grades the example class handing in the step's first
notebooks (plus two students handing in one notebook each, so every shard has students) as an array job throttled to 2 tasks at
once; one task is cancelled mid-run and rerun alone; the merge waits on `afterok`; grades.csv and grades.json equal a
one-machine `make grade` of the same class (in a copy of the session's graded example class, conftest.example_class:
it grades ada2's and half4's notebooks and reuses the rest). A shard whose grader fails keeps the merge from running
and its log names the command that reruns it. (The one-machine grading is make grade's command, `python -m
autograder grade`, run without feedback: only its reports are compared; `make grade` itself, feedback and all, is
tests/test_grading.py's. The shards run without feedback too, GRADE_OPTIONS=--no-feedback: a shard writing its
students' feedback is tests/test_grading_postgres.py's.)

Both clusters (tests/slurmcluster.py, tests/pgserver.py) live in temporary folders. Without Slurm and
munge these tests skip and say why; with REQUIRE_SLURM=1 (CI sets it after `make system-deps`) they
fail instead. The class is graded in a copy of the course (sbatch writes its logs where it is run).
A summary (job states, `sacct --completion`, the merge's output, wall times) goes to
artifacts/slurm-recipe.txt."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.course import RELEASE
from autograder.example import build
from autograder.shards import shard_of

from conftest import GRADES_CSV, GRADES_JSON, NOTEBOOK_NAMES, ROOT, STEP, STEP4, copy_course, uses
from pgserver import PostgresServer, missing_reason as pg_missing
from slurmcluster import SlurmCluster, find, missing_reason as slurm_missing
from test_grading_postgres import assert_one_grade_per_cell, gradebook_rows, report_rows

pytestmark = pytest.mark.slow
ARTIFACT = ROOT / "artifacts" / "slurm-recipe.txt"
QUICKEST = "02-the-head"     # the step's quickest notebook to grade (BENCHMARKS.md, section 2)


def required(what: str, reason: str | None) -> None:
    if reason:
        if os.environ.get(f"REQUIRE_{what}") == "1":
            pytest.fail(f"REQUIRE_{what}=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def slurm():
    required("SLURM", slurm_missing())
    cluster = SlurmCluster()
    try:
        cluster.start()         # installed but not starting: a failure, never a skip
        uses("Slurm")
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def pg():
    required("POSTGRES", pg_missing())
    server = PostgresServer()
    try:
        server.start()
        uses("PostgreSQL")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return copy_course(tmp_path_factory.mktemp("course"))


# ---- helpers -------------------------------------------------------------------------------------

def recipe_env(cluster: SlurmCluster, **variables) -> dict:
    env = cluster.env({k: v for k, v in os.environ.items() if not k.startswith(("JOB_COMPLETION", "SHARD_"))})
    # task/none binds no task to a core: each task would take both cores (WORKERS defaults to them),
    # so one worker per task, as --cpus-per-task=1 asks
    # and no feedback HTML, which nothing here reads (each shard would run nbgrader's generate_feedback
    # over its students: seconds of CPU a shard): that a shard writes its students' feedback is
    # tests/test_grading_postgres.py's (test_cluster_recipe_shards_at_once_then_merge_then_rerun)
    env.update({"PYTHON": sys.executable, "WORKERS": "1", "GRADE_OPTIONS": "--no-feedback",
                "PATH": str(Path(sys.executable).parent) + os.pathsep + env["PATH"]})
    env.update({k: str(v) for k, v in variables.items()})
    return env


def run(args: list[str], course: Path, env: dict, timeout: int = 300) -> str:
    proc = subprocess.run(args, cwd=course, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def submit(course: Path, env: dict) -> tuple[str, str, str]:
    """autograder/cluster/slurm-submit.sh: (array job id, report job id, its output)."""
    out = run(["bash", "autograder/cluster/slurm-submit.sh"], course, env)
    found = re.search(r"grading array job (\d+) .* report job (\d+)", out)
    assert found, out
    return found.group(1), found.group(2), out


def jobs(cluster: SlurmCluster) -> dict[str, dict]:
    """Every job slurmctld knows (finished ones too, MinJobAge=3600), by id: "7", "7_2" for a task."""
    out = subprocess.run([find("scontrol"), "show", "job", "-o"], env=cluster.env(), capture_output=True,
                         text=True, timeout=60).stdout
    known = {}
    for line in out.splitlines():
        fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "JobId" not in fields:
            continue
        if fields.get("ArrayTaskId", "").isdigit():
            known[f"{fields['ArrayJobId']}_{fields['ArrayTaskId']}"] = fields
        else:
            known[fields["JobId"]] = fields
    return known


def wait_for(what: str, ready, timeout: float, cluster: SlurmCluster):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"{what}: not after {timeout:.0f} s\n" + "\n".join(
        f"{k}: {v.get('JobState')} {v.get('Reason')}" for k, v in jobs(cluster).items()))


FINISHED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")


def state(cluster: SlurmCluster, job: str) -> str:
    return jobs(cluster).get(job, {}).get("JobState", "")


def wait_finished(cluster: SlurmCluster, job_ids: list[str], timeout: float) -> dict[str, dict]:
    def done():
        known = jobs(cluster)
        return known if all(known.get(j, {}).get("JobState") in FINISHED for j in job_ids) else None
    return wait_for(f"jobs {job_ids} finished", done, timeout, cluster)


def log_of(course: Path, pattern: str) -> str:
    (path,) = course.glob(pattern)
    return path.read_text(errors="replace")


def slurm_class(dest: Path, shards: int) -> tuple[Path, set[str]]:
    """The example students `make setup` grades, in their three forms (ada's folder, blank.zip, half_*
    files), handing in the step's first notebooks: ada 01-04 (04, whose provided cells take seconds, keeps
    her shard running while the test cancels it with some notebooks graded), blank and half 01-03 (the
    notebooks not handed in are graded as missing: 05 and 06 add seconds of kernel time each and nothing a
    shard, its rerun or the merge does); and ada2 and half4 so that each of `shards` shards has a student:
    each hands in one notebook of ada's and of half's, the quickest to grade."""
    import zipfile
    assert QUICKEST in NOTEBOOK_NAMES
    build(STEP4, dest)
    for name in NOTEBOOK_NAMES[4:]:
        (dest / "ada" / f"{name}.ipynb").unlink()
    for name in NOTEBOOK_NAMES[3:]:
        (dest / f"half_{name}.ipynb").unlink()
    with zipfile.ZipFile(dest / "blank.zip") as archive:
        kept = {n: archive.read(n) for n in archive.namelist() if Path(n).stem in NOTEBOOK_NAMES[:3]}
    assert len(kept) == 3, kept
    with zipfile.ZipFile(dest / "blank.zip", "w") as archive:
        for n, data in kept.items():
            archive.writestr(n, data)
    (dest / "ada2").mkdir()
    shutil.copy(dest / "ada" / f"{QUICKEST}.ipynb", dest / "ada2" / f"{QUICKEST}.ipynb")
    shutil.copy(dest / f"half_{QUICKEST}.ipynb", dest / f"half4_{QUICKEST}.ipynb")
    students = {"ada", "ada2", "blank", "half", "half4"}
    assert {shard_of(s, shards) for s in students} == set(range(shards)), "every shard has a student"
    return dest, students


def grades_json(home: Path) -> dict:
    data = json.loads((home / GRADES_JSON).read_text())
    return data


def note(text: str) -> None:
    ARTIFACT.parent.mkdir(exist_ok=True)
    with open(ARTIFACT, "a") as f:
        f.write(text.rstrip() + "\n\n")


def sacct(cluster: SlurmCluster) -> str:
    """`sacct --completion` over the job completion log (no slurmdbd here): one line a job, each
    array task under its own job id; its ArrayJobId/ArrayTaskId columns are in the raw log."""
    proc = subprocess.run([find("sacct"), "--completion", "--format=JobID,JobName%16,State,Start,End,ExitCode"],
                          env=cluster.env(), capture_output=True, text=True, timeout=60)
    raw = cluster.jobcomp.read_text() if cluster.jobcomp.exists() else ""
    tasks = [" ".join(w for w in line.split() if w.split("=")[0] in
                      ("JobId", "Name", "JobState", "StartTime", "EndTime", "ArrayJobId", "ArrayTaskId", "ExitCode"))
             for line in raw.splitlines()]
    return proc.stdout + "\njob completion log:\n" + "\n".join(sorted(tasks, key=lambda t: int(t.split()[0][6:])))


def seconds(fields: dict, start: str = "StartTime", end: str = "EndTime") -> float:
    from datetime import datetime
    return (datetime.fromisoformat(fields[end]) - datetime.fromisoformat(fields[start])).total_seconds()


# ---- the tests -----------------------------------------------------------------------------------

def test_array_job_grades_the_class_like_make_grade_with_a_task_cancelled_and_rerun(slurm, pg, course, tmp_path,
                                                                                     request, example_class):
    # the task cancelled is ada's (shard 2): four notebooks, the last with seconds of provided cells, so it
    # is cancelled with some graded and some not; its rerun grades the rest, after the array
    shards, cancelled = 4, "2"
    submissions, students = slurm_class(tmp_path / "class", shards)
    victims = {s for s in students if shard_of(s, shards) == int(cancelled)}
    assert victims == {"ada"}, victims
    home, url = tmp_path / "home", pg.create_database("slurm_class")
    env = recipe_env(slurm, SUBMISSIONS=submissions, GRADER_HOME=home, NBGRADER_DB_URL=url,
                     SHARDS=shards, THROTTLE=2)
    # the same class on one machine (`make grade`'s command, SQLite), compared at the end: graded meanwhile
    # (the array spends most of its time in Slurm's scheduling and waits). Its grading home starts as
    # the session's example class (conftest.example_class, what `make setup` grades): `make grade`
    # reuses the results it holds for ada, blank and half and grades ada2's and half4's notebooks.
    one = tmp_path / "one-machine"
    shutil.copytree(example_class[0], one, ignore=shutil.ignore_patterns("*.lock"))
    one_env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SHARD_", "JOB_COMPLETION"))}
    one_env.update(GRADER_HOME=str(one), NBGRADER_DB_URL=f"sqlite:///{one / 'gradebook.db'}")
    began = time.monotonic()
    # make grade's command (`$(PY) -m autograder grade SUBMISSIONS --sandbox auto`), without the feedback
    # HTML, which nothing here reads: nbgrader's generate_feedback over the whole class (20 notebooks)
    make = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(submissions), "--sandbox", "auto",
                             "--no-feedback"],
                            cwd=course, env=one_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    request.addfinalizer(lambda: make.poll() is None and os.killpg(make.pid, 9))   # a failure before the end
    started = time.monotonic()
    array, report, out = submit(course, env)
    note(f"$ SHARDS={shards} THROTTLE=2 autograder/cluster/slurm-submit.sh\n{out}")

    # the throttle: never more than 2 tasks at once, and the merge waits
    def cancel_when_shard_has_graded_something():
        running = [k for k, v in jobs(slurm).items() if k.startswith(f"{array}_") and v["JobState"] == "RUNNING"]
        assert len(running) <= 2, f"the %2 throttle let {running} run at once"
        assert state(slurm, report) == "PENDING", "the merge started before the array finished"
        graded = [p for s in victims for p in (home / "autograded" / s).rglob("*.ipynb")] \
            if (home / "autograded").exists() else []
        return graded and state(slurm, f"{array}_{cancelled}") == "RUNNING"
    wait_for(f"task {array}_{cancelled} running with a notebook graded", cancel_when_shard_has_graded_something,
             900, slurm)
    run([find("scancel"), f"{array}_{cancelled}"], course, env)
    others = [f"{array}_{i}" for i in range(shards) if str(i) != cancelled]
    known = wait_finished(slurm, others + [f"{array}_{cancelled}"], 1200)
    array_seconds = time.monotonic() - started
    for task in others:
        assert known[task]["JobState"] == "COMPLETED", (known[task], log_of(course, f"grade-{task}.log"))
    assert known[f"{array}_{cancelled}"]["JobState"] == "CANCELLED"

    # afterok on an array with a cancelled task: the merge never runs
    merge = wait_for("the merge's dependency never satisfied",
                     lambda: jobs(slurm)[report] if jobs(slurm)[report]["Reason"] == "DependencyNeverSatisfied" else None,
                     120, slurm)
    assert merge["JobState"] == "PENDING" and not (home / GRADES_CSV).exists()
    assert not list(course.glob(f"report-{report}.log"))
    run([find("scancel"), report], course, env)

    # the README's rerun of that task alone, then the merge after it
    rerun_env = dict(env, SHARD_COUNT=str(shards))
    rerun = run([find("sbatch"), "--parsable", f"--array={cancelled}", "autograder/cluster/slurm-grade.sbatch"],
                course, rerun_env).strip()
    report2 = run([find("sbatch"), "--parsable", f"--dependency=afterok:{rerun}",
                   "autograder/cluster/slurm-report.sbatch"], course, env).strip()
    known = wait_finished(slurm, [f"{rerun}_{cancelled}", report2], 1200)
    slurm_seconds = time.monotonic() - started
    rerun_log = log_of(course, f"grade-{rerun}_{cancelled}.log")
    merge_log = log_of(course, f"report-{report2}.log")
    assert known[f"{rerun}_{cancelled}"]["JobState"] == "COMPLETED", rerun_log
    assert known[report2]["JobState"] == "COMPLETED", merge_log
    assert f"shard {cancelled} of {shards}" in rerun_log
    for task in others:
        index = task.split("_")[1]
        assert f"shard {index} of {shards}" in log_of(course, f"grade-{task}.log")

    # nothing lost, nothing doubled: one grade per student, notebook and grade cell
    rows = gradebook_rows(url)
    assert_one_grade_per_cell(rows, students)

    # the same class on one machine: `make grade`'s command, SQLite (started with the array)
    make_out, make_err = make.communicate(timeout=2400)
    make_seconds = time.monotonic() - began
    assert make.returncode == 0, make_out[-3000:] + make_err[-3000:]
    reused = 4 + 3 + 3            # ada's, half's and blank's notebooks (slurm_class): the example class's results
    assert "grade: 2 notebooks to grade" in make_out and f"({reused} already recorded)" in make_out, make_out[-3000:]
    assert report_rows(home) == report_rows(one), "the cluster's grades.csv differs from make grade's"
    assert grades_json(home) == grades_json(one), "the cluster's grades.json differs from make grade's"
    assert {r[0] for r in report_rows(home)} == students

    jobs_now = jobs(slurm)
    array_jobs = {k: v for k, v in jobs_now.items() if k.startswith(f"{array}_")}
    first = min(v["StartTime"] for v in array_jobs.values())
    last = max(v["EndTime"] for v in array_jobs.values())
    note("job states (scontrol show job):\n" + "\n".join(
        f"  {k:>8} {v['JobName']:<16} {v['JobState']:<10} {v['StartTime']} -> {v['EndTime']}  exit {v['ExitCode']}"
        for k, v in sorted(jobs_now.items(), key=lambda kv: int(kv[1]["JobId"]))
        if kv_in(k, array, report, rerun, report2)))
    note("$ sacct --completion\n" + sacct(slurm))
    note(f"the merge ({report2}) after the rerun ({rerun}_{cancelled}):\n{merge_log}")
    note(f"wall time: array {array} first start {first}, last end {last}; submit -> rerun -> merge done "
         f"{slurm_seconds:.0f} s (array with the cancelled task: {array_seconds:.0f} s); rerun task "
         f"{seconds(known[f'{rerun}_{cancelled}']):.0f} s; merge {seconds(known[report2]):.0f} s\n"
         f"make grade's command without feedback, same class, one machine (2 workers, at the same time as the "
         f"array; ada2's and half4's notebooks graded, the example class's results reused): {make_seconds:.0f} s\n"
         f"{make_out[-600:]}")


def kv_in(key: str, *job_ids: str) -> bool:
    return key.split("_")[0] in job_ids


def test_a_failing_shard_keeps_the_merge_from_running_and_names_the_shard_to_rerun(slurm, pg, course, tmp_path):
    """Shard 1's grader exits 3 (a wrapper around the course's Python): afterok holds the merge, the
    task's log names the rerun command; the README's rerun without SHARD_COUNT is refused (an array of
    one task), with it the shard is graded, and the merge then reports both students."""
    submissions = tmp_path / "class"
    students = {"s00", "s01"}
    assert {shard_of(s, 2) for s in students} == {0, 1}
    first = NOTEBOOK_NAMES[0]
    for sid in students:                    # the release of the quickest notebook, handed in untouched
        (submissions / sid).mkdir(parents=True)
        shutil.copy(RELEASE / STEP / f"{first}.ipynb", submissions / sid / f"{first}.ipynb")
    wrapper = tmp_path / "python-failing-shard-1"
    wrapper.write_text(f"""#!/bin/sh
if [ "${{SLURM_ARRAY_TASK_ID:-}}" = 1 ] && [ "$3" = grade ]; then echo "grader: broken on purpose" >&2; exit 3; fi
exec {sys.executable} "$@"
""")
    wrapper.chmod(0o755)
    home, url = tmp_path / "home", pg.create_database("slurm_failing")
    env = recipe_env(slurm, SUBMISSIONS=submissions, GRADER_HOME=home, NBGRADER_DB_URL=url, SHARDS=2)
    env["PYTHON"] = str(wrapper)
    array, report, _ = submit(course, env)
    known = wait_finished(slurm, [f"{array}_0", f"{array}_1"], 600)
    assert known[f"{array}_0"]["JobState"] == "COMPLETED"
    assert known[f"{array}_1"]["JobState"] == "FAILED" and known[f"{array}_1"]["ExitCode"] == "3:0"
    failed_log = log_of(course, f"grade-{array}_1.log")
    assert "grade-shard: shard 1 of 2 failed (exit 3)" in failed_log, failed_log
    assert "Rerun this shard alone: SHARD_COUNT=2 sbatch --array=1 autograder/cluster/slurm-grade.sbatch" in failed_log
    merge = wait_for("the merge held by afterok",
                     lambda: jobs(slurm)[report] if jobs(slurm)[report]["Reason"] == "DependencyNeverSatisfied" else None,
                     120, slurm)
    assert merge["JobState"] == "PENDING" and not (home / GRADES_CSV).exists()
    run([find("scancel"), report], course, env)

    env["PYTHON"] = sys.executable
    # without SHARD_COUNT a lone task cannot know the class's shard count: refused, and says so
    alone = run([find("sbatch"), "--parsable", "--array=1", "autograder/cluster/slurm-grade.sbatch"], course, env).strip()
    assert wait_finished(slurm, [f"{alone}_1"], 300)[f"{alone}_1"]["JobState"] == "FAILED"
    assert "set SHARD_COUNT" in log_of(course, f"grade-{alone}_1.log")
    # the command the failed task's log named
    rerun = run(["sh", "-c", "SHARD_COUNT=2 sbatch --parsable --array=1 autograder/cluster/slurm-grade.sbatch"],
                course, env).strip()
    report2 = run([find("sbatch"), "--parsable", f"--dependency=afterok:{rerun}", "autograder/cluster/slurm-report.sbatch"],
                  course, env).strip()
    known = wait_finished(slurm, [f"{rerun}_1", report2], 600)
    assert known[f"{rerun}_1"]["JobState"] == "COMPLETED", log_of(course, f"grade-{rerun}_1.log")
    assert known[report2]["JobState"] == "COMPLETED", log_of(course, f"report-{report2}.log")
    merged = json.loads((home / GRADES_JSON).read_text())
    assert {g["student"] for g in merged["grades"]} == students
    assert_one_grade_per_cell(gradebook_rows(url), students)
