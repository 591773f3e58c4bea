// libdl_kernels: dl's compiled mode (see DL_HEADER_ONLY in dl/config.hpp). This translation unit
// sees every non-template body (DL_BUILDING_KERNELS) and defines each of dl's DL_API functions
// once. The template instantiations are in the sibling sources, one per area (DL_EXTERN_TEMPLATE).
#define DL_BUILDING_KERNELS 1
#ifndef DL_COMPILED_KERNELS
#define DL_COMPILED_KERNELS 1
#endif
#include <dl/dl.hpp>
// Headers outside the dl.hpp umbrella whose non-template bodies the library holds too.
#include <dl/nn/embedding_bag.hpp>
#include <dl/nn/rnn.hpp>
#include <dl/nn/transformer.hpp>
#include <dl/io/script_archive.hpp>
