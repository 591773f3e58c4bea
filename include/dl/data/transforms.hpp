// dl/data/transforms.hpp — image transforms as torchvision.transforms: Compose, ToTensor (HWC uint8
// -> CHW float in [0, 1]), Normalize, RandomCrop, RandomHorizontalFlip/RandomVerticalFlip, Resize
// (bilinear), RandomRotation, CHW <-> HWC layout helpers, and their functional forms.
//
// Images are tensors [..., C, H, W] (any leading dims). Random transforms draw from
// data::sample_generator(): under a DataLoader that is the sample's own generator, so augmentations
// depend only on the loader's seed; called directly, they draw from dl's default generator (or
// from a generator passed as the second argument).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numbers>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../tensor.hpp"
#include "rng.hpp"

namespace dl::data::transforms {

// ------------------------------------------------------------------------------ declarations

/// (height, width); one number means a square.
struct Size2 {
  int64_t height, width;
  Size2(int64_t size) : height(size), width(size) {}  // NOLINT: implicit, as torchvision's int size
  Size2(int64_t h, int64_t w) : height(h), width(w) {}
};

/// Padding of the last two dims, torchvision's order: one value for all sides, {left/right,
/// top/bottom}, or {left, top, right, bottom}.
struct Padding {
  int64_t left = 0, top = 0, right = 0, bottom = 0;
  Padding(int64_t p = 0) : left(p), top(p), right(p), bottom(p) {}  // NOLINT: implicit
  Padding(std::initializer_list<int64_t> p);
  bool any() const { return left || top || right || bottom; }
};

enum class Interpolation { nearest, bilinear };

/// Layout helpers: [..., C, H, W] <-> [..., H, W, C] (contiguous copies).
template <scalar_type T>
Tensor<T> hwc_to_chw(const Tensor<T>& image);
template <scalar_type T>
Tensor<T> chw_to_hwc(const Tensor<T>& image);

namespace functional {
/// [H, W] or [H, W, C] uint8 -> [C, H, W] float in [0, 1] (also [N, H, W, C] -> [N, C, H, W]).
Tensor<float> to_tensor(const Tensor<uint8_t>& image);
/// (x - mean[c]) / std[c] per channel of [..., C, H, W]; mean/std of size 1 apply to every channel.
Tensor<float> normalize(const Tensor<float>& x, const std::vector<float>& mean, const std::vector<float>& stdev);
/// Mirror the last dim (hflip) or the second to last (vflip).
template <scalar_type T> Tensor<T> hflip(const Tensor<T>& x);
template <scalar_type T> Tensor<T> vflip(const Tensor<T>& x);
/// The window [top, top + height) x [left, left + width) of the last two dims; parts outside the
/// image are `fill` (so negative top/left pad).
template <scalar_type T> Tensor<T> crop(const Tensor<T>& x, int64_t top, int64_t left, int64_t height, int64_t width, T fill = T(0));
/// Constant padding of the last two dims.
template <scalar_type T> Tensor<T> pad(const Tensor<T>& x, Padding padding, T fill = T(0));
/// Resize the last two dims to `size` (torch.nn.functional.interpolate, align_corners=false,
/// no antialiasing). One number resizes the smaller edge to it and keeps the aspect ratio.
template <floating_scalar T> Tensor<T> resize(const Tensor<T>& x, Size2 size, Interpolation mode = Interpolation::bilinear);
template <floating_scalar T> Tensor<T> resize(const Tensor<T>& x, int64_t smaller_edge, Interpolation mode = Interpolation::bilinear);
/// Rotates counter-clockwise by `degrees` about the image centre, keeping the size; pixels that
/// come from outside the image are `fill` (torchvision.transforms.functional.rotate).
template <floating_scalar T> Tensor<T> rotate(const Tensor<T>& x, double degrees, Interpolation mode = Interpolation::nearest, T fill = T(0));
}  // namespace functional

namespace detail {
template <class X, class... Ts>
struct chain_result;
template <class X, class... Ts>
concept chainable = requires { typename chain_result<X, Ts...>::type; };
}  // namespace detail

/// Transforms that are per-channel affine maps x -> a_c * x + b_c (Identity, Normalize and
/// Compose of them) expose fold_affine; vision datasets then fuse ToTensor into the same pass.
template <class T>
concept channel_affine = requires(const T& t, std::vector<float>& a, std::vector<float>& b) { t.fold_affine(a, b); };

/// Returns its input.
struct Identity {
  template <class X>
  X operator()(X x) const { return x; }
  void fold_affine(std::vector<float>&, std::vector<float>&) const {}
};

/// Applies transforms in order: Compose(ToTensor(), Normalize({0.5f}, {0.5f}))(image).
template <class... Ts>
class Compose {
 public:
  explicit Compose(Ts... transforms) : transforms_(std::move(transforms)...) {}
  /// Requires each transform to accept the previous one's output (ToTensor takes Tensor<uint8_t>
  /// HWC images, Normalize Tensor<float> CHW ones).
  template <class X>
    requires detail::chainable<X, Ts...>
  auto operator()(X x, Generator* generator = nullptr) const;
  /// Per-channel affine composition (when every transform is per-channel affine; see Normalize).
  void fold_affine(std::vector<float>& scale, std::vector<float>& shift) const
    requires(channel_affine<Ts> && ...);
  const std::tuple<Ts...>& transforms() const { return transforms_; }

