"""`make similarity`: answers that look alike across the class, for a person to look at. Never a grade
change, never a verdict: two students may well write the same three-line function.

The engine is MOSS's: winnowing fingerprints (Schleimer, Wilkerson and Aiken, SIGMOD 2003), through
the `copydetect` package (its winnowing, fingerprint overlap and copied-region functions). Each
student's answers to one notebook are one document per kind, code and written text, in the
notebook's order (so an answer moved to another cell, or functions put in another order, is still
the same text). The document is normalised first: code to the answer's own statements, written back
from its syntax tree (so redundant parentheses, comments and layout are gone: `((q))[i]` is `q[i]`),
as Python's tokens, every name but builtins, keywords and attributes (`.softmax`, `.shape`) written
`N`, every literal `L`, so renaming variables changes nothing; written text to its lower-case words.

An answer's own statements are what it keeps, not what a list of padding drops: in a function,
the statements that act (return, raise, assert, yield, call something, write to an argument's or a
global's object; not a statement that only computes a value nobody reads, calling nothing but
VALUE_BUILTINS, VALUE_METHODS and PURE_LIBRARY (the last two with VALUE_KEYWORDS only: not `out=`),
`len(())`, `q.size()`, `torch.zeros(3)`, `math.sqrt(2)`, nor an assertion of such a value that can
hold, `assert q is not None`, calling no PURE_LIBRARY function: an allowlist, any other call acts) and, to a fixed point, every statement that binds or changes a name a kept
statement reads (an assignment, an import, a helper function, `rows.append(...)` when `rows` is
read), with the loops, conditions and `with` blocks around a kept statement; in a class, every name
it defines; in a cell, the definitions of the names its stub defines (`scores_entrywise`), and what
they read, transitively (a cell whose stub defines none, or whose answer defines none of them,
keeps every name it binds: a later cell may read them). Before that, a block that never runs goes
(an `if` on a constant, or on a condition computed from small constants alone, is the branch it
takes: `if False:`, `if 0:`, `if not True:`, `if 1 > 2:`, `if len([]):`; a `while` on a false one, and a
`for` over an empty literal or an empty range of constants, `for _ in ():`, `for i in range(0):`, its `else`), and so do
a guard clause that only raises, on a condition an assertion of which would go
(`if q is None: raise ValueError('no q')`: a GUARD_EXCEPTIONS exception of constants, nothing else in
the block), a name rebound to its own value (`x = x`, `q = q * 1`, `x = 0 + x`, `k += 0`: IDENTITIES) and a dead store: an
assignment of names only, each bound again later in the same block before anything reads it or
writes to its object (`out = 0` before `out = torch.zeros(T, T)`; not a name a function of the
cell reads, nor one declared global or nonlocal: a call may read those in between). After it, each
run of neighbouring assignments is put in one order: a statement after every earlier one it
depends on (it reads or writes a name that one writes, or writes one it reads), and among those
free to go next, the one whose tokens come first (so `q = ...; k = ...` swapped is one text). So
a copy padded with a dead statement
between every line (`tmp = 3`, `x = tmp + 1`: a chain of unused names, `'.'`, `pass`, `print()`,
`torch.zeros(1)`, `q = q * 1`, `if q is None: raise ValueError`),
with unused helper functions, with statements after a `return`, with blocks that never run or
stores that are overwritten, or with independent lines swapped, is normalised to the original's
text, and the copy's every run of the original is found again. A statement is kept or dropped
whole, by names only (not by what a call does: an unused `x = f()` is dropped, `f()` kept).

Program rewrites that keep what the code does are then written one way, both ways to one text (an
allowlist: any other rewrite stays as written). A constant index of a tuple or list literal whose
other elements are pure (constants, names, operators, `len([])`) is that element: `(x, len([]))[0]`
is `x`; `x * (1 / y)` and `(1 / y) * x` are `x / y`. A counter loop `i = a; while i < n: ...; i += s`
(a positive constant step, last or followed only by lines that do not name `i`; the body binds `i`
nowhere else, changes nothing `n` reads and has no `continue`; nothing reads `i` after the loop) is
`for i in range(a, n, s)`, an iterator loop `it = iter(x); while True: try: v = next(it) except
StopIteration: break; ...` (`it` read nowhere else) is `for v in x: ...`, and `range(0, n)` is
`range(n)`. A function of the cell (not one its stub defines: the grader calls those) named once,
in a call `return h(...)`, `x = h(...)` or `h(...)` in another function, is its body in place of
the call, its parameters the arguments (a name passed read in their place), its `return v` the
caller's, or `x = v` when it returns only at its end (not a function with decorators, `*args`,
`**kwargs`, keyword-only parameters, `global`, `yield`, a class inside it, or that reads a name the
caller binds). `rows = []` followed by a loop that only appends to it (`for`s and `if`s, each
holding just the next, around one `rows.append(e)`; the loop's variables read nowhere else) is
`rows = [e for ...]`. (A loop's `i = a`, `it = iter(x)` or `rows = []` may stand earlier, if nothing
between names it or changes what it reads.) Then, the independent lines in one order, a name
assigned once and read once, by a later statement of its block, is its expression where it is read
(a single-use name inlined), unless that moves it into a loop's body, a comprehension or a function,
past a statement or an evaluation that changes a name it reads (binds it, stores an item or
attribute of it, calls a method of it that changes its object: `append`, `add_`) or reads a name it
changes, or, when it calls something, into a branch or past a call: of a statement between, or of
the reading statement before the read (not of a value inlined there: the calls of independent lines
are in no order, as above). A copy whose loops are `while` loops, whose comprehensions are append
loops, whose single-use names are inlined, whose divisions are products with an inverse, whose
returns are indexed tuples and whose functions' bodies are moved into helpers they call is
normalised to the original's text; a rewrite outside the allowlist (`enumerate` for
`range(len(x))`, `torch.matmul` for `@`, `x = x + 1` for `x += 1`) is not.

Code that does not parse (an IPython magic, a syntax error) keeps every statement: its tokens as
written. Each character of the normalised text carries the place in the student's answer of the
token it came from (the written-back tree is parsed again, node for node the same; an inlined
expression carries its own place, the syntax a rewrite writes, the `for` of a `while`, none), so
the page marks the student's own lines, never the padding.

Every run of K characters of the normalised document is hashed (the same hash in every run) and
winnowing keeps the smallest hash of each window of WINDOW runs: any match of at least
K + WINDOW - 1 characters is found, shorter ones never count.

What the release and the model solution already say is not the students' own: every run found in a
notebook's released stubs or in its instructor answers (source/, markers removed), normalised with
and without the program rewrites, is taken out of every document first, so two students who both
wrote the model solution are not listed, and a copy is measured on what was written beyond it.

Two documents are compared by the runs they share; each answer cell gets the share of its own
fingerprinted text that the other student's document holds too. A copy padded with unused code
keeps the original's share at 1.0 (every run of the original is in the copy: the padding around
it is not, and the padding between its lines is normalised away), a renamed or reordered copy too,
where a share of the whole document would fall (tests/test_similarity.py measures each kind of
disguise, made mechanically, against a class of honest students). A pair of students is ranked
by their largest share over the cells with at least MIN_OWN characters of their own, then by how
much they share. `make similarity` writes the pairs at or above the threshold (default 0.8) to
`<grading home>/similarity.csv` and a page that shows each listed pair's matching regions side by
side, `<grading home>/similarity.html` (what the students wrote is text there, nothing else: it is
escaped, and the page's policy loads and runs nothing).
"""

from __future__ import annotations

import ast
import builtins
import functools
import html
import io
import json
import keyword
import re
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np

from ..course import RELEASE, ROOT, grader_home
from ..csvout import write_csv
from ..steps import find_step

K = 25  # MOSS's noise threshold: a match shorter than this many normalised characters never counts
GUARANTEE = 30  # a match at least this long is always found (winnowing's window: GUARANTEE - K + 1 runs)
WINDOW = GUARANTEE - K + 1
MIN_OWN = 40  # a cell with less of its own fingerprinted text (the model's and the release's taken out) is not compared
PAIR_COLUMNS = ["student_a", "student_b", "answers_alike", "max_similarity", "mean_similarity", "answers"]
BUILTINS = set(dir(builtins)) | set(keyword.kwlist)
SHOWN_PAIRS = 50  # pairs shown side by side in the page


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


# ---- normalising: the text compared, and where each of its characters came from ---------------


def _tokens(source: str, locate=None) -> tuple[str, list[tuple[int, int]]]:
    """`source` as Python tokens (names `N` but builtins, keywords and attributes; literals `L`;
    no comments or layout), and for each character of the result the span of `source` it stands
    for (`locate(start, end, string)`: the span a token at [start, end) stands for, when `source`
    is another text's). Raises what tokenize raises on code that does not tokenise."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    previous = ""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            continue
        if tok.type == tokenize.NAME:
            out = tok.string if tok.string in BUILTINS or previous == "." else "N"
        elif tok.type in (tokenize.NUMBER, tokenize.STRING) or tok.type == getattr(tokenize, "FSTRING_START", -1):
            out = "L"
        else:
            out = tok.string
        start = starts[tok.start[0] - 1] + tok.start[1]
        end = starts[tok.end[0] - 1] + tok.end[1]
        span = locate(start, end, tok.string) if locate else (start, end)
        pieces.append(out)
        spans.extend([span] * len(out))
        previous = tok.string
    return "".join(pieces), spans


def normalise_tokens(source: str) -> tuple[str, list[tuple[int, int]]]:
    """`source`'s tokens (`_tokens`), every statement of it; code that does not tokenise as text."""
    try:
        return _tokens(source)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return normalise_text(source)


def normalise_code(
    source: str, roots: frozenset[str] | None = None, rewrites: bool = True
) -> tuple[str, list[tuple[int, int]]]:
    """The answer's own statements as tokens (`normalise_ast`; `roots`: the names its stub defines),
    each character with the span of `source` it stands for. Code that does not parse (a cell with
    an IPython magic, a syntax error) keeps every statement: its tokens (`normalise_tokens`)."""
    return normalise_ast(source, roots, rewrites) or normalise_tokens(source)


def normalise_text(source: str) -> tuple[str, list[tuple[int, int]]]:
    """`source`'s words in lower case, one space between them, with each character's span."""
    pieces, spans = [], []
    for match in re.finditer(r"\w+", source):
        if pieces:
            pieces.append(" ")
            spans.append((spans[-1][1], match.start()))
        pieces.append(match[0].lower())
        spans.extend([(match.start(), match.end())] * len(match[0]))
    return "".join(pieces), spans


def normalise(
    kind: str, source: str, roots: frozenset[str] | None = None, rewrites: bool = True
) -> tuple[str, list[tuple[int, int]]]:
    return normalise_code(source, roots, rewrites) if kind == "code" else normalise_text(source)


