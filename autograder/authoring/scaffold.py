"""`python -m autograder new-check NOTEBOOK GRADE_ID`: a new hidden test, from a working example.

It writes, for the step:
  * a check in source/<step>/checks/<module>.py (the module named after the notebook unless --module
    says which): a probe that calls the student's function on CASES in the kernel, and a judge that
    compares each answer with `reference`; fill in CASES and `reference` (and the feedback's words);
  * the hidden test cell in source/<step>/<NOTEBOOK>.ipynb, after the answer's cells: one line naming
    the check (its points are stamped from the check when the release is generated);
and prints the proof-corpus entries to add: a right answer written differently, a wrong one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import UsageError

TEMPLATE = '''

@register
class {cls}(Check):
    """{notebook}: the hidden test of `{answer}` (stubbed by `make new-check`: write CASES and
    reference, then the proof corpus's entries)."""
    grade_id = "{grade_id}"
    points = {points:g}
    CASES = [(1,), (2,)]        # the arguments the student's function is called on

    @staticmethod
    def reference(*args):
        """What a right answer returns on these arguments."""
        raise NotImplementedError("{grade_id}: write the reference answer")

    def probe(self, ns, ctx):
        fn = student(ns, "{answer}")
        return [attempt(fn, *case) for case in self.CASES]

    def judge(self, data, ctx):
        verdict = Verdict()
        for case, entry in zip(self.CASES, data):
            value, why = unpack(entry)
            want = self.reference(*case)
            verdict.add(f"{answer}{{case}}", why is None and value == want,
                        why or f"returned {{value!r}}, expected {{want!r}}")
        return verdict
'''
IMPORTS = "from autograder.checks import Check, Verdict, attempt, register, student, unpack\n"


class ScaffoldError(UsageError):
    """`new-check` cannot write this check; the message says why."""


def new_check(
    step, notebook: str, grade_id: str, points: float = 1.0, answer: str | None = None, module: str | None = None
) -> list[Path]:
    if not re.fullmatch(r"[A-Za-z_]\w*", grade_id):
        raise ScaffoldError(f"{grade_id!r} is not a grade id (letters, digits and _)")
    if grade_id in step.checks:
        raise ScaffoldError(f"{step.name} has a check {grade_id!r} already")
    if points <= 0:
        raise ScaffoldError("a hidden test is worth more than 0 points")
    path = step.source / f"{notebook}.ipynb"
    if not path.exists():
        raise ScaffoldError(f"no notebook {path.name} in {step.source} (notebooks: {', '.join(step.notebooks())})")
    nb = json.loads(path.read_text(encoding="utf-8"))
    answer = answer or grade_id.removesuffix("_hidden")
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb["cells"]]
    if answer not in ids:
        raise ScaffoldError(f"{path.name} has no answer cell {answer!r} (give --answer NAME)")
    if grade_id in ids:
        raise ScaffoldError(f"{path.name} has a cell {grade_id!r} already")

    module = module or re.sub(r"^\d+-", "", notebook).replace("-", "_")
    check_file = step.checks_dir / f"{module}.py"
    cls = "".join(part.capitalize() for part in grade_id.split("_"))
    code = TEMPLATE.format(cls=cls, notebook=notebook, answer=answer, grade_id=grade_id, points=points)
    if check_file.exists():
        text = check_file.read_text(encoding="utf-8")
        if IMPORTS.strip() not in text:
            code = "\n" + IMPORTS + code
        check_file.write_text(text.rstrip("\n") + "\n" + code, encoding="utf-8")
    else:
        check_file.write_text(f'"""Hidden tests of {notebook}."""\n{IMPORTS}{code}', encoding="utf-8")

    after = ids.index(answer)
    if f"{answer}_check" in ids:  # after the answer's visible check, as the course's notebooks do
        after = ids.index(f"{answer}_check")
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": grade_id,
        "outputs": [],
        "metadata": {
            "nbgrader": {
                "grade": True,
                "grade_id": grade_id,
                "locked": True,
                "schema_version": 3,
                "solution": False,
                "task": False,
            }
        },
        "source": [
            "# Hidden tests: say here what they try, in the student's words\n",
            "### BEGIN HIDDEN TESTS\n",
            "from autograder.runtime import hidden\n",
            f'hidden("{grade_id}", globals())\n',
            "### END HIDDEN TESTS",
        ],
    }
    nb["cells"].insert(after + 1, cell)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    from ..steps import unload

    unload(step)  # a Step made from now on sees the new check
    print(
        f"new-check: next, in {check_file.name}: CASES and reference; then `make release solutions`;\n"
        f"  and two proof-corpus entries (tests/proof_corpus.py), e.g.\n"
        f"    Entry(\"c-{grade_id}\", \"{notebook}\", {{\"{answer}\": code('''...''')}},\n"
        f'          why="a right answer written another way"),\n'
        f"    Entry(\"w-{grade_id}\", \"{notebook}\", {{\"{answer}\": code('''...''')}},\n"
        f'          expect={{"{grade_id}": 0.0}}, why="the mistake it must catch", says={{"{grade_id}": [...]}}),'
    )
    return [check_file, path]
