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

}  // namespace dl

#if DL_HEADER_ONLY
#include "state_dict-inl.hpp"
#endif
