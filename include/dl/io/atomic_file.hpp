// dl/io/atomic_file.hpp — writing a file through a temporary one renamed into place, so that a
// failed write leaves any earlier file intact (dl::save, torch::save).
#pragma once

#include <functional>
#include <string>

#include "../config.hpp"
#include "zip.hpp"

namespace dl::io::detail {

// ------------------------------------------------------------------------------ declarations

/// Calls write(sink) on `path + ".dl-tmp"`, then renames that file to path; on any failure the
/// temporary file is removed and the error (prefixed by `what` for a failed rename) propagates.
void write_file_atomically(const std::string& path, const char* what, const std::function<void(Sink&)>& write);

}  // namespace dl::io::detail

#if DL_HEADER_ONLY
#include "atomic_file-inl.hpp"
#endif
