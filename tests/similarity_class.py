"""A synthetic class for the similarity report: honest students who wrote their answers apart, and
three who copied one of them and hid it (renamed, padded, reordered).

Honest students h0..h5: student `hi` writes the i-th correct variant of the proof corpus for every
answer cell that has one (a cell with fewer variants gets the model solution, which the report
discounts), and written answers of their own for two questions (below). No two honest students
share a non-model answer: each pair of them is a pair the report should not rank above a copy.

The copies (of whole submissions, every notebook):
  * `copy-renamed` is h1 with every name of its own renamed (the graded functions keep theirs);
  * `copy-padded` is h2 with an unused ten-line helper added to every answer it copied;
  * `copy-reordered` is h3 with the answers of each notebook moved one cell on (each answer cell
    holds the next one's code) and the statements of each answer's top level in reverse order;
  * `copy-interleaved` is h4 with a dead statement (DEAD, in turn) before every statement.

`build_disguised` makes another class, of code only: the honest students' code answers and, for
each kind of DISGUISES, copies of two of them drawn by a seeded generator, each disguise made
mechanically (dead statements from templates with fresh names and values, unused functions, names
in redundant parentheses, the moves and renames above, and all of them at once; inert statements:
a builtin or a method that changes nothing called for a value nobody reads, an assertion that holds,
before every statement; an unused call of a library function that only makes a value, a name
rebound to itself through an identity, a guard clause that only raises, before every statement),
and program
rewrites (REWRITES: `for` loops as counter or iterator `while` loops, comprehensions as append loops,
single-use names inlined, divisions as products with an inverse, returns as an element of a literal
with fillers, every function's body moved into a helper it calls; each alone, the six at once, and
the six with all the disguises above).
"""
from __future__ import annotations

import io
import json
import keyword
import builtins
import functools
import tokenize
from pathlib import Path

from autograder.example import answers_of, with_answers
from conftest import STEP, STEP4

NOTEBOOKS = ["01-on-paper", "02-the-head", "03-the-tests", "04-attention-on-text", "05-attention-as-smoothing",
             "06-going-further"]
HONEST = [f"h{i}" for i in range(6)]
COPIES = {"copy-renamed": "h1", "copy-padded": "h2", "copy-reordered": "h3", "copy-interleaved": "h4"}
# Statements that do nothing, one put before every statement of a copied answer (copy-interleaved), in turn.
DEAD = ["pass", "_pad = 0", "0", "'.'", "unused_k = len([])", "print()", "spare = [1, 2, 3]", "...", "None"]

# Written answers of their own (02-the-head/bonus_scale_width, 05/bonus_smoothing_as_s_grows), one per honest student.
SCALE_WIDTH = [
    "The key width is 16, so we divide by 4. Each score adds up 16 products of unit-variance numbers, "
    "so the variance of a score is about 16; the square root brings the spread back to one. The model width "
    "32 is not part of the dot product.",
    "Dividing by sqrt(d_head) = 4. A dot product over d_k coordinates has variance d_k when the entries are "
    "independent with variance one, so without the factor the softmax saturates. Using d = 32 would shrink "
    "scores too much.",
    "We scale by 4 because d_k is 16. Think of q.k as a random walk of 16 steps: its standard deviation grows "
    "like the square root of the number of steps. The embedding size never enters q.k.",
    "sqrt(16) = 4. Var(sum of d_k products) = d_k, and dividing by sqrt(d_k) normalises it. If we used the "
    "embedding dimension the attention would be too flat for a narrow head.",
    "The divisor is 4 = sqrt(d_k). Bigger heads give bigger raw scores (variance proportional to their width), "
    "and softmax of large numbers is nearly one-hot, which kills the gradients; d itself is irrelevant.",
    "Four. The head's query and key vectors have 16 entries each; their product summed over those entries has "
    "spread sqrt(16). The scale undoes that. It must be the head width, not the model width of 32.",
]
SMOOTHING = [
    "When s is small the matrix is almost the identity and nothing is smoothed. As s grows each row spreads its "
    "weight over more earlier positions, so the output becomes a moving average that reacts late to changes. "
    "For very large s it is just the mean of everything so far.",
    "Small s: no smoothing, the output copies the input. Medium s: a causal blur, smoother but shifted to the "
    "right because only past values are averaged. Huge s: uniform weights over the prefix, i.e. a running "
    "average. A symmetric kernel would not lag but would peek at the future.",
    "Increasing s widens the band under the diagonal. The curve gets less noisy but lags behind the signal, by an "
    "amount that grows roughly linearly in s. At the start there are few keys so the first values are jumpy.",
    "With s near zero A = I. With larger s the weights decay more slowly with distance so we average a longer "
    "window of the past; steps in the signal appear late and smeared. In the limit all past positions get equal "
    "weight.",
    "The lag comes from the one-sided kernel: the average position of the weights is behind i. Bigger s means a "
    "longer window, a smoother curve and a bigger delay. Infinite s gives the prefix mean.",
    "As s increases: identity, then local causal averaging, then the cumulative mean. The output is delayed "
    "relative to the input since only earlier tokens contribute; near the beginning the window is truncated.",
]

