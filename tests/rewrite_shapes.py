'''Correct answers in the shapes students write them, by hand: for each graded answer, the same
function as its solution computed another way (loops, comprehensions, generator sums,
`itertools.product`, `zip`/`enumerate`, numpy or Python floats for the arithmetic, float64 computed
and cast back, another formula for the same number). tests/rewrites.py combines each with its
mechanical rewrites (helpers, names, aliases, keywords, comments, earlier attempts, a class, a
closure) and proves every one equivalent to the solution on inputs of its own (tests/behaviour.py)
before judging it.

SHAPES[answer] = {shape name: source}; a `# %% a cell of its own` line starts another cell.
'''
from __future__ import annotations


def code(text: str) -> str:
    return text.strip("\n") + "\n"


SHAPES: dict[str, dict[str, str]] = {}

SHAPES["shapes"] = {
    "dict() of keywords": code('''
def shapes(T, d, d_k, d_v):
    return dict(X=(T, d), W_Q=(d, d_k), W_K=(d, d_k), W_V=(d, d_v), Q=(T, d_k), K=(T, d_k), V=(T, d_v),
                scores=(T, T), A=(T, T), out=(T, d_v))
'''),
    "loop over a table": code('''
def shapes(T, d, d_k, d_v):
    table = [("X", [T, d]), ("W_Q", [d, d_k]), ("W_K", [d, d_k]), ("W_V", [d, d_v]),
             ("Q", [T, d_k]), ("K", [T, d_k]), ("V", [T, d_v]), ("scores", [T, T]), ("A", [T, T]),
             ("out", [T, d_v])]
    result = {}
    for name, dims in table:
        result[name] = tuple(dims)
    return result
'''),
    "shapes of real tensors": code('''
def shapes(T, d, d_k, d_v):
    X = torch.zeros(T, d)
    W_Q, W_K, W_V = torch.zeros(d, d_k), torch.zeros(d, d_k), torch.zeros(d, d_v)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V            # (T, d_k), (T, d_k), (T, d_v)
    scores = Q @ K.T                                # (T, T)
    A = torch.softmax(scores, dim=-1)               # (T, T)
    out = A @ V                                     # (T, d_v)
    named = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "Q": Q, "K": K, "V": V, "scores": scores, "A": A,
             "out": out}
    return {name: tuple(t.shape) for name, t in named.items()}
'''),
    "numpy arrays": code('''
import numpy as np

def shapes(T, d, d_k, d_v):
    X = np.ones((T, d))
    Q = X @ np.ones((d, d_k))
    V = X @ np.ones((d, d_v))
    A = Q @ Q.T
    return {"X": X.shape, "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v), "Q": Q.shape, "K": Q.shape,
            "V": V.shape, "scores": A.shape, "A": A.shape, "out": (A @ V).shape}
'''),
}

SHAPES["dot_variance"] = {
    "numpy arithmetic": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, d_k, generator=g).numpy()
    k = torch.randn(n, d_k, generator=g).numpy()
    dots = np.einsum("nd,nd->n", q, k)          # (n,)
    return torch.from_numpy(dots), float(np.var(dots, ddof=1))
'''),
    "float64 computed": code('''
def dot_variance(d_k, n, seed):
    gen = torch.Generator()
    gen.manual_seed(seed)
    q = torch.randn(n, d_k, generator=gen).double()
    k = torch.randn(n, d_k, generator=gen).double()
    dots = torch.einsum("nd,nd->n", q, k)
    mean = dots.mean()
    return dots.float(), (((dots - mean) ** 2).sum() / (n - 1)).item()
'''),
    "python floats": code('''
import statistics

def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, d_k, generator=g).tolist()
    k = torch.randn(n, d_k, generator=g).tolist()
    dots = [sum(a * b for a, b in zip(q_row, k_row)) for q_row, k_row in zip(q, k)]
    return torch.tensor(dots), statistics.variance(dots)
'''),
    "row by row": code('''
def dot_variance(d_k, n, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, d_k, generator=g)
    k = torch.randn(n, d_k, generator=g)
    dots = torch.stack([q[i] @ k[i] for i in range(n)])     # (n,)
    return dots, torch.var(dots).item()
'''),
}

SHAPES["scores_entrywise"] = {
    "batch and positions merged": code('''