def kgram_hashes(normalised: str) -> np.ndarray:
    """The hash of every run of K characters (a polynomial hash modulo 2**64: the same in every run
    of the program, unlike Python's own string hash)."""
    codes = np.frombuffer(normalised.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = len(codes) - K + 1
    if n <= 0:
        return np.array([], dtype=np.int64)
    hashes = np.zeros(n, dtype=np.uint64)
    base = np.uint64(1_000_003)
    with np.errstate(over="ignore"):
        for j in range(K):
            hashes = hashes * base + codes[j : j + n]
    return hashes.view(np.int64)


# ---- the answer's own statements: what an AST keeps --------------------------------------------

COMPOUND = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    getattr(ast, "TryStar", ast.Try),
)
ENDS_BLOCK = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def defined_names(source: str) -> frozenset[str]:
    """The names a piece of code binds at its top level (a stub's functions: the answer's own names)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return frozenset(names)


def _loads(*nodes: ast.AST | None) -> set[str]:
    return {
        n.id
        for node in nodes
        if node is not None
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }


def _base(expr: ast.expr) -> ast.expr:
    """The object an attribute or item of `expr` belongs to: `A` of `A[i][j]`, of `rows.append`."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr


def _targets(node: ast.expr) -> list[tuple[str, str | None]]:
    """("bind", name) for a name the target binds, ("update", name) for a name whose object it
    changes (`A[i] = ...`, `x.y = ...`), ("effect", None) for anything else it writes to."""
    if isinstance(node, ast.Name):
        return [("bind", node.id)]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [t for element in node.elts for t in _targets(element)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    base = _base(node)
    return [("update", base.id)] if isinstance(base, ast.Name) else [("effect", None)]


def _is_constant(node: ast.AST) -> bool:
    return all(
        isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.UnaryOp, ast.unaryop, ast.Load)) for n in ast.walk(node)
    )


@dataclass
class _Unit:
    """One statement of a scope: what it binds, changes and reads, and whether it acts by itself."""

    node: ast.stmt
    parent: "_Unit | None"
    binds: set[str] = field(default_factory=set)
    updates: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)
    acts: bool = False  # returns, raises, asserts, calls something, writes outside the scope
    live: bool = False


def _units(
    body: list[ast.stmt], parent: _Unit | None, out: list[_Unit], shadowed: frozenset[str] = frozenset()
) -> None:
    """`body`'s statements as units (`shadowed`: the names the code binds, so no builtin of theirs)."""
    for node in body:
        unit = _Unit(node, parent)
        out.append(unit)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _prune_scope(node, shadowed=shadowed)
            loads, inner = set(), set()  # names read in it, names of its own (bound in it, its parameters)
            for n in ast.walk(node):
                if isinstance(n, ast.Name):
                    (loads if isinstance(n.ctx, ast.Load) else inner).add(n.id)
                elif isinstance(n, ast.arg):
                    inner.add(n.arg)
                elif n is not node and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    inner.add(n.name)
            unit.binds.add(node.name)
            unit.reads = loads - inner | _loads(*node.decorator_list)
        elif isinstance(node, COMPOUND):
            if isinstance(node, (ast.For, ast.AsyncFor)):
                unit.reads = _loads(node.iter, node.target)
                unit.binds = {name for kind, name in _targets(node.target) if kind == "bind" and name}
            elif isinstance(node, (ast.While, ast.If)):
                unit.reads = _loads(node.test)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                unit.reads = _loads(*(i.context_expr for i in node.items), *(i.optional_vars for i in node.items))
                unit.binds = {
                    n for i in node.items if i.optional_vars for k, n in _targets(i.optional_vars) if k == "bind" and n
                }
            else:
                unit.reads = _loads(*(h.type for h in node.handlers))
                unit.binds = {h.name for h in node.handlers if h.name}
            for block in ("body", "orelse", "finalbody"):
                _units(getattr(node, block, []), unit, out, shadowed)
            for handler in getattr(node, "handlers", []):
                _units(handler.body, unit, out, shadowed)
        else:
            names: set[str] = set()
            calls = yields = False
            for n in ast.walk(node):  # one walk: what it reads, binds with :=, whether it calls or yields
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    names.add(n.id)
                elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                    unit.binds.add(n.target.id)
                elif isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
                    calls = yields = True
                elif isinstance(n, ast.Call):
                    calls = True
            unit.reads = names
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                unit.binds = {(a.asname or a.name).split(".")[0] for a in node.names}
                unit.acts = "*" in unit.binds
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for kind, name in (t for target in targets for t in _targets(target)):
                    if kind == "effect" or name is None:
                        unit.acts = True
                    else:
                        (unit.binds if kind == "bind" else unit.updates).add(name)
                unit.acts |= yields
            elif isinstance(node, ast.Expr):
                value = node.value
                if not calls:
                    pass  # a constant, a name, a pure expression
                elif _inert(value, shadowed, library=True):
                    pass  # `len(())`, `q.size()`, `torch.zeros(3)`: a value nobody reads, computed by what changes nothing
                elif (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id == "print"
                    and all(_is_constant(a) for a in [*value.args, *(k.value for k in value.keywords)])
                ):
                    pass  # print() of constants: says nothing of the answer
                elif (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Attribute)
                    and isinstance(_base(value.func), ast.Name)
                ):
                    unit.updates.add(_base(value.func).id)  # rows.append(x): changes rows
                else:
                    unit.acts = True
            elif isinstance(node, ast.Assert):
                # an assertion of what changes nothing (`assert q is not None`, `assert True`) adds nothing to
                # what the answer computes; one that always fails (`assert False`) raises, as `raise` does
                inert = _inert(node.test, shadowed) and (node.msg is None or _inert(node.msg, shadowed))
                unit.acts = not inert or _holds(node.test) is False
            elif not isinstance(node, ast.Pass):
                unit.acts = True  # return, raise, global, break, match...


def _keep(units: list[_Unit], exported: frozenset[str] | None) -> None:
    """Mark the units kept: those that act or bind an exported name (`exported` None: every name),
    then, to a fixed point, every unit that binds or changes a name a kept unit reads, and the
    statements around a kept one."""
    declared = {name for u in units if isinstance(u.node, (ast.Global, ast.Nonlocal)) for name in u.node.names}
    local = {name for u in units for name in u.binds} - declared
    for unit in units:
        outside = unit.updates - local  # changes an argument's or a global's object
        unit.live = (
            unit.acts
            or bool(outside)
            or bool(unit.binds & declared)
            or bool(unit.binds if exported is None else unit.binds & exported)
        )
        unit.updates &= local
    needed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for unit in units:
            if not unit.live and (unit.binds | unit.updates) & needed:
                unit.live = changed = True
            if unit.live:
                parent = unit.parent
                while parent is not None and not parent.live:
                    parent.live = changed = True
                    parent = parent.parent
                if not unit.reads <= needed:
                    needed |= unit.reads
                    changed = True


