// dl/source_location.hpp — dl::SourceLocation: the caller's file, line and function, captured by a
// defaulted argument as std::source_location is. Written on the compilers' __builtin_FILE /
// __builtin_LINE / __builtin_FUNCTION because clang before 15 cannot compile libstdc++'s
// <source_location> (it lacks __builtin_source_location), and dl must build with Debian's clang 14.
#pragma once

#include <cstdint>

namespace dl {

/// Where a call was made. `SourceLocation loc = SourceLocation::current()` as a defaulted
/// parameter records the caller's location, with std::source_location's member names.
class SourceLocation {
 public:
  constexpr SourceLocation() = default;
  static constexpr SourceLocation current(const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
                                          std::uint_least32_t line = __builtin_LINE()) noexcept {
    SourceLocation loc;
    loc.file_ = file;
    loc.function_ = function;
    loc.line_ = line;
    return loc;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
};

}  // namespace dl
