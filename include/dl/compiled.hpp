// dl/compiled.hpp — the instantiations libdl_kernels holds in compiled mode (DL_COMPILED_KERNELS,
// see dl/config.hpp): `extern template` in a user's translation unit, so it does not compile them,
// explicit instantiation definitions in the library's (DL_BUILDING_KERNELS). Included last by
// dl/dl.hpp; without DL_COMPILED_KERNELS it declares nothing.
//
// What is listed: the float instantiations that every training program reaches through nn, optim
// and data (optimizers, cross entropy, products) and whose bodies are out of line (an inline body
// would still be instantiated for inlining, saving nothing). A program that uses other types or
// ops compiles those itself, as in header-only mode.
#pragma once

#include "config.hpp"

#if defined(DL_COMPILED_KERNELS)

// One optimizer: the algorithm and its OptimizerBase (an instantiation of a derived class does
// not instantiate its base's members).
#define DL_INSTANTIATE_OPTIMIZER(Name, StateT, T)                                                          \
  DL_EXTERN_TEMPLATE(optim, class dl::optim::OptimizerBase<dl::optim::Name<T>, T, dl::optim::Name##Options, \
                                                           dl::optim::Name##GroupOptions, StateT<T>>)       \
  DL_EXTERN_TEMPLATE(optim, class dl::optim::Name<T>)

DL_INSTANTIATE_OPTIMIZER(SGD, dl::optim::SGDState, float)
DL_INSTANTIATE_OPTIMIZER(Adam, dl::optim::AdamState, float)
DL_INSTANTIATE_OPTIMIZER(AdamW, dl::optim::AdamState, float)
DL_INSTANTIATE_OPTIMIZER(RMSprop, dl::optim::RMSpropState, float)
DL_INSTANTIATE_OPTIMIZER(Adagrad, dl::optim::AdagradState, float)

DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::class_loss_op<true, float>(const Tensor<float>&, const Tensor<int64_t>&,
                                                                        const Tensor<float>&, const ClassLossParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::class_loss_op<false, float>(const Tensor<float>&, const Tensor<int64_t>&,
                                                                         const Tensor<float>&, const ClassLossParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::matmul_nd<float>(const Tensor<float>&, const Tensor<float>&, const char*))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::linear<dl::Tensor<float>, dl::detail::Identity, float>(
    const Tensor<float>&, const Tensor<float>&, const Tensor<float>&, dl::detail::Identity))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::linear<dl::Tensor<float>, dl::expr::Relu, float>(
    const Tensor<float>&, const Tensor<float>&, const Tensor<float>&, dl::expr::Relu))
DL_EXTERN_TEMPLATE(ops, void dl::detail::gemm<float, dl::detail::Epilogue<float>>(int64_t, int64_t, int64_t, float, MatrixRef<float>,
                                                                         MatrixRef<float>, float, float*, int64_t,
                                                                         const Epilogue<float>&, int))
DL_EXTERN_TEMPLATE(ops, void dl::detail::gemm<float, dl::detail::Epilogue<float, dl::expr::Relu>>(
    int64_t, int64_t, int64_t, float, MatrixRef<float>, MatrixRef<float>, float, float*, int64_t,
    const Epilogue<float, dl::expr::Relu>&, int))
DL_EXTERN_TEMPLATE(ops, dl::MaxResult<float> dl::detail::arg_reduce<true, float>(const Tensor<float>&, int64_t, bool, const char*))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::conv2d_op<float>(const Tensor<float>&, const Tensor<float>&, const Tensor<float>&,
                                                               const ConvParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::conv2d_input_op<float>(const Tensor<float>&, const Tensor<float>&, const Shape&,
                                                                     const ConvParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::conv2d_weight_op<float>(const Tensor<float>&, const Tensor<float>&, const Shape&,
                                                                      const ConvParams&))
DL_EXTERN_TEMPLATE(ops, dl::MaxResult<float> dl::detail::max_pool2d_op<float>(const Tensor<float>&, const PoolParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::max_pool2d_scatter_op<float>(const Tensor<float>&, const Tensor<int64_t>&,
                                                                          const Shape&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::max_pool2d_gather_op<float>(const Tensor<float>&, const Tensor<int64_t>&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::avg_pool2d_op<float>(const Tensor<float>&, const PoolParams&, const Shape&, bool))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::avg_pool2d_backward_op<float>(const Tensor<float>&, const PoolParams&,
                                                                           const Shape&, bool))
DL_EXTERN_TEMPLATE(nn, class dl::nn::detail::ConvBase<2, false>)
DL_EXTERN_TEMPLATE(reduce, class dl::detail::AsStridedBackward<float>)
DL_EXTERN_TEMPLATE(reduce, class dl::detail::CopySlices<float>)
DL_EXTERN_TEMPLATE(data, class dl::data::VisionDataset<dl::data::transforms::Normalize>)
DL_EXTERN_TEMPLATE(data, class dl::data::MNIST<dl::data::transforms::Normalize>)
DL_EXTERN_TEMPLATE(data, class dl::data::FashionMNIST<dl::data::transforms::Normalize>)

#undef DL_INSTANTIATE_OPTIMIZER
#endif
