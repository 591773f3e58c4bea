#!/usr/bin/python3
"""Fixtures of tests/io.cpp in tests/data/io/, made by PyTorch (run with Debian's /usr/bin/python3,
torch 1.13):

  - .pth files written by torch.save: a small Conv2d + BatchNorm2d + Linear net (int64
    num_batches_tracked), tied weights and views sharing one storage, non-contiguous tensors
    (transposed, sliced with an offset, expanded with stride 0), every dtype dl has (0-d and empty
    tensors too), a nested checkpoint {"model", "epoch", "optimizer", ...} saved with pickle
    protocol 4, and files dl must refuse (float16, a legacy non-zip file, a pickle calling
    os.system);
  - .safetensors files written by the few lines of write_safetensors() below (and, when the
    `safetensors` package is importable, one written by the reference implementation);
  - expected.bin (tests/refbin.py): every tensor's values, strides, storage offset and which
    storage it shares, and checkpoint_metadata.txt: the checkpoint's non-tensor leaves.

With --check DIR it reads the files tests/io.cpp wrote into DIR (DL_IO_ROUNDTRIP_DIR=DIR
build/tests/test_io) with torch.load (and the reference safetensors reader when importable),
compares them with the originals and writes tests/data/io/roundtrip_check.txt.
"""
import collections
import json
import os
import struct
import sys
import zipfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "io")

ST_DTYPES = {torch.bool: "BOOL", torch.uint8: "U8", torch.int32: "I32", torch.int64: "I64",
             torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16"}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)
        self.bn = torch.nn.BatchNorm2d(2)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


def make_net():
    net = Net()
    with torch.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(det(p.shape, 10 + i, torch.float32) * 0.5)
    net.train()
    for step in range(3):  # running statistics and num_batches_tracked = 3
        net(det((4, 1, 4, 4), 20 + step, torch.float32))
    return net


def tied():
    w = det((4, 3), 30, torch.float32)
    return collections.OrderedDict([
        ("embed.weight", w), ("head.weight", w),      # the same tensor twice
        ("row", w[2]),                                 # a view with storage offset 6
        ("bias", det((4,), 31, torch.float32))])


def strided():
    x = det((3, 4), 40, torch.float64)
    i = torch.arange(20, dtype=torch.int64).reshape(4, 5)
    return collections.OrderedDict([
        ("t", x.t()),                                  # strides (1, 4)
        ("slice", x[1:, 1::2]),                        # offset 5, strides (4, 2)
        ("col", i[:, 3]),                              # int64, offset 3, stride 5
        ("expand", det((3,), 41, torch.float32).expand(2, 3))])  # stride 0


def dtypes():
    return collections.OrderedDict([
        ("bool", det((2, 3), 50) > 0),
        ("uint8", (det((5,), 51) * 60 + 128).to(torch.uint8)),
        ("int32", (det((2, 2), 52) * 1e6).to(torch.int32)),
        ("int64", torch.tensor(-(2 ** 40) - 7, dtype=torch.int64)),  # 0-d
        ("float32", det((2, 1, 2), 53, torch.float32)),
        ("float64", det((3,), 54, torch.float64)),
        ("scalar", torch.tensor(1.5, dtype=torch.float64)),            # 0-d
        ("empty", torch.zeros(0, 3, dtype=torch.float32)),
        ("empty_i64", torch.zeros(2, 0, dtype=torch.int64))])


def checkpoint():
    torch.manual_seed(0)
    net = make_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-5)
    loss = net(det((2, 1, 4, 4), 60, torch.float32)).square().sum()
    loss.backward()
    opt.step()
    return {"model": net.state_dict(), "epoch": 3, "optimizer": opt.state_dict(),
            "param": torch.nn.Parameter(det((2,), 61, torch.float32)),  # _rebuild_parameter
            "note": "dl fixture", "best": 0.25, "done": False, "extra": None,
            "history": [1.5, 1e-08, 100000.0]}


