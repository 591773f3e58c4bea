// dl/io/json.hpp — the JSON helpers of dl/io (nlohmann-json): a map of strings from a JSON object,
// and JSON type names with their article for error messages.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../config.hpp"
#include "../error.hpp"

namespace dl::io::detail {

// ------------------------------------------------------------------------------ declarations

/// "an array", "an object", "a number", "null": what a JSON value is, for messages.
std::string a_json(const nlohmann::ordered_json& j);

/// A JSON object of strings as a map; `what` starts every error message.
std::map<std::string, std::string> parse_string_map(std::string_view text, const std::string& what);

#if DL_HEADER_ONLY
// ------------------------------------------------------------------------------ implementation

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

#endif  // DL_HEADER_ONLY
}  // namespace dl::io::detail
