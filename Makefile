# Course commands. Each prints what it did and where the results are.
#   make setup        environment, corpus, release, solutions, and an example class graded apart (autograder/example/)
#   make bench        the benchmarks: rewrites BENCHMARKS.md (SIZES=10,40,160 REPEATS=3)
#   make test         the whole test-suite, browser tests included (make test-quick: the fast subset;
#                     make test-browser: only JupyterLab in Chromium)
# Every course command takes STEP=<step> (default: the only or newest step in source/; `make steps` lists them).
# Instructor:  make release | make solutions | make grade SUBMISSIONS=<folder> | make feedback | make formgrader
#              make collect (submissions from the exchange) | make return-feedback (feedback back to it)
#              make extensions | make export (Canvas CSV, per-notebook CSV) | make pdfs (written answers)
#              make roster FROM=<LMS gradebook export> | make written-scores [FROM=<filled-in CSV>]
#              make handout (the student-only distribution) | make similarity (answers alike, to look at)
#              make insights [NAMES=1] [EXAMPLE=1] (what the class got wrong: a page and CSVs)
# Student:     make lab (JupyterLab in notebooks/, with your own copy of the released step)
#              make fetch | make validate | make submit [STUDENT=id] | make my-feedback

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
export PATH := $(abspath $(VENV))/bin:$(PATH)
WORKERS ?=
SANDBOX ?= auto
SUBMISSIONS ?=
STUDENT ?=
STEP ?=
STEP_FLAG = $(if $(STEP),--step $(STEP))
GRADE_FLAGS = $(STEP_FLAG) $(if $(WORKERS),--workers $(WORKERS)) --sandbox $(SANDBOX) $(if $(KERNELS),--kernels $(KERNELS)) \
              $(if $(FORCE),--force) $(if $(CELL_TIMEOUT),--cell-timeout $(CELL_TIMEOUT)) \
              $(if $(CELL_WAIT),--cell-wait $(CELL_WAIT)) $(if $(STUDENT_BUDGET),--student-budget $(STUDENT_BUDGET))

# make test's parallel workers: one more than the cores (its tests also wait: on kernels, time limits,
# Slurm, the browser); TEST_WORKERS=n to choose
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

BENCH_FLAGS = $(if $(SIZES),--sizes $(SIZES)) $(if $(REPEATS),--repeats $(REPEATS)) \
              $(if $(PLAIN_MAX),--plain-max $(PLAIN_MAX)) $(if $(SERIAL_MAX),--serial-max $(SERIAL_MAX))

.PHONY: bytecode hub hub-deps hub-values lint steps mutants proof rewrites new-check bench setup install system-deps cluster-up cluster-down data release solutions example grade feedback formgrader fetch validate submit my-feedback collect return-feedback extensions roster written-scores export pdfs handout similarity insights lab test test-profile test-browser test-quick clean-grades

setup: install data release solutions example
	@echo "setup: done. Student notebooks in release/<step>/, solutions in solutions/; the example class is graded apart, in autograder/example/ (its grades: autograder/example/grades/<step>.csv); the course's own gradebook holds no student yet"

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	@$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@$(MAKE) --no-print-directory bytecode
	@echo "install: course environment ready in $(VENV)/ (torch $$($(PY) -c 'import torch; print(torch.__version__)'))"

# The course's own modules compiled once (their __pycache__), as pip compiles the packages it installs:
# where Python writes no bytecode of its own (PYTHONDONTWRITEBYTECODE, set on some machines and CI
# runners), each grading process, kernel, command and test worker would otherwise compile the engine,
# the checks and the tests from source again (about 0.15 s of CPU in a process that imports the engine
# and the checks, measured). Only what changed is compiled again; a module edited since is read from
# its source (Python compares the times), so a stale cache costs nothing but the compiling.
bytecode: $(PY)
	@$(PY) -m compileall -q -j 0 autograder dlcourse source benchmarks tests

# Programs the grader's sandbox, the browser tests, the PostgreSQL gradebook test and the Slurm test
# use (Debian packages; needs root). Those tests start their own server and cluster in temporary folders.
system-deps:
	apt-get update -qq && apt-get install -y -qq bubblewrap chromium chromium-driver postgresql slurm-wlm munge >/dev/null
	@echo "system-deps: bubblewrap, chromium, postgresql, slurm-wlm and munge installed"

