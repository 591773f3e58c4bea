// dl/io/state_dict.hpp — dl::StateDict: named tensors of any dtype in insertion order (PyTorch's
// OrderedDict[str, Tensor]), what Module::state_dict and Optimizer::state_dict return and what
// dl::save / dl::load write and read.
//
//   dl::StateDict sd = net.state_dict();          // "conv1.weight", "bn1.running_mean", ...
//   for (const auto& [name, t] : sd) std::cout << name << " " << t.shape() << "\n";
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../any_tensor.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

class StateDict {
 public:
  using value_type = std::pair<std::string, AnyTensor>;
  using const_iterator = std::vector<value_type>::const_iterator;
  using iterator = std::vector<value_type>::iterator;

  StateDict() = default;
  StateDict(std::initializer_list<value_type> items) {
    for (const auto& [k, v] : items) insert(k, v);
  }

  /// Adds `key`, or replaces its tensor in place (the key keeps its position).
  void insert(const std::string& key, AnyTensor value);
  bool contains(std::string_view key) const { return index_.count(std::string(key)) > 0; }
  /// The tensor stored under key; throws dl::Error naming the key when there is none.
  const AnyTensor& at(std::string_view key) const;
  /// at(key) as a Tensor<T> (checked dtype).
  template <scalar_type T>
  Tensor<T> get(std::string_view key) const { return at(key).as<T>(); }
  /// The slot for key, added (undefined) when missing.
  AnyTensor& operator[](const std::string& key);
  /// Removes key; returns whether it was there.
  bool erase(std::string_view key);
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  /// Adds (or replaces) every entry of other, its keys and metadata keys prefixed: a checkpoint
  /// made of parts, `ckpt.update(net.state_dict(), "model.")`.
  void update(const StateDict& other, const std::string& prefix = "");
  /// The entries (and metadata) whose keys start with prefix, with the prefix removed:
  /// `net.load_state_dict(ckpt.sub("model."))`.
  StateDict sub(const std::string& prefix) const;
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }

  /// Free-form string metadata; dl::save writes it as the safetensors "__metadata__" object.
  std::map<std::string, std::string> metadata;

 private:
  std::vector<value_type> items_;
  std::unordered_map<std::string, size_t> index_;
};

#if DL_HEADER_ONLY
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

#endif  // DL_HEADER_ONLY
}  // namespace dl
