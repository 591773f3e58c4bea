// dl/distributions/distribution.hpp — the base of dl::distributions (torch.distributions): the
// Distribution interface (sample, rsample, log_prob, cdf/icdf, entropy, moments, batch/event
// shapes), PyTorch's argument validation and its messages, and helpers shared by the classes.
#pragma once

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../expr/special.hpp"
#include "../ops/indexing.hpp"
#include "../tensor.hpp"

namespace dl::distributions {

// ------------------------------------------------------------------------------ declarations

/// Whether distributions validate their arguments when the constructor is not told (PyTorch's
/// Distribution.set_default_validate_args; on by default, as in PyTorch).
inline bool& default_validate_args() {
  static bool v = true;
  return v;
}
inline void set_default_validate_args(bool value) { default_validate_args() = value; }

/// A distribution parameter given as a tensor or as a number (a 0-d tensor).
template <scalar_type T>
struct Param {
  Tensor<T> value;
  Param(Tensor<T> t) : value(std::move(t)) {}  // NOLINT: implicit, as torch accepts both
  template <expr::number N>
  Param(N v) : value(scalar_tensor<T>(T(v))) {}  // NOLINT
};

/// probs or logits, for the distributions that take either (exactly one must be defined):
/// Bernoulli<float>({.logits = l}), Categorical<double>({.probs = p}).
template <scalar_type T>
struct ProbsOrLogits {
  Tensor<T> probs;
  Tensor<T> logits;
};

/// The interface every distribution implements. T is the parameter (floating) type, V the type of
/// the values it describes (T, or int64_t for Categorical). Virtual at this run-time boundary so
/// that Independent and kl_divergence work on any distribution.
template <scalar_type T = float, scalar_type V = T>
class Distribution {
 public:
  using param_type = T;
  using value_type = V;
  virtual ~Distribution() = default;

  /// Shape over which parameters are batched, and shape of a single draw.
  const Shape& batch_shape() const { return batch_shape_; }
  const Shape& event_shape() const { return event_shape_; }
  /// sample_shape + batch_shape + event_shape.
  Shape extended_shape(const Shape& sample_shape = {}) const;
  bool validate_args() const { return validate_; }

  /// The class name ("Normal") and PyTorch's repr: Normal(loc: torch.Size([2]), scale: 1.0).
  virtual std::string name() const = 0;
  virtual std::string repr() const;
  /// The named parameters in PyTorch's order (repr and messages use them).
  virtual std::vector<std::pair<std::string, Tensor<T>>> params() const = 0;

  /// Whether rsample is implemented (reparameterised, differentiable draws).
  virtual bool has_rsample() const { return false; }
  /// Draws of shape sample_shape + batch_shape + event_shape, without gradient.
  virtual Tensor<V> sample(const Shape& sample_shape = {}, Generator* gen = nullptr) const;
  /// Reparameterised draws: gradients flow to the parameters. Throws where PyTorch has none.
  virtual Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const;
  /// Log density (or mass) of value, broadcast against batch_shape + event_shape; the result has
  /// the broadcast shape without the event dims. Validates value against the support.
  virtual Tensor<T> log_prob(const Tensor<V>& value) const = 0;
  /// Cumulative distribution function and its inverse, where PyTorch defines them.
  virtual Tensor<T> cdf(const Tensor<V>& value) const;
  virtual Tensor<T> icdf(const Tensor<T>& value) const;
  /// Entropy, of shape batch_shape.
  virtual Tensor<T> entropy() const;
  /// exp(entropy()).
  Tensor<T> perplexity() const { return Tensor<T>(dl::exp(entropy())); }
  /// Moments and mode, of shape batch_shape + event_shape.
  virtual Tensor<T> mean() const;
  virtual Tensor<V> mode() const;
  virtual Tensor<T> variance() const;
  virtual Tensor<T> stddev() const { return Tensor<T>(dl::sqrt(variance())); }

 protected:
  Distribution() = default;
  /// Sets the shapes and the validation flag (std::nullopt: the default).
  void init(Shape batch_shape, Shape event_shape, std::optional<bool> validate_args);
  [[noreturn]] void not_implemented(const char* what) const;
  /// Throws PyTorch's "Expected parameter ... to satisfy the constraint ..." unless `ok` is all true.
  void check_param(const std::string& param, const Tensor<T>& value, const std::string& constraint,
                   const Tensor<bool>& ok) const;
  /// PyTorch's _validate_sample: event shape, broadcastability, then `ok` (the support check
  /// evaluated on value); `support` is the support's repr. No-op when validation is off.
  template <class OkFn>
  void validate_sample(const Tensor<V>& value, const std::string& support, OkFn&& ok) const;
  void check_sample_shape(const Shape& value_shape) const;

