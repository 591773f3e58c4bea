// Must NOT compile: calling a module that has no forward, and one whose forward takes another
// tensor type (an Embedding-based module given float values instead of int64 indices). The meson
// test 'static_module_forward_errors' checks that the first error of each call names the mistake:
// "use of deleted function '... module_has_no_forward_taking_these_arguments Net::operator()(...)
// [with DlArgs = {...}]'", with the argument types.
#include <dl/nn.hpp>

namespace nn = dl::nn;

// forward forgotten (or misspelt: Forward, foward).
struct NoForward : nn::Module {
  nn::Linear<4, 2> fc;
  DL_MODULE(NoForward, fc)
};

// forward takes token indices.
struct TakesIds : nn::Module {
  nn::Embedding<> emb{10, 4};
  dl::Tensor<float> forward(const dl::Tensor<int64_t>& ids) { return emb(ids); }
  DL_MODULE(TakesIds, emb)
};

int main() {
  NoForward a;
  TakesIds b;
  auto x = dl::zeros<float>({2, 4});
  (void)a(x);
  (void)b(x);
}
