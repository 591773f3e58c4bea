#!/usr/bin/env python3
"""What a program that uses nothing pays for including dl/dl.hpp in compiled mode, checked.

  instantiations.py CXX [FLAGS...]

g++ instantiates every template that an inline (non-template) function's body names, in every
translation unit that includes the header, whether or not the function is ever called. One such
function can cost every user: the bfloat16 product path, written as inline functions, made the CNN
sample's compiled-mode build 20% slower and 150 MB bigger (612 -> 760 MB) although it multiplies
no bfloat16. This check compiles `#include <dl/dl.hpp>` alone with -fkeep-inline-functions (every
inline function and every instantiation g++ made is emitted, so the object lists them) and fails:
  - when a dl function template is instantiated for dl::Half or dl::BFloat16: 16-bit paths are
    opt-in and must stay templates until a program calls them (write `template <class T> requires
    std::same_as<T, BFloat16>`, as dl/ops/gemm_bf16.hpp does);
  - when the code emitted exceeds CEILING bytes (today's size plus a margin): the message lists the
    largest groups of functions, to find the inline function that made them.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

# Bytes of functions in the object below on Debian 12's g++ 12: 758 KB when written, 1377 KB with the
# bfloat16 regression. Raise it only for code every program must carry, and say so in the commit.
CEILING = 900_000
SIXTEEN_BIT = re.compile(r"\bdl::(BFloat16|Half)\b")


def name_part(demangled):
    """The function's name without its parameter list (and qualifiers after it)."""
    depth = 0
    for i in range(len(demangled) - 1, -1, -1):
        c = demangled[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return demangled[:i]
    return demangled


def group(name):
    out, depth = [], 0
    for c in name:
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out).split(" ")[-1]


def main():
    cxx = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = os.path.join(tmp, "empty.cpp"), os.path.join(tmp, "empty.o")
        with open(src, "w") as f:
            f.write("#include <dl/dl.hpp>\nint main() { return 0; }\n")
        cmd = cxx + ["-O0", "-DDL_COMPILED_KERNELS=1", "-fkeep-inline-functions", "-c", src, "-o", obj]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(" ".join(cmd), "\n", r.stderr[-4000:])
            return 1
        nm = subprocess.run(["nm", "-S", "-C", "--defined-only", obj], capture_output=True, text=True, check=True).stdout
    size, groups, sixteen = 0, collections.Counter(), []
    for line in nm.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[2] not in "TtWw":
            continue
        n, name = int(parts[1], 16), parts[3]
        size += n
        head = name_part(name)
        groups[group(head)] += n
        if "<" in head and SIXTEEN_BIT.search(head) and not head.startswith("std::numeric_limits<"):
            sixteen.append(name)
    print(f"#include <dl/dl.hpp> in compiled mode, -O0 -fkeep-inline-functions: {size} bytes of code (ceiling {CEILING})")
    failed = False
    if sixteen:
        failed = True
        print(f"FAIL: {len(sixteen)} dl templates instantiated for a 16-bit type by merely including dl/dl.hpp; an inline "
              "function names them (make it a template until a program calls it). First ones:")
        for n in sorted(sixteen)[:15]:
            print("   ", n[:240])
    if size > CEILING:
        failed = True
        print("FAIL: more code than the ceiling; the largest groups (look for a new inline function that names them):")
    if failed or "-v" in os.environ.get("DL_CHECK_VERBOSE", ""):
        for g, n in groups.most_common(25):
            print(f"  {n:>9}  {g[:160]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
