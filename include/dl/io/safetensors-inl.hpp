// dl/io/safetensors-inl.hpp — the bodies of dl/io/safetensors.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "safetensors.hpp"
#include "json-inl.hpp"

namespace dl::io {

// ------------------------------------------------------------------------------ implementation

namespace detail {

inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;  // the reference's limit

DL_API std::string_view safetensors_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "BOOL";
    case ScalarType::UInt8: return "U8";
    case ScalarType::Int32: return "I32";
    case ScalarType::Int64: return "I64";
    case ScalarType::Float: return "F32";
    case ScalarType::Double: return "F64";
    case ScalarType::Half: return "F16";
    case ScalarType::BFloat16: return "BF16";
  }
  return "?";
}

DL_API uint64_t safetensors_header_length(const unsigned char* b, uint64_t file_size, const std::string& what) {
  DL_CHECK(file_size >= 8, what, ": ", file_size, " bytes is too short for a safetensors file (8-byte header length)");
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(b[k]) << (8 * k);
  DL_CHECK(n <= kMaxSafetensorsHeader, what, ": header length ", n, " exceeds the safetensors limit of ",
           kMaxSafetensorsHeader, " bytes (corrupt file?)");
  DL_CHECK(n <= file_size - 8, what, ": header length ", n, " runs past the end of the file (", file_size,
           " bytes): truncated or corrupt");
  return n;
}

