// tests/module_ref.hpp — helpers shared by the layer tests that compare modules with PyTorch
// (tests/rnn.cpp, tests/attention.cpp): loading a case's state dict from a refbin file, the
// message of a dl::Error, and a module's printout.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <dl/nn/module.hpp>

#include "refbin.hpp"

namespace testutil {

/// Loads "<name>/sd/<key>" into m; the module must have exactly PyTorch's keys.
inline void load(dl::nn::Module& m, const refbin::File& ref, const std::string& name) {
  std::vector<std::string> keys;
  for (const auto& [key, t] : m.state_dict()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == ref.keys_with_prefix(name + "/sd/"));
  dl::StateDict sd;
  for (const auto& key : keys) sd.insert(key, ref.tensor<float>(name + "/sd/" + key));
  m.load_state_dict(sd);
}

/// The message of the dl::Error that f throws ("(no error)" when it throws none).
template <class F>
std::string msg(F&& f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "(no error)";
}
inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline std::string printed(dl::nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

}  // namespace testutil
