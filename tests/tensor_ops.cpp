// Tests of the tensor ops in dl/ops/{sorting,scan,rearrange,einsum,windows}.hpp: values, indices
// and gradients against PyTorch (tests/data/tensor_ops_ref.bin, written by
// tests/gen_tensor_ops_reference.py) in float and double, ties and NaNs, empty tensors,
// finite-difference gradient checks (also second order where the op's backward is differentiable)
// and error paths.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include <dl/autograd/gradcheck.hpp>
#include <dl/ops/einsum.hpp>
#include <dl/ops/rearrange.hpp>
#include <dl/ops/scan.hpp>
#include <dl/ops/sorting.hpp>
#include <dl/ops/windows.hpp>

#include "refbin.hpp"

namespace ag = dl::autograd;
using dl::Shape;
using dl::Tensor;

namespace {

const refbin::File ref("tensor_ops_ref.bin");
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
std::string key(const std::string& name) {
  return (std::is_same_v<T, float> ? "f32/" : "f64/") + name;
}

/// det() rounded to multiples of 0.5 (many ties), as the generator's ties().
template <class T>
Tensor<T> ties(const Shape& s, int64_t seed) {
  Tensor<T> t = refbin::det<T>(s, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = std::round(t.data()[i] * T(2)) / T(2);
  return t;
}

template <class T>
Tensor<T> leaf(Tensor<T> t) {
  return t.requires_grad_();
}

template <class T>
Tensor<T> from(std::initializer_list<double> v, Shape shape) {
  Tensor<T> t = dl::empty<T>(shape);
  int64_t i = 0;
  for (double x : v) t.data()[i++] = T(x);
  return t;
}

/// Checks out against <name> and the gradient of the generator's loss with respect to x against
/// <name>/gx.
template <class T>
void check_with_grad(const Tensor<T>& out, const std::string& name, const Tensor<T>& x) {
  ref.check(out, name);
  x.mutable_grad() = Tensor<T>();
  refbin::backward_weighted(out);
  REQUIRE(x.grad().defined());
  ref.check(x.grad(), name + "/gx");
}

/// indices point at elements equal to values (for ties, where PyTorch's choice among equal
/// elements is unspecified).
template <class T>
void check_selects(const Tensor<T>& x, const Tensor<T>& values, const Tensor<int64_t>& indices, int64_t dim, bool keepdim) {
  const Tensor<int64_t> idx = keepdim ? indices : indices.unsqueeze(dim);
  const Tensor<T> picked = dl::gather(x.detach(), dim, idx);
  CHECK(dl::equal(keepdim ? picked : picked.squeeze(dim), values.detach()));
}

}  // namespace

TEST_CASE_TEMPLATE("sort and argsort: stable order of ties, NaNs, gradients", T, float, double) {
  for (auto [c, dim, desc] : {std::tuple{"d1", 1, false}, std::tuple{"dm1desc", -1, true}, std::tuple{"d0", 0, false}}) {
    INFO(c);
    Tensor<T> x = leaf(ties<T>({3, 5, 4}, 1));
    auto [v, i] = dl::sort(x, dim, desc);
    ref.check(i, key<T>("sort/") + c + "/indices");
    check_with_grad(v, key<T>("sort/") + c + "/values", x);
  }
  Tensor<T> xn = from<T>({1, kNaN, 0, kNaN, -1, kNaN, 2, 2, -3, 0.5}, {2, 5});
  for (bool desc : {false, true}) {
    const auto r = dl::sort(xn, std::optional<bool>(true), 1, desc);
    ref.check(r.values, key<T>("sort/nan") + std::to_string(int(desc)) + "/values");
    ref.check(r.indices, key<T>("sort/nan") + std::to_string(int(desc)) + "/indices");
  }
  ref.check(dl::argsort(ties<T>({4, 6}, 2), 1, true, true), key<T>("argsort"));
  // 0-d and empty inputs.
  auto [v0, i0] = dl::sort(dl::full<T>({}, 3));
  CHECK(v0.dim() == 0);
  CHECK(v0.item() == T(3));
  CHECK(i0.item() == 0);
  auto [ve, ie] = dl::sort(dl::empty<T>({2, 0, 3}), 1);
  CHECK(ve.shape() == Shape{2, 0, 3});
  CHECK(ie.shape() == Shape{2, 0, 3});
  CHECK_THROWS_WITH_AS(dl::sort(xn, 2), doctest::Contains("sort: dimension out of range"), dl::Error);
  // A large non-contiguous input along a middle dim matches a per-row reference.
  Tensor<T> big = refbin::det<T>({40, 300, 3}, 3).transpose(0, 2);
  const auto s = dl::sort(big, 1, true);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 40; b += 13) {
      std::vector<T> row;
      for (int64_t j = 0; j < 300; ++j) row.push_back(big.at(a, j, b));
      std::sort(row.begin(), row.end(), std::greater<T>());
      for (int64_t j = 0; j < 300; ++j) REQUIRE(s.values.at(a, j, b) == row[size_t(j)]);
      for (int64_t j = 0; j < 300; ++j) REQUIRE(big.at(a, s.indices.at(a, j, b), b) == row[size_t(j)]);
    }
}

