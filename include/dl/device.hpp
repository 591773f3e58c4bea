// dl/device.hpp — dl::Device, a run-time value naming where a tensor lives (cpu, cuda:N).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "error.hpp"

namespace dl {

enum class DeviceType : uint8_t { CPU, CUDA };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

/// Where a tensor's storage lives. Chosen at run time, so "cuda if available, else cpu" is one
/// line: `dl::Device dev = dl::cuda::is_available() ? dl::Device{dl::kCUDA, 0} : dl::kCPU;`
struct Device {
  DeviceType type = kCPU;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(t == kCPU ? 0 : i) {}
  /// Parses "cpu", "cuda", "cuda:1".
  explicit Device(std::string_view s) {
    if (s == "cpu") return;
    DL_CHECK(s.substr(0, 4) == "cuda", "Expected one of cpu, cuda device type at start of device string: ", s);
    type = kCUDA;
    if (s.size() == 4) return;
    DL_CHECK(s[4] == ':' && s.size() > 5, "Invalid device string: '", s, "'");
    index = 0;
    for (char c : s.substr(5)) {
      DL_CHECK(c >= '0' && c <= '9', "Invalid device string: '", s, "'");
      index = index * 10 + (c - '0');
    }
  }

  constexpr bool is_cpu() const { return type == kCPU; }
  constexpr bool is_cuda() const { return type == kCUDA; }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
  friend constexpr bool operator==(Device, Device) = default;
};

inline std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

}  // namespace dl
