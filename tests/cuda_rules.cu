// Compile-time check of the GPU code of every elementwise op (issue 12): the forward kernel and the
// fused backward kernel of each op functor, for float and double, built with nvcc's
// execution-space check on for the derivative rules (DL_CHECK_DEVICE_RULES, see dl/config.hpp) and
// --Werror=cross-execution-space-call. A rule or op that calls a host-only function in device code
// fails this build; without the check nvcc would compile a kernel that silently skips the call.
// Building is passing; running it only prints how many kernels it instantiated.
#define DL_CHECK_DEVICE_RULES 1
#include <dl/cuda.hpp>
#include <dl/expr/activations.hpp>
#include <dl/expr/special.hpp>

#include <cstdio>

namespace {

using namespace dl::expr;

template <class T>
using L = LeafView<T>;

/// Registers (so instantiates) the forward and the fused backward kernel of View.
template <class View>
bool kernels() {
  using T = typename View::value_type;
  bool ok = DeviceRows<AssignBody<View, T>>::registered;
  if constexpr (dl::floating_scalar<T>)
    ok = ok && DeviceRows<dl::autograd::detail::BackwardBody<View, L<T>>>::registered;
  return ok;
}

template <class T>
int all_ops() {
  int n = 0;
  auto count = [&](bool b) { n += b; };
  // Unary.
  count(kernels<ApplyView<Neg, L<T>>>());
  count(kernels<ApplyView<Copy, L<T>>>());
  count(kernels<ApplyView<Abs, L<T>>>());
  count(kernels<ApplyView<Sign, L<T>>>());
  count(kernels<ApplyView<Floor, L<T>>>());
  count(kernels<ApplyView<Ceil, L<T>>>());
  count(kernels<ApplyView<Trunc, L<T>>>());
  count(kernels<ApplyView<Round, L<T>>>());
  count(kernels<ApplyView<Exp, L<T>>>());
  count(kernels<ApplyView<Expm1, L<T>>>());
  count(kernels<ApplyView<Log, L<T>>>());
  count(kernels<ApplyView<Log1p, L<T>>>());
  count(kernels<ApplyView<Log2, L<T>>>());
  count(kernels<ApplyView<Log10, L<T>>>());
  count(kernels<ApplyView<Sqrt, L<T>>>());
  count(kernels<ApplyView<Sin, L<T>>>());
  count(kernels<ApplyView<Cos, L<T>>>());
  count(kernels<ApplyView<Tan, L<T>>>());
  count(kernels<ApplyView<Asin, L<T>>>());
  count(kernels<ApplyView<Acos, L<T>>>());
  count(kernels<ApplyView<Atan, L<T>>>());
  count(kernels<ApplyView<Sinh, L<T>>>());
  count(kernels<ApplyView<Cosh, L<T>>>());
  count(kernels<ApplyView<Tanh, L<T>>>());
  count(kernels<ApplyView<Erf, L<T>>>());
  count(kernels<ApplyView<Rsqrt, L<T>>>());
  count(kernels<ApplyView<Sigmoid, L<T>>>());
  count(kernels<ApplyView<Reciprocal, L<T>>>());
  count(kernels<ApplyView<Relu, L<T>>>());
  count(kernels<ApplyView<Square, L<T>>>());
  count(kernels<ApplyView<PowScalar<int64_t>, L<T>>>());
  count(kernels<ApplyView<PowScalar<double>, L<T>>>());
  count(kernels<ApplyView<Clamp<T>, L<T>>>());
  count(kernels<ApplyView<NanToNum<T>, L<T>>>());
  count(kernels<ApplyView<Cast<float>, L<T>>>());
  count(kernels<ApplyView<Cast<double>, L<T>>>());
  count(kernels<ApplyView<LeakyRelu<T>, L<T>>>());
  count(kernels<ApplyView<Elu<T>, L<T>>>());
  count(kernels<ApplyView<Gelu<T>, L<T>>>());
  count(kernels<ApplyView<Silu, L<T>>>());
  count(kernels<ApplyView<Mish, L<T>>>());
  count(kernels<ApplyView<Softplus<T>, L<T>>>());
  count(kernels<ApplyView<Hardtanh<T>, L<T>>>());
  count(kernels<ApplyView<Hardsigmoid, L<T>>>());
  count(kernels<ApplyView<Hardswish, L<T>>>());
  count(kernels<ApplyView<LogSigmoid, L<T>>>());
  count(kernels<ApplyView<Softsign, L<T>>>());
  count(kernels<ApplyView<Tanhshrink, L<T>>>());
  count(kernels<ApplyView<Threshold<T>, L<T>>>());
  count(kernels<ApplyView<Polygamma, L<T>>>());
  count(kernels<ApplyView<Lgamma, L<T>>>());
  count(kernels<ApplyView<Erfinv, L<T>>>());
  // Binary and ternary.
  count(kernels<ApplyView<Add, L<T>, L<T>>>());
  count(kernels<ApplyView<Sub, L<T>, L<T>>>());
  count(kernels<ApplyView<Mul, L<T>, L<T>>>());
  count(kernels<ApplyView<Div, L<T>, L<T>>>());
  count(kernels<ApplyView<Remainder, L<T>, L<T>>>());
  count(kernels<ApplyView<Pow, L<T>, L<T>>>());
  count(kernels<ApplyView<Maximum, L<T>, L<T>>>());
  count(kernels<ApplyView<Minimum, L<T>, L<T>>>());
  count(kernels<ApplyView<ClampMinTensor, L<T>, L<T>>>());
  count(kernels<ApplyView<ClampMaxTensor, L<T>, L<T>>>());
  count(kernels<ApplyView<Xlogy, L<T>, L<T>>>());
  count(kernels<ApplyView<Prelu, L<T>, L<T>>>());
  count(kernels<ApplyView<Where, L<bool>, L<T>, L<T>>>());
  count(kernels<ApplyView<ClampTensor, L<T>, L<T>, L<T>>>());
  count(kernels<ApplyView<Lerp, L<T>, L<T>, L<T>>>());
  // Comparisons and logic (no gradient).
  count(kernels<ApplyView<Gt, L<T>, L<T>>>());
  count(kernels<ApplyView<Eq, L<T>, L<T>>>());
  count(kernels<ApplyView<LogicalAnd, L<bool>, L<bool>>>());
  count(kernels<ApplyView<LogicalNot, L<bool>>>());
  count(kernels<ApplyView<IsNan, L<T>>>());
  return n;
}

}  // namespace

int main() {
  const int n = all_ops<float>() + all_ops<double>();
  std::printf("%d op kernels (forward and fused backward) compiled for the GPU with every rule checked\n", n);
  return n > 0 ? 0 : 1;
}