def scores_entrywise(q, k):
    B, T, d = q.shape
    q_rows = q.reshape(B * T, d)                 # (B*T, d): every query of every sequence
    k_rows = k.reshape(B * T, d)                 # (B*T, d)
    scores = torch.zeros(B * T, T, dtype=q.dtype)
    for r in range(B * T):
        b = r // T                               # the sequence of row r
        for j in range(T):
            scores[r, j] = (q_rows[r] * k_rows[b * T + j]).sum()
    return scores.reshape(B, T, T)
'''),
    "comprehension": code('''
def scores_entrywise(q, k):
    B, T, _ = q.shape
    return torch.tensor([[[float((q[b, i] * k[b, j]).sum()) for j in range(T)] for i in range(T)]
                         for b in range(B)], dtype=q.dtype).reshape(B, T, T)
'''),
    "itertools.product": code('''
import itertools

def scores_entrywise(q, k):
    B, T, d = q.shape
    scores = q.new_zeros(B, T, T)
    for b, i, j in itertools.product(range(B), range(T), range(T)):
        scores[b, i, j] = torch.dot(q[b, i], k[b, j])
    return scores
'''),
    "zip and enumerate": code('''
def scores_entrywise(q, k):
    scores = torch.zeros(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
    for b, (q_seq, k_seq) in enumerate(zip(q, k)):
        for i, q_i in enumerate(q_seq):
            for j, k_j in enumerate(k_seq):
                scores[b, i, j] = (q_i * k_j).sum()
    return scores
'''),
    "generator sum of python floats": code('''
def scores_entrywise(q, k):
    B, T, d_head = q.shape
    qs, ks = q.tolist(), k.tolist()
    scores = torch.empty(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                scores[b, i, j] = sum(qs[b][i][c] * ks[b][j][c] for c in range(d_head))
    return scores
'''),
    "numpy entries": code('''
def scores_entrywise(q, k):
    qn, kn = q.detach().numpy(), k.detach().numpy()
    B, T, _ = qn.shape
    out = np.zeros((B, T, T), dtype=qn.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                out[b, i, j] = np.dot(qn[b, i], kn[b, j])
    return torch.from_numpy(out)
'''),
    "float64 entries cast back": code('''
def scores_entrywise(q, k):
    B, T, d_head = q.shape
    scores = torch.zeros(B, T, T, dtype=torch.float64)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                scores[b, i, j] = (q[b, i].double() * k[b, j].double()).sum()
    return scores.to(q.dtype)
'''),
}

SHAPES["count_params"] = {
    "counted on a real head": code('''
def count_params(d, d_head):
    head = Head(d, d_head, T_max=1)
    return sum(p.numel() for p in head.parameters() if p.requires_grad)
'''),
    "a loop over the matrices": code('''
def count_params(d, d_head):
    total = 0
    for matrix in ("query", "key", "value"):
        total += d_head * d          # one (d_head, d) weight, no bias
    return total
'''),
    "numpy product": code('''
def count_params(d, d_head):
    return int(np.prod([3, d, d_head]))
'''),
}

SHAPES["check_simplex"] = {
    "python loops over rows": code('''
def check_simplex(A):
    B, T, _ = A.shape
    assert (A >= 0).all(), "negative weight"
    for b in range(B):
        for i in range(T):
            total = A[b, i].sum().item()
            assert abs(total - 1) <= 1e-5, f"row {i} of sequence {b} sums to {total}"
            for j in range(i + 1, T):
                assert A[b, i, j] == 0, f"A[{b}, {i}, {j}] is in the future"
'''),
    "numpy": code('''
def check_simplex(A):
    a = A.detach().numpy()
    assert (a >= 0).all(), "a negative weight"
    assert np.abs(a.sum(axis=-1) - 1).max() <= 1e-5, "a row does not sum to 1"
    assert (np.triu(a, k=1) == 0).all(), "weight above the diagonal"
'''),
    "allclose and triu": code('''
def check_simplex(A):
    sums = A.sum(-1)
    assert torch.all(A >= 0)
    assert torch.allclose(sums, torch.ones_like(sums), rtol=0, atol=1e-5), "rows must sum to 1"
    upper = torch.triu(A, diagonal=1)
    assert torch.all(upper == 0), "the future is visible"
'''),
    "float64 row sums": code('''
def check_simplex(A):
    T = A.size(-1)
    if not bool((A >= 0).all()):
        raise AssertionError("negative")
    worst = (A.double().sum(dim=-1) - 1).abs().max()
    assert worst <= 1e-5
    assert not A[..., torch.ones(T, T).triu(1).bool()].any(), "future"
'''),
}

SHAPES["check_causality_perturbation"] = {
    "python all() over positions": code('''
def check_causality_perturbation(head, x, t):
    B, T, d = x.shape
    out = head(x)
    x2 = x.clone()
    x2[:, t, :] = torch.randn_like(x2[:, t, :])
    out2 = head(x2)
    assert all(torch.equal(out[b, s], out2[b, s]) for b in range(B) for s in range(t)), "the future leaks"
    for s in range(t, T):
        assert not torch.equal(out[:, s], out2[:, s]), f"position {s} did not change"
'''),
    "numpy comparisons": code('''
def check_causality_perturbation(head, x, t):
    before = head(x).detach().numpy()
    x_new = x.clone()
    x_new[:, t] = torch.randn_like(x[:, t])
    after = head(x_new).detach().numpy()
    assert np.array_equal(before[:, :t], after[:, :t]), "an earlier output changed"
    changed = [not np.array_equal(before[:, s], after[:, s]) for s in range(t, x.shape[1])]
    assert all(changed), "a later output did not change"
'''),
    "cat for the new token": code('''
def check_causality_perturbation(head, x, t):
    out = head(x)
    new_token = torch.randn_like(x[:, t:t + 1, :])                      # (B, 1, d)
    x_new = torch.cat([x[:, :t], new_token, x[:, t + 1:]], dim=1)      # (B, T, d)
    out_new = head(x_new)
    assert torch.equal(out[:, :t], out_new[:, :t])
    for s in range(t, x.size(1)):
        if torch.equal(out[:, s], out_new[:, s]):
            raise AssertionError(f"output {s} ignores token {t}")
'''),
}

SHAPES["check_causality_gradient"] = {
    "autograd.grad": code('''
def check_causality_gradient(head, x, i):
    x = x.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(head(x)[0, i].sum(), x)
    grad = grad[0]                                   # (T, d)
    assert (grad[i + 1:] == 0).all(), "the future leaks"
    assert all((grad[j] != 0).any() for j in range(i + 1)), "a past token does not matter"
'''),
    "one loop over positions": code('''
def check_causality_gradient(head, x, i):
    x = x.clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    for j in range(x.shape[1]):
        nonzero = bool((x.grad[0, j] != 0).any())
        if j > i:
            assert not nonzero, f"out[0, {i}] depends on the later token {j}"
        else:
            assert nonzero, f"out[0, {i}] ignores token {j}"
'''),
    "numpy gradient": code('''
def check_causality_gradient(head, x, i):
    leaf = x.clone()
    leaf.requires_grad = True
    out = head(leaf)
    out[0, i].sum().backward()
    g = leaf.grad[0].numpy()
    assert np.all(g[i + 1:] == 0), "future"
    zero = [j for j in range(i + 1) if not np.any(g[j] != 0)]
    assert len(zero) == 0, f"zero gradient at {zero}"
'''),
}

SHAPES["scale_table"] = {
    "comprehension over a helper": code('''
def scale_table(d_heads, seed):
    g = torch.Generator().manual_seed(seed)

    def row(d_k):
        q = torch.randn(4, 8, d_k, generator=g)
        k = torch.randn(4, 8, d_k, generator=g)
        raw = torch.einsum("btd,bsd->bts", q, k)            # (B, T, T)
        scaled = raw / d_k ** 0.5
        top_raw = torch.softmax(raw, -1).amax(-1)
        top_scaled = torch.softmax(scaled, -1).amax(-1)
        return dict(d_k=d_k, raw_std=raw.std().item(), sqrt_d_k=math.sqrt(d_k), scaled_std=scaled.std().item(),
                    max_weight_raw=top_raw.max().item(), max_weight_scaled=top_scaled.max().item(),
                    one_hot_raw=(top_raw >= 0.9995).float().mean().item(),
                    one_hot_scaled=(top_scaled >= 0.9995).float().mean().item(), q=q, k=k)

    return [row(d_k) for d_k in d_heads]
'''),
    "numpy statistics": code('''
def scale_table(d_heads, seed):
    g = torch.Generator().manual_seed(seed)
    table = []
    for d_k in d_heads:
        q = torch.randn(4, 8, d_k, generator=g)
        k = torch.randn(4, 8, d_k, generator=g)
        raw = (q @ k.transpose(1, 2))
        scaled = raw / math.sqrt(d_k)
        top_raw = F.softmax(raw, dim=-1).max(dim=-1).values.numpy()
        top_scaled = F.softmax(scaled, dim=-1).max(dim=-1).values.numpy()
        keys = ["d_k", "raw_std", "sqrt_d_k", "scaled_std", "max_weight_raw", "max_weight_scaled", "one_hot_raw",
                "one_hot_scaled", "q", "k"]
        values = [d_k, float(raw.numpy().std(ddof=1)), math.sqrt(d_k), float(scaled.numpy().std(ddof=1)),
                  float(top_raw.max()), float(top_scaled.max()), float(np.mean(top_raw >= 0.9995)),
                  float(np.mean(top_scaled >= 0.9995)), q, k]
        table.append(dict(zip(keys, values)))
    return table
'''),
    "float64 statistics": code('''
def scale_table(d_heads, seed):
    g = torch.Generator().manual_seed(seed)
    rows = []
    for d_k in d_heads:
        q = torch.randn(4, 8, d_k, generator=g)
        k = torch.randn(4, 8, d_k, generator=g)
        raw = q @ k.transpose(-2, -1)
        scaled = raw / math.sqrt(d_k)
        top_raw = F.softmax(raw, dim=-1).max(dim=-1).values
        top_scaled = F.softmax(scaled, dim=-1).max(dim=-1).values
        rows.append({"d_k": d_k, "raw_std": raw.double().std().item(), "sqrt_d_k": math.sqrt(d_k),
                     "scaled_std": scaled.double().std().item(), "max_weight_raw": top_raw.max().item(),
                     "max_weight_scaled": top_scaled.max().item(),
                     "one_hot_raw": (top_raw >= 0.9995).double().mean().item(),
                     "one_hot_scaled": (top_scaled >= 0.9995).double().mean().item(), "q": q, "k": k})
    return rows
'''),
}

SHAPES["mask_after_softmax_row_sums"] = {
    "numpy softmax": code('''
def mask_after_softmax_row_sums(scores):
    s = scores.detach().numpy()
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)                  # (B, T, T) normalised over all keys
    return torch.from_numpy(np.tril(w).sum(axis=-1))        # (B, T)
'''),
    "row by row": code('''
def mask_after_softmax_row_sums(scores):
    B, T, _ = scores.shape
    sums = torch.zeros(B, T, dtype=scores.dtype)
    for b in range(B):
        for i in range(T):
            sums[b, i] = torch.softmax(scores[b, i], dim=0)[: i + 1].sum()
    return sums
'''),
    "masked_fill after softmax": code('''
def mask_after_softmax_row_sums(scores):
    T = scores.size(-1)
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    return scores.softmax(-1).masked_fill(future, 0.0).sum(-1)
'''),
    "float64 cast back": code('''
def mask_after_softmax_row_sums(scores):
    T = scores.shape[-1]
    A = F.softmax(scores.double(), dim=-1) * torch.tril(torch.ones(T, T, dtype=torch.float64))
    return A.sum(dim=-1).to(scores.dtype)
'''),
}

SHAPES["fails_on_mask_after_softmax"] = {
    "set() of a list": code('''
FAILS_ON_MASK_AFTER_SOFTMAX = set(["check_causality_gradient", "check_simplex", "check_causality_perturbation"])
'''),
    "built up": code('''
FAILS_ON_MASK_AFTER_SOFTMAX = set()
for check_name in ("check_simplex", "check_causality_perturbation", "check_causality_gradient"):
    FAILS_ON_MASK_AFTER_SOFTMAX.add(check_name)
'''),
    "a comprehension": code('''
checks_tried = {"check_simplex": True, "check_causality_perturbation": True, "check_causality_gradient": True}
FAILS_ON_MASK_AFTER_SOFTMAX = {name for name, fails in checks_tried.items() if fails}
'''),
}

SHAPES["attention_on_text"] = {
    "weights read directly": code('''
def attention_on_text(seed):
    torch.manual_seed(seed)
    tok_emb, pos_emb = nn.Embedding(V, 32), nn.Embedding(64, 32)
    head = Head(32, 16, T_max=64)
    idx = torch.tensor([encode(text[:64])])             # (1, 64)
    x = tok_emb(idx) + pos_emb.weight[:64]              # (1, 64, 32)
    with torch.no_grad():
        head(x)
    return head.A.squeeze(0)
'''),
    "the weights recomputed": code('''
def attention_on_text(seed):
    T, d, d_head = 64, 32, 16
    torch.manual_seed(seed)
    tok_emb = nn.Embedding(V, d)
    pos_emb = nn.Embedding(T, d)
    head = Head(d, d_head, T_max=T)
    ids = torch.tensor(encode(text[:T])).unsqueeze(0)
    x = tok_emb(ids) + pos_emb(torch.arange(T)).unsqueeze(0)
    q, k = head.query(x), head.key(x)                       # (1, T, d_head)
    scores = q @ k.transpose(-2, -1) / d_head ** 0.5        # (1, T, T)
    scores = scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
    return F.softmax(scores, dim=-1)[0].detach()
'''),
}

SHAPES["top_key_shares"] = {
    "python loops": code('''
def top_key_shares(A):
    rows = A.tolist()
    on_diagonal = on_first = 0
    for i in range(1, len(rows)):
        top = max(range(len(rows[i])), key=rows[i].__getitem__)      # the first largest weight of row i
        on_diagonal += top == i
        on_first += top == 0
    return on_diagonal / (len(rows) - 1), on_first / (len(rows) - 1)
'''),
    "numpy": code('''
def top_key_shares(A):
    a = A.detach().numpy()
    top = a[1:].argmax(axis=1)                        # (T-1,)
    return float(np.mean(top == np.arange(1, a.shape[0]))), float(np.mean(top == 0))
'''),
    "comprehension over zip": code('''
def top_key_shares(A):
    tops = [int(row.argmax()) for row in A[1:]]
    diagonal = sum(top == i for i, top in zip(range(1, A.shape[0]), tops))
    first = sum(top == 0 for top in tops)
    return diagonal / len(tops), first / len(tops)
'''),
    "float64 torch": code('''
def top_key_shares(A):
    top = A.double()[1:].max(dim=1).indices           # (T-1,)
    rows = torch.arange(1, A.size(0))
    return torch.eq(top, rows).double().mean().item(), top.eq(0).double().mean().item()
'''),
}

SHAPES["smoothing_attention"] = {
    "python loops": code('''
def smoothing_attention(T, s):
    scores = torch.full((T, T), float("-inf"))
    for i in range(T):
        for j in range(i + 1):
            scores[i, j] = -(i - j) ** 2 / (2 * s ** 2)
    return torch.softmax(scores, dim=-1)
'''),
    "numpy float64 cast back": code('''
def smoothing_attention(T, s):
    i = np.arange(T, dtype=np.float64)
    scores = -np.subtract.outer(i, i) ** 2 / (2 * s ** 2)
    scores[np.triu_indices(T, k=1)] = -np.inf
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    return torch.tensor(w / w.sum(axis=1, keepdims=True), dtype=torch.float32)
'''),
    "exp and sum": code('''
def smoothing_attention(T, s):
    pos = torch.arange(T).float()
    diff = pos.unsqueeze(1) - pos.unsqueeze(0)            # (T, T): i - j
    scores = -(diff ** 2) / (2 * s * s)
    scores = torch.where(diff >= 0, scores, torch.tensor(float("-inf")))
    w = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    return w / w.sum(dim=-1, keepdim=True)
'''),
}

SHAPES["permutation_gaps"] = {
    "gap inlined": code('''
def permutation_gaps(head, tok_emb, pos_emb, idx, perm):
    T = idx.shape[1]
    P = pos_emb(torch.arange(T))
    x = tok_emb(idx)
    rows = (head(x[:, perm]) - head(x)[:, perm]).abs().max().item()
    rows_pos = (head((x + P)[:, perm]) - head(x + P)[:, perm]).abs().max().item()
    tokens = (head(tok_emb(idx[:, perm])) - head(tok_emb(idx))[:, perm]).abs().max().item()
    tokens_pos = (head(tok_emb(idx[:, perm]) + P) - head(tok_emb(idx) + P)[:, perm]).abs().max().item()
    return rows, rows_pos, tokens, tokens_pos
'''),
    "a loop over the experiments": code('''
def permutation_gaps(head, tok_emb, pos_emb, idx, perm):
    P = pos_emb.weight[: idx.size(1)]                       # (T, d) = pos_emb(arange(T))
    x = tok_emb(idx)
    experiments = [
        (x.index_select(1, perm), x),
        ((x + P).index_select(1, perm), x + P),
        (tok_emb(idx[:, perm]), tok_emb(idx)),
        (tok_emb(idx[:, perm]) + P, tok_emb(idx) + P),
    ]
    gaps = []
    for permuted, original in experiments:
        gaps.append(float(torch.max(torch.abs(head(permuted) - head(original)[:, perm]))))
    return tuple(gaps)
'''),
    "numpy gaps": code('''
def permutation_gaps(head, tok_emb, pos_emb, idx, perm):
    T = idx.shape[1]
    P = pos_emb(torch.arange(T))

    def gap(a, b):
        return float(np.abs(a.detach().numpy() - b.detach().numpy()).max())

    with torch.no_grad():
        x = tok_emb(idx)
        return (gap(head(x[:, perm]), head(x)[:, perm]),
                gap(head((x + P)[:, perm]), head(x + P)[:, perm]),
                gap(head(tok_emb(idx[:, perm])), head(tok_emb(idx))[:, perm]),
                gap(head(tok_emb(idx[:, perm]) + P), head(tok_emb(idx) + P)[:, perm]))
'''),
}

SHAPES["online_softmax"] = {
    "enumerate over the keys": code('''
def online_softmax(scores):
    running_max = torch.full_like(scores[..., 0], float("-inf"))
    running_sum = torch.zeros_like(scores[..., 0])
    for j, s_j in enumerate(scores.unbind(-1)):
        new_max = torch.maximum(running_max, s_j)
        shift = torch.where(torch.isinf(new_max) & (new_max < 0), torch.zeros_like(new_max), new_max)
        running_sum = running_sum * torch.exp(running_max - shift) + torch.exp(s_j - shift)
        running_max = new_max
    shift = torch.where(torch.isinf(running_max) & (running_max < 0), torch.zeros_like(running_max), running_max)
    return torch.exp(scores - shift.unsqueeze(-1)) / running_sum.unsqueeze(-1)
'''),
    "numpy running values": code('''
def online_softmax(scores):
    s = scores.detach().numpy()
    m = np.full(s.shape[:-1], -np.inf, dtype=s.dtype)
    total = np.zeros(s.shape[:-1], dtype=s.dtype)
    with np.errstate(invalid="ignore"):
        for j in range(s.shape[-1]):
            new_m = np.maximum(m, s[..., j])
            shift = np.where(new_m == -np.inf, 0, new_m).astype(s.dtype)
            total = total * np.exp(m - shift) + np.exp(s[..., j] - shift)
            m = new_m
        shift = np.where(m == -np.inf, 0, m).astype(s.dtype)
        return torch.from_numpy(np.exp(s - shift[..., None]) / total[..., None])
'''),
    "float64 cast back": code('''
def online_softmax(scores):
    s = scores.double()
    running_max = torch.full(s.shape[:-1], float("-inf"), dtype=torch.float64)
    running_sum = torch.zeros(s.shape[:-1], dtype=torch.float64)
    for j in range(s.shape[-1]):
        new_max = torch.maximum(running_max, s[..., j])
        shift = torch.where(new_max == float("-inf"), 0.0, new_max)
        running_sum = running_sum * torch.exp(running_max - shift) + torch.exp(s[..., j] - shift)
        running_max = new_max
    shift = torch.where(running_max == float("-inf"), 0.0, running_max)
    return (torch.exp(s - shift[..., None]) / running_sum[..., None]).to(scores.dtype)
'''),
}

SHAPES["streaming_attention"] = {
    "zip over keys and values": code('''
def streaming_attention(q, k, v):
    T, d_k = q.shape[-2], q.shape[-1]
    m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    l = torch.zeros(q.shape[:-1], dtype=q.dtype)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    positions = torch.arange(T)
    for j, (k_j, v_j) in enumerate(zip(k.unbind(-2), v.unbind(-2))):
        s_j = (q * k_j.unsqueeze(-2)).sum(-1) / math.sqrt(d_k)        # (..., T)
        s_j = torch.where(positions >= j, s_j, torch.tensor(float("-inf"), dtype=q.dtype))
        m_new = torch.maximum(m, s_j)
        scale, w = torch.exp(m - m_new), torch.exp(s_j - m_new)
        l = l * scale + w
        acc = acc * scale.unsqueeze(-1) + w.unsqueeze(-1) * v_j.unsqueeze(-2)
        m = m_new
    return acc / l.unsqueeze(-1)
'''),
    "einsum per key": code('''
def streaming_attention(q, k, v):
    T, d_k = q.shape[-2:]
    running_max = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    running_sum = torch.zeros_like(running_max)
    running_out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j in range(T):
        s_j = torch.einsum("...td,...d->...t", q, k[..., j, :]) / d_k ** 0.5
        s_j[..., :j] = float("-inf")                     # queries before j may not see key j
        new_max = torch.maximum(running_max, s_j)
        scale = torch.exp(running_max - new_max)
        weight = torch.exp(s_j - new_max)
        running_sum = running_sum * scale + weight
        running_out = running_out * scale[..., None] + weight[..., None] * v[..., j, None, :]
        running_max = new_max
    return running_out / running_sum[..., None]
'''),
    "float64 cast back": code('''
def streaming_attention(q, k, v):
    q64, k64, v64 = q.double(), k.double(), v.double()
    T, d_k = q.shape[-2], q.shape[-1]
    running_max = torch.full(q.shape[:-1], float("-inf"), dtype=torch.float64)
    running_sum = torch.zeros(q.shape[:-1], dtype=torch.float64)
    running_out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=torch.float64)
    for j in range(T):
        s_j = (q64 @ k64[..., j, :, None]).squeeze(-1) / math.sqrt(d_k)
        s_j = s_j.masked_fill(torch.arange(T) < j, float("-inf"))
        new_max = torch.maximum(running_max, s_j)
        scale = torch.exp(running_max - new_max)
        weight = torch.exp(s_j - new_max)
        running_sum = running_sum * scale + weight
        running_out = running_out * scale[..., None] + weight[..., None] * v64[..., j, None, :]
        running_max = new_max
    return (running_out / running_sum[..., None]).to(q.dtype)
'''),
    "loop body in a helper of a later cell": code('''
def streaming_attention(q, k, v):
    T, d_k = q.shape[-2], q.shape[-1]
    state = (torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype), torch.zeros(q.shape[:-1], dtype=q.dtype),
             torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype))
    for j in range(T):
        state = visit_key(state, q, k[..., j, :], v[..., j, :], j, d_k)
    running_max, running_sum, running_out = state
    return running_out / running_sum[..., None]
