// dl/torch/serialize.hpp — libtorch's torch::save and torch::load (see dl/torch.hpp) for modules,
// tensors and lists of tensors, in libtorch's own archive format (dl/io/script_archive.hpp): files
// libtorch's torch::load reads, and dl reads the files libtorch's torch::save writes.
//
//   torch::save(net, "net.pt");       torch::load(net, "net.pt");       // parameters and buffers
//   torch::save(t, "t.pt");           torch::load(t, "t.pt");
//
//   torch::save(opt, "opt.pt");       torch::load(opt, "opt.pt");       // SGD, Adam, AdamW, Adagrad, RMSprop
//
// Loading copies into the module's existing parameters and buffers (shapes must match); every one
// of them must be in the file, and what else the file holds is ignored, as libtorch's.
#pragma once

#include <cmath>
#include <map>
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
template <class T>
inline constexpr bool libtorch_optimizer =
    std::is_base_of_v<dl::optim::SGD<float>, T> || std::is_base_of_v<dl::optim::Adam<float>, T> ||
    std::is_base_of_v<dl::optim::AdamW<float>, T> || std::is_base_of_v<dl::optim::Adagrad<float>, T> ||
    std::is_base_of_v<dl::optim::RMSprop<float>, T>;

/// What libtorch's archive of an optimizer holds: the options (f: float, b: bool, t: Tuple[float,
/// float]) and the per-parameter state (T: tensor, i: int), by libtorch's names (dl's are the same).
struct OptimizerLayout {
  std::vector<std::pair<std::string, char>> options, state;
};
inline const OptimizerLayout& optimizer_layout(const std::string& name) {
  static const std::map<std::string, OptimizerLayout> layouts = {
      {"SGD", {{{"lr", 'f'}, {"momentum", 'f'}, {"dampening", 'f'}, {"weight_decay", 'f'}, {"nesterov", 'b'}}, {{"momentum_buffer", 'T'}}}},
      {"Adam",
       {{{"lr", 'f'}, {"betas", 't'}, {"eps", 'f'}, {"weight_decay", 'f'}, {"amsgrad", 'b'}},
        {{"step", 'i'}, {"exp_avg", 'T'}, {"exp_avg_sq", 'T'}, {"max_exp_avg_sq", 'T'}}}},
      {"AdamW",
       {{{"lr", 'f'}, {"betas", 't'}, {"eps", 'f'}, {"weight_decay", 'f'}, {"amsgrad", 'b'}},
        {{"step", 'i'}, {"exp_avg", 'T'}, {"exp_avg_sq", 'T'}, {"max_exp_avg_sq", 'T'}}}},
      {"Adagrad",
       {{{"lr", 'f'}, {"lr_decay", 'f'}, {"weight_decay", 'f'}, {"initial_accumulator_value", 'f'}, {"eps", 'f'}},
        {{"step", 'i'}, {"sum", 'T'}}}},
      {"RMSprop",
       {{{"lr", 'f'}, {"alpha", 'f'}, {"eps", 'f'}, {"weight_decay", 'f'}, {"momentum", 'f'}, {"centered", 'b'}},
        {{"step", 'i'}, {"square_avg", 'T'}, {"momentum_buffer", 'T'}, {"grad_avg", 'T'}}}},
  };
  const auto it = layouts.find(name);
  if (it == layouts.end()) throw dl::Error(str("torch::save / torch::load: libtorch has no archive for the ", name, " optimizer"));
  return it->second;
}

inline double option_value(const dl::StateDict& sd, const std::string& key, int64_t element = 0) {
  return sd.at(key).to<double>().contiguous().data()[element];
}

/// libtorch's archive of an optimizer from dl's state dict of it ("state.<i>.<name>",
/// "param_groups.<g>.<option>"): parameters are named "param_<i>" (libtorch names them by address).
inline dl::io::ArchiveModule optimizer_archive(const dl::StateDict& sd, const std::string& name) {
  const OptimizerLayout& layout = optimizer_layout(name);
  dl::io::ArchiveModule root, state, groups;
  root.attributes.emplace_back("pytorch_version", std::string("1.5.0"));
  int64_t n_groups = 0;
  while (sd.contains("param_groups." + std::to_string(n_groups) + ".params")) ++n_groups;
  groups.parameters.emplace_back("param_groups/size", dl::scalar_tensor<int64_t>(n_groups));
  for (int64_t g = 0; g < n_groups; ++g) {
    const std::string gp = "param_groups." + std::to_string(g) + ".";
    const dl::Tensor<int64_t> ids = sd.get<int64_t>(gp + "params").contiguous();
    dl::io::ArchiveModule group, options;
    group.parameters.emplace_back("params/size", dl::scalar_tensor<int64_t>(ids.numel()));
    for (int64_t i = 0; i < ids.numel(); ++i) {
      const std::string id = std::to_string(ids.data()[i]), key = "param_" + id, sp = "state." + id + ".";
      group.attributes.emplace_back("params/" + std::to_string(i), key);
      dl::io::ArchiveModule st;
      for (const auto& [field, kind] : layout.state) {
        if (!sd.contains(sp + field)) continue;
        if (kind == 'T') st.tensors.emplace_back(field, sd.at(sp + field));
        else st.attributes.emplace_back(field, int64_t(std::llround(option_value(sd, sp + field))));
      }
      if (!st.tensors.empty() || !st.attributes.empty()) state.children.emplace_back(key, std::move(st));
    }
    for (const auto& [field, kind] : layout.options) {
      const std::string k = gp + field;
      if (kind == 'f') options.attributes.emplace_back(field, option_value(sd, k));
      else if (kind == 'b') options.attributes.emplace_back(field, option_value(sd, k) != 0);
      else options.attributes.emplace_back(field, std::pair<double, double>(option_value(sd, k, 0), option_value(sd, k, 1)));
    }
    group.children.emplace_back("options", std::move(options));
    groups.children.emplace_back("param_groups/" + std::to_string(g), std::move(group));
  }
  root.children.emplace_back("state", std::move(state));
  root.children.emplace_back("param_groups", std::move(groups));
  return root;
}

