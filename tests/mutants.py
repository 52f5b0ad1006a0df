"""Mutation testing of the hidden checks: every graded answer's reference solution, changed one
mistake at a time, must lose points on its hidden test.

Mutants are made mechanically from each answer cell of the instructor notebooks:

* mutmut's operator set (`mutmut.mutation.mutators.mutation_operators`, pinned in
  requirements-dev.txt), applied to every node of the answer's syntax tree: a number + 1, strings,
  True/False, `a = b` to `a = None`, `+=` to `=`, `not x` to `x`, a call's argument removed,
  `+`/`-`, `*`/`/`, `**`/`*`, `<`/`<=`, `==`/`!=`, `and`/`or`, `in`/`not in` swapped, a
  ternary forced down one arm;
* and what mutmut has no operator for, in the same manner (issue: "off-by-one in ranges and
  `diagonal=`, swapped `dim`, flipped signs, changed constants, a dropped statement, a loop bound
  fixed to a visible size, an argument ignored, an input mutated in place, a fixed seed or position"):
  a number - 1 (and a float halved), a statement dropped (`pass` instead), the two operands of a
  non-commutative operator or the two positional arguments of a call swapped, a size or argument
  fixed to the value it has in the notebook's visible check (one use at a time, and every use of an
  argument at once: "ignored"), a unary minus added, and an input changed in place before the
  answer returns.

mutmut itself (its runner) does not fit: it copies a source tree, rewrites whole files with
trampolines and runs pytest once per mutant, while these answers are cells of notebooks, judged by a
hidden check in the grader. So its operators are used as a library, and each mutant is judged as
tests/test_grader_proof_quick.py judges the proof corpus: the notebook's answers defined in one
namespace, the mutant in place of one of them, its hidden test run in this process through the
same requests as in grading (`probe_and_judge(grade_id, ns)`, what `hidden(grade_id, ns)` runs).

A mutant is *killed* when its hidden test gives it less than full marks (a mutant that cannot even be
defined, or that runs past the time limit, is killed as grading kills it). A mutant whose hidden
test cannot decide goes to *review* (a person scores the cell): neither killed nor survived, counted
apart in the table. A mutant that survives is
either *equivalent* (the same behaviour on every valid input: listed in tests/mutant_equivalents.py
with the reason, and it must keep full marks) or a *survivor*: a defect of the judge, to be fixed by
strengthening the judge's cases.

    python tests/mutants.py                  # every answer; writes tests/mutation_table.md (make mutants)
    python tests/mutants.py scores_entrywise # one answer, the table printed only
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import libcst as cst  # noqa: E402
from mutmut.mutation.file_mutation import deep_replace  # noqa: E402
from mutmut.mutation.mutators import mutation_operators  # noqa: E402

TABLE = HERE / "mutation_table.md"
SECONDS = 90            # a mutant still running then is killed (grading's cell time limit would kill it)


@dataclass(frozen=True)
class Answer:
    notebook: str
    check: str                        # the hidden test's grade id
    visible: dict                     # name -> the value it has in the notebook's visible check
    in_place: tuple = ()              # statements that change an input in place


def _visible(answer: str) -> dict:
    """The sizes and arguments of the answer's visible check, as its contract declares them (dlcourse/contracts.py)."""
    from dlcourse.contracts import CONTRACTS
    return dict(CONTRACTS["FAILS_ON_MASK_AFTER_SOFTMAX" if answer == "fails_on_mask_after_softmax" else answer].visible)


