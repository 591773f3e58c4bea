#!/usr/bin/python3
"""dl's distributed training against PyTorch's (torch.distributed on gloo, DistributedDataParallel),
two processes on this machine, run alternately.

  /usr/bin/python3 bench/distributed.py build/bench/bench_distributed [--runs 3] [--np 2]

Each run starts `mpirun -np 2 bench_distributed allreduce|ddp` (dl; medians of interleaved rounds
inside) and then the PyTorch twin below with the same model, batch and thread count per process.
The table shows the median over runs. The all_reduce rows also carry dl's overhead over
MPI_Allreduce called directly on the same buffer.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

MLP = [1024, 2048, 2048, 2048, 1024, 10]
BATCH = 32


def torch_worker(rank, world, port, rounds, out_path):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    lines = []
    # all_reduce
    size = 4096
    while size <= 64 << 20:
        t = torch.ones(size // 4)
        reps = 50 if size <= 1 << 20 else 10 if size <= 16 << 20 else 4
        times = []
        for _ in range(rounds):
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(t)
            times.append((time.perf_counter() - t0) / reps * 1e6)
        lines.append(f"allreduce_{size}B {statistics.median(times):.1f}")
        size *= 4
    # DDP step
    torch.manual_seed(0)
    layers = []
    for i in range(len(MLP) - 1):
        layers.append(nn.Linear(MLP[i], MLP[i + 1]))
        if i < len(MLP) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(BATCH, MLP[0])
    y = torch.randint(0, 10, (BATCH,))

    def step():
        opt.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    times = []
    for _ in range(rounds):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(5):
            step()
        times.append((time.perf_counter() - t0) / 5 * 1e3)
    lines.append(f"ddp_step_overlapped {statistics.median(times):.2f}")
    if rank == 0:
        with open(out_path, "w") as f:
            f.write("\n".join(lines) + "\n")
    dist.destroy_process_group()


def run_torch(world, rounds, port):
    import tempfile

    import torch.multiprocessing as mp

    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as f:
        path = f.name
    mp.spawn(torch_worker, args=(world, port, rounds, path), nprocs=world, join=True)
    res = {}
    with open(path) as f:
        for line in f:
            k, v = line.split()
            res[k] = float(v)
    os.unlink(path)
    return res


def run_dl(exe, world, rounds):
    res = {}
    base = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(world)]
    for mode in ("allreduce", "ddp"):
        out = subprocess.run(base + [exe, mode, str(rounds)], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"(allreduce_\d+B) dl ([\d.]+) us  mpi ([\d.]+) us", line)
            if m:
                res[m.group(1)] = float(m.group(2))
                res[m.group(1) + "_mpi"] = float(m.group(3))
                continue
            m = re.match(r"(\w+) ([\d.]+) ms", line)
            if m:
                res[m.group(1)] = float(m.group(2))
            if line.startswith("#"):
                res.setdefault("_notes", []).append(line)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--np", type=int, default=2)
    a = ap.parse_args()
    dl_runs, torch_runs = [], []
    for r in range(a.runs):
        dl_runs.append(run_dl(a.exe, a.np, a.rounds))
        torch_runs.append(run_torch(a.np, a.rounds, 29500 + r))
    med = lambda runs, k: statistics.median(x[k] for x in runs)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"{a.np} processes, median of {a.runs} alternating runs (load average {load})")
    for n in dl_runs[0].get("_notes", []):
        print(n)
    print("| | dl | MPI_Allreduce direct | dl overhead | PyTorch gloo | PyTorch / dl |")
    print("|---|---|---|---|---|---|")
    for k in sorted((k for k in dl_runs[0] if re.fullmatch(r"allreduce_\d+B", k)), key=lambda s: int(s[10:-1])):
        d, m, t = med(dl_runs, k), med(dl_runs, k + "_mpi"), med(torch_runs, k)
        size = int(k[10:-1])
        label = f"all_reduce {size // 1024} KB" if size < 1 << 20 else f"all_reduce {size >> 20} MB"
        print(f"| {label} | {d:.1f} us | {m:.1f} us | {100 * (d / m - 1):+.1f}% | {t:.1f} us | {t / d:.2f}x |")
    d_ov, d_bl, d_lo = med(dl_runs, "ddp_step_overlapped"), med(dl_runs, "ddp_step_blocking_allreduce"), med(dl_runs, "step_without_communication")
    t_ov = med(torch_runs, "ddp_step_overlapped")
    print(f"| DDP step, buckets during backward | {d_ov:.2f} ms | | | {t_ov:.2f} ms | {t_ov / d_ov:.2f}x |")
    if "ddp_step_fp16_compress_hook" in dl_runs[0]:
        print(f"| same step, fp16_compress_hook | {med(dl_runs, 'ddp_step_fp16_compress_hook'):.2f} ms | | | | |")
    print(f"| same step, one all-reduce after backward | {d_bl:.2f} ms | | | | |")
    print(f"| same step, no communication | {d_lo:.2f} ms | | | | |")


if __name__ == "__main__":
    sys.exit(main())
