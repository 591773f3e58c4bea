// dl/tensor.hpp — the tensor API: dl::Tensor<T>, a cheap, copyable handle to a strided array
// (shared storage + shape + strides + offset + autograd slot) like torch::Tensor, with creation,
// views, lazy elementwise expressions, reductions, autograd, in-place ops and printing.
//
//   dl::Tensor<float> a = dl::randn({1024, 1024});
//   auto e = dl::sigmoid(a * 2.0f + 1.0f);   // an expression: nothing computed yet
//   dl::Tensor<float> y = e;                 // one fused pass; evaluating `e` again recomputes it
//
// The class is dl/tensor/tensor.hpp; this header gathers what defines its members.
#pragma once

#include "autograd/engine.hpp"
#include "autograd/function.hpp"
#include "ops/reduce.hpp"
#include "random.hpp"
#include "tensor/autograd.hpp"
#include "tensor/creation.hpp"
#include "tensor/inplace.hpp"
#include "tensor/print.hpp"
#include "tensor/tensor.hpp"
#include "tensor/views.hpp"
#include "tensor/instances.hpp"