# Every graded code answer: its hidden test, the sizes and arguments of its visible check (from its
# contract), and how its inputs can be changed in place.
ANSWERS = {
    "shapes": Answer("01-on-paper", "bonus_shapes", _visible("shapes")),
    "dot_variance": Answer("01-on-paper", "bonus_dot_variance", _visible("dot_variance")),
    "scores_entrywise": Answer("02-the-head", "bonus_scores_entrywise", _visible("scores_entrywise"),
                               ("q.mul_(2)", "k.add_(1)")),
    "count_params": Answer("02-the-head", "bonus_count_params", _visible("count_params")),
    "check_simplex": Answer("03-the-tests", "check_simplex_hidden", _visible("check_simplex"), ("A.mul_(0.5)",)),
    "check_causality_perturbation": Answer("03-the-tests", "check_perturbation_hidden", _visible("check_causality_perturbation"),
                                           ("x.add_(1)",)),
    "check_causality_gradient": Answer("03-the-tests", "check_gradient_hidden", _visible("check_causality_gradient"), ("x.add_(1)",)),
    "scale_table": Answer("03-the-tests", "scale_table_hidden", _visible("scale_table"), ("d_heads.reverse()",)),
    "mask_after_softmax_row_sums": Answer("03-the-tests", "mask_after_softmax_hidden", _visible("mask_after_softmax_row_sums"),
                                          ("scores.mul_(2)",)),
    "fails_on_mask_after_softmax": Answer("03-the-tests", "fails_on_mask_after_softmax_hidden", _visible("fails_on_mask_after_softmax")),
    "attention_on_text": Answer("04-attention-on-text", "bonus_attention_on_text", _visible("attention_on_text")),
    "top_key_shares": Answer("04-attention-on-text", "bonus_top_key_shares", _visible("top_key_shares"), ("A.mul_(0.5)",)),
    "smoothing_attention": Answer("05-attention-as-smoothing", "smoothing_attention_hidden", _visible("smoothing_attention")),
    "permutation_gaps": Answer("06-going-further", "bonus_permutation_gaps", _visible("permutation_gaps"),
                               ("idx.fill_(0)", "perm.copy_(perm.flip(0))")),
    "online_softmax": Answer("06-going-further", "bonus_online_softmax", _visible("online_softmax"), ("scores.mul_(2)",)),
    "streaming_attention": Answer("06-going-further", "bonus_streaming_attention", _visible("streaming_attention"),
                                  ("q.mul_(2)", "v.add_(1)")),
    "fit_exponent": Answer("06-going-further", "bonus_fit_exponent", _visible("fit_exponent"), ("times[0] = times[0] * 2",)),
}


# ---- making mutants ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutant:
    answer: str
    operator: str
    line: int
    before: str       # the changed line, as in the solution
    after: str        # ... and as in the mutant
    source: str

    @property
    def id(self) -> str:
        return f"{self.answer}:{hashlib.sha1(self.source.encode()).hexdigest()[:10]}"


def _skipped(node) -> bool:
    """Nodes whose mutants say nothing about the judge: annotations, decorators, docstrings, imports
    (a rewrite's `import torch as T`: a mutated import fails at once, as any student would see)."""
    return isinstance(node, (cst.Annotation, cst.Decorator, cst.Import, cst.ImportFrom))


def _docstring(node) -> bool:
    return (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Expr)
            and isinstance(node.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


class _Collect(cst.CSTVisitor):
    """Every node worth mutating, in source order, with the function it is in; assert messages skipped
    (a message is text for the student: changing it changes no verdict)."""
    METADATA_DEPENDENCIES = (cst.metadata.PositionProvider,)

    def __init__(self):
        super().__init__()
        self.nodes = []
        self.functions = []

    def on_visit(self, node) -> bool:
        if _skipped(node) or _docstring(node):
            return False
        if isinstance(node, cst.Assert):
            self.nodes.append(node)
            node.test.visit(self)
            return False
        if isinstance(node, cst.FunctionDef):
            self.functions.append(node)
        self.nodes.append(node)
        return True


NON_COMMUTATIVE = (cst.Subtract, cst.Divide, cst.MatrixMultiply, cst.Power, cst.FloorDivide, cst.Modulo)


def _own_operators(node, answer: Answer, params: set[str]):
    """(name, mutated node): the operators mutmut lacks."""
    if isinstance(node, (cst.Integer, cst.Float)):
        yield "number - 1", cst.parse_expression(f"({node.evaluated_value - 1!r})")
    if isinstance(node, cst.Float):
        yield "constant halved", node.with_changes(value=repr(node.evaluated_value / 2))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, NON_COMMUTATIVE):
        yield "operands swapped", node.with_changes(left=node.right, right=node.left)
    if isinstance(node, cst.Call):
        positional = [n for n, a in enumerate(node.args) if a.keyword is None and a.star == ""]
        if len(positional) == 2:
            a, b = positional
            args = list(node.args)
            args[a] = node.args[a].with_changes(value=node.args[b].value)
            args[b] = node.args[b].with_changes(value=node.args[a].value)
            yield "arguments swapped", node.with_changes(args=args)
    if isinstance(node, cst.Name) and node.value in answer.visible:
        yield "fixed to the visible size", cst.parse_expression(repr(answer.visible[node.value]))
    if (isinstance(node, cst.Name) and node.value in params) or isinstance(node, cst.Subscript) \
            or (isinstance(node, cst.Call) and _callee(node) not in NOT_NUMBERS):
        yield "sign flipped", cst.UnaryOperation(operator=cst.Minus(), expression=node)