HELPER = '''

def _unused_helper(values, scale=1.0):
    """Normalise a list of numbers (not used anywhere)."""
    total = 0.0
    for value in values:
        total += value
    mean = total / max(len(values), 1)
    spread = sum((value - mean) ** 2 for value in values)
    spread = (spread / max(len(values), 1)) ** 0.5
    return [(value - mean) / (spread + 1e-9) * scale for value in values]
'''


MODEL_EDIT = 0.95      # a variant this close to the model answer (difflib's ratio, normalised code) is the model's


def honest_answers() -> dict[str, dict[str, dict[str, str]]]:
    """student -> notebook -> {grade id: answer} (only the cells where it differs from the model)."""
    import copy
    return copy.deepcopy(_honest_answers())


@functools.cache
def _honest_answers() -> dict[str, dict[str, dict[str, str]]]:
    import proof_corpus
    from autograder.publish.similarity import normalise_code
    # a variant that is the model answer with a token or two changed (normalised as the report normalises
    # code: the corpus's "-1e9 instead of -inf" variants, say) is the model's, not an answer written apart:
    # two such edits of two models share their few changed k-grams, as two honest students need not
    from difflib import SequenceMatcher
    variants: dict[tuple[str, str], list[str]] = {}
    models = {name: answers_of(STEP4, name) for name in {entry.notebook for entry in proof_corpus.CORRECT}}
    for entry in proof_corpus.CORRECT:
        for gid, text in entry.answers.items():
            model = normalise_code(models[entry.notebook].get(gid, ""))[0]
            normalised = normalise_code(text)[0]
            kept = variants.setdefault((entry.notebook, gid), [])
            # ... and so is a variant that is another kept variant with a token or two changed (the corpus's
            # softmaxes that differ only in the offset they subtract): one answer, not two written apart
            if all(SequenceMatcher(None, normalised, other).ratio() < MODEL_EDIT
                   for other in [model] + [normalise_code(t)[0] for t in kept]):
                kept.append(text)
    out: dict[str, dict[str, dict[str, str]]] = {sid: {} for sid in HONEST}
    for i, sid in enumerate(HONEST):
        for (notebook, gid), texts in sorted(variants.items()):
            if i < len(texts):
                out[sid].setdefault(notebook, {})[gid] = texts[i]
        out[sid].setdefault("02-the-head", {})["bonus_scale_width"] = SCALE_WIDTH[i]
        out[sid].setdefault("05-attention-as-smoothing", {})["bonus_smoothing_as_s_grows"] = SMOOTHING[i]
    return out


