// libdl_kernels: the instantiations of area 'reduce' (reductions of tensors; autograd's view and copy nodes) that dl's headers
// declare with DL_EXTERN_TEMPLATE(reduce, ...), defined here once.
#define DL_EXTERN_reduce
#include <dl/dl.hpp>
