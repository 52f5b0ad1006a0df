"""How a hidden test works: the check runs in the grader; the student's kernel only answers.

A hidden test cell is `from autograder.runtime import hidden` and `hidden("<grade_id>", globals())`.
The check registered under that grade id runs in the grader process (autograder/checks/probeserver.py):
its probe asks the kernel over a socket whether the student's names are defined and calls the
student's functions on the check's inputs (autograder/runtime/ answers in the kernel); what comes
back is plain data, which the judge scores. Cases, seeds, references, judges and this code never
enter the student's kernel, so no code of the student's can read, import or patch them; a forged
answer can only be one the student's own code could have computed.

Without a grader (JupyterLab, `make solutions`, plain nbgrader) autograder/selfgrade.py does the same
in one process: a probe server on a socket of its own, the runtime answering from the notebook's namespace.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import random
import re
import sys
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from .. import runtime
from ..errors import GraderError
from ..runtime.plain import NotPlain, from_plain, to_plain

# package of a step's checks (course_checks.<step>) -> grade_id -> Check. Two steps may use the
# same grade_id; within a step each grade_id is one check.
REGISTRIES: dict[str, dict[str, "Check"]] = {}

# A probe's and a judge's context: the probe server (autograder/checks/probeserver.py) while a notebook is graded,
# or selfgrade's without a grader; checks read its attributes (case_key, step, sources, code_before) and
# ask it for served objects, so it is any object that has them.
Context = Any
# A student's namespace as a probe sees it: the kernel's globals, answered over the grader's socket.
Namespace = Any
CheckClass = TypeVar("CheckClass", bound=type)


@dataclass
class Part:
    """One independently scored property of an answer. `review`: the check could not decide this part
    (code it cannot follow, a binding it cannot resolve), and says why: the part is neither passed nor
    failed, its points wait for a person (the cell is flagged for manual grading)."""

    name: str
    ok: bool
    message: str = ""  # shown when the part fails: what is wrong and what the student most likely did
    weight: float = 1.0
    review: str = ""  # non-empty: undecided, for this reason; a person gives this part's points


REVIEW_NOTE = (
    "the grader could not decide this part, so it takes no points for it: a person will look at your code and give them"
)


@dataclass
class Verdict:
    parts: list[Part] = field(default_factory=list)

    def add(self, name: str, ok: bool, message: str = "", weight: float = 1.0) -> bool:
        self.parts.append(Part(name, bool(ok), message, weight))
        return bool(ok)

    def add_review(self, name: str, reason: str, weight: float = 1.0) -> None:
        """A part the check cannot decide: it goes to a person with `reason`, never against the student."""
        self.parts.append(Part(name, False, "", weight, review=reason or "the grader could not decide"))

    @property
    def fraction(self) -> float:
        """The share of the points the decided parts earn (a part waiting for review earns nothing yet)."""
        total = sum(p.weight for p in self.parts)
        return sum(p.weight for p in self.parts if p.ok) / total if total else 0.0

    @property
    def needs_review(self) -> bool:
        return any(p.review for p in self.parts)

    def reviewed(self) -> list[Part]:
        return [p for p in self.parts if p.review]

    def undecided_fraction(self) -> float:
        total = sum(p.weight for p in self.parts)
        return sum(p.weight for p in self.reviewed()) / total if total else 0.0

    def failures(self) -> list[Part]:
        return [p for p in self.parts if not p.ok and not p.review]

    def report(self, points: float) -> str:
        """The verdict as the student reads it. Failures that share one message (an answer that
        raises fails every case the same way) are one line naming them all, where the first was:
        the message once, not once per case. A part waiting for review says so, and why."""
        earned = round(points * self.fraction, 2)
        if self.needs_review:
            waiting = round(points * self.undecided_fraction(), 2)
            lines = [
                f"Hidden tests: waiting for a person's review. {earned:g} of {points:g} points are decided;",
                f"{waiting:g} wait for a person, who gives this cell its score.",
            ]
        else:
            lines = [f"Hidden tests: {earned:g} of {points:g} points."]
        by_message: dict[str, list[str]] = {}
        for p in self.failures():
            if p.message:
                by_message.setdefault(p.message, []).append(p.name)
        for p in self.parts:
            if p.review:  # in short lines: the formgrader shows a cell's output without wrapping it
                lines.append(f"  ? {p.name}: waiting for a person's review.")
                lines += textwrap.wrap(f"Why: {p.review}.", 96, initial_indent="      ", subsequent_indent="      ")
                lines += textwrap.wrap(
                    REVIEW_NOTE[0].upper() + REVIEW_NOTE[1:] + ".",
                    96,
                    initial_indent="      ",
                    subsequent_indent="      ",
                )
            elif p.ok or not p.message:
                lines.append(f"  {'✓' if p.ok else '✗'} {p.name}")
            elif p.message in by_message:
                names = by_message.pop(p.message)  # later parts with this message: already listed
                lines.append(f"  ✗ {'; '.join(names)}: {p.message}")
        return "\n".join(lines)

    def failure_text(self) -> str:
        """The failing parts in one line (the reports' `error`), each message once."""
        out = []
        failures = self.failures()
        for n, p in enumerate(failures):
            later = failures[n + 1 :]
            out.append(
                p.name if (not p.message or (later and later[0].message == p.message)) else f"{p.name}: {p.message}"
            )
        return "; ".join(out)

    def review_text(self) -> str:
        """Why the cell waits for a person (the reports' `error` of a cell to review), failures after it."""
        why = "; ".join(f"{p.name}: {p.review}" for p in self.reviewed())
        failed = self.failure_text()
        return f"waits for review: {why}" + (f"; also lost: {failed}" if failed else "")


class Check:
    """A hidden test. Subclasses set grade_id and points, and write probe and judge."""

    grade_id: str = ""
    points: float = 0.0

    def probe(self, ns: Namespace, ctx: Context) -> Any:
        """In the student's kernel: call the student's code on the check's inputs, return plain data."""
        raise NotImplementedError

    def judge(self, data: Any, ctx: Context) -> Verdict:
        """In the grader: score the plain data the probe returned. Never runs student code."""
        raise NotImplementedError

    def fresh(self, ctx: Context, label: str = "") -> random.Random:
        """This submission's own generator of cases (`fresh_rng`): the same in probe and judge."""
        return fresh_rng(ctx, self, label)


class TwinnedCheck(Check):
    """A check of fixed CASES (named by LABELS), each with a twin drawn for this submission by
    `twins(ctx)`: a case's part needs both right (`_case(case, entry) -> (ok, message)`), so answers
    recorded from an earlier grading earn nothing while partial credit stays what the fixed cases give."""

    CASES: list[Any] = []
    LABELS: list[str] = []

    def twins(self, ctx: Context) -> list[Any]:
        raise NotImplementedError

    @staticmethod
    def _case(case: Any, entry: Any) -> tuple[bool, str]:
        raise NotImplementedError

    def judge(self, data: Any, ctx: Context) -> "Verdict":
        verdict = Verdict()
        for case, other, label, entry, fresh in zip(
            self.CASES, self.twins(ctx), self.LABELS, data["cases"], data["twins"]
        ):
            ok, message = self._case(case, entry)
            if ok:
                ok, message = self._case(other, fresh)
            verdict.add(label, ok, message)
        return verdict


# ---- per-submission cases ----------------------------------------------------------------------
# A check's fixed cases are the same for every student and every term: a student's code can record
# them (and print them into its feedback). So a check also draws cases of its own for each
# submission: from `fresh_rng(ctx, check, label)`, seeded with HMAC-SHA256(course case key; step,
# grade id, label, the submission). The submission is every byte of the notebook file as the student
# handed it in (`ctx.submission`: every cell's source and outputs, metadata, attachments, the header):
# nothing a student controls lies outside it, so no cell can carry a table of answers to cases learnt
# in an earlier grading while the cases stay the same. The probe and the judge each ask for it and get
# the same draws; a regrade of the same submission gets the same cases, another submission or another
# key others. The key lives in the grader home (autograder/checks/casekey.py), which no kernel can read.
# Without a grader (the instructor's kernel, `make solutions`) there is no key: UNKEYED is used, and
# the submission is the text of the code cells run (`ctx.sources`).

UNKEYED = b"no course key: an ungraded run"


def submission_digest(ctx: Context) -> bytes:
    """What identifies a submission for its cases: the bytes of the file handed in (`ctx.submission`),
    or without one (a run without a grader) the text of the code cells run (`ctx.sources`)."""
    submission = getattr(ctx, "submission", None)
    if submission is not None:
        return hashlib.sha256(b"file\0" + bytes(submission)).digest()
    digest = hashlib.sha256()
    for text in getattr(ctx, "sources", None) or ():
        data = str(text).encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.digest()


def fresh_seed(ctx: Context, check: "Check", label: str = "") -> int:
    """A 128-bit seed for this submission's own cases of `check` (see above)."""
    key = getattr(ctx, "case_key", None) or UNKEYED
    step = getattr(getattr(ctx, "step", None), "name", "")
    message = b"\0".join(
        [b"fresh-cases-v1", str(step).encode(), check.grade_id.encode(), label.encode(), submission_digest(ctx)]
    )
    return int.from_bytes(hmac.new(key, message, hashlib.sha256).digest()[:16], "big")


def fresh_rng(ctx: Context, check: "Check", label: str = "") -> random.Random:
    """A generator of this submission's own cases (a new one each call: probe and judge draw alike)."""
    return random.Random(fresh_seed(ctx, check, label))


def twin(
    rng: random.Random, values: Any, keep: tuple[int, ...] = (1,), low: int = 2, high: int | None = None
) -> tuple[int, ...]:
    """Fresh integers in the same relations as `values`: every value but those in `keep` is
    replaced, equal values by equal ones, and the order of the replacements is the order of the
    originals (so an answer's case analysis, d_head <= d say, meets a twin as it met the fixed case).
    Replacements lie in [low, high] (default: up to twice the largest value, at least 40)."""
    distinct = sorted({v for v in values if v not in keep})
    high = high if high is not None else max(40, 2 * max(distinct, default=low))
    pool = [n for n in range(low, high + 1) if n not in keep]
    fresh = dict(zip(distinct, sorted(rng.sample(pool, len(distinct)))))
    return tuple(fresh.get(v, v) for v in values)


def register(cls: CheckClass) -> CheckClass:
    """Class decorator: the check, registered under its step (the package its module belongs to)."""
    check = cls()
    if not check.grade_id or check.points <= 0:
        raise ValueError(f"{cls.__name__} needs a grade_id and positive points")
    registry = REGISTRIES.setdefault(cls.__module__.rpartition(".")[0] or cls.__module__, {})
    if check.grade_id in registry:
        raise ValueError(f"two checks of {cls.__module__.rpartition('.')[0]} use grade_id {check.grade_id!r}")
    registry[check.grade_id] = check
    return cls


def checks_of(package: str) -> dict[str, Check]:
    """grade_id -> Check of one step's check package (autograder/steps.py imports it)."""
    return REGISTRIES.get(package, {})


# ---- what a student may read of text their own code produced in a hidden test -----------------
# A hidden test calls the student's code on inputs the student never sees (fixed cases, cases drawn for
# the submission, heads served by the grader). Whatever that code writes or raises there could carry
# those inputs back, in any encoding (digits, number words, the length of a run of letters, the name of
# a class it defines), so none of it is shown. What may come back is named here, and nothing else:
#   * an error's kind, when it is one of the seventeen built-in exceptions of SHOWN_ERRORS or one the engine
#     itself names (ENGINE_ERRORS); any other class is "an exception of another kind";
#   * for the engine's own kinds, the engine's fixed words (NOT_PLAIN's reasons, GRADER_ERRORS' meanings), and
#     for an answer that is not plain data the name of its class only when that name is a real class of
#     Python, torch or numpy, looked up in the grader's own modules (`real_class`), and one of the few
#     `shown_class` names (nineteen builtins; torch.nn.Module, torch.return_types, torch, numpy for the
#     libraries): the kernel writes the text, and a student's class can call itself `torch.T65.d78` (or
#     raise an exception named NotPlain);
#   * of a student's check, only whether it returned, failed an assertion, or crashed with such a kind.
# The message itself never: a student reads it by calling the function on the notebook's own inputs in
# a visible cell. Text the checks write themselves is the grader's own and is not filtered here.

BUILTIN_ERRORS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)
# The kinds a hidden test names: the errors an answer of this course meets (a wrong type, value, index, key,
# attribute or name; a shape torch refuses; a division by zero; an assertion; the stub's NotImplementedError;
# a recursion, an overflow, an import, a memory error; sys.exit() called in a function). Any other kind, built in or not, is "another kind":
# which of Python's sixty-odd built-in kinds an answer raises is a choice the answer makes, and a choice among
# many carries a hidden input back (a kind picked by an input's value) as surely as its digits would.
SHOWN_ERRORS = frozenset(
    {
        "TypeError",
        "ValueError",
        "IndexError",
        "KeyError",
        "AttributeError",
        "NameError",
        "UnboundLocalError",
        "RuntimeError",
        "ZeroDivisionError",
        "OverflowError",
        "AssertionError",
        "NotImplementedError",
        "RecursionError",
        "ImportError",
        "ModuleNotFoundError",
        "MemoryError",
        "SystemExit",
    }
)
assert SHOWN_ERRORS <= BUILTIN_ERRORS
ENGINE_ERRORS = frozenset({"NotPlain", "GraderError", "InputChanged", "Missing"})
OWN_CLASS = "an exception of another kind"
# (a message the runtime writes when an answer is not plain data, what is shown for it): the first match
NOT_PLAIN = (
    (r"the answer is nested too deeply|nested too deeply", "the answer is nested too deeply"),
    (r"the answer holds more than \d+ values", "the answer holds too many values"),
    (r"a dict in the answer has keys that are not strings", "a dict in the answer has keys that are not strings"),
    (
        r"the answer holds a ((?:builtins|torch|numpy)(?:\.\w+){1,6}) object",
        "the answer holds a {0} object; return numbers, tuples, lists, dicts or tensors",
    ),
    (
        r"the answer holds a \S+ object",
        "the answer holds an object of another class; return numbers, tuples, lists, dicts or tensors",
    ),
    (r"an array of dtype|is not a numeric answer|dtype \S+ is not numeric", "an array's dtype is not numeric"),
    (r"a set of the answer holds unhashable items", "a set of the answer holds unhashable items"),
)
NOT_PLAIN_OTHER = "the answer is not plain data; return numbers, tuples, lists, dicts or tensors"
# the errors the grader itself writes into a cell it stopped, and what each means (autograder/kernel/execute.py)
GRADER_ERRORS = {
    "CellTimeoutError": "the cell ran past its time limit",
    "DeadKernelError": "the kernel died while running this cell",
    "NotebookTimeLimit": "the notebook's time limit ran out",
    "StudentTimeBudget": "the student's time budget ran out",
    "KernelStartError": "the grading kernel did not start",
    "KernelRestartFailed": "the grading kernel could not be restarted",
    "NotRun": "not run: the kernel failed too many times",
    "GraderError": "the grader could not run this test",
}