  Shape batch_shape_, event_shape_;
  bool validate_ = true;
};

namespace detail {
/// "torch.Size([2, 3])"
inline std::string torch_size(const Shape& s);
/// Python's tuple repr of a shape: "()", "(2,)", "(2, 3)".
inline std::string py_shape(const Shape& s);
/// How PyTorch formats a tensor in f-strings: a 0-d tensor as its Python number, others printed.
template <class U>
std::string value_text(const Tensor<U>& t);
/// True when every element is true.
inline bool all_true(const Tensor<bool>& t);
/// Broadcasts tensors to their common shape (expanded views), as torch.distributions.utils.broadcast_all.
template <class T>
Shape broadcast_all(std::vector<Tensor<T>*> ts);
/// Sums the rightmost n dims.
template <class T>
Tensor<T> sum_rightmost(const Tensor<T>& x, int n);
/// Machine epsilon and smallest normal of T (torch.finfo).
template <class T>
constexpr double eps_of = std::numeric_limits<T>::epsilon();
template <class T>
constexpr double tiny_of = std::numeric_limits<T>::min();
/// probs clamped to [eps, 1 - eps] (torch.distributions.utils.clamp_probs).
template <expr::expression E>
auto clamp_probs(E&& p) {
  using T = expr::value_type_t<E>;
  return dl::clamp(std::forward<E>(p), T(eps_of<T>), T(1 - eps_of<T>));
}
/// The shape without its last n dims. @pre n <= s.size()
inline Shape drop_last(const Shape& s, size_t n) {
  Shape r;
  for (int i = 0; i + int(n) < s.size(); ++i) r.push_back(s[i]);
  return r;
}
/// Shape concatenation.
inline Shape cat_shapes(const Shape& a, const Shape& b) {
  Shape r = a;
  for (int64_t s : b) r.push_back(s);
  return r;
}
/// The Philox stream of one element: words for draw k of element i (any number of draws).
struct ElementStream {
  uint64_t seed, counter;
  uint64_t draw = 0;
  std::array<uint32_t, 4> words{};
  int used = 4;
  double uniform() {  // in [0, 1), 53 bits
    if (used > 2) {
      words = dl::detail::Philox::generate(seed, counter, ++draw);
      used = 0;
    }
    const double u = dl::detail::uniform_double(words[size_t(used)], words[size_t(used + 1)]);
    used += 2;
    return u;
  }
  double normal() {  // Box-Muller
    const double u1 = 1 - uniform(), u2 = uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
};
/// Calls f(i, stream) for i < n in parallel; element i draws from its own Philox stream, so results
/// do not depend on the thread count. Reserves n counters of the generator.
template <class F>
void for_each_stream(Generator* gen, int64_t n, F&& f) {
  if (n <= 0) return;
  auto [seed, first] = (gen ? *gen : default_generator()).reserve(uint64_t(n));
  dl::detail::parallel_for(0, n, 256, [&, seed = seed, first = first](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      ElementStream s{seed, first + uint64_t(i)};
      f(i, s);
    }
  });
}
/// A contiguous double copy of t broadcast to shape (for the sampling loops).
template <class T>
std::vector<double> doubles(const Tensor<T>& t, const Shape& shape) {
  Tensor<double> d = cast<double>(t.detach().expand(shape));
  return std::vector<double>(d.data(), d.data() + d.numel());
}
}  // namespace detail

// ------------------------------------------------------------------------------ implementation

namespace detail {

inline std::string torch_size(const Shape& s) {
  std::string r = "torch.Size([";
  for (int i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "])";
}

inline std::string py_shape(const Shape& s) {
  std::string r = "(";
  for (int i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

template <class U>
std::string value_text(const Tensor<U>& t) {
  if (t.dim() == 0) {
    const U v = t.detach().contiguous().item();
    if constexpr (std::is_floating_point_v<U>) return dl::detail::py_float(double(v));
    else if constexpr (std::is_same_v<U, bool>) return v ? "True" : "False";
    else return std::to_string(v);
  }
  std::ostringstream os;
  os << t.detach();
  return os.str();
}

inline bool all_true(const Tensor<bool>& t) {
  const Tensor<bool> c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i)
    if (!c.data()[i]) return false;
  return true;
}

template <class T>
Shape broadcast_all(std::vector<Tensor<T>*> ts) {
  Shape s;
  for (auto* t : ts) s = broadcast_shapes(s, t->shape());
  for (auto* t : ts)
    if (t->shape() != s) *t = t->expand(s);
  return s;
}

template <class T>
Tensor<T> sum_rightmost(const Tensor<T>& x, int n) {
  if (n <= 0) return x;
  Dims dims;
  for (int i = 0; i < n; ++i) dims.push_back(x.dim() - 1 - i);
  return x.sum(dims);
}

}  // namespace detail

template <scalar_type T, scalar_type V>
Shape Distribution<T, V>::extended_shape(const Shape& sample_shape) const {
  return detail::cat_shapes(detail::cat_shapes(sample_shape, batch_shape_), event_shape_);
}

template <scalar_type T, scalar_type V>
std::string Distribution<T, V>::repr() const {
  std::string r = name() + "(";
  bool first = true;
  for (const auto& [n, t] : params()) {
    r += (first ? "" : ", ") + n + ": " + (t.numel() == 1 ? detail::value_text(t) : detail::torch_size(t.shape()));
    first = false;
  }
  return r + ")";
}

template <scalar_type T, scalar_type V>
void Distribution<T, V>::init(Shape batch_shape, Shape event_shape, std::optional<bool> validate_args) {
  batch_shape_ = std::move(batch_shape);
  event_shape_ = std::move(event_shape);
  validate_ = validate_args.value_or(default_validate_args());
}

template <scalar_type T, scalar_type V>
void Distribution<T, V>::not_implemented(const char* what) const {
  throw Error(dl::detail::cat(name(), ".", what, " is not implemented (as in PyTorch)"));
}

template <scalar_type T, scalar_type V>
Tensor<V> Distribution<T, V>::sample(const Shape& sample_shape, Generator* gen) const {
  if constexpr (std::is_same_v<T, V>) {
    if (has_rsample()) {
      autograd::NoGradGuard no_grad;
      return rsample(sample_shape, gen).detach();
    }
  }
  not_implemented("sample");
}

template <scalar_type T, scalar_type V>
Tensor<T> Distribution<T, V>::rsample(const Shape&, Generator*) const {
  not_implemented("rsample");
}
template <scalar_type T, scalar_type V>
Tensor<T> Distribution<T, V>::cdf(const Tensor<V>&) const {
  not_implemented("cdf");
}
template <scalar_type T, scalar_type V>
Tensor<T> Distribution<T, V>::icdf(const Tensor<T>&) const {
  not_implemented("icdf");
}
template <scalar_type T, scalar_type V>
Tensor<T> Distribution<T, V>::entropy() const {
  not_implemented("entropy");
}
template <scalar_type T, scalar_type V>
Tensor<T> Distribution<T, V>::mean() const {
  not_implemented("mean");
}
template <scalar_type T, scalar_type V>
Tensor<V> Distribution<T, V>::mode() const {
  not_implemented("mode");
}
template <scalar_type T, scalar_type V>
Tensor<T> Distribution<T, V>::variance() const {
  not_implemented("variance");
}

template <scalar_type T, scalar_type V>
void Distribution<T, V>::check_param(const std::string& param, const Tensor<T>& value, const std::string& constraint,
                                     const Tensor<bool>& ok) const {
  if (!validate_ || detail::all_true(ok)) return;
  throw Error(dl::detail::cat("Expected parameter ", param, " (Tensor of shape ", detail::py_shape(value.shape()),
                              ") of distribution ", repr(), " to satisfy the constraint ", constraint,
                              ", but found invalid values:\n", detail::value_text(value)));
}

template <scalar_type T, scalar_type V>
void Distribution<T, V>::check_sample_shape(const Shape& actual) const {
  const int ne = event_shape_.size();
  Shape tail;
  for (int k = actual.size() >= ne ? actual.size() - ne : 0; k < actual.size(); ++k) tail.push_back(actual[k]);
  DL_CHECK(actual.size() >= ne && tail == event_shape_,
           "The right-most size of value must match event_shape: ", detail::torch_size(actual), " vs ",
           detail::torch_size(event_shape_), ".");
  const Shape expected = extended_shape();
  for (int k = 0; k < std::min(actual.size(), expected.size()); ++k) {
    const int64_t i = actual[actual.size() - 1 - k], j = expected[expected.size() - 1 - k];
    DL_CHECK(i == 1 || j == 1 || i == j, "Value is not broadcastable with batch_shape+event_shape: ",
             detail::torch_size(actual), " vs ", detail::torch_size(expected), ".");
  }
}

template <scalar_type T, scalar_type V>
template <class OkFn>
void Distribution<T, V>::validate_sample(const Tensor<V>& value, const std::string& support, OkFn&& ok) const {
  if (!validate_) return;
  check_sample_shape(value.shape());
  if (detail::all_true(ok(value))) return;
  throw Error(dl::detail::cat("Expected value argument (Tensor of shape ", detail::py_shape(value.shape()),
                              ") to be within the support (", support, ") of the distribution ", repr(),
                              ", but found invalid values:\n", detail::value_text(value)));
}

}  // namespace dl::distributions
