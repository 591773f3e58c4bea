// Tests of dl/linalg.hpp: every function's values and input gradients against torch.linalg
// (tests/data/linalg_ref.bin, written by tests/gen_linalg_reference.py) in float and double,
// batched and broadcast; finite-difference gradchecks of every differentiable op; singular,
// non-positive-definite and ill-conditioned inputs; PyTorch's error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/linalg.hpp>

#include "refbin.hpp"

namespace la = dl::linalg;
namespace ag = dl::autograd;
using dl::Shape;
using dl::Tensor;

namespace {

const refbin::File ref("linalg_ref.bin");

// The generator's input formulas, computed in double and converted (as PyTorch computed them).
Tensor<double> det64(const Shape& s, int64_t seed) { return refbin::det<double>(s, seed); }
Tensor<double> square(const Shape& s, int64_t seed, double shift) { return det64(s, seed) + dl::eye<double>(s.back()) * shift; }
Tensor<double> spd(const Shape& s, int64_t seed) {
  const Tensor<double> m = det64(s, seed);
  return dl::matmul(m, m.transpose(-2, -1)) + dl::eye<double>(s.back());
}
Tensor<double> sym(const Shape& s, int64_t seed) {
  const Tensor<double> m = det64(s, seed);
  return (m + m.transpose(-2, -1)) * 0.5;
}

template <class T>
using Outs = std::vector<Tensor<T>>;

/// Runs fn on leaves converted to T, compares its outputs with <name>/o<i> and the gradients of
/// sum_i (out_i * det(out_i.shape, 999 + i)).sum() with <name>/g<j>.
template <class T>
void check_case(const std::string& name, const std::function<Outs<T>(const Outs<T>&)>& fn, const std::vector<Tensor<double>>& inputs,
                double tol_scale = 1) {
  INFO(name);
  const double tol = (std::is_same_v<T, float> ? 1e-4 : 1e-9) * tol_scale;
  Outs<T> xs;
  for (const auto& x : inputs) xs.push_back(x.detach().clone().to<T>().requires_grad_());  // fresh leaves
  const Outs<T> outs = fn(xs);
  Tensor<T> loss;
  for (size_t i = 0; i < outs.size(); ++i) {
    ref.check(outs[i], name + "/o" + std::to_string(i), tol);
    if (!outs[i].requires_grad()) continue;
    Tensor<T> term = (outs[i] * refbin::det<T>(outs[i].shape(), 999 + int64_t(i))).sum();
    loss = loss.defined() ? Tensor<T>(loss + term) : term;
  }
  REQUIRE(loss.defined());
  loss.backward();
  for (size_t j = 0; j < xs.size(); ++j) {
    const std::string key = name + "/g" + std::to_string(j);
    if (!ref.has(key) || ref.get(key).shape == Shape{0}) continue;
    ref.check(xs[j].grad(), key, tol);
  }
}

template <class T>
void reference_cases() {
  using V = Outs<T>;
  check_case<T>("inv", [](const V& x) { return V{la::inv(x[0])}; }, {square({2, 3, 4, 4}, 1, 4)});
  check_case<T>("det", [](const V& x) { return V{la::det(x[0])}; }, {square({3, 4, 4}, 2, 2)});
  // PyTorch's gradient at this rank-2 matrix is zero, dl's the cofactor matrix (the derivative; see
  // the gradcheck below): the value only.
  check_case<T>("det_singular", [](const V& x) { return V{la::det(x[0])}; },
                {dl::tensor<double>({{1, 2, 3}, {2, 4, 6}, {1, 0, 1}})});
  // Determinants of signs +, -, +.
  const Tensor<double> signed_ = square({3, 3, 3}, 3, 3) * dl::tensor<double>({1, -1, 1}).reshape({3, 1, 1});
  check_case<T>("slogdet", [](const V& x) { auto r = la::slogdet(x[0]); return V{r.sign, r.logabsdet}; }, {signed_});
  check_case<T>("logdet", [](const V& x) { return V{dl::logdet(x[0])}; }, {signed_});
  check_case<T>("solve", [](const V& x) { return V{la::solve(x[0], x[1])}; }, {square({2, 1, 4, 4}, 4, 4), det64({3, 4, 2}, 5)});
  check_case<T>("solve_vec", [](const V& x) { return V{la::solve(x[0], x[1])}; }, {square({4, 4}, 6, 4), det64({4}, 7)});
  check_case<T>("solve_right", [](const V& x) { return V{la::solve(x[0], x[1], false)}; }, {square({2, 4, 4}, 8, 4), det64({2, 3, 4}, 9)});
  check_case<T>("cholesky", [](const V& x) { return V{la::cholesky(x[0])}; }, {spd({2, 4, 4}, 10)});
  check_case<T>("cholesky_upper", [](const V& x) { return V{la::cholesky(x[0], true)}; }, {spd({2, 4, 4}, 11)});
  const Tensor<double> L = dl::tril(det64({2, 4, 4}, 12)) + dl::eye<double>(4) * 3.0;
  check_case<T>("cholesky_solve", [](const V& x) { return V{dl::cholesky_solve(x[0], x[1])}; }, {det64({2, 4, 3}, 13), L});
  check_case<T>("cholesky_solve_upper", [](const V& x) { return V{dl::cholesky_solve(x[0], x[1], true)}; },
                {det64({4, 3}, 14), L.transpose(-2, -1).contiguous()});
  auto qr = [](const V& x) { auto r = la::qr(x[0]); return V{r.Q, r.R}; };
  check_case<T>("qr_tall", qr, {det64({2, 5, 3}, 15)});
  check_case<T>("qr_wide", qr, {det64({2, 3, 5}, 16)});
  check_case<T>("qr_complete", [](const V& x) { auto r = la::qr(x[0], "complete"); return V{r.Q, r.R}; }, {square({4, 4}, 17, 2)});
  {
    const auto r = la::qr(det64({5, 3}, 18).to<T>(), "r");
    ref.check(r.R, "qr_r/o1", std::is_same_v<T, float> ? 1e-4 : 1e-9);
    CHECK(r.Q.numel() == 0);
  }
  // Sign-invariant outputs of the SVD and eigh: S, U^2, Vh^2 (the first k vectors).
  auto svd = [](bool full) {
    return [full](const V& x) {
      auto r = la::svd(x[0], full);
      const int64_t k = r.S.size(-1);
      const Tensor<T> U = r.U.narrow(-1, 0, k), Vh = r.Vh.narrow(-2, 0, k);
      return V{r.S, Tensor<T>(U * U), Tensor<T>(Vh * Vh)};
    };
  };
  check_case<T>("svd_tall", svd(false), {det64({2, 5, 3}, 19)});
  check_case<T>("svd_wide_full", svd(true), {det64({3, 5}, 20)});
  check_case<T>("svdvals", [](const V& x) { return V{la::svdvals(x[0])}; }, {det64({2, 4, 3}, 21)});
  auto eigh = [](const char* uplo) {
    return [uplo](const V& x) {
      auto r = la::eigh(x[0], uplo);
      return V{r.eigenvalues, Tensor<T>(r.eigenvectors * r.eigenvectors)};
    };
  };
  check_case<T>("eigh", eigh("L"), {sym({2, 4, 4}, 22)});
  check_case<T>("eigh_upper", eigh("U"), {det64({4, 4}, 23)});
  check_case<T>("eigvalsh", [](const V& x) { return V{la::eigvalsh(x[0])}; }, {det64({2, 3, 3}, 24)});
  check_case<T>("pinv_tall", [](const V& x) { return V{la::pinv(x[0])}; }, {det64({2, 5, 3}, 25)});
  check_case<T>("pinv_wide", [](const V& x) { return V{la::pinv(x[0])}; }, {det64({3, 5}, 26)});
  check_case<T>("pinv_hermitian", [](const V& x) { return V{la::pinv(x[0], {}, {}, true)}; }, {Tensor<double>(sym({4, 4}, 27) + dl::eye<double>(4) * 0.5)});
  ref.check(la::pinv(dl::matmul(det64({5, 2}, 28), det64({2, 4}, 29)).to<T>()), "pinv_low_rank/o0",
            std::is_same_v<T, float> ? 1e-4 : 1e-9);
  for (const char* drv : {"gelsy", "gelsd", "gels"}) {
    const std::string name = std::string("lstsq_") + drv;
    check_case<T>(name, [drv](const V& x) { return V{la::lstsq(x[0], x[1], {}, drv).solution}; }, {det64({2, 5, 3}, 30), det64({2, 5, 2}, 31)});
    const auto r = la::lstsq(det64({2, 5, 3}, 30).to<T>(), det64({2, 5, 2}, 31).to<T>(), {}, drv);
    ref.check(r.residuals, name + "/residuals", std::is_same_v<T, float> ? 1e-4 : 1e-9);
    ref.check(r.rank, name + "/rank");
    ref.check(r.singular_values, name + "/sv", std::is_same_v<T, float> ? 1e-4 : 1e-9);
  }
  check_case<T>("solve_triangular", [](const V& x) { return V{la::solve_triangular(x[0], x[1], true)}; },
                {square({2, 4, 4}, 32, 3), det64({2, 4, 3}, 33)});
  check_case<T>("solve_triangular_right_unit", [](const V& x) { return V{la::solve_triangular(x[0], x[1], false, false, true)}; },
                {det64({4, 4}, 34), det64({2, 3, 4}, 35)});
  const Tensor<double> M = det64({2, 3, 4}, 36) * dl::tensor<double>({1.0, 1.1, 1.2}).reshape({3, 1});
  check_case<T>("matrix_norm_fro", [](const V& x) { return V{la::matrix_norm(x[0])}; }, {M});
  check_case<T>("matrix_norm_nuc", [](const V& x) { return V{la::matrix_norm(x[0], "nuc")}; }, {M});
  const double inf = std::numeric_limits<double>::infinity();
  for (auto [name, ord] : std::vector<std::pair<std::string, double>>{{"inf", inf}, {"minf", -inf}, {"1", 1}, {"m1", -1}, {"2", 2}, {"m2", -2}})
    check_case<T>("matrix_norm_" + name, [ord](const V& x) { return V{la::matrix_norm(x[0], ord)}; }, {M});
  check_case<T>("matrix_norm_dims", [](const V& x) { return V{la::matrix_norm(x[0], 1.0, {2, 0}, true)}; }, {M});
  check_case<T>("matrix_norm_nuc_dims", [](const V& x) { return V{la::matrix_norm(x[0], "nuc", {0, 2}, true)}; }, {M});
  const Tensor<double> vec = det64({3, 5}, 37);
  for (auto [name, ord] :
       std::vector<std::pair<std::string, double>>{{"2", 2}, {"1", 1}, {"inf", inf}, {"minf", -inf}, {"3", 3}, {"half", 0.5}, {"0", 0}})
    if (name != "0") check_case<T>("vector_norm_" + name, [ord](const V& x) { return V{la::vector_norm(x[0], ord, {1})}; }, {vec});
  ref.check(la::vector_norm(vec.to<T>(), 0, {1}), "vector_norm_0/o0");
  check_case<T>("vector_norm_all", [](const V& x) { return V{la::vector_norm(x[0])}; }, {vec});
  check_case<T>("vector_norm_keepdim", [](const V& x) { return V{la::vector_norm(x[0], 3, {0, 1}, true)}; }, {vec});
  const Tensor<double> ranks =
      dl::stack({square({4, 4}, 38, 2), dl::matmul(det64({4, 2}, 39), det64({2, 4}, 40)), dl::zeros<double>({4, 4})});
  ref.check(la::matrix_rank(ranks.to<T>()), "matrix_rank/o0");
  ref.check(la::matrix_rank(dl::matmul(ranks, ranks.transpose(-2, -1)).to<T>(), {}, {}, true), "matrix_rank_hermitian/o0");
  ref.check(la::matrix_rank(ranks.to<T>(), 1.0, 0.0), "matrix_rank_atol/o0");
  for (int n : {3, -2, 0, 1}) {
    const std::string name = "matrix_power_" + (n < 0 ? "m" + std::to_string(-n) : std::to_string(n));
    if (n == 0) {
      ref.check(la::matrix_power(square({2, 3, 3}, 41, 2).to<T>(), 0), name + "/o0");
      continue;
    }
    check_case<T>(name, [n](const V& x) { return V{la::matrix_power(x[0], n)}; }, {square({2, 3, 3}, 41, 2)});
  }
  check_case<T>("cross", [](const V& x) { return V{la::cross(x[0], x[1])}; }, {det64({1, 2, 3}, 42), det64({4, 1, 3}, 43)});
  check_case<T>("cross_dim0", [](const V& x) { return V{dl::cross(x[0], x[1], 0)}; }, {det64({3, 2}, 44), det64({3, 2}, 45)});
  check_case<T>("outer", [](const V& x) { return V{dl::outer(x[0], x[1])}; }, {det64({3}, 46), det64({4}, 47)});
  check_case<T>("kron", [](const V& x) { return V{dl::kron(x[0], x[1])}; }, {det64({2, 3}, 48), det64({3, 2}, 49)});
  check_case<T>("kron_ranks", [](const V& x) { return V{dl::kron(x[0], x[1])}; }, {det64({2}, 50), det64({2, 2, 3}, 51)});
  check_case<T>("trace", [](const V& x) { return V{dl::trace(x[0])}; }, {det64({3, 4}, 52)});
  check_case<T>("diag_vec", [](const V& x) { return V{dl::diag(x[0], 1)}; }, {det64({3}, 53)});
  check_case<T>("diag_vec_neg", [](const V& x) { return V{dl::diag(x[0], -2)}; }, {det64({3}, 54)});
  check_case<T>("diag_mat", [](const V& x) { return V{dl::diag(x[0], -1)}; }, {det64({3, 4}, 55)});
  check_case<T>("diagonal", [](const V& x) { return V{dl::diagonal(x[0], 1, 2, 0)}; }, {det64({3, 2, 4}, 56)});
  check_case<T>("linalg_diagonal", [](const V& x) { return V{la::diagonal(x[0], -1)}; }, {det64({2, 4, 3}, 57)});
  check_case<T>("tril", [](const V& x) { return V{dl::tril(x[0], -1)}; }, {det64({2, 3, 4}, 58)});
  check_case<T>("triu", [](const V& x) { return V{dl::triu(x[0], 1)}; }, {det64({2, 3, 4}, 59)});
}

}  // namespace

