#!/usr/bin/python3
"""Runs the kernel benchmarks of dl and PyTorch alternately and prints them side by side.

  bench/run_kernels.py [--build build] [--rounds 3] [--threads 2] [gemm] [conv]

Each round runs build/bench/bench_<name> (dl: built-in GEMM, and dl+openblas when dl has CBLAS)
and then bench/<name>.py (PyTorch) in fresh processes with the same thread count, OpenBLAS's
OpenMP build and its AVX-512 kernels (OPENBLAS_CORETYPE unset). Every figure is the median over
rounds of per-process medians; alternating the two keeps machine noise (other jobs on a shared
machine) from favouring either side. Ratios > 1 mean dl is faster.
"""
import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def env(threads):
    e = dict(os.environ)
    e.pop("OPENBLAS_CORETYPE", None)
    e["LD_LIBRARY_PATH"] = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
    e["OMP_NUM_THREADS"] = str(threads)
    e["BENCH_THREADS"] = str(threads)
    return e


def collect(cmd, e, results):
    out = subprocess.run(cmd, env=e, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            results.setdefault(parts[0], {"unit": parts[2], "values": []})["values"].append(float(parts[1]))


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("which", nargs="*", default=["gemm", "conv"])
    args = ap.parse_args()
    e = env(args.threads)
    print(f"threads={args.threads} rounds={args.rounds} load average at start: {load_average()}")
    for name in args.which:
        results = {}
        for _ in range(args.rounds):
            collect([os.path.join(args.build, "bench", "bench_" + name)], e, results)
            collect(["/usr/bin/python3", os.path.join("bench", name + ".py")], e, results)
        rows = {}
        for key, r in results.items():
            workload, impl = key.rsplit("/", 1)
            rows.setdefault(workload, {})[impl] = (statistics.median(r["values"]), r["unit"])
        impls = ["dl", "dl+openblas", "torch"]
        peak = rows.pop("fma_peak", {}).get("dl", (0, ""))[0]
        if peak:
            print(f"\nfloat FMA peak of this machine ({args.threads} threads): {peak:.0f} GFLOP/s; '% peak' is dl's share of it")
        print(f"\n{'workload':<34}" + "".join(f"{i:>14}" for i in impls) + f"{'dl vs torch':>14}" + (f"{'% peak':>9}" if peak else ""))
        for workload, vals in rows.items():
            unit = next(iter(vals.values()))[1]
            cells = "".join(f"{vals[i][0]:>10.4g} {'GF/s' if unit == 'GFLOP/s' else 'ms':<3}" if i in vals else f"{'-':>14}"
                            for i in impls)
            ratio = "-"
            if "dl" in vals and "torch" in vals:
                d, t = vals["dl"][0], vals["torch"][0]
                ratio = f"{(d / t if unit == 'GFLOP/s' else t / d):.2f}x"
            share = f"{100 * vals['dl'][0] / peak:>8.0f}%" if peak and unit == "GFLOP/s" and "dl" in vals else ""
            print(f"{workload:<34}{cells}{ratio:>14}{share}")
    print(f"\nload average at end: {load_average()}")


if __name__ == "__main__":
    sys.exit(main())
