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

from conftest import NOTEBOOK_NAMES, STEP4, read_nb

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
    "04-attention-on-text": {},
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
    "06-going-further": {
        "90": "the vowel head's spec: its latest vowel gets more than 90% of its row's weight",
    },
}

# ... or measured over more seeds than a notebook can build in reasonable time, by a script under tests/
# (with the name of its figure); the slow test below measures again and checks each stated figure.
MEASURED_IN_TESTS: dict[str, dict[str, str]] = {
    "04-attention-on-text": {                 # tests/measure_04_heads.py, 2,000 seeds
        "15.5": "diagonal_chance", "2.8": "diagonal_excess", "2.2e-09": "diagonal_p",
    },
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
    quoted = {**QUOTED_FROM_HANDOUT[name], **NOT_A_MEASUREMENT[name], **MEASURED_IN_TESTS.get(name, {})}
    arithmetic = ARITHMETIC[name]
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
        for listed in (*QUOTED_FROM_HANDOUT[name], *NOT_A_MEASUREMENT[name], *ARITHMETIC[name],
                       *MEASURED_IN_TESTS.get(name, {})):
            assert listed in stated, f"{name}: {listed!r} is listed in tests/test_prose_numbers.py but never stated"


@pytest.mark.slow
def test_figures_measured_in_tests_hold_when_measured_again():
    """Notebook 04's figures over 2,000 seeds (tests/measure_04_heads.py): each stated number, and the
    sentence that states them, against a new measurement."""
    from measure_04_heads import measure
    m = measure()
    nb = read_nb(SOLUTIONS / "04-attention-on-text.ipynb")
    text = " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    kinds = {s: k for cell in nb.cells if cell.cell_type == "markdown" for k, s in prose_numbers(cell.source)}
    for stated, key in MEASURED_IN_TESTS["04-attention-on-text"].items():
        assert stated in kinds, f"{stated!r} is listed as measured in tests/measure_04_heads.py but never stated"
        assert backed(kinds[stated], stated, [repr(abs(m[key]))]), f"{stated!r}: measured again, {key} = {m[key]!r}"
    sentence = (f"Over 2,000 seeds (measured by tests/measure_04_heads.py, too slow for this notebook) "
                f"{m['diagonal_heads']} heads cross the line where chance gives")
    assert m["seeds"] == 2000 and sentence in text.replace("`", ""), f"the notebook no longer says {sentence!r}"


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
        "What to look for in this head: the **top-left corner is dark**": "row 0's one weight is 1 by the simplex "
                                                                          "constraint (printed in section 6); the next "
                                                                          "sentence states the measured weights",
        "The handout's experiment: train nothing, plot": "the handout's task, quoted",
        "To count, reduce a matrix to two numbers": "the definition of the two shares the student writes",
        "Section 5 counts the families and measures where the stripes": "a pointer to section 5, whose cells print "
                                                                        "its numbers",
        "The first term, key $j$'s **column effect**": "the algebra of the mechanism; its correlations are stated "
                                                       "two sentences on and printed under the picture",
        "The left panel shows the column effect at work": "what the panels draw",
        "The **relative picture** draws each weight": "how the relative picture and the key test are made; the box "
                                                       "prints the key test's numbers",
        "*Full marks:* row 0 must put": "the written answer's grading rubric",
        "A full answer names: how far from uniform": "the family answer's grading rubric, shown with its question",
        "A column collapse is a stripe that falls on key 0": "the reading of the counts the sentence before states",
        "Counted against chance, column collapse is real": "the checkpoint's summary of section 5, whose cells print "
                                                           "the counts",
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


# ---- claims over seeds ----------------------------------------------------------------------------
# A sentence that states a statistic over many seeds ("over 200 seeds the median is 0.85", "most heads
# are near-uniform", "in 164 of the 200 seeds") is checked twice: its numbers must be printed by the
# notebook (above), and the statistic is computed again here, over the same seeds, from the course's own
# construction, independently of the notebook's code: a claim about "most seeds" holds only if it holds
# over them. Every sentence that speaks of seeds or heads in the plural must be listed: in SEED_CLAIMS
# with the function that recomputes what it claims, or in NOT_SEED_CLAIMS with why it claims nothing.
SEED_SENTENCE = re.compile(r"\b(?:most|every|all|practically every|\d+ of the \d+|(?:over|across|among)(?: the)? \d+)"
                           r"\s+(?:random\s+|untrained\s+)?(?:seeds?|heads)\b|\bover seeds\b|\bacross seeds\b", re.I)


def _text_heads(n: int = 200):
    """The handout's construction for seeds 0..n-1 (tok_emb, pos_emb, head, in that order): A, q, k, and
    the traces of W_Q W_K^T, as the notebook's handout_attention builds them."""
    import torch
    import torch.nn as nn

    from dlcourse.data import Vocab, load_text
    from dlcourse.head import Head
    text = load_text()
    vocab = Vocab(text)
    idx = torch.tensor(vocab.encode(text[:64]))[None, :]
    As, qs, ks, traces = [], [], [], []
    with torch.no_grad():
        for seed in range(n):
            torch.manual_seed(seed)
            tok, pos, head = nn.Embedding(vocab.size, 32), nn.Embedding(64, 32), Head(32, 16, T_max=64)
            x = tok(idx) + pos(torch.arange(64))[None, :]
            head(x)
            As.append(head.A[0])
            qs.append(head.query(x)[0])
            ks.append(head.key(x)[0])
            traces.append((head.query.weight * head.key.weight).sum().item())
    return torch.stack(As), torch.stack(qs), torch.stack(ks), torch.tensor(traces)


_CACHE: dict = {}


def _heads04():
    """Every statistic notebook 04 states over its 200 seeds, recomputed."""
    if "04" in _CACHE:
        return _CACHE["04"]
    import torch
    As, qs, ks, traces = _text_heads()
    rows = torch.arange(1, 64)
    top = As[:, 1:].argmax(dim=-1)                                                  # (200, 63)
    diagonal, column = (top == rows).double().mean(1), (top == 0).double().mean(1)
    counts = torch.stack([(top == rows).sum(1), (top == 0).sum(1)], dim=1)          # (200, 2)
    busiest = torch.stack([torch.bincount(t, minlength=64).max() for t in top]).double()
    g = torch.Generator().manual_seed(0)
    random_top = (torch.rand(2000, 63, generator=g) * (rows + 1)).long()
    random_busiest = torch.stack([torch.bincount(t, minlength=64).max() for t in random_top]).double()
    p = torch.zeros(64, dtype=torch.float64)
    p[0] = 1.0
    for i in range(1, 64):
        p = p * (1 - 1 / (i + 1)) + torch.cat([p.new_zeros(1), p[:-1]]) / (i + 1)
    at_least = p.flip(0).cumsum(0).flip(0)
    line = int((at_least < 0.01).nonzero()[0])
    family = ["diagonal" if d >= line and d >= c else "column" if c >= line else "uniform" for d, c in counts.tolist()]
    logs = torch.where(As > 0, As.double().log(), torch.nan)[:, 8:]
    spread = (logs - logs.nanmean(dim=-1, keepdim=True)).pow(2).nanmean(dim=-1).sqrt()
    powered = As.double() ** 16
    sharp = powered / powered.sum(-1, keepdim=True)
    d_k = 16
    bonus = 2 * traces.double() / d_k ** 0.5
    logs_all = As.double().log()
    allowed = torch.tril(torch.ones(64, 64, dtype=torch.bool))
    centred = logs_all - (torch.where(allowed, logs_all, 0).sum(-1) / allowed.sum(-1))[..., None]   # log A_ij - row mean
    tilt = centred.diagonal(dim1=1, dim2=2)[:, 1:].mean(1)
    effects = torch.einsum("ntd,nd->nt", ks, qs.mean(1)).double() / d_k ** 0.5     # (200, 64)
    seen = torch.tril(torch.ones(64, 64, dtype=torch.bool))[1:]
    column_tilt = torch.where(seen, centred[:, 1:], 0).sum(1) / seen.sum(0)
    competitors = torch.where(seen, effects[:, None, :], 0).sum(-1) / seen.sum(-1)
    key0 = (effects[:, :1] - competitors).mean(1)
    deviation = torch.einsum("nid,njd->nij", qs - qs.mean(1, keepdim=True), ks).double() / d_k ** 0.5
    spread0 = deviation[:, 1:, 0].std(dim=1)
    spreads = torch.stack([deviation[:, j:, j].std(dim=1) for j in range(1, 56)], dim=1)
    wide = spread0 / spreads.median(dim=1).values

    def r(a, b):
        return torch.corrcoef(torch.stack([a.double(), b.double()]))[0, 1].item()

    within = torch.tensor([r(effects[s, :56], column_tilt[s, :56]) for s in range(200)])
    column_sums = As.sum(dim=1)
    from measure_04_heads import chance_tail
    per_key = torch.stack([torch.bincount(t, minlength=64) for t in top])
    crossed, by_chance, rarest = [], [], []
    for key in range(56):
        key_tail = chance_tail(max(key, 1))
        key_line = int((key_tail < 0.01).nonzero()[0])
        crossed.append(int((per_key[:, key] >= key_line).sum()))
        by_chance.append(200 * key_tail[key_line].item())
        rarest.append(key_tail[per_key[:, key]].min().item())
    excess = torch.tensor(crossed) / torch.tensor(by_chance)
    out = {
        "spread": spread.median().item(), "largest": As[:, 16:].max(-1).values.median().item(),
        "largest16": sharp[:, 16:].max(-1).values.median().item(),
        "diagonal": diagonal.mean().item(), "column": column.mean().item(),
        "busiest": busiest.median().item(), "random_busiest": random_busiest.median().item(),
        "chance": (1 / (rows + 1.0)).mean().item(),
        "near_uniform": family.count("uniform"), "column_collapse": family.count("column"),
        "diagonal_hugging": family.count("diagonal"), "expected": 200 * at_least[line].item(),
        "most_diagonal_p": 1 - (1 - at_least[int(counts[:, 0].max())].item()) ** 200,
        "most_column_p": 1 - (1 - at_least[int(counts[:, 1].max())].item()) ** 200,
        "r_trace_tilt": r(bonus, tilt), "r_effect_tilt0": r(key0, column_tilt[:, 0]),
        "r_spread_count0": r(wide, counts[:, 1]), "r_effect_count0": r(key0, counts[:, 1]),
        "within": within.median().item(),
        "first_column_largest": int((column_sums.argmax(1) == 0).sum()),
        "column0_mean_sum": column_sums[:, 0].mean().item(),
        "column0_ratio": (As[:, 8:, 0] * torch.arange(9, 65)).median().item(),
        "all_ratio": (As[:, 8:] * torch.arange(9, 65)[:, None])[:, torch.tril(torch.ones(64, 64, dtype=torch.bool))[8:]].median().item(),
        "a00_all_one": bool((As[:, 0, 0] == 1).all()),
        "key0_excess": excess[0].item(), "other_keys_excess": sum(crossed[1:]) / sum(by_chance[1:]),
        "key0_rank": int((excess > excess[0]).sum()) + 1, "rarer_keys": sum(p <= rarest[0] for p in rarest[1:]),
        "tilt_positive": (tilt > 0).double().mean().item(),
    }
    _CACHE["04"] = out
    return out


def _scale03():
    """notebook 03's scale table over 200 seeds, by its spec: unit-normal q, k of shape (4, 8, d_k)."""
    import torch
    widths, stats = (16, 64, 256), {}
    for d_k in widths:
        stats[d_k] = {"ratio": [], "max_raw": [], "max_scaled": []}
    for seed in range(200):
        g = torch.Generator().manual_seed(seed)
        for d_k in widths:
            q, k = torch.randn(4, 8, d_k, generator=g), torch.randn(4, 8, d_k, generator=g)
            raw = q @ k.transpose(-2, -1)
            stats[d_k]["ratio"].append(raw.std().item() / d_k ** 0.5)
            stats[d_k]["max_raw"].append(torch.softmax(raw, -1).max().item())
            stats[d_k]["max_scaled"].append(torch.softmax(raw / d_k ** 0.5, -1).max().item())
    mean = {d_k: {key: sum(v) / len(v) for key, v in s.items()} for d_k, s in stats.items()}
    ratio = sum(mean[d]["ratio"] for d in widths) / len(widths)
    practically_every = all(sum(round(v, 3) == 1.0 for v in stats[d]["max_raw"]) >= 0.95 * 200 for d in (64, 256))
    return {"1.00": (ratio, "dec"), "0.998": (mean[16]["max_raw"], "dec"),
            "practically every seed": (practically_every, "bool"),
            "between 0.665 and 0.690": ((min(mean[d]["max_scaled"] for d in widths),
                                      max(mean[d]["max_scaled"] for d in widths)), "range")}


def _c04(*keys):
    """The named statistics of notebook 04, as {text stated in the prose: (value, kind)}."""
    def check():
        s = _heads04()
        return {text: (s[key], kind) for text, key, kind in keys}
    return check


SEED_CLAIMS: dict[str, dict] = {
    "03-the-tests": {
        "The handout's pattern holds": _scale03,
        "* The handout's scaled column falling": _scale03,
        "At $d_k$ = 64 and 256 it is 1.000": _scale03,
    },
    "04-attention-on-text": {
        "**What the grid shows, measured over 200 seeds**": _c04(
            ("0.60", "spread", "dec"), ("0.080", "largest", "dec"), ("0.93", "largest16", "dec"),
            ("6.4", "diagonal", "pct"), ("6.3", "column", "pct"), ("5.9", "chance", "pct"),
            ("median of 8 of the 63 rows", "busiest", "dec"), ("give 6 of the 63", "random_busiest", "dec")),
        "As built, every head is close to uniform, and by their rows' top keys most heads": _c04(
            ("most heads are near-uniform", "near_uniform", "most")),
        "Column collapse is real, and not special to key 0": _c04(
            ("15 heads cross the 1% line", "column_collapse", "int"), ("put 1.6 there", "expected", "dec"),
            ("(9.6 times chance)", "key0_excess", "dec"), ("together 8.5 times", "other_keys_excess", "dec"),
            ("ranks 19 of the 56", "key0_rank", "int"), ("and 13 other keys", "rarer_keys", "int")),
        "Diagonal hugging, as built, is weak but real": _c04(
            ("4 heads of these 200", "diagonal_hugging", "int"),
            ("reaches anyway (probability 0.35)", "most_diagonal_p", "dec")),
        "Both tilts have a mechanism you can compute": _c04(
            ("a correlation of 0.66 with its tilt", "r_trace_tilt", "dec"), ("0.99 for column 0's tilt", "r_effect_tilt0", "dec"),
            ("spread (0.69)", "r_spread_count0", "dec"), ("column effect (0.36)", "r_effect_count0", "dec")),
        "So a key tops many rows (a stripe, or column collapse for key 0)": _c04(
            ("spread (a correlation of 0.69)", "r_spread_count0", "dec"), ("column effect (0.36)", "r_effect_count0", "dec"),
            ("column effect (0.99;", "r_effect_tilt0", "dec")),
        "Every picture so far has a dark top-left corner": _c04(("164", "first_column_largest", "int")),
        "Within one lower row, column 0 gets about its uniform share": _c04(
            ("is 0.85", "column0_ratio", "dec"), ("and 0.84 for all", "all_ratio", "dec")),
        "An untrained head is close to uniform, so its column sums follow": _c04(("4.74", "column0_mean_sum", "dec")),
        "$A_{00} = 1$ in every seed": _c04(("in every seed", "a00_all_one", "bool")),
    },
}
NOT_SEED_CLAIMS: dict[str, dict[str, str]] = {
    "01-on-paper": {"| notebook | handout | what you do |": "the table of contents: what notebook 4 does"},
    "03-the-tests": {"One seed is one sample; the box below averages": "what the box does"},
    "04-attention-on-text": {
        "This notebook builds the smallest such": "the notebook's outline",
        "The left panel shows the column effect at work": "what the panels draw; their correlations are claimed "
                                                          "and printed under them",
    },
    "06-going-further": {"**Across seeds.** The same four gaps": "what the cell does"},
}


# Claims over seeds that, recomputed, do not hold, in a section another change is rewriting (notebook 03's
# scale table): each with what it says and what the seeds give. The test below keeps the entry true (the
# sentence still says it, the seeds still give that), so the entry must go once the sentence is fixed.
def seed_sentences(name: str) -> list[tuple[int, str]]:
    nb = read_nb(SOLUTIONS / f"{name}.ipynb")
    return [(index, s) for index, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
            for s in sentences(cell.source) if SEED_SENTENCE.search(s)]


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_sentence_about_seeds_is_recomputed_or_says_why_not(name):
    listed = {**SEED_CLAIMS.get(name, {}), **NOT_SEED_CLAIMS.get(name, {})}
    missing = [f"cell {i}: {s[:140]!r}" for i, s in seed_sentences(name) if not any(s.startswith(p) for p in listed)]
    assert not missing, (
        f"{name}: sentences about many seeds or heads that tests/test_prose_numbers.py neither recomputes "
        "(SEED_CLAIMS) nor lists as claiming nothing (NOT_SEED_CLAIMS):\n  " + "\n  ".join(missing))


def _holds(kind: str, value) -> bool:
    if kind == "bool":
        return bool(value)
    if kind == "most":
        return value > 100                          # more than half of the 200 seeds
    raise ValueError(kind)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SEED_CLAIMS))
