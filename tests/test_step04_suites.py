"""Every wheat satisfies the spec of its check and every chaff violates it.

The reference checks in source/step-04/checks/tests.py are the notebook's specs, executed.
They are run here exactly as the hidden tests run a student's check (same inputs, same seeds):
a wheat must pass at every position probed, a chaff must fail at one of them at least.

A student check's verdict is told in the suite's own order, whatever order the cases were served in: one
submission's feedback, and where a long one is cut, is the same every grading.

The reference checks made to skip one place (a row, a sequence, a position, a band of the future, some
coordinates or features, a token reordered instead of redrawn) each miss a case of a family (families.py: the
same fault at each place in turn): a family is one part of the verdict, lost when any one of its cases is
missed, and the feedback names that case; each family meets one twin beside its first case's.

The scale check's fixed tables are tested here too: they hold the rows their seeds were chosen for (one-hot at
sqrt(32), float32 exp's overflow), and the probe's data stays within what one probe may gather.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from autograder.checks.framework import attempt, outcome
from autograder.example import answers_of
from autograder.runtime.plain import MAX_ITEMS, to_plain
from conftest import STEP4

STEP4.package   # imports the step's checks: course_checks.step_04
from course_checks.step_04.tests import (  # noqa: E402
    CALL_SEED, ONE_HOT, ONE_HOT_BAND, REFERENCE_CHECKS, CheckGradient, CheckPerturbation, CheckSimplex, ScaleTable,
    OFFSETS, exp_offset_tops, exp_overflow_top, fails_on_mask_after_softmax, wide_scores)
from course_checks.step_04.suites import SUITES  # noqa: E402

GRADERS = [CheckSimplex(), CheckPerturbation(), CheckGradient()]
CASES = [(grader, case) for grader in GRADERS for case in SUITES[grader.suite]]


@pytest.mark.parametrize("grader,case", CASES, ids=[f"{g.suite}-{c.name}" for g, c in CASES])
def test_case_is_what_it_claims(grader, case):
    check = REFERENCE_CHECKS[grader.function]
    obj = case.build()
    outcomes = []
    for p in grader.params_of(case):
        args = grader.arguments(obj, p)
        torch.manual_seed(CALL_SEED + (p or 0))
        outcomes.append(outcome(check, *args))
    assert not any(o.startswith("crashed") for o in outcomes), outcomes
    if case.kind == "wheat":
        assert all(o == "returned" for o in outcomes), f"{case.description}: {outcomes}"
    else:
        assert any(o.startswith("assertion") for o in outcomes), f"{case.description}: {outcomes}"


def test_every_suite_has_wheats_and_chaffs():
    for name in ("simplex", "causal_perturbation", "causal_gradient"):
        kinds = {case.kind for case in SUITES[name]}
        assert kinds == {"wheat", "chaff"}, name
        assert len({case.name for case in SUITES[name]}) == len(SUITES[name]), name


def test_masking_after_softmax_fails_all_three_checks():
    assert fails_on_mask_after_softmax() == set(REFERENCE_CHECKS)


# The reference checks made wrong at a boundary of the range they compare (off by one at the first or
# the last position): each must miss a broken head of its suite, so it loses points. `only`: the broken heads
# (parts: a family by its first case) that catch the mistake, where no other does (before the first of them
# the check had full marks; the families of families.py put the same fault at that place too).
BOUNDARY = [
    ("check_causality_perturbation", "past-skips-last", "out[:, :t], out2[:, :t]", "out[:, :t - 1], out2[:, :t - 1]",
     None),
    ("check_causality_perturbation", "past-skips-first", "out[:, :t], out2[:, :t]", "out[:, 1:t], out2[:, 1:t]", None),
    ("check_causality_perturbation", "present-skips-t", "range(t, x.shape[1])", "range(t + 1, x.shape[1])", None),
    ("check_causality_perturbation", "present-skips-last", "range(t, x.shape[1])", "range(t, x.shape[1] - 1)",
     ("last_row_self_only", "middle_row_self_only")),
    ("check_causality_gradient", "future-skips-next", "g[i + 1:] == 0", "g[i + 2:] == 0", None),
    ("check_causality_gradient", "future-skips-last", "g[i + 1:] == 0", "g[i + 1:-1] == 0", None),
    ("check_causality_gradient", "past-skips-i", "g[: i + 1]", "g[:i]", None),
    ("check_causality_gradient", "past-skips-first", "g[: i + 1]", "g[1: i + 1]", ("first_key_hidden", "middle_key_hidden")),
]


def _boundary_check(function, old, new):
    import inspect
    source = inspect.getsource(REFERENCE_CHECKS[function]).replace("reference_", "")
    assert source.count(old) == 1, (function, old)
    ns = dict(REFERENCE_CHECKS[function].__globals__)      # torch, and the tolerances the reference checks read
    exec(source.replace(old, new), ns)
    return ns[function]


def _missed(function, name, check) -> list[str]:
    """The broken cases of `function`'s suite that `check` misses (it must accept every correct one), as the
    verdict's parts: a family (families.py) by the name of its first case, once."""
    grader = next(g for g in GRADERS if g.function == function)
    missed = []
    for case in SUITES[grader.suite]:
        obj = case.build()
        outcomes = []
        for p in grader.params_of(case):
            torch.manual_seed(CALL_SEED + (p or 0))
            outcomes.append(outcome(check, *grader.arguments(obj, p)))
        if case.kind == "wheat":
            assert all(o == "returned" for o in outcomes), f"{name} rejects {case.description}: {outcomes}"
        elif not any(o.startswith("assertion") for o in outcomes):
            missed.append(case.family or case.name)
    return list(dict.fromkeys(missed))


