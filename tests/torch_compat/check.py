#!/usr/bin/env python3
"""Runs a libtorch-style program built against dl and compares what it prints with what the same
source printed when built against libtorch (tests/data/torch_compat_NAME.txt, written by
tests/gen_torch_compat.sh).

  check.py PROGRAM REFERENCE [ARGS...]

Lines must match one for one; words must be equal, numbers within 1e-3 relative (1e-4 absolute):
the two libraries round differently (GEMM and convolution orders), nothing else may differ.
"""
import re
import subprocess
import sys

NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def tokens(line):
    return [t for t in re.split(r"[\s/,=:()\[\]]+", line) if t]


def main():
    program, reference, *args = sys.argv[1:]
    run = subprocess.run([program, *args], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        print(f"FAIL: {program} exited with {run.returncode}")
        return 1
    got = run.stdout.splitlines()
    want = open(reference).read().splitlines()
    sys.stdout.write(run.stdout)
    if len(got) != len(want):
        print(f"FAIL: {len(got)} lines printed, libtorch printed {len(want)}")
        return 1
    bad = 0
    for n, (g, w) in enumerate(zip(got, want), 1):
        gt, wt = tokens(g), tokens(w)
        ok = len(gt) == len(wt)
        for a, b in zip(gt, wt):
            if NUMBER.match(a) and NUMBER.match(b):
                x, y = float(a), float(b)
                ok = ok and abs(x - y) <= max(1e-4, 1e-3 * abs(y))
            else:
                ok = ok and a == b
        if not ok:
            bad += 1
            print(f"line {n}: dl printed      {g!r}\n{' ' * len(str(n))}        libtorch printed {w!r}")
    if bad:
        print(f"FAIL: {bad} line(s) differ from libtorch's")
        return 1
    print(f"OK: {len(got)} lines agree with libtorch's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
