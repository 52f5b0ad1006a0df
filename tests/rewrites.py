"""Equivalence testing of the hidden checks, beside their mutation testing (tests/mutants.py): every
graded answer's solution, rewritten into the other shapes a correct answer takes, must keep full
marks on its hidden test; and the mutants of those rewrites must lose points as the mutants of the
solution do.

The rewrites are made with libcst (the concrete syntax tree mutmut works on too), from each
answer's solution and from the shapes written by hand in tests/rewrite_shapes.py (loops,
comprehensions, generator sums, `itertools.product`, `zip`/`enumerate`, numpy or Python floats,
float64 computed and cast back), by these mechanical families, each applied where it fits, alone
and combined:

* stub above: the released `raise NotImplementedError` stub left in an earlier cell;
* attempt above: a wrong attempt (a mutant of the solution) left in an earlier cell;
* helper: a sub-expression of the innermost statement split out into a helper defined in a later cell;
* renamed: every local variable and parameter renamed (not those the notebook passes by keyword);
* aliases: `import torch as T` (numpy, functional, math likewise) and every use through the alias;
* keywords: arguments passed by keyword where they were positional and positional where keyword
  (`dim=`, `diagonal=`, sizes as a tuple, `deg=`);
* comments: the docstring replaced, a comment on every line;
* class: a class with `__call__`, its instance bound to the answer's name;
* closure: the function made by a factory, with a call counter kept in the closure.

Each rewrite is first run against the solution on inputs of its own (tests/behaviour.py); one that
does not behave the same is not judged but listed, with where it parts. An equivalent one is judged
by its hidden test in-process as tests/mutants.py judges a mutant. Where the check cannot follow the
code (the process reader, for a class instance or a closure), the cell goes to a person: *review*,
neither kept nor lost. A rewrite that loses points is a check that depends on how an answer is
written: a defect (marked *defined twice* when the rewrite keeps full marks without its earlier,
dead definitions).

Then the mutation operators of tests/mutants.py are applied to the rewrites (the `MUTATED` ones: each
hand-written shape and the solution, with the families combined): a mutant of a rewrite that behaves
like the solution is equivalent; one that behaves like a mutant of the solution takes that mutant's
standing (equivalent or surviving with a reason in tests/mutant_equivalents.py, or killed); every
other one must lose points. A check that kills a mutant of the solution but not the same mutant of a
rewrite is blind to the shape: such cases are listed.

hypothesmith (Hypothesis strategies for random programs drawn from Python's grammar) is not used: a
rewrite must keep the meaning of one given program, and random unrelated programs say nothing about
that; the inputs each rewrite is run on are drawn in tests/behaviour.py, fixed and the same every run.

    python tests/rewrites.py                  # every answer; writes tests/rewrite_table.md (make rewrites)
    python tests/rewrites.py scores_entrywise # one answer, the table printed only
    python tests/rewrites.py --no-mutants     # the rewrites only
    python tests/rewrites.py --jobs=2         # answers judged in 2 processes side by side
    python tests/rewrites.py --again NAME...  # the last full run's results with the answers named judged again
"""
from __future__ import annotations

import ast
import functools
import json
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import libcst as cst  # noqa: E402

import mutants  # noqa: E402
from mutants import ANSWERS, CELL, cells_of, solution_of  # noqa: E402
from rewrite_shapes import SHAPES  # noqa: E402

TABLE = HERE / "rewrite_table.md"
RESULTS = HERE.parent / "artifacts" / "rewrites.pickle"     # the last full run's results (not committed)

# parameters the notebook's own cells pass by keyword (`dot_variance(16, 2_000, seed=1)`): their names
# are part of the contract
KEYWORD_PARAMS = {"dot_variance": {"seed"}, "scale_table": {"seed"}}
# hand-written shapes whose judging takes long (Python loops over 20,000 x 50 numbers): rewritten and
# judged, but not mutated (each of their mutants would take as long)
SLOW = {("dot_variance", "python floats"), ("dot_variance", "row by row")}

COMBINED = ("helper", "renamed", "keywords", "aliases", "comments")


@dataclass(frozen=True)
class Rewrite:
    answer: str
    shape: str                 # "solution" or a hand-written shape of tests/rewrite_shapes.py
    families: tuple            # the mechanical rewrites applied to it, in order
    source: str
    mutate: bool = False       # its mutants are judged too (each shape with the cosmetic families combined)

    @property
    def id(self) -> str:
        return f"{self.answer}:{self.label}"

    @property
    def label(self) -> str:
        return " + ".join(([] if self.shape == "solution" and self.families else [self.shape]) + list(self.families))


