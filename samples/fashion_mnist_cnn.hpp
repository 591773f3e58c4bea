// The options of samples/fashion_mnist_cnn.cpp, parsed by fashion_mnist_cnn_cli.cpp.
#pragma once

#include <cstdint>
#include <string>

struct Options {
  int epochs = 10;
  int64_t batch_size = 128;
  double lr = 0.1;
  int threads = 0;
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string checkpoint;
  bool resume = false;
  std::string plot;
  uint64_t seed = 0;
  std::string device = "cpu";
  int64_t limit = 0;     // use only the first `limit` training and test images (smoke tests)
  int stop_after = 0;    // stop after this epoch, as if interrupted (then --resume)
};

/// Trains and evaluates the CNN; returns the process's exit code.
int run(const Options& o);
