"""The head's forward time against the context length T, three ways:
  Head       dlcourse.head.Head (the handout's head: builds the T x T matrix A);
  SDPA       torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True);
  streaming  benchmarks/streaming.py (online softmax over blocks of keys: no T x T matrix).
Batch 1, d = 64, d_head = 16, torch.set_num_threads(THREADS), no autograd; the median of
`repeats` timed calls after one warm-up. Memory of A: T*T*4 bytes computed, and measured as the
size of the tensor the head keeps (head.A) and as the rise of the process's resident memory at
its peak while the forward pass runs (sampled every millisecond).
"""

from __future__ import annotations

import math
import time

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import stats  # noqa: E402

TS = [256, 512, 1024, 2048, 4096]
D, D_HEAD, THREADS = 64, 16, 1


def _time(fn, repeats: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _peak_rss_delta(fn, seconds: float = 0.3) -> int:
    """Peak resident memory above the level before, while fn() runs repeatedly (at least once,
    for `seconds`), sampled every millisecond: what the computation holds at its fullest."""
    import gc
    import threading

    import psutil

    gc.collect()
    me = psutil.Process()
    base = me.memory_info().rss
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            stop.wait(0.001)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t = time.perf_counter()
    fn()
    while time.perf_counter() - t < seconds:
        fn()
    stop.set()
    thread.join()
    return max(0, peak[0] - base)


def fit_exponent(ts: list[int], seconds: list[float]) -> float:
    """slope of log(time) against log(T), least squares."""
    xs, ys = [math.log(t) for t in ts], [math.log(s) for s in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def measure(repeats: int, ts: list[int] = TS, say=print) -> dict:
    import torch
    import torch.nn.functional as F

    from dlcourse.head import Head
    from streaming import streaming_attention

    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    head = Head(D, D_HEAD, T_max=max(ts)).eval()
    out = {"threads": THREADS, "d": D, "d_head": D_HEAD, "T": ts, "time": {}, "memory": {}, "exponent": {}}
    for T in ts:
        say(f"  head: T = {T}")
        x = torch.randn(1, T, D)
        with torch.no_grad():
            q, k, v = head.query(x), head.key(x), head.value(x)
            ways = {
                "Head": lambda: head(x),
                "SDPA": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                "streaming": lambda: streaming_attention(q, k, v),
            }
            if T == ts[0]:  # the three agree (a benchmark of wrong code measures nothing)
                ref = head(x)
                for name, fn in ways.items():
                    got = fn()
                    if name != "Head":
                        assert torch.allclose(got, ref, atol=1e-5), f"{name} differs from Head"
            for name, fn in ways.items():
                out["time"].setdefault(name, {})[T] = stats(_time(fn, repeats))
            head(x)
            out["memory"][T] = {
                "computed": T * T * 4,
                "head.A": head.A.element_size() * head.A.nelement(),
                "Head (RSS)": _peak_rss_delta(lambda: head(x)),
                "SDPA (RSS)": _peak_rss_delta(ways["SDPA"]),
                "streaming (RSS)": _peak_rss_delta(ways["streaming"]),
            }
    for name, by_t in out["time"].items():
        out["exponent"][name] = fit_exponent(ts, [by_t[T]["median"] for T in ts])
    return out


def measure_in_subprocess(repeats: int, ts: list[int] = TS, say=print) -> dict:
    """measure() in a fresh Python whose allocator returns every large block to the system when it
    is freed (MALLOC_MMAP_THRESHOLD_ fixed at 64 KiB: glibc otherwise raises it as blocks are freed
    and reuses them from its heap), so that the rise of resident memory shows what a pass holds."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(64 * 1024))
    here = Path(__file__).resolve().parent
    say(f"  head: T = {', '.join(map(str, ts))} (a fresh process)")
    proc = subprocess.run(
        [sys.executable, str(here / "head.py"), str(repeats), *map(str, ts)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for key in ("memory",):
        out[key] = {int(t): v for t, v in out[key].items()}
    out["time"] = {w: {int(t): v for t, v in by_t.items()} for w, by_t in out["time"].items()}
    return out


if __name__ == "__main__":
    import json
    import sys

    result = measure(int(sys.argv[1]), [int(t) for t in sys.argv[2:]] or TS, say=lambda *a: None)
    print(json.dumps(result))
