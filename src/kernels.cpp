// libdl_kernels: dl's compiled mode (see DL_HEADER_ONLY in dl/config.hpp). This translation unit
// sees every body: it is compiled with -fkeep-inline-functions, so each of dl's non-template inline
// functions is emitted here once, and dl/compiled.hpp turns its list of instantiations into
// explicit instantiation definitions. Programs built with DL_COMPILED_KERNELS link against it.
#define DL_BUILDING_KERNELS 1
#ifndef DL_COMPILED_KERNELS
#define DL_COMPILED_KERNELS 1
#endif
#include <dl/dl.hpp>
