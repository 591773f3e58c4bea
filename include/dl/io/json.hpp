// dl/io/json.hpp — the JSON helpers of dl/io: a map of strings from a JSON object. nlohmann-json is
// only seen by the bodies (json-inl.hpp, with a_json): in compiled mode a user's translation unit
// never parses it.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "../config.hpp"
#include "../error.hpp"

namespace dl::io::detail {

// ------------------------------------------------------------------------------ declarations

/// A JSON object of strings as a map; `what` starts every error message.
std::map<std::string, std::string> parse_string_map(std::string_view text, const std::string& what);

}  // namespace dl::io::detail

#if DL_HEADER_ONLY
#include "json-inl.hpp"
#endif
