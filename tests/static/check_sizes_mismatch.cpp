// Must NOT compile: a hand-written forward whose layers' static sizes disagree (conv1 gives 8
// channels, conv2 takes 16), checked with nn::check_sizes. The meson test 'static_check_sizes'
// compiles it and checks the one-sentence message and both sizes.
#include <dl/nn.hpp>

struct Net : dl::nn::Module {
  dl::nn::Conv2d<1, 8> conv1{3};
  dl::nn::Conv2d<16, 8> conv2{3};
  dl::nn::Linear<8, 10> fc;
  Net() { dl::nn::check_sizes(conv1, dl::nn::ReLU(), conv2, fc); }
  dl::Tensor<float> forward(const dl::Tensor<float>& x) { return conv2(dl::relu(conv1(x))); }
  DL_MODULE(Net, conv1, conv2, fc)
};

int main() { Net net; }