# The course on a real JupyterHub (README: "On JupyterHub"). hub-deps: an environment of its own,
# $(HUB_VENV), from a Python every local user may run (HUB_PYTHON: Debian's python3; the course's .venv
# may be built from an interpreter under root's home, which the students' servers cannot enter), with
# the course's packages (requirements.txt) and JupyterHub's pins (requirements-hub.txt), `pip check`
# clean; the hub and every user's server run from it. configurable-http-proxy from npm into
# $(HUB_DIR)/proxy (Node.js 20+). As root, Debian's nodejs, npm and python3-venv are installed when missing.
# ngshare (the exchange as a hub service, `make hub EXCHANGE=ngshare`) in an environment of its own,
# $(NGSHARE_VENV), from requirements-ngshare.txt (it needs SQLAlchemy 1.x; the hub's has 2), `pip check` clean.
HUB_DIR ?= .hub
HUB_VENV ?= .hub-venv
HUB_PYTHON ?= /usr/bin/python3
HUB_PY := $(HUB_VENV)/bin/python
NGSHARE_VENV ?= .ngshare-venv
NGSHARE_PY := $(NGSHARE_VENV)/bin/python
CHP_VERSION ?= 5.3.0
hub-deps:
	@if ! command -v npm >/dev/null || ! $(HUB_PYTHON) -c 'import ensurepip' 2>/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq nodejs npm python3-venv >/dev/null; \
	  else echo "hub-deps: needs Node.js 20+, npm and Python's venv (sudo apt-get install nodejs npm python3-venv)"; exit 1; fi; fi
	test -x $(HUB_PY) || $(HUB_PYTHON) -m venv $(HUB_VENV)
	$(HUB_PY) -m pip install --quiet -r requirements.txt -r requirements-hub.txt
	$(HUB_PY) -m pip install --quiet --no-deps -e .
	$(HUB_PY) -m pip check
	test -x $(NGSHARE_PY) || $(HUB_PYTHON) -m venv $(NGSHARE_VENV)
	$(NGSHARE_PY) -m pip install --quiet -r requirements-ngshare.txt
	$(NGSHARE_PY) -m pip check
	npm install --silent --no-audit --no-fund --prefix $(HUB_DIR)/proxy configurable-http-proxy@$(CHP_VERSION)
	@echo "hub-deps: jupyterhub $$($(HUB_PY) -c 'import jupyterhub; print(jupyterhub.__version__)') in $(HUB_VENV)/, ngshare $$($(NGSHARE_PY) -c 'import ngshare; print(ngshare.__version__)') in $(NGSHARE_VENV)/, configurable-http-proxy $$($(HUB_DIR)/proxy/node_modules/.bin/configurable-http-proxy --version) in $(HUB_DIR)/proxy/"

# The course on JupyterHub (root): configuration from course.toml [hub] and roster.csv into $(HUB_DIR)/,
# local accounts for the roster and the instructors (development passwords dev-<account>, for local
# testing only; NO_PASSWORDS=1 leaves passwords alone), the exchange, then the hub in the foreground.
# NO_START=1: everything but the start. EXCHANGE=ngshare (or course.toml [hub] exchange = "ngshare"):
# ngshare as a service of the hub instead of the folder exchange. autograder/classroom/hub.py.
hub:
	@test -x $(HUB_PY) || { echo "hub: no $(HUB_VENV)/: make hub-deps first"; exit 1; }
	$(HUB_PY) -m autograder hub $(STEP_FLAG) $(if $(NO_START),--no-start) $(if $(NO_PASSWORDS),--no-passwords) $(if $(EXCHANGE),--exchange $(EXCHANGE))

# The course on Kubernetes (README: "On Kubernetes"): Helm values for Zero to JupyterHub from the same
# course.toml [hub] and roster.csv, validated against the chart's schema, the exchange's volume and the
# students' image's build context (student-image/: nothing of the grader), into $(HUB_DIR)/k8s/. Needs
# neither root nor a cluster. autograder/classroom/hub_values.py, student_image.py.
hub-values: $(PY)
	$(PY) -m autograder hub --k8s-values $(HUB_DIR)/k8s

# A one-node Slurm cluster for trying the cluster recipe by hand (the tests start their own): munge
# with a fresh key, slurmctld and slurmd, all in CLUSTER_DIR; no system service is touched. Needs
# root and `make system-deps`. Then `export SLURM_CONF=$(CLUSTER_DIR)/slurm.conf`.
CLUSTER_DIR ?= /tmp/course-slurm
cluster-up: $(PY)
	$(PY) tests/slurmcluster.py up $(CLUSTER_DIR)

cluster-down: $(PY)
	$(PY) tests/slurmcluster.py down $(CLUSTER_DIR)

data: $(PY)
	$(PY) -m dlcourse.data

release: $(PY)
	$(PY) -m autograder release $(STEP_FLAG)

solutions: $(PY)
	$(PY) -m autograder solutions $(STEP_FLAG) $(if $(FORCE),--force)

