// The classic two-layer network by hand (PyTorch's "Learning PyTorch with examples"): random
// data, a custom ReLU with its own backward, loss = (y_pred - y).pow(2).sum(), gradients from
// loss.backward(), weights updated under NoGradGuard and gradients zeroed by hand.
#include <cstdio>
#include <string>

#include <dl/dl.hpp>

using dl::Tensor;

// A differentiable function written by the user: forward saves its input, backward uses it.
struct MyReLU : dl::autograd::Function<MyReLU> {
  static Tensor<float> forward(dl::autograd::Context& ctx, const Tensor<float>& input) {
    ctx.save_for_backward(input);
    return dl::clamp_min(input, 0.0f);
  }
  static Tensor<float> backward(dl::autograd::Context& ctx, const Tensor<float>& grad_output) {
    const Tensor<float> input = ctx.saved<float>(0);
    return dl::where(input < 0.0f, 0.0f, grad_output);
  }
};

int main(int argc, char** argv) {
  if (argc > 1) {  // no options: --help says what the program does
    const std::string arg = argv[1];
    std::printf("%s\nusage: %s   (no options)\n", "Trains PyTorch's classic two-layer network by hand on random data (a custom ReLU, backward, manual SGD).", argv[0]);
    return arg == "--help" || arg == "-h" ? 0 : 2;
  }
  dl::manual_seed(0);
  const int64_t N = 64, D_in = 1000, H = 100, D_out = 10;  // batch, input, hidden, output sizes
  const Tensor<float> x = dl::randn({N, D_in}), y = dl::randn({N, D_out});
  Tensor<float> w1 = dl::randn({D_in, H}).requires_grad_();
  Tensor<float> w2 = dl::randn({H, D_out}).requires_grad_();

  const float learning_rate = 1e-6f;
  float first = 0, last = 0;
  for (int t = 0; t < 500; ++t) {
    const Tensor<float> y_pred = MyReLU::apply(x.mm(w1)).mm(w2);
    const Tensor<float> loss = (y_pred - y).pow(2).sum();
    if (t == 0) first = loss.item();
    if (t % 50 == 49 || t == 0) std::printf("step %3d  loss %.6g\n", t + 1, double(loss.item()));
    last = loss.item();

    loss.backward();
    {
      dl::NoGradGuard no_grad;  // the update itself is not part of the graph
      w1 -= learning_rate * w1.grad();
      w2 -= learning_rate * w2.grad();
      w1.grad().zero_();
      w2.grad().zero_();
    }
  }
  std::printf("loss fell from %.6g to %.6g\n", double(first), double(last));
  return last < first * 1e-3f ? 0 : 1;
}
