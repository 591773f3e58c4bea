#!/usr/bin/env python3
"""dl's floor plan, checked (see docs/architecture.md).

  floor_plan.py layers INCLUDE_DIR
      Every `#include "..."` between dl's headers looks down (or sideways within a layer): a header
      never includes one from a layer above it, and nothing outside dl/cuda/ (but the dl/cuda.hpp
      umbrella) includes a dl/cuda/ header: the GPU is reached through the device dispatch table.
  floor_plan.py standalone INCLUDE_DIR CXX [FLAGS...]
      Every public header compiles on its own: one translation unit per header that includes just
      that header, compiled with `CXX FLAGS -fsyntax-only`, in parallel (dl/cuda/ headers need nvcc
      and are left to the CUDA build). Each header and each -inl.hpp body file is compiled in
      compiled mode (-DDL_COMPILED_KERNELS=1), where a header does not pull in the bodies of every
      header below it: header-only mode differs only by those bodies, each checked in its own
      -inl.hpp, and g++ instantiates every template an inline body names, so a header-only
      translation unit per header paid for the bodies of the whole library below it again (the
      check took 584 CPU-s that way, 409 s this way, with the -inl.hpp files now checked too). The
      umbrellas dl/dl.hpp and dl/torch.hpp are compiled in both modes.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time

# Bottom to top. A header's layer is the first pattern that matches its path under include/dl.
LAYERS = [
    ("core", [r"config\.hpp", r"error\.hpp", r"grad_mode\.hpp", r"source_location\.hpp", r"half\.hpp", r"dtype\.hpp", r"shape\.hpp",
              r"device\.hpp", r"xsimd\.hpp", r"parallel\.hpp", r"profiler_hook\.hpp", r"deterministic\.hpp"]),
    ("memory", [r"storage\.hpp", r"allocator\.hpp", r"tensor_impl\.hpp", r"random\.hpp", r"backend/.*"]),
    ("expr", [r"expr/.*"]),
    ("autograd", [r"autograd/(?!gradcheck|function).*"]),
    # autograd/function.hpp (custom Functions) is written with Tensor, so it sits above it.
    ("tensor", [r"tensor/.*", r"autograd/function\.hpp"]),
    # dl/tensor.hpp, the tensor API (the class, views, in-place ops, printing and the reductions), sits
    # with the ops it gathers; every layer above includes it.
    ("ops", [r"tensor\.hpp", r"any_tensor\.hpp", r"ops/.*", r"linalg\.hpp", r"cuda/.*", r"autograd/gradcheck\.hpp"]),
    ("libraries", [r"io/.*", r"distributed/.*", r"data/.*", r"profiler\.hpp", r"utils/.*", r"nn\.hpp", r"nn/.*", r"distributions\.hpp",
                   r"distributions/.*", r"optim\.hpp", r"optim/.*", r"models\.hpp", r"models/.*"]),
    ("umbrellas", [r"dl\.hpp", r"cuda\.hpp", r"distributed\.hpp"]),
    # dl/torch.hpp: libtorch's spellings over the whole library.
    ("compat", [r"torch\.hpp", r"torch/.*"]),
]
# Within the libraries layer, these look down on one another in this order (a module's state dict
# is io's; DistributedSampler reads the default process group; an optimizer steps a module's parameters; a model is made of modules).
LIBRARY_ORDER = [r"io/", r"profiler\.hpp|utils/", r"distributed/", r"data/", r"distributions", r"nn", r"optim", r"models"]


def layer_of(rel):
    for rank, (name, patterns) in enumerate(LAYERS):
        if any(re.fullmatch(p, rel) for p in patterns):
            return rank, name
    return None, None


def library_rank(rel):
    for i, p in enumerate(LIBRARY_ORDER):
        if re.match(p, rel):
            return i
    return None


def headers(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".hpp"):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def check_layers(root):
    errors = []
    for rel in headers(root):
        rank, name = layer_of(rel)
        if rank is None:
            errors.append(f"dl/{rel}: in no layer (add it to LAYERS in tests/static/floor_plan.py and docs/architecture.md)")
            continue
        with open(os.path.join(root, rel)) as f:
            text = f.read()
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
            if target.startswith(".."):
                continue
            trank, tname = layer_of(target)
            if trank is None:
                continue
            if target.startswith("cuda/") and not (rel.startswith("cuda/") or rel == "cuda.hpp"):
                errors.append(f"dl/{rel} ({name}) includes dl/{target}: only dl/cuda/ and dl/cuda.hpp include dl/cuda/ "
                              "(reach the GPU through dl/backend/dispatch.hpp)")
            elif trank > rank:
                errors.append(f"dl/{rel} ({name}) includes dl/{target} ({tname}), a layer above it")
            elif trank == rank and name == "libraries":
                a, b = library_rank(rel), library_rank(target)
                if a is not None and b is not None and b > a:
                    errors.append(f"dl/{rel} includes dl/{target}: {LIBRARY_ORDER[b]} sits above {LIBRARY_ORDER[a]}")
    for e in errors:
        print(e)
    n = len(headers(root))
    print(f"{n} headers, {len(errors)} include(s) against the floor plan")
    return 1 if errors else 0


def check_standalone(root, cxx):
    compiled = ["-DDL_COMPILED_KERNELS=1"]
    # dl/tensor/instances.hpp is dl/tensor.hpp's tail (compiled mode's extern templates of what it
    # gathers, declared only in compiled mode): checked through dl/tensor.hpp, and alone in header-only mode.
    todo = [(h, [] if h == "tensor/instances.hpp" else compiled) for h in headers(root) if not h.startswith("cuda/")]
    todo += [(h, []) for h in ("dl.hpp", "torch.hpp")]
    include_dir = os.path.dirname(os.path.abspath(root))

    # The MPI headers (dl/distributed/mpi.hpp and what includes it) need MPI's include directory.
    mpi_flags = []
    try:
        mpi_flags = subprocess.run(["mpicxx", "--showme:compile"], capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pass

    def needs_mpi(rel):
        return rel in ("distributed.hpp", "distributed/mpi.hpp", "distributed/init.hpp")

    if not mpi_flags:
        todo = [(h, mode) for h, mode in todo if not needs_mpi(h)]

    def compile_one(job):
        rel, mode = job
        with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
            f.write(f"#include <dl/{rel}>\n")
            name = f.name
        try:
            extra = mpi_flags if needs_mpi(rel) else []
            start = time.monotonic()
            r = subprocess.run(cxx + extra + mode + ["-fsyntax-only", "-I", include_dir, name], capture_output=True, text=True)
            seconds = time.monotonic() - start
        finally:
            os.unlink(name)
        return rel + ("" if mode else " (header-only)"), r.returncode, r.stderr, seconds

    failed = []
    times = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for rel, rc, err, seconds in pool.map(compile_one, todo):
            times.append((seconds, rel))
            if rc != 0:
                first = next((l for l in err.splitlines() if "error" in l), err.strip()[:300])
                failed.append(rel)
                print(f"dl/{rel} does not compile on its own:\n  {first}")
    print(f"{len(todo) - len(failed)} of {len(todo)} headers compile on their own")
    # What this check costs, and where (a header that parses slowly alone makes every user's build slower).
    print(f"{sum(t for t, _ in times):.0f} s in all; the slowest: " +
          ", ".join(f"dl/{rel} {t:.1f} s" for t, rel in sorted(times, reverse=True)[:8]))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("layers", "standalone"):
        print(__doc__)
        sys.exit(2)
    root = os.path.join(sys.argv[2], "dl")
    if sys.argv[1] == "layers":
        sys.exit(check_layers(root))
    sys.exit(check_standalone(root, sys.argv[3:]))
