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

}  // namespace dl::io::detail

#if DL_HEADER_ONLY
#include "json-inl.hpp"
#endif
