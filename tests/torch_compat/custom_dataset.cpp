// A libtorch program of the kind users write for their own data: a Dataset<Self> subclass whose
// get(index) overrides libtorch's, reading its own file format (here the gzip'd IDX files of
// Fashion-MNIST, through zlib) into tensors with from_blob(..., torch::kByte), clone and
// .to(torch::kFloat); an integer label from a std::vector; Lambda and Stack transforms; a model
// built as an nn::Sequential with Flatten; AdamW; named_parameters() with key()/value(); eval under
// NoGradGuard. Written for libtorch and compiled unchanged against dl (see mnist.cpp).
// Deterministic: weights from a formula, sequential sampling.
//   usage: custom_dataset FASHION_MNIST_ROOT   (the .gz files of Debian's dataset-fashion-mnist)
#include <torch/torch.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

// Reads a whole gzip file.
std::vector<uint8_t> read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

class FashionDataset : public torch::data::datasets::Dataset<FashionDataset> {
 public:
  FashionDataset(const std::string& root, bool train, size_t limit) {
    const std::string prefix = root + (train ? "/train" : "/t10k");
    images_ = read_gz(prefix + "-images-idx3-ubyte.gz");
    const std::vector<uint8_t> labels = read_gz(prefix + "-labels-idx1-ubyte.gz");
    size_ = std::min(limit, labels.size() - 8);
    for (size_t i = 0; i < size_; ++i) labels_.push_back(labels[8 + i]);
  }

  torch::data::Example<> get(size_t index) override {
    auto image = torch::from_blob(images_.data() + 16 + index * 784, {1, 28, 28}, torch::kByte).clone();
    torch::Tensor data = image.to(torch::kFloat).div(255);
    auto label = torch::tensor(labels_[index]);
    return {data, label};
  }

  torch::optional<size_t> size() const override { return size_; }

 private:
  std::vector<uint8_t> images_;
  std::vector<int64_t> labels_;
  size_t size_ = 0;
};

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  torch::manual_seed(0);

  auto train = FashionDataset(root, /*train=*/true, 4096)
                   .map(torch::data::transforms::Lambda<torch::data::Example<>>([](torch::data::Example<> e) {
                     e.data = (e.data - 0.2860) / 0.3530;
                     return e;
                   }))
                   .map(torch::data::transforms::Stack<>());
  auto test = FashionDataset(root, /*train=*/false, 2000).map(torch::data::transforms::Stack<>());
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train), torch::data::DataLoaderOptions().batch_size(128).workers(2));
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(test), 500);

  torch::nn::Sequential model(torch::nn::Flatten(), torch::nn::Linear(784, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 10));
  {
    torch::NoGradGuard no_grad;
    int k = 0;
    for (auto& p : model->named_parameters()) {
      auto v = torch::arange(p.value().numel(), torch::kFloat);
      p.value().copy_((torch::sin(v * 0.618 + ++k) * 0.05).view_as(p.value()));
      std::printf("%s %ld\n", p.key().c_str(), long(p.value().numel()));
    }
  }
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(1e-2));

  for (int epoch = 1; epoch <= 2; ++epoch) {
    model->train();
    double total = 0;
    int batches = 0;
    for (auto& batch : *train_loader) {
      optimizer.zero_grad();
      auto loss = torch::cross_entropy_loss(model->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
      total += loss.item<double>();
      ++batches;
    }
    torch::NoGradGuard no_grad;
    model->eval();
    int64_t correct = 0, seen = 0;
    for (auto& batch : *test_loader) {
      auto output = model->forward((batch.data - 0.2860) / 0.3530);
      correct += output.argmax(1).eq(batch.target).sum().item<int64_t>();
      seen += batch.data.size(0);
    }
    std::printf("epoch %d batches %d mean loss %.4f test accuracy %ld/%ld\n", epoch, batches, total / batches, long(correct),
                long(seen));
  }
}
