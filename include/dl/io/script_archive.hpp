// dl/io/script_archive.hpp — the archives libtorch's C++ torch::save writes and torch::load reads:
// a TorchScript module archive whose modules hold tensors (parameters, then buffers) and submodules
// as attributes, one class per module (`__torch__.___torch_mangle_<k>.Module`, declared in
// code/*.py), the tensors in data.pkl with their storages in data/<key>. dl/torch.hpp's torch::save
// and torch::load use it; reading goes through dl::load (the unpickler reads a module object as a
// dict, so the file reads as a state dict: "fc.weight", or "0" for a saved tensor).
//
//   dl::io::ArchiveModule root;                       // what torch::save(module, path) builds
//   root.parameters.push_back({"weight", w});
//   dl::io::save_archive(root, "net.pt");             // torch::load(net, "net.pt") in libtorch reads it
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../any_tensor.hpp"
#include "../config.hpp"
#include "zip.hpp"

namespace dl::io {

// ------------------------------------------------------------------------------ declarations

/// A non-tensor attribute: TorchScript's float, int, bool, str or Tuple[float, float] (what
/// libtorch's optimizers write: options, steps, keys).
using ArchiveValue = std::variant<double, int64_t, bool, std::string, std::pair<double, double>>;

/// One module of an archive: its tensors, other attributes and submodules, in the order they are written.
struct ArchiveModule {
  std::vector<std::pair<std::string, AnyTensor>> parameters;
  std::vector<std::pair<std::string, AnyTensor>> buffers;
  std::vector<std::pair<std::string, AnyTensor>> tensors;  ///< other tensor attributes (optimizer state)
  std::vector<std::pair<std::string, ArchiveValue>> attributes;
  std::vector<std::pair<std::string, ArchiveModule>> children;
};

/// The bytes of the archive holding `root`: one storage per distinct CPU storage (tensors sharing
/// memory stay shared), CPU copies of tensors on other devices.
std::string to_archive(const ArchiveModule& root);
/// Writes the archive to path (through a temporary file renamed into place).
void save_archive(const ArchiveModule& root, const std::string& path);

namespace detail {
void write_archive(const ArchiveModule& root, Sink& out);
}  // namespace detail

}  // namespace dl::io

#if DL_HEADER_ONLY
#include "script_archive-inl.hpp"
#endif
