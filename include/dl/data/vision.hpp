// dl/data/vision.hpp — image classification datasets read from files the user has (no downloads):
// MNIST, FashionMNIST and KMNIST (IDX files, plain or .gz) and CIFAR10 / CIFAR100 (binary version).
//
//   auto train = dl::data::FashionMNIST("/usr/share/datasets/fashion-mnist", /*train=*/true,
//                                       dl::data::transforms::Normalize({0.2860f}, {0.3530f}));
//   auto [image, label] = train.get(0);   // image: Tensor<float> [1, 28, 28], label: int64_t
#pragma once

#include <array>
#include <filesystem>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "dataset.hpp"
#include "io.hpp"
#include "rng.hpp"
#include "transforms.hpp"

namespace dl::data {

// ------------------------------------------------------------------------------ declarations

/// Images with integer labels, held in memory as uint8 [N, H, W, C] (C = 1 for grey images).
/// get(i) returns {transform(image), label}. The transform receives the image as:
///  - Tensor<float> [C, H, W] in [0, 1] (ToTensor already applied) when it accepts a
///    Tensor<float>, as data::transforms::Normalize does;
///  - otherwise the raw Tensor<uint8_t> [H, W, C], for torchvision-style chains that start with
///    ToTensor: Compose(ToTensor(), Normalize(...)).
/// With no transform, or a per-channel affine one (Normalize, Compose(ToTensor(), Normalize)),
/// get_batch builds whole batches in one fused pass; DataLoader uses it.
template <class Transform = transforms::Identity>
class VisionDataset {
  static constexpr bool takes_float = std::is_invocable_v<const Transform&, Tensor<float>>;
  static constexpr bool takes_raw = std::is_invocable_v<const Transform&, Tensor<uint8_t>>;
  static_assert(takes_float || takes_raw,
                "the transform of a vision dataset must accept a Tensor<float> [C, H, W] in [0, 1] (the image after "
                "ToTensor) or a Tensor<uint8_t> [H, W, C] (the raw image, for chains that start with ToTensor)");
  using input_type = std::conditional_t<takes_float, Tensor<float>, Tensor<uint8_t>>;

  template <class T>
  struct to_tensor_then_affine : std::false_type {};
  template <class... Rest>
  struct to_tensor_then_affine<transforms::Compose<transforms::ToTensor, Rest...>>
      : std::bool_constant<(transforms::channel_affine<Rest> && ...)> {};

 public:
  using image_type = std::remove_cvref_t<std::invoke_result_t<const Transform&, input_type>>;
  using sample_type = std::pair<image_type, int64_t>;
  /// True when get_batch fuses ToTensor and the transform (no transform, or a per-channel affine one).
  static constexpr bool fusable =
      std::is_same_v<image_type, Tensor<float>> &&
      (takes_float ? transforms::channel_affine<Transform> : to_tensor_then_affine<Transform>::value);

  int64_t size() const { return images_.size(0); }
  sample_type get(int64_t i) const;
  /// Starts fetching image i into the cache (DataLoader calls it ahead of get).
  void prefetch(int64_t i) const {
    if (i >= 0 && i < size()) detail::prefetch(images_.data() + i * images_.numel() / size(), images_.numel() / size());
  }
  /// The batch {images [B, C, H, W], labels [B]} of default_collate, in one fused pass.
  std::pair<Tensor<float>, Tensor<int64_t>> get_batch(std::span<const int64_t> indices) const
    requires fusable
  {
    const int64_t b = int64_t(indices.size()), h = images_.size(1), w = images_.size(2), c = images_.size(3);
    // ToTensor (x / 255) folded with the transform's per-channel affine map into one multiply-add.
    std::vector<float> scale(size_t(c), 1.0f / 255.0f), shift(size_t(c), 0.0f);
    if constexpr (takes_float) {
      transform_.fold_affine(scale, shift);
    } else {
      std::apply([&](const auto&, const auto&... rest) { (rest.fold_affine(scale, shift), ...); }, transform_.transforms());
    }
    Tensor<float> images = empty<float>({b, c, h, w});
    Tensor<int64_t> labels = empty<int64_t>({b});
    const int64_t n = size(), item = h * w * c;
    for (int64_t j = 0; j < b; ++j) {
      const int64_t i = indices[size_t(j)];
      detail::check_index(i, n, "VisionDataset");
      // Shuffled samples are scattered over the image store: fetch the one after next while this
      // one converts (the hardware prefetcher cannot guess it).
      if (j + 2 < b && indices[size_t(j + 2)] >= 0 && indices[size_t(j + 2)] < n)
        detail::prefetch(images_.data() + indices[size_t(j + 2)] * item, item);
      transforms::detail::hwc_u8_to_chw(images_.data() + i * item, h, w, c, images.data() + j * item, scale.data(), shift.data());
      labels.data()[j] = targets_.data()[i];
    }
    return {std::move(images), std::move(labels)};
  }