# ---- helpers on libcst trees -----------------------------------------------------------------

def _module(source: str) -> cst.Module:
    return cst.parse_module(source)


def _defs(module: cst.Module, name: str) -> list[cst.FunctionDef]:
    found = []

    class Find(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            if node.name.value == name:
                found.append(node)

    module.visit(Find())
    return found


def _answer_def(module, name):
    found = _defs(module, name)
    return found[-1] if found else None


def _local_names(fn_source: str) -> tuple[list[str], set[str]]:
    """(parameters, every name the function's own code binds): read with ast, nested functions' bodies
    and comprehensions included (a comprehension's names are renamed alike, consistently)."""
    tree = ast.parse(fn_source)
    fn = tree.body[0]
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    bound = set(params)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return params, bound


def _all_names(source: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)} | \
        {n.arg for n in ast.walk(ast.parse(source)) if isinstance(n, ast.arg)}


class _RenameLoads(cst.CSTTransformer):
    """Rename Names (variables, not attributes, keywords or function names) by `mapping`."""

    def __init__(self, mapping):
        super().__init__()
        self.mapping = mapping

    def leave_Name(self, original, updated):
        return updated.with_changes(value=self.mapping[original.value]) if original.value in self.mapping else updated

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)

    def leave_FunctionDef(self, original, updated):
        return updated.with_changes(name=original.name)

    def leave_ClassDef(self, original, updated):
        return updated.with_changes(name=original.name)

    def leave_ImportAlias(self, original, updated):
        return original

    def leave_ImportFrom(self, original, updated):
        return original


def _replace_def(module: cst.Module, old: cst.FunctionDef, new) -> cst.Module:
    from mutmut.mutation.file_mutation import deep_replace
    return deep_replace(module, old, new)


def _is_docstring(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


# ---- the mechanical families ------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def released_stub(name: str) -> str:
    from conftest import STEP4
    release = json.loads((STEP4.release / f"{ANSWERS[name].notebook}.ipynb").read_text(encoding="utf-8"))
    for cell in release["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == name:
            return "".join(cell["source"])
    raise KeyError(name)


def stub_above(name, source):
    """The released stub, left in an earlier cell."""
    stub = released_stub(name)
    if f"def {name}(" not in stub:          # a stub that raises when run (a value, not a function) would stop there
        return None
    return stub.rstrip("\n") + f"\n{CELL}\n" + source


def attempt_above(name, source):
    """A wrong attempt (a mutant of the solution: two operands swapped, or else a statement dropped, a
    number or a string changed), left in an earlier cell."""
    wrong = wrong_attempt(name)
    return wrong.rstrip("\n") + f"\n{CELL}\n" + source if wrong else None


@functools.lru_cache(maxsize=None)
def wrong_attempt(name: str) -> str | None:
    made = mutants.mutants_of(name, solution_of(name))
    for operator in ("operands swapped", "arguments swapped", "statement dropped", "mutmut number", "mutmut string"):
        wrong = [m for m in made if m.operator == operator]
        if wrong:
            return wrong[0].source
    return None


def helper(name, source):
    """The innermost assignment's (or return's) expression split out into a helper function defined in a
    later cell, called with the local names it reads."""
    module = _module(source)
    fn = _answer_def(module, name)
    if fn is None:
        return None
    params, bound = _local_names(_dedent(module.code_for_node(fn)))
    candidates = []

    class Find(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.depth = 0

        def visit_IndentedBlock(self, node):
            self.depth += 1

        def leave_IndentedBlock(self, node):
            self.depth -= 1

        def visit_FunctionDef(self, node):
            return node is fn              # not into nested functions

        def visit_Lambda(self, node):
            return False

        def visit_Assign(self, node):
            if len(node.targets) == 1 and isinstance(node.value, (cst.Call, cst.BinaryOperation, cst.Subscript)):
                candidates.append((self.depth, node, node.value))

        def visit_Return(self, node):
            if isinstance(node.value, (cst.Call, cst.BinaryOperation, cst.Subscript)):
                candidates.append((self.depth, node, node.value))

    fn.visit(Find())
    usable = []
    for depth, stmt, expr in candidates:
        text = _module("").code_for_node(expr)
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError:
            continue
        if any(isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.NamedExpr,
                              ast.Yield, ast.Await)) for n in ast.walk(tree)):
            continue
        used = list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in bound))
        if used:
            usable.append((depth, stmt, expr, used))
    if not usable:
        return None
    deepest = max(d for d, *_ in usable)
    depth, stmt, expr, used = next(u for u in usable if u[0] == deepest)
    helper_name = f"_{name}_part"
    call = cst.Call(func=cst.Name(helper_name), args=[cst.Arg(cst.Name(u)) for u in used])
    new_fn = fn.deep_replace(expr, call)
    module = _replace_def(module, fn, new_fn)
    helper_src = (f"def {helper_name}({', '.join(used)}):\n"
                  f"    return {_module('').code_for_node(expr).strip()}\n")
    return module.code.rstrip("\n") + f"\n{CELL}\n" + helper_src


