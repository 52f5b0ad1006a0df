"""The grader's proof corpus: submissions made from the solutions by editing answer cells.

Each entry replaces some answers of one notebook and says which grade cells must lose points
and exactly how many they keep (`expect`), and which words the feedback of each of those cells
must contain (`says`: the property and the likely cause); every other autograded cell of that
notebook must keep full marks. Correct variants expect nothing: full marks everywhere.
tests/test_grader_proof.py grades the whole corpus through `make grade`'s code path and compares.

An expectation is the check's partial credit, worked out from its parts: a share of the points
per property (weights in source/step-04/checks/*.py), or, for a check a student wrote in
notebook 3, an equal share per broken case it catches (0 if it rejects a correct case).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder.example import answers_of
from conftest import STEP4


# An expectation that a grade cell goes to a person: its check cannot decide (code the process reader cannot
# follow), so it takes no points and the cell waits for a manual grade (score None, kind "review").
REVIEW = "review"


@dataclass(frozen=True)
class Entry:
    name: str                                   # corpus id
    notebook: str
    answers: dict                               # answer grade_id -> source that replaces the solution (or a
                                                # list of sources: the cells a student wrote in its place)
    expect: dict = field(default_factory=dict)  # grade cell -> exact points it must get, or REVIEW
    why: str = ""                               # the mistake and how the expectation follows, or why a
                                                # different answer is still right
    says: dict = field(default_factory=dict)    # grade cell -> words its feedback must contain
    visible_passes: dict = field(default_factory=dict)  # visible check cell -> why that "check your work"
                                                # cell cannot see this mistake (otherwise it must fail)
    hints: dict = field(default_factory=dict)   # grade cell -> the hints (names in its check's HINTS) its
                                                # feedback shows: causes this answer has. No other may show
                                                # (tests/test_hints.py)

    @property
    def correct(self) -> bool:
        return not self.expect


def code(text: str) -> str:
    return text.strip("\n")


def edit(notebook: str, answer: str, *changes: tuple[str, str]) -> dict:
    """{answer: the solution's answer with each (old, new) replaced}: a mistake in one place."""
    text = answers_of(STEP4, notebook)[answer]
    for old, new in changes:
        assert text.count(old) == 1, f"{notebook}/{answer}: {old!r} is not in the solution exactly once"
        text = text.replace(old, new)
    return {answer: text}


# ---- 01-on-paper -----------------------------------------------------------------------------

# ---- 01-on-paper -----------------------------------------------------------------------------
# bonus_shapes: 3 cases, one point-share each. bonus_dot_variance: 4 cases (three widths with n = 20,000,
# and n = 2; each with its twin) and "the same seed, the same dot products; another seed, others": 5 shares
# of 2 points. A case is right when its dot products are n samples of q·k (their number, distinct values,
# their law by a Kolmogorov-Smirnov test) and the variance returned is theirs. Dot products that are not
# samples of q·k in any case earn nothing anywhere.

P01 = "01-on-paper"
CORRECT = [
    Entry("c01-shapes-lists", P01, {"shapes": code('''
def shapes(T, d, d_k, d_v):
    names = ["X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "A", "out"]
    dims = [[T, d], [d, d_k], [d, d_k], [d, d_v], [T, d_k], [T, d_k], [T, d_v], [T, T], [T, T], [T, d_v]]
    return dict(zip(names, dims))
''')}, why="lists instead of tuples"),
    Entry("c01-shapes-computed", P01, {"shapes": code('''
def shapes(T, d, d_k, d_v):
    X = torch.empty(T, d)
    W_Q, W_K, W_V = torch.empty(d, d_k), torch.empty(d, d_k), torch.empty(d, d_v)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T
    A = scores.softmax(dim=-1)
    out = A @ V
    objects = dict(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, Q=Q, K=K, V=V, scores=scores, A=A, out=out)
    return {name: tensor.shape for name, tensor in objects.items()}
''')}, why="shapes read off a real computation (torch.Size)"),
    Entry("c01-variance-numpy", P01, {"dot_variance": code('''
import numpy as np

def dot_variance(d_k, n, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_k))
    k = rng.standard_normal((n, d_k))
    dots = np.einsum("nd,nd->n", q, k)
    return dots, float(np.var(dots))
''')}, why="numpy's generator, einsum, the dot products as a float64 numpy array, the biased variance"),
]

WRONG = [
    Entry("w01-scores-shape", P01, {"shapes": code('''
def shapes(T, d, d_k, d_v):
    return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v), "Q": (T, d_k), "K": (T, d_k),
            "V": (T, d_v), "scores": (T, d_k), "A": (T, d_k), "out": (T, d_v)}
''')}, expect={"bonus_shapes": 0.0}, why="scores as (T, d_k): q·k confused with q; wrong in all 3 cases",
          says={"bonus_shapes": ["scores", "every position with every position"]}),
    Entry("w01-values-width", P01, {"shapes": code('''
def shapes(T, d, d_k, d_v):
    return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_k), "Q": (T, d_k), "K": (T, d_k),
            "V": (T, d_k), "scores": (T, T), "A": (T, T), "out": (T, d_k)}
''')}, expect={"bonus_shapes": 0.67}, why="values assumed as wide as keys (d_v = d_k): right only in the case "
     "where they are equal, 1 of 3 cases: 2 × 1/3 = 0.67",
          says={"bonus_shapes": ["W_V", "own width d_v"]}),
    Entry("w01-variance-elementwise", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(n, d_k, generator=g), torch.randn(n, d_k, generator=g)
    products = q * k                                    # (n, d_k)
    return products, products.var().item()
''')}, expect={"bonus_dot_variance": 0.0},
          why="the products q_m k_m, (n, d_k), returned as the dot products: not one number per pair in any case "
              "(too many values to send at the wider widths), so nothing is credited",
          says={"bonus_dot_variance": ["one number per pair", "sum over the d_k axis"]}),
    Entry("w01-variance-unseeded", P01, edit(P01, "dot_variance", ("q = torch.randn(n, d_k, generator=g)", "q = torch.randn(n, d_k)"),
                                             ("k = torch.randn(n, d_k, generator=g)", "k = torch.randn(n, d_k)")),
          expect={"bonus_dot_variance": 1.6},
          why="sampled from the global generator, ignoring `seed`: every case right, only 'the same seed gives "
              "the same dot products' (1 of 5) lost: 2 × 4/5",
          says={"bonus_dot_variance": ["same seed", "manual_seed"]}),
    Entry("w01-variance-formula", P01, edit(P01, "dot_variance", ("return dots, dots.var().item()",
                                                                  "return dots, float(d_k)")),
          expect={"bonus_dot_variance": 0.0}, why="honest dot products, but the lemma's answer typed in as their "
          "variance: not their sample variance in any case (it differs by the sampling error, about 1%, far beyond "
          "float rounding), so no case is right and the seed is not judged",
          says={"bonus_dot_variance": ["not the sample variance of the dot products", "from those n dot products"]}),
]


# ---- 02-the-head -----------------------------------------------------------------------------
# bonus_scores_entrywise: 4 cases (1 share each) and "one entry at a time" (2 shares): 6 shares of 3
# points. The loops part is credited when no whole-matrix product is seen and the values are right up
# to a transpose or a scale. bonus_count_params: 4 cases, one share each.

P02 = "02-the-head"
ENTRYWISE = "scores_entrywise"
CORRECT += [
    Entry("c02-entrywise-loops-jbi", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    B, T, d_head = q.shape
    scores = q.new_zeros(B, T, T)
    for j in range(T):                     # keys outermost
        for b in range(B):
            for i in range(T):
                scores[b, i, j] = torch.dot(q[b, i], k[b, j])
    return scores
''')}, why="loops in another order (j, b, i), torch.dot of two vectors, q.new_zeros keeps the dtype"),
    Entry("c02-entrywise-python-floats", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    B, T, d_head = q.shape
    rows = [[[sum(q[b, i, m].item() * k[b, j, m].item() for m in range(d_head)) for j in range(T)]
             for i in range(T)] for b in range(B)]
    return torch.tensor(rows, dtype=q.dtype)
''')}, why="every product in plain Python floats (double precision), the tensor built at the end"),
    Entry("c02-count-from-a-head", P02, {"count_params": code('''
def count_params(d, d_head):
    head = Head(d, d_head, T_max=1)
    return sum(p.numel() for p in head.parameters() if p.requires_grad)
''')}, why="counted on a real Head instead of a formula"),
]


def _entrywise(line: str) -> dict:
    return edit(P02, ENTRYWISE, ("scores[b, i, j] = (q[b, i] * k[b, j]).sum()", line))


WRONG += [
    Entry("w02-entrywise-scaled", P02, _entrywise("scores[b, i, j] = (q[b, i] * k[b, j]).sum() / d_head**0.5"),
          expect={"bonus_scores_entrywise": 1.0},
          why="divided by sqrt(d_k), which the head does afterwards: 4 cases wrong, the loops right: 3 × 2/6",
          says={"bonus_scores_entrywise": ["divided by sqrt(d_k)", "raw"]},
          hints={"bonus_scores_entrywise": ["divided_by_sqrt_d_k"]}),
    Entry("w02-entrywise-by-d_k", P02, _entrywise("scores[b, i, j] = (q[b, i] * k[b, j]).sum() / d_head"),
          expect={"bonus_scores_entrywise": 1.0}, why="divided by d_k: 4 cases wrong, the loops right: 3 × 2/6",
          says={"bonus_scores_entrywise": ["divided by d_k", "no scaling"]},
          hints={"bonus_scores_entrywise": ["divided_by_d_k"]}),
    Entry("w02-entrywise-by-width", P02, _entrywise("scores[b, i, j] = (q[b, i] * k[b, j]).sum() / 32**0.5"),
          expect={"bonus_scores_entrywise": 1.0},
          why="divided by the model width's square root: 4 cases wrong, the loops right: 3 × 2/6",
          says={"bonus_scores_entrywise": ["model width", "no scaling"]},
          hints={"bonus_scores_entrywise": ["divided_by_model_width_root"]}),
    Entry("w02-entrywise-transposed", P02, edit(P02, ENTRYWISE, ("scores[b, i, j] = (q", "scores[b, j, i] = (q")),
          expect={"bonus_scores_entrywise": 1.5},
          why="row and column swapped: right only for T = 1 (1 share) and the loops (2): 3 × 3/6",
          says={"bonus_scores_entrywise": ["transposed", "query i"]},
          hints={"bonus_scores_entrywise": ["transposed"]}),
    Entry("w02-entrywise-float32", P02, edit(P02, ENTRYWISE, (", dtype=q.dtype)", ")")),
          expect={"bonus_scores_entrywise": 2.5},
          why="the result made in float32: the float64 case loses its precision: 3 × 5/6",
          says={"bonus_scores_entrywise": ["float64", "default dtype"]},
          visible_passes={"scores_entrywise_check": "the visible check uses float32 inputs only, where a float32 result is right"}),
    Entry("w02-entrywise-matmul", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    return q @ k.transpose(-2, -1)          # (B, T, T) in one product
''')}, expect={"bonus_scores_entrywise": 2.0},
          why="right values from one matrix product: the task's one-entry-at-a-time part fails: 3 × 4/6",
          says={"bonus_scores_entrywise": ["whole matrices", "loop over b, i and j"]},
          visible_passes={"scores_entrywise_check": "right values; how they are computed (one entry at a time) is judged only by the hidden test"}),
    Entry("w02-entrywise-row-at-once", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    B, T, d_head = q.shape
    scores = torch.zeros(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            scores[b, i] = k[b] @ q[b, i]          # a whole row of scores at once
    return scores
''')}, expect={"bonus_scores_entrywise": 2.0},
          why="one matrix-vector product per row: not one entry at a time: 3 × 4/6",
          says={"bonus_scores_entrywise": ["rows at once", "one dot product"]},
          visible_passes={"scores_entrywise_check": "right values; how they are computed (one entry at a time) is judged only by the hidden test"}),
    Entry("w02-params-biases", P02, {"count_params": code('''
def count_params(d, d_head):
    return 3 * (d * d_head + d_head)          # weights and biases
''')}, expect={"bonus_count_params": 0.0}, why="biases counted: wrong for every width",
          says={"bonus_count_params": ["biases", "bias=False"]},
          hints={"bonus_count_params": ["biases"]}),
    Entry("w02-params-square", P02, {"count_params": code('''
def count_params(d, d_head):
    return 3 * d * d                          # three (d, d) matrices
''')}, expect={"bonus_count_params": 0.0}, why="square projections, d by d: wrong for every width",
          says={"bonus_count_params": ["not a square one"]},
          hints={"bonus_count_params": ["square"]}),
    Entry("w02-params-one-projection", P02, {"count_params": code('''
def count_params(d, d_head):
    return d * d_head                         # the query's weights only
''')}, expect={"bonus_count_params": 0.0}, why="one projection counted: wrong for every width",
          says={"bonus_count_params": ["one projection"]},
          hints={"bonus_count_params": ["one_projection"]}),
    Entry("w02-params-tril", P02, {"count_params": code('''
def count_params(d, d_head):
    head = Head(d, d_head, T_max=8)
    return sum(p.numel() for p in head.parameters()) + head.tril.numel()
''')}, expect={"bonus_count_params": 0.0}, why="the tril buffer counted as parameters: wrong for every width",
          says={"bonus_count_params": ["tril buffer", "not a parameter"]},
          hints={"bonus_count_params": ["buffer"]}),
    Entry("w02-params-always-equal", P02, {"count_params": code('''
class Count(int):
    def __eq__(self, other):                 # equal to anything: passes `mine == actual`
        return True
    __hash__ = int.__hash__

def count_params(d, d_head):
    return Count(0)
''')}, expect={"bonus_count_params": 0.0},
          why="an object whose __eq__ is always true: it passes the visible check's ==, but only plain data "
              "reaches the grader",
          says={"bonus_count_params": ["an object of another class", "return numbers"]},
          visible_passes={"count_params_check": "the visible check compares with ==, which such an object always satisfies; only plain data reaches the grader"}),
    Entry("w02-params-assumes-narrow", P02, {"count_params": code('''
def count_params(d, d_head):
    assert d_head <= d, "a head is never wider than the model"
    return 3 * d * d_head
''')}, expect={"bonus_count_params": 1.5},
          why="a wrong assumption crashes the one case with d_head > d: 3 of 4 cases, 2 × 3/4 (partial credit)",
          says={"bonus_count_params": ["wider than its input", "AssertionError"]},
          visible_passes={"count_params_check": "the visible check tries only heads with d_head < d"}),
]


# ---- 03-the-tests ----------------------------------------------------------------------------
# A student's check is run on its suite (source/step-04/checks/suites.py): rejecting a correct case
# scores 0; otherwise each broken case caught earns an equal share. simplex: 19 broken matrices
# (3/19 points each); perturbation: 27 broken heads (3/27 each); gradient: 27 (3/27 each).
# scale_table_hidden: 8 parts weighing 8, half a point per unit (form 1, sqrt column 0.5, q and k are N(0, 1)
# samples 1, raw_std is the std of q kᵀ 1, scaled_std 0.5, max weights 1.5, one-hot shares 1.5, seeded 1),
# judged on 2 fixed tables and 2 twins: every statistic recomputed from the q and k the row returns. Samples
# that are not N(0, 1) draws earn no statistic; statistics not measured from the samples (raw_std) earn
# neither the samples nor the seed. mask_after_softmax_hidden: 4 cases; fails_on_mask_after_softmax_hidden:
# 3 names.

P03 = "03-the-tests"
SIMPLEX, PERTURB, GRADIENT = "check_simplex", "check_causality_perturbation", "check_causality_gradient"
SCALE, ROW_SUMS, FAILS = "scale_table", "mask_after_softmax_row_sums", "fails_on_mask_after_softmax"


def magnitudes_reused(name: str, change: tuple[str, str], why: str) -> Entry:
    """A wrong scale_table whose q or k has the right law and all-distinct numbers, but reuses magnitudes
    (numbers and their negatives): not independent draws, nothing measured credited (4 x 1.5/8 of the
    points); the visible check, which counts repeated numbers, cannot see it."""
    return Entry(name, P03, edit(P03, SCALE, change), expect={"scale_table_hidden": 0.75}, why=why,
                 says={"scale_table_hidden": ["negatives of others", "not credited"]},
                 visible_passes={"scale_table_check": "the visible check counts repeated numbers, not repeated "
                                                      "magnitudes: every entry here is a distinct number"})


def moved_from_q(name: str, change: str, why: str) -> Entry:
    """A wrong scale_table whose k is q moved by a map that keeps the law (shuffled and scaled by about 1, or
    shifted in its quantiles, then flipped or rolled): no number or magnitude repeats, and q ± k pass the law
    test, but k is q's (sampling.moved_copy): not independent draws (1), nothing measured credited (4 x 1.5/8)."""
    return Entry(name, P03, edit(P03, SCALE, ("k = torch.randn(4, 8, d_k, generator=g)", change)),
                 expect={"scale_table_hidden": 0.75}, why=why,
                 says={"scale_table_hidden": ["not independent draws", "q's moved by one map", "not credited"]},
                 hints={"scale_table_hidden": ["k_moved_from_q"]},
                 visible_passes={"scale_table_check": "the visible check counts repeated numbers: every entry of q "
                                                      "and k here is a distinct number"})


CORRECT += [
    Entry("c03-simplex-assert-close", P03, {SIMPLEX: code('''
def check_simplex(A):
    B, T, _ = A.shape
    assert torch.all(A >= 0), "a negative (or NaN) weight"
    # float32 row sums are 1 to ~1e-7: atol 1e-5 as the spec says, no relative part
    torch.testing.assert_close(A.sum(dim=-1), torch.ones(B, T, dtype=A.dtype), rtol=0, atol=1e-5)
    upper = torch.ones(T, T, dtype=torch.bool).triu(1)
    assert torch.count_nonzero(A[:, upper]) == 0, "weight on a future key"
''')}, why="torch.testing.assert_close (it raises AssertionError, NaN included), count_nonzero for the triangle"),
    Entry("c03-simplex-isclose", P03, {SIMPLEX: code('''
def check_simplex(A):
    assert not torch.any(~(A >= 0)), "a negative or NaN weight"
    sums = A.sum(-1)
    assert torch.isclose(sums, torch.ones_like(sums), rtol=0.0, atol=1e-5).all(), "a row does not sum to 1"
    assert torch.equal(torch.tril(A), A), "weight above the diagonal"
''')}, why="torch.isclose for the row sums; the triangle as 'A equals its own lower triangle'"),
    Entry("c03-simplex-numpy", P03, {SIMPLEX: code('''
import numpy as np

def check_simplex(A):
    a = A.detach().cpu().numpy()
    T = a.shape[-1]
    assert np.all(a >= 0), "a negative (or NaN) weight"
    assert np.all(np.abs(a.sum(axis=-1) - 1) <= 1e-5), "a row does not sum to 1"
    i, j = np.triu_indices(T, k=1)
    assert np.all(a[:, i, j] == 0), "weight above the diagonal"
''')}, why="numpy throughout, triu_indices for the future entries"),
    Entry("c03-perturb-numpy", P03, {PERTURB: code('''
import numpy as np

def check_causality_perturbation(head, x, t):
    with torch.no_grad():
        before = head(x).numpy()
        changed = x.clone()
        changed[:, t] += 1.0                                # a different token t: shifted, not redrawn
        after = head(changed).numpy()
    assert np.array_equal(before[:, :t], after[:, :t]), "an output before t moved"
    for s in range(t, x.shape[1]):
        assert not np.array_equal(before[:, s], after[:, s]), f"the output at {s} did not move"
''')}, why="numpy's array_equal (bitwise), no_grad, the token shifted instead of redrawn"),
    Entry("c03-grad-autograd-grad", P03, {GRADIENT: code('''
def check_causality_gradient(head, x, i):
    leaf = x.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(head(leaf)[0, i].sum(), leaf)     # instead of .backward()
    g = g[0]                                                     # (T, d)
    assert not torch.isnan(g).any() and torch.count_nonzero(g[i + 1:]) == 0, "gradient from the future"
    for j in range(i + 1):
        assert g[j].abs().sum() > 0, f"no gradient from position {j}"
''')}, why="torch.autograd.grad instead of .backward(); count_nonzero and a NaN test instead of == 0"),
    Entry("c03-grad-torch-func", P03, {GRADIENT: code('''
def check_causality_gradient(head, x, i):
    g = torch.func.grad(lambda inp: head(inp)[0, i].sum())(x)[0]   # (T, d): function transforms
    assert (g[i + 1:] == 0).all(), "a gradient from the future"
    for j in range(i + 1):
        assert (g[j] != 0).any(), f"no gradient from position {j}"
''')}, why="torch.func.grad instead of autograd: the heads a check is tried on work under function transforms"),
    Entry("c03-grad-torch-func-vjp", P03, {GRADIENT: code('''
def check_causality_gradient(head, x, i):
    out, pullback = torch.func.vjp(head, x)                        # a vector-Jacobian product
    weight = torch.zeros_like(out)
    weight[0, i] = 1.0
    (g,) = pullback(weight)
    g = g[0]                                                       # (T, d)
    assert torch.equal(g[i + 1:], torch.zeros_like(g[i + 1:])), "a gradient from the future"
    assert all(g[j].abs().max() > 0 for j in range(i + 1)), "no gradient from the past"
''')}, why="torch.func.vjp: the heads a check is tried on work under function transforms"),
    Entry("c03-perturb-inference-mode", P03, {PERTURB: code('''
def check_causality_perturbation(head, x, t):
    with torch.inference_mode():                                   # no autograd at all
        before = head(x)                                           # (B, T, d_head)
        x2 = x.clone()
        x2[:, t] = torch.randn_like(x2[:, t])
        after = head(x2)
    assert torch.equal(before[:, :t], after[:, :t]), "the past moved"
    for s in range(t, x.shape[1]):
        assert not torch.equal(before[:, s], after[:, s]), f"the output at {s} did not move"
''')}, why="the head called under torch.inference_mode: a served head runs there as a module does"),
    Entry("c03-scale-numpy", P03, {SCALE: code('''
import numpy as np

def scale_table(d_heads, seed):
    torch.manual_seed(seed)
    table = []
    for d_k in d_heads:
        q, k = torch.randn(4, 8, d_k), torch.randn(4, 8, d_k)
        raw = torch.einsum("bid,bjd->bij", q, k).numpy().astype(np.float64)
        scaled = raw / np.sqrt(d_k)

        def top(s):                                  # each row's largest softmax weight, (B, T)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return (e / e.sum(axis=-1, keepdims=True)).max(axis=-1)
        table.append(dict(d_k=d_k, raw_std=float(raw.std()), sqrt_d_k=float(np.sqrt(d_k)),
                          scaled_std=float(scaled.std()), max_weight_raw=float(top(raw).max()),
                          max_weight_scaled=float(top(scaled).max()),
                          one_hot_raw=float((top(raw) >= 0.9995).mean()),
                          one_hot_scaled=float((top(scaled) >= 0.9995).mean()), q=q.numpy(), k=k.numpy()))
    return table
''')}, why="torch.manual_seed instead of a generator, einsum, the statistics in float64 numpy with the biased "
     "std (the judge accepts the biased and the unbiased one), q and k handed back as numpy arrays"),
    Entry("c03-scale-exp-minus-max", P03, edit(P03, SCALE,
              ("F.softmax(raw, dim=-1)",
               "((raw - raw.amax(dim=-1, keepdim=True)).exp() / (raw - raw.amax(dim=-1, keepdim=True)).exp().sum(dim=-1, keepdim=True))"),
              ("F.softmax(scaled, dim=-1)",
               "((scaled - scaled.amax(dim=-1, keepdim=True)).exp() / (scaled - scaled.amax(dim=-1, keepdim=True)).exp().sum(dim=-1, keepdim=True))")),
          why="the softmax written by hand in float32 as exp(s - max) / sum exp(s - max), each row's max subtracted: "
              "every exponent is at most 0, so nothing overflows even on the wide table's raw scores in the hundreds"),
    Entry("c03-row-sums-cumsum", P03, {ROW_SUMS: code('''
def mask_after_softmax_row_sums(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))          # (B, T, T)
    kept = torch.cumsum(e, dim=-1).diagonal(dim1=-2, dim2=-1)           # row i: e[i, 0] + ... + e[i, i]
    return kept / e.sum(dim=-1)                                         # (B, T)
''')}, why="no mask at all: the kept weight of row i is a prefix sum of its exponentials"),
    Entry("c03-fails-comprehension", P03, {FAILS: code('''
CHECKS = ["check_simplex", "check_causality_gradient", "check_causality_perturbation"]
FAILS_ON_MASK_AFTER_SOFTMAX = {name for name in CHECKS}
''')}, why="the same set, built by a comprehension in another order"),
    Entry("c03-checks-tril-and-isclose", P03, {SIMPLEX: code("""
def check_simplex(A):
    assert torch.all(A >= 0)
    s = A.sum(-1)
    assert torch.isclose(s, torch.ones_like(s), atol=1e-5, rtol=0).all()
    assert torch.equal(A.tril(), A)
"""), PERTURB: code("""
def check_causality_perturbation(head, x, t):
    with torch.no_grad():
        out = head(x)
        x_new = x.clone()
        x_new[:, t] += torch.randn_like(x[:, t])
        out_new = head(x_new)
    assert (out[:, :t] == out_new[:, :t]).all()
    changed = (out[:, t:] != out_new[:, t:]).flatten(2).any(-1)     # (B, T - t)
    assert changed.all(dim=0).all()
"""), GRADIENT: code("""
def check_causality_gradient(head, x, i):
    x = x.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(head(x)[0, i].sum(), x)
    g = g[0]
    assert torch.count_nonzero(g[i + 1:]) == 0
    assert (g[: i + 1].abs().sum(-1) > 0).all()
""")}, why="the upper triangle as A.tril() == A, row sums by isclose with the spec's tolerance, token t moved by "
            "noise added to it, each later output changed in every sequence, the gradient by autograd.grad and "
            "count_nonzero: every place of every family is looked at"),
    Entry("c03-checks-entry-by-entry", P03, {SIMPLEX: code("""
def check_simplex(A):
    B, T, _ = A.shape
    for b in range(B):
        for i in range(T):
            row = A[b, i]
            assert bool((row >= 0).all())
            assert abs(float(row.sum()) - 1.0) <= 1e-5
            assert int(torch.count_nonzero(row[i + 1:])) == 0
"""), PERTURB: code("""
def check_causality_perturbation(head, x, t):
    g = torch.Generator().manual_seed(1234)
    out = head(x).detach()
    x_new = x.detach().clone()
    x_new[:, t, :] = torch.randn(x.shape[0], x.shape[2], generator=g, dtype=x.dtype)
    out_new = head(x_new).detach()
    B, T = x.shape[0], x.shape[1]
    for b in range(B):
        for s in range(T):
            same = torch.equal(out[b, s], out_new[b, s])
            assert same if s < t else not same
"""), GRADIENT: code("""
def check_causality_gradient(head, x, i):
    J = torch.autograd.functional.jacobian(lambda inp: head(inp)[0, i].sum(), x)   # (B, T, d)
    J = J[0]
    T = x.shape[1]
    for j in range(T):
        if j > i:
            assert not J[j].any()
        else:
            assert J[j].any()
""")}, why="loops over every sequence, row and position (each later output must change in each sequence), token t "
            "drawn from a generator of its own, the gradient as a Jacobian: each place of each family is one "
            "iteration"),
]


def _simplex(body: str) -> dict:
    return {SIMPLEX: "def check_simplex(A):\n" + code(body)}


def _perturbation(body: str) -> dict:
    return {PERTURB: "def check_causality_perturbation(head, x, t):\n" + code(body)}


def _gradient(body: str) -> dict:
    return {GRADIENT: "def check_causality_gradient(head, x, i):\n" + code(body)}


def _row_sums(body: str) -> dict:
    return {ROW_SUMS: "def mask_after_softmax_row_sums(scores):\n    T = scores.shape[-1]\n" + code(body)}


WRONG += [
    # -- check_simplex: 19 broken matrices, 3/19 points each
    Entry("w03-simplex-asserts-nothing", P03, _simplex('''
    print("row sums:", A.sum(dim=-1))
    (A >= 0).all()
'''), expect={"check_simplex_hidden": 0.0}, why="a check that asserts nothing catches nothing",
          says={"check_simplex_hidden": ["every broken matrix", "assert anything"]}),
    Entry("w03-simplex-only-nonnegative", P03, _simplex('''
    assert (A >= 0).all(), "a negative weight"
'''), expect={"check_simplex_hidden": 0.63},
          why="only nonnegativity: catches the two negative weights, the NaN row and the -0.001 future weight, 4 of 19",
          says={"check_simplex_hidden": ["one row summing to 0.9", "1e-12 weight above the diagonal"]}),
    Entry("w03-simplex-no-triangle", P03, _simplex('''
    assert (A >= 0).all(), "a negative weight"
    assert ((A.sum(-1) - 1).abs() <= 1e-5).all(), "a row does not sum to 1"
'''), expect={"check_simplex_hidden": 1.89},
          why="no triangle test: a mask filled with 0 (rows still sum to 1), no mask, a tiny future weight, an "
              "unmasked last sequence, weight on key i + 1, on the last key and on a future key of row 0 pass; "
              "12 of 19 caught",
          says={"check_simplex_hidden": ["mask filled with 0 instead of -inf", "upper triangle must be exactly zero"]}),
    Entry("w03-simplex-allclose", P03, _simplex('''
    T = A.shape[-1]
    assert (A >= 0).all(), "a negative weight"
    assert torch.allclose(A.sum(-1), torch.ones_like(A.sum(-1))), "a row does not sum to 1"
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert torch.allclose(A[:, future], torch.zeros_like(A[:, future])), "weight above the diagonal"
'''), expect={"check_simplex_hidden": 2.84},
          why="allclose where exact zeros are asked: a 1e-12 future weight passes; 18 of 19",
          says={"check_simplex_hidden": ["1e-12 weight above the diagonal", "== 0, not allclose"]},
          visible_passes={"check_simplex_check": "the broken heads of the visible check leak far more than allclose forgives"}),
    Entry("w03-simplex-nan-blind", P03, _simplex('''
    T = A.shape[-1]
    assert not (A < 0).any(), "a negative weight"
    assert not ((A.sum(-1) - 1).abs() > 1e-5).any(), "a row does not sum to 1"
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert not (A[:, future].abs() > 0).any(), "weight above the diagonal"
'''), expect={"check_simplex_hidden": 2.84},
          why="every assert says 'no bad entry', and every comparison with NaN is False: the NaN row (the "
              "diagonal masked) passes; 18 of 19",
          says={"check_simplex_hidden": ["NaN row", "(A >= 0).all()"]},
          visible_passes={"check_simplex_check": "no broken head of the visible check makes NaN rows"}),
    Entry("w03-simplex-diagonal", P03, _simplex('''
    T = A.shape[-1]
    assert (A >= 0).all(), "a negative weight"
    assert ((A.sum(-1) - 1).abs() <= 1e-5).all(), "a row does not sum to 1"
    future = torch.triu(torch.ones(T, T, dtype=torch.bool))
    assert (A[:, future] == 0).all(), "weight on the diagonal or above"
'''), expect={"check_simplex_hidden": 0.0},
          why="the diagonal counted as future: rejects every correct matrix",
          says={"check_simplex_hidden": ["every correct matrix", "the diagonal itself holds weight"]}),

    # -- check_causality_perturbation: 27 broken heads, 3/27 points each
    Entry("w03-perturbation-asserts-nothing", P03, _perturbation('''
    out = head(x)
    x2 = x.clone()
    x2[:, t] = 0
    print("largest change:", (head(x2) - out).abs().max().item())
'''), expect={"check_perturbation_hidden": 0.0}, why="prints the change, asserts nothing: catches nothing",
          says={"check_perturbation_hidden": ["every broken head", "assert anything"]}),
    Entry("w03-perturbation-allclose", P03, _perturbation('''
    out = head(x)
    x2 = x.clone()
    x2[:, t] = torch.randn_like(x2[:, t])
    out2 = head(x2)
    assert torch.allclose(out[:, :t], out2[:, :t]), "the past moved"
    for s in range(t, x.shape[1]):
        assert not torch.allclose(out[:, s], out2[:, s]), "the present did not move"
'''), expect={"check_perturbation_hidden": 2.78},
          why="allclose where bitwise equality is asked: the leak of 3e-7 of each output and the float64 head that "
              "renormalises after masking (a rounding leak of ~1e-16, 1e8 times below atol) pass; 25 of 27. (The "
              "1e-7 leak shows in outputs near 0, where allclose's atol of 1e-8 is all it allows: 2 to 7 times "
              "above it. That head was float32 before: its leak of ~1e-8 sat at atol, and this entry scored "
              "2.79 on one CPU and 2.57 on another, of 14 heads then)",
          says={"check_perturbation_hidden": ["inside allclose's tolerance", "torch.equal, not allclose"]},
          visible_passes={"check_causality_perturbation_check": "the broken heads of the visible check leak far more than allclose forgives"}),
    Entry("w03-perturbation-atol", P03, _perturbation('''
    out = head(x)
    x2 = x.clone()
    x2[:, t] = torch.randn_like(x2[:, t])
    out2 = head(x2)
    assert torch.allclose(out[:, :t], out2[:, :t], atol=1e-6), "the past moved"
    for s in range(t, x.shape[1]):
        assert not torch.allclose(out[:, s], out2[:, s], atol=1e-6), "the present did not move"
'''), expect={"check_perturbation_hidden": 2.67},
          why="a tolerance where bitwise equality is asked: the heads that mask after the softmax and "
              "renormalise (a float64 head: a leak of ~1e-16), leak 1e-7 or 3e-7 of each output pass; 24 of 27",
          says={"check_perturbation_hidden": ["masks after the softmax and renormalises", "bitwise"]},
          visible_passes={"check_causality_perturbation_check": "the broken heads of the visible check leak far more than the tolerance"}),
    Entry("w03-perturbation-only-before", P03, _perturbation('''
    out = head(x)
    x2 = x.clone()
    x2[:, t] = torch.randn_like(x2[:, t])
    out2 = head(x2)
    assert torch.equal(out[:, t - 1], out2[:, t - 1]), "the position right before t moved"
    for s in range(t, x.shape[1]):
        assert not torch.equal(out[:, s], out2[:, s]), "the present did not move"
'''), expect={"check_perturbation_hidden": 2.67},
          why="only the position right before the perturbation: a head whose first row is unmasked leaks into "
              "position 0 only, one whose middle row 3 is unmasked into position 3 only, and one whose leaks into "
              "positions 0 and 1 cancel: 24 of 27",
          says={"check_perturbation_hidden": ["first row open", "out[:, :t]"]}),
    Entry("w03-perturbation-past-only", P03, _perturbation('''
    out = head(x)
    x2 = x.clone()
    x2[:, t] = torch.randn_like(x2[:, t])
    assert torch.equal(out[:, :t], head(x2)[:, :t]), "the past moved"
'''), expect={"check_perturbation_hidden": 2.11},
          why="only half the property (the past does not move): a head that ignores its input, one that ignores "
              "the past, one that sees only the token before, one that skips it, one shifted by a position, one "
              "whose middle position ignores the past, one whose last position does, and one whose positions past 8 "
              "are never seen pass; 19 of 27",
          says={"check_perturbation_hidden": ["ignores its input", "two halves"]}),
    Entry("w03-perturbation-diagonal", P03, _perturbation('''
    out = head(x)
    x2 = x.clone()
    x2[:, t] = torch.randn_like(x2[:, t])
    assert torch.equal(out[:, :t + 1], head(x2)[:, :t + 1]), "an output up to t moved"
'''), expect={"check_perturbation_hidden": 0.0},
          why="the diagonal treated as masked: position t 'must not' see token t, so every correct head fails",
          says={"check_perturbation_hidden": ["every correct head", "a token sees itself"]}),

    # -- check_causality_gradient: 27 broken heads, 3/27 points each
    Entry("w03-gradient-asserts-nothing", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    x.grad[0, i + 1:] == 0
'''), expect={"check_gradient_hidden": 0.0}, why="a comparison on its own line asserts nothing",
          says={"check_gradient_hidden": ["every broken head", "assert anything"]}),
    Entry("w03-gradient-future-only", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    assert (x.grad[0, i + 1:] == 0).all(), "a gradient from the future"
'''), expect={"check_gradient_hidden": 2.0},
          why="only that future gradients are zero, never that past ones are not: the input-ignoring, self-only, "
              "window, skipped-previous, shifted, first-key-hidden and middle-key-hidden heads, the one whose "
              "positions past 8 are never seen and the sliding window of 8, pass; 18 of 27",
          says={"check_gradient_hidden": ["ignores its input", "two halves"]}),
    Entry("w03-gradient-only-next", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    if i + 1 < x.shape[1]:
        assert (g[i + 1] == 0).all(), "a gradient from the next position"
    for j in range(i + 1):
        assert (g[j] != 0).any(), f"no gradient from position {j}"
'''), expect={"check_gradient_hidden": 2.78},
          why="only the position right after i: the head whose last position leaks into all others and the one "
              "that sees two tokens ahead pass (both are two or more steps after every i tried); 25 of 27",
          says={"check_gradient_hidden": ["only the last position leaks", "not only the next one"]},
          visible_passes={"check_causality_gradient_check": "every broken head of the visible check leaks into the position right after i"}),
    Entry("w03-gradient-allclose", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    assert torch.allclose(g[i + 1:], torch.zeros_like(g[i + 1:])), "a gradient from the future"
    for j in range(i + 1):
        assert not torch.allclose(g[j], torch.zeros_like(g[j])), f"no gradient from {j}"
'''), expect={"check_gradient_hidden": 2.78},
          why="allclose where exact zeros are asked: future gradients of 1e-10 and of 1e-14 pass; 25 of 27",
          says={"check_gradient_hidden": ["1e-10", "== 0, not allclose"]},
          visible_passes={"check_causality_gradient_check": "the broken heads of the visible check leak far more than allclose forgives"}),
    Entry("w03-gradient-diagonal", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    assert (x.grad[0, i:] == 0).all(), "a gradient from position i or later"
'''), expect={"check_gradient_hidden": 0.0},
          why="the diagonal treated as masked: out_i 'must not' depend on x_i, so every correct head fails",
          says={"check_gradient_hidden": ["every correct head", "a token sees itself"]}),

    # -- scale_table: parts weigh 8 in all, 4 points (half a point per unit)
    Entry("w03-scale-by-d_k", P03, edit(P03, SCALE, ("scaled = raw / math.sqrt(d_k)", "scaled = raw / d_k")),
          expect={"scale_table_hidden": 3.0},
          why="scaled by d_k: loses scaled_std (0.5) and the max weights (1.5: the scaled ones are those of q kᵀ / d_k); "
              "the one-hot shares stay right (no scaled row is one-hot under either scale: a gap of 7.6 between "
              "the two largest of 8 scores of std 1, about 1e-7 a row): 4 × 6/8",
          says={"scale_table_hidden": ["divided by d_k", "max_weight_scaled", "too low"]},
          hints={"scale_table_hidden": ["scores_by_d_k", "std_by_d_k"]}),
    Entry("w03-scale-by-width", P03, edit(P03, SCALE, ("scaled = raw / math.sqrt(d_k)", "scaled = raw / math.sqrt(32)")),
          expect={"scale_table_hidden": 2.25},
          why="scaled by the model width's square root: loses scaled_std (0.5), the max weights (1.5) and the "
              "one-hot shares (1.5: at d_k = 512 scores of std 4 leave a scaled row one-hot in each fixed table, "
              "whose seeds were chosen so): 4 × 4.5/8",
          says={"scale_table_hidden": ["model width", "max_weight_scaled"]},
          hints={"scale_table_hidden": ["scores_by_model_width", "std_by_model_width"]}),
    Entry("w03-scale-none", P03, edit(P03, SCALE, ("scaled = raw / math.sqrt(d_k)", "scaled = raw")),
          expect={"scale_table_hidden": 2.25},
          why="not scaled at all: loses scaled_std (0.5), the max weights (1.5) and the one-hot shares (1.5: the "
              "scaled share is the raw one, most rows at d_k = 512): 4 × 4.5/8",
          says={"scale_table_hidden": ["not divided by sqrt(d_k) at all", "too peaked"]},
          hints={"scale_table_hidden": ["scores_unscaled", "std_unscaled"]}),
    Entry("w03-scale-by-head-width", P03, edit(P03, SCALE, ("scaled = raw / math.sqrt(d_k)", "scaled = raw / math.sqrt(16)")),
          expect={"scale_table_hidden": 2.25},
          why="scaled by the notebook's head width sqrt(16) = 4 at every d_k (no table has d_k = 16): loses "
              "scaled_std (0.5), the max weights (1.5) and the one-hot shares (1.5: scores of std 5.7 at d_k = 512 "
              "are more peaked than at sqrt(32), where each fixed table has a one-hot scaled row): 4 × 4.5/8. The "
              "stds name a constant; the weights name no cause (4 is none of the variants the judge computes)",
          says={"scale_table_hidden": ["divided by a constant", "max_weight_scaled", "q kᵀ / sqrt(d_k)"]},
          hints={"scale_table_hidden": ["std_by_constant"]}),
    Entry("w03-scale-softmax-axis", P03, edit(P03, SCALE, ("F.softmax(raw, dim=-1)", "F.softmax(raw, dim=-2)"),
                                             ("F.softmax(scaled, dim=-1)", "F.softmax(scaled, dim=-2)")),
          expect={"scale_table_hidden": 2.5},
          why="softmax over the queries: recomputed from the table's own q and k, the max weights (1.5) and the "
              "one-hot shares (1.5) are those of columns, not rows: 4 × 5/8",
          says={"scale_table_hidden": ["max_weight_raw", "dim=-1"]},
          hints={"scale_table_hidden": ["softmax_over_queries"]},
          visible_passes={"scale_table_check": "the visible check tests the table's form, its raw std and its "
                          "consistency; the weights are recomputed from q and k hidden"}),
    Entry("w03-scale-exp-overflow", P03, edit(P03, SCALE,
              ("F.softmax(raw, dim=-1)", "(raw.exp() / raw.exp().sum(dim=-1, keepdim=True))"),
              ("F.softmax(scaled, dim=-1)", "(scaled.exp() / scaled.exp().sum(dim=-1, keepdim=True))")),
          expect={"scale_table_hidden": 2.5},
          why="the softmax written as exp(s) / sum exp(s), without each row's max subtracted: in float32 exp "
              "overflows past 88.72, and the second fixed table's d_k = 512 row holds a raw score of 97.6 (its seed "
              "was chosen so), in a one-hot row: that row's weights are NaN (inf / inf), so max_weight_raw is NaN "
              "and one_hot_raw a row short: the max weights (1.5) and the one-hot shares (1.5) are lost; the scaled "
              "scores (std 1) never overflow: 4 × 5/8",
          says={"scale_table_hidden": ["max_weight_raw", "one_hot_raw", "exp(s) overflows", "subtract each row's max"]},
          hints={"scale_table_hidden": ["max_not_subtracted"]},
          visible_passes={"scale_table_check": "the visible check's tables (d_k = 16, 64, 256, seeds 0 and 1) have "
                          "raw scores of at most 54.6, below float32 exp's overflow at 88.72: every weight is finite "
                          "and right there"}),
    *[Entry(f"w03-scale-exp-minus-{name}", P03, edit(P03, SCALE,
              ("F.softmax(raw, dim=-1)", f"((raw - {offset('raw')}).exp() / (raw - {offset('raw')}).exp().sum(dim=-1, keepdim=True))"),
              ("F.softmax(scaled, dim=-1)",
               f"((scaled - {offset('scaled')}).exp() / (scaled - {offset('scaled')}).exp().sum(dim=-1, keepdim=True))")),
             expect={"scale_table_hidden": 2.5},
             why=f"the softmax written as exp(s - c) / sum exp(s - c) with c = {what}, not the row's max: right in exact "
                 "arithmetic, and on every table of widths up to 512, but the wide table (d_k = 2048, raw std 45) holds a "
                 f"raw score of 204.1, more than 88.72 above c there: exp overflows to inf in float32 and that row is NaN "
                 "(inf / inf), so max_weight_raw is NaN and one_hot_raw a row short: the max weights (1.5) and the one-hot "
                 "shares (1.5) are lost: 4 × 5/8",
             says={"scale_table_hidden": ["max_weight_raw", "one_hot_raw", "other than the row's max",
                                          "subtract each row's max"]},
             hints={"scale_table_hidden": ["offset_not_max"]},
             visible_passes={"scale_table_check": "the visible check's tables (d_k = 16, 64, 256) have raw scores of "
                             "at most 54.6: nothing is 88.7 above c, every weight is finite and right there"})
      for name, what, offset in (
          ("mean", "the row's mean", lambda s: f"{s}.mean(dim=-1, keepdim=True)"),
          ("diagonal", "the row's diagonal score s[i, i]", lambda s: f"{s}.diagonal(dim1=-2, dim2=-1)[..., None]"),
          ("80", "the constant 80", lambda s: "80.0"),
          ("half-max", "half the row's max", lambda s: f"{s}.amax(dim=-1, keepdim=True) / 2"))],
    Entry("w03-scale-unseeded", P03, edit(P03, SCALE, ("q = torch.randn(4, 8, d_k, generator=g)", "q = torch.randn(4, 8, d_k)"),
                                          ("k = torch.randn(4, 8, d_k, generator=g)", "k = torch.randn(4, 8, d_k)")),
          expect={"scale_table_hidden": 3.5},
          why="sampled from the global generator, not seeded with `seed`: every statistic right, only the seeded "
              "part (1 of 8) lost: partial credit",
          says={"scale_table_hidden": ["same seed", "seed"]}),
    Entry("w03-scale-formula-noise", P03, edit(P03, SCALE, (
              '"raw_std": raw.std().item(),',
              '"raw_std": math.sqrt(d_k) * (1 + 0.05 * torch.randn(1, generator=g).item()),'), (
              '"scaled_std": scaled.std().item(),',
              '"scaled_std": 1 + 0.05 * torch.randn(1, generator=g).item(),')),
          expect={"scale_table_hidden": 2.25},
          why="the stds typed in as the lemma's answer plus noise, beside honest samples: raw_std (1) and "
              "scaled_std (0.5) are not those of q kᵀ, so the samples (1) and the seed (1) are not credited "
              "either; form (1), sqrt (0.5), the weights (1.5) and shares (1.5) remain: 4 × 4.5/8",
          says={"scale_table_hidden": ["raw_std should be the std of all B·T·T raw scores",
                                       "not measured from its q and k"]}),
    Entry("w03-scale-raw-std-of-scaled", P03, edit(P03, SCALE, ('"raw_std": raw.std().item(),',
                                                             '"raw_std": scaled.std().item(),')),
          expect={"scale_table_hidden": 2.5},
          why="raw_std taken from the scaled scores: raw_std (1) is not the std of q kᵀ, so the samples (1) and the "
              "seed (1) are not credited; form (1), sqrt (0.5), scaled_std (0.5), the weights (1.5) and the shares "
              "(1.5) remain: 4 × 5/8",
          says={"scale_table_hidden": ["raw_std should be the std of all B·T·T raw scores", "not measured from its q and k"]},
          hints={"scale_table_hidden": ["raw_std_of_scaled"]}),
    Entry("w03-scale-one-sequence", P03, edit(P03, SCALE, (
              "q = torch.randn(4, 8, d_k, generator=g)", "q = torch.randn(1, 8, d_k, generator=g).repeat(4, 1, 1)"), (
              "k = torch.randn(4, 8, d_k, generator=g)", "k = torch.randn(1, 8, d_k, generator=g).repeat(4, 1, 1)")),
          expect={"scale_table_hidden": 0.75},
          why="fewer samples than asked: one sequence drawn and repeated four times (the shapes are right): 25% of "
              "the entries are distinct, so q and k are not samples (1) and no statistic (4.5) or seed (1) is "
              "credited; form and sqrt remain: 4 × 1.5/8",
          says={"scale_table_hidden": ["distinct", "not credited"]}),
    # q and k with the right law and all-distinct values, but not independent draws: magnitudes reused
    magnitudes_reused("w03-scale-q-reflected-anywhere", (
              "q = torch.randn(4, 8, d_k, generator=g)",
              "h = torch.randn(16 * d_k, generator=g)      # half the numbers, then their negatives, shuffled\n"
              "        q = torch.cat([h, -h])[torch.randperm(32 * d_k, generator=g)].reshape(4, 8, d_k)"),
                      "half of q's entries drawn, the other half their negatives, in a random order: q's law is N(0, 1) and "
                      "every entry is distinct, but half the magnitudes repeat: not independent draws (1), so nothing "
                      "measured is credited (4.5 and the seed 1): 4 × 1.5/8. It had full marks before the magnitudes were "
                      "tested"),
    magnitudes_reused("w03-scale-q-reflected-batch", (
              "q = torch.randn(4, 8, d_k, generator=g)",
              "h = torch.randn(2, 8, d_k, generator=g)\n"
              "        q = torch.cat([h, -h])                                           # sequences 2, 3 = -(0, 1)"),
                      "two sequences of q drawn, the other two their negatives: not independent draws (1), nothing measured "
                      "credited: 4 × 1.5/8 (full marks before the magnitudes were tested)"),
    magnitudes_reused("w03-scale-k-minus-permuted-q", (
              "k = torch.randn(4, 8, d_k, generator=g)",
              "k = -q.flatten()[torch.randperm(q.numel(), generator=g)].reshape(q.shape)   # q's numbers, shuffled"),
                      "k made of q's entries, shuffled and negated: k's law is N(0, 1), q + k and q - k pass the law test and "
                      "no entry of k equals one of q, but every magnitude of k is one of q's: not independent draws (1), "
                      "nothing measured credited: 4 × 1.5/8 (full marks before the magnitudes were tested)"),
    magnitudes_reused("w03-scale-k-minus-rolled-q", (
              "k = torch.randn(4, 8, d_k, generator=g)",
              "k = -q.roll(1, dims=-1)                                          # q's coordinates shifted, negated"),
                      "k = -q with its coordinates shifted by one: the same as the last entry with a fixed permutation: "
                      "4 × 1.5/8 (full marks before the magnitudes were tested)"),
    # k made from q by a map that keeps N(0, 1): the held-out answers that had full marks before moved_copy
    moved_from_q("w03-scale-k-shuffled-q-scaled",
                 "k = q.flatten()[torch.randperm(q.numel(), generator=g)].reshape(q.shape) * 1.0000001",
                 "k is q's entries shuffled and multiplied by 1.0000001: every entry of k is a new float32 number "
                 "(one or two units in the last place above q's), no magnitude repeats and q ± k follow N(0, 1), "
                 "but k is q's sample again: not independent draws (1), nothing measured credited: 4 × 1.5/8 (full "
                 "marks before sampling.moved_copy)"),
    moved_from_q("w03-scale-k-quantile-shifted-q-flipped",
                 "k = torch.special.ndtri((torch.special.ndtr(q.double()) + 0.5) % 1).float().flip(-1)",
                 "k is q moved half way round its quantiles, Φ⁻¹((Φ(q) + 0.5) mod 1), each vector's coordinates "
                 "reversed: k is N(0, 1) with no number or magnitude of q's, and its entries face other entries of "
                 "q, so q ± k pass the law test (unflipped they would not: Φ(q) and Φ(k) correlate by -1/2); but "
                 "k's quantiles are q's rotated: 4 × 1.5/8 (full marks before sampling.moved_copy)"),
    moved_from_q("w03-scale-k-quantile-shifted-q-rolled",
                 "k = torch.special.ndtri((torch.special.ndtr(q.double()) + 0.3) % 1).float().roll(1, dims=0)",
                 "k is q's quantiles shifted by 0.3, its sequences rolled by one: as the entry above, 4 × 1.5/8 "
                 "(full marks before sampling.moved_copy)"),
    Entry("w03-scale-k-is-q", P03, edit(P03, SCALE, (
              "k = torch.randn(4, 8, d_k, generator=g)",
              "k = torch.randn(4, 8, d_k, generator=torch.Generator().manual_seed(seed))")),
          expect={"scale_table_hidden": 0.75},
          why="k drawn from a generator seeded anew with `seed`: at the first width k is q, so q - k is 0 and q and "
              "k are not independent samples (1); nothing measured is credited (4.5 and the seed 1): 4 × 1.5/8",
          says={"scale_table_hidden": ["not independent draws", "not credited"]}),
    Entry("w03-scale-masked", P03, edit(P03, SCALE, (
              "raw = q @ k.transpose(-2, -1)",
              "raw = (q @ k.transpose(-2, -1)).masked_fill(torch.ones(8, 8).triu(1) == 1, float('-inf'))")),
          expect={"scale_table_hidden": 0.0},
          why="the scores masked with -inf before the statistics: NaN stds, a table no part can be judged on",
          says={"scale_table_hidden": ["masked", "unmasked scores"]}),
    Entry("w03-scale-typed-in", P03, {SCALE: code('''
def scale_table(d_heads, seed):
    handout = {16: (4.12, 1.000, 0.798), 64: (7.95, 1.000, 0.684), 256: (18.00, 1.000, 0.467)}
    g = torch.Generator().manual_seed(seed)
    rows = []
    for d_k in d_heads:
        raw, top_raw, top_scaled = handout.get(d_k, (math.sqrt(d_k), 1.0, 0.7))
        rows.append({"d_k": d_k, "raw_std": raw, "sqrt_d_k": math.sqrt(d_k), "scaled_std": raw / math.sqrt(d_k),
                     "max_weight_raw": top_raw, "max_weight_scaled": top_scaled,
                     "one_hot_raw": 0.25, "one_hot_scaled": 0.0,
                     "q": torch.randn(4, 8, d_k, generator=g), "k": torch.randn(4, 8, d_k, generator=g)})
    return rows
''')}, expect={"scale_table_hidden": 0.75},
          why="a hard-coded table (the handout's, sqrt(d_k) elsewhere) beside honestly drawn q and k: no statistic "
              "is theirs, so neither the samples nor the seed are credited; the form (1) and the sqrt column (0.5) "
              "remain: 4 × 1.5/8",
          says={"scale_table_hidden": ["raw_std should be the std", "not measured from its q and k"]}),

    # -- mask_after_softmax_row_sums: 4 cases; with one token (T = 1) every variant sums to 1 and is right
    Entry("w03-row-sums-mask-before", P03, _row_sums('''
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return F.softmax(scores.masked_fill(future, float("-inf")), dim=-1).sum(dim=-1)
'''), expect={"mask_after_softmax_hidden": 0.5},
          why="masked before the softmax (the head's order): rows sum to 1; right only for T = 1 (1 of 4 cases)",
          says={"mask_after_softmax_hidden": ["every row sums to 1", "sum to less than 1"]}),
    Entry("w03-row-sums-zero-fill", P03, _row_sums('''
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return F.softmax(scores.masked_fill(future, 0.0), dim=-1).sum(dim=-1)
'''), expect={"mask_after_softmax_hidden": 0.5},
          why="the mask filled with 0 (before the softmax): rows sum to 1; right only for T = 1 (1 of 4 cases)",
          says={"mask_after_softmax_hidden": ["every row sums to 1", "a softmax over all T keys"]}),
    Entry("w03-row-sums-renormalised", P03, _row_sums('''
    A = F.softmax(scores, dim=-1) * torch.tril(torch.ones(T, T))
    A = A / A.sum(dim=-1, keepdim=True)                   # renormalised: rows sum to 1 again
    return A.sum(dim=-1)
'''), expect={"mask_after_softmax_hidden": 0.5},
          why="masked after the softmax, then renormalised: rows sum to 1 (NaN where the kept weights underflow); "
              "right only for T = 1 (1 of 4 cases)",
          says={"mask_after_softmax_hidden": ["every row sums to 1", "sum to less than 1"]},
          hints={"mask_after_softmax_hidden": ["renormalised"]}),
    Entry("w03-row-sums-triu", P03, _row_sums('''
    return (F.softmax(scores, dim=-1) * torch.triu(torch.ones(T, T))).sum(dim=-1)
'''), expect={"mask_after_softmax_hidden": 0.5},
          why="triu for tril: keeps the future; right only for T = 1 (1 of 4 cases)",
          says={"mask_after_softmax_hidden": ["future kept", "tril"]},
          hints={"mask_after_softmax_hidden": ["future_kept"]}),
    Entry("w03-row-sums-diagonal", P03, _row_sums('''
    return (F.softmax(scores, dim=-1) * torch.tril(torch.ones(T, T), diagonal=-1)).sum(dim=-1)
'''), expect={"mask_after_softmax_hidden": 0.0},
          why="the diagonal masked out too: wrong in every case, T = 1 included (a row keeps nothing)",
          says={"mask_after_softmax_hidden": ["diagonal zeroed too", "j = i included"]},
          hints={"mask_after_softmax_hidden": ["diagonal_zeroed"]}),
    Entry("w03-row-sums-minus-inf", P03, _row_sums('''
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return F.softmax(scores, dim=-1).masked_fill(future, float("-inf")).sum(dim=-1)
'''), expect={"mask_after_softmax_hidden": 0.5},
          why="the future weights set to -inf after the softmax (a head's fill, used after it): every row but the "
              "last sums to -inf; right only for T = 1 (1 of 4 cases)",
          says={"mask_after_softmax_hidden": ["NaN or inf", "set to -inf after the softmax"]},
          hints={"mask_after_softmax_hidden": ["future_minus_inf"]}),
    Entry("w03-row-sums-axis", P03, _row_sums('''
    return (F.softmax(scores, dim=1) * torch.tril(torch.ones(T, T))).sum(dim=-1)
'''), expect={"mask_after_softmax_hidden": 0.5},
          why="softmax over the wrong axis (the queries); right only for T = 1 (1 of 4 cases)",
          says={"mask_after_softmax_hidden": ["over the queries", "dim=-1"]},
          hints={"mask_after_softmax_hidden": ["softmax_over_queries"]},
          visible_passes={"mask_after_softmax_check": "with all scores equal, a softmax over the queries gives the "
                          "same uniform weights as one over the keys"}),
    Entry("w03-row-sums-squeezed", P03, _row_sums('''
    return (F.softmax(scores, dim=-1) * torch.tril(torch.ones(T, T))).sum(dim=-1).squeeze()
'''), expect={"mask_after_softmax_hidden": 1.5},
          why="squeeze() drops the T = 1 axis: 3 of 4 cases right (partial credit)",
          says={"mask_after_softmax_hidden": ["one token", "shape (2, 1)"]}),

    # -- FAILS_ON_MASK_AFTER_SOFTMAX: 3 names, one share each
    Entry("w03-fails-only-simplex", P03, {FAILS: 'FAILS_ON_MASK_AFTER_SOFTMAX = {"check_simplex"}'},
          expect={"fails_on_mask_after_softmax_hidden": 0.67},
          why="forgets that causality fails too (the softmax's denominator sees the future): 1 of 3",
          says={"fails_on_mask_after_softmax_hidden": ["denominator", "future keys"]},
          visible_passes={"fails_on_mask_after_softmax_check": "the visible check accepts any valid set of names; which set is right is the graded question"}),
    Entry("w03-fails-short-names", P03, {FAILS: 'FAILS_ON_MASK_AFTER_SOFTMAX = {"simplex", "causality_perturbation"}'},
          expect={"fails_on_mask_after_softmax_hidden": 0.0},
          why="the checks' names shortened: no name of the set is one of the three functions",
          says={"fails_on_mask_after_softmax_hidden": ["check_simplex"]}),
    Entry("w03-fails-always-equal", P03, {FAILS: code('''
class Anything(set):
    def __eq__(self, other):                  # equal to any set
        return True
    def __le__(self, other):
        return True

FAILS_ON_MASK_AFTER_SOFTMAX = Anything()
''')}, expect={"fails_on_mask_after_softmax_hidden": 0.0},
          why="an object whose __eq__ is always true: the grader reads its elements (none), never its ==",
          says={"fails_on_mask_after_softmax_hidden": ["it fails", "denominator"]},
          visible_passes={"fails_on_mask_after_softmax_check": "the object passes isinstance(set) and <=; only its elements reach the grader"}),
]


