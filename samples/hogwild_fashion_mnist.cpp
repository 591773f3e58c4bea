// Hogwild training on the real Fashion-MNIST (PyTorch's mnist_hogwild example, with threads for its
// processes): several threads train one MLP at once, without locks. Each thread steps a replica
// whose parameters are the master's memory (nn::utils::share_parameters), with gradients, an SGD
// optimizer and a shard of the training set of its own; the master is tested after every epoch.
// --baseline then trains the same network on one thread for as many epochs, to compare.
//   usage: hogwild_fashion_mnist [threads (2)] [epochs (3)] [--baseline] [dataset dir]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/nn/utils/hogwild.hpp>
#include <dl/optim.hpp>

namespace nn = dl::nn;
namespace data = dl::data;
using dl::Tensor;

namespace {

/// fashion_mnist_mlp's network.
auto make_net() {
  return nn::Sequential(nn::Flatten(), nn::Linear<784, 256>(), nn::ReLU(), nn::Linear<256, 128>(), nn::ReLU(),
                        nn::Linear<128, 10>());
}
using Net = decltype(make_net());

// Momentum 0.5, as PyTorch's Hogwild example: a replica's momentum buffer sees only its own steps, so
// with fashion_mnist_mlp's 0.9 the velocities of the threads pile up stale updates (on 2 threads
// that run ends 1-2 points below one thread after 3 epochs; with 0.5 both reach ~86%).
const dl::optim::SGDOptions sgd_options{.lr = 0.1, .momentum = 0.5};
constexpr int64_t batch_size = 128;

/// One pass over `loader`: the mean training loss.
template <class Loader>
double train_epoch(Net& net, dl::optim::SGD<float>& opt, Loader& loader) {
  nn::CrossEntropyLoss criterion;
  double total_loss = 0;
  int64_t batches = 0;
  for (auto& [images, labels] : loader) {
    Tensor<float> loss = criterion(net(images), labels);
    opt.zero_grad();
    loss.backward();
    opt.step();  // no lock: the replicas write the master's memory, and each other's
    total_loss += loss.item();
    ++batches;
  }
  return total_loss / double(batches);
}

/// Test accuracy, in percent.
template <class Loader>
double accuracy(Net& net, Loader& test_loader) {
  dl::NoGradGuard no_grad;
  net.eval();
  int64_t correct = 0, seen = 0;
  for (auto& [images, labels] : test_loader) {
    correct += dl::sum(net(images).argmax(1) == labels).item();
    seen += labels.numel();
  }
  return 100.0 * double(correct) / double(seen);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Result {
  double accuracy = 0, images_per_second = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool baseline = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: hogwild_fashion_mnist [threads >= 1] [epochs >= 1] [--baseline] [dataset dir]\n");
      return 0;
    }
    if (std::string(argv[i]) == "--baseline") baseline = true;
    else args.emplace_back(argv[i]);
  }
  const int threads = args.size() > 0 ? std::atoi(args[0].c_str()) : 2;
  const int epochs = args.size() > 1 ? std::atoi(args[1].c_str()) : 3;
  const std::string root = args.size() > 2 ? args[2] : "/usr/share/datasets/fashion-mnist";
  if (threads < 1 || epochs < 1) {
    std::fprintf(stderr, "usage: hogwild_fashion_mnist [threads >= 1] [epochs >= 1] [--baseline] [dataset dir]\n");
    return 2;
  }
  try {
    const auto normalize = data::transforms::Normalize({0.2860f}, {0.3530f});
    auto train = data::FashionMNIST(root, /*train=*/true, normalize);
    auto test = data::FashionMNIST(root, /*train=*/false, normalize);
    data::DataLoader test_loader(test, {.batch_size = 1000});

    // ---------------------------------------------------------------------- Hogwild
    dl::manual_seed(0);
    Net master = make_net();
    std::cout << master << "\n";
    // Disjoint shards, one per thread; each thread reshuffles its own every epoch.
    dl::Generator split_generator(0);
    const size_t n = size_t(threads);
    auto shards = data::random_split(train, std::vector<double>(n, 1.0 / threads), &split_generator);
    using Loader = data::DataLoader<decltype(shards)::value_type>;
    // Per thread: a replica (a copy of the master, then made to share its memory with gradients of
    // its own), its optimizer (own momentum buffers) and its loader. Deques: nothing moves.
    std::deque<Net> replicas;
    std::deque<dl::optim::SGD<float>> optimizers;
    std::deque<Loader> loaders;
    for (size_t rank = 0; rank < n; ++rank) {
      Net& replica = replicas.emplace_back(master);
      nn::utils::share_parameters(replica, master);
      optimizers.emplace_back(replica.parameters(), sgd_options);
      const Loader::options_type options{.batch_size = batch_size, .shuffle = true, .seed = uint64_t(rank + 1)};
      loaders.emplace_back(shards[rank], options);
    }

    Result hogwild;
    double hogwild_seconds = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      std::vector<double> losses(n);
      std::vector<std::string> errors(n);
      const auto t0 = std::chrono::steady_clock::now();
      {
        std::vector<std::jthread> workers;
        for (size_t rank = 0; rank < n; ++rank)
          workers.emplace_back([&, rank] {
            try {
              dl::set_num_threads_in_this_thread(1);  // the threads are the parallelism
              losses[rank] = train_epoch(replicas[rank], optimizers[rank], loaders[rank]);
            } catch (const std::exception& e) {
              errors[rank] = e.what();
            }
          });
      }  // joined
      const double seconds = seconds_since(t0);
      hogwild_seconds += seconds;
      for (size_t rank = 0; rank < n; ++rank)
        if (!errors[rank].empty()) throw dl::Error("thread " + std::to_string(rank) + ": " + errors[rank]);
      double loss = 0;
      for (double l : losses) loss += l / threads;
      hogwild.accuracy = accuracy(master, test_loader);
      std::printf("hogwild epoch %d  train loss %.4f  test accuracy %.2f%%  (%.2f s, %.0f images/s on %d thread%s)\n", epoch,
                  loss, hogwild.accuracy, seconds, double(train.size()) / seconds, threads, threads == 1 ? "" : "s");
    }
    hogwild.images_per_second = double(epochs) * double(train.size()) / hogwild_seconds;

    // ---------------------------------------------------------------------- one thread
    if (baseline) {
      dl::manual_seed(0);
      Net net = make_net();  // the master's initial values
      dl::optim::SGD<float> opt(net.parameters(), sgd_options);
      data::DataLoader loader(train, {.batch_size = batch_size, .shuffle = true, .seed = 1});
      Result single;
      double single_seconds = 0;
      for (int epoch = 1; epoch <= epochs; ++epoch) {
        const auto t0 = std::chrono::steady_clock::now();
        dl::set_num_threads_in_this_thread(1);
        net.train();
        const double loss = train_epoch(net, opt, loader);
        dl::set_num_threads_in_this_thread(0);
        const double seconds = seconds_since(t0);
        single_seconds += seconds;
        single.accuracy = accuracy(net, test_loader);
        std::printf("1-thread epoch %d  train loss %.4f  test accuracy %.2f%%  (%.2f s, %.0f images/s)\n", epoch, loss,
                    single.accuracy, seconds, double(train.size()) / seconds);
      }
      single.images_per_second = double(epochs) * double(train.size()) / single_seconds;
      std::printf("after %d epochs: hogwild on %d threads %.2f%% at %.0f images/s; one thread %.2f%% at %.0f images/s\n",
                  epochs, threads, hogwild.accuracy, hogwild.images_per_second, single.accuracy, single.images_per_second);
    }
  } catch (const dl::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
