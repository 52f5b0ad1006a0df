"""The process checks' reading of an answer's source (source/step-04/checks/process.py).

It judges what runs: the binding the name has when the hidden test calls it (the last definition in
cell order, an earlier attempt above it or not), helpers as they are bound when the answer runs, names
bound by assignment followed, and what a cell's expression stores into a value the answer uses. A name
the answer relies on bound in a form the reader does not follow (`:=`, `global`, an import from a module
a cell may have written, `import *` from one), or code that can change what its text says in any
function of the cells that can run, goes to review; a read-only use of such a word (printed, compared,
counted: the reader's allowlist) or a function nothing can call does not, and its tampering neighbours
still do. So does what the reader does not reach (its allowlists): an attribute stored on an object it
does not know to be the student's own, an import of a module it does not read (pickle, runpy...) or a use
of one beyond its read-only entries (os.system, os.environ stored into), a
torch or numpy submodule it does not read (torch.library, torch.hub...), a load that can unpickle;
their harmless neighbours (the student's own objects, json, numpy.load of an array) leave it decided. Whole-matrix work is found whatever the library or op and whatever
iteration helper the data passes through (zip, enumerate, map, comprehensions, unpacking,
itertools.product, the student's own helpers); one entry's work is never taken for it; and what the
reader cannot decide (code that can change what its text says, a binding or a library call it cannot
follow, axes a reshape mixes, work in a branch that may not run) goes to a person: `review`, never a
finding. A timing magic is read as the code IPython runs for it: what `%timeit` assigns binds nothing.
"""
from __future__ import annotations

import importlib

import pytest

from conftest import STEP4

process = importlib.import_module(STEP4.checks["bonus_scores_entrywise"].__module__.rpartition(".")[0] + ".process")

QK = {"q": ("B", "T", "D"), "k": ("B", "T", "D")}
SCORES = {"scores": ("*", "K")}
QKV = {"q": ("*", "Q", "D"), "k": ("*", "K", "D"), "v": ("*", "K", "E")}


def entrywise(*cells):
    return process.entrywise_work(list(cells), "scores_entrywise", QK)


def online(*cells):
    return process.streamed_work(list(cells), "online_softmax", SCORES)


def streaming(*cells):
    return process.streamed_work(list(cells), "streaming_attention", QKV)


def clean(reading) -> bool:
    return reading["found"] == [] and reading["review"] == ""


def caught(reading) -> bool:
    """Whole-matrix work the reader is sure of: the process points are lost."""
    return bool(reading["found"]) and reading["review"] == ""


def review(reading) -> bool:
    """The reader cannot decide: the cell goes to a person, nothing is taken."""
    return reading["found"] == [] and bool(reading["review"])


LOOPS = '''
    B, T, d = q.shape
    s = torch.zeros(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                s[b, i, j] = {entry}
    return s'''

PER_ENTRY = "def scores_entrywise(q, k):" + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")
WHOLE_MATMUL = "def scores_entrywise(q, k):\n    return q @ k.transpose(-2, -1)"

ONE_ENTRY = {
    "dot of two vectors": "torch.dot(q[b, i], k[b, j])",
    "(1×d)@(d×1)": "(q[b, i:i + 1] @ k[b, j:j + 1].T).squeeze()",
    "width-1 slices multiplied": "(q[b, i:i + 1] * k[b, j:j + 1]).sum()",
    "numpy dot": "np.dot(q.numpy()[b, i], k.numpy()[b, j])",
    "vecdot of two vectors": "torch.linalg.vecdot(q[b, i], k[b, j])",
    "einsum of two vectors": "torch.einsum('d,d->', q[b, i], k[b, j])",
    "Python floats": "sum(a * c for a, c in zip(q[b, i].tolist(), k[b, j].tolist()))",
    "math.fsum of a map": "math.fsum(map(operator.mul, q[b, i].tolist(), k[b, j].tolist()))",
    "a row reshaped to (1, d)": "(q[b, i].reshape(1, -1) @ k[b, j].reshape(-1, 1)).item()",
    "float64 and back": "(q[b, i].double() * k[b, j].double()).sum().to(q.dtype)",
}

WHOLE = {
    "matmul": "    return q @ k.transpose(-2, -1)",
    "numpy per sequence": "    out = np.zeros((2, 3, 3))\n    for b in range(2):\n        out[b] = q.numpy()[b] @ k.numpy()[b].T\n    return out",
    "broadcast vecdot": "    return torch.linalg.vecdot(q[:, :, None, :], k[:, None, :, :])",
    "in-place broadcast": "    p = q[:, :, None, :] + torch.zeros_like(k)[:, None, :, :]\n    p *= k[:, None, :, :]\n    return p.sum(-1)",
    "a row at once": "    s = torch.zeros(2, 3, 3)\n    for b in range(2):\n        for i in range(3):\n            s[b, i] = k[b] @ q[b, i]\n    return s",
    "a helper doing it": "    return helper(q, k)\n\ndef helper(a, c):\n    return torch.bmm(a, c.transpose(1, 2))",
    "einsum": "    return torch.einsum('bid,bjd->bij', q, k)",
    "numpy dot of matrices": "    return torch.stack([torch.from_numpy(np.dot(a.numpy(), c.numpy().T)) for a, c in zip(q, k)])",
}


@pytest.mark.parametrize("entry", list(ONE_ENTRY.values()), ids=list(ONE_ENTRY))
def test_one_entry_at_a_time_is_one_entrys_work(entry):
    assert clean(entrywise("def scores_entrywise(q, k):" + LOOPS.format(entry=entry)))


@pytest.mark.parametrize("body", list(WHOLE.values()), ids=list(WHOLE))
def test_whole_matrix_work_is_found_in_any_library(body):
    reading = entrywise("def scores_entrywise(q, k):\n" + body)
    assert caught(reading), (body, reading)


# ---- what runs: the last binding in cell order, helpers as bound when the answer runs -----------------

def test_an_earlier_attempt_left_above_is_not_judged():
    assert clean(entrywise(WHOLE_MATMUL, PER_ENTRY))
    assert clean(entrywise(WHOLE_MATMUL + "\n\n" + PER_ENTRY))                  # in the same cell
    assert caught(entrywise(PER_ENTRY, WHOLE_MATMUL))                           # the whole one is the last
    assert clean(entrywise(PER_ENTRY, PER_ENTRY))                               # a cell run twice


def test_a_cell_copied_and_changed_is_judged_as_changed():
    first = "def scores_entrywise(q, k):" + LOOPS.format(entry="(q[b] @ k[b].T)[i, j]")
    assert caught(entrywise(first))
    assert clean(entrywise(first, PER_ENTRY))


HELPER_CALLER = "def scores_entrywise(q, k):" + LOOPS.format(entry="pair(q[b, i], k[b, j])")


def test_a_helper_is_the_binding_its_name_has_when_the_answer_runs():
    per_entry = "def pair(u, w):\n    return (u * w).sum()"
    rows = "def pair(u, w):\n    return (u[None, :] @ k_all.mT)[0, 0]"     # reaches for a global: not its inputs
    whole = "def pair(u, w):\n    return torch.outer(u, w).trace()"
    assert clean(entrywise(per_entry, HELPER_CALLER))
    assert clean(entrywise(HELPER_CALLER, per_entry))                 # defined in a later cell than its caller
    assert clean(entrywise(whole, HELPER_CALLER, per_entry))          # redefined later: the last one runs
    assert clean(entrywise(rows, HELPER_CALLER, per_entry))
    matrix_helper = "def pair(u, w):\n    return u @ w.T"
    caller = "def scores_entrywise(q, k):\n    return torch.stack([pair(q[b], k[b]) for b in range(q.shape[0])])"
    assert caught(entrywise(caller, "def pair(u, w):\n    return (u * w).sum()", matrix_helper))


def test_names_rebound_by_assignment_are_followed():
    helper = "def entries(a, c):" + LOOPS.replace("q", "a").replace("k", "c").format(entry="(a[b, i] * c[b, j]).sum()")
    whole = "def matrix(a, c):\n    return a @ c.mT"
    assert clean(entrywise(helper, "scores_entrywise = entries"))
    assert caught(entrywise(whole, "scores_entrywise = matrix"))
    assert clean(entrywise(whole, "scores_entrywise = matrix", PER_ENTRY))           # then a def: that runs
    assert caught(entrywise(PER_ENTRY, whole, "scores_entrywise = matrix"))
    # an alias keeps the function it named then, not a later one of that name
    assert clean(entrywise(helper, "scores_entrywise = entries", "def entries(a, c):\n    return a @ c.mT"))
    assert caught(entrywise("scores_entrywise = lambda q, k: q @ k.mT"))
    assert clean(entrywise("scores_entrywise = lambda q, k: torch.tensor([[[float(q[b, i] @ k[b, j]) for j in "
                           "range(k.shape[1])] for i in range(q.shape[1])] for b in range(q.shape[0])])"))
    partial = "import functools\ndef scaled(q, k, c):\n    return c * ({})\nscores_entrywise = functools.partial(scaled, c=1.0)"
    assert caught(entrywise(partial.format("q @ k.mT")))
    assert clean(entrywise(partial.format("torch.stack([torch.stack([torch.stack([qi @ kj for kj in kb]) "
                                          "for qi in qb]) for qb, kb in zip(q, k)])")))


def test_closures_objects_and_decorators_are_followed():
    closure = '''
def make():
    count = [0]
    def inner(q, k):
        count[0] += 1
        return {}
    return inner
scores_entrywise = make()
'''
    assert caught(entrywise(closure.format("q @ k.mT")))
    assert clean(entrywise(closure.format("torch.tensor([[[q[b, i] @ k[b, j] for j in range(q.shape[1])] "
                                          "for i in range(q.shape[1])] for b in range(q.shape[0])])")))
    obj = '''
class Scores:
    def __init__(self, scale):
        self.scale = scale
    def pair(self, u, w):
        return {}
    def __call__(self, q, k):
        B, T, d = q.shape
        out = torch.zeros(B, T, T, dtype=q.dtype)
        for b, i, j in itertools.product(range(B), range(T), range(T)):
            out[b, i, j] = self.scale * self.pair(q[b, i], k[b, j])
        return out
scores_entrywise = Scores(1.0)
'''
    assert clean(entrywise(obj.format("(u * w).sum()")))
    assert caught(entrywise(obj.format("(u[None] @ k_rows.T)[0, 0]").replace("self.pair(q[b, i], k[b, j])",
                                                                             "self.pair(q[b, i], k[b])")
                            .replace("k_rows", "w")))
    decorated = "@torch.no_grad()\n" + PER_ENTRY
    assert clean(entrywise(decorated))
    assert caught(entrywise("@functools.lru_cache(maxsize=None)\n" + WHOLE_MATMUL))


def test_bindings_the_reader_cannot_resolve_go_to_review():
    assert review(entrywise(PER_ENTRY, "scores_entrywise = torch.vmap(torch.vmap(torch.vmap(torch.dot, (None, 0)), (0, None)))"))
    assert review(entrywise("@my_library.trace\n" + PER_ENTRY))
    assert review(entrywise("x = 1"))                                  # no definition before the test
    conditional = "if USE_FAST:\n    def scores_entrywise(q, k):\n        return q @ k.mT\n"
    assert review(entrywise(PER_ENTRY, conditional))


# ---- data through iteration helpers, another library, the student's helpers -----------------------

PER_ENTRY_SHAPES = {
    "zip of rows": '''
    out = []
    for qb, kb in zip(q, k):
        out.append(torch.stack([torch.stack([torch.dot(qi, kj) for kj in kb]) for qi in qb]))
    return torch.stack(out)''',
    "enumerate": '''
    s = torch.zeros(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
    for b, qb in enumerate(q):
        for i, qi in enumerate(qb):
            for j, kj in enumerate(k[b]):
                s[b, i, j] = (qi * kj).sum()
    return s''',
    "map over rows": '''
    return torch.stack([torch.stack([torch.stack(list(map(lambda kj: (qi * kj).sum(), kb))) for qi in qb])
                        for qb, kb in zip(q, k)])''',
    "range(len(...))": '''
    s = torch.zeros(len(q), len(q[0]), len(k[0]), dtype=q.dtype)
    for b in range(len(q)):
        for i in range(len(q[b])):
            for j in range(len(k[b])):
                s[b, i, j] = sum(q[b][i][m] * k[b][j][m] for m in range(len(q[b][i])))
    return s''',
    "dict comprehension": '''
    B, T, d = q.shape
    table = {(b, i, j): float(torch.dot(q[b, i], k[b, j])) for b in range(B) for i in range(T) for j in range(T)}
    return torch.tensor([[[table[b, i, j] for j in range(T)] for i in range(T)] for b in range(B)], dtype=q.dtype)''',
    "tuple unpacking": '''
    (B, T, d), out = q.shape, []
    for b in range(B):
        rows = []
        for i in range(T):
            u, (w_all) = q[b, i], k[b]
            rows.append([float((u * w).sum()) for w in w_all])
        out.append(rows)
    return torch.tensor(out, dtype=q.dtype)''',
    "itertools.product": '''
    B, T, d = q.shape
    s = torch.empty(B, T, T, dtype=q.dtype)
    for b, i, j in itertools.product(range(B), range(T), range(T)):
        s[b, i, j] = q[b, i] @ k[b, j]
    return s''',
    "itertools.product of rows": '''
    B, T, d = q.shape
    return torch.stack([torch.stack([qi @ kj for qi, kj in itertools.product(q[b], k[b])]).reshape(T, T)
                        for b in range(B)])''',
    "numpy floats": '''
    qn, kn = q.detach().numpy().astype(np.float64), k.detach().numpy().astype(np.float64)
    out = np.zeros((qn.shape[0], qn.shape[1], kn.shape[1]))
    for b in range(qn.shape[0]):
        for i in range(qn.shape[1]):
            for j in range(kn.shape[1]):
                out[b, i, j] = float(np.sum(qn[b, i] * kn[b, j]))
    return torch.from_numpy(out).to(q.dtype)''',
    "Python lists and math": '''
    ql, kl = q.tolist(), k.tolist()
    return torch.tensor([[[math.fsum(x * y for x, y in zip(qi, kj)) for kj in kb] for qi in qb]
                         for qb, kb in zip(ql, kl)], dtype=q.dtype)''',
    "a helper with its arguments bound": '''
    return torch.stack([one_sequence(q[b], k[b]) for b in range(q.shape[0])])

def one_sequence(qs, ks):
    return torch.stack([torch.stack([one_entry(x, y) for y in ks]) for x in qs])

def one_entry(x, y, scale=1.0):
    return scale * (x * y).sum()''',
    "functools.reduce of products": '''
    B, T, d = q.shape
    s = q.new_zeros(B, T, T)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                s[b, i, j] = functools.reduce(operator.add, [q[b, i, m] * k[b, j, m] for m in range(d)])
    return s''',
}

