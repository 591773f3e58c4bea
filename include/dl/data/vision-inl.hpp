// dl/data/vision-inl.hpp — the bodies of dl/data/vision.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "vision.hpp"

namespace dl::data::detail {

DL_API std::pair<Tensor<uint8_t>, Tensor<int64_t>> read_mnist(const std::vector<std::filesystem::path>& dirs, bool train, const char* what,
                                                              int64_t num_classes) {
  const std::string prefix = train ? "train" : "t10k";
  const auto image_path = find_file(dirs, prefix + "-images-idx3-ubyte", what);
  const auto label_path = find_file(dirs, prefix + "-labels-idx1-ubyte", what);
  const Tensor<uint8_t> images = read_idx(image_path, 3);
  const Tensor<uint8_t> labels8 = read_idx(label_path, 1);
  DL_CHECK(images.size(0) == labels8.size(0), what, ": ", image_path.string(), " holds ", images.size(0), " images but ", label_path.string(),
           " holds ", labels8.size(0), " labels");
  Tensor<int64_t> labels = empty<int64_t>({labels8.size(0)});
  for (int64_t k = 0; k < labels8.size(0); ++k) {
    const int64_t v = labels8.data()[k];
    DL_CHECK(v < num_classes, what, ": label ", k, " in ", label_path.string(), " is ", v, ", expected 0..", num_classes - 1,
             " (corrupt file?)");
    labels.data()[k] = v;
  }
  return {images.unsqueeze(3), std::move(labels)};
}

DL_API Tensor<uint8_t> read_cifar(const std::vector<std::filesystem::path>& files, int label_bytes, std::vector<Tensor<int64_t>>& labels,
                                  const std::vector<int64_t>& num_classes, const char* what) {
  constexpr int64_t kPixels = 3 * 32 * 32;
  const int64_t record = label_bytes + kPixels;
  std::vector<std::vector<uint8_t>> contents;
  int64_t total = 0;
  for (const auto& f : files) {
    InputFile in(f);
    std::vector<uint8_t> bytes;
    if (const int64_t left = in.remaining(); left >= 0) {  // a plain file: one read of its size
      bytes.resize(size_t(left));
      bytes.resize(in.read(bytes.data(), bytes.size()));
    } else {
      std::vector<uint8_t> chunk(size_t(1) << 20);
      for (size_t got; (got = in.read(chunk.data(), chunk.size())) > 0;) bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + std::ptrdiff_t(got));
    }
    DL_CHECK(!bytes.empty() && int64_t(bytes.size()) % record == 0, what, ": ", f.string(), " has ", bytes.size(),
             " bytes, not a positive multiple of the ", record, "-byte record (truncated or not a CIFAR binary file?)");
    total += int64_t(bytes.size()) / record;
    contents.push_back(std::move(bytes));
  }
  Tensor<uint8_t> images = empty<uint8_t>({total, 32, 32, 3});
  labels.assign(size_t(label_bytes), Tensor<int64_t>());
  for (auto& l : labels) l = empty<int64_t>({total});
  int64_t n = 0;
  for (size_t fi = 0; fi < contents.size(); ++fi) {
    const auto& bytes = contents[fi];
    for (int64_t r = 0; r < int64_t(bytes.size()) / record; ++r, ++n) {
      const uint8_t* rec = bytes.data() + r * record;
      for (int k = 0; k < label_bytes; ++k) {
        DL_CHECK(rec[k] < num_classes[size_t(k)], what, ": record ", r, " of ", files[fi].string(), " has label ", int(rec[k]),
                 ", expected 0..", num_classes[size_t(k)] - 1, " (corrupt file?)");
        labels[size_t(k)].data()[n] = rec[k];
      }
      const uint8_t* px = rec + label_bytes;
      uint8_t* dst = images.data() + n * kPixels;
      for (int64_t p = 0; p < 1024; ++p)
        for (int64_t ch = 0; ch < 3; ++ch) dst[p * 3 + ch] = px[ch * 1024 + p];
    }
  }
  return images;
}

DL_API std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return out;
  InputFile in(path);
  std::string text, line;
  char buf[4096];
  for (size_t got; (got = in.read(buf, sizeof buf)) > 0;) text.append(buf, got);
  for (char ch : text) {
    if (ch == '\n') {
      if (!line.empty()) out.push_back(line);
      line.clear();
    } else if (ch != '\r') {
      line += ch;
    }
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

DL_API std::filesystem::path cifar_dir(const std::filesystem::path& root, const char* sub, const std::string& probe, const char* what) {
  return find_file({root, root / sub}, probe, what).parent_path();
}

DL_API std::pair<Tensor<uint8_t>, Tensor<int64_t>> load_cifar10(const std::filesystem::path& root, bool train) {
  const char* what = "CIFAR10";
  const auto dir = cifar_dir(root, "cifar-10-batches-bin", train ? "data_batch_1.bin" : "test_batch.bin", what);
  std::vector<std::filesystem::path> files;
  if (train) {
    for (int k = 1; k <= 5; ++k) files.push_back(find_file({dir}, "data_batch_" + std::to_string(k) + ".bin", what));
  } else {
    files.push_back(find_file({dir}, "test_batch.bin", what));
  }
  std::vector<Tensor<int64_t>> labels;
  Tensor<uint8_t> images = read_cifar(files, 1, labels, {10}, what);
  return {std::move(images), std::move(labels[0])};
}

DL_API std::tuple<Tensor<uint8_t>, Tensor<int64_t>, Tensor<int64_t>, std::vector<std::string>> load_cifar100(
    const std::filesystem::path& root, bool train) {
  const char* what = "CIFAR100";
  const std::string name = train ? "train.bin" : "test.bin";
  const auto dir = cifar_dir(root, "cifar-100-binary", name, what);
  std::vector<Tensor<int64_t>> labels;
  Tensor<uint8_t> images = read_cifar({find_file({dir}, name, what)}, 2, labels, {20, 100}, what);
  std::vector<std::string> classes = read_lines(dir / "fine_label_names.txt");
  return {std::move(images), std::move(labels[0]), std::move(labels[1]), std::move(classes)};
}

}  // namespace dl::data::detail
