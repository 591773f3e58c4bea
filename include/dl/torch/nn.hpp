// dl/torch/nn.hpp — libtorch's module holders and builder-style options over dl's layers
// (namespace torch::nn; see dl/torch.hpp).
//
//   struct NetImpl : torch::nn::Module {
//     NetImpl() : conv(torch::nn::Conv2dOptions(1, 8, 3).stride(2).bias(false)), fc(8 * 13 * 13, 10) {
//       register_module("conv", conv);       // registers the module the holder shares
//       register_module("fc", fc);
//     }
//     torch::Tensor forward(torch::Tensor x) { return fc->forward(torch::relu(conv->forward(x)).flatten(1)); }
//     torch::nn::Conv2d conv;  torch::nn::Linear fc;
//   };
//   TORCH_MODULE(Net);                         // Net: a holder of NetImpl (shared ownership)
//
// A holder shares its module as libtorch's do: copies refer to the same module, `->` and `*` reach
// it, and a module registered through its holder is the member itself (eval(), to() and hooks reach
// it). torch::nn::Module is dl::nn::Module, so every dl layer is one. Each `XImpl` is dl's layer
// (`LinearImpl` is a dl::nn::Linear<>) plus libtorch's constructors from options and an `options`
// member; the options classes have libtorch's chainable setters and getters.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core.hpp"

/// Declares a builder argument as libtorch's TORCH_ARG: a setter `name(value)` that returns the
/// options for chaining, a getter `name()`, and the member `name_` (default after the macro:
/// `TORCH_ARG(bool, bias) = true;`).
#define TORCH_ARG(T, name)                                        \
 public:                                                          \
  inline auto name(const T& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                                   \
    return *this;                                                 \
  }                                                               \
  inline const T& name() const noexcept { return this->name##_; } \
                                                                  \
 private:                                                         \
  T name##_

/// `TORCH_MODULE(Net)` declares `Net`, a holder of `NetImpl` (libtorch's macro).
#define TORCH_MODULE_IMPL(Name, ImplType)                          \
  class Name : public ::torch::nn::ModuleHolder<ImplType> {        \
   public:                                                         \
    using ::torch::nn::ModuleHolder<ImplType>::ModuleHolder;       \
    using Impl [[maybe_unused]] = ImplType;                        \
  }
#define TORCH_MODULE(Name) TORCH_MODULE_IMPL(Name, Name##Impl)

namespace torch {

/// libtorch's `int or list` arguments of D values (kernel sizes, strides, paddings).
template <size_t D>
class ExpandingArray {
 public:
  ExpandingArray(int64_t v) { values_.fill(v); }  // NOLINT: implicit, as libtorch's
  ExpandingArray(std::initializer_list<int64_t> list) : ExpandingArray(std::vector<int64_t>(list)) {}
  ExpandingArray(const std::vector<int64_t>& list) {  // NOLINT
    if (list.size() != D)
      throw dl::Error(str("Expected ", D, " values, but instead got ", list.size()));
    for (size_t i = 0; i < D; ++i) values_[i] = list[i];
  }
  const int64_t& operator[](size_t i) const { return values_[i]; }
  static constexpr size_t size() { return D; }
  const int64_t* data() const { return values_.data(); }
  /// dl's spelling of the same value: int64_t (D = 1), dl::Size2 or dl::Size3.
  auto dl() const {
    if constexpr (D == 1) return values_[0];
    else if constexpr (D == 2) return dl::Size2(values_[0], values_[1]);
    else return dl::Size3(values_[0], values_[1], values_[2]);
  }

 private:
  std::array<int64_t, D> values_{};
};

/// Padding modes of the convolutions (torch::kZeros, ...; dl/torch/core.hpp).
using PaddingModeName = enumtype::Name;

namespace nn {

using Module = dl::nn::Module;
using dl::nn::AnyModule;

/// libtorch's ModuleHolder: shared ownership of one module, reached with `->`, `*` and `get()`.
namespace detail {
template <class T>
inline constexpr bool is_shared_ptr = false;
template <class T>
inline constexpr bool is_shared_ptr<std::shared_ptr<T>> = true;
}  // namespace detail

template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  /// A new module from its default constructor.
  ModuleHolder()
    requires std::is_default_constructible_v<Impl>
      : impl_(std::make_shared<Impl>()) {}
  /// An empty holder (`torch::nn::Linear fc{nullptr};`, assigned later).
  ModuleHolder(std::nullptr_t) {}  // NOLINT
  /// A new module from the module's constructor arguments.
  template <class Head, class... Tail>
    requires(!std::is_same_v<std::decay_t<Head>, ModuleHolder> && !std::is_same_v<std::decay_t<Head>, std::nullptr_t> &&
             !detail::is_shared_ptr<std::decay_t<Head>> && !std::is_base_of_v<ModuleHolder, std::decay_t<Head>> &&
             std::is_constructible_v<Impl, Head, Tail...>)
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
  /// Shares an existing module.
  template <class M>
    requires std::is_base_of_v<Impl, M>
  ModuleHolder(std::shared_ptr<M> module) : impl_(std::move(module)) {}  // NOLINT

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  /// The module; throws on an empty holder.
  Impl* get() const {
    if (!impl_) [[unlikely]]
      throw dl::Error("Accessing empty ModuleHolder");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const noexcept { return !impl_; }
  explicit operator bool() const noexcept { return bool(impl_); }
  /// The module's forward.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    return get()->forward(std::forward<Args>(args)...);
  }
  /// The module's indexing (containers: `list[0]`, `dict["fc"]`), as libtorch's holders forward it.
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) const {
    return (*get())[std::forward<Arg>(arg)];
  }
  /// The module as a dl::nn::AnyModule (shared), for dl's containers.
  operator AnyModule() const { return AnyModule(std::shared_ptr<Impl>(impl_)); }  // NOLINT

 private:
  std::shared_ptr<Impl> impl_;
};

/// Prints the module (libtorch prints `*holder`).
template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& holder) {
  return os << *holder;
}