TEST_CASE_TEMPLATE("topk", T, float, double) {
  for (auto [c, k, dim, largest] : {std::tuple{"l", 3, 1, true}, std::tuple{"s", 2, 0, false}, std::tuple{"all", 4, -1, true}}) {
    INFO(c);
    Tensor<T> x = leaf(refbin::det<T>({3, 5, 4}, 3));
    auto [v, i] = dl::topk(x, k, dim, largest);
    ref.check(i, key<T>("topk/") + c + "/indices");
    check_with_grad(v, key<T>("topk/") + c + "/values", x);
  }
  const auto n = dl::topk(from<T>({1, kNaN, 0, kNaN, 5}, {5}), 3);
  ref.check(n.values, key<T>("topk/nan/values"));
  ref.check(n.indices, key<T>("topk/nan/indices"));
  // Ties: any of the equal elements may be chosen; the values are the sorted largest ones.
  Tensor<T> t = ties<T>({4, 9}, 4);
  const auto r = dl::topk(t, 5, 1);
  check_selects(t, r.values, r.indices, 1, true);
  CHECK(dl::equal(r.values, dl::sort(t, 1, true).values.narrow(1, 0, 5)));
  CHECK(dl::topk(t, 0, 1).values.shape() == Shape{4, 0});
  CHECK_THROWS_WITH_AS(dl::topk(t, 10, 1), "selected index k out of range", dl::Error);
  CHECK_THROWS_WITH_AS(dl::topk(t, -1, 1), "selected index k out of range", dl::Error);
  CHECK(ag::gradcheck([](auto& in) { return dl::topk(in[0], 2, 0).values; }, {refbin::det<T>({4, 3}, 5)}));
  CHECK(ag::gradgradcheck([](auto& in) { return dl::topk(in[0], 2, 1, false).values * in[0].narrow(1, 0, 2); },
                          {refbin::det<T>({3, 4}, 6)}));
}

