// dl/torch/serialize.hpp — libtorch's torch::save and torch::load (see dl/torch.hpp) for modules,
// tensors and lists of tensors, in libtorch's own archive format (dl/io/script_archive.hpp): files
// libtorch's torch::load reads, and dl reads the files libtorch's torch::save writes.
//
//   torch::save(net, "net.pt");       torch::load(net, "net.pt");       // parameters and buffers
//   torch::save(t, "t.pt");           torch::load(t, "t.pt");
//
// Loading copies into the module's existing parameters and buffers (shapes must match); every one
// of them must be in the file, and what else the file holds is ignored, as libtorch's.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "../io/script_archive.hpp"
#include "../io/serialize.hpp"
#include "core.hpp"
#include "nn.hpp"

namespace torch {

namespace detail {

/// A module's parameters, buffers and submodules as an archive.
inline dl::io::ArchiveModule archive_of(dl::nn::Module& m) {
  dl::io::ArchiveModule a;
  dl::nn::detail::FnVisitor v([&](const std::string& n, const dl::nn::detail::TensorSlot& s) { a.parameters.emplace_back(n, s.get()); },
                              [&](const std::string& n, const dl::nn::detail::TensorSlot& s) { a.buffers.emplace_back(n, s.get()); },
                              [&](const std::string& n, dl::nn::Module& child) { a.children.emplace_back(n, archive_of(child)); });
  m.visit_members(v);
  return a;
}

inline void load_module(dl::nn::Module& m, const std::string& path) {
  const dl::StateDict sd = dl::load(path);
  const dl::nn::LoadResult r = m.load_state_dict(sd, /*strict=*/false);
  if (!r.missing_keys.empty()) {
    std::string names;
    for (const auto& k : r.missing_keys) names += (names.empty() ? "" : ", ") + k;
    throw dl::Error(str("torch::load('", path, "'): the file has no ", names));
  }
}

template <class T>
inline constexpr bool is_optimizer = std::is_base_of_v<dl::optim::Optimizer, T>;

}  // namespace detail

/// Saves a module's parameters and buffers (and its submodules') as libtorch does.
template <class Impl>
void save(const nn::ModuleHolder<Impl>& module, const std::string& path) {
  dl::io::save_archive(detail::archive_of(*module.ptr()), path);
}
template <class M>
  requires std::is_base_of_v<dl::nn::Module, M>
void save(M& module, const std::string& path) {
  dl::io::save_archive(detail::archive_of(module), path);
}
/// Saves a tensor (the archive's attribute "0", as libtorch).
template <class T>
void save(const dl::Tensor<T>& tensor, const std::string& path) {
  dl::io::ArchiveModule a;
  a.parameters.emplace_back("0", tensor);
  dl::io::save_archive(a, path);
}
/// Saves the value of an expression (`torch::save(x * 0.5, path)`).
template <class E>
  requires dl::expr::is_apply_v<E>
void save(const E& expression, const std::string& path) {
  save(dl::Tensor<dl::expr::value_type_t<E>>(expression), path);
}
/// Saves tensors as "0", "1", ...
template <class T>
void save(const std::vector<dl::Tensor<T>>& tensors, const std::string& path) {
  dl::io::ArchiveModule a;
  for (size_t i = 0; i < tensors.size(); ++i) a.parameters.emplace_back(std::to_string(i), tensors[i]);
  dl::io::save_archive(a, path);
}
template <class O>
  requires detail::is_optimizer<O>
void save(const O&, const std::string&) {
  static_assert(!detail::is_optimizer<O>,
                "torch::save(optimizer, path) is not in dl/torch.hpp yet: save dl's state dict with "
                "dl::save(optimizer.state_dict(), \"opt.pth\") and restore it with optimizer.load_state_dict(dl::load(path))");
}

/// Loads a module's parameters and buffers from a file torch::save wrote (libtorch's or dl's).
template <class Impl>
void load(nn::ModuleHolder<Impl>& module, const std::string& path) {
  detail::load_module(*module.ptr(), path);
}
template <class M>
  requires std::is_base_of_v<dl::nn::Module, M>
void load(M& module, const std::string& path) {
  detail::load_module(module, path);
}
/// Loads a tensor saved by torch::save(tensor, path); its element type must be T.
template <class T>
void load(dl::Tensor<T>& tensor, const std::string& path) {
  const dl::StateDict sd = dl::load(path);
  if (!sd.contains("0")) throw dl::Error(str("torch::load('", path, "'): the file holds no tensor \"0\""));
  tensor = sd.get<T>("0");
}
template <class T>
void load(std::vector<dl::Tensor<T>>& tensors, const std::string& path) {
  const dl::StateDict sd = dl::load(path);
  tensors.clear();
  for (size_t i = 0; sd.contains(std::to_string(i)); ++i) tensors.push_back(sd.get<T>(std::to_string(i)));
}
template <class O>
  requires detail::is_optimizer<O>
void load(O&, const std::string&) {
  static_assert(!detail::is_optimizer<O>,
                "torch::load(optimizer, path) is not in dl/torch.hpp yet: optimizer.load_state_dict(dl::load(path)) "
                "restores what dl::save(optimizer.state_dict(), path) wrote");
}

}  // namespace torch
