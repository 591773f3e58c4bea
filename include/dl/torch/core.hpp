// dl/torch/core.hpp — libtorch's spellings of tensors, dtypes, devices, seeds, guards, checks and
// free functions (namespace torch), as thin names over dl's own (see dl/torch.hpp).
//
// torch::Tensor is dl::Tensor<float>: libtorch's default dtype, and dl's typed fast path. Tensors of
// other element types are dl::Tensor<int64_t> etc. (`auto` keeps them); the dtype constants
// (torch::kLong, torch::kFloat, ...) are tags that pick the element type when a tensor is made:
// `torch::zeros({3}, torch::kLong)` is a dl::Tensor<int64_t>.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../dl.hpp"

namespace torch {

using Tensor = dl::Tensor<float>;
using dl::AnyTensor;
using dl::Device;
using dl::DeviceType;
using dl::kCPU;
using dl::kCUDA;
using dl::NoGradGuard;
using dl::Shape;
using dl::TensorOptions;
using IntArrayRef = std::vector<int64_t>;
using dl::autograd::EnableGradGuard;
template <class T>
using optional = std::optional<T>;
using nullopt_t = std::nullopt_t;
inline constexpr std::nullopt_t nullopt = std::nullopt;

// ------------------------------------------------------------------------------ dtypes

/// A dtype constant: the element type as a type (for the typed result) and as dl::ScalarType.
template <class T>
struct Dtype {
  using type = T;
  using dl_element_type = T;  // x.to(torch::kLong): dl::Tensor's conversion to a tag's element type
  constexpr operator dl::ScalarType() const { return dl::dtype_of<T>; }
};
inline constexpr Dtype<float> kFloat{}, kFloat32{};
inline constexpr Dtype<double> kDouble{}, kFloat64{};
inline constexpr Dtype<dl::Half> kHalf{}, kFloat16{};
inline constexpr Dtype<dl::BFloat16> kBFloat16{};
inline constexpr Dtype<int64_t> kLong{}, kInt64{};
inline constexpr Dtype<int32_t> kInt{}, kInt32{};
inline constexpr Dtype<uint8_t> kUInt8{}, kByte{};
inline constexpr Dtype<bool> kBool{};

/// libtorch's enum constants (torch::kMean, torch::kTanh, torch::kReflect, ...): each is a name that
/// options store and dl's functions take as a string ("mean", "tanh", "reflect").
namespace enumtype {
struct Name {
  const char* name;
  operator std::string() const { return name; }  // NOLINT: implicit, for dl's string options
  friend bool operator==(Name a, Name b) { return std::string_view(a.name) == b.name; }
};
}  // namespace enumtype
inline constexpr enumtype::Name kMean{"mean"}, kSum{"sum"}, kMax{"max"}, kNone{"none"}, kBatchMean{"batchmean"};
inline constexpr enumtype::Name kTanh{"tanh"}, kReLU{"relu"}, kGELU{"gelu"}, kSigmoid{"sigmoid"}, kLinear{"linear"},
    kLeakyReLU{"leaky_relu"}, kSiLU{"silu"};
inline constexpr enumtype::Name kZeros{"zeros"}, kConstant{"constant"}, kReflect{"reflect"}, kReplicate{"replicate"},
    kCircular{"circular"};
inline constexpr enumtype::Name kFanIn{"fan_in"}, kFanOut{"fan_out"};
inline constexpr enumtype::Name kNearest{"nearest"}, kNearestExact{"nearest-exact"}, kBilinear{"bilinear"}, kBicubic{"bicubic"},
    kTrilinear{"trilinear"}, kArea{"area"};

/// libtorch's reductions (at::Reduction::Mean etc.), for the loss functions below.
namespace Reduction {
enum Reduction { None, Mean, Sum };
}  // namespace Reduction

namespace detail {
inline dl::nn::Reduction reduction(Reduction::Reduction r) {
  return r == Reduction::None ? dl::nn::Reduction::none : r == Reduction::Sum ? dl::nn::Reduction::sum : dl::nn::Reduction::mean;
}
/// A loss option's torch::kMean / kSum / kNone (/ kBatchMean where allowed) as dl's reduction.
inline dl::nn::Reduction reduction(enumtype::Name r, bool batchmean_allowed = false) {
  const std::string_view n = r.name;
  if (n == "mean") return dl::nn::Reduction::mean;
  if (n == "sum") return dl::nn::Reduction::sum;
  if (n == "none") return dl::nn::Reduction::none;
  if (n == "batchmean" && batchmean_allowed) return dl::nn::Reduction::batchmean;
  throw dl::Error(std::string(n) + " is not a valid value for reduction (expected torch::kMean, torch::kSum or torch::kNone" +
                  (batchmean_allowed ? " or torch::kBatchMean)" : ")"));
}
}  // namespace detail

// ------------------------------------------------------------------------------ utilities

/// The arguments streamed into one string (c10::str).
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

inline void manual_seed(uint64_t seed) { dl::manual_seed(seed); }

/// Sets grad mode for its scope (torch::AutoGradMode enable(true) inside a NoGradGuard).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(dl::autograd::is_grad_enabled()) { dl::autograd::set_grad_enabled(enabled); }
  ~AutoGradMode() { dl::autograd::set_grad_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

namespace cuda {
/// Whether a CUDA device can be used: false in a build without dl/cuda.hpp (nvcc), as libtorch's CPU build.
inline bool is_available() {
  const auto& backend = dl::detail::cuda_backend();
  return backend.device_count && backend.device_count() > 0;
}
inline int64_t device_count() {
  const auto& backend = dl::detail::cuda_backend();
  return backend.device_count ? backend.device_count() : 0;
}
inline void manual_seed(uint64_t seed) { dl::manual_seed(seed); }
inline void manual_seed_all(uint64_t seed) { dl::manual_seed(seed); }
}  // namespace cuda

}  // namespace torch

/// libtorch's checks: a dl::Error naming the condition (and the message), thrown when it fails.
#define TORCH_CHECK(cond, ...)                                                                                  \
  do {                                                                                                          \
    if (!(cond)) [[unlikely]]                                                                                  \
      throw ::dl::Error(::torch::str("Expected " #cond " to be true, but got false. " __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
#define AT_ASSERT(cond, ...) TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_WARN(...) (std::cerr << "Warning: " << ::torch::str(__VA_ARGS__) << "\n")

namespace torch {

// ------------------------------------------------------------------------------ making tensors

/// A shape as libtorch's creation functions take it: a braced list, a vector, a dl::Shape, or one
/// integer (a 1-d shape: torch::zeros(n)).
struct Sizes {
  Shape shape;
  Sizes(int64_t n) : shape({n}) {}                            // NOLINT: implicit on purpose
  Sizes(std::initializer_list<int64_t> list) : shape(list) {}  // NOLINT
  Sizes(const std::vector<int64_t>& v) : shape(v) {}           // NOLINT
  Sizes(const Shape& s) : shape(s) {}                          // NOLINT
};

// Without a dtype: float (libtorch's default dtype). With one: that element type.
inline Tensor zeros(Sizes shape, Device device = kCPU) { return dl::zeros<float>(std::move(shape.shape), device); }
template <class T>
dl::Tensor<T> zeros(Sizes shape, Dtype<T>) { return dl::zeros<T>(std::move(shape.shape)); }
inline Tensor ones(Sizes shape, Device device = kCPU) { return dl::ones<float>(std::move(shape.shape), device); }
template <class T>
dl::Tensor<T> ones(Sizes shape, Dtype<T>) { return dl::ones<T>(std::move(shape.shape)); }
inline Tensor empty(Sizes shape, Device device = kCPU) { return dl::empty<float>(std::move(shape.shape), device); }
template <class T>
dl::Tensor<T> empty(Sizes shape, Dtype<T>) { return dl::empty<T>(std::move(shape.shape)); }
inline Tensor full(Sizes shape, double value, Device device = kCPU) {
  return dl::full<float>(std::move(shape.shape), float(value)).to(device);
}
template <class T>
dl::Tensor<T> full(Sizes shape, double value, Dtype<T>) { return dl::full<T>(std::move(shape.shape), T(value)); }
inline Tensor rand(Sizes shape, Device device = kCPU) { return dl::rand<float>(std::move(shape.shape)).to(device); }
inline Tensor randn(Sizes shape, Device device = kCPU) { return dl::randn<float>(std::move(shape.shape)).to(device); }
template <class T>
dl::Tensor<T> rand(Sizes shape, Dtype<T>) { return dl::rand<T>(std::move(shape.shape)); }
template <class T>
dl::Tensor<T> randn(Sizes shape, Dtype<T>) { return dl::randn<T>(std::move(shape.shape)); }
/// randint(high, shape) and randint(low, high, shape): int64, as libtorch's with kLong.
inline dl::Tensor<int64_t> randint(int64_t high, Sizes shape) { return dl::randint(0, high, std::move(shape.shape)); }
inline dl::Tensor<int64_t> randint(int64_t low, int64_t high, Sizes shape) { return dl::randint(low, high, std::move(shape.shape)); }
inline Tensor eye(int64_t n) { return dl::eye<float>(n); }
inline Tensor linspace(double start, double end, int64_t steps) { return dl::linspace<float>(start, end, steps); }
/// arange(end) and arange(start, end[, step]): integers give int64, floating values float (dl's
/// arange has libtorch's rule); with a dtype, that element type.
using dl::arange;
template <class T, class A>
dl::Tensor<T> arange(A end, Dtype<T>) {
  return dl::arange<T>(T(0), T(end), T(1));
}
template <class T, class A, class B>
dl::Tensor<T> arange(A start, B end, Dtype<T>) {
  return dl::arange<T>(T(start), T(end), T(1));
}
template <class T, class A, class B, class C>
dl::Tensor<T> arange(A start, B end, C step, Dtype<T>) {
  return dl::arange<T>(T(start), T(end), T(step));
}
/// A tensor from values: floating values give float, integers int64 (libtorch's inference).
inline Tensor tensor(std::initializer_list<float> v) { return dl::tensor<float>(v); }
inline Tensor tensor(std::initializer_list<double> v) { return dl::tensor<float>(std::vector<float>(v.begin(), v.end())); }
inline dl::Tensor<int64_t> tensor(std::initializer_list<int64_t> v) { return dl::tensor<int64_t>(std::vector<int64_t>(v)); }
inline dl::Tensor<int64_t> tensor(std::initializer_list<int> v) { return dl::tensor<int64_t>(std::vector<int64_t>(v.begin(), v.end())); }
inline Tensor tensor(const std::vector<float>& v) { return dl::tensor<float>(v); }
inline Tensor tensor(const std::vector<double>& v) {
  return dl::tensor<float>(std::vector<float>(v.begin(), v.end()));
}
inline dl::Tensor<int64_t> tensor(const std::vector<int64_t>& v) { return dl::tensor<int64_t>(v); }
inline dl::Tensor<int64_t> tensor(const std::vector<int>& v) {
  return dl::tensor<int64_t>(std::vector<int64_t>(v.begin(), v.end()));
}
template <class T, class U>
dl::Tensor<T> tensor(const std::vector<U>& v, Dtype<T>) {
  std::vector<T> c(v.size());
  for (size_t i = 0; i < v.size(); ++i) c[i] = T(v[i]);
  return dl::tensor<T>(c);
}
template <class T, class U>
dl::Tensor<T> tensor(std::initializer_list<U> v, Dtype<T> d) {
  return tensor(std::vector<U>(v), d);
}
/// A 0-d tensor: a floating value gives float, an integer int64.
inline Tensor tensor(double v) { return dl::scalar_tensor<float>(float(v)); }
inline dl::Tensor<int64_t> tensor(int64_t v) { return dl::scalar_tensor<int64_t>(v); }
inline dl::Tensor<int64_t> tensor(int v) { return dl::scalar_tensor<int64_t>(v); }
/// Wraps user memory without a copy (the caller keeps it alive).
inline Tensor from_blob(float* data, Sizes shape) { return dl::from_blob<float>(data, std::move(shape.shape)); }
template <class T>
dl::Tensor<T> from_blob(void* data, Sizes shape, Dtype<T>) {
  return dl::from_blob<T>(static_cast<T*>(data), std::move(shape.shape));
}

// ------------------------------------------------------------------------------ functions

// Non-template functions of torch::Tensor, so that they also pass as function pointers
// (torch::nn::Functional(torch::relu)); dl's lazy expressions convert to a tensor on the way in.
inline Tensor relu(const Tensor& x) { return Tensor(dl::relu(x)); }
inline Tensor sigmoid(const Tensor& x) { return Tensor(dl::sigmoid(x)); }
inline Tensor tanh(const Tensor& x) { return Tensor(dl::tanh(x)); }
inline Tensor exp(const Tensor& x) { return Tensor(dl::exp(x)); }
inline Tensor log(const Tensor& x) { return Tensor(dl::log(x)); }
inline Tensor sin(const Tensor& x) { return Tensor(dl::sin(x)); }
inline Tensor cos(const Tensor& x) { return Tensor(dl::cos(x)); }
inline Tensor sqrt(const Tensor& x) { return Tensor(dl::sqrt(x)); }
inline Tensor abs(const Tensor& x) { return Tensor(dl::abs(x)); }
inline Tensor pow(const Tensor& x, double e) { return Tensor(dl::pow(x, float(e))); }
inline Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01) {
  return dl::nn::functional::leaky_relu(x, negative_slope);
}
inline Tensor max_pool2d(const Tensor& x, dl::Size2 kernel_size, dl::OptionalSize2 stride = std::nullopt,
                         dl::Size2 padding = 0, dl::Size2 dilation = 1, bool ceil_mode = false) {
  return dl::nn::functional::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
}
inline Tensor avg_pool2d(const Tensor& x, dl::Size2 kernel_size, dl::OptionalSize2 stride = std::nullopt,
                         dl::Size2 padding = 0) {
  return dl::nn::functional::avg_pool2d(x, kernel_size, stride, padding);
}
inline Tensor dropout(const Tensor& x, double p, bool train) { return dl::nn::functional::dropout(x, p, train); }
inline Tensor softmax(const Tensor& x, int64_t dim) { return dl::nn::functional::softmax(x, dim); }
inline Tensor log_softmax(const Tensor& x, int64_t dim) { return dl::nn::functional::log_softmax(x, dim); }
inline Tensor matmul(const Tensor& a, const Tensor& b) { return dl::matmul(a, b); }
inline Tensor mm(const Tensor& a, const Tensor& b) { return dl::mm(a, b); }
inline Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1) { return x.flatten(start_dim, end_dim); }
inline Tensor cat(const std::vector<Tensor>& ts, int64_t dim = 0) { return dl::cat(ts, dim); }
inline Tensor stack(const std::vector<Tensor>& ts, int64_t dim = 0) { return dl::stack(ts, dim); }

/// nll_loss(input, target, weight = {}, reduction = Mean, ignore_index = -100), targets int64.
inline Tensor nll_loss(const Tensor& input, const dl::Tensor<int64_t>& target, const Tensor& weight = {},
                       Reduction::Reduction reduction = Reduction::Mean, int64_t ignore_index = -100) {
  return dl::nn::functional::nll_loss(input, target, {.weight = weight, .reduction = detail::reduction(reduction), .ignore_index = ignore_index});
}
inline Tensor cross_entropy_loss(const Tensor& input, const dl::Tensor<int64_t>& target, const Tensor& weight = {},
                                 Reduction::Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                                 double label_smoothing = 0.0) {
  return dl::nn::functional::cross_entropy(
      input, target,
      {.weight = weight, .reduction = detail::reduction(reduction), .ignore_index = ignore_index, .label_smoothing = label_smoothing});
}
inline Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction = Reduction::Mean) {
  return dl::nn::functional::mse_loss(input, target, {.reduction = detail::reduction(reduction)});
}
inline Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction = Reduction::Mean) {
  return dl::nn::functional::l1_loss(input, target, {.reduction = detail::reduction(reduction)});
}
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction = Reduction::Mean,
                             double beta = 1.0) {
  return dl::nn::functional::smooth_l1_loss(input, target, {.reduction = detail::reduction(reduction), .beta = beta});
}
inline Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                   Reduction::Reduction reduction = Reduction::Mean) {
  return dl::nn::functional::binary_cross_entropy(input, target, {.weight = weight, .reduction = detail::reduction(reduction)});
}

}  // namespace torch
