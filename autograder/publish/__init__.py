"""What people read of a grading: students' feedback, the instructor's reports, the pages that show a
submission, and the written answers out for grading by hand.

  feedback.py         the feedback students read: hidden tests cut out, the scores summary on top
  report.py           a step's grade report: the table on screen, grades/<step>.csv and .json
  insights.py         `make insights`: what the class got wrong, a page and its CSVs
  pdfs.py             `make pdfs`: every student's written answers, one PDF per student
  written.py          `make written-scores`: the written answers out to a CSV, the TAs' scores back in
  similarity.py       `make similarity`: answers alike across the class, for a person to look at
  pages.py            every page that shows a submission (feedback, the formgrader's view, the PDFs)
                      cleaned: nothing a student wrote can run there
  mathml.py           formulas as MathML, so that feedback and PDFs need no network; the MathML
                      tags and attributes pages.py lets through

nbgrader_config.py names feedback.py's preprocessors and pages.py's exporter, preprocessor and filters.
"""
