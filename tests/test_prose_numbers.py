"""Prose backed by outputs: every number a solution notebook's markdown states is one its cells print.

A sentence such as "the mean column sum is 4.74" or "172 of the 200 seeds (86%)" is a measured
claim: the reader must be able to find it in the notebook's own printed output, or the notebook
must say where it comes from. For every executed solution notebook this test reads each markdown
cell (model answers included, code spans and code blocks left out: those are code, not claims),
extracts the numbers that state a measurement, and looks for each one in the text the notebook's
cells print (stdout and the plain-text results; not the code).

What counts as a stated measurement:
  * a decimal, `4.74`, `0.0741`, `6.07` (also inside math, `$H_{64} \\approx 4.74$`);
  * a percentage, `86%`, `7.5%`;
  * a power of ten, `$10^{-7}$`, `$3.6\\times10^{-7}$`, `1e-7`;
  * a count, `172 of the 200`.
Section and theorem numbers (`section 4.3`, `Theorem 6.1`, `Step 6`) are references, settings
(`$s = 0.5$`) and the bounds a check enforces (`$\\le 10^{-5}$`) are specifications: none is a claim.

A stated number is backed when an output number rounds to it: to the same number of decimals for
a decimal or a percentage (a fraction printed as `0.865` backs `86.5%`), to the same significant
digits for `a × 10^b`, to the same order of magnitude for a bare `10^b`; a count needs both of its
integers printed. Anything else must be listed below for its notebook: as quoted from the handout
(with where), as arithmetic (with an expression this test evaluates and rounds to the stated
number), or as an example or input value that is not a measurement (with what it is). No other
exception exists: a measured claim without an output fails.
"""
from __future__ import annotations

import ast
import math
import re

import nbformat
import pytest

from conftest import NOTEBOOK_NAMES, ROOT, STEP4, read_nb

SOLUTIONS = STEP4.solutions

# Numbers a notebook states without printing them: quoted from the handout (with the place), ...
QUOTED_FROM_HANDOUT: dict[str, dict[str, str]] = {
    "01-on-paper": {section: "the table of parts: the handout's section numbers" for section in ("4.1", "4.2", "4.3", "4.4")},
    "02-the-head": {
        "10^9": "the input of the -1e9 example: 'the exponential of -10^9 underflows to exactly 0'",
    },
    "03-the-tests": {},
    "04-attention-on-text": {},
    "05-attention-as-smoothing": {},
    "06-going-further": {},
}

# ... or exact arithmetic, each with the expression whose value, rounded like the prose, it is.
ARITHMETIC: dict[str, dict[str, str]] = {
    "01-on-paper": {},
    "02-the-head": {},
    "03-the-tests": {},
    "04-attention-on-text": {
        "20": "(1.2 - 1) * 100",                    # a lift of 1.2 is 20% more weight
    },
    "05-attention-as-smoothing": {
        "0.61": "math.exp(-1 / 2)",                 # the Gaussian kernel at distance s
        "0.14": "math.exp(-2)",                     # ... and at distance 2s
        "5\\times10^{5}": "1 / (2 * 1e-3 ** 2)",    # a neighbour's score at s = 10^-3
        "0.32": "1 / math.pi",                      # the lag's correction term
    },
    "06-going-further": {
        "0.5": "1 / 2",                             # the slope of a T^2 law with the axes swapped
        "0.87": "2 / math.log(10)",                 # ... with natural log on the time axis, base 10 on T
        "4.6": "2 * math.log(10)",                  # ... and the other way round
    },
}

# ... or a value the prose uses as an example or an input, never as a result (with what it is).
NOT_A_MEASUREMENT: dict[str, dict[str, str]] = {
    "01-on-paper": {},
    "02-the-head": {},
    "03-the-tests": {
        "0.91": "an example of a helpful failure message: 'row 3 of A[1] sums to 0.91'",
        "10^{-12}": "a hypothetical leak: 'a weight of 10^-12 on a future key is a leak'",
    },
    "04-attention-on-text": {},
    "05-attention-as-smoothing": {},
    "06-going-further": {},
}

REFERENCE = re.compile(r"(?:\bsections?|§|\btheorem|\blemma|\bcorollary|\bstep|\bpart|\blecture|\bnotebooks?|"
                       r"\bhandout|\bfig(?:ure)?\.?)\s*$", re.I)