namespace detail {
template <class M>
AnyModule any_module(M&& m) {
  using D = std::decay_t<M>;
  if constexpr (requires { typename D::ContainedType; m.ptr(); }) return AnyModule(m.ptr());
  else return AnyModule(std::forward<M>(m));
}
}  // namespace detail

// ------------------------------------------------------------------------------ Linear

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);
  TORCH_ARG(int64_t, out_features);
  TORCH_ARG(bool, bias) = true;
};
class LinearImpl : public dl::nn::Linear<> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& o) : dl::nn::Linear<>(o.in_features(), o.out_features(), o.bias()), options(o) {}
  LinearOptions options;
};
TORCH_MODULE(Linear);

struct FlattenOptions {
  TORCH_ARG(int64_t, start_dim) = 1;
  TORCH_ARG(int64_t, end_dim) = -1;
};
class FlattenImpl : public dl::nn::Flatten {
 public:
  explicit FlattenImpl(const FlattenOptions& o = {}) : dl::nn::Flatten(o.start_dim(), o.end_dim()), options(o) {}
  FlattenOptions options;
};
TORCH_MODULE(Flatten);

// ------------------------------------------------------------------------------ convolutions

template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(std::string, padding_mode) = "zeros";

 public:
  /// dl's options of the same layer.
  auto dl() const {
    using S = decltype(kernel_size_.dl());
    return dl::nn::ConvOptions<S>{stride_.dl(), padding_.dl(), dilation_.dl(), groups_, bias_, padding_mode_};
  }
};
template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, output_padding) = 0;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(std::string, padding_mode) = "zeros";

 public:
  auto dl() const {
    using S = decltype(kernel_size_.dl());
    return dl::nn::ConvTransposeOptions<S>{stride_.dl(), padding_.dl(), output_padding_.dl(), groups_, bias_, dilation_.dl(), padding_mode_};
  }
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;

#define DL_TORCH_CONV(Name, D, OptionsT)                                                                              \
  class Name##Impl : public dl::nn::Name<> {                                                                          \
   public:                                                                                                            \
    Name##Impl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)                               \
        : Name##Impl(OptionsT(in_channels, out_channels, kernel_size)) {}                                             \
    explicit Name##Impl(const OptionsT& o)                                                                            \
        : dl::nn::Name<>(o.in_channels(), o.out_channels(), o.kernel_size().dl(), o.dl()), options(o) {}              \
    OptionsT options;                                                                                                 \
  };                                                                                                                  \
  TORCH_MODULE(Name);