WHOLE_SHAPES = {
    "zip of sequences": '''
    return torch.stack([qb @ kb.T for qb, kb in zip(q, k)])''',
    "enumerate of sequences": '''
    out = torch.zeros(q.shape[0], q.shape[1], q.shape[1])
    for b, qb in enumerate(q):
        out[b] = torch.matmul(qb, k[b].T)
    return out''',
    "map of a matrix product": '''
    return torch.stack(list(map(lambda a, c: a @ c.T, q, k)))''',
    "map of a library function": '''
    return torch.stack(list(map(torch.mm, q, k.transpose(1, 2))))''',
    "rows rebuilt by a comprehension": '''
    B, T, d = q.shape
    out = []
    for b in range(B):
        qs = torch.stack([q[b, i] for i in range(T)])
        ks = torch.stack([k[b, j] for j in range(T)])
        out.append(qs @ ks.T)
    return torch.stack(out)''',
    "rows gathered with append": '''
    B, T, d = q.shape
    out = []
    for b in range(B):
        rows = []
        for i in range(T):
            rows.append(q[b, i])
        out.append(torch.stack(rows) @ k[b].T)
    return torch.stack(out)''',
    "a dict as a hiding place": '''
    kept = {}
    kept["q"], kept["k"] = q, k
    return kept["q"] @ kept["k"].mT''',
    "an object as a hiding place": '''
    box = Box()
    box.q = q
    return box.q @ k.mT

class Box:
    pass''',
    "numpy through tolist": '''
    return torch.tensor(np.array(q.tolist()) @ np.array(k.tolist()).transpose(0, 2, 1))''',
    "numpy float64 arrays": '''
    qn, kn = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    return torch.from_numpy(np.matmul(qn, np.swapaxes(kn, 1, 2))).to(q.dtype)''',
    "a helper given whole inputs": '''
    return torch.stack([rows(q[b], k[b]) for b in range(q.shape[0])])

def rows(a, c):
    return torch.einsum("id,jd->ij", a, c)''',
    "itertools.product of sequences": '''
    return torch.stack([qb @ kb.T for (qb, kb), _ in itertools.product(zip(q, k), [None])])''',
    "a generator of the student's": '''
    return torch.stack([a @ c.T for a, c in pairs(q, k)])

def pairs(x, y):
    for b in range(len(x)):
        yield x[b], y[b]''',
    "stored into a zeros tensor": '''
    qq = torch.zeros_like(q)
    qq[:] = q
    return qq @ k.mT''',
    "an outer product per row": '''
    s = torch.zeros(q.shape[0], q.shape[1], q.shape[1])
    for b in range(q.shape[0]):
        for i in range(q.shape[1]):
            s[b, i] = (q[b, i][None, :] * k[b]).sum(-1)
    return s''',
}


# Work in the places a reader could skip (issue 44, item 3): an if's test (with a walrus binding
# the result), an object's __getitem__; a whole matrix computed there is found, one entry's work is not.
WHOLE_SHAPES.update({
    "a walrus in an if's test": """
    if (s := q @ k.transpose(-2, -1)) is not None:
        return s
    return None""",
    "a walrus in an if's test, returned after": """
    if (s := torch.matmul(q, k.transpose(1, 2))).shape[0] > 0:
        pass
    return s""",
})
PER_ENTRY_SHAPES.update({
    "a walrus in an if's test": """
    B, T, d = q.shape
    s = torch.zeros(B, T, T)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                if (v := torch.dot(q[b, i], k[b, j])) is not None:
                    s[b, i, j] = v
    return s""",
})
GETITEM = {
    "a class's __getitem__ (whole)": ("""
class Scores:
    def __init__(self, q, k):
        self.q, self.k = q, k
    def __getitem__(self, ix):
        return self.q @ self.k.transpose(-2, -1)
def scores_entrywise(q, k):
    return Scores(q, k)[0]""", caught),
    "a class's __getitem__ (one batch's matrix)": ("""
class Scores:
    def __init__(self, q, k):
        self.q, self.k = q, k
    def __getitem__(self, b):
        return self.q[b] @ self.k[b].T
def scores_entrywise(q, k):
    m = Scores(q, k)
    return torch.stack([m[b] for b in range(q.shape[0])])""", caught),
    "a class's __getitem__ (one entry)": ("""
class Pairs:
    def __init__(self, q, k):
        self.q, self.k = q, k
    def __getitem__(self, ix):
        b, i, j = ix
        return torch.dot(self.q[b, i], self.k[b, j])
def scores_entrywise(q, k):
    B, T, d = q.shape
    p = Pairs(q, k)
    s = torch.zeros(B, T, T)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                s[b, i, j] = p[b, i, j]
    return s""", clean),
}


@pytest.mark.parametrize("name", list(GETITEM))
def test_an_objects_getitem_is_read_as_the_code_it_runs(name):
    code, verdict = GETITEM[name]
    reading = entrywise(code)
    assert verdict(reading), reading


@pytest.mark.parametrize("body", list(PER_ENTRY_SHAPES.values()), ids=list(PER_ENTRY_SHAPES))
def test_per_entry_work_through_iteration_helpers_is_per_entry(body):
    reading = entrywise("def scores_entrywise(q, k):" + body)
    assert clean(reading), reading


@pytest.mark.parametrize("body", list(WHOLE_SHAPES.values()), ids=list(WHOLE_SHAPES))
def test_whole_matrix_work_hidden_behind_iteration_helpers_is_found(body):
    reading = entrywise("def scores_entrywise(q, k):" + body)
    assert caught(reading), reading


def test_parameters_are_bound_by_position_whatever_their_names():
    assert caught(entrywise("def scores_entrywise(queries, keys):\n    return queries @ keys.mT"))
    assert caught(entrywise("def scores_entrywise(*pair):\n    a, c = pair\n    return a @ c.mT"))


# ---- what the reader cannot decide goes to a person -----------------------------------------------

@pytest.mark.parametrize("cell", [
    "exec('x = 1')",
    "globals()['scores_entrywise'] = lambda q, k: q @ k.mT",
    "import sys\nsys.modules['torch'].matmul = None",
    "from torch.overrides import TorchFunctionMode",
    "torch.dot = lambda a, b: (a * b).sum()",
    "setattr(torch, 'dot', None)",
])
def test_code_that_can_change_what_its_text_says_goes_to_review(cell):
    reading = entrywise(PER_ENTRY, cell)
    assert review(reading), reading
    assert "behind its text" in reading["review"] or "changes what library code does" in reading["review"], reading
    assert review(entrywise(WHOLE_MATMUL, cell))                   # not even whole work is sure then


ONE_SHOT = "lambda q, k: torch.from_numpy(q.detach().numpy() @ k.detach().numpy().swapaxes(-2, -1))"
WRITTEN = "open('helpers_mine.py', 'w').write('import torch\\nscores_entrywise = " + ONE_SHOT.replace("'", '"') + "\\n')\n"
# The honest answer defined, then its name rebound to a one-shot in a form the reader does not follow: the
# answer that runs is the one-shot, so the reader cannot decide (it read the honest one, and gave the point).
REBOUND = {
    "walrus statement": f"(scores_entrywise := {ONE_SHOT})",
    "walrus in an assert": f"assert (scores_entrywise := {ONE_SHOT})",
    "walrus in a call": f"print(scores_entrywise := {ONE_SHOT})",
    "walrus in a comprehension": f"[(scores_entrywise := {ONE_SHOT}) for _ in range(1)]",
    "walrus in an if's test": f"if (scores_entrywise := {ONE_SHOT}):\n    pass",
    "walrus in a default": f"def _g(a=(scores_entrywise := {ONE_SHOT})):\n    pass",
    "global in a function called": f"def _setup():\n    global scores_entrywise\n    scores_entrywise = {ONE_SHOT}\n_setup()",
    "global in a function never called": f"def _setup():\n    global scores_entrywise\n    scores_entrywise = {ONE_SHOT}",
    "global in a nested function": f"def _o():\n    def _i():\n        global scores_entrywise\n"
                                   f"        scores_entrywise = {ONE_SHOT}\n    _i()\n_o()",
    "global in a class body": f"class _Setup:\n    global scores_entrywise\n    scores_entrywise = {ONE_SHOT}",
    "star import of a module the kernel wrote": WRITTEN + "from helpers_mine import *",
    "from-import of a module the kernel wrote": WRITTEN + "from helpers_mine import scores_entrywise",
    "import of a module the kernel wrote": WRITTEN + "import helpers_mine as m\nscores_entrywise = m.scores_entrywise",
    "__main__ written in a function": f"def _s():\n    import __main__\n    __main__.scores_entrywise = {ONE_SHOT}\n_s()",
    "sys.modules written in a function": f"def _s():\n    import sys\n    sys.modules[__name__].scores_entrywise = {ONE_SHOT}\n_s()",
    "globals() written in a function": f"def _s():\n    globals()['scores_entrywise'] = {ONE_SHOT}\n_s()",
    "setattr in a lambda": f"_s = lambda: setattr(__import__('sys').modules['__main__'], 'scores_entrywise', {ONE_SHOT})\n_s()",
    "exec in a function": "def _s():\n    exec('scores_entrywise = lambda q, k: q @ k.mT')\n_s()",
    # a string annotation is code that typing.get_type_hints, functools.singledispatch's register and
    # inspect.signature(eval_str=True) run (process._type_expression)
    "walrus in a string annotation, get_type_hints": f"import typing\ndef _f(x: '(scores_entrywise := {ONE_SHOT})'):\n"
                                                      "    pass\ntyping.get_type_hints(_f)",
    "walrus in a string return annotation": f"import typing\ndef _f() -> '(scores_entrywise := {ONE_SHOT})':\n"
                                             "    pass\ntyping.get_type_hints(_f)",
    "walrus in a string annotation, singledispatch": "import functools\n@functools.singledispatch\ndef _g(x):\n    pass\n"
                                                     f"@_g.register\ndef _(x: '(scores_entrywise := {ONE_SHOT})'):\n    pass",
    "walrus in a class's string annotation": f"import typing\nclass _K:\n    x: '(scores_entrywise := {ONE_SHOT})'\n"
                                              "typing.get_type_hints(_K)",
    "walrus in a string annotation nested in a string": "import typing\ndef _f(x: \"list['(scores_entrywise := "
                                                        f"{ONE_SHOT})']\"):\n    pass\ntyping.get_type_hints(_f)",
    "walrus in an annotation, inspect with eval_str": "import inspect\ndef _f(x: '(scores_entrywise := "
                                                      f"{ONE_SHOT})'):\n    pass\nprint(inspect.signature(_f, eval_str=True))",
    # the running shell reached without get_ipython (IPython: only IPython.display is read)
    "IPython's shell, push": f"import IPython\nIPython.core.interactiveshell.InteractiveShell.instance().push("
                             f"{{'scores_entrywise': {ONE_SHOT}}})",
    "IPython's shell, run_cell": "from IPython.core.interactiveshell import InteractiveShell\n"
                                f"InteractiveShell.instance().run_cell('scores_entrywise = {ONE_SHOT}')",
    "IPython's shell, ex": "from IPython.core.interactiveshell import InteractiveShell\n"
                          f"InteractiveShell.instance().ex('scores_entrywise = {ONE_SHOT}')",
    "IPython's shell, run_line_magic": "from IPython.core.interactiveshell import InteractiveShell\n"
                                      f"InteractiveShell.instance().run_line_magic('time', 'scores_entrywise = {ONE_SHOT}')",
    "IPython's shell, user_ns": "from IPython.core.interactiveshell import InteractiveShell\n"
                               f"InteractiveShell.instance().user_ns.update(scores_entrywise={ONE_SHOT})",
    "IPython handed to a function": f"import IPython\ndef _s(m):\n    m.core.interactiveshell.InteractiveShell.instance()"
                                    f".push({{'scores_entrywise': {ONE_SHOT}}})\n_s(IPython)",
    # Python mangles `__g` in a class's body to `_K__g`: the function of that name is called
    "a mangled name called from a class in a function": f"def _outer():\n    def _K__g():\n        globals()['scores_entrywise'] = "
                                                        f"{ONE_SHOT}\n    class K:\n        __g()\n_outer()",
    "a mangled name called from a method": f"class K:\n    def run(self):\n        def _K__g():\n            globals()"
                                           f"['scores_entrywise'] = {ONE_SHOT}\n        __g()\nK().run()",
    "a mangled name returned by a method": f"class K:\n    def run(self):\n        def _K__g():\n            globals()"
                                           f"['scores_entrywise'] = {ONE_SHOT}\n        return __g\n_r = K().run()\n_r()",
}


