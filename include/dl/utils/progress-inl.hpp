// dl/utils/progress-inl.hpp — the bodies of dl/utils/progress.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "progress.hpp"

namespace dl::utils {

DL_API std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "--:--";
  const int64_t s = int64_t(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60), (long long)(s % 60));
  else std::snprintf(buf, sizeof buf, "%02lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

DL_API ProgressBar::ProgressBar(int64_t total, ProgressOptions o) : total_(total), o_(std::move(o)) {
  DL_CHECK(total >= 0, "ProgressBar: total must be non-negative, got ", total);
  DL_CHECK(o_.out, "ProgressBar: no output stream");
  tty_ = o_.tty.value_or(o_.out == &std::cout && ::isatty(STDOUT_FILENO));
  if (o_.clock) {
    clock_ = o_.clock;
  } else {
    const auto origin = std::chrono::steady_clock::now();
    clock_ = [origin] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count(); };
  }
  start_ = now();
}

DL_API double ProgressBar::eta() const {
  if (done_ >= total_) return 0;
  if (done_ == 0) return NAN;
  return elapsed() / double(done_) * double(total_ - done_);
}

DL_API std::string ProgressBar::line() const {
  std::string s = o_.description.empty() ? "" : o_.description + " ";
  const double frac = total_ > 0 ? double(std::min(done_, total_)) / double(total_) : 1.0;
  char buf[64];
  if (tty_) {
    const int filled = int(frac * o_.width);
    s += "[" + std::string(size_t(filled), '=') + (filled < o_.width ? ">" : "") +
         std::string(size_t(std::max(0, o_.width - filled - 1)), ' ') + "] ";
  }
  const int digits = int(std::to_string(total_).size());
  std::snprintf(buf, sizeof buf, "%*lld/%lld", digits, (long long)done_, (long long)total_);
  s += buf;
  for (const auto& [name, v] : metrics_) {
    if (name.rfind("acc", 0) == 0 && v >= 0 && v <= 1) std::snprintf(buf, sizeof buf, "  %s %.2f%%", name.c_str(), 100 * v);
    else std::snprintf(buf, sizeof buf, "  %s %.4f", name.c_str(), v);
    s += buf;
  }
  const double t = elapsed();
  std::snprintf(buf, sizeof buf, "  %.0f %s/s", t > 0 ? double(items_) / t : 0.0, o_.unit.c_str());
  s += buf;
  s += "  " + format_duration(t) + (done_ < total_ ? " eta " + format_duration(eta()) : "");
  return s;
}

DL_API void ProgressBar::draw(bool final) {
  if (tty_) {
    *o_.out << "\r" << line() << "\x1b[K";
    if (final) *o_.out << "\n";
  } else {
    *o_.out << line() << "\n";
  }
  o_.out->flush();
  last_draw_ = now();
}

DL_API void ProgressBar::update(int64_t steps, std::vector<std::pair<std::string, double>> metrics, int64_t items) {
  DL_CHECK(steps >= 0, "ProgressBar::update: steps must be non-negative, got ", steps);
  done_ += steps;
  items_ += items < 0 ? steps : items;
  if (!metrics.empty()) metrics_ = std::move(metrics);
  const double since = now() - last_draw_;
  if (tty_ ? since >= o_.refresh_seconds : since >= o_.log_seconds && done_ < total_) draw(false);
}

DL_API void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_) draw(true);  // a plain log gets its summary from the caller
}

}  // namespace dl::utils