TEST_CASE_TEMPLATE("kthvalue, median, mode", T, float, double) {
  Tensor<T> x = leaf(refbin::det<T>({4, 5, 3}, 4));
  auto [kv, ki] = dl::kthvalue(x, 2, 1, true);
  ref.check(ki, key<T>("kthvalue/indices"));
  check_with_grad(kv, key<T>("kthvalue/values"), x);

  for (auto [c, shape] : {std::pair{"odd", Shape{3, 5}}, std::pair{"even", Shape{4, 4}}}) {
    INFO(c);
    Tensor<T> m = leaf(refbin::det<T>(shape, 5));
    check_with_grad(dl::median(m), key<T>("median/") + c, m);
    auto [v, i] = dl::median(m, 1);
    ref.check(i, key<T>("median/") + c + "/dim/indices");
    check_with_grad(v, key<T>("median/") + c + "/dim/values", m);
  }
  // Ties: the global median's gradient is shared evenly among the equal elements.
  Tensor<T> t = leaf(ties<T>({3, 6}, 6));
  check_with_grad(dl::median(t), key<T>("median/ties"), t);
  const auto mt = dl::median(t.detach(), 1, true);
  check_selects(t, mt.values, mt.indices, 1, true);
  const auto kt = dl::kthvalue(t.detach(), 2, 0);
  check_selects(t, kt.values, kt.indices, 0, false);
  // NaN: the median of a row with a NaN is NaN at the first NaN.
  const auto mn = dl::median(from<T>({1, kNaN, 0, kNaN, 3, 1, 2, 0}, {2, 4}), 1);
  ref.check(mn.values, key<T>("median/nan/values"));
  ref.check(mn.indices, key<T>("median/nan/indices"));
  CHECK(std::isnan(dl::median(from<T>({1, kNaN, 0}, {3})).item()));
  CHECK(std::isnan(dl::median(dl::empty<T>({0})).item()));

  Tensor<T> mo = leaf(ties<T>({4, 7}, 7));
  auto [mv, mi] = dl::mode(mo, 1);
  ref.check(mi, key<T>("mode/indices"));
  check_with_grad(mv, key<T>("mode/values"), mo);

  CHECK(ag::gradcheck([](auto& in) { return dl::median(in[0], 0).values; }, {refbin::det<T>({5, 3}, 8)}));
  CHECK(ag::gradcheck([](auto& in) { return dl::median(in[0]); }, {refbin::det<T>({4, 3}, 9)}));
  CHECK(ag::gradcheck([](auto& in) { return dl::kthvalue(in[0], 3, -1).values; }, {refbin::det<T>({2, 5}, 10)}));

  Tensor<T> e = dl::empty<T>({2, 0});
  CHECK_THROWS_WITH_AS(dl::median(e, 1), "median(): Expected reduction dim 1 to have non-zero size.", dl::Error);
  CHECK_THROWS_WITH_AS(dl::mode(e, 1), "mode(): Expected reduction dim 1 to have non-zero size.", dl::Error);
  CHECK_THROWS_WITH_AS(dl::kthvalue(e, 1, 1), "kthvalue(): Expected reduction dim 1 to have non-zero size.", dl::Error);
  CHECK_THROWS_WITH_AS(dl::kthvalue(x, 6, 1), "kthvalue(): selected number k out of range for dimension 1", dl::Error);
  CHECK_THROWS_WITH_AS(dl::kthvalue(x, 0, -2), "kthvalue(): selected number k out of range for dimension 1", dl::Error);
  // Reductions over an empty outer dim give empty results.
  CHECK(dl::median(dl::empty<T>({0, 3}), 1).values.shape() == Shape{0});
}

TEST_CASE_TEMPLATE("unique", T, float, double) {
  const auto r = dl::unique(ties<T>({3, 5}, 8), true, true, true);
  ref.check(r.output, key<T>("unique/output"));
  ref.check(r.inverse_indices, key<T>("unique/inverse"));
  ref.check(r.counts, key<T>("unique/counts"));
  const Tensor<T> x = from<T>({1, 2, 1, 2, 0, 5, 0, 4, 1, 2, 1, 2}, {3, 4});
  for (int dim : {0, 1}) {
    auto [out, inv, cnt] = dl::unique(x, true, true, true, dim);
    ref.check(out, key<T>("unique/dim") + std::to_string(dim) + "/output");
    ref.check(inv, key<T>("unique/dim") + std::to_string(dim) + "/inverse");
    ref.check(cnt, key<T>("unique/dim") + std::to_string(dim) + "/counts");
  }
  const auto plain = dl::unique(x);
  CHECK(plain.output.shape() == Shape{5});
  CHECK(plain.inverse_indices.numel() == 0);
  CHECK(plain.counts.numel() == 0);
  CHECK(dl::unique(dl::empty<T>({0})).output.numel() == 0);
  CHECK_THROWS_WITH_AS(dl::unique(x, true, false, false, 2), doctest::Contains("dimension out of range"), dl::Error);
}