# builtins' classes that no name of the builtins module holds (a generator, a function, None's class, a list's
# iterator, a dict's views...)
UNNAMED_BUILTIN_CLASSES = frozenset(
    t.__qualname__
    for t in [*vars(types).values(), *map(type, (iter([]), iter(()), {}.keys(), {}.values(), {}.items()))]
    if isinstance(t, type) and t.__module__ == "builtins"
)


# The classes an answer that is not plain data is named by (a generator or a map to wrap in list(), a function
# not called, a layer or a torch.max pair not unpacked): a real class of the grader's builtins among these,
# and for torch and numpy the family (every layer is a torch.nn.Module). Any other class is "another class":
# which of a library's hundreds of classes an answer returns is, like an error's kind, a choice it makes.
SHOWN_BUILTIN_CLASSES = frozenset(
    {
        "generator",
        "map",
        "zip",
        "filter",
        "range",
        "enumerate",
        "reversed",
        "function",
        "method",
        "builtin_function_or_method",
        "list_iterator",
        "tuple_iterator",
        "dict_keys",
        "dict_values",
        "dict_items",
        "complex",
        "bytes",
        "type",
        "module",
    }
)


def shown_class(dotted: str) -> str | None:
    """How a class an answer returned is named in a hidden test's feedback, None for "another class"."""
    if not real_class(dotted):
        return None
    root, _, rest = dotted.partition(".")
    if root == "builtins":
        return dotted if rest in SHOWN_BUILTIN_CLASSES else None
    if root == "torch" and rest.startswith("nn."):
        return "torch.nn.Module"
    if root == "torch" and rest.startswith("return_types."):
        return "torch.return_types"
    return root  # "a torch object", "a numpy object"