# calls whose result is no number to negate (a sign flip of them is a crash, or the same zeros)
NOT_NUMBERS = {"range", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "new_zeros", "arange",
               "Generator", "manual_seed", "tensor", "as_tensor", "asarray", "array", "len", "tril", "triu", "eye",
               "Embedding", "Linear", "Head", "dict", "list", "tuple", "set", "zip", "enumerate", "print",
               "clone", "requires_grad_", "backward", "float", "int", "str", "isinstance", "all", "any"}


def _callee(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def _statement_drops(function: cst.FunctionDef):
    """Each statement of the function (at any depth) replaced by `pass`."""
    class Walk(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.found = []

        def on_visit(self, node) -> bool:
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and node is not function \
                    and not _docstring(node):
                self.found.append(node)
            return not _skipped(node)

    walk = Walk()
    function.body.visit(walk)
    for node in walk.found:
        yield node, cst.SimpleStatementLine([cst.Pass()])


def _names_used(function: cst.FunctionDef) -> set[str]:
    return {p.name.value for p in function.params.params}


def _ignore_argument(module: cst.Module, function: cst.FunctionDef, name: str, value):
    """Every use of argument `name` replaced by its visible value: the argument is ignored."""
    class Replace(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return cst.parse_expression(repr(value)) if original.value == name else updated

        def visit_Param(self, node):
            return False

    return deep_replace(module, function, function.with_changes(body=function.body.visit(Replace())))


def _change_input(module: cst.Module, function: cst.FunctionDef, statement: str):
    """`statement` (an input changed in place) just before the function's last statement returns,
    or at its end."""
    body = list(function.body.body)
    new = cst.parse_statement(statement + "\n")
    if body and isinstance(body[-1], cst.SimpleStatementLine) and isinstance(body[-1].body[0], cst.Return):
        body.insert(len(body) - 1, new)
    else:
        body.append(new)
    return deep_replace(module, function, function.with_changes(body=function.body.with_changes(body=body)))


def mutants_of(name: str, source: str) -> list[Mutant]:
    answer = ANSWERS[name]
    module = cst.parse_module(source)
    wrapper = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
    collect = _Collect()
    wrapper.visit(collect)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    params = set().union(*(_names_used(f) for f in collect.functions)) if collect.functions else set()
    lines = source.splitlines()
    made: dict[str, Mutant] = {}

    def add(operator, new_module, line):
        text = new_module.code if isinstance(new_module, cst.Module) else None
        if text is None or text == source:
            return
        try:
            compile(text, "<mutant>", "exec")
        except SyntaxError:
            return
        new_lines = text.splitlines()
        after = next((b for a, b in zip(lines, new_lines) if a != b), new_lines[-1] if new_lines else "")
        if len(new_lines) != len(lines) and operator == "input changed in place":
            after = next((b for a, b in zip(lines + [""], new_lines) if a != b), "")
        mutant = Mutant(name, operator, line, lines[line - 1].strip() if 0 < line <= len(lines) else "",
                        after.strip(), text)
        made.setdefault(mutant.id, mutant)

    for node in collect.nodes:
        line = positions[node].start.line if node in positions else 0
        for node_type, operator in mutation_operators:
            if isinstance(node, node_type):
                for new in operator(node):
                    add(f"mutmut {operator.__name__.removeprefix('operator_')}", deep_replace(module, node, new), line)
        for op_name, new in _own_operators(node, answer, params):
            add(op_name, deep_replace(module, node, new), line)
    for function in collect.functions:
        for node, new in _statement_drops(function):
            add("statement dropped", deep_replace(module, node, new), positions[node].start.line)
        for param in function.params.params:
            if param.name.value in answer.visible:
                add("argument ignored", _ignore_argument(module, function, param.name.value,
                                                         answer.visible[param.name.value]),
                    positions[function].start.line)
        for statement in answer.in_place:
            add("input changed in place", _change_input(module, function, statement), positions[function].start.line)
    return sorted(made.values(), key=lambda m: (m.line, m.operator, m.id))


def solution_of(name: str) -> str:
    from autograder.example import answers_of
    from conftest import STEP4
    return answers_of(STEP4, ANSWERS[name].notebook)[name]


def all_mutants(names=None) -> list[Mutant]:
    return [m for name in (names or ANSWERS) for m in mutants_of(name, solution_of(name))]


# ---- judging them -----------------------------------------------------------------------------

class TimeUp(BaseException):
    """Not an Exception: the runtime's `except Exception` around a student's call lets it through."""


def _alarm(signum, frame):
    raise TimeUp()


CELL = "# %% a cell of its own"     # in an answer's source: what follows runs as a new notebook cell


def cells_of(source: str) -> list[str]:
    """An answer's source as the notebook cells it stands for (split at `CELL` lines)."""
    cells, current = [], []
    for line in source.split("\n"):
        if line.strip() == CELL:
            cells.append("\n".join(current))
            current = []
        else:
            current.append(line)
    return cells + ["\n".join(current)]


@contextlib.contextmanager
def time_limit(seconds: int = SECONDS):
    """Raise TimeUp in the block after `seconds` (grading's cell time limit would stop it too)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def judge_source(name: str, source: str) -> tuple[float | None, float, str]:
    """(points, full points, the feedback's first failing line) of `source` in place of answer `name`'s
    solution (points None, and why, when the check cannot decide and the cell goes to a person), judged by its hidden test in this process as tests/test_grader_proof_quick.py judges the
    proof corpus. `source` may stand for several cells (`CELL` lines): each is run, and kept in the
    kernel's input history, as a cell of its own."""
    import torch
    from autograder.selfgrade import probe_and_judge
    from conftest import STEP4
    from proof_corpus import Entry
    from test_grader_proof_quick import namespace

    answer = ANSWERS[name]
    full = float(STEP4.checks[answer.check].points)
    cells = cells_of(source)
    entry = Entry(f"judged-{name}-{hashlib.sha1(source.encode()).hexdigest()[:10]}", answer.notebook,
                  {name: cells if len(cells) > 1 else source})
    try:
        with time_limit():
            try:
                ns = namespace(entry)
            except TimeUp:
                raise
            except BaseException as err:       # the answer cannot even be defined: grading scores it 0
                return 0.0, full, f"the answer cell fails: {type(err).__name__}"
            torch.manual_seed(0)
            with contextlib.redirect_stdout(io.StringIO()):
                verdict = probe_and_judge(answer.check, ns, STEP4)
        if verdict.needs_review:                # the cell goes to a person: no score (None), nothing taken
            return None, full, verdict.review_text()
        failing = [ln.strip() for ln in verdict.report(full).splitlines() if ln.strip().startswith("✗")]
        return round(full * verdict.fraction, 2), full, (failing[0] if failing else "")
    except TimeUp:
        return 0.0, full, f"ran past {SECONDS} s"


def judge(mutant: Mutant) -> tuple[float | None, float, str]:
    """(points, full points, the feedback's first failing line) of the mutant's hidden test."""
    return judge_source(mutant.answer, mutant.source)


def outcome(mutant: Mutant) -> tuple[str, float, float, str]:
    """('killed' | 'equivalent' | 'survived' | 'survived-with-reason' | 'equivalent-but-killed' | 'review',
    points, full points, the first failing part or the listed reason). 'review': the hidden test cannot
    decide and sends the cell to a person, neither killed nor survived."""
    from mutant_equivalents import EQUIVALENT, SURVIVING
    got, full, why = judge(mutant)
    if got is None:
        return "review", got, full, why
    killed = got < full - 1e-9
    if mutant.id in EQUIVALENT:
        return ("equivalent-but-killed" if killed else "equivalent"), got, full, why or EQUIVALENT[mutant.id]
    if mutant.id in SURVIVING and not killed:
        return "survived-with-reason", got, full, SURVIVING[mutant.id]
    return ("killed" if killed else "survived"), got, full, why


def run(names=None, progress=True) -> dict[str, list]:
    import torch
    torch.set_num_threads(1)
    results: dict[str, list] = {}
    for name in names or ANSWERS:
        mutants = mutants_of(name, solution_of(name))
        start = time.time()
        rows = []
        for mutant in mutants:
            state, got, full, why = outcome(mutant)
            rows.append((mutant, state, got, full, why))
        if progress:
            print(f"{name}: {len(mutants)} mutants judged in {time.time() - start:.0f} s", file=sys.stderr, flush=True)
        results[name] = rows
    return results


def table(results: dict[str, list]) -> str:
    from mutant_equivalents import EQUIVALENT, SURVIVING
    out = ["# Mutation table of the hidden checks", "",
           "Generated by `make mutants` (`python tests/mutants.py`): each graded answer's solution, changed one",
           "mistake at a time by mutmut's operators and this project's own (tests/mutants.py), judged by its",
           "hidden test in-process. *Killed*: the hidden test takes points; *equivalent*: the same behaviour on",
           "every valid input, full marks kept (the reasons: below, and in tests/mutant_equivalents.py);",
           "*survived*: a mutant the hidden test does not tell from the solution, each with its written reason",
           "(a survivor without one fails `make mutants` and tests/test_mutants.py); *review*: the hidden test",
           "cannot decide and sends the cell to a person (neither killed nor survived).", "",
           "| answer | hidden test | mutants | killed | survived | equivalent | review | killed of non-equivalent |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    totals = [0, 0, 0, 0, 0]
    for name, rows in results.items():
        made = len(rows)
        killed = sum(r[1] == "killed" for r in rows)
        survived = sum(r[1] in ("survived", "survived-with-reason", "equivalent-but-killed") for r in rows)
        equivalent = sum(r[1] == "equivalent" for r in rows)
        review = sum(r[1] == "review" for r in rows)
        share = killed / (killed + survived) if killed + survived else 1.0
        totals = [a + b for a, b in zip(totals, (made, killed, survived, equivalent, review))]
        out.append(f"| `{name}` | `{ANSWERS[name].check}` | {made} | {killed} | {survived} | {equivalent} | {review} "
                   f"| {share:.1%} |")
    made, killed, survived, equivalent, review = totals
    share = killed / (killed + survived) if killed + survived else 1.0
    out.append(f"| **all** | | {made} | {killed} | {survived} | {equivalent} | {review} | {share:.1%} |")

    def line(m):
        return f"`{m.id}` ({m.operator}, line {m.line}): `{m.before.split('#')[0].strip()}` → `{m.after.split('#')[0].strip()}`"

    out += ["", "## Survivors", ""]
    survivors = [(m, s, why) for rows in results.values() for m, s, _, _, why in rows
                 if s in ("survived", "survived-with-reason", "equivalent-but-killed")]
    if not survivors:
        out.append("None.")
    for m, s, why in survivors:
        out.append(f"* {line(m)}. " + {"survived": "**No reason written: a defect of the judge.**",
                                       "survived-with-reason": SURVIVING.get(m.id, ""),
                                       "equivalent-but-killed": "**Listed as equivalent, but the hidden test takes "
                                                                "points: a false fail.**"}[s])
    out += ["", "## Mutants sent to review", ""]
    reviewed = [(m, why) for rows in results.values() for m, s, _, _, why in rows if s == "review"]
    if not reviewed:
        out.append("None.")
    for m, why in reviewed:
        out.append(f"* {line(m)}. {' '.join(why.split())[:300]}")
    out += ["", "## Equivalent mutants", ""]
    equivalents = [(m, EQUIVALENT[m.id]) for rows in results.values() for m, s, *_ in rows if s == "equivalent"]
    if not equivalents:
        out.append("None.")
    for m, why in equivalents:
        out.append(f"* {line(m)}. {why}")
    return "\n".join(out) + "\n"


def main(argv):
    names = [a for a in argv if not a.startswith("-")] or None
    unknown = set(names or []) - set(ANSWERS)
    if unknown:
        raise SystemExit(f"mutants: no graded answer {sorted(unknown)}; answers: {', '.join(ANSWERS)}")
    results = run(names)
    text = table(results)
    if names is None:
        TABLE.write_text(text, encoding="utf-8")
        print(f"mutants: the table is in {TABLE.relative_to(HERE.parent)}", file=sys.stderr)
    if "--json" in argv:
        print(json.dumps({n: [[m.id, s, g] for m, s, g, *_ in rows] for n, rows in results.items()}))
    else:
        print(text)
    bad = [m.id for rows in results.values() for m, s, *_ in rows if s in ("survived", "equivalent-but-killed")]
    if bad:
        print(f"mutants: {len(bad)} without a reason: {', '.join(bad[:10])}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