# The example class (ada, blank, half), graded in its own grader home autograder/example/: never in
# the course's gradebook, reports or exports.
example: $(PY)
	$(PY) -m autograder example $(GRADE_FLAGS)

grade: $(PY)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder of submissions> [WORKERS=n] [FORCE=1]"; exit 2; }
	$(PY) -m autograder grade "$(SUBMISSIONS)" $(GRADE_FLAGS)

feedback: $(PY)
	$(PY) -m autograder feedback $(STEP_FLAG)

# JupyterLab's server options: PORT=8890 IP=0.0.0.0 NO_BROWSER=1 LAB_ARGS="<any other option>"
# (as root, --allow-root is added by itself).
LAB_FLAGS = $(if $(PORT),--port=$(PORT)) $(if $(IP),--ip=$(IP)) $(if $(NO_BROWSER),--no-browser) $(LAB_ARGS)

formgrader: $(PY)
	$(PY) -m autograder lab $(STEP_FLAG) --formgrader $(LAB_FLAGS)

# The course on one machine, through nbgrader's exchange in exchange/ (autograder/classroom/exchange.py).
fetch: $(PY)
	$(PY) -m autograder fetch $(STEP_FLAG)

validate: $(PY)
	$(PY) -m autograder validate $(STEP_FLAG)

submit: $(PY)
	$(PY) -m autograder submit $(STEP_FLAG) $(if $(STUDENT),--student $(STUDENT))

my-feedback: $(PY)
	$(PY) -m autograder my-feedback $(STEP_FLAG)

collect: $(PY)
	$(PY) -m autograder collect $(STEP_FLAG)

return-feedback: $(PY)
	$(PY) -m autograder return-feedback $(STEP_FLAG)

# The term (course.toml: due dates and late policy; extensions.csv: per-student extensions).
extensions: $(PY)
	$(PY) -m autograder extensions $(STEP_FLAG)

# The class list from the LMS: roster.csv from Canvas's gradebook export or Moodle's grades export
# (make roster FROM=<downloaded CSV>); make grade and make export match LMS students through it.
roster: $(PY)
	@test -n "$(FROM)" || { echo "usage: make roster FROM=<the gradebook export downloaded from Canvas or Moodle>"; exit 2; }
	$(PY) -m autograder roster "$(FROM)"

# Grades for the LMS: autograder/export/canvas-<step>.csv (Canvas's gradebook import) and
# autograder/export/notebooks-<step>.csv (one line per student and notebook).
export: $(PY)
	$(PY) -m autograder export $(STEP_FLAG)

# Written answers graded offline: make written-scores writes autograder/written/written-<step>.csv
# (student, notebook, grade id, points, score, comment, answer); FROM=<that file, filled in> imports it.
written-scores: $(PY)
	$(PY) -m autograder written-scores $(STEP_FLAG) $(if $(FROM),--from "$(FROM)")

# The written answers, the question above each, one PDF per student (autograder/pdfs/; Chromium);
# ANON=1: named by code (autograder/pdfs/anonymous/<step>/), the key beside for the instructor.
pdfs: $(PY)
	$(PY) -m autograder pdfs $(STEP_FLAG) $(if $(ANON),--anonymous)

# Answers alike across the class, ranked for a person to look at (winnowing, as MOSS: autograder/similarity.csv,
# and the matching regions side by side in autograder/similarity.html; THRESHOLD=0.8).
similarity: $(PY)
	$(PY) -m autograder similarity $(STEP_FLAG) $(if $(THRESHOLD),--threshold $(THRESHOLD))

# The student-only hand-out in handout/: release, dlcourse, requirements, Binder config (no sources,
# checks or solutions). HUB=<JupyterHub URL> REPO=<hand-out repository> also prints the nbgitpuller link.
handout: $(PY)
	$(PY) -m autograder handout $(STEP_FLAG) $(if $(HUB),--hub $(HUB)) $(if $(REPO),--repo $(REPO))

# What the class got wrong, from the store of results: autograder/insights/<step>.html (item analysis,
# cells waiting for review, misconceptions from the judges' reasons, score against submission time) and
# its CSVs. Students by a code unless NAMES=1; EXAMPLE=1: the example class (make example).
insights: $(PY)
	$(PY) -m autograder insights $(STEP_FLAG) $(if $(NAMES),--names) $(if $(EXAMPLE),--example)

lab: fetch
	$(PY) -m autograder lab $(STEP_FLAG) $(LAB_FLAGS)

# every run records where its time goes (tests/profiling.py): the table ends the run's output and is
# written to artifacts/test-profile/profile.md
test: $(PY) bytecode
	rm -rf artifacts/test-profile
	TEST_PROFILE=artifacts/test-profile $(PY) -m pytest -rs -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

