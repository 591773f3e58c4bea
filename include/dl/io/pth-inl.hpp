// dl/io/pth-inl.hpp — the bodies of dl/io/pth.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "pth.hpp"
#include "json-inl.hpp"

namespace dl::io {

// ------------------------------------------------------------------------------ implementation

namespace detail {

inline constexpr int kMaxNesting = 64;            // containers inside containers
inline constexpr uint64_t kMaxMetadataBytes = 64 << 20;

DL_API std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, res.ptr);  // "-1.2345e-05"
  std::string sign;
  if (s[0] == '-') sign = "-", s.erase(0, 1);
  const size_t e = s.find('e');
  std::string digits = s.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(s.substr(e + 1));
  const int decpt = exp10 + 1;  // digits[0] is the units digit times 10^exp10
  const int nd = int(digits.size());
  if (decpt <= -4 || decpt > 16) {  // Python's switch to exponent notation
    std::string mant = digits.substr(0, 1) + (nd > 1 ? "." + digits.substr(1) : "");
    std::string ex = std::to_string(std::abs(exp10));
    if (ex.size() < 2) ex = "0" + ex;
    return sign + mant + "e" + (exp10 < 0 ? "-" : "+") + ex;
  }
  if (decpt <= 0) return sign + "0." + std::string(size_t(-decpt), '0') + digits;
  if (decpt >= nd) return sign + digits + std::string(size_t(decpt - nd), '0') + ".0";
  return sign + digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
}

