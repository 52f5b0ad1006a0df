"""The notebooks' text: every answer is answerable from the release, and the text is clean.

* Answerable: a name that an answer cell must define, and that a later check cell, provided cell
  or hidden check reads, is shown to the student in the release: in the answer cell itself (a
  signature, a stub line `NAME = ...`) or in the markdown right above it. The names are read off
  the notebooks and the hidden checks' source; there is no hand-kept list.
* Clean: no control characters in any cell (source, release, solutions, outputs included), and
  every math span of every markdown cell parses in a TeX subset that MathJax renders.
"""
from __future__ import annotations

import ast
import re
import unicodedata

import pytest

from conftest import NOTEBOOK_NAMES, ROOT, STEP4, cell_text, load, nbgrader_meta

SOURCE, RELEASE = STEP4.source, STEP4.release
CHECKS = STEP4.checks_dir          # the step's hidden checks
ALL_NOTEBOOKS = sorted(p for folder in ("source", "release", "solutions")
                       for p in (ROOT / folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
HIDDEN_CALL = re.compile(r"""\bhidden\(\s*["']([^"']+)["']""")
MARKER = re.compile(r"^\s*#+\s*(BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$", re.M)


# ---- answerable from the release ---------------------------------------------------------------

def python_of(text: str) -> ast.Module:
    """A code cell as Python: solution markers and IPython magics (%, !) dropped."""
    lines = [line for line in MARKER.sub("", text).split("\n") if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def defined_names(text: str) -> set[str]:
    """Top-level names an answer cell binds (def, class, assignment)."""
    names = set()
    for node in python_of(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def loaded_names(text: str) -> set[str]:
    return {n.id for n in ast.walk(python_of(text)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _check_classes() -> dict[str, tuple[ast.ClassDef, dict[str, ast.ClassDef]]]:
    """grade_id -> (the class of the hidden check registered under it, the classes of its module)."""
    found = {}
    for path in sorted(CHECKS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        for node in classes.values():
            for stmt in node.body:
                if (isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "grade_id" for t in stmt.targets)
                        and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
                    found[stmt.value.value] = (node, classes)
    return found


def hidden_check_strings(grade_id: str, classes=None) -> set[str]:
    """Every string constant of the hidden check's class and of its base classes in the same module:
    the names its probe asks the student's namespace for are among them (`student(ns, "name")`,
    or a class attribute such as `function = "check_simplex"`)."""
    classes = classes if classes is not None else _check_classes()
    if grade_id not in classes:
        raise AssertionError(f"no hidden check in {CHECKS} has grade_id {grade_id!r}")
    node, module_classes = classes[grade_id]
    strings, todo, seen = set(), [node], set()
    while todo:
        cls = todo.pop()
        if cls.name in seen:
            continue
        seen.add(cls.name)
        strings |= {n.value for n in ast.walk(cls) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        todo += [module_classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in module_classes]
    return strings


def unanswerable(source_nb: dict, release_nb: dict, classes=None) -> list[str]:
    """One line per name a later cell or hidden check reads from an answer cell, that the release
    shows neither in that answer cell nor in the markdown right above it."""
    classes = classes if classes is not None else _check_classes()
    released = {c.get("id"): c for c in release_nb["cells"]}
    cells = source_nb["cells"]
    problems = []
    for index, cell in enumerate(cells):
        meta = nbgrader_meta(cell)
        if cell["cell_type"] != "code" or not meta.get("solution"):
            continue
        defined = defined_names(cell_text(cell))
        read = set()
        for later in cells[index + 1:]:
            text = cell_text(later)
            if later["cell_type"] != "code" or nbgrader_meta(later).get("solution"):
                continue
            hidden = HIDDEN_CALL.findall(text)
            if hidden:
                for grade_id in hidden:
                    read |= defined & hidden_check_strings(grade_id, classes)
            else:
                read |= defined & loaded_names(text)
        shown = cell_text(released[cell["id"]]) if cell.get("id") in released else ""
        above = index - 1
        while above >= 0 and cells[above]["cell_type"] == "markdown":
            shown += "\n" + cell_text(released.get(cells[above].get("id"), cells[above]))
            above -= 1
        for name in sorted(read):
            if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", shown):
                problems.append(
                    f"answer cell {meta.get('grade_id')!r} must define {name!r} (a later cell or hidden check "
                    f"reads it), but the release shows {name!r} neither in that cell nor in the markdown above it: "
                    f"add a stub line `{name} = ...` or a signature outside the solution markers, or name it "
                    "in the prose right above")
    return problems


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_name_an_answer_must_define_is_shown_in_the_release(name):
    problems = unanswerable(load(SOURCE / f"{name}.ipynb"), load(RELEASE / f"{name}.ipynb"))
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


def _nb(*cells) -> dict:
    out = []
    for n, (kind, text, meta) in enumerate(cells):
        out.append({"id": f"c{n}", "cell_type": kind, "source": text, "metadata": {"nbgrader": meta}})
    return {"cells": out}


def test_the_answerable_rule_catches_a_hidden_name_and_accepts_a_stub():
    answer = {"solution": True, "grade_id": "answer"}
    source = _nb(("markdown", "Which checks fail? Write a set.", {}),
                 ("code", "### BEGIN SOLUTION\nMY_SET = {1}\n### END SOLUTION", answer),
                 ("code", "assert isinstance(MY_SET, set)", {"grade": True, "locked": True}))
    blank = _nb(("markdown", "Which checks fail? Write a set.", {}),
                ("code", "# YOUR CODE HERE\nraise NotImplementedError()", {}), ("code", "", {}))
    assert unanswerable(source, blank) and "MY_SET" in unanswerable(source, blank)[0]
    blank["cells"][1]["source"] = "MY_SET = ...\n# YOUR CODE HERE\nraise NotImplementedError()"
    assert unanswerable(source, blank) == []
    blank["cells"][1]["source"] = "# YOUR CODE HERE\nraise NotImplementedError()"
    blank["cells"][0]["source"] = "Write your answer as `MY_SET`."
    assert unanswerable(source, blank) == []
    # a hidden check that asks for the name counts as a reader
    source["cells"][2]["source"] = 'hidden("fails_on_mask_after_softmax_hidden", globals())'
    source["cells"][1]["source"] = "### BEGIN SOLUTION\nFAILS_ON_MASK_AFTER_SOFTMAX = set()\n### END SOLUTION"
    blank["cells"][0]["source"] = "Which checks fail?"
    assert "FAILS_ON_MASK_AFTER_SOFTMAX" in " ".join(unanswerable(source, blank))


# ---- clean text: control characters -------------------------------------------------------

ALLOWED_CONTROLS = {"\n", "\t"}


def control_characters(text: str) -> list[str]:
    found = []
    for at, ch in enumerate(text):
        if unicodedata.category(ch) == "Cc" and ch not in ALLOWED_CONTROLS:
            context = text[max(0, at - 25):at + 25].replace("\n", " ")
            found.append(f"U+{ord(ch):04X} in {context!r}")
    return found


def cell_texts(cell: dict):
    """The cell's source and the text of its outputs."""
    yield "source", cell_text(cell)
    for output in cell.get("outputs", []):
        if "text" in output:
            yield "output", "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
        for mime, data in output.get("data", {}).items():
            if mime.startswith("text/"):
                yield mime, "".join(data) if isinstance(data, list) else data


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_control_characters_in_any_cell(path):
    problems = [f"cell {index} ({where}): {found}"
                for index, cell in enumerate(load(path)["cells"])
                for where, text in cell_texts(cell) for found in control_characters(text)]
    assert not problems, (f"{path.relative_to(ROOT)} holds control characters (a '\\a' or '\\b' written "
                          "in a Python string where a backslash was meant?):\n  " + "\n  ".join(problems))


# ---- clean text: math spans parse ----------------------------------------------------------------

# The TeX subset the notebooks may use: commands MathJax renders, by the number of arguments they take.
ZERO_ARG = set("""
alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi varpi rho
varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi
Psi Omega ell infty partial nabla top bot emptyset forall exists neg Re Im hbar imath jmath
sum prod int iint oint coprod bigcup bigcap bigoplus bigotimes
log ln exp sin cos tan max min sup inf lim limsup liminf arg argmax argmin det dim ker Pr deg gcd
le leq ge geq ne neq lt gt approx sim simeq cong equiv propto lesssim gtrsim ll gg prec succ mid nmid
parallel perp in notin ni subset subseteq supset supseteq cup cap setminus land lor wedge vee
to mapsto rightarrow leftarrow Rightarrow Leftarrow leftrightarrow Leftrightarrow implies iff longrightarrow
longmapsto uparrow downarrow gets
cdot cdots dots ldots vdots ddots times div pm mp circ ast star bullet oplus otimes odot dagger
langle rangle lvert rvert lVert rVert vert Vert lfloor rfloor lceil rceil backslash
quad qquad displaystyle textstyle scriptstyle prime colon lbrace rbrace
""".split())
ONE_ARG = set("""
text texttt textbf textit textrm mathrm mathbf mathit mathsf mathtt mathcal mathbb mathfrak boldsymbol
operatorname sqrt hat tilde bar vec dot ddot check breve acute grave widehat widetilde overline underline
overbrace underbrace overrightarrow overleftarrow mathring mathop mathbin mathrel boxed phantom
""".split())
TWO_ARG = {"frac", "dfrac", "tfrac", "binom", "dbinom", "tbinom", "stackrel", "overset", "underset"}
SIZES = {f"{size}{side}" for size in ("big", "Big", "bigg", "Bigg") for side in ("", "l", "r", "m")}
SYMBOLS = set(",:;!>{}|\\ #$%&_") | {"[", "]"}          # \, \; \{ \| \[ ... (\[ \] as the \![ \!] idiom)
DELIMITERS = set("()[]|./<>") | {r"\{", r"\}", r"\|", r"\langle", r"\rangle", r"\lvert", r"\rvert", r"\lVert",
                                  r"\rVert", r"\lfloor", r"\rfloor", r"\lceil", r"\rceil", r"\vert", r"\Vert",
                                  r"\uparrow", r"\downarrow", r"\backslash"}
TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|\s+|.", re.S)


class TexError(ValueError):
    pass


def tex_tokens(span: str) -> list[str]:
    tokens = []
    for token in TOKEN.findall(span):
        for ch in token:
            if unicodedata.category(ch) == "Cc" and ch not in "\n\t":
                raise TexError(f"control character U+{ord(ch):04X} (a '\\a', '\\b' or '\\f' read as an escape?)")
        if not token.isspace():
            tokens.append(token)
    if span.rstrip().endswith("\\") and not span.rstrip().endswith("\\\\"):
        raise TexError("ends with a lone backslash")
    return tokens


def parse_tex(span: str) -> None:
    """Raise TexError if `span` is not well-formed in the subset: known commands with their
    arguments, balanced braces, \\left/\\right and \\begin/\\end in pairs, scripts with a base and an argument."""
    tokens = tex_tokens(span)
    at = 0

    def peek():
        return tokens[at] if at < len(tokens) else None

    def take():
        nonlocal at
        if at >= len(tokens):
            raise TexError("ends where an argument or closing brace was expected")
        at += 1
        return tokens[at - 1]

    def delimiter():
        token = take()
        if token not in DELIMITERS:
            raise TexError(f"{token!r} is not a delimiter")

    def group():
        expression(closing="}")
        if take() != "}":
            raise TexError("unbalanced braces")

    def argument():
        token = take()
        if token == "{":
            group()
        elif token in ("}", "^", "_", "&"):
            raise TexError(f"an argument was expected, found {token!r}")
        elif token.startswith("\\") and len(token) > 2:
            command(token)

    def command(token):
        name = token[1:].rstrip("*")
        if name == "left":
            delimiter()
            expression(closing=r"\right")
            if take() != r"\right":
                raise TexError(r"\left without \right")
            delimiter()
        elif name == "right":
            raise TexError(r"\right without \left")
        elif name == "begin":
            env = environment_name()
            expression(closing=r"\end")
            take()
            if environment_name() != env:
                raise TexError(f"\\begin{{{env}}} closed by another environment")
        elif name == "end":
            raise TexError(r"\end without \begin")
        elif name in SIZES:
            delimiter()
        elif name in ONE_ARG:
            if name == "sqrt" and peek() == "[":
                while take() != "]":
                    pass
            argument()
        elif name in TWO_ARG:
            argument()
            argument()
        elif name not in ZERO_ARG and not (len(name) == 1 and name in SYMBOLS):
            raise TexError(f"unknown command {token!r} (a typo, or a command MathJax does not render?)")

    def environment_name():
        if take() != "{":
            raise TexError(r"\begin and \end take {name}")
        name = ""
        while (token := take()) != "}":
            name += token
        return name

    def expression(closing=None):
        nonlocal at
        while (token := peek()) is not None:
            if token == closing or (closing == "}" and token == "}"):
                return
            if token == "}":
                raise TexError("a closing brace without an opening one")
            if token in (r"\right", r"\end") and closing != token:
                raise TexError(f"{token} without its opening pair")
            take()
            if token == "{":
                group()
            elif token in ("^", "_"):
                argument()
                if peek() == token:
                    raise TexError(f"double {token}: use braces")
            elif token.startswith("\\"):
                command(token)
        if closing is not None:
            raise TexError(f"missing {closing}")

    expression()


CODE_SPANS = re.compile(r"```.*?```|`[^`\n]*`|<code>.*?</code>", re.S)
MATH_SPANS = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\$)(.+?)(?<![\\$])\$", re.S)


def math_spans(markdown: str) -> list[str]:
    text = CODE_SPANS.sub("", markdown)
    return [m.group(1) if m.group(1) is not None else m.group(2) for m in MATH_SPANS.finditer(text)]


def bad_math(nb: dict) -> list[str]:
    problems = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        for span in math_spans(cell_text(cell)):
            try:
                parse_tex(span)
            except TexError as err:
                problems.append(f"cell {index}: {err} in ${span[:70]}$")
    return problems


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_math_span_parses(path):
    problems = bad_math(load(path))
    assert not problems, f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("span", [r"1/(i+1) \approx 0.02", r"\operatorname{softmax}\!\Bigl(\tfrac{a}{b}\Bigr)",
                                  r"[\![t_z \le t_x]\!]", r"\frac13 + x_{i}^{2}", r"\left( \sum_{j\le i} A_{ij} \right)",
                                  r"\underbrace{E_\text{tok}[c_i]}_{\text{which}}", r"\sqrt[3]{x}"])
def test_the_tex_subset_accepts_what_mathjax_renders(span):
    parse_tex(span)


@pytest.mark.parametrize("span", ["1/(i+1) \approx 0.02", r"\frac{a}{b", r"a}", r"\left( x", r"x \right)",
                                  r"\aprox 1", r"x^", r"\frac{1}", r"x_1_2", r"\begin{cases} a \end{array}"])
def test_the_tex_subset_rejects_what_does_not_render(span):
    with pytest.raises(TexError):
        parse_tex(span)


def test_math_spans_skip_code_and_escaped_dollars():
    assert math_spans(r"cost \$5 and `x = $y$` but $a_1$ and $$\sum_i b$$") == ["a_1", r"\sum_i b"]


# ---- the NaN message the notebooks show says what A holds, and guesses no cause ----------------------------

def test_a_nan_is_reported_without_a_guessed_cause():
    """A alone does not say how it was computed: a multiplied mask (0 * -inf on every kept entry) and a masked
    diagonal both give NaN, and the message names neither (tests/test_visible_checks_proof.py: CAUSES)."""
    import torch
    import torch.nn.functional as F

    from dlcourse.checks import expect_attention_rows

    T = 4
    tril = torch.tril(torch.ones(T, T))                                     # (T, T)
    scores = torch.randn(2, T, T)                                           # (B, T, T)
    multiplied = F.softmax(scores + (1 - tril) * float("-inf"), dim=-1)     # 0 * -inf = NaN on kept entries
    diagonal = F.softmax(scores.masked_fill(tril.T == 1, float("-inf")), dim=-1)   # j >= i hidden: row 0 keeps nothing
    assert torch.isnan(multiplied).all() and torch.isnan(diagonal[:, 0]).all()
    for A, where in ((multiplied, "every entry of A"), (diagonal, "first at index [0, 0]")):
        with pytest.raises(AssertionError) as err:
            expect_attention_rows(A)
        message = str(err.value)
        assert "NaN" in message and where in message, message
        assert not any(word in message for word in ("mask", "-inf", "diagonal", "likely", "often")), message
