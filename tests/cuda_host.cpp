// The host-only (g++) half of test_cuda: CUDA tensors used from a translation unit nvcc never sees.
#include <dl/dl.hpp>
#include <dl/cuda.hpp>

// tests/cuda.cu evaluates the same expression type, so its kernel is registered.
dl::Tensor<float> host_tu_fused(const dl::Tensor<float>& a, const dl::Tensor<float>& b) { return a * b + 1.0f; }

// No .cu file evaluates this expression type: dl::Error.
dl::Tensor<float> host_tu_unregistered(const dl::Tensor<float>& a) { return dl::atan(dl::cosh(a) - 3.5f) * 1.25f; }

// cuBLAS needs no generated kernel.
dl::Tensor<float> host_tu_matmul(const dl::Tensor<float>& a, const dl::Tensor<float>& b) { return dl::matmul(a, b); }
