// The first program of the "first hour" (issue: a PyTorch programmer writes it from the README and
// docs/tutorial.md alone): a custom Dataset with random crops and flips, a small ResNet with a
// residual block, AdamW with two parameter groups, cosine annealing, gradient clipping, evaluation,
// then a checkpoint of model + optimizer + scheduler reloaded into fresh objects, which must give
// the same accuracy and continue training identically. Runs in the suite on a subset of
// Fashion-MNIST (a few seconds); exits non-zero when a check fails.
//   usage: resnet_training FASHION_MNIST_DIR CHECKPOINT_DIR
#include <dl/dl.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace nn = dl::nn;
namespace F = dl::nn::functional;
namespace data = dl::data;
namespace optim = dl::optim;
using dl::Tensor;

// The port of a PyTorch Dataset: size() is __len__, a const get(i) is __getitem__. The random
// transforms draw from the per-sample generator the DataLoader seeds, so batches do not depend on
// the number of workers.
class AugmentedImages {
 public:
  AugmentedImages(const data::FashionMNIST<>& source, int64_t count, bool train)
      : images_(source.data().slice(0, 0, count).to<float>().unsqueeze(1) * (1.0f / 255.0f)),
        labels_(source.targets().slice(0, 0, count)),
        train_(train) {}
  int64_t size() const { return images_.size(0); }
  std::pair<Tensor<float>, int64_t> get(int64_t i) const {
    Tensor<float> image = (images_[i] - 0.2860f) * (1.0f / 0.3530f);
    if (train_) {
      image = crop_(image, &data::sample_generator());
      image = flip_(image, &data::sample_generator());
    }
    return {image, labels_.at(i)};
  }

 private:
  Tensor<float> images_;
  Tensor<int64_t> labels_;
  bool train_;
  data::transforms::RandomCrop crop_{28, /*padding=*/2};
  data::transforms::RandomHorizontalFlip flip_{};
};

// conv-bn-relu-conv-bn plus the input, then relu.
struct ResidualBlock : nn::Module {
  nn::Conv2d<16, 16> conv1{3, {.padding = 1, .bias = false}};
  nn::BatchNorm2d<16> bn1;
  nn::Conv2d<16, 16> conv2{3, {.padding = 1, .bias = false}};
  nn::BatchNorm2d<16> bn2;
  DL_MODULE(ResidualBlock, conv1, bn1, conv2, bn2)

  ResidualBlock() { nn::check_sizes(conv1, bn1, conv2, bn2); }
  Tensor<float> forward(const Tensor<float>& x) {
    Tensor<float> y = F::relu(bn1(conv1(x)));
    return F::relu(bn2(conv2(y)) + x);
  }
};

struct SmallResNet : nn::Module {
  nn::Conv2d<1, 16> stem{3, {.padding = 1, .bias = false}};
  nn::BatchNorm2d<16> bn;
  ResidualBlock block1, block2;
  nn::Linear<16, 10> fc;
  DL_MODULE(SmallResNet, stem, bn, block1, block2, fc)

  Tensor<float> forward(const Tensor<float>& x) {
    Tensor<float> y = F::relu(bn(stem(x)));
    y = F::max_pool2d(block1(y), 2);  // 28 -> 14
    y = block2(y);
    y = F::adaptive_avg_pool2d(y, 1).flatten(1);
    return fc(y);
  }
};

double accuracy(SmallResNet& model, const AugmentedImages& test) {
  model.eval();
  dl::NoGradGuard no_grad;
  int64_t correct = 0;
  for (auto& [images, labels] : data::DataLoader(test, {.batch_size = 250})) correct += dl::sum(model(images).argmax(1) == labels).item();
  model.train();
  return double(correct) / double(test.size());
}