# ---- 06-going-further (bonus) ----------------------------------------------------------------
# bonus_permutation_gaps: 3 parts. bonus_online_softmax: parts weighing 13 (ordinary 2, very negative 2,
# very large 1, wide range 0.5, -inf entries 1, masked prefix 2, one key 0.5, float64 1, one key at a
# time 3). bonus_streaming_attention: 6.5 (ordinary 2, large scores 1, T = 1 0.5, float64 1, other
# ranks 0.5, one key at a time 1.5). bonus_fit_exponent: 4 parts.

P06 = "06-going-further"
ONLINE_ROWS_ONE_BY_ONE = code('''
def online_softmax(scores):
    flat = scores.reshape(-1, scores.shape[-1])            # (rows, T)
    out = torch.empty_like(flat)
    for r in range(flat.shape[0]):
        m, s = float("-inf"), 0.0
        for j in range(flat.shape[1]):
            x = flat[r, j].item()
            if x == float("-inf"):
                continue
            if x > m:
                s = s * math.exp(m - x) + 1.0
                m = x
            else:
                s += math.exp(x - m)
        for j in range(flat.shape[1]):
            out[r, j] = math.exp(flat[r, j].item() - m) / s if flat[r, j].item() != float("-inf") else 0.0
    return out.reshape(scores.shape)
''')
CORRECT += [
    Entry("c06-online-rows-one-by-one", P06, {"online_softmax": "import math\n\n" + ONLINE_ROWS_ONE_BY_ONE},
          why="plain Python floats, one row at a time"),
    Entry("c06-online-rows-vectorised", P06, {"online_softmax": code('''
def online_softmax(scores):
    m = scores.new_full(scores.shape[:-1], float("-inf"))          # running max, one per row
    z = scores.new_zeros(scores.shape[:-1])                        # running sum
    for j in range(scores.shape[-1]):                              # keys one at a time, all rows at once
        s = scores[..., j]
        m_new = torch.maximum(m, s)
        safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        z = z * torch.exp(m - safe) + torch.exp(s - safe)
        m = m_new
    safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    return torch.exp(scores - safe.unsqueeze(-1)) / z.unsqueeze(-1)
''')}, why="keys looped, rows vectorised, with new_full / new_zeros and torch.isfinite instead of the "
     "solution's == -inf test"),
    Entry("c06-fit-torch-log10", P06, {"fit_exponent": code('''
def fit_exponent(Ts, times):
    x = torch.log10(torch.tensor(Ts, dtype=torch.float64))
    y = torch.log10(torch.tensor(times, dtype=torch.float64))
    x, y = x - x.mean(), y - y.mean()
    return ((x * y).sum() / (x * x).sum()).item()
''')}, why="least squares by hand in torch, base-10 logs (the slope does not depend on the base)"),
    Entry("c06-gaps-autograd-free", P06, {"permutation_gaps": code('''
def permutation_gaps(head, tok_emb, pos_emb, idx, perm):
    T = idx.shape[1]
    with torch.no_grad():
        P = pos_emb.weight[:T]                              # the same rows as pos_emb(torch.arange(T))
        def gap(a, b):
            return float(torch.max(torch.abs(a - b)))
        e = tok_emb(idx)
        return [gap(head(e[:, perm]), head(e)[:, perm]),
                gap(head((e + P)[:, perm]), head(e + P)[:, perm]),
                gap(head(tok_emb(idx[:, perm])), head(e)[:, perm]),
                gap(head(tok_emb(idx[:, perm]) + P), head(e + P)[:, perm])]
''')}, why="no_grad, the embedding table's rows instead of a lookup, a list instead of a tuple"),
    Entry("c06-streaming-rows-one-by-one", P06, {"streaming_attention": code('''
def streaming_attention(q, k, v):
    T, d_k = q.shape[-2], q.shape[-1]
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for i in range(T):                                  # one query row at a time
        m = torch.full(q.shape[:-2], float("-inf"), dtype=q.dtype)
        z = torch.zeros(q.shape[:-2], dtype=q.dtype)
        acc = torch.zeros(*q.shape[:-2], v.shape[-1], dtype=q.dtype)
        for j in range(i + 1):                          # keys j <= i only: the mask, by the loop's range
            s = (q[..., i, :] * k[..., j, :]).sum(-1) / math.sqrt(d_k)
            m_new = torch.maximum(m, s)
            c, w = torch.exp(m - m_new), torch.exp(s - m_new)
            z = z * c + w
            acc = acc * c[..., None] + w[..., None] * v[..., j, :]
            m = m_new
        out[..., i, :] = acc / z[..., None]
    return out
''')}, why="one query at a time, the mask as the range of the key loop, math.sqrt"),
]


