#!/usr/bin/python3
"""Writes the PyTorch references of tests/nn.cpp (modules: defaults, options, train/eval, state dicts,
printouts, interop). Run with Debian's PyTorch 1.13:  /usr/bin/python3 tests/gen_nn_reference.py

- tests/data/nn_ref.bin: for each case, the module's state dict filled with det() values
  ("<case>/sd/<key>"), its output for a det() input in train and eval mode ("<case>/train",
  "<case>/eval"), the input and parameter gradients of the train output ("<case>/gx",
  "<case>/g/<key>") and the buffers after the train step ("<case>/after/<key>").
- tests/data/nn/print.txt: printouts (repr) of modules, for exact comparison.
- tests/data/nn/lenet.pth and lenet.safetensors: a LeNet with BatchNorm whose weights come from a
  few SGD steps in PyTorch, and nn_ref.bin "lenet/out" its eval output on det() input.
- tests/data/nn/dl_saved_check.txt: whether PyTorch reads back the safetensors file tests/nn.cpp
  writes to the temp directory (run test_nn first, then this script again, to refresh).
"""
import json
import os
import struct
import sys
import tempfile
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

torch.set_default_dtype(torch.float32)
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "nn")
ref = Writer("nn_ref.bin")


def fill_det(m, seed):
    """Every float parameter and buffer <- det values (running_var made positive)."""
    sd = m.state_dict()
    with torch.no_grad():
        for i, (k, v) in enumerate(sd.items()):
            if v.dtype.is_floating_point:
                d = det(v.shape, seed + i, torch.float64)
                if k.endswith("running_var"):
                    d = d.abs() + 0.5
                v.copy_(d.to(v.dtype))
            elif k.endswith("num_batches_tracked"):
                v.fill_(3)


def case(name, module, in_shape, seed=1, in_kind="float", target=None):
    fill_det(module, seed * 100)
    for k, v in module.state_dict().items():
        ref.put(f"{name}/sd/{k}", v)
    if in_kind == "float":
        x = det(in_shape, seed).float().requires_grad_(True)
    else:  # int64 indices in [0, in_kind)
        x = (det(in_shape, seed) * 1000).long().abs() % in_kind
    args = (x,) if target is None else (x, target)
    module.train()
    out = module(*args)
    if isinstance(out, tuple):
        out = out[0]
    ref.put(f"{name}/train", out)
    params = [p for p in module.parameters()]
    pnames = [n for n, _ in module.named_parameters()]
    ins = ([x] if x.dtype.is_floating_point else []) + params
    if out.requires_grad:
        loss = (out * det(out.shape, 999, out.dtype)).sum()
        gs = torch.autograd.grad(loss, ins, allow_unused=True)
        if x.dtype.is_floating_point:
            ref.put(f"{name}/gx", gs[0])
            gs = gs[1:]
        for n, g in zip(pnames, gs):
            ref.put(f"{name}/g/{n}", g if g is not None else torch.zeros(0))
    for k, v in module.state_dict().items():
        if k not in dict(module.named_parameters()):
            ref.put(f"{name}/after/{k}", v)
    module.eval()
    with torch.no_grad():
        out = module(*args)
        if isinstance(out, tuple):
            out = out[0]
        ref.put(f"{name}/eval", out)


