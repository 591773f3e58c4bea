// dl/nn/normalization.hpp — BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm. train() normalises with the
// batch statistics and updates the running ones (unbiased variance, num_batches_tracked); eval()
// uses the running statistics.
//   nn::BatchNorm2d<16> bn;   nn::BatchNorm2d bn2(16, {.momentum = 0.1});   nn::GroupNorm<2, 6> gn;
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "../config.hpp"
#include "container.hpp"
#include "functional/normalization.hpp"
#include "init.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

/// momentum = std::nullopt: the running statistics are the cumulative average of all batches.
struct BatchNormOptions {
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
};

namespace detail {

class BatchNormBase;

/// Makes a BatchNorm take its training statistics from every rank of a process group: set by
/// nn::SyncBatchNorm and nn::convert_sync_batchnorm (dl/nn/parallel/sync_batchnorm.hpp).
struct BatchNormSync {
  virtual ~BatchNormSync() = default;
  /// The training-mode forward; `momentum` is the running statistics' factor for this batch.
  virtual Tensor<float> forward(BatchNormBase& bn, const Tensor<float>& x, double momentum) = 0;
};

/// What the batch and instance norms share (PyTorch's _NormBase): affine parameters, running
/// statistics and their reset, and the printout.
class NormBase : public Module {
 public:
  static constexpr Axis feature_axis = Axis::channel;
  static constexpr bool keeps_axis(Axis) { return true; }
  Tensor<float> weight, bias;                 // [C] when affine
  Tensor<float> running_mean, running_var;    // [C] when track_running_stats
  Tensor<int64_t> num_batches_tracked;        // 0-d
  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;

  void reset_running_stats();
  void reset_parameters();
  int64_t input_size() const { return num_features; }
  int64_t output_size() const { return num_features; }
  DL_API std::string extra_repr() const override;

 protected:
  /// `kind` names the layer family in errors ("BatchNorm", "InstanceNorm").
  NormBase(const char* kind, int64_t num_features, const BatchNormOptions& o);
};

/// What BatchNorm1d/2d/3d share: NormBase and the forward rule.
class BatchNormBase : public NormBase {
 public:
  /// Set: training statistics over a process group's ranks (SyncBatchNorm); null: this process's.
  std::shared_ptr<BatchNormSync> sync;

 protected:
  BatchNormBase(int64_t num_features, const BatchNormOptions& o) : NormBase("BatchNorm", num_features, o) {}
  // A template, so that the batch-norm kernels compile only in programs that use batch norm.
  template <class X = Tensor<float>>
  Tensor<float> run(const X& x);
};

}  // namespace detail

#define DL_BATCH_NORM(Name, Check, Expected)                                                                   \
  template <int64_t C = dynamic>                                                                               \
  class Name;                                                                                                  \
  template <>                                                                                                  \
  class Name<dynamic> : public detail::BatchNormBase {                                                         \
   public:                                                                                                     \
    static constexpr int64_t static_in_features = dynamic, static_out_features = dynamic;                      \
    explicit Name(int64_t num_features, const BatchNormOptions& o = {}) : BatchNormBase(num_features, o) {}     \
    template <expression E>                                                                                    \
    Tensor<float> forward(const E& input) {                                                                    \
      const Tensor<float> x(input);                                                                            \
      DL_CHECK(Check, "expected " Expected " input (got ", x.dim(), "D input)");                               \
      return run(x);                                                                                           \
    }                                                                                                          \
    DL_MODULE(Name, weight, bias)                                                                              \
    DL_BUFFERS(running_mean, running_var, num_batches_tracked)                                                 \
  };                                                                                                           \
  template <int64_t C>                                                                                         \
  class Name : public Name<> {                                                                                 \
    static_assert(C > 0, "nn::" #Name "<C>: the channel count must be positive");                              \
                                                                                                               \
   public:                                                                                                     \
    static constexpr int64_t static_in_features = C, static_out_features = C;                                  \
    explicit Name(const BatchNormOptions& o = {}) : Name<>(C, o) {}                                             \
  };                                                                                                           \
  Name(int64_t)->Name<>;                                                                                       \
  Name(int64_t, const BatchNormOptions&)->Name<>;

/// Batch normalisation over [N, C] or [N, C, L].
DL_BATCH_NORM(BatchNorm1d, x.dim() == 2 || x.dim() == 3, "2D or 3D")
/// Batch normalisation over [N, C, H, W].
DL_BATCH_NORM(BatchNorm2d, x.dim() == 4, "4D")
/// Batch normalisation over [N, C, D, H, W].
DL_BATCH_NORM(BatchNorm3d, x.dim() == 5, "5D")
#undef DL_BATCH_NORM

struct LayerNormOptions {
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;  ///< false: a weight but no bias (PyTorch 2.1's LayerNorm(bias=False))
};

/// PyTorch's InstanceNorm defaults: no affine map, no running statistics.
struct InstanceNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = false;
  bool track_running_stats = false;
};