def write_safetensors(path, tensors, metadata=None):
    """safetensors in a few lines: data sorted as the reference sorts it (largest dtype first, then
    name), header in the dict's order, padded with spaces to a multiple of 8."""
    order = sorted(tensors, key=lambda k: (-tensors[k].element_size(), k))
    offsets, blobs, at = {}, [], 0
    for k in order:
        t = tensors[k].contiguous()
        b = t.view(torch.int16).numpy().tobytes() if t.dtype in (torch.float16, torch.bfloat16) else t.numpy().tobytes()
        offsets[k] = [at, at + len(b)]
        blobs.append(b)
        at += len(b)
    header = {"__metadata__": metadata} if metadata else {}
    for k, t in tensors.items():
        header[k] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": offsets[k]}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    """The script's own reader, for --check."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    inv = {v: k for k, v in ST_DTYPES.items()}
    out = collections.OrderedDict()
    for k, v in header.items():
        b, e = v["data_offsets"]
        buf = bytearray(data[8 + n + b:8 + n + e])
        t = torch.frombuffer(buf, dtype=inv[v["dtype"]]) if buf else torch.zeros(0, dtype=inv[v["dtype"]])
        out[k] = t.reshape(v["shape"])
    return out, meta


class Evil:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


def put_tensors(w, file, sd):
    """Values, strides, storage offset and storage group of each tensor of a fixture."""
    groups = {}
    for k, t in sd.items():
        ptr = t.storage().data_ptr()
        g = groups.setdefault(ptr, len(groups))
        w.put(f"{file}/{k}", t)
        w.put(f"{file}/{k}/stride", torch.tensor(t.stride(), dtype=torch.int64))
        w.put(f"{file}/{k}/offset", torch.tensor(t.storage_offset(), dtype=torch.int64))
        w.put(f"{file}/{k}/storage", torch.tensor(g, dtype=torch.int64))


def flatten(obj, prefix=""):
    """What dl::load makes of a nested checkpoint: tensors and Python-literal metadata."""
    tensors, meta = collections.OrderedDict(), collections.OrderedDict()
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for k, v in items:
        name = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, torch.Tensor):
            tensors[name] = v
        elif isinstance(v, (dict, list, tuple)):
            t, m = flatten(v, name)
            tensors.update(t)
            meta.update(m)
        else:
            meta[name] = v if isinstance(v, str) else repr(v)
    return tensors, meta


def generate():
    os.makedirs(OUT, exist_ok=True)
    w = Writer("io/expected.bin")
    net_sd = make_net().state_dict()
    torch.save(net_sd, os.path.join(OUT, "net.pth"))
    write_safetensors(os.path.join(OUT, "net.safetensors"), net_sd)
    put_tensors(w, "net", net_sd)
    x = det((2, 1, 4, 4), 70, torch.float32)
    net = make_net().eval()
    w.put("net/input", x)
    w.put("net/output", net(x).detach())

    with zipfile.ZipFile(os.path.join(OUT, "net.pth")) as zin, \
            zipfile.ZipFile(os.path.join(OUT, "net_deflated.pth"), "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))

    torch.save(tied(), os.path.join(OUT, "tied.pth"))
    put_tensors(w, "tied", tied())
    torch.save(strided(), os.path.join(OUT, "strided.pth"))
    put_tensors(w, "strided", strided())

    torch.save(dtypes(), os.path.join(OUT, "dtypes.pth"))
    write_safetensors(os.path.join(OUT, "dtypes.safetensors"), dtypes(),
                      metadata={"format": "pt", "note": "dl fixture"})
    put_tensors(w, "dtypes", dtypes())
    try:
        import safetensors.torch
        safetensors.torch.save_file(dict(dtypes()), os.path.join(OUT, "dtypes_reference.safetensors"),
                                    metadata={"writer": "safetensors " + safetensors.__version__})
    except ImportError:
        print("safetensors not importable: keeping the committed dtypes_reference.safetensors")

    ck = checkpoint()
    torch.save(ck, os.path.join(OUT, "checkpoint.pth"), pickle_protocol=4)
    tensors, meta = flatten(ck)
    put_tensors(w, "checkpoint", tensors)
    with open(os.path.join(OUT, "checkpoint_metadata.txt"), "w") as f:
        f.write(f"{len(tensors)} tensors: {' '.join(tensors)}\n")
        for k, v in meta.items():
            f.write(f"{k}\t{v}\n")

    half = collections.OrderedDict([("ok", torch.ones(2)), ("w", det((2, 2), 80, torch.float16))])
    torch.save(half, os.path.join(OUT, "half.pth"))
    write_safetensors(os.path.join(OUT, "half.safetensors"), half)
    torch.save(net_sd, os.path.join(OUT, "legacy.pth"), _use_new_zipfile_serialization=False)
    torch.save({"w": torch.ones(1), "x": Evil()}, os.path.join(OUT, "evil.pth"))
    w.save()
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"fixtures in {OUT}: {total} bytes")


