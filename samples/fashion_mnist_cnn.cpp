// A small CNN (44K parameters) trained on the real Fashion-MNIST: dl::nn modules, SGD with
// Nesterov momentum and a one-cycle learning-rate schedule, light augmentation, a progress bar,
// per-class accuracy and the confusion matrix, loss and accuracy curves as an SVG file, and
// checkpoints that resume to the same result as an uninterrupted run.
//
//   fashion_mnist_cnn [--epochs 10] [--batch-size 128] [--lr 0.1] [--threads N] [--data DIR]
//                     [--checkpoint FILE] [--resume] [--plot curves.svg] [--seed 0] [--device cpu]
//
// The last line of a run is `test accuracy: 92.31%`. The command line is parsed in
// fashion_mnist_cnn_cli.cpp: a second file, so that editing the model rebuilds only this one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/optim.hpp>
#include <dl/utils/plot.hpp>
#include <dl/utils/progress.hpp>

#include "fashion_mnist_cnn.hpp"

namespace nn = dl::nn;
namespace F = dl::nn::functional;
namespace optim = dl::optim;
namespace data = dl::data;
namespace T = dl::data::transforms;
using dl::Tensor;

// Three 3x3 convolutions with batch norm, each followed by 2x2 max pooling (28 -> 14 -> 7 -> 3),
// dropout and a linear classifier: 44,274 parameters.
struct Net : nn::Module {
  nn::Conv2d<1, 24> conv1{3, {.padding = 1, .bias = false}};
  nn::BatchNorm2d<24> bn1;
  nn::Conv2d<24, 48> conv2{3, {.padding = 1, .bias = false}};
  nn::BatchNorm2d<48> bn2;
  nn::Conv2d<48, 64> conv3{3, {.padding = 1, .bias = false}};
  nn::BatchNorm2d<64> bn3;
  nn::Dropout drop{0.1};
  nn::Linear<64 * 3 * 3, 10> fc;
  DL_MODULE(Net, conv1, bn1, conv2, bn2, conv3, bn3, drop, fc)

  Tensor<float> forward(const Tensor<float>& x) {
    Tensor<float> y = F::max_pool2d(F::relu(bn1(conv1(x))), 2);
    y = F::max_pool2d(F::relu(bn2(conv2(y))), 2);
    y = F::max_pool2d(F::relu(bn3(conv3(y))), 2);
    return fc(drop(y.flatten(1)));
  }
};

/// Per-epoch figures, kept in the checkpoint so a resumed run plots the whole history.
struct History {
  std::vector<double> train_loss, train_acc, test_loss, test_acc;
};

/// Loss, accuracy and the confusion matrix (rows: true class, columns: predicted) of a data set.
struct Evaluation {
  double loss = 0, accuracy = 0;
  std::vector<int64_t> confusion;
};

template <class Loader>
Evaluation evaluate(Net& net, Loader& loader) {
  dl::NoGradGuard no_grad;
  net.eval();
  Evaluation e;
  e.confusion.assign(100, 0);
  int64_t n = 0, correct = 0;
  for (auto& [images, labels] : loader) {
    const Tensor<float> logits = net(images);
    e.loss += F::cross_entropy(logits, labels, {.reduction = nn::Reduction::sum}).item();
    const Tensor<int64_t> pred = logits.argmax(1);
    for (int64_t i = 0; i < labels.numel(); ++i) {
      ++e.confusion[size_t(labels.data()[i] * 10 + pred.data()[i])];
      correct += labels.data()[i] == pred.data()[i];
    }
    n += labels.numel();
  }
  e.loss /= double(n);
  e.accuracy = double(correct) / double(n);
  return e;
}

