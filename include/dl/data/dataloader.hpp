// dl/data/dataloader.hpp — DataLoader: batches of a dataset, iterated with range-for, loaded by
// worker threads into a bounded prefetch queue (torch.utils.data.DataLoader with threads).
//
//   data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 0});
//   for (auto& [images, labels] : loader) { ... }
//
// The batches and their order depend only on the seed, never on num_workers: the index stream is
// drawn on the consumer's thread, and random transforms draw from a generator per sample keyed by
// (epoch, position in the epoch).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "collate.hpp"
#include "dataset.hpp"
#include "rng.hpp"
#include "sampler.hpp"

namespace dl::data {

// ------------------------------------------------------------------------------ declarations

/// Options of a DataLoader, PyTorch's arguments in PyTorch's order (use designated initialisers:
/// {.batch_size = 64, .shuffle = true}).
template <class Collate = DefaultCollate>
struct DataLoaderOptions {
  int64_t batch_size = 1;        ///< samples per batch
  bool shuffle = false;          ///< a new random order each epoch (a RandomSampler)
  AnySampler sampler{};          ///< the index stream (exclusive with shuffle)
  AnyBatchSampler batch_sampler{};  ///< batches of indices (exclusive with batch_size, shuffle, sampler, drop_last)
  int num_workers = 0;           ///< loader threads; 0 loads on the consumer's thread
  Collate collate_fn{};          ///< std::vector<Sample> -> Batch; default_collate by default
  bool pin_memory = false;       ///< batches in page-locked memory (fast, asynchronous copies to the GPU); needs <dl/cuda.hpp> and a GPU, else a warning and no effect, as PyTorch
  bool drop_last = false;        ///< drop the last incomplete batch
  double timeout = 0;            ///< seconds to wait for a batch from the workers (num_workers > 0) before throwing; 0 waits forever
  std::function<void(int)> worker_init_fn{};  ///< called with the worker id on each worker thread as it starts
  std::optional<int> prefetch_factor{};       ///< batches loaded ahead per worker (default 2; needs num_workers > 0)
  Generator* generator = nullptr;  ///< the loader's random source (shared with the caller; advances every epoch)
  std::optional<uint64_t> seed{};  ///< or a seed for the loader's own generator; neither: drawn from dl's default generator
};

/// What a worker thread knows about itself (torch.utils.data.get_worker_info).
struct WorkerInfo {
  int id;
  int num_workers;
};
/// The calling worker's info, or nothing on a thread that is not a DataLoader worker.
std::optional<WorkerInfo> get_worker_info();

/// Batches of a dataset, iterated with range-for; each `for` over the loader is one epoch.
/// The loader keeps its own copy of the dataset (datasets built on dl tensors share storage, so the
/// copy is cheap); pass std::ref(ds) to share a dataset instead.
///
/// Workers are threads: the dataset's get (and get_batch) must be safe to call concurrently.
/// An exception thrown while loading reaches the consumer as dl::Error naming the worker and the
/// batch (the original exception nested inside); `timeout` turns a stuck worker into a dl::Error;
/// leaving the loop early stops the workers (each finishes the batch it is loading).
template <class D, class Collate = DefaultCollate>
class DataLoader {
 public:
  using dataset_type = dataset_value_t<D>;
  // What a dataset needs, one requirement per message (the class takes any type so that a user's
  // mistake is named by one of these, not by a constraint failure deep in the concept):
  static_assert(requires(const dataset_type& d) { d.size(); },
                "DataLoader: the dataset needs `int64_t size() const` (the number of samples, PyTorch's __len__)");
  static_assert(!requires(const dataset_type& d) { d.size(); } || requires(const dataset_type& d) {
    { d.size() } -> std::convertible_to<int64_t>;
  }, "DataLoader: the dataset's size() must return the number of samples as an integer (libtorch's std::optional<size_t> size(): return the count itself)");
  static_assert(requires(const dataset_type& d, int64_t i) { d.get(i); } || !requires(dataset_type& d, int64_t i) { d.get(i); },
                "DataLoader: the dataset's get(i) must be const: loader threads call it at once; declare it `Sample get(int64_t i) const` "
                "(keep per-call state in local variables; randomness from data::sample_generator())");
  static_assert(requires(dataset_type& d, int64_t i) { d.get(i); },
                "DataLoader: the dataset needs `Sample get(int64_t i) const` returning sample i (PyTorch's __getitem__)");
  using sample_type = typename detail::sample_or_int<dataset_type>::type;
  static_assert(std::is_invocable_v<const Collate&, std::vector<sample_type>>,
                "DataLoader: collate_fn must be callable as collate_fn(std::vector<Sample>) where Sample is the "
                "dataset's sample type");
  using batch_type = std::remove_cvref_t<std::invoke_result_t<const Collate&, std::vector<sample_type>>>;
  using options_type = DataLoaderOptions<Collate>;