def _rebuilt(body: list[ast.stmt], live: dict[int, _Unit]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in body:
        unit = live.get(id(node))
        if unit is None or not unit.live:
            continue
        if isinstance(node, COMPOUND):
            for block in ("body", "orelse", "finalbody"):
                if hasattr(node, block):
                    setattr(node, block, _rebuilt(getattr(node, block), live))
            for handler in getattr(node, "handlers", []):
                handler.body = _rebuilt(handler.body, live) or [ast.Pass()]
            if not node.body:
                node.body = [ast.Pass()]
        out.append(node)
        if isinstance(node, ENDS_BLOCK):
            break  # what follows in the block never runs
    return out


# What a condition computed from constants alone may hold to be evaluated by the grader (an allowlist: every
# node small and quick, no `*`, `**` or `<<`, so `10 ** 10 ** 10` is never computed): `1 > 2`, `len([])`.
_FOLDED_CALLS = frozenset({"len", "abs", "bool", "int", "min", "max"})
_FOLDED_NODES = (
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.UnaryOp,
    ast.Compare,
    ast.BoolOp,
    ast.BinOp,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.Add,
    ast.Sub,
)


def _constant_value(node: ast.expr, shadowed: frozenset[str]) -> tuple[bool, object]:
    """(True, value) for an expression of small constants, `+`, `-`, comparisons, `and`/`or`/`not` and
    calls of _FOLDED_CALLS (not bound by the code), evaluated; (False, None) for anything else."""
    for n in ast.walk(node):
        if not isinstance(n, _FOLDED_NODES):
            return False, None
        if isinstance(n, ast.Constant) and not (
            n.value is None
            or isinstance(n.value, (bool, int, float))
            and abs(n.value) < 1e6
            or isinstance(n.value, str)
            and len(n.value) <= 100
        ):
            return False, None
        if isinstance(n, ast.Name) and (n.id not in _FOLDED_CALLS or n.id in shadowed):
            return False, None
        if isinstance(n, ast.Call) and (n.keywords or not isinstance(n.func, ast.Name)):
            return False, None
    if sum(1 for _ in ast.walk(node)) > 200:
        return False, None
    try:
        allowed = {name: getattr(builtins, name) for name in _FOLDED_CALLS}
        return True, eval(compile(ast.Expression(node), "<condition>", "eval"), {"__builtins__": allowed})  # noqa: S307
    except Exception:  # a condition that raises (`len(0)`) runs as the student wrote it
        return False, None


def _truth(test: ast.expr, shadowed: frozenset[str] = frozenset()) -> bool | None:
    """The truth of a condition that is a constant (`False`, `0`, `''`, `None`, `not True`) or computed
    from constants alone (`1 > 2`, `len([])`: _constant_value), else None."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, shadowed)
        return None if inner is None else not inner
    known, value = _constant_value(test, shadowed)
    try:
        return bool(value) if known else None
    except Exception:
        return None


def _never_iterates(loop: ast.stmt, shadowed: frozenset[str]) -> bool:
    """A `for` over an empty literal (`()`, `[]`, `''`) or a `range` of constants that is empty (`range(0)`)."""
    if not isinstance(loop, ast.For):
        return False
    it = loop.iter
    if isinstance(it, (ast.Tuple, ast.List, ast.Set)):
        return not it.elts
    if isinstance(it, ast.Constant):
        return it.value in ("", b"")
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and "range" not in shadowed
        and not it.keywords
        and 1 <= len(it.args) <= 3
    ):
        values = [_constant_value(a, shadowed) for a in it.args]
        if all(known and type(v) is int for known, v in values):
            try:
                return len(range(*(v for _, v in values))) == 0
            except (ValueError, TypeError, OverflowError):
                return False
    return False


# The exceptions a guard clause may raise and still be dropped (an allowlist of builtin ones).
GUARD_EXCEPTIONS = frozenset(
    {
        "Exception",
        "ValueError",
        "TypeError",
        "RuntimeError",
        "AssertionError",
        "IndexError",
        "KeyError",
        "LookupError",
        "ArithmeticError",
        "ZeroDivisionError",
        "NotImplementedError",
        "AttributeError",
    }
)


def _guard(node: ast.stmt, shadowed: frozenset[str]) -> bool:
    """A guard clause that only raises: `if <an inert condition>: raise <GUARD_EXCEPTIONS>(<constants>)`,
    no `else`, nothing else in the block, no `from`, the exception not bound by the code."""
    if not isinstance(node, ast.If) or node.orelse or len(node.body) != 1 or not isinstance(node.body[0], ast.Raise):
        return False
    raised = node.body[0]
    exception = raised.exc
    if isinstance(exception, ast.Call):
        if exception.keywords or not all(_is_constant(a) for a in exception.args):
            return False
        exception = exception.func
    return (
        raised.cause is None
        and isinstance(exception, ast.Name)
        and exception.id in GUARD_EXCEPTIONS
        and exception.id not in shadowed
        and _inert(node.test, shadowed)
    )


def _without_dead_branches(body: list[ast.stmt], shadowed: frozenset[str] = frozenset()) -> list[ast.stmt]:
    """`body` with every block that never runs taken out, in every scope: an `if` on a constant (or a
    condition computed from constants alone, `_truth`) is the branch it takes, a `while` on a false one
    its `else`, and so is a `for` over an empty literal or range of constants (`for _ in ():`); and
    without its guard clauses that only raise (`if q is None: raise ValueError('no q')`: _guard).
    `shadowed`: the names the code binds (a builtin it binds is not evaluated)."""
    out: list[ast.stmt] = []
    for node in body:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ExceptHandler):
                child.body = _without_dead_branches(child.body, shadowed) or [ast.Pass()]
        for block in ("body", "orelse", "finalbody"):
            inner = getattr(node, block, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(node, block, _without_dead_branches(inner, shadowed))
        truth = _truth(node.test, shadowed) if isinstance(node, (ast.If, ast.While)) else None
        if isinstance(node, ast.If) and truth is not None:
            out.extend(node.body if truth else node.orelse)
        elif truth is None and _guard(node, shadowed):
            continue
        elif isinstance(node, ast.While) and truth is False or _never_iterates(node, shadowed):
            out.extend(node.orelse)
        else:
            if not getattr(node, "body", True):
                node.body = [ast.Pass()]
            out.append(node)
    return out


def _plain_binds(node: ast.stmt) -> set[str] | None:
    """The names an assignment binds when it binds names only (`x = ...`, `a, b = ...`), else None."""
    if not isinstance(node, ast.Assign):
        return None
    names: set[str] = set()
    for target in node.targets:
        for kind, name in _targets(target):
            if kind != "bind" or name is None:
                return None
            names.add(name)
    return names


# The operations that give their operand back (an allowlist): operator -> (its identity constant, whether
# the constant may stand on the left). `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`, `x / 1`, the constant an
# int or a float.
IDENTITIES: dict[type, tuple[int, bool]] = {
    ast.Add: (0, True),
    ast.Sub: (0, False),
    ast.Mult: (1, True),
    ast.Div: (1, False),
}


def _identity_constant(node: ast.AST, op: ast.operator) -> bool:
    return (
        type(op) in IDENTITIES
        and isinstance(node, ast.Constant)
        and type(node.value) in (int, float)
        and node.value == IDENTITIES[type(op)][0]
    )


def _rebinds_to_itself(node: ast.stmt) -> bool:
    """A name rebound to its own value: `x = x`, or through an operation of IDENTITIES, `x = x * 1`,
    `x = 0 + x`, `x += 0`, `x *= 1` (where it does not raise, the name holds a value equal to the one it
    held: `True + 0` is 1, `2 / 1` is 2.0, both equal; not `x = x.clone()`, a new object an answer writes
    into in place and the caller's is not, nor `x = x // 1`, `x = +x`, `x = x ** 1`)."""
    if isinstance(node, ast.AugAssign):
        return isinstance(node.target, ast.Name) and _identity_constant(node.value, node.op)
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return False
    name, value = node.targets[0].id, node.value

    def itself(n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id == name

    if itself(value):
        return True
    return isinstance(value, ast.BinOp) and (
        itself(value.left)
        and _identity_constant(value.right, value.op)
        or itself(value.right)
        and _identity_constant(value.left, value.op)
        and IDENTITIES[type(value.op)][1]
    )


def _without_dead_stores(body: list[ast.stmt], shared: frozenset[str]) -> list[ast.stmt]:
    """`body` (one block) without the assignments whose every name is bound again, later in the same
    block, before anything reads it (`out = 0` before `out = torch.zeros(T, T)`), and without a name
    rebound to its own value (`x = x`, `x = x * 1`: _rebinds_to_itself). Names in `shared` (read by a
    function of the cell, or declared global or nonlocal) may be read between, by a call: their stores
    stay (not their rebindings to themselves: the value a call reads is the same)."""
    drop: set[int] = set()
    for i, node in enumerate(body):
        if _rebinds_to_itself(node):
            drop.add(i)
            continue
        names = _plain_binds(node)
        if not names or names & shared:
            continue
        waiting = set(names)
        for later in body[i + 1 :]:
            later_binds = _plain_binds(later)
            reads = (
                _loads(later.value)
                if later_binds is not None
                else {n.id for n in ast.walk(later) if isinstance(n, ast.Name)}
            )  # any use, or a write to its object
            if waiting & reads:
                break
            waiting -= later_binds or set()
            if not waiting or isinstance(later, ENDS_BLOCK):
                break
        if not waiting:
            drop.add(i)
    kept = [node for i, node in enumerate(body) if i not in drop]
    return _without_dead_stores(kept, shared) if drop else kept  # a store read only by one dropped


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _own_blocks(scope: ast.AST):
    """(node, block name) of every block of statements of `scope` itself, not of a function or class
    defined in it."""
    todo = [scope]
    while todo:
        node = todo.pop()
        for block in ("body", "orelse", "finalbody"):
            inner = getattr(node, block, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield node, block
                todo.extend(n for n in inner if not isinstance(n, SCOPES))
        todo.extend(h for h in getattr(node, "handlers", []))


def _shared_names(scope: ast.AST) -> frozenset[str]:
    """Names of `scope` a call may read at any time: those a function or lambda defined in it reads,
    and those it declares global or nonlocal."""
    out: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif node is not scope and isinstance(node, (*SCOPES, ast.Lambda)):
            out |= _loads(*ast.iter_child_nodes(node))
    return frozenset(out)


def _each_block(tree: ast.AST, change, shared_names: bool = True) -> None:
    """Replace every block of statements in `tree` by `change(block, its scope's shared names)` (an
    empty set if not `shared_names`)."""
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, SCOPES))]:
        shared = _shared_names(scope) if shared_names else frozenset()
        for node, block in list(_own_blocks(scope)):
            kept = change(getattr(node, block), shared)
            setattr(node, block, kept or ([] if isinstance(node, ast.Module) or block != "body" else [ast.Pass()]))


REORDERED = (ast.Assign, ast.AnnAssign, ast.AugAssign)


def _writes_and_reads(node: ast.stmt) -> tuple[set[str], set[str]]:
    writes = {
        name
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for kind, name in _targets(target)
        if name is not None
    }
    if isinstance(node, ast.AugAssign):
        writes |= _loads(node.target) | {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return writes, reads


def _canonical_order(body: list[ast.stmt]) -> list[ast.stmt]:
    """`body` (one block) with each run of neighbouring assignments in one order whatever order they
    were written in: a statement goes after every earlier one it depends on (it reads or writes what
    that one writes, or writes what it reads), and among those free to go next, the one whose tokens
    (names written `N`) come first goes first. Two copies of an answer that swap independent lines
    (`q = ...` and `k = ...`) are one text."""
    out: list[ast.stmt] = []
    run: list[ast.stmt] = []

    def flush() -> None:
        facts = [_writes_and_reads(node) for node in run]
        keys = [_tokens(ast.unparse(node))[0] for node in run]
        after = {
            j: {i for i in range(j) if facts[i][0] & (facts[j][0] | facts[j][1]) or facts[j][0] & facts[i][1]}
            for j in range(len(run))
        }
        placed: list[int] = []
        while len(placed) < len(run):
            free = [j for j in range(len(run)) if j not in placed and after[j] <= set(placed)]
            placed.append(min(free, key=lambda j: (keys[j], j)))
        out.extend(run[j] for j in placed)
        run.clear()

    for node in body:
        if isinstance(node, REORDERED) and not any(
            isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(node)
        ):
            run.append(node)
        else:
            flush()
            out.append(node)
    flush()
    return out


def _prune_scope(node: ast.AST, roots: frozenset[str] | None = None, shadowed: frozenset[str] | None = None) -> None:
    """Keep, of a module's, function's or class's statements, those the answer needs (see _keep):
    a function keeps what its result and effects depend on; a class every name it defines; a
    module the definitions of `roots` (the stub's names) if it has any, else every name it binds.
    `shadowed`: the names the whole code binds (default: those `node` binds)."""
    units: list[_Unit] = []
    body = node.body
    _units(body, None, units, _bound_anywhere(node) if shadowed is None else shadowed)
    exported: frozenset[str] | None = frozenset()  # a function's names are its own
    if isinstance(node, ast.ClassDef):
        exported = None
    elif isinstance(node, ast.Module):
        bound = {name for u in units for name in u.binds}
        exported = roots if roots and roots & bound else None
    _keep(units, exported)
    node.body = _rebuilt(body, {id(u.node): u for u in units}) or (
        [ast.Pass()] if not isinstance(node, ast.Module) else []
    )


class _NoFstrings(ast.NodeTransformer):
    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return ast.copy_location(ast.Constant(""), node)


def _char_index(text: str):
    """(line, UTF-8 column) as ast gives them -> index of the character in `text`."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def at(lineno: int, col: int) -> int:
        line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        return starts[min(lineno - 1, len(lines))] + len(line.encode()[:col].decode(errors="ignore"))

    return at


def _span(node: ast.AST, at) -> tuple[int, int] | None:
    if getattr(node, "lineno", None) is None or getattr(node, "end_lineno", None) is None:
        return None
    return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)


# ---- rewrites written one way: each form an allowlisted rewrite gives, and its original, one text ---

PURE_BUILTINS = frozenset(
    {"len", "abs", "min", "max", "int", "float", "str", "bool", "tuple", "list", "range", "round"}
)
NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bound_anywhere(tree: ast.AST) -> frozenset[str]:
    """Every name the code binds somewhere (a builtin it binds is not the builtin any more), but a
    module's usual name bound by importing that module (`import torch`, `import numpy as np`: LIBRARY_MODULES)."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                name = (a.asname or a.name).split(".")[0]
                module = a.name if a.asname else a.name.split(".")[0]
                if not (isinstance(n, ast.Import) and LIBRARY_MODULES.get(name) == module):
                    out.add(name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return frozenset(out)


def _is_builtin_call(node: ast.AST, names: frozenset[str] | set[str], shadowed: frozenset[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in names
        and node.func.id not in shadowed
    )


# The nodes of an expression that only computes: constants, names, literals of them and operators on them.
_PURE_NODES = (
    ast.Constant,
    ast.Name,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


def _pure(node: ast.AST, shadowed: frozenset[str]) -> bool:
    """An expression that computes a value and nothing else: constants, names, literals of them,
    operators on them and PURE_BUILTINS calls (`len([])`), nothing that reads an attribute or item."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            if not _is_builtin_call(n, PURE_BUILTINS, shadowed) or n.keywords:
                return False
        elif not isinstance(n, _PURE_NODES):
            return False
    return True


# What a statement whose value nobody reads may call and still change nothing (an allowlist: any other
# call, a method not named here, a keyword argument of a builtin, a walrus or a comprehension keeps it).
VALUE_BUILTINS = PURE_BUILTINS | frozenset(
    {
        "isinstance",
        "issubclass",
        "hash",
        "id",
        "type",
        "repr",
        "sorted",
        "sum",
        "any",
        "all",
        "divmod",
        "pow",
        "callable",
        "ord",
        "chr",
        "bin",
        "hex",
        "oct",
        "set",
        "frozenset",
        "dict",
        "complex",
    }
)
VALUE_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "clone",
        "detach",
        "contiguous",
        "float",
        "double",
        "half",
        "long",
        "int",
        "bool",
        "item",
        "tolist",
        "cpu",
        "numpy",
        "t",
        "transpose",
        "permute",
        "view",
        "reshape",
        "flatten",
        "squeeze",
        "unsqueeze",
        "expand",
        "sum",
        "mean",
        "std",
        "var",
        "max",
        "min",
        "abs",
        "exp",
        "log",
        "sqrt",
        "softmax",
        "argmax",
        "argmin",
        "norm",
        "isfinite",
        "isnan",
        "allclose",
        "equal",
        "keys",
        "values",
        "items",
    }
)
# Library functions that only make a value from their arguments (a tensor, a number) and change nothing,
# not even a random generator's state, called through their module's usual name (LIBRARY_MODULES, not bound
# by the code to anything else: `import numpy as np` keeps it): an allowlist, so `torch.randn`,
# `torch.manual_seed`, `np.random.seed` and every function not named here are calls that act.
LIBRARY_MODULES = {"torch": "torch", "math": "math", "np": "numpy", "numpy": "numpy"}
PURE_LIBRARY = {
    "torch": frozenset(
        {
            "zeros",
            "ones",
            "empty",
            "full",
            "zeros_like",
            "ones_like",
            "empty_like",
            "full_like",
            "arange",
            "linspace",
            "eye",
            "tensor",
            "stack",
            "cat",
            "tril",
            "triu",
            "where",
            "matmul",
            "bmm",
            "einsum",
            "outer",
            "dot",
            "exp",
            "log",
            "log10",
            "sqrt",
            "rsqrt",
            "abs",
            "sin",
            "cos",
            "tanh",
            "sigmoid",
            "softmax",
            "log_softmax",
            "logsumexp",
            "cumsum",
            "sum",
            "mean",
            "std",
            "var",
            "max",
            "min",
            "maximum",
            "minimum",
            "clamp",
            "argmax",
            "argmin",
            "allclose",
            "isclose",
            "equal",
            "isfinite",
            "isnan",
            "isinf",
            "transpose",
            "permute",
            "reshape",
            "flatten",
            "squeeze",
            "unsqueeze",
            "broadcast_to",
            "flip",
            "diag",
            "masked_fill",
            "numel",
            "is_tensor",
        }
    ),
    "math": frozenset(
        {
            "sqrt",
            "exp",
            "log",
            "log2",
            "log10",
            "pow",
            "sin",
            "cos",
            "tan",
            "tanh",
            "atan2",
            "hypot",
            "floor",
            "ceil",
            "trunc",
            "fabs",
            "isclose",
            "isfinite",
            "isnan",
            "isinf",
            "fsum",
            "gcd",
        }
    ),
    "numpy": frozenset(
        {
            "zeros",
            "ones",
            "empty",
            "full",
            "zeros_like",
            "ones_like",
            "arange",
            "linspace",
            "eye",
            "array",
            "asarray",
            "stack",
            "concatenate",
            "tril",
            "triu",
            "where",
            "matmul",
            "dot",
            "exp",
            "log",
            "log10",
            "sqrt",
            "abs",
            "sum",
            "mean",
            "std",
            "var",
            "max",
            "min",
            "argmax",
            "argmin",
            "allclose",
            "isclose",
            "isfinite",
            "isnan",
            "transpose",
            "reshape",
        }
    ),
}
# The keyword arguments a VALUE_METHODS or PURE_LIBRARY call may take (an allowlist: not `out=`, which
# writes into a tensor, nor `generator=`).
VALUE_KEYWORDS = frozenset(
    {
        "dtype",
        "device",
        "dim",
        "keepdim",
        "axis",
        "keepdims",
        "diagonal",
        "requires_grad",
        "atol",
        "rtol",
        "equal_nan",
        "start_dim",
        "end_dim",
    }
)


def _library_call(node: ast.Call, shadowed: frozenset[str]) -> bool:
    """A call of a PURE_LIBRARY function through its module's usual name (`torch.zeros`, `math.sqrt`)."""
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in LIBRARY_MODULES
        and func.value.id not in shadowed
        and func.attr in PURE_LIBRARY[LIBRARY_MODULES[func.value.id]]
    )


# ... and those of one that reads too: attributes, items and slices, a conditional expression.
_INERT_NODES = _PURE_NODES + (ast.IfExp, ast.Attribute, ast.Subscript, ast.Slice, ast.keyword)


def _inert(node: ast.AST, shadowed: frozenset[str], library: bool = False) -> bool:
    """An expression that reads and computes and changes nothing: constants, names, attributes, items,
    literals and operators of them, calls of VALUE_BUILTINS (positional arguments only), of
    VALUE_METHODS (`q.size()`, `k.sum(dim=-1)`) and, with `library` (a value nobody reads: not one an
    assertion or a guard checks), of PURE_LIBRARY (`torch.zeros(3)`, `math.sqrt(2)`), these two with
    VALUE_KEYWORDS only; nothing that binds (a walrus), nothing else called."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            keywords = all(k.arg in VALUE_KEYWORDS for k in n.keywords)
            builtin = _is_builtin_call(n, VALUE_BUILTINS, shadowed) and not n.keywords
            method = isinstance(n.func, ast.Attribute) and n.func.attr in VALUE_METHODS and keywords
            library_call = library and _library_call(n, shadowed) and keywords
            if not (builtin or method or library_call):
                return False
        elif not isinstance(n, _INERT_NODES):
            return False
    return True


def _holds(test: ast.expr) -> bool | None:
    """An assertion's test as a constant's truth (`assert True`, `assert 0`), None if it is not one."""
    try:
        return bool(ast.literal_eval(test))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 1


class _Folded(ast.NodeTransformer):
    """`(x, len([]))[0]` is `x` (a constant index of a tuple or list literal whose other elements
    are pure); `x * (1 / y)` and `(1 / y) * x` are `x / y`."""

    def __init__(self, shadowed: frozenset[str]):
        self.shadowed = shadowed

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        index = node.slice
        if (
            isinstance(index, ast.UnaryOp)
            and isinstance(index.op, ast.USub)
            and isinstance(index.operand, ast.Constant)
        ):
            value = index.operand.value
            value = -value if type(value) is int else None
        else:
            value = index.value if isinstance(index, ast.Constant) and type(index.value) is int else None
        elts = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else None
        if (
            value is None
            or elts is None
            or not isinstance(node.ctx, ast.Load)
            or any(isinstance(e, ast.Starred) for e in elts)
            or not -len(elts) <= value < len(elts)
        ):
            return node
        chosen = elts[value]
        if all(_pure(e, self.shadowed) for e in elts if e is not chosen):
            return chosen
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Mult):
            for this, other in ((node.right, node.left), (node.left, node.right)):
                if isinstance(this, ast.BinOp) and isinstance(this.op, ast.Div) and _is_one(this.left):
                    return ast.copy_location(ast.BinOp(other, ast.Div(), this.right), node)
        return node


def _made(node: ast.AST, like: ast.AST) -> ast.AST:
    """A node a rewrite wrote, at the place of `like`: the page marks none of its own tokens."""
    node.made = True
    return ast.copy_location(node, like)


def _calls(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)) for n in ast.walk(node))


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _rebound(nodes, names: set[str]) -> bool:
    """Whether any of `nodes` binds or deletes one of `names`."""
    return any(
        isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in names
        for node in nodes
        for n in ast.walk(node)
    )


def _written(nodes, names: set[str]) -> bool:
    """Whether any of `nodes` binds, deletes or changes the object of one of `names`: a store, an item
    or attribute store on it, an augmented assignment, a method of it that changes its object
    (MUTATORS: `rows.append`, `x.add_`). By names, as the rest: what a call does inside is not
    looked into (`f(rows)`, `x.sum()` change nothing here)."""
    for node in nodes:
        local = {id(t) for c in ast.walk(node) if isinstance(c, ast.comprehension) for t in ast.walk(c.target)}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in names and id(n) not in local:
                return True
            if isinstance(n, (ast.Attribute, ast.Subscript)) and not isinstance(n.ctx, ast.Load):
                base = _base(n)
                if isinstance(base, ast.Name) and base.id in names:
                    return True
            if isinstance(n, ast.AugAssign):
                base = _base(n.target)
                if isinstance(base, ast.Name) and base.id in names:
                    return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _mutates(n.func.attr):
                base = _base(n.func)
                if isinstance(base, ast.Name) and base.id in names:
                    return True
    return False


# methods that change their object: a list's, a dict's, a set's, and torch's in-place ones (`add_`)
MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault", "popitem"}
    | {"sort", "reverse", "put", "fill", "resize"}
)


def _mutates(method: str) -> bool:
    return method in MUTATORS or (method.endswith("_") and not method.startswith("_"))


def _own_nodes(scope: ast.AST):
    """The nodes of `scope`'s own code: not inside a function, lambda or class defined in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, NESTED_SCOPES):
            todo.extend(ast.iter_child_nodes(node))


def _loads_of(scope: ast.AST, name: str) -> list[ast.Name]:
    return [n for n in _own_nodes(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]


def _rebinds(node: ast.stmt, name: str) -> bool:
    """A statement that binds `name` again without reading it first (`i = 0`, `for i in ...`)."""
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets) and name not in _names_in(node.value)
    if isinstance(node, ast.For):
        return isinstance(node.target, ast.Name) and node.target.id == name and name not in _names_in(node.iter)
    return False


def _init_before(block: list[ast.stmt], j: int, name: str) -> int | None:
    """The index of the statement `name = v` that the loop block[j] starts from: the last statement
    before it that names `name`, when it binds only that name (not reading it) and the statements
    between neither name it nor change a name `v` reads (so it may stand just before the loop)."""
    for k in range(j - 1, -1, -1):
        node = block[k]
        if name not in _names_in(node):
            continue
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name
            and name not in _names_in(node.value)
            and not _written(block[k + 1 : j], _names_in(node.value))
        ):
            return k
        return None
    return None


def _value_unread_after(scope: ast.AST, block: list[ast.stmt], start: int, j: int, name: str) -> bool:
    """Whether nothing reads `name` as the loop block[j] leaves it (block[start] its initialisation):
    every read of it in the scope is in the loop, or in the same block before the initialisation, or
    after a statement that binds it again."""
    allowed = {id(n) for n in ast.walk(block[j])}
    for node in block[:start]:
        allowed |= {id(n) for n in ast.walk(node)}
    for i in range(j + 1, len(block)):
        if _rebinds(block[i], name):
            for node in block[i:]:
                allowed |= {id(n) for n in ast.walk(node)}
            break
    return all(id(n) in allowed for n in _loads_of(scope, name))


def _continues(body: list[ast.stmt]) -> bool:
    """Whether a `continue` of this loop (not of a loop inside it) is in `body`."""
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Continue):
            return True
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While, *NESTED_SCOPES)):
            todo.extend(ast.iter_child_nodes(node))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            todo.extend(node.orelse)
    return False


