// Must NOT compile: the two ways a libtorch user registers a module member in plain dl, each of
// which would register a copy (eval(), train() and to() would then miss the member). The meson test
// 'static_register_module_errors' checks that each is named by its static_assert, which says what
// to write instead.
#include <dl/nn.hpp>

struct ByMember : dl::nn::Module {
  dl::nn::Dropout drop;
  ByMember() { register_module("drop", drop); }  // libtorch: register_module("drop", drop)
  DL_MODULE(ByMember)
  dl::Tensor<float> forward(const dl::Tensor<float>& x) { return drop(x); }
};

struct ByAssignment : dl::nn::Module {
  dl::nn::Dropout drop;
  ByAssignment() { drop = register_module("drop", dl::nn::Dropout(0.5)); }  // libtorch's holder idiom
  DL_MODULE(ByAssignment)
  dl::Tensor<float> forward(const dl::Tensor<float>& x) { return drop(x); }
};

int main() {
  ByMember a;
  ByAssignment b;
}
