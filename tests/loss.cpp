// Tests of dl/nn/functional/softmax.hpp and dl/nn/functional/loss.hpp (kernels in
// dl/ops/softmax.hpp and dl/ops/cross_entropy.hpp): values and gradients against PyTorch
// (tests/data/loss_ref.bin, written by tests/gen_loss_reference.py) in float and double, finite
// differences (first and second order) in double, the fused backward against its create_graph
// form, thread-count independence, and the error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/nn/functional/loss.hpp>
#include <dl/nn/functional/softmax.hpp>

#include "refbin.hpp"

namespace F = dl::nn::functional;
using dl::Shape;
using dl::Tensor;
using dl::nn::Reduction;
using doctest::Contains;

namespace {

const refbin::File ref("loss_ref.bin");
using refbin::backward_weighted;
using refbin::det;

std::string case_name(const char* family, int k) { return std::string(family) + "/" + std::to_string(k); }
bool has_case(const char* family, int k) { return ref.has(case_name(family, k) + "/params"); }

template <dl::expression E>
auto leaf(const E& e) {
  dl::Tensor<dl::expr::value_type_t<E>> l = dl::Tensor<dl::expr::value_type_t<E>>(e).detach();
  l.requires_grad_();
  return l;
}

/// A tensor computed in double (as the generator does) and converted to T.
template <class T>
Tensor<T> from_double(const Tensor<double>& t) {
  return t.to<T>().detach().clone();
}

Shape shape_at(const std::vector<double>& p, size_t at) {
  Shape s;
  for (int d = 0; d < int(p[at]); ++d) s.push_back(int64_t(p[at + 1 + d]));
  return s;
}

Reduction reduction(double code) {
  const Reduction r[] = {Reduction::none, Reduction::mean, Reduction::sum, Reduction::batchmean};
  return r[int(code)];
}

template <class T>
void clear_grads(std::initializer_list<Tensor<T>> ts) {
  for (const auto& t : ts)
    if (t.defined()) t.mutable_grad() = Tensor<T>{};
}

template <class T>
bool same_values(const Tensor<T>& a_, const Tensor<T>& b_) {
  const Tensor<T> a = a_.contiguous(), b = b_.contiguous();
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (!(a.data()[i] == b.data()[i]) && !(std::isnan(a.data()[i]) && std::isnan(b.data()[i]))) return false;
  return true;
}

template <class T>
double max_abs_diff(const Tensor<T>& a_, const Tensor<T>& b_) {
  const Tensor<T> a = a_.contiguous(), b = b_.contiguous();
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(double(a.data()[i]) - double(b.data()[i])));
  return m;
}

}  // namespace

// ============================================================================== softmax

TEST_CASE_TEMPLATE("softmax and log_softmax match PyTorch: any dim, strided rows, fused expressions, 0-d and empty", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("softmax", k); ++k, ++cases) {
    const std::string c = case_name("softmax", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const int nd = shape.size();
    const int64_t dim = int64_t(p[size_t(1 + nd)]);
    const int layout = int(p[size_t(2 + nd)]);
    Tensor<T> a, b;
    if (layout == 1) {
      const Shape stored = nd == 2 ? Shape{shape[1], shape[0]} : Shape{shape[0], shape[2], shape[1]};
      a = leaf(from_double<T>(Tensor<double>(det<double>(stored, 3 * k) * 3.0)));
    } else {
      a = leaf(from_double<T>(Tensor<double>(det<double>(shape, 3 * k) * 3.0)));
      if (layout == 2) b = leaf(det<T>(shape, 3 * k + 1));
    }
    for (const bool log : {false, true}) {
      const std::string tag = c + (log ? "/lsm" : "/sm");
      Tensor<T> out;
      if (layout == 2) {
        out = log ? F::log_softmax(a * T(2) + b, dim) : F::softmax(a * T(2) + b, dim);  // read fused
      } else {
        const Tensor<T> x = layout == 1 ? (nd == 2 ? a.t() : a.transpose(1, 2)) : a;
        out = log ? F::log_softmax(x, dim) : F::softmax(x, dim);
      }
      ref.check(out, tag);
      CHECK(out.is_contiguous());
      backward_weighted(out);
      ref.check(a.grad(), tag + "/ga");
      if (b.defined()) ref.check(b.grad(), tag + "/gb");
      clear_grads({a, b});
    }
  }
  CHECK(cases == 18);
}

