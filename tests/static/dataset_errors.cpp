// Must NOT compile: four datasets a PyTorch or libtorch user writes first, each missing one thing
// DataLoader needs. The meson test 'static_dataset_errors' compiles it and checks that each mistake
// is named by its one-sentence static_assert, which says what to write instead.
#include <cstdint>
#include <optional>
#include <utility>

#include <dl/data/data.hpp>

// The port of __getitem__ as a non-const member function.
struct MutableGet {
  int64_t size() const { return 10; }
  std::pair<dl::Tensor<float>, int64_t> get(int64_t i) { return {dl::zeros<float>({2}), i}; }
};

// No size().
struct NoSize {
  dl::Tensor<float> get(int64_t) const { return dl::zeros<float>({2}); }
};

// libtorch's size(), which returns std::optional<size_t>.
struct OptionalSize {
  std::optional<size_t> size() const { return 10; }
  dl::Tensor<float> get(int64_t) const { return dl::zeros<float>({2}); }
};

// libtorch's base with libtorch's non-const get, then .map(...).
struct TorchStyle : dl::data::Dataset<TorchStyle> {
  int64_t size() const { return 10; }
  dl::Tensor<float> get(size_t) { return dl::zeros<float>({2}); }
};

int main() {
  auto mapped = TorchStyle{}.map([](const dl::Tensor<float>& t) { return t; });
  dl::data::DataLoader a(MutableGet{}, {.batch_size = 2});
  dl::data::DataLoader b(NoSize{}, {.batch_size = 2});
  dl::data::DataLoader c(OptionalSize{}, {.batch_size = 2});
}
