"""The similarity report lists answers alike across the class (renamed variables, unused padding and
another order do not hide a copy), leaves apart answers that differ, untouched ones and short ones,
ranks every copy of the synthetic class above every pair of honest students, by its whole answers
and by its code alone, and so every copy made mechanically from the honest students' code (renamed,
a varied dead statement, an inert one (a value nobody reads, an assertion that holds, an unused
library value, a name rebound to itself, a guard that only raises) or an unused function before
every statement, moved and reversed, names
in redundant parentheses, all of these at once; and program rewrites, `while` loops for `for`s,
append loops for comprehensions, single-use names inlined, products with an inverse for divisions,
returns as an element of a literal, bodies moved into helpers, each alone, together and with all
the others), honest pairs staying below the threshold; its normalising keeps what an answer reads,
calls and returns and drops what nothing reads, writes each known rewrite and its original as one
text and leaves apart code that only looks like one; it shows the matching regions side by side,
on the student's own lines (an inlined value on its own) and never on the padding, in a page where
a student's text is only text, and changes no grade."""
import json
import re

from autograder.example import with_answers
from autograder.publish.similarity import matches, normalise_code, ranked, report, similar_pairs

from conftest import STEP, STEP4
from hostile import REQUEST_HOST, dangers

NB = "02-the-head"
OWN = '''def scores_entrywise(q, k):
    T, d = q.shape
    out = torch.empty(T, T)
    for i in range(T):
        for j in range(T):
            out[i, j] = (q[i] * k[j]).sum() / d ** 0.5
    return out
'''
RENAMED = OWN.replace("out", "result").replace("T, d", "n, dim").replace("(T)", "(n)").replace("d ** 0.5", "dim ** 0.5") \
    .replace("torch.empty(T, T)", "torch.empty(n, n)") + "# my own work\n"
OTHER = '''def scores_entrywise(q, k):
    # the whole matrix at once, then nothing else
    return (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
'''



def same(a: str, b: str, roots=frozenset({"f"})) -> bool:
    """Whether two codes normalise to one text (the functions of `roots` kept)."""
    return normalise_code(a, roots)[0] == normalise_code(b, roots)[0]


# an answer of four plain lines, the text the padded copies must normalise back to
PLAIN = "def f(q, k):\n    d = q.shape[-1]\n    s = q @ k.T\n    out = s / d ** 0.5\n    return out\n"

def test_the_model_solution_is_discounted_and_pairs_are_grouped_by_student(grading_home):
    """A class that hands in the solution everywhere (and two students who share one extra answer)
    lists one pair of students, not one line per cell for every pair."""
    from autograder.example import answers_of
    from autograder.publish.similarity import by_student_pair
    model = answers_of(STEP4, NB)["scores_entrywise"]
    for sid in ("ada", "bob", "cy", "dan"):
        graded(grading_home, sid, model)                 # the model solution, word for word
    assert similar_pairs(STEP, 0.8) == []
    grouped = by_student_pair([
        {"notebook": "a", "grade_id": "x", "student_a": "ada", "student_b": "bob", "similarity": 0.9},
        {"notebook": "b", "grade_id": "y", "student_a": "ada", "student_b": "bob", "similarity": 1.0},
        {"notebook": "a", "grade_id": "x", "student_a": "bob", "student_b": "cy", "similarity": 0.95}])
    assert [(g["student_a"], g["student_b"], g["answers_alike"], g["max_similarity"]) for g in grouped] == \
           [("ada", "bob", 2, 1.0), ("bob", "cy", 1, 0.95)]
    assert grouped[0]["answers"] == "b/y 1.00; a/x 0.90"


def graded(home, sid, answer, grade_id="scores_entrywise"):
    path = home / "autograded" / sid / STEP / f"{NB}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(with_answers(STEP4, NB, {grade_id: answer})))


