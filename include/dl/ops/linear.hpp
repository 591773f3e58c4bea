// dl/ops/linear.hpp — the kernel behind nn::functional::linear: act(x @ weight^T + bias) as one
// GEMM with the bias and the activation applied in its epilogue (cuBLASLt's on the GPU), recorded
// for autograd as one node (LinearReluBackward when the activation is relu).
#pragma once

#include <concepts>
#include <type_traits>
#include <vector>

#include "../tensor.hpp"
#include "gemm.hpp"
#include "kernel_backward.hpp"
#include "matmul.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// act(x @ weight^T + bias): x [..., in], weight [out, in], bias [out] or undefined; the result is
/// [..., out]. @pre F::linear's checks hold and T is float or double (16-bit inputs are widened by
/// F::linear). Identity and expr::Relu are fused and recorded as one node; any other activation is
/// fused when nothing needs a gradient, else applied as a differentiable second pass.
template <class T, class Act>
Tensor<T> linear_op(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, Act act);

// ------------------------------------------------------------------------------ implementation

/// where(mask > 0, g, 0) as a kernel, differentiable (the map is its own adjoint): the backward
/// of relu fused into linear, without an extra expression type.
template <class T>
Tensor<T> relu_mask(const Tensor<T>& g_, const Tensor<T>& mask) {
  const Tensor<T> g = g_.contiguous();
  Tensor<T> out = empty<T>(g.shape());
  const T* gp = g.data();
  const T* mp = mask.data();
  T* op = out.data();
  // Pointers copied into restrict locals: through the lambda's reference captures the loop would
  // not vectorise.
  parallel_for(0, g.numel(), 1 << 16, [gp, mp, op](int64_t i0, int64_t i1) {
    const T* __restrict gr = gp;
    const T* __restrict mr = mp;
    T* __restrict orr = op;
    for (int64_t i = i0; i < i1; ++i) orr[i] = mr[i] > T(0) ? gr[i] : T(0);
  });
  return record_kernel(out, "ReluBackward", {}, [mask](const Tensor<T>& gg, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{relu_mask(gg, mask).impl()};
  }, g_);
}

/// The backward rule of linear (saved: input [rows, in], weight, and the output when relu): the
/// gradients of the input, the weight and the bias.
template <class T>
auto linear_rule(bool relu) {
  return [relu](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(3);
    const Tensor<T> gp = relu ? relu_mask(g, s[2]) : g;
    if (needs[0]) r[0] = matmul_nd(gp, s[1], "MmBackward").impl();
    if (needs[1]) r[1] = matmul_nd(gp.t(), s[0], "MmBackward").impl();
    if (needs[2]) r[2] = dl::sum(gp, 0).impl();
    return r;
  };
}

/// The activations linear_rule differentiates: act'(pre) of any other needs pre, which the fused
/// form never stores.
template <class Act>
inline constexpr bool recordable_activation = std::is_same_v<Act, Identity> || std::is_same_v<Act, expr::Relu>;