TEST_CASE_TEMPLATE("softmax with infinite logits: masked entries get 0, an all -inf row is NaN as in PyTorch", T, float, double) {
  for (const std::string name : {"softmax_inf", "softmax_inf_short"}) {  // long rows, and short rows one per SIMD lane
    CAPTURE(name);
    const Tensor<T> x = ref.tensor<T>(name + "/x");
    ref.check(F::softmax(x, 1), name + "/sm");
    ref.check(F::log_softmax(x, 1), name + "/lsm");
    // The same rows walked across the inner dim (softmax over dim 0 of the transpose).
    ref.check(F::softmax(x.t().contiguous(), 0).t().contiguous(), name + "/sm");
    ref.check(F::log_softmax(x.t().contiguous(), 0).t().contiguous(), name + "/lsm");
  }
}

TEST_CASE("softmax: values of simple cases, names of the backward nodes, no grad recorded without need") {
  const Tensor<double> x = dl::tensor<double>({1.0, 2.0, 3.0});
  const Tensor<double> s = F::softmax(x, 0);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  CHECK(s.at(2) == doctest::Approx(std::exp(3.0) / z).epsilon(1e-14));
  CHECK(F::log_softmax(x, -1).at(0) == doctest::Approx(1.0 - std::log(z)).epsilon(1e-14));
  CHECK(F::softmax(dl::full<double>({}, 7.0), 0).item() == 1.0);
  CHECK(F::log_softmax(dl::full<double>({}, 7.0), -1).item() == 0.0);
  CHECK(!s.requires_grad());
  Tensor<double> y = leaf(x);
  CHECK(F::softmax(y, 0).grad_fn()->name() == "SoftmaxBackward");
  CHECK(F::log_softmax(y * 2.0, 0).grad_fn()->name() == "LogSoftmaxBackward");
  {
    dl::NoGradGuard no_grad;
    CHECK(!F::softmax(y, 0).requires_grad());
  }
  // Large logits do not overflow.
  const Tensor<double> big = F::softmax(dl::tensor<double>({1000.0, 1000.0, -1000.0}), 0);
  CHECK(big.at(0) == 0.5);
  CHECK(big.at(2) == 0.0);
}

TEST_CASE("softmax: finite differences, first and second order (double)") {
  namespace ag = dl::autograd;
  const Tensor<double> x = det<double>({3, 4, 5}, 11);
  for (int64_t dim : {0, 1, -1}) {
    CAPTURE(dim);
    CHECK(ag::gradcheck([dim](auto& in) { return F::softmax(in[0], dim); }, {x}));
    CHECK(ag::gradcheck([dim](auto& in) { return F::log_softmax(in[0], dim); }, {x}));
    CHECK(ag::gradgradcheck([dim](auto& in) { return F::softmax(in[0], dim); }, {x}));
    CHECK(ag::gradgradcheck([dim](auto& in) { return F::log_softmax(in[0], dim); }, {x}));
  }
  const Tensor<double> w = det<double>({3, 4, 5}, 12);
  CHECK(ag::gradcheck([](auto& in) { return F::softmax(dl::tanh(in[0]) * in[1], 1); }, {x, w}));
  CHECK(ag::gradgradcheck([](auto& in) { return F::log_softmax(in[0] * in[1], 2); }, {x, w}));
  CHECK(ag::gradcheck([](auto& in) { return F::softmax(in[0].transpose(0, 2), 1); }, {x}));
  CHECK(ag::gradgradcheck([](auto& in) { return F::softmax(in[0], 0); }, {dl::full<double>({}, 0.3)}));
}

