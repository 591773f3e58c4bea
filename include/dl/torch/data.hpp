// dl/torch/data.hpp — libtorch's data API over dl's DataLoader (namespace torch::data; see dl/torch.hpp):
//
//   auto train = torch::data::datasets::MNIST(root)
//                    .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
//                    .map(torch::data::transforms::Stack<>());
//   auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
//       std::move(train), torch::data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { batch.data; batch.target; }
//
// Datasets follow libtorch's: `get(index)` gives one Example, `get_batch(indices)` a batch (a
// std::vector<Example> until a Stack collates it), `size()` an optional count, `.map(transform)` a
// MapDataset. make_data_loader runs dl's DataLoader (threads, ordered batches, the DataLoader's
// seeding) over the dataset's get_batch. Example<>'s target is an int64 tensor (class labels: a
// typed dl tensor cannot be both); write Example<torch::Tensor, torch::Tensor> for float targets.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <random>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core.hpp"
#include "nn.hpp"  // TORCH_ARG

namespace torch::data {

/// One sample: data and target (libtorch's Example<Data, Target>).
template <class Data = Tensor, class Target = dl::Tensor<int64_t>>
struct Example {
  using DataType = Data;
  using TargetType = Target;
  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}
  Data data;
  Target target;
};

namespace transforms {

/// A transform of whole batches: apply_batch(Input) -> Output.
template <class Input, class Output>
class BatchTransform {
 public:
  using InputBatchType = Input;
  using OutputBatchType = Output;
  virtual ~BatchTransform() = default;
  virtual Output apply_batch(Input input_batch) = 0;
};

/// A transform of single examples, applied to each example of a batch.
template <class Input, class Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual Output apply(Input input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> out;
    out.reserve(input_batch.size());
    for (auto& e : input_batch) out.push_back(apply(std::move(e)));
    return out;
  }
};

/// A function of each example.
template <class Input, class Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  explicit Lambda(std::function<Output(Input)> fn) : fn_(std::move(fn)) {}
  Output apply(Input input) override { return fn_(std::move(input)); }

 private:
  std::function<Output(Input)> fn_;
};

/// A function of whole batches.
template <class Input, class Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  explicit BatchLambda(std::function<Output(Input)> fn) : fn_(std::move(fn)) {}
  Output apply_batch(Input input) override { return fn_(std::move(input)); }

 private:
  std::function<Output(Input)> fn_;
};

/// A transform of each example's data tensor (the target passes through).
template <class Target = dl::Tensor<int64_t>>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  virtual Tensor operator()(Tensor input) = 0;
  E apply(E input) override { return {(*this)(std::move(input.data)), std::move(input.target)}; }
};

/// A function of each example's data tensor.
template <class Target = dl::Tensor<int64_t>>
class TensorLambda : public TensorTransform<Target> {
 public:
  explicit TensorLambda(std::function<Tensor(Tensor)> fn) : fn_(std::move(fn)) {}
  Tensor operator()(Tensor input) override { return fn_(std::move(input)); }

 private:
  std::function<Tensor(Tensor)> fn_;
};

/// (data - mean) / stddev per channel (one value: every channel), data [C, ...].
template <class Target = dl::Tensor<int64_t>>
class Normalize : public TensorTransform<Target> {
 public:
  Normalize(double mean, double stddev) : Normalize(std::vector<double>{mean}, std::vector<double>{stddev}) {}
  Normalize(const std::vector<double>& mean, const std::vector<double>& stddev)
      : mean_(to_tensor(mean)), stddev_(to_tensor(stddev)) {
    if (mean.size() != stddev.size())
      throw dl::Error(str("Normalize: ", mean.size(), " means and ", stddev.size(), " standard deviations"));
  }
  Tensor operator()(Tensor input) override {
    const int64_t c = mean_.numel();
    if (c != 1 && (input.dim() < 1 || input.size(0) != c))
      throw dl::Error(str("Normalize: ", c, " channel statistics for an input of shape ", input.shape()));
    dl::Shape s(std::vector<int64_t>(size_t(std::max<int64_t>(input.dim(), 1)), 1));
    if (c != 1) s[0] = c;
    return Tensor((input - mean_.view(s)) / stddev_.view(s));
  }

