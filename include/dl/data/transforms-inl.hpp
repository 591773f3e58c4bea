// dl/data/transforms-inl.hpp — the bodies of dl/data/transforms.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "transforms.hpp"

namespace dl::data::transforms {

DL_API Padding::Padding(std::initializer_list<int64_t> p) {
  const auto* v = p.begin();
  if (p.size() == 1) {
    left = top = right = bottom = v[0];
  } else if (p.size() == 2) {
    left = right = v[0];
    top = bottom = v[1];
  } else {
    DL_CHECK(p.size() == 4, "Padding: expected 1, 2 or 4 values (left, top, right, bottom), got ", p.size());
    left = v[0];
    top = v[1];
    right = v[2];
    bottom = v[3];
  }
  DL_CHECK(left >= 0 && top >= 0 && right >= 0 && bottom >= 0, "Padding: values must be non-negative");
}
}  // namespace dl::data::transforms

namespace dl::data::transforms::detail {

DL_API std::array<int64_t, 3> image_dims(const Shape& s, int min_dims, const char* what) {
  DL_CHECK(s.size() >= min_dims, what, ": expected a tensor image of at least ", min_dims, " dimensions, got shape ", s);
  const int64_t h = s[s.size() - 2], w = s[s.size() - 1];
  return {h * w != 0 ? numel(s) / (h * w) : 0, h, w};
}

DL_API void hwc_u8_to_chw(const uint8_t* src, int64_t h, int64_t w, int64_t c, float* dst, float scale, float shift) {
  const int64_t plane = h * w;
  if (c == 1) {
    for (int64_t k = 0; k < plane; ++k) dst[k] = float(src[k]) * scale + shift;
    return;
  }
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t k = 0; k < plane; ++k) dst[ch * plane + k] = float(src[k * c + ch]) * scale + shift;
}

DL_API void hwc_u8_to_chw(const uint8_t* src, int64_t h, int64_t w, int64_t c, float* dst, const float* scale,
                          const float* shift) {
  const int64_t plane = h * w;
  if (c == 1) {
    const float a = scale[0], b = shift[0];
    for (int64_t k = 0; k < plane; ++k) dst[k] = float(src[k]) * a + b;
    return;
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    const float a = scale[ch], b = shift[ch];
    float* d = dst + ch * plane;
    for (int64_t k = 0; k < plane; ++k) d[k] = float(src[k * c + ch]) * a + b;
  }
}
}  // namespace dl::data::transforms::detail

namespace dl::data::transforms::functional {

DL_API Tensor<float> to_tensor(const Tensor<uint8_t>& image) {
  DL_CHECK(image.dim() >= 2 && image.dim() <= 4, "to_tensor: expected an HWC image ([H, W], [H, W, C] or [N, H, W, C] uint8), got shape ",
           image.shape());
  const Tensor<uint8_t> src = image.contiguous();
  const Shape& s = src.shape();
  const bool batched = s.size() == 4;
  const int64_t n = batched ? s[0] : 1, h = s[batched], w = s[batched + 1], c = s.size() == 2 ? 1 : s.back();
  Tensor<float> out = batched ? empty<float>({n, c, h, w}) : empty<float>({c, h, w});
  for (int64_t i = 0; i < n; ++i)
    detail::hwc_u8_to_chw(src.data() + i * h * w * c, h, w, c, out.data() + i * c * h * w, 1.0f / 255.0f, 0.0f);
  return out;
}

DL_API Tensor<float> normalize(const Tensor<float>& x, const std::vector<float>& mean, const std::vector<float>& stdev) {
  DL_CHECK(x.dim() >= 3, "normalize: expected a tensor image of size (..., C, H, W), got shape ", x.shape());
  const int64_t c = x.size(-3);
  DL_CHECK(mean.size() == 1 || int64_t(mean.size()) == c, "normalize: ", mean.size(), " means for an image with ", c, " channels (shape ",
           x.shape(), ")");
  DL_CHECK(stdev.size() == 1 || int64_t(stdev.size()) == c, "normalize: ", stdev.size(), " stds for an image with ", c, " channels (shape ",
           x.shape(), ")");
  const Tensor<float> src = x.contiguous();
  Tensor<float> out = empty<float>(x.shape());
  const int64_t plane = x.size(-2) * x.size(-1), outer = plane * c != 0 ? x.numel() / (plane * c) : 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float m = mean[mean.size() == 1 ? 0 : size_t(ch)], sd = stdev[stdev.size() == 1 ? 0 : size_t(ch)];
      const float* s = src.data() + (o * c + ch) * plane;
      float* d = out.data() + (o * c + ch) * plane;
      for (int64_t k = 0; k < plane; ++k) d[k] = (s[k] - m) / sd;
    }
  return out;
}
}  // namespace dl::data::transforms::functional

namespace dl::data::transforms {

DL_API Normalize::Normalize(std::vector<float> mean, std::vector<float> stdev) : mean_(std::move(mean)), std_(std::move(stdev)) {
  DL_CHECK(!mean_.empty() && !std_.empty(), "Normalize: mean and std must not be empty");
  DL_CHECK(mean_.size() == std_.size() || mean_.size() == 1 || std_.size() == 1, "Normalize: ", mean_.size(), " means but ",
           std_.size(), " stds");
  for (size_t k = 0; k < std_.size(); ++k)
    DL_CHECK(std_[k] != 0, "Normalize: std evaluated to zero (std[", k, "] = 0), leading to division by zero");
}

DL_API void Normalize::fold_affine(std::vector<float>& scale, std::vector<float>& shift) const {
  const size_t c = scale.size();
  DL_CHECK((mean_.size() == 1 || mean_.size() == c) && (std_.size() == 1 || std_.size() == c), "normalize: ", mean_.size(),
           " means and ", std_.size(), " stds for an image with ", c, " channels");
  for (size_t ch = 0; ch < c; ++ch) {
    const float m = mean_[mean_.size() == 1 ? 0 : ch], inv = 1.0f / std_[std_.size() == 1 ? 0 : ch];
    scale[ch] *= inv;
    shift[ch] = (shift[ch] - m) * inv;
  }
}

DL_API RandomCrop::RandomCrop(Size2 size, Padding padding, bool pad_if_needed, float fill)
    : size_(size), padding_(padding), pad_if_needed_(pad_if_needed), fill_(fill) {
  DL_CHECK(size.height > 0 && size.width > 0, "RandomCrop: size must be positive, got (", size.height, ", ", size.width, ")");
}

DL_API RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  DL_CHECK(p >= 0 && p <= 1, "RandomHorizontalFlip: p must be in [0, 1], got ", p);
}

DL_API RandomVerticalFlip::RandomVerticalFlip(double p) : p_(p) {
  DL_CHECK(p >= 0 && p <= 1, "RandomVerticalFlip: p must be in [0, 1], got ", p);
}

DL_API RandomRotation::RandomRotation(double degrees, Interpolation mode, float fill)
    : min_(-degrees), max_(degrees), mode_(mode), fill_(fill) {
  DL_CHECK(degrees >= 0, "RandomRotation: if degrees is a single number, it must be positive, got ", degrees);
}

DL_API RandomRotation::RandomRotation(double min_degrees, double max_degrees, Interpolation mode, float fill)
    : min_(min_degrees), max_(max_degrees), mode_(mode), fill_(fill) {
  DL_CHECK(min_degrees <= max_degrees, "RandomRotation: degrees should be (min, max) with min <= max, got (", min_degrees, ", ",
           max_degrees, ")");
}

}  // namespace dl::data::transforms
