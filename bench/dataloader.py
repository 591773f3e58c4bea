#!/usr/bin/python3
"""DataLoader throughput, dl vs PyTorch, over the real Fashion-MNIST (60k train images, batch 128,
shuffle, ToTensor + Normalize), with 0 and 2 workers.

  /usr/bin/python3 bench/dataloader.py [--dl build/bench/bench_dataloader] [--rounds 3] [--passes 5]

Rounds alternate dl (the C++ bench, a subprocess) and PyTorch, A B A B, and the medians of all
passes are compared. PyTorch's side: torchvision is not installed here, so its FashionMNIST is
re-created as torchvision does it (uint8 [60000, 28, 28] in memory, __getitem__ returns
(transform(img), int(label))) with ToTensor + Normalize written in torch ops; torchvision's own
path also converts each image to a PIL image first, so these PyTorch figures are a lower bound.
"bare" is a TensorDataset of already-normalised images (no per-sample transform): the anchor.
"""
import argparse
import gzip
import os
import statistics
import subprocess
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

ROOT = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def load(root):
    with gzip.open(os.path.join(root, "train-images-idx3-ubyte.gz")) as f:
        images = torch.frombuffer(bytearray(f.read()[16:]), dtype=torch.uint8).view(-1, 28, 28)
    with gzip.open(os.path.join(root, "train-labels-idx1-ubyte.gz")) as f:
        labels = torch.frombuffer(bytearray(f.read()[8:]), dtype=torch.uint8).long()
    return images, labels


class ToTensor:
    """torchvision.transforms.ToTensor for a [H, W] uint8 image: [1, H, W] float in [0, 1]."""

    def __call__(self, img):
        return img.unsqueeze(0).contiguous().float().div(255)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = torch.tensor(mean).view(-1, 1, 1), torch.tensor(std).view(-1, 1, 1)

    def __call__(self, x):
        return (x - self.mean) / self.std


class Compose:
    def __init__(self, ts):
        self.ts = ts

    def __call__(self, x):
        for t in self.ts:
            x = t(x)
        return x


class FashionMNIST(Dataset):
    """torchvision.datasets.FashionMNIST's __getitem__ without the PIL round trip."""

    def __init__(self, images, labels, transform):
        self.data, self.targets, self.transform = images, labels, transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.transform(self.data[index]), int(self.targets[index])


def time_passes(dataset, workers, passes, **kw):
    loader = DataLoader(dataset, batch_size=128, shuffle=True, num_workers=workers,
                        generator=torch.Generator().manual_seed(0), **kw)
    times = []
    for p in range(passes + 1):  # pass 0 warms up, as in the C++ bench
        t0 = time.perf_counter()
        for images, labels in loader:
            pass
        if p > 0:
            times.append(time.perf_counter() - t0)
    return times


def run_dl(binary, root, passes):
    out = subprocess.run([binary, root, str(passes)], check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            _, name, workers, *times = line.split()
            res[(name, int(workers))] = [float(t) for t in times]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dl", default=os.path.join(os.path.dirname(__file__), "..", "build", "bench", "bench_dataloader"))
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(2)

    images, labels = load(args.root)
    tv = FashionMNIST(images, labels, Compose([ToTensor(), Normalize([MEAN], [STD])]))
    bare = TensorDataset(((images.float() / 255 - MEAN) / STD).unsqueeze(1), labels)

    results = {}

    def add(key, times):
        results.setdefault(key, []).extend(times)

    for r in range(args.rounds):
        if os.path.exists(args.dl):
            for key, times in run_dl(args.dl, args.root, args.passes).items():
                add(key, times)
        for workers in (0, 2):
            add(("torch", workers), time_passes(tv, workers, args.passes))
            if workers:
                add(("torch-persistent", workers), time_passes(tv, workers, args.passes, persistent_workers=True))
        add(("torch-bare", 0), time_passes(bare, 0, args.passes))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"Full pass over 60000 Fashion-MNIST images, batch 128, shuffle, ToTensor+Normalize "
          f"(medians of {args.rounds} x {args.passes} passes; torch {torch.__version__}, 2 threads)")
    print(f"{'config':<40}{'workers':>8}{'median s':>11}{'Msamples/s':>12}{'torch/dl':>10}")
    for workers in (0, 2):
        ref = med.get(("torch", workers))
        for name in ("dl-fused", "dl-per-sample", "torch", "torch-persistent", "torch-bare"):
            if (name, workers) not in med:
                continue
            t = med[(name, workers)]
            ratio = f"{ref / t:9.1f}x" if name.startswith("dl") and ref else ""
            print(f"{name:<40}{workers:>8}{t:>11.4f}{60000 / t / 1e6:>12.2f}{ratio:>10}")
    if ("dl-fused", 0) in med and ("torch-bare", 0) in med:
        print(f"dl-fused (0 workers) vs the bare PyTorch TensorDataset pass: "
              f"{med[('torch-bare', 0)] / med[('dl-fused', 0)]:.1f}x")


if __name__ == "__main__":
    main()