TEST_CASE("softmax: the fused backward equals its create_graph form, and results do not depend on the thread count") {
  const Tensor<double> base = det<double>({6, 40, 3}, 21);
  for (int64_t dim : {1, 2}) {
    for (const bool log : {false, true}) {
      CAPTURE(dim);
      CAPTURE(log);
      Tensor<double> x = leaf(base);
      const Tensor<double> v = det<double>(base.shape(), 22);
      auto f = [&] { return log ? F::log_softmax(x, dim) : F::softmax(x, dim); };
      const Tensor<double> fast = dl::autograd::grad<double>({f()}, {x}, {v})[0];
      const Tensor<double> graph = dl::autograd::grad<double>({f()}, {x}, {v}, true, true)[0];
      CHECK(graph.requires_grad());
      CHECK(max_abs_diff(fast, graph) < 1e-14);
    }
  }
  const Tensor<float> x = det<float>({64, 300}, 23);
  const int saved = dl::get_num_threads();
  dl::set_num_threads(1);
  const Tensor<float> one = F::softmax(x, 0), one_l = F::log_softmax(x, 1);
  dl::set_num_threads(2);
  CHECK(same_values(one, F::softmax(x, 0)));
  CHECK(same_values(one_l, F::log_softmax(x, 1)));
  dl::set_num_threads(saved);
}

