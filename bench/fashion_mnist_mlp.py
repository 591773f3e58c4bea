"""PyTorch twin of samples/fashion_mnist_mlp.cpp: the same MLP (784-256-128-10, ReLU), SGD with
momentum 0.9 and lr 0.05, batch 128, shuffled, Normalize(0.2860, 0.3530), 2 threads; prints the
seconds per epoch and the test accuracy, as the sample does.
  env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 bench/fashion_mnist_mlp.py"""
import gzip
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(2)
torch.manual_seed(0)
root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def idx(path, offset):
    with gzip.open(f"{root}/{path}", "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load(prefix):
    x = torch.from_numpy(idx(f"{prefix}-images-idx3-ubyte.gz", 16).copy()).float().div(255).view(-1, 784)
    y = torch.from_numpy(idx(f"{prefix}-labels-idx1-ubyte.gz", 8).copy()).long()
    return (x - 0.2860) / 0.3530, y


xtr, ytr = load("train")
xte, yte = load("t10k")
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_size=128, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(1, epochs + 1):
    t0 = time.perf_counter()
    total, n = 0.0, 0
    for images, labels in loader:
        loss = F.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        n += 1
    seconds = time.perf_counter() - t0
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item() * 100
    print(f"epoch {epoch}  train loss {total / n:.4f}  test accuracy {acc:.2f}%  ({seconds:.2f} s)", flush=True)
