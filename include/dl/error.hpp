// dl/error.hpp — dl::Error, the one exception type users catch, and the DL_CHECK helper.
#pragma once

#include <initializer_list>
#include <ios>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace dl {

/// Thrown for every run-time misuse (bad shape, bad index, bad hyper-parameter, corrupt file...).
/// The message names the values involved.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
/// One part of a message built by cat(): text, an I/O manipulator (std::hex), or a reference to a
/// value with the function that prints it (one such function per printed type, shared by every
/// message). cat() only gathers parts and one out-of-line function joins them, so a DL_CHECK
/// costs its call site a few stores, not an inlined std::ostringstream (in a training program
/// the ~300 messages' ostringstreams were 9% of the generated code).
class MessagePart {
 public:
  MessagePart(const char* s) : text_(s ? s : "(null)") {}  // NOLINT: implicit by design
  MessagePart(std::string_view s) : text_(s) {}             // NOLINT
  MessagePart(const std::string& s) : text_(s) {}           // NOLINT
  MessagePart(std::ios_base& (*m)(std::ios_base&)) : manip_(m) {}  // NOLINT
  template <class T>
    requires(!std::is_array_v<T> && !std::is_function_v<T>)
  MessagePart(const T& v) : value_(&v), write_(&write_value<T>) {}  // NOLINT

  void write(std::ostream& os) const {
    if (write_) write_(os, value_);
    else if (manip_) os << manip_;
    else os << text_;
  }

 private:
  template <class T>
  static void write_value(std::ostream& os, const void* p) {
    os << *static_cast<const T*>(p);
  }
  const void* value_ = nullptr;
  void (*write_)(std::ostream&, const void*) = nullptr;
  std::ios_base& (*manip_)(std::ios_base&) = nullptr;
  std::string_view text_;
};

/// Joins the parts as one std::ostringstream would print them in turn.
[[gnu::noinline, gnu::cold]] inline std::string join_message(std::initializer_list<MessagePart> parts) {
  std::ostringstream os;
  for (const MessagePart& p : parts) p.write(os);
  return os.str();
}

/// The concatenation of args as `(os << ... << args)` prints them (dl::Error messages, names).
template <class... Args>
std::string cat(const Args&... args) {
  return join_message({MessagePart(args)...});
}
}  // namespace detail

}  // namespace dl

/// DL_CHECK(cond, parts...): throws dl::Error whose message is the concatenation of parts.
#define DL_CHECK(cond, ...)                                  \
  do {                                                       \
    if (!(cond)) [[unlikely]]                                \
      throw ::dl::Error(::dl::detail::cat(__VA_ARGS__));     \
  } while (0)