def _steady(bound: ast.expr, body: list[ast.stmt], shadowed: frozenset[str]) -> bool:
    """Whether a loop bound gives the same value on every test: it calls nothing but PURE_BUILTINS
    and methods of names, and the body binds none of its names again, nor, if it reads an attribute,
    an item or calls something, changes their objects (`_written`)."""
    for n in ast.walk(bound):
        if isinstance(n, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(n, ast.Call) and not (
            _is_builtin_call(n, PURE_BUILTINS, shadowed)
            or (isinstance(n.func, ast.Attribute) and isinstance(_base(n.func), ast.Name))
        ):
            return False
    names = _names_in(bound)
    state = any(isinstance(n, (ast.Attribute, ast.Subscript, ast.Call)) for n in ast.walk(bound))
    return not (_written(body, names) if state else _rebound(body, names))


def _step_at(body: list[ast.stmt], name: str) -> int | None:
    """The index of the last `name += s` (a positive constant) of a loop's body, when the statements
    after it do not name `name` (so it may stand last)."""
    for at in range(len(body) - 1, -1, -1):
        step = body[at]
        if (
            isinstance(step, ast.AugAssign)
            and isinstance(step.op, ast.Add)
            and isinstance(step.target, ast.Name)
            and step.target.id == name
            and isinstance(step.value, ast.Constant)
            and type(step.value.value) is int
            and step.value.value > 0
        ):
            return at
        if name in _names_in(step):
            return None
    return None


def _as_for(scope: ast.AST, block: list[ast.stmt], j: int, shadowed: frozenset[str]) -> tuple[int, ast.For] | None:
    """(the index of its initialisation, the `for`) when the loop block[j] and its initialisation
    (`_init_before`) are one `for`, else None: `i = a; while i < n: BODY; i += s` (`i += s` last or
    followed only by statements that do not name `i`; BODY never binds `i` nor changes `n`, has no
    `continue`, and nothing reads `i` after the loop) is `for i in range(a, n,
    s)`; `it = iter(x); while True: try: v = next(it) except StopIteration: break; BODY` (`it` read
    nowhere else) is `for v in x: BODY`."""
    loop = block[j]
    if not isinstance(loop, ast.While) or loop.orelse:
        return None
    test = loop.test
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name):
        name = test.left.id
    elif (
        loop.body
        and isinstance(loop.body[0], ast.Try)
        and loop.body[0].body
        and isinstance(fetched := getattr(loop.body[0].body[0], "value", None), ast.Call)
        and fetched.args
        and isinstance(fetched.args[0], ast.Name)
    ):
        name = fetched.args[0].id
    else:
        return None
    i = _init_before(block, j, name)
    if i is None:
        return None
    init = block[i]
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Lt)
        and (at := _step_at(loop.body, name)) is not None
        and "range" not in shadowed
    ):
        step = loop.body[at]
        body = loop.body[:at] + loop.body[at + 1 :]
        bound = test.comparators[0]
        if (
            len(body) == 0
            or _rebound(body, {name})
            or _continues(body)
            or name in _names_in(bound)
            or name in _names_in(init.value)
            or not _steady(bound, body, shadowed)
            or not _value_unread_after(scope, block, i, j, name)
        ):
            return None
        start = init.value
        args = (
            [bound]
            if isinstance(start, ast.Constant) and start.value == 0 and type(start.value) is int
            else [start, bound]
        )
        if step.value.value != 1:
            args = [start, bound, step.value]
        iterate = _made(ast.Call(_made(ast.Name("range", ast.Load()), test), args, []), test)
        target = ast.copy_location(ast.Name(name, ast.Store()), init.targets[0])
        return i, _made(ast.For(target, iterate, body, [], None), loop)
    if (
        _truth(test, shadowed) is True
        and _is_builtin_call(init.value, {"iter"}, shadowed)
        and len(init.value.args) == 1
        and not init.value.keywords
        and isinstance(attempt := loop.body[0], ast.Try)
        and not attempt.orelse
        and not attempt.finalbody
        and len(attempt.body) == 1
        and isinstance(fetch := attempt.body[0], ast.Assign)
        and len(fetch.targets) == 1
        and _is_builtin_call(fetch.value, {"next"}, shadowed)
        and len(fetch.value.args) == 1
        and not fetch.value.keywords
        and isinstance(fetch.value.args[0], ast.Name)
        and fetch.value.args[0].id == name
        and len(attempt.handlers) == 1
        and isinstance(attempt.handlers[0].type, ast.Name)
        and attempt.handlers[0].type.id == "StopIteration"
        and "StopIteration" not in shadowed
        and attempt.handlers[0].name is None
        and len(attempt.handlers[0].body) == 1
        and isinstance(attempt.handlers[0].body[0], ast.Break)
        and len(_loads_of(scope, name)) == 1
        and sum(isinstance(n, ast.Name) and n.id == name for n in _own_nodes(scope)) == 2
    ):
        return i, _made(ast.For(fetch.targets[0], init.value.args[0], loop.body[1:] or [ast.Pass()], [], None), loop)
    return None


