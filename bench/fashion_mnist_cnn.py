"""PyTorch twin of samples/fashion_mnist_cnn.cpp: the same CNN (three 3x3 convolutions with batch norm
and max pooling, dropout 0.1, a linear classifier), random horizontal flips, SGD with Nesterov
momentum 0.9 and weight decay 5e-4 under OneCycleLR(max_lr 0.1), batch 128, 2 threads; prints the
seconds per epoch and the accuracies as the sample does.
  env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 bench/fashion_mnist_cnn.py [epochs]"""
import gzip
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(2)
torch.manual_seed(0)
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
root = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"


def idx(path, offset):
    with gzip.open(f"{root}/{path}", "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load(prefix):
    x = torch.from_numpy(idx(f"{prefix}-images-idx3-ubyte.gz", 16).copy()).float().div(255).view(-1, 1, 28, 28)
    y = torch.from_numpy(idx(f"{prefix}-labels-idx1-ubyte.gz", 8).copy()).long()
    return (x - 0.2860) / 0.3530, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(1, 24, 3, padding=1, bias=False), nn.BatchNorm2d(24)
        self.conv2, self.bn2 = nn.Conv2d(24, 48, 3, padding=1, bias=False), nn.BatchNorm2d(48)
        self.conv3, self.bn3 = nn.Conv2d(48, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(64 * 3 * 3, 10)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        y = F.max_pool2d(F.relu(self.bn2(self.conv2(y))), 2)
        y = F.max_pool2d(F.relu(self.bn3(self.conv3(y))), 2)
        return self.fc(self.drop(y.flatten(1)))


xtr, ytr = load("train")
xte, yte = load("t10k")


class Flips(torch.utils.data.Dataset):
    def __len__(self):
        return len(xtr)

    def __getitem__(self, i):
        x = xtr[i]
        return (x.flip(-1) if torch.rand(()) < 0.5 else x), ytr[i]


loader = torch.utils.data.DataLoader(Flips(), batch_size=128, shuffle=True, num_workers=2)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=epochs * len(loader))
for epoch in range(1, epochs + 1):
    net.train()
    t0 = time.perf_counter()
    total, correct, n = 0.0, 0, 0
    for images, labels in loader:
        logits = net(images)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item() * len(labels)
        correct += (logits.argmax(1) == labels).sum().item()
        n += len(labels)
    seconds = time.perf_counter() - t0
    net.eval()
    with torch.no_grad():
        acc = sum((net(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item() for i in range(0, len(xte), 1000)) / len(xte)
    print(f"epoch {epoch}/{epochs}  train loss {total / n:.4f} acc {100 * correct / n:.2f}%  test acc {100 * acc:.2f}%  "
          f"({seconds:.1f} s, {n / seconds:.0f} img/s)", flush=True)