TEST_CASE_TEMPLATE("cumsum, cumprod (with zeros), diff", T, float, double) {
  for (int dim : {0, 1, 2}) {
    INFO(dim);
    Tensor<T> x = leaf(refbin::det<T>({4, 5, 3}, 9));
    check_with_grad(dl::cumsum(x, dim), key<T>("cumsum/") + std::to_string(dim), x);
    check_with_grad(dl::cumprod(x, dim), key<T>("cumprod/") + std::to_string(dim), x);
  }
  Tensor<T> z = refbin::det<T>({3, 6}, 10);
  z.at(0, 2) = 0, z.at(1, 1) = 0, z.at(1, 4) = 0, z.at(2, 5) = 0;
  Tensor<T> zl = leaf(z.clone());
  check_with_grad(dl::cumprod(zl, 1), key<T>("cumprod/zeros"), zl);
  // Second derivatives, also through zeros.
  CHECK(ag::gradgradcheck([](auto& in) { return dl::cumprod(in[0], 1); }, {z}));
  CHECK(ag::gradgradcheck([](auto& in) { return dl::cumprod(in[0], 0); }, {refbin::det<T>({4, 3}, 11)}));
  CHECK(ag::gradgradcheck([](auto& in) { return dl::cumsum(Tensor<double>(in[0] * in[0]), -1); }, {refbin::det<T>({3, 4}, 12)}));
  // Integer inputs give int64.
  const Tensor<int64_t> ci = dl::cumsum(dl::arange<int32_t>(1, 5), 0);
  CHECK(ci.at(3) == 10);
  CHECK(dl::cumprod(dl::arange<int32_t>(1, 5), 0).at(3) == 24);
  CHECK(dl::cumsum(dl::empty<T>({0, 3}), 0).shape() == Shape{0, 3});
  CHECK_THROWS_WITH_AS(dl::cumsum(z, 2), doctest::Contains("cumsum: dimension out of range"), dl::Error);
  // A long row and a wide inner dim (several 64-column blocks) against a serial sum in double.
  Tensor<T> w = refbin::det<T>({3, 200, 130}, 13);
  const Tensor<T> cw = dl::cumsum(w, 1);
  for (int64_t c : {0, 63, 64, 129}) {
    double acc = 0;
    for (int64_t i = 0; i < 200; ++i) {
      acc += double(w.at(2, i, c));
      REQUIRE(cw.at(2, i, c) == T(acc));
    }
  }

  Tensor<T> x = leaf(refbin::det<T>({4, 5}, 11));
  check_with_grad(dl::diff(x, 1, 1), key<T>("diff/n1"), x);
  check_with_grad(dl::diff(x, 2, 0), key<T>("diff/n2d0"), x);
  check_with_grad(dl::diff(x, 3), key<T>("diff/n3"), x);
  Tensor<T> p = leaf(refbin::det<T>({4, 2}, 12)), a = leaf(refbin::det<T>({4, 1}, 13));
  x.mutable_grad() = Tensor<T>();
  const Tensor<T> y = dl::diff(x, 2, 1, p, a);
  ref.check(y, key<T>("diff/pa"));
  refbin::backward_weighted(y);
  ref.check(x.grad(), key<T>("diff/pa/gx"));
  ref.check(p.grad(), key<T>("diff/pa/gp"));
  ref.check(a.grad(), key<T>("diff/pa/ga"));
  CHECK(dl::diff(x, 7).shape() == Shape{4, 0});
  CHECK_THROWS_WITH_AS(dl::diff(dl::full<T>({}, 1)), "diff expects input to be at least one-dimensional", dl::Error);
  CHECK_THROWS_WITH_AS(dl::diff(x, -1), "order must be non-negative but got -1", dl::Error);
  CHECK_THROWS_WITH_AS(dl::diff(x, 1, -1, dl::zeros<T>({4})), "diff expects prepend or append to be the same dimension as input",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::diff(x, 1, 1, dl::zeros<T>({3, 1})), doctest::Contains("input.size(0) = 4, but got tensor.size(0) = 3"),
                       dl::Error);
}

