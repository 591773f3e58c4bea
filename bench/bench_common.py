"""Timing helpers shared by the PyTorch halves of the benchmarks (the twins of bench/common.hpp)."""
import time


def median_seconds(f, reps=7, min_seconds=0.2):
    """Median wall time of f() over at least `reps` runs and `min_seconds`, after two warm-ups."""
    f()
    f()
    ts, total = [], 0.0
    while len(ts) < reps or total < min_seconds:
        t0 = time.perf_counter()
        f()
        s = time.perf_counter() - t0
        ts.append(s)
        total += s
        if len(ts) > 2000:
            break
    ts.sort()
    return ts[len(ts) // 2]


def median_ms(f, reps):
    """Median of `reps` timings of f() in milliseconds, after one warm-up."""
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def report(name, value, unit):
    """One result line, "<name>\\t<value>\\t<unit>", as bench/run_kernels.py collects them."""
    print(f"{name}\t{value:.4g}\t{unit}", flush=True)
