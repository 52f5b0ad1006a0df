#!/usr/bin/env bash
# The whole class on Slurm in one command, from the course checkout:
#   SHARDS=50 autograder/cluster/slurm-submit.sh
# (THROTTLE=10: at most 10 array tasks at once, sbatch's --array=0-49%10)
# with SUBMISSIONS, GRADER_HOME and NBGRADER_DB_URL set (README, "Grading a large course on a cluster").
# 1. the gradebook is set up once, here; 2. the array grades SHARDS shards; 3. the report job merges.
set -euo pipefail
: "${SUBMISSIONS:?}" "${GRADER_HOME:?}" "${NBGRADER_DB_URL:?}"
SHARDS="${SHARDS:-50}"
COURSE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$COURSE_DIR"
PYTHON="${PYTHON:-$COURSE_DIR/.venv/bin/python}"
# the step: $STEP, else the only or newest in source/; every job of the run grades that one
STEP="${STEP:-$("$PYTHON" -c 'from autograder.steps import find_step; print(find_step().name)')}"
export SUBMISSIONS GRADER_HOME NBGRADER_DB_URL STEP
"$PYTHON" -m autograder gradebook --step "$STEP"
array=$(sbatch --parsable --array="0-$((SHARDS - 1))${THROTTLE:+%$THROTTLE}" --job-name="grade-$STEP" \
        autograder/cluster/slurm-grade.sbatch)
report=$(sbatch --parsable --dependency="afterok:${array%%;*}" --job-name="report-$STEP" \
         autograder/cluster/slurm-report.sbatch)
echo "slurm-submit: $STEP: grading array job $array ($SHARDS shards), report job $report"
echo "slurm-submit: a task that failed is rerun alone with SHARD_COUNT=$SHARDS sbatch --array=<its index> autograder/cluster/slurm-grade.sbatch," \
     "then sbatch --dependency=afterok:<that job> autograder/cluster/slurm-report.sbatch"