# a setting, not a claim: a lower-case or Greek symbol given a value ("$s = 0.5$", "$\\beta = 9$"),
# or a bound a check enforces ("$\\le 10^{-5}$", "$\\ge 0.9995$")
SETTING = re.compile(r"(?:(?:(?<![\w\\])[a-z]|\\[a-z]+)\s*=|\\(?:le|ge|leq|geq)\b|[<>≤≥])\s*$")
CODE = re.compile(r"```.*?```|`[^`\n]*`|<code>.*?</code>", re.S)
# one number, in the forms prose and LaTeX write it; the order of the alternatives matters
NUMBER = re.compile(
    r"(?P<sci>(?P<mant>\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|×|·)\s*10\^\{?(?P<exp1>[-−]?\d+)\}?)"
    r"|(?P<pow>(?<![\d.])10\^\{?(?P<exp2>[-−]?\d+)\}?)"
    r"|(?P<enote>(?<![\w.])\d+(?:\.\d+)?e[-−+]?\d+\b)"
    r"|(?P<count>(?<![\w.])(?P<n>\d+)\s+of\s+(?:the\s+)?(?P<m>\d+)\b)"
    r"|(?P<pct>(?<![\w.])\d+(?:\.\d+)?)\s*(?:\\?%)"
    r"|(?P<dec>(?<![\w.^_{])\d*\.\d+)(?![\d.])")
PRINTED = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def prose_numbers(markdown: str) -> list[tuple[str, str]]:
    """(kind, text) for every stated number of one markdown cell."""
    text = CODE.sub(" ", markdown)
    found = []
    for match in NUMBER.finditer(text):
        kind = next(k for k in ("sci", "pow", "enote", "count", "pct", "dec") if match.group(k) is not None)
        before = text[max(0, match.start() - 20):match.start()]
        if REFERENCE.search(before) or SETTING.search(before):
            continue
        found.append((kind, match.group(kind)))
    return found


def literal_numbers(source: str) -> list[str]:
    """The numbers written inside the string literals of a cell's code (f-strings' constant parts)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    return PRINTED.findall("\n".join(strings))


def printed_numbers(nb) -> list[str]:
    """Every number in the text a notebook's cells print (stdout, plain-text results), less the ones
    the cell's own string literals spell out: `print("our notes: 1.98")` measures nothing."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        texts = []
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and output.name == "stdout":
                texts.append(output.text)
            elif output.output_type in ("execute_result", "display_data"):
                texts.append(output.get("data", {}).get("text/plain", ""))
        numbers = PRINTED.findall("\n".join(texts))
        for literal in literal_numbers(cell.source):
            if literal in numbers:
                numbers.remove(literal)
        found += numbers
    return found


def decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def backed(kind: str, stated: str, printed: list[str]) -> bool:
    values = [abs(float(p)) for p in printed]
    if kind == "count":
        n, m = re.match(r"(\d+)\s+of\s+(?:the\s+)?(\d+)", stated).groups()
        return all(any(v == int(x) for v in values) for x in (n, m))
    if kind == "dec":
        want, places = float(stated), decimals(stated)
        return any(math.isclose(round(v, places), want, abs_tol=1e-12) for v in values)
    if kind == "pct":
        want, places = float(stated), decimals(stated)
        return any(math.isclose(round(v, places), want, abs_tol=1e-12)
                   or math.isclose(round(100 * v, places), want, abs_tol=1e-12) for v in values)
    if kind == "pow":
        exponent = int(re.search(r"[-−]?\d+", stated[2:]).group().replace("−", "-"))
        return any(v > 0 and round(math.log10(v)) == exponent for v in values)
    if kind == "sci":
        m = re.match(r"(\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|×|·)\s*10\^\{?([-−]?\d+)", stated)
        mantissa, exponent = m.group(1), int(m.group(2).replace("−", "-"))
    else:   # enote
        mantissa, exponent = re.split(r"e", stated.replace("−", "-"))
        exponent = int(exponent)
    want, places = float(mantissa) * 10.0 ** exponent, decimals(mantissa)
    return any(v > 0 and math.isclose(float(f"{v:.{places}e}"), want, rel_tol=1e-9) for v in values)


def evaluate(expression: str) -> float:
    """The value of an arithmetic entry (an expression written in this file, with `math`)."""
    return float(eval(expression, {"__builtins__": {}, "math": math}))


