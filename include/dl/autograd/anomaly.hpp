// dl/autograd/anomaly.hpp — anomaly detection (PyTorch's torch.autograd.set_detect_anomaly): while
// it is on, every graph node remembers the source location of the user's call that created it, and
// the backward engine checks each node's output gradients for NaN and infinity, naming the node and
// that call site in the error.
//
//   dl::autograd::DetectAnomaly anomaly;      // or dl::autograd::set_detect_anomaly(true)
//   dl::Tensor<float> y = dl::log(x);         // <- this line is named if LogBackward yields nan
//   y.sum().backward();
//
// Where the site comes from: Tensor's constructor from an expression takes a defaulted
// dl::SourceLocation, so every elementwise op a user assigns to a Tensor records the user's
// line (calls dl makes to itself are recognised by their file and skipped). Nodes made by ops that
// take no site (matmul, conv2d, reductions, module calls) record the enclosing user site when one
// is active and otherwise say that no site was recorded.
#pragma once

#include <atomic>
#include "../source_location.hpp"
#include <string>
#include <string_view>

namespace dl::autograd {

namespace detail {
inline std::atomic<bool> g_anomaly_enabled{false};
inline std::atomic<bool> g_anomaly_check_nan{true};
}  // namespace detail

/// Whether anomaly detection is on (process-wide, as in PyTorch).
/// (-DDL_ANOMALY_HOOKS=0 compiles anomaly mode out, for bench/profiler.cpp's baseline.)
inline bool is_anomaly_enabled() {
#if defined(DL_ANOMALY_HOOKS) && DL_ANOMALY_HOOKS == 0
  return false;
#else
  return detail::g_anomaly_enabled.load(std::memory_order_relaxed);
#endif
}
/// Whether anomaly detection checks gradients for NaN and infinity (set_detect_anomaly's check_nan).
inline bool is_anomaly_check_nan_enabled() { return detail::g_anomaly_check_nan.load(std::memory_order_relaxed); }

/// Turns anomaly detection on or off for the whole process. With check_nan, backward raises as soon
/// as a node returns a gradient holding NaN or an infinity (PyTorch checks NaN only; an infinite
/// gradient is as sure a sign of the bug and the usual source of the NaN one step later). Slows
/// every op down a little while on: use it to debug, not to train.
inline void set_detect_anomaly(bool enabled, bool check_nan = true) {
  detail::g_anomaly_check_nan.store(check_nan, std::memory_order_relaxed);
  detail::g_anomaly_enabled.store(enabled, std::memory_order_relaxed);
}

/// Anomaly detection on for its scope (PyTorch's `with torch.autograd.detect_anomaly():`).
class DetectAnomaly {
 public:
  explicit DetectAnomaly(bool check_nan = true) : prev_(is_anomaly_enabled()), prev_nan_(is_anomaly_check_nan_enabled()) {
    set_detect_anomaly(true, check_nan);
  }
  ~DetectAnomaly() { set_detect_anomaly(prev_, prev_nan_); }
  DetectAnomaly(const DetectAnomaly&) = delete;
  DetectAnomaly& operator=(const DetectAnomaly&) = delete;

 private:
  bool prev_, prev_nan_;
};

namespace detail {

/// The innermost user call site of the public dl call running on this thread (recorded only in
/// anomaly mode); line() == 0 when none.
inline dl::SourceLocation& call_site_slot() {
  static thread_local dl::SourceLocation site;
  return site;
}

/// True for a location inside dl's own headers: calls dl makes to itself are not the user's.
/// dl's include directory is this file's, as the compiler spells it.
inline bool is_dl_internal(const dl::SourceLocation& loc) {
  static const std::string_view root = [] {
    std::string_view self = dl::SourceLocation::current().file_name();
    constexpr std::string_view tail = "autograd/anomaly.hpp";
    return self.ends_with(tail) ? self.substr(0, self.size() - tail.size()) : std::string_view{};
  }();
  return !root.empty() && std::string_view(loc.file_name()).starts_with(root);
}

/// Makes `loc` the current call site for its scope when anomaly mode is on and loc is user code
/// (dl's internal calls keep the user's site). Off: one relaxed load and a branch.
class CallSiteScope {
 public:
  explicit CallSiteScope(const dl::SourceLocation& loc) {
    if (is_anomaly_enabled()) [[unlikely]]
      enter(loc);
  }
  ~CallSiteScope() {
    if (set_) [[unlikely]]
      call_site_slot() = prev_;
  }
  CallSiteScope(const CallSiteScope&) = delete;
  CallSiteScope& operator=(const CallSiteScope&) = delete;

 private:
  [[gnu::noinline, gnu::cold]] void enter(const dl::SourceLocation& loc) {
    if (is_dl_internal(loc)) return;
    prev_ = call_site_slot();
    call_site_slot() = loc;
    set_ = true;
  }
  dl::SourceLocation prev_;
  bool set_ = false;
};

/// "file:line in 'function'", or a note that no site was recorded.
inline std::string describe_site(const dl::SourceLocation& loc) {
  if (loc.line() == 0) return "an unknown place (the op was not called through an entry point that records its caller)";
  return std::string(loc.file_name()) + ":" + std::to_string(loc.line()) + " in '" + loc.function_name() + "'";
}

}  // namespace detail

}  // namespace dl::autograd