 private:
  std::tuple<Ts...> transforms_;
};

/// HWC uint8 image -> CHW float in [0, 1] (torchvision's ToTensor for uint8 images).
struct ToTensor {
  Tensor<float> operator()(const Tensor<uint8_t>& image) const { return functional::to_tensor(image); }
};

/// (x - mean[c]) / std[c] on [..., C, H, W] float tensors. A per-channel affine map: vision
/// datasets fuse it with ToTensor into one pass over each batch (results agree to ~1 ulp).
class Normalize {
 public:
  Normalize(std::vector<float> mean, std::vector<float> stdev);
  Tensor<float> operator()(const Tensor<float>& x) const { return functional::normalize(x, mean_, std_); }
  /// Composes x -> scale*x + shift with this map, per channel (scale/shift sized to the channels).
  void fold_affine(std::vector<float>& scale, std::vector<float>& shift) const;
  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& std() const { return std_; }

 private:
  std::vector<float> mean_, std_;
};

/// A random size-sized window, after optional padding (torchvision.transforms.RandomCrop).
class RandomCrop {
 public:
  explicit RandomCrop(Size2 size, Padding padding = 0, bool pad_if_needed = false, float fill = 0);
  template <scalar_type T>
  Tensor<T> operator()(const Tensor<T>& x, Generator* generator = nullptr) const;

 private:
  Size2 size_;
  Padding padding_;
  bool pad_if_needed_;
  float fill_;
};

/// Mirrors the image left-right with probability p.
class RandomHorizontalFlip {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  template <scalar_type T>
  Tensor<T> operator()(const Tensor<T>& x, Generator* generator = nullptr) const;

 private:
  double p_;
};

/// Mirrors the image top-bottom with probability p.
class RandomVerticalFlip {
 public:
  explicit RandomVerticalFlip(double p = 0.5);
  template <scalar_type T>
  Tensor<T> operator()(const Tensor<T>& x, Generator* generator = nullptr) const;

 private:
  double p_;
};

/// Resizes the last two dims (bilinear by default); Resize(n) matches the smaller edge to n.
class Resize {
 public:
  explicit Resize(int64_t smaller_edge, Interpolation mode = Interpolation::bilinear)
      : edge_(smaller_edge), mode_(mode) {}
  Resize(int64_t height, int64_t width, Interpolation mode = Interpolation::bilinear)
      : size_{height, width}, mode_(mode) {}
  template <floating_scalar T>
  Tensor<T> operator()(const Tensor<T>& x) const;

 private:
  int64_t edge_ = -1;
  std::array<int64_t, 2> size_{};
  Interpolation mode_;
};

/// Rotates by an angle drawn uniformly from [-degrees, degrees] (or [min, max]).
class RandomRotation {
 public:
  explicit RandomRotation(double degrees, Interpolation mode = Interpolation::nearest, float fill = 0);
  RandomRotation(double min_degrees, double max_degrees, Interpolation mode = Interpolation::nearest, float fill = 0);
  template <floating_scalar T>
  Tensor<T> operator()(const Tensor<T>& x, Generator* generator = nullptr) const;