def test_renamed_copies_are_listed_and_different_answers_are_not(grading_home):
    assert normalise_code("a = b + 1  # x")[0] == normalise_code("zz = yy + 2")[0] == "N=N+L"
    graded(grading_home, "ada", OWN)
    graded(grading_home, "bob", RENAMED)
    graded(grading_home, "cy", OTHER)
    pairs = [p for p in similar_pairs(STEP, 0.8) if p["grade_id"] == "scores_entrywise"]
    assert [(p["student_a"], p["student_b"]) for p in pairs] == [("ada", "bob")] and pairs[0]["similarity"] == 1.0
    # every other answer of the three is the model solution: not listed (it is not their own text)
    assert {p["grade_id"] for p in similar_pairs(STEP, 0.8)} == {"scores_entrywise"}
    before = sorted(p.read_bytes() for p in grading_home.rglob("*.ipynb"))
    dest = report(STEP, 0.8, say=lambda *a: None)
    assert dest.read_text().splitlines() == ["student_a,student_b,answers_alike,max_similarity,mean_similarity,answers",
                                             f"ada,bob,1,1.0,1.0,\"{NB}/scores_entrywise 1.00\""]
    assert sorted(p.read_bytes() for p in grading_home.rglob("*.ipynb")) == before


PADDING = '''

def _spread(values):
    """Not used: ten lines that are not the copied answer."""
    total = 0.0
    for value in values:
        total += value
    mean = total / max(len(values), 1)
    square = 0.0
    for value in values:
        square += (value - mean) ** 2
    return (square / max(len(values), 1)) ** 0.5
'''
TWO_FUNCTIONS = '''def _row(q_i, k, d):
    """One row of scores."""
    return torch.stack([(q_i * k_j).sum() / d ** 0.5 for k_j in k])


def scores_entrywise(q, k):
    T, d = q.shape
    rows = []
    for i in range(T):
        rows.append(_row(q[i], k, d))
    return torch.stack(rows)
'''


def _reordered(source: str) -> str:
    first, second = source.split("\n\n\n")
    return second.rstrip("\n") + "\n\n\n" + first + "\n"


def test_a_copy_padded_with_an_unused_helper_or_reordered_is_listed(grading_home):
    """The issue's case: the same copy with an unused ten-line helper added (0.29 against 0.8 by the
    share of the whole answer); and a copy with its functions in the other order."""
    graded(grading_home, "ada", OWN)
    graded(grading_home, "bob", RENAMED + PADDING)
    graded(grading_home, "cy", OTHER)
    graded(grading_home, "dan", TWO_FUNCTIONS)
    graded(grading_home, "eve", _reordered(TWO_FUNCTIONS).replace("rows", "out").replace("q_i", "x"))
    pairs = {(p["student_a"], p["student_b"]): p["similarity"] for p in similar_pairs(STEP, 0.8)}
    assert set(pairs) == {("ada", "bob"), ("dan", "eve")}, pairs
    assert pairs[("ada", "bob")] == 1.0 and pairs[("dan", "eve")] >= 0.9, pairs
    order = [(p["student_a"], p["student_b"]) for p in ranked(STEP)]
    assert set(order[:2]) == {("ada", "bob"), ("dan", "eve")}, order


def test_the_synthetic_class_ranks_each_copy_above_every_honest_pair(grading_home, capsys):
    """Six honest students (the proof corpus's correct variants, written answers of their own) and
    four who copied one of them: renamed, padded with an unused helper, reordered, a dead statement
    before every statement. Each copy is listed at the default threshold, and ranked above every
    pair of students who did not copy, by its whole answers and by its code alone (the copies'
    written answers are the victim's word for word, which alone would list them)."""
    from similarity_class import COPIES, build
    build(grading_home)
    computed = matches(STEP)
    pairs = ranked(STEP, found=computed)
    copies = {tuple(sorted((copier, victim))): copier for copier, victim in COPIES.items()}
    found = {copies[(p["student_a"], p["student_b"])]: p for p in pairs if (p["student_a"], p["student_b"]) in copies}
    honest = [p for p in pairs if not {p["student_a"], p["student_b"]} & set(COPIES)]
    # the copies carry the written answers word for word: their code is measured on its own too
    code = ranked(STEP, found=[m for m in computed if m.a.kind == "code"])
    code_found = {copies[(p["student_a"], p["student_b"])]: p for p in code
                  if (p["student_a"], p["student_b"]) in copies}
    code_honest = [p for p in code if not {p["student_a"], p["student_b"]} & set(COPIES)]
    with capsys.disabled():
        for name, ranking, by_copy, fair in (("", pairs, found, honest), (", code only", code, code_found, code_honest)):
            print(f"\nsynthetic class{name}: {len(ranking)} pairs sharing text; "
                  + "; ".join(f"{c}: rank {by_copy[c]['rank']}, {by_copy[c]['score']:.2f}" for c in COPIES)
                  + f"; best honest pair: rank {fair[0]['rank']}, {fair[0]['score']:.2f} "
                  f"({fair[0]['student_a']}, {fair[0]['student_b']})")
    for by_copy, fair in ((found, honest), (code_found, code_honest)):
        assert set(by_copy) == set(COPIES), sorted(by_copy)
        assert all(by_copy[c]["score"] >= 0.8 for c in COPIES), {c: by_copy[c]["score"] for c in COPIES}
        assert max(by_copy[c]["rank"] for c in COPIES) < fair[0]["rank"], (by_copy, fair[0])
        assert fair[0]["score"] < 0.8, fair[0]
    listed = {(p["student_a"], p["student_b"]) for p in similar_pairs(STEP, 0.8, found=computed)}
    assert set(copies) <= listed and not {pair for pair in listed if not set(pair) & set(COPIES)}, listed