def _dedent(text: str) -> str:
    import textwrap
    return textwrap.dedent(text).strip("\n") + "\n"


RENAMES = {"q": "queries", "k": "keys", "v": "values", "T": "n_tokens", "B": "n_seqs", "d": "width", "d_k": "key_width",
           "d_v": "value_width", "d_head": "head_width", "A": "weights", "x": "inputs", "i": "row", "j": "col",
           "b": "seq", "head": "model", "scores": "logits", "n": "n_pairs", "g": "rng", "s": "bandwidth",
           "t": "pos", "out": "result", "grad": "gradient", "rows": "table", "Ts": "lengths", "times": "durations",
           "idx": "token_ids", "perm": "order", "P": "positions", "H": "entropies"}


def renamed(name, source):
    """Every local variable and parameter of the rewrite's functions renamed (names the notebook passes
    by keyword kept)."""
    module = _module(source)
    fns = []

    class Find(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            fns.append(node)

    module.visit(Find())
    if not fns:
        return None
    taken = _all_names(source)
    local = set()
    for fn in fns:
        local |= _local_names(_dedent(module.code_for_node(fn)))[1]
    keep = KEYWORD_PARAMS.get(name, set()) | {f.name.value for f in fns} | {"self", "_"}
    mapping = {}
    for old in sorted(local - keep):
        new = RENAMES.get(old, f"my_{old}")
        while new in taken or new in mapping.values():
            new += "_"
        mapping[old] = new
    if not mapping:
        return None

    # rename inside top-level functions only (module-level code keeps its names)
    body = []
    for stmt in module.body:
        body.append(stmt.visit(_RenameLoads(mapping)) if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else stmt)
    return module.with_changes(body=body).code


ALIASES = {"torch": ("T", "import torch as {}"), "np": ("onp", "import numpy as {}"),
           "F": ("nnf", "import torch.nn.functional as {}"), "math": ("maths", "import math as {}")}


def aliases(name, source):
    """Modules used through aliases the cell imports itself (`import torch as T`, ...)."""
    cells = cells_of(source)
    index = next((n for n, c in enumerate(cells) if f"def {name}(" in c or name.upper() in c), len(cells) - 1)
    names = _all_names("\n".join(cells))
    mapping, imports = {}, []
    for module_name, (alias, line) in ALIASES.items():
        if module_name in names:
            while alias in names:
                alias = "th" if alias == "T" else alias + "_"
            mapping[module_name] = alias
            imports.append(line.format(alias))
    if not mapping:
        return None
    out = []
    for n, cell in enumerate(cells):
        module = _module(cell)
        local_imports = {(a.asname.name.value if a.asname else a.name.value)
                         for stmt in module.body if isinstance(stmt, cst.SimpleStatementLine)
                         for s in stmt.body if isinstance(s, cst.Import) for a in s.names}
        cell_map = {k: v for k, v in mapping.items() if k not in local_imports}
        text = module.visit(_RenameLoads(cell_map)).code if cell_map else cell
        if n == index:
            text = "\n".join(imports) + "\n\n" + text
        elif cell_map and n > index:
            pass
        out.append(text)
    return f"\n{CELL}\n".join(c.rstrip("\n") for c in out) + "\n"


DIM_METHODS = {"sum", "mean", "std", "var", "softmax", "log_softmax", "squeeze", "unsqueeze", "cumsum", "amax",
               "amin", "argmax", "argmin", "logsumexp", "max", "min"}
SIZE_FUNCTIONS = {"zeros", "ones", "randn", "rand", "empty"}


class _Keywords(cst.CSTTransformer):
    """dim= <-> positional, diagonal= <-> positional, sizes <-> a tuple, polyfit's degree by keyword."""

    def __init__(self):
        super().__init__()
        self.changed = 0

    def leave_Call(self, original, updated):
        func = updated.func
        attr = func.attr.value if isinstance(func, cst.Attribute) else None
        base = func.value.value if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) else None
        args = list(updated.args)
        is_module = base in ("torch", "F", "np", "nnf", "T", "th", "onp")
        # method .sum(dim=-1) <-> .sum(-1); F.softmax(x, dim=-1) <-> F.softmax(x, -1)
        position = 1 if is_module else 0
        if attr in DIM_METHODS and len(args) > position and (attr not in ("max", "min") or not is_module):
            a = args[position]
            if a.keyword is not None and a.keyword.value == "dim" and all(x.keyword is None for x in args[:position]):
                args[position] = a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
                self.changed += 1
                return updated.with_changes(args=args)
            if a.keyword is None and a.star == "" and isinstance(a.value, (cst.Integer, cst.UnaryOperation)) \
                    and attr not in ("max", "min"):
                args[position] = a.with_changes(keyword=cst.Name("dim"),
                                                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                                      whitespace_after=cst.SimpleWhitespace("")))
                self.changed += 1
                return updated.with_changes(args=args)
        if attr in ("tril", "triu") and is_module and len(args) == 2:
            a = args[1]
            if a.keyword is not None:
                args[1] = a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
            else:
                args[1] = a.with_changes(keyword=cst.Name("diagonal"),
                                         equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                               whitespace_after=cst.SimpleWhitespace("")))
            self.changed += 1
            return updated.with_changes(args=args)
        if attr in SIZE_FUNCTIONS and is_module and base not in ("np", "onp"):
            sizes = [a for a in args if a.keyword is None and a.star == ""]
            if len(sizes) >= 2 and sizes == args[:len(sizes)]:
                tup = cst.Tuple([cst.Element(a.value) for a in sizes])
                rest = args[len(sizes):]
                self.changed += 1
                comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if rest else cst.MaybeSentinel.DEFAULT
                return updated.with_changes(args=[cst.Arg(tup, comma=comma)] + rest)
        if attr == "polyfit" and len(args) == 3 and args[2].keyword is None:
            args[2] = args[2].with_changes(keyword=cst.Name("deg"),
                                           equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                                 whitespace_after=cst.SimpleWhitespace("")))
            self.changed += 1
            return updated.with_changes(args=args)
        return updated


