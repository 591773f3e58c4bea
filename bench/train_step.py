#!/usr/bin/python3
"""PyTorch side of bench/train_step.cpp: prints, per round, the median time (ms) of one training step of
the MLP 784-256-128-10 (batch 128) and of LeNet-5 (batch 64): forward, cross entropy, backward, SGD momentum.
usage: train_step.py ROUNDS"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(2)
torch.manual_seed(0)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.conv1(x)), 2)
        y = F.max_pool2d(F.relu(self.conv2(y)), 2).flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(y)))))


mlp = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
lenet = LeNet5()
x, y = torch.randn(128, 784), torch.randint(0, 10, (128,))
img, yl = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
o1 = torch.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9)
o2 = torch.optim.SGD(lenet.parameters(), lr=0.01, momentum=0.9)


def step(net, opt, a, b):
    loss = F.cross_entropy(net(a), b)
    opt.zero_grad()
    loss.backward()
    opt.step()


def step_ms(f, steps):
    for _ in range(steps):
        f()
    samples = []
    for _ in range(9):
        t0 = time.perf_counter()
        for _ in range(steps):
            f()
        samples.append((time.perf_counter() - t0) / steps * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


for _ in range(int(sys.argv[1])):
    print(step_ms(lambda: step(mlp, o1, x, y), 50), step_ms(lambda: step(lenet, o2, img, yl), 20), flush=True)
