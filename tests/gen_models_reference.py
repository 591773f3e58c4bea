#!/usr/bin/python3
"""Writes the references of tests/models.cpp from torchvision (Debian's python3-torchvision 0.14 with
PyTorch 1.13):  /usr/bin/python3 tests/gen_models_reference.py

- tests/data/models/print.txt: printouts and "name shape" lists of the state dicts, per model.
- tests/data/models_ref.bin: outputs of models whose state dicts are filled with det() values (the
  same fill as tests/gen_nn_reference.py: entry i gets det(shape, 1000 + i); running_var |.| + 0.5),
  in eval and train mode, for det() inputs.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "models")
ref = Writer("models_ref.bin")


class LeNet5(nn.Module):
    """dl::models::LeNet5's PyTorch definition."""

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


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def resnet18_cifar(num_classes=10):
    m = torchvision.models.resnet18(num_classes=num_classes)
    m.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    m.maxpool = nn.Identity()
    return m


def fill_det(m):
    with torch.no_grad():
        for i, (k, v) in enumerate(m.state_dict().items()):
            if v.dtype.is_floating_point:
                d = det(v.shape, 1000 + i, torch.float64)
                if k.endswith("running_var"):
                    d = d.abs() + 0.5
                v.copy_(d.to(v.dtype) * (0.1 if v.dim() > 1 else 1.0))
            else:
                v.fill_(2)


models = {
    "resnet18": (lambda: torchvision.models.resnet18(), (1, 3, 64, 64)),
    "resnet34": (lambda: torchvision.models.resnet34(num_classes=100), (2, 3, 64, 64)),
    "resnet18_cifar": (resnet18_cifar, (2, 3, 32, 32)),
    "vgg11_bn": (lambda: torchvision.models.vgg11_bn(), None),
    "lenet5": (LeNet5, (3, 1, 28, 28)),
    "mlp": (mlp, (3, 1, 28, 28)),
}
os.makedirs(DATA, exist_ok=True)
with open(os.path.join(DATA, "print.txt"), "w") as f:
    for name, (make, shape) in models.items():
        m = make()
        f.write(name + "\n" + repr(m) + "\n%%\n")
        f.write(name + "/keys\n")
        for k, v in m.state_dict().items():
            f.write(f"{k} {list(v.shape)}\n")
        f.write("%%\n")
        ref.put(f"{name}/num_parameters", torch.tensor([sum(p.numel() for p in m.parameters())]))
        if shape is None:
            continue
        fill_det(m)
        x = det(shape, 7).float()
        m.eval()
        with torch.no_grad():
            ref.put(f"{name}/eval", m(x))
        m.train()
        ref.put(f"{name}/train", m(x))
ref.save()
