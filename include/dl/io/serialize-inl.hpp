// dl/io/serialize-inl.hpp — the bodies of dl/io/serialize.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "atomic_file.hpp"
#include "serialize.hpp"

namespace dl {

// ------------------------------------------------------------------------------ implementation

DL_API io::Format io::format_for_path(std::string_view path) {
  const size_t dot = path.rfind('.'), slash = path.find_last_of("/\\");
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) return Format::safetensors;
  const std::string_view ext = path.substr(dot);
  if (ext == ".pth" || ext == ".pt" || ext == ".bin" || ext == ".ckpt") return Format::pth;
  return Format::safetensors;
}

DL_API void save(const StateDict& sd, const std::string& path, io::Format format) {
  if (format == io::Format::from_extension) format = io::format_for_path(path);
  io::detail::write_file_atomically(path, "save", [&](io::detail::Sink& out) {
    if (format == io::Format::pth) io::detail::write_pth(sd, out);
    else io::detail::write_safetensors(sd, out);
  });
}

DL_API StateDict load(const std::string& path) {
  unsigned char head[16] = {};
  size_t got = 0;
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    DL_CHECK(f, "load: cannot open '", path, "': ", std::strerror(errno));
    got = std::fread(head, 1, sizeof head, f);
    std::fclose(f);
  }
  const auto starts = [&](std::string_view magic) {
    return got >= magic.size() && std::memcmp(head, magic.data(), magic.size()) == 0;
  };
  if (starts("PK\x03\x04") || starts("PK\x05\x06")) return io::detail::read_pth_file(path);
  if (got >= 9 && head[8] == '{') return io::detail::read_safetensors_file(path);
  // torch.save before 1.6 (or with _use_new_zipfile_serialization=False): pickles back to back.
  DL_CHECK(!(got >= 2 && head[0] == 0x80 && head[1] <= 5), "load('", path,
           "'): a legacy PyTorch file (torch.save before 1.6 or with _use_new_zipfile_serialization=False), "
           "which dl does not read; re-save it with a current torch.save, or as safetensors");
  DL_CHECK(got > 0, "load('", path, "'): the file is empty");
  std::string shown;
  for (size_t k = 0; k < std::min<size_t>(got, 8); ++k) {
    shown += "0123456789abcdef"[head[k] >> 4];
    shown += "0123456789abcdef"[head[k] & 15];
    shown += ' ';
  }
  throw Error(detail::cat("load('", path, "'): neither a safetensors file (8-byte header length, then '{') nor a "
                          "PyTorch zip archive; it starts with bytes ", shown));
}

}  // namespace dl
