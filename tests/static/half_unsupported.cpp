// Must NOT compile: ops without float16/bfloat16 kernels yet refuse 16-bit inputs with a
// static_assert that says what to do. The meson test 'static_half_unsupported' checks the messages.
#include <dl/nn.hpp>

namespace F = dl::nn::functional;

int main() {
  auto x = dl::zeros<dl::Half>({2, 3});
  auto t = dl::zeros<int64_t>({2});
  (void)F::cross_entropy(x, t);
  (void)F::layer_norm(x, {3});
  (void)F::conv2d(dl::zeros<dl::BFloat16>({1, 1, 4, 4}), dl::zeros<dl::BFloat16>({1, 1, 3, 3}));
}
