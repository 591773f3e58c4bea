// dl/profiler.hpp — dl::profiler (PyTorch's torch.profiler): records every op, kernel, backward
// node, module call, optimizer step and record_function range with its input shapes, CPU times
// (self and total) and memory; prints PyTorch's key_averages() table and writes Chrome traces.
//
//   dl::profiler::profile prof({.record_shapes = true, .profile_memory = true});
//   {
//     dl::profiler::record_function range("model_inference");
//     dl::Tensor<float> y = model(x);
//   }
//   prof.stop();
//   std::cout << prof.key_averages().table("cpu_time_total", 10);
//   prof.export_chrome_trace("trace.json");   // chrome://tracing or https://ui.perfetto.dev
//
// Event names: PyTorch's where dl has the op ("aten::mm", "aten::conv2d", "aten::add",
// "nn.Module: Linear", "Optimizer.step#SGD.step"), so tables read alike; dl's own for what PyTorch
// does not have: fused elementwise passes "dl::fused[Mul(Add(x0, x1), x2)]", the GEMM kernel
// "dl::gemm", and backward nodes under their grad_fn names ("MulBackward", "AccumulateGrad").
// While no profiler runs, an op pays one atomic load and a branch (dl/profiler_hook.hpp).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "allocator.hpp"
#include "error.hpp"
#include "profiler_hook.hpp"

namespace dl::profiler {

// ---------------------------------------------------------------------------------------------
// Interface
// ---------------------------------------------------------------------------------------------

using detail::EventKind;

/// What a profile records beyond names and times (torch.profiler.profile's arguments).
struct ProfileOptions {
  bool record_shapes = false;   ///< input shapes of each op
  bool profile_memory = false;  ///< bytes allocated and freed inside each op
};

/// One recorded range (PyTorch's FunctionEvent). Times are nanoseconds since the profile started.
struct Event {
  std::string name;
  EventKind kind = EventKind::op;
  int thread = 0;                 ///< 0 for the first thread seen, 1 for the next...
  int64_t start_ns = 0, end_ns = 0;
  int64_t self_ns = 0;            ///< duration minus that of the events nested inside it
  std::vector<Shape> input_shapes;  ///< with record_shapes; [] for an undefined tensor
  Device device = kCPU;           ///< of the first tensor input (CPU when none)
  int64_t cpu_memory = 0;         ///< bytes allocated minus freed inside, nested events included
  int64_t self_cpu_memory = 0;    ///< the same without nested events
  int parent = -1;                ///< index in events() of the enclosing event on the same thread
  int64_t duration_ns() const { return end_ns - start_ns; }
};

/// One allocation (bytes > 0) or free (bytes < 0) seen with profile_memory.
struct MemoryRecord {
  int64_t ts_ns = 0;
  int thread = 0;
  const void* addr = nullptr;
  int64_t bytes = 0;
  int64_t total_allocated = 0;  ///< the allocator's allocated bytes after this event
};

/// Statistics of the events sharing a name (and, when grouped so, input shapes).
struct EventAverage {
  std::string name;
  std::vector<Shape> input_shapes;  ///< when grouped by input shape
  int64_t count = 0;
  int64_t cpu_time_total_ns = 0, self_cpu_time_total_ns = 0;
  int64_t cpu_memory_usage = 0, self_cpu_memory_usage = 0;
  int64_t cpu_time_avg_ns() const { return count ? cpu_time_total_ns / count : 0; }
};

/// What key_averages() returns: one EventAverage per name, printable as PyTorch's table.
class EventAverages : public std::vector<EventAverage> {
 public:
  /// PyTorch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, then
  /// CPU Mem and Self CPU Mem (with profile_memory), # of Calls, and Input Shapes (when grouped by
  /// input shape); a "Self CPU time total" footer. sort_by (descending): "cpu_time_total",
  /// "self_cpu_time_total", "cpu_time" (the average), "cpu_memory_usage", "self_cpu_memory_usage",
  /// "count"; empty keeps the order of first appearance. Percentages are of the summed self times.
  std::string table(std::string_view sort_by = {}, int row_limit = 100, int max_name_column_width = 55) const;

