"""A graded notebook keeps its pictures, in warm kernels as in cold ones: a figure shown with
plt.show(), a Figure displayed, the notebook's own heat maps. (Warm kernels lost every one: the
template imported matplotlib's inline backend before a shell existed, so the forked kernel showed
"<Figure size ...>" only, and 04-attention-on-text's feedback had no heat map.)"""
import json
import os

import pytest

from autograder.kernel import sandbox
from autograder.checks.framework import gives_hidden_inputs
from autograder.course import SOLUTIONS
from autograder.example import filled
from autograder.grading.grade import grade
from conftest import STEP4

pytestmark = pytest.mark.slow

NOTEBOOK = "02-the-head"
SANDBOX = "bwrap" if sandbox.bwrap_problem() is None and os.geteuid() == 0 else "none"
PLOTS = [
    "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.title('shown')\nplt.show()",
    "from IPython.display import display\nfig, ax = plt.subplots(figsize=(2, 2))\nax.imshow([[0, 1], [1, 0]])\n"
    "display(fig)\nplt.close(fig)",
]


def _pictures(nb: dict) -> list[int]:
    """The size of each PNG in the notebook's outputs."""
    return [len(o["data"]["image/png"]) for c in nb["cells"] if c["cell_type"] == "code"
            for o in c.get("outputs", []) if "image/png" in o.get("data", {})]


@pytest.mark.parametrize("kernels", ["warm", "cold"])
def test_figures_are_pictures_in_the_graded_notebook(tmp_path, monkeypatch, kernels):
    home = tmp_path / "home"
    monkeypatch.setattr("autograder.shards.available_cores", lambda: 1)
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
    nb = filled(STEP4, NOTEBOOK, lambda cid, i: True)
    plain = len(_pictures(json.loads((SOLUTIONS / STEP4.name / f"{NOTEBOOK}.ipynb").read_text())))
    # before the first hidden test: what runs after it shows the outputs the student handed in, not the grader's
    # (grading/judging.py conceal_after_hidden_inputs)
    source = json.loads((STEP4.source / f"{NOTEBOOK}.ipynb").read_text())
    hidden = next(c["id"] for c in source["cells"] if gives_hidden_inputs(c))
    first = next(i for i, c in enumerate(nb["cells"]) if c.get("id") == hidden)
    nb["cells"][first:first] = [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
                                 "execution_count": None} for source in PLOTS]
    (tmp_path / "class" / "pics").mkdir(parents=True)
    (tmp_path / "class" / "pics" / f"{NOTEBOOK}.ipynb").write_text(json.dumps(nb))
    run = grade(STEP4, tmp_path / "class", workers=1, sandbox=SANDBOX, kernels=kernels, feedback=False, quiet=True)
    assert {r.get("kernels") for r in run["results"] if r["notebook"] == NOTEBOOK} == {kernels}
    graded = json.loads((home / "autograded" / "pics" / STEP4.name / f"{NOTEBOOK}.ipynb").read_text())
    texts = [o["data"].get("text/plain") for c in graded["cells"][first:first + 2] for o in c.get("outputs", [])
             if "data" in o]
    pictures = _pictures(graded)
    assert len(pictures) == plain + 2, f"{kernels}: {len(pictures)} pictures, expected {plain} + 2; outputs {texts}"
    assert all(size > 1000 for size in pictures), pictures