@pytest.mark.parametrize("name", list(REBOUND))
def test_a_name_rebound_in_a_form_the_reader_does_not_follow_goes_to_review(name):
    assert clean(entrywise(PER_ENTRY))
    reading = entrywise(PER_ENTRY + "\n" + REBOUND[name])
    assert review(reading), reading
    assert review(entrywise(PER_ENTRY, REBOUND[name]))                # in a later cell as well


# Code that runs but only reads (an allowlist, process.READ_ONLY_SINKS, MODULE_READS, ...), and functions no
# code references: a cell of these anywhere in the notebook leaves the answer decided. Each sent every
# correct answer of the notebook to review.
READ_ONLY = {
    "a class's name": "x = torch.zeros(2)\nprint(x.__class__.__name__)",
    "a class's name bound": "x = torch.zeros(2)\nkind = x.__class__.__name__",
    "inspect.signature printed": "import inspect\nprint(inspect.signature(print))",
    "inspect.getsource": "import inspect\ndef f():\n    return 1\nprint(inspect.getsource(f))",
    "from inspect import signature": "from inspect import signature\nprint(signature(print))",
    "types imported": "import types",
    "types.SimpleNamespace": "import types\ncfg = types.SimpleNamespace(lr=0.1)\nprint(cfg.lr)",
    "types in isinstance": "import types\nprint(isinstance(print, (types.FunctionType, types.BuiltinFunctionType)))",
    "getattr over a literal list of names": "for n in ['sum', 'mean']:\n    print(getattr(torch.ones(3), n)())",
    "getattr over a literal tuple of names": "for n in ('sum', 'mean'):\n    print(getattr(torch.ones(3), n)())",
    "vars printed": "class Cfg:\n    lr = 0.1\nprint(vars(Cfg))",
    "__dict__'s keys printed": "print(torch.nn.Linear(2, 2).__dict__.keys())",
    "globals in an f-string": "print(f'{len(globals())} names')",
    "eval of arithmetic": "print(eval('2 + 3'))",
    "eval of a tuple": "t = eval('(1, 2.5, -3)')",
    "a def nothing references": "def show():\n    print(globals().keys())",
    "a def in a function, never referenced": "def outer():\n    def inner():\n        globals()['x'] = 1\n    return 1\nouter()",
    "a lambda in a function, never referenced": "def outer():\n    _show = lambda: globals().update(x=1)\n    return 1\nouter()",
    "a method of a class in a function, never referenced": "def outer():\n    class Unused:\n        def m(self):\n"
                                                            "            globals()['x'] = 1\n    return 1\nouter()",
    "sys.modules tested with in": "import sys\nprint('torch' in sys.modules)",
    "globals compared with a constant": "print(globals() != None)",
    "sys.modules's keys counted": "import sys\nprint(len(sys.modules.keys()))",
    "setattr on the student's object": "class Cfg: pass\nc = Cfg()\nsetattr(c, 'lr', 0.1)",
    "setattr on the student's class": "class Cfg: pass\nsetattr(Cfg, 'lr', 0.1)",
    "gc.collect": "import gc\ngc.collect()",
    "a mangled-looking def in a function, never referenced": "def outer():\n    def _K__g():\n        globals()['x'] = 1\n"
                                                             "    return 1\nouter()",
}


@pytest.mark.parametrize("name", list(READ_ONLY))
def test_a_cell_that_only_reads_leaves_the_answer_decided(name):
    cell = READ_ONLY[name]
    assert clean(entrywise("import torch", PER_ENTRY, cell)), name
    assert clean(entrywise("import torch", cell, PER_ENTRY)), name
    assert caught(entrywise("import torch", cell, WHOLE_MATMUL)), name      # a decision either way


def test_setattr_on_the_students_object_is_read_as_the_attribute_it_stores():
    """Read as `box.f = ...`: the one-shot it stores is what the answer calls, and is found."""
    box = "class Box: pass\nbox = Box()\n"
    per_entry = PER_ENTRY.replace("def scores_entrywise", "def per_entry")
    answer = "def scores_entrywise(q, k):\n    return box.f(q, k)"
    assert clean(entrywise(per_entry, box + "setattr(box, 'f', per_entry)", answer))
    assert caught(entrywise(per_entry, box + "setattr(box, 'f', lambda q, k: q @ k.mT)", answer))
    stored = entrywise(per_entry, box + "box.f = per_entry\nsetattr(box, 'f', lambda q, k: q @ k.mT)", answer)
    assert stored == entrywise(per_entry, box + "box.f = per_entry\nbox.f = lambda q, k: q @ k.mT", answer)
    assert not clean(stored)


# A SimpleNamespace is followed as an object of the student's: what a cell stores on it, or its keywords, is
# what the answer's read of the attribute finds (a one-shot library function stored there is that function).
NAMESPACE_HELD = {
    "stored after": "import types\nns = types.SimpleNamespace()\nns.f = {f}\n",
    "a keyword, then stored": "import types\nns = types.SimpleNamespace(f=None)\nns.f = {f}\n",
    "a keyword": "from types import SimpleNamespace\nns = SimpleNamespace(f={f})\n",
}


@pytest.mark.parametrize("name", list(NAMESPACE_HELD))
def test_a_function_held_by_a_simplenamespace_is_the_function_the_answer_calls(name):
    per_entry = PER_ENTRY.replace("def scores_entrywise", "def per_entry")
    answer = "def scores_entrywise(q, k):\n    return ns.f(q, k)"
    assert clean(entrywise(per_entry, NAMESPACE_HELD[name].format(f="per_entry"), answer)), name
    one_shot = entrywise(NAMESPACE_HELD[name].format(f="torch.matmul"), answer.replace("ns.f(q, k)", "ns.f(q, k.mT)"))
    assert caught(one_shot) and "matmul" in one_shot["found"][0], (name, one_shot)
    made_in_answer = "import types\ndef scores_entrywise(q, k):\n    o = types.SimpleNamespace()\n    o.e = torch.einsum\n" \
                     "    return o.e('bid,bjd->bij', q, k)"
    assert caught(entrywise(made_in_answer))


def test_a_simplenamespace_made_from_a_mapping_goes_to_review():
    answer = "def scores_entrywise(q, k):\n    return ns.f(q, k.mT)"
    for made in ("ns = types.SimpleNamespace(**{'f': torch.matmul})", "ns = types.SimpleNamespace({'f': torch.matmul})"):
        assert review(entrywise("import types\n" + made, answer)), made


# Beside each read-only use, its tampering neighbours: still not decided (the one-shot they bind, or the
# library function they replace, would otherwise be read past).
NOT_READ_ONLY = {
    "vars stored into": f"vars(torch)['matmul'] = {ONE_SHOT}",
    "vars updated": "class Cfg:\n    lr = 0.1\nvars(Cfg).update(lr=1)",
    "globals bound to a name": f"x = globals()\nx['scores_entrywise'] = {ONE_SHOT}",
    "globals updated": f"globals().update(scores_entrywise={ONE_SHOT})",
    "globals shown by a print of the student's": f"def print(*a):\n    a[0]['scores_entrywise'] = {ONE_SHOT}\nprint(globals())",
    "globals' keys' mapping": "print(globals().keys().mapping['scores_entrywise'])",
    "__dict__ as a cell's last value": "class Cfg:\n    lr = 0.1\nCfg.__dict__",
    "vars as print's file": "class W: pass\nprint(1, file=vars(W))",
    "globals handed to an __eq__": f"class E:\n    def __eq__(self, other):\n        other['scores_entrywise'] = {ONE_SHOT}\n"
                                   "        return True\nprint(E() == globals())",
    "globals handed to a __contains__": f"class H:\n    def __contains__(self, d):\n"
                                        f"        d['scores_entrywise'] = {ONE_SHOT}\n        return True\nprint(globals() in H())",
    "globals handed to an __instancecheck__": f"class M(type):\n    def __instancecheck__(cls, d):\n"
                                              f"        d['scores_entrywise'] = {ONE_SHOT}\n        return True\n"
                                              "class C(metaclass=M): pass\nprint(isinstance(globals(), C))",
    "getattr with a computed name": "name = 'mat' + 'mul'\nf = getattr(torch, name)",
    "getattr over a dunder": "for n in ['__dict__']:\n    print(getattr(torch, n))",
    "getattr over names rebound in the loop": "for n in ['sum']:\n    n = '__dict__'\n    print(getattr(torch, n))",
    "setattr on torch": f"setattr(torch, 'matmul', {ONE_SHOT})",
    "setattr on torch, of None": "setattr(torch, 'dot', None)",
    "setattr on a library object": "c = torch.nn.Linear(2, 2)\nsetattr(c, 'forward', print)",
    "setattr in a function": "class Cfg: pass\nc = Cfg()\ndef s(o):\n    setattr(o, 'x', 1)\ns(c)",
    "setattr of a dunder": "class Cfg: pass\nc = Cfg()\nsetattr(c, '__class__', Cfg)",
    "setattr of the student's": "def setattr(a, b, c):\n    pass\nclass Cfg: pass\nc = Cfg()\nsetattr(c, 'lr', 1)",
    "setattr on a name a walrus rebinds": f"class Cfg: pass\nc = Cfg()\n[(c := torch)]\nsetattr(c, 'matmul', {ONE_SHOT})",
    "eval of a variable": "code = '1'\nprint(eval(code))",
    "eval of an import": "print(eval(\"__import__('os')\"))",
    "eval of a name": "print(eval('scores_entrywise'))",
    "eval of the student's": "eval = print\nprint(eval('2 + 3'))",
    "inspect's frames": f"import inspect\ninspect.currentframe().f_back.f_globals['scores_entrywise'] = {ONE_SHOT}",
    "inspect imported as another name": "import inspect as ins\nins.currentframe()",
    "inspect.signature bound": "import inspect\nsig = inspect.signature(print)",
    "inspect's frames imported": "from inspect import currentframe\ncurrentframe()",
    "inspect's frames imported as signature": "from inspect import currentframe as signature\nprint(signature())",
    "gc.get_referrers": "import gc\ngc.get_referrers(torch)",
    "gc.get_objects": "import gc\nfor o in gc.get_objects():\n    pass",
    "types.FunctionType called": "import types\nf = types.FunctionType(print.__code__, {})",
    "sys.modules stored into": f"import sys\nsys.modules['torch'].matmul = {ONE_SHOT}",
    "sys.modules bound": f"import sys\nm = sys.modules\nm['torch'].matmul = {ONE_SHOT}",
    "a function a cell calls": f"def s():\n    globals()['scores_entrywise'] = {ONE_SHOT}\ns()",
    "a function a list holds": f"def s():\n    globals()['scores_entrywise'] = {ONE_SHOT}\ncallbacks = [s]",
    "a function the grader may call by name": f"def s():\n    globals()['scores_entrywise'] = {ONE_SHOT}",
    "a lambda the grader may call by name": f"_s = lambda: globals().update(scores_entrywise={ONE_SHOT})",
    "a method of a class the grader may call": f"class C:\n    def m(self):\n        globals()['scores_entrywise'] = {ONE_SHOT}",
    "a def in a function, returned": f"def outer():\n    def inner():\n        globals()['scores_entrywise'] = {ONE_SHOT}\n"
                                     "    return inner\nouter()()",
    "a def in a function, called by a string": f"def outer():\n    def inner():\n        globals()['scores_entrywise'] = {ONE_SHOT}\n"
                                               "    run_later('inner')\nouter()",
    "a method of a class in a function, used": f"def outer():\n    class C:\n        def __init__(self):\n"
                                               f"            globals()['scores_entrywise'] = {ONE_SHOT}\n    C()\nouter()",
    "a function named in a string": f"def s():\n    globals()['scores_entrywise'] = {ONE_SHOT}\nrun_later('s')",
    "a function named as an attribute": f"def s():\n    globals()['scores_entrywise'] = {ONE_SHOT}\nclass A: pass\nA.s",
    "a decorated function": f"def reg(f):\n    f()\n    return f\n@reg\ndef s():\n    globals()['scores_entrywise'] = {ONE_SHOT}",
    "a default of a function": f"def s(a=globals().update(scores_entrywise={ONE_SHOT})):\n    pass",
    "a lambda as a cell's value": f"lambda: globals().update(scores_entrywise={ONE_SHOT})",
    "a method of a class used": f"class C:\n    def __repr__(self):\n        globals()['scores_entrywise'] = {ONE_SHOT}\n"
                                "        return ''\nprint(C())",
    "a class found through __subclasses__": f"class C:\n    def __init__(self):\n        globals()['scores_entrywise'] = {ONE_SHOT}\n"
                                             "object.__subclasses__()[-1]()",
    "the grader imported": "from autograder.runtime import hidden",
}


