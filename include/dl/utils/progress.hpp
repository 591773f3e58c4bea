// dl/utils/progress.hpp — a training progress bar: on a terminal it redraws one line in place
// (items done, running metrics, items per second, elapsed and remaining time); when the output is
// not a terminal (a CI log, a pipe) it prints a plain line every few seconds instead.
//
//   dl::utils::ProgressBar bar(batches, {.description = "epoch 1/10", .unit = "img"});
//   for (...) bar.update(1, {{"loss", loss}, {"acc", acc}}, images_in_batch);
//   bar.finish();
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "../config.hpp"
#include "../error.hpp"

namespace dl::utils {

// ------------------------------------------------------------------------------ declarations

struct ProgressOptions {
  std::string description;           ///< printed first, e.g. "epoch 3/10"
  std::string unit = "it";           ///< what the rate counts ("img" for images per second)
  int width = 24;                    ///< characters of the bar
  std::optional<bool> tty;           ///< redraw in place; default: whether the output is a terminal
  double refresh_seconds = 0.1;      ///< minimum time between redraws on a terminal
  double log_seconds = 10;           ///< time between plain lines when not on a terminal
  std::ostream* out = &std::cout;    ///< where to write
  std::function<double()> clock;     ///< seconds since some origin; default: a steady clock
};

/// A progress line over `total` steps; see the header comment.
class ProgressBar {
 public:
  explicit ProgressBar(int64_t total, ProgressOptions o = {});
  /// Advances by `steps`, sets the shown metrics (name, value; values in [0, 1] named "acc..."
  /// print as percentages) and counts `items` toward the rate (default: the steps).
  void update(int64_t steps = 1, std::vector<std::pair<std::string, double>> metrics = {}, int64_t items = -1);
  /// Draws the final state and ends the line.
  void finish();
  /// The line as it would be drawn now (no carriage return).
  std::string line() const;
  bool tty() const { return tty_; }
  double elapsed() const { return now() - start_; }
  /// Seconds left at the current rate (0 when done, NaN before the first step).
  double eta() const;

 private:
  double now() const { return clock_(); }
  void draw(bool final);

  int64_t total_, done_ = 0, items_ = 0;
  ProgressOptions o_;
  bool tty_;
  std::function<double()> clock_;
  double start_, last_draw_ = -1e300;
  std::vector<std::pair<std::string, double>> metrics_;
  bool finished_ = false;
};

/// "01:05" (minutes:seconds) or "1:02:03".
std::string format_duration(double seconds);

// ------------------------------------------------------------------------------ implementation

DL_API std::string format_duration(double seconds);
#if DL_HEADER_ONLY
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
#endif  // DL_HEADER_ONLY

}  // namespace dl::utils