def _own_names(source: str) -> set[str]:
    """The names a piece of code binds itself (assigned, parameters, loop variables), not the
    functions the checks call nor anything imported."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names - set(dir(builtins)) - set(keyword.kwlist)


def renamed(source: str) -> str:
    """Every name the code binds itself renamed (`x` -> `x_value2`), comments and strings untouched."""
    own = _own_names(source)
    if not own:
        return source
    out, previous = [], None
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string in own and not (previous and previous.string == "."):
            tok = tok._replace(string=f"{tok.string}_value2")
        out.append(tok)
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok
    return tokenize.untokenize(out)


def reordered(source: str) -> str:
    """The answer's top-level statements in reverse order (imports first, as Python needs them)."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines(keepends=True)
    blocks = [("".join(lines[node.lineno - 1 - len(node.decorator_list if hasattr(node, "decorator_list") else []):
                             node.end_lineno])) for node in tree.body]
    imports = [b for b, node in zip(blocks, tree.body) if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [b for b, node in zip(blocks, tree.body) if not isinstance(node, (ast.Import, ast.ImportFrom))]
    return "\n".join(imports + rest[::-1])


def interleaved(source: str) -> str:
    """A dead statement (DEAD, in turn) put before every statement of `source`, at its indentation."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    before = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            before.setdefault(first, node.col_offset)
    lines, out = source.splitlines(keepends=True), []
    for number, line in enumerate(lines, 1):
        if number in before:
            out.append(" " * before[number] + DEAD[len(out) % len(DEAD)] + "\n")
        out.append(line)
    return "".join(out)


def copy_answers(victim: dict[str, dict[str, str]], how: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for notebook, answers in victim.items():
        code = {gid: text for gid, text in answers.items() if not _is_text(notebook, gid)}
        text = {gid: t for gid, t in answers.items() if gid not in code}
        if how == "copy-renamed":
            code = {gid: renamed(t) for gid, t in code.items()}
        elif how == "copy-padded":
            code = {gid: t.rstrip("\n") + "\n" + HELPER for gid, t in code.items()}
        elif how == "copy-interleaved":
            code = {gid: interleaved(t) for gid, t in code.items()}
        elif how == "copy-reordered":
            gids = [g for g in answers_of(STEP4, notebook) if g in code]
            code = {gids[(i + 1) % len(gids)]: reordered(code[g]) for i, g in enumerate(gids)}
            code = {g: code[g] for g in gids}
        out[notebook] = {**code, **text}
    return out


def _is_text(notebook: str, gid: str) -> bool:
    release = json.loads((STEP4.release / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    return any(c["cell_type"] == "markdown" for c in release["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == gid)


def write_class(home: Path, students: dict[str, dict[str, dict[str, str]]]) -> None:
    """Each student's answers as their autograded notebooks in the grading home `home` (every notebook of
    the step, the stub where a student has no answer)."""
    for sid, notebooks in students.items():
        for notebook in NOTEBOOKS:
            path = home / "autograded" / sid / STEP / f"{notebook}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(with_answers(STEP4, notebook, notebooks.get(notebook, {}))), encoding="utf-8")


def build(home: Path) -> dict[str, dict[str, dict[str, str]]]:
    """Write every student's notebooks into `home`/autograded as the grader leaves them (only the
    answer cells matter to the report). Returns student -> notebook -> answers that differ."""
    honest = honest_answers()
    students = dict(honest)
    for copier, victim in COPIES.items():
        students[copier] = copy_answers(honest[victim], copier)
    write_class(home, students)
    return students


# ---- copies made mechanically: each kind of disguise from a seeded generator --------------------
# A dead statement in many shapes, names and values drawn by a seeded generator; `{a}` is a name of
# the copy's own, `{b}` one of the dead names made before it in the same answer (a chain of dead
# names), `{v}` and `{w}` numbers, `{s}` a word.
DEAD_TEMPLATES = [
    "{a} = {v}", "{a} = [{v}, {w}]", "{a} = ({v}, '{s}')", "{a} = {{'{s}': {v}}}", "{a} = len([{v}, {w}])",
    "{a} = {b} + {v}", "{a} = [{b}] * {w}", "{a} = str({b})", "{a} = {b} = {v}", "'{s}'", "{v}", "pass",
    "{a} = abs(-{v}) * {w}", "{a}, {c} = {v}, {b}", "print()",
]
WORDS = ["tmp", "aux", "val", "spare", "check", "debug", "keep", "buf", "part", "acc", "x9", "idx_", "note"]


def _dead_statement(rng, made: list[str]) -> str:
    """One dead statement from DEAD_TEMPLATES, its names fresh (added to `made`)."""
    template = rng.choice(DEAD_TEMPLATES if made else [t for t in DEAD_TEMPLATES if "{b}" not in t])
    fresh = [f"{rng.choice(WORDS)}_{rng.randrange(1000)}" for _ in range(2)]
    statement = template.format(a=fresh[0], c=fresh[1], b=rng.choice(made) if made else "0",
                                v=rng.randrange(1, 100), w=rng.randrange(1, 9), s=rng.choice(WORDS))
    made.extend(fresh[: 1 + ("{c}" in template)] if "{a}" in template else [])
    return statement


def _dead_helper(rng, made: list[str]) -> str:
    """An unused function of two to four dead lines, under a fresh name."""
    name = f"{rng.choice(['helper', 'util', 'prepare', 'fix', 'step'])}_{rng.randrange(1000)}"
    inner: list[str] = []
    body = [_dead_statement(rng, inner) for _ in range(rng.randrange(2, 5))]
    return "\n".join([f"def {name}({rng.choice(['x', 'values', 'a, b', ''])}):", *(f"    {s}" for s in body),
                      f"    return {inner[-1] if inner else 'None'}"])


def _statement_starts(source: str) -> dict[int, int] | None:
    """{line number: indentation} of the line where each statement of `source` begins (None: not Python)."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    starts: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            starts.setdefault(first, node.col_offset)
    return starts


# Statements that compute a value nobody reads, or assert something that holds: they call a builtin
# or a method that changes nothing (`len(())`, `q.size()`), or check an argument (`assert q is not None`).
INERT_TEMPLATES = ["len(())", "abs(-{v})", "isinstance({v}, int)", "hash({v})", "sorted([{v}, {w}])", "str({v})",
                   "max({v}, {w})", "repr(None)", "type({v})", "assert True", "assert {v}", "assert len([{v}]) == 1"]
INERT_ON_ARGUMENT = ["{p}.size()", "{p}.dim()", "{p}.clone()", "{p}.numel()", "{p}.detach()", "{p}.float()",
                     "{p}.contiguous()", "assert {p} is not None", "isinstance({p}, object)", "len({p})"]


def inert_between(source: str, rng) -> str:
    """An inert statement (INERT_TEMPLATES; in a function, half of them on one of its arguments:
    INERT_ON_ARGUMENT) put before every statement of `source`, at its indentation."""
    import ast
    starts = _statement_starts(source)
    if starts is None:
        return source
    arguments: dict[int, list[str]] = {}  # line -> the arguments of the function around it
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
            for line in range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1):
                arguments[line] = [a.arg for a in node.args.args if a.arg != "self"] or arguments.get(line, [])
    out = []
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        if number in starts:
            names = arguments.get(number)
            if names and rng.random() < 0.5:
                statement = rng.choice(INERT_ON_ARGUMENT).format(p=rng.choice(names))
            else:
                statement = rng.choice(INERT_TEMPLATES).format(v=rng.randrange(1, 100), w=rng.randrange(1, 9))
            out.append(" " * starts[number] + statement + "\n")
        out.append(line)
    return "".join(out)


