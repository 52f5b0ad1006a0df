"""What students get, built from the instructor's sources (source/<step>/).

  build.py            the release (`make release`: nbgrader generate_assignment -> release/<step>) and
                      the solutions (`make solutions`), and the executor every notebook is run with
  stamp.py            a hidden test cell's nbgrader metadata and points, stamped from its check when
                      the release is generated (nbgrader_config.py lists StampHiddenTests)
  hidden.py           how a hidden test cell names its check (read by stamp.py, and by selfgrade.py
                      in a kernel, which so imports no nbgrader)
  handout.py          `make handout`: the student-only distribution, and nothing else
  scaffold.py         `make new-check`: a new hidden test, written from a working example

autograder/selfgrade.py, outside the folder, reads a hidden test cell's call with hidden.py, as stamp.py does.
"""