@pytest.mark.parametrize("name", list(NOT_READ_ONLY))
def test_a_tampering_use_beside_a_read_only_one_goes_to_review(name):
    cell = NOT_READ_ONLY[name]
    for cells in (("import torch", PER_ENTRY, cell), ("import torch", cell, PER_ENTRY), ("import torch", cell, WHOLE_MATMUL)):
        reading = entrywise(*cells)
        assert review(reading), (name, reading)
        assert "behind its text" in reading["review"] or "library code" in reading["review"] \
            or "does not read" in reading["review"], (name, reading)


# Beyond tampering words: an attribute stored on an object the reader does not know to be the student's
# own (process._own_object), an import of a module it does not read (IMPORTABLE_MODULES), a name of torch or
# numpy it does not read (LIBRARY_SUBMODULES), a deserialising call without the keyword that keeps it from
# unpickling (SAFE_LOADS). Each of these scored the honest answer clean with the cell beside it.
REPLACE = "lambda a, c: (a * c).sum() * 0"
NOT_READ = {
    "a tensor's type, called": f"type(torch.ones(1)).dot = {REPLACE}",
    "torch.Tensor bound to a name": f"def _later():\n    t = torch.Tensor\n    t.dot = {REPLACE}",
    "type(x) bound to a name": f"x = torch.ones(1)\ncls = type(x)\ncls.__matmul__ = {REPLACE}",
    "an augmented store": "t = torch.Tensor\nt.dot += 0",
    "a del": "t = torch\ndel t.dot",
    "a loop's target": f"def _later(t):\n    for t.dot in [{REPLACE}]:\n        pass",
    "a with's target": "def _later(t):\n    with open('notes.txt') as t.dot:\n        pass",
    "a function's parameter": f"def s(o):\n    o.dot = {REPLACE}",
    "self outside a method": f"def s(self):\n    self.dot = {REPLACE}",
    "a library object made": "torch.nn.Linear(2, 2).forward = print",
    "a student's name rebound to a library's": f"class Box: pass\nbox = Box()\ndef _later():\n    box.dot = {REPLACE}\n"
                                               "box = torch.Tensor",
    "a local rebound to a library's": f"class Box: pass\ndef s():\n    b = Box()\n    b = torch.Tensor\n    b.dot = {REPLACE}",
    "a method through its class": f"class Box:\n    def set(self, f):\n        self.dot = f\n"
                                  f"def _later():\n    Box.set(torch.Tensor, {REPLACE})",
    "a method through its class, in a chain": "class Box:\n    def set(self):\n        self.dot = None\n    def go(self):\n"
                                              "        self.set()\ngo = Box.go\ngo(torch.Tensor)",
    "a method through type()": "class Box:\n    def set(self):\n        self.dot = None\ntype(Box()).set(torch.Tensor)",
    "a method through getattr": "class Box:\n    def set(self):\n        self.dot = None\ngetattr(Box, 'set')(torch.Tensor)",
    "a dunder of the student's class": "class Box: pass\nBox.__matmul__ = lambda a, c: a",
    "an item of a library's dict": "np.sctypeDict['float64'] = np.float32",
    "an item of a library's name bound": "types_ = np.sctypeDict\ntypes_['float64'] = np.float32",
    "an item of copy's table": "import copy\ncopy.dispatch_table[torch.Tensor] = lambda t: (torch.Tensor, ())",
    "pickle": 'import pickle\npickle.loads(b"cbuiltins\\nsetattr\\n(ctorch\\nTensor\\nVdot\\nI0\\ntR.")',
    "runpy": "import runpy\nrunpy.run_path('helpers_mine.py')",
    "timeit": f"import timeit\ntimeit.timeit('torch.Tensor.dot = {REPLACE}', setup='import torch', number=1)",
    "code": "import code\ncode.InteractiveInterpreter().runsource('x = 1')",
    "pdb": "import pdb\npdb.run('x = 1')",
    "cProfile": "import cProfile\ncProfile.run('x = 1')",
    "doctest": "import doctest",
    "marshal": "from marshal import loads",
    "copyreg": "import copyreg",
    "shelve": "import shelve",
    "os": "import os\nos.environ['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '1'",
    "os.path": "import os.path",
    "pathlib": "import pathlib\npathlib.os.system('ls')",
    # os and pathlib beyond their read-only entries (MODULE_READS)
    "os.environ stored through its name": "from os import environ\nenviron['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '1'",
    "os.environ.update": "import os\nos.environ.update(TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD='1')",
    "os.environ deleted from": "import os\ndel os.environ['HOME']",
    "os.environ handed on": "import os\nprint(os.environ)",
    "os.environ iterated": "import os\nfor key in os.environ:\n    pass",
    "os.putenv": "import os\nos.putenv('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', '1')",
    "os.system": "import os\nos.system('true')",
    "os.execv": "import os\nos.execv('/bin/true', ['true'])",
    "os.fork": "import os\nos.fork()",
    "os under another name": "import os as o\no.system('true')",
    "os bound to a name": "import os\no = os\no.system('true')",
    "os in a list": "import os\n[os][0].system('true')",
    "os through getattr": "import os\ngetattr(os, 'system')('true')",
    "os.path bound to a name": "import os\np = os.path\np.os.system('true')",
    "os.path's os": "import os\nos.path.os.system('true')",
    "from os import path": "from os import path\npath.os.system('true')",
    "from os.path import": "from os.path import join",
    "from os import system": "from os import system",
    "os, imported by a provided cell": "def _later():\n    os.system('true')",
    "pathlib.os": "from pathlib import Path\nimport pathlib\npathlib.os.system('true')",
    "torch.cuda's other names": "torch.cuda.synchronize()",
    "torch.cuda bound to a name": "c = torch.cuda\nprint(c.is_available())",
    "torch.cuda imported": "from torch.cuda import set_device",
    "torch.cuda.is_available replaced": "torch.cuda.is_available = lambda: True",
    "torch.cuda.is_available's attribute": "print(torch.cuda.is_available.__module__)",
    "torch.cuda where the text hides it": "[torch][0].cuda.synchronize()",
    "torch.backends.mps's other names": "print(torch.backends.mps.is_built())",
    "a module the kernel wrote": "import my_plots as mp\nfrom my_plots import show",
    "os through random": "import random\nrandom._os.environ['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '1'",
    "numpy.load with allow_pickle": "x = np.load('x.npy', allow_pickle=True)",
    "numpy.load with keywords unread": "opts = {'allow_pickle': True}\nx = np.load('x.npy', **opts)",
    "numpy.load from-imported": "from numpy import load\nx = load('x.npy')",
    "torch.load with weights_only=False": "x = torch.load('x.pt', weights_only=False)",
    "torch.load without weights_only": "x = torch.load('x.pt')",
    "torch.load bound to a name": "ld = torch.load\nx = ld('x.pt', weights_only=True)",
    "torch.library": "lib = torch.library.Library('aten', 'IMPL')",
    "torch.library imported": "from torch.library import impl",
    "load_inline": "from torch.utils.cpp_extension import load_inline",
    "torch.hub": "m = torch.hub.load('a/b', 'c')",
    "torch.ops": "f = torch.ops.aten.mm",
    "torch.jit": "f = torch.jit.script(lambda a: a)",
    "a submodule through getattr": "f = getattr(torch, 'hub')",
    "a submodule through an alias": "t = torch\nh = t.hub",
    "a submodule through a list": "t = [torch][0]\nh = t.hub",
    "a submodule through a function": "def lib():\n    return torch\nh = lib().hub",
    "a submodule of torch.nn": "from torch.nn import utils",
    "torch through functional": "F.torch.ops",
    "sys's other names": "import sys\nsys.setrecursionlimit(10 ** 6)\nsys.addaudithook(print)",
    "a private name of torch": "f = torch._tensor_str",
    "torch.hub, torch imported by a provided cell": "def _later():\n    return torch.hub.load('a/b', 'c')",
    # dunder attributes read (an allowlist, process.READ_DUNDERS): a method's function, handed a library class as self
    "a method's __func__": f"class Box:\n    def put(self, f):\n        self.dot = f\n_b = Box()\n"
                           f"_b.put.__func__(torch.Tensor, {REPLACE})",
    "a method's __func__ bound to a name": f"class Box:\n    def put(self, f):\n        self.dot = f\n_b = Box()\n"
                                           f"_m = _b.put.__func__\n_m(torch.Tensor, {REPLACE})",
    "__init__'s __func__": f"class Box:\n    def __init__(self, f):\n        self.dot = f\n_b = Box(None)\n"
                           f"_b.__init__.__func__(torch.Tensor, {REPLACE})",
    "a method's __func__ through getattr": f"class Box:\n    def put(self, f):\n        self.dot = f\n_b = Box()\n"
                                           f"getattr(_b.put, '__func__')(torch.Tensor, {REPLACE})",
    "a method's __wrapped__": "import functools\n@functools.lru_cache\ndef f(x):\n    return x\ng = f.__wrapped__",
    # IPython: only IPython.display (process.IPYTHON_READS)
    "IPython's shell imported": "from IPython.core.interactiveshell import InteractiveShell",
    "IPython's shell by path": "import IPython\nsh = IPython.core.interactiveshell.InteractiveShell",
    "IPython handed on": "import IPython\nmods = [IPython]",
    "inspect.signature with eval_str": "import inspect\ndef f(x: 'int'):\n    pass\nprint(inspect.signature(f, eval_str=True))",
}
READ = {
    "the student's class attribute": "class Cfg: pass\nCfg.lr = 0.1",
    "the student's object's attribute": "class Cfg: pass\nc = Cfg()\nc.lr = 0.1\nc.lr += 1\ndel c.lr",
    "self in a method": "class Acc:\n    def __init__(self):\n        self.total = 0\n    def add(self, x):\n"
                        "        self.total += x\na = Acc()\na.add(1)",
    "a base class's method on the same object": "class Base:\n    def __init__(self):\n        self.n = 0\n"
                                                 "class Sub(Base):\n    def __init__(self):\n        Base.__init__(self)\nSub()",
    "a local object of the student's class": "class Box: pass\ndef s():\n    b = Box()\n    b.x = 1\n    return b\ns()",
    "a SimpleNamespace": "from types import SimpleNamespace\ncfg = SimpleNamespace(lr=0.1)\ncfg.lr = 0.2",
    "a function's attribute": "def f():\n    return 1\nf.calls = 0",
    "json": "import json\nprint(json.dumps({'a': 1}))",
    "re and textwrap": "import re\nimport textwrap\nprint(re.sub('a', 'b', textwrap.dedent(' a')))",
    "numpy.load": "x = np.load('x.npy')",
    "numpy.load with allow_pickle=False": "x = np.load('x.npy', allow_pickle=False)",
    "torch.load with weights_only=True": "x = torch.load('x.pt', weights_only=True)",
    "torch.nn.functional, linalg, testing": "F.softmax(torch.ones(3), dim=0)\ntorch.linalg.norm(torch.ones(3))\n"
                                            "torch.testing.assert_close(torch.ones(1), torch.ones(1))",
    "numpy.random and numpy.linalg": "rng = np.random.default_rng(0)\nprint(np.linalg.norm(rng.normal(size=3)))",
    "torch.autograd.grad": "x = torch.ones(2, requires_grad=True)\nprint(torch.autograd.grad((x * x).sum(), x))",
    "torch's version": "print(torch.__version__)",
    "sys.version": "import sys\nprint(sys.version)",
    "star imports of torch and numpy": "from torch import *\nfrom numpy import *",
    "IPython.display": "from IPython.display import display, HTML\nimport IPython.display\ndisplay(HTML('<b>x</b>'))\n"
                       "IPython.display.clear_output()",
    "type annotations": "from typing import Optional\nimport typing\ndef f(x: torch.Tensor, n: 'Optional[int]' = None, *a: int,\n"
                        "      **k: 'list[int] | None') -> tuple[int, ...]:\n    y: np.ndarray = np.zeros(1)\n    return (1,)\n"
                        "print(typing.get_type_hints(f))",
    "names and docs read": "def f():\n    'doc'\nprint(f.__name__, f.__qualname__, f.__doc__, f.__module__)",
    "super().__init__": "class Base:\n    def __init__(self):\n        self.n = 0\nclass Sub(Base):\n    def __init__(self):\n"
                        "        super().__init__()\nSub()",
    "a private method called through its mangled name": "class K:\n    def __helper(self):\n        return 1\n"
                                                         "    def run(self):\n        return self.__helper()\nK().run()",
    "an operator's method called": "x = torch.ones(2, 2)\ny = x.__matmul__(x)",
    # os and pathlib as MODULE_READS allows them, and the device a notebook picks (LIBRARY_READS)
    "os's read-only entries": "import os\nprint(os.getcwd(), os.cpu_count(), os.listdir('.'))\n"
                              "p = os.path.join('data', 'x.txt')\nprint(os.path.exists(p), os.path.isfile(p), "
                              "os.path.isdir('data'), os.path.basename(p), os.path.dirname(p), os.path.abspath(p))\n"
                              "if os.path.exists(p):\n    print(os.path.getsize(p))\nstem, ext = os.path.splitext(p)\n"
                              "os.makedirs('out', exist_ok=True)",
    "os.environ read": "import os\nhome = os.environ.get('HOME', '')\nif 'HOME' in os.environ:\n"
                       "    print(os.environ['HOME'])",
    "from os import getcwd": "from os import getcwd, cpu_count\nprint(getcwd(), cpu_count())",
    "os, imported by a provided cell": "print(os.getcwd())",
    "pathlib.Path": "from pathlib import Path\nDATA = Path('data')\nprint((DATA / 'x.txt').exists())",
    "pathlib imported": "import pathlib\nprint(pathlib.PurePath('a', 'b'))",
    "the device": "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nprint(torch.cuda.device_count())\n"
                  "mps = torch.backends.mps.is_available()",
    "torch.cuda.is_available imported": "from torch.cuda import is_available\nprint(is_available())",
}


