"""Browser tests: the student's and the instructor's JupyterLab, driven in Chromium (marker `browser`)."""
