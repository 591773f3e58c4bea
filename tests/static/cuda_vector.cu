// Compiled to PTX by cuda_vector_ptx.sh (a meson test): the generated forward kernel and fused
// backward kernel of a float expression must read and write through 16-byte vector instructions
// on their contiguous path (dl/cuda/kernels.hpp, run_vector).
#include <dl/cuda.hpp>

namespace {
using namespace dl::expr;
using L = LeafView<float>;
// sigmoid(a * b + c) * d
using Fused = ApplyView<Mul, ApplyView<Sigmoid, ApplyView<Add, ApplyView<Mul, L, L>, L>>, L>;
}  // namespace

bool fused_registered = DeviceRows<AssignBody<Fused, float>>::registered;
bool fused_backward_registered = DeviceRows<dl::autograd::detail::BackwardBody<Fused, L>>::registered;