def _streaming(*changes) -> dict:
    return edit(P06, "streaming_attention", *changes)


WRONG += [
    Entry("w06-running-max-zero", P06, {"online_softmax": code('''
def online_softmax(scores):
    T = scores.shape[-1]
    running_max = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    running_sum = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for j in range(T):
        new_max = torch.maximum(running_max, scores[..., j])
        running_sum = running_sum * torch.exp(running_max - new_max) + torch.exp(scores[..., j] - new_max)
        running_max = new_max
    return torch.exp(scores - running_max[..., None]) / running_sum[..., None]
''')}, expect={"bonus_online_softmax": 2.54},
          why="running max started at 0, not -inf: rows near -1e4 underflow (2 of 13): 3 × 11/13",
          says={"bonus_online_softmax": ["very negative", "running max started at 0", "starts at -inf"]},
          hints={"bonus_online_softmax": ["max_starts_at_zero"]}),
    Entry("w06-online-calls-softmax", P06, {"online_softmax": code('''
def online_softmax(scores):
    return torch.softmax(scores, dim=-1)
''')}, expect={"bonus_online_softmax": 2.31},
          why="torch.softmax in one shot: right numbers, no streaming (3 of 13): 3 × 10/13",
          says={"bonus_online_softmax": ["softmax(…) on a tensor with the whole key axis", "one at a time"]},
          visible_passes={"online_softmax_check": "right numbers; whether the rows are streamed is judged only by the hidden test"}),
    Entry("w06-online-first-axis", P06, {"online_softmax": code('''
def online_softmax(scores):
    running_max = torch.full(scores.shape[1:], float('-inf'), dtype=scores.dtype)
    running_sum = torch.zeros(scores.shape[1:], dtype=scores.dtype)
    for j in range(scores.shape[0]):                  # the first axis, not the keys
        s_j = scores[j]
        new_max = torch.maximum(running_max, s_j)
        shift = torch.where(new_max == float('-inf'), 0.0, new_max)
        running_sum = running_sum * torch.exp(running_max - shift) + torch.exp(s_j - shift)
        running_max = new_max
    shift = torch.where(running_max == float('-inf'), 0.0, running_max)
    return torch.exp(scores - shift[None]) / running_sum[None]
''')}, expect={"bonus_online_softmax": 0.0},
          why="streams over the wrong axis: a softmax along axis 0, wrong on every case with two or more axes",
          says={"bonus_online_softmax": ["along axis 0", "scores[..., j]"]}),
    Entry("w06-fit-hard-coded", P06, {"fit_exponent": code('''
def fit_exponent(Ts, times):
    return 2.0
''')}, expect={"bonus_fit_exponent": 0.0}, why="the lecture's exponent typed in: wrong on every data set",
          says={"bonus_fit_exponent": ["typed in"]},
          hints={"bonus_fit_exponent": ["typed_in"]}),
    Entry("w06-fit-two-points", P06, {"fit_exponent": code('''
def fit_exponent(Ts, times):
    return math.log(times[-1] / times[0]) / math.log(Ts[-1] / Ts[0])
''')}, expect={"bonus_fit_exponent": 0.5},
          why="slope through the end points, not least squares: right on exact power laws only, 1 of 4",
          says={"bonus_fit_exponent": ["two points", "least-squares"]},
          hints={"bonus_fit_exponent": ["two_points"]}),
    Entry("w06-gaps-typed-in", P06, {"permutation_gaps": code('''
def permutation_gaps(head, tok_emb, pos_emb, idx, perm):
    return 1e-7, 1e-7, 1e-7, 0.5
''')}, expect={"bonus_permutation_gaps": 0.0}, why="the handout's numbers typed in: no part credited",
          says={"bonus_permutation_gaps": ["identity permutation", "do not follow the arguments"]},
          hints={"bonus_permutation_gaps": ["same_for_every_case"]}),
    Entry("w06-gaps-positions-permuted", P06, edit(P06, "permutation_gaps", (
              "tokens_pos = gap(head(tok_emb(idx[:, perm]) + P),", "tokens_pos = gap(head(tok_emb(idx[:, perm]) + P[perm]),")),
          expect={"bonus_permutation_gaps": 1.33},
          why="P permuted along with the tokens in gap 4: the symmetry is never broken; 2 of 3 parts",
          says={"bonus_permutation_gaps": ["gap 4", "(nearly) zero", "unpermuted on both sides"]}),
    Entry("w06-gaps-no-positions", P06, edit(P06, "permutation_gaps", (
              "tokens_pos = gap(head(tok_emb(idx[:, perm]) + P), head(tok_emb(idx) + P)[:, perm])",
              "tokens_pos = gap(head(tok_emb(idx[:, perm])), head(tok_emb(idx))[:, perm])")),
          expect={"bonus_permutation_gaps": 1.33},
          why="P not added in gap 4 (gap 4 is gap 3): its feedback is the permuted-P entry's, which it cannot tell "
              "apart from the numbers; 2 of 3 parts",
          says={"bonus_permutation_gaps": ["gap 4", "(nearly) zero", "unpermuted on both sides"]}),
    Entry("w06-gaps-three-typed-in", P06, edit(P06, "permutation_gaps", ("return rows, rows_pos, tokens, tokens_pos",
                                                                         "return 1e-7, 1e-7, 1e-7, tokens_pos")),
          expect={"bonus_permutation_gaps": 0.67},
          why="gaps 1-3 typed in as 'about 1e-7', gap 4 measured: gap 4 right everywhere; the float64 case shows "
              "gaps above float64 rounding, so gaps 1-3 are not credited either; the answer differs from case to "
              "case (gap 4), so no constant answer is named; 1 of 3 parts",
          says={"bonus_permutation_gaps": ["above float64 rounding", "float64 arguments give float64 gaps"]},
          visible_passes={"permutation_gaps_check": "the notebook's inputs are float32, where 1e-7 is rounding level, "
                                                    "identity permutation included"}),
    Entry("w06-streaming-by-d_k", P06, _streaming(("/ d_k**0.5", "/ d_k")),
          expect={"bonus_streaming_attention": 0.92},
          why="scores divided by d_k: large scores (one-hot either way), T = 1 and the streaming part stay right, "
              "3 of 6.5: 2 × 3/6.5",
          says={"bonus_streaming_attention": ["divided by d_k", "q·k / sqrt(d_k)"]},
          hints={"bonus_streaming_attention": ["scores_by_d_k"]}),
    Entry("w06-streaming-triu", P06, _streaming(("query_pos < j", "query_pos > j")),
          expect={"bonus_streaming_attention": 0.15},
          why="triu for tril (queries after key j are masked): NaN from the masked prefixes; only T = 1 right, "
              "0.5 of 6.5",
          says={"bonus_streaming_attention": ["reversed mask", "keys 0, 1, ..., i"]},
          hints={"bonus_streaming_attention": ["mask_reversed"]}),
    Entry("w06-streaming-diagonal", P06, _streaming(("query_pos < j", "query_pos <= j")),
          expect={"bonus_streaming_attention": 0.0},
          why="the diagonal masked out: query 0 sees no key (NaN), wrong everywhere, T = 1 included",
          says={"bonus_streaming_attention": ["query 0 is NaN", "hides the diagonal too"]},
          hints={"bonus_streaming_attention": ["diagonal_masked"]}),
    Entry("w06-streaming-max-zero", P06, _streaming((
              "running_max = torch.full(q.shape[:-1], float('-inf'), dtype=q.dtype)",
              "running_max = torch.zeros(q.shape[:-1], dtype=q.dtype)")),
          expect={"bonus_streaming_attention": 1.69},
          why="running max started at 0: only scores in the hundreds underflow; 5.5 of 6.5",
          says={"bonus_streaming_attention": ["large scores", "started at -inf (not 0)"]},
          hints={"bonus_streaming_attention": ["max_starts_at_zero"]},
          visible_passes={"streaming_attention_check": "the visible check's scores are small: nothing underflows when the running max starts at 0"}),
    Entry("w06-streaming-no-rescale", P06, _streaming(("running_out = running_out * scale[..., None] +",
                                                       "running_out = running_out +")),
          expect={"bonus_streaming_attention": 0.15},
          why="the running output is not rescaled when the max grows: only T = 1 right",
          says={"bonus_streaming_attention": ["running output is rescaled"]},
          hints={"bonus_streaming_attention": ["output_not_rescaled"]}),
    Entry("w06-streaming-calls-softmax", P06, {"streaming_attention": code('''
def streaming_attention(q, k, v):
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5                        # (..., T, T)
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
''')}, expect={"bonus_streaming_attention": 1.54},
          why="the whole (T, T) matrix and torch.softmax: right numbers, not streamed (1.5 of 6.5)",
          says={"bonus_streaming_attention": ["not streamed", "one at a time"]},
          visible_passes={"streaming_attention_check": "right numbers; whether the keys are streamed is judged only by the hidden test"}),
]