def padded_between(source: str, rng, helpers: bool = False) -> str:
    """A dead statement (or, with `helpers`, an unused function) put before every statement of
    `source`, at its indentation: no run of the original's statements is left side by side."""
    starts = _statement_starts(source)
    if starts is None:
        return source
    out, made = [], []
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        if number in starts:
            dead = _dead_helper(rng, made) if helpers else _dead_statement(rng, made)
            out.extend(" " * starts[number] + piece + "\n" for piece in dead.splitlines())
        out.append(line)
    return "".join(out)


def wrapped(source: str, rng) -> str:
    """Every name the code reads or writes in redundant parentheses, some in two: `(q)[i]`, `((x))`."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    inside_fstrings = {id(n) for s in ast.walk(tree) if isinstance(s, ast.JoinedStr) for n in ast.walk(s)}
    walrus = {id(n.target) for n in ast.walk(tree) if isinstance(n, ast.NamedExpr)}
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def at(lineno: int, col: int) -> int:
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode(errors="ignore"))

    names = sorted(((at(n.lineno, n.col_offset), at(n.end_lineno, n.end_col_offset)) for n in ast.walk(tree)
                    if isinstance(n, ast.Name) and id(n) not in inside_fstrings | walrus), reverse=True)
    out = source
    for start, end in names:
        depth = rng.choice([1, 1, 2])
        out = out[:start] + "(" * depth + out[start:end] + ")" * depth + out[end:]
    try:
        ast.parse(out)
    except SyntaxError:
        return source
    return out


def _own_lines(source: str):
    """(tree, lines, {id of a statement: True}) for the statements that start and end their own lines
    (nothing else on them: not a header's inline body, not `a; b`); None if `source` is not Python."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines(keepends=True)
    spans = sorted((n.lineno, n.end_lineno, id(n)) for n in ast.walk(tree) if isinstance(n, ast.stmt))
    alone = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = lines[node.lineno - 1]
        clean_start = not first[:node.col_offset].strip()
        last = lines[node.end_lineno - 1].encode()[node.end_col_offset:].decode(errors="ignore")
        clean_end = not last.strip() or last.strip().startswith("#")
        others = [s for s in spans if s[2] != id(node) and not (s[1] < node.lineno or s[0] > node.end_lineno)
                  and not (node.lineno <= s[0] and s[1] <= node.end_lineno)
                  and not (s[0] <= node.lineno and node.end_lineno <= s[1])]
        if clean_start and clean_end and not others:
            alone[id(node)] = True
    return tree, lines, alone


def _inserted(source: str, make) -> str:
    """`source` with the lines `make(statement)` returns (or None) put before each statement that has
    its own lines, at its indentation; `source` itself if the result is not Python."""
    import ast
    found = _own_lines(source)
    if found is None:
        return source
    tree, lines, alone = found
    before: dict[int, list[str]] = {}
    for node in ast.walk(tree):
        if id(node) in alone:
            extra = make(node)
            if extra:
                before.setdefault(node.lineno, []).extend(" " * node.col_offset + piece + "\n"
                                                          for piece in extra.splitlines())
    out = [piece for number, line in enumerate(lines, 1) for piece in [*before.get(number, []), line]]
    text = "".join(out)
    try:
        ast.parse(text)
    except SyntaxError:
        return source
    return text


def dead_stores(source: str, rng) -> str:
    """Before every assignment to a name that does not read it, a store to the same name that the
    assignment overwrites (`out = 0`, `out = [3, 1]`), after some, the name assigned to itself
    (`out = out`): writes to the very names the answer uses, none of which it reads."""
    import ast

    def make(node):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            return None
        name = node.targets[0].id
        if name in {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}:
            return None
        value = rng.choice([f"{rng.randrange(100)}", f"[{rng.randrange(9)}, {rng.randrange(9)}]", "None", "()",
                            f"len('{rng.choice(WORDS)}')", f"{rng.randrange(9)} * {rng.randrange(2, 9)}"])
        return f"{name} = {value}" + (f"\n{name} = {name}" if rng.random() < 0.5 and name != "self" else "")
    return _inserted(source, make)


NEVER = ["if False:", "if 0:", "while False:", "if None:", "while 0:", "if not True:", "if '':",
         # computed from constants: a comparison, an empty length, a loop over nothing
         "if 1 > 2:", "if len([]):", "while len(()) > 0:", "for _ in ():", "for _ in range(0):"]


def never_run(source: str, rng) -> str:
    """Before every statement, a block that never runs (`if False:`, `while 0:`, `if 1 > 2:`, `for _ in ():`, ...) holding a write
    to one of the answer's own names from another of them (`out = q * 3`), or the statement itself."""
    import ast
    own = sorted(_own_names(source)) or ["x"]

    def make(node):
        if isinstance(node, (ast.Return, ast.Break, ast.Continue, ast.Raise, ast.Global, ast.Nonlocal)):
            return None
        body = ast.get_source_segment(source, node) if rng.random() < 0.5 else None
        if not body or "\n" in body:
            body = f"{rng.choice(own)} = {rng.choice(own)} * {rng.randrange(2, 9)}"
        return f"{rng.choice(NEVER)}\n    {body}"
    return _inserted(source, make)


def _names_before(source: str) -> dict[tuple[int, int], tuple[list[str], list[str]]]:
    """(line, column) of each statement -> (the arguments of the function around it, the names it and
    its function had bound on the lines above: arguments, assignments, loop variables); {} if not Python."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out: dict[tuple[int, int], tuple[list[str], list[str]]] = {}

    def own(node):
        for child in ast.iter_child_nodes(node):
            yield child
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
                                      ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                yield from own(child)

    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    for scope in scopes:
        arguments = [a.arg for a in scope.args.args if a.arg != "self"] if scope is not tree else []
        nodes = list(own(scope))
        stores = [(n.lineno, n.id) for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        for node in nodes:
            if isinstance(node, ast.stmt):
                before = [name for line, name in stores if line < node.lineno and name != "self"]
                out[(node.lineno, node.col_offset)] = (arguments, list(dict.fromkeys(arguments + before)))
    return out


# Unused calls of library functions that only make a value (a tensor, a number), bare or bound to a
# fresh name nobody reads; `{p}` an argument of the function around it, `{v}` and `{w}` numbers.
LIBRARY_PADDING = ["torch.zeros({v})", "torch.ones({w}, {w})", "torch.arange({v})", "torch.eye({w})",
                   "torch.full(({w},), {v}.0)", "torch.tensor([{v}, {w}])", "torch.empty({w}, dtype=torch.float64)",
                   "math.sqrt({v})", "math.log({v})", "math.exp({w})", "math.pow({v}, {w})", "math.floor({v}.5)"]
LIBRARY_ON_ARGUMENT = ["torch.zeros_like({p})", "torch.ones_like({p})", "torch.exp({p})", "torch.tril({p})",
                       "torch.isfinite({p})", "torch.transpose({p}, 0, 1)", "torch.sum({p}, dim=-1)"]


def library_calls(source: str, rng) -> str:
    """Before every statement, an unused call of a library function that only makes a value
    (LIBRARY_PADDING; in a function, half of them on one of its arguments: LIBRARY_ON_ARGUMENT), bare
    or, in a function, bound to a fresh name nobody reads (`spare_12 = torch.zeros_like(q)`)."""
    names = _names_before(source)

    def make(node):
        arguments, _ = names.get((node.lineno, node.col_offset), ([], []))
        if arguments and rng.random() < 0.5:
            call = rng.choice(LIBRARY_ON_ARGUMENT).format(p=rng.choice(arguments))
        else:
            call = rng.choice(LIBRARY_PADDING).format(v=rng.randrange(1, 100), w=rng.randrange(1, 9))
        if arguments and rng.random() < 0.5:
            return f"{rng.choice(WORDS)}_{rng.randrange(1000)} = {call}"
        return call
    return _inserted(source, make)


# A name rebound to its own value through an operation that gives the same value back.
IDENTITY_TEMPLATES = ["{p} = {p} + 0", "{p} = 0 + {p}", "{p} = {p} - 0", "{p} = {p} * 1", "{p} = 1 * {p}",
                      "{p} = {p} / 1", "{p} = {p} * 1.0", "{p} += 0", "{p} *= 1", "{p} = ({p})", "{p} = {p}"]


def identity_rebinds(source: str, rng) -> str:
    """Before every statement that has a name bound above it (an argument, an assignment), that name
    rebound to itself through an identity (IDENTITY_TEMPLATES: `q = q * 1`, `x = 0 + x`, `k += 0`)."""
    names = _names_before(source)

    def make(node):
        _, bound = names.get((node.lineno, node.col_offset), ([], []))
        return rng.choice(IDENTITY_TEMPLATES).format(p=rng.choice(bound)) if bound else None
    return _inserted(source, make)


# Guard clauses that only raise: a condition that reads and changes nothing, a builtin exception of constants.
GUARD_CONDITIONS = ["{p} is None", "not isinstance({p}, object)", "{p} is not {p}", "len(str({p})) == 0",
                    "{p}.dim() > 8", "{p}.shape[-1] == 0", "type({p}) is type(None)"]
GUARD_RAISES = ["ValueError('bad input')", "TypeError('{p} must be a tensor')", "RuntimeError", "ValueError",
                "AssertionError('unreachable')", "IndexError(-1)"]


def guards(source: str, rng) -> str:
    """Before every statement of a function, a guard clause that only raises (`if q is None: raise
    ValueError('bad input')`) on one of its arguments (GUARD_CONDITIONS, GUARD_RAISES)."""
    names = _names_before(source)

    def make(node):
        arguments, _ = names.get((node.lineno, node.col_offset), ([], []))
        if not arguments:
            return None
        p = rng.choice(arguments)
        return f"if {rng.choice(GUARD_CONDITIONS).format(p=p)}:\n    raise {rng.choice(GUARD_RAISES).format(p=p)}"
    return _inserted(source, make)


def _writes_reads(node) -> tuple[set[str], set[str]]:
    import ast
    writes, reads = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (reads if isinstance(n.ctx, ast.Load) else writes).add(n.id)
    for target in getattr(node, "targets", None) or [getattr(node, "target", None)]:
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        if isinstance(target, ast.Name):
            writes.add(target.id)
    return writes, reads


def swapped(source: str) -> str:
    """Every pair of neighbouring assignments that do not depend on each other (neither reads or
    writes what the other writes) swapped, in every block: `q = ...; k = ...` becomes `k = ...; q = ...`."""
    import ast
    found = _own_lines(source)
    if found is None:
        return source
    tree, lines, alone = found
    order = list(range(len(lines)))
    for node in ast.walk(tree):
        for block in ("body", "orelse", "finalbody"):
            body = getattr(node, block, None)
            if not isinstance(body, list):
                continue
            i = 0
            while i + 1 < len(body):
                a, b = body[i], body[i + 1]
                simple = all(isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and id(s) in alone
                             for s in (a, b))
                if simple and a.end_lineno < b.lineno:
                    (wa, ra), (wb, rb) = _writes_reads(a), _writes_reads(b)
                    if not (wa & (rb | wb) or wb & ra):
                        first = list(range(a.lineno - 1, a.end_lineno))
                        second = list(range(b.lineno - 1, b.end_lineno))
                        gap = list(range(a.end_lineno, b.lineno - 1))
                        order[a.lineno - 1:b.end_lineno] = second + gap + first
                        i += 2
                        continue
                i += 1
    text = "".join(lines[k] for k in order)
    try:
        ast.parse(text)
    except SyntaxError:
        return source
    return text


# ---- program rewrites: the same program written otherwise, each from a seeded generator -----------
# Each rewrites every place of an answer it applies to, its choices (which form, fresh names, fillers)
# drawn by the generator; the answer itself if it is not Python.


def _rewritten(source: str, change) -> str:
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    tree = ast.fix_missing_locations(change(tree))
    text = ast.unparse(tree) + "\n"
    ast.parse(text)
    return text


def _fresh(rng, stem: str) -> str:
    return f"{stem}{rng.randrange(10, 1000)}"


def _has_continue(body) -> bool:
    import ast
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Continue):
            return True
        if not isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def while_loops(source: str, rng) -> str:
    """Every `for` as a `while`: `for i in range(n)` (or `range(a, n)`) as the counter loop
    `i = 0; while i < n: ...; i += 1` (when its body has no `continue`) or, drawn, as the iterator
    loop; any other `for v in x` as `it = iter(x); while True: try: v = next(it) except
    StopIteration: break; ...`, under a fresh name."""
    import ast

    class Change(ast.NodeTransformer):
        def visit_For(self, node):
            self.generic_visit(node)
            if node.orelse:
                return node
            call = node.iter
            counter = (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"
                       and 1 <= len(call.args) <= 2 and not call.keywords and isinstance(node.target, ast.Name)
                       and not _has_continue(node.body) and rng.random() < 0.7)
            if counter:
                name = node.target.id
                start = call.args[0] if len(call.args) == 2 else ast.Constant(0)
                init = ast.Assign([ast.Name(name, ast.Store())], start)
                test = ast.Compare(ast.Name(name, ast.Load()), [ast.Lt()], [call.args[-1]])
                step = ast.AugAssign(ast.Name(name, ast.Store()), ast.Add(), ast.Constant(1))
                return [init, ast.While(test, [*node.body, step], [])]
            it = _fresh(rng, rng.choice(["it", "_it", "walker", "cursor"]))
            init = ast.Assign([ast.Name(it, ast.Store())], ast.Call(ast.Name("iter", ast.Load()), [call], []))
            fetch = ast.Try([ast.Assign([node.target], ast.Call(ast.Name("next", ast.Load()), [ast.Name(it, ast.Load())], []))],
                            [ast.ExceptHandler(ast.Name("StopIteration", ast.Load()), None, [ast.Break()])], [], [])
            return [init, ast.While(ast.Constant(True), [fetch, *node.body], [])]

    return _rewritten(source, Change().visit)


def append_loops(source: str, rng) -> str:
    """Every list comprehension assigned to a name as the loop that appends to it: `x = []`, then
    the comprehension's `for`s and `if`s around `x.append(e)`."""
    import ast

    class Change(ast.NodeTransformer):
        def visit_Assign(self, node):
            self.generic_visit(node)
            value = node.value
            if not (isinstance(value, ast.ListComp) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                return node
            name = node.targets[0].id
            body = [ast.Expr(ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "append", ast.Load()), [value.elt], []))]
            for generator in reversed(value.generators):
                for condition in reversed(generator.ifs):
                    body = [ast.If(condition, body, [])]
                body = [ast.For(generator.target, generator.iter, body, [])]
            return [ast.Assign([ast.Name(name, ast.Store())], ast.List([], ast.Load())), *body]

    return _rewritten(source, Change().visit)