  bool profile_memory = false;
  bool grouped_by_input_shape = false;
  int64_t self_cpu_time_total_ns = 0;  ///< over every event, the denominator of the percentages
};

/// Records while alive (or between start() and stop()); the results stay readable after stop.
/// One profiler runs at a time in a process.
class profile {
 public:
  struct deferred_t {};
  /// Tag to construct without starting: `profile prof(options, profile::deferred);`.
  static constexpr deferred_t deferred{};

  /// Starts recording.
  explicit profile(ProfileOptions options = {}) : options_(options) { start(); }
  profile(ProfileOptions options, deferred_t) : options_(options) {}
  ~profile() {
    if (running_) stop();
  }
  profile(const profile&) = delete;
  profile& operator=(const profile&) = delete;

  /// Starts (or resumes) recording; events add to those already recorded.
  void start();
  /// Stops recording; ranges still open are closed at this time.
  void stop();
  bool running() const { return running_; }

  /// The recorded events, ordered by thread then start time. Stops the profiler if it runs.
  const std::vector<Event>& events();
  /// Allocations and frees seen (profile_memory). Stops the profiler if it runs.
  const std::vector<MemoryRecord>& memory_records();
  /// Statistics per event name (PyTorch's prof.key_averages()); with group_by_input_shape, per name
  /// and input shapes (needs record_shapes). Stops the profiler if it runs.
  EventAverages key_averages(bool group_by_input_shape = false);
  /// Writes the events as a Chrome trace ("X" complete events, µs timestamps; memory as "i"
  /// instant events), for chrome://tracing and Perfetto. Stops the profiler if it runs.
  void export_chrome_trace(const std::string& path);

 private:
  ProfileOptions options_;
  bool running_ = false;
  std::vector<Event> events_;
  std::vector<MemoryRecord> memory_;
};

/// A user-named range (torch.profiler.record_function): recorded as one event for its lifetime.
///   { dl::profiler::record_function r("data_loading"); batch = next(it); }
class record_function {
 public:
  explicit record_function(std::string_view name) : scope_(EventKind::user, name) {}
  record_function(const record_function&) = delete;
  record_function& operator=(const record_function&) = delete;

 private:
  detail::RecordScope scope_;
};

// ---------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------

namespace detail {

/// Events of one thread in one recording session. The owning thread appends; stop() collects.
struct ThreadBuffer {
  std::mutex mutex;
  int thread = 0;
  bool closed = false;  // collected by stop(): later ends and events are dropped
  std::vector<Event> events;
  std::vector<int> open;  // indices of open events, innermost last
  std::vector<MemoryRecord> memory;
};

/// The process's one recorder. Its sessions are numbered; a thread registers a buffer with the
/// current session the first time it records in it.
class Session final : public Recorder {
 public:
  static Session& instance() {
    static Session* s = new Session;  // never destroyed: scopes may end during static destruction
    return *s;
  }

  void start(const ProfileOptions& options) {
    std::lock_guard lock(mutex_);
    DL_CHECK(g_recorder.load() == nullptr, "Profiler is already enabled: only one dl::profiler::profile records at a time");
    options_ = options;
    record_shapes_ = options.record_shapes;
    ++generation_;
    if (origin_ns_ == 0) origin_ns_ = now_raw();
    g_recorder.store(this, std::memory_order_release);
    if (options.profile_memory) g_memory_recorder.store(this, std::memory_order_release);
  }

