// dl/utils/plot-inl.hpp — the bodies of dl/utils/plot.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "plot.hpp"

namespace dl::utils::detail {

DL_API std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

DL_API std::vector<double> nice_ticks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  std::vector<double> t;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

DL_API std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace dl::utils::detail

namespace dl::utils {

DL_API std::string to_svg(const std::vector<Chart>& charts, int width, int height) {
  DL_CHECK(!charts.empty(), "to_svg: no charts");
  DL_CHECK(width >= 100 && height >= 100, "to_svg: charts must be at least 100 x 100 pixels, got ", width, " x ", height);
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width * int(charts.size()) << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (size_t c = 0; c < charts.size(); ++c) {
    const Chart& ch = charts[c];
    DL_CHECK(!ch.series.empty(), "to_svg: chart '", ch.title, "' has no series");
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (const Series& sr : ch.series) {
      DL_CHECK(sr.x.size() == sr.y.size(), "to_svg: series '", sr.name, "' has ", sr.x.size(), " x values but ", sr.y.size(), " y values");
      DL_CHECK(!sr.x.empty(), "to_svg: series '", sr.name, "' is empty");
      for (size_t i = 0; i < sr.x.size(); ++i) {
        DL_CHECK(std::isfinite(sr.x[i]) && std::isfinite(sr.y[i]), "to_svg: series '", sr.name, "' has a non-finite point at ", i,
                 " (", sr.x[i], ", ", sr.y[i], ")");
        x0 = std::min(x0, sr.x[i]), x1 = std::max(x1, sr.x[i]), y0 = std::min(y0, sr.y[i]), y1 = std::max(y1, sr.y[i]);
      }
    }
    if (x1 == x0) x0 -= 1, x1 += 1;
    if (y1 == y0) y0 -= std::max(1e-3, std::abs(y0) * 0.1), y1 += std::max(1e-3, std::abs(y1) * 0.1);
    const double pad = (y1 - y0) * 0.05;
    y0 -= pad, y1 += pad;
    const double ox = double(c) * width, left = ox + 56, right = ox + width - 16, top = 32, bottom = height - 44.0;
    auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (right - left); };
    auto py = [&](double y) { return bottom - (y - y0) / (y1 - y0) * (bottom - top); };
    s << "<g>\n<text x=\"" << ox + width / 2.0 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" << detail::escape_xml(ch.title)
      << "</text>\n";
    for (double t : detail::nice_ticks(y0, y1)) {
      s << "<line x1=\"" << left << "\" y1=\"" << py(t) << "\" x2=\"" << right << "\" y2=\"" << py(t) << "\" stroke=\"#e0e0e0\"/>"
        << "<text x=\"" << left - 6 << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\">" << detail::fmt(t) << "</text>\n";
    }
    for (double t : detail::nice_ticks(x0, x1))
      s << "<text x=\"" << px(t) << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\">" << detail::fmt(t) << "</text>\n";
    s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << right - left << "\" height=\"" << bottom - top
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
    s << "<text x=\"" << (left + right) / 2 << "\" y=\"" << height - 8 << "\" text-anchor=\"middle\">" << detail::escape_xml(ch.x_label)
      << "</text>\n";
    if (!ch.y_label.empty())
      s << "<text transform=\"translate(" << ox + 14 << "," << (top + bottom) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
        << detail::escape_xml(ch.y_label) << "</text>\n";
    for (size_t k = 0; k < ch.series.size(); ++k) {
      const Series& sr = ch.series[k];
      const char* color = colors[k % 6];
      s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
      for (size_t i = 0; i < sr.x.size(); ++i) s << (i ? " " : "") << px(sr.x[i]) << "," << py(sr.y[i]);
      s << "\"/>\n";
      for (size_t i = 0; i < sr.x.size(); ++i) s << "<circle cx=\"" << px(sr.x[i]) << "\" cy=\"" << py(sr.y[i]) << "\" r=\"2.5\" fill=\"" << color << "\"/>";
      s << "\n<text x=\"" << right - 8 << "\" y=\"" << top + 16 + 16.0 * double(k) << "\" text-anchor=\"end\" fill=\"" << color << "\">"
        << detail::escape_xml(sr.name) << "</text>\n";
    }
    s << "</g>\n";
  }
  s << "</svg>\n";
  return s.str();
}

DL_API void write_svg(const std::string& path, const std::vector<Chart>& charts, int width, int height) {
  const std::string svg = to_svg(charts, width, height);
  std::ofstream f(path);
  DL_CHECK(f.good(), "write_svg: cannot open '", path, "' for writing");
  f << svg;
  DL_CHECK(f.good(), "write_svg: writing '", path, "' failed");
}

}  // namespace dl::utils