TEST_CASE("linalg: values and gradients against PyTorch, double") { reference_cases<double>(); }
TEST_CASE("linalg: values and gradients against PyTorch, float") { reference_cases<float>(); }

TEST_CASE("linalg: finite-difference gradients") {
  using V = std::vector<Tensor<double>>;
  auto sq = [](const Tensor<double>& x) { return Tensor<double>(x * x); };
  auto sym2 = [](const Tensor<double>& x) { return Tensor<double>((x + x.transpose(-2, -1)) * 0.5); };
  const Tensor<double> A = square({2, 3, 3}, 61, 3), B = det64({2, 3, 2}, 62), R = det64({2, 4, 3}, 63), W = det64({2, 3, 4}, 64);
  SUBCASE("inverse, determinants, solvers") {
    CHECK(ag::gradcheck([](V& v) { return la::inv(v[0]); }, {A}));
    CHECK(ag::gradcheck([](V& v) { return la::det(v[0]); }, {det64({2, 3, 3}, 65)}));
    CHECK(ag::gradcheck([](V& v) { return la::det(v[0]); }, {dl::tensor<double>({{1, 2, 3}, {2, 4, 6}, {1, 0, 1}})}));
    CHECK(ag::gradcheck([](V& v) { return la::slogdet(v[0]).logabsdet; }, {det64({2, 3, 3}, 66)}));
    CHECK(ag::gradcheck([](V& v) { return la::solve(v[0], v[1]); }, {A, B}));
    CHECK(ag::gradcheck([](V& v) { return la::solve(v[0], v[1], false); }, {A, det64({2, 3}, 67)}));
    CHECK(ag::gradcheck([](V& v) { return la::solve_triangular(v[0], v[1], false); }, {A, B}));
    CHECK(ag::gradcheck([](V& v) { return la::solve_triangular(v[0], v[1], true, false, true); }, {A, det64({2, 4, 3}, 68)}));
    CHECK(ag::gradcheck([](V& v) { return la::matrix_power(v[0], -3); }, {A}));
    CHECK(ag::gradcheck([](V& v) { return la::matrix_power(v[0], 5); }, {A}));
  }
  SUBCASE("Cholesky") {
    auto pd = [](const Tensor<double>& m) { return Tensor<double>(dl::matmul(m, m.transpose(-2, -1)) + dl::eye<double>(m.size(-1))); };
    CHECK(ag::gradcheck([&](V& v) { return la::cholesky(pd(v[0])); }, {det64({2, 3, 3}, 69)}));
    CHECK(ag::gradcheck([&](V& v) { return la::cholesky(pd(v[0]), true); }, {det64({3, 3}, 70)}));
    const Tensor<double> L = dl::tril(det64({2, 3, 3}, 71)) + dl::eye<double>(3) * 3.0;
    // cholesky_solve reads one triangle of the factor (its gradient, as PyTorch's, is a full matrix).
    CHECK(ag::gradcheck([](V& v) { return dl::cholesky_solve(v[0], dl::tril(v[1])); }, {B, L}));
    CHECK(ag::gradcheck([](V& v) { return dl::cholesky_solve(v[0], dl::triu(v[1]), true); }, {B, L.transpose(-2, -1).contiguous()}));
  }
  SUBCASE("QR") {
    for (const Tensor<double>& x : {R, W, det64({3, 3}, 72)}) {
      CHECK(ag::gradcheck([](V& v) { auto r = la::qr(v[0]); return dl::cat({r.Q.flatten(), r.R.flatten()}); }, {x}));
    }
    CHECK(ag::gradcheck([](V& v) { auto r = la::qr(v[0], "complete"); return dl::cat({r.Q.flatten(), r.R.flatten()}); }, {W}));
  }
  SUBCASE("SVD and eigh") {
    for (bool full : {false, true})
      for (const Tensor<double>& x : {R, W}) {
        CHECK(ag::gradcheck(
            [&](V& v) {
              auto r = la::svd(v[0], full);
              const int64_t k = r.S.size(-1);
              return dl::cat({r.S.flatten(), sq(r.U.narrow(-1, 0, k)).flatten(), sq(r.Vh.narrow(-2, 0, k)).flatten()});
            },
            {x}));
      }
    CHECK(ag::gradcheck([](V& v) { return la::svdvals(v[0]); }, {R}));
    CHECK(ag::gradcheck([&](V& v) { auto r = la::eigh(sym2(v[0])); return dl::cat({r.eigenvalues.flatten(), sq(r.eigenvectors).flatten()}); },
                        {det64({2, 4, 4}, 73)}));
    CHECK(ag::gradcheck([&](V& v) { return la::eigvalsh(sym2(v[0]), "U"); }, {det64({3, 3}, 74)}));
  }
  SUBCASE("pinv, lstsq, norms") {
    CHECK(ag::gradcheck([](V& v) { return la::pinv(v[0]); }, {R}));
    CHECK(ag::gradcheck([](V& v) { return la::pinv(v[0]); }, {W}));
    CHECK(ag::gradcheck([&](V& v) { return la::pinv(sym2(v[0]), {}, {}, true); }, {det64({3, 3}, 75)}));
    for (const char* drv : {"gelsy", "gelsd", "gelss", "gels"})
      CHECK(ag::gradcheck([drv](V& v) { return la::lstsq(v[0], v[1], {}, drv).solution; }, {R, det64({2, 4, 2}, 76)}));
    CHECK(ag::gradcheck([](V& v) { return la::lstsq(v[0], v[1], {}, "gelsd").residuals; }, {R, det64({2, 4, 2}, 76)}));
    CHECK(ag::gradcheck([](V& v) { return la::matrix_norm(v[0], "nuc"); }, {W}));
    CHECK(ag::gradcheck([](V& v) { return la::matrix_norm(v[0], -2.0); }, {W}));
    CHECK(ag::gradcheck([](V& v) { return la::matrix_norm(v[0], 1.0, {0, 2}); }, {W}));
    CHECK(ag::gradcheck([](V& v) { return la::vector_norm(v[0], 3.0, {-1}); }, {W}));
  }
  SUBCASE("matrix helpers") {
    CHECK(ag::gradcheck([](V& v) { return dl::cross(v[0], v[1]); }, {det64({2, 3}, 77), det64({1, 3}, 78)}));
    CHECK(ag::gradcheck([](V& v) { return dl::outer(v[0], v[1]); }, {det64({3}, 79), det64({2}, 80)}));
    CHECK(ag::gradcheck([](V& v) { return dl::kron(v[0], v[1]); }, {det64({2, 2}, 81), det64({3}, 82)}));
    CHECK(ag::gradcheck([](V& v) { return dl::trace(v[0]); }, {det64({3, 3}, 83)}));
    CHECK(ag::gradcheck([](V& v) { return dl::diag(v[0], -1); }, {det64({3}, 84)}));
    CHECK(ag::gradcheck([](V& v) { return dl::diagonal(v[0].transpose(0, 1), 1, 0, 2); }, {det64({3, 2, 4}, 85)}));
    CHECK(ag::gradcheck([](V& v) { return dl::triu(v[0], -1); }, {W}));
  }
}