 private:
  static Tensor to_tensor(const std::vector<double>& v) { return dl::tensor<float>(std::vector<float>(v.begin(), v.end())); }
  Tensor mean_, stddev_;
};

/// Collates a batch of examples into one: data and targets stacked along a new first dim.
template <class E = Example<>>
struct Stack : BatchTransform<std::vector<E>, E> {
  E apply_batch(std::vector<E> examples) override {
    using D = typename E::DataType;
    using T = typename E::TargetType;
    std::vector<D> data;
    std::vector<T> targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& e : examples) {
      data.push_back(std::move(e.data));
      targets.push_back(std::move(e.target));
    }
    return {dl::stack(data, 0), dl::stack(targets, 0)};
  }
};

}  // namespace transforms

namespace datasets {

template <class Source, class AppliedTransform>
class MapDataset;

/// Datasets map: `dataset.map(transform)` and chained maps.
template <class Self>
class Mappable {
 public:
  template <class T>
  MapDataset<Self, T> map(T transform) & {
    return MapDataset<Self, T>(static_cast<Self&>(*this), std::move(transform));
  }
  template <class T>
  MapDataset<Self, T> map(T transform) && {
    return MapDataset<Self, T>(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

/// A dataset whose get_batch(indices) returns Batch (libtorch's BatchDataset).
template <class Self, class Batch, class BatchRequest = std::vector<size_t>>
class BatchDataset : public Mappable<Self> {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  virtual std::optional<size_t> size() const = 0;
};

/// A dataset of single examples (libtorch's Dataset<Self, SingleExample>): override get(index) and
/// size(); batches are the examples of the indices.
template <class Self, class SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;
  virtual ExampleType get(size_t index) = 0;
  std::vector<ExampleType> get_batch(std::vector<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

/// A dataset with a transform applied to its batches.
template <class Source, class AppliedTransform>
class MapDataset : public Mappable<MapDataset<Source, AppliedTransform>> {
 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = decltype(std::declval<AppliedTransform&>().apply_batch(
      std::declval<Source&>().get_batch(std::declval<BatchRequestType>())));
  using BatchType = OutputBatchType;

  MapDataset(Source dataset, AppliedTransform transform) : dataset_(std::move(dataset)), transform_(std::move(transform)) {}
  OutputBatchType get_batch(BatchRequestType indices) { return transform_.apply_batch(dataset_.get_batch(std::move(indices))); }
  std::optional<size_t> size() const { return dataset_.size(); }
  const Source& dataset() const noexcept { return dataset_; }
  const AppliedTransform& transform() const noexcept { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

/// `map(dataset, transform)`, libtorch's free function.
template <class D, class T>
MapDataset<D, T> map(D dataset, T transform) {
  return MapDataset<D, T>(std::move(dataset), std::move(transform));
}

/// MNIST from `root`: the IDX files train-images-idx3-ubyte, ... (plain or .gz; Fashion-MNIST's
/// have the same names). Images float [1, 28, 28] in [0, 1], targets int64 0-d.
class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain)
      : data_(std::make_shared<dl::data::MNIST<>>(root, mode == Mode::kTrain)), train_(mode == Mode::kTrain) {}
  Example<> get(size_t index) override {
    auto [image, label] = data_->get(int64_t(index));
    return {std::move(image), dl::scalar_tensor<int64_t>(label)};
  }
  std::optional<size_t> size() const override { return size_t(data_->size()); }
  bool is_train() const noexcept { return train_; }
  /// All images, float [N, 1, 28, 28] in [0, 1].
  Tensor images() const { return Tensor(dl::cast<float>(data_->data().unsqueeze(1)) / 255.0f); }
  /// All targets, int64 [N].
  const dl::Tensor<int64_t>& targets() const { return data_->targets(); }

 private:
  std::shared_ptr<dl::data::MNIST<>> data_;
  bool train_;
};

}  // namespace datasets

namespace samplers {
/// The order make_data_loader draws indices in: 0, 1, 2, ... (the size argument is libtorch's; the
/// loader takes the dataset's).
struct SequentialSampler {
  static constexpr bool shuffle = false;
  explicit SequentialSampler(size_t size = 0) : size(size) {}
  size_t size;
};
/// A new random order each epoch (from dl's default generator: torch::manual_seed fixes it).
struct RandomSampler {
  static constexpr bool shuffle = true;
  explicit RandomSampler(int64_t size = 0) : size(size) {}
  int64_t size;
};
/// What libtorch's distributed samplers share: this replica's count (the size divided by the
/// replicas, rounded up with allow_duplicates, down without) and the epoch. As libtorch's, a loader
/// keeps its own copy: set the epoch before make_data_loader (or make a loader per epoch).
class DistributedSampler {
 public:
  DistributedSampler(size_t size, size_t num_replicas, size_t rank, bool allow_duplicates)
      : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {
    if (num_replicas == 0 || rank >= num_replicas)
      throw dl::Error(str("DistributedSampler: rank ", rank, " is not in [0, num_replicas = ", num_replicas, ")"));
  }
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }
  /// The indices this replica draws in one epoch.
  int64_t size() const { return int64_t(local_sample_count()); }

 protected:
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }
  size_t size_, num_replicas_, rank_;
  bool allow_duplicates_;
  size_t epoch_ = 0;
};
/// libtorch's DistributedRandomSampler, index for index: the indices (wrapped around to
/// local count x replicas with allow_duplicates, cut to it without) shuffled by std::shuffle with a
/// std::mt19937 seeded by the epoch (so every replica agrees, and the order changes only with
/// set_epoch), then this replica's contiguous block.
class DistributedRandomSampler : public DistributedSampler {
 public:
  explicit DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : DistributedSampler(size, num_replicas, rank, allow_duplicates) {}
  std::vector<int64_t> indices() {
    const size_t local = local_sample_count(), count = num_replicas_ == 1 ? size_ : local * num_replicas_;
    std::vector<size_t> all(count);
    for (size_t i = 0; i < count; ++i) all[i] = i < size_ ? i : i - size_;
    std::mt19937 rng(static_cast<std::mt19937::result_type>(epoch_));
    std::shuffle(all.begin(), all.end(), rng);
    return std::vector<int64_t>(all.begin() + std::ptrdiff_t(rank_ * local), all.begin() + std::ptrdiff_t(rank_ * local + local));
  }
};
/// libtorch's DistributedSequentialSampler: this replica's contiguous block of 0, 1, 2, ...
/// (wrapped around past the end with allow_duplicates).
class DistributedSequentialSampler : public DistributedSampler {
 public:
  explicit DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : DistributedSampler(size, num_replicas, rank, allow_duplicates) {}
  std::vector<int64_t> indices() {
    const size_t local = local_sample_count();
    std::vector<int64_t> out(local);
    for (size_t i = 0; i < local; ++i) out[i] = int64_t((rank_ * local + i) % size_);
    return out;
  }
};
}  // namespace samplers

/// libtorch's DataLoaderOptions, chainable.
struct DataLoaderOptions {
  DataLoaderOptions() = default;
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}  // NOLINT: implicit, as libtorch's
  TORCH_ARG(size_t, batch_size) = 1;
  TORCH_ARG(size_t, workers) = 0;
  TORCH_ARG(std::optional<size_t>, max_jobs) = std::nullopt;
  TORCH_ARG(std::optional<std::chrono::milliseconds>, timeout) = std::nullopt;
  TORCH_ARG(bool, enforce_ordering) = true;
  TORCH_ARG(bool, drop_last) = false;
};

namespace detail {
/// dl's DataLoader sees the dataset as its indices; the collate function loads each batch with the
/// dataset's get_batch on a loader thread.
template <class D>
struct Indices {
  std::shared_ptr<D> dataset;
  int64_t size() const {
    const std::optional<size_t> n = dataset->size();
    if (!n) throw dl::Error("make_data_loader: the dataset has no size (size() returned nullopt)");
    return int64_t(*n);
  }
  int64_t get(int64_t i) const { return i; }
};
template <class D>
struct LoadBatch {
  std::shared_ptr<D> dataset;
  auto operator()(std::vector<int64_t> indices) const {
    return dataset->get_batch(typename D::BatchRequestType(indices.begin(), indices.end()));
  }
};
}  // namespace detail

namespace detail {
template <class S>
constexpr bool sampler_shuffles() {
  if constexpr (requires { S::shuffle; }) return S::shuffle;
  else return false;
}
template <class S>
dl::data::AnySampler any_sampler(S sampler) {
  if constexpr (requires { S::shuffle; }) return {};
  else return dl::data::AnySampler(std::move(sampler));
}
}  // namespace detail

/// Batches of a dataset, iterated with range-for (`for (auto& batch : *loader)`), one epoch per loop.
template <class D, class Sampler>
class StatelessDataLoader {
 public:
  using BatchType = decltype(std::declval<D&>().get_batch(std::declval<typename D::BatchRequestType>()));
  StatelessDataLoader(D dataset, const DataLoaderOptions& o) : StatelessDataLoader(std::move(dataset), Sampler(0), o) {}
  /// A sampler object (the distributed samplers) draws the indices; the tags (Sequential, Random)
  /// choose the order.
  StatelessDataLoader(D dataset, Sampler sampler, const DataLoaderOptions& o)
      : dataset_(std::make_shared<D>(std::move(dataset))),
        loader_(detail::Indices<D>{dataset_},
                {.batch_size = int64_t(o.batch_size()),
                 .shuffle = detail::sampler_shuffles<Sampler>(),
                 .sampler = detail::any_sampler(std::move(sampler)),
                 .num_workers = int(o.workers()),
                 .collate_fn = detail::LoadBatch<D>{dataset_},
                 .drop_last = o.drop_last(),
                 .timeout = o.timeout() ? double(o.timeout()->count()) / 1000.0 : 0.0}),
        options_(o) {}
  auto begin() { return loader_.begin(); }
  auto end() { return loader_.end(); }
  const DataLoaderOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<D> dataset_;
  dl::data::DataLoader<detail::Indices<D>, detail::LoadBatch<D>> loader_;
  DataLoaderOptions options_;
};

/// A loader over `dataset` (moved in), as libtorch's: the sampler is a template argument (libtorch's
/// default is random, unlike Python's).
template <class Sampler = samplers::RandomSampler, class D>
std::unique_ptr<StatelessDataLoader<D, Sampler>> make_data_loader(D dataset, DataLoaderOptions options = {}) {
  return std::make_unique<StatelessDataLoader<D, Sampler>>(std::move(dataset), options);
}
template <class Sampler = samplers::RandomSampler, class D>
std::unique_ptr<StatelessDataLoader<D, Sampler>> make_data_loader(D dataset, size_t batch_size) {
  return make_data_loader<Sampler>(std::move(dataset), DataLoaderOptions(batch_size));
}
/// A loader drawing its indices from `sampler` (e.g. samplers::DistributedRandomSampler).
template <class D, class Sampler>
  requires(!std::is_convertible_v<Sampler, DataLoaderOptions>)
std::unique_ptr<StatelessDataLoader<D, Sampler>> make_data_loader(D dataset, Sampler sampler, DataLoaderOptions options = {}) {
  return std::make_unique<StatelessDataLoader<D, Sampler>>(std::move(dataset), std::move(sampler), options);
}
template <class D, class Sampler>
  requires(!std::is_convertible_v<Sampler, DataLoaderOptions>)
std::unique_ptr<StatelessDataLoader<D, Sampler>> make_data_loader(D dataset, Sampler sampler, size_t batch_size) {
  return make_data_loader(std::move(dataset), std::move(sampler), DataLoaderOptions(batch_size));
}

}  // namespace torch::data
