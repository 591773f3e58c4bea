// dl/io/pickle.hpp — the pickle subset of PyTorch state dicts: a restricted unpickler that builds
// plain values (dicts, lists, tuples, numbers, strings, storage and tensor references) and never
// calls anything but an allow-list of constructors, and the writer of torch.save's data.pkl.
//
// Allowed globals: collections.OrderedDict, torch._utils._rebuild_tensor_v2,
// torch._utils._rebuild_parameter(_with_state), the torch.<Type>Storage classes and the attribute
// holders of TorchScript archives (`__torch__.* Module`, whose objects read as dicts). Any other
// global or opcode is a dl::Error naming it.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "../config.hpp"
#include "../dtype.hpp"
#include "../error.hpp"

namespace dl::io::detail::pickle {

// ------------------------------------------------------------------------------ declarations

/// The allowed globals. Storage classes dl cannot hold (HalfStorage, ...) are allowed so that the
/// error can name the tensor that uses one.
enum class Global : uint8_t {
  OrderedDict,
  RebuildTensorV2,
  RebuildParameter,
  RebuildParameterWithState,
  Storage,  // a torch.<Type>Storage class; Value::i holds the StorageType
  // A class of a TorchScript archive (`__torch__.<name> Module`, what libtorch's torch::save and
  // torch.jit.save write): NEWOBJ makes an object whose BUILD state (its attributes) it becomes, read
  // as a dict, so that a module archive reads as nested dicts of tensors ("fc.weight").
  ScriptClass,
};

/// A torch.<Type>Storage class: dl's dtype when dl has one.
struct StorageType {
  bool supported = false;
  ScalarType dtype = ScalarType::Float;  // when supported
  std::string torch_name;                // "HalfStorage"
  std::string_view torch_dtype;          // "float16"
};

enum class Kind : uint8_t { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };
std::string_view kind_name(Kind k);
/// "an int", "a list", "None": for messages.
std::string a_kind(Kind k);

struct Object;

/// One pickle value. Scalars live inline; containers point into the unpickler's arena, so that
/// shared references (memo) and self-references cost nothing and free without recursion.
struct Value {
  Kind kind = Kind::None;
  int64_t i = 0;  // Bool, Int; Global: the Global; Storage-class Global: index into storage_types
  double f = 0;
  Object* obj = nullptr;
};

/// ('storage', torch.<Type>Storage, key, location, numel): a persistent id.
struct StorageRef {
  int type = 0;  // index into Unpickler::storage_types()
  std::string key;
  std::string location;
  int64_t numel = 0;
};

/// _rebuild_tensor_v2(storage, storage_offset, size, stride, ...).
struct TensorRef {
  const StorageRef* storage = nullptr;
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;
  std::unordered_map<std::string, size_t> string_keys;  // position of each string key
  void set(Value key, Value value);
};

struct Object {
  std::variant<std::string, std::vector<Value>, DictData, StorageRef, TensorRef> data;
};

/// Runs a pickle (protocol 2 to 5) of the allowed subset and returns its value. The value points
/// into this object's arena: keep the Unpickler alive while using it.
class Unpickler {
 public:
  /// Bytes of input larger than this are refused (a state dict's pickle is ~100 bytes a tensor).
  static constexpr size_t kMaxBytes = size_t(1) << 30;

  Value load(std::string_view bytes);
  const std::vector<StorageType>& storage_types() const { return storage_types_; }
  /// Number of objects the pickle created (bounds the work of walking its value).
  size_t num_objects() const { return arena_.size(); }

 private:
  Value make(Kind kind, auto&& data);
  Value pop();
  Value& top();
  std::vector<Value> pop_mark();
  Value find_global(std::string_view module, std::string_view name);
  Value reduce(const Value& callable, const Value& args);
  Value persistent_load(const Value& pid);

  std::deque<Object> arena_;  // deque: stable addresses
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, Value> memo_;
  std::vector<StorageType> storage_types_;
  std::vector<const Object*> script_objects_;  // NEWOBJ's objects, whose BUILD state becomes their content
  size_t pos_ = 0;  // for messages
};

/// The element type of a storage class name ("FloatStorage" -> float32), or unsupported.
StorageType storage_type_from_name(std::string_view name);
/// torch's storage class of a dl dtype ("FloatStorage").
std::string_view storage_class_name(ScalarType t);

/// A tensor of torch.save's data.pkl: storage `key` of dtype, geometry as in PyTorch.
struct TensorRecord {
  std::string name;
  ScalarType dtype;
  std::string storage_key;
  int64_t storage_numel;
  int64_t offset;
  std::vector<int64_t> size, stride;
};

/// data.pkl for an OrderedDict of tensors, as torch.save writes it (protocol 2).
std::string write_state_dict(const std::vector<TensorRecord>& tensors);

/// The pickle opcodes write_state_dict emits (protocol 2), one method per kind of value.
namespace pickle_detail {
struct Out {
  std::string b;
  void op(unsigned char c) { b.push_back(char(c)); }
  void str(std::string_view s) {  // BINUNICODE
    op('X');
    for (int k = 0; k < 4; ++k) b.push_back(char((uint64_t(s.size()) >> (8 * k)) & 0xFF));
    b.append(s);
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      op(uint8_t(v));
    } else if (v >= 0 && v < 65536) {
      op('M');
      op(uint8_t(v));
      op(uint8_t(v >> 8));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      for (int k = 0; k < 4; ++k) op(uint8_t(uint32_t(v) >> (8 * k)));
    } else {
      op(0x8a);
      op(8);
      for (int k = 0; k < 8; ++k) op(uint8_t(uint64_t(v) >> (8 * k)));
    }
  }
  void global(std::string_view module, std::string_view name) {
    op('c');
    b.append(module);
    b.push_back('\n');
    b.append(name);
    b.push_back('\n');
  }
  void int_tuple(const std::vector<int64_t>& v) {
    if (v.empty()) return op(')');
    op('(');
    for (int64_t x : v) integer(x);
    op('t');
  }
};
}  // namespace pickle_detail

}  // namespace dl::io::detail::pickle

#if DL_HEADER_ONLY
#include "pickle-inl.hpp"
#endif