def check(folder):
    lines = [f"torch {torch.__version__} reading the files tests/io.cpp wrote with dl (tests/gen_io_fixtures.py --check)"]
    failures = 0

    def report(name, ok, detail=""):
        nonlocal failures
        failures += not ok
        lines.append(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")

    def same(a, b):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)

    originals = {"net": make_net().state_dict(), "tied": tied(), "strided": strided(), "dtypes": dtypes()}
    for name, orig in originals.items():
        for fmt in ("pth", "zip64.pth", "safetensors"):
            path = os.path.join(folder, f"dl_{name}.{fmt}")
            if not os.path.exists(path):
                continue
            if fmt.endswith("pth"):
                got = torch.load(path)
                with zipfile.ZipFile(path) as z:  # CRCs, and the loader PyTorch 2.6+ uses by default
                    crc_ok = z.testzip() is None
                safe = torch.load(path, weights_only=True)
                report(f"dl_{path.rsplit('dl_', 1)[1]} with zipfile.testzip() and torch.load(weights_only=True)",
                       crc_ok and all(same(safe[k], orig[k]) for k in orig), "CRCs valid, values equal")
            else:
                got, meta = read_safetensors(path)
            keys_ok = list(got) == list(orig)
            values_ok = keys_ok and all(same(got[k], orig[k]) for k in orig)
            detail = f"{len(got)} tensors, keys in order, values and dtypes equal" if values_ok else "mismatch"
            if fmt.endswith("pth") and values_ok:
                # Same strides, and storages shared exactly where the original shares them.
                strides_ok = all(got[k].stride() == orig[k].stride() for k in orig)
                share = lambda sd: [[sd[a].storage().data_ptr() == sd[b].storage().data_ptr() for b in sd] for a in sd]
                share_ok = share(got) == share(orig)
                detail += ", strides equal" if strides_ok else ", STRIDES DIFFER"
                detail += ", storage sharing as in the original" if share_ok else ", SHARING DIFFERS"
                values_ok = strides_ok and share_ok
            report(f"dl_{name}.{fmt}", values_ok, detail)
    path = os.path.join(folder, "dl_net.pth")
    if os.path.exists(path):
        net = Net()
        net.load_state_dict(torch.load(path))
        net.eval()
        ref = make_net().eval()
        x = det((2, 1, 4, 4), 70, torch.float32)
        report("Net.load_state_dict(torch.load('dl_net.pth'))", torch.equal(net(x), ref(x)),
               "strict load, eval outputs equal to the original net's")
    path = os.path.join(folder, "dl_meta.pth")
    if os.path.exists(path):
        with zipfile.ZipFile(path) as z:
            meta = json.loads(z.read("archive/dl_metadata.json"))
        got = torch.load(path)
        orig = make_net().state_dict()
        report("dl_meta.pth (StateDict::metadata in archive/dl_metadata.json)",
               meta == {"epoch": "7", "note": "dl"} and all(same(got[k], orig[k]) for k in orig),
               f"torch.load ignores the extra entry; it holds {json.dumps(meta)}")
    path = os.path.join(folder, "dl_dtypes.safetensors")
    if os.path.exists(path):
        _, meta = read_safetensors(path)
        report("dl_dtypes.safetensors metadata", meta == {"format": "pt", "note": "dl fixture"}, json.dumps(meta))
        try:
            import safetensors
            from safetensors.torch import load_file
            got = load_file(path)
            orig = dtypes()
            report(f"reference safetensors {safetensors.__version__} load_file('dl_dtypes.safetensors')",
                   set(got) == set(orig) and all(same(got[k], orig[k]) for k in orig), "values and dtypes equal")
            got = load_file(os.path.join(folder, "dl_net.safetensors"))
            orig = make_net().state_dict()
            report(f"reference safetensors {safetensors.__version__} load_file('dl_net.safetensors')",
                   set(got) == set(orig) and all(same(got[k], orig[k]) for k in orig), "values and dtypes equal")
        except ImportError:
            lines.append("(the safetensors package is not importable: checked with this script's reader only)")
    lines.append(f"{failures} failures")
    with open(os.path.join(OUT, "roundtrip_check.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return failures


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(1 if check(sys.argv[2]) else 0)
    generate()