# ------------------------------------------------------------------------------ module cases
case("linear", nn.Linear(5, 3), (4, 5))
case("linear_nobias", nn.Linear(5, 3, bias=False), (2, 3, 5))
case("bilinear", None or nn.Bilinear(3, 4, 2), (5, 3), target=det((5, 4), 7).float())
case("conv1d", nn.Conv1d(2, 4, 3, stride=2, padding=1), (2, 2, 9))
case("conv2d", nn.Conv2d(3, 4, 3, stride=1, padding=1, bias=False), (2, 3, 6, 5))
case("conv2d_groups", nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2), (2, 4, 7, 6))
case("conv2d_reflect", nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 5, 5))
case("conv2d_circular", nn.Conv2d(2, 3, 3, padding=2, padding_mode="circular"), (1, 2, 5, 6))
case("conv3d", nn.Conv3d(2, 3, 2, stride=(1, 2, 1), padding=1), (1, 2, 4, 5, 3))
case("convt1d", nn.ConvTranspose1d(3, 2, 3, stride=2, output_padding=1), (2, 3, 5))
case("convt2d", nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2), (1, 4, 3, 4))
case("maxpool2d", nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), (2, 3, 7, 6))
case("maxpool1d", nn.MaxPool1d(2), (2, 3, 7))
case("avgpool2d", nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 2, 6, 7))
case("avgpool1d", nn.AvgPool1d(3, stride=2), (2, 2, 9))
case("adaptiveavg2d", nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 8))
case("adaptivemax2d", nn.AdaptiveMaxPool2d(2), (2, 3, 5, 5))
case("adaptiveavg1d", nn.AdaptiveAvgPool1d(3), (2, 3, 8))
case("bn1d", nn.BatchNorm1d(4), (6, 4))
case("bn1d_3d", nn.BatchNorm1d(3, momentum=None), (4, 3, 5))
case("bn2d", nn.BatchNorm2d(3), (4, 3, 5, 4))
case("bn2d_noaffine", nn.BatchNorm2d(3, affine=False, momentum=0.3), (2, 3, 4, 4))
case("bn2d_nostats", nn.BatchNorm2d(3, track_running_stats=False), (2, 3, 4, 4))
case("bn3d", nn.BatchNorm3d(2), (2, 2, 3, 3, 2))
case("layernorm", nn.LayerNorm([4, 5]), (3, 4, 5))
case("groupnorm", nn.GroupNorm(2, 6), (2, 6, 3, 4))
case("embedding", nn.Embedding(10, 4, padding_idx=2), (3, 5), in_kind=10)
case("prelu", nn.PReLU(3), (2, 3, 4))
case("flatten", nn.Flatten(), (2, 3, 4))
case("unflatten", nn.Unflatten(1, (2, 3)), (4, 6))
case("zeropad2d", nn.ZeroPad2d((1, 2, 0, 1)), (1, 2, 3, 3))
case("reflpad2d", nn.ReflectionPad2d(1), (1, 2, 3, 3))
for n, m in [("relu", nn.ReLU()), ("relu6", nn.ReLU6()), ("leakyrelu", nn.LeakyReLU(0.2)), ("elu", nn.ELU(0.5)),
             ("selu", nn.SELU()), ("gelu", nn.GELU()), ("gelu_tanh", nn.GELU(approximate="tanh")), ("silu", nn.SiLU()),
             ("mish", nn.Mish()), ("sigmoid", nn.Sigmoid()), ("tanh", nn.Tanh()), ("softplus", nn.Softplus(2, 1)),
             ("hardtanh", nn.Hardtanh(-0.5, 0.7)), ("softmax", nn.Softmax(dim=1)), ("logsoftmax", nn.LogSoftmax(dim=-1))]:
    case("act_" + n, m, (3, 4, 5))
tgt = torch.tensor([1, 0, 3, 2, 1, 1])
case("loss_ce", nn.CrossEntropyLoss(label_smoothing=0.1), (6, 4), target=tgt)
case("loss_ce_weight", nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5, 1.5]), ignore_index=3), (6, 4), target=tgt)
case("loss_nll", nn.NLLLoss(reduction="sum"), (6, 4), target=tgt)
case("loss_mse", nn.MSELoss(), (3, 4), target=det((3, 4), 5).float())
case("loss_bcelogits", nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 2.0, 3.0, 0.5])), (3, 4),
     target=(det((3, 4), 5) > 0).float())


# A static Sequential whose Linear+ReLU pairs are fused in dl, against the plain PyTorch chain.
case("seq_mlp", nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Dropout(0.0), nn.Sigmoid(),
                              nn.Tanh(), nn.Linear(4, 2)), (3, 6))


# ------------------------------------------------------------------------------ the reference Net
class Net(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, n_classes)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        y = F.max_pool2d(F.relu(self.conv2(y)), 2).flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(y)))))


torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
for step in range(3):
    x = det((8, 1, 32, 32), 10 + step).float()
    y = torch.arange(8) % 10
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
net.eval()
os.makedirs(DATA, exist_ok=True)
torch.save(net.state_dict(), os.path.join(DATA, "lenet.pth"))


def save_safetensors(sd, path):
    names = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8",
             torch.bool: "BOOL"}
    header, blobs, offset = OrderedDict(), [], 0
    for k, v in sd.items():
        b = v.contiguous().numpy().tobytes()
        header[k] = {"dtype": names[v.dtype], "shape": list(v.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_safetensors(path):
    types = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8,
             "BOOL": torch.bool}
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = OrderedDict()
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = torch.frombuffer(bytearray(data[8 + n + b:8 + n + e]), dtype=types[v["dtype"]]).reshape(v["shape"])
    return out


save_safetensors(net.state_dict(), os.path.join(DATA, "lenet.safetensors"))
with torch.no_grad():
    ref.put("lenet/out", net(det((4, 1, 32, 32), 77).float()))

# ------------------------------------------------------------------------------ printouts
prints = OrderedDict()
prints["net"] = Net()
prints["seq"] = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
prints["named"] = nn.Sequential(OrderedDict([("conv1", nn.Conv2d(3, 3, 3)), ("bn1", nn.BatchNorm2d(3)), ("relu1", nn.ReLU())]))
prints["nested"] = nn.Sequential(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4, momentum=None)),
                                 nn.ModuleList([nn.Dropout(0.25), nn.Identity()]), nn.Flatten(),
                                 nn.ModuleDict({"head": nn.Linear(4, 2)}))
prints["layers"] = nn.Sequential(
    nn.Conv1d(2, 4, 3, padding_mode="reflect"), nn.Conv3d(2, 4, 3), nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
    nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((1, 1)),
    nn.AdaptiveMaxPool2d(2), nn.MaxPool1d(2), nn.AvgPool1d(3), nn.LayerNorm(10), nn.GroupNorm(2, 6),
    nn.Embedding(10, 3, padding_idx=0), nn.Bilinear(5, 4, 3), nn.Unflatten(1, (2, 5)), nn.ZeroPad2d(1),
    nn.ConstantPad2d((1, 2, 3, 4), 3.5), nn.Dropout2d(0.2), nn.ReLU(inplace=True), nn.LeakyReLU(), nn.ELU(), nn.GELU(),
    nn.GELU(approximate="tanh"), nn.Softplus(), nn.Hardtanh(), nn.PReLU(), nn.Softmax(dim=1), nn.LogSoftmax(dim=1),
    nn.SiLU(), nn.Mish(), nn.SELU(), nn.Sigmoid(), nn.Tanh(), nn.BatchNorm1d(5, affine=False),
    nn.CrossEntropyLoss(), nn.MSELoss())
prints["paramlist"] = nn.ParameterList([nn.Parameter(torch.zeros(10, 10)), nn.Parameter(torch.zeros(3))])
with open(os.path.join(DATA, "print.txt"), "w") as f:
    for k, m in prints.items():
        f.write(k + "\n" + repr(m) + "\n%%\n")

# ------------------------------------------------------------------------------ dl -> PyTorch
dl_file = os.path.join(tempfile.gettempdir(), "dl_test_nn_saved_by_dl.safetensors")
if os.path.exists(dl_file):
    sd = load_safetensors(dl_file)
    back = Net()
    back.load_state_dict(sd)
    back.eval()
    with torch.no_grad():
        diff = (back(det((4, 1, 32, 32), 77).float()) - net(det((4, 1, 32, 32), 77).float())).abs().max().item()
    with open(os.path.join(DATA, "dl_saved_check.txt"), "w") as f:
        f.write(f"PyTorch {torch.__version__} loaded {len(sd)} tensors written by dl "
                f"({', '.join(sorted(set(str(v.dtype) for v in sd.values())))}) into Net; "
                f"max |output difference| = {diff:.3g}\n")
    print(open(os.path.join(DATA, "dl_saved_check.txt")).read())

ref.save()
