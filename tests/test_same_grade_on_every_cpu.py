"""The same grade on every CPU: the proof corpus scores the same under every CPU kernel and thread count.

A grade must be a function of the submission alone. Floating-point rounding differs between CPUs
(PyTorch picks AVX-512, AVX2 or plain kernels by the CPU; MKL picks its own code path, on Intel and
AMD differently; a reduction split over threads sums in another order), so a hidden case whose
verdict sits near a tolerance would be graded differently on two nodes of one cluster. This runs the
quick proof's scoring (tests/test_grader_proof_quick.py, every corpus entry judged in-process) in
subprocesses under each setting below and asserts that every grade cell gets exactly the corpus's
points in every one of them.

Only the kernel sets this CPU has are run: torch does not refuse ATEN_CPU_CAPABILITY=avx512 on a CPU
without AVX-512, it reports AVX512 and the process dies on its first such instruction (SIGILL). On a
CPU with AVX-512 all three sets run; on one with AVX2 only, default and AVX2 (and the run's
measurements say which sets were left out, and how many settings ran).

A run compares 4 representative settings, one scoring process each (the strongest set on 2 threads is
the session's own judgement of the corpus, tests/test_grader_proof_quick.py's native_run, which this
module reads rather than scoring it again): the plain kernels on 1 thread;
the plain kernels on 2 threads with MKL's vendor-independent path; the strongest set this CPU has
on 2 threads; AVX2 on 1 thread with MKL's path (AVX2 on 2 threads where AVX2 is the strongest).
Together they change every rounding named below (the kernel set, the thread count, MKL's path) against
one another. FULL_MATRIX=1 runs every kernel set x thread count x MKL path this CPU has (12 settings
on an AVX-512 CPU, in 6 processes).

A run judges a sample of the corpus under each setting it scores (tests/test_grader_proof.py `sample`, its
fixed part: every family of every answer cell, the first wrong answer each grade cell catches and the first
it gives partial credit to; and one more entry of each answer cell drawn from a seed the run reports,
PROOF_SEED=<seed> draws it again: about a fifth of the corpus; the session's own judgement, the native
setting, judges every entry); FULL_MATRIX=1 judges the whole corpus, and
`make proof` grades the whole corpus through the grader (graded kernels get one CPU kernel set and MKL's
vendor-independent path whatever the CPU: test_graded_kernels_run_with_pinned_numerics below).

The settings change rounding here (measured with torch 2.13's CPU wheel, MKL 2024.2):
ATEN_CPU_CAPABILITY=default changes matmuls, softmax, sums and randn; =avx2 changes softmax, sums and
scaled_dot_product_attention; MKL_CBWR=COMPATIBLE changes every MKL matmul. (MKL_ENABLE_INSTRUCTIONS=AVX2
changed nothing on the AMD EPYC this was measured on; it is set with MKL_CBWR for CPUs where it does.)
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import STEP
from proof_corpus import CORRECT, WRONG
from test_grader_proof import check_sample, proof_seed, sample
from test_grader_proof_quick import MKL, NATIVE_THREADS, NUMERIC_ENV, native_run, score_in_subprocess

CAPABILITIES = {"default": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}     # the variable's value: what torch reports
# the CPU flags torch wants for each set (ATen's compute_cpu_capability), weakest set first
NEEDS = {"default": set(), "avx2": {"avx2", "fma"}, "avx512": {"avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"}}
THREADS = (1, NATIVE_THREADS)
assert MKL and NUMERIC_ENV


def cpu_flags() -> set[str]:
    """The instruction-set flags the kernel reports for this CPU (Linux: /proc/cpuinfo)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise RuntimeError("/proc/cpuinfo has no 'flags' line: cannot tell which CPU kernel sets this CPU runs")


RUNNABLE = [cap for cap, needs in NEEDS.items() if needs <= cpu_flags()]      # on this CPU


def setting_name(cap: str, threads: int, mkl: bool) -> str:
    return f"{cap}-{threads}thread{'s' * (threads > 1)}{'-mkl' if mkl else ''}"


ALL_SETTINGS = {setting_name(cap, threads, mkl): (cap, threads, mkl)
                for cap in RUNNABLE for threads in THREADS for mkl in (False, True)}
STRONGEST = RUNNABLE[-1]
REPRESENTATIVE = [("default", 1, False), ("default", 2, True), (STRONGEST, 2, False),
                  ("avx2", 2 if STRONGEST == "avx2" else 1, True)]