  class iterator;

  /// @throws dl::Error for invalid or conflicting options.
  DataLoader(D dataset, options_type options = {});

  /// Starts an epoch: draws the epoch's indices, starts the workers, loads the first batch.
  iterator begin();
  std::default_sentinel_t end() const { return {}; }
  /// Batches per epoch (len(loader)).
  int64_t size() const { return batch_sampler_.size(); }
  const dataset_type& dataset() const { return detail::deref(*dataset_); }
  const options_type& options() const { return options_; }

 private:
  struct Epoch;

  std::shared_ptr<const D> dataset_;
  std::shared_ptr<const Collate> collate_;
  options_type options_;
  std::shared_ptr<Generator> own_generator_;
  Generator* generator_;
  AnyBatchSampler batch_sampler_;
};

/// Input iterator over the batches of one epoch; owns the epoch's workers (destroying it stops them).
template <class D, class Collate>
class DataLoader<D, Collate>::iterator {
 public:
  using value_type = batch_type;
  using difference_type = std::ptrdiff_t;
  using reference = batch_type&;
  using iterator_concept = std::input_iterator_tag;

  iterator() = default;
  batch_type& operator*() const { return *epoch_->current; }
  batch_type* operator->() const { return &*epoch_->current; }
  iterator& operator++();
  void operator++(int) { ++*this; }
  friend bool operator==(const iterator& it, std::default_sentinel_t) { return !it.epoch_ || !it.epoch_->current; }

 private:
  friend class DataLoader;
  explicit iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {}
  std::shared_ptr<Epoch> epoch_;
};

// ------------------------------------------------------------------------------ implementation

namespace detail {

inline std::optional<WorkerInfo>& worker_info_slot() {
  thread_local std::optional<WorkerInfo> info;
  return info;
}

}  // namespace detail

inline std::optional<WorkerInfo> get_worker_info() { return detail::worker_info_slot(); }

template <class D, class Collate>
DataLoader<D, Collate>::DataLoader(D dataset, options_type options)
    : dataset_(std::make_shared<const D>(std::move(dataset))),
      collate_(std::make_shared<const Collate>(options.collate_fn)),
      options_(std::move(options)) {
  auto& o = options_;
  DL_CHECK(o.batch_size > 0, "DataLoader: batch_size should be a positive integer value, but got batch_size=", o.batch_size);
  DL_CHECK(o.num_workers >= 0, "DataLoader: num_workers option should be non-negative (got ", o.num_workers,
           "); use num_workers=0 to load on the calling thread");
  DL_CHECK(o.timeout >= 0, "DataLoader: timeout option should be non-negative, got ", o.timeout);
  DL_CHECK(!o.prefetch_factor || o.num_workers > 0, "DataLoader: prefetch_factor option could only be specified with num_workers > 0 (got ",
           "prefetch_factor=", o.prefetch_factor.value_or(0), ", num_workers=0)");
  DL_CHECK(!o.prefetch_factor || *o.prefetch_factor >= 1, "DataLoader: prefetch_factor should be a positive integer, got ",
           o.prefetch_factor.value_or(0));
  DL_CHECK(!(o.seed && o.generator), "DataLoader: seed and generator are mutually exclusive (got seed=", o.seed.value_or(0),
           " and a generator)");
  if (o.batch_sampler) {
    DL_CHECK(o.batch_size == 1 && !o.shuffle && !o.sampler && !o.drop_last,
             "DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last (got batch_size=",
             o.batch_size, ", shuffle=", o.shuffle, ", sampler=", bool(o.sampler), ", drop_last=", o.drop_last, ")");
  }
  DL_CHECK(!(o.sampler && o.shuffle), "DataLoader: sampler option is mutually exclusive with shuffle");
  if (o.pin_memory && !detail::pinning_available())
    std::fprintf(stderr, "Warning: DataLoader: 'pin_memory' argument is set as true but no accelerator is found, then "
                         "device pinned memory won't be used.\n");

  if (o.generator) {
    generator_ = o.generator;
  } else {
    own_generator_ = std::make_shared<Generator>(o.seed ? *o.seed : detail::draw_seed(default_generator()));
    generator_ = own_generator_.get();
  }
  const int64_t n = int64_t(this->dataset().size());
  if (o.batch_sampler) {
    batch_sampler_ = o.batch_sampler;
  } else {
    AnySampler s = o.sampler ? o.sampler
                   : o.shuffle ? AnySampler(RandomSampler(n, {.generator = generator_}))
                               : AnySampler(SequentialSampler(n));
    batch_sampler_ = BatchSampler(std::move(s), o.batch_size, o.drop_last);
  }
}

/// The state of one epoch: its batches, the consumer's current batch and, with workers, the
/// threads and the bounded ring of batches they fill.
template <class D, class Collate>
struct DataLoader<D, Collate>::Epoch {
  /// What the workers share with the consumer; each worker holds it, so that a worker abandoned
  /// after a timeout never touches freed memory.
  struct Shared {
    std::shared_ptr<const D> dataset;
    std::shared_ptr<const Collate> collate;
    std::vector<std::vector<int64_t>> batches;
    std::vector<int64_t> first_position;  // epoch position of each batch's first sample
    uint64_t key = 0;
    bool pin = false;  // pin_memory: each batch is pinned by whoever loads it

