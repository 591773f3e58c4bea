// A libtorch program of the kind of libtorch's DCGAN example (pytorch/examples cpp/dcgan): a
// generator module with ConvTranspose2d and BatchNorm2d holders, a discriminator built as an
// nn::Sequential of holders, Adam with betas given as a tuple, binary cross-entropy on
// torch::full / torch::zeros label tensors, detach, fill_, a loader over MNIST normalised to [-1, 1]
// with an `Example<>&` loop variable. Written for libtorch and compiled unchanged against dl (see
// mnist.cpp). Deterministic: weights and noise from formulas, sequential sampling; eight steps (a GAN
// amplifies rounding: after about ten steps the two libraries drift apart by more than 1e-3).
//   usage: dcgan MNIST_ROOT
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

const int64_t kNoiseSize = 16;
const int64_t kBatchSize = 32;

struct DCGANGeneratorImpl : torch::nn::Module {
  DCGANGeneratorImpl(int64_t noise_size)
      : conv1(torch::nn::ConvTranspose2dOptions(noise_size, 64, 4).bias(false)),
        batch_norm1(64),
        conv2(torch::nn::ConvTranspose2dOptions(64, 32, 3).stride(2).padding(1).bias(false)),
        batch_norm2(32),
        conv3(torch::nn::ConvTranspose2dOptions(32, 16, 4).stride(2).padding(1).bias(false)),
        batch_norm3(16),
        conv4(torch::nn::ConvTranspose2dOptions(16, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));
    x = torch::relu(batch_norm2(conv2(x)));
    x = torch::relu(batch_norm3(conv3(x)));
    x = torch::tanh(conv4(x));
    return x;
  }

  torch::nn::ConvTranspose2d conv1, conv2, conv3, conv4;
  torch::nn::BatchNorm2d batch_norm1, batch_norm2, batch_norm3;
};
TORCH_MODULE(DCGANGenerator);

// Weights from a formula (the two libraries draw different random numbers); BatchNorm's weights stay 1.
void init_weights(torch::nn::Module& net, double scale) {
  torch::NoGradGuard no_grad;
  int k = 0;
  for (auto& p : net.parameters()) {
    ++k;
    if (p.dim() < 2) continue;
    auto v = torch::arange(p.numel(), torch::kFloat);
    p.copy_((torch::cos(v * 0.71 + k) * scale).view_as(p));
  }
}

// Noise from a formula, [n, kNoiseSize, 1, 1].
torch::Tensor noise(int64_t n, int64_t step) {
  auto v = torch::arange(n * kNoiseSize, torch::kFloat);
  return torch::sin(v * 1.3 + step).reshape({n, kNoiseSize, 1, 1});
}

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  torch::manual_seed(1);
  torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;

  DCGANGenerator generator(kNoiseSize);
  torch::nn::Sequential discriminator(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 4).stride(2).padding(1).bias(false)),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(32),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(64),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 1, 3).stride(1).padding(0).bias(false)),
      torch::nn::Sigmoid());
  init_weights(*generator, 0.05);
  init_weights(*discriminator, 0.05);
  generator->to(device);
  discriminator->to(device);

  auto dataset = torch::data::datasets::MNIST(root)
                     .map(torch::data::transforms::Normalize<>(0.5, 0.5))
                     .map(torch::data::transforms::Stack<>());
  const int64_t batches_per_epoch = std::ceil(dataset.size().value() / static_cast<double>(kBatchSize));
  auto data_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(kBatchSize).workers(2));

  torch::optim::Adam generator_optimizer(generator->parameters(), torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  torch::optim::Adam discriminator_optimizer(discriminator->parameters(), torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));

  std::printf("batches per epoch %ld\n", long(batches_per_epoch));
  int64_t batch_index = 0;
  for (torch::data::Example<>& batch : *data_loader) {
    if (batch_index >= 8) continue;   // a short epoch (libtorch refuses a new epoch before this one ends)
    discriminator->zero_grad();
    torch::Tensor real_images = batch.data.to(device);
    torch::Tensor real_labels = torch::full({batch.data.size(0)}, 0.9, device);
    torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
    torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
    d_loss_real.backward();

    torch::Tensor fake_images = generator->forward(noise(batch.data.size(0), batch_index).to(device));
    torch::Tensor fake_labels = torch::zeros(batch.data.size(0), device);
    torch::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
    torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
    d_loss_fake.backward();

    torch::Tensor d_loss = d_loss_real + d_loss_fake;
    discriminator_optimizer.step();

    generator->zero_grad();
    fake_labels.fill_(1);
    fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
    torch::Tensor g_loss = torch::binary_cross_entropy(fake_output, fake_labels);
    g_loss.backward();
    generator_optimizer.step();
    ++batch_index;
    if (batch_index % 2 == 0)
      std::printf("[%3ld/%3ld] D_loss: %.4f | G_loss: %.4f\n", long(batch_index), long(batches_per_epoch),
                  d_loss.item<float>(), g_loss.item<float>());
  }
  torch::NoGradGuard no_grad;
  generator->eval();
  torch::Tensor samples = generator->forward(noise(8, 1000).to(device));
  samples = (samples + 1.0) / 2.0;
  std::printf("samples %ld x %ld x %ld x %ld, mean %.4f, first %.4f\n", long(samples.size(0)), long(samples.size(1)),
              long(samples.size(2)), long(samples.size(3)), samples.mean().item<float>(), samples[0][0][14][14].item<float>());
}
