// Type-level checks of the expression engine: compiling this file is the test.
#include <type_traits>

#include <dl/tensor.hpp>

namespace e = dl::expr;
using F = dl::Tensor<float>;
using L = e::Leaf<float>;

// A fused expression is an Apply tree, not a Tensor, until it is assigned.
using Chain = decltype(dl::sigmoid(std::declval<F>() * std::declval<F>() + std::declval<F>()) * std::declval<F>());
static_assert(std::is_same_v<Chain, e::Apply<e::Mul, e::Apply<e::Sigmoid, e::Apply<e::Add, e::Apply<e::Mul, L, L>, L>>, L>>,
              "sigmoid(a * b + c) * d is Mul(Sigmoid(Add(Mul(a, b), c)), d)");
static_assert(!std::is_convertible_v<Chain, int> && std::is_constructible_v<F, Chain>, "an expression materialises into a Tensor");
static_assert(dl::expression<Chain> && dl::expression<F> && !dl::expression<float>);

// Numbers become Scalar nodes typed after the tensor operand.
static_assert(std::is_same_v<decltype(std::declval<F>() * 2), e::Apply<e::Mul, L, e::Scalar<float>>>);
static_assert(std::is_same_v<decltype(2.0 - std::declval<dl::Tensor<int64_t>>())::value_type, float>);

// Op functors and kernel views are trivially copyable (they are copied into threads and kernels).
static_assert(std::is_trivially_copyable_v<e::Add> && std::is_trivially_copyable_v<e::Sigmoid>);
static_assert(std::is_trivially_copyable_v<e::Clamp<float>> && std::is_trivially_copyable_v<e::PowScalar<double>>);
using ChainView = e::view_t<Chain>;
static_assert(std::is_trivially_copyable_v<ChainView>, "kernel views must be trivially copyable");
static_assert(ChainView::leaves == 4);
static_assert(std::is_same_v<ChainView::simd_type, float>, "an all-float expression evaluates with float SIMD lanes");
static_assert(std::is_void_v<e::view_t<decltype(std::declval<F>() + std::declval<dl::Tensor<double>>())>::simd_type>,
              "mixed element types fall back to the scalar loop");

// Derivative rules flow only into floating operands.
using WhereView = e::view_t<decltype(dl::where(std::declval<F>() > 0, std::declval<F>(), std::declval<F>()))>;
static_assert(!WhereView::grad_flows<0> && WhereView::grad_flows<1> && WhereView::grad_flows<2>);

// Shapes and dims are small inline arrays.
static_assert(std::is_trivially_copyable_v<dl::Shape> && sizeof(dl::Shape) <= 80);
static_assert(dl::numel(dl::Shape{2, 3, 4}) == 24);

int main() { return 0; }
