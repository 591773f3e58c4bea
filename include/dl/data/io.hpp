// dl/data/io.hpp — reading dataset files the user has (never downloading): a reader that opens
// plain or gzip files alike (zlib, when dl is built with it), and IDX files (MNIST's format).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#if defined(DL_HAVE_ZLIB) && DL_HAVE_ZLIB  // set by meson when zlib is found (links -lz)
#include <zlib.h>
#define DL_DATA_ZLIB 1
#endif

#include "../config.hpp"
#include "../tensor.hpp"

namespace dl::data {

// ------------------------------------------------------------------------------ declarations

/// Reads an IDX file (plain or .gz) of unsigned bytes into a uint8 tensor of the file's shape.
/// `expected_dims` > 0 checks the number of dimensions. Throws dl::Error naming the file on a
/// missing file, a wrong magic number, a truncated body or corrupt compressed data.
Tensor<uint8_t> read_idx(const std::filesystem::path& path, int expected_dims = 0);

namespace detail {

/// A file opened for sequential reading; gzip files (by their magic bytes) are inflated on the fly.
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// Reads up to n bytes; returns how many were read (fewer only at the end of the data).
  size_t read(void* dst, size_t n);
  /// Reads exactly n bytes or throws "truncated" naming `what` and the counts.
  void read_exact(void* dst, size_t n, const char* what);
  bool compressed() const { return gz_ != nullptr; }
  /// Bytes left in an uncompressed file (-1 for compressed ones, whose size is unknown).
  int64_t remaining() const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
#if defined(DL_DATA_ZLIB)
  gzFile gz_ = nullptr;
#else
  void* gz_ = nullptr;
#endif
};

/// dirs[k] / name or dirs[k] / (name + ".gz"), the first that exists; throws naming every path tried.
std::filesystem::path find_file(const std::vector<std::filesystem::path>& dirs, const std::string& name, const char* what);

}  // namespace detail

// ------------------------------------------------------------------------------ implementation

namespace detail {

DL_API std::filesystem::path find_file(const std::vector<std::filesystem::path>& dirs, const std::string& name, const char* what);

DL_API uint32_t read_be32(const unsigned char* p);

}  // namespace detail

DL_API Tensor<uint8_t> read_idx(const std::filesystem::path& path, int expected_dims);

}  // namespace dl::data

#if DL_HEADER_ONLY
#include "io-inl.hpp"
#endif