def inlined_once(source: str, rng) -> str:
    """Every name assigned once and read once later in the same block (not in a loop, a comprehension
    or a function there) written as its expression where it is read, as an editor's "inline
    variable" does, where that moves no call past another (what runs stays in its order)."""
    import ast

    def walk_outside_loops(node):
        yield node
        if not isinstance(node, (ast.For, ast.While, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp,
                                 ast.FunctionDef, ast.Lambda)):
            for child in ast.iter_child_nodes(node):
                yield from walk_outside_loops(child)

    def block(body):
        i = 0
        while i < len(body):
            node = body[i]
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and not isinstance(node.value, (ast.List, ast.Dict))):
                name = node.targets[0].id
                rest = body[i + 1:]
                everywhere = [n for s in rest for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == name]
                reachable = [n for s in rest for n in walk_outside_loops(s) if isinstance(n, ast.Name) and n.id == name]
                use = everywhere[0] if len(everywhere) == 1 else None
                holder = next((s for s in rest if any(n is use for n in ast.walk(s))), None)
                before = [*rest[:rest.index(holder)]] if holder is not None else []
                before += [n for n in ast.walk(holder) if (getattr(n, "end_lineno", 0), getattr(n, "end_col_offset", 0))
                           <= (use.lineno, use.col_offset)] if holder is not None else []
                calls = any(isinstance(n, ast.Call) for n in ast.walk(node.value))
                moved_past = calls and any(isinstance(n, ast.Call) for b in before for n in ast.walk(b))
                if len(reachable) == 1 and use is not None and isinstance(use.ctx, ast.Load) and not moved_past:
                    for s in rest:
                        for parent in ast.walk(s):
                            for field, value in ast.iter_fields(parent):
                                if value is use:
                                    setattr(parent, field, node.value)
                                elif isinstance(value, list) and any(v is use for v in value):
                                    value[[id(v) for v in value].index(id(use))] = node.value
                    del body[i]
                    continue
            i += 1

    def change(tree):
        for node in list(ast.walk(tree)):
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    block(inner)
        return tree

    return _rewritten(source, change)