@pytest.mark.parametrize("name", list(NOT_READ))
def test_what_the_reader_does_not_read_beside_the_answer_goes_to_review(name):
    cell = NOT_READ[name]
    for cells in (("import torch\nimport numpy as np", PER_ENTRY, cell), ("import torch\nimport numpy as np", cell, PER_ENTRY),
                  ("import torch\nimport numpy as np", cell, WHOLE_MATMUL), (PER_ENTRY, cell)):
        reading = entrywise(*cells)
        assert review(reading), (name, reading)
        assert "does not read" in reading["review"] or "library code" in reading["review"] \
            or "behind its text" in reading["review"], (name, reading)


@pytest.mark.parametrize("name", list(READ))
def test_what_the_reader_reads_beside_the_answer_leaves_it_decided(name):
    cell = READ[name]
    assert clean(entrywise("import torch\nimport numpy as np", PER_ENTRY, cell)), name
    assert clean(entrywise("import torch\nimport numpy as np", cell, PER_ENTRY)), name
    assert caught(entrywise("import torch\nimport numpy as np", cell, WHOLE_MATMUL)), name
    assert clean(entrywise(PER_ENTRY, cell)), name          # torch and numpy imported by a provided cell


def test_the_submodules_named_are_the_installed_libraries():
    """LIBRARY_SUBMODULE_NAMES lists every submodule of torch, numpy and the submodules the reader reads, as
    the installed versions have them: a submodule missing from it would be read as a function."""
    import pkgutil
    import types

    for name, listed in process.LIBRARY_SUBMODULE_NAMES.items():
        module = importlib.import_module(name)
        found = {n for n in dir(module) if isinstance(getattr(module, n, None), types.ModuleType)}
        if hasattr(module, "__path__"):
            found |= {m.name for m in pkgutil.iter_modules(module.__path__)}
        assert {n for n in found if not n.startswith("_")} <= listed, name
    assert process.LIBRARY_SUBMODULES <= set(process.LIBRARY_SUBMODULE_NAMES)


# What the kernel runs is the cell as IPython's input transformers write it: a magic or a shell line is a call
# of get_ipython(), a line is what Python's tokenizer calls one (not what str.splitlines does), a string's
# text is the string's. Read otherwise, each of these hid the rebinding and the one-shot scored full.
AS_THE_KERNEL_RUNS = {
    "a line magic that runs code": f"_one = {ONE_SHOT}\n%time scores_entrywise = _one",
    "a cell magic that runs code": f"%%capture\nscores_entrywise = {ONE_SHOT}",
    "run_cell": "get_ipython().run_cell('scores_entrywise = lambda q, k: q @ k.mT')",
    "the user namespace": f"get_ipython().user_ns['scores_entrywise'] = {ONE_SHOT}",
    "push": f"get_ipython().push({{'scores_entrywise': {ONE_SHOT}}})",
    "a shell line in the same cell": f"_ls = !true\nscores_entrywise = {ONE_SHOT}",
    "a help line in the same cell": f"len?\nscores_entrywise = {ONE_SHOT}",
    "a % line inside a string": f'_a = """\n%"""; scores_entrywise = {ONE_SHOT}; _b = """\n"""',
    "a line separator inside a string": f'_t = "a\u2028b"; scores_entrywise = {ONE_SHOT}',
    "a form feed inside a string": f'_t = "a\x0cb"; scores_entrywise = {ONE_SHOT}',
    "a next-line character inside a string": f'_t = "a\x85b"; scores_entrywise = {ONE_SHOT}',
}


@pytest.mark.parametrize("name", list(AS_THE_KERNEL_RUNS))
def test_cells_are_read_as_the_kernel_runs_them(name):
    assert not clean(entrywise(PER_ENTRY, AS_THE_KERNEL_RUNS[name])), name


@pytest.mark.parametrize("quiet", ["%matplotlib inline", "!ls -la", "files = !ls\nprint(files)", "len?", "%pwd"])
def test_magics_and_shell_lines_that_run_no_python_change_nothing(quiet):
    assert clean(entrywise(PER_ENTRY, quiet))
    assert clean(entrywise(quiet + "\n" + PER_ENTRY))


# The timing magics are read as the code they run (IPython's %time runs its statement in the notebook's
# namespace; %timeit compiles setup and statement into a function and calls it, so what they assign binds
# nothing of the notebook's). Each sent every correct answer beside it to review.
TIMED = {
    "%timeit": "%timeit scores_entrywise(torch.ones(1, 3, 4), torch.ones(1, 3, 4))",
    "%timeit with options": "%timeit -n 10 -r 3 -q -p 3 -c scores_entrywise(torch.ones(1, 3, 4), torch.ones(1, 3, 4))",
    "%timeit -o, its result kept": "r = %timeit -o -t scores_entrywise(torch.ones(1, 3, 4), torch.ones(1, 3, 4))",
    "%time": "%time _ = scores_entrywise(torch.ones(1, 3, 4), torch.ones(1, 3, 4))",
    "%time, its value kept": "s = %time scores_entrywise(torch.ones(1, 3, 4), torch.ones(1, 3, 4))",
    "%time in a loop": "for n in (2, 4):\n    %time _ = scores_entrywise(torch.ones(1, n, 4), torch.ones(1, n, 4))",
    "%%timeit with setup": "%%timeit -n 3 x = torch.ones(1, 3, 4)\nscores_entrywise(x, x)",
    "%%time": "%%time\nout = scores_entrywise(torch.ones(1, 3, 4), torch.ones(1, 3, 4))\nout.shape",
}


@pytest.mark.parametrize("name", list(TIMED))
def test_a_timing_magic_is_read_as_the_code_it_runs(name):
    cell = TIMED[name]
    assert clean(entrywise("import torch", PER_ENTRY, cell)), (name, entrywise("import torch", PER_ENTRY, cell))
    assert caught(entrywise("import torch", WHOLE_MATMUL, cell)), name                  # a decision either way


def test_a_timed_answer_of_the_06_notebook_is_decided():
    for cell in ("%timeit online_softmax(torch.randn(4, 8))", "%time _ = online_softmax(torch.randn(4, 8))"):
        assert clean(online(ONLINE, cell)), (cell, online(ONLINE, cell))
        assert caught(online("def online_softmax(scores):\n    return torch.softmax(scores, -1)", cell))
    for cell in ("%timeit streaming_attention(q, k, v)", "%time _ = streaming_attention(q, k, v)",
                 "%%timeit q = k = v = torch.randn(1, 4, 8)\nstreaming_attention(q, k, v)"):
        assert clean(streaming(STREAMED, cell)), (cell, streaming(STREAMED, cell))
        assert caught(streaming("def streaming_attention(q, k, v):\n    return torch.softmax(q @ k.mT, -1) @ v", cell))


HONEST_NAMED = "def honest(q, k):" + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")


@pytest.mark.parametrize("cells", [
    (f"scores_entrywise = {ONE_SHOT}\n%timeit scores_entrywise = honest",),
    (f"scores_entrywise = {ONE_SHOT}\n%timeit -n 1 -r 1 scores_entrywise = honest; scores_entrywise(q, k)",),
    (f"scores_entrywise = {ONE_SHOT}", "%%timeit scores_entrywise = honest\nscores_entrywise = honest"),
    (f"scores_entrywise = {ONE_SHOT}", "%%timeit -n 1\nscores_entrywise = honest"),
    # as a function's own assignment, which Python binds in the function, not in the notebook
    (f"scores_entrywise = {ONE_SHOT}\ndef _t():\n    scores_entrywise = honest\n_t()",),
])
def test_what_timeit_assigns_binds_no_name_of_the_notebook(cells):
    """The one-shot bound before is the answer that runs: it is found, never taken for the honest one."""
    assert caught(entrywise("import torch", PER_ENTRY, HONEST_NAMED, *cells)), cells


def test_time_binds_in_the_notebook():
    assert caught(entrywise("import torch", PER_ENTRY, f"%time scores_entrywise = {ONE_SHOT}"))
    assert clean(entrywise("import torch", HONEST_NAMED, f"scores_entrywise = {ONE_SHOT}",
                           "%time scores_entrywise = honest"))


@pytest.mark.parametrize("cell", [
    f"%timeit -v r scores_entrywise = {ONE_SHOT}",                       # -v binds r in the notebook
    f"def _s():\n    %time scores_entrywise = {ONE_SHOT}\n_s()",           # in a function: a copy of its locals
    f"%%time scores_entrywise = {ONE_SHOT}\nx = 1",                     # refused by IPython, read as before
    f"%timeit _it = {ONE_SHOT}",                                         # the template's own names
    f"%time scores_entrywise = (\nscores_entrywise = {ONE_SHOT}",        # the timed statement does not parse
    f"%timeit -n scores_entrywise = {ONE_SHOT}",                         # -n takes a word: the rest does not parse
    f"get_ipython().run_line_magic('time', 'scores_entrywise = {ONE_SHOT.replace(chr(39), chr(34))}').x",
])
def test_a_timing_magic_read_otherwise_goes_to_review(cell):
    reading = entrywise("import torch", PER_ENTRY, cell)
    assert review(reading) and "get_ipython" in reading["review"], (cell, reading)


HELPER = "def one_entry(a, c):\n    return torch.dot(a, c)\n"
PER_ENTRY_HELPED = "def scores_entrywise(q, k):" + LOOPS.format(entry="one_entry(q[b, i], k[b, j])")


@pytest.mark.parametrize("rebind, why", [
    ("(one_entry := lambda a, c: a @ c)", "`one_entry` is bound by a `:=`"),
    ("def _s():\n    global one_entry\n    one_entry = None", "`one_entry` is declared `global` in `_s`"),
    ("from my_helpers import one_entry", "`one_entry` is bound by `from my_helpers import one_entry`"),
    ("import my_helpers as torch", "`torch` is bound by `import my_helpers`"),
])
def test_a_helper_or_library_name_the_answer_relies_on_rebound_so_goes_to_review(rebind, why):
    assert clean(entrywise(HELPER + PER_ENTRY_HELPED))
    reading = entrywise(HELPER + PER_ENTRY_HELPED, rebind)
    assert review(reading) and why in reading["review"], reading


def test_a_name_read_by_the_binding_of_one_the_answer_relies_on_is_relied_on():
    make = "def make(f):\n    def scores_entrywise(q, k):\n        return f(q, k)\n    return scores_entrywise\n"
    honest = "def per_entry(q, k):" + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")
    assert clean(entrywise(honest, make + "scores_entrywise = make(per_entry)"))
    reading = entrywise(honest, f"(per_entry := {ONE_SHOT})", make + "scores_entrywise = make(per_entry)")
    assert review(reading) and "`per_entry` is bound by a `:=`" in reading["review"], reading


IMPL = "def scores_entrywise(q, k):\n    return IMPL[0](q, k)\n"


@pytest.mark.parametrize("change", [
    f"IMPL.insert(0, {ONE_SHOT})",                                     # a method of the list, as a statement
    f"def _s():\n    IMPL[0] = {ONE_SHOT}\n_s()",                      # a function a statement calls
    f"def _s():\n    IMPL[0] = {ONE_SHOT}\nassert _s() is None",
    f"def _s():\n    IMPL[0] = {ONE_SHOT}\nif _s():\n    pass",
])
def test_what_a_cells_expression_changes_in_a_value_the_answer_uses_is_followed(change):
    """A cell's expression statement (a call, an assert's or an if's test) runs when the cell runs: what it
    stores into a list the answer calls from is followed (it was not read, and the one-shot stored there
    scored full)."""
    per_entry = PER_ENTRY.replace("def scores_entrywise", "def per_entry")
    assert clean(entrywise(per_entry, "IMPL = [per_entry]", IMPL))
    assert not clean(entrywise(per_entry, "IMPL = [per_entry]", change, IMPL))