  /// Stops recording and moves the events out (appending to events / memory).
  void stop(std::vector<Event>& events, std::vector<MemoryRecord>& memory) {
    g_memory_recorder.store(nullptr, std::memory_order_release);
    g_recorder.store(nullptr, std::memory_order_release);
    std::lock_guard lock(mutex_);
    const int64_t t = now();
    for (auto& b : buffers_) {
      std::lock_guard block(b->mutex);
      b->closed = true;
      for (int i : b->open) b->events[i].end_ns = t;
      const int offset = int(events.size());
      for (Event& e : b->events) {
        if (e.parent >= 0) e.parent += offset;
        events.push_back(std::move(e));
      }
      for (auto& m : b->memory) memory.push_back(m);
      b->events.clear();
      b->memory.clear();
      // Kept (closed and empty): a scope begun before stop() may still end and find its buffer.
      retired_.push_back(std::move(b));
    }
    buffers_.clear();
  }

  int64_t now() const { return now_raw() - origin_ns_; }

  uint64_t begin(std::string_view name, EventKind kind) override {
    ThreadBuffer* b = local();
    if (!b) return 0;
    std::lock_guard lock(b->mutex);
    if (b->closed) return 0;
    Event e;
    e.name = std::string(name);
    e.kind = kind;
    e.thread = b->thread;
    e.parent = b->open.empty() ? -1 : b->open.back();
    const int index = int(b->events.size());
    b->events.push_back(std::move(e));
    b->open.push_back(index);
    b->events.back().start_ns = now();  // last, so that the bookkeeping is not timed
    return (uint64_t(local_generation()) << 32) | uint64_t(index + 1);
  }

  void input(uint64_t token, const Shape* shape, Device device) override {
    ThreadBuffer* b = owner(token);
    if (!b) return;
    std::lock_guard lock(b->mutex);
    if (b->closed) return;
    Event& e = b->events[size_t(token & 0xffffffffu) - 1];
    if (shape && e.input_shapes.empty() && device != kCPU) e.device = device;
    if (record_shapes_) e.input_shapes.push_back(shape ? *shape : Shape{});
  }

  void end(uint64_t token) override {
    const int64_t t = now();
    ThreadBuffer* b = owner(token);
    if (!b) return;
    std::lock_guard lock(b->mutex);
    if (b->closed) return;
    const int index = int(token & 0xffffffffu) - 1;
    b->events[size_t(index)].end_ns = t;
    // Scopes end innermost first; an event closed out of order closes those opened inside it.
    while (!b->open.empty()) {
      const int top = b->open.back();
      b->open.pop_back();
      if (top == index) break;
      b->events[size_t(top)].end_ns = t;
    }
  }

  void memory(const void* p, int64_t bytes) override {
    ThreadBuffer* b = local();
    if (!b) return;
    const int64_t t = now();
    const int64_t total = dl::detail::CpuAllocator::instance().stats().allocated_bytes;
    std::lock_guard lock(b->mutex);
    if (b->closed) return;
    if (!b->open.empty()) b->events[size_t(b->open.back())].self_cpu_memory += bytes;
    b->memory.push_back({t, b->thread, p, bytes, total});
  }

 private:
  Session() = default;

  static int64_t now_raw() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  // Per thread: the buffer registered with session `generation` (raw pointers, trivially
  // destructible, so a late event during thread exit is safe; the session owns the buffers).
  static uint32_t& local_generation() {
    static thread_local uint32_t g = 0;
    return g;
  }
  static ThreadBuffer*& local_buffer() {
    static thread_local ThreadBuffer* b = nullptr;
    return b;
  }
  static int& thread_number() {
    static thread_local int n = -1;
    return n;
  }

  ThreadBuffer* local() {
    if (local_generation() == generation_.load(std::memory_order_acquire) && local_buffer()) return local_buffer();
    std::lock_guard lock(mutex_);
    if (g_recorder.load(std::memory_order_relaxed) != this) return nullptr;  // stopped meanwhile
    if (thread_number() < 0) thread_number() = next_thread_++;
    auto b = std::make_shared<ThreadBuffer>();
    b->thread = thread_number();
    buffers_.push_back(b);
    local_buffer() = b.get();
    local_generation() = generation_.load(std::memory_order_relaxed);
    return b.get();
  }
  /// The calling thread's buffer when `token` came from it in the current session.
  ThreadBuffer* owner(uint64_t token) const {
    if (token == 0 || uint32_t(token >> 32) != local_generation() || local_generation() != generation_.load(std::memory_order_acquire))
      return nullptr;
    return local_buffer();
  }

