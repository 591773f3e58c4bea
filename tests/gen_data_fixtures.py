#!/usr/bin/python3
"""Writes the fixtures of tests/data.cpp into tests/data/datasets/ (run with Debian's /usr/bin/python3,
which has torch 1.13):

  - small MNIST-format IDX files, plain and gzip, and broken ones (bad magic, truncated, corrupt
    gzip, out-of-range labels, image/label count mismatch);
  - small CIFAR-10 / CIFAR-100 binary batches, and broken ones;
  - reference.txt: PyTorch's outputs for the deterministic samplers, random_split's fractional
    lengths, bilinear/nearest resize (F.interpolate) and torchvision's rotate (re-implemented here
    with affine_grid/grid_sample, torchvision itself not being installed), and checksums of the
    real Fashion-MNIST when it is installed.

Pixel values follow formulas the C++ test recomputes (see pixel() below), so the files stay tiny.
"""
import gzip
import math
import os
import shutil
import struct

import torch
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DistributedSampler, SequentialSampler, random_split

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "datasets")
FASHION = "/usr/share/datasets/fashion-mnist"


def pixel(i, y, x, c=0):
    """Pixel value of image i at (y, x, channel c): the C++ test uses the same formula."""
    return (i * 31 + y * 7 + x * 3 + c * 50) % 256


def idx_images(n, h, w, magic=0x00000803):
    body = bytes(pixel(i, y, x) for i in range(n) for y in range(h) for x in range(w))
    return struct.pack(">IIII", magic, n, h, w) + body


def idx_labels(labels, magic=0x00000801):
    return struct.pack(">II", magic, len(labels)) + bytes(labels)