// AdamW with weight decay on the convolution and linear weights only (the usual two groups).
optim::AdamW<float> make_optimizer(SmallResNet& model) {
  std::vector<Tensor<float>> decay, no_decay;
  for (auto& [name, p] : model.named_parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  return optim::AdamW({{decay}, {no_decay, {.weight_decay = 0.0}}}, {.lr = 3e-3, .weight_decay = 0.05});
}

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s FASHION_MNIST_DIR CHECKPOINT_DIR\n", argv[0]);
    return 2;
  }
  dl::manual_seed(0);
  const data::FashionMNIST<> train_source(argv[1], /*train=*/true), test_source(argv[1], /*train=*/false);
  const AugmentedImages train(train_source, 4096, /*train=*/true), test(test_source, 1000, /*train=*/false);

  SmallResNet model;
  optim::AdamW<float> opt = make_optimizer(model);
  const int epochs = 2;
  data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 0});
  optim::CosineAnnealingLR sched(opt, {.T_max = epochs * loader.size()});
  check(opt.param_groups().size() == 2 && opt.param_groups()[1].options.weight_decay == 0.0, "two parameter groups");

  double max_norm_seen = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double total = 0;
    for (auto& [images, labels] : loader) {
      Tensor<float> loss = F::cross_entropy(model(images), labels);
      opt.zero_grad();
      loss.backward();
      max_norm_seen = std::max(max_norm_seen, nn::utils::clip_grad_norm_(model.parameters(), /*max_norm=*/1.0));
      opt.step();
      sched.step();
      total += loss.item();
    }
    std::printf("epoch %d loss %.4f lr %.6f\n", epoch, total / double(loader.size()), sched.get_last_lr()[0]);
  }
  const double acc = accuracy(model, test);
  std::printf("accuracy %.2f%% (largest gradient norm %.3f)\n", 100 * acc, max_norm_seen);
  check(acc > 0.5, "the ResNet learns (accuracy above 50% after two epochs of 4096 images; chance is 10%)");
  check(max_norm_seen > 1.0, "gradient clipping was active (a norm above max_norm was clipped)");
  check(sched.get_last_lr()[0] < 1e-6, "the cosine schedule ends at eta_min");

  // Checkpoint: model, optimizer and scheduler in one file, then fresh objects loaded from it.
  const std::string path = (std::filesystem::path(argv[2]) / "first_hour_ckpt.pth").string();
  dl::StateDict ckpt;
  ckpt.update(model.state_dict(), "model.");
  ckpt.update(opt.state_dict(), "optimizer.");
  ckpt.update(sched.state_dict(), "scheduler.");
  ckpt.insert("epoch", dl::scalar_tensor<int64_t>(epochs));
  dl::save(ckpt, path);

  dl::manual_seed(123);  // the fresh model starts elsewhere
  SmallResNet model2;
  optim::AdamW<float> opt2 = make_optimizer(model2);
  optim::CosineAnnealingLR sched2(opt2, {.T_max = epochs * loader.size()});
  const dl::StateDict loaded = dl::load(path);
  model2.load_state_dict(loaded.sub("model."));
  opt2.load_state_dict(loaded.sub("optimizer."));
  sched2.load_state_dict(loaded.sub("scheduler."));
  check(loaded.get<int64_t>("epoch").item() == epochs, "the epoch comes back");
  check(accuracy(model2, test) == acc, "the reloaded model gives the same accuracy");
  check(sched2.get_last_lr() == sched.get_last_lr(), "the reloaded scheduler resumes at the same learning rate");

  // One more step of both from the same batch: identical parameters (the optimizer state came back).
  auto [images, labels] = data::default_collate(std::vector<std::pair<Tensor<float>, int64_t>>{test.get(0), test.get(1), test.get(2)});
  for (SmallResNet* which : {&model, &model2}) {
    SmallResNet& m = *which;
    optim::AdamW<float>& o = which == &model ? opt : opt2;
    Tensor<float> loss = F::cross_entropy(m(images), labels);
    o.zero_grad();
    loss.backward();
    o.step();
  }
  bool same = true;
  auto p1 = model.parameters(), p2 = model2.parameters();
  for (size_t i = 0; i < p1.size(); ++i) same = same && dl::equal(p1[i], p2[i]);
  check(same, "one more AdamW step gives the same parameters in both");
  return failures == 0 ? 0 : 1;
}
