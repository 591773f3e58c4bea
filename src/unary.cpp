// libdl_kernels: the instantiations of area 'unary' (single-op expressions of one tensor, activations) that dl's headers
// declare with DL_EXTERN_TEMPLATE(unary, ...), defined here once.
#define DL_EXTERN_unary
#include <dl/dl.hpp>