def inverse_products(source: str, rng) -> str:
    """Every `a / b` as a product with the inverse: `a * (1 / b)`, `(1 / b) * a` or `a * (1.0 / b)`."""
    import ast

    class Change(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if not isinstance(node.op, ast.Div):
                return node
            inverse = ast.BinOp(ast.Constant(rng.choice([1, 1, 1.0])), ast.Div(), node.right)
            return ast.BinOp(*((node.left, ast.Mult(), inverse) if rng.random() < 0.7 else (inverse, ast.Mult(), node.left)))

    return _rewritten(source, Change().visit)


FILLERS = ["len([])", "0", "None", "'ok'", "len(())", "-1", "abs(0)", "()"]


def indexed_returns(source: str, rng) -> str:
    """Every `return x` as an element of a literal with fillers: `return (x, len([]))[0]`,
    `return [None, x][1]`, `return (0, x, 'ok')[-2]`."""
    import ast

    class Change(ast.NodeTransformer):
        def visit_Return(self, node):
            if node.value is None:
                return node
            fillers = [ast.parse(rng.choice(FILLERS), mode="eval").body for _ in range(rng.randrange(1, 3))]
            at = rng.randrange(len(fillers) + 1)
            elements = [*fillers[:at], node.value, *fillers[at:]]
            index = at if rng.random() < 0.7 else at - len(elements)
            literal = (ast.Tuple if rng.random() < 0.6 else ast.List)(elements, ast.Load())
            index_node = ast.Constant(index) if index >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-index))
            return ast.Return(ast.Subscript(literal, index_node, ast.Load()))

    return _rewritten(source, Change().visit)


