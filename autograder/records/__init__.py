"""The grader's records of results, one shape from the worker to every output.

model.py: the typed records (a cell's, a notebook's, a student's result); they are converted only at
the edges: pickled between the grader and its workers, written to and read from the result files
(`work/results/<step>/<student>/<notebook>.json`, their schema kept), and to nbgrader's gradebook.
"""
