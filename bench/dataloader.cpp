// bench/dataloader.cpp — DataLoader throughput over the real Fashion-MNIST (60k images, batch 128,
// shuffle, ToTensor + Normalize) with 0 and 2 workers. bench/dataloader.py runs the same workload
// in PyTorch and prints both side by side.
//
//   build/bench/bench_dataloader [root=/usr/share/datasets/fashion-mnist] [passes=7]
// prints per-pass seconds as "RESULT <config> <workers> t1 t2 ..." lines and a summary table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <dl/data/data.hpp>

namespace data = dl::data;
namespace T = dl::data::transforms;

namespace {

template <class Dataset>
std::vector<double> time_passes(const Dataset& ds, int workers, int passes, double& checksum) {
  data::DataLoader loader(std::ref(ds), {.batch_size = 128, .shuffle = true, .num_workers = workers, .seed = 0});
  std::vector<double> times;
  for (int p = 0; p < passes + 1; ++p) {  // pass 0 warms the allocator's cache
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& [images, labels] : loader) checksum += double(images.data()[0]) + double(labels.data()[0]);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (p > 0) times.push_back(s);
  }
  return times;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void report(const char* config, int workers, const std::vector<double>& times) {
  std::printf("RESULT %s %d", config, workers);
  for (double t : times) std::printf(" %.6f", t);
  std::printf("\n");
  std::printf("  %-34s workers=%d  median %.4f s  min %.4f s  %.2f M samples/s\n", config, workers, median(times),
              *std::min_element(times.begin(), times.end()), 60000.0 / median(times) / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int passes = argc > 2 ? std::atoi(argv[2]) : 7;
  const T::Normalize normalize({0.2860f}, {0.3530f});

  auto t0 = std::chrono::steady_clock::now();
  // The API: the image reaches Normalize as float CHW in [0, 1] (ToTensor applied); the
  // per-channel affine transform lets get_batch fuse both into one pass per batch.
  auto fused = data::FashionMNIST(root, true, normalize);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("loaded %lld images from %s (gunzip + parse) in %.3f s\n", (long long)fused.size(), root.c_str(), load_s);
  // The same transform hidden in a lambda: not recognisably affine, so every sample goes through
  // get(i) (ToTensor, Normalize, two tensors) and default_collate stacks them.
  auto per_sample = data::FashionMNIST(root, true, [normalize](const dl::Tensor<float>& x) { return normalize(x); });

  double checksum = 0;
  for (int workers : {0, 2}) {
    report("dl-fused", workers, time_passes(fused, workers, passes, checksum));
    report("dl-per-sample", workers, time_passes(per_sample, workers, passes, checksum));
  }
  std::printf("(checksum %.3f)\n", checksum);
}