    // Worker state (guarded by mutex).
    struct Slot {
      std::optional<batch_type> batch;
      std::exception_ptr error;
      int worker = -1;
      bool ready = false;
    };
    std::mutex mutex;
    std::condition_variable work_cv, ready_cv;
    std::vector<Slot> slots;
    int64_t next_task = 0;
    int64_t consumed = 0;
    bool stop = false;
    std::exception_ptr init_error;
    int init_error_worker = -1;

    batch_type make(int64_t k) const;  // the batch as the dataset and collate_fn give it
    batch_type load(int64_t k) const;  // ... pinned when asked
    void worker_loop(int id, int num_workers, const std::function<void(int)>& init);
  };

  std::shared_ptr<Shared> shared;
  std::vector<std::thread> threads;
  std::optional<batch_type> current;
  int64_t next = 0;  // index of the batch the consumer takes next
  int num_workers = 0;
  double timeout = 0;
  bool abandon = false;  // after a timeout: detach the workers instead of joining them

  void fetch_next();
  void stop_workers();
  ~Epoch() { stop_workers(); }
};

template <class D, class Collate>
auto DataLoader<D, Collate>::Epoch::Shared::make(int64_t k) const -> batch_type {
  const auto& ds = detail::deref(*dataset);
  const std::vector<int64_t>& idx = batches[size_t(k)];
  BatchSeed seed(key, first_position[size_t(k)]);
  if constexpr (std::is_same_v<Collate, DefaultCollate> && batched_dataset<dataset_type>) {
    using fast_t = std::remove_cvref_t<decltype(ds.get_batch(std::span<const int64_t>(idx)))>;
    if constexpr (std::is_same_v<fast_t, batch_type>) return ds.get_batch(std::span<const int64_t>(idx));
  }
  std::vector<sample_type> samples;
  samples.reserve(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) {
    if constexpr (prefetching_dataset<dataset_type>)
      if (j + 2 < idx.size()) ds.prefetch(idx[j + 2]);
    SampleSeed sample_seed{int64_t(j)};
    samples.push_back(ds.get(idx[j]));
  }
  return (*collate)(std::move(samples));
}

template <class D, class Collate>
auto DataLoader<D, Collate>::Epoch::Shared::load(int64_t k) const -> batch_type {
  batch_type b = make(k);
  if (pin) detail::pin_batch(b);
  return b;
}

template <class D, class Collate>
void DataLoader<D, Collate>::Epoch::Shared::worker_loop(int id, int num_workers, const std::function<void(int)>& init) {
  detail::worker_info_slot() = WorkerInfo{id, num_workers};
  set_num_threads_in_this_thread(1);  // workers run kernels single-threaded (worker_init_fn may change it)
  if (init) {
    try {
      init(id);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!init_error) {
        init_error = std::current_exception();
        init_error_worker = id;
      }
      ready_cv.notify_all();
      return;
    }
  }
  const int64_t n = int64_t(batches.size()), capacity = int64_t(slots.size());
  for (;;) {
    int64_t k;
    {
      std::unique_lock lock(mutex);
      work_cv.wait(lock, [&] { return stop || next_task >= n || next_task < consumed + capacity; });
      if (stop || next_task >= n) return;
      k = next_task++;
    }
    std::optional<batch_type> batch;
    std::exception_ptr error;
    try {
      batch.emplace(load(k));
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex);
      Slot& slot = slots[size_t(k % capacity)];
      slot.batch = std::move(batch);
      slot.error = error;
      slot.worker = id;
      slot.ready = true;
    }
    ready_cv.notify_all();
  }
}