FULL_MATRIX = os.environ.get("FULL_MATRIX") == "1"
SETTINGS = ALL_SETTINGS if FULL_MATRIX else {setting_name(*s): s for s in REPRESENTATIVE if setting_name(*s) in ALL_SETTINGS}
# the corpus entries judged under each setting: all of them with FULL_MATRIX=1, else the sample's fixed part
# and DRAWN more entries of each answer cell drawn from SEED (the grader proof's sample, of the entries judged)
SEED = proof_seed()
JUDGED = sorted(e.name for e in (CORRECT + WRONG if FULL_MATRIX else sample(CORRECT + WRONG, SEED)))


NATIVE = (STRONGEST, NATIVE_THREADS, False)       # the session's own judgement of the corpus (native_run)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """{setting name: what its scoring returned}, for each of SETTINGS; a process scores only the
    thread counts SETTINGS asks of its kernel set and MKL path. The NATIVE setting is the session's
    judgement of the corpus (torch's own choice of kernels is the strongest this CPU has: the test
    below checks it), read, not scored again, unless the environment chose other numerics."""
    native = NATIVE in SETTINGS.values() and not any(k in os.environ for k in NUMERIC_ENV)
    processes = {}
    for setting in SETTINGS.values():
        cap, threads, mkl = setting
        if not (native and setting == NATIVE):
            processes.setdefault((cap, mkl), set()).add(threads)
    processes = {p: tuple(sorted(t)) for p, t in sorted(processes.items())}
    with ThreadPoolExecutor(max_workers=2) as pool:           # two cores: two processes at a time
        scoring = pool.map(lambda p: score_in_subprocess(*p, processes[p], only=None if FULL_MATRIX else JUDGED),
                           processes)
        own = native_run(tmp_path_factory) if native else None
        done = dict(zip(processes, scoring))
    if own is not None:                                        # the session's judgement, of the same entries
        own = {**own, "scores": {e: cells for e, cells in own["scores"].items() if e in JUDGED}}
    return {name: own if native and setting == NATIVE else done[setting[0], setting[2]][
                processes[setting[0], setting[2]].index(setting[1])]
            for name, setting in SETTINGS.items()}


def test_the_settings_run_are_representative(record_property):
    """Without FULL_MATRIX=1 the 4 settings still vary each rounding choice: both thread counts, both
    MKL paths, the plain kernels and the strongest set this CPU has."""
    chosen = list(SETTINGS.values())
    assert {cap for cap, _, _ in chosen} >= {"default", STRONGEST}, chosen
    assert {threads for _, threads, _ in chosen} == set(THREADS), chosen
    assert {mkl for _, _, mkl in chosen} == {False, True}, chosen
    assert len(chosen) == (len(ALL_SETTINGS) if FULL_MATRIX else 4), chosen
    record_property("measured", f"same grade on every CPU: {len(SETTINGS)} of {len(ALL_SETTINGS)} settings run on "
                    f"this CPU ({', '.join(SETTINGS)})" + ("" if FULL_MATRIX else
                    f"; {len(JUDGED)} of {len(CORRECT + WRONG)} corpus entries, sample seed {SEED} (PROOF_SEED={SEED} "
                    "draws it again); FULL_MATRIX=1 runs every setting on every entry"))


def test_each_setting_judges_every_family_of_every_answer_and_a_fresh_draw():
    """The entries judged under each setting (JUDGED) are the grader proof's sample of the entries with
    points to judge, drawn with SEED, and hold what that sample holds there (test_grader_proof.check_sample:
    every family of every answer cell, a wrong entry each grade cell catches and one it gives partial credit
    to, DRAWN fresh entries of each answer cell); with FULL_MATRIX=1, every entry."""
    entries = CORRECT + WRONG
    if FULL_MATRIX:
        assert JUDGED == sorted(e.name for e in entries)
        return
    assert JUDGED == sorted(e.name for e in sample(entries, SEED)), "the seed does not draw it again"
    check_sample(entries, (SEED, 0, 1, 2))


def expected() -> dict:
    """{entry: {grade cell: points}}: every hidden check that judges the entry's answers, as the corpus says
    (the entries a run judges, JUDGED)."""
    from autograder.steps import find_step
    from test_grader_proof import judged_by
    REGISTRY = find_step(STEP).checks
    return {e.name: {gid: e.expect.get(gid, REGISTRY[gid].points) for gid in judged_by(e) if gid in REGISTRY}
            for e in CORRECT + WRONG if e.name in JUDGED}


def test_the_kernel_sets_run_are_those_this_cpu_has(tmp_path_factory, record_property):
    """The CPU flags read here agree with torch: its own choice (no ATEN_CPU_CAPABILITY) is the
    strongest set of RUNNABLE; the default and AVX2 sets run on any CPU this course supports.
    torch's own choice is read from the session's judgement of the corpus (native_run: a process with
    none of NUMERIC_ENV set, which reports the kernel set torch ran), not from a process of its own."""
    chosen = native_run(tmp_path_factory)["capability"]
    assert chosen == CAPABILITIES[RUNNABLE[-1]], \
        f"torch picks {chosen} here, the CPU flags say {CAPABILITIES[RUNNABLE[-1]]}: update NEEDS"
    assert RUNNABLE[:2] == ["default", "avx2"], f"this CPU runs only {RUNNABLE}: the proof compares at least the default and AVX2 kernels"
    skipped = [cap for cap in CAPABILITIES if cap not in RUNNABLE]
    left_out = sum(1 for cap in skipped for _ in THREADS for _ in (False, True))
    record_property("measured", f"same grade on every CPU: kernel sets this CPU has: {', '.join(RUNNABLE)}"
                    + (f"; NOT RUN, this CPU lacks them: {', '.join(skipped)} ({left_out} settings of the full "
                       "matrix left out)" if skipped else ""))


@pytest.mark.slow
@pytest.mark.parametrize("name", SETTINGS)
def test_every_score_is_the_corpus_expectation(runs, name):
    run = runs[name]
    cap, threads, _ = SETTINGS[name]
    assert run["capability"] == CAPABILITIES[cap], f"{name}: torch ran its {run['capability']} kernels"
    assert run["threads"] == threads, f"{name}: torch used {run['threads']} threads"
    want = expected()
    assert {e: set(c) for e, c in run["scores"].items()} == {e: set(c) for e, c in want.items()}, \
        f"{name}: not every grade cell of every corpus entry was scored"
    wrong = [f"{entry} / {gid}: {got} instead of {want[entry][gid]}"
             for entry, cells in sorted(run["scores"].items()) for gid, got in sorted(cells.items())
             if abs(got - want[entry][gid]) > 1e-9]
    assert not wrong, f"under {name}:\n" + "\n".join(wrong)


@pytest.mark.slow
def test_every_score_is_the_same_under_every_setting(runs):
    supported = {n: r for n, r in runs.items() if r["capability"] == CAPABILITIES[SETTINGS[n][0]]}
    assert set(supported) == set(SETTINGS), f"torch ran other kernel sets than asked: {set(SETTINGS) - set(supported)}"
    assert len(supported) >= 4 and len({SETTINGS[n][0] for n in supported}) >= 2, "too few settings compared to prove anything"
    first, *others = supported
    differ = [f"{entry} / {gid}: " + ", ".join(f"{n} {supported[n]['scores'][entry][gid]}" for n in supported)
              for entry, cells in sorted(supported[first]["scores"].items()) for gid in sorted(cells)
              if any(supported[n]["scores"][entry][gid] != cells[gid] for n in others)]
    assert not differ, "scores that depend on the CPU kernels or threads:\n" + "\n".join(differ)


def test_graded_kernels_run_with_pinned_numerics():
    """Defence in depth: the grader gives every graded kernel one CPU kernel set and MKL's
    vendor-independent path; torch takes them (valid on any x86-64) and says nothing on stderr."""
    from autograder.kernel import sandbox
    from autograder.plugin import load_plugin
    from autograder.steps import find_step

    course_env = load_plugin().kernel_env(find_step(STEP))
    from course_plugin import KERNEL_NUMERICS      # importable once the plugin is loaded (source/ on the path)
    assert KERNEL_NUMERICS.items() <= course_env.items(), "the course plugin gives kernels its numerics"
    launcher = sandbox.BwrapSandbox(Path(tempfile.mkdtemp(prefix="numerics-")), passed_env=tuple(course_env))
    assert set(KERNEL_NUMERICS) <= set(launcher.passed_env), "the sandbox would drop them"
    env = {k: v for k, v in os.environ.items() if k not in NUMERIC_ENV} | KERNEL_NUMERICS
    done = subprocess.run([sys.executable, "-c", "import torch; torch.ones(3, 3) @ torch.ones(3, 3); "
                           "print(torch.backends.cpu.get_cpu_capability())"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == "DEFAULT"