TEST_CASE("softmax: errors") {
  const Tensor<float> x = dl::zeros({2, 3});
  CHECK_THROWS_WITH_AS(F::softmax(x, 2), Contains("dimension out of range (expected to be in range of [-2, 1], but got 2)"), dl::Error);
  CHECK_THROWS_WITH_AS(F::log_softmax(x, -3), Contains("log_softmax: dimension out of range (expected to be in range of [-2, 1], but got -3)"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::softmax(dl::zeros({}), 1), Contains("expected to be in range of [-1, 0], but got 1"), dl::Error);
  CHECK(F::softmax(dl::zeros({2, 0}), 1).shape() == Shape{2, 0});
  CHECK(F::log_softmax(dl::zeros({0, 3}), 1).shape() == Shape{0, 3});
}

// ============================================================================== cross entropy, nll

TEST_CASE_TEMPLATE("cross_entropy with class indices matches PyTorch: weights, ignore_index, label smoothing, every reduction", T, float,
                   double) {
  int cases = 0;
  for (int k = 0; has_case("ce", k); ++k, ++cases) {
    const std::string c = case_name("ce", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const size_t at = size_t(1 + shape.size());
    const bool weighted = p[at] != 0;
    const Tensor<int64_t> t = ref.tensor<int64_t>(c + "/t");
    const Tensor<T> w = weighted ? ref.tensor<T>(c + "/w") : Tensor<T>();
    Tensor<T> x = leaf(det<T>(shape, 2000 + k) * T(2));
    const Tensor<T> out = F::cross_entropy(
        x, t, {.weight = w, .reduction = reduction(p[at + 3]), .ignore_index = int64_t(p[at + 1]), .label_smoothing = p[at + 2]});
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
  }
  CHECK(cases == 103);
  Tensor<T> x = leaf(det<T>({3, 4}, 9));
  const Tensor<T> out = F::cross_entropy(x, dl::full<int64_t>({3}, -100));
  ref.check(out, "ce_all_ignored/out");
  backward_weighted(out);
  ref.check(x.grad(), "ce_all_ignored/gx");
}

TEST_CASE_TEMPLATE("cross_entropy with class probabilities matches PyTorch (gradients of input, target and weight)", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("ce_prob", k); ++k, ++cases) {
    const std::string c = case_name("ce_prob", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const size_t at = size_t(1 + shape.size());
    const int64_t C = shape.size() == 1 ? shape[0] : shape[1];
    Tensor<T> x = leaf(det<T>(shape, 3000 + k) * T(2));
    Tensor<T> t = leaf(from_double<T>(Tensor<double>((det<double>(shape, 3100 + k) + 2.0) / 4.0)));
    Tensor<T> w = p[at] != 0 ? leaf(from_double<T>(Tensor<double>(det<double>({C}, 3200 + k) + 2.5))) : Tensor<T>();
    const Tensor<T> out = F::cross_entropy(x, t, {.weight = w, .reduction = reduction(p[at + 2]), .label_smoothing = p[at + 1]});
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
    ref.check(t.grad(), c + "/gt");
    if (w.defined()) ref.check(w.grad(), c + "/gw");
  }
  CHECK(cases == 18);
}

TEST_CASE_TEMPLATE("nll_loss matches PyTorch", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("nll", k); ++k, ++cases) {
    const std::string c = case_name("nll", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const size_t at = size_t(1 + shape.size());
    const Tensor<int64_t> t = ref.tensor<int64_t>(c + "/t");
    const Tensor<T> w = p[at] != 0 ? ref.tensor<T>(c + "/w") : Tensor<T>();
    Tensor<T> x = leaf(det<T>(shape, 4200 + k));
    const Tensor<T> out = F::nll_loss(x, t, {.weight = w, .reduction = reduction(p[at + 2]), .ignore_index = int64_t(p[at + 1])});
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
  }
  CHECK(cases == 36);
}

TEST_CASE("cross_entropy equals nll_loss of log_softmax, and a strided or expression input") {
  const Tensor<int64_t> t = dl::tensor<int64_t>({2, 0, 4, 1, -100, 3});
  const Tensor<double> w = dl::tensor<double>({0.5, 1.0, 2.0, 1.5, 3.0});
  const Tensor<double> x = det<double>({6, 5}, 31);
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    const Tensor<double> a = F::cross_entropy(x, t, {.weight = w, .reduction = r});
    const Tensor<double> b = F::nll_loss(F::log_softmax(x, 1), t, {.weight = w, .reduction = r});
    CHECK(max_abs_diff(a, b) < 1e-14);
  }
  const Tensor<double> xt = det<double>({5, 6}, 31).t();  // not contiguous
  CHECK(max_abs_diff(F::cross_entropy(xt, t), F::cross_entropy(xt.contiguous(), t)) < 1e-15);
  CHECK(max_abs_diff(F::cross_entropy(x * 2.0 + 1.0, t), F::cross_entropy(Tensor<double>(x * 2.0 + 1.0), t)) < 1e-15);
  // [C] logits with a 0-d target: a 0-d loss, also unreduced.
  const Tensor<double> v = det<double>({5}, 32);
  const Tensor<int64_t> t0 = dl::full<int64_t>({}, 3);
  CHECK(F::cross_entropy(v, t0, {.reduction = Reduction::none}).shape() == Shape{});
  CHECK(F::cross_entropy(v, t0).item() == doctest::Approx(-F::log_softmax(v, 0).at(3)).epsilon(1e-14));
}

TEST_CASE("cross_entropy and nll_loss: finite differences, first and second order (double)") {
  namespace ag = dl::autograd;
  const Tensor<int64_t> t = dl::tensor<int64_t>({2, 0, 4, -100});
  const Tensor<int64_t> ts = dl::tensor<int64_t>({{1, 2, 0, 1}, {3, 3, 1, 0}});  // [N = 2, d = 4]
  const Tensor<double> w = dl::tensor<double>({0.5, 1.0, 2.0, 1.5, 3.0});
  const Tensor<double> x = det<double>({4, 5}, 41), xs = det<double>({2, 4, 4}, 42);
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    CAPTURE(int(r));
    auto ce = [&](auto& in) { return F::cross_entropy(in[0], t, {.weight = w, .reduction = r, .label_smoothing = 0.3}); };
    CHECK(ag::gradcheck(ce, {x}));
    CHECK(ag::gradgradcheck(ce, {x}));
    auto ce_spatial = [&](auto& in) { return F::cross_entropy(in[0], ts, {.reduction = r, .label_smoothing = 0.1}); };
    CHECK(ag::gradcheck(ce_spatial, {xs}));
    CHECK(ag::gradgradcheck(ce_spatial, {xs}));
    auto nll = [&](auto& in) { return F::nll_loss(in[0], t, {.weight = w, .reduction = r}); };
    CHECK(ag::gradcheck(nll, {x}));
    CHECK(ag::gradgradcheck(nll, {x}));
    CHECK(ag::gradcheck([&](auto& in) { return F::nll_loss(in[0], ts, {.reduction = r}); }, {xs}));
    auto prob = [&](auto& in) { return F::cross_entropy(in[0], in[1], {.weight = in[2], .reduction = r, .label_smoothing = 0.2}); };
    const Tensor<double> tp = Tensor<double>((det<double>({4, 5}, 43) + 2.0) / 4.0);
    CHECK(ag::gradcheck(prob, {x, tp, w}));
    CHECK(ag::gradgradcheck(prob, {x, tp, w}));
  }
}

