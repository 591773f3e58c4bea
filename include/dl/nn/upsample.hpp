// dl/nn/upsample.hpp — Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (torch.nn's): the
// modules of F::interpolate, for decoders and feature pyramids.
//
//   nn::Upsample up({.scale_factor = {2}, .mode = "bilinear"});          // [N, C, H, W] -> [N, C, 2H, 2W]
//   nn::UpsamplingNearest2d up2({.size = {28, 28}});
#pragma once

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "container.hpp"
#include "functional/interpolate.hpp"

namespace dl::nn {

/// torch.nn.Upsample's arguments (F::interpolate's, without antialias): exactly one of size and
/// scale_factor; mode "nearest" (default), "linear", "bilinear", "bicubic" or "trilinear".
struct UpsampleOptions {
  std::vector<int64_t> size = {};
  std::vector<double> scale_factor = {};
  std::string mode = "nearest";
  std::optional<bool> align_corners = std::nullopt;
  std::optional<bool> recompute_scale_factor = std::nullopt;
};

/// The size of UpsamplingNearest2d's and UpsamplingBilinear2d's output: exactly one of size and
/// scale_factor.
struct UpsamplingOptions {
  std::vector<int64_t> size = {};
  std::vector<double> scale_factor = {};
};

/// Resizes the spatial dims of [N, C, d1 (, d2 (, d3))] as F::interpolate with its options.
/// Errors: F::interpolate's, when called (an unknown mode already at construction).
class Upsample : public Module {
 public:
  explicit Upsample(UpsampleOptions o) : options(std::move(o)) {
    const std::string& m = options.mode;
    DL_CHECK(m == "nearest" || m == "linear" || m == "bilinear" || m == "bicubic" || m == "trilinear",
             "Upsample: mode must be one of nearest, linear, bilinear, bicubic or trilinear, got '", m, "'");
  }
  UpsampleOptions options;

  template <expression E>
  Tensor<expr::value_type_t<E>> forward(const E& x) {
    return functional::interpolate(x, {options.size, options.scale_factor, options.mode, options.align_corners,
                                       options.recompute_scale_factor});
  }
  /// PyTorch's (1.13): "scale_factor=2.0, mode=nearest" or "size=(4, 4), mode=bilinear" (one number
  /// alone, several as a tuple; factors as Python floats).
  std::string extra_repr() const override {
    std::ostringstream os;
    const auto list = [&](const auto& v, auto print) {
      if (v.size() > 1) os << '(';
      for (size_t i = 0; i < v.size(); ++i) {
        os << (i ? ", " : "");
        print(v[i]);
      }
      if (v.size() > 1) os << ')';
    };
    if (!options.scale_factor.empty()) {
      os << "scale_factor=";
      list(options.scale_factor, [&](double f) { os << f << (f == std::floor(f) ? ".0" : ""); });
    } else {
      os << "size=";
      list(options.size, [&](int64_t n) { os << n; });
    }
    os << ", mode=" << options.mode;
    return os.str();
  }
  DL_MODULE(Upsample)
};

/// Upsample with mode "nearest" (torch.nn.UpsamplingNearest2d).
class UpsamplingNearest2d : public Upsample {
 public:
  explicit UpsamplingNearest2d(UpsamplingOptions o)
      : Upsample({std::move(o.size), std::move(o.scale_factor), "nearest", std::nullopt, std::nullopt}) {}
  DL_MODULE(UpsamplingNearest2d)
};

/// Upsample with mode "bilinear" and align_corners = true (torch.nn.UpsamplingBilinear2d).
class UpsamplingBilinear2d : public Upsample {
 public:
  explicit UpsamplingBilinear2d(UpsamplingOptions o)
      : Upsample({std::move(o.size), std::move(o.scale_factor), "bilinear", true, std::nullopt}) {}
  DL_MODULE(UpsamplingBilinear2d)
};

}  // namespace dl::nn