def _each_own_block(tree: ast.AST, change) -> None:
    """`change(scope, block)` for every block of statements of `tree`, innermost first, with the
    function, class or module whose code it is; `change` edits the block in place."""

    def visit(scope: ast.AST, block: list[ast.stmt]) -> None:
        for node in list(block):
            inner = node if isinstance(node, SCOPES) else scope
            for name in ("body", "orelse", "finalbody"):
                sub = getattr(node, name, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    visit(inner, sub)
            for handler in getattr(node, "handlers", []):
                visit(scope, handler.body)
        change(scope, block)

    visit(tree, tree.body)


def _for_loops(tree: ast.AST, shadowed: frozenset[str]) -> None:
    """Every counter or iterator `while` of `tree` written as its `for` (`_as_for`), innermost first;
    `range(0, n)` as `range(n)`."""

    def change(scope: ast.AST, block: list[ast.stmt]) -> None:
        j = 0
        while j < len(block):
            found = _as_for(scope, block, j, shadowed)
            if found is not None:
                i, block[j] = found
                del block[i]
                j -= 1
            j += 1

    _each_own_block(tree, change)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For)
            and _is_builtin_call(node.iter, {"range"}, shadowed)
            and len(node.iter.args) == 2
            and not node.iter.keywords
            and isinstance(node.iter.args[0], ast.Constant)
            and type(node.iter.args[0].value) is int
            and node.iter.args[0].value == 0
        ):
            node.iter.args = node.iter.args[1:]


# -- an append loop is the list comprehension it builds -----------------------------------------


def _appends_to(loop: ast.stmt, name: str):
    """(generators, element) when `loop` is `for`s and `if`s, each holding just the next, around one
    `name.append(element)`; else None."""
    generators: list[ast.comprehension] = []
    node = loop
    while True:
        if isinstance(node, ast.For) and not node.orelse and len(node.body) == 1:
            generators.append(ast.comprehension(node.target, node.iter, [], 0))
            node = node.body[0]
        elif isinstance(node, ast.If) and generators and not node.orelse and len(node.body) == 1:
            generators[-1].ifs.append(node.test)
            node = node.body[0]
        else:
            break
    call = node.value if isinstance(node, ast.Expr) else None
    if (
        not generators
        or not isinstance(call, ast.Call)
        or not isinstance(call.func, ast.Attribute)
        or call.func.attr != "append"
        or not isinstance(call.func.value, ast.Name)
        or call.func.value.id != name
        or len(call.args) != 1
        or call.keywords
        or isinstance(call.args[0], ast.Starred)
    ):
        return None
    return generators, call.args[0]


def _appended(loop: ast.stmt) -> str | None:
    """The name `rows` of the `rows.append(...)` a `for` holds, through `for`s and `if`s that hold
    just one statement."""
    node = loop
    while isinstance(node, (ast.For, ast.If)) and len(node.body) == 1:
        node = node.body[0]
    call = node.value if isinstance(node, ast.Expr) and isinstance(loop, ast.For) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        return call.func.value.id
    return None


def _targets_unread_outside(scope: ast.AST, block: list[ast.stmt], start: int, loop: ast.stmt, names: set[str]) -> bool:
    """Whether the loop's variables are read nowhere else: every read of them in the scope is in the
    loop, in the same block before block[start], or in another `for` or comprehension that binds
    them (a comprehension's variables are its own; a loop's stay after it)."""
    allowed = {id(n) for n in ast.walk(loop)}
    for node in block[:start]:
        allowed |= {id(n) for n in ast.walk(node)}
    for node in _own_nodes(scope):
        if isinstance(node, ast.For) and _names_in(node.target) & names:
            allowed |= {id(n) for n in ast.walk(node)}
        elif isinstance(node, COMPREHENSIONS):
            allowed |= {id(n) for n in ast.walk(node)}
    return all(
        id(n) in allowed
        for n in _own_nodes(scope)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
    )


def _comprehensions(tree: ast.AST) -> None:
    """`rows = []` followed by `for x in xs: (if c:) rows.append(e)` (any nesting of `for`s and `if`s,
    each holding just the next) is `rows = [e for x in xs (if c)]`, when the loop reads `rows` only to
    append to it and nothing outside the loop reads its variables; `rows = []` may stand earlier, if
    nothing between names `rows` (`_init_before`)."""

    def change(scope: ast.AST, block: list[ast.stmt]) -> None:
        j = 0
        while j < len(block):
            loop = block[j]
            name = _appended(loop)
            i = None if name is None else _init_before(block, j, name)
            init = block[i] if i is not None else None
            if isinstance(init, ast.Assign) and isinstance(init.value, ast.List) and not init.value.elts:
                found = _appends_to(loop, name)
                if found is not None:
                    generators, element = found
                    variables = {n for g in generators for n in _names_in(g.target)}
                    parts = [element, *(p for g in generators for p in (g.target, g.iter, *g.ifs))]
                    if (
                        not any(name in _names_in(p) for p in parts)
                        and not any(
                            isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
                            for p in parts
                            for n in ast.walk(p)
                        )
                        and _targets_unread_outside(scope, block, i, loop, variables)
                    ):
                        init.value = _made(ast.ListComp(element, generators), loop)
                        block[j] = init
                        del block[i]
                        j -= 1
            j += 1

    _each_own_block(tree, change)


# -- a name assigned once and read once is its expression, where it is read ----------------------


def _parents(scope: ast.AST) -> dict[int, tuple[ast.AST, str]]:
    out = {}
    for node in [scope, *_own_nodes(scope)]:
        if isinstance(node, NESTED_SCOPES) and node is not scope:
            continue
        for name, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    out[id(child)] = (node, name)
    return out


def _evaluated_before(statement: ast.stmt, target: ast.AST) -> list[ast.AST]:
    """The nodes of `statement` evaluated, whole, before `target` is (left to right, an assignment's
    value before its targets, a conditional expression's test first); not `target`'s ancestors."""
    done: list[ast.AST] = []

    def order(node: ast.AST) -> list[ast.AST]:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            rest = node.targets if isinstance(node, ast.Assign) else [node.target]
            return [node.value, *rest] if node.value is not None else rest
        if isinstance(node, ast.IfExp):
            return [node.test, node.body, node.orelse]
        return list(ast.iter_child_nodes(node))

    def visit(node: ast.AST) -> bool:
        if node is target:
            return True
        for child in order(node):
            if visit(child):
                return True
        done.append(node)
        return False

    visit(statement)
    return done


