#!/usr/bin/python3
"""PyTorch side of bench/resnet_step.cpp: torchvision's ResNet-18 with CIFAR's 3x3 stem written in
torch.nn (BasicBlocks, 1x1 shortcuts with batch norm), one training step on 32x32 inputs; prints the
median time of 5 steps in ms.  usage: resnet_step.py BATCH"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from bench_common import median_ms

torch.set_num_threads(2)
torch.manual_seed(0)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet18Cifar(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        y = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


batch = int(sys.argv[1])
net = ResNet18Cifar()
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))


def step():
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


print(median_ms(step, 5), flush=True)