@pytest.mark.parametrize("cells", [
    ("import numpy as np\nimport torch.nn.functional as F\nfrom math import *\nfrom torch import *", PER_ENTRY),
    (PER_ENTRY, "if (n := 3) > 2:\n    print(n)"),                             # a walrus binding another name
    (PER_ENTRY, "def count():\n    global calls\n    calls = 1"),               # a global of another name
    ("def scores_entrywise(q, k):\n    B, T, d = q.shape\n    s = torch.zeros(B, T, T, dtype=q.dtype)\n"
     "    for b in range(B):\n        for i in range(T):\n            for j in range(T):\n"
     "                if (v := torch.dot(q[b, i], k[b, j])) is not None:\n                    s[b, i, j] = v\n"
     "    return s",),                                                             # a walrus inside the answer
])
def test_bindings_the_answer_does_not_rely_on_change_nothing(cells):
    assert clean(entrywise(*cells))


def test_hiding_work_from_the_kernel_record_does_not_hide_it_from_the_reader():
    hidden = "def scores_entrywise(q, k):\n    with torch._C.DisableTorchFunction():\n        return q @ k.mT"
    reading = entrywise(hidden)
    assert caught(reading) and "DisableTorchFunction" in reading["notes"][0], reading
    honest = PER_ENTRY.replace("    return s", "    with torch._C.DisableTorchFunction():\n        return s")
    assert clean(entrywise(honest))


# Whole-matrix work behind what the reader does not model (an allowlist: process.FOLLOWED_DUNDERS,
# FOLLOWED_STATEMENTS, ...): each would read as clean if the reader passed what it did not follow.
_W = "        return self.q @ other.q.mT\n"
_QK = "class A:\n    def __init__(self, q, k):\n        self.q, self.k = q, k\n"
_STASH = "R = []\n" + _QK
UNFOLLOWED = {
    "an operator method": "class A:\n    def __init__(self, q):\n        self.q = q\n    def __add__(self, other):\n"
                          + _W + "def scores_entrywise(q, k):\n    return A(q) + A(k)",
    "@ on objects": "class A:\n    def __init__(self, q):\n        self.q = q\n    def __matmul__(self, other):\n"
                    + _W + "def scores_entrywise(q, k):\n    return A(q) @ A(k)",
    "a unary operator": _QK + "    def __neg__(self):\n        return -(self.q @ self.k.mT)\n"
                        "def scores_entrywise(q, k):\n    return -(-A(q, k))",
    "iteration": _QK + "    def __iter__(self):\n        yield self.q @ self.k.mT\n"
                 "def scores_entrywise(q, k):\n    for s in A(q, k):\n        return s",
    "a with block": _QK + "    def __enter__(self):\n        return self.q @ self.k.mT\n    def __exit__(self, *a):\n"
                    "        pass\ndef scores_entrywise(q, k):\n    with A(q, k) as s:\n        return s",
    "attribute lookup": _QK + "    def __getattr__(self, name):\n        return self.q @ self.k.mT\n"
                        "def scores_entrywise(q, k):\n    return A(q, k).scores",
    "truth, stashed": _STASH + "    def __bool__(self):\n        R.append(self.q @ self.k.mT)\n        return True\n"
                      "def scores_entrywise(q, k):\n    if A(q, k):\n        return R[-1]",
    "len, stashed": _STASH + "    def __len__(self):\n        R.append(self.q @ self.k.mT)\n        return 1\n"
                    "def scores_entrywise(q, k):\n    len(A(q, k))\n    return R[-1]",
    "a comparison, stashed": _STASH + "    def __eq__(self, o):\n        R.append(self.q @ self.k.mT)\n        return True\n"
                             "def scores_entrywise(q, k):\n    A(q, k) == 1\n    return R[-1]",
    "in, stashed": _STASH + "    def __contains__(self, o):\n        R.append(self.q @ self.k.mT)\n        return True\n"
                   "def scores_entrywise(q, k):\n    1 in A(q, k)\n    return R[-1]",
    "an f-string, stashed": _STASH + "    def __format__(self, spec):\n        R.append(self.q @ self.k.mT)\n"
                            "        return ''\ndef scores_entrywise(q, k):\n    f'{A(q, k)}'\n    return R[-1]",
    "a descriptor": "class D:\n    def __get__(self, obj, t=None):\n        return obj.q @ obj.k.mT\nclass A:\n    s = D()\n"
                    "    def __init__(self, q, k):\n        self.q, self.k = q, k\ndef scores_entrywise(q, k):\n    return A(q, k).s",
    "a property": _QK + "    @property\n    def s(self):\n        return self.q @ self.k.mT\n"
                  "def scores_entrywise(q, k):\n    return A(q, k).s",
    "__new__": "class A:\n    def __new__(cls, q, k):\n        return q @ k.mT\ndef scores_entrywise(q, k):\n    return A(q, k)",
    "a metaclass": "class M(type):\n    def __call__(cls, q, k):\n        return q @ k.mT\nclass A(metaclass=M):\n    pass\n"
                   "def scores_entrywise(q, k):\n    return A(q, k)",
    "a class subscripted": "class A:\n    def __class_getitem__(cls, qk):\n        q, k = qk\n        return q @ k.mT\n"
                           "def scores_entrywise(q, k):\n    return A[q, k]",
    "an inherited operator": "class A:\n    def __init__(self, q):\n        self.q = q\n    def __add__(self, other):\n"
                             + _W + "class B(A):\n    pass\ndef scores_entrywise(q, k):\n    return B(q) + B(k)",
    "a loop in a class body": "class A:\n    for _ in range(1):\n        def __call__(self, q, k):\n            return q @ k.mT\n"
                              "def scores_entrywise(q, k):\n    return A()(q, k)",
    "a NamedTuple's fields": "from typing import NamedTuple\nclass P(NamedTuple):\n    q: object\n    k: object\n"
                             "def scores_entrywise(q, k):\n    p = P(q.numpy(), k.numpy())\n"
                             "    return torch.from_numpy(p.q @ p.k.transpose(0, 2, 1))",
    "a library's class as a base": "class P(dict):\n    pass\ndef scores_entrywise(q, k):\n    p = P(q=q, k=k)\n"
                                   "    return p['q'] @ p['k'].mT",
    "multi_dot of a list made elsewhere": "def scores_entrywise(q, k):\n    out = []\n    for a, c in zip(q, k):\n"
                                          "        ops = [a]\n        ops.append(c.T)\n"
                                          "        out.append(torch.linalg.multi_dot(ops))\n    return torch.stack(out)",
}


@pytest.mark.parametrize("name", list(UNFOLLOWED))
def test_work_behind_what_the_reader_does_not_model_goes_to_review(name):
    reading = entrywise(UNFOLLOWED[name])
    assert review(reading), reading


def _in_case(body: str) -> str:
    return body.replace("\n    ", "\n            ")


def test_a_match_statement_is_read_as_its_cases():
    """A case runs only if its pattern matches: its work is work in a branch that may not run (review), unless
    the first case is irrefutable (`case _`, a capture); a sequence pattern unpacks the subject, what a class
    or a mapping pattern captures is not followed. A correct answer written with a match is decided (it
    went to review: a statement the reader did not model)."""
    per_entry = LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")
    assert clean(entrywise("def scores_entrywise(q, k):\n    match q.dim():\n        case 3:" + _in_case(per_entry)
                           + "\n        case _:\n            raise ValueError('3-D inputs')"))
    assert clean(entrywise("def scores_entrywise(q, k):\n    match (q, k):\n        case (a, c):\n"
                           "            return one(a, c)\ndef one(q, k):" + per_entry))
    assert clean(entrywise("match 3:\n    case 3:\n        " + PER_ENTRY.replace("\n", "\n        ")))
    assert caught(entrywise("def scores_entrywise(q, k):\n    match q.dim():\n        case _:\n            return q @ k.mT"))
    assert caught(entrywise("def scores_entrywise(q, k):\n    match q:\n        case a:\n            return a @ k.mT"))
    for undecided in ["def scores_entrywise(q, k):\n    match (q, k):\n        case (a, c):\n            return a @ c.mT",
                      "def scores_entrywise(q, k):\n    match q.dim():\n        case 2:\n            return q @ k.mT\n"
                      "        case _:" + _in_case(per_entry),
                      "def scores_entrywise(q, k):\n    match {'q': q}:\n        case {'q': a}:\n"
                      "            return a @ k.mT\n        case _:\n            return None",
                      "match 1:\n    case 1:\n        def scores_entrywise(q, k):\n            return q @ k.mT"]:
        assert review(entrywise(undecided)), undecided


@pytest.mark.parametrize("call", ["torch.linalg.multi_dot([a, c.T])", "torch.linalg.multi_dot((a, c.T))",
                                  "torch.from_numpy(np.linalg.multi_dot([a.numpy(), c.numpy().T]))"])
def test_multi_dot_multiplies_the_items_of_the_list_it_is_given(call):
    """multi_dot([a, b]) is a @ b: each sequence's whole matrix in one product (it read as no work at all)."""
    reading = entrywise(f"def scores_entrywise(q, k):\n    return torch.stack([{call} for a, c in zip(q, k)])")
    assert caught(reading), reading


def test_a_class_the_answer_does_not_use_sends_nothing_to_review():
    """Only what the answer reaches counts: an unfollowed class elsewhere in the notebook is not the answer's."""
    unused = "class Pretty:\n    def __repr__(self):\n        return 'pretty'\nshown = Pretty()"
    assert clean(entrywise(unused, PER_ENTRY)) and caught(entrywise(unused, WHOLE_MATMUL))
    uses = PER_ENTRY.replace("    return s", "    print(shown)\n    return s")
    assert review(entrywise(unused, uses))


@pytest.mark.parametrize("body", [
    "    return q.reshape(-1, q.shape[-1]) @ k.reshape(-1, k.shape[-1]).T",               # axes a reshape mixes
    "    return scipy.spatial.distance.cdist_like(q, k)",                                  # a library it cannot read
    "    if q.requires_grad:\n        return q @ k.mT\n" + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")[1:],
])
def test_what_the_reader_cannot_follow_goes_to_review(body):
    reading = entrywise("def scores_entrywise(q, k):\n" + body)
    assert review(reading), reading


