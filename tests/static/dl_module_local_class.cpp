// Must NOT compile: DL_MODULE in a class declared inside a function (C++ allows no member templates
// there). The meson test 'static_dl_module_local_class' checks that the first error names the fix:
// the static member DL_MODULE declares first, DL_MODULE_needs_the_class_at_namespace_scope_...
#include <dl/nn.hpp>

int main() {
  struct Net : dl::nn::Module {
    dl::nn::Linear<4, 2> fc;
    dl::Tensor<float> forward(const dl::Tensor<float>& x) { return fc(x); }
    DL_MODULE(Net, fc)
  };
  Net net;
  (void)net;
}