def test_the_page_shows_matching_regions_side_by_side_and_student_text_only_as_text(grading_home):
    hostile = OWN.replace("# my own work", "") + (
        f'    # </pre><img src="http://{REQUEST_HOST}/sim.png"><script>alert(1)</script>\n'
        f'    note = "<style>body{{background:url(//{REQUEST_HOST}/x)}}</style><div class=navbar-fixed-top>"\n')
    graded(grading_home, "ada", hostile)
    graded(grading_home, "bob", RENAMED + PADDING)
    report(STEP, 0.8, say=lambda *a: None)
    page = (grading_home / "similarity.html").read_text()
    head, body = page.split("</head>")
    assert "Content-Security-Policy" in head and "default-src 'none'" in head and "img-src 'self' data:" in head
    assert not [d for d in dangers(body) if d != "<body>"], dangers(body)
    assert REQUEST_HOST not in re.sub(r"&lt;.*?&gt;|&quot;.*?&quot;", "", body.replace("\n", " "))
    assert "&lt;img src=&quot;http://" in body and "&lt;script&gt;" in body       # shown, as text
    assert re.findall(r"class='side'", body) == ["class='side'", "class='side'"]
    assert body.count("<mark>") >= 2 and "_spread" in body                      # shared regions marked, the rest shown
    assert not re.search(r"<mark>[^<]*_spread", body), "the unused helper is marked as shared"


