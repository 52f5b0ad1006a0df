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


# ---- claims about pictures ------------------------------------------------------------------------
# A sentence that says what a picture shows ("the exemplars differ mostly in vertical stripes", "a dark
# first column", "dots on the diagonal") is a measured claim too: it must state a number, which the rule
# above then requires the notebook to print, or be listed here with the reason it needs none (it tells
# the reader what to look for in a picture whose numbers a nearby sentence states, or it describes a
# picture that is exact by construction). A sentence counts as such a claim when it names a picture
# and a pattern in it.
PICTURE_WORDS = re.compile(r"\b(pictures?|heatmaps?|grid|plots?|scatter|histogram|curves?|figures?|panels?|exemplars?|"
                           r"scale|top row|bottom row|colou?rs?|dots|shows?|looks?|visible|see)\b", re.I)
PATTERN_WORDS = re.compile(r"\b(stripes?|diagonal|first column|column 0|dark|pale|white|confetti|cloud|clusters?|"
                           r"band|sharp)\b", re.I)
SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z*(`$])|\n\s*[*\d]+[.)]?\s+|\n\n")

PICTURE_CLAIMS_WITHOUT_NUMBER: dict[str, dict[str, str]] = {
    "01-on-paper": {},
    "02-the-head": {},
    "03-the-tests": {},
    "04-attention-on-text": {
        "This notebook builds the smallest such": "the notebook's outline; section 6 prints the column sums behind "
                                                  "'the heavy first column'",
        "What to look for: the **top-left corner is dark**": "row 0's one weight is 1 by the simplex constraint "
                                                              "(printed in section 6); the next sentence states the "
                                                              "measured weights of the pale rows",
        "To see the departures from uniform": "how the relative picture's colour scale is made, not what it shows",
        "**Exemplars, row by row.** Pick the seed": "how the exemplars are chosen",
        "In the bottom row are the numbers": "what the bottom row plots; the cell prints its numbers",
        "*Full marks:* row 0 must put": "the written answer's grading rubric",
    },
    "05-attention-as-smoothing": {},
    "06-going-further": {},
}


def sentences(markdown: str) -> list[str]:
    text = CODE.sub(" ", markdown)
    return [" ".join(s.split()) for s in SENTENCE_END.split(text) if s and s.strip()]


def picture_claims(markdown: str) -> list[str]:
    """The sentences of a markdown cell that say what a picture shows: a picture word and a pattern word,
    or stripes (a pattern only a picture has)."""
    return [s for s in sentences(markdown)
            if (PICTURE_WORDS.search(s) and PATTERN_WORDS.search(s)) or re.search(r"\bstripes?\b", s, re.I)]


def unbacked_picture_claims(name: str) -> list[str]:
    nb = read_nb(SOLUTIONS / f"{name}.ipynb")
    listed = PICTURE_CLAIMS_WITHOUT_NUMBER[name]
    missing = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for claim in picture_claims(cell.source):
            if prose_numbers(claim) or any(claim.startswith(prefix) for prefix in listed):
                continue
            missing.append(f"cell {index}: {claim[:160]!r}")
    return missing


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_claim_about_a_picture_states_a_printed_number(name):
    missing = unbacked_picture_claims(name)
    assert not missing, (
        f"{name}: sentences that say what a picture shows without a number the notebook prints (state the "
        f"measurement, printed by the cell, or list the sentence's start in PICTURE_CLAIMS_WITHOUT_NUMBER with why):"
        f"\n  " + "\n  ".join(missing))


def test_every_listed_picture_claim_is_still_made():
    for name in NOTEBOOK_NAMES:
        nb = read_nb(SOLUTIONS / f"{name}.ipynb")
        claims = [c for cell in nb.cells if cell.cell_type == "markdown" for c in picture_claims(cell.source)]
        for prefix in PICTURE_CLAIMS_WITHOUT_NUMBER[name]:
            assert any(c.startswith(prefix) for c in claims), f"{name}: {prefix!r} is listed but no longer claimed"


def test_the_claim_finder_reads_sentences_about_pictures():
    text = ("On the relative scale the exemplars differ mostly in **vertical stripes**: some keys get more. "
            "The diagonal is never masked. Seed 136 shows a dark first column in 25.4% of its rows.")
    claims = picture_claims(text)
    assert [c[:20] for c in claims] == ["On the relative scal", "Seed 136 shows a dar"]
    assert not prose_numbers(claims[0]) and prose_numbers(claims[1]) == [("pct", "25.4")]