DL_TORCH_CONV(Conv1d, 1, Conv1dOptions)
DL_TORCH_CONV(Conv2d, 2, Conv2dOptions)
DL_TORCH_CONV(Conv3d, 3, Conv3dOptions)
DL_TORCH_CONV(ConvTranspose1d, 1, ConvTranspose1dOptions)
DL_TORCH_CONV(ConvTranspose2d, 2, ConvTranspose2dOptions)
#undef DL_TORCH_CONV

// ------------------------------------------------------------------------------ normalisation, dropout

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT: implicit, as libtorch's
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(std::optional<double>, momentum) = 0.1;
  TORCH_ARG(bool, affine) = true;
  TORCH_ARG(bool, track_running_stats) = true;

 public:
  dl::nn::BatchNormOptions dl() const { return {eps_, momentum_, affine_, track_running_stats_}; }
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

#define DL_TORCH_BATCH_NORM(Name)                                                                  \
  class Name##Impl : public dl::nn::Name<> {                                                       \
   public:                                                                                         \
    explicit Name##Impl(const BatchNormOptions& o) : dl::nn::Name<>(o.num_features(), o.dl()), options(o) {} \
    BatchNormOptions options;                                                                      \
  };                                                                                               \
  TORCH_MODULE(Name);
DL_TORCH_BATCH_NORM(BatchNorm1d)
DL_TORCH_BATCH_NORM(BatchNorm2d)
DL_TORCH_BATCH_NORM(BatchNorm3d)
#undef DL_TORCH_BATCH_NORM

struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT: implicit, as libtorch's
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(double, momentum) = 0.1;
  TORCH_ARG(bool, affine) = false;
  TORCH_ARG(bool, track_running_stats) = false;

 public:
  dl::nn::InstanceNormOptions dl() const { return {eps_, momentum_, affine_, track_running_stats_}; }
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

#define DL_TORCH_INSTANCE_NORM(Name)                                                                \
  class Name##Impl : public dl::nn::Name {                                                          \
   public:                                                                                          \
    explicit Name##Impl(const InstanceNormOptions& o) : dl::nn::Name(o.num_features(), o.dl()), options(o) {} \
    InstanceNormOptions options;                                                                    \
  };                                                                                                \
  TORCH_MODULE(Name);
DL_TORCH_INSTANCE_NORM(InstanceNorm1d)
DL_TORCH_INSTANCE_NORM(InstanceNorm2d)
DL_TORCH_INSTANCE_NORM(InstanceNorm3d)
#undef DL_TORCH_INSTANCE_NORM

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, as libtorch's
  TORCH_ARG(double, p);
  TORCH_ARG(bool, inplace) = false;
};
using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;

#define DL_TORCH_DROPOUT(Name)                                                                   \
  class Name##Impl : public dl::nn::Name {                                                       \
   public:                                                                                       \
    explicit Name##Impl(const DropoutOptions& o = {}) : dl::nn::Name(o.p(), o.inplace()), options(o) {} \
    DropoutOptions options;                                                                      \
  };                                                                                             \
  TORCH_MODULE(Name);
DL_TORCH_DROPOUT(Dropout)
DL_TORCH_DROPOUT(Dropout1d)
DL_TORCH_DROPOUT(Dropout2d)
#undef DL_TORCH_DROPOUT

// ------------------------------------------------------------------------------ activations

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  TORCH_ARG(bool, inplace);
};
class ReLUImpl : public dl::nn::ReLU {
 public:
  explicit ReLUImpl(const ReLUOptions& o = {}) : dl::nn::ReLU(o.inplace()), options(o) {}
  ReLUOptions options;
};
TORCH_MODULE(ReLU);

struct LeakyReLUOptions {
  TORCH_ARG(double, negative_slope) = 1e-2;
  TORCH_ARG(bool, inplace) = false;
};
class LeakyReLUImpl : public dl::nn::LeakyReLU {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& o = {}) : dl::nn::LeakyReLU(o.negative_slope()), options(o) {}
  LeakyReLUOptions options;
};
TORCH_MODULE(LeakyReLU);