  /// The raw images, uint8 [N, H, W] for grey datasets and [N, H, W, C] otherwise (torchvision's .data).
  Tensor<uint8_t> data() const { return images_.size(3) == 1 ? images_.select(3, 0) : images_; }
  /// Labels, int64 [N] (torchvision's .targets).
  const Tensor<int64_t>& targets() const { return targets_; }
  /// Class names, indexed by label (empty when the files do not name them).
  const std::vector<std::string>& classes() const { return classes_; }
  const Transform& transform() const { return transform_; }

 protected:
  /// @pre images are uint8 [N, H, W, C] and labels int64 [N].
  VisionDataset(std::pair<Tensor<uint8_t>, Tensor<int64_t>> images_labels, Transform transform, std::vector<std::string> classes);

 private:
  Tensor<uint8_t> images_;   // [N, H, W, C], contiguous
  Tensor<int64_t> targets_;  // [N]
  Transform transform_;
  std::vector<std::string> classes_;
};

/// MNIST from IDX files in `root` (or root/MNIST/raw, torchvision's layout):
/// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte,
/// each plain or .gz.
template <class Transform = transforms::Identity>
class MNIST : public VisionDataset<Transform> {
 public:
  explicit MNIST(const std::filesystem::path& root, bool train = true, Transform transform = {});

 protected:
  MNIST(const char* name, std::vector<std::string> classes, const std::filesystem::path& root, bool train, Transform transform);
};

/// Fashion-MNIST (same IDX files as MNIST; also looked for in root/FashionMNIST/raw). Debian's
/// dataset-fashion-mnist package installs it in /usr/share/datasets/fashion-mnist.
template <class Transform = transforms::Identity>
class FashionMNIST : public MNIST<Transform> {
 public:
  explicit FashionMNIST(const std::filesystem::path& root, bool train = true, Transform transform = {});
};

/// Kuzushiji-MNIST (same IDX files; also looked for in root/KMNIST/raw).
template <class Transform = transforms::Identity>
class KMNIST : public MNIST<Transform> {
 public:
  explicit KMNIST(const std::filesystem::path& root, bool train = true, Transform transform = {});
};

/// CIFAR-10, binary version, from `root` or root/cifar-10-batches-bin: `data_batch_1.bin` ...
/// `data_batch_5.bin` (train) or test_batch.bin; records of 1 label byte + 3072 image bytes (CHW).
template <class Transform = transforms::Identity>
class CIFAR10 : public VisionDataset<Transform> {
 public:
  explicit CIFAR10(const std::filesystem::path& root, bool train = true, Transform transform = {});
};

/// CIFAR-100, binary version, from `root` or root/cifar-100-binary: train.bin or test.bin; records
/// of a coarse label byte, a fine label byte and 3072 image bytes. targets() are the fine labels
/// (0..99), coarse_targets() the superclasses (0..19). Class names come from fine_label_names.txt
/// when present.
template <class Transform = transforms::Identity>
class CIFAR100 : public VisionDataset<Transform> {
 public:
  explicit CIFAR100(const std::filesystem::path& root, bool train = true, Transform transform = {});
  const Tensor<int64_t>& coarse_targets() const { return coarse_; }

 private:
  CIFAR100(std::pair<Tensor<uint8_t>, Tensor<int64_t>> fine, Tensor<int64_t> coarse, std::vector<std::string> classes, Transform transform)
      : VisionDataset<Transform>(std::move(fine), std::move(transform), std::move(classes)), coarse_(std::move(coarse)) {}
  CIFAR100(std::tuple<Tensor<uint8_t>, Tensor<int64_t>, Tensor<int64_t>, std::vector<std::string>> loaded, Transform transform)
      : CIFAR100({std::get<0>(loaded), std::get<2>(loaded)}, std::get<1>(loaded), std::move(std::get<3>(loaded)), std::move(transform)) {}

