// Must not compile: grad_fn() and backward() need a recorded result, and `auto y = x + 2` is an
// unevaluated expression. tests/meson.build checks that each static_assert says to assign it to a
// dl::Tensor first.
#include <dl/tensor.hpp>

int main() {
  dl::Tensor<float> x = dl::ones({2, 2});
  x.requires_grad_();
  auto y = x + 2;
  (void)y.grad_fn();
  y.sum().backward();  // fine: sum() returns a Tensor
  (y * y).backward();
}
