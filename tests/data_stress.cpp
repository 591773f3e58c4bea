// Stress test of dl::data::DataLoader's worker threads: thousands of randomised epochs in which
// workers throw (std and non-std exceptions), samplers deliver fewer indices than they announced
// or throw, the consumer leaves at a random batch, and loaders are destroyed while an epoch is
// still running. Each scenario must end without a hang (a watchdog aborts the run), without a
// leak (every sample built is destroyed; LeakSanitizer in the sanitizer CI run), deliver exactly
// the batches before the failure in order, and re-raise the worker's message.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include <dl/data/data.hpp>

namespace data = dl::data;

namespace {

/// Aborts the process when a scenario runs longer than `seconds` (a hang would otherwise stall CI
/// until its global timeout, with no hint of which scenario hung).
class Watchdog {
 public:
  Watchdog(double seconds, std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done_; })) {
        std::fprintf(stderr, "data_stress: hang (> %.0f s) in %s\n", seconds, what_.c_str());
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// Counts live samples, so a sample (or a batch holding it) that is never destroyed shows up.
std::atomic<int64_t> g_live{0};

struct Sample {
  int64_t index = -1;
  std::shared_ptr<int> payload;  // heap memory: a leaked sample is also a LeakSanitizer report
  explicit Sample(int64_t i) : index(i), payload(std::make_shared<int>(int(i))) { g_live.fetch_add(1); }
  Sample(const Sample& o) : index(o.index), payload(o.payload) { g_live.fetch_add(1); }
  Sample(Sample&& o) noexcept : index(o.index), payload(std::move(o.payload)) { g_live.fetch_add(1); }
  Sample& operator=(const Sample&) = default;
  Sample& operator=(Sample&&) = default;
  ~Sample() { g_live.fetch_sub(1); }
};

/// Collates to the list of indices (order checks) while keeping the samples alive in the batch.
struct Batch {
  std::vector<int64_t> indices;
  std::vector<Sample> samples;
};
struct Collate {
  Batch operator()(std::vector<Sample> s) const {
    Batch b;
    for (const auto& x : s) b.indices.push_back(x.index);
    b.samples = std::move(s);
    return b;
  }
};

/// Sample `bad` throws (a std::runtime_error, or an int when `non_std`); loading takes a few
/// microseconds of random length, so workers finish out of order.
struct FlakyDataset {
  int64_t n = 0;
  int64_t bad = -1;
  bool non_std = false;
  int64_t size() const { return n; }
  Sample get(int64_t i) const {
    if (i < 0 || i >= n) throw std::out_of_range("index " + std::to_string(i) + " out of range");
    thread_local std::minstd_rand jitter(std::random_device{}());
    std::this_thread::sleep_for(std::chrono::microseconds(jitter() % 50));
    if (i == bad) {
      if (non_std) throw 42;
      throw std::runtime_error("sample " + std::to_string(i) + " is corrupt");
    }
    return Sample(i);
  }
};

/// Announces `announced` indices but delivers only `delivered` (0..delivered-1), or throws.
struct ShortSampler {
  int64_t announced = 0, delivered = 0;
  bool throws = false;
  int64_t size() const { return announced; }
  std::vector<int64_t> indices() {
    if (throws) throw std::runtime_error("sampler failed");
    std::vector<int64_t> v(static_cast<size_t>(delivered));
    for (int64_t k = 0; k < delivered; ++k) v[size_t(k)] = k;
    return v;
  }
};

}  // namespace