def keywords(name, source):
    """Arguments by keyword where they were positional, and positional where they were keywords."""
    t = _Keywords()
    text = _module(source).visit(t).code
    return text if t.changed else None


def comments(name, source):
    """Docstrings replaced by others, a comment at the end of every line of the functions' bodies."""
    module = _module(source)
    n = [0]

    class Comment(cst.CSTTransformer):
        def leave_SimpleStatementLine(self, original, updated):
            if updated.trailing_whitespace.comment is None and not _is_docstring(updated):
                n[0] += 1
                return updated.with_changes(trailing_whitespace=cst.TrailingWhitespace(
                    whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(f"# step {n[0]}"),
                    newline=updated.trailing_whitespace.newline))
            return updated

        def leave_FunctionDef(self, original, updated):
            body = list(updated.body.body)
            doc = cst.SimpleStatementLine([cst.Expr(cst.SimpleString(
                f'"""My answer: {updated.name.value}.\n\n    Written my own way; see the spec above."""'))])
            if body and _is_docstring(body[0]):
                body[0] = doc
            else:
                body.insert(0, doc)
            return updated.with_changes(body=updated.body.with_changes(body=body))

    text = module.visit(Comment()).code
    return "# my answer, checked by hand against the examples\n" + text


def as_class(name, source):
    """A class with `__call__`, its instance bound to the answer's name."""
    module = _module(source)
    fn = _answer_def(module, name)
    if fn is None:
        return None
    params = fn.params.with_changes(params=[cst.Param(cst.Name("self"))] + list(fn.params.params))
    method = fn.with_changes(name=cst.Name("__call__"), params=params, leading_lines=[])
    cls_name = "".join(part.title() for part in name.split("_"))
    cls = cst.ClassDef(name=cst.Name(cls_name), body=cst.IndentedBlock([method]), leading_lines=fn.leading_lines)
    bind = cst.parse_statement(f"{name} = {cls_name}()\n")
    body = []
    for stmt in module.body:
        body += [cls, bind] if stmt is fn else [stmt]
    return module.with_changes(body=body).code


