// dl/io/safetensors.hpp — the safetensors format (Hugging Face): an 8-byte little-endian header
// length, a JSON header {"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {...}} padded
// with spaces to a multiple of 8 bytes, then the tensors' bytes, contiguous and back to back.
//
//   std::string bytes = dl::io::to_safetensors(sd);
//   dl::StateDict back = dl::io::from_safetensors(bytes);   // fresh CPU tensors, file key order
//
// Reading checks what the reference implementation checks: the header fits in the file (and in
// 100 MB), every tensor's byte range matches its shape and dtype, and the ranges tile the data
// section exactly, without gaps or overlaps.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "json.hpp"
#include "state_dict.hpp"
#include "zip.hpp"

namespace dl::io {

// ------------------------------------------------------------------------------ declarations

/// The bytes of a .safetensors file holding sd: JSON keys in the StateDict's order, data sorted
/// by element size (largest first, so every tensor is aligned to its element size), metadata as
/// "__metadata__". Non-contiguous and non-CPU tensors are written as contiguous copies; tensors
/// sharing memory are written once each (safetensors has no sharing).
std::string to_safetensors(const StateDict& sd);

/// Reads the bytes of a .safetensors file. Dtypes BOOL, U8, I32, I64, F32, F64; any other dtype
/// (F16, BF16, ...) is a dl::Error naming the tensor and the dtype.
StateDict from_safetensors(std::string_view bytes);

namespace detail {
void write_safetensors(const StateDict& sd, Sink& out);
/// Reads a .safetensors file from disk, each tensor straight into its own memory.
StateDict read_safetensors_file(const std::string& path);

/// One tensor of a parsed header; offsets are relative to the start of the data section.
struct SafetensorsEntry {
  std::string name;
  ScalarType dtype;
  Shape shape;
  uint64_t begin, end;
};
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in the header's key order
  std::map<std::string, std::string> metadata;
};
/// Parses and validates a JSON header for a data section of data_size bytes.
SafetensorsHeader parse_safetensors_header(std::string_view json, uint64_t data_size, const std::string& what);
/// Header length from the first 8 bytes, checked against the file size (and the 100 MB limit).
uint64_t safetensors_header_length(const unsigned char* first8, uint64_t file_size, const std::string& what);
}  // namespace detail

}  // namespace dl::io

#if DL_HEADER_ONLY
#include "safetensors-inl.hpp"
#endif