TEST_CASE("cross_entropy: the fused backward equals its create_graph form; results do not depend on the thread count") {
  const Tensor<int64_t> t = dl::tensor<int64_t>({{2, 0, 4, -100, 1}, {3, 1, 1, 0, 2}});
  const Tensor<double> w = dl::tensor<double>({0.5, 1.0, 2.0, 1.5, 3.0});
  for (const Shape& shape : {Shape{10, 5}, Shape{2, 5, 5}}) {
    const Tensor<int64_t> tt = shape.size() == 2 ? t.reshape({10}) : t;
    for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
      for (const bool softmax : {true, false}) {
        Tensor<double> x = leaf(det<double>(shape, 51));
        auto f = [&] {
          return softmax ? F::cross_entropy(x, tt, {.weight = w, .reduction = r, .label_smoothing = 0.2})
                         : F::nll_loss(x, tt, {.weight = w, .reduction = r});
        };
        const Tensor<double> y = f();
        const Tensor<double> v = det<double>(y.shape(), 52);
        const Tensor<double> fast = dl::autograd::grad<double>({y}, {x}, {v})[0];
        const Tensor<double> graph = dl::autograd::grad<double>({f()}, {x}, {v}, true, true)[0];
        CHECK(max_abs_diff(fast, graph) < 1e-14);
      }
    }
  }
  const Tensor<float> logits = det<float>({5000, 10}, 53), spatial = det<float>({3, 10, 700}, 54);
  const Tensor<int64_t> labels = dl::remainder(dl::arange(int64_t(5000)), int64_t(10));
  const Tensor<int64_t> labels_s = Tensor<int64_t>(dl::remainder(dl::arange(int64_t(2100)), int64_t(10))).reshape({3, 700});
  const int saved = dl::get_num_threads();
  dl::set_num_threads(1);
  const Tensor<float> a = F::cross_entropy(logits, labels, {.label_smoothing = 0.1}), b = F::cross_entropy(spatial, labels_s);
  dl::set_num_threads(2);
  CHECK(same_values(a, F::cross_entropy(logits, labels, {.label_smoothing = 0.1})));
  CHECK(same_values(b, F::cross_entropy(spatial, labels_s)));
  dl::set_num_threads(saved);
}

TEST_CASE("cross_entropy and nll_loss: errors") {
  const Tensor<float> x = dl::zeros({3, 4});
  const Tensor<int64_t> t = dl::tensor<int64_t>({0, 1, 1});
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::tensor<int64_t>({0, 12, 1})), "Target 12 is out of bounds.", dl::Error);
  CHECK_THROWS_WITH_AS(F::nll_loss(x, dl::tensor<int64_t>({0, 1, -1})), "Target -1 is out of bounds.", dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::tensor<int64_t>({0, 1})), "Expected input batch_size (3) to match target batch_size (2).",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::zeros<int64_t>({3, 2})), "0D or 1D target tensor expected, multi-target not supported",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::zeros<int64_t>({3, 4})),
                       "Expected floating point type for target with class probabilities, got Long", dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(dl::zeros({2, 3, 4}), dl::zeros<int64_t>({2, 5})), "Expected target size [2, 4], got [2, 5]",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(dl::zeros({2, 3, 4, 5}), dl::zeros<int64_t>({2, 4, 4})),
                       "Expected target size [2, 4, 5], got [2, 4, 4]", dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(dl::zeros({4}), dl::tensor<int64_t>({1, 2})), "size mismatch (got input: [4], target: [2])",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::nll_loss(dl::zeros({}), dl::zeros<int64_t>({1})), "Expected 1 or more dimensions (got 0)", dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, t, {.weight = dl::ones({3})}),
                       "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [3]",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::nll_loss(x, t, {.weight = dl::ones({4, 1})}),
                       "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [4, 1]",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, t, {.label_smoothing = 1.1}), "label_smoothing must be between 0.0 and 1.0. Got: 1.1",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, t, {.reduction = Reduction::batchmean}),
                       "cross_entropy: batchmean is not a valid value for reduction (only kl_div accepts it)", dl::Error);
  CHECK_THROWS_WITH_AS(F::nll_loss(x, t, {.reduction = Reduction::batchmean}), Contains("batchmean is not a valid value"), dl::Error);
  // probability targets
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::zeros({3, 4}), {.ignore_index = 1}), "ignore_index is not supported for floating point target",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::zeros({3, 5})), Contains("must have the input's shape [3, 4], but got target of shape [3, 5]"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::zeros({3, 4}), {.weight = dl::ones({5})}), Contains("for all 4 classes"), dl::Error);
  CHECK_THROWS_WITH_AS(F::cross_entropy(x, dl::zeros({3, 4}), {.label_smoothing = -0.5}), Contains("between 0.0 and 1.0"), dl::Error);
  CHECK(std::isnan(F::cross_entropy(dl::zeros({0, 4}), dl::zeros<int64_t>({0})).item()));
  CHECK(F::cross_entropy(dl::zeros({0, 4}), dl::zeros<int64_t>({0}), {.reduction = Reduction::sum}).item() == 0.0f);
  CHECK(std::isnan(F::cross_entropy(dl::zeros({0, 4}), dl::zeros({0, 4})).item()));
}

