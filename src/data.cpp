// libdl_kernels: the instantiations of area 'data' (datasets, transforms and loaders) that dl's headers
// declare with DL_EXTERN_TEMPLATE(data, ...), defined here once.
#define DL_EXTERN_data
#include <dl/dl.hpp>
