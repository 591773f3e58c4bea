#!/usr/bin/python3
"""Trains LeNet-5 on Fashion-MNIST in PyTorch and saves its weights for samples/pretrained_lenet5.cpp,
which loads them into dl::models::lenet5() and evaluates them in C++.

    /usr/bin/python3 samples/train_lenet5_pytorch.py [--epochs 2] [--out lenet5_fashion]

writes lenet5_fashion.pth (torch.save of the state dict) and lenet5_fashion.safetensors, and prints
the test accuracy PyTorch measured. Reads Debian's dataset-fashion-mnist (no torchvision needed).
"""
import argparse
import gzip
import json
import os
import struct
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = "/usr/share/datasets/fashion-mnist"


class LeNet5(nn.Module):
    """The same module as dl::models::LeNet5 (names, shapes, forward)."""

    def __init__(self, num_classes=10, in_channels=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.conv1(x)), 2)
        y = F.max_pool2d(F.relu(self.conv2(y)), 2).flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(y)))))


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load(split):
    names = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}[split]
    files = [os.path.join(ROOT, n + ".gz") if os.path.exists(os.path.join(ROOT, n + ".gz")) else os.path.join(ROOT, n)
             for n in names]
    images = torch.from_numpy(read_idx(files[0]).copy()).float().div(255).sub(0.2860).div(0.3530).unsqueeze(1)
    labels = torch.from_numpy(read_idx(files[1]).copy()).long()
    return images, labels


def save_safetensors(sd, path):
    header, blobs, offset = OrderedDict(), [], 0
    for k, v in sd.items():
        b = v.contiguous().numpy().tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--out", default="lenet5_fashion")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    x, y = load("train")
    tx, ty = load("test")
    net = LeNet5()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(a.epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = perm[i:i + 128]
            loss = F.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch + 1}: last batch loss {loss.item():.4f}")
    net.eval()
    with torch.no_grad():
        correct = (net(tx).argmax(1) == ty).sum().item()
    torch.save(net.state_dict(), a.out + ".pth")
    save_safetensors(net.state_dict(), a.out + ".safetensors")
    print(f"wrote {a.out}.pth and {a.out}.safetensors")
    print(f"PyTorch test accuracy: {100.0 * correct / len(tx):.2f}%")


if __name__ == "__main__":
    main()