def unbacked(name: str) -> list[str]:
    nb = read_nb(SOLUTIONS / f"{name}.ipynb")
    printed = printed_numbers(nb)
    quoted, arithmetic = {**QUOTED_FROM_HANDOUT[name], **NOT_A_MEASUREMENT[name]}, ARITHMETIC[name]
    missing = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for kind, stated in prose_numbers(cell.source):
            if stated in quoted or backed(kind, stated, printed):
                continue
            if stated in arithmetic and backed(kind, stated, [repr(abs(evaluate(arithmetic[stated])))]):
                continue
            missing.append(f"cell {index}: {stated!r} ({kind})")
    return missing


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_number_in_the_prose_is_printed_or_quoted(name):
    missing = unbacked(name)
    assert not missing, (
        f"{name}: numbers stated in the markdown that no output of the notebook prints and that are not "
        f"listed (as quoted from the handout, as arithmetic, or as an example that is not a measurement) in "
        f"tests/test_prose_numbers.py:\n  "
        + "\n  ".join(missing))


def test_every_listed_exception_is_still_used():
    """A quote list that outlives its sentence would hide the next unbacked number of that value."""
    for name in NOTEBOOK_NAMES:
        nb = read_nb(SOLUTIONS / f"{name}.ipynb")
        stated = {s for cell in nb.cells if cell.cell_type == "markdown" for _, s in prose_numbers(cell.source)}
        for listed in (*QUOTED_FROM_HANDOUT[name], *NOT_A_MEASUREMENT[name], *ARITHMETIC[name]):
            assert listed in stated, f"{name}: {listed!r} is listed in tests/test_prose_numbers.py but never stated"


def test_arithmetic_entries_are_right():
    for name, entries in ARITHMETIC.items():
        nb = read_nb(SOLUTIONS / f"{name}.ipynb")
        kinds = {s: k for cell in nb.cells if cell.cell_type == "markdown" for k, s in prose_numbers(cell.source)}
        for stated, expression in entries.items():
            assert stated in kinds, f"{name}: {stated!r} is listed as arithmetic but never stated"
            assert backed(kinds[stated], stated, [repr(abs(evaluate(expression)))]), (
                f"{name}: {expression} = {evaluate(expression)}, which does not round to {stated}")


@pytest.mark.parametrize("markdown, expected", [
    ("the mean column sum is 4.74, uniform $H_{64} \\approx 4.74$", [("dec", "4.74"), ("dec", "4.74")]),
    ("172 of the 200 seeds (86%) and 7.5% lean", [("count", "172 of the 200"), ("pct", "86"), ("pct", "7.5")]),
    ("agree to $10^{-7}$ (we measured $9\\times10^{-8}$; 1e-16 in float64)",
     [("pow", "10^{-7}"), ("sci", "9\\times10^{-8}"), ("enote", "1e-16")]),
    ("handout section 4.3, (handout 4.2), Theorem 6.1, notebook 2, `vmax=0.1` in code, $s = 0.5$, $\\beta = 9$", []),
    ("within a tolerance $\\le 10^{-5}$, a largest weight $\\ge 0.9995$, rows sum to 1 within $1.2\\cdot10^{-7}$",
     [("sci", "1.2\\cdot10^{-7}")]),
])
def test_the_extractor_reads_prose_as_intended(markdown, expected):
    assert prose_numbers(markdown) == expected


def test_numbers_a_cell_spells_out_in_its_own_strings_back_nothing():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        'print(f"measured {x:.2f}; our notes: 1.98")',
        outputs=[nbformat.v4.new_output("stream", name="stdout", text="measured 2.04; our notes: 1.98\n")])])
    assert printed_numbers(nb) == ["2.04"]


def test_a_claim_is_backed_only_by_a_matching_output():
    assert backed("dec", "6.07", ["6.07"]) and backed("dec", "6.07", ["6.0712"])
    assert not backed("dec", "6.07", ["6.06"])
    assert backed("pct", "86", ["0.86"]) and backed("pct", "7.5", ["7.5"]) and not backed("pct", "7.5", ["7.6"])
    assert backed("sci", "3.6\\times10^{-7}", ["3.6e-07"]) and not backed("sci", "9\\times10^{-8}", ["2.4e-07"])
    assert backed("pow", "10^{-7}", ["1.2e-07"]) and not backed("pow", "10^{-16}", ["1.2e-07"])
    assert backed("count", "172 of the 200", ["172", "200"]) and not backed("count", "172 of the 200", ["200"])