namespace detail {
/// What InstanceNorm1d/2d/3d share: each channel of each sample normalised over its positions
/// (F::instance_norm); an input without the batch dim is normalised as a batch of one.
class InstanceNormBase : public NormBase {
 public:
  /// x: [N, C, *spatial] or [C, *spatial] with `spatial_dims` positions dims. A template, so that
  /// the instance-norm kernels compile only in programs that use instance norm (as BatchNorm's run).
  template <class X = Tensor<float>>
  Tensor<float> normalize_instances(const X& x);

 protected:
  InstanceNormBase(int64_t num_features, int spatial_dims, const InstanceNormOptions& o)
      : NormBase("InstanceNorm", num_features,
                 {.eps = o.eps, .momentum = o.momentum, .affine = o.affine, .track_running_stats = o.track_running_stats}),
        spatial_dims_(spatial_dims) {}
  int spatial_dims_;
};
}  // namespace detail

#define DL_INSTANCE_NORM(Name, SpatialDims)                                                               \
  class Name : public detail::InstanceNormBase {                                                          \
   public:                                                                                                \
    static constexpr int64_t static_in_features = dynamic, static_out_features = dynamic;                 \
    explicit Name(int64_t num_features, const InstanceNormOptions& o = {})                                \
        : InstanceNormBase(num_features, SpatialDims, o) {}                                               \
    template <expression E>                                                                               \
    Tensor<float> forward(const E& input) { return normalize_instances(Tensor<float>(input)); }           \
    DL_MODULE(Name, weight, bias)                                                                         \
    DL_BUFFERS(running_mean, running_var, num_batches_tracked)                                            \
  };
/// Instance normalisation over [N, C, L] or [C, L].
DL_INSTANCE_NORM(InstanceNorm1d, 1)
/// Instance normalisation over [N, C, H, W] or [C, H, W].
DL_INSTANCE_NORM(InstanceNorm2d, 2)
/// Instance normalisation over [N, C, D, H, W] or [C, D, H, W].
DL_INSTANCE_NORM(InstanceNorm3d, 3)
#undef DL_INSTANCE_NORM

/// Normalises over the last dims (normalized_shape), with a learned elementwise affine map.
class LayerNorm : public Module {
 public:
  static constexpr bool keeps_axis(detail::Axis) { return true; }
  explicit LayerNorm(Shape normalized_shape, const LayerNormOptions& o = {});
  explicit LayerNorm(int64_t normalized_size, const LayerNormOptions& o = {}) : LayerNorm(Shape{normalized_size}, o) {}
  Tensor<float> weight, bias;
  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::layer_norm(x, normalized_shape, weight, bias, eps); }
  void reset_parameters();
  DL_API std::string extra_repr() const override;
  DL_MODULE(LayerNorm, weight, bias)
};

struct GroupNormOptions {
  double eps = 1e-5;
  bool affine = true;
};

