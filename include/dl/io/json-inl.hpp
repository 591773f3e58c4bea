// dl/io/json-inl.hpp — the bodies of dl/io/json.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include "json.hpp"

namespace dl::io::detail {

// ------------------------------------------------------------------------------ implementation

/// "an array", "an object", "a number", "null": what a JSON value is, for messages.
DL_API std::string a_json(const nlohmann::ordered_json& j) {
  const std::string t = j.type_name();
  if (j.is_null()) return t;
  return (j.is_array() || j.is_object() ? "an " : "a ") + t;
}

DL_API std::map<std::string, std::string> parse_string_map(std::string_view text, const std::string& what) {
  using json = nlohmann::ordered_json;
  json j;
  try {
    j = json::parse(text, [&](int depth, json::parse_event_t, json&) {
      DL_CHECK(depth <= 2, what, ": nested more deeply than a map of strings");
      return true;
    });
  } catch (const json::exception& e) {
    throw Error(::dl::detail::cat(what, ": malformed JSON (", e.what(), ")"));
  }
  DL_CHECK(j.is_object(), what, ": expected a JSON object of strings, got ", a_json(j));
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) {
    DL_CHECK(v.is_string(), what, ": value of '", k, "' is ", a_json(v), ", not a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace dl::io::detail
