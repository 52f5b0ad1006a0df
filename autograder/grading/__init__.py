"""Grading a class: the grading process, its workers, and the judging of a graded notebook.

  grade.py            `python -m autograder grade`: the submissions read (intake/), each notebook graded
                      in a worker process, its result recorded (records/), then the feedback and reports
  worker.py           what a grading worker process imports once, in the workers' fork server
  judging.py          an executed notebook turned into scores: the hidden checks judged outside the kernel

This file imports nothing: the workers' fork server imports grade.py first (it leaves out a package
before anything imports nbformat), and this file is imported before it.
"""