 private:
  double min_, max_;
  Interpolation mode_;
  float fill_;
};


// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Checks an image tensor has at least `min_dims` dims and returns (outer, H, W) of [..., H, W].
DL_API std::array<int64_t, 3> image_dims(const Shape& s, int min_dims, const char* what);

/// Writes dst[c][y][x] = src[(y * W + x) * C + c] * scale + shift for every channel.
DL_API void hwc_u8_to_chw(const uint8_t* src, int64_t h, int64_t w, int64_t c, float* dst, float scale, float shift);

/// Writes dst[c][y][x] = src[(y * W + x) * C + c] * scale[c] + shift[c]  (HWC uint8 -> CHW float).
DL_API void hwc_u8_to_chw(const uint8_t* src, int64_t h, int64_t w, int64_t c, float* dst, const float* scale,
                          const float* shift);

// chain_result<X, T1, T2, ...>::type: the type T_n(...T2(T1(X))) when every step is callable.
template <class X, class... Ts>
struct chain_result {};
template <class X>
struct chain_result<X> {
  using type = X;
};
template <class X, class T, class... Ts>
  requires std::invocable<const T&, X>
struct chain_result<X, T, Ts...> : chain_result<std::invoke_result_t<const T&, X>, Ts...> {};

/// Calls t(x, g) for random transforms (which take a generator), t(x) otherwise.
template <class T, class X>
auto apply_one(const T& t, X&& x, Generator* g) {
  if constexpr (std::is_invocable_v<const T&, X, Generator*>) return t(std::forward<X>(x), g);
  else return t(std::forward<X>(x));
}

template <class X>
X apply_chain(X x, Generator*) {
  return x;
}
template <class X, class T, class... Rest>
auto apply_chain(X x, Generator* g, const T& t, const Rest&... rest) {
  return apply_chain(apply_one(t, std::move(x), g), g, rest...);
}

}  // namespace detail

template <scalar_type T>
Tensor<T> hwc_to_chw(const Tensor<T>& image) {
  DL_CHECK(image.dim() >= 3, "hwc_to_chw: expected [..., H, W, C], got shape ", image.shape());
  const int n = image.dim();
  Dims order;
  for (int d = 0; d < n - 3; ++d) order.push_back(d);
  order.push_back(n - 1);
  order.push_back(n - 3);
  order.push_back(n - 2);
  return image.permute(order).clone();
}

template <scalar_type T>
Tensor<T> chw_to_hwc(const Tensor<T>& image) {
  DL_CHECK(image.dim() >= 3, "chw_to_hwc: expected [..., C, H, W], got shape ", image.shape());
  const int n = image.dim();
  Dims order;
  for (int d = 0; d < n - 3; ++d) order.push_back(d);
  order.push_back(n - 2);
  order.push_back(n - 1);
  order.push_back(n - 3);
  return image.permute(order).clone();
}

namespace functional {

DL_API Tensor<float> to_tensor(const Tensor<uint8_t>& image);

DL_API Tensor<float> normalize(const Tensor<float>& x, const std::vector<float>& mean, const std::vector<float>& stdev);

template <scalar_type T>
Tensor<T> crop(const Tensor<T>& x, int64_t top, int64_t left, int64_t height, int64_t width, T fill) {
  const auto [outer, h, w] = detail::image_dims(x.shape(), 2, "crop");
  DL_CHECK(height >= 0 && width >= 0, "crop: negative output size (", height, ", ", width, ")");
  Shape shape = x.shape();
  shape[shape.size() - 2] = height;
  shape[shape.size() - 1] = width;
  const Tensor<T> src = x.contiguous();
  Tensor<T> out = empty<T>(shape);
  // Columns [x0, x1) of each output row come from the image; the rest is fill.
  const int64_t x0 = std::clamp<int64_t>(-left, 0, width), x1 = std::clamp<int64_t>(w - left, x0, width);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t y = 0; y < height; ++y) {
      T* d = out.data() + (o * height + y) * width;
      const int64_t sy = y + top;
      if (sy < 0 || sy >= h) {
        std::fill(d, d + width, fill);
        continue;
      }
      const T* s = src.data() + (o * h + sy) * w + left;
      std::fill(d, d + x0, fill);
      std::copy(s + x0, s + x1, d + x0);
      std::fill(d + x1, d + width, fill);
    }
  return out;
}

template <scalar_type T>
Tensor<T> pad(const Tensor<T>& x, Padding p, T fill) {
  DL_CHECK(x.dim() >= 2, "pad: expected a tensor image of at least 2 dimensions, got shape ", x.shape());
  return crop(x, -p.top, -p.left, x.size(-2) + p.top + p.bottom, x.size(-1) + p.left + p.right, fill);
}

template <scalar_type T>
Tensor<T> hflip(const Tensor<T>& x) {
  const auto [outer, h, w] = detail::image_dims(x.shape(), 2, "hflip");
  const Tensor<T> src = x.contiguous();
  Tensor<T> out = empty<T>(x.shape());
  for (int64_t r = 0; r < outer * h; ++r) {
    const T* s = src.data() + r * w;
    T* d = out.data() + r * w;
    for (int64_t k = 0; k < w; ++k) d[k] = s[w - 1 - k];
  }
  return out;
}