def helper_bodies(source: str, rng) -> str:
    """Every top-level function's body moved into a helper of a fresh name (before or after it),
    which the function calls: `def f(q, k): return _f_impl(q, k)`, arguments by position or by
    keyword."""
    import ast

    def change(tree):
        out = []
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.decorator_list or node.args.vararg or node.args.kwarg \
                    or node.args.kwonlyargs or any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node)):
                out.append(node)
                continue
            name = _fresh(rng, f"_{node.name}_" + rng.choice(["impl", "body", "work", "inner"]))
            helper = ast.FunctionDef(name, node.args, node.body, [], None)
            params = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
            keywords = rng.random() < 0.3 and not node.args.posonlyargs
            call = ast.Call(ast.Name(name, ast.Load()), [] if keywords else [ast.Name(p, ast.Load()) for p in params],
                            [ast.keyword(p, ast.Name(p, ast.Load())) for p in params] if keywords else [])
            wrapper = ast.FunctionDef(node.name, node.args, [ast.Return(call)], [], node.returns)
            out.extend([helper, wrapper] if rng.random() < 0.7 else [wrapper, helper])
        tree.body = out
        return tree

    return _rewritten(source, change)


def rewritten(source: str, rng) -> str:
    """All the program rewrites at once, as one copy would apply them in turn."""
    for rewrite in (append_loops, while_loops, inlined_once, inverse_products, indexed_returns, helper_bodies):
        source = rewrite(source, rng)
    return source


