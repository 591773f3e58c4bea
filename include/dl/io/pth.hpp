// dl/io/pth.hpp — PyTorch's own file format (torch.save since 1.6, torch.load): a zip archive of
// `<archive>/data.pkl`, a pickled OrderedDict of tensors, and `<archive>/data/<key>` raw storages.
//
//   std::string bytes = dl::io::to_pth(net.state_dict());   // what torch.load reads
//   dl::StateDict sd = dl::io::from_pth(bytes);             // what torch.save wrote
//
// Reading parses only the pickle subset of state dicts (dl/io/pickle.hpp) and never runs Python
// code. Tensors sharing a storage in the file (tied weights, views) share one dl storage, with
// the file's offsets and strides, as torch.load gives them. Nested containers (checkpoints such
// as {"model": state_dict, "epoch": 3}) are flattened with "." ("model.fc.weight"); their
// non-tensor leaves go to StateDict::metadata as Python literals ("epoch" -> "3").
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "json.hpp"
#include "pickle.hpp"
#include "state_dict.hpp"
#include "zip.hpp"

namespace dl::io {

// ------------------------------------------------------------------------------ declarations

/// The bytes of a .pth file holding sd, in the layout torch.save writes (PyTorch 1.6+ reads it):
/// an OrderedDict of tensors; tensors that share a dl storage share one stored storage (only the
/// range they use), with their offsets and strides. StateDict::metadata, which PyTorch's format
/// has no place for, goes to an extra entry `archive/dl_metadata.json` that torch.load ignores.
std::string to_pth(const StateDict& sd);

/// Reads the bytes of a .pth file (torch.save of a state dict or of nested dicts of tensors).
/// Throws dl::Error for anything else, naming what it found. Needs libzip (DL_HAVE_LIBZIP).
StateDict from_pth(std::string_view bytes);

namespace detail {
/// to_pth into a sink; force_zip64 writes ZIP64 records even for small archives (tests).
void write_pth(const StateDict& sd, Sink& out, bool force_zip64 = false);
/// Reads a .pth file from disk, storages straight into tensor memory.
StateDict read_pth_file(const std::string& path);
/// Python's repr of a float (0.01, 1e-08, 100000.0), for metadata taken from a pickle.
std::string python_float_repr(double v);
}  // namespace detail

}  // namespace dl::io

#if DL_HEADER_ONLY
#include "pth-inl.hpp"
#endif