def test_every_disguised_copy_ranks_above_every_honest_pair_by_its_code_alone(grading_home, record_property, capsys):
    """Copies made mechanically (tests/similarity_class.py's DISGUISES, from a seeded generator) of
    the honest students' code, written answers left out: renamed; a varied dead statement before
    every statement (a chain of unused names, constants, `pass`, `print()`); an inert statement before
    every statement (`len(())`, `q.size()`, `assert q is not None`: similarity_class.inert_between); an unused
    library value (`torch.zeros(1)`, `spare = torch.ones_like(q)`, `math.sqrt(2)`: library_calls), a name
    rebound to itself through an identity (`q = q * 1`, `k += 0`: identity_rebinds) or a guard clause that
    only raises (`if q is None: raise ValueError('bad input')`: guards) before every statement; an unused
    function before every statement; answers moved a cell on and in reverse order; every name in redundant
    parentheses; a store to each assigned name before it, overwritten, and `x = x`; a block that never
    runs (`if False:`) before every statement, writing to the answer's own names; neighbouring
    independent assignments swapped; and these together; and the program rewrites (REWRITES: `for`
    loops as counter or iterator `while` loops, comprehensions as append loops, single-use names
    inlined, `a / b` as a product with the inverse, `return x` as `return (x, len([]))[0]` and the
    like, every function's body moved into a helper it calls), each alone on every cell, the six
    together, and the six with all the above. Each copy's pair with its victim scores at
    least the default threshold and above every pair of honest students, who stay below it; a copy
    that keeps its answers in their cells shares every cell whole with its victim (but where it inlines
    single-use names: see similarity_class.WHOLE); the page marks
    none of the padding lines of a padded copy."""
    from similarity_class import DISGUISES, HONEST, WHOLE, build_disguised
    copies = build_disguised(grading_home)
    computed = matches(STEP)
    assert {m.a.kind for m in computed} == {"code"}
    pairs = {(p["student_a"], p["student_b"]): p for p in ranked(STEP, found=computed)}
    honest = max((p for pair, p in pairs.items() if set(pair) <= set(HONEST)), key=lambda p: p["score"])
    scores = {copier: pairs.get(tuple(sorted((copier, victim))), {"score": 0.0})["score"]
              for copier, victim in copies.items()}
    figures = "; ".join(f"{copier} {score:.2f}" for copier, score in scores.items())
    record_property("disguised copies", figures)
    record_property("highest honest pair", f"{honest['student_a']}, {honest['student_b']}: {honest['score']:.2f}")
    with capsys.disabled():
        print(f"\ndisguised copies, code only: {figures}; highest honest pair {honest['score']:.2f} "
              f"({honest['student_a']}, {honest['student_b']})")
    assert {copier.split("-of-")[0].removeprefix("copy-") for copier in copies} == set(DISGUISES)
    assert honest["score"] < 0.8, honest
    assert all(score >= 0.8 and score > honest["score"] for score in scores.values()), (scores, honest)
    for copier, victim in copies.items():
        if copier.split("-of-")[0].removeprefix("copy-") in WHOLE:
            shares = {gid: share for m in pairs[tuple(sorted((copier, victim)))]["matches"]
                      for gid, share in m.shares.items()}
            assert shares and min(shares.values()) == 1.0, (copier, shares)
    for copier, victim in copies.items():
        if not copier.startswith("copy-padded-of-"):
            continue
        lines_marked = 0
        for m in pairs[tuple(sorted((copier, victim)))]["matches"]:
            doc, mask = (m.a, m.mask_a) if m.a.student == copier else (m.b, m.mask_b)
            victim_doc = m.b if doc is m.a else m.a
            original = {line.strip() for _, text in victim_doc.cells for line in text.splitlines()}
            for index, (gid, text) in enumerate(doc.cells):
                start = doc.cell_starts[index]
                marked = {text.count("\n", 0, a - start) for a, b in doc.spans[mask & (doc.cell_of == index)].tolist()
                          if b > a}
                padding = {number for number, line in enumerate(text.splitlines()) if line.strip() not in original}
                assert not marked & padding, (copier, gid, sorted(marked & padding))
                lines_marked += len(marked)
        assert lines_marked > 10, (copier, lines_marked)


def test_normalising_keeps_what_the_answer_needs_and_drops_what_it_does_not():
    """What the syntax tree keeps (see the module's docstring), each rule with a case either way."""
    plain = "def f(q, k):\n    T = q.shape[0]\n    rows = []\n    for i in range(T):\n        rows.append(q[i] @ k.T)\n" \
            "    return torch.stack(rows)\n"
    padded = ("def f(q, k):\n    tmp = 3\n    T = (q).shape[0]\n    x = tmp + 1\n    '.'\n    rows = []\n"
              "    spare = []\n    spare.append(x)\n    for i in ((range))(T):\n        pass\n"
              "        rows.append(((q))[i] @ k.T)\n        def g(v):\n            return v\n    print()\n"
              "    return torch.stack(rows)\n    y = 1\n\n\ndef unused(a):\n    return a\n")
    assert same(plain, padded)
    # what is read, called or written outside is kept: each of these changes the text
    assert not same(plain, plain.replace("    rows = []\n", "    rows = []\n    torch.manual_seed(0)\n"))
    assert not same(plain, plain.replace("    rows = []\n", "    rows = []\n    k[0] = 1\n"))
    assert not same(plain, plain.replace("    rows = []\n", "    rows = [T]\n"))
    assert not same(plain, plain.replace("    rows = []\n", "    rows = []\n    print(T)\n"))
    assert not same(plain, plain + "\n\ndef helper(a):\n    return a\n", roots=None)   # no stub: every name kept
    assert not same(plain, plain.replace("return torch.stack(rows)", "return torch.stack(rows) + h(T)")
                    + "\n\ndef h(a):\n    return a\n")                                  # a helper it calls
    # code that does not parse keeps every statement, as tokens
    magic = "%timeit f(q)\nx = 1\n"
    assert normalise_code(magic)[0] == normalise_code(magic + "\n")[0] != ""


