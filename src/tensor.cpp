// libdl_kernels, the tensor classes: Tensor<T> for the element types of DL_TENSOR_TYPES
// (dl/tensor/instances.hpp), instantiated here once, after every header that defines a member.
#define DL_EXTERN_TENSOR_DEFINITIONS 1
#include <dl/dl.hpp>

#define DL_DEFINE_TENSOR_CLASS(T) template class dl::Tensor<T>;
DL_TENSOR_TYPES(DL_DEFINE_TENSOR_CLASS)