DL_API SafetensorsHeader parse_safetensors_header(std::string_view text, uint64_t data_size, const std::string& what) {
  using json = nlohmann::ordered_json;
  DL_CHECK(!text.empty() && text[0] == '{', what, ": the header does not start with '{' (not a safetensors file)");
  json j;
  std::set<std::string> keys;
  try {
    // The callback bounds the nesting (the format needs 3 levels) and rejects repeated tensor names.
    j = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      DL_CHECK(depth <= 4, what, ": the JSON header is nested more deeply than safetensors headers are");
      if (event == json::parse_event_t::key && depth == 1)
        DL_CHECK(keys.insert(parsed.get<std::string>()).second, what, ": the header names '",
                 parsed.get<std::string>(), "' twice");
      return true;
    });
  } catch (const json::exception& e) {
    throw Error(::dl::detail::cat(what, ": malformed JSON header (", e.what(), ")"));
  }
  DL_CHECK(j.is_object(), what, ": the header is ", a_json(j), ", not an object");
  SafetensorsHeader h;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (v.is_null()) continue;
      DL_CHECK(v.is_object(), what, ": __metadata__ is ", a_json(v), ", not an object of strings");
      for (const auto& [k, s] : v.items()) {
        DL_CHECK(s.is_string(), what, ": __metadata__ value of '", k, "' is ", a_json(s), ", not a string");
        h.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    DL_CHECK(v.is_object(), what, ": tensor '", name, "' is described by ", a_json(v), ", not an object");
    DL_CHECK(v.contains("dtype") && v.contains("shape") && v.contains("data_offsets"), what, ": tensor '", name,
             "' needs dtype, shape and data_offsets");
    const json &dt = v["dtype"], &shape = v["shape"], &offsets = v["data_offsets"];
    DL_CHECK(dt.is_string(), what, ": tensor '", name, "': dtype is ", a_json(dt), ", not a string");
    const std::string dtype = dt.get<std::string>();
    SafetensorsEntry e{name, ScalarType::Float, {}, 0, 0};
    if (dtype == "BOOL") e.dtype = ScalarType::Bool;
    else if (dtype == "U8") e.dtype = ScalarType::UInt8;
    else if (dtype == "I32") e.dtype = ScalarType::Int32;
    else if (dtype == "I64") e.dtype = ScalarType::Int64;
    else if (dtype == "F32") e.dtype = ScalarType::Float;
    else if (dtype == "F64") e.dtype = ScalarType::Double;
    else if (dtype == "F16") e.dtype = ScalarType::Half;
    else if (dtype == "BF16") e.dtype = ScalarType::BFloat16;
    else {
      static const std::set<std::string_view> known = {"I8", "I16", "U16", "U32", "U64",
                                                       "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2",
                                                       "F4", "C64", "C128"};
      DL_CHECK(!known.count(dtype), what, ": tensor '", name, "' has dtype ", dtype,
               ", which dl does not support (it reads BOOL, U8, I32, I64, F32 and F64)");
      throw Error(::dl::detail::cat(what, ": tensor '", name, "' has the unknown dtype '", dtype, "'"));
    }
    DL_CHECK(shape.is_array(), what, ": tensor '", name, "': shape is ", a_json(shape), ", not an array");
    DL_CHECK(shape.size() <= size_t(kMaxDims), what, ": tensor '", name, "' has ", shape.size(),
             " dimensions; dl tensors have at most ", kMaxDims);
    uint64_t numel = 1;
    for (const json& s : shape) {
      DL_CHECK(s.is_number_unsigned(), what, ": tensor '", name, "': shape ", shape.dump(),
               " holds something other than a non-negative integer");
      const uint64_t d = s.get<uint64_t>();
      DL_CHECK(d <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(numel, d, &numel), what, ": tensor '", name,
               "': the element count of shape ", shape.dump(), " overflows");
      e.shape.push_back(int64_t(d));
    }
    DL_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                 offsets[1].is_number_unsigned(),
             what, ": tensor '", name, "': data_offsets ", offsets.dump(), " is not a pair of non-negative integers");
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    uint64_t nbytes = 0;
    DL_CHECK(!__builtin_mul_overflow(numel, uint64_t(element_size(e.dtype)), &nbytes), what, ": tensor '", name,
             "': the byte count of shape ", shape.dump(), " overflows");
    DL_CHECK(e.begin <= e.end && e.end <= data_size, what, ": tensor '", name, "': data_offsets [", e.begin, ", ",
             e.end, "] lie outside the data section of ", data_size, " bytes");
    DL_CHECK(e.end - e.begin == nbytes, what, ": tensor '", name, "': shape ", shape.dump(), " of ", dtype, " needs ",
             nbytes, " bytes but data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin);
    h.entries.push_back(std::move(e));
  }
  // The byte ranges, sorted, must tile [0, data_size) exactly (the reference's rule).
  std::vector<size_t> order(h.entries.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = h.entries[a], &y = h.entries[b];
    return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
  });
  uint64_t at = 0;
  for (size_t i : order) {
    const SafetensorsEntry& e = h.entries[i];
    DL_CHECK(e.begin == at, what, ": tensor '", e.name, "' starts at byte ", e.begin, " of the data section, where ",
             e.begin < at ? "it overlaps the previous tensor, which ends at " : "a gap begins at ", at);
    at = e.end;
  }
  DL_CHECK(at == data_size, what, ": the tensors cover ", at, " bytes of a data section of ", data_size,
           " (trailing bytes)");
  return h;
}

/// Validated bytes of a bool tensor: C++ bools other than 0 and 1 are undefined behaviour.
DL_API void check_bools(const SafetensorsEntry& e, const void* data, const std::string& what) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (uint64_t k = 0; k < e.end - e.begin; ++k)
    DL_CHECK(b[k] <= 1, what, ": BOOL tensor '", e.name, "' holds the byte ", int(b[k]), " at element ", k);
}

DL_API StateDict read_safetensors(const SafetensorsHeader& h, auto&& read_range, const std::string& what) {
  StateDict sd;
  for (const SafetensorsEntry& e : h.entries) {
    auto impl = ::dl::detail::make_impl(e.dtype, e.shape);
    read_range(e.begin, impl->data(), e.end - e.begin);
    if (e.dtype == ScalarType::Bool) check_bools(e, impl->data(), what);
    sd.insert(e.name, AnyTensor(std::move(impl)));
  }
  sd.metadata = h.metadata;
  return sd;
}

