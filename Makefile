# Course commands. Each prints what it did and where the results are.
#   make setup        environment, corpus, release, solutions, and an example class graded
#   make bench        the benchmarks: rewrites BENCHMARKS.md (SIZES=10,40,160 REPEATS=3)
#   make test         the whole test-suite, browser tests included (make test-quick: the fast subset;
#                     make test-browser: only JupyterLab in Chromium)
# Instructor:  make release | make solutions | make grade SUBMISSIONS=<folder> | make feedback | make formgrader
#              make collect (submissions from the exchange) | make return-feedback (feedback back to it)
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
GRADE_FLAGS = $(if $(WORKERS),--workers $(WORKERS)) --sandbox $(SANDBOX) $(if $(KERNELS),--kernels $(KERNELS)) $(if $(FORCE),--force)

BENCH_FLAGS = $(if $(SIZES),--sizes $(SIZES)) $(if $(REPEATS),--repeats $(REPEATS))

.PHONY: bench setup install system-deps cluster-up cluster-down data release solutions example grade feedback formgrader fetch validate submit my-feedback collect return-feedback lab test test-browser test-quick clean-grades

setup: install data release solutions example
	@echo "setup: done. Student notebooks in release/step-04/, solutions in solutions/, example grades in autograder/grades.csv"

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	@$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@echo "install: course environment ready in $(VENV)/ (torch $$($(PY) -c 'import torch; print(torch.__version__)'))"

# Programs the grader's sandbox, the browser tests, the PostgreSQL gradebook test and the Slurm test
# use (Debian packages; needs root). Those tests start their own server and cluster in temporary folders.
system-deps:
	apt-get update -qq && apt-get install -y -qq bubblewrap chromium chromium-driver postgresql slurm-wlm munge >/dev/null
	@echo "system-deps: bubblewrap, chromium, postgresql, slurm-wlm and munge installed"

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
	$(PY) -m autograder release

solutions: $(PY)
	$(PY) -m autograder solutions $(if $(FORCE),--force)

example: $(PY)
	$(PY) -m autograder example $(GRADE_FLAGS)

grade: $(PY)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder of submissions> [WORKERS=n] [FORCE=1]"; exit 2; }
	$(PY) -m autograder grade "$(SUBMISSIONS)" $(GRADE_FLAGS)

feedback: $(PY)
	$(PY) -m autograder feedback

formgrader: $(PY)
	$(PY) -m autograder lab --formgrader

# The course on one machine, through nbgrader's exchange in exchange/ (autograder/exchange.py).
fetch: $(PY)
	$(PY) -m autograder fetch

validate: $(PY)
	$(PY) -m autograder validate

submit: $(PY)
	$(PY) -m autograder submit $(if $(STUDENT),--student $(STUDENT))

my-feedback: $(PY)
	$(PY) -m autograder my-feedback

collect: $(PY)
	$(PY) -m autograder collect

return-feedback: $(PY)
	$(PY) -m autograder return-feedback

lab: fetch
	$(PY) -m autograder lab

test: $(PY)
	$(PY) -m pytest -rs -n auto --dist loadscope

test-browser: $(PY)
	$(PY) -m pytest -rs -m browser -n auto --dist loadscope tests/browser

test-quick: $(PY)
	$(PY) -m pytest -rs -m "not slow and not browser" -x -q

# Benchmarks: grading throughput against plain nbgrader, where a notebook's time goes, the student
# side, the head against T. Rewrites BENCHMARKS.md. SIZES=10,40 REPEATS=2 took 27 min on 2 cores;
# the defaults add 160 students (2 workers only; plain nbgrader and 1 worker are extrapolated there)
# and a third repeat, about twice as long.
#   make bench [SIZES=10,40,160] [REPEATS=3]
bench: $(PY)
	$(PY) benchmarks/run.py $(BENCH_FLAGS)

clean-grades:
	rm -rf autograder/submitted autograder/autograded autograder/feedback autograder/work \
	       autograder/gradebook.db autograder/grades.csv autograder/grades.json autograder/example-class
	@echo "clean-grades: removed every grading result (the sources, release and solutions are untouched)"