/// Normalises groups of channels of [N, C, ...]; num_channels must be divisible by num_groups.
template <int64_t Groups = dynamic, int64_t Channels = dynamic>
class GroupNorm;

template <>
class GroupNorm<dynamic, dynamic> : public Module {
 public:
  static constexpr int64_t static_in_features = dynamic, static_out_features = dynamic;
  static constexpr detail::Axis feature_axis = detail::Axis::channel;
  static constexpr bool keeps_axis(detail::Axis) { return true; }
  GroupNorm(int64_t num_groups, int64_t num_channels, const GroupNormOptions& o = {});
  Tensor<float> weight, bias;
  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::group_norm(x, num_groups, weight, bias, eps); }
  void reset_parameters();
  int64_t input_size() const { return num_channels; }
  int64_t output_size() const { return num_channels; }
  DL_API std::string extra_repr() const override;
  DL_MODULE(GroupNorm, weight, bias)
};

template <int64_t Groups, int64_t Channels>
class GroupNorm : public GroupNorm<> {
  static_assert(Groups > 0 && Channels > 0 && Channels % Groups == 0,
                "nn::GroupNorm<Groups, Channels>: the channel count must be a positive multiple of the group count");

 public:
  static constexpr int64_t static_in_features = Channels, static_out_features = Channels;
  explicit GroupNorm(const GroupNormOptions& o = {}) : GroupNorm<>(Groups, Channels, o) {}
};

GroupNorm(int64_t, int64_t) -> GroupNorm<>;
GroupNorm(int64_t, int64_t, const GroupNormOptions&) -> GroupNorm<>;

// ------------------------------------------------------------------------------ implementation

namespace detail {

template <class X>
Tensor<float> BatchNormBase::run(const X& x) {
  DL_CHECK(x.size(1) == num_features, type_name(), ": expected input with ", num_features, " channels (dim 1), got input of shape ",
           x.shape());
  double factor = momentum.value_or(0.0);
  if (is_training() && track_running_stats) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(int64_t(1));
    }
    if (!momentum) factor = 1.0 / double(num_batches_tracked.item());  // cumulative moving average
  }
  if (sync && is_training()) return sync->forward(*this, Tensor<float>(x), factor);
  // In training the batch statistics are used; in eval too when there are no running statistics.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  const bool update = !is_training() || track_running_stats;
  return functional::batch_norm(x, update ? running_mean : Tensor<float>(), update ? running_var : Tensor<float>(), weight, bias,
                                use_batch_stats, factor, eps);
}

template <class X>
Tensor<float> InstanceNormBase::normalize_instances(const X& x) {
  const int batched = spatial_dims_ + 2;
  DL_CHECK(x.dim() == batched - 1 || x.dim() == batched, "expected ", batched - 1, "D or ", batched, "D input (got ", x.dim(),
           "D input)");
  const int64_t feature_dim = x.dim() - spatial_dims_ - 1;
  // As PyTorch: a channel count other than num_features is an error with an affine map (or running
  // statistics, whose sizes then differ); without either, every channel is normalised alike.
  DL_CHECK(x.size(feature_dim) == num_features || !(affine || track_running_stats), "expected input's size at dim=",
           feature_dim, " to match num_features (", num_features, "), but got: ", x.size(feature_dim), ".");
  const Tensor<float> in = x.dim() == batched ? x : x.unsqueeze(0);
  const Tensor<float> y = functional::instance_norm(in, running_mean, running_var, weight, bias,
                                                    is_training() || !track_running_stats, momentum.value_or(0.0), eps);
  return x.dim() == batched ? y : y.squeeze(0);
}

}  // namespace detail

}  // namespace dl::nn

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::detail::BatchNormBase::run(const dl::Tensor<float>&))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::detail::InstanceNormBase::normalize_instances(const dl::Tensor<float>&))

#if DL_HEADER_ONLY
#include "normalization-inl.hpp"
#endif
