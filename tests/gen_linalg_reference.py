"""Reference values for tests/linalg.cpp: dl::linalg against torch.linalg (values and gradients).
Run with Debian's PyTorch: /usr/bin/python3 tests/gen_linalg_reference.py (writes tests/data/linalg_ref.bin).

Inputs come from refbin.det(shape, seed) (the same doubles in C++; its square matrices are often
singular, hence the shifts), shaped into well-conditioned,
symmetric or positive-definite matrices by the formulas repeated in tests/linalg.cpp. Gradients are
of loss = sum_i (out_i * det(out_i.shape, 999 + i)).sum() over the listed outputs."""
import torch

from refbin import Writer, det

torch.set_default_dtype(torch.float64)
w = Writer("linalg_ref.bin")


def eye(n):
    return torch.eye(n, dtype=torch.float64)


def square(shape, seed, shift):
    """det(shape, seed) + shift * I: comfortably invertible for shift >= 3."""
    return det(shape, seed) + shift * eye(shape[-1])


def spd(shape, seed):
    """M M^T + I: symmetric positive-definite."""
    m = det(shape, seed)
    return m @ m.mT + eye(shape[-1])


def sym(shape, seed):
    m = det(shape, seed)
    return (m + m.mT) / 2


def put_grads(name, outs, inputs):
    loss = sum((o * det(o.shape, 999 + i)).sum() for i, o in enumerate(outs) if o is not None)
    gs = torch.autograd.grad(loss, inputs, allow_unused=True)
    for i, g in enumerate(gs):
        w.put(f"{name}/g{i}", g if g is not None else torch.zeros(0))


def case(name, fn, inputs, n_out=None):
    """Runs fn on fresh leaves, stores its outputs (<name>/o<i>) and the input gradients."""
    xs = [x.clone().requires_grad_(True) for x in inputs]
    outs = fn(*xs)
    if not isinstance(outs, (tuple, list)):
        outs = [outs]
    for i, o in enumerate(outs):
        w.put(f"{name}/o{i}", o)
    diff = [o if o.requires_grad else None for o in outs]
    put_grads(name, diff, xs)


A = square([2, 3, 4, 4], 1, 4)
case("inv", torch.linalg.inv, [A])
case("det", torch.linalg.det, [square([3, 4, 4], 2, 2)])
sing = torch.tensor([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])
# PyTorch (1.13 and 2.x) returns a zero gradient at this rank-2 matrix; dl returns the cofactor
# matrix (the derivative, checked by finite differences in tests/linalg.cpp), so only the value is kept.
w.put("det_singular/o0", torch.linalg.det(sing))
signed = square([3, 3, 3], 3, 3) * torch.tensor([1.0, -1, 1]).view(3, 1, 1)  # det > 0, < 0, > 0
case("slogdet", lambda a: torch.linalg.slogdet(a), [signed])
case("logdet", torch.logdet, [signed])
case("solve", torch.linalg.solve, [square([2, 1, 4, 4], 4, 4), det([3, 4, 2], 5)])
case("solve_vec", torch.linalg.solve, [square([4, 4], 6, 4), det([4], 7)])
case("solve_right", lambda a, b: torch.linalg.solve(a, b, left=False), [square([2, 4, 4], 8, 4), det([2, 3, 4], 9)])
case("cholesky", torch.linalg.cholesky, [spd([2, 4, 4], 10)])
case("cholesky_upper", lambda a: torch.linalg.cholesky(a, upper=True), [spd([2, 4, 4], 11)])
L = torch.tril(det([2, 4, 4], 12)) + 3 * eye(4)
case("cholesky_solve", torch.cholesky_solve, [det([2, 4, 3], 13), L])
case("cholesky_solve_upper", lambda b, u: torch.cholesky_solve(b, u, upper=True), [det([4, 3], 14), L.mT.contiguous()])
case("qr_tall", torch.linalg.qr, [det([2, 5, 3], 15)])
case("qr_wide", torch.linalg.qr, [det([2, 3, 5], 16)])
case("qr_complete", lambda a: torch.linalg.qr(a, mode="complete"), [square([4, 4], 17, 2)])
w.put("qr_r/o1", torch.linalg.qr(det([5, 3], 18), mode="r")[1])


def svd_loss_outputs(U, S, Vh):
    k = S.shape[-1]
    return [S, U[..., :k] ** 2, Vh[..., :k, :] ** 2]


