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

}  // namespace dl::utils

#if DL_HEADER_ONLY
#include "progress-inl.hpp"
#endif