// ============================================================================== elementwise losses

TEST_CASE_TEMPLATE("mse, l1, smooth_l1 and huber losses match PyTorch (input and target gradients, broadcast target)", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("reg", k); ++k, ++cases) {
    const std::string c = case_name("reg", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const int kind = int(p[0]);
    const Reduction r = reduction(p[2]);
    Tensor<T> x = leaf(det<T>({4, 7}, 5000 + k));
    Tensor<T> y = leaf(det<T>(p[3] != 0 ? Shape{7} : Shape{4, 7}, 5100 + k));
    Tensor<T> out;
    switch (kind) {
      case 0: out = F::mse_loss(x, y, {.reduction = r}); break;
      case 1: out = F::l1_loss(x, y, {.reduction = r}); break;
      case 2: out = F::smooth_l1_loss(x, y, {.reduction = r, .beta = p[1]}); break;
      default: out = F::huber_loss(x, y, {.reduction = r, .delta = p[1]}); break;
    }
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
    ref.check(y.grad(), c + "/gy");
  }
  CHECK(cases == 28);
}

TEST_CASE_TEMPLATE("binary_cross_entropy matches PyTorch, also at probabilities of exactly 0 and 1", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("bce", k); ++k, ++cases) {
    const std::string c = case_name("bce", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    Tensor<T> x = leaf(from_double<T>(Tensor<double>((det<double>({5, 7}, 6000 + k) + 2.0) / 4.0 * 0.98 + 0.01)));
    Tensor<T> t = leaf(from_double<T>(Tensor<double>((det<double>({5, 7}, 6100 + k) + 2.0) / 4.0)));
    const Tensor<T> w = p[0] != 0 ? from_double<T>(Tensor<double>(det<double>({7}, 6200 + k) + 2.5)) : Tensor<T>();
    const Tensor<T> out = F::binary_cross_entropy(x, t, {.weight = w, .reduction = reduction(p[1])});
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
    ref.check(t.grad(), c + "/gt");
  }
  CHECK(cases == 6);
  if constexpr (std::is_same_v<T, double>) {  // 1e-30 is 0 in float
    Tensor<T> x = leaf(ref.tensor<T>("bce_edge/x"));
    const Tensor<T> out = F::binary_cross_entropy(x, ref.tensor<T>("bce_edge/t"), {.reduction = Reduction::none});
    ref.check(out, "bce_edge/out");
    out.sum().backward();
    ref.check(x.grad(), "bce_edge/gx");
  }
}

TEST_CASE_TEMPLATE("binary_cross_entropy_with_logits matches PyTorch: weight, pos_weight, large logits", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("bcel", k); ++k, ++cases) {
    const std::string c = case_name("bcel", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    Tensor<T> z = leaf(det<T>({5, 7}, 7000 + k) * T(5));
    Tensor<T> t = leaf(from_double<T>(Tensor<double>((det<double>({5, 7}, 7100 + k) + 2.0) / 4.0)));
    const Tensor<T> w = p[0] != 0 ? from_double<T>(Tensor<double>(det<double>({5, 1}, 7200 + k) + 2.5)) : Tensor<T>();
    const Tensor<T> pw = p[1] != 0 ? from_double<T>(Tensor<double>(det<double>({7}, 7300 + k) + 2.5)) : Tensor<T>();
    const Tensor<T> out = F::binary_cross_entropy_with_logits(z, t, {.weight = w, .reduction = reduction(p[2]), .pos_weight = pw});
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(z.grad(), c + "/gz");
    ref.check(t.grad(), c + "/gt");
  }
  CHECK(cases == 12);
  Tensor<T> z = leaf(ref.tensor<T>("bcel_edge/z"));
  const Tensor<T> out = F::binary_cross_entropy_with_logits(z, ref.tensor<T>("bcel_edge/t"), {.reduction = Reduction::none});
  ref.check(out, "bcel_edge/out");
  out.sum().backward();
  ref.check(z.grad(), "bcel_edge/gz");
}