DL_API void write_safetensors(const StateDict& sd, Sink& out) {
  using json = nlohmann::ordered_json;
  std::vector<AnyTensor> data;  // contiguous CPU tensors, in StateDict order
  for (const auto& [name, t] : sd) {
    DL_CHECK(t.defined(), "save: state_dict entry '", name, "' is an undefined tensor");
    DL_CHECK(name != "__metadata__", "save: '__metadata__' is reserved by safetensors and cannot name a tensor");
    AnyTensor c = t.device().is_cpu() ? t : t.to(kCPU);
    data.push_back(c.contiguous());
  }
  // Largest elements first: with the header padded to 8 bytes every tensor is aligned.
  std::vector<size_t> order(data.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return element_size(data[a].dtype()) > element_size(data[b].dtype());
  });
  std::vector<uint64_t> begin(data.size());
  uint64_t at = 0;
  for (size_t i : order) {
    begin[i] = at;
    at += uint64_t(data[i].numel()) * element_size(data[i].dtype());
  }
  json header = json::object();
  if (!sd.metadata.empty()) header["__metadata__"] = sd.metadata;
  size_t k = 0;
  for (const auto& [name, t] : sd) {
    const AnyTensor& c = data[k];
    const uint64_t nbytes = uint64_t(c.numel()) * element_size(c.dtype());
    header[name] = {{"dtype", std::string(safetensors_dtype(c.dtype()))},
                    {"shape", std::vector<int64_t>(c.shape().begin(), c.shape().end())},
                    {"data_offsets", {begin[k], begin[k] + nbytes}}};
    ++k;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    throw Error(::dl::detail::cat("save: a key or metadata string is not valid UTF-8 (", e.what(), ")"));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len[8];
  for (int b = 0; b < 8; ++b) len[b] = uint8_t(uint64_t(text.size()) >> (8 * b));
  out.write(len, 8);
  out.write(text.data(), text.size());
  for (size_t i : order) out.write(data[i].impl()->data(), size_t(data[i].numel()) * element_size(data[i].dtype()));
}

DL_API StateDict read_safetensors_file(const std::string& path) {
  const std::string what = "load('" + path + "')";
  std::FILE* f = std::fopen(path.c_str(), "rb");
  DL_CHECK(f, "cannot open '", path, "': ", std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  DL_CHECK(std::fseek(f, 0, SEEK_END) == 0, what, ": cannot seek");
  const long size = std::ftell(f);
  DL_CHECK(size >= 0, what, ": cannot tell the file size");
  std::rewind(f);
  unsigned char first8[8] = {};
  const size_t got8 = std::fread(first8, 1, 8, f);
  const uint64_t n = safetensors_header_length(first8, got8 < 8 ? got8 : uint64_t(size), what);
  std::string text(n, '\0');
  DL_CHECK(std::fread(text.data(), 1, n, f) == n, what, ": cannot read the header");
  const uint64_t data_start = 8 + n;
  const SafetensorsHeader h = parse_safetensors_header(text, uint64_t(size) - data_start, what);
  return read_safetensors(
      h,
      [&](uint64_t begin, void* dst, uint64_t nbytes) {
        if (nbytes == 0) return;
        DL_CHECK(std::fseek(f, long(data_start + begin), SEEK_SET) == 0 && std::fread(dst, 1, nbytes, f) == nbytes,
                 what, ": cannot read ", nbytes, " bytes at offset ", data_start + begin, " (file changed or unreadable)");
      },
      what);
}

}  // namespace detail

DL_API std::string to_safetensors(const StateDict& sd) {
  std::string out;
  detail::StringSink sink(out);
  detail::write_safetensors(sd, sink);
  return out;
}

DL_API StateDict from_safetensors(std::string_view bytes) {
  const std::string what = "from_safetensors";
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t n = detail::safetensors_header_length(b, bytes.size(), what);
  const uint64_t data_start = 8 + n;
  const auto h = detail::parse_safetensors_header(bytes.substr(8, n), bytes.size() - data_start, what);
  return detail::read_safetensors(
      h,
      [&](uint64_t begin, void* dst, uint64_t nbytes) {
        if (nbytes > 0) std::memcpy(dst, b + data_start + begin, nbytes);
      },
      what);
}

}  // namespace dl::io
