// dl/io/zip-inl.hpp — the bodies of dl/io/zip.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "zip.hpp"

namespace dl::io::detail {

// ------------------------------------------------------------------------------ implementation

DL_API void StringSink::write(const void* data, size_t n) {
  out_.append(static_cast<const char*>(data), n);
  written_ += n;
}

DL_API FileSink::FileSink(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "wb");
  DL_CHECK(f_, "cannot open '", path, "' for writing: ", std::strerror(errno));
}

DL_API FileSink::~FileSink() {
  if (f_) std::fclose(f_);
}

DL_API void FileSink::write(const void* data, size_t n) {
  DL_CHECK(f_, "write to '", path_, "' after close");
  if (n == 0) return;
  DL_CHECK(std::fwrite(data, 1, n, f_) == n, "cannot write to '", path_, "': ", std::strerror(errno));
  written_ += n;
}

DL_API void FileSink::close() {
  if (!f_) return;
  const bool failed = std::ferror(f_) != 0;
  const int rc = std::fclose(f_);
  f_ = nullptr;
  DL_CHECK(!failed && rc == 0, "cannot write to '", path_, "': ", std::strerror(errno));
}

namespace zip_detail {
// Slicing-by-8 tables: 8 bytes per step, about 2.5 GB/s (zlib's braided CRC: 5.5 GB/s). The
// writer computes each entry's CRC before writing its local header: no data descriptor needed.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;
constexpr CrcTables make_crc_tables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}
inline constexpr CrcTables kCrc = make_crc_tables();

/// Little-endian fields of zip records.
struct Bytes {
  std::string b;
  Bytes& u16(uint64_t v) { return put(v, 2); }
  Bytes& u32(uint64_t v) { return put(v, 4); }
  Bytes& u64(uint64_t v) { return put(v, 8); }
  Bytes& str(std::string_view s) {
    b.append(s);
    return *this;
  }
  Bytes& put(uint64_t v, int n) {
    for (int k = 0; k < n; ++k) b.push_back(char((v >> (8 * k)) & 0xFF));
    return *this;
  }
};
inline constexpr uint64_t k32 = 0xFFFFFFFFu;
inline constexpr uint16_t kUtf8Flag = 0x0800;  // names are UTF-8
inline constexpr uint16_t kDosDate = 0x0021;   // 1980-01-01: archives are byte-for-byte reproducible
}  // namespace zip_detail

DL_API uint32_t crc32(const void* data, size_t n, uint32_t crc) {
#if DL_HAVE_ZLIB
  return uint32_t(::crc32_z(crc, static_cast<const Bytef*>(data), n));
#else
  return crc32_portable(data, n, crc);
#endif
}

DL_API uint32_t crc32_portable(const void* data, size_t n, uint32_t crc) {
  const auto& t = zip_detail::kCrc;
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; n > 0; --n, ++p) crc = t[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

DL_API void ZipWriter::add(std::string_view name, const void* data, size_t n) {
  using namespace zip_detail;
  DL_CHECK(name.size() < 0xFFFF, "zip: entry name of ", name.size(), " bytes is too long");
  const uint64_t offset = out_.tell();
  const uint32_t crc = crc32(data, n);
  const bool z64 = force_zip64_ || n >= k32;
  Bytes h;
  h.u32(0x04034b50).u16(z64 ? 45 : 20).u16(kUtf8Flag).u16(0).u16(0).u16(kDosDate).u32(crc);
  h.u32(z64 ? k32 : n).u32(z64 ? k32 : n);
  // Padding extra field "FB" so that the data start is a multiple of 64 (at least its 4-byte
  // header, so a pad shorter than 4 bytes becomes 64 more).
  const uint64_t fixed = offset + 30 + name.size() + (z64 ? 20 : 0) + 4;
  const uint64_t pad = (64 - fixed % 64) % 64;
  h.u16(name.size()).u16((z64 ? 20 : 0) + 4 + pad).str(name);
  if (z64) h.u16(0x0001).u16(16).u64(n).u64(n);
  h.u16(0x4246).u16(pad).str(std::string(pad, 'Z'));
  out_.write(h.b.data(), h.b.size());
  out_.write(data, n);
  entries_.push_back({std::string(name), crc, uint64_t(n), offset});
}

DL_API void ZipWriter::finish() {
  using namespace zip_detail;
  const uint64_t cd_offset = out_.tell();
  Bytes cd;
  for (const Entry& e : entries_) {
    // ZIP64 extra: only the fields whose 32-bit slot overflows, in this order.
    Bytes x;
    const bool big_size = force_zip64_ || e.size >= k32, big_offset = force_zip64_ || e.offset >= k32;
    if (big_size) x.u64(e.size).u64(e.size);
    if (big_offset) x.u64(e.offset);
    const bool z64 = !x.b.empty();
    cd.u32(0x02014b50).u16(z64 ? 45 : 20).u16(z64 ? 45 : 20).u16(kUtf8Flag).u16(0).u16(0).u16(kDosDate).u32(e.crc);
    cd.u32(big_size ? k32 : e.size).u32(big_size ? k32 : e.size);
    cd.u16(e.name.size()).u16(z64 ? 4 + x.b.size() : 0).u16(0).u16(0).u16(0).u32(0);
    cd.u32(big_offset ? k32 : e.offset).str(e.name);
    if (z64) cd.u16(0x0001).u16(x.b.size()).str(x.b);
  }
  out_.write(cd.b.data(), cd.b.size());
  const uint64_t cd_size = cd.b.size(), count = entries_.size();
  const bool z64 = force_zip64_ || count >= 0xFFFF || cd_offset >= k32 || cd_size >= k32;
  Bytes end;
  if (z64) {
    const uint64_t z64_offset = out_.tell();
    end.u32(0x06064b50).u64(44).u16(45).u16(45).u32(0).u32(0).u64(count).u64(count).u64(cd_size).u64(cd_offset);
    end.u32(0x07064b50).u32(0).u64(z64_offset).u32(1);
  }
  end.u32(0x06054b50).u16(0).u16(0).u16(z64 ? 0xFFFF : count).u16(z64 ? 0xFFFF : count);
  end.u32(z64 ? k32 : cd_size).u32(z64 ? k32 : cd_offset).u16(0);
  out_.write(end.b.data(), end.b.size());
}

#if DL_HAVE_LIBZIP
namespace zip_detail {
DL_API std::string error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}
}  // namespace zip_detail