def test_normalising_drops_statements_that_compute_a_value_nobody_reads_and_assertions_that_change_nothing():
    """An expression statement that calls only VALUE_BUILTINS (`len(())`, `isinstance(q, object)`) and
    VALUE_METHODS (`q.size()`, `q.clone()`) on names, constants and operators, its value unread, and an
    assertion of such an expression (`assert q is not None`, `assert True`) are dropped: a copy with one
    before every line is its original's text. Each rule with a case either way: a call of anything else,
    a method that changes its object, a builtin the code binds, a walrus, an assertion that always fails
    are kept."""
    plain = PLAIN
    inert = ["len(())", "abs(-3)", "isinstance(q, object)", "hash(0)", "sorted([2, 1])", "type(k)", "repr(None)",
             "q.size()", "k.dim()", "q.clone().float()", "q.T.contiguous()", "k.sum(dim=-1)", "q[0].numel()",
             "assert True", "assert 1", "assert q is not None", "assert isinstance(k, torch.Tensor)",
             "assert len(q.shape) == 2, 'a matrix'"]
    padded = "def f(q, k):\n" + "".join(f"    {inert[i % len(inert)]}\n    {line.strip()}\n"
                                        for i, line in enumerate(plain.splitlines()[1:]))
    assert same(plain, padded), normalise_code(padded, frozenset({"f"}))[0]
    for statement in inert:
        assert same(plain, plain.replace("    s = q", f"    {statement}\n    s = q")), statement
    for kept in ["torch.manual_seed(0)", "q.add_(1)", "k.fill_(0)", "q.append(1)", "print(q)", "setattr(q, 'x', 1)",
                 "assert False", "assert 0, 'never'", "len((d := 3,))", "next(iter(k))", "q.backward()",
                 "sorted(k, key=print)", "len([print(1)])"]:
        assert not same(plain, plain.replace("    s = q", f"    {kept}\n    s = q")), kept
    shadowing = "len = print\n\ndef f(q):\n    len(q)\n    return q\n"
    assert not same(shadowing, shadowing.replace("    len(q)\n", ""), roots=None)   # not the builtin any more


def test_normalising_drops_unused_library_values_names_rebound_to_themselves_and_guards_that_only_raise():
    """An unused call of a PURE_LIBRARY function (`torch.zeros(1)`, `torch.ones_like(q)`, `math.sqrt(2)`,
    bare or bound to a name nobody reads), a name rebound to its own value through an identity
    (`q = q * 1`, `k += 0`: IDENTITIES) and a guard clause that only raises, on a condition that changes
    nothing (`if q is None: raise ValueError('no q')`) are dropped: a copy with one before every line is
    its original's text. Each rule with a case either way: a library call that draws at random, seeds,
    saves or writes `out=`, a function not on the list, a module the code binds to something else, a
    library value an assertion or a guard checks, a rebinding that changes the value or makes a new
    object, a guard that calls something else, formats its message, does more than raise, or raises an
    exception the code binds are kept."""
    plain = PLAIN
    dropped = ["torch.zeros(1)", "torch.ones_like(q)", "math.sqrt(2)", "torch.zeros(3, dtype=torch.float64)",
               "np.arange(4)", "spare = torch.full((2,), 1.0)", "torch.tril(torch.ones(3, 3)).sum(dim=-1)",
               "math.log(k.numel())", "q = q + 0", "q = 0 + q", "k = k - 0", "q = q * 1", "k = 1 * k", "q = q / 1",
               "q = q * 1.0", "k += 0", "q *= 1", "q = (q)", "if q is None:\n        raise ValueError('no q')",
               "if k.dim() != 2:\n        raise TypeError",
               "if not isinstance(q, torch.Tensor):\n        raise TypeError('a tensor', 2)"]
    padded = "def f(q, k):\n" + "".join(f"    {dropped[i % len(dropped)]}\n    {line.strip()}\n"
                                        for i, line in enumerate(plain.splitlines()[1:]))
    assert same(plain, padded), normalise_code(padded, frozenset({"f"}))[0]
    for statement in dropped:
        assert same(plain, plain.replace("    s = q", f"    {statement}\n    s = q")), statement
    for kept in ["torch.randn(1)", "torch.manual_seed(0)", "np.random.seed(0)", "torch.save(q, 'q.pt')",
                 "torch.sum(q, 0, out=k)", "torch.ones_like(q, out=k)", "torch.zeros(*k)", "math.sqrt(print(2))",
                 "assert torch.equal(q, torch.zeros_like(q))",
                 "q = q + 1", "q = q * 2", "q = 1 - q", "q = q.clone()", "q = q // 1", "q = -q", "q = q ** 1",
                 "k -= 1", "q = k * 1", "q = q + 0 * k",
                 "if not torch.equal(q, torch.zeros_like(q)):\n        raise AssertionError('not zero')",
                 "if q is None:\n        raise ValueError(f'no {q}')", "if q.add_(1) is None:\n        raise ValueError",
                 "if q is None:\n        print(q)\n        raise ValueError",
                 "if q is None:\n        raise ValueError\n    else:\n        pass",
                 "if q is None:\n        raise MyError", "if q is None:\n        raise"]:
        assert not same(plain, plain.replace("    s = q", f"    {kept}\n    s = q")), kept
    for module, call in [("import torch", "torch.zeros(1)"), ("import numpy as np", "np.zeros(1)"),
                         ("import math", "math.sqrt(2)")]:   # imported under its usual name: still the module
        code = f"{module}\n\ndef f(q):\n    {call}\n    return q\n"
        assert same(code, code.replace(f"    {call}\n", "")), module
    for binding in ["import numpy as torch", "from lib import torch", "torch = Lib()"]:
        code = f"{binding}\n\ndef f(q):\n    torch.zeros(1)\n    return q\n"
        assert not same(code, code.replace("    torch.zeros(1)\n", "")), binding
    rebound = "ValueError = print\n\ndef f(q):\n    if q is None:\n        raise ValueError('x')\n    return q\n"
    assert not same(rebound, rebound.replace("    if q is None:\n        raise ValueError('x')\n", ""), roots=None)


