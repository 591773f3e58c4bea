// dl/grad_mode.hpp — grad mode, the thread-local switch autograd records under: is_grad_enabled,
// set_grad_enabled, NoGradGuard and EnableGradGuard (namespace dl::autograd; dl::NoGradGuard too).
// A core header: expressions ask it whether a result will require grad.
#pragma once

namespace dl::autograd {

// ---------------------------------------------------------------------------------------------
// Grad mode
// ---------------------------------------------------------------------------------------------

namespace detail {
inline bool& grad_mode() {
  static thread_local bool enabled = true;
  return enabled;
}
}  // namespace detail

/// Whether ops record history on this thread.
inline bool is_grad_enabled() { return detail::grad_mode(); }
inline void set_grad_enabled(bool enabled) { detail::grad_mode() = enabled; }

/// Disables recording for its scope (PyTorch's `with torch.no_grad():`).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Enables recording for its scope, e.g. inside a NoGradGuard.
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace dl::autograd

namespace dl {
using autograd::EnableGradGuard;
using autograd::is_grad_enabled;
using autograd::NoGradGuard;
using autograd::set_grad_enabled;
}  // namespace dl