@pytest.mark.parametrize("function,name,old,new,only", BOUNDARY, ids=[f"{b[0][6:]}-{b[1]}" for b in BOUNDARY])
def test_a_check_off_by_one_at_a_boundary_misses_a_broken_head(function, name, old, new, only):
    missed = _missed(function, name, _boundary_check(function, old, new))
    assert missed, f"{name}: every broken head is caught, so the mistake keeps full marks"
    if only:
        assert missed == list(only), f"{name}: missed {missed}"


# The reference checks made to look at a part of what they compare only (every other row, one feature, one output
# coordinate, every other past position, one sequence of the batch) or to change token t by scaling it: each
# misses exactly the broken cases that put their fault in the part left out (leaks.py: one case, or each named),
# and had full marks before the first of them.
PARTS = [
    ("check_simplex", "row-sums-even-rows", "A.sum(dim=-1)", "A[..., ::2, :].sum(dim=-1)",
     ("row_sum_odd_row", "last_row_sum", "row_sum_0.9")),
    ("check_simplex", "nonnegative-inner-rows", "(A >= 0)", "(A[..., 1:-1, :] >= 0)",
     ("negative_last_row", "negative_entry")),
    ("check_causality_perturbation", "past-first-sequence", "out[:, :t], out2[:, :t]", "out[0, :t], out2[0, :t]",
     "batch_leak"),
    ("check_causality_perturbation", "token-scaled", "torch.randn_like(x2[:, t, :])", "2 * x2[:, t, :]",
     "direction_leak"),
    ("check_causality_gradient", "future-feature-0", "g[i + 1:] == 0", "g[i + 1:, 0] == 0",
     ("feature_leak", "cancelling_feature_leak")),
    ("check_causality_gradient", "backward-coordinate-0", "head(x)[0, i].sum()", "head(x)[0, i, 0]",
     "coordinate_leak"),
    ("check_causality_gradient", "past-every-other", "g[: i + 1]", "g[: i + 1:2]", "middle_key_hidden"),
    # the first or the last row (or key) left out, a sum over coordinates or features, a few features of token t
    # changed, the past searched over the last 8 positions, a tolerance 19 times the spec's (or any at all)
    ("check_simplex", "row-sums-skip-first-row", "A.sum(dim=-1)", "A[:, 1:].sum(dim=-1)",
     ("first_row_sum", "row_sum_0.9")),
    ("check_simplex", "future-skips-first-row", "A[..., future]", "A[:, 1:][:, future[1:]]", "first_row_future"),
    ("check_simplex", "row-sums-skip-last-row", "A.sum(dim=-1)", "A[:, :-1].sum(dim=-1)",
     ("last_row_sum", "row_sum_0.9")),
    ("check_simplex", "future-skips-last-key", "A[..., future]", "A[..., :-1][:, future[:, :-1]]",
     ("last_key_future", "first_row_future")),
    ("check_simplex", "row-sums-within-1.9e-4", "<= FLOAT32_ROW_SUM_TOL", "<= 1.9e-4", "row_sum_1.00015"),
    ("check_causality_perturbation", "past-summed-over-coordinates", "out[:, :t], out2[:, :t]",
     "out[:, :t].sum(-1), out2[:, :t].sum(-1)", "cancelling_coordinate_leak"),
    ("check_causality_perturbation", "token-first-16-features", "x2[:, t, :] = torch.randn_like(x2[:, t, :])",
     "x2[:, t, :16] = torch.randn_like(x2[:, t, :16])", "feature_leak"),
    ("check_causality_perturbation", "token-feature-0-bumped", "x2[:, t, :] = torch.randn_like(x2[:, t, :])",
     "x2[:, t, 0] += 1", "feature_leak"),
    ("check_causality_gradient", "future-summed-over-features", "g[i + 1:] == 0", "g[i + 1:].sum(dim=-1) == 0",
     "cancelling_feature_leak"),
    ("check_causality_gradient", "future-within-1e-12", "g[i + 1:] == 0", "g[i + 1:].abs() <= 1e-12",
     "faint_grad_leak"),
    ("check_causality_gradient", "past-last-8-positions", "g[: i + 1]", "g[max(0, i - 7): i + 1]",
     ("window_8", "middle_key_hidden")),
]

