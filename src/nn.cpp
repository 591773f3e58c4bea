// libdl_kernels: the instantiations of area 'nn' (nn::functional and the layers) that dl's headers
// declare with DL_EXTERN_TEMPLATE(nn, ...), defined here once.
#define DL_EXTERN_nn
#include <dl/dl.hpp>
