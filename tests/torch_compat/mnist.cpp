// A libtorch program of the kind in libtorch's own examples (pytorch/examples cpp/mnist): a CNN with
// module holders, builder options, libtorch's data API (MNIST, Normalize, Stack, make_data_loader
// with workers), SGD with momentum, evaluation under NoGradGuard. It is written for libtorch and
// compiled unchanged against dl (shim/torch/torch.h includes <dl/torch.hpp>); tests/gen_torch_compat.sh
// builds it against Debian's libtorch and records what it prints (tests/data/torch_compat_mnist.txt),
// which check.py compares with dl's output. Deterministic: weights from a formula, sequential
// sampling, dropout with p = 0, so both libraries compute the same figures.
//   usage: mnist MNIST_ROOT   (the four IDX files; Fashion-MNIST's have the same names)
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, 5).stride(1).bias(false)),
        bn(20),
        fc1(320, 50),
        fc2(torch::nn::LinearOptions(50, 10).bias(true)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("bn", bn);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(bn->forward(conv2->forward(x))), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.0, /*training=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn;
  torch::nn::Dropout2d conv2_drop{torch::nn::Dropout2dOptions().p(0.0)};
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

// Weights from a formula (the two libraries draw different random numbers).
void init_weights(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  int k = 0;
  for (auto& p : net.parameters()) {
    auto v = torch::arange(p.numel(), torch::kFloat);
    auto w = torch::sin(v * 0.37 + k++) * (1.0 / std::sqrt(double(p.numel() / p.size(0))));
    p.copy_(w.view_as(p));
  }
}

template <typename DataLoader>
void train(Net& model, torch::Device device, DataLoader& loader, torch::optim::Optimizer& optimizer) {
  model->train();
  size_t batch_idx = 0;
  for (auto& batch : loader) {
    if (batch_idx >= 48) continue;  // a short epoch (libtorch refuses a new epoch before this one ends)
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model->forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    if (batch_idx % 8 == 0)
      std::printf("train batch %zu size %ld loss %.5f\n", batch_idx, long(batch.data.size(0)), loss.template item<float>());
    ++batch_idx;
  }
}

template <typename DataLoader>
void test(Net& model, torch::Device device, DataLoader& loader) {
  torch::NoGradGuard no_grad;
  model->eval();
  double test_loss = 0;
  int64_t correct = 0, seen = 0;
  for (const auto& batch : loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model->forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum).template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    seen += data.size(0);
  }
  std::printf("test loss %.5f accuracy %ld/%ld\n", test_loss / seen, long(correct), long(seen));
}

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  torch::manual_seed(1);
  torch::DeviceType device_type = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  torch::Device device(device_type);

  Net model;
  init_weights(*model);
  model->to(device);

  auto train_dataset = torch::data::datasets::MNIST(root)
                           .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_dataset), torch::data::DataLoaderOptions().batch_size(64).workers(2));

  auto test_dataset = torch::data::datasets::MNIST(root, torch::data::datasets::MNIST::Mode::kTest)
                          .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                          .map(torch::data::transforms::Stack<>());
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(test_dataset), 500);

  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  std::printf("train samples %zu\n", train_dataset_size);
  for (int epoch = 1; epoch <= 2; ++epoch) {
    train(model, device, *train_loader, optimizer);
    test(model, device, *test_loader);
  }
}