# The reference checks made to skip one fixed place that no single chaff isolates (a row, a sequence, a past or
# later position, absolute or counted from t or i, a band of the future, a set of coordinates or features, a
# token changed by reordering its features): each misses a case of a family (families.py: the same fault at
# each place in turn), so it loses that family's part. Before the families each had full marks.
PLACES = [
    ("check_simplex", "row-sums-skip-row-5", "A.sum(dim=-1)", "A[:, [r for r in range(T) if r != 5]].sum(dim=-1)",
     "row_sum_0.9"),
    ("check_simplex", "nonnegative-skip-row-5", "(A >= 0)", "(A[:, [r for r in range(T) if r != 5]] >= 0)",
     "negative_entry"),
    ("check_simplex", "future-rows-below-4", "A[..., future]", "A[:, :4][..., future[:4]]", "first_row_future"),
    ("check_simplex", "future-band-and-last-key", "future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)",
     "future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1) & "
     "~torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=3)\n    future[:-1, -1] = True",
     ("tiny_future_weight", "first_row_future")),
    ("check_causality_perturbation", "past-skips-position-2", "out[:, :t], out2[:, :t]",
     "out[:, [s for s in range(t) if s != 2]], out2[:, [s for s in range(t) if s != 2]]", "middle_row_unmasked"),
    ("check_causality_perturbation", "past-skips-sequence-1", "out[:, :t], out2[:, :t]",
     "out[[0, 2, 3], :t], out2[[0, 2, 3], :t]", "batch_leak"),
    ("check_causality_perturbation", "present-skips-t+1", "range(t, x.shape[1])",
     "(s for s in range(t, x.shape[1]) if s != t + 1)", ("skips_previous", "middle_row_self_only")),
    ("check_causality_perturbation", "present-skips-t+2", "range(t, x.shape[1])",
     "(s for s in range(t, x.shape[1]) if s != t + 2)", "middle_row_self_only"),
    ("check_causality_perturbation", "present-t-next-and-last", "range(t, x.shape[1])",
     "sorted({t, t + 1, x.shape[1] - 1} & set(range(t, x.shape[1])))", "middle_row_self_only"),
    ("check_causality_perturbation", "token-flipped", "torch.randn_like(x2[:, t, :])", "x2[:, t, :].flip(-1)",
     "feature_leak"),
    ("check_causality_perturbation", "past-every-third-coordinate", "out[:, :t], out2[:, :t]",
     "out[:, :t, ::3], out2[:, :t, ::3]", ("cancelling_coordinate_leak", "middle_row_unmasked")),
    ("check_causality_gradient", "past-skips-position-2", "g[: i + 1]", "g[[j for j in range(i + 1) if j != 2]]",
     "middle_key_hidden"),
    ("check_causality_gradient", "future-next-two-and-last", "g[i + 1:] == 0",
     "g[[j for j in range(i + 1, g.shape[0]) if j <= i + 2 or j == g.shape[0] - 1]] == 0", "sees_two_ahead"),
    ("check_causality_gradient", "future-skips-i+4", "g[i + 1:] == 0",
     "g[[j for j in range(i + 1, g.shape[0]) if j != i + 4]] == 0", "sees_two_ahead"),
    ("check_causality_gradient", "future-odd-features", "g[i + 1:] == 0", "g[i + 1:, 1::2] == 0", "feature_leak"),
    ("check_causality_gradient", "backward-odd-coordinates", "head(x)[0, i].sum()", "head(x)[0, i, 1::2].sum()",
     "coordinate_leak"),
]