def test_normalising_drops_blocks_that_never_run_dead_stores_and_puts_independent_lines_in_one_order():
    """A block under a constant condition (or one computed from small constants alone, `1 > 2`,
    `len([])`; a `for` over an empty literal or range) is the branch it takes; an assignment every name of which is
    bound again before anything reads it is dropped, and so is `x = x`; neighbouring assignments that do
    not depend on each other come in one order. Each rule with a case either way."""
    plain = PLAIN
    # blocks that never run
    assert same(plain, plain.replace("    s = q", "    if False:\n        d = d * 2\n    s = q"))
    assert same(plain, plain.replace("    s = q", "    while 0:\n        s = k\n    s = q"))
    assert same(plain, plain.replace("    s = q", "    if not True:\n        s = k\n    else:\n        pass\n    s = q"))
    assert same(plain, plain.replace("    s = q @ k.T\n", "    if 1:\n        s = q @ k.T\n    else:\n        s = k\n"))
    for never in ["if 1 > 2:", "if len([]):", "if not len('x'):", "if 3 - 3:", "while len(()) > 0:", "for _ in ():",
                  "for i in range(0):", "for i in range(5, 2):", "for c in '':"]:   # computed from constants
        assert same(plain, plain.replace("    s = q", f"    {never}\n        print(q)\n        raise ValueError\n    s = q")), never
    assert same(plain, plain.replace("    s = q @ k.T\n", "    if 2 > 1:\n        s = q @ k.T\n    else:\n        s = k\n"))
    for may in ["if d > 2:", "if len(q):", "for _ in (1,):", "for i in range(1):", "if 10 ** 10 ** 10 > 1:",
                "if [0] * 10 ** 9:", "for _ in range(d):", "if len(0):"]:   # not constants, or not computed
        assert not same(plain, plain.replace("    s = q", f"    {may}\n        print(q)\n    s = q")), may
    rebound = "len = lambda x: 1\n\ndef f(q):\n    if len([]):\n        print(q)\n    return q\n"
    assert not same(rebound, rebound.replace("    if len([]):\n        print(q)\n", ""), roots=None)
    assert not same(plain, plain.replace("    s = q", "    if d:\n        d = d * 2\n    s = q"))   # may run
    assert not same(plain, plain.replace("    s = q", "    while True:\n        break\n    s = q"))
    # dead stores and self-assignments
    assert same(plain, plain.replace("    s = q", "    s = 0\n    s = s\n    out = [1, 2]\n    s = q"))
    assert same(plain, plain.replace("    d = q", "    d = k\n    d = q"))
    assert not same(plain, plain.replace("    d = q.shape[-1]", "    d = 2\n    d = q.shape[-1] + d"))   # read first
    assert not same(plain, plain.replace("    s = q", "    s = 0\n    k = k + s\n    s = q"))      # read between
    assert not same(plain, plain.replace("    s = q", "    s = []\n    s.append(d)\n    s = q")
                    .replace("return out", "return out, g(d)"))          # a write to its object counts as a use
    shared = "scale = 2\n\ndef f(q):\n    return q * scale\n\nh = f(1)\nscale = 3\n"
    assert not same(shared, shared.replace("scale = 2\n", ""), roots=None)  # a function may read it in between
    outer = "def f(q):\n    global g\n    g = 1\n    g = q\n    return g\n"
    assert not same(outer, outer.replace("    g = 1\n", ""))                # declared global: another may read it
    # independent lines in one order, dependent ones as written
    assert same(plain, "def f(q, k):\n    s = q @ k.T\n    d = q.shape[-1]\n    out = s / d ** 0.5\n    return out\n")
    assert not same(plain, "def f(q, k):\n    d = q.shape[-1]\n    out = s / d ** 0.5\n    s = q @ k.T\n    return out\n")
    assert not same("def f(x):\n    a = x\n    x = 2\n    return a + x\n", "def f(x):\n    x = 2\n    a = x\n    return a + x\n")