class TanhImpl : public dl::nn::Tanh {};
TORCH_MODULE(Tanh);
class SigmoidImpl : public dl::nn::Sigmoid {};
TORCH_MODULE(Sigmoid);

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  TORCH_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;
class SoftmaxImpl : public dl::nn::Softmax {
 public:
  explicit SoftmaxImpl(const SoftmaxOptions& o) : dl::nn::Softmax(o.dim()) {}
};
TORCH_MODULE(Softmax);
class LogSoftmaxImpl : public dl::nn::LogSoftmax {
 public:
  explicit LogSoftmaxImpl(const SoftmaxOptions& o) : dl::nn::LogSoftmax(o.dim()) {}
};
TORCH_MODULE(LogSoftmax);

// ------------------------------------------------------------------------------ pooling

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(bool, ceil_mode) = false;
};
template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(bool, ceil_mode) = false;
  TORCH_ARG(bool, count_include_pad) = true;
  TORCH_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using MaxPool2dOptions = MaxPoolOptions<2>;
using AvgPool2dOptions = AvgPoolOptions<2>;

class MaxPool2dImpl : public dl::nn::MaxPool2d {
 public:
  explicit MaxPool2dImpl(ExpandingArray<2> kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  explicit MaxPool2dImpl(const MaxPool2dOptions& o)
      : dl::nn::MaxPool2d(o.kernel_size().dl(), {.stride = o.stride().dl(), .padding = o.padding().dl(),
                                                 .dilation = o.dilation().dl(), .ceil_mode = o.ceil_mode()}),
        options(o) {}
  MaxPool2dOptions options;
};
TORCH_MODULE(MaxPool2d);
class AvgPool2dImpl : public dl::nn::AvgPool2d {
 public:
  explicit AvgPool2dImpl(ExpandingArray<2> kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions& o)
      : dl::nn::AvgPool2d(o.kernel_size().dl(), {.stride = o.stride().dl(), .padding = o.padding().dl(), .ceil_mode = o.ceil_mode(),
                                                 .count_include_pad = o.count_include_pad(),
                                                 .divisor_override = o.divisor_override().value_or(0)}),
        options(o) {}
  AvgPool2dOptions options;
};
TORCH_MODULE(AvgPool2d);

// ------------------------------------------------------------------------------ containers

/// Layers (holders, dl layers or AnyModule) in sequence; children named "0", "1", ...
class SequentialImpl : public dl::nn::Sequential<> {
 public:
  SequentialImpl() = default;
  template <class... Ms>
    requires(sizeof...(Ms) > 0)
  explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  template <class M>
  void push_back(M&& module) {
    dl::nn::Sequential<>::push_back(detail::any_module(std::forward<M>(module)));
  }
  template <class M>
  void push_back(const std::string& name, M&& module) {
    add_module(name, detail::any_module(std::forward<M>(module)));
  }
};
TORCH_MODULE(Sequential);

/// Modules in a list (holders, dl layers or AnyModule).
class ModuleListImpl : public dl::nn::ModuleList {
 public:
  ModuleListImpl() = default;
  template <class... Ms>
    requires(sizeof...(Ms) > 0)
  explicit ModuleListImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  template <class M>
  void push_back(M&& module) {
    dl::nn::ModuleList::push_back(detail::any_module(std::forward<M>(module)));
  }
};
TORCH_MODULE(ModuleList);

/// Modules by name, in insertion order (libtorch's ModuleDict): `ModuleDict({{"fc", Linear(3, 4)}, {"act",
/// ReLU()}})` or from a std::vector of (name, holder | shared_ptr | AnyModule) pairs. `dict["fc"]` is a
/// std::shared_ptr<Module> (`->as<Linear>()` gives the LinearImpl*), `dict->at<LinearImpl>("fc")` a reference;
/// iterating gives items with key() and value(). Inserting an existing key replaces that module in place.
class ModuleDictImpl : public dl::nn::ModuleDict {
 public:
  using Item = dl::nn::Named<std::shared_ptr<Module>>;
  ModuleDictImpl() = default;
  ModuleDictImpl(std::initializer_list<std::pair<std::string, AnyModule>> items) : dl::nn::ModuleDict(items) {}
  template <class M>
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, M>>& items) {
    update(items);
  }
  template <class M>
  void insert(const std::string& key, M&& module) {
    dl::nn::ModuleDict::insert(key, detail::any_module(std::forward<M>(module)));
  }
  /// Inserts (or replaces) each of items, in order.
  template <class M>
  void update(const std::vector<std::pair<std::string, M>>& items) {
    for (const auto& [key, module] : items) insert(key, module);
  }
  void update(ModuleDictImpl& other) {
    for (const std::string& key : other.keys()) insert(key, other.dl::nn::ModuleDict::operator[](key));
  }
  /// The module under key; throws naming the key when there is none.
  std::shared_ptr<Module> operator[](const std::string& key) { return dl::nn::ModuleDict::operator[](key).shared(); }
  /// The module under key as T (a module class, or a holder for its module class).
  template <class T>
  auto& at(const std::string& key) {
    auto* m = (*this)[key]->template as<T>();
    if (!m) throw dl::Error(dl::detail::cat("ModuleDict: the module under '", key, "' is a ", (*this)[key]->type_name(),
                                            ", not the type asked for"));
    return *m;
  }
  bool is_empty() const { return size() == 0; }
  std::vector<std::shared_ptr<Module>> values() {
    std::vector<std::shared_ptr<Module>> out;
    for (const std::string& key : keys()) out.push_back((*this)[key]);
    return out;
  }
  std::vector<Item> items() {
    std::vector<Item> out;
    for (const std::string& key : keys()) out.push_back(Item(key, (*this)[key]));
    return out;
  }
  /// Items with key() and value() (libtorch's OrderedDict items), valid until the dictionary changes.
  auto begin() { return (view_ = items()).begin(); }
  auto end() { return view_.end(); }