def as_closure(name, source):
    """The function made by a factory that keeps a call counter in its closure."""
    module = _module(source)
    fn = _answer_def(module, name)
    if fn is None:
        return None
    body = list(fn.body.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    body[start:start] = [cst.parse_statement("calls.append(len(calls))\n")]
    inner = fn.with_changes(body=fn.body.with_changes(body=body), leading_lines=[])
    factory = cst.FunctionDef(
        name=cst.Name(f"make_{name}"), params=cst.Parameters(),
        body=cst.IndentedBlock([cst.parse_statement("calls = []  # the state the closure keeps: one entry per call\n"),
                                inner, cst.parse_statement(f"return {name}\n")]),
        leading_lines=fn.leading_lines)
    bind = cst.parse_statement(f"{name} = make_{name}()\n")
    out = []
    for stmt in module.body:
        out += [factory, bind] if stmt is fn else [stmt]
    return module.with_changes(body=out).code


FAMILIES = {"stub above": stub_above, "attempt above": attempt_above, "helper": helper, "renamed": renamed,
            "aliases": aliases, "keywords": keywords, "comments": comments, "class": as_class, "closure": as_closure}


def apply(name, source, families) -> tuple[str, tuple] | None:
    """`source` with each family applied in turn (those that do not fit skipped); None if none fit."""
    done = []
    for family in families:
        new = _apply_one(name, source, family)
        if new is not None and new != source:
            source, done = new, done + [family]
    return (source, tuple(done)) if done else None


@functools.lru_cache(maxsize=4096)
def _apply_one(name, source, family):
    return FAMILIES[family](name, source)


# ---- the rewrites of an answer -------------------------------------------------------------------

def bases(name: str) -> dict[str, str]:
    """{shape: source}: the solution and the hand-written shapes of the answer."""
    return {"solution": solution_of(name), **SHAPES.get(name, {})}


def build(name: str, shape: str, families=(), mutate=False) -> Rewrite | None:
    """One rewrite: the shape with `families` applied in turn (those that fit); None if it is the shape
    itself unchanged, or does not compile."""
    source = bases(name)[shape]
    got = apply(name, source, list(families)) if families else (source, ())
    if got is None or (shape == "solution" and not got[1]):
        return None
    try:
        compile("\n".join(cells_of(got[0])), "<rewrite>", "exec")
    except SyntaxError:
        return None
    return Rewrite(name, shape, got[1], got[0], mutate and (name, shape) not in SLOW)


def rewrites_of(name: str) -> list[Rewrite]:
    """The solution under each family alone and combined, each hand-written shape alone, combined, and
    with the earlier attempts and the class or closure around it."""
    made: dict[str, Rewrite] = {}

    def add(rewrite):
        if rewrite is not None and (rewrite.id not in made or rewrite.mutate):
            made[rewrite.id] = rewrite

    for family in FAMILIES:
        add(build(name, "solution", [family]))
    for shape in bases(name):
        add(build(name, shape))
        # the cosmetic families combined (its mutants judged too: no earlier attempt, whose mutants would
        # change a dead definition), then with an earlier stub, an earlier attempt and a class, a closure
        add(build(name, shape, COMBINED, mutate=True))
        for extra in (("stub above",), ("attempt above", "class"), ("closure",)):
            add(build(name, shape, COMBINED + extra))
    return list(made.values())


# ---- judging ------------------------------------------------------------------------------------

READER_TWICE = "defined twice"


def without_shadowed(name: str, source: str) -> str:
    """The rewrite without its dead definitions: earlier definitions of a name that a later cell defines
    again left out."""
    cells = cells_of(source)
    last = {}
    for n, cell in enumerate(cells):
        for node in ast.parse(cell).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                last[node.name] = n
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        last[t.id] = n
    kept = []
    for n, cell in enumerate(cells):
        tree = ast.parse(cell)
        dead = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                and last.get(node.name, n) > n]
        if len(dead) == len(tree.body) and dead:
            continue
        kept.append(cell)
    return f"\n{CELL}\n".join(kept)


