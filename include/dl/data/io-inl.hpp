// dl/data/io-inl.hpp — the bodies of dl/data/io.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "io.hpp"

namespace dl::data::detail {

DL_API InputFile::InputFile(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  DL_CHECK(std::filesystem::exists(path, ec), "cannot open ", path.string(), ": no such file");
  DL_CHECK(!std::filesystem::is_directory(path, ec), "cannot read ", path.string(), ": it is a directory");
  file_ = std::fopen(path.c_str(), "rb");
  DL_CHECK(file_, "cannot open ", path.string(), ": ", std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, file_);
  const bool gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!gzip) {
    std::rewind(file_);
    return;
  }
#if defined(DL_DATA_ZLIB)
  std::fclose(file_);
  file_ = nullptr;
  gz_ = gzopen(path.c_str(), "rb");
  DL_CHECK(gz_, "cannot open ", path.string(), " with zlib");
  gzbuffer(gz_, 1 << 18);
#else
  std::fclose(file_);
  file_ = nullptr;
  throw Error(dl::detail::cat("cannot read ", path.string(),
                              ": it is gzip-compressed and dl was built without zlib (install zlib and rebuild, or gunzip the file)"));
#endif
}

DL_API InputFile::~InputFile() {
  if (file_) std::fclose(file_);
#if defined(DL_DATA_ZLIB)
  if (gz_) gzclose(gz_);
#endif
}

DL_API size_t InputFile::read(void* dst, size_t n) {
  if (file_) {
    const size_t got = std::fread(dst, 1, n, file_);
    DL_CHECK(got == n || !std::ferror(file_), "error reading ", path_.string(), ": ", std::strerror(errno));
    return got;
  }
#if defined(DL_DATA_ZLIB)
  size_t total = 0;
  auto* p = static_cast<char*>(dst);
  while (total < n) {
    const unsigned chunk = unsigned(std::min<size_t>(n - total, size_t(1) << 30));
    const int got = gzread(gz_, p + total, chunk);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      throw Error(dl::detail::cat("corrupt compressed data in ", path_.string(), ": ", msg ? msg : "zlib error"));
    }
    if (got == 0) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      DL_CHECK(code == Z_OK || code == Z_BUF_ERROR, "corrupt compressed data in ", path_.string(), ": ", msg);
      break;
    }
    total += size_t(got);
  }
  return total;
#else
  return 0;
#endif
}

DL_API int64_t InputFile::remaining() const {
  if (!file_) return -1;
  const long pos = std::ftell(file_);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path_, ec);
  return ec || pos < 0 ? -1 : int64_t(size) - int64_t(pos);
}

DL_API void InputFile::read_exact(void* dst, size_t n, const char* what) {
  const size_t got = read(dst, n);
  if (got == n) return;
  std::string extra;
#if defined(DL_DATA_ZLIB)
  if (gz_) {
    int code = 0;
    const char* msg = gzerror(gz_, &code);
    if (code != Z_OK && msg) extra = dl::detail::cat(" (zlib: ", msg, ")");
  }
#endif
  throw Error(dl::detail::cat("truncated file ", path_.string(), ": expected ", n, " bytes of ", what, ", got ", got, extra));
}

DL_API std::filesystem::path find_file(const std::vector<std::filesystem::path>& dirs, const std::string& name, const char* what) {
  std::error_code ec;
  std::string tried;
  for (const auto& dir : dirs)
    for (const std::string& candidate : {name, name + ".gz"}) {
      const auto p = dir / candidate;
      if (std::filesystem::is_regular_file(p, ec)) return p;
      tried += (tried.empty() ? "" : ", ") + p.string();
    }
  throw Error(dl::detail::cat(what, ": cannot find ", name, " (tried ", tried, "); dl never downloads datasets, "
                              "put the files there yourself"));
}

DL_API uint32_t read_be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
}  // namespace dl::data::detail

namespace dl::data {

DL_API Tensor<uint8_t> read_idx(const std::filesystem::path& path, int expected_dims) {
  detail::InputFile in(path);
  unsigned char header[4];
  in.read_exact(header, 4, "IDX header");
  const uint32_t magic = detail::read_be32(header);
  const int type = header[2], ndim = header[3];
  char expected[16] = "";
  if (expected_dims > 0) std::snprintf(expected, sizeof expected, "0x%08X", 0x800u + unsigned(expected_dims));
  char got[16];
  std::snprintf(got, sizeof got, "0x%08X", magic);
  DL_CHECK(header[0] == 0 && header[1] == 0 && ndim >= 1 && ndim <= kMaxDims &&
               (expected_dims <= 0 || (type == 0x08 && ndim == expected_dims)),
           "bad magic number ", got, " in ", path.string(), " (expected ", expected_dims > 0 ? expected : "0x000008NN",
           " for an IDX file of unsigned bytes", expected_dims > 0 ? dl::detail::cat(" with ", expected_dims, " dimensions") : "",
           "); is this the right file?");
  DL_CHECK(type == 0x08, "unsupported IDX element type 0x", std::hex, type, " in ", path.string(), " (only unsigned bytes, 0x08)");
  std::vector<unsigned char> dims(size_t(4 * ndim));
  in.read_exact(dims.data(), dims.size(), "IDX dimensions");
  Shape shape;
  // `span` bounds the product of the non-zero sizes too: an empty tensor of shape [0, 2^31, 2^31]
  // has no data, but its strides would overflow.
  constexpr int64_t kLimit = int64_t(1) << 40;
  int64_t total = 1, span = 1;
  for (int d = 0; d < ndim; ++d) {
    const int64_t size = int64_t(detail::read_be32(dims.data() + 4 * d));
    shape.push_back(size);
    total = size == 0 || total <= kLimit / size ? total * size : kLimit + 1;
    span = size <= 1 || span <= kLimit / size ? span * std::max<int64_t>(size, 1) : kLimit + 1;
  }
  DL_CHECK(total <= kLimit && span <= kLimit, "implausible IDX dimensions ", shape, " in ", path.string(), " (corrupt header?)");
  const int64_t left = in.remaining();
  DL_CHECK(left < 0 || left >= total, "truncated file ", path.string(), ": its header announces shape ", shape, " (", total,
           " bytes of data) but only ", left, " bytes follow");
  constexpr int64_t kFirstChunk = int64_t(1) << 20;
  if (left < 0 && total > kFirstChunk) {
    // A compressed file's length is unknown up front: a 30-byte .gz whose header claims a terabyte
    // must not allocate it. Read in chunks that double, so memory only grows with data that
    // actually exists (at the cost of one copy of the data).
    std::vector<unsigned char> bytes;
    while (int64_t(bytes.size()) < total) {
      const size_t at = bytes.size(), want = size_t(std::min<int64_t>(total - int64_t(at), std::max<int64_t>(kFirstChunk, int64_t(at))));
      bytes.resize(at + want);
      const size_t got = in.read(bytes.data() + at, want);
      DL_CHECK(got == want, "truncated file ", path.string(), ": its header announces shape ", shape, " (", total,
               " bytes of data) but only ", at + got, " bytes follow");
    }
    Tensor<uint8_t> out = empty<uint8_t>(shape);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  Tensor<uint8_t> out = empty<uint8_t>(shape);
  in.read_exact(out.data(), size_t(out.numel()), dl::detail::cat("data for shape ", shape).c_str());
  return out;
}

}  // namespace dl::data