def test_a_guard_for_other_ranks_is_read_as_the_inputs_rank_decides():
    guard = "    if q.dim() == 2:\n        q, k = q.unsqueeze(0), k.unsqueeze(0)\n"
    assert clean(entrywise("def scores_entrywise(q, k):\n" + guard + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")[1:]))
    ternary = "    q = q[None] if q.ndim == 2 else q\n    k = k[None] if len(k.shape) == 2 else k\n"
    assert clean(entrywise("def scores_entrywise(q, k):\n" + ternary + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")[1:]))
    # a guard the reader cannot decide: each branch is read as one that may run, a rank unknown to it too
    unknown = "    if q.requires_grad:\n        q = q.unsqueeze(0)\n"
    assert not entrywise("def scores_entrywise(q, k):\n" + unknown + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")[1:])["found"]
    fallback = "    if q.dim() == 3:\n        return q @ k.mT\n" + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")[1:]
    assert caught(entrywise("def scores_entrywise(q, k):\n" + fallback))     # 3-D inputs take the whole product
    other = "    if q.dim() == 2:\n        return q @ k.mT\n" + LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")[1:]
    assert clean(entrywise("def scores_entrywise(q, k):\n" + other))         # never taken for 3-D inputs


def test_a_view_that_keeps_the_shape_is_followed():
    body = "    B, T, d = q.shape\n    q = q.view(B, T, d)\n    k = k.reshape(B, T, -1)\n" + \
        LOOPS.format(entry="torch.dot(q[b, i], k[b, j])")[1:]
    assert clean(entrywise("def scores_entrywise(q, k):\n" + body))


MERGED = """    B, T, d = q.shape
    q_rows = q.reshape(B * T, d)                 # (B*T, d)
    k_rows = k.view(-1, d)                       # (B*T, d)
    s = torch.zeros(B * T, T, dtype=q.dtype)
    for r in range(B * T):
        for j in range(T):
            s[r, j] = {entry}
    return s.reshape(B, T, T)"""


def test_a_reshape_that_merges_the_leading_axes_keeps_the_last_one():
    """(B, T, d) -> (B * T, d) keeps d whole (row-major order): one row of the merged axis times one row is
    one entry's work (decided, where before the reshape sent it to review); a product spanning the merged
    axis still goes to review (the reader does not follow how big it is); a reshape that moves d (after
    a transpose) or one whose sizes it cannot read still mixes every axis, and goes to review."""
    one = "(q_rows[r] * k_rows[(r // T) * T + j]).sum()"
    assert clean(entrywise("def scores_entrywise(q, k):\n" + MERGED.format(entry=one)))
    assert clean(entrywise("def scores_entrywise(q, k):\n" + MERGED.format(entry=one.replace("(q_rows[r] * ", "torch.dot(q_rows[r], ").replace("]).sum()", "])"))))
    rows = "(q_rows[r] * k_rows).sum(-1)[(r // T) * T + j]"          # every key's dot product at once: not per entry
    assert review(entrywise("def scores_entrywise(q, k):\n" + MERGED.format(entry=rows)))   # (a product over a merged axis)
    whole = "    B, T, d = q.shape\n    s = q.reshape(B * T, d) @ k.reshape(B * T, d).T\n    return s"
    assert review(entrywise("def scores_entrywise(q, k):\n" + whole))
    moved = MERGED.replace("q.reshape(B * T, d)", "q.transpose(1, 2).reshape(B * T, d)")
    assert review(entrywise("def scores_entrywise(q, k):\n" + moved.format(entry=one)))
    unread = MERGED.replace("k.view(-1, d)", "k.view(len(k) * T, -1)")            # two sizes it cannot read
    assert review(entrywise("def scores_entrywise(q, k):\n" + unread.format(entry=one)))


def test_dead_code_after_a_return_is_not_judged():
    body = LOOPS.format(entry="torch.dot(q[b, i], k[b, j])") + "\n    return q @ k.mT    # the old attempt"
    assert clean(entrywise("def scores_entrywise(q, k):" + body))


# ---- online softmax and streaming attention -------------------------------------------------------

ONLINE = '''
def online_softmax(scores):
    m = torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype)
    z = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for j in range(scores.shape[-1]):
        new = torch.maximum(m, scores[..., j])
        z = z * torch.exp(m - new) + torch.exp(scores[..., j] - new)
        m = new
    return torch.exp(scores - m[..., None]) / z[..., None]
'''

ONLINE_SHAPES = {
    "enumerate of unbind": '''
def online_softmax(scores):
    m = torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype)
    z = torch.zeros_like(m)
    for j, s_j in enumerate(scores.unbind(-1)):
        new = torch.maximum(m, s_j)
        z = z * torch.exp(m - new) + torch.exp(s_j - new)
        m = new
    return torch.exp(scores - m.unsqueeze(-1)) / z.unsqueeze(-1)''',
    "a helper for one step": '''
def step(state, s_j):
    m, z = state
    new = torch.maximum(m, s_j)
    return new, z * torch.exp(m - new) + torch.exp(s_j - new)

def online_softmax(scores):
    state = (torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype), scores.new_zeros(scores.shape[:-1]))
    for s_j in scores.movedim(-1, 0):
        state = step(state, s_j)
    m, z = state
    return (scores - m[..., None]).exp() / z[..., None]''',
}

ONLINE_ONE_SHOT = {
    "numpy": "    x = scores.numpy()\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n    return e / e.sum(-1, keepdims=True)",
    "softmax": "    return torch.softmax(scores, dim=-1)",
    "logsumexp": "    return torch.exp(scores - torch.logsumexp(scores, -1, keepdim=True))",
    "builtin max and sum over the keys": '''    rows = scores.reshape(-1, scores.shape[-1]).tolist()
    out = []
    for row in scores.unbind(0) if scores.dim() > 1 else [scores]:
        m = max(row.unbind(-1))
        z = sum(torch.exp(s - m) for s in row.unbind(-1))
        out.append(torch.exp(row - m) / z)
    return torch.stack(out)''',
    "keys gathered back with a comprehension": '''    T = scores.shape[-1]
    keys = torch.stack([scores[..., j] for j in range(T)], dim=-1)
    return torch.softmax(keys, -1)''',
}


def test_a_streamed_softmax_is_streamed_and_a_one_shot_one_is_not():
    assert clean(online(ONLINE))
    for body in ONLINE_SHAPES.values():
        assert clean(online(body)), (body, online(body))
    for name, body in ONLINE_ONE_SHOT.items():
        reading = online(f"def online_softmax(scores):\n{body}")
        assert reading["found"], (name, reading)


def test_an_earlier_one_shot_softmax_above_the_streamed_one_is_not_judged():
    one_shot = "def online_softmax(scores):\n    return torch.softmax(scores, -1)"
    assert clean(online(one_shot, ONLINE))
    assert caught(online(ONLINE, one_shot))


STREAMED = '''
def streaming_attention(q, k, v):
    T = q.shape[-2]
    m = torch.full(q.shape[:-1], float('-inf'), dtype=q.dtype)
    z = torch.zeros(q.shape[:-1], dtype=q.dtype)
    o = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j in range(T):
        s = (q @ k[..., j, :, None]).squeeze(-1) / q.shape[-1] ** 0.5
        new = torch.maximum(m, s)
        w = torch.exp(s - new)
        z = z * torch.exp(m - new) + w
        o = o * torch.exp(m - new)[..., None] + w[..., None] * v[..., j, None, :]
        m = new
    return o / z[..., None]
'''


def test_streaming_attention_without_and_with_the_t_by_t_matrix():
    assert clean(streaming(STREAMED))
    one_shot = "def streaming_attention(q, k, v):\n    return torch.softmax(q @ k.mT, -1) @ v"
    reading = streaming(one_shot)
    assert caught(reading) and len(reading["found"]) >= 2
    zipped = '''
def streaming_attention(q, k, v):
    m = torch.full(q.shape[:-1], float('-inf'), dtype=q.dtype)
    z = torch.zeros_like(m)
    o = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j, (k_j, v_j) in enumerate(zip(k.unbind(-2), v.unbind(-2))):
        s = (q * k_j.unsqueeze(-2)).sum(-1) / math.sqrt(q.shape[-1])
        new = torch.maximum(m, s)
        o = o * torch.exp(m - new).unsqueeze(-1) + torch.exp(s - new).unsqueeze(-1) * v_j.unsqueeze(-2)
        z = z * torch.exp(m - new) + torch.exp(s - new)
        m = new
    return o / z.unsqueeze(-1)'''
    assert clean(streaming(zipped)), streaming(zipped)
    fused = "def streaming_attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v, is_causal=True)"
    assert caught(streaming(fused)), streaming(fused)
    rows = '''
def streaming_attention(q, k, v):
    outs = []
    for qi in q.unbind(-2):
        w = torch.softmax(torch.stack([(qi * kj).sum(-1) for kj in k.unbind(-2)], -1), -1)
        outs.append(w @ v)
    return torch.stack(outs, -2)'''
    assert streaming(rows)["found"], streaming(rows)


# The keys' transpose written as a function (the array its first argument, the dims after it), as numpy's
# permutation, or with dims the reader cannot tell: the T×T matrix is found, or the axes are not followed.
# Each but the last read before as keys left untransposed (or moved where the reader could not follow),
# and the one-shot scored clean (or went to review).
_NP = "Q, K, V = q.detach().numpy(), k.detach().numpy(), v.detach().numpy()\n    "
TRANSPOSED_KEYS = {
    "torch.swapaxes": "return torch.softmax(q @ torch.swapaxes(k, -2, -1), -1) @ v",
    "torch.transpose": "return torch.softmax(q @ torch.transpose(k, -2, -1), -1) @ v",
    "np.swapaxes": _NP + "return torch.from_numpy((Q @ np.swapaxes(K, -2, -1)) @ V)",
    "numpy's transpose, a permutation": _NP + "return torch.from_numpy((Q @ K.transpose(0, 2, 1)) @ V)",
    "np.moveaxis": _NP + "return torch.from_numpy((Q @ np.moveaxis(K, -1, -2)) @ V)",
    "np.transpose, a permutation": _NP + "return torch.from_numpy((Q @ np.transpose(K, (0, 2, 1))) @ V)",
}


@pytest.mark.parametrize("name", list(TRANSPOSED_KEYS))
def test_the_keys_transposed_by_a_function_are_the_t_by_t_matrix(name):
    reading = streaming(f"def streaming_attention(q, k, v):\n    {TRANSPOSED_KEYS[name]}")
    assert caught(reading) and "spanning the keys at once" in reading["found"][0], (name, reading)


def test_a_transpose_of_dims_the_reader_cannot_tell_goes_to_review():
    reading = streaming("def streaming_attention(q, k, v):\n    a, b = -2, -1\n    return (q @ k.transpose(a, b)) @ v")
    assert review(reading) and "cannot follow" in reading["review"], reading


# ---- which cells the reader gets: the student's, in the order they run, up to the test's own cell -----

def test_the_grader_reads_the_cells_that_run_before_the_test_boxes_and_added_cells_included(tmp_path):
    """A graded notebook (intake/assemble.py) as grading gives it to a process check: answer cells, live Python
    boxes as the student left them, cells the student added; never what runs after the test's cell."""
    import json
    import os

    import nbformat

    from autograder.intake.assemble import assemble
    from autograder.example import with_answers
    from autograder.grading.grade import student_program
    from autograder.checks.probeserver import ProbeServer

    name = "02-the-head"
    release = json.loads((STEP4.release / f"{name}.ipynb").read_text())
    source = json.loads((STEP4.source / f"{name}.ipynb").read_text())
    caller = "def scores_entrywise(q, k):\n    return torch.stack([pair(q[b], k[b]) for b in range(q.shape[0])])\n"
    student = with_answers(STEP4, name, {"scores_entrywise": caller})
    ids = [c["id"] for c in student["cells"]]
    box = next(c for c in student["cells"] if c["cell_type"] == "code" and not c["metadata"].get("nbgrader")
               and ids.index(c["id"]) > 2)                           # a live Python box above the answer
    box["source"] = "def pair(u, w):\n    return torch.stack([torch.stack([(x * y).sum() for y in w]) for x in u])\n"
    hidden_at = next(n for n, c in enumerate(student["cells"])
                     if c["metadata"].get("nbgrader", {}).get("grade_id") == "bonus_scores_entrywise")
    later = nbformat.v4.new_code_cell("def scores_entrywise(q, k):\n    return q @ k.mT   # after the test")
    student["cells"].insert(hidden_at + 1, later)
    graded, _ = assemble(student, release, source)
    nb = nbformat.from_dict(graded)
    program = student_program(nb, {c.get("id") for c in release["cells"]})
    with ProbeServer(os.path.join(str(tmp_path), "s.sock"), STEP4, program=program) as server:
        before = server.code_before("bonus_scores_entrywise")
        everything = server.code_before("no such test")
    assert any("def pair" in cell for cell in before) and not any("after the test" in cell for cell in before)
    assert any("after the test" in cell for cell in everything)
    assert clean(process.entrywise_work(before, "scores_entrywise", QK))      # the box's per-entry helper
    assert review(process.entrywise_work([c for c in before if "def pair" not in c], "scores_entrywise", QK))
    assert caught(process.entrywise_work(everything, "scores_entrywise", QK))
    assert not any("hidden(" in cell for cell in everything)           # no test cell is the student's code


# ---- whole-matrix work without a product, and arrays the reader would not see ------------------------

PAIRED = {   # every pair of positions at once, with no product of q and k written
    "polarization": "    a, c = q[:, :, None, :], k[:, None, :, :]\n"
                    "    return (((a + c) ** 2).sum(-1) - ((a - c) ** 2).sum(-1)) / 4",
    "squared through a library": "    a, c = q.unsqueeze(2), k.unsqueeze(1)\n"
                                 "    return (torch.square(torch.add(a, c)) - torch.square(a - c)).sum(-1) / 4",
    "exp of a sum of logs": "    a, c = q[:, :, None].to(torch.complex128), k[:, None].to(torch.complex128)\n"
                            "    return torch.exp(torch.log(a) + torch.log(c)).real.sum(-1)",
    "in place": "    a = q[:, :, None, :].clone()\n    a -= k[:, None, :, :]\n    return -(a ** 2).sum(-1) / 2",
}


@pytest.mark.parametrize("body", list(PAIRED.values()), ids=list(PAIRED))
def test_positions_paired_with_positions_at_once_is_whole_matrix_work(body):
    reading = entrywise("def scores_entrywise(q, k):\n" + body)
    assert caught(reading) and "pairs every position with every position" in reading["found"][0], reading


def test_an_elementwise_step_on_the_filled_matrix_pairs_nothing_new():
    """The honest matrix, filled entry by entry, already holds the positions twice: a step on it
    (a shift by its row max, a mask from itself) is not whole-matrix work."""
    honest = PER_ENTRY.replace("    return s", "    s = s - s.amax(-1, keepdim=True)\n"
                                               "    return torch.where(s == s, s, s - 1)")
    assert clean(entrywise(honest)), entrywise(honest)


def test_a_streamed_softmax_over_a_matrix_paired_at_once_is_not_streamed():
    paired = STREAMED.replace("def streaming_attention(q, k, v):",
                              "def streaming_attention(q, k, v):\n    _ = (q[..., :, None, :] - k[..., None, :, :]) ** 2")
    assert paired != STREAMED
    reading = streaming(paired)
    assert caught(reading) and "pairs every query with every key" in reading["found"][0], reading


@pytest.mark.parametrize("call", [
    "torch.matmul(input=q, other=k.mT)", "q.matmul(other=k.mT)", "torch.bmm(q, mat2=k.mT)",
    "functools.partial(torch.matmul, other=k.mT)(q)", "torch.matmul(**{'input': q, 'other': k.mT})",
])
def test_arrays_passed_by_keyword_to_a_library_call_go_to_review(call):
    reading = entrywise(f"import functools\ndef scores_entrywise(q, k):\n    return {call}")
    assert review(reading), (call, reading)
    one_shot = streaming(f"import functools\ndef streaming_attention(q, k, v):\n"
                         f"    return torch.softmax({call.replace('k.mT', 'k.mT / 2')}, -1) @ v")
    assert one_shot["review"] or one_shot["found"], (call, one_shot)


def test_a_students_helper_called_by_keyword_is_followed():
    reading = entrywise("def h(a, c):\n    return a @ c.mT\ndef scores_entrywise(q, k):\n    return h(c=k, a=q)")
    assert caught(reading), reading


STREAMED_MAX = "    m = functools.reduce(torch.maximum, scores.unbind(-1))          # key by key\n" \
               "    e = torch.exp(scores - m[..., None])\n"
SUMMED_WITH_AN_ARRAY_OF_ITS_OWN = {   # the row's sum in one shot: a product with ones the answer made
    "@ ones": "e / (e @ torch.ones(scores.shape[-1], 1, dtype=scores.dtype))",
    "@ ones converted": "e / (e @ torch.ones(scores.shape[-1], 1).to(scores.dtype))",
    "inner with ones_like": "e / torch.inner(e, torch.ones_like(e[..., :1, :]).squeeze(-2))[..., None]",
    "ones' __rmatmul__": "e / torch.ones(1, scores.shape[-1]).T.__rmatmul__(e)",
    "numpy dot with ones": "torch.from_numpy(e.numpy() / np.dot(e.numpy(), np.ones((e.shape[-1], 1), dtype=e.numpy().dtype)))",
}


@pytest.mark.parametrize("ending", list(SUMMED_WITH_AN_ARRAY_OF_ITS_OWN.values()), ids=list(SUMMED_WITH_AN_ARRAY_OF_ITS_OWN))
def test_a_sum_over_the_keys_as_a_product_with_ones_is_one_shot(ending):
    reading = online(f"import functools\ndef online_softmax(scores):\n{STREAMED_MAX}    return {ending}")
    assert caught(reading) and "reduces over the keys at once" in reading["found"][0], (ending, reading)


def test_the_key_by_key_maximum_alone_is_streamed():
    """The control of the test above: the same streamed maximum is no finding; with the row's sum kept as
    the running sum of one pass (rescaled by a running max) the answer is clean."""
    streamed = (f"import functools\ndef online_softmax(scores):\n{STREAMED_MAX}"
                "    run, z = torch.full_like(m, float('-inf')), torch.zeros_like(m)\n"
                "    for s_j in scores.unbind(-1):\n"
                "        new = torch.maximum(run, s_j)\n"
                "        z = z * torch.exp(run - new) + torch.exp(s_j - new)\n"
                "        run = new\n"
                "    return e / z[..., None]")
    assert clean(online(streamed)), online(streamed)


# The row's sum taken key by key after a maximum of every key, however it is written: Python's sum of the
# unbound keys, a fold (functools.reduce, itertools.accumulate), a loop adding each key's term. Each adds
# terms computed from every key (the maximum, found before the sum): a second pass over the keys, not the
# running sum of one; whether that maximum was streamed (a fold of torch.maximum, a loop) or not. (The
# folds and the loops were read as visiting the keys one at a time while sum(e.unbind(-1)) was a finding.)
# Shifted by no maximum, or by a number of one key (the first), the same sums are one pass over the keys:
# no finding (their values show what the shift costs); torch's sum of the keys stacked back is one sum over
# all of them at once either way.
MAXIMA = {
    "a fold of torch.maximum": STREAMED_MAX,
    "a loop's running max": "    m = torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype)\n"
                            "    for s_j in scores.unbind(-1):\n        m = torch.maximum(m, s_j)\n"
                            "    e = torch.exp(scores - m[..., None])\n",
    "a loop's running max in a helper": "    e = torch.exp(scores - top(scores)[..., None])\n",
}
ONE_PASS_SHIFTS = {
    "no maximum": "    e = torch.exp(scores)\n",
    "the first key's score": "    e = torch.exp(scores - scores[..., :1])\n",
}
HELPER = ("def top(scores):\n    m = torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype)\n"
          "    for j in range(scores.shape[-1]):\n        m = torch.maximum(m, scores[..., j])\n    return m\n")
KEY_BY_KEY_SUMS = {
    "sum of the unbound keys": "    z = sum(e.unbind(-1))\n",
    "sum of a generator": "    z = sum(e_j for e_j in e.unbind(-1))\n",
    "functools.reduce(torch.add)": "    z = functools.reduce(torch.add, e.unbind(-1))\n",
    "functools.reduce(operator.add) from zeros": "    z = functools.reduce(operator.add, e.unbind(-1), torch.zeros_like(e[..., 0]))\n",
    "functools.reduce of an adding lambda": "    z = functools.reduce(lambda acc, e_j: acc + e_j, e.unbind(-1))\n",
    "functools.reduce of an adding def": "    def plus(acc, e_j):\n        return torch.add(acc, e_j)\n"
                                         "    z = functools.reduce(plus, e.unbind(-1))\n",
    "itertools.accumulate": "    z = list(itertools.accumulate(e.unbind(-1)))[-1]\n",
    "itertools.accumulate(torch.add)": "    *_, z = itertools.accumulate(e.unbind(-1), torch.add)\n",
    "a for over unbind adding": "    z = torch.zeros_like(e[..., 0])\n    for e_j in e.unbind(-1):\n        z = z + e_j\n",
    "a for over the key index, +=": "    z = torch.zeros_like(e[..., 0])\n    for j in range(e.shape[-1]):\n        z += e[..., j]\n",
    "a for with torch.add": "    z = torch.zeros_like(e[..., 0])\n    for e_j in e.unbind(-1):\n        z = torch.add(z, e_j)\n",
    "a for with add_": "    z = scores.new_zeros(scores.shape[:-1])\n    for e_j in e.unbind(-1):\n        z.add_(e_j)\n",
    "a for rescaling by a constant": "    z = torch.zeros_like(e[..., 0])\n    for e_j in e.unbind(-1):\n        z = z * 1.0 + e_j\n",
}
AT_ONCE = {"the keys stacked back, summed": "    z = torch.stack(list(e.unbind(-1))).sum(0)\n"}


def _summed(shift, summed):
    return (f"import functools, itertools, operator\n{HELPER}def online_softmax(scores):\n" + shift + summed
            + "    return e / z[..., None]")


@pytest.mark.parametrize("maximum", list(MAXIMA.values()), ids=list(MAXIMA))
@pytest.mark.parametrize("summed", list(KEY_BY_KEY_SUMS.values()) + list(AT_ONCE.values()),
                         ids=list(KEY_BY_KEY_SUMS) + list(AT_ONCE))
def test_a_sum_key_by_key_after_a_maximum_of_every_key_is_a_second_pass(maximum, summed):
    reading = online(_summed(maximum, summed))
    assert caught(reading), (summed, reading)
    # the line that adds (the def is line 1): the finding; the maximum none
    sum_line = 1 + maximum.count("\n") + summed.count("\n")
    assert all(f.startswith(f"line {sum_line} of") for f in reading["found"]), (sum_line, reading)


@pytest.mark.parametrize("shift", list(ONE_PASS_SHIFTS.values()), ids=list(ONE_PASS_SHIFTS))
@pytest.mark.parametrize("summed", list(KEY_BY_KEY_SUMS.values()), ids=list(KEY_BY_KEY_SUMS))
def test_the_same_sums_of_terms_of_one_key_each_are_one_pass(shift, summed):
    assert clean(online(_summed(shift, summed))), online(_summed(shift, summed))
    assert caught(online(_summed(shift, AT_ONCE["the keys stacked back, summed"])))


def test_a_running_sum_over_keys_the_reader_cannot_name_goes_to_review():
    """A `while` loop adding each key's term computed from every key: over which axis, the reader cannot
    tell, so it does not decide."""
    source = ("def online_softmax(scores):\n" + MAXIMA["a loop's running max"]
              + "    z, j = torch.zeros_like(m), 0\n    while j < e.shape[-1]:\n        z = z + e[..., j]\n        j += 1\n"
              "    return e / z[..., None]")
    assert review(online(source)), online(source)


def test_a_fold_whose_step_keeps_a_running_max_is_one_pass():
    """functools.reduce of a step that rescales the running sum by a running max (the online algorithm as a
    fold) is one pass over the keys; so is a loop whose running sum is rescaled as well as added to."""
    folded = '''
import functools
def step(state, s_j):
    m, z = state
    new = torch.maximum(m, s_j)
    return new, z * torch.exp(m - new) + torch.exp(s_j - new)

def online_softmax(scores):
    start = (torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype), torch.zeros(scores.shape[:-1], dtype=scores.dtype))
    m, z = functools.reduce(step, scores.unbind(-1), start)
    return torch.exp(scores - m[..., None]) / z[..., None]'''
    assert clean(online(folded)), online(folded)
    two_statements = '''
def online_softmax(scores):
    m = torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype)
    z = torch.zeros_like(m)
    for s_j in scores.unbind(-1):
        new = torch.maximum(m, s_j)
        z *= torch.exp(m - new)
        z += torch.exp(s_j - new)
        m = new
    return torch.exp(scores - m[..., None]) / z[..., None]'''
    assert clean(online(two_statements)), online(two_statements)


def test_the_streamed_answer_after_a_full_pass_is_not_a_second_pass():
    """What the online loop leaves (its max and sum, from every key) used on whole rows after it, as the
    solution's last line does, or in a second loop over the keys that builds the weights in a list or
    stores them, is no second pass of a sum; a second loop over the keys adding up terms shifted by that
    max is; one whose update the reader cannot tell adds or not goes to review."""
    assert clean(online(ONLINE))
    second = ONLINE.replace("    return torch.exp(", "    z2 = torch.zeros_like(z)\n    for j in range(scores.shape[-1]):\n"
                            "        z2 = z2 + torch.exp(scores[..., j] - m)\n    return torch.exp(")
    assert "z2 = z2 +" in second and caught(online(second)), online(second)
    # the weights in a second loop over the keys (the pass the exercise asks for), built up, not added up
    ending = "    return torch.exp(scores - m[..., None]) / z[..., None]\n"
    assert ending in ONLINE
    weights = {
        "stored": "    w = torch.empty_like(scores)\n    for j in range(scores.shape[-1]):\n"
                  "        w[..., j] = torch.exp(scores[..., j] - m) / z\n    return w\n",
        "a list appended to": "    ws = []\n    for s_j in scores.unbind(-1):\n        ws.append(torch.exp(s_j - m) / z)\n"
                              "    return torch.stack(ws, -1)\n",
        "a list concatenated": "    ws = []\n    for s_j in scores.unbind(-1):\n        ws = ws + [torch.exp(s_j - m) / z]\n"
                               "    return torch.stack(ws, -1)\n",
    }
    for name, pass_for_weights in weights.items():
        source = ONLINE.replace(ending, pass_for_weights)
        assert clean(online(source)), (name, online(source))
    # built up in a tensor carried from key to key, or by a fold's step: whether that adds the keys up (a
    # second pass) or builds the weights, the reader cannot tell; nor for another way of adding: review
    unread = {
        "torch.cat in a loop": "    w = scores[..., :0]\n    for s_j in scores.unbind(-1):\n"
                               "        w = torch.cat([w, (torch.exp(s_j - m) / z)[..., None]], -1)\n    return w\n",
        "torch.cat in a fold": "    return functools.reduce(lambda acc, w: torch.cat([acc, w[..., None]], -1),\n"
                               "                            [torch.exp(s_j - m) / z for s_j in scores.unbind(-1)])\n",
        "a sum of a stack in a loop": "    z2 = torch.zeros_like(z)\n    for s_j in scores.unbind(-1):\n"
                                      "        z2 = torch.stack([z2, torch.exp(s_j - m)]).sum(0)\n"
                                      "    return torch.exp(scores - m[..., None]) / z2[..., None]\n",
    }
    for name, pass_for_weights in unread.items():
        source = "import functools\n" + ONLINE.replace(ending, pass_for_weights)
        assert review(online(source)), (name, online(source))


@pytest.mark.parametrize("notebook, reads", [("02-the-head", (entrywise,)), ("06-going-further", (online, streaming))])
def test_the_whole_solution_notebook_as_a_kernel_s_history_is_decided(notebook, reads):
    """Without a grader (nbgrader's autograde, a notebook run in JupyterLab) the reader reads the kernel's
    input history: every code cell of the notebook, the course's own first cell and its imports of the
    course package included. The solutions are decided, as in grading (the course package was once not
    on the reader's list of libraries: nbgrader's autograde gave the solution 2.31 of 3)."""
    import json
    from autograder.selfgrade import _is_hidden_cell
    nb = json.loads((STEP4.source / f"{notebook}.ipynb").read_text())          # hidden test cells in it
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    history = [c for c in cells if not _is_hidden_cell(c)]
    assert len(history) < len(cells) and any("dlcourse" in c for c in history)
    for read in reads:
        reading = read(*history)
        assert clean(reading), (read.__name__, reading)
