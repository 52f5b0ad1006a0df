"""A hint names a cause only where the answer has it.

A hidden check's feedback may name a likely mistake (a hint). A check that does lists every hint it can give
in its HINTS (name -> the hint's words, as the feedback shows them), and gives one only when it has measured
that cause: the mistake's output, computed by the judge, is the answer's, or the samples pass the law test of
the law that mistake gives. Otherwise the feedback says which property failed and names no cause.

Every corpus entry declares the hints its feedback shows, by name (`Entry.hints`): a hint shown where the
entry does not declare it (its cause is absent) fails here, and so does a declared hint that is not shown.
The corpus is judged once per session (tests/test_grader_proof_quick.py's `native_run`).
"""
from __future__ import annotations

import pytest

from proof_corpus import CORRECT, REVIEW, UNDECIDED, WRONG
from test_grader_proof_quick import REGISTRY, native_run

# grade cell -> {hint name: its words}: every hint the hidden checks can give
CATALOGUE = {gid: dict(check.HINTS) for gid, check in REGISTRY.items() if getattr(check, "HINTS", None)}
# the checks whose hints are catalogued (a check that names causes belongs here once its hints are measured)
HINTED = {"bonus_online_softmax", "bonus_streaming_attention", "bonus_fit_exponent", "bonus_dot_variance",
          "scale_table_hidden", "bonus_scores_entrywise", "bonus_permutation_gaps", "bonus_attention_on_text",
          "bonus_top_key_shares", "mask_after_softmax_hidden", "smoothing_attention_hidden",
          "bonus_count_params"}
ENTRIES = CORRECT + WRONG + UNDECIDED


def shown(gid: str, report: str) -> set[str]:
    """The hints of `gid`'s catalogue whose words are in a feedback."""
    return {name for name, words in CATALOGUE.get(gid, {}).items() if words in report}


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict:
    return native_run(tmp_path_factory)["judged"]


def test_the_catalogue():
    assert HINTED <= set(CATALOGUE), f"checks without a HINTS catalogue: {sorted(HINTED - set(CATALOGUE))}"
    for gid, hints in CATALOGUE.items():
        for name, words in hints.items():
            assert isinstance(words, str) and len(words) >= 20, f"{gid} / {name}: too short to find in a feedback"
            others = [other for other, text in hints.items() if other != name and words in text]
            assert not others, f"{gid}: the words of {name} are inside {others}: a feedback cannot tell them apart"


def test_declared_hints_are_catalogued():
    for entry in ENTRIES:
        for gid, names in entry.hints.items():
            unknown = set(names) - set(CATALOGUE.get(gid, {}))
            assert not unknown, f"{entry.name} / {gid}: no such hint {sorted(unknown)}"
            assert not entry.correct, f"{entry.name}: a correct answer has no cause to name"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_a_hint_is_shown_only_where_its_cause_is(entry, judged):
    judgements = judged[entry.name]
    assert set(entry.hints) <= set(judgements), f"{entry.name}: hints declared for a cell no check judged"
    for gid, (_, report) in judgements.items():
        declared, found = set(entry.hints.get(gid, ())), shown(gid, report)
        assert found <= declared, (f"{entry.name} / {gid}: a hint whose cause this answer does not have: "
                                   f"{sorted(found - declared)}\n{entry.why}\n{report}")
        assert declared <= found, f"{entry.name} / {gid}: the hint is not given: {sorted(declared - found)}\n{report}"


def test_every_hint_is_shown_by_some_entry():
    """Each catalogued hint is declared by a wrong entry (and so appears in its feedback: the test above), not
    only written in a catalogue."""
    seen = {(gid, name) for entry in WRONG for gid, names in entry.hints.items() for name in names}
    missing = sorted(f"{gid} / {name}" for gid, hints in CATALOGUE.items() for name in hints if (gid, name) not in seen)
    assert not missing, f"hints no corpus entry shows: {missing}"


def test_each_hinted_check_fails_some_entry_naming_no_cause(judged):
    """A check that named a cause for every failure would pass the tests above if every wrong entry it judges had
    a declared cause: each check with a catalogue also fails a wrong entry whose cause it does not measure (a
    mistake near its hints), and that entry declares no hint there, so its feedback names none."""
    bare = {gid: [e.name for e in WRONG if gid in judged[e.name] and not e.hints.get(gid)
                  and judged[e.name][gid][0] != REVIEW and judged[e.name][gid][0] < REGISTRY[gid].points]
            for gid in CATALOGUE}
    missing = sorted(gid for gid, names in bare.items() if not names)
    assert not missing, f"checks whose every failing corpus entry is named a cause: {missing}"


def test_the_smoothing_offset_hint_is_measured():
    """The smoothing check names a softmax shifted by the row's mean only where the answer's matrices are that
    softmax's on every case, NaN included: each way it may be computed is recognised; a correct matrix, one
    shifted by the mean where nothing overflows, and a NaN of another cause (row 0 NaN: the diagonal masked) are
    not."""
    import numpy as np
    from course_checks.step_04 import smoothing as M
    for way in M.OFFSET_WAYS:
        matrices = {case: M.offset_matrix(*case, *way) for case in M.ALL_CASES}
        assert M.offset_shown(matrices) == any(not np.isfinite(a).all() for a in matrices.values()), way
    assert M.offset_shown({case: M.offset_matrix(*case) for case in M.ALL_CASES})        # float32, all keys
    assert not M.offset_shown({case: M.reference(*case) for case in M.ALL_CASES})
    huge = {case: M.offset_matrix(*case) for case in M.HUGE}                           # finite: nothing to explain
    assert all(np.isfinite(a).all() for a in huge.values()) and not M.offset_shown(huge)
    row_0_nan = {}
    for T, s in M.ALL_CASES:
        a = M.reference(T, s)
        a[0] = np.nan
        row_0_nan[(T, s)] = a
    assert not M.offset_shown(row_0_nan)