# make test, then its profile put into tests/README.md (commit it with the date it carries)
test-profile: test
	$(PY) tests/profiling.py artifacts/test-profile --readme

test-browser: $(PY)
	$(PY) -m pytest -rs -m browser -n auto --dist loadscope tests/browser

# The grader's import structure, pyflakes' defects and the strictly typed modules (also run by make test:
# tests/test_architecture.py)
lint: $(PY)
	$(VENV)/bin/lint-imports --config .importlinter
	$(VENV)/bin/mypy --cache-dir=/dev/null
	$(VENV)/bin/ruff check autograder dlcourse source/course_plugin.py source/step-04/checks benchmarks
	$(VENV)/bin/ruff check --select F401,F841 tests   # the tests: no unused import or name
	$(VENV)/bin/ruff format --check autograder dlcourse source/course_plugin.py benchmarks

# whole modules to a worker, the most tests first: a module's judgements of the corpus, cached in the
# process that made them, are made once (split over two workers, test_visible_checks_proof's twice)
test-quick: $(PY) bytecode
	$(PY) -m pytest -rs -m "not slow and not browser" -x -q -n 2 --dist loadscope --no-loadscope-reorder

# Benchmarks: grading throughput against plain nbgrader (warm and cold kernels, one notebook and the
# whole step), where a notebook's time goes, the student side, the head against T. Rewrites
# BENCHMARKS.md. SIZES=10,40,160 REPEATS=2 took 15 min on 2 cores (by default plain nbgrader and
# 1 worker grade up to 40 students and are extrapolated beyond; PLAIN_MAX=160 SERIAL_MAX=160 measure
# them at 160 too, about 10 min more); the defaults add a third repeat.
#   make bench [SIZES=10,40,160] [REPEATS=3] [PLAIN_MAX=40] [SERIAL_MAX=40]
bench: $(PY)
	$(PY) benchmarks/run.py $(BENCH_FLAGS)

# Mutation testing of the hidden checks: every graded answer's solution, one mistake at a time, must lose
# points on its hidden test (tests/mutants.py); writes tests/mutation_table.md. About 1 min on one core.
mutants: $(PY)
	OMP_NUM_THREADS=1 $(PY) tests/mutants.py

# The grader proof over the whole proof corpus (tests/proof_corpus.py) through `make grade`'s code path:
# a test run grades a sample of it (PROOF_SEED=<seed> grades a run's sample again); and every wrong answer
# a check with cases of its own judges, under the run's key too (a test run: a sample, FRESH_KEY_SEED=<seed>);
# and plain nbgrader's autograde of all six of the example class's solution notebooks (a test run: 01-03).
proof: $(PY)
	PROOF_FULL=1 $(PY) -m pytest -rs -q -p no:xdist tests/test_grader_proof.py tests/test_fresh_cases.py \
		"tests/test_grading.py::test_plain_nbgrader_autograde_agrees_with_the_grader_on_honest_submissions"

# Equivalence testing of the hidden checks: every graded answer's solution, rewritten into the other shapes a
# correct answer takes, must keep full marks, and the mutants of those rewrites must lose points
# (tests/rewrites.py); writes tests/rewrite_table.md. ONLY=<answer> judges one answer (the table printed only);
# JOBS=n processes side by side (default: the cores).
rewrites: $(PY)
	OMP_NUM_THREADS=1 $(PY) tests/rewrites.py --jobs=$(or $(JOBS),$(shell nproc)) $(ONLY)

steps: $(PY)
	$(PY) -m autograder steps

# A new hidden test from a working example: make new-check NOTEBOOK=01-on-paper ID=my_hidden [POINTS=2] [STEP=...]
new-check: $(PY)
	@test -n "$(NOTEBOOK)" -a -n "$(ID)" || { echo "usage: make new-check NOTEBOOK=<name> ID=<grade_id> [POINTS=n] [ANSWER=name]"; exit 2; }
	$(PY) -m autograder new-check "$(NOTEBOOK)" "$(ID)" $(STEP_FLAG) $(if $(POINTS),--points $(POINTS)) $(if $(ANSWER),--answer $(ANSWER))

clean-grades:
	rm -rf autograder/submitted autograder/autograded autograder/feedback autograder/work \
	       autograder/gradebook.db autograder/grades autograder/example-class autograder/example \
	       autograder/export autograder/pdfs autograder/similarity.csv autograder/similarity.html \
	       autograder/insights
	@echo "clean-grades: removed every grading result, the example class's too (the sources, release, solutions, exchange, roster and the course's case key autograder/case-key are untouched)"
