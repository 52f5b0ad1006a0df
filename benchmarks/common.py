"""Shared pieces of the benchmarks: statistics, the machine, a process-tree memory sampler."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_STEP = "step-04"  # the step whose notebooks the benchmarks grade (02-the-head and the rest)


def bench_step():
    """The benchmarked step, as the engine sees it."""
    from autograder.steps import find_step

    return find_step(BENCH_STEP)


if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def stats(values: list[float]) -> dict:
    """median and spread (min, max, and the interquartile range when there are 4 or more values)."""
    values = sorted(float(v) for v in values)
    if not values:
        return {"median": float("nan"), "min": float("nan"), "max": float("nan"), "n": 0}
    out = {"median": statistics.median(values), "min": values[0], "max": values[-1], "n": len(values)}
    if len(values) >= 4:
        q = statistics.quantiles(values, n=4)
        out["q1"], out["q3"] = q[0], q[2]
    return out


def fmt(s: dict, digits: int = 2, scale: float = 1.0) -> str:
    """'median (min–max, n=k)'."""
    if not s or not s.get("n"):
        return "–"
    m, lo, hi = s["median"] * scale, s["min"] * scale, s["max"] * scale
    if s["n"] == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f}, n={s['n']})"


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = 0
    try:
        import psutil

        ram = psutil.virtual_memory().total
    except ImportError:
        pass
    versions = {}
    for name in ("torch", "nbgrader", "nbclient", "jupyter_client", "ipykernel", "numpy", "matplotlib"):
        try:
            module = __import__(name)
            versions[name] = getattr(module, "__version__", "?")
        except ImportError:
            versions[name] = "not installed"
    try:
        from autograder.kernel.sandbox import resolve_sandbox

        sandbox = resolve_sandbox("auto")
    except Exception as err:  # the report still says what ran
        sandbox = f"unknown ({type(err).__name__})"
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "ram_gib": round(ram / 2**30, 1),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.release()}",
        "versions": versions,
        "sandbox": sandbox,
        "load_start": os.getloadavg(),
    }


class TreeMemory:
    """Peak of the summed RSS of a process and all its descendants, sampled every `every` seconds
    (shared pages are counted once per process: an upper estimate of what the tree holds)."""

    def __init__(self, pid: int, every: float = 0.25):
        self.pid, self.every, self.peak = pid, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self._stop.is_set():
            total = 0
            try:
                procs = [root] + root.children(recursive=True)
            except psutil.Error:
                break
            for proc in procs:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_measured(cmd: list[str], cwd: Path, env: dict, timeout: float | None = None) -> dict:
    """Run a command; its wall time, exit code, output tail and the peak RSS of its process tree."""
    started = time.monotonic()
    with open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=devnull, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        with TreeMemory(proc.pid) as memory:
            out, _ = proc.communicate(timeout=timeout)
    return {
        "seconds": time.monotonic() - started,
        "returncode": proc.returncode,
        "output": out,
        "peak_rss": memory.peak,
    }