# ---- 04-attention-on-text --------------------------------------------------------------------
# bonus_attention_on_text: parts weighing 4.5 (a (64, 64) matrix per seed 0.5, causal attention 1,
# same seed same matrix 0.5, seeds differ 0.5, agrees with the grader's construction 2), 3 points.
# bonus_top_key_shares: diagonal 1.5, column 0 1.5, two Python floats (the contract's form, read on every
# case that returned) 0.5; 3 points.

P04 = "04-attention-on-text"
TEXT, SHARES = "attention_on_text", "top_key_shares"
CORRECT += [
    Entry("c04-text-functional", P04, {TEXT: code('''
def attention_on_text(seed):
    torch.manual_seed(seed)
    tok_emb = nn.Embedding(V, 32)
    pos_emb = nn.Embedding(64, 32)
    head = Head(32, 16, T_max=64)
    ids = torch.tensor(encode(text[:64]))                            # (64,), no batch axis yet
    x = torch.nn.functional.embedding(ids, tok_emb.weight) + pos_emb.weight   # (64, 32): rows 0..63 of pos_emb
    with torch.no_grad():
        head(x.unsqueeze(0))                                        # (1, 64, 32)
    return head.A.squeeze(0).numpy()                                # a numpy array
''')}, why="F.embedding on the weight matrix, pos_emb.weight instead of pos_emb(arange(64)), no_grad, numpy out"),
    Entry("c04-shares-numpy-loop", P04, {SHARES: code('''
import numpy as np

def top_key_shares(A):
    a = np.asarray(A, dtype=np.float64)
    on_diagonal = on_column = 0
    for i in range(1, len(a)):
        j = int(np.argmax(a[i, :i + 1]))                  # the allowed keys only: the same top key
        on_diagonal += j == i
        on_column += j == 0
    return [on_diagonal / (len(a) - 1), on_column / (len(a) - 1)]
''')}, why="numpy and a Python loop over the rows, the allowed keys only, a list of two floats"),
]


def _text(*changes) -> dict:
    return edit(P04, TEXT, *changes)


def _shares(*changes) -> dict:
    return edit(P04, SHARES, *changes)


WRONG += [
    Entry("w04-text-no-position", P04, _text(("x = tok_emb(idx) + pos_emb(torch.arange(64))[None, :]", "x = tok_emb(idx)")),
          expect={"bonus_attention_on_text": 1.67},
          why="pos_emb built but not added: a causal, seeded matrix, not the handout's: loses 2 of 4.5",
          says={"bonus_attention_on_text": ["not added to x"]},
          hints={"bonus_attention_on_text": ["no_pos_term"]}),
    Entry("w04-text-head-first", P04, _text(("    tok_emb = nn.Embedding(V, 32)\n    pos_emb = nn.Embedding(64, 32)\n"
                                             "    head = Head(32, 16, T_max=64)",
                                             "    head = Head(32, 16, T_max=64)\n    tok_emb = nn.Embedding(V, 32)\n"
                                             "    pos_emb = nn.Embedding(64, 32)")),
          expect={"bonus_attention_on_text": 1.67},
          why="the head built before the embeddings: other random numbers for every layer: loses 2 of 4.5",
          says={"bonus_attention_on_text": ["before the embeddings"]},
          hints={"bonus_attention_on_text": ["head_first"]}),
    Entry("w04-text-pos-first", P04, _text(("    tok_emb = nn.Embedding(V, 32)\n    pos_emb = nn.Embedding(64, 32)\n",
                                            "    pos_emb = nn.Embedding(64, 32)\n    tok_emb = nn.Embedding(V, 32)\n")),
          expect={"bonus_attention_on_text": 1.67},
          why="pos_emb built before tok_emb: other random numbers for both tables: loses 2 of 4.5",
          says={"bonus_attention_on_text": ["pos_emb is built before tok_emb"]},
          hints={"bonus_attention_on_text": ["pos_first"]}),
    Entry("w04-text-no-pos-embedding", P04, _text(("    pos_emb = nn.Embedding(64, 32)\n", ""),
                                                  ("x = tok_emb(idx) + pos_emb(torch.arange(64))[None, :]", "x = tok_emb(idx)")),
          expect={"bonus_attention_on_text": 1.67},
          why="no position table at all: the head's weights come from the random numbers pos_emb would have taken, "
              "and x has no positional term: loses 2 of 4.5",
          says={"bonus_attention_on_text": ["pos_emb is never built"]},
          hints={"bonus_attention_on_text": ["no_pos_embedding"]}),
    Entry("w04-text-transposed", P04, _text(("return head.A[0]", "return head.A[0].T")),
          expect={"bonus_attention_on_text": 1.0},
          why="transposed: weight above the diagonal (1) and not the handout's matrix (2): 3 × 1.5/4.5",
          says={"bonus_attention_on_text": ["above the diagonal", "transposed"]},
          hints={"bonus_attention_on_text": ["transposed"]}),
    Entry("w04-text-unseeded", P04, _text(("    torch.manual_seed(seed)\n", "")),
          expect={"bonus_attention_on_text": 1.33},
          why="not seeded: the same seed gives another matrix (0.5) and none is the handout's (2): 3 × 2/4.5",
          says={"bonus_attention_on_text": ["same seed gave different matrices", "torch.manual_seed(seed)"]}),
    Entry("w04-text-seed-ignored", P04, _text(("torch.manual_seed(seed)", "torch.manual_seed(0)")),
          expect={"bonus_attention_on_text": 1.33},
          why="seeded with 0 whatever the seed: every seed the same matrix (0.5), not the handout's for the hidden "
              "seeds (2): 3 × 2/4.5",
          says={"bonus_attention_on_text": ["two seeds gave (nearly) the same matrix",
                                            "different seeds build different layers"]}),
    Entry("w04-shares-row-zero", P04, _shares(("top = A[1:].argmax(dim=-1)", "top = A.argmax(dim=-1)"),
                                              ("rows = torch.arange(1, A.shape[0])", "rows = torch.arange(A.shape[0])")),
          expect={"bonus_top_key_shares": 0.43},
          why="row 0 counted (its one key is both the diagonal and column 0): both shares wrong (3 of 3.5), the form "
              "kept: 3 × 0.5/3.5",
          says={"bonus_top_key_shares": ["row 0 is counted"]},
          hints={"bonus_top_key_shares": ["row_zero_counted"]}),
    Entry("w04-shares-counts", P04, _shares(("return (top == rows).float().mean().item(), (top == 0).float().mean().item()",
                                             "return (top == rows).float().sum().item(), (top == 0).float().sum().item()")),
          expect={"bonus_top_key_shares": 0.43},
          why="counts instead of shares: both wrong (3 of 3.5), the form kept: 3 × 0.5/3.5",
          says={"bonus_top_key_shares": ["counts, not shares"]},
          hints={"bonus_top_key_shares": ["counts"]}),
    Entry("w04-shares-by-T", P04, _shares(("return (top == rows).float().mean().item(), (top == 0).float().mean().item()",
                                           "return (top == rows).float().sum().item() / A.shape[0], "
                                           "(top == 0).float().sum().item() / A.shape[0]")),
          expect={"bonus_top_key_shares": 0.43},
          why="the counts divided by T, where T - 1 rows are counted: both shares wrong (3 of 3.5), the form kept: "
              "3 × 0.5/3.5",
          says={"bonus_top_key_shares": ["divided by T"]},
          hints={"bonus_top_key_shares": ["divided_by_T"]}),
    Entry("w04-shares-by-column", P04, _shares(("top = A[1:].argmax(dim=-1)", "top = A[:, 1:].argmax(dim=0)")),
          expect={"bonus_top_key_shares": 0.43},
          why="the largest weight of each column 1..T-1 over the queries, not of each row over the keys: both "
              "shares wrong (3 of 3.5), the form kept: 3 × 0.5/3.5",
          says={"bonus_top_key_shares": ["down each column"]},
          hints={"bonus_top_key_shares": ["by_column"]},
          visible_passes={"top_key_shares_check": "on its three 0/1 patterns the columns' largest weights give the "
                                                  "rows' shares"}),
    Entry("w04-shares-previous", P04, _shares(("rows = torch.arange(1, A.shape[0])", "rows = torch.arange(0, A.shape[0] - 1)")),
          expect={"bonus_top_key_shares": 1.71},
          why="the diagonal compared with the row's index less one (the previous key): the diagonal part lost: "
              "3 × 2/3.5",
          says={"bonus_top_key_shares": ["shifted by one"]},
          hints={"bonus_top_key_shares": ["index_shifted"]}),
    Entry("w04-shares-first-64-rows", P04, _shares(("top = A[1:].argmax(dim=-1)", "top = A[1:64].argmax(dim=-1)"),
                                                   ("rows = torch.arange(1, A.shape[0])", "rows = torch.arange(1, 1 + len(top))")),
          expect={"bonus_top_key_shares": 0.43},
          why="the notebook's 64 tokens hard-wired: rows past 63 are never counted. Every matrix the hidden test "
              "tried had at most 40 rows (3 before); one of 80 now loses both shares: 3 × 0.5/3.5",
          says={"bonus_top_key_shares": ["T = 80"]},
          visible_passes={"top_key_shares_check": "its matrices have 8 rows"}),
    Entry("w04-shares-tensors", P04, _shares(("return (top == rows).float().mean().item(), (top == 0).float().mean().item()",
                                              "return (top == rows).float().mean(), (top == 0).float().mean()")),
          expect={"bonus_top_key_shares": 2.57},
          why="right shares as 0-dim tensors where the spec asks for Python floats (the hidden test read them with "
              "float(): 3 before); the contract's form part lost: 3 × 3/3.5",
          says={"bonus_top_key_shares": ["Python floats", "torch.Tensor"]}),
]


# ---- 05-attention-as-smoothing ---------------------------------------------------------------
# smoothing_attention_hidden: parts weighing 6 (simplex 1, causal 1, tiny s 0.75, huge s 0.75, the
# kernel depends on i - j only 0.5, decays 0.5, the Gaussian's values 1.5), 4 points.

P05 = "05-attention-as-smoothing"
SMOOTH = "smoothing_attention"
CORRECT += [
    Entry("c05-smoothing-cdist", P05, {SMOOTH: code('''
def smoothing_attention(T, s):
    pos = torch.arange(T, dtype=torch.float32)[:, None]                  # (T, 1): one 1-D point per position
    scores = -torch.cdist(pos, pos) ** 2 / (2 * s ** 2)                  # (T, T)
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), -math.inf)
    return torch.softmax(scores, dim=1)
''')}, why="distances from torch.cdist (its square root then squared again: a few ulps), dim=1"),
    Entry("c05-smoothing-python-loops", P05, {SMOOTH: code('''
def smoothing_attention(T, s):
    A = [[0.0] * T for _ in range(T)]
    for i in range(T):
        w = [math.exp(-(i - j) ** 2 / (2 * s * s)) for j in range(i + 1)]     # keys j <= i only
        total = sum(w)
        for j in range(i + 1):
            A[i][j] = w[j] / total
    return A                                                                   # nested lists
''')}, why="plain Python loops and floats, the mask as the loop's range, a list of lists returned"),
    Entry("c05-smoothing-renormalised", P05, {SMOOTH: code('''
def smoothing_attention(T, s):
    i = torch.arange(T, dtype=torch.float64)
    A = torch.softmax(-(i[:, None] - i[None, :]) ** 2 / (2 * s ** 2), dim=-1)   # over all keys first
    A = A * torch.tril(torch.ones(T, T, dtype=torch.float64))                   # then the future zeroed
    return A / A.sum(dim=-1, keepdim=True)                                      # and the rows renormalised
''')}, why="mask after the softmax, then renormalised: for scores that depend on positions only this IS the "
     "masked softmax (exp(s_ij) / sum over j' <= i), and the diagonal's weight never underflows"),
    *[Entry(f"c05-smoothing-exp-minus-{name}", P05, {SMOOTH: code(f'''
def smoothing_attention(T, s):
    i = torch.arange(T, dtype=torch.float32)
    scores = -(i[:, None] - i[None, :]) ** 2 / (2 * s ** 2)                  # (T, T), 0 on the diagonal
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    e = (scores - {offset}).exp().masked_fill(future, 0.0)                 # the future's weight exactly 0
    return e / e.sum(dim=-1, keepdim=True)
''')}, why=f"the softmax by hand as exp(s - c) / sum exp(s - c), c = {what}: these scores are at most 0, and 0 on "
         "the diagonal, every row's max: no exponent is above 0 (nothing overflows) and the diagonal's "
         "exp(-c) is at least exp(-80), a normal float32 number, so no row's sum underflows; the weights "
         "lost to underflow are below exp(-23), far below the tolerance")
      for name, what, offset in (("0", "0 (no max subtracted)", "0.0"),
                                 ("diagonal", "the diagonal score, each row's max", "scores.diagonal()[:, None]"),
                                 ("80", "the constant 80", "80.0"),
                                 ("half-max", "half the row's max, 0", "scores.amax(dim=-1, keepdim=True) / 2"))],
]


def _smoothing(*changes) -> dict:
    return edit(P05, SMOOTH, *changes)


SCORES = "scores = -(i[:, None] - i[None, :]) ** 2 / (2 * s ** 2)"
MASK_LINE = "    scores = scores.masked_fill(future, float('-inf'))\n"
WRONG += [
    Entry("w05-smoothing-exp-minus-mean", P05, {SMOOTH: code('''
def smoothing_attention(T, s):
    i = torch.arange(T, dtype=torch.float32)
    scores = -(i[:, None] - i[None, :]) ** 2 / (2 * s ** 2)                  # (T, T), 0 on the diagonal
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    e = (scores - scores.mean(dim=-1, keepdim=True)).exp().masked_fill(future, 0.0)
    return e / e.sum(dim=-1, keepdim=True)
''')}, expect={"smoothing_attention_hidden": 0.5},
          why="the softmax by hand as exp(s - c) with c the row's mean over all T keys: where s is tiny the far "
              "keys' scores are about -500,000 and the mean far below 0, so exp of the diagonal's 0 - mean "
              "overflows (inf / inf: NaN) on the tiny-s cases, and on the moderate cases whose s is small for their "
              "T (s from 0.6, T up to 40: a mean of several hundred below 0): only the huge-s limit (0.75 of 6) "
              "is right: 4 × 0.75/6",
          says={"smoothing_attention_hidden": ["NaN or inf", "tiny s", "the row's mean, not its max"]},
          hints={"smoothing_attention_hidden": ["offset_not_max"]}),
    Entry("w05-bandwidth-squared-twice", P05, _smoothing((SCORES, "scores = -(i[:, None] - i[None, :]) ** 2 / (2 * (s ** 2) ** 2)")),
          expect={"smoothing_attention_hidden": 3.0},
          why="s squared twice: still causal, on the simplex, decaying, with both limits (s^4 is tiny or huge when s "
              "is); only the kernel's values (1.5 of 6) are wrong: 4 × 4.5/6",
          says={"smoothing_attention_hidden": ["squared twice", "too high a power"]},
          hints={"smoothing_attention_hidden": ["squared_twice"]}),
    Entry("w05-no-factor-2", P05, _smoothing((SCORES, "scores = -(i[:, None] - i[None, :]) ** 2 / s ** 2")),
          expect={"smoothing_attention_hidden": 3.0},
          why="the factor 2 missing: only the kernel's values (1.5 of 6) are wrong: 4 × 4.5/6",
          says={"smoothing_attention_hidden": ["factor 2 is missing"]},
          hints={"smoothing_attention_hidden": ["no_factor_2"]}),
    Entry("w05-hard-coded-bandwidth", P05, _smoothing((SCORES, "scores = -(i[:, None] - i[None, :]) ** 2 / (2 * 2.0 ** 2)")),
          expect={"smoothing_attention_hidden": 2.0},
          why="s = 2 typed in (the visible test's value): both limits (1.5) and the values (1.5) fail: 4 × 3/6",
          says={"smoothing_attention_hidden": ["tiny s", "huge s"]}),
    Entry("w05-triu", P05, _smoothing(("torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)",
                                       "torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)")),
          expect={"smoothing_attention_hidden": 1.83},
          why="the past masked instead of the future: not causal (1), no running mean at huge s (0.75), wrong values "
              "(1.5): 4 × 2.75/6",
          says={"smoothing_attention_hidden": ["above the diagonal", "mask is reversed"]},
          hints={"smoothing_attention_hidden": ["reversed_mask"]}),
    Entry("w05-diagonal-masked", P05, _smoothing(("diagonal=1)", "diagonal=0)")),
          expect={"smoothing_attention_hidden": 0.0},
          why="the diagonal masked out: row 0 has no key and is NaN in every case, so no part can be judged",
          says={"smoothing_attention_hidden": ["row 0 is NaN", "the diagonal stays"]}),
    Entry("w05-mask-zero", P05, _smoothing(("scores.masked_fill(future, float('-inf'))", "scores.masked_fill(future, 0.0)")),
          expect={"smoothing_attention_hidden": 1.33},
          why="the mask filled with 0: future weight (1), no identity (0.75) nor running mean (0.75), wrong values "
              "(1.5): 4 × 2/6",
          says={"smoothing_attention_hidden": ["set to 0 instead of -inf", "exp(0) = 1"]},
          hints={"smoothing_attention_hidden": ["mask_zero"]}),
    Entry("w05-mask-after-softmax", P05, _smoothing((MASK_LINE, ""), (
              "return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=-1).masked_fill(future, 0.0)")),
          expect={"smoothing_attention_hidden": 1.83},
          why="masked after the softmax (not renormalised): rows sum to less than 1 (1), no running mean (0.75), "
              "wrong values (1.5): 4 × 2.75/6",
          says={"smoothing_attention_hidden": ["does not sum to 1", "after the softmax"]},
          hints={"smoothing_attention_hidden": ["mask_after_softmax"]}),
    Entry("w05-no-mask", P05, _smoothing((MASK_LINE, "")),
          expect={"smoothing_attention_hidden": 1.83},
          why="no mask: future weight (1), no causal running mean (0.75), wrong values (1.5): 4 × 2.75/6",
          says={"smoothing_attention_hidden": ["above the diagonal", "no causal mask"]},
          hints={"smoothing_attention_hidden": ["no_mask"]}),
    Entry("w05-softmax-axis", P05, _smoothing(("return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=0)")),
          expect={"smoothing_attention_hidden": 1.5},
          why="softmax over the queries: rows off the simplex (1), no running mean (0.75), the ratio changes from row "
              "to row (0.5), wrong values (1.5): 4 × 2.25/6",
          says={"smoothing_attention_hidden": ["over the queries (dim=0)", "dim=-1"]},
          hints={"smoothing_attention_hidden": ["wrong_axis"]}),
    Entry("w05-s-not-squared", P05, _smoothing((SCORES, "scores = -(i[:, None] - i[None, :]) ** 2 / (2 * s)")),
          expect={"smoothing_attention_hidden": 2.5},
          why="the bandwidth not squared: at a huge s the scores of far keys are not near 0 (no running mean, "
              "0.75), wrong values (1.5): 4 × 3.75/6",
          says={"smoothing_attention_hidden": ["not squared: s enters the score with too low a power"]},
          hints={"smoothing_attention_hidden": ["s_not_squared"]}),
    Entry("w05-distance-not-squared", P05, _smoothing((SCORES, "scores = -(i[:, None] - i[None, :]).abs() / (2 * s ** 2)")),
          expect={"smoothing_attention_hidden": 3.0},
          why="|i - j| for (i - j)^2: causal, decaying, distance-only, with both limits; only the values (1.5) are "
              "wrong: 4 × 4.5/6",
          says={"smoothing_attention_hidden": ["the distance is not squared"]},
          hints={"smoothing_attention_hidden": ["distance_not_squared"]},
          visible_passes={"smoothing_attention_check": "it measures the kernel at distance 1, where |i - j| and "
                                                       "(i - j)^2 are equal"}),
    Entry("w05-sign", P05, _smoothing((SCORES, "scores = (i[:, None] - i[None, :]) ** 2 / (2 * s ** 2)")),
          expect={"smoothing_attention_hidden": 1.83},
          why="the sign flipped: far keys score high: no identity at a tiny s (0.75), the ratios change from row to"
              " row (0.5), no decay (0.5), wrong values (1.5): 4 × 2.75/6",
          says={"smoothing_attention_hidden": ["the sign is flipped"]},
          hints={"smoothing_attention_hidden": ["sign"]}),
    Entry("w05-transposed", P05, _smoothing(("return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=-1).T")),
          expect={"smoothing_attention_hidden": 1.17},
          why="the matrix transposed: rows off the simplex (1), weight above the diagonal (1), no running mean "
              "(0.75), wrong values (1.5): 4 × 1.75/6",
          says={"smoothing_attention_hidden": ["the matrix is transposed"]},
          hints={"smoothing_attention_hidden": ["transposed"]}),
]


# ---- other standard APIs, and imitations of the result without the work -----------------------
# Correct variants a check must not refuse, and answers that only look right: typed-in numbers,
# results that match only on the visible check's inputs, outputs that ignore the seed.

