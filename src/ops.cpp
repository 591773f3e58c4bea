// libdl_kernels: the instantiations of area 'ops' (products, convolution, pooling, losses) that dl's headers
// declare with DL_EXTERN_TEMPLATE(ops, ...), defined here once.
#define DL_EXTERN_ops
#include <dl/dl.hpp>