# The row-sum tolerances a correct check may have, from about 1e-6 to 1e-4 (< or <=: the mutants that move the
# spec's 1e-5 within them are equivalent, tests/mutant_equivalents.py), miss no broken matrix: the row summing to
# 1.00015 is 1.5e-4 off, which only a tolerance looser than that lets through.
@pytest.mark.parametrize("tolerance", ["<= 1e-4", "< 1e-4", "<= 1e-6"])
def test_a_row_sum_tolerance_a_correct_check_may_have_misses_nothing(tolerance):
    check = _boundary_check("check_simplex", "<= FLOAT32_ROW_SUM_TOL", tolerance)
    assert _missed("check_simplex", tolerance, check) == []


@pytest.mark.parametrize("function,name,old,new,only", PARTS + PLACES, ids=[f"{b[0][6:]}-{b[1]}" for b in PARTS + PLACES])
def test_a_check_that_looks_at_a_part_misses_a_broken_case(function, name, old, new, only):
    assert _missed(function, name, _boundary_check(function, old, new)) == (list(only) if isinstance(only, tuple)
                                                                            else [only])


@pytest.mark.parametrize("features", ["::2", "1::2"])
def test_a_gradient_check_that_looks_at_some_features_of_the_past_rejects_a_correct_head(features):
    """A head whose past reaches out_i through one feature of x_0 is correct (families.py): a check that looks for
    the past's gradient on every other feature only finds none there, and rejects it (scoring 0)."""
    check = _boundary_check("check_causality_gradient", "(g[: i + 1] != 0)", f"(g[: i + 1, {features}] != 0)")
    with pytest.raises(AssertionError, match="rejects a correct head"):
        _missed("check_causality_gradient", features, check)


def _family_cases(suite):
    families = {}
    for case in SUITES[suite]:
        if case.family:
            families.setdefault(case.family, []).append(case)
    return families