TEST_CASE_TEMPLATE("flip, roll, rot90", T, float, double) {
  Tensor<T> x = leaf(refbin::det<T>({3, 4, 5}, 14));
  check_with_grad(dl::flip(x, {0}), key<T>("flip/0"), x);
  check_with_grad(dl::flip(x, {0, 2}), key<T>("flip/02"), x);
  check_with_grad(dl::flip(x, {-1}), key<T>("flip/m1"), x);
  check_with_grad(dl::roll(x, {1}, {0}), key<T>("roll/a"), x);
  check_with_grad(dl::roll(x, {2, -1}, {1, 2}), key<T>("roll/b"), x);
  check_with_grad(dl::roll(x, {3}), key<T>("roll/flat"), x);
  check_with_grad(dl::roll(x, {1, 2}, {1, 1}), key<T>("roll/twice"), x);
  for (int k : {1, 2, 3, -1}) check_with_grad(dl::rot90(x, k, {1, 2}), key<T>("rot90/") + std::to_string(k), x);
  // Non-contiguous input.
  const Tensor<T> xt = x.detach().transpose(0, 2);
  CHECK(dl::equal(dl::flip(xt, {1}), dl::flip(xt.contiguous(), {1})));
  CHECK(dl::equal(dl::roll(xt, {-7}, {0}), dl::roll(xt.contiguous(), {-7}, {0})));
  CHECK(dl::equal(dl::rot90(x.detach(), 4, {1, 2}), x.detach()));
  CHECK(ag::gradgradcheck([](auto& in) { return dl::roll(dl::flip(Tensor<double>(in[0] * in[0]), {1}), {1}, {0}); }, {refbin::det<T>({3, 4}, 15)}));
  CHECK(dl::flip(dl::empty<T>({0, 2}), {0}).shape() == Shape{0, 2});
  CHECK_THROWS_WITH_AS(dl::flip(x, {0, 0}), "dim 0 appears multiple times in the list of dims", dl::Error);
  CHECK_THROWS_WITH_AS(dl::flip(x, {3}), doctest::Contains("flip: dimension out of range"), dl::Error);
  CHECK_THROWS_WITH_AS(dl::roll(x, {1}, {0, 1}), "shifts and dimensions must align. shifts: 1, dims:2", dl::Error);
  CHECK_THROWS_WITH_AS(dl::roll(x, {}, {}), "`shifts` required", dl::Error);
  CHECK_THROWS_WITH_AS(dl::rot90(x, 1, {0}), "expected total rotation dims == 2, but got dims = 1", dl::Error);
  CHECK_THROWS_WITH_AS(dl::rot90(dl::zeros<T>({3}), 1, {0, 0}), "expected total dims >= 2, but got total dims = 1", dl::Error);
  CHECK_THROWS_WITH_AS(dl::rot90(x, 1, {1, 1}), "expected rotation dims to be different, but got dim0 = 1 and dim1 = 1", dl::Error);
}

