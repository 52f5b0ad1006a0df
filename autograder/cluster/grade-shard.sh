#!/usr/bin/env bash
# Grade one shard of a class: one Slurm array task or one Kubernetes Indexed Job pod.
# Every shard reads the whole class's folder but opens only its own students' files, grades them
# with all the cores it was given, and writes their scores to the shared PostgreSQL gradebook and
# their graded notebooks and feedback to the shared grader home. Afterwards, once:
# `python -m autograder report` (autograder/cluster/slurm-report.sbatch, or the README's step).
#
# Environment (see the README, "Grading a large course on a cluster"):
#   SUBMISSIONS      the class's submissions (a folder every node can read)
#   GRADER_HOME      where grading writes: submitted/, autograded/, feedback/, work/ (shared, writable)
#   NBGRADER_DB_URL  the shared gradebook, e.g. postgresql+psycopg2://grader:secret@db.example.org/course
#   STEP             the step to grade (default: the only or newest step in source/)
#   SHARD_COUNT      how many shards (default: SLURM_ARRAY_TASK_COUNT, for an array 0..N-1 only: a task
#                    rerun alone, `sbatch --array=17`, is an array of one and needs SHARD_COUNT set)
#   SHARD_INDEX      this shard, 0 .. SHARD_COUNT-1 (default: SLURM_ARRAY_TASK_ID, else JOB_COMPLETION_INDEX)
#   WORKERS          notebooks graded at once (default: every core this task may use)
#   GRADE_OPTIONS    more options for `grade`, e.g. --force or --sandbox none
#   COURSE_DIR       the course checkout (default: the folder two levels above this script)
#   PYTHON           the course's Python (default: COURSE_DIR/.venv/bin/python, else python3)
set -euo pipefail

COURSE_DIR="${COURSE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$COURSE_DIR/.venv/bin/python" ]; then PYTHON="$COURSE_DIR/.venv/bin/python"; else PYTHON=python3; fi
fi
if [ -z "${SHARD_COUNT:-}" ] && [ -n "${SLURM_ARRAY_TASK_COUNT:-}" ]; then
  # the array's size is the shard count only for --array=0-(N-1) (a % throttle changes nothing);
  # `sbatch --array=17` is an array of one task: 17/1 is no shard, and 0/1 would be the whole class
  if [ "$SLURM_ARRAY_TASK_COUNT" = 1 ] || [ "${SLURM_ARRAY_TASK_MIN:-0}" != 0 ] ||
     [ "${SLURM_ARRAY_TASK_MAX:-$((SLURM_ARRAY_TASK_COUNT - 1))}" != "$((SLURM_ARRAY_TASK_COUNT - 1))" ]; then
    echo "grade-shard: this task is $SLURM_ARRAY_TASK_ID of an array --array=${SLURM_ARRAY_TASK_MIN:-?}-${SLURM_ARRAY_TASK_MAX:-?}" \
         "($SLURM_ARRAY_TASK_COUNT tasks), not 0..N-1, so the array does not say how many shards the class has:" \
         "set SHARD_COUNT (1 if the class really is one shard), e.g. SHARD_COUNT=50 sbatch --array=$SLURM_ARRAY_TASK_ID autograder/cluster/slurm-grade.sbatch" >&2
    exit 2
  fi
  SHARD_COUNT="$SLURM_ARRAY_TASK_COUNT"
fi
SHARD_INDEX="${SHARD_INDEX:-${SLURM_ARRAY_TASK_ID:-${JOB_COMPLETION_INDEX:-}}}"
: "${SUBMISSIONS:?set SUBMISSIONS to the folder of the submissions of the class}"
: "${GRADER_HOME:?set GRADER_HOME to the shared folder grading writes to}"
: "${NBGRADER_DB_URL:?set NBGRADER_DB_URL to the shared PostgreSQL gradebook}"
: "${SHARD_COUNT:?set SHARD_COUNT (or run as a Slurm array task)}"
: "${SHARD_INDEX:?set SHARD_INDEX (or run as a Slurm array task or a Kubernetes Indexed Job)}"
export GRADER_HOME NBGRADER_DB_URL

cd "$COURSE_DIR"
echo "grade-shard: shard $SHARD_INDEX of $SHARD_COUNT on $(hostname)"
status=0
# shellcheck disable=SC2086  # GRADE_OPTIONS is a list of options
"$PYTHON" -m autograder grade "$SUBMISSIONS" ${STEP:+--step "$STEP"} --shard "$SHARD_INDEX/$SHARD_COUNT" \
  ${WORKERS:+--workers "$WORKERS"} ${GRADE_OPTIONS:-} || status=$?
if [ "$status" != 0 ]; then
  if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
    again="SHARD_COUNT=$SHARD_COUNT sbatch --array=$SHARD_INDEX autograder/cluster/slurm-grade.sbatch"
  else
    again="SHARD_INDEX=$SHARD_INDEX SHARD_COUNT=$SHARD_COUNT autograder/cluster/grade-shard.sh"
  fi
  echo "grade-shard: shard $SHARD_INDEX of $SHARD_COUNT failed (exit $status); what it graded is kept." \
       "Rerun this shard alone: $again" >&2
fi
exit "$status"
