// dl/error.hpp — dl::Error, the one exception type users catch, and the DL_CHECK helper.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace dl {

/// Thrown for every run-time misuse (bad shape, bad index, bad hyper-parameter, corrupt file...).
/// The message names the values involved.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace dl

/// DL_CHECK(cond, parts...): throws dl::Error whose message is the concatenation of parts.
#define DL_CHECK(cond, ...)                                  \
  do {                                                       \
    if (!(cond)) [[unlikely]]                                \
      throw ::dl::Error(::dl::detail::cat(__VA_ARGS__));     \
  } while (0)
