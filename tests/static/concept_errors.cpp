// Must NOT compile: one misuse of each concept a user meets (elementwise functions and operators,
// the element types of Tensor, LAPACK's types, shapes, datasets, samplers, random tensors). The
// meson test 'static_concept_errors' checks that the diagnostics carry, for each, the one sentence
// that names the requirement: the comment on the concept's line, which the compiler quotes, or a
// static_assert where a constraint would only say "no known conversion".
#include <dl/dl.hpp>

#include <string>
#include <vector>

// A sampler whose indices() returns std::vector<int>.
struct IntIndices {
  int64_t size() const { return 3; }
  std::vector<int> indices() { return {0, 1, 2}; }
};

// A dataset without get(i).
struct NoGet {
  int64_t size() const { return 4; }
};

int main() {
  std::vector<float> v{1, 2};
  auto t = dl::zeros<float>({2});
  (void)dl::relu(v);                                          // expression
  (void)(t + v);                                              // operand
  dl::Tensor<std::string> s;                                  // scalar_type
  (void)dl::linalg::inv(dl::zeros<int64_t>({2, 2}));          // lapack_scalar
  dl::Shape shape(std::vector<double>{1, 2});                 // integer_array
  dl::data::BatchSampler batches(IntIndices{}, 2, false);     // sampler
  dl::data::AnyBatchSampler not_batches(IntIndices{});        // batch_sampler
  (void)dl::data::Subset(NoGet{}, {0, 1});                    // dataset
  (void)dl::randn<int64_t>({2});                              // a floating element type
}