@dataclass
class Judged:
    rewrite: Rewrite
    state: str                  # "kept", "review" (a person scores the cell), "lost", "not equivalent"
    points: float = 0.0
    full: float = 0.0
    why: str = ""               # the failing part, or where the behaviour parts
    reason: str = ""            # for a loss: READER_TWICE or "check depends on the shape"


def judge_rewrite(rewrite: Rewrite, reference=None) -> Judged:
    import behaviour
    reference = reference if reference is not None else behaviour.behaviour(rewrite.answer, solution_of(rewrite.answer))
    parted = behaviour.differs(reference, behaviour.behaviour(rewrite.answer, rewrite.source))
    if parted:
        return Judged(rewrite, "not equivalent", why=parted)
    got, full, why = mutants.judge_source(rewrite.answer, rewrite.source)
    if got is None:
        return Judged(rewrite, "review", 0.0, full, why)
    if got >= full - 1e-9:
        return Judged(rewrite, "kept", got, full)
    reason = classify_loss(rewrite.answer, rewrite.source, why)
    return Judged(rewrite, "lost", got, full, why, reason)


def classify_loss(name: str, source: str, why: str) -> str:
    """READER_TWICE when the rewrite without its earlier definitions keeps full marks (the check is misled
    by a dead definition), else a check that depends on how the answer is written."""
    alone = without_shadowed(name, source)
    if alone != source:
        got, full, _ = mutants.judge_source(name, alone)
        if got is not None and got >= full - 1e-9:
            return READER_TWICE
    return "check depends on the shape"


# ---- mutants of rewrites ----------------------------------------------------------------------------

@dataclass
class MutantRow:
    rewrite: Rewrite
    mutant: mutants.Mutant
    state: str                 # killed | survived | equivalent | survived-with-reason | blind | equivalent-but-killed
    #                            | review (the check cannot decide: a person scores it; neither killed nor survived)
    points: float
    full: float
    why: str
    twin: str = ""             # the solution's mutant that behaves the same, if any


def solution_mutant_behaviours(name: str) -> list[tuple[mutants.Mutant, list]]:
    import behaviour
    return [(m, behaviour.behaviour(name, m.source)) for m in mutants.mutants_of(name, solution_of(name))]


def judge_mutants_of(rewrite: Rewrite, reference, twins) -> list[MutantRow]:
    import behaviour
    from mutant_equivalents import EQUIVALENT, REWRITE_SURVIVING, SURVIVING
    rows = []
    for m in mutants.mutants_of(rewrite.answer, rewrite.source):
        m = mutants.Mutant(f"{rewrite.answer}", m.operator, m.line, m.before, m.after, m.source)
        seen = behaviour.behaviour(rewrite.answer, m.source)
        got, full, why = mutants.judge_source(rewrite.answer, m.source)
        killed = got is not None and got < full - 1e-9
        twin = next((t for t, b in twins if behaviour.same(seen, b)), None)
        if got is None:
            state = "review"
        elif behaviour.same(seen, reference):
            state = "equivalent-but-killed" if killed else "equivalent"
            why = why if killed else "behaves as the solution on every draw"
        elif twin is not None and twin.id in EQUIVALENT:
            state, why = ("equivalent-but-killed" if killed else "equivalent"), (why if killed else EQUIVALENT[twin.id])
        elif killed:
            state = "killed"
        elif twin is not None and twin.id in SURVIVING:
            state, why = "survived-with-reason", SURVIVING[twin.id]
        elif m.id in REWRITE_SURVIVING:
            state, why = "survived-with-reason", REWRITE_SURVIVING[m.id]
        elif twin is not None:
            state = "blind"             # the same mistake in the solution's shape is killed
        else:
            state = "survived"
        rows.append(MutantRow(rewrite, m, state, got, full, why, twin.id if twin is not None else ""))
    return rows


# ---- the run and the table ---------------------------------------------------------------------------

def run_answer(name: str, with_mutants=True):
    """(the rewrites judged, the mutants of the mutated ones judged) of one answer."""
    import behaviour
    import torch
    torch.set_num_threads(1)
    start = time.time()
    reference = behaviour.behaviour(name, solution_of(name))
    judged = [judge_rewrite(r, reference) for r in rewrites_of(name)]
    rows = []
    if with_mutants:
        twins = solution_mutant_behaviours(name)
        for j in judged:
            if j.rewrite.mutate and j.state == "kept":
                rows += judge_mutants_of(j.rewrite, reference, twins)
    print(f"{name}: {len(judged)} rewrites, {len(rows)} mutants of rewrites, {time.time() - start:.0f} s",
          file=sys.stderr, flush=True)
    return name, (judged, rows)