CORRECT += [
    Entry("c01-variance-known-mean", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    torch.manual_seed(seed)                           # the global generator, seeded
    q, k = torch.randn(n, d_k), torch.randn(n, d_k)  # (n, d_k) each
    dots = torch.einsum("nd,nd->n", q, k)            # (n,)
    return dots, (dots ** 2).mean().item()           # the mean is known to be 0
''')}, why="torch.manual_seed, einsum, the second moment about the known mean 0: an estimate with the same "
       "sampling spread as the sample variance"),
    Entry("c01-variance-float64-manual", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, d_k, generator=g, dtype=torch.float64)   # (n, d_k)
    k = torch.randn(n, d_k, generator=g, dtype=torch.float64)   # (n, d_k)
    dots = (q * k).sum(dim=1)                                    # (n,)
    return dots, float(((dots - dots.mean()) ** 2).sum() / (n - 1))
''')}, why="float64 samples, the unbiased variance written out by hand instead of torch.var"),
    Entry("c02-entrywise-einsum-vectors", P02, edit(P02, ENTRYWISE, (
        "scores[b, i, j] = (q[b, i] * k[b, j]).sum()",
        "scores[b, i, j] = torch.einsum(\"m,m->\", q[b, i], k[b, j])")),
          why="one entry at a time with einsum of two vectors (a product of 1-axis operands)"),
    Entry("c02-count-from-linear-layers", P02, {"count_params": code('''
def count_params(d, d_head):
    layers = [nn.Linear(d, d_head, bias=False) for _ in range(3)]   # query, key, value
    return sum(layer.weight.numel() for layer in layers)
''')}, why="counted on three bias-free nn.Linear layers"),
    Entry("c01-shapes-ordered-named", P01, {"shapes": code('''
from collections import OrderedDict, namedtuple

Shape = namedtuple("Shape", "rows cols")

def shapes(T, d, d_k, d_v):
    return OrderedDict(X=Shape(T, d), W_Q=Shape(d, d_k), W_K=Shape(d, d_k), W_V=Shape(d, d_v), Q=Shape(T, d_k),
                       K=Shape(T, d_k), V=Shape(T, d_v), scores=Shape(T, T), A=Shape(T, T), out=Shape(T, d_v))
''')}, why="an OrderedDict of named tuples: the standard library's dict and tuple, read as what they hold"),
    Entry("c01-shapes-default-proxy", P01, {"shapes": code('''
from collections import defaultdict
from types import MappingProxyType

def shapes(T, d, d_k, d_v):
    table = defaultdict(tuple)
    for name, shape in [("X", (T, d)), ("W_Q", (d, d_k)), ("W_K", (d, d_k)), ("W_V", (d, d_v)), ("Q", (T, d_k)),
                        ("K", (T, d_k)), ("V", (T, d_v)), ("scores", (T, T)), ("A", (T, T)), ("out", (T, d_v))]:
        table[name] = shape
    return MappingProxyType(table)
''')}, why="a read-only view (mappingproxy) of a defaultdict: a dict to read"),
    Entry("c02-count-fraction", P02, {"count_params": code('''
from fractions import Fraction

def count_params(d, d_head):
    return Fraction(3 * d * d_head)          # exact arithmetic: a whole number
''')}, why="a whole Fraction is the number it holds"),
    Entry("c03-simplex-tril-equal", P03, {"check_simplex": code('''
def check_simplex(A):
    T = A.shape[-1]
    lower = torch.tril(torch.ones(T, T, dtype=A.dtype))              # (T, T), 1 where j <= i
    assert torch.equal(A * lower, A), "weight above the diagonal: the future is visible"
    assert (A >= 0).all(), "a negative or NaN weight"
    assert torch.allclose(A.sum(-1), torch.ones_like(A.sum(-1)), atol=1e-5), "rows do not sum to 1"
''')}, why="exact zeros above the diagonal as torch.equal(A * tril, A) (NaN != NaN fails too); allclose "
       "with ones_like for the row sums"),
    Entry("c03-gradient-autograd-grad", P03, {"check_causality_gradient": code('''
def check_causality_gradient(head, x, i):
    x = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(head(x)[0, i].sum(), x)   # (B, T, d)
    norms = grad[0].abs().sum(dim=-1)                       # (T,) one per position j
    assert (norms[i + 1:] == 0).all(), "a later token has a nonzero gradient: the future leaks"
    assert (norms[: i + 1] > 0).all(), "a token the output should see has zero gradient"
''')}, why="torch.autograd.grad instead of .backward(), a per-position norm"),
    Entry("c03-row-sums-manual-softmax", P03, {"mask_after_softmax_row_sums": code('''
def mask_after_softmax_row_sums(scores):
    T = scores.shape[-1]
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))          # (B, T, T)
    A = e / e.sum(dim=-1, keepdim=True)                                # (B, T, T)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)                # (T, T), True where j > i
    return A.masked_fill(future, 0.0).sum(dim=-1)                      # (B, T)
''')}, why="softmax by hand (exp, sum), the future zeroed with masked_fill instead of a tril product"),
    Entry("c05-smoothing-exp-tril", P05, {"smoothing_attention": code('''
def smoothing_attention(T, s):
    pos = torch.arange(T, dtype=torch.float64)                       # (T,)
    w = torch.exp(-(pos[:, None] - pos[None, :]) ** 2 / (2 * s * s))  # (T, T), 1 on the diagonal
    w = torch.tril(w)                                                  # (T, T), the future zeroed
    return (w / w.sum(dim=-1, keepdim=True)).float()                   # (T, T), rows normalised
''')}, why="weights exp(-(i-j)²/2s²) zeroed with torch.tril and normalised by hand (the diagonal weight 1 "
       "keeps every row finite), in float64, returned as float32"),
    Entry("c06-fit-by-hand", P06, {"fit_exponent": code('''
def fit_exponent(Ts, times):
    x = [math.log(t) for t in Ts]
    y = [math.log(t) for t in times]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
''')}, why="the least-squares slope written out (covariance over variance) instead of np.polyfit"),
    Entry("c04-shares-max-indices", P04, {"top_key_shares": code('''
def top_key_shares(A):
    T = A.shape[0]
    best = A.max(dim=1).indices[1:]                               # (T-1,) rows 1..T-1
    diagonal = sum(int(best[r]) == r + 1 for r in range(T - 1)) / (T - 1)
    column = sum(int(best[r]) == 0 for r in range(T - 1)) / (T - 1)
    return diagonal, column
''')}, why="max(dim=1).indices and Python sums instead of argmax and a mean"),
]

WRONG += [
    Entry("w01-variance-wobble", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    dots = torch.randn(n, generator=g) * d_k ** 0.5   # (n,): the lemma's law typed in, as noise of variance d_k
    return dots, dots.var().item()
''')}, expect={"bonus_dot_variance": 0.0},
          why="the formula plus noise, as samples: dot products drawn from a normal law of variance d_k, seeded, "
              "n of them, the variance theirs. At the narrow widths (d_k = 2, Laplace; the twin's d_k <= 4) their "
              "Kolmogorov-Smirnov distance to q·k's law (about 0.07 at d_k = 2) is three times the threshold: they "
              "are not samples of q·k, so nothing is credited",
          says={"bonus_dot_variance": ["do not follow the law of q·k", "passes the test of a normal law"]},
          hints={"bonus_dot_variance": ["normal_law"]}),
    Entry("w01-variance-reflected", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    half = (n + 1) // 2
    q, k = torch.randn(half, d_k, generator=g), torch.randn(half, d_k, generator=g)
    dots = (q * k).sum(dim=-1)                          # (half,)
    dots = torch.cat([dots, -dots])[:n]                 # (n,): each draw paired with its reflection
    return dots, dots.var().item()
''')}, expect={"bonus_dot_variance": 0.0},
          why="half the draws, each paired with its negative: the law of q·k is symmetric, so the values pass a "
              "law test and their variance is right, but they are not n independent draws; nothing is credited",
          says={"bonus_dot_variance": ["not independent draws", "negatives of others"]}),
    Entry("w01-variance-chained", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n + 1, d_k, generator=g)
    dots = (q[:-1] * q[1:]).sum(dim=-1)                 # (n,): pair i is (q_i, q_i+1), each shares a vector with the next
    return dots, dots.var().item()
''')}, expect={"bonus_dot_variance": 0.0},
          why="one chain of vectors, each dot product q_i·q_(i+1): the right law and variance one by one, but "
              "neighbours share a vector: uncorrelated, yet their sizes are (the squares' lag-1 correlation is "
              "1 / (d_k + 3), 0.2 at the narrow width against a threshold of 0.04); nothing is credited",
          says={"bonus_dot_variance": ["not independent draws", "the one before it"]}),
    Entry("w01-variance-q-reflected", P01, edit(P01, "dot_variance", (
              "dots = (q * k).sum(dim=-1)",
              "q = torch.cat([q[: n // 2], -q[: n - n // 2]])      # half the vectors q, the rest their negatives\n"
              "    dots = (q * k).sum(dim=-1)")),
          expect={"bonus_dot_variance": 0.0},
          why="half the vectors q drawn, the other half their negatives, each with a fresh k: every dot product "
              "is distinct and has the law of q·k, but dot products m and m + n/2 share a vector, so their squares "
              "correlate (1 / (d_k + 3) at the narrow width against a threshold of 0.04); nothing is credited. It "
              "had full marks before the shift by n/2 was tested",
          says={"bonus_dot_variance": ["not independent draws", "n/2 before"]},
          visible_passes={"dot_variance_check": "the visible check looks for negatives and for neighbours that "
                                                "correlate; these dot products are distinct, no two opposite, and "
                                                "their neighbours independent"}),
    Entry("w01-variance-repeated", P01, edit(P01, "dot_variance",
                                             ("q = torch.randn(n, d_k, generator=g)", "q = torch.randn(n // 10 + 1, d_k, generator=g)"),
                                             ("k = torch.randn(n, d_k, generator=g)", "k = torch.randn(n // 10 + 1, d_k, generator=g)"),
                                             ("dots = (q * k).sum(dim=-1)", "dots = (q * k).sum(dim=-1).repeat(10)[:n]")),
          expect={"bonus_dot_variance": 0.0},
          why="fewer samples than asked: a tenth of the pairs drawn and repeated ten times to make n; about 10% of "
              "the values are distinct where n independent pairs give n distinct ones: not n samples, nothing "
              "credited",
          says={"bonus_dot_variance": ["too few of the dot products are distinct", "n different ones"]}),
    Entry("w01-variance-fewer", P01, edit(P01, "dot_variance", ("dots = (q * k).sum(dim=-1)",
                                                                "dots = (q * k).sum(dim=-1)[:1000]")),
          expect={"bonus_dot_variance": 0.0},
          why="fewer samples than asked: at most 1,000 dot products whatever n is: too few at n = 20,000, so "
              "nothing is credited (at n = 2 the answer is right, but not credited either)",
          says={"bonus_dot_variance": ["fewer dot products than pairs", "not credited"]}),
    Entry("w01-variance-uniform", P01, edit(P01, "dot_variance",
                                            ("q = torch.randn(n, d_k, generator=g)", "q = (torch.rand(n, d_k, generator=g) * 2 - 1) * 3 ** 0.5"),
                                            ("k = torch.randn(n, d_k, generator=g)", "k = (torch.rand(n, d_k, generator=g) * 2 - 1) * 3 ** 0.5")),
          expect={"bonus_dot_variance": 0.0},
          why="q and k with uniform entries of mean 0 and variance 1: Var(q·k) = d_k holds, but q·k does not have "
              "the law of the spec's standard normal pairs: at d_k = 2 the distance is far beyond the threshold, so "
              "nothing is credited. Their law is near a normal one and passes its test (that is what is said; it "
              "used to be said they come from a normal law)",
          says={"bonus_dot_variance": ["do not follow the law of q·k", "standard normal entries"]},
          hints={"bonus_dot_variance": ["normal_law"]}),
    Entry("w01-shapes-visible-only", P01, {"shapes": code('''
def shapes(T, d, d_k, d_v):
    # the visible check's numbers (5, 7, 3, 2) typed in
    return {"X": (5, 7), "W_Q": (7, 3), "W_K": (7, 3), "W_V": (7, 2), "Q": (5, 3), "K": (5, 3), "V": (5, 2),
            "scores": (5, 5), "A": (5, 5), "out": (5, 2)}
''')}, expect={"bonus_shapes": 0.0}, why="the visible check's shapes typed in: wrong in all 3 hidden cases",
          says={"bonus_shapes": ["wrong or missing"]},
          visible_passes={"shapes_check": "the numbers are typed in for exactly the visible check's sizes"}),
    Entry("w02-params-visible-only", P02, {"count_params": code('''
def count_params(d, d_head):
    return {(32, 16): 1536, (40, 24): 2880}.get((d, d_head), 0)    # the visible check's two heads
''')}, expect={"bonus_count_params": 0.0}, why="the visible check's two answers typed in: 0 for every hidden width",
          says={"bonus_count_params": ["three weight matrices", "formula in d and d_head"]},
          visible_passes={"count_params_check": "the numbers are typed in for exactly the visible check's heads"}),
    Entry("w03-row-sums-typed-in", P03, {"mask_after_softmax_row_sums": code('''
def mask_after_softmax_row_sums(scores):
    B, T, _ = scores.shape
    return (torch.arange(1, T + 1) / T).expand(B, T)   # (B, T): right only when all scores are equal