TEST_CASE("linalg: second derivatives through the saved outputs") {
  using V = std::vector<Tensor<double>>;
  CHECK(ag::gradgradcheck([](V& v) { return la::inv(v[0]); }, {square({3, 3}, 86, 3)}));
  CHECK(ag::gradgradcheck([](V& v) { return la::solve(v[0], v[1]); }, {square({3, 3}, 87, 3), det64({3, 2}, 88)}));
  CHECK(ag::gradgradcheck([](V& v) { return la::det(v[0]); }, {square({3, 3}, 89, 1)}));
}

TEST_CASE("linalg: singular and ill-conditioned input") {
  Tensor<double> s = dl::zeros<double>({3, 3});
  s.at(0, 0) = 1;
  const Tensor<double> batch = dl::stack({dl::eye<double>(3), s});
  CHECK_THROWS_WITH_AS(la::inv(s),
                       "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.",
                       dl::Error);
  CHECK_THROWS_WITH_AS(la::inv(batch.to<float>()),
                       "linalg.inv: (Batch element 1): The diagonal element 2 is zero, the inversion could not be completed because the "
                       "input matrix is singular.",
                       dl::Error);
  CHECK_THROWS_WITH_AS(la::solve(batch, dl::ones<double>({2, 3, 1})),
                       "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix is singular.", dl::Error);
  CHECK_THROWS_WITH_AS(la::matrix_power(s, -1), doctest::Contains("linalg.inv: The diagonal element 2 is zero"), dl::Error);
  Tensor<double> m = dl::eye<double>(4);
  m.at(2, 2) = -1;
  CHECK_THROWS_WITH_AS(la::cholesky(m),
                       "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading "
                       "minor of order 3 is not positive-definite).",
                       dl::Error);
  CHECK_THROWS_WITH_AS(la::cholesky(dl::stack({dl::eye<double>(4), m})),
                       doctest::Contains("linalg.cholesky: (Batch element 1): The factorization could not be completed"), dl::Error);
  // Singular: det 0, slogdet (0, -inf), logdet -inf; negative det: logdet NaN.
  CHECK(la::det(s).item() == 0);
  const auto sl = la::slogdet(s);
  CHECK(sl.sign.item() == 0);
  CHECK(sl.logabsdet.item() == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(dl::logdet(Tensor<double>(-dl::eye<double>(3))).item()));
  Tensor<double> x = s.clone().requires_grad_();
  CHECK_THROWS_WITH_AS(la::slogdet(x).logabsdet.backward(), doctest::Contains("undefined for a singular matrix"), dl::Error);
  CHECK(la::matrix_rank(s).item() == 1);
  // Hilbert matrix (condition number ~1.5e10): inv(H) H = I to the accuracy the conditioning allows.
  const int64_t n = 8;
  Tensor<double> H = dl::empty<double>({n, n});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) H.at(i, j) = 1.0 / double(i + j + 1);
  CHECK(dl::allclose(dl::matmul(la::inv(H), H), dl::eye<double>(n), 0, 1e-5));
  CHECK(dl::allclose(dl::matmul(H, la::solve(H, dl::ones<double>({n, 1}))), dl::ones<double>({n, 1}), 0, 1e-6));
  const Tensor<double> S = la::svdvals(H);
  CHECK(S.at(0) / S.at(n - 1) > 1e10);
  CHECK(la::matrix_rank(H).item() == n);
  CHECK(la::matrix_rank(H.to<float>()).item() < n);  // float's tolerance sees it as rank-deficient, as PyTorch
  CHECK_THROWS_WITH_AS(la::svd(dl::tensor<double>({{std::nan(""), 1.0}, {1.0, 1.0}})),
                       "linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values.", dl::Error);
}

