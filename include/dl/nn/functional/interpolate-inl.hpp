// dl/nn/functional/interpolate-inl.hpp — the bodies of dl/nn/functional/interpolate.hpp's non-template
// functions (DL_API): compiled into each program in header-only mode, once into libdl_kernels in
// compiled mode (see DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "interpolate.hpp"

namespace dl::nn::functional::detail {

template <class V>
std::string interp_list(const V& v) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
  return os.str();
}

DL_API InterpPlan interp_plan(const Shape& in, const InterpolateOptions& o) {
  const std::string& m = o.mode;
  const int nd = in.size();
  const bool interpolating = m == "linear" || m == "bilinear" || m == "bicubic" || m == "trilinear";
  if (!interpolating && o.align_corners)
    throw Error("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear");
  const auto unsupported = [&] {
    return Error(dl::detail::cat("Input Error: Only 3D, 4D and 5D input Tensors supported (got ", nd,
                                 "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got ",
                                 m, ")"));
  };
  if (nd < 3 || nd > 5) throw unsupported();
  const int dims = nd - 2;
  std::vector<int64_t> spatial(in.begin() + 2, in.end());
  InterpPlan p{InterpMode::nearest, o.align_corners.value_or(false), {}, {}};
  if (!o.size.empty() && !o.scale_factor.empty()) throw Error("only one of size or scale_factor should be defined");
  if (o.size.empty() && o.scale_factor.empty()) throw Error("either size or scale_factor should be defined");
  bool recompute = o.recompute_scale_factor.value_or(false);
  if (recompute && !o.size.empty()) throw Error("recompute_scale_factor is not meaningful with an explicit size.");
  if (m == "area" && o.size.empty()) recompute = true;
  if (!o.size.empty()) {
    DL_CHECK(o.size.size() == 1 || int(o.size.size()) == dims,
             "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of ",
             interp_list(spatial), " and output size of ", interp_list(o.size),
             ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.");
    for (int d = 0; d < dims; ++d) p.out.push_back(o.size[o.size.size() == 1 ? 0 : d]);
    p.scale.assign(dims, std::nullopt);
  } else {
    DL_CHECK(o.scale_factor.size() == 1 || int(o.scale_factor.size()) == dims,
             "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions of ",
             interp_list(spatial), " and scale_factor of shape ", interp_list(o.scale_factor),
             ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.");
    for (int d = 0; d < dims; ++d) {
      const double s = o.scale_factor[o.scale_factor.size() == 1 ? 0 : d];
      // Python's floor(float(in) * s) when recomputing; ATen's int64 conversion of in * s otherwise.
      p.out.push_back(recompute ? int64_t(std::floor(double(spatial[d]) * s)) : int64_t(double(spatial[d]) * s));
      p.scale.push_back(recompute ? std::nullopt : std::optional<double>(s));
    }
  }
  if (o.antialias) throw Error("interpolate: antialias=true is not supported yet (PyTorch's antialiased bilinear/bicubic)");
  const char* want = nullptr;
  if (m == "nearest") p.mode = InterpMode::nearest;
  else if (m == "nearest-exact") p.mode = InterpMode::nearest_exact;
  else if (m == "area") p.mode = InterpMode::area;
  else if (m == "linear") p.mode = InterpMode::linear, want = nd == 3 ? nullptr : "3D";
  else if (m == "bilinear") p.mode = InterpMode::linear, want = nd == 4 ? nullptr : "4D";
  else if (m == "trilinear") p.mode = InterpMode::linear, want = nd == 5 ? nullptr : "5D";
  else if (m == "bicubic" && nd == 4) p.mode = InterpMode::cubic;
  else throw unsupported();
  if (want) throw Error(dl::detail::cat("Got ", nd, "D input, but ", m, " mode needs ", want, " input"));
  bool positive = true;
  std::string got_in, got_out;  // ATen's "(H: 4, W: 4)"
  for (int d = 0; d < dims; ++d) {
    positive = positive && spatial[d] > 0 && p.out[d] > 0;
    const char* axis = &"DHW"[3 - dims + d];
    got_in += dl::detail::cat(d ? ", " : "", axis[0], ": ", spatial[d]);
    got_out += dl::detail::cat(d ? ", " : "", axis[0], ": ", p.out[d]);
  }
  DL_CHECK(positive, "Input and output sizes should be greater than 0, but got input (", got_in, ") output (", got_out, ")");
  return p;
}

}  // namespace dl::nn::functional::detail
