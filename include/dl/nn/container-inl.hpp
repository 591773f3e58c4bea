// dl/nn/container-inl.hpp — the bodies of dl/nn/container.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "container.hpp"

namespace dl::nn {

DL_API Module& AnyModule::get() const {
  DL_CHECK(module_, "AnyModule: empty (no module)");
  return *module_;
}

DL_API Tensor<float> AnyModule::forward(const Tensor<float>& x) const {
  DL_CHECK(forward_, get().type_name(), " cannot be called with one float tensor (its forward takes other arguments)");
  return forward_(*module_, x);
}

DL_API Sequential<>::Sequential(std::initializer_list<std::pair<std::string, AnyModule>> named) {
  for (const auto& [n, m] : named) add_module(n, m);
}

DL_API Sequential<>& Sequential<>::add_module(const std::string& name, AnyModule m) {
  DL_CHECK(m, "Sequential::add_module: module '", name, "' is empty");
  DL_CHECK(!name.empty() && name.find('.') == std::string::npos, "module name can't be empty or contain \".\", got: \"", name, "\"");
  for (auto& [n, existing] : items_)
    if (n == name) {  // PyTorch replaces a child registered again under the same name
      existing = std::move(m);
      return *this;
    }
  items_.emplace_back(name, std::move(m));
  return *this;
}

DL_API AnyModule& Sequential<>::operator[](size_t i) {
  DL_CHECK(i < items_.size(), "Sequential: index ", i, " is out of range (", items_.size(), " layers)");
  return items_[i].second;
}

DL_API Tensor<float> Sequential<>::forward(const Tensor<float>& x) {
  Tensor<float> y = x;
  for (size_t i = 0; i < items_.size(); ++i) {
    try {
      y = items_[i].second.forward(y);
    } catch (const Error& e) {
      throw Error(dl::detail::cat("Sequential layer ", items_[i].first, " (", items_[i].second.get().type_name(), "): ", e.what()));
    }
  }
  return y;
}

DL_API void Sequential<>::visit_declared_(detail::MemberVisitor& v) {
  for (auto& [n, m] : items_) v.child(n, m.get());
}

DL_API ModuleList& ModuleList::push_back(AnyModule m) {
  DL_CHECK(m, "ModuleList: cannot append an empty AnyModule");
  items_.push_back(std::move(m));
  return *this;
}

DL_API ModuleList& ModuleList::extend(const ModuleList& other) {
  for (const auto& m : other.items_) items_.push_back(m);
  return *this;
}

DL_API ModuleList& ModuleList::insert(size_t index, AnyModule m) {
  DL_CHECK(index <= items_.size(), "ModuleList::insert: index ", index, " is out of range (size ", items_.size(), ")");
  DL_CHECK(m, "ModuleList: cannot insert an empty AnyModule");
  items_.insert(items_.begin() + std::ptrdiff_t(index), std::move(m));
  return *this;
}

DL_API AnyModule& ModuleList::operator[](size_t i) {
  DL_CHECK(i < items_.size(), "index ", i, " is out of range (ModuleList of size ", items_.size(), ")");
  return items_[i];
}

DL_API void ModuleList::visit_declared_(detail::MemberVisitor& v) {
  for (size_t i = 0; i < items_.size(); ++i) v.child(std::to_string(i), items_[i].get());
}

DL_API ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, AnyModule>> items) {
  for (const auto& [k, m] : items) insert(k, m);
}

DL_API ModuleDict& ModuleDict::insert(const std::string& key, AnyModule m) {
  DL_CHECK(m, "ModuleDict: module '", key, "' is empty");
  DL_CHECK(!key.empty() && key.find('.') == std::string::npos, "module name can't be empty or contain \".\", got: \"", key, "\"");
  for (auto& [k, existing] : items_)
    if (k == key) {
      existing = std::move(m);
      return *this;
    }
  items_.emplace_back(key, std::move(m));
  return *this;
}

DL_API AnyModule& ModuleDict::operator[](const std::string& key) {
  for (auto& [k, m] : items_)
    if (k == key) return m;
  throw Error(dl::detail::cat("ModuleDict has no module named '", key, "'"));
}

DL_API bool ModuleDict::contains(const std::string& key) const {
  for (const auto& [k, m] : items_)
    if (k == key) return true;
  return false;
}

DL_API std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, m] : items_) out.push_back(k);
  return out;
}

DL_API void ModuleDict::visit_declared_(detail::MemberVisitor& v) {
  for (auto& [k, m] : items_) v.child(k, m.get());
}

DL_API ParameterList::ParameterList(std::initializer_list<Tensor<float>> ps) {
  for (const auto& p : ps) append(p);
}

DL_API ParameterList& ParameterList::append(Tensor<float> t) {
  DL_CHECK(t.defined(), "ParameterList: cannot append an undefined tensor");
  DL_CHECK(t.is_leaf(), "ParameterList: a parameter must be a leaf (use .detach())");
  t.requires_grad_(true);
  items_.push_back(std::move(t));
  return *this;
}

DL_API Tensor<float>& ParameterList::operator[](size_t i) {
  DL_CHECK(i < items_.size(), "index ", i, " is out of range (ParameterList of size ", items_.size(), ")");
  return items_[i];
}

DL_API std::string ParameterList::extra_repr() const {
  std::string s;
  for (size_t i = 0; i < items_.size(); ++i) {
    const Shape& sh = items_[i].shape();
    std::string size;
    for (int d = 0; d < sh.size(); ++d) size += (d ? "x" : "") + std::to_string(sh[d]);
    s += (i ? "\n" : "") + std::string("  (") + std::to_string(i) + "): Parameter containing: [torch.float32 of size " + size + "]";
  }
  return s;
}

DL_API void ParameterList::visit_declared_(detail::MemberVisitor& v) {
  for (size_t i = 0; i < items_.size(); ++i) v.parameter(std::to_string(i), detail::TensorSlot(items_[i]));
}

}  // namespace dl::nn