def test_normalising_writes_each_program_rewrite_one_way_and_leaves_other_code_apart():
    """Each program rewrite the normaliser knows (see the module's docstring) and its original are one
    text; what only looks like one (a `while` that is not a counter loop, a helper called twice, a
    loop that does more than append, a name read twice) stays as written."""
    loop = "def f(q, n):\n    out = []\n    for i in range(n):\n        out.append(q[i] * 2)\n    return g(out)\n"
    # loops: a counter while loop (its step last, or before lines that do not name it), an iterator loop
    counter = "def f(q, n):\n    out = []\n    i = 0\n    while i < n:\n        out.append(q[i] * 2)\n        i += 1\n" \
              "    return g(out)\n"
    assert same(loop, counter)
    assert same(loop.replace("range(n)", "range(0, n)"), loop)
    each = "def f(q, n):\n    out = []\n    for v in q:\n        out.append(v * 2)\n    return g(out)\n"
    assert same(each, "def f(q, n):\n    out = []\n    it = iter(q)\n    while True:\n        try:\n"
                      "            v = next(it)\n        except StopIteration:\n            break\n"
                      "        out.append(v * 2)\n    return g(out)\n")
    assert not same(loop, counter.replace("i += 1", "i += 1\n        i += 1"))              # `i` bound twice
    assert not same(loop, counter.replace("i < n", "i < n and q[i] > 0"))                   # not a counter's test
    assert not same(loop, counter.replace("    return g(out)", "    return g(out), i"))    # `i` read after it
    assert not same(loop, counter.replace("out.append(q[i] * 2)", "out.append(q[i] * 2)\n        n = n - 1"))
    assert not same(loop, counter.replace("        out.append(q[i] * 2)\n", "        if q[i]:\n            continue\n"
                                                                           "        out.append(q[i] * 2)\n"))
    # an append loop is its comprehension, when it only appends and its variable is not read after it
    comprehension = "def f(q, n):\n    out = [q[i] * 2 for i in range(n)]\n    return g(out)\n"
    assert same(loop, comprehension)
    assert same("def f(q):\n    out = []\n    for r in q:\n        for v in r:\n            if v:\n"
                "                out.append(v)\n    return g(out)\n",
                "def f(q):\n    return g([v for r in q for v in r if v])\n")
    assert not same(loop.replace("out.append(q[i] * 2)", "out.append(q[i] * 2)\n        h(i)"), comprehension)
    assert not same(loop.replace("return g(out)", "return g(out, i)"), comprehension.replace("g(out)", "g(out, i)"))
    # a name assigned once and read once is its expression, where it is read
    assert same("def f(q, k):\n    s = q @ k.T\n    w = s.softmax(-1)\n    return w\n",
                "def f(q, k):\n    return (q @ k.T).softmax(-1)\n")
    assert not same("def f(q, k):\n    s = q @ k.T\n    return s.softmax(-1) + s\n",
                    "def f(q, k):\n    return (q @ k.T).softmax(-1) + q @ k.T\n")           # read twice
    assert not same("def f(q, k):\n    s = q.sum()\n    q.add_(1)\n    return s\n",
                    "def f(q, k):\n    q.add_(1)\n    return q.sum()\n")                  # its object changed between
    assert not same("def f(q, k):\n    s = g(q)\n    h(k)\n    return s\n",
                    "def f(q, k):\n    h(k)\n    return g(q)\n")                           # a call past another
    assert not same("def f(q, k):\n    s = g(q)\n    if k:\n        return s\n",
                    "def f(q, k):\n    if k:\n        return g(q)\n")                      # a call into a branch
    assert not same("def f(q, k):\n    s = g(q)\n    for i in k:\n        h(s)\n",
                    "def f(q, k):\n    for i in k:\n        h(g(q))\n")                    # into a loop
    # x * (1 / y) is x / y; a constant index of a literal whose other elements are pure is that element
    assert same("def f(q, d):\n    return q * (1 / d)\n", "def f(q, d):\n    return q / d\n")
    assert same("def f(q, d):\n    return (1.0 / d) * q\n", "def f(q, d):\n    return q / d\n")
    assert not same("def f(q, d):\n    return q * (2 / d)\n", "def f(q, d):\n    return q / d\n")
    assert same("def f(q):\n    return (q.T, len([]), None)[0]\n", "def f(q):\n    return q.T\n")
    assert same("def f(q):\n    return ['ok', q.T][-1]\n", "def f(q):\n    return q.T\n")
    assert not same("def f(q):\n    return (q.T, g(q))[0]\n", "def f(q):\n    return q.T\n")  # a call it would drop
    assert not same("def f(q, i):\n    return (q.T, 0)[i]\n", "def f(q, i):\n    return q.T\n")   # not a constant
    # a helper called from one place is its body there
    body = "def f(q, k):\n    s = q @ k.T\n    return s.softmax(-1) * s.sum()\n"
    helper = "def _impl(a, b):\n    s = a @ b.T\n    return s.softmax(-1) * s.sum()\n\n\ndef f(q, k):\n    return _impl(q, k)\n"
    assert same(body, helper)
    assert same(body, helper.replace("_impl(q, k)", "_impl(b=k, a=q)"))
    assert same("def f(q, k):\n    s = q @ k.T\n    t = s.softmax(-1) * s.sum()\n    return t.T\n",
                helper.replace("return _impl(q, k)", "t = _impl(q, k)\n    return t.T"))
    twice = helper.replace("return _impl(q, k)", "return _impl(q, k) + _impl(k, q)")
    assert not same("def f(q, k):\n    s = q @ k.T\n    return s.softmax(-1) * s.sum() + g(k, q)\n", twice)
    assert normalise_code(twice, frozenset({"f"}))[0].count("def") == 2                    # called twice: kept
    both = helper.replace("def _impl", "def g")                                            # a stub's own function
    assert normalise_code(both.replace("_impl", "g"), frozenset({"f", "g"}))[0].count("def") == 2
    early = "def _impl(a):\n    if a:\n        return 1\n    return 2\n\n\ndef f(q):\n    t = _impl(q)\n    return t\n"
    assert normalise_code(early, frozenset({"f"}))[0].count("def") == 2                    # returns before its end


def test_the_page_marks_an_inlined_expression_where_the_student_wrote_it():
    """After the rewrites, each token still carries its place in the student's answer: an inlined
    value its own line, the syntax a rewrite writes (`for`, `range`) no place."""
    source = ("def f(q, n):\n    out = []\n    i = 0\n    while i < n:\n        out.append(q[i] * 2)\n"
              "        i += 1\n    w = g(out)\n    return w\n")
    text, spans = normalise_code(source, frozenset({"f"}))
    assert text == normalise_code("def f(q, n):\n    return g([q[i] * 2 for i in range(n)])\n", frozenset({"f"}))[0]
    marked = {source[a:b] for a, b in spans if b > a}
    assert {"g", "q", "i", "n", "2"} <= marked and "for" not in marked and "range" not in marked, marked
    at = text.index("returnN(") + len("return")  # g(...): the return's value now
    assert source[slice(*spans[at])] == "g" and source.count("\n", 0, spans[at][0]) == 6