  std::mutex mutex_;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers_, retired_;
  ProfileOptions options_;
  std::atomic<uint32_t> generation_{0};
  int64_t origin_ns_ = 0;
  int next_thread_ = 0;
  bool record_shapes_ = false;
};

inline std::string format_time(int64_t ns) {
  const double us = double(ns) / 1e3;
  char buf[64];
  if (us >= 1e6) std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3) std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

inline std::string format_percent(int64_t part, int64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", whole > 0 ? double(part) * 100.0 / double(whole) : 0.0);
  return buf;
}

/// PyTorch's _format_memory: "0 b", "512 b", "3.75 Kb", "-1.50 Mb", "2.00 Gb".
inline std::string format_memory(int64_t bytes) {
  constexpr double KB = 1024, MB = KB * 1024, GB = MB * 1024;
  const double b = double(bytes), a = b < 0 ? -b : b;
  char buf[32];
  if (a >= GB) std::snprintf(buf, sizeof buf, "%.2f Gb", b / GB);
  else if (a >= MB) std::snprintf(buf, sizeof buf, "%.2f Mb", b / MB);
  else if (a >= KB) std::snprintf(buf, sizeof buf, "%.2f Kb", b / KB);
  else std::snprintf(buf, sizeof buf, "%lld b", static_cast<long long>(bytes));
  return buf;
}

/// "[[2, 3], [3, 4]]", as PyTorch prints input shapes.
inline std::string format_shapes(const std::vector<Shape>& shapes) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i) os << ", ";
    os << '[';
    for (int d = 0; d < shapes[i].size(); ++d) os << (d ? ", " : "") << shapes[i][d];
    os << ']';
  }
  os << ']';
  return os.str();
}

inline void json_string(std::ostream& os, std::string_view s) {
  os << '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') os << '\\' << c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      os << buf;
    } else {
      os << c;
    }
  }
  os << '"';
}

inline const char* category(EventKind k) {
  switch (k) {
    case EventKind::op: return "cpu_op";
    case EventKind::backward: return "autograd";
    case EventKind::user: return "user_annotation";
    case EventKind::module: return "python_function";
    case EventKind::optimizer: return "user_annotation";
  }
  return "cpu_op";
}

/// Microseconds with nanosecond digits, for trace timestamps.
inline std::string trace_us(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

}  // namespace detail

inline void profile::start() {
  DL_CHECK(!running_, "Profiler is already enabled: start() was called twice without stop()");
  detail::Session::instance().start(options_);
  running_ = true;
}

inline void profile::stop() {
  DL_CHECK(running_, "Can't disable the profiler when it's not running");
  const size_t first = events_.size();
  detail::Session::instance().stop(events_, memory_);
  running_ = false;
  // Self times and memory with nested events: children come after their parent, so one pass
  // from the back adds each event's totals to its parent's.
  for (size_t i = first; i < events_.size(); ++i) {
    events_[i].self_ns = events_[i].duration_ns();
    events_[i].cpu_memory = events_[i].self_cpu_memory;
  }
  for (size_t i = events_.size(); i-- > first;) {
    const Event& e = events_[i];
    if (e.parent < 0) continue;
    Event& p = events_[size_t(e.parent)];
    p.self_ns -= e.duration_ns();
    p.cpu_memory += e.cpu_memory;
  }
}

inline const std::vector<Event>& profile::events() {
  if (running_) stop();
  return events_;
}

inline const std::vector<MemoryRecord>& profile::memory_records() {
  if (running_) stop();
  return memory_;
}