 private:
  std::vector<Item> view_;
};
TORCH_MODULE(ModuleDict);

/// Parameters in a list (libtorch's ParameterList): `ParameterList(torch::randn({3}), torch::randn({4}))`,
/// `list->append(t)` (made a parameter that requires grad), `list[i]` / `list->at(i)`; iterating gives items
/// with key() ("0", "1", ...) and value().
class ParameterListImpl : public dl::nn::ParameterList {
 public:
  using Item = dl::nn::Named<Tensor>;
  ParameterListImpl() = default;
  template <class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<Ts, Tensor> && ...))
  explicit ParameterListImpl(Ts&&... tensors) {
    (append(Tensor(std::forward<Ts>(tensors))), ...);
  }
  void append(const Tensor& t) { dl::nn::ParameterList::append(t); }
  void append(const Item& item) { append(item.value()); }
  /// Appends every tensor (or item) of a container: another ParameterList, a vector of tensors.
  template <class C>
    requires(!std::is_convertible_v<const C&, Tensor>)
  void extend(C& container) {
    for (const auto& p : container) append(p);
  }
  Tensor& at(size_t i) {
    if (i >= size()) throw dl::Error(dl::detail::cat("ParameterList: index ", i, " out of range for a list of ", size(), " parameters"));
    return dl::nn::ParameterList::operator[](i);
  }
  Tensor& operator[](size_t i) { return at(i); }
  bool is_empty() const { return size() == 0; }
  /// Items with key() and value(), valid until the list changes.
  auto begin() {
    view_.clear();
    for (size_t i = 0; i < size(); ++i) view_.push_back(Item(std::to_string(i), at(i)));
    return view_.begin();
  }
  auto end() { return view_.end(); }

 private:
  std::vector<Item> view_;
};
TORCH_MODULE(ParameterList);

/// A function as a module (libtorch's Functional): Functional(torch::relu),
/// Functional(torch::leaky_relu, 0.2) (extra arguments follow the input).
class FunctionalImpl : public Module {
 public:
  template <class F, class... Args>
    requires std::is_invocable_r_v<Tensor, F, const Tensor&, const Args&...>
  explicit FunctionalImpl(F fn, Args... args)
      : fn_([fn = std::move(fn), ... args = std::move(args)](const Tensor& x) { return Tensor(std::invoke(fn, x, args...)); }) {}
  Tensor forward(const Tensor& x) { return fn_(x); }
  Tensor operator()(const Tensor& x) { return forward(x); }
  std::string type_name() const override { return "Functional"; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
};
TORCH_MODULE(Functional);

}  // namespace nn
}  // namespace torch
