// dl/nn/parallel/sync_batchnorm.hpp — batch normalisation whose training statistics are those of
// the whole batch spread over a process group's ranks (torch.nn.SyncBatchNorm), and
// convert_sync_batchnorm, which makes every BatchNorm of a model do so.
//
//   Net net;                                          // with nn::BatchNorm2d members
//   nn::convert_sync_batchnorm(net);                  // or nn::SyncBatchNorm bn(64); in the model
//   nn::parallel::DistributedDataParallel ddp(net);
//
// In training each forward all-reduces the per-channel sums (two small collectives) and its
// backward all-reduces their gradients, so every rank must run forward and backward through the
// same SyncBatchNorm layers in the same order. In eval, or on a group of one process, it is
// BatchNorm. Unlike PyTorch's (CUDA only, NCCL), it runs on CPU tensors over the MPI backend.
#pragma once

#include <memory>

#include "../../distributed/functional.hpp"
#include "../../ops/indexing.hpp"
#include "../normalization.hpp"

namespace dl::nn {

namespace functional {

/// Training-mode batch normalisation over [N, C, *] with the mean and biased variance of the
/// inputs of every rank of `group` (ranks may hold different batch sizes); the running statistics
/// (when given) move toward the global mean and unbiased variance. Differentiable in input,
/// weight and bias: backward all-reduces the statistics' gradients, giving each rank the gradient
/// of the sum of every rank's loss (what DDP's averaging expects).
template <floating_scalar T>
Tensor<T> sync_batch_norm(const Tensor<T>& input, Tensor<T> running_mean, Tensor<T> running_var, Tensor<T> weight, Tensor<T> bias,
                          double momentum, double eps, const distributed::Group& group = {}) {
  namespace dist = distributed;
  const Shape shape = input.shape();
  DL_CHECK(shape.size() >= 2, "SyncBatchNorm: expected at least 2D input (got ", shape.size(), "D input)");
  const int64_t N = shape[0], C = shape[1], S = C > 0 ? numel(shape) / std::max<int64_t>(N * C, 1) : 0;
  detail::check_channel_params(C, running_mean, running_var, weight, bias);
  dist::ProcessGroup& g = dist::detail::group_of(group);
  DL_CHECK(g.is_member(), "SyncBatchNorm: this process (rank ", dist::get_rank(), ") is not a member of the process group ", g.describe());
  if (g.size() == 1) return batch_norm(input, running_mean, running_var, weight, bias, true, momentum, eps);
  const Tensor<T> x = input.contiguous().view({N, C, S});
  // One all-reduce of [sum over this rank's batch per channel, this rank's count per channel].
  const Tensor<T> local = dl::cat({Tensor<T>(x.sum({0, 2})), full<T>({1}, T(double(N) * double(S)))});
  const Tensor<T> total = dist::functional::all_reduce(local, {.group = group});
  const double count = double(total.detach().narrow(0, C, 1).item());
  DL_CHECK(count > 1, "SyncBatchNorm: Expected more than 1 value per channel when training, got ", count,
           " over the group's ranks (this rank's input size ", shape, ")");
  const Tensor<T> mean = total.narrow(0, 0, C) / T(count);
  const Tensor<T> d = x - mean.view({1, C, 1});
  // The variance from the deviations (a second all-reduce): as precise as one process's two passes.
  const Tensor<T> var = dist::functional::all_reduce(Tensor<T>((d * d).sum({0, 2})), {.group = group}) / T(count);
  Tensor<T> scale = expr::rsqrt(var + T(eps));
  if (weight.defined()) scale = scale * weight;
  Tensor<T> y = d * scale.view({1, C, 1});
  if (bias.defined()) y = y + bias.view({1, C, 1});
  {
    NoGradGuard no_grad;
    if (running_mean.defined()) running_mean.copy_(running_mean * T(1 - momentum) + mean.detach() * T(momentum));
    if (running_var.defined()) running_var.copy_(running_var * T(1 - momentum) + var.detach() * T(momentum * count / (count - 1)));
  }
  return y.view(shape);
}

}  // namespace functional

namespace detail {
/// BatchNormSync over one process group.
class GroupBatchNormSync final : public BatchNormSync {
 public:
  explicit GroupBatchNormSync(distributed::Group group) : group_(std::move(group)) {}
  Tensor<float> forward(BatchNormBase& bn, const Tensor<float>& x, double momentum) override {
    const bool track = bn.track_running_stats;
    return functional::sync_batch_norm(x, track ? bn.running_mean : Tensor<float>(), track ? bn.running_var : Tensor<float>(), bn.weight,
                                       bn.bias, momentum, bn.eps, group_);
  }

 private:
  distributed::Group group_;
};
}  // namespace detail

/// torch.nn.SyncBatchNorm's arguments; `process_group` empty: the default group.
struct SyncBatchNormOptions {
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
  distributed::Group process_group{};
};

/// Batch normalisation over [N, C, *] with statistics over every rank of a process group in
/// training (see the header comment); parameters, buffers and state dict as BatchNorm's.
class SyncBatchNorm : public detail::BatchNormBase {
 public:
  static constexpr int64_t static_in_features = dynamic, static_out_features = dynamic;
  explicit SyncBatchNorm(int64_t num_features, const SyncBatchNormOptions& o = {})
      : BatchNormBase(num_features, {.eps = o.eps, .momentum = o.momentum, .affine = o.affine, .track_running_stats = o.track_running_stats}) {
    sync = std::make_shared<detail::GroupBatchNormSync>(o.process_group);
  }
  template <expression E>
  Tensor<float> forward(const E& input) {
    const Tensor<float> x(input);
    DL_CHECK(x.dim() >= 2, "expected at least 2D input (got ", x.dim(), "D input)");
    return run(x);
  }
  DL_MODULE(SyncBatchNorm, weight, bias)
  DL_BUFFERS(running_mean, running_var, num_batches_tracked)
};

/// Makes every BatchNorm1d/2d/3d in `module` (itself included) a synchronised one over `group`
/// (PyTorch's SyncBatchNorm.convert_sync_batchnorm; dl changes the layers in place, so static
/// models convert too). Returns `module`.
template <class M>
  requires std::derived_from<M, Module>
M& convert_sync_batchnorm(M& module, const distributed::Group& group = {}) {
  auto sync = std::make_shared<detail::GroupBatchNormSync>(group);
  for (Module* m : module.modules())
    if (auto* bn = dynamic_cast<detail::BatchNormBase*>(m)) bn->sync = sync;
  return module;
}

}  // namespace dl::nn