case("svd_tall", lambda a: svd_loss_outputs(*torch.linalg.svd(a, full_matrices=False)), [det([2, 5, 3], 19)])
case("svd_wide_full", lambda a: svd_loss_outputs(*torch.linalg.svd(a, full_matrices=True)), [det([3, 5], 20)])
case("svdvals", torch.linalg.svdvals, [det([2, 4, 3], 21)])
case("eigh", lambda a: (lambda r: [r[0], r[1] ** 2])(torch.linalg.eigh(a)), [sym([2, 4, 4], 22)])
case("eigh_upper", lambda a: (lambda r: [r[0], r[1] ** 2])(torch.linalg.eigh(a, UPLO="U")), [det([4, 4], 23)])
case("eigvalsh", torch.linalg.eigvalsh, [det([2, 3, 3], 24)])
case("pinv_tall", torch.linalg.pinv, [det([2, 5, 3], 25)])
case("pinv_wide", torch.linalg.pinv, [det([3, 5], 26)])
case("pinv_hermitian", lambda a: torch.linalg.pinv(a, hermitian=True), [sym([4, 4], 27) + 0.5 * eye(4)])
low_rank = det([5, 2], 28) @ det([2, 4], 29)
w.put("pinv_low_rank/o0", torch.linalg.pinv(low_rank))
for drv in ["gelsy", "gelsd", "gels"]:
    xs = [det([2, 5, 3], 30).requires_grad_(), det([2, 5, 2], 31).requires_grad_()]
    r = torch.linalg.lstsq(xs[0], xs[1], driver=drv)
    w.put(f"lstsq_{drv}/o0", r.solution)
    w.put(f"lstsq_{drv}/residuals", r.residuals)
    w.put(f"lstsq_{drv}/rank", r.rank)
    w.put(f"lstsq_{drv}/sv", r.singular_values)
    put_grads(f"lstsq_{drv}", [r.solution], xs)
case("solve_triangular", lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), [square([2, 4, 4], 32, 3), det([2, 4, 3], 33)])
case("solve_triangular_right_unit", lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
     [det([4, 4], 34), det([2, 3, 4], 35)])
M = det([2, 3, 4], 36) * torch.tensor([1.0, 1.1, 1.2]).view(3, 1)  # no ties among row or column sums
for ordname, ordv in [("fro", "fro"), ("nuc", "nuc"), ("inf", float("inf")), ("minf", -float("inf")), ("1", 1), ("m1", -1), ("2", 2), ("m2", -2)]:
    case(f"matrix_norm_{ordname}", lambda a: torch.linalg.matrix_norm(a, ord=ordv), [M])
case("matrix_norm_dims", lambda a: torch.linalg.matrix_norm(a, ord=1, dim=(2, 0), keepdim=True), [M])
case("matrix_norm_nuc_dims", lambda a: torch.linalg.matrix_norm(a, ord="nuc", dim=(0, 2), keepdim=True), [M])
V = det([3, 5], 37)
for ordname, ordv in [("2", 2), ("1", 1), ("inf", float("inf")), ("minf", -float("inf")), ("3", 3), ("half", 0.5), ("0", 0)]:
    case(f"vector_norm_{ordname}", lambda a: torch.linalg.vector_norm(a, ord=ordv, dim=1), [V])
case("vector_norm_all", lambda a: torch.linalg.vector_norm(a), [V])
case("vector_norm_keepdim", lambda a: torch.linalg.vector_norm(a, ord=3, dim=(0, 1), keepdim=True), [V])
ranks = torch.stack([square([4, 4], 38, 2), det([4, 2], 39) @ det([2, 4], 40), torch.zeros(4, 4)])
w.put("matrix_rank/o0", torch.linalg.matrix_rank(ranks))
w.put("matrix_rank_hermitian/o0", torch.linalg.matrix_rank(ranks @ ranks.mT, hermitian=True))
w.put("matrix_rank_atol/o0", torch.linalg.matrix_rank(ranks, atol=1.0, rtol=0.0))
P = square([2, 3, 3], 41, 2)
for n in [3, -2, 0, 1]:
    case(f"matrix_power_{n}".replace("-", "m"), lambda a: torch.linalg.matrix_power(a, n), [P])
case("cross", torch.linalg.cross, [det([1, 2, 3], 42), det([4, 1, 3], 43)])
case("cross_dim0", lambda a, b: torch.linalg.cross(a, b, dim=0), [det([3, 2], 44), det([3, 2], 45)])
case("outer", torch.outer, [det([3], 46), det([4], 47)])
case("kron", torch.kron, [det([2, 3], 48), det([3, 2], 49)])
case("kron_ranks", torch.kron, [det([2], 50), det([2, 2, 3], 51)])
case("trace", torch.trace, [det([3, 4], 52)])
case("diag_vec", lambda a: torch.diag(a, 1), [det([3], 53)])
case("diag_vec_neg", lambda a: torch.diag(a, -2), [det([3], 54)])
case("diag_mat", lambda a: torch.diag(a, -1), [det([3, 4], 55)])
case("diagonal", lambda a: torch.diagonal(a, 1, 2, 0), [det([3, 2, 4], 56)])
case("linalg_diagonal", lambda a: torch.linalg.diagonal(a, offset=-1), [det([2, 4, 3], 57)])
case("tril", lambda a: torch.tril(a, -1), [det([2, 3, 4], 58)])
case("triu", lambda a: torch.triu(a, 1), [det([2, 3, 4], 59)])
w.save()