  Tensor<int64_t> coarse_;
};

// ------------------------------------------------------------------------------ implementation

template <class Transform>
VisionDataset<Transform>::VisionDataset(std::pair<Tensor<uint8_t>, Tensor<int64_t>> images_labels, Transform transform,
                                        std::vector<std::string> classes)
    : images_(images_labels.first.contiguous()),
      targets_(std::move(images_labels.second)),
      transform_(std::move(transform)),
      classes_(std::move(classes)) {
  DL_CHECK(images_.dim() == 4, "VisionDataset: images must be [N, H, W, C], got shape ", images_.shape());
  DL_CHECK(targets_.dim() == 1 && targets_.size(0) == images_.size(0), "VisionDataset: ", images_.size(0), " images but labels of shape ",
           targets_.shape());
}

template <class Transform>
auto VisionDataset<Transform>::get(int64_t i) const -> sample_type {
  detail::check_index(i, size(), "VisionDataset");
  const int64_t label = targets_.data()[i];
  if constexpr (takes_float) {
    const int64_t h = images_.size(1), w = images_.size(2), c = images_.size(3);
    Tensor<float> image = empty<float>({c, h, w});  // ToTensor straight from the stored bytes
    transforms::detail::hwc_u8_to_chw(images_.data() + i * h * w * c, h, w, c, image.data(), 1.0f / 255.0f, 0.0f);
    return {transform_(std::move(image)), label};
  } else {
    return {transform_(images_.select(0, i)), label};
  }
}

namespace detail {

/// MNIST-format images + labels from IDX files in one of `dirs`.
DL_API std::pair<Tensor<uint8_t>, Tensor<int64_t>> read_mnist(const std::vector<std::filesystem::path>& dirs, bool train, const char* what,
                                                              int64_t num_classes);

/// CIFAR binary records (label bytes, then 3x32x32 CHW) from `files` into NHWC images and labels.
/// labels[k] receives label byte k of each record.
DL_API Tensor<uint8_t> read_cifar(const std::vector<std::filesystem::path>& files, int label_bytes, std::vector<Tensor<int64_t>>& labels,
                                  const std::vector<int64_t>& num_classes, const char* what);

DL_API std::vector<std::string> read_lines(const std::filesystem::path& path);

/// The directory of CIFAR files: root itself or root/sub, whichever holds `probe`.
DL_API std::filesystem::path cifar_dir(const std::filesystem::path& root, const char* sub, const std::string& probe, const char* what);

DL_API std::pair<Tensor<uint8_t>, Tensor<int64_t>> load_cifar10(const std::filesystem::path& root, bool train);

/// Images, coarse labels, fine labels and fine class names of CIFAR-100.
DL_API std::tuple<Tensor<uint8_t>, Tensor<int64_t>, Tensor<int64_t>, std::vector<std::string>> load_cifar100(
    const std::filesystem::path& root, bool train);

}  // namespace detail

template <class Transform>
MNIST<Transform>::MNIST(const std::filesystem::path& root, bool train, Transform transform)
    : MNIST("MNIST", {"0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"},
            root, train, std::move(transform)) {}

template <class Transform>
MNIST<Transform>::MNIST(const char* name, std::vector<std::string> classes, const std::filesystem::path& root, bool train, Transform transform)
    : VisionDataset<Transform>(detail::read_mnist({root, root / name / "raw"}, train, name, int64_t(classes.size())),
                               std::move(transform), classes) {}

template <class Transform>
FashionMNIST<Transform>::FashionMNIST(const std::filesystem::path& root, bool train, Transform transform)
    : MNIST<Transform>("FashionMNIST", {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"},
                       root, train, std::move(transform)) {}

template <class Transform>
KMNIST<Transform>::KMNIST(const std::filesystem::path& root, bool train, Transform transform)
    : MNIST<Transform>("KMNIST", {"o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"}, root, train, std::move(transform)) {}

template <class Transform>
CIFAR10<Transform>::CIFAR10(const std::filesystem::path& root, bool train, Transform transform)
    : VisionDataset<Transform>(detail::load_cifar10(root, train), std::move(transform),
                               {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}) {}

template <class Transform>
CIFAR100<Transform>::CIFAR100(const std::filesystem::path& root, bool train, Transform transform)
    : CIFAR100(detail::load_cifar100(root, train), std::move(transform)) {}

}  // namespace dl::data

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(data, class dl::data::VisionDataset<dl::data::transforms::Normalize>)
DL_EXTERN_TEMPLATE(data, class dl::data::MNIST<dl::data::transforms::Normalize>)
DL_EXTERN_TEMPLATE(data, class dl::data::FashionMNIST<dl::data::transforms::Normalize>)

#if DL_HEADER_ONLY
#include "vision-inl.hpp"
#endif
