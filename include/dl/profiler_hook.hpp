// dl/profiler_hook.hpp — what every op pays for the profiler: RecordScope, whose constructor is one
// atomic pointer load and a branch while no profiler is active. dl/profiler.hpp does the recording;
// this header only tests and forwards, so the tensor headers can include it for free.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "device.hpp"
#include "shape.hpp"

namespace dl::profiler::detail {

/// What an event is: an op (or kernel), a backward node, a record_function range, a module's
/// forward, an optimizer step. Chrome traces show it as the event's category.
enum class EventKind : uint8_t { op, backward, user, module, optimizer };

/// The recording side, implemented by dl/profiler.hpp. One instance lives for the whole process,
/// so a scope that began under a profiler may end after the profiler stopped.
class Recorder {
 public:
  virtual ~Recorder() = default;
  /// Opens an event on the calling thread; returns a token for end().
  virtual uint64_t begin(std::string_view name, EventKind kind) = 0;
  /// Adds an input's shape to the event `token` (when the profiler records shapes).
  virtual void input(uint64_t token, const Shape* shape, Device device) = 0;
  virtual void end(uint64_t token) = 0;
  /// bytes > 0: a block of that size was allocated at p; < 0: freed.
  virtual void memory(const void* p, int64_t bytes) = 0;
};

/// The active recorder, or null. Set with release order after the recorder is ready.
inline std::atomic<Recorder*> g_recorder{nullptr};
/// Memory events are recorded only when the active profiler asked for them (profile_memory).
inline std::atomic<Recorder*> g_memory_recorder{nullptr};

/// The recorder to report to, or null: the single load every op pays. (An acquire load is the
/// same plain `mov` as a relaxed one on x86 and AArch64's `ldar` costs next to nothing.)
/// Compiling with -DDL_PROFILER_HOOKS=0 removes the hooks altogether (bench/profiler.cpp measures
/// the difference); profiles then record nothing.
inline Recorder* active_recorder() {
#if defined(DL_PROFILER_HOOKS) && DL_PROFILER_HOOKS == 0
  return nullptr;
#else
  return g_recorder.load(std::memory_order_acquire);
#endif
}

/// Allocation hook of the CPU allocator (allocator.hpp).
inline void record_memory(const void* p, int64_t bytes) {
#if !defined(DL_PROFILER_HOOKS) || DL_PROFILER_HOOKS != 0
  if (Recorder* r = g_memory_recorder.load(std::memory_order_acquire)) [[unlikely]]
    r->memory(p, bytes);
#else
  (void)p, (void)bytes;
#endif
}

/// Records its lifetime as an event named `name` when a profiler is active; with inputs (tensors,
/// expressions, or Shapes), their shapes. Free otherwise: one load, one branch, no allocation.
///   const profiler::detail::RecordScope scope("aten::conv2d", input, weight, bias);
class RecordScope {
 public:
  template <class... Inputs>
  explicit RecordScope(std::string_view name, const Inputs&... inputs) {
    if (Recorder* r = active_recorder()) [[unlikely]]
      open(r, EventKind::op, name, inputs...);
  }
  /// `name` may be a callable returning the name, called only when recording (names that cost a
  /// string to build, such as a backward node's).
  template <class Name, class... Inputs>
  RecordScope(EventKind kind, const Name& name, const Inputs&... inputs) {
    if (Recorder* r = active_recorder()) [[unlikely]] {
      if constexpr (std::is_invocable_v<const Name&>) {
        const auto built = name();
        open(r, kind, std::string_view(built), inputs...);
      } else {
        open(r, kind, std::string_view(name), inputs...);
      }
    }
  }
  ~RecordScope() {
    if (rec_) [[unlikely]]
      rec_->end(token_);
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

  /// Whether this scope is being recorded.
  explicit operator bool() const { return rec_ != nullptr; }
  /// Adds an input's shape (a no-op when not recording).
  template <class X>
  void input(const X& x) const {
    if (rec_) add(x);
  }

 private:
  template <class... Inputs>
  [[gnu::noinline, gnu::cold]] void open(Recorder* r, EventKind kind, std::string_view name, const Inputs&... inputs) {
    rec_ = r;
    token_ = r->begin(name, kind);
    (add(inputs), ...);
  }
  template <class X>
  void add(const X& x) const {
    if constexpr (std::is_same_v<X, Shape>) {
      rec_->input(token_, &x, kCPU);
    } else if constexpr (requires { x.defined(); x.shape(); x.device(); }) {  // a tensor
      if (x.defined()) rec_->input(token_, &x.shape(), x.device());
      else rec_->input(token_, nullptr, kCPU);
    } else if constexpr (requires { shape_of(x); }) {  // an expression (found by ADL in dl::expr)
      const Shape s = shape_of(x);
      rec_->input(token_, &s, kCPU);
    } else if constexpr (requires { x.has_value(); *x; }) {  // std::optional<Tensor>
      if (x.has_value()) add(*x);
      else rec_->input(token_, nullptr, kCPU);
    } else if constexpr (requires { x->shape; x->storage->device(); }) {  // a TensorImplPtr
      if (x) rec_->input(token_, &x->shape, x->storage->device());
      else rec_->input(token_, nullptr, kCPU);
    } else if constexpr (requires { x.begin(); x.end(); }) {  // a list of inputs
      for (const auto& e : x) add(e);
    }
  }

  Recorder* rec_ = nullptr;
  uint64_t token_ = 0;
};

}  // namespace dl::profiler::detail