# %% a cell of its own
def visit_key(state, q, k_j, v_j, j, d_k):
    """One key's update of the running max, sum and output of every query."""
    running_max, running_sum, running_out = state
    s_j = (q @ k_j[..., :, None]).squeeze(-1) / d_k ** 0.5
    s_j = s_j.masked_fill(torch.arange(q.shape[-2]) < j, float("-inf"))
    new_max = torch.maximum(running_max, s_j)
    scale = torch.exp(running_max - new_max)
    weight = torch.exp(s_j - new_max)
    return new_max, running_sum * scale + weight, running_out * scale[..., None] + weight[..., None] * v_j[..., None, :]
'''),
}

SHAPES["fit_exponent"] = {
    "closed form in python floats": code('''
def fit_exponent(Ts, times):
    xs = [math.log(T) for T in Ts]
    ys = [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
'''),
    "lstsq": code('''
def fit_exponent(Ts, times):
    x = np.log(np.array(Ts, dtype=np.float64))
    y = np.log(np.array(times, dtype=np.float64))
    design = np.stack([x, np.ones_like(x)], axis=1)      # (n, 2)
    (slope, _), *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(slope)
'''),
    "torch float64": code('''
def fit_exponent(Ts, times):
    x = torch.log(torch.as_tensor(Ts, dtype=torch.float64))
    y = torch.log(torch.as_tensor(times, dtype=torch.float64))
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc ** 2).sum())
'''),
}
