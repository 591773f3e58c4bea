// Shared by the libFuzzer harnesses: a scratch file in tmpfs for readers that take a path, and
// the rule every harness enforces: an input either loads or raises dl::Error; anything else
// (another exception, a crash, a sanitizer report, a hang) is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>

#include <dl/error.hpp>
#include <dl/io/state_dict.hpp>
#include <dl/tensor.hpp>

namespace fuzz {

/// A directory private to this process (tmpfs when available: the readers run on every input).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    auto d = base / ("dl_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::filesystem::path write_file(const std::string& name, std::string_view bytes) {
  const auto path = scratch_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

/// Runs a reader on one input: dl::Error is the expected way to reject bad input.
template <class F>
void expect_load_or_error(F&& f) {
  try {
    f();
  } catch (const dl::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reader threw %s instead of dl::Error: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

/// Loads a state dict with `read` and reads every element of every tensor (through a contiguous
/// double copy), so a storage shorter than its tensor's extent is an out-of-bounds read the
/// sanitizer reports.
template <class Read>
void load_and_touch(Read&& read) {
  expect_load_or_error([&] {
    const dl::StateDict sd = read();
    double sum = 0;
    for (const auto& [name, t] : sd) sum += dl::sum(t.to<double>()).item();
    (void)sum;
  });
}

inline std::string_view view(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

}  // namespace fuzz