template <scalar_type T>
Tensor<T> vflip(const Tensor<T>& x) {
  const auto [outer, h, w] = detail::image_dims(x.shape(), 2, "vflip");
  const Tensor<T> src = x.contiguous();
  Tensor<T> out = empty<T>(x.shape());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t y = 0; y < h; ++y)
      std::copy_n(src.data() + (o * h + h - 1 - y) * w, w, out.data() + (o * h + y) * w);
  return out;
}

template <floating_scalar T>
Tensor<T> resize(const Tensor<T>& x, Size2 size, Interpolation mode) {
  const auto [outer, h, w] = detail::image_dims(x.shape(), 2, "resize");
  const int64_t oh = size.height, ow = size.width;
  DL_CHECK(oh > 0 && ow > 0, "resize: output size must be positive, got (", oh, ", ", ow, ")");
  DL_CHECK(h > 0 && w > 0, "resize: cannot resize an empty image of shape ", x.shape());
  Shape shape = x.shape();
  shape[shape.size() - 2] = oh;
  shape[shape.size() - 1] = ow;
  const Tensor<T> src = x.contiguous();
  Tensor<T> out = empty<T>(shape);
  // PyTorch's scales in the input's accumulation type: in / out.
  using Acc = T;
  const Acc sh = Acc(h) / Acc(oh), sw = Acc(w) / Acc(ow);
  if (mode == Interpolation::nearest) {
    std::vector<int64_t> xs(static_cast<size_t>(ow));
    for (int64_t j = 0; j < ow; ++j) xs[size_t(j)] = std::min(int64_t(std::floor(Acc(j) * sw)), w - 1);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < oh; ++i) {
        const int64_t sy = std::min(int64_t(std::floor(Acc(i) * sh)), h - 1);
        const T* s = src.data() + (o * h + sy) * w;
        T* d = out.data() + (o * oh + i) * ow;
        for (int64_t j = 0; j < ow; ++j) d[j] = s[xs[size_t(j)]];
      }
    return out;
  }
  // Bilinear, align_corners=false: source = (dst + 0.5) * scale - 0.5, clamped at 0.
  auto source = [](int64_t dst, Acc scale, int64_t in, int64_t& i0, int64_t& i1, Acc& l1) {
    const Acc r = std::max(scale * (Acc(dst) + Acc(0.5)) - Acc(0.5), Acc(0));
    i0 = int64_t(r);
    i1 = i0 + (i0 < in - 1 ? 1 : 0);
    l1 = r - Acc(i0);
  };
  std::vector<int64_t> x0(static_cast<size_t>(ow)), x1(static_cast<size_t>(ow));
  std::vector<Acc> lx(static_cast<size_t>(ow));
  for (int64_t j = 0; j < ow; ++j) source(j, sw, w, x0[size_t(j)], x1[size_t(j)], lx[size_t(j)]);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < oh; ++i) {
      int64_t y0, y1;
      Acc ly;
      source(i, sh, h, y0, y1, ly);
      const T* r0 = src.data() + (o * h + y0) * w;
      const T* r1 = src.data() + (o * h + y1) * w;
      T* d = out.data() + (o * oh + i) * ow;
      for (int64_t j = 0; j < ow; ++j) {
        const Acc a = lx[size_t(j)];
        const size_t c0 = size_t(x0[size_t(j)]), c1 = size_t(x1[size_t(j)]);
        d[j] = T((Acc(1) - ly) * ((Acc(1) - a) * r0[c0] + a * r0[c1]) + ly * ((Acc(1) - a) * r1[c0] + a * r1[c1]));
      }
    }
  return out;
}

template <floating_scalar T>
Tensor<T> resize(const Tensor<T>& x, int64_t smaller_edge, Interpolation mode) {
  const auto [outer, h, w] = detail::image_dims(x.shape(), 2, "resize");
  DL_CHECK(smaller_edge > 0, "resize: size must be positive, got ", smaller_edge);
  // torchvision: the short side becomes `size`, the long side int(size * long / short).
  if (h <= w) return resize(x, Size2{smaller_edge, int64_t(double(smaller_edge) * double(w) / double(h))}, mode);
  return resize(x, Size2{int64_t(double(smaller_edge) * double(h) / double(w)), smaller_edge}, mode);
}