def real_class(dotted: str) -> bool:
    """Whether `dotted` ('torch.nn.modules.linear.Linear', 'builtins.generator') names a class the grader's
    own builtins, torch or numpy hold under that name (every part a public or single-underscore name)."""
    root, _, rest = dotted.partition(".")
    parts = rest.split(".")
    if not rest or any(not p.isidentifier() or p.startswith("__") for p in parts):
        return False
    if root == "builtins" and len(parts) == 1 and parts[0] in UNNAMED_BUILTIN_CLASSES:
        return True
    module = sys.modules.get(root) if root in ("builtins", "torch", "numpy") else None
    obj: object = module
    for part in parts:
        if obj is None:
            return False
        obj = getattr(obj, part, None)
    return isinstance(obj, type)


def error_kind(text: object) -> str:
    """The kind of a student-side error written 'Kind: message' (or 'Kind'), if it may be shown."""
    name = str(text).split(":", 1)[0].strip()
    return name if name in SHOWN_ERRORS or name in ENGINE_ERRORS else OWN_CLASS


def shown_error(text: object) -> str:
    """What a hidden test shows of an error text its student's code produced: its kind (see above), and
    for an answer that is not plain data the engine's own reason."""
    kind = error_kind(text)
    if kind == "NotPlain":
        message = str(text).split(":", 1)[1] if ":" in str(text) else ""
        for pattern, shown in NOT_PLAIN:
            found = re.search(pattern, message)
            named = [shown_class(name) for name in found.groups()] if found else []
            if found and all(named):
                return f"NotPlain: {shown.format(*named)}"
        return f"NotPlain: {NOT_PLAIN_OTHER}"
    return kind


