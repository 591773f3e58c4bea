// libdl_kernels: the instantiations of area 'optim' (the optimizers) that dl's headers
// declare with DL_EXTERN_TEMPLATE(optim, ...), defined here once.
#define DL_EXTERN_optim
#include <dl/dl.hpp>