def write(path, data, gz=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if gz:
        data = gzip.compress(data, mtime=0)
    with open(path, "wb") as f:
        f.write(data)


def cifar_record(i, labels):
    # CHW planes: R, G, B of 32x32, pixel(i, y, x, c)
    return bytes(labels) + bytes(pixel(i, y, x, c) for c in range(3) for y in range(32) for x in range(32))


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    H, W = 5, 4
    # --- MNIST: train plain (6 images), test gzip (3 images)
    write(f"{OUT}/mnist/train-images-idx3-ubyte", idx_images(6, H, W))
    write(f"{OUT}/mnist/train-labels-idx1-ubyte", idx_labels([i % 10 for i in range(6)]))
    write(f"{OUT}/mnist/t10k-images-idx3-ubyte.gz", idx_images(3, H, W), gz=True)
    write(f"{OUT}/mnist/t10k-labels-idx1-ubyte.gz", idx_labels([(i * 3) % 10 for i in range(3)]), gz=True)
    # torchvision's layout root/FashionMNIST/raw
    write(f"{OUT}/tvlayout/FashionMNIST/raw/t10k-images-idx3-ubyte.gz", idx_images(3, H, W), gz=True)
    write(f"{OUT}/tvlayout/FashionMNIST/raw/t10k-labels-idx1-ubyte.gz", idx_labels([1, 2, 3]), gz=True)
    # --- broken IDX files
    write(f"{OUT}/idx/bad_magic", idx_labels([1, 2, 3], magic=0x00000803))
    write(f"{OUT}/idx/not_idx", b"GIF89a this is not an IDX file")
    good = idx_images(6, H, W)
    write(f"{OUT}/idx/truncated", good[:16 + 50])
    write(f"{OUT}/idx/truncated_header", good[:10])
    write(f"{OUT}/idx/huge_header", struct.pack(">IIII", 0x00000803, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF))
    gz = gzip.compress(idx_images(40, 28, 28), mtime=0)
    write(f"{OUT}/idx/truncated.gz", gz[: len(gz) // 2])
    bad = bytearray(gz)
    for k in range(20, 60):
        bad[k] ^= 0x5A
    write(f"{OUT}/idx/corrupt.gz", bytes(bad))
    # broken MNIST directories
    write(f"{OUT}/mnist_bad_label/train-images-idx3-ubyte", idx_images(3, H, W))
    write(f"{OUT}/mnist_bad_label/train-labels-idx1-ubyte", idx_labels([1, 12, 3]))
    write(f"{OUT}/mnist_mismatch/train-images-idx3-ubyte", idx_images(3, H, W))
    write(f"{OUT}/mnist_mismatch/train-labels-idx1-ubyte", idx_labels([1, 2]))
    write(f"{OUT}/mnist_swapped/train-images-idx3-ubyte", idx_labels([1, 2, 3]))
    write(f"{OUT}/mnist_swapped/train-labels-idx1-ubyte", idx_images(3, H, W))
    # --- CIFAR-10: one record per train batch, two in the test batch
    d = f"{OUT}/cifar10/cifar-10-batches-bin"
    for b in range(1, 6):
        write(f"{d}/data_batch_{b}.bin", cifar_record(b - 1, [(b - 1) % 10]))
    write(f"{d}/test_batch.bin", cifar_record(10, [3]) + cifar_record(11, [7]))
    write(f"{OUT}/cifar10_truncated/test_batch.bin", (cifar_record(0, [1]) + cifar_record(1, [2]))[:5000])
    write(f"{OUT}/cifar10_bad_label/test_batch.bin", cifar_record(0, [11]))
    # --- CIFAR-100: coarse label, fine label, pixels
    d = f"{OUT}/cifar100/cifar-100-binary"
    write(f"{d}/train.bin", cifar_record(0, [4, 30]) + cifar_record(1, [19, 99]))
    write(f"{d}/test.bin", cifar_record(2, [0, 0]))
    with open(f"{d}/fine_label_names.txt", "w") as f:
        f.write("".join(f"class{k}\n" for k in range(100)))

    ref = []

    def put(name, values):
        ref.append(name + " " + " ".join(repr(float(v)) if isinstance(v, float) else str(v) for v in values))

    # --- samplers whose algorithm does not depend on the random generator
    put("sequential_7", list(SequentialSampler(range(7))))
    for drop in (False, True):
        bs = list(BatchSampler(SequentialSampler(range(10)), 3, drop))
        put(f"batch_10_3_{int(drop)}", [len(bs)] + [i for b in bs for i in b])
    for n, r, drop in ((10, 3, False), (10, 3, True), (2, 4, False), (11, 4, True), (12, 4, False)):
        for rank in range(r):
            s = DistributedSampler(range(n), num_replicas=r, rank=rank, shuffle=False, drop_last=drop)
            put(f"dist_{n}_{r}_{int(drop)}_{rank}", [len(s)] + list(s))
    # random_split's lengths for fractions (the permutation itself depends on the generator)
    for n, fr in ((11, [0.3, 0.3, 0.4]), (10, [0.5, 0.5]), (7, [0.1, 0.2, 0.7])):
        parts = random_split(range(n), fr, generator=torch.Generator().manual_seed(0))
        put(f"split_{n}_{'_'.join(str(x) for x in fr)}", [len(p) for p in parts])

    # --- transforms: inputs follow image(c, y, x) below
    def image(c, h, w):
        t = torch.empty(c, h, w)
        for ch in range(c):
            for y in range(h):
                for x in range(w):
                    t[ch, y, x] = ((ch * 7 + y * 5 + x * 3) % 11) / 10.0
        return t

    src = image(2, 5, 7)
    for size in ((4, 9), (8, 3), (5, 7), (2, 2)):
        for mode in ("bilinear", "nearest"):
            kw = {"align_corners": False} if mode == "bilinear" else {}
            out = F.interpolate(src[None], size=size, mode=mode, **kw)[0]
            put(f"resize_{mode}_{size[0]}_{size[1]}", out.flatten().tolist())

    def tv_rotate(img, angle, mode, fill):
        """torchvision 0.14 F.rotate on a tensor (expand=False, center=None), fill not None."""
        rot = math.radians(-angle)
        a, b, c, d = math.cos(rot), -math.sin(rot), math.sin(rot), math.cos(rot)
        matrix = [d, -b, 0.0, -c, a, 0.0]
        h, w = img.shape[-2:]
        theta = torch.tensor(matrix, dtype=img.dtype).reshape(1, 2, 3)
        base = torch.empty(1, h, w, 3, dtype=img.dtype)
        base[..., 0].copy_(torch.linspace(-w * 0.5 + 0.5, w * 0.5 + 0.5 - 1, steps=w))
        base[..., 1].copy_(torch.linspace(-h * 0.5 + 0.5, h * 0.5 + 0.5 - 1, steps=h).unsqueeze_(-1))
        base[..., 2].fill_(1)
        rescaled = theta.transpose(1, 2) / torch.tensor([0.5 * w, 0.5 * h], dtype=img.dtype)
        grid = base.view(1, h * w, 3).bmm(rescaled).view(1, h, w, 2)
        x = torch.cat((img[None], torch.ones(1, 1, h, w, dtype=img.dtype)), dim=1)
        x = F.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
        mask, x = x[:, -1:], x[:, :-1]
        mask = mask.expand_as(x)
        fill_img = torch.full_like(x, fill)
        if mode == "nearest":
            m = mask < 0.5
            x[m] = fill_img[m]
        else:
            x = x * mask + (1.0 - mask) * fill_img
        return x[0]

    for h, w in ((6, 6), (5, 7)):
        img = image(2, h, w)
        for angle, mode, fill in ((30.0, "bilinear", 0.0), (-45.0, "bilinear", 0.5), (90.0, "nearest", 0.0),
                                  (180.0, "nearest", 0.25), (17.0, "nearest", 0.0)):
            out = tv_rotate(img, angle, mode, fill)
            put(f"rotate_{h}x{w}_{angle:g}_{mode}_{fill:g}", out.flatten().tolist())

    # --- the real Fashion-MNIST, when installed
    if os.path.isdir(FASHION):
        with gzip.open(f"{FASHION}/train-images-idx3-ubyte.gz") as f:
            data = torch.frombuffer(bytearray(f.read()[16:]), dtype=torch.uint8).view(-1, 28, 28)
        with gzip.open(f"{FASHION}/train-labels-idx1-ubyte.gz") as f:
            labels = torch.frombuffer(bytearray(f.read()[8:]), dtype=torch.uint8)
        x = data.double() / 255
        put("fashion_train", [data.shape[0], int(labels[0]), int(data[0].sum()), int(data[59999].sum()),
                              int(labels.long().sum()), float(x.mean()), float(x.std())])

    with open(f"{OUT}/reference.txt", "w") as f:
        f.write("\n".join(ref) + "\n")


if __name__ == "__main__":
    main()
