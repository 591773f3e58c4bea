// libdl_kernels: the instantiations of area 'binary' (single-op expressions of two operands, comparisons, casts) that dl's headers
// declare with DL_EXTERN_TEMPLATE(binary, ...), defined here once.
#define DL_EXTERN_binary
#include <dl/dl.hpp>