/// dl's state dict of an optimizer from libtorch's archive of it, as dl::load reads the archive
/// (nested names joined with '.', numbers and strings in the metadata): the file's state with the
/// options of `current`, the optimizer's own state dict.
inline dl::StateDict optimizer_state_dict(const dl::StateDict& file, const dl::StateDict& current, const std::string& name,
                                          const std::string& path) {
  const OptimizerLayout& layout = optimizer_layout(name);
  auto meta = [&](const std::string& key) -> const std::string& {
    const auto it = file.metadata.find(key);
    if (it == file.metadata.end()) throw dl::Error(str("torch::load('", path, "'): not an optimizer archive (no ", key, ")"));
    return it->second;
  };
  auto number = [&](const std::string& key) { return std::stod(meta(key)); };
  if (!file.contains("param_groups.param_groups/size"))
    throw dl::Error(str("torch::load('", path, "'): not an optimizer archive (no param_groups/size)"));
  const int64_t n_groups = file.at("param_groups.param_groups/size").to<int64_t>().item();
  int64_t current_groups = 0;
  while (current.contains("param_groups." + std::to_string(current_groups) + ".params")) ++current_groups;
  if (n_groups != current_groups)
    throw dl::Error(str("torch::load('", path, "'): loaded state dict has a different number of parameter groups (", n_groups,
                        ") than the optimizer (", current_groups, ")"));
  dl::StateDict out;
  out.metadata["optimizer"] = name;
  for (const auto& [k, v] : current)
    if (k.rfind("param_groups.", 0) == 0) out.insert(k, v);
  int64_t index = 0;
  for (int64_t g = 0; g < n_groups; ++g) {
    const std::string fp = "param_groups.param_groups/" + std::to_string(g) + ".", gp = "param_groups." + std::to_string(g) + ".";
    const int64_t n = file.at(fp + "params/size").to<int64_t>().item();
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < n; ++i) {
      const std::string sp = "state." + meta(fp + "params/" + std::to_string(i)) + ".";
      for (const auto& [field, kind] : layout.state) {
        const std::string to = "state." + std::to_string(index) + "." + field;
        if (kind == 'T' && file.contains(sp + field)) out.insert(to, file.at(sp + field));
        if (kind == 'i' && file.metadata.count(sp + field)) out.insert(to, dl::scalar_tensor<double>(number(sp + field)));
      }
      ids.push_back(index++);
    }
    out.insert(gp + "params", dl::tensor<int64_t>(ids));
    // The group's options stay the optimizer's: libtorch's torch::load restores the state only
    // (Python's load_state_dict restores both; dl's load_state_dict does too).
  }
  return out;
}

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
/// Saves an optimizer's options and state as libtorch's torch::save does (SGD, Adam, AdamW, Adagrad,
/// RMSprop: the optimizers libtorch has); libtorch's torch::load(optimizer, path) reads the file.
template <class O>
  requires detail::is_optimizer<O>
void save(const O& optimizer, const std::string& path) {
  static_assert(detail::libtorch_optimizer<O>,
                "torch::save(optimizer, path) writes libtorch's archives of SGD, Adam, AdamW, Adagrad and RMSprop only: "
                "save dl's state dict with dl::save(optimizer.state_dict(), \"opt.pth\")");
  dl::io::save_archive(detail::optimizer_archive(optimizer.state_dict(), optimizer.name()), path);
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
/// Loads an optimizer's per-parameter state (momentum buffers, moments, step counts) from a file
/// torch::save wrote (libtorch's or dl's); the file's parameter groups must have the optimizer's
/// sizes. As libtorch's, the options (lr, ...) stay those the optimizer was built with.
template <class O>
  requires detail::is_optimizer<O>
void load(O& optimizer, const std::string& path) {
  static_assert(detail::libtorch_optimizer<O>,
                "torch::load(optimizer, path) reads libtorch's archives of SGD, Adam, AdamW, Adagrad and RMSprop only: "
                "optimizer.load_state_dict(dl::load(path)) restores what dl::save(optimizer.state_dict(), path) wrote");
  optimizer.load_state_dict(detail::optimizer_state_dict(dl::load(path), optimizer.state_dict(), optimizer.name(), path));
}

}  // namespace torch
