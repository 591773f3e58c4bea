#include <doctest/doctest.h>

#include <dl/tensor.hpp>

TEST_CASE("smoke") {
  dl::Tensor<float> a = dl::tensor<float>({{1, 2}, {3, 4}});
  dl::Tensor<float> b = dl::ones({2, 2});
  dl::Tensor<float> c = dl::sigmoid(a * b + 1.0f) * 2.0f;
  CHECK(c.at(0, 0) == doctest::Approx(2.0 / (1.0 + std::exp(-2.0))));
  CHECK(c.sum().item() > 0);
}
