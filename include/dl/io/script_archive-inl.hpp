// dl/io/script_archive-inl.hpp — the bodies of dl/io/script_archive.hpp's non-template functions
// (DL_API): compiled into each program in header-only mode, once into libdl_kernels in compiled mode
// (see DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <type_traits>

#include "atomic_file.hpp"
#include "pickle.hpp"
#include "script_archive.hpp"

namespace dl::io {

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Whether TorchScript source can name the attribute directly (else `__annotations__["name"]`).
inline bool script_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

DL_API void write_archive(const ArchiveModule& root, Sink& out) {
  // One storage per distinct CPU storage, as PyTorch writes them: tensors that share memory (tied
  // weights, views) refer to the same data/<key> with their own offset and strides, and load
  // sharing it again. A tensor on another device is written as a CPU copy of its own.
  struct Stored {
    std::shared_ptr<Storage> storage;
    ScalarType dtype;
    std::string key;
  };
  std::vector<Stored> storages;
  std::vector<std::pair<std::string, std::string>> classes;  // file name, source
  pickle::pickle_detail::Out o;
  o.op(0x80);
  o.op(2);
  int next_class = 0;

  auto tensor_value = [&](const std::string& name, const AnyTensor& t0) {
    DL_CHECK(t0.defined(), "torch::save: '", name, "' is an undefined tensor");
    const AnyTensor t = t0.device().is_cpu() ? t0 : t0.to(kCPU).contiguous();
    const TensorImpl& impl = *t.impl();
    const size_t es = element_size(impl.dtype);
    auto found = std::find_if(storages.begin(), storages.end(),
                              [&](const Stored& s) { return s.storage == impl.storage && s.dtype == impl.dtype; });
    if (found == storages.end()) {
      storages.push_back({impl.storage, impl.dtype, std::to_string(storages.size())});
      found = storages.end() - 1;
    }
    o.global("torch._utils", "_rebuild_tensor_v2");
    o.op('(');
    o.op('(');  // persistent id: ('storage', torch.FloatStorage, key, 'cpu', numel)
    o.str("storage");
    o.global("torch", pickle::storage_class_name(impl.dtype));
    o.str(found->key);
    o.str("cpu");
    o.integer(int64_t(impl.storage->nbytes() / es));
    o.op('t');
    o.op('Q');
    o.integer(impl.offset);
    o.int_tuple(std::vector<int64_t>(impl.shape.begin(), impl.shape.end()));
    o.int_tuple(std::vector<int64_t>(impl.strides.begin(), impl.strides.end()));
    o.op(0x89);  // requires_grad=False
    o.global("collections", "OrderedDict");
    o.op(')');
    o.op('R');
    o.op('t');
    o.op('R');
  };

  // One class per module: its TorchScript declaration lists the attributes and their types.
  auto write_module = [&](auto& self, const ArchiveModule& m, bool is_root) -> std::string {
    const std::string qualified = is_root ? "__torch__" : "__torch__.___torch_mangle_" + std::to_string(next_class++);
    o.global(qualified, "Module");
    o.op(')');
    o.op(0x81);  // NEWOBJ
    o.op('}');
    std::string decl = "class Module(Module):\n";
    auto list = [](const std::vector<std::pair<std::string, AnyTensor>>& v) {
      std::string s = "[";
      for (const auto& [n, t] : v) s += "\"" + n + "\", ";
      return s + "]";
    };
    decl += "  __parameters__ = " + list(m.parameters) + "\n";
    decl += "  __buffers__ = " + list(m.buffers) + "\n";
    std::string annotated;
    auto declare = [&](const std::string& name, const std::string& type) {
      if (script_identifier(name)) decl += "  " + name + " : " + type + "\n";
      else annotated += "  __annotations__[\"" + name + "\"] = " + type + "\n";
    };
    const size_t n = m.parameters.size() + m.buffers.size() + m.tensors.size() + m.attributes.size() + m.children.size();
    if (n > 0) o.op('(');
    for (const auto* tensors : {&m.parameters, &m.buffers, &m.tensors})
      for (const auto& [name, t] : *tensors) {
        o.str(name);
        tensor_value(name, t);
        declare(name, "Tensor");
      }
    for (const auto& [name, value] : m.attributes) {
      o.str(name);
      std::visit(
          [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            auto binfloat = [&](double x) {
              uint64_t bits;
              std::memcpy(&bits, &x, 8);
              o.op('G');
              for (int k = 7; k >= 0; --k) o.op(uint8_t(bits >> (8 * k)));
            };
            if constexpr (std::is_same_v<V, double>) {
              binfloat(v);
              declare(name, "float");
            } else if constexpr (std::is_same_v<V, int64_t>) {
              o.integer(v);
              declare(name, "int");
            } else if constexpr (std::is_same_v<V, bool>) {
              o.op(v ? 0x88 : 0x89);
              declare(name, "bool");
            } else if constexpr (std::is_same_v<V, std::string>) {
              o.str(v);
              declare(name, "str");
            } else {
              binfloat(v.first);
              binfloat(v.second);
              o.op(0x86);  // TUPLE2
              declare(name, "Tuple[float, float]");
            }
          },
          value);
    }
    for (const auto& [name, child] : m.children) {
      o.str(name);
      declare(name, self(self, child, false) + ".Module");
    }
    if (n > 0) o.op('u');
    o.op('b');  // BUILD: the attributes
    if (!annotated.empty()) decl += "  __annotations__ = []\n" + annotated;
    classes.emplace_back(is_root ? "code/__torch__.py" : "code/__torch__/" + qualified.substr(10) + ".py", decl);
    return qualified;
  };
  write_module(write_module, root, true);
  o.op('.');

  ZipWriter zip(out);
  zip.add("archive/data.pkl", o.b.data(), o.b.size());
  for (auto it = classes.rbegin(); it != classes.rend(); ++it) zip.add("archive/" + it->first, it->second.data(), it->second.size());
  static constexpr char kNoConstants[] = {'\x80', '\x02', ')', '.'};  // pickle of ()
  zip.add("archive/constants.pkl", kNoConstants, sizeof kNoConstants);
  zip.add("archive/version", "3\n", 2);
  for (const Stored& s : storages) {
    const size_t bytes = s.storage->nbytes() / element_size(s.dtype) * element_size(s.dtype);
    zip.add("archive/data/" + s.key, bytes ? s.storage->data() : nullptr, bytes);
  }
  zip.finish();
}

}  // namespace detail

DL_API std::string to_archive(const ArchiveModule& root) {
  std::string out;
  detail::StringSink sink(out);
  detail::write_archive(root, sink);
  return out;
}

DL_API void save_archive(const ArchiveModule& root, const std::string& path) {
  detail::write_file_atomically(path, "torch::save", [&](detail::Sink& out) { detail::write_archive(root, out); });
}

}  // namespace dl::io
