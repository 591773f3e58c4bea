// dl/io/zip.hpp — the zip layer of .pth files: a writer of stored (uncompressed) entries whose data
// start at multiples of 64 bytes, as torch.save writes them (ZIP64 when sizes need it), and a
// reader on libzip that checks every size against the archive before memory is allocated.
//
//   detail::StringSink out(bytes);
//   detail::ZipWriter zip(out);
//   zip.add("archive/version", "3\n", 2);
//   zip.finish();
#pragma once

#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../error.hpp"

#if DL_HAVE_LIBZIP
#include <zip.h>
#endif
#if DL_HAVE_ZLIB
#include <zlib.h>
#endif

namespace dl::io::detail {

static_assert(std::endian::native == std::endian::little,
              "dl::io reads and writes little-endian files with plain copies: port it before using a big-endian host");

// ------------------------------------------------------------------------------ declarations

/// Where serialised bytes go: a string (in-memory forms) or a file.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const void* data, size_t n) = 0;
  /// Bytes written so far.
  uint64_t tell() const { return written_; }

 protected:
  uint64_t written_ = 0;
};

class StringSink final : public Sink {
 public:
  explicit StringSink(std::string& out) : out_(out) {}
  DL_API void write(const void* data, size_t n) override;

 private:
  std::string& out_;
};

/// Writes to `path`; close() reports write errors (a full disk) as dl::Error.
class FileSink final : public Sink {
 public:
  explicit FileSink(const std::string& path);
  DL_API ~FileSink() override;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  DL_API void write(const void* data, size_t n) override;
  void close();

 private:
  std::FILE* f_ = nullptr;
  std::string path_;
};

/// CRC-32 (the zip polynomial), continued from `crc` (0 to start): zlib's when dl has zlib
/// (about twice as fast), else crc32_portable.
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);
uint32_t crc32_portable(const void* data, size_t n, uint32_t crc = 0);

/// A zip archive of stored entries. Each entry's data begins at a multiple of 64 bytes (the local
/// header is padded with an extra field, as PyTorch's writer does), so a reader may map tensors
/// in place. ZIP64 records are written when an offset, a size or the entry count needs them, or
/// always with force_zip64 (tests use it to check the ZIP64 path on small archives).
class ZipWriter {
 public:
  explicit ZipWriter(Sink& out, bool force_zip64 = false) : out_(out), force_zip64_(force_zip64) {}
  void add(std::string_view name, const void* data, size_t n);
  /// Writes the central directory; the archive is complete after this.
  void finish();

 private:
  struct Entry {
    std::string name;
    uint32_t crc;
    uint64_t size;
    uint64_t offset;
  };
  Sink& out_;
  bool force_zip64_;
  std::vector<Entry> entries_;
};

#if DL_HAVE_LIBZIP
/// A read-only zip archive (libzip) from a file or from bytes the caller keeps alive.
class ZipReader {
 public:
  static ZipReader open_file(const std::string& path);
  static ZipReader open_memory(std::string_view bytes);
  ZipReader(ZipReader&& o) noexcept : za_(o.za_), archive_size_(o.archive_size_) { o.za_ = nullptr; }
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;
  ZipReader& operator=(ZipReader&&) = delete;
  ~ZipReader() {
    if (za_) zip_discard(za_);
  }

  int64_t num_entries() const { return zip_get_num_entries(za_, 0); }
  /// Name of entry i (empty when libzip cannot give one).
  std::string name(int64_t i) const;
  /// Index of the entry called `name`, or -1.
  int64_t locate(const std::string& name) const;
  /// Uncompressed size of entry i, after checking that the archive can hold it: a stored entry
  /// must lie inside the archive, a deflated one may expand at most 1032x (deflate's limit).
  uint64_t size(int64_t i) const;
  /// Reads all of entry i, whose size must be n, into dst; libzip checks the CRC.
  void read(int64_t i, void* dst, uint64_t n) const;
  /// Entry i as a string of at most `limit` bytes.
  std::string read_string(int64_t i, uint64_t limit) const;

 private:
  ZipReader(zip_t* za, uint64_t archive_size) : za_(za), archive_size_(archive_size) {}
  zip_t* za_;
  uint64_t archive_size_;
};
#endif

}  // namespace dl::io::detail

#if DL_HEADER_ONLY
#include "zip-inl.hpp"
#endif