REWRITES = {
    "while-loops": while_loops,
    "append-loops": append_loops,
    "inlined-once": inlined_once,
    "inverse-products": inverse_products,
    "indexed-returns": indexed_returns,
    "helper-bodies": helper_bodies,
    "rewrites": rewritten,
}


# Each kind of copy a function of (the victim's answers to one notebook: {grade id: code}, notebook,
# a seeded generator) -> the copy's answers.
def _each(answers: dict[str, str], how) -> dict[str, str]:
    return {gid: how(text) for gid, text in answers.items()}


def _moved(answers: dict[str, str], notebook: str) -> dict[str, str]:
    """Each answer moved one cell on and its top-level statements in reverse order."""
    gids = [g for g in answers_of(STEP4, notebook) if g in answers]
    moved = {gids[(i + 1) % len(gids)]: reordered(answers[g]) for i, g in enumerate(gids)}
    return {g: moved[g] for g in gids}


def _all(answers: dict[str, str], notebook: str, rng) -> dict[str, str]:
    return _moved(_each(answers, lambda t: wrapped(padded_between(never_run(dead_stores(
        padded_between(swapped(renamed(t)), rng, helpers=True), rng), rng), rng), rng)), notebook)


DISGUISES = {
    "renamed": lambda answers, notebook, rng: _each(answers, renamed),
    "padded": lambda answers, notebook, rng: _each(answers, lambda t: padded_between(t, rng)),
    "helpers": lambda answers, notebook, rng: _each(answers, lambda t: padded_between(t, rng, helpers=True)),
    "reordered": lambda answers, notebook, rng: _moved(answers, notebook),
    "wrapped": lambda answers, notebook, rng: _each(answers, lambda t: wrapped(t, rng)),
    "dead-stores": lambda answers, notebook, rng: _each(answers, lambda t: dead_stores(t, rng)),
    "never-run": lambda answers, notebook, rng: _each(answers, lambda t: never_run(t, rng)),
    "swapped": lambda answers, notebook, rng: _each(answers, swapped),
    "padded+wrapped": lambda answers, notebook, rng: _each(answers, lambda t: wrapped(padded_between(t, rng), rng)),
    "all": lambda answers, notebook, rng: _all(answers, notebook, rng),
    # program rewrites: each alone, the six at once, and with all of the above
    **{kind: (lambda answers, notebook, rng, rewrite=rewrite: _each(answers, lambda t: rewrite(t, rng)))
       for kind, rewrite in REWRITES.items()},
    "all+rewrites": lambda answers, notebook, rng: _all(_each(answers, lambda t: rewritten(t, rng)), notebook, rng),
    # last, so that the victims drawn for the kinds above are those drawn before it was added
    "inert": lambda answers, notebook, rng: _each(answers, lambda t: inert_between(t, rng)),
    "library-calls": lambda answers, notebook, rng: _each(answers, lambda t: library_calls(t, rng)),
    "identity": lambda answers, notebook, rng: _each(answers, lambda t: identity_rebinds(t, rng)),
    "guards": lambda answers, notebook, rng: _each(answers, lambda t: guards(t, rng)),
}


# The kinds whose copies normalise to their original's text, cell for cell (the others move answers
# to other cells and reverse their statements). Not the kinds that inline single-use names: the normaliser
# inlines a name whose value calls something only where no call is evaluated between (a call an inlined
# value brought there does not count), so where the original keeps `ids = torch.tensor(...)` as a line and
# inlines a call after it, a copy that wrote `torch.tensor(...)` in place leaves that call where it was:
# one cell of the six rewrites together shared 0.85 (attention_on_text); the pair still ranks at 1.00.
WHOLE = ("renamed", "padded", "inert", "library-calls", "identity", "guards", "helpers", "wrapped", "dead-stores",
         "never-run", "swapped", "padded+wrapped",
         *(kind for kind in REWRITES if kind not in ("inlined-once", "rewrites")))


def build_disguised(home: Path, seed: int = 4, victims_per_kind: int = 2) -> dict[str, str]:
    """The honest students' code answers only (no written answers: the code is measured on its own)
    and, for each kind of DISGUISES, copies of `victims_per_kind` honest students (drawn with
    `seed`), every notebook. Written into `home`/autograded; returns copier -> victim."""
    import random
    rng = random.Random(seed)
    honest = {sid: {nb: {g: t for g, t in answers.items() if not _is_text(nb, g)} for nb, answers in nbs.items()}
              for sid, nbs in honest_answers().items()}
    students: dict[str, dict[str, dict[str, str]]] = dict(honest)
    copies = {}
    for kind, disguise in DISGUISES.items():
        for victim in rng.sample(HONEST, victims_per_kind):
            copier = f"copy-{kind}-of-{victim}"
            copies[copier] = victim
            students[copier] = {nb: disguise(answers, nb, rng) for nb, answers in honest[victim].items()}
    write_class(home, students)
    return copies