TEST_CASE_TEMPLATE("einsum and tensordot", T, float, double) {
  struct Case {
    const char* name;
    const char* eq;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"mm", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bmm", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"diag", "ii->i", {{4, 4}}},
      {"trace", "ii", {{4, 4}}},
      {"outer", "i,j->ij", {{3}, {4}}},
      {"ell", "...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 2}}},
      {"perm", "ijk->kji", {{2, 3, 4}}},
      {"bilinear", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
      {"dot", "i,i->", {{5}, {5}}},
      {"sumall", "ij->", {{3, 4}}},
      {"implicit", "ij,jk", {{3, 4}, {4, 2}}},
      {"attn", "bhqd,bhkd->bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}},
      {"bcast", "bij,bjk->bik", {{2, 3, 4}, {1, 4, 5}}},
      {"diagmix", "iij,jk->ik", {{3, 3, 4}, {4, 2}}},
      {"rowsum", "ij->i", {{3, 4}}},
      {"upper", "Ab,bC->AC", {{2, 3}, {3, 2}}},
      {"ellsum", "...i->i", {{2, 3, 4}}},
  };
  for (const Case& c : cases) {
    INFO(c.name, " ", c.eq);
    std::vector<Tensor<T>> xs;
    for (size_t j = 0; j < c.shapes.size(); ++j) xs.push_back(leaf(refbin::det<T>(c.shapes[j], 20 + int64_t(j))));
    const Tensor<T> y = dl::einsum(c.eq, xs);
    ref.check(y, key<T>("einsum/") + c.name);
    refbin::backward_weighted(y);
    for (size_t j = 0; j < xs.size(); ++j) ref.check(xs[j].grad(), key<T>("einsum/") + c.name + "/g" + std::to_string(j));
  }
  // Variadic and braced forms; second derivatives.
  const Tensor<T> a = refbin::det<T>({3, 4}, 1), b = refbin::det<T>({4, 2}, 2);
  CHECK(dl::allclose(dl::einsum("ij,jk->ik", a, b), dl::matmul(a, b)));
  CHECK(dl::allclose(dl::einsum("ij , jk -> ik", {a, b}), dl::matmul(a, b)));
  CHECK(ag::gradgradcheck([](auto& in) { return dl::einsum("ij,jk,k->i", in[0], in[1], in[2]); },
                          {a, b, refbin::det<T>({2}, 3)}));
  CHECK(ag::gradcheck([](auto& in) { return dl::einsum("bii->bi", in[0]); }, {refbin::det<T>({2, 3, 3}, 4)}));
  CHECK_THROWS_WITH_AS(dl::einsum("ij,jk", {a}), "einsum(): fewer operands were provided than specified in the equation", dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("ij", a, b), "einsum(): more operands were provided than specified in the equation", dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("ij,jk", a, refbin::det<T>({3, 2}, 5)),
                       "einsum(): subscript j has size 3 for operand 1 which does not broadcast with previously seen size 4", dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("ijk", a),
                       "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for "
                       "operand 0 and no ellipsis was given",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("ij->k", a), "einsum(): output subscript k does not appear in the equation for any input operand",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("ij->ii", a), "einsum(): output subscript i appears more than once in the output", dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("i1", a), doctest::Contains("invalid subscript given at index 1"), dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("ii", a), "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 4 != 3", dl::Error);
  CHECK_THROWS_WITH_AS(dl::einsum("i.j", a), "einsum(): found '.' for operand 0 that is not part of any ellipsis", dl::Error);

  Tensor<T> ta = leaf(refbin::det<T>({2, 3, 4}, 30)), tb = leaf(refbin::det<T>({3, 4, 5}, 31)), tb2 = leaf(refbin::det<T>({4, 3, 5}, 32));
  auto check_td = [&](const Tensor<T>& y, const std::string& name, const Tensor<T>& bb) {
    ta.mutable_grad() = Tensor<T>();
    ref.check(y, key<T>("tensordot/") + name);
    refbin::backward_weighted(y);
    ref.check(ta.grad(), key<T>("tensordot/") + name + "/ga");
    ref.check(bb.grad(), key<T>("tensordot/") + name + "/gb");
    bb.mutable_grad() = Tensor<T>();
  };
  check_td(dl::tensordot(ta, tb, 2), "int2", tb);
  check_td(dl::tensordot(ta, tb, {1, 2}, {0, 1}), "lists", tb);
  check_td(dl::tensordot(ta, tb2, {1, 2}, {1, 0}), "swap", tb2);
  ref.check(dl::tensordot(ta.detach(), tb.detach(), 0), key<T>("tensordot/outer"));
  CHECK_THROWS_WITH_AS(dl::tensordot(a, refbin::det<T>({5, 2}, 6), 1),
                       "contracted dimensions need to match, but first has size 4 in dim 1 and second has size 5 in dim 0", dl::Error);
  CHECK_THROWS_WITH_AS(dl::tensordot(a, b, {0}, {0, 1}), "both dimension lists should have same length", dl::Error);
  CHECK_THROWS_WITH_AS(dl::tensordot(a, b, -1), "tensordot expects dims >= 0, but got dims=-1", dl::Error);
}

TEST_CASE_TEMPLATE("searchsorted, bucketize, histc", T, float, double) {
  const Tensor<T> seq = dl::sort(refbin::det<T>({7}, 40)).values;
  Tensor<T> vals = refbin::det<T>({3, 4}, 41);
  vals.at(0, 0) = seq.at(2);
  vals.at(1, 1) = seq.at(5);
  for (bool right : {false, true}) {
    ref.check(dl::searchsorted(seq, vals, right), key<T>("searchsorted/1d/") + std::to_string(int(right)));
    ref.check(dl::bucketize(vals, seq, right), key<T>("bucketize/") + std::to_string(int(right)));
  }
  CHECK(dl::equal(dl::searchsorted(seq, vals, false, "right"), dl::searchsorted(seq, vals, true)));
  Tensor<T> seq2 = dl::sort(refbin::det<T>({3, 6}, 42), 1).values, vals2 = refbin::det<T>({3, 5}, 43);
  vals2.at(1, 2) = seq2.at(1, 3);
  for (bool right : {false, true}) ref.check(dl::searchsorted(seq2, vals2, right), key<T>("searchsorted/nd/") + std::to_string(int(right)));
  const Tensor<T> unsorted = refbin::det<T>({6}, 44);
  ref.check(dl::searchsorted(unsorted, vals, false, "right", dl::argsort(unsorted)), key<T>("searchsorted/sorter"));
  CHECK(dl::searchsorted(seq, seq.at(3)).item() == 3);
  CHECK(dl::searchsorted(seq, seq.at(3), true).item() == 4);
  CHECK(dl::bucketize(10.0, seq).item() == 7);
  CHECK(dl::searchsorted(seq, dl::empty<T>({0})).numel() == 0);
  CHECK(dl::searchsorted(from<T>({1, 2}, {2}), from<T>({kNaN}, {1})).item() == 2);
  CHECK_THROWS_WITH_AS(dl::searchsorted(dl::zeros<T>({2, 3}), dl::zeros<T>({3, 3})),
                       "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
                       "tensor and input value tensor must match, but we got boundaries tensor [2, 3] and input value tensor [3, 3]",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::searchsorted(seq, vals, true, "left"),
                       "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True", dl::Error);
  CHECK_THROWS_WITH_AS(dl::searchsorted(seq, vals, false, "up"), "torch.searchsorted(): side can only be 'left' or 'right' but got up",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::searchsorted(seq, vals, false, std::nullopt, dl::zeros<int64_t>({2})),
                       "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor [7]and got sorter tensor [2]",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::searchsorted(seq, vals, false, std::nullopt, dl::full<int64_t>({7}, 9)),
                       doctest::Contains("sorter index out of range"), dl::Error);
  CHECK_THROWS_WITH_AS(dl::searchsorted(dl::full<T>({}, 1), vals),
                       "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension", dl::Error);
  CHECK_THROWS_WITH_AS(dl::bucketize(vals, seq2), "boundaries tensor must be 1 dimension, but got dim(2)", dl::Error);

  const Tensor<T> h = refbin::det<T>({50}, 45);
  ref.check(dl::histc(h, 7), key<T>("histc/auto"));
  ref.check(dl::histc(h, 5, -1, 1.5), key<T>("histc/range"));
  ref.check(dl::histc(dl::full<T>({3}, 2), 4), key<T>("histc/point"));
  CHECK(dl::histc(from<T>({0, kNaN, 5, 1}, {4}), 2, 0, 1).at(1) == T(1));
  CHECK_THROWS_WITH_AS(dl::histc(h, 0), "torch.histogram(): bins must be > 0, but got 0 for dimension 0", dl::Error);
  CHECK_THROWS_WITH_AS(dl::histc(h, 3, 2, 1), "torch.histc: max must be larger than min", dl::Error);
  CHECK_THROWS_WITH_AS(dl::histc(from<T>({1, INFINITY}, {2}), 3), "torch.histc: range of [1, inf] is not finite", dl::Error);
}

TEST_CASE("bincount, tril_indices, triu_indices, meshgrid") {
  const Tensor<int64_t> xi = dl::tensor<int64_t>({1, 4, 1, 0, 7, 4, 4});
  ref.check(dl::bincount(xi), "bincount/plain");
  ref.check(dl::bincount(xi, 10), "bincount/minlength");
  ref.check(dl::bincount(xi, refbin::det<double>({7}, 50)), "bincount/weights");
  const Tensor<float> w32 = dl::bincount(xi, refbin::det<float>({7}, 50));
  ref.check(w32, "bincount/weights32");
  CHECK(dl::bincount(dl::empty<int64_t>({0})).shape() == Shape{0});
  CHECK(dl::bincount(xi.to_int()).at(4) == 3);
  CHECK_THROWS_WITH_AS(dl::bincount(dl::tensor<int64_t>({-1, 2})), "bincount only supports 1-d non-negative integral inputs.", dl::Error);
  CHECK_THROWS_WITH_AS(dl::bincount(xi.view({7, 1})), "bincount only supports 1-d non-negative integral inputs.", dl::Error);
  CHECK_THROWS_WITH_AS(dl::bincount(xi, dl::ones<float>({3})), "weights should be 1-d and have the same length as input", dl::Error);
  CHECK_THROWS_WITH_AS(dl::bincount(xi, -1), "minlength should be >= 0", dl::Error);

  ref.check(dl::tril_indices(4, 3), "tril_indices/a");
  ref.check(dl::triu_indices(4, 3), "triu_indices/a");
  ref.check(dl::tril_indices(3, 5, 1), "tril_indices/b");
  ref.check(dl::triu_indices(3, 5, 1), "triu_indices/b");
  ref.check(dl::tril_indices(4, 4, -1), "tril_indices/c");
  ref.check(dl::triu_indices(4, 4, -1), "triu_indices/c");
  ref.check(dl::tril_indices(0, 3), "tril_indices/d");
  ref.check(dl::triu_indices(0, 3), "triu_indices/d");
  CHECK_THROWS_WITH_AS(dl::tril_indices(-1, 3), "row must be non-negative, got -1", dl::Error);
  CHECK_THROWS_WITH_AS(dl::triu_indices(3, -2), "col must be non-negative, got -2", dl::Error);

  Tensor<double> a = dl::tensor<double>({1, 2, 3}).requires_grad_(), b = dl::tensor<double>({10, 20}).requires_grad_();
  const auto ij = dl::meshgrid({a, b});
  REQUIRE(ij.size() == 2);
  CHECK(ij[0].shape() == Shape{3, 2});
  CHECK(ij[0].at(2, 1) == 3);
  CHECK(ij[1].at(2, 1) == 20);
  const auto xy = dl::meshgrid({a, b, dl::full<double>({}, 5)}, "xy");
  CHECK(xy[0].shape() == Shape{2, 3, 1});
  CHECK(xy[0].at(1, 2, 0) == 3);
  CHECK(xy[1].at(1, 2, 0) == 20);
  CHECK(xy[2].at(1, 2, 0) == 5);
  Tensor<double> s = (xy[0] * xy[1]).sum();
  s.backward();
  CHECK(a.grad().at(0) == 30);
  CHECK(b.grad().at(1) == 6);
  CHECK_THROWS_WITH_AS(dl::meshgrid({a, b}, "ji"), "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ji", dl::Error);
  CHECK_THROWS_WITH_AS(dl::meshgrid({a, dl::zeros<double>({2, 2})}), doctest::Contains("Expected 0D or 1D tensor"), dl::Error);
}

TEST_CASE_TEMPLATE("window functions", T, float, double) {
  for (int64_t n : {0, 1, 5, 8})
    for (bool periodic : {true, false}) {
      const std::string k = key<T>("window/") + std::to_string(n) + "/" + std::to_string(int(periodic)) + "/";
      INFO(k);
      ref.check(dl::hann_window<T>(n, periodic), k + "hann");
      ref.check(dl::hamming_window<T>(n, periodic), k + "hamming");
      ref.check(dl::hamming_window<T>(n, periodic, 0.6, 0.3), k + "hamming2");
      ref.check(dl::blackman_window<T>(n, periodic), k + "blackman");
      ref.check(dl::bartlett_window<T>(n, periodic), k + "bartlett");
      ref.check(dl::kaiser_window<T>(n, periodic), k + "kaiser");
      ref.check(dl::kaiser_window<T>(n, periodic, 5.0), k + "kaiser5");
    }
  CHECK_THROWS_WITH_AS(dl::hann_window<T>(-1), "hann_window requires non-negative window_length, got window_length=-1", dl::Error);
  CHECK_THROWS_WITH_AS(dl::kaiser_window<T>(-2), "kaiser_window requires non-negative window_length, got window_length=-2", dl::Error);
  CHECK_THROWS_WITH_AS(dl::bartlett_window<T>(-1), doctest::Contains("bartlett_window requires"), dl::Error);
}

TEST_CASE("Tensor members call the free functions") {
  const Tensor<float> x = refbin::det<float>({3, 5}, 60);
  CHECK(dl::equal(x.sort(1, true).values, dl::sort(x, 1, true).values));
  CHECK(dl::equal(x.argsort(0), dl::argsort(x, 0)));
  CHECK(dl::equal(x.topk(2).indices, dl::topk(x, 2).indices));
  CHECK(dl::equal(x.kthvalue(2, 0).values, dl::kthvalue(x, 2, 0).values));
  CHECK(x.median().item() == dl::median(x).item());
  CHECK(dl::equal(x.median(1, true).values, dl::median(x, 1, true).values));
  CHECK(dl::equal(x.mode().values, dl::mode(x).values));
  CHECK(dl::equal(x.cumsum(1), dl::cumsum(x, 1)));
  CHECK(dl::equal(x.cumprod(0), dl::cumprod(x, 0)));
  CHECK(dl::equal(x.diff(2, 0), dl::diff(x, 2, 0)));
  CHECK(dl::equal(x.flip({0, 1}), dl::flip(x, {0, 1})));
  CHECK(dl::equal(x.roll({2}, {1}), dl::roll(x, {2}, {1})));
  CHECK(dl::equal(x.rot90(), dl::rot90(x)));
  auto [v, i] = x.sort();
  CHECK(v.shape() == Shape{3, 5});
  CHECK(i.shape() == Shape{3, 5});
}
