"""Mutants of the graded answers that are not to be killed (tests/mutants.py), each with its reason.

EQUIVALENT: mutant id -> why it behaves like the solution on every valid input. Each must keep full
marks on its hidden test (a judge that took points from one would fail a correct answer).
SURVIVING: mutant id -> why the hidden test cannot tell it from the solution although it is not
equivalent (what it would take). Every other mutant must lose points.
REWRITE_SURVIVING: the same, for mutants of the rewrites of tests/rewrites.py (make rewrites)."""

EQUIVALENT: dict[str, str] = {
    # number - 1: return head.A[(-1)]
    'attention_on_text:5878e72823': 'the batch holds one sequence: A[-1] is A[0]',
    # sign flipped: -head(x)
    'attention_on_text:8ed8775387': "the statement's value is discarded; head(x) runs the same",
    # mutmut number: head = Head(32, 16, T_max=65)
    'attention_on_text:ff3713240f': 'T_max sizes only the mask buffer, which is not random: the layers get the same random numbers',
    # sign flipped: out = head(-x)
    'check_causality_gradient:3576cdddd2': 'causality is a property for every x: the head at -x (another input of the same distribution) shows the same zeros and nonzeros of the gradient',
    # sign flipped: assert (-grad[i + 1:] == 0).all(), (
    'check_causality_gradient:41b5c9a594': 'a negated gradient is zero exactly where the gradient is',
    # sign flipped: grad = -x.grad[0]
    'check_causality_gradient:590792ee72': 'a negated gradient is zero exactly where the gradient is',
    # sign flipped: zero = [j for j in range(i + 1) if not (-grad[j] != 0).any()]
    'check_causality_gradient:73dad83ce0': 'a negated gradient is zero exactly where the gradient is',
    # sign flipped: out = -head(x)
    'check_causality_gradient:b63d3405b3': 'a negated gradient is zero exactly where the gradient is',
    # sign flipped: x_new[:, t, :] = -torch.randn_like(x_new[:, t, :])
    'check_causality_perturbation:2310d3c60d': 'a new token drawn from -N(0, 1) = N(0, 1): the same perturbation in distribution',
    # sign flipped: assert not -torch.equal(out[:, s], out_new[:, s]), (
    'check_causality_perturbation:3e413ff58b': '-True is truthy and -False falsy: the assert asserts the same',
    # arguments swapped: assert not torch.equal(out_new[:, s], out[:, s]), (
    'check_causality_perturbation:42daad885b': 'torch.equal is symmetric',
    # sign flipped: assert -torch.equal(out[:, :t], out_new[:, :t]), (
    'check_causality_perturbation:530adfe800': '-True is truthy and -False falsy: the assert asserts the same',
    # fixed to the visible size: x_new[:, t, :] = torch.randn_like(x_new[:, 5, :])
    'check_causality_perturbation:9877acf032': 'randn_like reads only the shape and dtype of its argument, the same for every slice and for -x',
    # sign flipped: x_new[:, t, :] = torch.randn_like(x_new[:, -t, :])
    'check_causality_perturbation:9e1e520a70': 'randn_like reads only the shape and dtype of its argument, the same for every slice and for -x',
    # arguments swapped: assert torch.equal(out_new[:, :t], out[:, :t]), (
    'check_causality_perturbation:d8037458d3': 'torch.equal is symmetric',
    # sign flipped: x_new[:, t, :] = torch.randn_like(-x_new[:, t, :])
    'check_causality_perturbation:ed928bcdc2': 'randn_like reads only the shape and dtype of its argument, the same for every slice and for -x',
    # mutmut number: T = A.shape[-2]
    'check_simplex:0ab725a4a4': 'A is (B, T, T): its last two axes (and axis 1) are both T',
    # mutmut swap_op: T = A.shape[+1]
    'check_simplex:5e7bf9807c': 'A is (B, T, T): its last two axes (and axis 1) are both T',
    # operands swapped: worst = (1 - row_sums).abs().max().item()
    'check_simplex:8076ff81c0': '|1 - s| = |s - 1|',
    # constant halved: assert worst <= 5e-06, f"rows of A sum to between {row_sums.min().item():.6f} and {row_sum
    'check_simplex:ac55467d98': 'a float32 attention row sums to 1 within 2.4e-7 (T = 64), a broken one is off by 1e-4 or more: every tolerance between about 1e-6 and 1e-4 (and < or <=) tells them apart; the spec asks for a float32 tolerance, not for 1e-5 exactly',
    # sign flipped: assert (-A[:, future] == 0).all(), (
    'check_simplex:f4f2224d2a': '-a == 0 exactly when a == 0 (NaN fails both)',
    # mutmut swap_op: assert worst < 1e-5, f"rows of A sum to between {row_sums.min().item():.6f} and {row_sums.
    'check_simplex:f558419128': 'a float32 attention row sums to 1 within 2.4e-7 (T = 64), a broken one is off by 1e-4 or more: every tolerance between about 1e-6 and 1e-4 (and < or <=) tells them apart; the spec asks for a float32 tolerance, not for 1e-5 exactly',
    # mutmut swap_op: dots = (q * k).sum(dim=+1)
    'dot_variance:597b1ed38d': 'q * k is (n, d_k): dim=1 is dim=-1',
    # sign flipped: dots = -(q * k).sum(dim=-1)
    'dot_variance:7dc02e3cc1': "the law of q·k is symmetric about 0: -q·k has the same law (the judge's test of the dot products sees no difference) and Var(-X) = Var(X)",
    # sign flipped: k = -torch.randn(n, d_k, generator=g)
    'dot_variance:a28a11a146': 'N(0, 1) is symmetric: -randn draws from the same distribution, so the dot products have the law the spec asks for',
    # sign flipped: g = torch.Generator().manual_seed(-seed)
    'dot_variance:3f2163b693': 'the spec asks for samples drawn from a generator seeded with `seed`, not for one stream: another seed derived from it one to one gives other but equally valid samples (the judge tests the samples and that the same seed gives the same ones, another seed others)',
    # sign flipped: q = -torch.randn(n, d_k, generator=g)
    'dot_variance:1582b807b9': 'N(0, 1) is symmetric: -randn draws from the same distribution, so the dot products have the law the spec asks for',
    # mutmut arg_removal: log_T = np.log(np.asarray(Ts, dtype=None))
    'fit_exponent:3760fff152': 'np.log of an integer or float array is float64 either way: the same slope',
    # mutmut arg_removal: log_time = np.log(np.asarray(times, dtype=None))
    'fit_exponent:94851ed36c': 'np.log of an integer or float array is float64 either way: the same slope',
    # mutmut arg_removal: log_time = np.log(np.asarray(times, ))
    'fit_exponent:9a221ea7d7': 'np.log of an integer or float array is float64 either way: the same slope',
    # mutmut arg_removal: log_T = np.log(np.asarray(Ts, ))
    'fit_exponent:ad08b5762d': 'np.log of an integer or float array is float64 either way: the same slope',
    # mutmut number: T = scores.shape[-2]
    'mask_after_softmax_row_sums:6de3229bb1': 'scores are (B, T, T): axes 1, -2 and -1 are all T',
    # mutmut arg_removal: keep = torch.tril(torch.ones(T, T, ))
    'mask_after_softmax_row_sums:6e0dc6ed1c': "a float32 mask times float64 weights is float64: type promotion keeps the scores' dtype",
    # mutmut arg_removal: keep = torch.tril(torch.ones(T, T, dtype=None))
    'mask_after_softmax_row_sums:d0dc5df60f': "a float32 mask times float64 weights is float64: type promotion keeps the scores' dtype",
    # mutmut swap_op: T = scores.shape[+1]
    'mask_after_softmax_row_sums:f4372acf9e': 'scores are (B, T, T): axes 1, -2 and -1 are all T',
    # mutmut arg_removal: running_sum = torch.zeros(scores.shape[:-1], dtype=None)
    'online_softmax:07fc958377': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # mutmut arg_removal: running_max = torch.full(scores.shape[:-1], float('-inf'), )
    'online_softmax:10fd7c0c07': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # arguments swapped: new_max = torch.maximum(s_j, running_max)
    'online_softmax:3075bed2df': 'torch.maximum is symmetric (NaN included)',
    # number - 1: shift = torch.where(running_max == float('-inf'), (-1.0), running_max)
    'online_softmax:78a003c68f': 'the shift is used only while every key seen is -inf, when the running sum is 0 and exp(-inf - c) = 0 for any finite c: any finite shift gives the same weights',
    # number - 1: running_sum = torch.zeros(scores.shape[:-(0)], dtype=scores.dtype)
    'online_softmax:920f6f003a': "a running quantity of shape () (or (d_v,)) broadcasts to the rows' shape in its first update: the same values",
    # mutmut arg_removal: running_max = torch.full(scores.shape[:-1], float('-inf'), dtype=None)
    'online_softmax:96c9cae695': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # mutmut arg_removal: running_sum = torch.zeros(scores.shape[:-1], )
    'online_softmax:9cac0f07e4': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # mutmut string: shift = torch.where(running_max == float('-INF'), 0.0, running_max)
    'online_softmax:9d641bb2c9': "float('-INF') is float('-inf')",
    # mutmut string: running_max = torch.full(scores.shape[:-1], float('-INF'), dtype=scores.dtype)
    'online_softmax:9dbbd12e00': "float('-INF') is float('-inf')",
    # number - 1: running_max = torch.full(scores.shape[:-(0)], float('-inf'), dtype=scores.dtype)
    'online_softmax:a8cf208e81': "a running quantity of shape () (or (d_v,)) broadcasts to the rows' shape in its first update: the same values",
    # statement dropped: pass
    'online_softmax:b333833bdf': 'the final shift recomputes the value the last loop step left in `shift` (the same running max): dropping it changes nothing',
    # mutmut number: shift = torch.where(running_max == float('-inf'), 1.0, running_max)
    'online_softmax:be0288378d': 'the shift is used only while every key seen is -inf, when the running sum is 0 and exp(-inf - c) = 0 for any finite c: any finite shift gives the same weights',
    # mutmut number: shift = torch.where(new_max == float('-inf'), 1.0, new_max)
    'online_softmax:c79fd28453': 'the shift is used only while every key seen is -inf, when the running sum is 0 and exp(-inf - c) = 0 for any finite c: any finite shift gives the same weights',
    # mutmut string: shift = torch.where(new_max == float('-INF'), 0.0, new_max)
    'online_softmax:f158db9a2d': "float('-INF') is float('-inf')",
    # number - 1: shift = torch.where(new_max == float('-inf'), (-1.0), new_max)
    'online_softmax:f3e8ef96d1': 'the shift is used only while every key seen is -inf, when the running sum is 0 and exp(-inf - c) = 0 for any finite c: any finite shift gives the same weights',
    # mutmut swap_op: top = A[1:].argmax(dim=+1)
    'top_key_shares:347c3fa804': 'A is (T, T): dim=1 is dim=-1',
    # mutmut number: rows = torch.arange(1, A.shape[1])
    'top_key_shares:0f7e42efbe': 'A is square (T, T)',
    # number - 1: rows = torch.arange(1, A.shape[(-1)])
    'top_key_shares:0b5ff7f81f': 'A is square (T, T)',
    # mutmut swap_op: x_pos = x - P
    'permutation_gaps:392d5d695d': 'gaps 1 and 2 are at rounding level for every x (attention without a mask is equivariant), so -x or x - P give gaps as small; gaps 3 and 4 do not use x',
    # arguments swapped: tokens = gap(head(tok_emb(idx))[:, perm], head(tok_emb(idx[:, perm])))
    'permutation_gaps:65cfbc9dca': '|a - b| = |b - a|',
    # arguments swapped: tokens_pos = gap(head(tok_emb(idx) + P)[:, perm], head(tok_emb(idx[:, perm]) + P))
    'permutation_gaps:6dc41f2e67': '|a - b| = |b - a|',
    # sign flipped: x = -tok_emb(idx)
    'permutation_gaps:917578f42a': 'gaps 1 and 2 are at rounding level for every x (attention without a mask is equivariant), so -x or x - P give gaps as small; gaps 3 and 4 do not use x',
    # operands swapped: return (b - a).abs().max().item()
    'permutation_gaps:eb8cb12c1b': '|a - b| = |b - a|',
    # arguments swapped: rows_pos = gap(head(x_pos)[:, perm], head(x_pos[:, perm]))
    'permutation_gaps:f349a13025': '|a - b| = |b - a|',
    # arguments swapped: rows = gap(head(x)[:, perm], head(x[:, perm]))
    'permutation_gaps:f5a5335f4e': '|a - b| = |b - a|',
    # mutmut swap_op: top_scaled = F.softmax(scaled, dim=-1).max(dim=+1).values
    'scale_table:2d33c8f066': 'the largest weight overall is the same over any axis, and no scaled row reaches 0.9995: scaled scores have std 1, and a weight of 0.9995 over 8 keys needs a score gap of 7.6 (over 5 standard deviations of a difference), about 1e-7 per row: one_hot_scaled is 0 either way',
    # sign flipped: g = torch.Generator().manual_seed(-seed)
    'scale_table:f3815e086a': 'the spec asks for samples drawn from a generator seeded with `seed`, not for one stream: another seed derived from it one to one gives other but equally valid samples (the judge tests the samples, the statistics as theirs, and that the same seed gives the same ones)',
    # sign flipped: "one_hot_scaled": -(top_scaled >= 0.9995).float().mean().item(),
    'scale_table:c087af55bd': 'no scaled row reaches 0.9995 (see above): one_hot_scaled is 0 (or -0.0) either way',
    # mutmut number: top_scaled = F.softmax(scaled, dim=-1).max(dim=-2).values
    'scale_table:9cb7214ceb': 'the largest weight overall is the same over any axis, and no scaled row reaches 0.9995: scaled scores have std 1, and a weight of 0.9995 over 8 keys needs a score gap of 7.6 (over 5 standard deviations of a difference), about 1e-7 per row: one_hot_scaled is 0 either way',
    # sign flipped: q = -torch.randn(4, 8, d_k, generator=g)
    'scale_table:1f8f1ff7fb': 'N(0, 1) is symmetric: -randn draws from the same distribution, so q and k are samples the spec allows and the statistics are theirs',
    # number - 1: top_scaled = F.softmax(scaled, dim=-1).max(dim=-(0)).values
    'scale_table:f790006a6b': 'the largest weight overall is the same over any axis, and no scaled row reaches 0.9995: scaled scores have std 1, and a weight of 0.9995 over 8 keys needs a score gap of 7.6 (over 5 standard deviations of a difference), about 1e-7 per row: one_hot_scaled is 0 either way',
    # mutmut swap_op: "one_hot_scaled": (top_scaled > 0.9995).float().mean().item(),
    'scale_table:46bcae7611': 'a float32 weight exactly equal to float32(0.9995) has a probability of about 1e-7 per row: > and >= count the same rows',
    # arguments swapped: raw = q @ k.transpose(-1, -2)
    'scale_table:2f7e77ac23': 'transpose(-1, -2) is transpose(-2, -1)',
    # mutmut number: "one_hot_scaled": (top_scaled >= 1.9995).float().mean().item(),
    'scale_table:850e6fd30f': 'no scaled row reaches 0.9995 (see above): one_hot_scaled is 0 (or -0.0) either way',
    # mutmut swap_op: "one_hot_raw": (top_raw > 0.9995).float().mean().item(),
    'scale_table:bfc9e8825e': 'a float32 weight exactly equal to float32(0.9995) has a probability of about 1e-7 per row: > and >= count the same rows',
    # sign flipped: k = -torch.randn(4, 8, d_k, generator=g)
    'scale_table:586e44b2a5': 'N(0, 1) is symmetric: -randn draws from the same distribution, so q and k are samples the spec allows and the statistics are theirs',
    # mutmut arg_removal: i = torch.arange(T, )
    'smoothing_attention:016f106d55': 'an integer arange divided by a float is float32: the same scores',
    # mutmut swap_op: return torch.softmax(scores, dim=+1)
    'smoothing_attention:3a9e8ca1d6': 'the scores are (T, T): dim=1 is dim=-1',
    # operands swapped: scores = -(i[None, :] - i[:, None]) ** 2 / (2 * s ** 2)
    'smoothing_attention:5e1eadbe7e': '(j - i)^2 = (i - j)^2',
    # mutmut string: scores = scores.masked_fill(future, float('-INF'))
    'smoothing_attention:b1e75f9f8c': "float('-INF') is float('-inf')",
    # mutmut arg_removal: i = torch.arange(T, dtype=None)
    'smoothing_attention:effe1409ab': 'an integer arange divided by a float is float32: the same scores',
    # mutmut arg_removal: running_out = torch.zeros(*q.shape[:-1], v.shape[-1], )
    'streaming_attention:00d5e1d9a6': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # number - 1: running_sum = torch.zeros(q.shape[:-(0)], dtype=q.dtype)
    'streaming_attention:02a9aca2c1': "a running quantity of shape () (or (d_v,)) broadcasts to the rows' shape in its first update: the same values",
    # number - 1: running_max = torch.full(q.shape[:-(0)], float('-inf'), dtype=q.dtype)
    'streaming_attention:060e943452': "a running quantity of shape () (or (d_v,)) broadcasts to the rows' shape in its first update: the same values",
    # mutmut string: running_max = torch.full(q.shape[:-1], float('-INF'), dtype=q.dtype)
    'streaming_attention:2e4e892a97': "float('-INF') is float('-inf')",
    # mutmut arg_removal: running_sum = torch.zeros(q.shape[:-1], dtype=None)
    'streaming_attention:4e390e9e8f': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # mutmut arg_removal: running_max = torch.full(q.shape[:-1], float('-inf'), dtype=None)
    'streaming_attention:762b20aaec': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # number - 1: running_out = torch.zeros(*q.shape[:-(0)], v.shape[-1], dtype=q.dtype)
    'streaming_attention:81e5675ce8': "a running quantity of shape () (or (d_v,)) broadcasts to the rows' shape in its first update: the same values",
    # sign flipped: weight = -torch.exp(s_j - new_max)
    'streaming_attention:8fd024d339': 'the running sum and the running output are both negated: their ratio is the same',
    # mutmut arg_removal: running_out = torch.zeros(v.shape[-1], dtype=q.dtype)
    'streaming_attention:90d0c632e9': "a running quantity of shape () (or (d_v,)) broadcasts to the rows' shape in its first update: the same values",
    # arguments swapped: new_max = torch.maximum(s_j, running_max)
    'streaming_attention:a72573fd4d': 'torch.maximum is symmetric (NaN included)',
    # mutmut arg_removal: running_out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=None)
    'streaming_attention:c220908ee8': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # mutmut arg_removal: running_sum = torch.zeros(q.shape[:-1], )
    'streaming_attention:c55941577f': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # mutmut arg_removal: running_max = torch.full(q.shape[:-1], float('-inf'), )
    'streaming_attention:c9104793fa': 'a float32 running quantity meets float64 tensors of the same rank in its first update, and type promotion makes it float64 before any rounding: the same values',
    # mutmut string: s_j = s_j.masked_fill(query_pos < j, float('-INF'))
    'streaming_attention:e5401753f6': "float('-INF') is float('-inf')",
}

