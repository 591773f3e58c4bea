// Must NOT compile: adjacent static sizes disagree (128 features out, 100 expected). The meson test
// 'static_sequential_mismatch' compiles it and checks the one-sentence message and both sizes.
#include <dl/nn.hpp>

int main() {
  auto mlp = dl::nn::Sequential(dl::nn::Linear<784, 128>(), dl::nn::ReLU(), dl::nn::Linear<100, 10>());
  (void)mlp;
}