TEST_CASE_TEMPLATE("kl_div matches PyTorch: log_target, mean over elements, batchmean, NaN target gradient at t = 0", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("kl", k); ++k, ++cases) {
    const std::string c = case_name("kl", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    Tensor<T> x = leaf(F::log_softmax(from_double<T>(det<double>({4, 6}, 8000 + k)), 1));
    Tensor<T> t = leaf(ref.tensor<T>(c + "/t"));
    const Tensor<T> out = F::kl_div(x, t, {.reduction = reduction(p[1]), .log_target = p[0] != 0});
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
    ref.check(t.grad(), c + "/gt");
  }
  CHECK(cases == 8);
}

TEST_CASE("elementwise losses: finite differences, first and second order (double)") {
  namespace ag = dl::autograd;
  const Tensor<double> x = det<double>({3, 5}, 61), y = det<double>({3, 5}, 62);
  const Tensor<double> p = Tensor<double>((det<double>({3, 5}, 63) + 2.0) / 4.0 * 0.9 + 0.05);
  const Tensor<double> q = Tensor<double>((det<double>({3, 5}, 64) + 2.0) / 4.0 * 0.9 + 0.05);
  const Tensor<double> w = Tensor<double>(det<double>({5}, 65) + 2.5), pw = Tensor<double>(det<double>({5}, 66) + 2.5);
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    CAPTURE(int(r));
    CHECK(ag::gradcheck([r](auto& in) { return F::mse_loss(in[0], in[1], {.reduction = r}); }, {x, y}));
    CHECK(ag::gradgradcheck([r](auto& in) { return F::mse_loss(in[0], in[1], {.reduction = r}); }, {x, y}));
    CHECK(ag::gradcheck([r](auto& in) { return F::l1_loss(in[0], in[1], {.reduction = r}); }, {x, y}));
    CHECK(ag::gradcheck([r](auto& in) { return F::smooth_l1_loss(in[0], in[1], {.reduction = r, .beta = 0.7}); }, {x, y}));
    CHECK(ag::gradgradcheck([r](auto& in) { return F::smooth_l1_loss(in[0], in[1], {.reduction = r, .beta = 0.7}); }, {x, y}));
    CHECK(ag::gradcheck([r](auto& in) { return F::huber_loss(in[0], in[1], {.reduction = r, .delta = 0.6}); }, {x, y}));
    CHECK(ag::gradgradcheck([r](auto& in) { return F::huber_loss(in[0], in[1], {.reduction = r, .delta = 0.6}); }, {x, y}));
    auto bce = [r](auto& in) { return F::binary_cross_entropy(in[0], in[1], {.weight = in[2], .reduction = r}); };
    CHECK(ag::gradcheck(bce, {p, q, w}));
    CHECK(ag::gradgradcheck(bce, {p, q, w}));
    auto bcel = [r](auto& in) {
      return F::binary_cross_entropy_with_logits(in[0], in[1], {.weight = in[2], .reduction = r, .pos_weight = in[3]});
    };
    CHECK(ag::gradcheck(bcel, {x, q, w, pw}));
    CHECK(ag::gradgradcheck(bcel, {x, q, w, pw}));
    auto kl = [r](auto& in) { return F::kl_div(in[0], in[1], {.reduction = r}); };
    CHECK(ag::gradcheck(kl, {x, q}));
    CHECK(ag::gradgradcheck(kl, {x, q}));
    auto klt = [r](auto& in) { return F::kl_div(in[0], in[1], {.reduction = r, .log_target = true}); };
    CHECK(ag::gradcheck(klt, {x, y}));
    CHECK(ag::gradgradcheck(klt, {x, y}));
  }
  CHECK(ag::gradcheck([](auto& in) { return F::kl_div(in[0], in[1], {.reduction = Reduction::batchmean}); }, {x, q}));
  // log sigmoid's derivative at exactly 0 is 1/2 (a composition of abs and relu would give 0 there)
  Tensor<double> z = leaf(dl::zeros<double>({1}));
  F::binary_cross_entropy_with_logits(z, dl::zeros<double>({1})).backward();
  CHECK(z.grad().item() == 0.5);
}

