// dl/io/atomic_file-inl.hpp — the bodies of dl/io/atomic_file.hpp's non-template functions (DL_API):
// compiled into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "atomic_file.hpp"

namespace dl::io::detail {

// ------------------------------------------------------------------------------ implementation

DL_API void write_file_atomically(const std::string& path, const char* what, const std::function<void(Sink&)>& write) {
  const std::string tmp = path + ".dl-tmp";
  try {
    FileSink out(tmp);
    write(out);
    out.close();
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw Error(::dl::detail::cat(what, ": cannot move '", tmp, "' to '", path, "': ", std::strerror(err)));
  }
}

}  // namespace dl::io::detail
