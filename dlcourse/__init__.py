"""The course's shared code: what the Step 4 notebooks and the grader both use.

- `dlcourse.data`: the Shakespeare corpus (fetch, verify, load) and the character vocabulary.
- `dlcourse.head`: the causal self-attention `Head`, exactly as the handout gives it.
- `dlcourse.plots`: the attention heatmap with character tick labels.
- `dlcourse.widgets`: slider builders (each slider calls a plain function that returns a figure).
- `dlcourse.checks`: property checks with messages that say what most likely went wrong.
"""
