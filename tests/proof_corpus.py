"""The grader's proof corpus: submissions made from the solutions by editing answer cells.

Each entry replaces some answers of one notebook and says which grade cells must lose points
and exactly how many they keep (`expect`); every other autograded cell of that notebook must
keep full marks. Correct variants expect nothing: full marks everywhere. tests/test_grader_proof.py
grades the whole corpus through `make grade`'s code path and compares.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Entry:
    name: str                                   # corpus id, also the student id when graded
    notebook: str
    answers: dict                               # answer grade_id -> source that replaces the solution
    expect: dict = field(default_factory=dict)  # grade cell -> exact points it must get
    why: str = ""                               # the mistake, or why a different answer is still right

    @property
    def correct(self) -> bool:
        return not self.expect


def code(text: str) -> str:
    return text.strip("\n")


# ---- 01-on-paper -----------------------------------------------------------------------------

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
    return float(np.var(np.einsum("nd,nd->n", q, k)))
''')}, why="numpy's generator, einsum, the biased variance"),
]

WRONG = [
    Entry("w01-scores-shape", P01, {"shapes": code('''
def shapes(T, d, d_k, d_v):
    return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v), "Q": (T, d_k), "K": (T, d_k),
            "V": (T, d_v), "scores": (T, d_k), "A": (T, d_k), "out": (T, d_v)}
''')}, expect={"shapes_hidden": 0.0}, why="scores as (T, d_k): q·k confused with q"),
    Entry("w01-values-width", P01, {"shapes": code('''
def shapes(T, d, d_k, d_v):
    return {"X": (T, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_k), "Q": (T, d_k), "K": (T, d_k),
            "V": (T, d_k), "scores": (T, T), "A": (T, T), "out": (T, d_k)}
''')}, expect={"shapes_hidden": 0.67}, why="values assumed as wide as keys (d_v = d_k): "
     "right only in the case where they are equal"),
    Entry("w01-variance-elementwise", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(n, d_k, generator=g), torch.randn(n, d_k, generator=g)
    return (q * k).var().item()
''')}, expect={"dot_variance_hidden": 0.0},
          why="variance of the products q_m k_m, not of their sum"),
    Entry("w01-variance-formula", P01, {"dot_variance": code('''
def dot_variance(d_k, n, seed):
    return float(d_k)
''')}, expect={"dot_variance_hidden": 1.33}, why="the lemma's answer typed in, nothing sampled"),
]


# ---- 06-going-further (bonus) ----------------------------------------------------------------

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
]

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
''')}, expect={"bonus_online_softmax": 2.54}, why="running max started at 0, not -inf: very negative rows underflow"),
    Entry("w06-online-calls-softmax", P06, {"online_softmax": code('''
def online_softmax(scores):
    return torch.softmax(scores, dim=-1)
''')}, expect={"bonus_online_softmax": 2.31}, why="torch.softmax in one shot: right numbers, no streaming"),
    Entry("w06-fit-hard-coded", P06, {"fit_exponent": code('''
def fit_exponent(Ts, times):
    return 2.0
''')}, expect={"bonus_fit_exponent": 0.0}, why="the lecture's exponent typed in"),
    Entry("w06-fit-two-points", P06, {"fit_exponent": code('''
def fit_exponent(Ts, times):
    return math.log(times[-1] / times[0]) / math.log(Ts[-1] / Ts[0])
''')}, expect={"bonus_fit_exponent": 0.5}, why="slope through the end points, not least squares"),
    Entry("w06-gaps-typed-in", P06, {"permutation_gaps": code('''
def permutation_gaps(head, tok_emb, pos_emb, idx, perm):
    return 1e-7, 1e-7, 1e-7, 0.5
''')}, expect={"bonus_permutation_gaps": 0.0}, why="the handout's numbers typed in"),
]
