// dl/io/state_dict-inl.hpp — the bodies of dl/io/state_dict.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "state_dict.hpp"

namespace dl {

// ------------------------------------------------------------------------------ implementation

DL_API void StateDict::insert(const std::string& key, AnyTensor value) {
  auto [it, fresh] = index_.try_emplace(key, items_.size());
  if (fresh) items_.emplace_back(key, std::move(value));
  else items_[it->second].second = std::move(value);
}

DL_API const AnyTensor& StateDict::at(std::string_view key) const {
  auto it = index_.find(std::string(key));
  DL_CHECK(it != index_.end(), "state_dict has no key '", key, "'");
  return items_[it->second].second;
}

DL_API AnyTensor& StateDict::operator[](const std::string& key) {
  auto [it, fresh] = index_.try_emplace(key, items_.size());
  if (fresh) items_.emplace_back(key, AnyTensor());
  return items_[it->second].second;
}

DL_API bool StateDict::erase(std::string_view key) {
  auto it = index_.find(std::string(key));
  if (it == index_.end()) return false;
  items_.erase(items_.begin() + std::ptrdiff_t(it->second));
  index_.clear();
  for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  return true;
}

DL_API std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> k;
  k.reserve(items_.size());
  for (const auto& [name, t] : items_) k.push_back(name);
  return k;
}

DL_API void StateDict::update(const StateDict& other, const std::string& prefix) {
  for (const auto& [k, t] : other) insert(prefix + k, t);
  for (const auto& [k, v] : other.metadata) metadata[prefix + k] = v;
}

DL_API StateDict StateDict::sub(const std::string& prefix) const {
  StateDict out;
  for (const auto& [k, t] : items_)
    if (k.compare(0, prefix.size(), prefix) == 0) out.insert(k.substr(prefix.size()), t);
  for (const auto& [k, v] : metadata)
    if (k.compare(0, prefix.size(), prefix) == 0) out.metadata[k.substr(prefix.size())] = v;
  return out;
}

}  // namespace dl
