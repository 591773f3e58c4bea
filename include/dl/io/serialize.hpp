// dl/io/serialize.hpp — dl::save and dl::load: state dicts to and from files, in safetensors or in
// PyTorch's own .pth format (what torch.save writes and torch.load reads).
//
//   dl::save(net.state_dict(), "net.safetensors");
//   dl::save(net.state_dict(), "net.pth");            // torch.load("net.pth") reads it
//   dl::StateDict sd = dl::load("net.pth");           // the format is told by the content
#pragma once

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "../config.hpp"
#include "pth.hpp"
#include "safetensors.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

namespace io {
enum class Format {
  from_extension,  ///< .pth, .pt, .bin, .ckpt: PyTorch's format; anything else: safetensors
  safetensors,
  pth,
};
/// The format `save` picks for path.
Format format_for_path(std::string_view path);
}  // namespace io

/// Writes sd to path (through a temporary file renamed into place, so a failed save leaves any
/// earlier file intact). The format follows the extension unless given.
void save(const StateDict& sd, const std::string& path, io::Format format = io::Format::from_extension);

/// Reads a state dict from a .safetensors or .pth file, telling the format by the content: a zip
/// archive is PyTorch's format, an 8-byte length followed by '{' is safetensors. Tensors are CPU
/// tensors in the file's key order. Corrupt, truncated or unsupported files throw dl::Error.
StateDict load(const std::string& path);

}  // namespace dl

#if DL_HEADER_ONLY
#include "serialize-inl.hpp"
#endif