template <floating_scalar T>
Tensor<T> rotate(const Tensor<T>& x, double degrees, Interpolation mode, T fill) {
  const auto [outer, h, w] = detail::image_dims(x.shape(), 2, "rotate");
  const Tensor<T> src = x.contiguous();
  Tensor<T> out = empty<T>(x.shape());
  // Output pixel (y, x) samples the input at R(-angle) applied about the centre ((w-1)/2, (h-1)/2),
  // as torchvision's affine grid with align_corners=false.
  const double a = degrees * std::numbers::pi / 180.0, c = std::cos(a), s = std::sin(a);
  const double cx = double(w - 1) * 0.5, cy = double(h - 1) * 0.5;
  for (int64_t o = 0; o < outer; ++o) {
    const T* img = src.data() + o * h * w;
    T* d = out.data() + o * h * w;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xo = 0; xo < w; ++xo) {
        const double dx = double(xo) - cx, dy = double(y) - cy;
        const double sx = c * dx - s * dy + cx, sy = s * dx + c * dy + cy;
        if (mode == Interpolation::nearest) {
          const int64_t ix = int64_t(std::nearbyint(sx)), iy = int64_t(std::nearbyint(sy));
          d[y * w + xo] = ix >= 0 && ix < w && iy >= 0 && iy < h ? img[iy * w + ix] : fill;
          continue;
        }
        // Bilinear with zero padding; the in-image weight `mask` blends in the fill (torchvision).
        const int64_t x0 = int64_t(std::floor(sx)), y0 = int64_t(std::floor(sy));
        const double fx = sx - double(x0), fy = sy - double(y0);
        double v = 0, mask = 0;
        for (int k = 0; k < 4; ++k) {
          const int64_t ix = x0 + (k & 1), iy = y0 + (k >> 1);
          if (ix < 0 || ix >= w || iy < 0 || iy >= h) continue;
          const double wt = ((k & 1) ? fx : 1 - fx) * ((k >> 1) ? fy : 1 - fy);
          v += wt * double(img[iy * w + ix]);
          mask += wt;
        }
        d[y * w + xo] = T(v * mask + (1 - mask) * double(fill));
      }
  }
  return out;
}

}  // namespace functional

template <class... Ts>
template <class X>
  requires detail::chainable<X, Ts...>
auto Compose<Ts...>::operator()(X x, Generator* generator) const {
  return std::apply([&](const auto&... t) { return detail::apply_chain(std::move(x), generator, t...); }, transforms_);
}

template <class... Ts>
void Compose<Ts...>::fold_affine(std::vector<float>& scale, std::vector<float>& shift) const
  requires(channel_affine<Ts> && ...)
{
  std::apply([&](const auto&... t) { (t.fold_affine(scale, shift), ...); }, transforms_);
}

template <scalar_type T>
Tensor<T> RandomCrop::operator()(const Tensor<T>& x, Generator* generator) const {
  const auto [outer, h0, w0] = detail::image_dims(x.shape(), 2, "RandomCrop");
  Padding p = padding_;
  int64_t h = h0 + p.top + p.bottom, w = w0 + p.left + p.right;
  if (pad_if_needed_ && w < size_.width) {  // torchvision pads both sides by the difference
    const int64_t d = size_.width - w;
    p.left += d;
    p.right += d;
    w += 2 * d;
  }
  if (pad_if_needed_ && h < size_.height) {
    const int64_t d = size_.height - h;
    p.top += d;
    p.bottom += d;
    h += 2 * d;
  }
  DL_CHECK(h >= size_.height && w >= size_.width, "RandomCrop: required crop size (", size_.height, ", ", size_.width,
           ") is larger than input image size (", h, ", ", w, ")");
  Generator& g = sample_generator(generator);
  const int64_t i = data::randint(g, 0, h - size_.height + 1);
  const int64_t j = data::randint(g, 0, w - size_.width + 1);
  return functional::crop(x, i - p.top, j - p.left, size_.height, size_.width, T(fill_));
}

template <scalar_type T>
Tensor<T> RandomHorizontalFlip::operator()(const Tensor<T>& x, Generator* generator) const {
  return data::uniform(sample_generator(generator)) < p_ ? functional::hflip(x) : x;
}

template <scalar_type T>
Tensor<T> RandomVerticalFlip::operator()(const Tensor<T>& x, Generator* generator) const {
  return data::uniform(sample_generator(generator)) < p_ ? functional::vflip(x) : x;
}

template <floating_scalar T>
Tensor<T> Resize::operator()(const Tensor<T>& x) const {
  return edge_ > 0 ? functional::resize(x, edge_, mode_) : functional::resize(x, Size2{size_[0], size_[1]}, mode_);
}

template <floating_scalar T>
Tensor<T> RandomRotation::operator()(const Tensor<T>& x, Generator* generator) const {
  const double angle = min_ + (max_ - min_) * data::uniform(sample_generator(generator));
  return functional::rotate(x, angle, mode_, T(fill_));
}

}  // namespace dl::data::transforms

#if DL_HEADER_ONLY
#include "transforms-inl.hpp"
#endif
