"""The red-team corpus: hostile and broken submissions, each with the grade it deserves.

A `Case` is one student's submission of one notebook: how to write it into a submissions
folder, the exact score expected on every autograded cell with points, and what the reasons
must say. Cases are made from a notebook's `Profile` (its answer cells, hidden tests and a
plausible wrong answer for each), so that the generic attacks (runaway code, tampering,
cheating, broken files) apply to every notebook that has a profile: to cover a new notebook,
add its profile to PROFILES.

Attack code goes into answer cells, as a student would put it. Unless a case says otherwise,
the hostile code sits in the answer cell of the profile's `target` (the last answer checked by
a hidden test) and every other answer is correct, so the expected scores are: full marks on
the hidden tests of the other answers, and on the target's hidden test what the attack earns.
"""
from __future__ import annotations

import copy
import json
import os
import re
import struct
import textwrap
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
from conftest import STEP, STEP4  # noqa: E402  (the step the attacks are on)
MIME = "application/vnd.dlcourse.probe+json"
MARKERS = ("BEGIN SOLUTION", "END SOLUTION")


# ---- notebooks --------------------------------------------------------------------------------

def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _nbg(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def cell_of(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if _nbg(c).get("grade_id") == grade_id)


@dataclass
class Profile:
    """What the corpus needs to know about one notebook."""
    notebook: str
    uses: dict[str, str]          # hidden test grade_id -> the answer cell (grade_id) it checks
    functions: dict[str, str]     # answer grade_id -> the function it defines (wrapped by the in-function attacks)
    # a plausible wrong answer per answer cell, what it earns on its hidden test and the reason given;
    # left out, the released stub (raise NotImplementedError) is the wrong answer, earning 0
    wrong: dict[str, str] = field(default_factory=dict)
    wrong_scores: dict[str, float] = field(default_factory=dict)
    wrong_reasons: dict[str, str] = field(default_factory=dict)
    release: dict = field(default_factory=dict, repr=False)
    source: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.release = _load(ROOT / "release" / STEP / f"{self.notebook}.ipynb")
        self.source = _load(ROOT / "source" / STEP / f"{self.notebook}.ipynb")
        for test, answer in self.uses.items():
            if answer not in self.wrong:
                self.wrong[answer] = _text(cell_of(self.release, answer))
                self.wrong_scores[test] = 0.0
                self.wrong_reasons[test] = r"raises NotImplementedError"

    @property
    def short(self) -> str:
        return self.notebook.split("-", 1)[0]

    @property
    def points(self) -> dict[str, float]:
        """Every autograded test cell of the notebook and its points (visible checks score 0), as
        released (a hidden test's points are stamped from its check)."""
        return {_nbg(c)["grade_id"]: float(_nbg(c).get("points", 0)) for c in self.release["cells"]
                if _nbg(c).get("grade") and not _nbg(c).get("solution")}

    @property
    def hidden(self) -> list[str]:
        return list(self.uses)

    @property
    def target(self) -> str:
        """The answer cell attacks go into: the one checked by the last hidden test."""
        return self.uses[self.hidden[-1]]

    @property
    def target_test(self) -> str:
        return self.hidden[-1]

    def answer(self, grade_id: str) -> str:
        """The instructor's answer, as a student would type it."""
        cell = next(c for c in self.source["cells"] if _nbg(c).get("grade_id") == grade_id)
        return "\n".join(line for line in _text(cell).split("\n") if not any(m in line for m in MARKERS))

    def notebook_with(self, answers: dict[str, str] | None = None, correct: bool = True) -> dict:
        """The release with the given answers (default: every answer correct, or none if not `correct`)."""
        nb = copy.deepcopy(self.release)
        for cell in nb["cells"]:
            gid = _nbg(cell).get("grade_id")
            if gid in (answers or {}):
                cell["source"] = answers[gid]
            elif correct and gid in self.functions:
                cell["source"] = self.answer(gid)
        return nb

    def scores(self, **changed: float) -> dict[str, float]:
        """Expected scores: full marks on every test cell unless changed (visible checks: 0)."""
        out = dict(self.points)
        out.update(changed)
        return out

    def zero(self) -> dict[str, float]:
        return {gid: 0.0 for gid in self.points}


PAPER = Profile(
    notebook="01-on-paper",
    uses={"bonus_shapes": "shapes", "bonus_dot_variance": "dot_variance"},
    functions={"shapes": "shapes", "dot_variance": "dot_variance"},
    wrong={
        # the scores compare tokens with tokens: (T, d_k) is the classic slip
        "shapes": textwrap.dedent('''\
            def shapes(T, d, d_k, d_v):
                return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v),
                        "Q": (T, d_k), "K": (T, d_k), "V": (T, d_v),
                        "scores": (T, d_k), "A": (T, d_k), "out": (T, d_v)}
            '''),
        # the estimate is computed, but not returned: the classic forgotten `return`
        "dot_variance": textwrap.dedent('''\
            def dot_variance(d_k, n, seed):
                g = torch.Generator().manual_seed(seed)
                q = torch.randn(n, d_k, generator=g)
                k = torch.randn(n, d_k, generator=g)
                dots = (q * k).sum(dim=-1)
                dots, dots.var().item()
            '''),
    },
    # what the checks give these answers (tests/test_redteam_corpus.py asks them)
    wrong_scores={"bonus_shapes": 0.0, "bonus_dot_variance": 0.0},
    wrong_reasons={"bonus_shapes": r"wrong or missing: scores, A",
                   "bonus_dot_variance": r"should return a pair \(dots, variance\)"},
)

PROFILES = [PAPER]
# notebook 3 joins for the argument-leak cases alone: hidden tests that call a student's function on a
# tensor (mask_after_softmax_row_sums) and a student's check on heads the grader serves
TESTS = Profile(
    notebook="03-the-tests",
    uses={"check_perturbation_hidden": "check_causality_perturbation", "mask_after_softmax_hidden": "mask_after_softmax_row_sums"},
    functions={"check_simplex": "check_simplex", "check_causality_perturbation": "check_causality_perturbation",
               "check_causality_gradient": "check_causality_gradient", "scale_table": "scale_table",
               "mask_after_softmax_row_sums": "mask_after_softmax_row_sums",
               "fails_on_mask_after_softmax": "FAILS_ON_MASK_AFTER_SOFTMAX"},
)
# Another notebook joins the corpus with a profile; the wrong answers may be left to the stub:
#   Profile("05-attention-as-smoothing", uses={"smoothing_attention_hidden": "smoothing_attention"},
#           functions={"smoothing_attention": "smoothing_attention"})


# ---- cases ----------------------------------------------------------------------------------------

@dataclass
class Ctx:
    """What a case may need to know when it writes its files (the attacks name real paths)."""
    submissions: Path
    home: Path               # the batch's GRADER_HOME
    port: int                # a TCP server on the host's loopback that nobody should reach
    limits: dict = field(default_factory=dict)    # the limits the batch is graded under (autograder.kernel.limits.Limits)


@dataclass
class Case:
    name: str                # unique; also the student id (with the notebook's number)
    kind: str                # runaway, tampering, cheating, malformed, honest
    what: str                # one line for the report
    profile: Profile
    write: Callable[[Ctx, Path], None]     # writes the submission into the student's folder
    scores: dict[str, float]               # every test cell with its exact expected score
    reasons: dict[str, str] = field(default_factory=dict)   # grade_id -> regex in its error
    notes: list[str] = field(default_factory=list)          # regexes, each matching a note
    problem: str | None = None             # regex: a file of this student reported as unusable
    sandbox_only: bool = False             # only safe, or only meaningful, inside the sandbox
    check: Callable | None = None          # more assertions: check(ctx, graded) (see test_redteam)

    @property
    def student(self) -> str:
        return f"{self.name}-{self.profile.short}"


def notebook_file(ctx: Ctx, folder: Path, profile: Profile, nb: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{profile.notebook}.ipynb").write_text(json.dumps(nb, indent=1), encoding="utf-8")


def answers_case(name, kind, what, p: Profile, answers: Callable[[Ctx], dict], scores, **kw) -> Case:
    """A case whose submission is the release with `answers(ctx)` (the rest answered correctly)."""
    return Case(name, kind, what, p, lambda ctx, folder: notebook_file(ctx, folder, p, p.notebook_with(answers(ctx))),
                scores, **kw)


def edited_case(name, kind, what, p: Profile, edit: Callable[[dict], None], scores, answers=None, **kw) -> Case:
    """A case whose submission is an edited notebook: `edit(nb)` changes it in place."""
    def write(ctx, folder):
        nb = p.notebook_with(answers)
        edit(nb)
        notebook_file(ctx, folder, p, nb)
    return Case(name, kind, what, p, write, scores, **kw)


def before(hostile: str, answer: str) -> str:
    """Hostile code at the top of an answer cell, before the (correct) answer."""
    return textwrap.dedent(hostile).strip() + "\n\n" + answer


def inside(p: Profile, grade_id: str, hostile: str) -> str:
    """The correct answer, wrapped so that every call of the function runs the hostile code first."""
    fn = p.functions[grade_id]
    body = textwrap.indent(textwrap.dedent(hostile).strip(), "    ")
    return (f"{p.answer(grade_id)}\n\n_original_{fn} = {fn}\n\n"
            f"def {fn}(*args, **kwargs):\n{body}\n    return _original_{fn}(*args, **kwargs)\n")


# ---- runaway code -------------------------------------------------------------------------------------

NOT_DEFINED = r"is not defined: run the cell that defines it"


def runaway_cases(p: Profile) -> list[Case]:
    t, tt = p.target, p.target_test
    lost = p.scores(**{tt: 0.0})
    event = lambda what: rf"cell '{t}': {what}"       # noqa: E731  (a note on the cell that ran away)
    cases = [
        answers_case("loop", "runaway", "infinite loop at the top of an answer cell", p,
                     lambda ctx: {t: before("while True:\n    pass", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}, notes=[event("CellTimeoutError")]),
        answers_case("sleep", "runaway", "sleeps past the cell time limit", p,
                     lambda ctx: {t: before("import time\ntime.sleep(100_000)", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}, notes=[event("CellTimeoutError")]),
        answers_case("stubborn", "runaway", "ignores SIGINT, then loops forever", p,
                     lambda ctx: {t: before("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                            "while True:\n    pass", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}, notes=[event("CellTimeoutError")]),
        answers_case("loop-in-fn", "runaway", "infinite loop inside the function the hidden test calls", p,
                     lambda ctx: {t: inside(p, t, "while True:\n    pass")}, lost,
                     reasons={tt: r"the hidden tests could not run: CellTimeoutError"},
                     notes=[rf"cell '{tt}': CellTimeoutError"]),
        answers_case("sysexit", "runaway", "sys.exit() at the top of an answer cell", p,
                     lambda ctx: {t: before("import sys\nsys.exit(3)", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}),
        answers_case("sysexit-in-fn", "runaway", "sys.exit() inside the function", p,
                     lambda ctx: {t: inside(p, t, "import sys\nsys.exit(3)")}, lost,
                     reasons={tt: r"raised SystemExit(?!:)"}),
        answers_case("quit", "runaway",
                     "quit() and exit() in an answer cell (the grading kernel ignores them); answer correct", p,
                     lambda ctx: {t: before("quit()\nexit()", p.answer(t))}, p.scores()),
        answers_case("osexit", "runaway", "os._exit(1) at the top of an answer cell", p,
                     lambda ctx: {t: before("import os\nos._exit(1)", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}, notes=[event("DeadKernelError")]),
        answers_case("osexit-in-fn", "runaway", "os._exit(1) inside the function", p,
                     lambda ctx: {t: inside(p, t, "import os\nos._exit(1)")}, lost,
                     reasons={tt: r"the hidden tests could not run: DeadKernelError"},
                     notes=[rf"cell '{tt}': DeadKernelError"]),
        answers_case("segfault", "runaway", "a segfault through ctypes", p,
                     lambda ctx: {t: before("import ctypes\nctypes.string_at(0)", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}, notes=[event("DeadKernelError")]),
        answers_case("membomb", "runaway", "a memory bomb (touches every byte) at the top of an answer cell", p,
                     lambda ctx: {t: before("blocks = []\nwhile True:\n    blocks.append(b'x' * 2**27)",
                                            p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}),
        answers_case("membomb-in-fn", "runaway", "a memory bomb inside the function", p,
                     lambda ctx: {t: inside(p, t, "blocks = []\nwhile True:\n    blocks.append(b'x' * 2**27)")},
                     lost, reasons={tt: r"raised MemoryError"}),
        answers_case("print", "runaway", "prints 100 MB at the top of an answer cell, answer correct", p,
                     lambda ctx: {t: before("for _ in range(1000):\n    print('x' * 100_000)", p.answer(t))},
                     p.scores(), notes=[rf"cell '{t}': its output went beyond \d+ kB"]),
        # 1 MB a call: over the hidden test's calls a hundred times the notebook's cap (4 MB a call,
        # 420 MB in all, took 7 s on a quiet machine and outlasted the batch's 20 s cell limit on a busy one)
        answers_case("print-in-fn", "runaway", "prints 1 MB on every call of a correct function", p,
                     lambda ctx: {t: inside(p, t, "for _ in range(10):\n    print('y' * 100_000)")},
                     p.scores(), notes=[rf"cell '{tt}': its output went beyond \d+ kB"]),
        answers_case("forks", "runaway",
                     "spawns children until the process limit refuses one (they sleep), answer correct", p,
                     lambda ctx: {t: before(FORK_COUNT, p.answer(t))}, p.scores(),
                     sandbox_only=True, check=check_fork_count),
        answers_case("forkbomb", "runaway", "a fork bomb: every process forks forever", p,
                     lambda ctx: {t: before("import os\nwhile True:\n    try:\n        os.fork()\n"
                                            "    except OSError:\n        pass", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}, notes=[event("CellTimeoutError")], sandbox_only=True),
        answers_case("killall", "runaway", "kill -9 of its parent, of PID 1 and of every process it may signal "
                     "(kill(-1)); answer correct", p,
                     lambda ctx: {t: before(KILLALL, p.answer(t))}, p.scores(), sandbox_only=True, check=check_killall),
    ]
    # a kernel that dies early: restarted, and everything after it graded as usual
    def die_in_header(nb):
        header = next(c for c in nb["cells"] if c.get("id") == "header_name")
        header["source"] = "NAME = 'Mallory'\nimport os\nos._exit(1)"       # the name cell is the student's
    cases.append(edited_case("dies-early", "runaway",
                             "os._exit(1) in the name cell, before everything; answers correct", p,
                             die_in_header, p.scores(),
                             notes=[r"cell 'header_name': DeadKernelError", r"the kernel was restarted"]))
    # a kernel that dies again and again: after the allowed restarts, the rest scores zero, with the reason
    # (the name cell and two answer cells: a notebook with two answers checked by hidden tests)
    if len(set(p.uses.values())) > 1:
        cases.append(_dies_thrice(p))
    return cases


def _dies_thrice(p: Profile) -> Case:
    first = p.uses[p.hidden[0]]

    def edit(nb):
        header = next(c for c in nb["cells"] if c.get("id") == "header_name")
        header["source"] = "NAME = 'Mallory'\nimport os\nos._exit(1)"       # the name cell is the student's
    return edited_case(
        "dies-thrice", "runaway", "the kernel dies in three cells: the restarts run out", p, edit, p.zero(),
        answers={first: before("import os\nos._exit(1)", p.answer(first)),
                 p.target: before("import os\nos._exit(1)", p.answer(p.target))},
        reasons={p.hidden[-1]: r"NotRun \(not run: the kernel failed too many times\)"},
        notes=[r"the kernel failed 3 times"])


KILLALL = '''
import os, signal
for _pid in (os.getppid(), 1, -1):
    try:
        os.kill(_pid, signal.SIGKILL)
        print("KILL", _pid, "sent")
    except OSError as err:
        print("KILL", _pid, type(err).__name__)
'''


def check_killall(ctx: Ctx, graded) -> None:
    """Inside the sandbox the kernel may signal no process but its own: not bwrap (its parent, PID 1),
    not the grader, not another student's kernel (kill(-1) finds no process to signal)."""
    text = graded.output_of(graded.case.profile.target)
    assert len(re.findall(r"^KILL ", text, re.M)) == 3 and "sent" not in text, text[:500]
    assert "KILL 1 PermissionError" in text and "KILL -1 ProcessLookupError" in text, text[:500]


# posix_spawn (vfork) rather than fork: forking a kernel that has imported torch copies its page
# tables each time, and 250 of them took longer than the batch's 20 s cell limit on a busy machine
FORK_COUNT = '''
import os, shutil, signal
sleep = shutil.which("sleep")
children = []
try:
    while len(children) < 100_000:
        children.append(os.posix_spawn(sleep, ["sleep", "600"], {}))
    print("FORKS: no limit")
except OSError as err:
    print(f"FORKS: {len(children)} children, then {type(err).__name__}")
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
'''


def check_fork_count(ctx: Ctx, graded) -> None:
    from autograder.kernel.limits import KERNEL_PROCESSES
    text = graded.output_of(graded.case.profile.target)
    found = re.search(r"FORKS: (\d+) children, then BlockingIOError", text)
    assert found, text[:500]
    assert 0 < int(found.group(1)) < KERNEL_PROCESSES


# ---- tampering ---------------------------------------------------------------------------------------------

def tampering_cases(p: Profile) -> list[Case]:
    """Every tampering is tried on a notebook whose target answer is left unanswered (the release's stub):
    tampering must neither rescue the target's hidden test nor cost the other answers their marks."""
    t, tt = p.target, p.target_test
    first_test = p.hidden[0]
    stub = {t: _text(cell_of(p.release, t))}
    expected = p.scores(**{tt: 0.0})
    unanswered = {tt: r"raises NotImplementedError"}

    def edit_test(nb):
        cell_of(nb, tt)["source"] = f"# my own test\n{p.points[tt]}"

    def delete_test(nb):
        nb["cells"].remove(cell_of(nb, tt))

    def duplicate(nb):
        cell = cell_of(nb, tt)
        nb["cells"].insert(nb["cells"].index(cell), copy.deepcopy(cell) | {"source": "print('a copy')"})

    def retype(nb):
        cell = cell_of(nb, tt)
        cell["cell_type"] = "markdown"
        cell.pop("outputs", None)
        cell.pop("execution_count", None)

    def move(nb):
        # the first hidden test moved to the very top, before anything it needs is defined
        cell = cell_of(nb, first_test)
        nb["cells"].remove(cell)
        nb["cells"].insert(0, cell)

    def points(nb):
        _nbg(cell_of(nb, tt))["points"] = 0
        _nbg(cell_of(nb, first_test))["points"] = 100

    def rename(nb):
        _nbg(cell_of(nb, tt))["grade_id"] = "my_own_test"

    def rename_both(nb):
        cell = cell_of(nb, tt)
        _nbg(cell)["grade_id"] = "my_own_test"
        cell["id"] = "my-own-test"
        cell["source"] = "2"

    def flags(nb):
        nbg = _nbg(cell_of(nb, tt))
        nbg.update(grade=False, solution=True, locked=False)
        cell_of(nb, tt)["source"] = "# nothing to test here"
        _nbg(cell_of(nb, first_test)).update(grade=False)

    def strip(nb):
        for cell in nb["cells"]:
            cell["metadata"] = {}

    def kernel(nb):
        nb["metadata"]["kernelspec"] = {"name": "bash", "display_name": "Bash", "language": "bash"}
        nb["metadata"]["language_info"] = {"name": "bash"}

    def bonus(nb):
        nb["cells"].append({"cell_type": "code", "id": "bonus", "execution_count": None, "outputs": [],
                            "source": "100", "metadata": {"nbgrader": {
                                "grade": True, "solution": False, "locked": True, "points": 100,
                                "grade_id": "bonus", "schema_version": 3}}})

    def provided(nb):
        cell = next(c for c in nb["cells"] if _nbg(c).get("locked") and not _nbg(c).get("grade"))
        cell["source"] += ("\nimport builtins\nbuiltins.NotImplementedError = type('NotImplementedError', "
                           "(Warning,), {})")

    restored = rf"test cell '{tt}' was changed and was restored"
    put_back = rf"test cell '{tt}' was missing and was put back"
    cases = [
        ("edit", "a test cell's source replaced by its points", edit_test, [restored]),
        ("delete", "a test cell deleted", delete_test, [put_back]),
        ("duplicate", "a test cell duplicated (the copy edited)", duplicate, []),
        ("retype", "a test cell turned into markdown", retype, [restored]),
        ("move", "a test cell moved to the top of the notebook", move, []),
        ("points", "points changed (0 on one test, 100 on another)", points, [restored]),
        ("rename", "a grade_id renamed", rename, [restored]),
        ("rename-id", "grade_id and cell id renamed, source replaced", rename_both, [put_back]),
        ("flags", "nbgrader flags flipped (test made an answer, grade switched off)", flags, [restored]),
        ("strip", "all cell metadata stripped", strip, [restored]),
        ("kernel", "kernelspec switched to bash", kernel, [r"the notebook's kernel was changed"]),
        ("bonus", "a test cell of its own added, worth 100 points", bonus, []),
        ("provided", "a locked provided cell edited to disarm NotImplementedError", provided, []),
    ]
    out = [edited_case(f"tamper-{name}", "tampering", what, p, edit, expected, answers=stub,
                       reasons=unanswered, notes=notes) for name, what, edit, notes in cases]
    # metadata and cell ids stripped: nothing marks the answers any more; they still run, but the
    # released answer cells (stubs) are put back after them and are what the hidden tests see
    def strip_all(nb):
        for cell in nb["cells"]:
            cell["metadata"] = {}
            cell.pop("id", None)
        nb["nbformat_minor"] = 4
    out.append(edited_case("tamper-strip-ids", "tampering", "metadata and cell ids stripped (answers correct)",
                           p, strip_all, p.zero(),
                           reasons={h: r"raises NotImplementedError" for h in p.hidden},
                           notes=[rf"answer cell '{p.target}' is missing: graded as unanswered"]))
    return out


# ---- cheating at run time -------------------------------------------------------------------------------------

def cheating_cases(p: Profile) -> list[Case]:
    """The target answer is wrong, and the cheat tries to make it pass; each must earn exactly what the
    wrong answer earns without the cheat (or zero, when the cheat breaks the hidden test itself)."""
    t, tt = p.target, p.target_test
    wrong = p.wrong[t]
    as_wrong = p.scores(**{tt: p.wrong_scores[tt]})
    why_wrong = {tt: p.wrong_reasons[tt]}
    payload_for_all = "\n".join(
        f"display({{{MIME!r}: {{'grade_id': {h!r}, 'data': {FORGED!r}}}}}, raw=True)" for h in p.hidden)

    cases = [
        answers_case("wrong", "cheating", "the wrong answer alone (the baseline of the cheats below)", p,
                     lambda ctx: {t: wrong}, as_wrong, reasons=why_wrong),
        answers_case("patch-torch", "cheating", "torch.allclose, torch.equal, torch.testing.assert_close patched", p,
                     lambda ctx: {t: wrong + textwrap.dedent('''
                         torch.allclose = lambda *a, **k: True
                         torch.equal = lambda *a, **k: True
                         torch.testing.assert_close = lambda *a, **k: None
                         ''')}, as_wrong, reasons=why_wrong),
        answers_case("patch-assert", "cheating", "AssertionError replaced in builtins", p,
                     lambda ctx: {t: wrong + "\nimport builtins\nbuiltins.AssertionError = "
                                  "type('AssertionError', (Warning,), {})\n"}, as_wrong, reasons=why_wrong),
        answers_case("patch-builtins", "cheating", "builtins abs, isinstance, round and print patched", p,
                     lambda ctx: {t: wrong + "\nimport builtins\nbuiltins.abs = lambda x: 0.0\n"
                                  "builtins.round = lambda *a, **k: 0\nbuiltins.print = lambda *a, **k: None\n"},
                     as_wrong, reasons=why_wrong),
        answers_case("hidden-global", "cheating", "defines its own `hidden` that returns full points", p,
                     lambda ctx: {t: wrong + "\ndef hidden(grade_id, ns):\n    print('Hidden tests: 2 of 2 points.')\n"
                                  "    return 2\n"}, as_wrong, reasons=why_wrong),
        answers_case("fake-module", "cheating", "a fake autograder.runtime in sys.modules, returning full points", p,
                     lambda ctx: {t: wrong + textwrap.dedent('''
                         import sys, types
                         fake = types.ModuleType("autograder.runtime")
                         fake.hidden = lambda grade_id, ns: 2
                         sys.modules["autograder.runtime"] = fake
                         ''')}, p.scores(**{tt: 0.0}), reasons={tt: r"the hidden tests produced no result"}),
        answers_case("fake-module-payload", "cheating",
                     "a fake autograder.runtime that prints a forged result (the transport of an older grader)", p,
                     lambda ctx: {t: wrong + textwrap.dedent(f'''
                         import sys, types
                         from IPython.display import display
                         fake = types.ModuleType("autograder.runtime")
                         fake.hidden = lambda grade_id, ns: display({{{MIME!r}: {{"grade_id": grade_id,
                                                                    "data": {FORGED!r}}}}}, raw=True)
                         sys.modules["autograder.runtime"] = fake
                         ''')}, p.scores(**{tt: 0.0}), reasons={tt: r"the hidden tests produced no result"}),
        answers_case("forged-output", "cheating", "prints forged results for every hidden test from an answer cell", p,
                     lambda ctx: {t: wrong + "\nfrom IPython.display import display\n" + payload_for_all + "\n"},
                     as_wrong, reasons=why_wrong),
        answers_case("forged-in-probe", "cheating", "the function prints a forged result when the probe calls it", p,
                     lambda ctx: {t: inside_wrong(p, t, "from IPython.display import display\n" + payload_for_all)},
                     as_wrong, reasons=why_wrong),
        answers_case("forged-hook", "cheating",
                     "an IPython post_run_cell hook prints forged results after every cell", p,
                     lambda ctx: {t: wrong + "\nfrom IPython.display import display\n"
                                  "def _forge(result):\n" + textwrap.indent(payload_for_all, "    ") + "\n"
                                  "get_ipython().events.register('post_run_cell', _forge)\n"},
                     as_wrong, reasons=why_wrong),
    ]
    return cases + knowledge_cases(p)


# ---- what the grader knows ---------------------------------------------------------------------

GRADER_ONLY = ["autograder.checks", "autograder.checks.framework", "autograder.checks.probeserver",
               "autograder.checks.casekey", "autograder.grading.grade", "autograder.grading.judging",
               "autograder.steps", "autograder.plugin", "course_plugin", "course_checks", "course_checks.step_04"] + \
    [f"course_checks.step_04.{path.stem}" for path in sorted((ROOT / "source" / STEP / "checks").glob("*.py"))
     if path.stem != "__init__"]
GRADER_FILES = sorted(str(p) for p in (ROOT / "autograder").rglob("*.py")
                      if "runtime" not in p.parts and p.name != "__init__.py" or "checks" in p.parts) + \
    [str(ROOT / "source" / STEP), str(ROOT / "source" / STEP / "checks"), str(ROOT / "source" / "course_plugin.py"),
     str(ROOT / "solutions")]

KNOWLEDGE = '''
import importlib, json, os, sys
def _try(fn):
    try:
        return "allowed: " + str(fn())[:80]
    except BaseException as err:
        return "blocked: " + type(err).__name__
_seen = {{}}
for _name in {modules!r}:
    _seen["import " + _name] = _try(lambda: importlib.import_module(_name).__file__)
for _path in {files!r}:
    _seen["read " + _path] = _try(lambda: open(_path).read() if os.path.isfile(_path) else os.listdir(_path))
    if _seen["read " + _path].startswith("allowed"):
        print(open(_path).read() if os.path.isfile(_path) else os.listdir(_path))   # into the feedback
import autograder
_seen["the grader's folder"] = sorted(n for n in os.listdir(os.path.dirname(autograder.__file__)) if n != "__pycache__")
print("KNOWLEDGE " + json.dumps(_seen))
'''


def check_knowledge(ctx: Ctx, graded) -> None:
    text = graded.output_of(graded.case.profile.target)
    found = re.search(r"KNOWLEDGE (\{.*\})", text)
    assert found, text[:500]
    seen = json.loads(found.group(1))
    assert seen.pop("the grader's folder") == ["__init__.py", "runtime"]
    assert {k: v for k, v in seen.items() if not v.startswith("blocked")} == {}


# the student's function, when a hidden test calls it, looks for the grader's reference and returns
# what the reference returns; it finds none, and returns its own (wrong) answer
# (the calling frames walked by hand: inspect.stack() reads every frame's source and searched all
# of sys.modules for a module per frame, 30 ms a call in a kernel; over the hidden test's 105 calls,
# on a busy machine, that alone outlasted the batch's cell limit and the case tested the limit)
DETECT = '''
import sys, importlib
_calling, _frame = [], sys._getframe()
while _frame is not None:
    _calling.append(_frame.f_code.co_filename)
    _frame = _frame.f_back
if any("autograder" in name for name in _calling):
    for _module in ("course_checks.step_04.paper", "autograder.checks.framework", "autograder.checks.probeserver"):
        try:
            importlib.import_module(_module)
            print("FOUND", _module)
        except ImportError:
            pass
'''

# a session answered with forged, well-formed results for every request, without the student's functions
FORGE_SESSION = '''
import autograder.runtime as _runtime
def _forged(self, request):
    if request.get("op") == "has":
        return {"value": True}
    return {"value": 50.0}
_runtime.Session.answer = _forged
'''


def knowledge_cases(p: Profile) -> list[Case]:
    t, tt = p.target, p.target_test
    wrong = p.wrong[t]
    as_wrong = p.scores(**{tt: p.wrong_scores[tt]})
    why_wrong = {tt: p.wrong_reasons[tt]}
    knowledge = KNOWLEDGE.format(modules=GRADER_ONLY, files=GRADER_FILES)
    return [
        answers_case("grader-knowledge", "cheating", "imports and reads the checks, references, judges and the "
                     "instructor sources, and prints what it finds", p,
                     lambda ctx: {t: p.answer(t) + "\n" + knowledge}, p.scores(), sandbox_only=True,
                     check=check_knowledge),
        answers_case("detect-probe", "cheating", "the function notices the hidden test calling it and reaches for "
                     "the grader's reference", p,
                     lambda ctx: {t: inside_wrong(p, t, DETECT)}, as_wrong, reasons=why_wrong, sandbox_only=True),
        answers_case("forge-session", "cheating", "patches the kernel's runtime to answer every request with a "
                     "well-formed number, without calling the student's functions", p,
                     lambda ctx: {t: wrong + FORGE_SESSION}, p.scores(**{tt: 0.0}),
                     reasons={tt: r"does not come from samples|not credited|checked once the dot products are right"}),
    ]


# data a forger might send: well-formed for the transport, meaningless for the judges
FORGED = {"__dict__": {"cases": [{"__dict__": {"value": 1.0}}]}}


def inside_wrong(p: Profile, grade_id: str, hostile: str) -> str:
    fn = p.functions[grade_id]
    body = textwrap.indent(textwrap.dedent(hostile).strip(), "    ")
    return (f"{p.wrong[grade_id]}\n\n_original_{fn} = {fn}\n\n"
            f"def {fn}(*args, **kwargs):\n{body}\n    return _original_{fn}(*args, **kwargs)\n")


def eq_cases(p: Profile) -> list[Case]:
    """Answers that are not plain data: objects equal to everything."""
    cases = []
    first = p.uses[p.hidden[0]]
    if first == "shapes":
        cases.append(answers_case(
            "always-equal", "cheating", "shapes() returns an object whose __eq__ is always true", p,
            lambda ctx: {"shapes": textwrap.dedent('''
                class Anything:
                    def __eq__(self, other): return True
                    def __ne__(self, other): return False
                    def __iter__(self): return iter(())
                    def __getitem__(self, key): return self
                    def __contains__(self, key): return True
                    def __len__(self): return 0
                def shapes(T, d, d_k, d_v):
                    return Anything()
                ''')}, p.scores(bonus_shapes=0.0), reasons={"bonus_shapes": r"an object of another class; return numbers"}))
        cases.append(answers_case(
            "always-equal-values", "cheating", "a real dict whose values equal every shape", p,
            lambda ctx: {"shapes": textwrap.dedent('''
                class Anything(tuple):
                    def __eq__(self, other): return True
                def shapes(T, d, d_k, d_v):
                    return {k: Anything() for k in ["X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "A", "out"]}
                ''')}, p.scores(bonus_shapes=0.0), reasons={"bonus_shapes": r"an object of another class; return numbers"}))
    return cases


def lookup_cases(p: Profile) -> list[Case]:
    """Answers from recorded hidden inputs (issue 22): a student's cell recorded what the hidden test
    called it with in an earlier grading (and printed it into the feedback); the resubmission answers
    those inputs from a table and anything else wrongly. Each check also runs cases of this submission's
    own, drawn from the course key and the code (the table's code too), so the table earns nothing."""
    cases = []
    if "shapes" in p.functions.values():
        STEP4.package                                   # imports the step's checks: course_checks.step_04
        from course_checks.step_04.paper import Shapes, expected_shapes
        table = {case: expected_shapes(*case) for case in Shapes.CASES}
        cases.append(answers_case(
            "lookup-recorded", "cheating", "shapes() records its inputs, prints them, and answers the inputs "
            "an earlier grading used from a table of their right shapes", p,
            lambda ctx: {"shapes": textwrap.dedent(f'''
                SEEN = []
                TABLE = {table!r}    # the hidden inputs as an earlier grading's feedback printed them
                def shapes(T, d, d_k, d_v):
                    SEEN.append((T, d, d_k, d_v))
                    print("hidden inputs so far:", SEEN)
                    return TABLE.get((T, d, d_k, d_v), {{}})
                ''')}, p.scores(bonus_shapes=0.0), reasons={"bonus_shapes": r"wrong or missing"}))
    return cases


# ---- reaching out of the sandbox ----------------------------------------------------------------------------------

REACH = '''
import json, os, socket
def _try(fn):
    try:
        return "allowed: " + str(fn())[:80]
    except BaseException as err:
        return "blocked: " + type(err).__name__
_paths = json.loads({paths!r})
_report = {{}}
for _label, _path in _paths["read"].items():
    _report["read " + _label] = _try(lambda: len(open(_path, "rb").read()) if os.path.isfile(_path)
                                     else os.listdir(_path))
for _label, _path in _paths["write"].items():
    _report["write " + _label] = _try(lambda: open(_path, "ab").write(b"owned"))
_report["delete honest submission"] = _try(lambda: os.remove(_paths["write"]["honest submission"]))
_report["connect host loopback"] = _try(lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3))
_report["connect internet"] = _try(lambda: socket.create_connection(("1.1.1.1", 443), timeout=3))
_report["resolve a name"] = _try(lambda: socket.getaddrinfo("pypi.org", 443))
_scratch = os.path.dirname(os.environ["GRADER_SOCKET"])          # the kernel's own scratch folder
_report["other kernels' scratch"] = "visible: " + ", ".join(os.listdir(os.path.dirname(_scratch)))
_report["own scratch"] = "visible: " + os.path.basename(_scratch)
print("REACH " + json.dumps(_report))
'''


def honest_id(p: Profile) -> str:
    """The honest student of a profile (see honest_cases): attacks aim at their files."""
    return f"honest-{p.short}"


def reach_paths(ctx: Ctx, p: Profile) -> dict:
    honest = honest_id(p)
    honest_sub = ctx.home / "submitted" / honest / STEP / f"{p.notebook}.ipynb"
    return {
        "read": {
            "instructor source": str(ROOT / "source" / STEP / f"{p.notebook}.ipynb"),
            "gradebook": str(ctx.home / "gradebook.db"),
            "course case key": str(ctx.home / "case-key"),
            "honest submission": str(honest_sub),
            "honest original": str(ctx.submissions / honest / f"{p.notebook}.ipynb"),
            "results": str(ctx.home / "work" / "results"),
            "grader code": str(ROOT / "autograder" / "grading" / "grade.py"),
            "release": str(ROOT / "release" / STEP),
            "repository": str(ROOT / ".git"),
        },
        "write": {
            "gradebook": str(ctx.home / "gradebook.db"),
            "honest submission": str(honest_sub),
            "honest original": str(ctx.submissions / honest / f"{p.notebook}.ipynb"),
            "a new file among the results": str(ctx.home / "work" / "results" / "owned.json"),
            "the hidden checks": str(ROOT / "autograder" / "checks" / "__init__.py"),
        },
    }


def check_reach(ctx: Ctx, graded) -> None:
    text = graded.output_of(graded.case.profile.target)
    found = re.search(r"REACH (\{.*\})", text)
    assert found, text[:500]
    report = json.loads(found.group(1))
    leaks = {k: v for k, v in report.items() if not v.startswith(("blocked", "visible"))}
    assert leaks == {}, leaks
    # the course's case key was made before any kernel ran, and is there to be hidden
    assert (ctx.home / "case-key").is_file() and report["read course case key"].startswith("blocked"), report
    # /tmp is private: beside its own scratch folder the kernel sees no other kernel's
    visible = report["other kernels' scratch"].split(": ", 1)[1].split(", ")
    assert visible == [report["own scratch"].split(": ", 1)[1]], visible


def reach_cases(p: Profile) -> list[Case]:
    t = p.target
    return [answers_case(
        "reach", "cheating", "reads and writes the gradebook, hidden tests and another student's files; "
        "connects to the network", p,
        lambda ctx: {t: p.answer(t) + "\n" + REACH.format(paths=json.dumps(reach_paths(ctx, p)), port=ctx.port)},
        p.scores(), sandbox_only=True, check=check_reach)]


def headserver_cases(p: Profile) -> list[Case]:
    t = p.target
    flood = textwrap.dedent('''
        import os, socket, struct
        _held = []
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(os.environ["GRADER_SOCKET"])
                _held.append(s)
            except OSError:
                break
        for s in _held[:5]:
            try:
                s.sendall(struct.pack("!Q", 2**62) + b"{")      # a message far beyond the size limit
                s.sendall(struct.pack("!Q", 5) + b"nope!")
            except OSError:
                pass
        for s in _held:
            s.close()
        print("FLOOD", len(_held))
        ''')
    return [answers_case("headserver-flood", "cheating", "floods the grader's probe server with connections and junk", p,
                         lambda ctx: {t: p.answer(t) + "\n" + flood}, p.scores())]


# ---- resources: a kernel and its children together, the grader's reading of what a kernel sends ----------

# Memory split over three forked children (each under a process's address-space limit) and the
# kernel's in-memory folders: more than the kernel's limit in all. Its control group ends children
# (the largest first) until the rest fit; the kernel and the answer after the attack live on.
MEMSPLIT = r"""
import os, signal, time
def _fill(path, mb):
    try:
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(b"t" * 2**20)
    except OSError as err:
        print("FOLDER", path, type(err).__name__)
_fill("/tmp/held", 200)
_fill("/dev/shm/held", 60)
_kids = []
for _ in range(3):
    _pid = os.fork()
    if _pid == 0:
        _block = bytearray(700 * 2**20)
        for _i in range(0, len(_block), 4096):
            _block[_i] = 1
        time.sleep(3)
        os._exit(0)
    _kids.append(_pid)
_ends = []
for _pid in _kids:
    _, _status = os.waitpid(_pid, 0)
    _ends.append("killed" if os.WIFSIGNALED(_status) and os.WTERMSIG(_status) == signal.SIGKILL else "ended")
print("CHILDREN", sorted(_ends))
os.remove("/tmp/held"); os.remove("/dev/shm/held")
"""

# Seven forked children, each opening descriptors until refused (the attack, at 20,000 each,
# took 140,239 of the host's open files): each process of a kernel may hold KERNEL_FILES.
DESCRIPTORS = r"""
import os, resource
_r, _w = os.pipe()
_kids = []
for _ in range(7):
    _pid = os.fork()
    if _pid == 0:
        _held = 0
        try:
            while True:
                os.open("/dev/null", os.O_RDONLY)
                _held += 1
        except OSError:
            pass
        os.write(_w, f"{_held}\n".encode())
        os._exit(0)
    _kids.append(_pid)
for _pid in _kids:
    os.waitpid(_pid, 0)
os.close(_w)
_counts = sorted(int(n) for n in os.read(_r, 4096).split())
print("DESCRIPTORS", resource.getrlimit(resource.RLIMIT_NOFILE)[0], _counts)
"""

# The hidden test's answers replaced by nested empty lists (the issue's: 31 MB each, under the old
# 32 MB cap; and the same within the grader's 8 MB cap, refused for its ten million values).
PROBE_LISTS = r"""
import struct
import autograder.runtime as _runtime
_big = b'{{"value": [' + b"[]," * ({size} // 3) + b'[]]}}'
_send = _runtime.send
def _huge_answer(sock, message):
    if message.get("op") == "session":
        return _send(sock, message)
    sock.sendall(struct.pack("!Q", len(_big)) + _big)
_runtime.send = _huge_answer
"""

# 16 connections to the grader, each with one 8 MB message, held open (the issue's: 3.30 GiB).
PROBE_IDLE = r"""
import os, socket, struct
_body = b'{"op": "forward", "x": [' + b"[]," * (8 * 2**20 // 3 - 20) + b'[]]}'
_held, _sent = [], 0
for _ in range(16):
    _s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _s.connect(os.environ["GRADER_SOCKET"])
        _s.sendall(struct.pack("!Q", len(_body)) + _body)
        _sent += 1
        _s.settimeout(60)
        _s.recv(1)                   # the grader's answer: it hangs up
    except OSError:
        pass
    _held.append(_s)
print("IDLE", len(_held), "sent", _sent)
"""

# Widget messages of 20 MB each (the issue's: 120 of them, 2.62 GiB of widget state in the grader;
# tests/test_message_bounds.py sends 40). 10 here: the kernel holds its widgets and, while the grader
# reads, the messages waiting to be sent, all within the batch's 2 GiB of address space with torch
# loaded, however slowly a busy grader reads (20 ran out of it on a busy machine).
WIDGETS = r"""
import ipywidgets as _widgets
_held = [_widgets.Text(value=str(_i % 10) * (20 * 2**20)) for _i in range(10)]
print("WIDGETS", len(_held))
"""


def resource_cases(p: Profile) -> list[Case]:
    t, tt = p.target, p.target_test
    refused = r"the grader refused the kernel's answer"
    return [
        answers_case("memsplit", "runaway", "memory split over three forked children and the in-memory folders, "
                     "more than the kernel's limit in all; answer correct", p,
                     lambda ctx: {t: before(MEMSPLIT, p.answer(t))}, p.scores(), check=check_memsplit),
        answers_case("descriptors", "runaway", "seven forked children open descriptors until refused; answer correct",
                     p, lambda ctx: {t: before(DESCRIPTORS, p.answer(t))}, p.scores(), check=check_descriptors),
        answers_case("probe-lists", "cheating", "answers a hidden test with 31 MB of nested empty lists", p,
                     lambda ctx: {t: p.answer(t) + "\n" + PROBE_LISTS.format(size=31 * 2**20)},
                     p.scores(**{tt: 0.0}), reasons={tt: refused + r": message of \d+ bytes is too large"}),
        answers_case("probe-values", "cheating", "answers a hidden test with 8 MB of nested empty lists", p,
                     lambda ctx: {t: p.answer(t) + "\n" + PROBE_LISTS.format(size=8 * 2**20 - 64)},
                     p.scores(**{tt: 0.0}), reasons={tt: refused + r": a message of more than 1,000,000 values"}),
        answers_case("probe-idle", "cheating", "16 connections to the grader with one 8 MB message each, held open; "
                     "answer correct", p, lambda ctx: {t: p.answer(t) + "\n" + PROBE_IDLE}, p.scores(),
                     check=check_probe_idle),
        answers_case("widgets", "runaway", "10 widget messages of 20 MB each; answer correct", p,
                     lambda ctx: {t: before(WIDGETS, p.answer(t))}, p.scores(),
                     notes=[rf"cell '{t}': its output went beyond \d+ kB"]),
        answers_case("frames", "runaway", "one message of 40 parts of 48 MB, each a view of one buffer (1.9 GB "
                     "for the grader, 48 MB for the kernel)", p,
                     lambda ctx: {t: before(FRAMES, p.answer(t))}, p.scores(**{tt: 0.0}),
                     reasons={tt: NOT_DEFINED},
                     notes=[rf"cell '{t}': GraderError: the kernel sent a message larger than the grader reads "
                            r"\(128 MB a message, in at most 1,000 parts: it sent a message of more than 128 MB\)"]),
    ]


# One Jupyter message of many parts, each under ZeroMQ's cap on a part, all views of one buffer, to the
# grader's shell socket: ZeroMQ copies none of them in the kernel, and the grader's ZeroMQ would receive
# them all before the grader reads the first (autograder/kernel/relay.py counts them as they arrive).
FRAMES = """
_kernel = get_ipython().kernel
_view = memoryview(bytearray(48 * 2**20))
_kernel.session.send(_kernel.shell_stream, "stream", {"name": "stdout", "text": "parts"},
                     parent=_kernel.get_parent("shell"), ident=_kernel._parent_ident["shell"], buffers=[_view] * 40)
"""


def check_memsplit(ctx: Ctx, graded) -> None:
    text = graded.output_of(graded.case.profile.target)
    assert "CHILDREN" in text and "FOLDER" not in text, text[:500]
    if graded.result.get("metered") == "cgroup":       # the kernel's group ended children; without one, none
        assert "killed" in text, text[:500]
        (peak,) = graded.result["kernel_peaks"]
        assert peak["oom_kills"] >= 1 and peak["memory_bytes"] >= 200 * 2**20, peak


def check_descriptors(ctx: Ctx, graded) -> None:
    from autograder.kernel.limits import KERNEL_FILES
    text = graded.output_of(graded.case.profile.target)
    found = re.search(r"DESCRIPTORS (\d+) \[([\d, ]+)\]", text)
    assert found, text[:500]
    counts = [int(n) for n in found.group(2).split(",")]
    assert int(found.group(1)) == KERNEL_FILES and len(counts) == 7, text[:500]
    assert all(KERNEL_FILES // 2 < n < KERNEL_FILES for n in counts), counts      # each stopped at the limit (less what it inherited)


def check_probe_idle(ctx: Ctx, graded) -> None:
    text = graded.output_of(graded.case.profile.target)
    found = re.search(r"IDLE 16 sent (\d+)", text)
    assert found and 0 < int(found.group(1)) <= 16, text[:500]


# ---- broken files ----------------------------------------------------------------------------------------------------

def malformed_cases(p: Profile) -> list[Case]:
    nb_name = f"{p.notebook}.ipynb"
    good = lambda: json.dumps(p.notebook_with(), indent=1)      # noqa: E731
    zero = p.zero()

    def raw(data: bytes, name: str = nb_name):
        def write(ctx, folder):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        return write

    def sparse(ctx, folder):
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / nb_name, "wb") as f:
            f.truncate(2**30)                          # 1 GB, sparse: costs no disk

    def other_step_renamed(ctx, folder):
        folder.mkdir(parents=True, exist_ok=True)
        other = (STEP4.source.parent / STEP4.catch_up / f"{STEP4.catch_up}.ipynb").read_bytes()
        (folder / nb_name).write_bytes(other)

    def other_step(ctx, folder):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "step-03.ipynb").write_bytes((STEP4.source.parent / STEP4.catch_up / f"{STEP4.catch_up}.ipynb").read_bytes())

    def zip_slip(ctx, folder):
        folder.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(folder / "handin.zip", "w") as archive:
            archive.writestr(f"../../escaped/{nb_name}", good())
            archive.writestr(f"/tmp/escaped-{nb_name}", good())

    def symlink(ctx, folder):
        folder.mkdir(parents=True, exist_ok=True)
        os.symlink(ctx.submissions / honest_id(p) / nb_name, folder / nb_name)

    def nested(ctx, folder):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / nb_name).write_text('{"nbformat": 4, "cells": ' + "[" * 100_000 + "]" * 100_000 + "}")

    def hostile_json(ctx, folder):
        nb = p.notebook_with()
        nb["cells"] += [{"cell_type": "code", "id": ["not", "a", "string"], "source": 12, "metadata": []},
                        {"cell_type": "code", "id": {"x": 1}, "source": ["a", 3],
                         "metadata": {"nbgrader": {"grade_id": ["x"], "grade": True, "points": 1e9}}},
                        None, 7, "cell"]
        nb["metadata"] = ["not", "a", "dict"]
        notebook_file(ctx, folder, p, nb)

    latin1 = good().replace('"metadata": {', '"metadata": {"author": "Zoë", ', 1).encode("latin-1")
    return [
        Case("not-json", "malformed", "not JSON at all", p, raw(b"print('hello')\n"), zero,
             problem=rf"{nb_name}: not valid JSON", reasons=_all(p, rf"{nb_name}: not valid JSON")),
        Case("truncated", "malformed", "a notebook cut off halfway", p, raw(good().encode()[:5000]), zero,
             problem=r"damaged or truncated", reasons=_all(p, rf"{nb_name}: not valid JSON.*truncated")),
        Case("nbformat3", "malformed", "an nbformat 3 notebook", p,
             raw(json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                             "worksheets": [{"cells": []}]}).encode()), zero,
             problem=r"nbformat 3", reasons=_all(p, rf"{nb_name}: an old notebook \(nbformat 3\)")),
        Case("empty", "malformed", "an empty file", p, raw(b""), zero,
             problem=r"the file is empty", reasons=_all(p, rf"{nb_name}: the file is empty")),
        Case("wrong-name", "malformed", "the notebook handed in under another name", p,
             raw(good().encode(), "my_homework.ipynb"), zero,
             problem=r"my_homework.ipynb: not a notebook of this step",
             reasons=_all(p, r"not submitted; .*my_homework.ipynb: not a notebook of this step")),
        Case("other-step", "malformed", "a notebook of another step (step-03.ipynb)", p, other_step, zero,
             problem=r"step-03.ipynb: not a notebook of this step",
             reasons=_all(p, r"not submitted; .*step-03.ipynb: not a notebook of this step")),
        Case("other-step-renamed", "malformed", "another step's notebook renamed to this one", p,
             other_step_renamed, zero, notes=[rf"answer cell '{p.target}' is missing: graded as unanswered"],
             reasons={h: r"is not defined|NotImplementedError" for h in p.hidden}),
        Case("zip-slip", "malformed", "a zip whose members are named ../../… and /tmp/…", p, zip_slip, zero,
             problem=r"handin.zip:\.\./\.\./escaped/.*a path that leaves the zip",
             reasons=_all(p, r"handin.zip:.*a path that leaves the zip"), check=check_no_escape),
        Case("huge", "malformed", "a 1 GB file (sparse)", p, sparse, zero,
             problem=r"1024 MB is too large", reasons=_all(p, rf"{nb_name}: 1024 MB is too large")),
        Case("latin1", "malformed", "bytes that are not UTF-8 (latin-1)", p, raw(latin1), zero,
             problem=r"not UTF-8", reasons=_all(p, rf"{nb_name}: not UTF-8 text")),
        Case("nested", "malformed", "JSON nested 100,000 levels deep", p, nested, zero,
             problem=r"nested", reasons=_all(p, rf"{nb_name}: not a notebook")),
        Case("symlink", "malformed", "a symbolic link to another student's notebook", p, symlink, zero,
             problem=r"a symbolic link", reasons=_all(p, r"a symbolic link")),
        Case("hostile-json", "malformed", "valid JSON with cells of every wrong type (answers correct)", p,
             hostile_json, p.scores()),
    ]


def _all(p: Profile, regex: str) -> dict[str, str]:
    return {gid: regex for gid in p.points}


def check_no_escape(ctx: Ctx, graded) -> None:
    nb_name = f"{graded.case.profile.notebook}.ipynb"
    for base in (ctx.submissions, ctx.submissions.parent, ctx.home):
        assert not (base.parent / "escaped").exists() and not (base / "escaped").exists()
    assert not Path(f"/tmp/escaped-{nb_name}").exists()


# ---- waiting: cells that use no CPU time and hold a worker ---------------------------------------------------------------
# A cell that waits uses no CPU time, so no CPU limit stops it: each kind of wait is stopped at the ceiling
# for a cell's waiting (Limits.cell_wait_timeout), and a student who waits in cell after cell, each just
# under that ceiling, in every notebook, at the student's time budget (Limits.student_budget), with the
# cells and notebooks after it scoring 0, saying so (autograder/kernel/execute.py, autograder/kernel/budget.py).

WAITS = {
    "wait-pipe": ("reads a pipe whose other end it holds itself", "import os\n_r, _w = os.pipe()\nos.read(_r, 16)"),
    "wait-event": ("waits for a threading.Event nobody sets", "import threading\nthreading.Event().wait()"),
    "wait-select": ("select() on nothing, without a timeout", "import select\nselect.select([], [], [])"),
    "wait-naps": ("sleeps a million times 10 ms", "import time\nfor _ in range(10**6):\n    time.sleep(0.01)"),
    "wait-child": ("waits for a child process that sleeps", "import subprocess\nsubprocess.call(['sleep', '86400'])"),
    "wait-join": ("joins a thread that waits forever",
                  "import threading\n_t = threading.Thread(target=threading.Event().wait, daemon=True)\n"
                  "_t.start()\n_t.join()"),
    "wait-stubborn": ("ignores SIGINT, then sleeps", "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                      "time.sleep(86400)"),
}
# the sleeping cells of the student who waits in every notebook: each waits this share of the ceiling
NAP_SHARE = 0.6
NAPPING_CELLS = 80
NAPPING_NOTEBOOKS = ("02-the-head", "05-attention-as-smoothing")     # besides the profile's own


def waiting_cases(p: Profile) -> list[Case]:
    t, tt = p.target, p.target_test
    lost = p.scores(**{tt: 0.0})
    cases = [answers_case(name, "runaway", what, p, lambda ctx, code=code: {t: before(code, p.answer(t))}, lost,
                          reasons={tt: NOT_DEFINED}, notes=[rf"cell '{t}': CellTimeoutError"])
             for name, (what, code) in WAITS.items()]
    cases += [
        answers_case("wait-in-fn", "runaway", "the function sleeps on every call (the hidden test waits for it)", p,
                     lambda ctx: {t: inside(p, t, "import time\ntime.sleep(86400)")}, lost,
                     reasons={tt: r"the hidden tests could not run: CellTimeoutError"},
                     notes=[rf"cell '{tt}': CellTimeoutError"]),
        answers_case("wait-stdin", "runaway", "input() at the top of an answer cell (a graded kernel has no stdin)", p,
                     lambda ctx: {t: before("name = input('your name? ')", p.answer(t))}, lost,
                     reasons={tt: NOT_DEFINED}, check=check_no_stdin),
        Case("wait-everywhere", "runaway",
             f"{NAPPING_CELLS} added cells in each of three notebooks, each sleeping just under the ceiling for "
             "waiting: the student's time budget runs out", p, _write_napping(p),
             p.scores(**{h: 0.0 for h in p.hidden}),
             reasons={h: r"time budget" for h in p.hidden}, check=check_budget_ran_out),
    ]
    return cases


def check_no_stdin(ctx: Ctx, graded) -> None:
    """input() fails at once in a graded kernel (it has no stdin): the cell waits for nothing."""
    assert graded.result["stopped"] == [], graded.result["stopped"]
    # the grader's run (the instructor's copy: the graded notebook shows the grader's words for a cell after a
    # hidden test)
    path = graded.home / "work" / "runs" / STEP / graded.case.student / f"{graded.case.profile.notebook}.ipynb"
    cell = cell_of(json.loads(path.read_text(encoding="utf-8")), graded.case.profile.target)
    assert [o.get("ename") for o in cell["outputs"] if o.get("output_type") == "error"] == \
        ["StdinNotImplementedError"], cell["outputs"]


def napping(nb: dict, seconds: float) -> dict:
    """`nb` with NAPPING_CELLS cells added after its first, each sleeping `seconds`."""
    naps = [{"cell_type": "code", "id": f"nap-{i}", "metadata": {}, "execution_count": None, "outputs": [],
             "source": f"import time\ntime.sleep({seconds:.2f})  # nap {i}"} for i in range(NAPPING_CELLS)]
    nb["cells"][1:1] = naps
    return nb


def _write_napping(p: Profile):
    def write(ctx: Ctx, folder: Path) -> None:
        seconds = NAP_SHARE * ctx.limits.get("cell_wait_timeout", 30.0)
        notebook_file(ctx, folder, p, napping(p.notebook_with(), seconds))
        for name in NAPPING_NOTEBOOKS:          # the release, answered by nothing but the naps
            release = _load(ROOT / "release" / STEP / f"{name}.ipynb")
            (folder / f"{name}.ipynb").write_text(json.dumps(napping(release, seconds)), encoding="utf-8")
    return write


def check_budget_ran_out(ctx: Ctx, graded) -> None:
    """The budget ran out in the first notebook: the notebooks after it ran no kernel, every cell of theirs
    says why, and the report lists the student; what the notebooks counted is at most the budget and a look."""
    results = {name: json.loads((graded.home / "work" / "results" / STEP / graded.case.student / f"{name}.json")
                                .read_text()) for name in (graded.case.profile.notebook, *NAPPING_NOTEBOOKS)}
    first = results[graded.case.profile.notebook]
    assert first["budget"]["ran_out"], first["budget"]
    # the budget runs out while a nap runs (that nap is stopped) or as one ends (the next is not run, nothing
    # is stopped): the poll that sees it decides, not the student; the scores are the same either way
    assert [s["limit"] for s in first["stopped"]] in ([], ["student budget"]), first["stopped"]
    assert any("time budget" in note and "were not run" in note for note in graded.notes), graded.notes
    for name in NAPPING_NOTEBOOKS:
        assert results[name]["kernel_starts"] == 0 and results[name]["budget"]["ran_out"], results[name]["budget"]
        assert all("time budget" in c["error"] for c in results[name]["cells"] if c["kind"] == "auto"
                   and c["max_score"] > 0), results[name]["cells"]
    budget = ctx.limits["student_budget"]
    used = sum(r["budget"]["used"] for r in results.values())
    assert budget - 1 <= used <= budget + 1, [r["budget"] for r in results.values()]
    report = json.loads((graded.home / "grades" / f"{STEP}.json").read_text(encoding="utf-8"))
    assert graded.case.student in report["time_budget"]["ran_out"], report["time_budget"]


# ---- hidden inputs read back through the feedback (argument-leak) ---------------------------------------------------
# Answers that raise, or print, the inputs a hidden test called them with, in every form a student
# would print them: repr, str, f-strings (rounded, padded, scientific), hex, lists, numpy arrays,
# shapes, tensors under other print options, a timer that prints after the call returned. Every
# form sits between ⟦ and ⟧: nothing of it may reach the feedback page or the autograded notebook
# (autograder/checks/framework.py `shown_error`: an error's kind, never its message), while the
# reason still says what kind of error the answer raised.

LEAK = r'''
import sys as _sys
import numpy as _np
import torch as _torch

def _hidden_test():
    """Whether a hidden test is calling: the grader's runtime is on the stack (the visible checks and the
    notebook's own cells call the answer on inputs the student sees, which may be printed)."""
    frame = _sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if "autograder" in name and "runtime" in name:
            return True
        frame = frame.f_back
    return False

def _leak(*args):
    if not _hidden_test():
        return "not in a hidden test"
    forms = []
    for a in args:
        if isinstance(a, _torch.Tensor):
            forms += [repr(a), str(a.shape), str(a.tolist()), str(a.numpy()), f"{a.sum().item():.2f}",
                      f"{a.flatten()[0].item():.3e}", _np.array2string(a.numpy(), precision=2),
                      str(tuple(a.shape)), f"{a.mean():.4f}"]
            _torch.set_printoptions(precision=8, sci_mode=True)
            forms.append(str(a))
            _torch.set_printoptions(profile="default")
        elif isinstance(a, (int, float)):
            forms += [repr(a), f"{a}", f"{a:>8}", f"{a:.2f}", f"{a:e}", hex(int(a)), f"{a:_}", str([a, a]),
                      str(_np.array([a])), str(float(a))]
        else:
            forms += [repr(a), str(a)]
            out = a(_torch.zeros(1, 2, 32)) if callable(a) else None
            if isinstance(out, _torch.Tensor):
                forms += [repr(out), str(out.shape)]
    _calls.append(1)                 # each call starts with another form: the message is clipped at 300 characters
    start = len(_calls) % len(forms)
    # the brackets made at run time, so the page's copy of this source holds none
    return chr(0x27E6) + " | ".join(forms[start:] + forms[:start]).replace("\n", " ") + chr(0x27E7)

_calls = []
'''


def _leaking(p: Profile, grade_id: str, how: str) -> str:
    """The answer `grade_id`, its function wrapped to leak its arguments `how` when a hidden test calls it:
    'raise' (a ValueError carrying them; an AssertionError from a check), or 'print' (stdout and stderr),
    then answering correctly. (A thread that prints after the call has returned prints into whichever
    cell runs then, where nothing tells its output from the student's own: not scrubbed, see README.)"""
    fn = p.functions[grade_id]
    error = "AssertionError" if fn.startswith("check_") else "ValueError"
    hostile = (f"raise {error}(_leak(*args))" if how == "raise" else
               "import sys\n_text = _leak(*args)\nprint(_text)\nprint(_text, file=sys.stderr)")
    return textwrap.dedent(LEAK).strip() + "\n\n" + inside(p, grade_id, hostile)


LEAKED = re.compile(r"⟦[^⟧\n<]*")          # a leak's text: to its end, or to the end of the line it was clipped on


def leak_cases(p: Profile) -> list[Case]:
    """One submission a notebook (each costs a notebook's grading): the first answer whose hidden test
    quotes its error raises its arguments (a tensor's in notebook 3, sizes in notebook 1), every other
    answer checked by a hidden test prints them and answers correctly."""
    answers = [a for a in dict.fromkeys(p.uses.values()) if a in p.functions]
    raising = next(a for a in answers if not p.functions[a].startswith("check_"))
    tests = {a: [test for test, used in p.uses.items() if used == a] for a in answers}
    return [answers_case(
        "leak", "argument-leak", f"{raising} raises its arguments in every printed form; every other answer "
        "checked by a hidden test prints them (stdout, stderr) and answers correctly", p,
        lambda ctx: {a: _leaking(p, a, "raise" if a == raising else "print") for a in answers},
        p.scores(**{test: 0.0 for test in tests[raising]}), reasons={test: r"raised ValueError(?!:)" for test in tests[raising]},
        check=check_no_leak)]


# Kept, then shown later: each answer checked by a hidden test keeps what the test gave it (every printed form,
# as above) in a global and answers correctly; a visible check that calls an answer after that raises with what
# was kept, and a cell the student added at the end prints it to stdout and stderr, displays it as HTML and
# markdown, sets the kernel's execution count from it and raises it. The grader's run of every cell from the
# first hidden test on shows none of it (grading/judging.py conceal_after_hidden_inputs: the grader's words,
# the kind of an error, the outputs handed in), nor do the grades (a visible check's error by its kind).
STASH_SHOWN = "stash-shown"
STASH_CELL = r'''
import sys
from IPython.display import HTML, Markdown, display
_text = " ".join(_stash)
print(_text)
print(_text, file=sys.stderr)
display(HTML("<p>" + _text + "</p>"))
display(Markdown(_text))
get_ipython().execution_count = 1_000_000 + len(_text)
raise ValueError(_text)
'''
HANDED_IN_OUTPUT = "what this cell showed when its student ran it"


def _stashing(p: Profile, grade_id: str) -> str:
    keep = ("if _hidden_test():\n    _stash.append(_leak(*args))\n"
            "elif _stash:\n    raise AssertionError(' '.join(_stash))")
    kept = "try:\n    _stash\nexcept NameError:\n    _stash = []\n"     # one list for every answer
    return textwrap.dedent(LEAK).strip() + "\n" + kept + "\n" + inside(p, grade_id, keep)


def stash_cases(p: Profile) -> list[Case]:
    answers = [a for a in dict.fromkeys(p.uses.values()) if a in p.functions]

    def edit(nb):
        nb["cells"].append({"cell_type": "code", "id": STASH_SHOWN, "metadata": {}, "execution_count": 7,
                            "source": textwrap.dedent(STASH_CELL).strip(),
                            "outputs": [{"output_type": "stream", "name": "stdout", "text": HANDED_IN_OUTPUT}]})
    return [edited_case(
        "stash", "argument-leak", "every answer keeps its hidden inputs and answers correctly; later cells show "
        "them (a visible check's error, an added cell's prints, displays, execution count and error)", p, edit,
        p.scores(), answers={a: _stashing(p, a) for a in answers}, check=check_nothing_kept_shows)]


def check_nothing_kept_shows(ctx: Ctx, graded) -> None:
    """check_no_leak's pages and notebook, and more: the grades (CSV, JSON), the result file and every execution
    count from the first hidden test on; the added cell shows the grader's words and the output handed in."""
    check_no_leak(ctx, graded, raised=False)
    student, nb = graded.case.student, graded.case.profile.notebook
    run = (ctx.home / "work" / "runs" / STEP / student / f"{nb}.ipynb").read_text(encoding="utf-8")
    assert LEAKED.findall(run), "the answers kept nothing of the hidden tests' inputs: the case proves nothing"
    raised = {gid: row["error"] for gid, row in graded.rows.items() if row["error"] and row["kind"] == "auto"}
    assert raised and set(raised.values()) == {"AssertionError"}, raised     # the visible checks after the first
    for path in [ctx.home / "work" / "results" / STEP / student / f"{nb}.json", *sorted((ctx.home / "grades").rglob("*"))]:
        if path.is_file():
            assert not LEAKED.findall(path.read_text(encoding="utf-8")), f"what was kept reached {path.name}"
    cells = json.loads((ctx.home / "autograded" / student / STEP / f"{nb}.ipynb").read_text(encoding="utf-8"))["cells"]
    first = next(i for i, c in enumerate(cells) if _nbg(c).get("grade") and "hidden(" in _text(c))
    counts = [c.get("execution_count") for c in cells[first:] if c["cell_type"] == "code"]
    counts += [o.get("execution_count") for c in cells[first:] for o in c.get("outputs", [])]
    assert set(counts) <= {None}, counts
    added = next(c for c in cells if c.get("id", "").startswith("added-") and "_stash" in _text(c))
    shown = "".join(_output_text(o) for o in added["outputs"])
    assert "When graded, it raised ValueError." in shown and HANDED_IN_OUTPUT in shown, shown


def check_no_leak(ctx: Ctx, graded, raised: bool = True) -> None:
    """Nothing of the text between ⟦ and ⟧ in the autograded notebook or the feedback page: not a digit,
    not a word; the kind of what was raised does reach them (`raised`: the case's hidden test raised)."""
    from autograder.grading.grade import write_feedback
    student, nb = graded.case.student, graded.case.profile.notebook
    cells = json.loads((ctx.home / "autograded" / student / STEP / f"{nb}.ipynb").read_text(encoding="utf-8"))["cells"]
    autograded = "\n".join(_output_text(o) for c in cells for o in c.get("outputs", []))
    saved = os.environ.get("GRADER_HOME")
    os.environ["GRADER_HOME"] = str(ctx.home)
    try:
        assert write_feedback(STEP4, [student], quiet=True, only_these=True) == []
    finally:
        if saved is None:
            os.environ.pop("GRADER_HOME", None)
        else:
            os.environ["GRADER_HOME"] = saved
    page = (ctx.home / "feedback" / student / STEP / f"{nb}.html").read_text(encoding="utf-8")
    for where, text in (("the autograded notebook", autograded), ("the feedback page", page)):
        leaked = LEAKED.findall(text)
        assert not leaked, f"{student}: what the answer raised reached {where}: {leaked[0][:300]}"
    if raised:
        assert "raised ValueError" in page and "raised ValueError" in autograded, "the raised kind should reach the feedback"


def _output_text(out: dict) -> str:
    """Every text an output holds: stream text, an error's value and traceback, each text-like data."""
    def text(value):
        return "".join(value) if isinstance(value, list) else str(value)
    parts = [text(out.get("text", "")), text(out.get("evalue", "")), "\n".join(out.get("traceback", []))]
    parts += [text(v) for k, v in out.get("data", {}).items() if k.startswith("text/") or k.endswith("json")]
    return "\n".join(parts)


# ---- the class -------------------------------------------------------------------------------------------------------

def honest_cases(p: Profile) -> list[Case]:
    return [
        answers_case("honest", "honest", "every answer correct", p, lambda ctx: {}, p.scores(), check=check_clean),
        Case("blank", "honest", "the release, untouched", p,
             lambda ctx, folder: notebook_file(ctx, folder, p, p.notebook_with(correct=False)), p.zero(),
             reasons={h: r"raises NotImplementedError" for h in p.hidden}),
    ]


def check_clean(ctx: Ctx, graded) -> None:
    """Graded in the same batch as every attack: one kernel, no restarts, nothing noted."""
    assert graded.result["kernel_starts"] == 1, graded.result["events"]
    assert graded.result["events"] == [] and graded.result["notes"] == []


def corpus(profiles=None) -> list[Case]:
    cases = []
    for p in profiles or PROFILES:
        for make in (honest_cases, runaway_cases, waiting_cases, tampering_cases, cheating_cases, eq_cases, lookup_cases,
                     reach_cases, headserver_cases, resource_cases, malformed_cases):
            cases += make(p)
        cases += leak_cases(p)
        cases += stash_cases(p)
    if profiles is None:
        cases += leak_cases(TESTS)
    names = [c.student for c in cases]
    assert len(names) == len(set(names)), "two cases share a student id"
    return cases


# ---- intake: the submissions folder itself ------------------------------------------------------------------------------
# Attacks on how a class is read, not on a notebook's content: names chosen to take another student's
# id or to look like it, time stamps and zip members that no parser should trust, uploads that
# unzip to gigabytes. Each `IntakeAttack` writes its files into the class's submissions folder beside
# honest students (`INTAKE_HONEST`), who must be graded under their own ids whatever the attack does;
# `graded` is who the attack's own files are graded as (none: refused), `reported` a regex that the
# problems must carry for it. tests/test_intake_attacks.py reads the class (fast) and grades it.

INTAKE_NOTEBOOK = "01-on-paper"
NFD_RENEE, NFC_RENEE = "Rene\u0301e", "Ren\u00e9e"
INTAKE_HONEST = ["ada", "bea", NFC_RENEE, "cyd", "dan"]     # each hands in every answer correct, in a folder
GRACE_TIMESTAMPS = [                                        # what a student can write into timestamp.txt
    "9999-12-31 23:59:59.999999 UTC", "0001-01-01 00:00:00 UTC", "2026-13-45 99:99:99 UTC", "nan", "inf",
    "-1", "1e308", "2026-12-14 23:59:00 +9999", "2026-12-14 23:59:00.5 UTC+99:99", "\x00\x01\x02",
    "9" * 300, "2026-12-14T23:59:00Z\n" * 40, "\udcff", "", "   ", "2026-02-30 12:00:00 UTC",
    "3000-01-01 00:00:00 UTC", "1969-12-31 23:59:59 UTC", "-0001-01-01 00:00:00 UTC",
]


@dataclass
class IntakeAttack:
    name: str
    what: str
    write: Callable[[Path, bytes, bytes], None]     # (submissions folder, an honest notebook, a blank one)
    graded: set[str]                                # the ids its files are graded as (besides the honest students)
    reported: str                                   # regex: a problem (or notice) names it and says why


def _folder(root: Path, name: str, data: bytes, mtime: float | None = None, stamp: str | bytes | None = None):
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{INTAKE_NOTEBOOK}.ipynb").write_bytes(data)
    if stamp is not None:
        (folder / "timestamp.txt").write_bytes(stamp.encode("utf-8", "surrogateescape") if isinstance(stamp, str) else stamp)
    if mtime is not None:
        os.utime(folder / f"{INTAKE_NOTEBOOK}.ipynb", (mtime, mtime))


def _zip(path: Path, members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _bad_crc(root: Path, good: bytes, blank: bytes):
    _zip(root / "crc.zip", {f"{INTAKE_NOTEBOOK}.ipynb": good}, zipfile.ZIP_STORED)
    raw = bytearray((root / "crc.zip").read_bytes())
    at = raw.index(b'"cells"')
    raw[at + 1] ^= 0x20                                 # one byte changed: the stored CRC no longer matches
    (root / "crc.zip").write_bytes(bytes(raw))


def _bad_method(root: Path, good: bytes, blank: bytes):
    _zip(root / "method.zip", {f"{INTAKE_NOTEBOOK}.ipynb": good}, zipfile.ZIP_STORED)
    raw = bytearray((root / "method.zip").read_bytes())
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):    # compression method 99 (AES)
        at = raw.index(signature)
        raw[at + offset:at + offset + 2] = (99).to_bytes(2, "little")
    (root / "method.zip").write_bytes(bytes(raw))


def _truncated_zip(root: Path, good: bytes, blank: bytes):
    _zip(root / "cut.zip", {f"{INTAKE_NOTEBOOK}.ipynb": good})
    raw = (root / "cut.zip").read_bytes()
    (root / "cut.zip").write_bytes(raw[:len(raw) // 2])


def _deflate_garbage(root: Path, good: bytes, blank: bytes):
    _zip(root / "inflate.zip", {f"{INTAKE_NOTEBOOK}.ipynb": good})
    raw = bytearray((root / "inflate.zip").read_bytes())
    start = raw.index(b"PK\x03\x04") + 30 + len(f"{INTAKE_NOTEBOOK}.ipynb")
    for i in range(start, start + 40):
        raw[i] = 0xFF                                   # the deflate stream itself is garbage
    (root / "inflate.zip").write_bytes(bytes(raw))


def intake_attacks() -> list[IntakeAttack]:
    attacks = [
        IntakeAttack("ada-dot", "a folder `ada.` (blank, newer) beside the honest `ada`",
                     lambda root, good, blank: _folder(root, "ada.", blank, mtime=2_000_000_000), set(),
                     r"'ada\.'.*'ada' keeps it"),
        IntakeAttack("rlo-bea", "a right-to-left override before `bea` (blank) beside the honest `bea`",
                     lambda root, good, blank: _folder(root, "\u202ebea", blank, mtime=2_000_000_000), set(),
                     r"'bea' keeps it"),
        IntakeAttack("renee-nfd", "`Renée` decomposed (NFD; blank, newer) beside the honest `Renée` (NFC)",
                     lambda root, good, blank: _folder(root, NFD_RENEE, blank, mtime=2_000_000_000),
                     {NFC_RENEE + "-nfd"}, r"written like 'Renée'.*graded apart"),
        IntakeAttack("cyrillic-cyd", "`суd` (Cyrillic с and у) beside the honest `cyd`",
                     lambda root, good, blank: _folder(root, "\u0441\u0443d", blank), {"\u0441\u0443d"},
                     r"U\+0441 U\+0443.*look-alike"),
        IntakeAttack("dots", "a folder named `...`", lambda root, good, blank: _folder(root, "...", good), set(),
                     r"hidden file or folder"),
        IntakeAttack("bad-crc", "a zip whose member fails its CRC", _bad_crc, {"crc"}, r"could not be read|Bad CRC"),
        IntakeAttack("bad-method", "a zip member in a compression method Python cannot read (99, AES)",
                     _bad_method, {"method"}, r"could not be read|compression"),
        IntakeAttack("cut-zip", "a zip cut off halfway", _truncated_zip, {"cut"}, r"not a readable zip"),
        IntakeAttack("inflate", "a zip whose deflate stream is garbage", _deflate_garbage, {"inflate"},
                     r"could not be read"),
    ]
    for number, stamp in enumerate(GRACE_TIMESTAMPS):
        sid = f"stamp{number:02d}"
        attacks.append(IntakeAttack(
            sid, f"timestamp.txt {stamp[:40]!r}",
            lambda root, good, blank, sid=sid, stamp=stamp: _folder(root, sid, good, stamp=stamp), {sid},
            r"timestamp\.txt" if stamp.strip() else r"."))
    import random
    rng = random.Random(22)
    for number in range(12):                            # generated: random bytes as a timestamp.txt
        sid = f"noise{number:02d}"
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        attacks.append(IntakeAttack(sid, "timestamp.txt of random bytes",
                                    lambda root, good, blank, sid=sid, noise=noise: _folder(root, sid, good, stamp=noise),
                                    {sid}, r"."))
    return attacks


# A zip bomb inside every per-file and per-zip cap: 2 zips of 60 members, each a valid notebook of
# 19.5 MB (under the 20 MB cap) that compresses to a few kB. Read whole, 2.3 GB.
BOMB_ZIPS, BOMB_MEMBERS, BOMB_MEMBER_BYTES = 2, 60, int(19.5 * 2**20)


def write_zip_bomb(root: Path, student: str = "bomb") -> int:
    """The bomb as `student`'s uploads (`<student>/upload<i>.zip`); returns the bytes on disk."""
    folder = root / student
    folder.mkdir(parents=True, exist_ok=True)
    names = [n.stem for n in sorted((ROOT / "release" / STEP).glob("*.ipynb"))]
    head = b'{"cells": [], "metadata": {"pad": "'
    tail = b'"}, "nbformat": 4, "nbformat_minor": 5}'
    member = head + b" " * (BOMB_MEMBER_BYTES - len(head) - len(tail)) + tail
    # Every member holds the same bytes: deflated once (level 9, as zipfile's writestr would deflate each:
    # 57 ms a member, 7 s for the 120), each zip written as zipfile writes one (tests/test_intake_attacks.py
    # reads the members back through zipfile).
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = deflate.compress(member) + deflate.flush()
    crc = zlib.crc32(member)
    now = time.localtime()
    dos_time = (now.tm_hour << 11) | (now.tm_min << 5) | (now.tm_sec // 2)
    dos_date = ((now.tm_year - 1980) << 9) | (now.tm_mon << 5) | now.tm_mday
    for z in range(BOMB_ZIPS):
        local, central = bytearray(), bytearray()
        for i in range(BOMB_MEMBERS):
            name = f"copy{i:02d}/{names[i % len(names)]}.ipynb".encode()
            fields = struct.pack("<HHHHHIIIH", 20, 0, zipfile.ZIP_DEFLATED, dos_time, dos_date, crc, len(deflated),
                                 len(member), len(name))
            central += b"PK\x01\x02" + struct.pack("<H", 20) + fields + struct.pack("<HHHHII", 0, 0, 0, 0, 0, len(local)) + name
            local += b"PK\x03\x04" + fields + struct.pack("<H", 0) + name + deflated
        end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, BOMB_MEMBERS, BOMB_MEMBERS, len(central), len(local), 0)
        (folder / f"upload{z}.zip").write_bytes(bytes(local + central + end))
    return sum(p.stat().st_size for p in folder.glob("*.zip"))
