"""The submissions' way in: what a student handed in, read and made into the notebook to grade.

  collect.py          reads a class's submissions in whatever shape they came (folders, zips, loose
                      notebooks, the LMS's downloads) and gives each its student id and time
  assemble.py         rebuilds the notebook to grade from the instructor's cells and the student's answers

Grading (autograder/grading/grade.py) runs the two in that order; the feedback reads assemble's placeholders.
"""