SURVIVING: dict[str, str] = {
}

# Mutants of the rewrites of tests/rewrites.py (ids as above: the answer and the mutant's source) that the
# hidden test cannot tell from the rewrite although they behave otherwise, with what it would take. A mutant
# of a rewrite that behaves as a mutant of the solution listed above takes that mutant's standing.
REWRITE_SURVIVING: dict[str, str] = {
    # return T.from_numpy(my_dots), float(onp.var(my_dots, )): numpy's var has ddof=0
    'dot_variance:0267d85228': "the spec's 'sample variance' is either estimator: the judge takes the variance with n or n - 1 in the denominator (or the mean of the squares), as the visible check does; each is the statistic of the dots returned",
    # return T.from_numpy(my_dots), float(onp.var(my_dots, ddof=(0)))
    'dot_variance:fce5a7e74b': "the spec's 'sample variance' is either estimator: the judge takes the variance with n or n - 1 in the denominator (or the mean of the squares), as the visible check does; each is the statistic of the dots returned",
    # ... .sum() / (n_pairs - (0)): the variance with n in the denominator
    'dot_variance:1a29794f09': "the spec's 'sample variance' is either estimator: the judge takes the variance with n or n - 1 in the denominator (or the mean of the squares), as the visible check does; each is the statistic of the dots returned",
    # number - 1 on line 22: the scaled scores' std(ddof=1) -> std(ddof=(0))
    'scale_table:4ead62f483': "the spec's 'standard deviation' is either estimator: the judge takes the std with n or n - 1 in the denominator, as the visible check does; each is the statistic of the q and k returned",
    # number - 1 on line 22: the raw scores' std(ddof=1) -> std(ddof=(0))
    'scale_table:c1a91b3da1': "the spec's 'standard deviation' is either estimator: the judge takes the std with n or n - 1 in the denominator, as the visible check does; each is the statistic of the q and k returned",
}