@pytest.mark.parametrize("grader", GRADERS, ids=lambda g: g.grade_id)
def test_a_family_is_one_part_and_its_feedback_names_the_case_missed(grader):
    """A check that misses one case of a family (any one) loses that family's part alone, and the feedback names
    the case (its place) and how to look there; catching every case of it earns the part."""
    from course_checks.step_04.suites import FAMILIES

    cases = SUITES[grader.suite]
    parts = len({c.family or c.name for c in cases if c.kind == "chaff"})
    assert parts == {"simplex": 19, "causal_perturbation": 27, "causal_gradient": 27}[grader.suite]

    class Served:
        def cases(self, suite):
            return [(f"t{n}", case) for n, case in enumerate(cases)]

    for family, members in _family_cases(grader.suite).items():
        assert members[0].name == family and len(members) > 4, family
        missed = members[len(members) // 2]

        def outs(case):
            caught = case.kind == "chaff" and case is not missed
            return ["assertion: caught" if caught else "returned" for _ in grader.params_of(case)]
        data = {"cases": {f"t{n}": outs(case) for n, case in enumerate(cases)},
                "twins": {case.name: outs(case) for case in cases}}
        verdict = grader.judge(data, Served())
        failed = [p for p in verdict.parts if not p.ok]
        assert len(failed) == 1 and failed[0].name == f"catches {FAMILIES[f'{grader.suite}/{family}']}", failed
        assert missed.description in failed[0].message and missed.hint in failed[0].message, failed[0].message
        assert verdict.fraction == pytest.approx((parts - 1) / parts)


@pytest.mark.parametrize("grader", GRADERS, ids=lambda g: g.grade_id)
def test_each_family_meets_one_twin_of_its_joined_cases_and_every_other_case_its_own(grader):
    """The twins: every case that is not a family's later case has its twin, drawn as before the families (the
    same seeds in the same order); each family one more, of one of its later cases."""
    class Submission:
        sources = ["def check(): pass"]

    twins = grader.twins(Submission())
    names = [case.name for case, _, _ in twins]
    assert len(names) == len(set(names))
    alone = [c for c in SUITES[grader.suite] if not c.family or c.family == c.name]
    assert set(names) >= {c.name for c in alone}
    joined = [case for case, _, _ in twins if case.family and case.family != case.name]
    assert sorted(c.family for c in joined) == sorted(_family_cases(grader.suite))
    rng = grader.fresh(Submission(), "twins")
    seeds = {c.name: (rng.getrandbits(31), rng.getrandbits(31)) for c in alone}
    assert all(seeds[case.name] == (s, x) for case, s, x in twins if case.name in seeds)


# ---- the scale check's fixed tables -------------------------------------------------------------

def _solution_scale_table():
    ns = {"torch": torch, "F": F, "math": math}
    exec(answers_of(STEP4, "03-the-tests")["scale_table"], ns)
    return ns["scale_table"]


def test_the_fixed_scale_tables_hold_the_rows_their_seeds_were_chosen_for():
    """ScaleTable.SEEDS, drawn as the notebook's recipe draws: each d_k = 512 row has a row one-hot when the scores
    are divided by sqrt(32), and one of them a raw score beyond float32 exp's range (log(float32 max) = 88.72) in
    a row one-hot by more than the band, so a softmax written as exp(s) / sum exp(s) gives that row NaN: its
    max_weight_raw is NaN and its one_hot_raw a row short, whatever the twins draw."""
    scale_table = _solution_scale_table()
    limit = math.log(torch.finfo(torch.float32).max)
    overflowed = []
    for seed in ScaleTable.SEEDS:
        row = scale_table(list(ScaleTable.D_HEADS), seed)[-1]
        assert row["d_k"] == 512
        raw = row["q"] @ row["k"].transpose(-2, -1)                                  # (B, T, T), float32
        assert (F.softmax(raw.double() / math.sqrt(32), dim=-1).amax(dim=-1) >= ONE_HOT + ONE_HOT_BAND).any(), seed
        top, naive = F.softmax(raw.double(), dim=-1).amax(dim=-1), exp_overflow_top(raw)
        over = raw.amax(dim=-1) > limit
        assert torch.equal(naive.isnan(), over), seed                               # NaN exactly where exp overflows
        assert torch.allclose(naive[~over], top[~over], rtol=0, atol=1e-6), seed
        if over.any():
            assert (top[over] >= ONE_HOT + ONE_HOT_BAND).all(), seed                  # one-hot rows, counted by the answer
            overflowed.append(seed)
    assert overflowed, "no fixed table reaches float32 exp's overflow"


def test_the_wide_scale_table_overflows_every_offset_but_the_max():
    """ScaleTable.WIDE, drawn as the notebook's recipe draws: a softmax written as exp(s - c) / sum exp(s - c) in
    float32 gives a NaN row for c = 0 and every c of OFFSETS (the row's mean, its diagonal score, 80, half its
    max), where F.softmax and exp(s - max) / sum exp(s - max), in float32, are finite and the float64
    softmax's to 1e-6."""
    width, seed = ScaleTable.WIDE
    row = _solution_scale_table()([width], seed)[0]
    raw = row["q"] @ row["k"].transpose(-2, -1)                                      # (B, T, T), float32
    assert raw.max().item() > 2 * math.log(torch.finfo(torch.float32).max)        # 204.1: half the max overflows too
    top = F.softmax(raw.double(), dim=-1).amax(dim=-1)
    shifted = (raw - raw.amax(dim=-1, keepdim=True)).exp()
    for right in (F.softmax(raw, dim=-1), shifted / shifted.sum(dim=-1, keepdim=True)):
        assert torch.allclose(right.amax(dim=-1).double(), top, rtol=0, atol=1e-6)
    tops = exp_offset_tops(raw)
    assert len(tops) == len(OFFSETS)
    for wrong in [exp_overflow_top(raw)] + tops:
        assert wrong.isnan().any() and wrong.isnan().sum() < wrong.numel()
        assert torch.allclose(wrong[~wrong.isnan()], top[~wrong.isnan()], rtol=0, atol=1e-6)


def test_the_scale_probe_gathers_at_most_what_one_probe_may():
    """The probe's data with the twins at their widest (every table of D_HEADS sends its q and k, the wide tables
    their raw scores): within plain.MAX_ITEMS; a wide table itself, as the student's function returns it, is
    within what one call may return."""
    scale_table = _solution_scale_table()
    widest = [high for _, high in ScaleTable.TWIN_WIDTHS]
    tables = [(list(ScaleTable.D_HEADS), seed) for seed in ScaleTable.SEEDS] + [(widest, seed) for seed in (1, 2)]
    width, seed = ScaleTable.WIDE
    data = {"tables": [attempt(scale_table, d_heads, seed) for d_heads, seed in tables],
            "again": [attempt(scale_table, list(ScaleTable.AGAIN[0]), ScaleTable.AGAIN[1]) for _ in range(2)],
            "wide": [attempt(lambda d, s: wide_scores(scale_table(d, s)), [width], s) for s in (seed, 3)]}
    assert all(isinstance(entry["value"], list) and entry["value"][0]["scores"].shape == (4, 8, 8)
               for entry in data["wide"])
    budget = [MAX_ITEMS]
    to_plain(data, _budget=budget)
    assert MAX_ITEMS - budget[0] < 190_000, MAX_ITEMS - budget[0]          # 182,532 (the widths' numbers: 181,760)
    one_call = [MAX_ITEMS]
    to_plain(scale_table([width], seed), _budget=one_call)
    assert MAX_ITEMS - one_call[0] < 140_000, MAX_ITEMS - one_call[0]      # 131,084: q and k are 131,072 numbers


@pytest.mark.parametrize("grader", GRADERS, ids=lambda g: g.grade_id)
def test_one_submissions_feedback_reads_the_same_whatever_order_its_cases_were_served_in(grader):
    """The probe server serves a suite in a fresh shuffle each grading (autograder/checks/probeserver.py); the
    judge tells its verdict in the suite's own order, so a submission's feedback, and where a long one is cut,
    is a function of the submission alone. A check that catches only every other chaff, whatever order."""
    import random

    cases = SUITES[grader.suite]
    chaffs = [c for c in cases if c.kind == "chaff"]
    caught = {c.name for c in chaffs[::2]}

    def outs(case):
        caught_it = case.name in caught
        return ["assertion: caught" if caught_it and n == 0 else "returned" for n in range(len(grader.params_of(case)))]

    class Served:
        def __init__(self, order):
            self.order = order

        def cases(self, suite):
            assert suite == grader.suite
            return [(f"t{n}", case) for n, case in enumerate(self.order)]

    data_of = lambda ctx: {"cases": {token: outs(case) for token, case in ctx.cases(grader.suite)},  # noqa: E731
                           "twins": {case.name: outs(case) for case in cases}}
    told = set()
    for seed in range(6):
        order = list(cases)
        random.Random(seed).shuffle(order)
        ctx = Served(order)
        verdict = grader.judge(data_of(ctx), ctx)
        told.add(tuple((p.name, p.ok, p.message) for p in verdict.parts))
        assert 0 < verdict.fraction < 1
    assert len(told) == 1
