"""The course's side of the LMS (Canvas, Moodle): who the students are there, and the grades sent back.

  roster.py           the class list, roster.csv, written from the LMS's gradebook export
                      (`make roster FROM=...`): each student's LMS ids, for reading the LMS's downloads
                      (intake/collect.py) and for the grades going back
  export.py           the grades out of the gradebook, as nbgrader ExportPlugins (`make export`):
                      Canvas's gradebook import and one line per student and notebook

The term (due dates, late work: autograder/term.py) stays outside: the records import it, and export
imports the records.
"""