DL_API ZipReader ZipReader::open_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  DL_CHECK(f, "cannot open '", path, "': ", std::strerror(errno));
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fclose(f);
  int code = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  DL_CHECK(za, "'", path, "' is not a readable zip archive (", zip_detail::error_text(code), ")");
  return ZipReader(za, uint64_t(size < 0 ? 0 : size));
}

DL_API ZipReader ZipReader::open_memory(std::string_view bytes) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
  if (!src) {
    const std::string msg = zip_error_strerror(&err);
    zip_error_fini(&err);
    throw Error("zip: cannot read the archive bytes (" + msg + ")");
  }
  zip_t* za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!za) {
    zip_source_free(src);
    const std::string msg = zip_error_strerror(&err);
    zip_error_fini(&err);
    throw Error("not a readable zip archive (" + msg + ")");
  }
  zip_error_fini(&err);
  return ZipReader(za, bytes.size());
}

DL_API std::string ZipReader::name(int64_t i) const {
  const char* n = zip_get_name(za_, zip_uint64_t(i), ZIP_FL_ENC_RAW);
  return n ? std::string(n) : std::string();
}

DL_API int64_t ZipReader::locate(const std::string& name) const {
  return zip_name_locate(za_, name.c_str(), ZIP_FL_ENC_RAW);
}

DL_API uint64_t ZipReader::size(int64_t i) const {
  zip_stat_t st;
  zip_stat_init(&st);
  DL_CHECK(zip_stat_index(za_, zip_uint64_t(i), 0, &st) == 0, "zip: cannot stat entry ", i, " (",
           zip_strerror(za_), ")");
  const std::string n = name(i);
  DL_CHECK((st.valid & ZIP_STAT_SIZE) && (st.valid & ZIP_STAT_COMP_SIZE) && (st.valid & ZIP_STAT_COMP_METHOD),
           "zip: entry '", n, "' has no size");
  if (st.comp_method == ZIP_CM_STORE) {
    DL_CHECK(st.comp_size == st.size && st.size <= archive_size_, "zip: stored entry '", n, "' claims ",
             st.size, " bytes (", st.comp_size, " stored) in an archive of ", archive_size_, " bytes");
  } else {
    DL_CHECK(st.comp_method == ZIP_CM_DEFLATE, "zip: entry '", n, "' uses compression method ", st.comp_method,
             "; .pth archives hold stored (or deflated) entries");
    DL_CHECK(st.comp_size <= archive_size_ && st.size / 1032 <= st.comp_size, "zip: deflated entry '", n,
             "' claims ", st.size, " bytes from ", st.comp_size, " compressed bytes");
  }
  return st.size;
}

DL_API void ZipReader::read(int64_t i, void* dst, uint64_t n) const {
  const std::string nm = name(i);
  zip_file_t* f = zip_fopen_index(za_, zip_uint64_t(i), 0);
  DL_CHECK(f, "zip: cannot open entry '", nm, "' (", zip_strerror(za_), ")");
  auto* p = static_cast<char*>(dst);
  uint64_t done = 0;
  std::string problem;
  while (done < n) {
    const zip_int64_t got = zip_fread(f, p + done, n - done);
    if (got <= 0) {
      problem = got < 0 ? zip_file_strerror(f) : "it ends after " + std::to_string(done) + " of " + std::to_string(n) + " bytes";
      break;
    }
    done += uint64_t(got);
  }
  // One more read reaches the end of the entry, where libzip compares the CRC.
  if (problem.empty()) {
    char extra;
    const zip_int64_t got = zip_fread(f, &extra, 1);
    if (got < 0) problem = zip_file_strerror(f);
    else if (got > 0) problem = "it holds more than " + std::to_string(n) + " bytes";
  }
  zip_fclose(f);
  DL_CHECK(problem.empty(), "zip: cannot read entry '", nm, "': ", problem);
}

DL_API std::string ZipReader::read_string(int64_t i, uint64_t limit) const {
  const uint64_t n = size(i);
  DL_CHECK(n <= limit, "zip: entry '", name(i), "' has ", n, " bytes (at most ", limit, " expected)");
  std::string s(n, '\0');
  read(i, s.data(), n);
  return s;
}
#endif

}  // namespace dl::io::detail