DL_API std::string join_dims(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

#if DL_HAVE_LIBZIP
/// Turns the unpickled value of data.pkl into a StateDict, loading each storage once.
class PthReader {
 public:
  PthReader(const ZipReader& zip, std::string what) : zip_(zip), what_(std::move(what)) {}
  StateDict read();

 private:
  struct Loaded {
    ScalarType dtype;
    int64_t numel;
    std::shared_ptr<Storage> storage;
  };
  void walk(const pickle::Value& v, const std::string& name, int depth);
  void add_metadata(const std::string& name, std::string text);
  AnyTensor tensor(const pickle::TensorRef& r, const std::string& name);
  std::shared_ptr<Storage> storage(const pickle::StorageRef& s, ScalarType dtype, const std::string& name);

  const ZipReader& zip_;
  std::string what_, prefix_;
  bool big_endian_ = false;
  pickle::Unpickler unpickler_;
  StateDict sd_;
  std::unordered_map<std::string, Loaded> storages_;
  size_t budget_ = 0;
};

DL_API StateDict PthReader::read() {
  const int64_t n = zip_.num_entries();
  DL_CHECK(n > 0, what_, ": the zip archive is empty (not a torch.save file)");
  // As PyTorch: the archive's name is the folder of its first entry ("archive", or the file stem).
  const std::string first = zip_.name(0);
  const size_t slash = first.find('/');
  DL_CHECK(slash != std::string::npos && slash > 0, what_, ": first zip entry '", first,
           "' is not inside a folder (not a torch.save file)");
  prefix_ = first.substr(0, slash);
  const int64_t pkl = zip_.locate(prefix_ + "/data.pkl");
  DL_CHECK(pkl >= 0, what_, ": no entry '", prefix_, "/data.pkl' (a zip archive, but not a torch.save file)");
  if (const int64_t bo = zip_.locate(prefix_ + "/byteorder"); bo >= 0) {
    const std::string order = zip_.read_string(bo, 16);
    DL_CHECK(order == "little" || order == "big", what_, ": byteorder entry says '", order, "'");
    big_endian_ = order == "big";
  }
  const std::string bytes = zip_.read_string(pkl, pickle::Unpickler::kMaxBytes);
  pickle::Value root;
  try {
    root = unpickler_.load(bytes);
  } catch (const Error& e) {
    throw Error(::dl::detail::cat(what_, ": ", prefix_, "/data.pkl: ", e.what()));
  }
  DL_CHECK(root.kind == pickle::Kind::Dict, what_, ": the file holds ", pickle::a_kind(root.kind),
           ", not a dict of tensors (dl::load reads state dicts)");
  // Each object is visited once in a tree; more visits mean containers shared many times over.
  budget_ = 2 * unpickler_.num_objects() + 4 * kMaxNesting;
  walk(root, "", 0);
  if (const int64_t md = zip_.locate(prefix_ + "/dl_metadata.json"); md >= 0) {
    const std::string name = prefix_ + "/dl_metadata.json";
    for (auto& [k, v] : parse_string_map(zip_.read_string(md, kMaxMetadataBytes), what_ + ": " + name))
      add_metadata(k, v);
  }
  return std::move(sd_);
}

DL_API void PthReader::add_metadata(const std::string& name, std::string text) {
  DL_CHECK(!sd_.contains(name) && !sd_.metadata.count(name), what_, ": key '", name,
           "' appears twice (after flattening nested containers with '.')");
  sd_.metadata.emplace(name, std::move(text));
}

DL_API void PthReader::walk(const pickle::Value& v, const std::string& name, int depth) {
  using pickle::Kind;
  DL_CHECK(depth <= kMaxNesting, what_, ": containers nested more than ", kMaxNesting, " deep at '", name,
           "' (or a container that contains itself)");
  DL_CHECK(budget_ > 0, what_, ": the pickle's containers are shared so often that flattening them would not end");
  --budget_;
  auto child = [&](const std::string& key) { return name.empty() ? key : name + "." + key; };
  switch (v.kind) {
    case Kind::Dict:
      for (const auto& [key, value] : std::get<pickle::DictData>(v.obj->data).items) {
        std::string k;
        if (key.kind == Kind::String) k = std::get<std::string>(key.obj->data);
        else if (key.kind == Kind::Int) k = std::to_string(key.i);  // optimizer state: {0: {...}}
        else throw Error(::dl::detail::cat(what_, ": dict key of type ", pickle::kind_name(key.kind), " in '", name, "'"));
        walk(value, child(k), depth + 1);
      }
      return;
    case Kind::List:
    case Kind::Tuple: {
      const auto& items = std::get<std::vector<pickle::Value>>(v.obj->data);
      for (size_t k = 0; k < items.size(); ++k) walk(items[k], child(std::to_string(k)), depth + 1);
      return;
    }
    case Kind::Tensor: {
      AnyTensor t = tensor(std::get<pickle::TensorRef>(v.obj->data), name);
      DL_CHECK(!sd_.contains(name) && !sd_.metadata.count(name), what_, ": key '", name,
               "' appears twice (after flattening nested containers with '.')");
      sd_.insert(name, std::move(t));
      return;
    }
    case Kind::None: return add_metadata(name, "None");
    case Kind::Bool: return add_metadata(name, v.i ? "True" : "False");
    case Kind::Int: return add_metadata(name, std::to_string(v.i));
    case Kind::Float: return add_metadata(name, python_float_repr(v.f));
    case Kind::String: return add_metadata(name, std::get<std::string>(v.obj->data));
    case Kind::Global:
    case Kind::Storage: break;
  }
  throw Error(::dl::detail::cat(what_, ": '", name, "' holds a bare ", pickle::kind_name(v.kind),
                                ", which is neither a tensor nor a plain value"));
}

DL_API AnyTensor PthReader::tensor(const pickle::TensorRef& r, const std::string& name) {
  const pickle::StorageRef& s = *r.storage;
  const pickle::StorageType& type = unpickler_.storage_types()[size_t(s.type)];
  DL_CHECK(type.supported, what_, ": tensor '", name, "' has dtype ", type.torch_dtype, " (torch.", type.torch_name,
           "), which dl does not support (it reads bool, uint8, int32, int64, float32 and float64)");
  const auto geometry = [&] {
    return ::dl::detail::cat("size ", join_dims(r.size), ", stride ", join_dims(r.stride), ", storage offset ",
                             r.offset);
  };
  DL_CHECK(r.size.size() == r.stride.size(), what_, ": tensor '", name, "' has ", geometry(),
           ": size and stride differ in length");
  DL_CHECK(r.size.size() <= size_t(kMaxDims), what_, ": tensor '", name, "' has ", r.size.size(),
           " dimensions; dl tensors have at most ", kMaxDims);
  DL_CHECK(r.offset >= 0, what_, ": tensor '", name, "' has a negative storage offset (", geometry(), ")");
  int64_t numel = 1;
  for (size_t d = 0; d < r.size.size(); ++d) {
    DL_CHECK(r.size[d] >= 0 && r.stride[d] >= 0, what_, ": tensor '", name, "' has a negative size or stride (",
             geometry(), ")");
    DL_CHECK(!__builtin_mul_overflow(numel, r.size[d], &numel), what_, ": tensor '", name,
             "': the element count overflows (", geometry(), ")");
  }
  // The last element read, offset + sum (size - 1) * stride, must lie inside the storage.
  if (numel > 0) {
    int64_t last = r.offset;
    for (size_t d = 0; d < r.size.size(); ++d) {
      int64_t step;
      DL_CHECK(!__builtin_mul_overflow(r.size[d] - 1, r.stride[d], &step) && !__builtin_add_overflow(last, step, &last),
               what_, ": tensor '", name, "': offset and strides overflow (", geometry(), ")");
    }
    DL_CHECK(last < s.numel, what_, ": tensor '", name, "' (", geometry(), ") reads element ", last, " of storage '",
             s.key, "', which has ", s.numel, " elements");
  } else {
    DL_CHECK(r.offset <= s.numel, what_, ": tensor '", name, "' (", geometry(), ") starts past the end of storage '",
             s.key, "' (", s.numel, " elements)");
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage(s, type.dtype, name);
  impl->shape = Shape(std::span<const int64_t>(r.size));
  impl->strides = Strides(std::span<const int64_t>(r.stride));
  impl->offset = r.offset;
  impl->dtype = type.dtype;
  return AnyTensor(std::move(impl));
}

DL_API std::shared_ptr<Storage> PthReader::storage(const pickle::StorageRef& s, ScalarType dtype,
                                                   const std::string& name) {
  if (auto it = storages_.find(s.key); it != storages_.end()) {
    DL_CHECK(it->second.dtype == dtype && it->second.numel == s.numel, what_, ": storage '", s.key,
             "' is used as ", it->second.numel, " ", dtype_name(it->second.dtype), " elements and, by tensor '", name,
             "', as ", s.numel, " ", dtype_name(dtype), " elements");
    return it->second.storage;
  }
  const std::string entry = prefix_ + "/data/" + s.key;
  const int64_t idx = zip_.locate(entry);
  DL_CHECK(idx >= 0, what_, ": tensor '", name, "' refers to storage '", s.key, "' but the archive has no entry '",
           entry, "'");
  const size_t es = element_size(dtype);
  uint64_t nbytes = 0;
  DL_CHECK(!__builtin_mul_overflow(uint64_t(s.numel), uint64_t(es), &nbytes), what_, ": storage '", s.key, "' of ",
           s.numel, " elements overflows");
  const uint64_t have = zip_.size(idx);
  DL_CHECK(have == nbytes, what_, ": entry '", entry, "' has ", have, " bytes but tensor '", name, "' expects ",
           s.numel, " ", dtype_name(dtype), " elements (", nbytes, " bytes)");
  auto st = Storage::allocate(size_t(nbytes));
  zip_.read(idx, st->data(), nbytes);
  auto* b = static_cast<unsigned char*>(st->data());
  if (big_endian_ && es > 1)
    for (uint64_t k = 0; k < nbytes; k += es) std::reverse(b + k, b + k + es);
  if (dtype == ScalarType::Bool)  // a bool other than 0 or 1 is undefined behaviour in C++
    for (uint64_t k = 0; k < nbytes; ++k)
      DL_CHECK(b[k] <= 1, what_, ": bool storage '", s.key, "' holds the byte ", int(b[k]), " at element ", k);
  storages_.emplace(s.key, Loaded{dtype, s.numel, st});
  return st;
}
#endif

DL_API void write_pth(const StateDict& sd, Sink& out, bool force_zip64) {
  // Tensors of one dl storage (and dtype) share one stored storage: the element range they use.
  struct Group {
    const Storage* storage;  // null for empty tensors, which get their own empty storage
    ScalarType dtype;
    int64_t lo, hi;
  };
  std::vector<Group> groups;
  std::map<std::pair<const Storage*, int>, size_t> group_index;
  std::vector<AnyTensor> tensors;
  std::vector<size_t> group_of;
  for (const auto& [name, t0] : sd) {
    DL_CHECK(t0.defined(), "save: state_dict entry '", name, "' is an undefined tensor");
    AnyTensor t = t0.device().is_cpu() ? t0 : t0.to(kCPU);
    const TensorImpl& im = *t.impl();
    if (std::any_of(im.strides.begin(), im.strides.end(), [](int64_t s) { return s < 0; })) t = t.contiguous();
    const TensorImpl& impl = *t.impl();
    size_t g = groups.size();
    if (t.numel() == 0) {
      groups.push_back({nullptr, impl.dtype, 0, 0});
    } else {
      int64_t lo = impl.offset, hi = impl.offset + 1;
      for (int d = 0; d < impl.shape.size(); ++d) hi += (impl.shape[d] - 1) * impl.strides[d];
      auto [it, fresh] = group_index.try_emplace({impl.storage.get(), int(impl.dtype)}, groups.size());
      if (fresh) {
        groups.push_back({impl.storage.get(), impl.dtype, lo, hi});
      } else {
        g = it->second;
        groups[g].lo = std::min(groups[g].lo, lo);
        groups[g].hi = std::max(groups[g].hi, hi);
      }
    }
    group_of.push_back(g);
    tensors.push_back(std::move(t));
  }
  std::vector<pickle::TensorRecord> records;
  size_t k = 0;
  for (const auto& [name, t0] : sd) {
    const TensorImpl& impl = *tensors[k].impl();
    const Group& g = groups[group_of[k]];
    records.push_back({name, impl.dtype, std::to_string(group_of[k]), g.hi - g.lo,
                       g.storage ? impl.offset - g.lo : 0, std::vector<int64_t>(impl.shape.begin(), impl.shape.end()),
                       std::vector<int64_t>(impl.strides.begin(), impl.strides.end())});
    ++k;
  }
  ZipWriter zip(out, force_zip64);
  const std::string pkl = pickle::write_state_dict(records);
  zip.add("archive/data.pkl", pkl.data(), pkl.size());
  zip.add("archive/byteorder", "little", 6);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    const size_t es = element_size(g.dtype);
    const char* base = g.storage ? static_cast<const char*>(g.storage->data()) + g.lo * int64_t(es) : nullptr;
    zip.add("archive/data/" + std::to_string(gi), base, size_t(g.hi - g.lo) * es);
  }
  zip.add("archive/version", "3\n", 2);
  if (!sd.metadata.empty()) {
    std::string md;
    try {
      md = nlohmann::ordered_json(sd.metadata).dump();
    } catch (const nlohmann::json::exception& e) {
      throw Error(::dl::detail::cat("save: metadata is not valid UTF-8 (", e.what(), ")"));
    }
    zip.add("archive/dl_metadata.json", md.data(), md.size());
  }
  zip.finish();
}

#if DL_HAVE_LIBZIP
DL_API StateDict read_pth_file(const std::string& path) {
  ZipReader zip = ZipReader::open_file(path);
  return PthReader(zip, "load('" + path + "')").read();
}
#else
DL_API StateDict read_pth_file(const std::string& path) {
  throw Error("load('" + path + "'): reading .pth files needs libzip, and dl was built without it "
              "(install libzip-dev and reconfigure), or save the state dict as .safetensors");
}
#endif

}  // namespace detail

DL_API std::string to_pth(const StateDict& sd) {
  std::string out;
  detail::StringSink sink(out);
  detail::write_pth(sd, sink);
  return out;
}

DL_API StateDict from_pth(std::string_view bytes) {
#if DL_HAVE_LIBZIP
  auto zip = [&] {
    try {
      return detail::ZipReader::open_memory(bytes);
    } catch (const Error& e) {
      throw Error(std::string("from_pth: ") + e.what());
    }
  }();
  return detail::PthReader(zip, "from_pth").read();
#else
  (void)bytes;
  throw Error("from_pth: reading .pth files needs libzip, and dl was built without it (install libzip-dev and "
              "reconfigure), or use .safetensors");
#endif
}

}  // namespace dl::io
