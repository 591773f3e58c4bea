// dl/optim/optimizer-inl.hpp — the bodies of dl/optim/optimizer.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "optimizer.hpp"

namespace dl::optim {

DL_API void Optimizer::set_momentum(size_t, double) {
  throw Error(dl::detail::cat(name(), " has no momentum (or beta1) to set"));
}

DL_API std::optional<double> Optimizer::initial_lr(size_t group) const {
  return group < initial_lr_.size() ? initial_lr_[group] : std::nullopt;
}

DL_API void Optimizer::set_initial_lr(size_t group, double lr) {
  if (initial_lr_.size() <= group) initial_lr_.resize(group + 1);
  initial_lr_[group] = lr;
}
}  // namespace dl::optim

namespace dl::optim::detail {

DL_API void put_option(StateDict& sd, const std::string& key, double v) { sd.insert(key, scalar_tensor<double>(v)); }
DL_API void put_option(StateDict& sd, const std::string& key, bool v) { sd.insert(key, scalar_tensor<double>(v ? 1 : 0)); }
DL_API void put_option(StateDict& sd, const std::string& key, int64_t v) { sd.insert(key, scalar_tensor<int64_t>(v)); }
DL_API void put_option(StateDict& sd, const std::string& key, const Pair& v) { sd.insert(key, tensor<double>({v.first, v.second})); }
DL_API void put_option(StateDict& sd, const std::string& key, const std::string& v) { sd.metadata[key] = v; }
DL_API void put_option(StateDict& sd, const std::string& key, const std::optional<int64_t>& v) {
  if (v) sd.insert(key, scalar_tensor<int64_t>(*v));
}

DL_API Tensor<double> option_tensor(const StateDict& sd, const std::string& key, int64_t numel) {
  const AnyTensor& t = sd.at(key);
  DL_CHECK(t.numel() == numel, "optimizer state dict: ", key, " has ", t.numel(), " values, expected ", numel);
  return as_floating<double>(t, key);
}

DL_API void get_option(const StateDict& sd, const std::string& key, double& v) { v = option_tensor(sd, key, 1).data()[0]; }
DL_API void get_option(const StateDict& sd, const std::string& key, bool& v) { v = option_tensor(sd, key, 1).data()[0] != 0; }
DL_API void get_option(const StateDict& sd, const std::string& key, int64_t& v) { v = int64_t(option_tensor(sd, key, 1).data()[0]); }
DL_API void get_option(const StateDict& sd, const std::string& key, Pair& v) {
  const Tensor<double> t = option_tensor(sd, key, 2);
  v = {t.data()[0], t.data()[1]};
}
DL_API void get_option(const StateDict& sd, const std::string& key, std::string& v) {
  auto it = sd.metadata.find(key);
  DL_CHECK(it != sd.metadata.end(), "optimizer state dict: missing option ", key);
  v = it->second;
}
DL_API void get_option(const StateDict& sd, const std::string& key, std::optional<int64_t>& v) {
  if (sd.contains(key)) v = int64_t(option_tensor(sd, key, 1).data()[0]);
  else v = std::nullopt;
}

}  // namespace dl::optim::detail
