// A libtorch program of the kind of libtorch's regression example (pytorch/examples cpp/regression):
// fit a polynomial with one Linear layer, SGD built from a learning rate alone, smooth_l1_loss, a
// holder called directly (fc(x)), torch::cat of pow features, std::tie of a returned pair, item()
// and element access. Written for libtorch and compiled unchanged against dl (see mnist.cpp).
// Deterministic: the target and the batches come from formulas.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#define POLY_DEGREE 4

// Builds features i.e. a matrix with columns [x, x^2, x^3, x^4].
torch::Tensor make_features(torch::Tensor x) {
  x = x.unsqueeze(1);
  std::vector<torch::Tensor> xs;
  for (int64_t i = 0; i < POLY_DEGREE; ++i) xs.push_back(x.pow(i + 1));
  return torch::cat(xs, 1);
}

// Approximated function.
torch::Tensor f(torch::Tensor x, torch::Tensor w, torch::Tensor b) { return x.mm(w) + b.item(); }

// Creates a string description of a polynomial.
std::string poly_desc(torch::Tensor W, torch::Tensor b) {
  auto size = W.size(0);
  std::ostringstream stream;
  stream << "y = ";
  for (int64_t i = 0; i < size; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", W[i].item<float>());
    stream << buf << " x^" << size - i << " ";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", b[0].item<float>());
  stream << "+ " << buf;
  return stream.str();
}

// Builds a batch i.e. (x, f(x)) pair.
std::pair<torch::Tensor, torch::Tensor> get_batch(torch::Tensor W_target, torch::Tensor b_target, int64_t step,
                                                  int64_t batch_size = 32) {
  auto inputs = torch::sin(torch::arange(batch_size, torch::kFloat) * 0.9 + step * 0.37);
  auto x = make_features(inputs);
  auto y = f(x, W_target, b_target);
  return std::make_pair(x, y);
}

int main() {
  auto W_target = torch::tensor({0.5, -1.25, 2.0, 0.75}).view({POLY_DEGREE, 1}) * 2;
  auto b_target = torch::tensor({1.5});

  // Define the model and optimizer
  auto fc = torch::nn::Linear(W_target.size(0), 1);
  {
    torch::NoGradGuard no_grad;
    fc->weight.fill_(0.1);
    fc->bias.zero_();
  }
  torch::optim::SGD optim(fc->parameters(), .1);

  float loss = 0;
  int64_t batch_idx = 0;
  while (++batch_idx <= 400) {
    torch::Tensor batch_x, batch_y;
    std::tie(batch_x, batch_y) = get_batch(W_target, b_target, batch_idx);
    optim.zero_grad();
    auto output = torch::smooth_l1_loss(fc(batch_x), batch_y);
    loss = output.item<float>();
    output.backward();
    optim.step();
    if (batch_idx % 50 == 0) std::printf("batch %ld loss %.5f\n", long(batch_idx), loss);
  }
  std::cout << "==> Learned function:\t" << poly_desc(fc->weight.view({-1}), fc->bias) << std::endl;
  std::cout << "==> Actual function:\t" << poly_desc(W_target.view({-1}), b_target) << std::endl;
}