CONDITIONAL = {
    (ast.If, "body"),
    (ast.If, "orelse"),
    (ast.IfExp, "body"),
    (ast.IfExp, "orelse"),
    (ast.While, "test"),
    (ast.Try, "handlers"),
    (ast.Try, "orelse"),
    (ast.Try, "finalbody"),
    (ast.ExceptHandler, "body"),
}
REPEATED = {(ast.For, "body"), (ast.For, "orelse"), (ast.AsyncFor, "body"), (ast.While, "body"), (ast.While, "orelse")}


def _inline_once(
    scope: ast.AST, block: list[ast.stmt], i: int, counts, parents, keep: frozenset[str], moved: set[int], occurs
) -> bool:
    """Put the value of `block[i]`, `x = e`, in place of the one read of `x`, if it may move there:
    `x` is read once after it in the scope's own body and not bound again there (or, in a nested
    block, bound once and read once in the scope), by a later statement of the block, not in a loop's
    body, a comprehension or a function; nothing evaluated between the two (the statements between,
    what the reading statement evaluates before `x`) changes a name `e` reads (a store, an item or
    attribute store, a method of it that changes its object) nor reads a name `e` changes; if `e`
    calls something, no statement between calls anything, nor does the reading statement before the
    read (a call of a value inlined there does not count: the calls of independent lines are in no
    order, as in `_canonical_order`), and the read is not in a branch."""
    node = block[i]
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return False
    name = node.targets[0].id
    value = node.value
    stores, loads = counts
    if name in keep or any(
        isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(value)
    ):
        return False
    # in the scope's own body, the binding reaches the rest of the body only: one read there, no other
    # binding, is its only read; in a nested block (a loop's, a branch's), the name is bound and read once
    later_uses = sum(counter[name] for counter in occurs[i + 1 :])
    rest = (
        [
            n
            for s in block[i + 1 :]
            if occurs[block.index(s)][name]
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and n.id == name
        ]
        if later_uses == 1
        else []
    )
    if block is getattr(scope, "body", None) and len(rest) == 1 and isinstance(rest[0].ctx, ast.Load):
        use = rest[0]
    elif stores.get(name) == 1 and len(loads.get(name, [])) == 1:
        use = loads[name][0]
    else:
        return False
    calls = _calls(value)
    later = {id(b) for b in block[i + 1 :]}
    child = use  # from the read up to the statement of this block that holds it
    while id(child) not in later:
        if id(child) not in parents:
            return False
        parent, field_name = parents[id(child)]
        if isinstance(parent, ast.comprehension) and field_name == "iter":
            comprehension = parents[id(parent)][0]
            if comprehension.generators[0] is parent:  # evaluated once, where the comprehension is
                child = comprehension
                continue
        if (
            parent is scope
            or isinstance(parent, (ast.comprehension, *COMPREHENSIONS, *NESTED_SCOPES))
            or (type(parent), field_name) in REPEATED
            or (isinstance(parent, ast.While) and field_name == "test")
        ):
            return False
        if calls and (
            (type(parent), field_name) in CONDITIONAL
            or isinstance(parent, (ast.Try, ast.Match))
            or (isinstance(parent, ast.BoolOp) and parent.values[0] is not child)
        ):
            return False
        child = parent
    holder = child
    j = next(k for k in range(i + 1, len(block)) if block[k] is holder)
    before = _evaluated_before(holder, use)
    between = [*block[i + 1 : j], *before]
    reads = _names_in(value) - {
        n.id
        for c in ast.walk(value)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name)
    }
    if _written(between, reads):
        return False
    changed = {name for name in reads if _written([value], {name})}  # `rows.pop()`, `f(rows)`
    if changed and any(_names_in(n) & changed for n in between):
        return False
    # no call moved past one of the statements between, or one the reading statement makes itself
    # before the read (not one a value inlined there makes: independent lines' calls are in no order)
    own_before = [n for n in before if id(n) not in moved]
    if (
        calls
        and any(_calls(n) for n in block[i + 1 : j])
        or calls
        and any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)) for n in own_before)
    ):
        return False
    parent, field_name = parents[id(use)]
    current = getattr(parent, field_name)
    if isinstance(current, list):
        current[current.index(use)] = value
    else:
        setattr(parent, field_name, value)
    moved.update(id(n) for n in ast.walk(value))
    # what the scope's counts, parents and the block's names become
    stores[name] -= 1
    loads[name] = [n for n in loads.get(name, []) if n is not use]
    parents[id(value)] = (parent, field_name)
    occurs[j].subtract({name: 1})
    occurs[j].update(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
    del block[i], occurs[i]
    return True


def _counts(scope: ast.AST):
    """({name: how many times the scope's own code binds it}, {name: the reads of it})."""
    stores: dict[str, int] = {}
    loads: dict[str, list[ast.Name]] = {}
    for n in _own_nodes(scope):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load):
                loads.setdefault(n.id, []).append(n)
            else:
                stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, ast.arg):
            stores[n.arg] = stores.get(n.arg, 0) + 2
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores[n.name] = stores.get(n.name, 0) + 2
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                key = (a.asname or a.name).split(".")[0]
                stores[key] = stores.get(key, 0) + 2
        elif isinstance(n, ast.ExceptHandler) and n.name:
            stores[n.name] = stores.get(n.name, 0) + 2
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        for a in (
            *scope.args.posonlyargs,
            *scope.args.args,
            *scope.args.kwonlyargs,
            scope.args.vararg,
            scope.args.kwarg,
        ):
            if a is not None:
                stores[a.arg] = stores.get(a.arg, 0) + 2
    return stores, loads


def _single_use_inlined(tree: ast.AST, roots: frozenset[str] | None) -> None:
    """Every name assigned once and read once, where it may move (`_inline_once`), written as its
    expression where it is read, to a fixed point; not a stub's name, nor one a function of the cell
    reads or that is declared global or nonlocal."""

    moved: set[int] = set()  # the nodes of the values inlined
    known: dict[int, tuple] = {}  # scope -> (names kept, counts, parents), kept up to date by `_inline_once`

    def change(scope: ast.AST, block: list[ast.stmt]) -> None:
        if isinstance(scope, ast.ClassDef) or len(block) < 2:
            return
        if id(scope) not in known:
            keep = _shared_names(scope) | (roots or frozenset() if isinstance(scope, ast.Module) else frozenset())
            known[id(scope)] = (keep, _counts(scope), _parents(scope))
        keep, counts, parents = known[id(scope)]
        occurs = [Counter(n.id for n in ast.walk(s) if isinstance(n, ast.Name)) for s in block]  # names of each line
        i = len(block) - 2
        while i >= 0:
            if _inline_once(scope, block, i, counts, parents, keep, moved, occurs):
                i = min(i, len(block) - 2)
            else:
                i -= 1

    _each_own_block(tree, change)


# -- a helper function called from one place is its body, there ----------------------------------