inline EventAverages profile::key_averages(bool group_by_input_shape) {
  if (running_) stop();
  DL_CHECK(!group_by_input_shape || options_.record_shapes,
           "key_averages(group_by_input_shape=true) needs a profile with record_shapes = true");
  EventAverages out;
  out.profile_memory = options_.profile_memory;
  out.grouped_by_input_shape = group_by_input_shape;
  std::map<std::string, size_t> index;
  for (const Event& e : events_) {
    std::string key = e.name;
    if (group_by_input_shape) key += '\0' + detail::format_shapes(e.input_shapes);
    auto [it, fresh] = index.emplace(key, out.size());
    if (fresh) {
      EventAverage a;
      a.name = e.name;
      if (group_by_input_shape) a.input_shapes = e.input_shapes;
      out.push_back(std::move(a));
    }
    EventAverage& a = out[it->second];
    ++a.count;
    a.cpu_time_total_ns += e.duration_ns();
    a.self_cpu_time_total_ns += e.self_ns;
    a.cpu_memory_usage += e.cpu_memory;
    a.self_cpu_memory_usage += e.self_cpu_memory;
    out.self_cpu_time_total_ns += e.self_ns;
  }
  return out;
}

inline std::string EventAverages::table(std::string_view sort_by, int row_limit, int max_name_column_width) const {
  std::vector<const EventAverage*> rows;
  for (const EventAverage& a : *this) rows.push_back(&a);
  if (!sort_by.empty()) {
    int64_t (*key)(const EventAverage&) = nullptr;
    if (sort_by == "cpu_time_total") key = [](const EventAverage& a) { return a.cpu_time_total_ns; };
    else if (sort_by == "self_cpu_time_total") key = [](const EventAverage& a) { return a.self_cpu_time_total_ns; };
    else if (sort_by == "cpu_time") key = [](const EventAverage& a) { return a.cpu_time_avg_ns(); };
    else if (sort_by == "cpu_memory_usage") key = [](const EventAverage& a) { return a.cpu_memory_usage; };
    else if (sort_by == "self_cpu_memory_usage") key = [](const EventAverage& a) { return a.self_cpu_memory_usage; };
    else if (sort_by == "count") key = [](const EventAverage& a) { return a.count; };
    DL_CHECK(key, "table: unknown sort_by '", sort_by,
             "' (expected cpu_time_total, self_cpu_time_total, cpu_time, cpu_memory_usage, self_cpu_memory_usage or count)");
    std::stable_sort(rows.begin(), rows.end(), [key](const EventAverage* a, const EventAverage* b) { return key(*a) > key(*b); });
  }
  if (row_limit >= 0 && rows.size() > size_t(row_limit)) rows.resize(size_t(row_limit));

  // PyTorch's layout: right-aligned columns two spaces apart; the name column as wide as the
  // longest name + 4, at most max_name_column_width (longer names end in "...").
  constexpr int kColumn = 12, kSpacing = 2;
  int name_width = 0;
  for (const EventAverage& a : *this) name_width = std::max(name_width, int(a.name.size()) + 4);
  name_width = std::min(name_width, max_name_column_width);
  int shapes_width = 0;
  if (grouped_by_input_shape) {
    for (const EventAverage& a : *this) shapes_width = std::max(shapes_width, int(detail::format_shapes(a.input_shapes).size()) + 4);
    shapes_width = std::min(shapes_width, 80);
  }
  std::vector<std::string> headers = {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
  if (profile_memory) {
    headers.push_back("CPU Mem");
    headers.push_back("Self CPU Mem");
  }
  headers.push_back("# of Calls");
  if (grouped_by_input_shape) headers.push_back("Input Shapes");
  auto width = [&](size_t column) {
    if (column == 0) return name_width;
    if (grouped_by_input_shape && column == headers.size() - 1) return shapes_width;
    return kColumn;
  };
  std::string sep, out;
  for (size_t c = 0; c < headers.size(); ++c) sep += std::string(size_t(width(c)), '-') + std::string(kSpacing, ' ');
  sep += '\n';
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      const int w = width(c);
      std::string cell = cells[c];
      if (int(cell.size()) < w) cell = std::string(size_t(w) - cell.size(), ' ') + cell;
      out += cell + std::string(kSpacing, ' ');
    }
    out += '\n';
  };
  out += sep;
  line(headers);
  out += sep;
  for (const EventAverage* a : rows) {
    std::string name = a->name;
    if (int(name.size()) >= name_width - 3) name = name.substr(0, size_t(std::max(0, name_width - 3))) + "...";
    std::vector<std::string> cells = {name,
                                      detail::format_percent(a->self_cpu_time_total_ns, self_cpu_time_total_ns),
                                      detail::format_time(a->self_cpu_time_total_ns),
                                      detail::format_percent(a->cpu_time_total_ns, self_cpu_time_total_ns),
                                      detail::format_time(a->cpu_time_total_ns),
                                      detail::format_time(a->cpu_time_avg_ns())};
    if (profile_memory) {
      cells.push_back(detail::format_memory(a->cpu_memory_usage));
      cells.push_back(detail::format_memory(a->self_cpu_memory_usage));
    }
    cells.push_back(std::to_string(a->count));
    if (grouped_by_input_shape) {
      std::string s = detail::format_shapes(a->input_shapes);
      if (int(s.size()) >= shapes_width - 3) s = s.substr(0, size_t(std::max(0, shapes_width - 3))) + "...";
      cells.push_back(s);
    }
    line(cells);
  }
  out += sep;
  out += "Self CPU time total: " + detail::format_time(self_cpu_time_total_ns) + "\n";
  return out;
}