TEST_CASE("linalg: undefined gradients raise") {
  Tensor<double> I = dl::eye<double>(3).requires_grad_();
  // Repeated singular values / eigenvalues: the vectors' gradient divides by their difference.
  auto r = la::svd(I);
  CHECK_THROWS_WITH_AS(r.U.sum().backward(), doctest::Contains("singular values are not distinct"), dl::Error);
  auto e = la::eigh(I);
  CHECK_THROWS_WITH_AS(e.eigenvectors.sum().backward(), doctest::Contains("eigenvalues are not distinct"), dl::Error);
  // ...while the values alone have a gradient.
  la::svdvals(I).sum().backward();
  CHECK(dl::allclose(I.grad(), dl::eye<double>(3)));
  Tensor<double> A = det64({4, 3}, 90).requires_grad_();
  CHECK_THROWS_WITH_AS(la::qr(A, "r").R.sum().backward(),
                       "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, "
                       "mode='reduced') if you are going to differentiate through linalg.qr.",
                       dl::Error);
  CHECK_THROWS_WITH_AS(la::qr(A, "complete").Q.sum().backward(),
                       "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.", dl::Error);
}

TEST_CASE("linalg: shape and argument errors") {
  const Tensor<double> A = dl::zeros<double>({3, 4});
  CHECK_THROWS_WITH_AS(la::inv(A), "linalg.inv: A must be batches of square matrices, but they are 3 by 4 matrices", dl::Error);
  CHECK_THROWS_WITH_AS(la::inv(dl::zeros<double>({3})), "linalg.inv: The input tensor A must have at least 2 dimensions.", dl::Error);
  CHECK_THROWS_WITH_AS(la::solve(dl::eye<double>(3), dl::ones<double>({4, 1})),
                       "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)", dl::Error);
  CHECK_THROWS_WITH_AS(la::solve(dl::eye<double>(3).expand({2, 3, 3}), dl::ones<double>({3, 3, 1})),
                       doctest::Contains("[2] and [3]"), dl::Error);
  CHECK_THROWS_WITH_AS(la::solve_triangular(dl::eye<double>(3), dl::ones<double>({4, 1}), true),
                       "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)", dl::Error);
  CHECK_THROWS_WITH_AS(dl::cholesky_solve(dl::ones<double>({4, 1}), dl::eye<double>(3)),
                       "Incompatible matrix sizes for cholesky_solve: each A matrix is 3 by 3 but each b matrix is 4 by 1", dl::Error);
  CHECK_THROWS_WITH_AS(la::cholesky(A), "linalg.cholesky: A must be batches of square matrices, but they are 3 by 4 matrices", dl::Error);
  CHECK_THROWS_WITH_AS(la::eigh(dl::eye<double>(3), "X"), "Expected UPLO argument to be 'L' or 'U', but got X", dl::Error);
  CHECK_THROWS_WITH_AS(la::qr(A, "x"), "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or 'complete'",
                       dl::Error);
  CHECK_THROWS_WITH_AS(la::lstsq(dl::eye<double>(3), dl::ones<double>({4, 1})), "torch.linalg.lstsq: input.size(-2) should match other.size(-2)",
                       dl::Error);
  CHECK_THROWS_WITH_AS(la::lstsq(dl::eye<double>(3), dl::ones<double>({3, 1}), {}, "abc"),
                       "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)", dl::Error);
  CHECK_THROWS_WITH_AS(la::matrix_norm(dl::eye<double>(3), 3.0), "linalg.matrix_norm: Order 3 not supported.", dl::Error);
  CHECK_THROWS_WITH_AS(la::matrix_norm(dl::eye<double>(3), "abc"), "linalg.matrix_norm: Order abc not supported.", dl::Error);
  CHECK_THROWS_WITH_AS(la::matrix_power(A, 2), "linalg.matrix_power: A must be batches of square matrices, but they are 3 by 4 matrices",
                       dl::Error);
  CHECK_THROWS_WITH_AS(la::cross(dl::ones<double>({4}), dl::ones<double>({4})),
                       "linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4", dl::Error);
  CHECK_THROWS_WITH_AS(dl::trace(dl::ones<double>({2, 3, 3})), "trace: expected a matrix, but got tensor with dim 3", dl::Error);
  CHECK_THROWS_WITH_AS(dl::diagonal(dl::ones<double>({2, 3, 3}), 0, 1, 1), "diagonal dimensions cannot be identical 1, 1", dl::Error);
  CHECK_THROWS_WITH_AS(dl::outer(dl::ones<double>({2, 3}), dl::ones<double>({3})), "outer: Expected 1-D argument self, but got 2-D",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::diag(dl::ones<double>({2, 3, 3})), "matrix or a vector expected", dl::Error);
}

TEST_CASE("linalg: results are usable tensors") {
  // Structured bindings, the diagonal as a writable view, and identities the factorisations satisfy.
  const Tensor<double> A = det64({2, 5, 3}, 91);
  auto [U, S, Vh] = la::svd(A, false);
  CHECK(dl::allclose(dl::matmul(Tensor<double>(U * S.unsqueeze(-2)), Vh), A, 0, 1e-12));
  auto [Q, R] = la::qr(A);
  CHECK(dl::allclose(dl::matmul(Q, R), A, 0, 1e-12));
  CHECK(dl::allclose(dl::matmul(Q.transpose(-2, -1), Q), dl::eye<double>(3).expand({2, 3, 3}), 0, 1e-12));
  Tensor<double> M = dl::zeros<double>({3, 3});
  dl::diagonal(M).fill_(2);
  CHECK(dl::allclose(M, dl::eye<double>(3) * 2.0));
  CHECK(dl::allclose(la::matrix_power(A.narrow(-1, 0, 3).narrow(-2, 0, 3), 0), dl::eye<double>(3).expand({2, 3, 3})));
}
