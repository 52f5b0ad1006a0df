"""Running a graded notebook's kernel: everything between the grader and the student's code.

  execute.py          runs one notebook: the time limits, the output caps, a dead kernel replaced
  shortpolls.py       nbclient's waits on a kernel's channels in short polls (no slider-cell hang), nbgrader's
                      Execute with them; stands alone: every user's server on the hub gets a copy
  provisioner.py      starts a grading kernel through jupyter_client's kernel provisioner
  warm.py             warm kernels, forked from a template process (kernel_template.py, run as text)
  sandbox.py          how a kernel is isolated: resource limits only, or bubblewrap
  limits.py           every limit: the defaults a course may change and the fixed caps; the wrapper a cold kernel starts under
                      (`python -m autograder.kernel.limits`)
  cgroups.py          a control group per kernel: its memory, processes and CPU time together
  relay.py            the kernel's sockets reached through a relay that bounds each message
  budget.py           a student's time budget shared between the notebooks of a submission
  leftovers.py        the folders a dead grading worker left in the temporary folder, swept

This file imports nothing: it is imported first by `python -m autograder.kernel.limits`, in front of
every cold kernel.
"""