inline void profile::export_chrome_trace(const std::string& path) {
  if (running_) stop();
  std::ofstream f(path);
  DL_CHECK(f, "export_chrome_trace: cannot open '", path, "' for writing");
  const long pid = long(getpid());
  f << "{\n  \"schemaVersion\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"traceEvents\": [";
  bool first = true;
  auto next = [&] {
    f << (first ? "\n    " : ",\n    ");
    first = false;
  };
  int threads = 0;
  for (const Event& e : events_) threads = std::max(threads, e.thread + 1);
  for (int t = 0; t < threads; ++t) {
    next();
    f << R"({"ph": "M", "name": "thread_name", "pid": )" << pid << ", \"tid\": " << t << R"(, "args": {"name": "thread )" << t
      << "\"}}";
  }
  for (const Event& e : events_) {
    next();
    f << R"({"ph": "X", "cat": ")" << detail::category(e.kind) << R"(", "name": )";
    detail::json_string(f, e.name);
    f << ", \"pid\": " << pid << ", \"tid\": " << e.thread << ", \"ts\": " << detail::trace_us(e.start_ns)
      << ", \"dur\": " << detail::trace_us(e.duration_ns()) << R"(, "args": {"Device": ")" << e.device.str() << '"';
    if (options_.record_shapes) f << ", \"Input Dims\": " << detail::format_shapes(e.input_shapes);
    if (options_.profile_memory) f << ", \"CPU Mem\": " << e.cpu_memory << ", \"Self CPU Mem\": " << e.self_cpu_memory;
    f << "}}";
  }
  for (const MemoryRecord& m : memory_) {
    next();
    f << R"({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": )" << pid << ", \"tid\": " << m.thread
      << ", \"ts\": " << detail::trace_us(m.ts_ns) << R"(, "args": {"Device Type": 0, "Device Id": -1, "Addr": )"
      << reinterpret_cast<uintptr_t>(m.addr) << ", \"Bytes\": " << m.bytes << ", \"Total Allocated\": " << m.total_allocated
      << "}}";
  }
  f << "\n  ]\n}\n";
  DL_CHECK(f.good(), "export_chrome_trace: writing '", path, "' failed");
}

}  // namespace dl::profiler
