// Must NOT compile: class-index targets of the wrong element type (int32 labels, as a dataset of
// ints gives; float labels for nll_loss). The meson test 'static_loss_target_errors' checks that each
// is named by one static_assert saying which conversion to write.
#include <dl/nn.hpp>

namespace F = dl::nn::functional;

int main() {
  auto logits = dl::zeros<float>({4, 3});
  auto labels = dl::zeros<int32_t>({4});
  (void)F::cross_entropy(logits, labels);
  (void)F::nll_loss(logits, dl::zeros<float>({4}));
}