def test_claims_over_seeds_hold_when_computed_again(name):
    nb = read_nb(SOLUTIONS / f"{name}.ipynb")
    cells = {s: cell.source for cell in nb.cells if cell.cell_type == "markdown" for s in sentences(cell.source)}
    for prefix, compute in SEED_CLAIMS[name].items():
        cell = next((source for s, source in cells.items() if s.startswith(prefix)), None)
        assert cell is not None, f"{name}: {prefix!r} is listed in SEED_CLAIMS but no longer said"
        text = " ".join(CODE.sub(" ", cell).split())
        for stated, (value, kind) in compute().items():
            assert stated in text, f"{name}: {prefix!r}: its cell no longer says {stated!r}"
            if kind == "int":
                ok = int(re.findall(r"\d+", stated)[0]) == value        # the first integer: a count
            elif kind == "sci":
                ok = backed("enote", re.search(r"\d+(?:\.\d+)?e-\d+", stated).group(), [repr(float(value))])
            elif kind == "range":                       # "between a and b": the lowest and highest, as stated
                low, high = re.findall(r"\d+\.\d+", stated)[:2]
                ok = backed("dec", low, [repr(value[0])]) and backed("dec", high, [repr(value[1])])
            elif kind in ("dec", "pct"):
                number = re.findall(r"\d+(?:\.\d+)?", stated)[0]          # the first number: the claim
                ok = backed(kind, number, [repr(abs(float(value)))])
            else:
                ok = _holds(kind, value)
            assert ok, f"{name}: {prefix!r} says {stated!r}; computed again over the seeds: {value!r}"


def test_every_listed_seed_sentence_is_still_said():
    for name in NOTEBOOK_NAMES:
        said = [s for _, s in seed_sentences(name)]
        nb = read_nb(SOLUTIONS / f"{name}.ipynb")
        all_sentences = [s for cell in nb.cells if cell.cell_type == "markdown" for s in sentences(cell.source)]
        for prefix in NOT_SEED_CLAIMS.get(name, {}):
            assert any(s.startswith(prefix) for s in said), f"{name}: {prefix!r} is listed but no longer said"
        for prefix in SEED_CLAIMS.get(name, {}):
            assert any(s.startswith(prefix) for s in all_sentences), f"{name}: {prefix!r} is listed but no longer said"


def test_the_seed_sentence_finder_reads_claims_over_seeds():
    found = [bool(SEED_SENTENCE.search(s)) for s in (
        "over 200 seeds the median is 0.85", "most heads are near-uniform", "in 164 of the 200 seeds",
        "seed 0 gives 0.993", "the heatmap of seed 0")]
    assert found == [True, True, True, False, False]