template <class T, class Act>
Tensor<T> linear_op(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, Act act) {
  const int64_t in = weight.size(1), outf = weight.size(0);
  const bool needs_grad = autograd::any_requires_grad(x, weight, bias);
#if defined(__CUDACC__)
  // nvcc cannot compile the CPU GEMM's SIMD epilogue with an activation (xsimd batches in a
  // __host__ __device__ functor): there, the activation is a second pass.
  if constexpr (!std::is_same_v<Act, Identity>) {
    return Tensor<T>(expr::apply(act, linear_op(x, weight, bias, Identity{})));
  } else
#endif
  {
    if constexpr (!recordable_activation<Act>) {
      if (needs_grad) {  // a differentiable composition
        const Tensor<T> pre = linear_op(x, weight, bias, Identity{});
        return Tensor<T>(expr::apply(act, pre));
      }
    }
    Shape out_shape = x.shape();
    out_shape[out_shape.size() - 1] = outf;
    const Tensor<T> x2 = x.reshape({-1, in});
    if (x.is_cuda() || weight.is_cuda() || (bias.defined() && bias.is_cuda())) {
      check_devices("linear", x, weight);
      if (bias.defined()) check_devices("linear", x, bias);
      // On the GPU, float: one cuBLASLt call with the bias (and, without autograd, the ReLU) in the
      // GEMM epilogue.
      constexpr bool relu = std::is_same_v<Act, expr::Relu>;
      if constexpr (std::is_same_v<T, float> && (relu || std::is_same_v<Act, Identity>)) {
        const auto lt = cuda_backend().linear;
        if (lt && !(relu && needs_grad) && x2.stride(1) == 1 && weight.stride(1) == 1 && (!bias.defined() || bias.stride(0) == 1)) {
          Tensor<T> out = empty<T>({x2.size(0), outf}, x.device());
          if (lt(ScalarType::Float, x.device().index, x2.size(0), outf, in, x2.data_ptr(), x2.stride(0), weight.data_ptr(),
                 weight.stride(0), bias.defined() ? bias.data_ptr() : nullptr, relu ? 1 : 0, out.data_ptr())) {
            if (needs_grad)  // (relu is false here)
              out = record_kernel(out, "AddmmBackward", {x2, weight, Tensor<T>()}, linear_rule<T>(false), x2, weight, bias);
            return out.reshape(out_shape);
          }
        }
      }
      // Otherwise cuBLAS (addmm, recorded as such), then the activation as a generated kernel.
      Tensor<T> pre = bias.defined() ? dl::addmm(bias, x2, weight.t()) : matmul_nd(x2, weight.t(), "MmBackward");
      if constexpr (!std::is_same_v<Act, Identity>) pre = Tensor<T>(expr::apply(act, pre));
      return pre.reshape(out_shape);
    }
    const int64_t rows = x2.size(0);
    Tensor<T> out = empty<T>({rows, outf});
    Epilogue<T, Act> ep;
    ep.act = act;
    if (bias.defined()) ep.bias = {bias.data(), 0, bias.stride(0)};
    gemm(rows, outf, in, T(1), matrix_ref(x2), MatrixRef<T>{weight.data(), weight.stride(1), weight.stride(0)}, T(0), out.data(),
         outf, ep);
    if constexpr (recordable_activation<Act>) {
      if (needs_grad) {
        constexpr bool relu = std::is_same_v<Act, expr::Relu>;
        const Tensor<T> saved_out = relu ? out.detach() : Tensor<T>();  // detached: no cycle through the node
        out = record_kernel(out, relu ? "LinearReluBackward" : "AddmmBackward", {x2, weight, saved_out}, linear_rule<T>(relu), x2,
                            weight, bias);
      }
    }
    return out.reshape(out_shape);
  }
}

/// x @ weight^T + bias for bfloat16 CPU tensors on the dot-product instruction (native_bf16): the
/// bias added in float before the one rounding, recorded as linear_op's node. @pre F::linear's checks.
/// T is BFloat16 (a template: instantiated only where called).
template <class T>
  requires std::same_as<T, BFloat16>
Tensor<T> linear_bf16(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias) {
  const int64_t in = weight.size(1), outf = weight.size(0);
  Shape out_shape = x.shape();
  out_shape[out_shape.size() - 1] = outf;
  const Tensor<T> x2 = x.reshape({-1, in});
  const Tensor<T> b = bias.defined() ? bias.contiguous() : Tensor<T>();
  Tensor<T> out = empty<T>({x2.size(0), outf});
  batched_gemm_bf16(x2, weight.t(), out, b.defined() ? b.data() : nullptr);
  if (autograd::any_requires_grad(x, weight, bias))
    out = record_kernel(out, "AddmmBackward", {x2, weight, Tensor<T>()}, linear_rule<T>(false), x2, weight, bias);
  return out.reshape(out_shape);
}

}  // namespace dl::detail

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::linear_op(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&,
                                                                dl::detail::Identity))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::linear_op(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&,
                                                                dl::expr::Relu))
