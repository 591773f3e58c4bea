// dl/config.hpp — build-wide macros and limits shared by every dl header.
#pragma once

#include <cstddef>
#include <cstdint>

// Compiled mode ({fmt}'s split, opt-in): a program built with DL_COMPILED_KERNELS (Meson's
// dl_compiled_dep, pkg-config's dl-compiled) links libdl_kernels, which holds dl's non-template
// functions (autograd engine, save/load, module tree, data readers...) and the instantiations that
// DL_EXTERN_TEMPLATE declares beside their templates. The headers then keep those out of the user's
// translation unit: a header with such functions declares them (DL_API) and includes its foo-inl.hpp
// with the bodies only `#if DL_HEADER_ONLY`; the instantiations are `extern template`. Header-only
// (the default) is unchanged. src/kernels.cpp is built with DL_BUILDING_KERNELS, which sees every body.
#if defined(DL_COMPILED_KERNELS) && !defined(DL_BUILDING_KERNELS)
#define DL_HEADER_ONLY 0
#else
#define DL_HEADER_ONLY 1
#endif

// The linkage of those non-template functions: inline in header-only mode; in compiled mode an
// ordinary function, declared in the headers and defined once, in libdl_kernels.
#if defined(DL_COMPILED_KERNELS)
#define DL_API
#else
#define DL_API inline
#endif

// Compiled mode's explicit instantiations (the Tensor<T> classes themselves: dl/tensor/instances.hpp),
// each declared once, beside the template it instantiates:
//   DL_EXTERN_TEMPLATE(nn, Tensor<float> batch_norm<Tensor<float>, float>(...))
// is `extern template ...;` in a user's translation unit in compiled mode (the user's build does not
// compile that instantiation: libdl_kernels holds it), `template ...;` in the one library source that
// owns the area (src/<area>.cpp defines DL_EXTERN_<area> empty before including dl), and nothing in
// header-only mode. A declaration that names no existing specialization fails to compile in both,
// and the library defines every one it declares, so the list cannot drift from the library.
#if defined(DL_COMPILED_KERNELS)
#define DL_EXTERN_TEMPLATE(area, ...) DL_EXTERN_##area template __VA_ARGS__;
#else
#define DL_EXTERN_TEMPLATE(area, ...)
#endif
#ifndef DL_EXTERN_unary
#define DL_EXTERN_unary extern  // single-op expressions of one tensor, activations (src/unary.cpp)
#endif
#ifndef DL_EXTERN_binary
#define DL_EXTERN_binary extern  // single-op expressions of two operands, comparisons, casts (src/binary.cpp)
#endif
#ifndef DL_EXTERN_reduce
#define DL_EXTERN_reduce extern  // reductions of tensors, autograd's view and copy nodes (src/reduce.cpp)
#endif
#ifndef DL_EXTERN_ops
#define DL_EXTERN_ops extern  // materialising ops: products, convolution, pooling, losses (src/ops.cpp)
#endif
#ifndef DL_EXTERN_nn
#define DL_EXTERN_nn extern  // nn::functional and the layers' forward passes (src/nn.cpp)
#endif
#ifndef DL_EXTERN_optim
#define DL_EXTERN_optim extern  // optimizers (src/optim.cpp)
#endif
#ifndef DL_EXTERN_data
#define DL_EXTERN_data extern  // datasets, transforms, loaders (src/data.cpp)
#endif

// One annotation for functions that must run on the host and, later, inside CUDA kernels.
#if defined(__CUDACC__)
#define DL_HD __host__ __device__
// GCC-specific loop pragmas (#pragma GCC unroll) in host-only kernels are GCC's business, not nvcc's.
#pragma nv_diag_suppress 1675
#else
#define DL_HD
#endif

// Before a __host__ __device__ template that only forwards (static_for, select, a rule's d<I>...):
// nvcc's execution-space check is off for it (the Eigen/Thrust idiom), because on the host it
// forwards host-only things (tensor handles, host lambdas); what it forwards to in a kernel is
// checked where that is defined. Everything else keeps the check, and dl_cuda_args make its
// warning an error (-Werror cross-execution-space-call): a host function called from device code
// would otherwise compile into a kernel that silently skips the call.
#if defined(__CUDACC__)
#define DL_NO_EXEC_CHECK _Pragma("nv_exec_check_disable")
#else
#define DL_NO_EXEC_CHECK
#endif
// Before an op's derivative rule d<I>: the create_graph path instantiates rules with lazy
// expressions (host-only types), so the check is off there too. tests/cuda_rules.cu compiles every
// rule's device kernel with DL_CHECK_DEVICE_RULES defined, which keeps the check on, and without
// instantiating any host-side rule: a rule that calls a host function fails that build.
#if defined(__CUDACC__) && !defined(DL_CHECK_DEVICE_RULES)
#define DL_RULE_NO_EXEC_CHECK DL_NO_EXEC_CHECK
#else
#define DL_RULE_NO_EXEC_CHECK
#endif

// Force inlining of the tiny evaluation functions of expression trees: a fused loop is only
// fused if every node's load/apply collapses into the loop body.
#if defined(__GNUC__)
#define DL_INLINE inline __attribute__((always_inline))
#else
#define DL_INLINE inline
#endif

namespace dl {

/// Largest number of dimensions a tensor may have. Shapes and strides are stored inline (no heap)
/// so that they, and the kernel views built from them, stay trivially copyable.
inline constexpr int kMaxDims = 8;

}  // namespace dl