class _Renamed(ast.NodeTransformer):
    def __init__(self, names: dict[str, ast.expr | str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        new = self.names.get(node.id)
        if new is None:
            return node
        return ast.copy_location(ast.Name(new if isinstance(new, str) else new.id, node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        new = self.names.get(node.arg)
        if isinstance(new, str):
            node.arg = new
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        new = self.names.get(node.name)
        if isinstance(new, str):
            node.name = new
        return self.generic_visit(node)


def _helpers_inlined(tree: ast.Module, roots: frozenset[str] | None) -> None:
    """Each function of the cell (not a stub's: the grader calls those) that is named once, in a call
    `return h(...)`, `x = h(...)` or `h(...)` made by another function, written as its body in place
    of that call: its parameters the arguments (a name passed is read in their place), its own names
    made its own, its `return v` the caller's (`return h(...)`) or `x = v` (when `h` returns only at
    its end). A helper with decorators, `*args`, `**kwargs`, `global`, `yield`, a class inside it,
    or that reads a name the caller binds, stays as written."""
    for _ in range(8):  # a helper's helper: another round
        if not _helper_inlined(tree, roots or frozenset()):
            return


def _helper_inlined(tree: ast.Module, roots: frozenset[str]) -> bool:
    named: dict[str, list[ast.Name]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            named.setdefault(n.id, []).append(n)
    defined: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, SCOPES):
            defined[n.name] = defined.get(n.name, 0) + 1
    for helper in list(tree.body):
        if (
            not isinstance(helper, ast.FunctionDef)
            or helper.name in roots
            or defined.get(helper.name) != 1
            or len(named.get(helper.name, [])) != 1
            or helper.decorator_list
            or helper.args.vararg
            or helper.args.kwarg
            or helper.args.kwonlyargs
            or any(
                isinstance(n, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await, ast.ClassDef))
                for n in ast.walk(helper)
                if n is not helper
            )
        ):
            continue
        call_name = named[helper.name][0]
        found = _call_site(tree, call_name)
        if found is None:
            continue
        caller, block, statement, call = found
        if caller is helper or any(n is helper for n in ast.walk(caller)):
            continue
        params = [*helper.args.posonlyargs, *helper.args.args]
        if (
            len(call.args) > len(params)
            or any(isinstance(a, ast.Starred) for a in call.args)
            or any(k.arg is None for k in call.keywords)
        ):
            continue
        given: dict[str, ast.expr] = {p.arg: a for p, a in zip(params, call.args)}
        if any(k.arg not in {p.arg for p in params} or k.arg in given for k in call.keywords):
            continue
        given |= {str(k.arg): k.value for k in call.keywords}
        defaults = dict(zip([p.arg for p in params][len(params) - len(helper.args.defaults) :], helper.args.defaults))
        if any(p.arg not in given and p.arg not in defaults for p in params):
            continue
        inside = [n for statement in helper.body for n in ast.walk(statement)]
        stored = {n.id for n in inside if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        stored |= {n.arg for n in inside if isinstance(n, ast.arg)} | {n.name for n in inside if isinstance(n, SCOPES)}
        own = stored | {p.arg for p in params}
        free = _names_in(helper) - own
        caller_names = {n.id for n in ast.walk(caller) if isinstance(n, ast.Name)} | {
            a.arg for a in ast.walk(caller) if isinstance(a, ast.arg)
        }
        if free & caller_names - {helper.name}:
            continue
        returns = [n for n in _own_nodes(helper) if isinstance(n, ast.Return)]
        body = helper.body
        if isinstance(statement, ast.Return):
            ends = isinstance(body[-1], (ast.Return, ast.Raise)) or (block is caller.body and block[-1] is statement)
            if not ends:
                continue
        elif returns != ([body[-1]] if isinstance(body[-1], ast.Return) else []) or (
            isinstance(statement, ast.Assign) and not returns
        ):
            continue
        # the helper's names made its own; a parameter given a name reads that name, if the helper
        # (or a function inside it) never binds it again, or, in `return h(...)`, binds again a local
        # name of the caller's given once (nothing of the caller runs after)
        names: dict[str, ast.expr | str] = {}
        bindings: list[ast.stmt] = []
        passed = [a.id for a in (*given.values(), *defaults.values()) if isinstance(a, ast.Name)]
        locals_ = (
            {a.arg for a in ast.walk(caller.args) if isinstance(a, ast.arg)}
            | {n.id for n in _own_nodes(caller) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        ) - _shared_names(caller)
        for p in params:
            argument = given.get(p.arg, defaults.get(p.arg))
            if (
                isinstance(argument, ast.Name)
                and argument.id not in own - {p.arg}
                and (
                    p.arg not in stored
                    or (isinstance(statement, ast.Return) and argument.id in locals_ and passed.count(argument.id) == 1)
                )
            ):
                names[p.arg] = argument
            else:
                names[p.arg] = f"{p.arg}__{helper.name}"
                bindings.append(_made(ast.Assign([_made(ast.Name(names[p.arg], ast.Store()), p)], argument), p))
        for name in own - set(names):
            names[name] = f"{name}__{helper.name}"
        inlined = [_Renamed(names).visit(n) for n in body]
        if isinstance(statement, ast.Return):
            new = inlined
        else:
            last = inlined[-1] if returns else None
            new = inlined[:-1] if returns else inlined
            if isinstance(statement, ast.Assign):
                new.append(ast.copy_location(ast.Assign(statement.targets, last.value), statement))
            elif last is not None and last.value is not None:
                new.append(ast.copy_location(ast.Expr(last.value), last))
        at = next(k for k, s in enumerate(block) if s is statement)
        block[at : at + 1] = [*bindings, *new] or [ast.Pass()]
        tree.body.remove(helper)
        return True
    return False


def _call_site(tree: ast.Module, name: ast.Name):
    """(the function, the block, the statement, the call) when `name` is called by a statement
    `return name(...)`, `x = name(...)` or `name(...)` in a function's own code."""
    for caller in ast.walk(tree):
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        found = []

        def search(block: list[ast.stmt]) -> None:
            for statement in block:
                value = getattr(statement, "value", None)
                if (
                    (
                        isinstance(statement, (ast.Return, ast.Expr))
                        or (isinstance(statement, ast.Assign) and len(statement.targets) == 1)
                    )
                    and isinstance(value, ast.Call)
                    and value.func is name
                ):
                    found.append((block, statement, value))
                if isinstance(statement, SCOPES):
                    continue
                for field_name in ("body", "orelse", "finalbody"):
                    inner = getattr(statement, field_name, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        search(inner)
                for handler in getattr(statement, "handlers", []):
                    search(handler.body)

        search(caller.body)
        if found:
            return (caller, *found[0])
    return None


def normalise_ast(
    source: str, roots: frozenset[str] | None = None, rewrites: bool = True
) -> tuple[str, list[tuple[int, int]]] | None:
    """The answer's own statements (see the module's docstring) written back as Python, as tokens
    (`_tokens`), each character with the span of `source` it stands for; None if `source` does not
    parse."""
    try:
        tree = ast.parse(source)
        shadowed = _bound_anywhere(tree)
        if rewrites:
            tree = _Folded(shadowed).visit(tree)
        tree.body = _without_dead_branches(tree.body, shadowed)
        _each_block(tree, _without_dead_stores)
        if rewrites:
            _for_loops(tree, shadowed)  # before `_ = next(it)`, read by nothing, is dropped
        _prune_scope(tree, roots, shadowed)
        if rewrites:
            _helpers_inlined(tree, roots)
            _for_loops(tree, shadowed)
            _comprehensions(tree)
            _each_block(
                tree, lambda block, shared: _canonical_order(block), shared_names=False
            )  # one order to inline from
            _single_use_inlined(tree, roots)
        _each_block(tree, lambda block, shared: _canonical_order(block), shared_names=False)
        tree = _NoFstrings().visit(tree)
        text = ast.unparse(tree)
        again = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    except Exception:  # a rewrite that fails on code it was not written for: the answer without rewrites
        if rewrites:
            return normalise_ast(source, roots, rewrites=False)
        raise
    # The tree written back and parsed again has the same nodes in the same order: each node of the
    # text carries the place of its node in the student's source.
    ours, theirs = list(ast.walk(again)), list(ast.walk(tree))
    if [type(n) for n in ours] != [type(n) for n in theirs]:
        return normalise_ast(source, roots, rewrites=False) if rewrites else None
    at_text, at_source = _char_index(text), _char_index(source)
    index = {id(n): i for i, n in enumerate(ours)}
    places: list[tuple[tuple[int, int], tuple[int, int]] | None] = []
    owner = np.full(len(text) + 1, -1, dtype=int)
    for i, (mine, theirs_node) in enumerate(zip(ours, theirs)):
        span, origin = _span(mine, at_text), _span(theirs_node, at_source)
        places.append((span, origin) if span and origin else None)
        if span and origin:
            owner[span[0] : span[1]] = i  # a node's children come after it: the innermost node owns a character

    @functools.cache
    def children(i: int) -> list[int]:
        out, todo = [], list(ast.iter_child_nodes(ours[i]))
        while todo:
            child = todo.pop(0)
            if places[index[id(child)]] is not None:
                out.append(index[id(child)])
            else:
                todo[:0] = list(ast.iter_child_nodes(child))
        return sorted(out, key=lambda c: places[c][0])

    cursor: dict[tuple[int, int], int] = {}

    def locate(start: int, end: int, string: str) -> tuple[int, int]:
        """Where a token of the text at [start, end) is in the source: the node it is, or its
        string in the gap of the source between the children of its node that surround it."""
        i = int(owner[start])
        if i < 0:
            return (0, 0)
        (node_start, node_end), (origin_start, origin_end) = places[i]
        if getattr(theirs[i], "made", False):
            return origin_start, origin_start  # syntax a rewrite wrote (`for` of a `while`): no place of its own
        if (node_start, node_end) == (start, end):
            return origin_start, origin_end
        # the gaps between the children the node had where the student wrote it (not those moved into it)
        kids = [c for c in children(i) if origin_start <= places[c][1][0] and places[c][1][1] <= origin_end]
        before = [c for c in kids if places[c][0][1] <= start]
        after = [c for c in kids if places[c][0][0] >= end]
        gap_start = places[before[-1]][1][1] if before else origin_start
        gap_end = places[after[0]][1][0] if after else origin_end
        key = (i, len(before))
        # a bracket that closes its node is the gap's last (`f((x))`: the call's own is after the
        # parentheses it drops); any other token the gap's first after the tokens before it
        find = source.rfind if string in (")", "]", "}") and not after else source.find
        found = find(string, max(gap_start, cursor.get(key, gap_start)), gap_end)
        if found < 0:
            return gap_start, gap_start
        cursor[key] = found + len(string)
        return found, found + len(string)

    try:
        return _tokens(text, locate)
    except (tokenize.TokenError, SyntaxError):
        return None


# ---- documents: one student's answers to one notebook, of one kind ---------------------------


@dataclass
class Document:
    student: str
    notebook: str
    kind: str  # "code" or "text"
    cells: list[tuple[str, str]]  # (grade id, the answer as written), in the notebook's order
    raw: str = ""
    normalised: str = ""
    spans: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=int))
    cell_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # cell index of each normalised char
    cell_starts: list[int] = field(default_factory=list)  # where each cell begins in raw
    hashes: set = field(default_factory=set)
    hash_idx: dict = field(default_factory=dict)
    own: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # chars under a kept fingerprint
    roots: dict = field(default_factory=dict)  # grade id -> the names its stub defines (the answer's own)

    def build(self, given: np.ndarray) -> "Document":
        """Normalise, fingerprint each answer (winnowing; no run spans two answers), and take out
        every run the release or the model has."""
        from copydetect.utils import winnow

        pieces, spans, cell_of = [], [], []
        offset = 0
        self.own = np.zeros(0, dtype=bool)
        found = []
        for index, (gid, text) in enumerate(self.cells):
            self.cell_starts.append(offset)
            normalised, cell_spans = normalise(self.kind, text, self.roots.get(gid))
            if pieces:
                pieces.append("\n")
                spans.append((offset, offset))
                cell_of.append(index)
            start = sum(len(p) for p in pieces)
            pieces.append(normalised)
            spans.extend((offset + a, offset + b) for a, b in cell_spans)
            cell_of.extend([index] * len(normalised))
            offset += len(text) + 2
            all_hashes = kgram_hashes(normalised)
            if len(all_hashes):
                hashes, idx = winnow(all_hashes, WINDOW, remove_duplicates=False)
                keep = ~np.isin(hashes, given)
                found.extend(zip(hashes[keep].tolist(), (idx[keep] + start).tolist()))
        self.raw = "\n\n".join(text for _, text in self.cells)
        self.normalised = "".join(pieces)
        self.spans = np.array(spans, dtype=int).reshape(-1, 2)
        self.cell_of = np.array(cell_of, dtype=int)
        self.own = np.zeros(len(self.normalised), dtype=bool)
        for value, i in found:
            self.hash_idx.setdefault(value, []).append(i)
            self.own[i : i + K] = True
        self.hashes = set(self.hash_idx)
        return self

    def own_per_cell(self) -> np.ndarray:
        return np.bincount(self.cell_of[self.own], minlength=len(self.cells)) if len(self.cells) else np.zeros(0)


def matched(a: Document, b: Document) -> tuple[np.ndarray, np.ndarray]:
    """The characters of `a` and of `b` (normalised) inside a region the other document shares:
    copydetect's fingerprint overlap and copied slices, both ways."""
    from copydetect.utils import find_fingerprint_overlap, get_copied_slices

    masks = []
    idx_a, idx_b = find_fingerprint_overlap(a.hashes, b.hashes, a.hash_idx, b.hash_idx)
    for doc, idx in ((a, idx_a), (b, idx_b)):
        mask = np.zeros(len(doc.normalised), dtype=bool)
        starts, ends = get_copied_slices(idx, K)
        for start, end in zip(starts.astype(int).tolist(), ends.astype(int).tolist()):
            mask[start:end] = True
        masks.append(mask & doc.own)
    return masks[0], masks[1]


def cell_shares(doc: Document, mask: np.ndarray) -> dict[str, float]:
    """{grade id: the share of the cell's own fingerprinted text inside the shared regions}, for the
    cells with at least MIN_OWN characters of their own."""
    own = doc.own_per_cell()
    hit = np.bincount(doc.cell_of[mask], minlength=len(doc.cells)) if len(doc.cells) else np.zeros(0)
    return {doc.cells[i][0]: float(hit[i] / own[i]) for i in range(len(doc.cells)) if own[i] >= MIN_OWN}


# ---- the class --------------------------------------------------------------------------------


def _kind(cell: dict) -> str:
    return "code" if cell.get("cell_type") == "code" else "text"


def documents(step: str, home: Path | None = None) -> dict[tuple[str, str], list[Document]]:
    """(notebook, kind) -> every graded student's document of the answers that differ from the release."""
    home = home or grader_home()
    given = model_hashes(step)
    out: dict[tuple[str, str], list[Document]] = {}
    for name in find_step(step).notebooks():
        release = json.loads((RELEASE / step / f"{name}.ipynb").read_text(encoding="utf-8"))
        stub = {
            c["metadata"]["nbgrader"]["grade_id"]: _text(c)
            for c in release["cells"]
            if c.get("metadata", {}).get("nbgrader", {}).get("solution")
        }
        roots = {gid: defined_names(text) for gid, text in stub.items()}
        for path in sorted((home / "autograded").glob(f"*/{step}/{name}.ipynb")):
            sid = path.parent.parent.name
            cells: dict[str, list[tuple[str, str]]] = {"code": [], "text": []}
            for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                if gid in stub and _text(cell).strip() != stub[gid].strip():
                    cells[_kind(cell)].append((gid, _text(cell)))
            for kind, answers in cells.items():
                if answers:
                    doc = Document(sid, name, kind, answers, roots=roots).build(
                        given.get((name, kind), np.array([], dtype=np.int64))
                    )
                    out.setdefault((name, kind), []).append(doc)
    return out


def model_hashes(step: str) -> dict[tuple[str, str], np.ndarray]:
    """(notebook, kind) -> the hash of every run of K characters in the notebook's instructor
    answers and released stubs (all of them, not winnowed: none of it is a student's own)."""
    from ..example import answer_text

    out: dict[tuple[str, str], set] = {}
    source_step = find_step(step)
    for name in source_step.notebooks():
        try:
            release = json.loads((RELEASE / step / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            release = []
        roots = {
            c["metadata"]["nbgrader"]["grade_id"]: defined_names(_text(c))
            for c in release
            if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        }
        for folder in (source_step.source, RELEASE / step):
            try:
                cells = json.loads((folder / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
            except (OSError, ValueError, KeyError):
                continue
            for cell in cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if meta.get("solution") and meta.get("grade_id"):
                    kind = _kind(cell)
                    for text in {answer_text(cell), _text(cell)}:
                        for rewrites in (True, False):  # the model's text as written is not a student's own either
                            normalised, _ = normalise(kind, text, roots.get(meta["grade_id"]), rewrites)
                            out.setdefault((name, kind), set()).update(kgram_hashes(normalised).tolist())
    return {key: np.array(sorted(values), dtype=np.int64) for key, values in out.items()}


@dataclass
class Match:
    """Two students' documents of one notebook and kind that share fingerprinted text."""

    a: Document
    b: Document
    mask_a: np.ndarray
    mask_b: np.ndarray
    shares: dict[str, float]  # grade id -> the larger of the two cells' shares

    @property
    def score(self) -> float:
        return max(self.shares.values(), default=0.0)

    @property
    def shared(self) -> int:
        return int(self.mask_a.sum() + self.mask_b.sum())


def matches(step: str, home: Path | None = None) -> list[Match]:
    """Every pair of documents (same notebook, same kind) that share a fingerprint, with the shares
    of their cells; only pairs that share one are compared (an index of fingerprints)."""
    out = []
    for (name, kind), docs in sorted(documents(step, home).items()):
        by_hash: dict[int, list[int]] = {}
        for i, doc in enumerate(docs):
            for value in doc.hashes:
                by_hash.setdefault(value, []).append(i)
        candidates = {(i, j) for holders in by_hash.values() for i, j in combinations(holders, 2)}
        for i, j in sorted(candidates):
            a, b = sorted((docs[i], docs[j]), key=lambda d: d.student)
            mask_a, mask_b = matched(a, b)
            shares: dict[str, float] = {}
            for doc, mask in ((a, mask_a), (b, mask_b)):
                for gid, share in cell_shares(doc, mask).items():
                    shares[gid] = max(shares.get(gid, 0.0), share)
            if any(shares.values()):
                out.append(Match(a, b, mask_a, mask_b, shares))
    return out


def similar_pairs(
    step: str, threshold: float = 0.8, home: Path | None = None, found: list[Match] | None = None
) -> list[dict]:
    """Every pair of answers to the same cell at or above `threshold`: the share of a cell's own
    text (the model solution's and the release's taken out) that the other student's answers hold
    (`found`: the class's matches, when already computed)."""
    pairs = []
    for m in matches(step, home) if found is None else found:
        for gid, share in m.shares.items():
            if share >= threshold:
                pairs.append(
                    {
                        "notebook": m.a.notebook,
                        "grade_id": gid,
                        "student_a": m.a.student,
                        "student_b": m.b.student,
                        "similarity": round(share, 3),
                    }
                )
    return sorted(pairs, key=lambda p: (-p["similarity"], p["notebook"], p["grade_id"], p["student_a"]))


def by_student_pair(pairs: list[dict]) -> list[dict]:
    """The pairs of answers grouped by pair of students: most answers alike first, then most alike."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for pair in pairs:
        groups.setdefault((pair["student_a"], pair["student_b"]), []).append(pair)
    out = []
    for (a, b), cells in groups.items():
        scores = [c["similarity"] for c in cells]
        cells = sorted(cells, key=lambda c: (-c["similarity"], c["notebook"], c["grade_id"]))
        out.append(
            {
                "student_a": a,
                "student_b": b,
                "answers_alike": len(cells),
                "max_similarity": max(scores),
                "mean_similarity": round(sum(scores) / len(scores), 3),
                "answers": "; ".join(f"{c['notebook']}/{c['grade_id']} {c['similarity']:.2f}" for c in cells),
            }
        )
    return sorted(out, key=lambda p: (-p["answers_alike"], -p["max_similarity"], p["student_a"], p["student_b"]))


def ranked(step: str, home: Path | None = None, found: list[Match] | None = None) -> list[dict]:
    """Every pair of students who share any fingerprinted text, ranked: largest share of a cell
    first, then the most text shared. {rank, student_a, student_b, score, shared, matches}."""
    groups: dict[tuple[str, str], list[Match]] = {}
    for m in matches(step, home) if found is None else found:
        groups.setdefault((m.a.student, m.b.student), []).append(m)
    out = [
        {
            "student_a": a,
            "student_b": b,
            "score": round(max(m.score for m in ms), 3),
            "shared": sum(m.shared for m in ms),
            "matches": ms,
        }
        for (a, b), ms in groups.items()
    ]
    out.sort(key=lambda p: (-p["score"], -p["shared"], p["student_a"], p["student_b"]))
    for rank, pair in enumerate(out, 1):
        pair["rank"] = rank
    return out


# ---- the page: each listed pair's matching regions side by side -------------------------------

PAGE_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
PAGE_STYLE = """
body { font-family: sans-serif; font-size: 14px; margin: 1.5em; color: #222; }
table.ranking { border-collapse: collapse; } table.ranking td, table.ranking th { border: 1px solid #bbb; padding: 2px 8px; }
section.pair { margin-top: 2em; border-top: 2px solid #444; }
div.side-by-side { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
div.side { min-width: 0; overflow: auto; position: relative; contain: paint; }
pre.answer { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 0.5em; border: 1px solid #ddd;
             line-height: 1.5; }
mark { background: #ffe08a; padding: 0 0 2px 0; }
h4 { margin: 0.8em 0 0.2em 0; font-size: 13px; color: #555; }
"""


def _highlighted(doc: Document, mask: np.ndarray, index: int) -> str:
    """Cell `index` of `doc` as escaped text, its shared regions in <mark>."""
    start = doc.cell_starts[index]
    text = doc.cells[index][1]
    marked = np.zeros(len(text), dtype=bool)
    for a, b in doc.spans[mask & (doc.cell_of == index)].tolist():
        marked[max(a - start, 0) : max(b - start, 0)] = True
    out, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and marked[j] == marked[i]:
            j += 1
        piece = html.escape(text[i:j])
        out.append(f"<mark>{piece}</mark>" if marked[i] else piece)
        i = j
    return "".join(out)


def _side(doc: Document, mask: np.ndarray, shares: dict[str, float]) -> str:
    parts = [f"<h3>{html.escape(doc.student)}</h3>"]
    for index, (gid, _) in enumerate(doc.cells):
        if not mask[doc.cell_of == index].any():
            continue
        share = cell_shares(doc, mask).get(gid)
        parts.append(
            f"<h4>{html.escape(doc.notebook)} / {html.escape(gid)}"
            + (f": {share:.0%} of its own text shared" if share is not None else "")
            + "</h4>"
        )
        parts.append(f"<pre class='answer'>{_highlighted(doc, mask, index)}</pre>")
    return "".join(parts)


def page(pairs: list[dict], threshold: float, step: str) -> str:
    """The report as one HTML page: the ranking, then each listed pair side by side."""
    rows = "".join(
        f"<tr><td>{p['rank']}</td><td><a href='#pair-{p['rank']}'>{html.escape(p['student_a'])}</a></td>"
        f"<td>{html.escape(p['student_b'])}</td><td>{p['score']:.2f}</td><td>{p['shared']}</td></tr>"
        for p in pairs
    )
    sections = []
    for p in pairs[:SHOWN_PAIRS]:
        blocks = []
        for m in sorted(p["matches"], key=lambda m: -m.score):
            blocks.append(
                f"<p>{html.escape(m.a.notebook)}, {m.a.kind}: largest share {m.score:.2f}</p>"
                f"<div class='side-by-side'><div class='side'>{_side(m.a, m.mask_a, m.shares)}</div>"
                f"<div class='side'>{_side(m.b, m.mask_b, m.shares)}</div></div>"
            )
        sections.append(
            f"<section class='pair' id='pair-{p['rank']}'><h2>{p['rank']}. "
            f"{html.escape(p['student_a'])} and {html.escape(p['student_b'])}: {p['score']:.2f}</h2>"
            + "".join(blocks)
            + "</section>"
        )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{PAGE_CSP}\">"
        f"<title>Answers alike: {html.escape(step)}</title><style>{PAGE_STYLE}</style></head><body>"
        f"<h1>Answers alike in {html.escape(step)}</h1>"
        f"<p>For a person to look at; grades are not changed. A pair's score is the largest share of one "
        f"answer's own text (what the release and the model solution say taken out) that the other "
        f"student's answers to the same notebook hold too, matched as MOSS does (winnowing; names and "
        f"literals do not count, matches shorter than {K} normalised characters never count). "
        f"{len(pairs)} pairs at or above {threshold:g}; the first {min(len(pairs), SHOWN_PAIRS)} side by side, "
        f"shared regions marked.</p>"
        f"<table class='ranking'><tr><th>rank</th><th>student</th><th>student</th><th>score</th>"
        f"<th>characters shared</th></tr>{rows}</table>" + "".join(sections) + "</body></html>"
    )


def report(step: str, threshold: float = 0.8, say=print) -> Path:
    found = matches(step)
    pairs = similar_pairs(step, threshold, found=found)
    students = by_student_pair(pairs)
    home = grader_home()
    dest = home / "similarity.csv"
    write_csv(dest, PAIR_COLUMNS, students, numbers=("answers_alike", "max_similarity", "mean_similarity"))
    listed = [p for p in ranked(step, found=found) if p["score"] >= threshold]
    (home / "similarity.html").write_text(page(listed, threshold, step), encoding="utf-8")
    shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
    say(
        f"similarity: {len(students)} pairs of students with answers alike at or above {threshold:g} "
        f"({len(pairs)} answers; the model solution's and the release's text not counted) in {shown}, "
        f"side by side in {shown.with_suffix('.html')} (for a person to look at; grades are not changed)"
    )
    for pair in students[:20]:
        say(
            f"  {pair['student_a']} and {pair['student_b']}: {pair['answers_alike']} answer"
            f"{'s' * (pair['answers_alike'] > 1)} alike (up to {pair['max_similarity']:.2f}): {pair['answers'][:120]}"
        )
    return dest