TEST_CASE("DataLoader stress: random failures, early exits, short samplers, destruction mid-epoch") {
  std::mt19937_64 rng(20261123);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int scenarios = 0, errors = 0, early_exits = 0, destroyed_mid_epoch = 0, short_epochs = 0;
  const int rounds = 600;
  for (int round = 0; round < rounds; ++round) {
    const int64_t n = pick(0, 60);
    const int64_t batch = pick(1, 7);
    const int workers = int(pick(0, 4));
    const bool short_sampler = pick(0, 4) == 0;
    const int64_t delivered = short_sampler ? pick(0, n) : n;
    const bool sampler_throws = short_sampler && pick(0, 5) == 0;
    FlakyDataset ds{n, pick(0, 2) == 0 && delivered > 0 ? pick(0, delivered - 1) : -1, pick(0, 1) == 1};
    const int64_t leave_after = pick(0, 3) == 0 ? pick(1, 10) : -1;  // batches consumed before `break`
    const int mode = int(pick(0, 2));  // 0: range-for; 1: destroy the loader, keep iterating; 2: drop the iterator mid-epoch
    const std::string what = "round " + std::to_string(round) + ": n=" + std::to_string(n) + " batch=" + std::to_string(batch) +
                             " workers=" + std::to_string(workers) + " delivered=" + std::to_string(delivered) +
                             " bad=" + std::to_string(ds.bad) + " leave_after=" + std::to_string(leave_after) +
                             " mode=" + std::to_string(mode);
    CAPTURE(what);
    Watchdog dog(20, what);
    ++scenarios;

    data::DataLoaderOptions<Collate> opt{.batch_size = batch, .num_workers = workers};
    if (short_sampler) opt.sampler = ShortSampler{n, delivered, sampler_throws};
    if (workers > 0) opt.prefetch_factor = int(pick(1, 3));
    auto loader = std::make_unique<data::DataLoader<FlakyDataset, Collate>>(ds, opt);

    std::vector<int64_t> seen;
    std::string message;
    int64_t consumed = 0;
    try {
      if (mode == 0) {
        for (auto& b : *loader) {
          for (int64_t i : b.indices) seen.push_back(i);
          if (++consumed == leave_after) break;
        }
      } else {
        auto it = loader->begin();
        if (mode == 1) loader.reset();  // the epoch keeps what it needs alive
        while (it != std::default_sentinel) {
          for (int64_t i : it->indices) seen.push_back(i);
          if (++consumed == leave_after) break;
          ++it;
        }
        if (mode == 2 && it != std::default_sentinel) ++destroyed_mid_epoch;  // `it` dies here with workers running
      }
    } catch (const dl::Error& e) {
      message = e.what();
    } catch (const std::runtime_error& e) {
      message = e.what();  // the sampler's exception (begin()), or a sample's when loading on this thread
    } catch (int v) {
      message = "int " + std::to_string(v);  // num_workers = 0: the dataset's own exception, unchanged
    }
    if (leave_after >= 0 && consumed == leave_after) ++early_exits;
    if (mode == 1) ++destroyed_mid_epoch;

    // What must have happened: batches in order, each index once, up to the failure or exit.
    const int64_t first_bad_batch = ds.bad >= 0 ? ds.bad / batch : -1;
    if (sampler_throws) {
      CHECK(message == "sampler failed");
      CHECK(seen.empty());
    } else if (ds.bad >= 0 && (leave_after < 0 || leave_after > first_bad_batch)) {
      ++errors;
      CHECK(int64_t(seen.size()) == first_bad_batch * batch);
      if (ds.non_std && workers == 0) CHECK(message == "int 42");
      else if (ds.non_std) CHECK(message.find("non-standard exception") != std::string::npos);
      else CHECK(message.find("sample " + std::to_string(ds.bad) + " is corrupt") != std::string::npos);
      if (workers > 0) CHECK(message.find("while loading batch " + std::to_string(first_bad_batch)) != std::string::npos);
    } else {
      CHECK(message.empty());
      const int64_t total = leave_after >= 0 ? std::min(delivered, leave_after * batch) : delivered;
      CHECK(int64_t(seen.size()) == total);
      if (delivered < n) ++short_epochs;
    }
    for (size_t k = 0; k < seen.size(); ++k) REQUIRE(seen[k] == int64_t(k));
  }
  // Workers of abandoned epochs have been joined: no sample outlives its scenario.
  CHECK(g_live.load() == 0);
  MESSAGE(scenarios, " scenarios: ", errors, " worker errors, ", early_exits, " early exits, ", destroyed_mid_epoch,
          " destroyed mid-epoch, ", short_epochs, " short samplers");
  CHECK(errors > 20);
  CHECK(early_exits > 20);
  CHECK(destroyed_mid_epoch > 20);
  CHECK(short_epochs > 10);
}

TEST_CASE("DataLoader stress: many loaders started and abandoned at once") {
  // Several loaders with workers alive at the same time, each dropped after its first batch.
  Watchdog dog(30, "many loaders");
  for (int round = 0; round < 50; ++round) {
    std::vector<std::unique_ptr<data::DataLoader<FlakyDataset, Collate>>> loaders;
    std::vector<data::DataLoader<FlakyDataset, Collate>::iterator> its;
    for (int k = 0; k < 6; ++k) {
      loaders.push_back(std::make_unique<data::DataLoader<FlakyDataset, Collate>>(
          FlakyDataset{200, -1, false}, data::DataLoaderOptions<Collate>{.batch_size = 3, .num_workers = 3}));
      its.push_back(loaders.back()->begin());
    }
    for (auto& it : its) CHECK(it->indices.front() == 0);
    if (round % 2) loaders.clear();  // loaders first, then their epochs
  }
  CHECK(g_live.load() == 0);
}