''')}, expect={"mask_after_softmax_hidden": 0.5},
          why="(i + 1)/T typed in, the scores ignored: right only where it cannot be wrong, one token (T = 1): "
              "1 of 4 cases, 2 × 1/4",
          says={"mask_after_softmax_hidden": ["keeps the softmax weights of keys j <= i", "computed over all T keys"]},
          visible_passes={"mask_after_softmax_check": "the visible check's scores are all equal, where (i + 1)/T "
                          "is the right answer"}),
]


# ---- issue classes: the work judged, not the API; violations at every offset; inputs left alone ----
# bonus_scores_entrywise: 4 cases × 0.5 + "one entry at a time" 1.0. bonus_online_softmax: 13 weights of
# 3 points, "keys visited one at a time" 3 of them. bonus_streaming_attention: 6.5 weights of 2 points,
# "keys and values visited one at a time" 1.5 of them.

def _entrywise(body: str) -> dict:
    return {ENTRYWISE: "def scores_entrywise(q, k):\n" + code(body)}


CORRECT += [
    Entry("c02-entrywise-row-times-column", P02, _entrywise('''
    B, T, d_head = q.shape
    scores = torch.zeros(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                scores[b, i, j] = (q[b, i:i + 1] @ k[b, j:j + 1].T).squeeze()   # (1, d) @ (d, 1): one entry
    return scores
'''), why="a (1×d)@(d×1) product per entry: it multiplies d numbers at once, one entry's work"),
    Entry("c02-entrywise-slices-times", P02, _entrywise('''
    B, T, d_head = q.shape
    scores = torch.zeros(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                scores[b, i, j] = (q[b, i:i + 1] * k[b, j:j + 1]).sum()
    return scores
'''), why="(q[b, i:i+1] * k[b, j:j+1]).sum(): two (1, d) slices, the handout's (u * w).sum()"),
    Entry("c02-entrywise-numpy-loops", P02, _entrywise('''
    qn, kn = q.numpy(), k.numpy()
    B, T, d_head = qn.shape
    out = np.zeros((B, T, T), dtype=qn.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                out[b, i, j] = np.dot(qn[b, i], kn[b, j])
    return torch.from_numpy(out)
'''), why="the same loops in numpy: one np.dot of two d-vectors per entry"),
]

WRONG += [
    Entry("w02-entrywise-numpy-matrix", P02, _entrywise('''
    qn, kn = q.numpy(), k.numpy()
    out = np.zeros((q.shape[0], q.shape[1], q.shape[1]), dtype=qn.dtype)
    for b in range(q.shape[0]):
        out[b] = qn[b] @ kn[b].T                         # a whole (T, T) matrix per sequence, in numpy
    return torch.from_numpy(out)
'''), expect={"bonus_scores_entrywise": 2.0},
          why="right values, but each sequence's scores come from one numpy matrix product: the process share "
              "(1 of 3) is lost, whatever the library",
          says={"bonus_scores_entrywise": ["whole matrices or rows at once", "the positions"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w02-entrywise-vecdot", P02, _entrywise('''
    return torch.linalg.vecdot(q[:, :, None, :], k[:, None, :, :])     # (B, T, 1, d) · (B, 1, T, d) -> (B, T, T)
'''), expect={"bonus_scores_entrywise": 2.0},
          why="one broadcast torch.linalg.vecdot computes every entry at once: an op no list of names held",
          says={"bonus_scores_entrywise": ["vecdot", "whole matrices or rows at once"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w02-entrywise-in-place-broadcast", P02, _entrywise('''
    products = q[:, :, None, :] + torch.zeros_like(k)[:, None, :, :]   # (B, T, T, d): q[b, i] in every column
    products *= k[:, None, :, :]                        # in place: every pair at once
    return products.sum(dim=-1)
'''), expect={"bonus_scores_entrywise": 2.0},
          why="an in-place *= on a broadcast multiplies every pair at once",
          says={"bonus_scores_entrywise": ["*=", "whole matrices or rows at once"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w02-entrywise-trace-off", P02, _entrywise('''
    with torch._C.DisableTorchFunction():               # nothing of this reaches a torch-call recorder
        return q @ k.transpose(-2, -1)
'''), expect={"bonus_scores_entrywise": 2.0},
          why="the whole product under torch._C.DisableTorchFunction(), so no torch call is recorded: the "
              "process is judged from the source, which still says `q @ k.transpose(-2, -1)`",
          says={"bonus_scores_entrywise": ["DisableTorchFunction", "whole matrices or rows at once"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w06-online-numpy-one-shot", P06, {"online_softmax": code('''
def online_softmax(scores):
    x = scores.numpy()
    e = np.exp(x - x.max(axis=-1, keepdims=True))      # the whole row at once, in numpy
    return torch.from_numpy(e / e.sum(axis=-1, keepdims=True))
''')}, expect={"bonus_online_softmax": 2.31},
          why="right values from a one-shot softmax in numpy, which no torch hook sees: the process (3 of 13) is lost",
          says={"bonus_online_softmax": ["one pass over the keys", "reduces over the keys at once"]},
          visible_passes={"online_softmax_check": "the visible check tests the values only"}),
    Entry("w06-online-forged-trace", P06, {"online_softmax": code('''
def online_softmax(scores):
    for j in range(scores.shape[-1]):                   # per-key calls for a recorder to see ...
        torch.maximum(scores[..., j], scores[..., j])
    with torch._C.DisableTorchFunction():               # ... and the real work out of its sight
        return torch.softmax(scores, dim=-1)
''')}, expect={"bonus_online_softmax": 2.31},
          why="fake per-key calls shown while the softmax is taken in one shot out of a recorder's sight: the "
              "source says what it does",
          says={"bonus_online_softmax": ["DisableTorchFunction"]},
          visible_passes={"online_softmax_check": "the visible check tests the values only"}),
    Entry("w06-streaming-numpy-one-shot", P06, {"streaming_attention": code('''
def streaming_attention(q, k, v):
    scores = np.einsum("...qd,...kd->...qk", q.numpy(), k.numpy()) / q.shape[-1] ** 0.5   # (..., T, T)
    T = scores.shape[-1]
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return torch.from_numpy((w / w.sum(axis=-1, keepdims=True)) @ v.numpy())
''')}, expect={"bonus_streaming_attention": 1.54},
          why="the whole T×T matrix in numpy: right values, the streaming share (1.5 of 6.5) lost",
          says={"bonus_streaming_attention": ["not streamed", "the keys"]},
          visible_passes={"streaming_attention_check": "the visible check tests the values only"}),

    Entry("w02-entrywise-polarization", P02, _entrywise('''
    a, c = q.double()[:, :, None, :], k.double()[:, None, :, :]     # (B, T, 1, d) and (B, 1, T, d)
    return ((((a + c) ** 2).sum(-1) - ((a - c) ** 2).sum(-1)) / 4).to(q.dtype)    # no product of q and k
'''), expect={"bonus_scores_entrywise": 2.0},
          why="every pair of positions at once through a broadcast sum and difference squared (polarization): "
              "no product of q and k is written, the process share (1 of 3) is lost all the same",
          says={"bonus_scores_entrywise": ["pairs every position with every position", "whole matrices or rows at once"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    # on the 1 x 1 case (B = 1, T = 1) any wrong number is a multiple of the right one: no factor is named there
    Entry("w02-entrywise-plus-one", P02, _entrywise('''
    B, T, d_head = q.shape
    scores = torch.zeros(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                scores[b, i, j] = (q[b, i] * k[b, j]).sum() + 1      # a bias added to every entry
    return scores
'''), expect={"bonus_scores_entrywise": 0.0},
          why="every entry one too large: every value case wrong, so the process share is not counted either",
          says={"bonus_scores_entrywise": ["every entry is wrong"]},
          visible_passes={}),
    Entry("w02-entrywise-third", P02, _entrywise('''
    B, T, d_head = q.shape
    scores = torch.zeros(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                scores[b, i, j] = (q[b, i] * k[b, j]).sum() / 3          # a third
    return scores
'''), expect={"bonus_scores_entrywise": 1.0},
          why="every score divided by 3: the 4 value cases wrong, the loops right (the factor measured on the cases "
              "with more than one entry): 3 × 2/6",
          says={"bonus_scores_entrywise": ["divided by a constant"]},
          hints={"bonus_scores_entrywise": ["divided_by_constant"]}),
    Entry("w02-entrywise-negated", P02, _entrywise('''
    return -(q @ k.transpose(-2, -1))
'''), expect={"bonus_scores_entrywise": 0.0},
          why="every score negated (a factor of -1), all at once",
          says={"bonus_scores_entrywise": ["multiplied by a constant"]},
          hints={"bonus_scores_entrywise": ["multiplied_by_constant"]}),
    Entry("w02-entrywise-multi-dot", P02, _entrywise('''
    return torch.stack([torch.linalg.multi_dot([a, c.T]) for a, c in zip(q, k)])   # each sequence's whole matrix
'''), expect={"bonus_scores_entrywise": 2.0},
          why="multi_dot([a, b]) is a @ b: each sequence's whole matrix in one product (it read as no work at "
              "all, and scored full)",
          says={"bonus_scores_entrywise": ["whole matrices or rows at once"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w06-online-numpy-sum-by-ones", P06, {"online_softmax": code('''
import functools


def online_softmax(scores):
    m = functools.reduce(torch.maximum, scores.unbind(-1))         # the running max, key by key
    e = torch.exp(scores - m[..., None]).numpy()
    ones = np.ones((e.shape[-1], 1), dtype=e.dtype)
    return torch.from_numpy(e / (e @ ones))                        # the row's sum in one numpy product
''')}, expect={"bonus_online_softmax": 2.31},
          why="a streamed max, then every row's sum in one product with ones the answer made, in numpy (no torch "
              "hook sees it): the process (3 of 13) is lost",
          says={"bonus_online_softmax": ["one pass over the keys", "reduces over the keys at once"]},
          visible_passes={"online_softmax_check": "the visible check tests the values only"}),
    Entry("w06-streaming-polarization-then-streamed", P06, {"streaming_attention": code('''
import math


def streaming_attention(q, k, v):
    a, c = q[..., :, None, :], k[..., None, :, :]
    s = ((((a + c) ** 2).sum(-1) - ((a - c) ** 2).sum(-1)) / 4) / math.sqrt(q.shape[-1])   # the whole T×T
    m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    z = torch.zeros_like(m)
    o = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j in range(k.shape[-2]):                        # then a streamed softmax over its columns
        sj = s[..., j].masked_fill(torch.arange(q.shape[-2]) < j, float("-inf"))
        new = torch.maximum(m, sj)
        keep, w = torch.exp(m - new).nan_to_num(0.0), torch.exp(sj - new).nan_to_num(0.0)
        o = o * keep[..., None] + w[..., None] * v[..., j, None, :]
        z = z * keep + w
        m = new
    return o / z[..., None]
''')}, expect={"bonus_streaming_attention": 1.54},
          why="the whole T×T matrix of scores without a product (a broadcast sum and difference squared), then "
              "its columns streamed: right values, the streaming share (1.5 of 6.5) lost",
          says={"bonus_streaming_attention": ["not streamed", "pairs every query with every key"]},
          visible_passes={"streaming_attention_check": "the visible check tests the values only"}),

    # checks that miss a violation where no broken head used to put one
    Entry("w03-simplex-offset-two", P03, edit(P03, SIMPLEX, ("diagonal=1)", "diagonal=2)")),
          expect={"check_simplex_hidden": 2.68},
          why="the upper triangle starts one diagonal too far up (diagonal=2): weight on key i + 1 only passes, and so "
              "do the single future weights of that diagonal (families.py); 17 of 19 (before the families: 18 of 19)",
          says={"check_simplex_hidden": ["key j = i + 1", "the one right above it"]},
          visible_passes={"check_simplex_check": "the visible check's broken heads put weight further up too"}),
    Entry("w03-gradient-ignores-i", P03, _gradient('''
    i = 3                                            # the notebook's position, whatever i is given
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    assert (g[i + 1:] == 0).all(), "a gradient from the future"
    assert (g[: i + 1] != 0).any(dim=-1).all(), "no gradient from the past"
'''), expect={"check_gradient_hidden": 2.33},
          why="always looks at position 3: misses the head whose first row is open (only i = 0 shows it), the "
              "two that differ only past position 8 and the sliding window of 8 (i = 9 of 12 tokens shows them), "
              "the one that hides key 3 from later positions (out_3 sees it: i = 5 or 9 shows it) and the family "
              "of single future keys, whose cases at i = 0 and i = 9 only those positions show; 21 of 27 (before "
              "the families: 22 of 27)",
          says={"check_gradient_hidden": ["first row open", "the position i you are given"]},
          visible_passes={"check_causality_gradient_check": "the visible check tries i = 3 mostly, and its broken "
                          "heads leak into every position"}),
    Entry("w03-gradient-signed-sum", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    assert g[i + 1:].sum() == 0, "a gradient from the future"
    assert (g[: i + 1] != 0).any(dim=-1).all(), "no gradient from the past"
'''), expect={"check_gradient_hidden": 2.78},
          why="sums the future gradient instead of looking at each entry: the two leaks of opposite signs cancel "
              "exactly, and so do the gradients of a leak through x_j[5] - x_j[22]; 25 of 27",
          says={"check_gradient_hidden": ["cancel in a sum"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak with one sign"}),

    # answers that change their caller's inputs in place
    Entry("w03-row-sums-shifts-scores", P03, {"mask_after_softmax_row_sums": code('''
def mask_after_softmax_row_sums(scores):
    T = scores.shape[-1]
    scores -= scores.max(dim=-1, keepdim=True).values    # stabilised in place: the caller's scores change
    keep = torch.tril(torch.ones(T, T, dtype=scores.dtype))
    return (F.softmax(scores, dim=-1) * keep).sum(dim=-1)
''')}, expect={"mask_after_softmax_hidden": 0.0},
          why="right row sums, but every call changes the caller's scores in place: each case fails",
          says={"mask_after_softmax_hidden": ["changed its input `scores` in place", "copy"]},
          visible_passes={"mask_after_softmax_check": "the visible check does not look at its scores afterwards"}),
    Entry("w03-perturbation-changes-x", P03, _perturbation('''
    out = head(x)
    x[:, t] = torch.randn_like(x[:, t])                  # the caller's x, not a copy
    out2 = head(x)
    assert torch.equal(out[:, :t], out2[:, :t]), "the past moved"
    for s in range(t, x.shape[1]):
        assert not torch.equal(out[:, s], out2[:, s]), "the present did not move"
'''), expect={"check_perturbation_hidden": 0.0},
          why="perturbs the caller's x itself: on a correct head it returns quietly but changes x, which counts "
              "as a crash on every correct head: 0",
          says={"check_perturbation_hidden": ["changes its caller's tensor in place", "x.clone()"]},
          visible_passes={"check_causality_perturbation_check": "the visible check does not look at x afterwards"}),
    Entry("w04-shares-changes-A", P04, {"top_key_shares": code('''
def top_key_shares(A):
    A[0] = 0                                            # row 0 is not counted: but the caller's A changes
    top = A.argmax(dim=-1)[1:]
    rows = torch.arange(1, A.shape[0])
    return (top == rows).float().mean().item(), (top == 0).float().mean().item()
''')}, expect={"bonus_top_key_shares": 0.0},
          why="right shares, but every call zeroes row 0 of the caller's matrix in place: each case fails",
          says={"bonus_top_key_shares": ["changed its input `A` in place"]},
          visible_passes={"top_key_shares_check": "the visible check does not look at its matrices afterwards"}),
]


# ---- what runs, and what the process reader cannot follow ---------------------------------------------
# The process checks judge the binding the hidden test calls (the last definition above it, helpers as bound
# then), and follow data through iteration helpers, other libraries and the student's own helpers: an earlier
# attempt left above keeps full marks, whole-matrix work routed through zip/map/comprehensions is still found,
# and what the reader cannot follow goes to a person (REVIEW), never against the student.

ENTRYWISE_SOLUTION = answers_of(STEP4, P02)[ENTRYWISE]

CORRECT += [
    Entry("c02-entrywise-earlier-attempt-above", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    """First try: the whole matrix at once (not what the task asks)."""
    return q @ k.transpose(-2, -1)


''') + "\n\n" + ENTRYWISE_SOLUTION},
          why="an earlier whole-matrix attempt left above the per-entry definition: Python calls the last one"),
    Entry("c02-entrywise-helper-redefined-later", P02, {ENTRYWISE: code('''
def pair(u, w):
    return torch.outer(u, w).trace()                    # a first helper, replaced below


def scores_entrywise(q, k):
    B, T, d_head = q.shape
    scores = torch.zeros(B, T, T, dtype=q.dtype)        # (B, T, T)
    for b, (q_b, k_b) in enumerate(zip(q, k)):           # each sequence: its (T, d_head) queries and keys
        for i, q_i in enumerate(q_b):
            for j, k_j in enumerate(k_b):
                scores[b, i, j] = pair(q_i, k_j)
    return scores


def pair(u, w):
    return sum(a * c for a, c in zip(u, w))             # one dot product, a number at a time
''')},
          why="the helper is redefined after its caller (the last definition runs), and the data reaches it "
              "through zip and enumerate: one entry's work"),
    Entry("c02-entrywise-product-and-floats", P02, {ENTRYWISE: code('''
import itertools
import math
import operator


def scores_entrywise(q, k):
    B, T, d_head = q.shape
    rows_q, rows_k = q.double().tolist(), k.double().tolist()        # Python floats
    scores = torch.empty(B, T, T, dtype=torch.float64)
    for b, i, j in itertools.product(range(B), range(T), range(T)):
        scores[b, i, j] = math.fsum(map(operator.mul, rows_q[b][i], rows_k[b][j]))
    return scores.to(q.dtype)
''')},
          why="itertools.product of the indices, Python floats, math.fsum of a map: one entry at a time"),
    Entry("c06-online-earlier-attempt-above", P06, {"online_softmax": code('''
def online_softmax(scores):
    return torch.softmax(scores, dim=-1)                # a first check of the values: one shot


''') + "\n\n" + answers_of(STEP4, P06)["online_softmax"]},
          why="a one-shot softmax left above the streamed definition: the streamed one runs"),
]

WRONG += [
    Entry("w02-entrywise-zip-of-sequences", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    return torch.stack([q_b @ k_b.T for q_b, k_b in zip(q, k)])     # (T, d) @ (d, T) per sequence
''')}, expect={"bonus_scores_entrywise": 2.0},
          why="each sequence's whole (T, T) matrix, the data passed through zip: the process share (1 of 3) is lost",
          says={"bonus_scores_entrywise": ["whole matrices or rows at once", "the positions"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w02-entrywise-map-numpy", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    rows = map(lambda q_b, k_b: np.dot(q_b, k_b.T), q.numpy(), k.numpy())   # numpy, one sequence at a time
    return torch.from_numpy(np.stack(list(rows)))
''')}, expect={"bonus_scores_entrywise": 2.0},
          why="numpy's dot of whole (T, d) matrices inside a lambda handed to map: no torch call, and the "
              "process share is still lost",
          says={"bonus_scores_entrywise": ["whole matrices or rows at once", "lambda"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w02-entrywise-rows-rebuilt", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    B, T, d_head = q.shape
    out = []
    for b in range(B):
        queries = torch.stack([q[b, i] for i in range(T)])      # the rows, one by one ...
        keys = [k[b, j] for j in range(T)]
        out.append(queries @ torch.stack(keys).T)                # ... then every entry at once
    return torch.stack(out)
''')}, expect={"bonus_scores_entrywise": 2.0},
          why="rows gathered one at a time in comprehensions, then one matrix product",
          says={"bonus_scores_entrywise": ["whole matrices or rows at once", "line 7"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w02-entrywise-attempt-below", P02, {ENTRYWISE: ENTRYWISE_SOLUTION + "\n\n\n" + code('''
def scores_entrywise(q, k):
    """Faster."""
    return torch.einsum("bid,bjd->bij", q, k)
''')}, expect={"bonus_scores_entrywise": 2.0},
          why="the per-entry loops, then a whole-matrix einsum defined below them: the einsum is what runs",
          says={"bonus_scores_entrywise": ["einsum", "whole matrices or rows at once"]},
          visible_passes={"scores_entrywise_check": "the visible check tests the values only"}),
    Entry("w06-online-keys-unbound", P06, {"online_softmax": code('''
import functools


def online_softmax(scores):
    keys = scores.unbind(-1)                            # the keys one by one ...
    m = functools.reduce(torch.maximum, keys)           # (a running max)
    z = sum(torch.exp(s - m) for s in keys)             # ... but the sum takes them all at once, after the max
    return torch.exp(scores - m[..., None]) / z[..., None]
''')},
          expect={"bonus_online_softmax": 2.31},
          why="a running max, then a second pass summing over all keys: not one pass over the keys (3 of 13 lost)",
          says={"bonus_online_softmax": ["one pass over the keys", "reduces over the keys at once"]},
          visible_passes={"online_softmax_check": "the visible check tests the values only"}),
]

# Answers whose process the reader cannot follow: the cell goes to a person (REVIEW), nothing is taken.
UNDECIDED = [
    Entry("r06-online-namedtuple-one-shot", P06, {"online_softmax": code('''
from typing import NamedTuple

import numpy as np


class Scores(NamedTuple):
    values: np.ndarray


def online_softmax(scores):
    held = Scores(scores.double().numpy())
    e = np.exp(held.values - held.values.max(-1, keepdims=True))       # every key at once
    return torch.from_numpy(e / e.sum(-1, keepdims=True)).to(scores.dtype)
''')}, expect={"bonus_online_softmax": REVIEW},
          why="a softmax over every key at once, on the field of a NamedTuple: the reader does not follow what a "
              "NamedTuple makes of its fields, so the process share goes to a person (it read as keys one at a "
              "time, and scored full)",
          says={"bonus_online_softmax": ["waits for review", "NamedTuple"]}),
    Entry("r02-entrywise-vmapped", P02, {ENTRYWISE: code('''
def one_entry(u, w):
    return torch.dot(u, w)                              # one dot product of two d_head-vectors


# vmapped over j, then i, then b: each entry is one call of one_entry, as torch.vmap runs it
scores_entrywise = torch.vmap(torch.vmap(torch.vmap(one_entry, in_dims=(None, 0)), in_dims=(0, None)))
''')}, expect={"bonus_scores_entrywise": REVIEW},
          why="torch.vmap of a per-entry function: the reader cannot see how vmap batches it, so the process "
              "share goes to a person (the values are right: 2 of 3 points decided)",
          says={"bonus_scores_entrywise": ["waits for review", "torch.vmap"]}),
    Entry("r02-entrywise-matmul-by-keyword", P02, {ENTRYWISE: code('''
def scores_entrywise(q, k):
    with torch._C.DisableTorchFunction():               # nothing of this reaches a torch-call recorder
        return torch.matmul(input=q, other=k.transpose(-2, -1))    # the arrays passed by keyword
''')}, expect={"bonus_scores_entrywise": REVIEW},
          why="a whole-matrix matmul whose arrays are passed by keyword, hidden from the kernel's record: the "
              "reader reads a library call's arrays by position, so the process share goes to a person (it "
              "scored full before)",
          says={"bonus_scores_entrywise": ["waits for review", "passed by keyword"]}),
    Entry("r02-entrywise-walrus-rebound", P02, {ENTRYWISE: ENTRYWISE_SOLUTION + "\n\n\n" + code('''
# the name rebound by a `:=` expression to a one-shot in numpy, which no torch-call recorder sees
(scores_entrywise := lambda q, k: torch.from_numpy(q.detach().numpy() @ k.detach().numpy().swapaxes(-2, -1)))
''')}, expect={"bonus_scores_entrywise": REVIEW},
          why="the per-entry answer defined, then its name rebound to a whole-matrix product by a `:=` "
              "expression the reader did not follow: the answer that runs is the product, so the process share "
              "goes to a person (it read the per-entry one, and scored full)",
          says={"bonus_scores_entrywise": ["waits for review", "`:=`"]}),
    Entry("r06-online-global-in-a-class-body", P06, {"online_softmax": "import numpy as np\n\n" + answers_of(
        STEP4, P06)["online_softmax"] + "\n\n\n" + code('''
class _Setup:                          # a class body runs when the cell runs: the name rebound to a one-shot
    global online_softmax
    online_softmax = lambda s: torch.from_numpy(  # noqa: E731
        (lambda e: e / e.sum(-1, keepdims=True))(np.exp(s.detach().numpy() - s.detach().numpy().max(-1, keepdims=True))))
''')}, expect={"bonus_online_softmax": REVIEW},
          why="the streamed softmax defined, then its name rebound to a one-shot softmax in numpy by a `global` "
              "declaration in a class body: the answer that runs is the one-shot, so the process share goes to "
              "a person (it read the streamed one, and scored full)",
          says={"bonus_online_softmax": ["waits for review", "`global`"]}),
]


# ---- hidden tests at least as demanding as the contract (dlcourse/contracts.py) and the visible checks ----
# Each entry exploits a way a hidden test was laxer than its answer's contract: a form (type, dtype,
# shape) the visible check refused but the hidden test read anyway, sizes never past the notebook's,
# inputs the docstring allows but no case passed, tolerances looser than the spec's, heads served with
# another behaviour than the notebook's own, leaks at only one class of positions. Partial credit for
# a form: scores_entrywise, mask_after_softmax_row_sums, permutation_gaps and fit_exponent judge it with
# each case (a result of another type or dtype is not the answer); attention_on_text in its form part
# (0.5 of 4.5), online_softmax and streaming_attention in their dtype part (1 of 13 weights of 3
# points, 1 of 6.5 weights of 2 points).


WRONG += [
    Entry("w02-entrywise-float64-result", P02, edit(P02, ENTRYWISE, ("dtype=q.dtype", "dtype=torch.float64")),
          expect={"bonus_scores_entrywise": 1.5},
          why="the scores always made in float64: right values, but float32 inputs give float64 scores, not q's "
              "dtype (the hidden test checked the dtype for float64 inputs only): the 3 float32 cases fail, the "
              "float64 one and the loops stay: 3 × 3/6",
          says={"bonus_scores_entrywise": ["dtype of its input `q`", "float32"]}),
]


WRONG += [
    Entry("w03-row-sums-softmax-by-hand", P03, edit(P03, "mask_after_softmax_row_sums", (
              "A = F.softmax(scores, dim=-1) * keep",
              "e = scores.exp()                                                   # no max subtracted\n"
              "    A = e / e.sum(dim=-1, keepdim=True) * keep")),
          expect={"mask_after_softmax_hidden": 1.5},
          why="softmax written as exp(s) / sum exp(s) without subtracting the max: right for the notebook's small "
              "scores (and every case the hidden test had), NaN once scores reach the hundreds: 3 of 4 cases",
          says={"mask_after_softmax_hidden": ["scores in the hundreds", "overflows"]},
          hints={"mask_after_softmax_hidden": ["max_not_subtracted"]},
          visible_passes={"mask_after_softmax_check": "the visible check's scores are all 0"}),
    *[Entry(f"w03-row-sums-exp-minus-{name}", P03, edit(P03, "mask_after_softmax_row_sums", (
              "A = F.softmax(scores, dim=-1) * keep",
              f"e = (scores - {offset}).exp()                   # not the row's max\n"
              "    A = e / e.sum(dim=-1, keepdim=True) * keep")),
             expect={"mask_after_softmax_hidden": 1.5},
             why=f"softmax written as exp(s - c) / sum exp(s - c) with c = {what}, not the row's max: right for small "
                 "scores, NaN on the large-scores case (std 100, 9 tokens: some score is more than 88.7 above c, exp "
                 "overflows in float32): 3 of 4 cases",
             says={"mask_after_softmax_hidden": ["scores in the hundreds", "other than the row's max"]},
             hints={"mask_after_softmax_hidden": ["offset_not_max"]},
             visible_passes={"mask_after_softmax_check": "the visible check's scores are all 0"})
      for name, what, offset in (("mean", "the row's mean", "scores.mean(dim=-1, keepdim=True)"),
                                 ("diagonal", "the diagonal score", "scores.diagonal(dim1=-2, dim2=-1)[..., None]"),
                                 ("80", "the constant 80", "80.0"),
                                 ("half-max", "half the row's max", "scores.amax(dim=-1, keepdim=True) / 2"))],
    Entry("w03-row-sums-float32-inside", P03, edit(P03, "mask_after_softmax_row_sums", (
              "A = F.softmax(scores, dim=-1) * keep", "A = F.softmax(scores.float(), dim=-1) * keep.float()")),
          expect={"mask_after_softmax_hidden": 1.5},
          why="float64 scores computed in float32: right to 1e-7, the hidden test's old tolerance for every dtype "
              "(1e-5), not to the contract's float64 one (1e-12), and a float32 result: 3 of 4 cases",
          says={"mask_after_softmax_hidden": ["float32 precision only"]},
          visible_passes={"mask_after_softmax_check": "the visible check's scores are float32"}),
]


def _perturbation_with(past: str, future: str) -> dict:
    """check_causality_perturbation comparing the past with `past` and the future with `future`."""
    return _perturbation(f'''
    out = head(x)
    x_new = x.clone()
    x_new[:, t, :] = torch.randn_like(x_new[:, t, :])
    out_new = head(x_new)
{past}
{future}
''')


EVERY_LATER = '''    for s in range(t, x.shape[1]):
        assert not torch.equal(out[:, s], out_new[:, s]), f"the output at {s} did not change"'''
PAST_EQUAL = '''    assert torch.equal(out[:, :t], out_new[:, :t]), "an output before t changed"'''

WRONG += [
    # 4.2's checks on heads as the notebook's own: a float32 head refuses float64 input (it did not when served)
    Entry("w03-perturbation-double", P03, edit(P03, "check_causality_perturbation", (
              "out = head(x)                                                # (B, T, d_head)",
              "x = x.double()                                               # more precision, it seems\n"
              "    out = head(x)                                                # (B, T, d_head)")),
          expect={"check_perturbation_hidden": 0.0},
          why="turns x to float64 and calls the float32 head: the notebook's own head raises (nn.Linear refuses "
              "the dtype), the grader's served heads computed in float64 instead and gave full marks; now they "
              "refuse it as the notebook's head does: it crashes on every correct head, which scores 0",
          says={"check_perturbation_hidden": ["crashed with RuntimeError", "which refuse x of another dtype"]}),
    Entry("w03-gradient-double", P03, edit(P03, "check_causality_gradient", (
              "x = x.clone().requires_grad_(True)", "x = x.double().requires_grad_(True)")),
          expect={"check_gradient_hidden": 0.0},
          why="a float64 leaf for a float32 head: crashes on the notebook's own head, so on every correct one: 0",
          says={"check_gradient_hidden": ["crashed with RuntimeError", "which refuse x of another dtype"]}),
    # positions of every class: first, middle and last of the past and of the future, and past the notebook's 8
    Entry("w03-perturbation-first-and-last-before", P03, _perturbation_with(
              '''    for s in ({0, t - 1} if t > 0 else ()):             # the first and the last position before t
        assert torch.equal(out[:, s], out_new[:, s]), f"the output at {s} changed"''', EVERY_LATER),
          expect={"check_perturbation_hidden": 2.89},
          why="compares the first and the last output before t only: a head whose middle position 3 sees the "
              "whole sequence passes (every broken head before leaked into position 0 or t - 1); 26 of 27",
          says={"check_perturbation_hidden": ["middle position 3", "the middle ones too"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak into every "
                                                                "position"}),
    Entry("w03-perturbation-first-and-last-after", P03, _perturbation_with(PAST_EQUAL,
              '''    for s in {t, x.shape[1] - 1}:                       # the first and the last output from t on
        assert not torch.equal(out[:, s], out_new[:, s]), f"the output at {s} did not change"'''),
          expect={"check_perturbation_hidden": 2.78},
          why="checks that the first and the last output from t on change, not the middle ones: a head whose "
              "middle position 4 ignores the past and one that also hides the previous token (out_{t+1} does not "
              "move) pass; 25 of 27 (before: 17 of 18, the second only)",
          says={"check_perturbation_hidden": ["middle position 4", "the middle ones too"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads move every "
                                                                "output or none"}),
    Entry("w03-perturbation-signed-sum", P03, _perturbation_with(
              '''    assert (out[:, :t] - out_new[:, :t]).sum() == 0, "an output before t changed"''', EVERY_LATER),
          expect={"check_perturbation_hidden": 2.78},
          why="sums the differences before t instead of comparing them entry by entry: leaks into positions 0 "
              "and 1 of opposite signs cancel exactly, and so do leaks into two coordinates of position 1; 25 of 27",
          says={"check_perturbation_hidden": ["cancel in a sum", "entry by entry"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak with one sign"}),
    Entry("w03-perturbation-eight-tokens", P03, _perturbation_with(PAST_EQUAL,
              '''    for s in range(t, 8):                               # the notebook's 8 tokens
        assert not torch.equal(out[:, s], out_new[:, s]), f"the output at {s} did not change"'''),
          expect={"check_perturbation_hidden": 2.78},
          why="the sequence length typed in as the notebook's 8: on 12 tokens the outputs past 8 are never "
              "looked at, and a head whose positions past 8 are never seen passes, and so do the family's heads "
              "whose output 10 or 11 alone ignores token 9; 25 of 27 (before the families: 26 of 27)",
          says={"check_perturbation_hidden": ["past the first 8", "x.shape[1]"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's sequences have 8 tokens"}),
    Entry("w03-gradient-eight-tokens", P03, edit(P03, "check_causality_gradient", (
              "(grad[i + 1:] == 0)", "(grad[i + 1:8] == 0)")),
          expect={"check_gradient_hidden": 2.56},
          why="the future typed in as positions up to the notebook's 8: on 12 tokens the gradients past 8 are never "
              "looked at, and a head whose mask covers only the first 8 positions passes; so do the families' cases "
              "tried at i = 9 (position 9 sees token 10 or 11 alone; a leak through one feature or into one "
              "coordinate, some of whose cases i = 9 shows): 23 of 27 (before the families: 26 of 27)",
          says={"check_gradient_hidden": ["first 8 positions", "x.shape[1]"]},
          visible_passes={"check_causality_gradient_check": "the visible check's sequences have 8 tokens"}),
    Entry("w03-gradient-next-and-last", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    for j in {i + 1, x.shape[1] - 1} - {i}:              # the next and the last position after i
        if j < x.shape[1]:
            assert (g[j] == 0).all(), f"a gradient from position {j}"
    assert (g[: i + 1] != 0).any(dim=-1).all(), "a zero gradient from the past"
'''),
          expect={"check_gradient_hidden": 2.89},
          why="looks at the next and the last future position only: a head that sees two tokens ahead (never the "
              "last) passes; 26 of 27",
          says={"check_gradient_hidden": ["two ahead", "the middle ones too"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak from every "
                                                            "future position"}),
    # off by one at a boundary of the range a check should compare: each gave full marks until a broken head put
    # its fault at that boundary only (suites.py: last_row_self_only, first_key_hidden)
    Entry("w03-perturbation-stops-before-last", P03, edit(P03, "check_causality_perturbation", (
              "for s in range(t, x.shape[1]):", "for s in range(t, x.shape[1] - 1):")),
          expect={"check_perturbation_hidden": 2.78},
          why="the loop over the outputs from t on stops one short, before the last position: a head whose last "
              "position attends only to itself passes (every other broken head moves an earlier output too, or "
              "leaks into the past), and so do the family's heads whose last output alone ignores token t; 25 of "
              "27. It had full marks before that head",
          says={"check_perturbation_hidden": ["last position attends only to itself", "the last one included"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads move every "
                                                                "output or none"}),
    Entry("w03-perturbation-loop-stops-before-last", P03, _perturbation_with(PAST_EQUAL,
              '''    T = x.shape[1]
    for s in range(t, T - 1):                           # every later output but the last
        assert not torch.equal(out[:, s], out_new[:, s]), f"the output at {s} did not change"'''),
          expect={"check_perturbation_hidden": 2.78},
          why="as w03-perturbation-stops-before-last, with T named first: the last output is never compared; "
              "25 of 27 (full marks before the last-row head, 26 of 27 before the families)",
          says={"check_perturbation_hidden": ["last position attends only to itself", "range(t, x.shape[1])"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads move every "
                                                                "output or none"}),
    Entry("w03-gradient-past-from-one", P03, edit(P03, "check_causality_gradient", (
              "for j in range(i + 1)", "for j in range(1, i + 1)")),
          expect={"check_gradient_hidden": 2.78},
          why="the past is searched from position 1: a head in which no later position sees the first token "
              "passes (its only fault is a zero gradient from x_0), and so do the family's heads in which position "
              "3 or 9 alone ignores token 0; 25 of 27. It had full marks before that head",
          says={"check_gradient_hidden": ["no later position sees the first token", "j = 0 included"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak from the "
                                                            "future; none hides a past position"}),
    Entry("w03-gradient-past-slice-from-one", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    assert (g[i + 1:] == 0).all(), "a gradient from the future"
    assert (g[1: i + 1] != 0).any(dim=-1).all(), "a zero gradient from the past"
'''),
          expect={"check_gradient_hidden": 2.78},
          why="the past sliced from position 1, g[1:i + 1]: the head that hides key 0 from every later position "
              "passes, and the family's heads in which one position ignores token 0; 25 of 27 (full marks before "
              "the first, 26 of 27 before the families)",
          says={"check_gradient_hidden": ["no later position sees the first token", "range(i + 1)"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak from the "
                                                            "future; none hides a past position"}),
    # a part of the tensor only: every other row, one feature, one output coordinate, every other position, one
    # sequence, a token scaled instead of changed. Each gave full marks until a broken case put its fault in the
    # part it leaves out (leaks.py: row_sum_odd_row, negative_last_row, feature_leak, coordinate_leak,
    # middle_key_hidden, direction_leak)
    Entry("w03-simplex-even-row-sums", P03, edit(P03, SIMPLEX, ("A.sum(dim=-1)", "A[..., ::2, :].sum(dim=-1)")),
          expect={"check_simplex_hidden": 2.53},
          why="the row sums of every other row only (rows 0, 2, 4, ...): the matrix whose row 3 alone sums to 0.9, "
              "the one whose last row (row 7) alone sums to 0.9 and the family's cases at rows 1, 3, 5 and 7 pass; "
              "16 of 19 (before the families: 17 of 19)",
          says={"check_simplex_hidden": ["row 3 alone sums to 0.9", "not every other row"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices are wrong in every row"}),
    Entry("w03-simplex-inner-rows-nonnegative", P03, edit(P03, SIMPLEX, ("(A >= 0)", "(A[..., 1:-1, :] >= 0)")),
          expect={"check_simplex_hidden": 2.68},
          why="nonnegativity tested without the first and the last row: a negative weight in the last row (its "
              "row still summing to 1) passes, and so does the family's negative weight in row 7; 17 of 19 (before "
              "the families: 18 of 19)",
          says={"check_simplex_hidden": ["negative weight in its last row", "the first and the last rows included"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices have no negative weight"}),
    Entry("w03-gradient-feature-zero", P03, edit(P03, GRADIENT, ("(grad[i + 1:] == 0)", "(grad[i + 1:, 0] == 0)")),
          expect={"check_gradient_hidden": 2.78},
          why="the future's gradient looked at on input feature 0 only: a head whose future leaks through feature "
              "17 alone and one whose leak goes through features 5 and 22 pass; 25 of 27",
          says={"check_gradient_hidden": ["one input feature only", "compare every feature"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak through every "
                                                            "feature"}),
    Entry("w03-gradient-one-coordinate", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i, 0].backward()                          # one coordinate of out_i, not the whole output
    g = x.grad[0]
    assert (g[i + 1:] == 0).all(), "a gradient from the future"
    assert (g[: i + 1] != 0).any(dim=-1).all(), "a zero gradient from the past"
'''),
          expect={"check_gradient_hidden": 2.89},
          why="backward from coordinate 0 of out_i only: a head whose future leaks into coordinate 9 alone "
              "passes; 26 of 27",
          says={"check_gradient_hidden": ["one output coordinate only", "out[0, i].sum()"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak into every "
                                                            "coordinate"}),
    Entry("w03-gradient-every-other-past", P03, _gradient('''
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    g = x.grad[0]
    assert (g[i + 1:] == 0).all(), "a gradient from the future"
    for j in range(0, i + 1, 2):                         # every other position of the past
        assert (g[j] != 0).any(), f"a zero gradient from position {j}"
'''),
          expect={"check_gradient_hidden": 2.89},
          why="the past searched at every other position (0, 2, 4, ...): a head in which no later position sees "
              "token 3 passes; 26 of 27",
          says={"check_gradient_hidden": ["no later position sees token 3", "not every other one"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak from the "
                                                            "future; none hides a past position"}),
    Entry("w03-perturbation-first-sequence", P03, _perturbation_with(
              '''    assert torch.equal(out[0, :t], out_new[0, :t]), "an output before t changed"''',
              '''    for s in range(t, x.shape[1]):
        assert not torch.equal(out[0, s], out_new[0, s]), f"the output at {s} did not change"'''),
          expect={"check_perturbation_hidden": 2.89},
          why="compares the first sequence of the batch only, out[0]: the head that masks only the first sequence "
              "passes; 26 of 27",
          says={"check_perturbation_hidden": ["masks only the first sequence", "not one sequence"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak in every "
                                                                "sequence"}),
    Entry("w03-perturbation-scaled-token", P03, edit(P03, PERTURB, (
              "torch.randn_like(x_new[:, t, :])", "2 * x_new[:, t, :]")),
          expect={"check_perturbation_hidden": 2.89},
          why="perturbs token t by doubling it: a head whose leak is the direction x / |x| of each token (exactly "
              "the same for 2 x) passes; 26 of 27",
          says={"check_perturbation_hidden": ["direction x / |x|", "not by multiplying it"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak a token's "
                                                                "length too"}),
    # the first or the last row (or key) left out, a sum over a position's coordinates or a token's features, a
    # few features of token t changed, the past searched over its last 8 positions only, a tolerance where exact
    # zeros are asked or ten times the spec's. Each gave full marks until a broken case put its fault where it
    # does not look (leaks.py: first_row_sum, first_row_future, last_row_sum, last_key_future, row_sum_1.00015,
    # cancelling_coordinate_leak, the perturbation suite's feature_leak, cancelling_feature_leak, window_8,
    # faint_grad_leak)
    Entry("w03-simplex-skips-first-row", P03, _simplex('''
    T = A.shape[-1]
    assert (A >= 0).all(), "a negative (or NaN) weight"
    assert ((A[:, 1:].sum(dim=-1) - 1).abs() <= 1e-5).all(), "a row does not sum to 1"      # rows 1 to T - 1
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert (A[:, 1:][:, future[1:]] == 0).all(), "weight above the diagonal"              # rows 1 to T - 1
'''),
          expect={"check_simplex_hidden": 2.53},
          why="row 0 left out of the row sums and of the future weights: the matrix whose row 0 alone sums to 0.9, "
              "the family of single future weights (its first case is row 0's) and the family of rows summing to "
              "0.9, at row 0, pass; 16 of 19 (before the families: 17 of 19)",
          says={"check_simplex_hidden": ["first row (row 0) of sequence 1 alone sums to 0.9",
                                         "first row (row 0) of sequence 2 puts 0.1",
                                         "a slice such as A[:, 1:] leaves row 0 out"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices are wrong in every row"}),
    Entry("w03-simplex-skips-last-row-and-key", P03, _simplex('''
    T = A.shape[-1]
    assert (A >= 0).all(), "a negative (or NaN) weight"
    assert ((A[:, :-1].sum(dim=-1) - 1).abs() <= 1e-5).all(), "a row does not sum to 1"     # the last row left out
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert (A[..., :-1][:, future[:, :-1]] == 0).all(), "weight above the diagonal"      # the last key left out
'''),
          expect={"check_simplex_hidden": 2.37},
          why="the last row left out of the row sums and the last key out of the future weights: the matrix whose "
              "last row alone sums to 0.9 and the one whose only future weight is on the last key pass, and so do "
              "the families' cases at row 7 and at key 7; 15 of 19 (before the families: 17 of 19)",
          says={"check_simplex_hidden": ["last row of sequence 1 alone sums to 0.9",
                                         "only future weight is on the last key",
                                         "a slice such as A[..., :-1] leaves the last key out"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices are wrong in every row"}),
    Entry("w03-simplex-tolerance-1.9e-4", P03, edit(P03, SIMPLEX, ("assert worst <= 1e-5", "assert worst <= 1.9e-4")),
          expect={"check_simplex_hidden": 2.84},
          why="a row-sum tolerance of 1.9e-4, 19 times the spec's 1e-5 (just below the 2e-4 of the row summing to "
              "1.0002): the row summing to 1.00015 passes; 18 of 19. A correct check's tolerance is the spec's 1e-5, "
              "2e-5 with allclose's default rtol, or any from about 1e-6 to 1e-4 (tests/mutant_equivalents.py): a "
              "row 1.5e-4 off fails them all",
          says={"check_simplex_hidden": ["one row summing to 1.00015", "a tolerance of 1.5e-4 or more"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices are off by far more than 1e-4"}),
    Entry("w03-perturbation-summed-coordinates", P03, _perturbation_with(
              '''    assert torch.equal(out[:, :t].sum(-1), out_new[:, :t].sum(-1)), "an output before t changed"''',
              EVERY_LATER),
          expect={"check_perturbation_hidden": 2.89},
          why="compares each output before t through the sum of its coordinates: leaks of opposite signs into two "
              "coordinates of position 1 cancel exactly; 26 of 27",
          says={"check_perturbation_hidden": ["two coordinates of position 1", "not out[:, :t].sum(-1)"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak into every "
                                                                "coordinate with no cancelling"}),
    Entry("w03-perturbation-first-16-features", P03, edit(P03, PERTURB, (
              "x_new[:, t, :] = torch.randn_like(x_new[:, t, :])", "x_new[:, t, :16] = torch.randn_like(x_new[:, t, :16])")),
          expect={"check_perturbation_hidden": 2.89},
          why="redraws the first 16 of token t's 32 features only: a head whose future leaks through feature 17 "
              "alone passes; 26 of 27",
          says={"check_perturbation_hidden": ["one input feature only", "change the whole token"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak through "
                                                                "every feature"}),
    Entry("w03-perturbation-feature-0-bumped", P03, edit(P03, PERTURB, (
              "x_new[:, t, :] = torch.randn_like(x_new[:, t, :])", "x_new[:, t, 0] += 1")),
          expect={"check_perturbation_hidden": 2.89},
          why="changes token t by adding 1 to its feature 0 only: a head whose future leaks through feature 17 "
              "alone passes; 26 of 27",
          says={"check_perturbation_hidden": ["one input feature only", "change the whole token"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak through "
                                                                "every feature"}),
    Entry("w03-gradient-summed-features", P03, edit(P03, GRADIENT, (
              "(grad[i + 1:] == 0)", "(grad[i + 1:].sum(dim=-1) == 0)")),
          expect={"check_gradient_hidden": 2.89},
          why="the future's gradient summed over the features before the comparison with 0: a leak through "
              "x_j[5] - x_j[22], whose two gradients cancel in the sum, passes; 26 of 27",
          says={"check_gradient_hidden": ["x_j[5] - x_j[22]", "not its sum over the features"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads' future gradients "
                                                            "do not cancel over the features"}),
    Entry("w03-gradient-tolerance-1e-12", P03, edit(P03, GRADIENT, (
              "(grad[i + 1:] == 0)", "(grad[i + 1:].abs() <= 1e-12)")),
          expect={"check_gradient_hidden": 2.89},
          why="'zero' within 1e-12 where exact zeros are asked: a head whose future gradient is about 1e-14 "
              "passes; 26 of 27. Every correct check compares with 0 exactly (== 0, count_nonzero, torch.equal "
              "with zeros, a sum of absolute values): a gradient of 1e-14, its square still a normal float32, "
              "fails them all",
          says={"check_gradient_hidden": ["about 1e-14", "no tolerance however small"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads' future gradients "
                                                            "are far above 1e-12"}),
    Entry("w03-gradient-past-last-8", P03, edit(P03, GRADIENT, (
              "for j in range(i + 1)", "for j in range(max(0, i - 7), i + 1)")),
          expect={"check_gradient_hidden": 2.78},
          why="the past searched over its last 8 positions only: at i = 9 of 12 tokens a head with a sliding "
              "window of 8 (positions 0 and 1 unseen) passes, and so do the family's heads in which position 9 "
              "alone ignores token 0 or 1; 25 of 27. The spec asks for a nonzero gradient from every j <= i",
          says={"check_gradient_hidden": ["a sliding window of 8", "however far back"]},
          visible_passes={"check_causality_gradient_check": "the visible check's sequences have 8 tokens: the "
                                                            "last 8 positions are all of them"}),
    # one fixed place skipped, a place no single broken case isolated: each had full marks until the families of
    # families.py put the same fault at each place in turn (a family is one part: 3/19 or 3/27 of the points,
    # lost when any one of its cases is missed; the feedback names the first case missed and where its fault is)
    Entry("w03-simplex-row-sums-skip-row-5", P03, edit(P03, SIMPLEX, (
              "row_sums = A.sum(dim=-1)", "row_sums = A.sum(dim=-1)[:, [r for r in range(T) if r != 5]]")),
          expect={"check_simplex_hidden": 2.84},
          why="the row sums of every row but row 5: the family of matrices with one row summing to 0.9 has its "
              "case at row 5 (of sequence 1), which passes; 18 of 19",
          says={"check_simplex_hidden": ["one row summing to 0.9 (each row in turn)",
                                         "only row 5 of sequence 1 is wrong here"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices are wrong in every row"}),
    Entry("w03-simplex-skip-row-5", P03, _simplex('''
    T = A.shape[-1]
    rows = [r for r in range(T) if r != 5]                 # every row but row 5
    assert (A[:, rows] >= 0).all(), "a negative (or NaN) weight"
    assert ((A.sum(dim=-1)[:, rows] - 1).abs() <= 1e-5).all(), "a row does not sum to 1"
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    if T > 5:
        future[5] = False
    assert (A[:, future] == 0).all(), "weight above the diagonal"
'''),
          expect={"check_simplex_hidden": 2.53},
          why="row 5 left out of all three properties: the negative weight at row 5 (with the family's case of "
              "it at row 5), the row-sum family's case at row 5 and the future-weight family's cases at row 5 "
              "pass; 16 of 19 (before the families: 18 of 19, the negative weight at row 5 only)",
          says={"check_simplex_hidden": ["negative weight whose row still sums to 1", "row 5 of sequence 1",
                                         "only the entry at row 5, key 6"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices are wrong in every row"}),
    Entry("w03-simplex-future-first-rows", P03, edit(P03, SIMPLEX, (
              "assert (A[:, future] == 0).all()", "future[4:] = False                  # the first rows only\n"
              "    assert (A[:, future] == 0).all()")),
          expect={"check_simplex_hidden": 2.84},
          why="the future weights of rows 0 to 3 only: every broken matrix before had a future weight in a first "
              "row; the family of single future weights has one at each entry above the diagonal, and those of "
              "rows 4 to 6 pass; 18 of 19",
          says={"check_simplex_hidden": ["a single weight above the diagonal", "only the entry at row 4, key 5"]},
          visible_passes={"check_simplex_check": "the visible check's broken matrices put future weight in "
                                                 "every row"}),
    Entry("w03-perturbation-past-skips-position-2", P03, _perturbation_with(
              '''    keep = [s for s in range(t) if s != 2]              # every output before t but output 2
    assert torch.equal(out[:, keep], out_new[:, keep]), "an output before t changed"''', EVERY_LATER),
          expect={"check_perturbation_hidden": 2.89},
          why="compares every output before t but output 2: the family of heads that leak into one place of the "
              "past has a case for each output position (and for each distance from t), and output 2's pass; "
              "26 of 27",
          says={"check_perturbation_hidden": ["one place of the past only", "only output 2 moves when token 5"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak into every "
                                                                "position"}),
    Entry("w03-perturbation-skips-sequence-1", P03, _perturbation_with(
              '''    seqs = [b for b in range(x.shape[0]) if b != 1]     # every sequence but sequence 1
    assert torch.equal(out[seqs, :t], out_new[seqs, :t]), "an output before t changed"''',
              '''    for s in range(t, x.shape[1]):
        assert not torch.equal(out[seqs, s], out_new[seqs, s]), f"the output at {s} did not change"'''),
          expect={"check_perturbation_hidden": 2.89},
          why="compares every sequence of the batch but sequence 1: the head that masks only the first sequence "
              "leaks in sequences 2 and 3 too; the family's head that leaves sequence 1 alone unmasked passes; 26 of "
              "27",
          says={"check_perturbation_hidden": ["some sequences of the batch only", "only sequence 1 of the batch"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak in every "
                                                                "sequence"}),
    Entry("w03-perturbation-flipped-token", P03, edit(P03, PERTURB, (
              "torch.randn_like(x_new[:, t, :])", "x_new[:, t, :].flip(-1)")),
          expect={"check_perturbation_hidden": 2.89},
          why="changes token t by reversing the order of its features: a head whose future leaks through the "
              "sorted squares of a token's features (the same numbers in any order, of either sign) passes; 26 "
              "of 27. Every other head sees the features one by one",
          says={"check_perturbation_hidden": ["sorted squares", "a flip, a permutation"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads see each "
                                                                "feature on its own"}),
    Entry("w03-perturbation-every-third-coordinate", P03, edit(P03, PERTURB, (
              "assert torch.equal(out[:, :t], out_new[:, :t])",
              "assert torch.equal(out[:, :t, ::3], out_new[:, :t, ::3])")),
          expect={"check_perturbation_hidden": 2.78},
          why="compares every third coordinate of the outputs before t (0, 3, ..., 15): the leaks of opposite signs "
              "into coordinates 4 and 11 pass, and so does the family's leak into coordinate 2 alone; 25 of 27 "
              "(before the families: 26 of 27)",
          says={"check_perturbation_hidden": ["two coordinates of position 1", "only coordinate 2"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads leak into every "
                                                                "coordinate"}),
    Entry("w03-perturbation-present-skips-next", P03, edit(P03, PERTURB, (
              "for s in range(t, x.shape[1]):", "for s in [s for s in range(t, x.shape[1]) if s != t + 1]:")),
          expect={"check_perturbation_hidden": 2.78},
          why="every output from t on must change, and the output right after t is not looked at: the head that "
              "hides the previous token (only out_{t+1} stays) passes, and so does the family's head whose output "
              "3 alone ignores token 2; 25 of 27 (before the families: 26 of 27)",
          says={"check_perturbation_hidden": ["also hides the previous token", "only output 3 stays the same"]},
          visible_passes={"check_causality_perturbation_check": "the visible check's broken heads move every "
                                                                "output or none"}),
    Entry("w03-gradient-past-skips-position-2", P03, edit(P03, GRADIENT, (
              "for j in range(i + 1) if", "for j in range(i + 1) if j != 2 and")),
          expect={"check_gradient_hidden": 2.89},
          why="the past's gradients looked at everywhere but position 2: the family of heads in which one "
              "position ignores one earlier token has a case for each pair, and those that hide token 2 pass; "
              "26 of 27",
          says={"check_gradient_hidden": ["one position ignores one token", "only x_2 is missing from out_3"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak from the "
                                                            "future; none hides a past position"}),
    Entry("w03-gradient-future-near-and-last", P03, edit(P03, GRADIENT, (
              "assert (grad[i + 1:] == 0).all()",
              "assert (grad[i + 1:i + 3] == 0).all() and (grad[i + 1:][-1:] == 0).all()")),
          expect={"check_gradient_hidden": 2.89},
          why="the future's gradient looked at on the two positions after i and the last one: the family of heads "
              "in which one position sees one future token has every pair, and those three or more ahead and "
              "before the last pass; 26 of 27 (every broken head before leaked one or two ahead, or from the last)",
          says={"check_gradient_hidden": ["one position sees one future token", "only x_3 leaks into out_0"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak from every "
                                                            "future position"}),
    Entry("w03-gradient-future-skips-i-plus-4", P03, edit(P03, GRADIENT, (
              "assert (grad[i + 1:] == 0).all()",
              "assert (grad[[j for j in range(i + 1, grad.shape[0]) if j != i + 4]] == 0).all()")),
          expect={"check_gradient_hidden": 2.89},
          why="every future position but i + 4: the family's head in which position 0 alone sees token 4 passes; "
              "26 of 27",
          says={"check_gradient_hidden": ["one position sees one future token", "only x_4 leaks into out_0"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak from every "
                                                            "future position"}),
    Entry("w03-gradient-future-odd-features", P03, edit(P03, GRADIENT, (
              "(grad[i + 1:] == 0)", "(grad[i + 1:, 1::2] == 0)")),
          expect={"check_gradient_hidden": 2.89},
          why="the future's gradient looked at on the odd features only: the leak through feature 17 and the one "
              "through features 5 and 22 show on an odd one; the family's leak through feature 0 alone passes; "
              "26 of 27",
          says={"check_gradient_hidden": ["one input feature only (each feature in turn)",
                                          "only feature 0 of the future"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak through every "
                                                            "feature"}),
    Entry("w03-gradient-odd-coordinates", P03, edit(P03, GRADIENT, (
              "out[0, i].sum().backward()", "out[0, i, 1::2].sum().backward()")),
          expect={"check_gradient_hidden": 2.89},
          why="backward from the odd coordinates of out_i only: the leak into coordinate 9 shows there; the "
              "family's leak into coordinate 0 alone passes; 26 of 27",
          says={"check_gradient_hidden": ["one output coordinate only (each coordinate in turn)",
                                          "only coordinate 0 of out_i"]},
          visible_passes={"check_causality_gradient_check": "the visible check's broken heads leak into every "
                                                            "coordinate"}),
    Entry("w03-gradient-past-even-features", P03, edit(P03, GRADIENT, (
              "(grad[j] != 0).any()", "(grad[j, ::2] != 0).any()")),
          expect={"check_gradient_hidden": 0.0},
          why="the past's gradient looked for on the even features only: a correct head whose out_i gets x_0 "
              "through feature 17 alone has no gradient there, and the check rejects it: 0",
          says={"check_gradient_hidden": ["only through feature 17 of x_0", "but it is correct"]},
          visible_passes={"check_causality_gradient_check": "the notebook's head reaches every past token "
                                                            "through every feature"}),
]


WRONG += [
    Entry("w04-text-batch-of-one", P04, _text(("return head.A[0]", "return head.A")),
          expect={"bonus_attention_on_text": 2.67},
          why="head.A, the (1, 64, 64) batch of one, where the docstring asks for the (64, 64) matrix (the visible "
              "check refuses it, and the notebook's next cells stack the matrices): the hidden test squeezed it "
              "and gave full marks; now the form part (0.5 of 4.5) is lost, the values are still judged",
          says={"bonus_attention_on_text": ["a (64, 64) tensor", "another shape", "head.A[0]"]}),
    Entry("w04-text-nested-lists", P04, _text(("return head.A[0]", "return head.A[0].tolist()")),
          expect={"bonus_attention_on_text": 2.67},
          why="nested lists, not the tensor (or numpy array) the docstring and the visible check ask for: the "
              "form part (0.5 of 4.5)",
          says={"bonus_attention_on_text": ["should return a tensor (or a numpy array), not list"]}),
]


WRONG += [
    Entry("w06-gaps-tensors", P06, edit(P06, "permutation_gaps", ("return (a - b).abs().max().item()",
                                                                  "return (a - b).abs().max()")),
          expect={"bonus_permutation_gaps": 0.0},
          why="the gaps as 0-dimensional tensors: the docstring asks for Python floats (the hidden test read them "
              "with float() and gave full marks); every case fails its form",
          says={"bonus_permutation_gaps": ["Python floats", "torch.Tensor", ".item()"]}),
    Entry("w06-gaps-pos-weight", P06, edit(P06, "permutation_gaps", (
              "P = pos_emb(torch.arange(T))                      # (T, d)", "P = pos_emb.weight")),
          expect={"bonus_permutation_gaps": 0.0},
          why="P is the whole table: right only when pos_emb has exactly T rows (every case did), but the docstring "
              "allows a longer one; it crashes there, which fails every part",
          says={"bonus_permutation_gaps": ["pos_emb may have more than T rows", "pos_emb(torch.arange(T))"]},
          visible_passes={"permutation_gaps_check": "the notebook's pos_emb has exactly T rows, where pos_emb.weight "
                                                    "is P"}),
    Entry("w06-fit-rounded", P06, edit(P06, "fit_exponent", ("return float(slope)", "return round(float(slope), 4)")),
          expect={"bonus_fit_exponent": 1.0},
          why="the slope rounded to 4 decimals (off by up to 5e-5, within the hidden test's old 1e-4 but not the "
              "spec's tolerance): the exact laws and the unsorted points stay right (their slopes round to "
              "themselves or within 1e-5), the noisy laws and the numpy arrays do not: 2 of 4",
          says={"bonus_fit_exponent": ["rounded"]},
          hints={"bonus_fit_exponent": ["rounded"]}),
    Entry("w06-fit-tensor", P06, edit(P06, "fit_exponent", ("return float(slope)", "return torch.tensor(slope)")),
          expect={"bonus_fit_exponent": 0.0},
          why="a 0-dimensional tensor, not the Python float the docstring says (the hidden test read it with "
              "float()): every case fails its form",
          says={"bonus_fit_exponent": ["Python float", "torch.Tensor"]}),
    Entry("w06-online-float64-inside", P06, edit(P06, "online_softmax", (
              "T = scores.shape[-1]", "scores = scores.double()                        # float64 inside\n    T = scores.shape[-1]")),
          expect={"bonus_online_softmax": 2.77},
          why="computed and returned in float64 for float32 scores: right values, but not the scores' dtype (the "
              "visible check's demand, which the hidden test did not make): the dtype part, 1 of 13",
          says={"bonus_online_softmax": ["dtype of its input", "float32"]}),
    Entry("w06-online-numpy", P06, edit(P06, "online_softmax", (
              "return torch.exp(scores - shift[..., None]) / running_sum[..., None]",
              "return (torch.exp(scores - shift[..., None]) / running_sum[..., None]).numpy()")),
          expect={"bonus_online_softmax": 2.77},
          why="a numpy array instead of a tensor (the notebook's next cell subtracts a tensor from it and fails): "
              "the dtype and form part, 1 of 13",
          says={"bonus_online_softmax": ["should return a tensor", "numpy.ndarray"]}),
    Entry("w06-streaming-float64-inside", P06, edit(P06, "streaming_attention", (
              "T, d_k = q.shape[-2], q.shape[-1]",
              "q, k, v = q.double(), k.double(), v.double()      # float64 inside\n    T, d_k = q.shape[-2], q.shape[-1]")),
          expect={"bonus_streaming_attention": 1.69},
          why="float64 results for float32 inputs: the dtype part, 1 of 6.5",
          says={"bonus_streaming_attention": ["dtype of its input `q`", "float32"]}),
    Entry("w06-streaming-mask-of-64", P06, edit(P06, "streaming_attention", (
              "    query_pos = torch.arange(T)                                               # (T,)\n",
              "    tril = torch.tril(torch.ones(64, 64, dtype=torch.bool))                   # the notebook's T_max\n"),
              ("s_j = s_j.masked_fill(query_pos < j, float('-inf'))", "s_j = s_j.masked_fill(~tril[:T, j], float('-inf'))")),
          expect={"bonus_streaming_attention": 1.38},
          why="the mask precomputed for the notebook's 64 tokens: every hidden sequence was shorter; a sequence "
              "of 70 breaks it: the ordinary part, 2 of 6.5",
          says={"bonus_streaming_attention": ["longer than the notebook's"]},
          visible_passes={"streaming_attention_check": "the visible check's sequence has exactly the 64 tokens "
                                                       "the mask was made for"}),
]


# ---- hints name only causes the answer has (tests/test_hints.py) --------------------------------
# A check names a likely mistake only when it has measured it: the mistake's output, computed by the judge, is
# the answer's on every case, or the samples pass the law test of the law that mistake gives. These answers
# have a symptom some hint used to be given for, with another cause (no hint now: the property that failed),
# or the cause itself (the hint, declared in `hints`). Points follow the parts' weights as above.

_ONLINE_START = "float('-inf'), dtype=scores.dtype)"
_STREAM_START = "running_max = torch.full(q.shape[:-1], float('-inf'), dtype=q.dtype)"
_STREAM_KEYS = "for j in range(T):"


def _online(*changes) -> dict:
    return edit(P06, "online_softmax", *changes)


CORRECT += [
    Entry("c06-online-max-minus-1e9", P06, _online((_ONLINE_START, "-1e9, dtype=scores.dtype)")),
          why="the running max started at -1e9, below every score the cases have: the same weights as from -inf"),
    Entry("c06-streaming-max-minus-1e9", P06, _streaming((_STREAM_START,
                                                          "running_max = torch.full(q.shape[:-1], -1e9, dtype=q.dtype)")),
          why="the running max started at -1e9, below every score: every query's first key replaces it"),
]

WRONG += [
    # online_softmax: NaN on the very negative rows, the running max started elsewhere than 0
    Entry("w06-hint-online-max-minus-1e4", P06, _online((_ONLINE_START, "-1e4, dtype=scores.dtype)")),
          expect={"bonus_online_softmax": 2.54},
          why="the running max started at -1e4: the rows near -3e4 underflow (NaN), those near -1e4 do not, so "
              "the answer is not what a start at 0 gives and no cause is named; very negative scores (2 of 13)",
          says={"bonus_online_softmax": ["very negative", "Some weights are NaN"]},
          visible_passes={"online_softmax_check": "the visible check's very negative row is near -3000, above a "
                                                  "start at -1e4: nothing underflows"}),
    Entry("w06-hint-streaming-diagonal-offset", P06, {"streaming_attention": code('''
def streaming_attention(q, k, v):
    """Causal attention, keys and values visited one at a time. q, k: (..., T, d_k); v: (..., T, d_v)."""
    T, d_k = q.shape[-2], q.shape[-1]
    c = (q * k).sum(dim=-1) / d_k**0.5                             # (..., T) each query's score with its own key
    running_sum = torch.zeros(q.shape[:-1], dtype=q.dtype)                    # (..., T)
    running_out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)      # (..., T, d_v)
    query_pos = torch.arange(T)                                               # (T,)
    for j in range(T):
        s_j = (q @ k[..., j, :, None]).squeeze(-1) / d_k**0.5      # (..., T) every query against key j
        s_j = s_j.masked_fill(query_pos < j, float('-inf'))        # queries before j may not see key j
        weight = torch.exp(s_j - c)                                # (..., T)
        running_sum = running_sum + weight
        running_out = running_out + weight[..., None] * v[..., j, None, :]
    return running_out / running_sum[..., None]                    # (..., T, d_v)
''')},
          expect={"bonus_streaming_attention": 1.69},
          why="weights exp(s - c) with c each query's score with its own key, a fixed shift instead of a running max "
              "(nothing rescaled): right where every score is within 88 of the diagonal's, NaN on the large scores "
              "(in the hundreds: exp overflows, 1 of 6.5): 2 × 5.5/6.5",
          says={"bonus_streaming_attention": ["other than its max"]},
          hints={"bonus_streaming_attention": ["offset_not_max"]},
          visible_passes={"streaming_attention_check": "the visible check's scores (a Head's q and k on the text) are "
                                                       "small: no score is 88 above a query's own, nothing overflows"}),
    Entry("w06-hint-streaming-max-minus-1e3", P06, _streaming((_STREAM_START,
                                                              "running_max = torch.full(q.shape[:-1], -1e3, dtype=q.dtype)")),
          expect={"bonus_streaming_attention": 1.69},
          why="the running max started at -1e3: right wherever a query sees a score above -1e3, NaN on the rows "
              "whose scores are all near -1e4 (a large-scores case); not what a start at 0 gives, so no cause is "
              "named: 5.5 of 6.5",
          says={"bonus_streaming_attention": ["large scores", "NaN"]},
          visible_passes={"streaming_attention_check": "the visible check's scores are small: nothing is below -1e3"}),
    Entry("w06-hint-online-final-unshifted", P06, _online((
              "return torch.exp(scores - shift[..., None]) / running_sum[..., None]",
              "return torch.exp(scores) / (running_sum * torch.exp(shift))[..., None]")),
          expect={"bonus_online_softmax": 1.73},
          why="the running max starts at -inf, but the weights are exp(score) divided by exp(max) afterwards: "
              "exp of an unshifted score underflows near -1e4 (NaN) and overflows near +1e4 and in the thousands "
              "(NaN): very negative 2, very large 1, wide range 0.5, masked prefix 2 (its 7e3 row): 3 × 7.5/13. "
              "It used to be asked whether the max started at 0",
          says={"bonus_online_softmax": ["very negative", "no running max subtracted"]},
          hints={"bonus_online_softmax": ["max_not_subtracted"]}),
    Entry("w06-hint-online-max-zero", P06, _online((_ONLINE_START, "0.0, dtype=scores.dtype)")),
          expect={"bonus_online_softmax": 2.54},
          why="the running max started at 0: the very negative rows underflow, exactly as the judge's own start at "
              "0 does (2 of 13)",
          says={"bonus_online_softmax": ["running max started at 0", "starts at -inf"]},
          hints={"bonus_online_softmax": ["max_starts_at_zero"]}),
    Entry("w06-hint-online-max-minus-1e3", P06, _online((_ONLINE_START, "-1e3, dtype=scores.dtype)")),
          expect={"bonus_online_softmax": 2.54},
          why="the running max started at -1e3: on these cases its weights are a start at 0's (every row near "
              "-1e4 underflows, no other row does), so the hint is given; it names a start at 0 or at another "
              "number far above the scores of a row, which this is (2 of 13)",
          says={"bonus_online_softmax": ["another number far above"]},
          hints={"bonus_online_softmax": ["max_starts_at_zero"]}),
    Entry("w06-hint-online-first-score-offset", P06, {"online_softmax": code('''
def online_softmax(scores):
    """Softmax over the last axis of scores (..., T), visiting the keys one at a time."""
    T = scores.shape[-1]
    c = scores[..., 0]                                              # (...) each row's first score as the shift
    running_sum = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for j in range(T):
        running_sum = running_sum + torch.exp(scores[..., j] - c)
    return torch.exp(scores - c[..., None]) / running_sum[..., None]
''')},
          expect={"bonus_online_softmax": 2.42},
          why="the softmax shifted by each row's first score, a fixed c, instead of a running max: right where every "
              "score is within 88 of the row's first, NaN where a row spreads over ±3000 (exp overflows: 0.5) and "
              "where it starts with -inf (-inf - (-inf): the masked prefixes, 2): 3 × 10.5/13",
          says={"bonus_online_softmax": ["other than the row's max"]},
          hints={"bonus_online_softmax": ["offset_not_max"]}),
    Entry("w06-hint-online-mean-offset", P06, {"online_softmax": code('''
def online_softmax(scores):
    """Softmax over the last axis of scores (..., T), visiting the keys one at a time."""
    c = scores.mean(dim=-1)                                         # (...) each row's mean as the shift
    running_sum = torch.zeros_like(c)
    for j in range(scores.shape[-1]):
        running_sum = running_sum + torch.exp(scores[..., j] - c)
    return torch.exp(scores - c[..., None]) / running_sum[..., None]
''')},
          expect={"bonus_online_softmax": 1.5},
          why="the softmax shifted by each row's mean, a fixed c, instead of a running max: NaN where a row spreads "
              "over ±3000 (0.5) and where it holds -inf keys (its mean is -inf: the -inf entries 1, the masked "
              "prefixes 2), and the mean reads every key at once (3): 3 × 6.5/13",
          says={"bonus_online_softmax": ["other than the row's max"]},
          hints={"bonus_online_softmax": ["offset_not_max"]}),
    Entry("w06-hint-online-sum-not-rescaled", P06, _online((
              "running_sum = running_sum * torch.exp(running_max - shift) + torch.exp(s_j - shift)",
              "running_sum = running_sum + torch.exp(s_j - shift)")),
          expect={"bonus_online_softmax": 0.12},
          why="the running sum not rescaled when the max grows: rows do not sum to 1 wherever the max moves; only "
              "the single key is right (0.5 of 13)",
          says={"bonus_online_softmax": ["do not sum to 1", "multiplied by exp(m - m')"]},
          hints={"bonus_online_softmax": ["sum_not_rescaled"]}),
    Entry("w06-hint-online-key-0-missing", P06, _online((
              "running_max = torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype)",
              "running_max = scores[..., 0].clone()"), ("for j in range(T):", "for j in range(1, T):")),
          expect={"bonus_online_softmax": 0.0},
          why="the running max starts at the first score, and the loop starts at key 1, so key 0's term never "
              "enters the sum: rows do not sum to 1, though the sum is rescaled (it used to be said it is not)",
          says={"bonus_online_softmax": ["do not sum to 1"]}),
    Entry("w06-hint-online-no-guard", P06, _online(("torch.where(new_max == float('-inf'), 0.0, new_max)", "new_max")),
          expect={"bonus_online_softmax": 2.54},
          why="shifted by the running max even while it is -inf: rows that start with -inf keys are NaN, exactly "
              "as the judge's own loop without the guard gives (masked prefix, 2 of 13)",
          says={"bonus_online_softmax": ["fully masked prefix", "exp(-inf - (-inf))"]},
          hints={"bonus_online_softmax": ["nan_while_only_neg_inf"]}),

    # streaming_attention: NaN, or later rows wrong, with a cause other than the one a hint used to name
    Entry("w06-hint-streaming-drops-key-0", P06, _streaming((_STREAM_KEYS, "for j in range(1, T):")),
          expect={"bonus_streaming_attention": 0.0},
          why="key 0 never visited: query 0 sees no key (NaN), wrong everywhere; it used to be asked whether the "
              "diagonal is masked, or the running max started at 0",
          says={"bonus_streaming_attention": ["query 0 is NaN"]}),
    Entry("w06-hint-streaming-drops-last-key", P06, _streaming((_STREAM_KEYS, "for j in range(T - 1):")),
          expect={"bonus_streaming_attention": 0.0},
          why="the last key never visited: the last query is wrong, and with T = 1 no key is (NaN); it used to be "
              "asked whether the running output is rescaled, or the running max started at 0",
          says={"bonus_streaming_attention": ["the first rows are right and later ones differ", "NaN"]}),
    Entry("w06-hint-streaming-every-other-key", P06, _streaming((_STREAM_KEYS, "for j in range(0, T, 2):")),
          expect={"bonus_streaming_attention": 0.15},
          why="every other key dropped: query 0 is right, later ones are not (T = 1 right: 0.5 of 6.5); it used "
              "to be asked whether the running output is rescaled",
          says={"bonus_streaming_attention": ["the first rows are right and later ones differ"]}),
    Entry("w06-hint-streaming-last-block-dropped", P06, _streaming((_STREAM_KEYS, "for j in range(T - T % 4):")),
          expect={"bonus_streaming_attention": 0.0},
          why="keys in blocks of 4, the last partial block dropped: later queries wrong, T = 1 NaN; it used to be "
              "asked whether the running output is rescaled",
          says={"bonus_streaming_attention": ["the first rows are right and later ones differ"]}),
    Entry("w06-hint-streaming-keys-past-64-dropped", P06, _streaming((_STREAM_KEYS, "for j in range(min(T, 64)):")),
          expect={"bonus_streaming_attention": 1.38},
          why="keys past the notebook's 64 dropped: only the 70-long sequence is wrong, from query 64 on (the "
              "ordinary part, 2 of 6.5); it used to be asked whether the running output is rescaled",
          says={"bonus_streaming_attention": ["the first rows are right and later ones differ"]},
          visible_passes={"streaming_attention_check": "the visible check's sequence has exactly 64 tokens: no key "
                                                       "is dropped"}),
    Entry("w06-hint-streaming-not-shifted", P06, _streaming(("scale = torch.exp(running_max - new_max)",
                                                             "scale = torch.ones_like(new_max)"),
                                                            ("weight = torch.exp(s_j - new_max)", "weight = torch.exp(s_j)")),
          expect={"bonus_streaming_attention": 1.69},
          why="exp(s) with no running max subtracted: scores in the hundreds overflow (large scores, 1 of 6.5); "
              "it used to be asked whether the max started at 0 too",
          says={"bonus_streaming_attention": ["large scores", "no running max subtracted"]},
          hints={"bonus_streaming_attention": ["max_not_subtracted"]},
          visible_passes={"streaming_attention_check": "the visible check's scores are small: nothing overflows"}),
    Entry("w06-hint-streaming-nothing-rescaled", P06, _streaming(("running_out = running_out * scale[..., None] +",
                                                                  "running_out = running_out +"),
                                                                 ("running_sum = running_sum * scale + weight",
                                                                  "running_sum = running_sum + weight")),
          expect={"bonus_streaming_attention": 0.15},
          why="neither the running sum nor the running output rescaled when the max grows: only T = 1 right",
          says={"bonus_streaming_attention": ["running sum and the running output are both rescaled"]},
          hints={"bonus_streaming_attention": ["output_and_sum_not_rescaled"]}),

    # scores_entrywise: the causes measured on a case (the answer's scores are that computation's)
    Entry("w02-hint-entrywise-by-width", P02, edit(P02, ENTRYWISE, ("(q[b, i] * k[b, j]).sum()", "(q[b, i] * k[b, j]).sum() / 32")),
          expect={"bonus_scores_entrywise": 1.0},
          why="divided by the model width d = 32: 4 cases wrong, the loops right: 3 × 2/6",
          says={"bonus_scores_entrywise": ["model width d = 32"]},
          hints={"bonus_scores_entrywise": ["divided_by_model_width"]}),
    Entry("w02-hint-entrywise-first-sequence", P02, edit(P02, ENTRYWISE, ("(q[b, i] * k[b, j]).sum()", "(q[0, i] * k[0, j]).sum()")),
          expect={"bonus_scores_entrywise": 2.0},
          why="every sequence given the first one's scores: the two cases with one sequence stay right, and the "
              "loops: 3 × 4/6",
          says={"bonus_scores_entrywise": ["scores of the first one"]},
          hints={"bonus_scores_entrywise": ["first_sequence"]}),

    # streaming_attention: the causes measured on a case (its output is that computation's)
    Entry("w06-hint-streaming-no-mask", P06, _streaming(("s_j = s_j.masked_fill(query_pos < j, float('-inf'))",
                                                         "s_j = s_j")),
          expect={"bonus_streaming_attention": 0.15},
          why="no causal mask: every query sees every key; only T = 1 is right (0.5 of 6.5)",
          says={"bonus_streaming_attention": ["without the causal mask"]},
          hints={"bonus_streaming_attention": ["no_mask"]}),
    Entry("w06-hint-streaming-future-zero", P06, _streaming(("masked_fill(query_pos < j, float('-inf'))",
                                                             "masked_fill(query_pos < j, 0.0)")),
          expect={"bonus_streaming_attention": 0.15},
          why="the future keys' scores set to 0, not -inf: they keep weight; only T = 1 is right (0.5 of 6.5)",
          says={"bonus_streaming_attention": ["score 0 instead of -inf"]},
          hints={"bonus_streaming_attention": ["future_score_zero"]}),
    Entry("w06-hint-streaming-unscaled", P06, _streaming(("/ d_k**0.5", "")),
          expect={"bonus_streaming_attention": 0.92},
          why="the scores not divided by sqrt(d_k): large scores (one-hot either way), T = 1 and the streaming part "
              "stay right, 3 of 6.5",
          says={"bonus_streaming_attention": ["not divided by sqrt(d_k) at all"]},
          hints={"bonus_streaming_attention": ["scores_unscaled"]}),
    Entry("w06-hint-streaming-by-width", P06, _streaming(("/ d_k**0.5", "/ 32**0.5")),
          expect={"bonus_streaming_attention": 0.92},
          why="the scores divided by sqrt(32), a constant, not by sqrt(d_k): large scores (one-hot either way), "
              "T = 1 and the streaming part stay right, 3 of 6.5",
          says={"bonus_streaming_attention": ["scaled by a constant that is not 1/sqrt(d_k)"]},
          hints={"bonus_streaming_attention": ["scores_other_scale"]}),

    # samples of the right shape and another scale: normal, the wrong variance (not "not normal")
    Entry("w03-hint-scale-q-doubled", P03, edit(P03, SCALE, ("q = torch.randn(4, 8, d_k, generator=g)",
                                                             "q = 2 * torch.randn(4, 8, d_k, generator=g)")),
          expect={"scale_table_hidden": 0.75},
          why="q's entries drawn with variance 4: a normal law, the wrong variance; not samples of N(0, 1), so "
              "nothing measured is credited: 4 × 1.5/8. It used to be said they are not standard normal draws",
          says={"scale_table_hidden": ["entries of q follow a normal law, but not N(0, 1)", "their variance"]},
          hints={"scale_table_hidden": ["normal_other_scale"]}),
    Entry("w03-hint-scale-k-halved", P03, edit(P03, SCALE, ("k = torch.randn(4, 8, d_k, generator=g)",
                                                            "k = 0.5 * torch.randn(4, 8, d_k, generator=g)")),
          expect={"scale_table_hidden": 0.75},
          why="k's entries drawn with variance 1/4: normal, the wrong variance: 4 × 1.5/8",
          says={"scale_table_hidden": ["entries of k follow a normal law, but not N(0, 1)", "their variance"]},
          hints={"scale_table_hidden": ["normal_other_scale"]}),
    Entry("w03-hint-scale-q-shifted", P03, edit(P03, SCALE, ("q = torch.randn(4, 8, d_k, generator=g)",
                                                             "q = torch.randn(4, 8, d_k, generator=g) + 1")),
          expect={"scale_table_hidden": 0.75},
          why="q's entries of mean 1: normal, the wrong mean: 4 × 1.5/8",
          says={"scale_table_hidden": ["entries of q follow a normal law, but not N(0, 1)", "their mean is"]},
          hints={"scale_table_hidden": ["normal_other_scale"]}),
    Entry("w03-hint-scale-q-uniform", P03, edit(P03, SCALE, ("q = torch.randn(4, 8, d_k, generator=g)",
                                                             "q = (torch.rand(4, 8, d_k, generator=g) * 2 - 1) * 3 ** 0.5")),
          expect={"scale_table_hidden": 0.75},
          why="q's entries uniform of mean 0 and variance 1: the law is not normal (and that is what is said): "
              "4 × 1.5/8",
          says={"scale_table_hidden": ["do not follow a normal law"]},
          visible_passes={"scale_table_check": "the visible check tests the table's form and consistency and that "
                                               "the raw std is about sqrt(d_k), which entries of variance 1 of any "
                                               "law give; the law is tested hidden"}),
    Entry("w03-hint-scale-k-correlated", P03, edit(P03, SCALE, (
              "k = torch.randn(4, 8, d_k, generator=g)",
              "k = 0.6 * q + 0.8 * torch.randn(4, 8, d_k, generator=g)            # N(0, 1), correlated with q")),
          expect={"scale_table_hidden": 0.75},
          why="k's entries N(0, 1) but correlated with q's (0.6): (q + k)/√2 is not N(0, 1); k is not q, nor drawn "
              "from a generator seeded anew (as it used to be asked): 4 × 1.5/8",
          says={"scale_table_hidden": ["not independent draws", "correlated"]}),
    Entry("w01-hint-variance-q-doubled", P01, edit(P01, "dot_variance", ("q = torch.randn(n, d_k, generator=g)",
                                                                         "q = 2 * torch.randn(n, d_k, generator=g)")),
          expect={"bonus_dot_variance": 0.0},
          why="q's entries of variance 4: the dot products have q·k's law times 2, variance 4 d_k: not samples of "
              "q·k, nothing credited",
          says={"bonus_dot_variance": ["the shape of q·k's but another scale"]},
          hints={"bonus_dot_variance": ["scaled_law"]}),
    Entry("w01-hint-variance-divided", P01, edit(P01, "dot_variance", ("dots = (q * k).sum(dim=-1)",
                                                                       "dots = (q * k).sum(dim=-1) / d_k ** 0.5")),
          expect={"bonus_dot_variance": 0.0},
          why="the dot products divided by sqrt(d_k): their law is q·k/√d_k's, variance 1; nothing credited. It "
              "used to be asked whether they are one product q_m·k_m, too",
          says={"bonus_dot_variance": ["q·k / sqrt(d_k)"]},
          hints={"bonus_dot_variance": ["divided_by_sqrt_d_k"]}),
    Entry("w01-hint-variance-one-product", P01, edit(P01, "dot_variance", ("dots = (q * k).sum(dim=-1)",
                                                                           "dots = q[:, 0] * k[:, 0]")),
          expect={"bonus_dot_variance": 0.0},
          why="one product q_0·k_0 per pair: variance 1, the law of a product of two normals; nothing credited. It "
              "used to be asked whether the scores were divided by sqrt(d_k), too; now the variance is said",
          says={"bonus_dot_variance": ["not d_k"]}),
    Entry("w01-hint-variance-normal-wide", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    dots = torch.randn(n, generator=g) * (2 * d_k) ** 0.5   # (n,): a normal law of variance 2 d_k
    return dots, dots.var().item()
''')}, expect={"bonus_dot_variance": 0.0},
          why="dot products drawn from a normal law of variance 2 d_k, no q or k at all: at d_k = 2 they pass the "
              "test of a normal law (q·k's is Laplace there), at the wider widths, where q·k's law is nearly normal, "
              "that of q·k's law scaled: both are said, as measured. It used to be asked whether q and k have "
              "standard normal entries",
          says={"bonus_dot_variance": ["normal law"]},
          hints={"bonus_dot_variance": ["normal_law", "scaled_law"]}),

    # fit_exponent: the hints it gives are measured on the case (the slope the mistake gives is the answer's)
    Entry("w06-hint-fit-axes-swapped", P06, edit(P06, "fit_exponent", ("np.polyfit(log_T, log_time, 1)",
                                                                      "np.polyfit(log_time, log_T, 1)")),
          expect={"bonus_fit_exponent": 0.0},
          why="log T fitted against log time: the slope of the other regression, wrong on every data set",
          says={"bonus_fit_exponent": ["slope of log T against log time"]},
          hints={"bonus_fit_exponent": ["axes_swapped"]}),
    Entry("w06-hint-fit-mixed-bases", P06, edit(P06, "fit_exponent", ("log_T = np.log(", "log_T = np.log10(")),
          expect={"bonus_fit_exponent": 0.0},
          why="log10 of T, natural log of time: the slope times ln 10, wrong on every data set",
          says={"bonus_fit_exponent": ["mixed bases"]},
          hints={"bonus_fit_exponent": ["mixed_bases"]}),
]
