// dl/utils/plot.hpp — line charts written as a standalone SVG file that any browser opens: training
// curves (loss, accuracy per epoch) without a plotting dependency.
//
//   dl::utils::Chart loss{.title = "loss", .x_label = "epoch"};
//   loss.series.push_back({"train", epochs, train_loss});
//   loss.series.push_back({"test", epochs, test_loss});
//   dl::utils::write_svg("curves.svg", {loss, accuracy});   // charts side by side
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../error.hpp"

namespace dl::utils {

// ------------------------------------------------------------------------------ declarations

struct Series {
  std::string name;
  std::vector<double> x, y;
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
};

/// The SVG text of the charts, side by side (each width x height pixels).
std::string to_svg(const std::vector<Chart>& charts, int width = 480, int height = 320);
/// Writes to_svg(charts) to path; throws dl::Error when the file cannot be written.
void write_svg(const std::string& path, const std::vector<Chart>& charts, int width = 480, int height = 320);

// ------------------------------------------------------------------------------ implementation

namespace detail {

DL_API std::string escape_xml(const std::string& s);

/// About five round tick values covering [lo, hi] (1, 2 or 5 times a power of ten apart).
DL_API std::vector<double> nice_ticks(double lo, double hi);

DL_API std::string fmt(double v);

}  // namespace detail

DL_API std::string to_svg(const std::vector<Chart>& charts, int width, int height);

DL_API void write_svg(const std::string& path, const std::vector<Chart>& charts, int width, int height);

}  // namespace dl::utils

#if DL_HEADER_ONLY
#include "plot-inl.hpp"
#endif