def run(names=None, with_mutants=True, jobs=1):
    """{answer: (rewrites judged, mutants of rewrites judged)}; `jobs` processes judge answers side by side."""
    import functools as ft
    import multiprocessing
    names = list(names or ANSWERS)
    if jobs <= 1:
        return dict(run_answer(name, with_mutants) for name in names)
    with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=1) as pool:
        done = dict(pool.imap_unordered(ft.partial(run_answer, with_mutants=with_mutants), names))
    return {name: done[name] for name in names}


def _short(text: str, n=160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _restate(results):
    """Survivors written down in tests/mutant_equivalents.py since they were judged take their reason."""
    from mutant_equivalents import REWRITE_SURVIVING
    for _, rows in results.values():
        for r in rows:
            if r.state == "survived" and r.mutant.id in REWRITE_SURVIVING:
                r.state, r.why = "survived-with-reason", REWRITE_SURVIVING[r.mutant.id]


def table(results, with_mutants=True) -> str:
    _restate(results)
    out = ["# Rewrite table of the hidden checks", "",
           "Generated by `make rewrites` (`python tests/rewrites.py`): each graded answer's solution and the shapes",
           "of tests/rewrite_shapes.py, rewritten by the families of tests/rewrites.py (alone and combined), each",
           "first proved equivalent to the solution on inputs of its own (tests/behaviour.py), then judged by its",
           "hidden test in-process. *Kept*: full marks; *lost*: fewer, with the check's failing part and why;",
           "*not equivalent*: a rewrite that behaves otherwise than the solution (not judged; where it parts).",
           "*Review*: the check cannot follow the code and sends the cell to a person (neither kept nor lost:",
           "nothing is taken). A loss marked *defined twice* is one the rewrite without its earlier definitions",
           "does not have (the check is misled by a dead definition); any other loss is a check that depends on",
           "how an answer is written.", "",
           "| answer | hidden test | rewrites | kept | review | lost | of which: defined twice | other "
           "| not equivalent |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    totals = [0] * 7
    for name, (judged, _) in results.items():
        n = len(judged)
        kept = sum(j.state == "kept" for j in judged)
        review = sum(j.state == "review" for j in judged)
        lost = [j for j in judged if j.state == "lost"]
        twice = sum(j.reason == READER_TWICE for j in lost)
        other = len(lost) - twice
        ne = sum(j.state == "not equivalent" for j in judged)
        row = [n, kept, review, len(lost), twice, other, ne]
        totals = [a + b for a, b in zip(totals, row)]
        out.append(f"| `{name}` | `{ANSWERS[name].check}` | " + " | ".join(map(str, row)) + " |")
    out.append("| **all** | | " + " | ".join(map(str, totals)) + " |")

    for state, title in (("lost", "Rewrites that lose points"), ("review", "Rewrites sent to review"),
                         ("not equivalent", "Rewrites that are not equivalent (not judged)")):
        out += ["", f"## {title}", ""]
        listed = [j for judged, _ in results.values() for j in judged if j.state == state]
        if not listed:
            out.append("None.")
        for j in listed:
            points = f"{j.points:g} of {j.full:g} ({j.reason}): " if state == "lost" else ""
            out.append(f"* `{j.rewrite.id}`: {points}{_short(j.why, 220)}")
    out += ["", "## Rewrites per answer", ""]
    for name, (judged, _) in results.items():
        marks = {"kept": "kept", "review": "review", "lost": "**lost**", "not equivalent": "not equivalent"}
        out.append(f"* `{name}`: " + "; ".join(f"{j.rewrite.label} ({marks[j.state]})" for j in judged))

    if with_mutants:
        out += ["", "## Mutants of the rewrites", "",
                "The mutation operators of tests/mutants.py applied to each hand-written shape and to the solution,",
                "with the families " + ", ".join(COMBINED) + " combined (those that fit). *Equivalent*: behaves as the",
                "solution on every draw, or as a mutant of the solution listed as equivalent; *blind*: survives, though",
                "the solution's mutant that behaves the same is killed (the check is blind to the shape, not to the",
                "mistake); *survived*: survives and behaves like no mutant of the solution; *review*: the check cannot",
                "decide and sends the cell to a person (neither killed nor survived).", "",
                "| answer | hidden test | rewrites mutated | mutants | killed | survived (with reason) | blind | survived "
                "| equivalent | equivalent but killed | review | killed of non-equivalent |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        tot = [0] * 9
        for name, (_, rows) in results.items():
            count = lambda s: sum(r.state == s for r in rows)  # noqa: E731
            made = len(rows)
            rewrites_mutated = len({r.rewrite.id for r in rows})
            k, sr, bl, sv, eq, ek, rv = (count(s) for s in ("killed", "survived-with-reason", "blind", "survived",
                                                            "equivalent", "equivalent-but-killed", "review"))
            share = k / (k + sr + bl + sv) if k + sr + bl + sv else 1.0
            tot = [a + b for a, b in zip(tot, [rewrites_mutated, made, k, sr, bl, sv, eq, ek, rv])]
            out.append(f"| `{name}` | `{ANSWERS[name].check}` | {rewrites_mutated} | {made} | {k} | {sr} | {bl} "
                       f"| {sv} | {eq} | {ek} | {rv} | {share:.1%} |")
        rm, made, k, sr, bl, sv, eq, ek, rv = tot
        share = k / (k + sr + bl + sv) if k + sr + bl + sv else 1.0
        out.append(f"| **all** | | {rm} | {made} | {k} | {sr} | {bl} | {sv} | {eq} | {ek} | {rv} | {share:.1%} |")

        def line(r):
            m = r.mutant
            return (f"`{m.id}` of `{r.rewrite.id}` ({m.operator}, line {m.line}): "
                    f"`{_short(m.before.split('#')[0].strip(), 90)}` → "
                    f"`{_short(m.after.split('#')[0].strip(), 90)}`")

        for title, states, what in [
                ("Blind to the shape", ("blind",), lambda r: f"the solution's twin `{r.twin}` is killed"),
                ("Survivors", ("survived",), lambda r: "behaves like no mutant of the solution: a defect of the judge"),
                ("Equivalent mutants that lose points", ("equivalent-but-killed",), lambda r: _short(r.why, 200)),
                ("Sent to review", ("review",), lambda r: _short(r.why, 200)),
                ("Survivors with a reason", ("survived-with-reason",),
                 lambda r: (f"as the solution's `{r.twin}`: " if r.twin else "") + _short(r.why, 300))]:
            out += ["", f"### {title}", ""]
            listed = [r for _, rows in results.values() for r in rows if r.state in states]
            if not listed:
                out.append("None.")
            for r in listed:
                out.append(f"* {line(r)}: {what(r)}")
    return "\n".join(out) + "\n"


def main(argv):
    names = [a for a in argv if not a.startswith("-")] or None
    unknown = set(names or []) - set(ANSWERS)
    if unknown:
        raise SystemExit(f"rewrites: no graded answer {sorted(unknown)}; answers: {', '.join(ANSWERS)}")
    with_mutants = "--no-mutants" not in argv
    jobs = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--jobs=")), 1)
    if "--again" in argv:                   # the last full run's results, the answers named judged again
        results = pickle.loads(RESULTS.read_bytes())
        if names:
            results.update(run(names, with_mutants, jobs))
        RESULTS.write_bytes(pickle.dumps(results))
        names = None
    else:
        results = run(names, with_mutants, jobs)
        if names is None and with_mutants:
            RESULTS.parent.mkdir(exist_ok=True)
            RESULTS.write_bytes(pickle.dumps(results))
    text = table(results, with_mutants)
    if names is None and with_mutants:
        TABLE.write_text(text, encoding="utf-8")
        print(f"rewrites: the table is in {TABLE.relative_to(HERE.parent)}", file=sys.stderr)
    print(text)
    other = [j.rewrite.id for judged, _ in results.values() for j in judged
             if j.state == "lost"]
    bad = [r.rewrite.id for _, rows in results.values() for r in rows
           if r.state in ("survived", "equivalent-but-killed")]
    if other:
        print(f"rewrites: {len(other)} correct rewrites lose points: {', '.join(other[:10])}", file=sys.stderr)
    if bad:
        print(f"rewrites: {len(bad)} mutants of rewrites survive without a reason or lose points although "
              f"equivalent", file=sys.stderr)
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