TEST_CASE("elementwise losses: expression inputs are read fused, reductions, errors") {
  const Tensor<float> a = det<float>({4, 6}, 71), b = det<float>({4, 6}, 72);
  CHECK(max_abs_diff(F::mse_loss(a * 2.0f, b), F::mse_loss(Tensor<float>(a * 2.0f), b)) < 1e-7);
  CHECK(F::l1_loss(a, b, {.reduction = Reduction::none}).shape() == Shape{4, 6});
  CHECK(F::mse_loss(a, b, {.reduction = Reduction::sum}).item() ==
        doctest::Approx(F::mse_loss(a, b).item() * 24).epsilon(1e-5));
  CHECK(F::smooth_l1_loss(a, b, {.beta = 0.0}).item() == F::l1_loss(a, b).item());
  const Tensor<float> pb = Tensor<float>(b * b);
  CHECK(F::kl_div(a, pb, {.reduction = Reduction::batchmean}).item() ==
        doctest::Approx(F::kl_div(a, pb, {.reduction = Reduction::sum}).item() / 4).epsilon(1e-6));
  CHECK(std::isnan(F::l1_loss(dl::zeros({0}), dl::zeros({0})).item()));

  CHECK_THROWS_WITH_AS(F::mse_loss(a, dl::zeros({4, 5})), Contains("The size of tensor a (6) must match the size of tensor b (5)"), dl::Error);
  CHECK_THROWS_WITH_AS(F::mse_loss(a, b, {.reduction = Reduction::batchmean}),
                       "mse_loss: batchmean is not a valid value for reduction (only kl_div accepts it)", dl::Error);
  CHECK_THROWS_WITH_AS(F::l1_loss(a, b, {.reduction = Reduction::batchmean}), Contains("l1_loss: batchmean"), dl::Error);
  CHECK_THROWS_WITH_AS(F::smooth_l1_loss(a, b, {.beta = -1}), "smooth_l1_loss does not support negative values for beta.", dl::Error);
  CHECK_THROWS_WITH_AS(F::huber_loss(a, b, {.delta = 0}), "huber_loss does not support non-positive values for delta.", dl::Error);
  const Tensor<float> p = dl::full({4, 6}, 0.5f);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy(p, dl::zeros({4, 5})),
                       "Using a target size ([4, 5]) that is different to the input size ([4, 6]) is deprecated. Please ensure they have "
                       "the same size.",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy(a, b), "all elements of input should be between 0 and 1", dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy(dl::full({2}, std::nanf("")), dl::zeros({2})),
                       "all elements of input should be between 0 and 1", dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy(p, p, {.weight = dl::ones({5})}),
                       Contains("The size of tensor a (5) must match the size of tensor b (6) at non-singleton dimension 1"), dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy(p, p, {.weight = dl::ones({2, 4, 6})}), Contains("weight of shape [2, 4, 6] does not broadcast"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy_with_logits(a, dl::zeros({4, 5})), "Target size ([4, 5]) must be the same as input size ([4, 6])",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy_with_logits(a, b, {.pos_weight = dl::ones({5})}), Contains("must match the size of tensor"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy_with_logits(a, b, {.pos_weight = dl::ones({3, 1, 6})}),
                       Contains("pos_weight of shape [3, 1, 6] does not broadcast to the input's shape [4, 6]"), dl::Error);
  CHECK_THROWS_WITH_AS(F::binary_cross_entropy_with_logits(a, b, {.reduction = Reduction::batchmean}), Contains("batchmean"), dl::Error);
  CHECK_THROWS_WITH_AS(F::kl_div(a, dl::zeros({4, 5})), Contains("must match the size of tensor"), dl::Error);
}