int run(const Options& o) {
  DL_CHECK(o.device == "cpu", "--device ", o.device, ": this build runs on the CPU (CUDA training comes with the CUDA issues)");
  DL_CHECK(std::filesystem::is_directory(o.data), "data folder ", o.data,
           " not found (install Debian's dataset-fashion-mnist, or pass --data DIR)");
  if (o.threads > 0) dl::set_num_threads(o.threads);
  dl::manual_seed(o.seed);

  // Data: normalised images; training images are mirrored at random (light augmentation: with
  // random shifts too, this small network underfits in 10 epochs).
  const auto norm = T::Normalize({0.2860f}, {0.3530f});
  auto train_full = data::FashionMNIST(o.data, /*train=*/true, T::Compose(T::RandomHorizontalFlip(), norm));
  auto test_full = data::FashionMNIST(o.data, /*train=*/false, norm);
  auto first = [](int64_t n, int64_t limit) {
    std::vector<int64_t> idx(size_t(limit > 0 ? std::min(n, limit) : n));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
    return idx;
  };
  auto train = data::Subset(train_full, first(train_full.size(), o.limit));
  auto test = data::Subset(test_full, first(test_full.size(), o.limit));
  data::DataLoader test_loader(test, {.batch_size = 1000});
  const int64_t batches = (train.size() + o.batch_size - 1) / o.batch_size;

  Net net;
  int64_t params = 0;
  for (const auto& p : net.parameters()) params += p.numel();
  optim::SGD opt(net.parameters(), {.lr = o.lr, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
  optim::OneCycleLR sched(opt, {.max_lr = o.lr, .total_steps = o.epochs * batches});
  nn::CrossEntropyLoss criterion;

  int start_epoch = 1;
  History h;
  if (o.resume) {
    DL_CHECK(!o.checkpoint.empty(), "--resume needs --checkpoint FILE");
    const dl::StateDict ckpt = dl::load(o.checkpoint);
    net.load_state_dict(ckpt.sub("model."));
    opt.load_state_dict(ckpt.sub("optimizer."));
    sched.load_state_dict(ckpt.sub("scheduler."));
    const Tensor<int64_t> rng = ckpt.get<int64_t>("rng");
    dl::default_generator().set_state({uint64_t(rng.data()[0]), uint64_t(rng.data()[1])});
    start_epoch = int(ckpt.get<int64_t>("epoch").item()) + 1;
    for (auto [name, v] : {std::pair{"train_loss", &h.train_loss}, {"train_acc", &h.train_acc}, {"test_loss", &h.test_loss},
                           {"test_acc", &h.test_acc}}) {
      const Tensor<double> t = ckpt.get<double>(std::string("history.") + name);
      v->assign(t.data(), t.data() + t.numel());
    }
    std::printf("resumed from %s after epoch %d\n", o.checkpoint.c_str(), start_epoch - 1);
  }
  std::printf("Fashion-MNIST: %lld training and %lld test images; CNN with %lld parameters; %d threads\n",
              (long long)train.size(), (long long)test.size(), (long long)params, dl::get_num_threads());

  Evaluation last;
  for (int epoch = start_epoch; epoch <= o.epochs; ++epoch) {
    // A loader per epoch, seeded by (seed, epoch): the order and the augmentation depend on nothing
    // else, so a resumed run sees the same batches.
    data::DataLoader loader(train, {.batch_size = o.batch_size, .shuffle = true, .num_workers = 2, .seed = o.seed * 1000 + uint64_t(epoch)});
    dl::utils::ProgressBar bar(batches, {.description = "epoch " + std::to_string(epoch) + "/" + std::to_string(o.epochs), .unit = "img"});
    net.train();
    double loss_sum = 0;
    int64_t seen = 0, correct = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& [images, labels] : loader) {
      const Tensor<float> logits = net(images);
      const Tensor<float> loss = criterion(logits, labels);
      opt.zero_grad();
      loss.backward();
      opt.step();
      sched.step();
      const int64_t n = labels.numel();
      loss_sum += loss.item() * double(n);
      correct += dl::sum(logits.argmax(1) == labels).item();
      seen += n;
      bar.update(1, {{"loss", loss_sum / double(seen)}, {"acc", double(correct) / double(seen)}}, n);
    }
    bar.finish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last = evaluate(net, test_loader);
    h.train_loss.push_back(loss_sum / double(seen));
    h.train_acc.push_back(double(correct) / double(seen));
    h.test_loss.push_back(last.loss);
    h.test_acc.push_back(last.accuracy);
    std::printf("epoch %d/%d  train loss %.4f acc %.2f%%  test loss %.4f acc %.2f%%  (%.1f s, %.0f img/s)\n", epoch, o.epochs,
                h.train_loss.back(), 100 * h.train_acc.back(), last.loss, 100 * last.accuracy, seconds, double(seen) / seconds);
    std::fflush(stdout);
    if (!o.checkpoint.empty()) {
      dl::StateDict ckpt;
      ckpt.update(net.state_dict(), "model.");
      ckpt.update(opt.state_dict(), "optimizer.");
      ckpt.update(sched.state_dict(), "scheduler.");
      ckpt.insert("epoch", dl::scalar_tensor<int64_t>(epoch));
      const auto rng = dl::default_generator().get_state();
      ckpt.insert("rng", dl::tensor<int64_t>({int64_t(rng[0]), int64_t(rng[1])}));
      for (auto [name, v] : {std::pair{"train_loss", &h.train_loss}, {"train_acc", &h.train_acc}, {"test_loss", &h.test_loss},
                             {"test_acc", &h.test_acc}})
        ckpt.insert(std::string("history.") + name, dl::tensor<double>(*v));
      dl::save(ckpt, o.checkpoint);
    }
    if (o.stop_after == epoch && epoch < o.epochs) {
      std::printf("stopped after epoch %d (resume with --resume)\n", epoch);
      return 0;
    }
  }
  if (start_epoch > o.epochs) last = evaluate(net, test_loader);

  // Per-class accuracy and the confusion matrix.
  const auto& classes = test_full.classes();
  std::printf("\n%-12s %8s\n", "class", "accuracy");
  for (size_t c = 0; c < 10; ++c) {
    int64_t total = 0;
    for (size_t p = 0; p < 10; ++p) total += last.confusion[c * 10 + p];
    std::printf("%-12s %7.2f%%\n", classes[c].c_str(), total ? 100.0 * double(last.confusion[c * 11]) / double(total) : 0.0);
  }
  std::printf("\nconfusion matrix (rows: true class, columns: predicted)\n%12s", "");
  for (size_t p = 0; p < 10; ++p) std::printf(" %5zu", p);
  std::printf("\n");
  for (size_t c = 0; c < 10; ++c) {
    std::printf("%-9s %2zu", classes[c].substr(0, 9).c_str(), c);
    for (size_t p = 0; p < 10; ++p) std::printf(" %5lld", (long long)last.confusion[c * 10 + p]);
    std::printf("\n");
  }
  if (!o.plot.empty() && !h.test_acc.empty()) {
    std::vector<double> x(h.test_acc.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = double(i + 1);
    dl::utils::Chart loss{.title = "loss", .x_label = "epoch", .y_label = "cross entropy"};
    loss.series = {{"train", x, h.train_loss}, {"test", x, h.test_loss}};
    dl::utils::Chart acc{.title = "accuracy", .x_label = "epoch", .y_label = "fraction correct"};
    acc.series = {{"train", x, h.train_acc}, {"test", x, h.test_acc}};
    dl::utils::write_svg(o.plot, {loss, acc});
    std::printf("\ncurves written to %s\n", o.plot.c_str());
  }
  std::printf("\ntest accuracy: %.2f%%\n", 100 * last.accuracy);
  return 0;
}
