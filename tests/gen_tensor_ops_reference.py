"""Writes tests/data/tensor_ops_ref.bin: PyTorch's values and gradients for the tensor ops of
dl/ops/{sorting,scan,rearrange,einsum,windows}.hpp (tests/tensor_ops.cpp).
Run with Debian's PyTorch: /usr/bin/python3 tests/gen_tensor_ops_reference.py

Inputs are det(shape, seed) (tests/refbin.py), rebuilt identically in C++; `ties` rounds them to
multiples of 0.5 so that sorts see equal elements. Gradients are of (out * det(out.shape, 999)).sum().
"""
import torch

from refbin import Writer, det

w = Writer("tensor_ops_ref.bin")
NAN = float("nan")


def ties(shape, seed, dtype):
    return (det(shape, seed, dtype) * 2).round() / 2


def leaf(t):
    return t.clone().requires_grad_()


def put_grad(name, out, x):
    w.grads(name, out, [x], ["x"])


for dt, k in ((torch.float32, "f32"), (torch.float64, "f64")):
    # ---- sort / argsort (stable, ties and NaNs)
    for case, dim, desc in (("d1", 1, False), ("dm1desc", -1, True), ("d0", 0, False)):
        x = leaf(ties([3, 5, 4], 1, dt))
        v, i = torch.sort(x, dim=dim, descending=desc, stable=True)
        w.put(f"{k}/sort/{case}/values", v)
        w.put(f"{k}/sort/{case}/indices", i)
        put_grad(f"{k}/sort/{case}/values", v, x)
    xn = torch.tensor([[1, NAN, 0, NAN, -1], [NAN, 2, 2, -3, 0.5]], dtype=dt)
    for desc in (False, True):
        v, i = torch.sort(xn, dim=1, descending=desc, stable=True)
        w.put(f"{k}/sort/nan{int(desc)}/values", v)
        w.put(f"{k}/sort/nan{int(desc)}/indices", i)
    w.put(f"{k}/argsort", torch.argsort(ties([4, 6], 2, dt), dim=1, descending=True, stable=True))

    # ---- topk (distinct values)
    for case, kk, dim, largest in (("l", 3, 1, True), ("s", 2, 0, False), ("all", 4, -1, True)):
        x = leaf(det([3, 5, 4], 3, dt))
        v, i = torch.topk(x, kk, dim=dim, largest=largest)
        w.put(f"{k}/topk/{case}/values", v)
        w.put(f"{k}/topk/{case}/indices", i)
        put_grad(f"{k}/topk/{case}/values", v, x)
    v, i = torch.topk(torch.tensor([1, NAN, 0, NAN, 5], dtype=dt), 3)
    w.put(f"{k}/topk/nan/values", v)
    w.put(f"{k}/topk/nan/indices", i)

    # ---- kthvalue / median / mode
    x = leaf(det([4, 5, 3], 4, dt))
    v, i = torch.kthvalue(x, 2, dim=1, keepdim=True)
    w.put(f"{k}/kthvalue/values", v)
    w.put(f"{k}/kthvalue/indices", i)
    put_grad(f"{k}/kthvalue/values", v, x)
    for case, shape in (("odd", [3, 5]), ("even", [4, 4])):
        x = leaf(det(shape, 5, dt))
        m = torch.median(x)
        w.put(f"{k}/median/{case}", m)
        put_grad(f"{k}/median/{case}", m, x)
        v, i = torch.median(x, dim=1)
        w.put(f"{k}/median/{case}/dim/values", v)
        w.put(f"{k}/median/{case}/dim/indices", i)
        put_grad(f"{k}/median/{case}/dim/values", v, x)
    x = leaf(ties([3, 6], 6, dt))
    m = torch.median(x)
    w.put(f"{k}/median/ties", m)
    put_grad(f"{k}/median/ties", m, x)
    v, i = torch.median(torch.tensor([[1, NAN, 0, NAN], [3, 1, 2, 0]], dtype=dt), dim=1)
    w.put(f"{k}/median/nan/values", v)
    w.put(f"{k}/median/nan/indices", i)
    x = leaf(ties([4, 7], 7, dt))
    v, i = torch.mode(x, dim=1)
    w.put(f"{k}/mode/values", v)
    w.put(f"{k}/mode/indices", i)
    put_grad(f"{k}/mode/values", v, x)

    # ---- unique
    x = ties([3, 5], 8, dt)
    u, inv, cnt = torch.unique(x, sorted=True, return_inverse=True, return_counts=True)
    w.put(f"{k}/unique/output", u)
    w.put(f"{k}/unique/inverse", inv)
    w.put(f"{k}/unique/counts", cnt)
    x = torch.tensor([[1, 2, 1, 2], [0, 5, 0, 4], [1, 2, 1, 2]], dtype=dt)
    for dim in (0, 1):
        u, inv, cnt = torch.unique(x, return_inverse=True, return_counts=True, dim=dim)
        w.put(f"{k}/unique/dim{dim}/output", u)
        w.put(f"{k}/unique/dim{dim}/inverse", inv)
        w.put(f"{k}/unique/dim{dim}/counts", cnt)

    # ---- cumsum / cumprod (with zeros) / diff
    for dim in (0, 1, 2):
        x = leaf(det([4, 5, 3], 9, dt))
        y = torch.cumsum(x, dim)
        w.put(f"{k}/cumsum/{dim}", y)
        put_grad(f"{k}/cumsum/{dim}", y, x)
        y = torch.cumprod(x, dim)
        w.put(f"{k}/cumprod/{dim}", y)
        put_grad(f"{k}/cumprod/{dim}", y, x)
    z = det([3, 6], 10, dt)
    z[0, 2] = 0
    z[1, 1] = 0
    z[1, 4] = 0
    z[2, 5] = 0
    x = leaf(z)
    y = torch.cumprod(x, 1)
    w.put(f"{k}/cumprod/zeros", y)
    put_grad(f"{k}/cumprod/zeros", y, x)
    x = leaf(det([4, 5], 11, dt))
    for case, kw in (("n1", dict(n=1, dim=1)), ("n2d0", dict(n=2, dim=0)), ("n3", dict(n=3))):
        y = torch.diff(x, **kw)
        w.put(f"{k}/diff/{case}", y)
        put_grad(f"{k}/diff/{case}", y, x)
    p = leaf(det([4, 2], 12, dt))
    a = leaf(det([4, 1], 13, dt))
    y = torch.diff(x, n=2, dim=1, prepend=p, append=a)
    w.put(f"{k}/diff/pa", y)
    w.grads(f"{k}/diff/pa", y, [x, p, a], ["x", "p", "a"])

    # ---- flip / roll / rot90
    x = leaf(det([3, 4, 5], 14, dt))
    for case, dims in (("0", [0]), ("02", [0, 2]), ("m1", [-1])):
        y = torch.flip(x, dims)
        w.put(f"{k}/flip/{case}", y)
        put_grad(f"{k}/flip/{case}", y, x)
    for case, shifts, dims in (("a", [1], [0]), ("b", [2, -1], [1, 2]), ("flat", [3], None), ("twice", [1, 2], [1, 1])):
        y = torch.roll(x, shifts, dims) if dims is not None else torch.roll(x, shifts)
        w.put(f"{k}/roll/{case}", y)
        put_grad(f"{k}/roll/{case}", y, x)
    for kk in (1, 2, 3, -1):
        y = torch.rot90(x, kk, [1, 2])
        w.put(f"{k}/rot90/{kk}", y)
        put_grad(f"{k}/rot90/{kk}", y, x)

    # ---- einsum / tensordot
    einsum_cases = [
        ("mm", "ij,jk->ik", [[3, 4], [4, 5]]),
        ("bmm", "bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]),
        ("diag", "ii->i", [[4, 4]]),
        ("trace", "ii", [[4, 4]]),
        ("outer", "i,j->ij", [[3], [4]]),
        ("ell", "...ij,...jk->...ik", [[2, 1, 3, 4], [3, 4, 2]]),
        ("perm", "ijk->kji", [[2, 3, 4]]),
        ("bilinear", "bn,anm,bm->ba", [[2, 3], [4, 3, 5], [2, 5]]),
        ("dot", "i,i->", [[5], [5]]),
        ("sumall", "ij->", [[3, 4]]),
        ("implicit", "ij,jk", [[3, 4], [4, 2]]),
        ("attn", "bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]]),
        ("bcast", "bij,bjk->bik", [[2, 3, 4], [1, 4, 5]]),
        ("diagmix", "iij,jk->ik", [[3, 3, 4], [4, 2]]),
        ("rowsum", "ij->i", [[3, 4]]),
        ("upper", "Ab,bC->AC", [[2, 3], [3, 2]]),
        ("ellsum", "...i->i", [[2, 3, 4]]),
    ]
    for case, eq, shapes in einsum_cases:
        xs = [leaf(det(s, 20 + j, dt)) for j, s in enumerate(shapes)]
        y = torch.einsum(eq, *xs)
        w.put(f"{k}/einsum/{case}", y)
        w.grads(f"{k}/einsum/{case}", y, xs, [str(j) for j in range(len(xs))])
    a = leaf(det([2, 3, 4], 30, dt))
    b = leaf(det([3, 4, 5], 31, dt))
    for case, dims in (("int2", 2), ("lists", ([1, 2], [0, 1]))):
        y = torch.tensordot(a, b, dims=dims)
        w.put(f"{k}/tensordot/{case}", y)
        w.grads(f"{k}/tensordot/{case}", y, [a, b], ["a", "b"])
    b2 = leaf(det([4, 3, 5], 32, dt))
    y = torch.tensordot(a, b2, dims=([1, 2], [1, 0]))
    w.put(f"{k}/tensordot/swap", y)
    w.grads(f"{k}/tensordot/swap", y, [a, b2], ["a", "b"])
    y = torch.tensordot(a, b, dims=0)
    w.put(f"{k}/tensordot/outer", y)

    # ---- searchsorted / bucketize
    seq = torch.sort(det([7], 40, dt)).values
    vals = det([3, 4], 41, dt)
    vals[0, 0] = seq[2]
    vals[1, 1] = seq[5]
    for right in (False, True):
        w.put(f"{k}/searchsorted/1d/{int(right)}", torch.searchsorted(seq, vals, right=right))
        w.put(f"{k}/bucketize/{int(right)}", torch.bucketize(vals, seq, right=right))
    seq2 = torch.sort(det([3, 6], 42, dt), dim=1).values
    vals2 = det([3, 5], 43, dt)
    vals2[1, 2] = seq2[1, 3]
    for right in (False, True):
        w.put(f"{k}/searchsorted/nd/{int(right)}", torch.searchsorted(seq2, vals2, right=right))
    unsorted = det([6], 44, dt)
    sorter = torch.argsort(unsorted)
    w.put(f"{k}/searchsorted/sorter", torch.searchsorted(unsorted, vals, side="right", sorter=sorter))

    # ---- histc
    x = det([50], 45, dt)
    w.put(f"{k}/histc/auto", torch.histc(x, bins=7))
    w.put(f"{k}/histc/range", torch.histc(x, bins=5, min=-1, max=1.5))
    w.put(f"{k}/histc/point", torch.histc(torch.full([3], 2.0, dtype=dt), bins=4))

    # ---- windows
    for n in (0, 1, 5, 8):
        for periodic in (True, False):
            key = f"{k}/window/{n}/{int(periodic)}"
            w.put(f"{key}/hann", torch.hann_window(n, periodic, dtype=dt))
            w.put(f"{key}/hamming", torch.hamming_window(n, periodic, dtype=dt))
            w.put(f"{key}/hamming2", torch.hamming_window(n, periodic, alpha=0.6, beta=0.3, dtype=dt))
            w.put(f"{key}/blackman", torch.blackman_window(n, periodic, dtype=dt))
            w.put(f"{key}/bartlett", torch.bartlett_window(n, periodic, dtype=dt))
            w.put(f"{key}/kaiser", torch.kaiser_window(n, periodic, dtype=dt))
            w.put(f"{key}/kaiser5", torch.kaiser_window(n, periodic, beta=5.0, dtype=dt))

# ---- bincount, tril/triu indices (no float/double variants)
xi = torch.tensor([1, 4, 1, 0, 7, 4, 4])
w.put("bincount/plain", torch.bincount(xi))
w.put("bincount/minlength", torch.bincount(xi, minlength=10))
w.put("bincount/weights", torch.bincount(xi, weights=det([7], 50, torch.float64)))
w.put("bincount/weights32", torch.bincount(xi, weights=det([7], 50, torch.float32)))
for case, args in (("a", (4, 3, 0)), ("b", (3, 5, 1)), ("c", (4, 4, -1)), ("d", (0, 3, 0))):
    w.put(f"tril_indices/{case}", torch.tril_indices(*args))
    w.put(f"triu_indices/{case}", torch.triu_indices(*args))

w.save()
