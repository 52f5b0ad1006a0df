"""Step 4's hidden tests: one module per notebook, each registering a Check per hidden test cell
(a probe asking the student's kernel, a judge scoring what came back: autograder/checks/framework.py).
Grader-only: this package is never released and never readable from a graded kernel."""
import dlcourse.grading  # noqa: F401  tensors on the wire, torch's seeds and traces (autograder/runtime)

from .suites import SUITES  # noqa: F401  the heads and matrices 03-the-tests' checks are tried on

TITLE = "Step 4: A Causal Self-Attention Head"     # its column in the LMS's gradebook (make export)
CATCH_UP = "step-03"                 # solutions/step-03.ipynb: Step 3's head, for a student who is behind
BONUS_PREFIX = "bonus_"              # 06-going-further: counted apart from the required total
DATA = ["tinyshakespeare.txt"]       # the corpus 04-attention-on-text reads