namespace detail {
/// Rethrows the exception a worker caught as a dl::Error naming the worker and batch, with the
/// original nested inside (std::rethrow_if_nested recovers it).
[[noreturn]] inline void rethrow_from_worker(std::exception_ptr error, int worker, int64_t batch, const char* stage) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::throw_with_nested(Error(dl::detail::cat("DataLoader worker ", worker, " raised an exception ", stage, batch < 0 ? "" : " batch ",
                                                 batch < 0 ? std::string() : std::to_string(batch), ": ", e.what())));
  } catch (...) {
    std::throw_with_nested(Error(dl::detail::cat("DataLoader worker ", worker, " raised a non-standard exception ", stage,
                                                 batch < 0 ? "" : " batch ", batch < 0 ? std::string() : std::to_string(batch))));
  }
}
}  // namespace detail

template <class D, class Collate>
void DataLoader<D, Collate>::Epoch::fetch_next() {
  current.reset();  // release the previous batch first: its memory can serve the next one
  const int64_t n = int64_t(shared->batches.size());
  if (next >= n) {
    stop_workers();
    return;
  }
  const int64_t k = next++;
  if (num_workers == 0) {
    current.emplace(shared->load(k));
    return;
  }
  Shared& s = *shared;
  std::optional<batch_type> batch;
  std::exception_ptr error, init_error;
  int worker = -1;
  {
    std::unique_lock lock(s.mutex);
    typename Shared::Slot& slot = s.slots[size_t(k % int64_t(s.slots.size()))];
    auto ready = [&] { return slot.ready || s.init_error; };
    if (timeout > 0) {
      if (!s.ready_cv.wait_for(lock, std::chrono::duration<double>(timeout), ready)) {
        lock.unlock();
        next = n;
        abandon = true;
        stop_workers();
        throw Error(dl::detail::cat("DataLoader timed out after ", timeout, " s waiting for batch ", k, " of ", n, " (num_workers=",
                                    num_workers, ")"));
      }
    } else {
      s.ready_cv.wait(lock, ready);
    }
    if (s.init_error && !slot.ready) {
      init_error = s.init_error;
      worker = s.init_error_worker;
    } else {
      batch = std::move(slot.batch);
      error = slot.error;
      worker = slot.worker;
      slot = {};
      ++s.consumed;
    }
  }
  s.work_cv.notify_all();
  if (init_error || error) {
    next = n;
    stop_workers();
    if (init_error) detail::rethrow_from_worker(init_error, worker, -1, "in worker_init_fn");
    detail::rethrow_from_worker(error, worker, k, "while loading");
  }
  current = std::move(batch);
}

template <class D, class Collate>
void DataLoader<D, Collate>::Epoch::stop_workers() {
  if (threads.empty()) return;
  {
    std::lock_guard lock(shared->mutex);
    shared->stop = true;
  }
  shared->work_cv.notify_all();
  for (auto& t : threads) {
    if (abandon) t.detach();  // a stuck worker cannot be interrupted; it releases its share when it returns
    else t.join();
  }
  threads.clear();
}

template <class D, class Collate>
auto DataLoader<D, Collate>::begin() -> iterator {
  auto epoch = std::make_shared<Epoch>();
  auto shared = std::make_shared<typename Epoch::Shared>();
  shared->dataset = dataset_;
  shared->collate = collate_;
  shared->key = detail::draw_seed(*generator_);
  shared->pin = options_.pin_memory && detail::pinning_available();
  shared->batches = batch_sampler_.batches();
  shared->first_position.reserve(shared->batches.size());
  int64_t position = 0;
  for (const auto& b : shared->batches) {
    shared->first_position.push_back(position);
    position += int64_t(b.size());
  }
  epoch->shared = shared;
  epoch->num_workers = options_.num_workers;
  epoch->timeout = options_.timeout;
  if (options_.num_workers > 0 && !shared->batches.empty()) {
    const int64_t capacity = int64_t(options_.prefetch_factor.value_or(2)) * options_.num_workers;
    shared->slots.resize(size_t(capacity));
    epoch->threads.reserve(size_t(options_.num_workers));
    for (int w = 0; w < options_.num_workers; ++w)
      epoch->threads.emplace_back([shared, w, nw = options_.num_workers, init = options_.worker_init_fn] { shared->worker_loop(w, nw, init); });
  }
  epoch->fetch_next();
  return iterator(std::move(epoch));
}

template <class D, class Collate>
auto DataLoader<D, Collate>::iterator::operator++() -> iterator& {
  epoch_->fetch_next();
  return *this;
}

}  // namespace dl::data