def shown_outcome(text: object) -> str:
    """What a hidden test keeps of a student's check's outcome: 'returned', 'assertion' or 'crashed: Kind'."""
    text = str(text)
    if text == "returned":
        return text
    if text.startswith("assertion"):
        return "assertion"
    return "crashed: " + shown_error(text[len("crashed: ") :] if text.startswith("crashed: ") else text)


def shown_cell_error(ename: object) -> str:
    """What a hidden test cell that stopped with an error shows of it: a kind the grader names (with its
    fixed meaning) or a built-in one; the message never (a student's exception can imitate the grader's)."""
    name = str(ename or "").strip()
    if name in GRADER_ERRORS:
        return f"{name} ({GRADER_ERRORS[name]})"
    return error_kind(name)


HIDDEN_REGION = "BEGIN HIDDEN TESTS"


def gives_hidden_inputs(cell: Any) -> bool:
    """Whether running `cell` hands the student's code inputs the student never saw: a test cell (nbgrader's
    grade, not an answer) that calls `hidden(...)` or holds a hidden region. From the first such cell on, what
    the student's code keeps (a global it appends to, a file, a thread) can come out in any cell that runs
    later (autograder/grading/judging.py `conceal_after_hidden_inputs`)."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "code":
        return False
    metadata = cell.get("metadata")
    nbg = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    if not isinstance(nbg, dict) or not nbg.get("grade") or nbg.get("solution"):
        return False
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    return "hidden(" in source or HIDDEN_REGION in source


# ---- helpers for probes -------------------------------------------------------------------


def code_before(ctx: Context, check: "Check") -> list[str]:
    """The student's code cells that run before `check`'s hidden test cell, in the order the notebook runs
    them (grading: the graded notebook's answer cells, live Python boxes and added cells; without a
    grader: the kernel's input history): the text a check reads to judge how an answer computes."""
    before = getattr(ctx, "code_before", None)
    if callable(before):
        return list(before(check.grade_id))
    return list(getattr(ctx, "sources", None) or ())


class Missing(GraderError):
    pass


class StudentError(GraderError):
    """The student's code raised (or returned something that is not plain data): 'Type: message'."""


class KernelGone(GraderError):
    """The kernel stopped answering (it died, was interrupted at its time limit, or hung up)."""


def student(ns: Namespace, name: str) -> Any:
    """The student's object called `name`, or Missing with a message saying why not."""
    if name not in ns:
        raise Missing(f"`{name}` is not defined: run the cell that defines it (or write it)")
    return ns[name]


def attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call student code; return {'value': result} if the result is plain data,
    else {'error': 'Type: message'}. One failing call never spoils the others."""
    try:
        result = fn(*args, **kwargs)
        to_plain(result)
    except KernelGone:
        raise
    except Missing as err:
        return {"error": f"Missing: {err}"}
    except StudentError as err:
        return {"error": str(err)}
    except NotPlain as err:
        return {"error": f"NotPlain: {err}"}
    except (Exception, SystemExit) as err:  # the grader's reading of an answer that has the wrong form
        return {"error": shown_error(f"{type(err).__name__}: {err}")}
    return {"value": result}


def outcome(fn: Any, *args: Any, seed: int | None = None) -> str:
    """Run one of the student's checks: 'returned', 'assertion' or 'crashed: Kind' (shown_outcome).
    `seed`: torch's global seed, set just before the call (in the kernel, for a student's function)."""
    if hasattr(fn, "outcome"):  # the student's function, run in the kernel
        return str(fn.outcome(*args, seed=seed))
    if seed is not None:  # the grader's own reference checks
        runtime.load_hooks()
        runtime.HOOKS.seed(seed)
    try:
        fn(*args)
    except AssertionError:
        return "assertion"
    except (Exception, SystemExit) as err:
        return f"crashed: {shown_error(f'{type(err).__name__}: {err}')}"
    return "returned"


# ---- helpers for judges (grader side) ----------------------------------------------------


def unpack(entry: Any) -> tuple[Any, str | None]:
    """(value, None) for a probe result that holds a value, (None, reason) otherwise."""
    if not isinstance(entry, dict):
        return None, "no result reached the grader"
    if "error" in entry:
        err = str(entry["error"])
        if err.startswith("NotImplementedError"):
            return None, "raises NotImplementedError: the answer cell is not filled in yet"
        if err.startswith("Missing: "):
            return None, err[len("Missing: ") :]
        if err.startswith("NotPlain: "):
            return None, err[len("NotPlain: ") :]
        return None, f"raised {err}"
    if "value" not in entry:
        return None, "no result reached the grader"
    return entry["value"], None


def unwritten(entries: Any) -> str:
    """The reason, if every call of the answer raised NotImplementedError (the cell is not filled in)."""
    reasons = [unpack(e)[1] for e in entries]
    if reasons and all(r and r.startswith("raises NotImplementedError") for r in reasons):
        return reasons[0] or ""
    return ""


def unwritten_verdict(reason: str) -> Verdict:
    """The one verdict for an answer cell left as released: nothing else can be judged."""
    verdict = Verdict()
    verdict.add("the answer is written", False, reason)
    return verdict


# ---- running a check -------------------------------------------------------------------------


def run_probe(check: Check, ns: Namespace, ctx: Context) -> Any:
    """The probe's plain data. KernelGone propagates: a probe the kernel did not finish has no result."""
    try:
        return to_plain(check.probe(ns, ctx))
    except Missing as err:
        return {"__missing__": str(err)}


def judge_data(check: Check, data: Any, ctx: Context) -> Verdict:
    if isinstance(data, dict) and "__missing__" in data:
        verdict = Verdict()
        verdict.add("answer present", False, str(data["__missing__"]))
        return verdict
    if isinstance(data, dict) and "__grader_error__" in data:
        verdict = Verdict()
        verdict.add(
            "the grader ran this check",
            False,
            f"the grader failed on this check ({data['__grader_error__']}): tell your instructor",
        )
        return verdict
    try:
        return check.judge(from_plain(data), ctx)
    except Exception as err:  # malformed data: no points, a clear reason
        verdict = Verdict()
        verdict.add("answer readable", False, f"the grader could not read this answer ({type(err).__name__})")
        return verdict
