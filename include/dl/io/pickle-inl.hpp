// dl/io/pickle-inl.hpp — the bodies of dl/io/pickle.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <algorithm>

#include "pickle.hpp"

namespace dl::io::detail::pickle {

// ------------------------------------------------------------------------------ implementation

DL_API std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

DL_API std::string a_kind(Kind k) {
  if (k == Kind::None) return "None";
  return (k == Kind::Int ? "an " : "a ") + std::string(kind_name(k));
}

DL_API void DictData::set(Value key, Value value) {
  if (key.kind == Kind::String) {
    const std::string& s = std::get<std::string>(key.obj->data);
    auto [it, fresh] = string_keys.try_emplace(s, items.size());
    if (!fresh) {
      items[it->second].second = value;  // Python: the key keeps its first position
      return;
    }
  }
  items.emplace_back(key, value);
}

DL_API StorageType storage_type_from_name(std::string_view name) {
  struct Known {
    std::string_view name, torch_dtype;
    bool supported;
    ScalarType dtype;
  };
  static constexpr Known known[] = {
      {"FloatStorage", "float32", true, ScalarType::Float},
      {"DoubleStorage", "float64", true, ScalarType::Double},
      {"LongStorage", "int64", true, ScalarType::Int64},
      {"IntStorage", "int32", true, ScalarType::Int32},
      {"ByteStorage", "uint8", true, ScalarType::UInt8},
      {"BoolStorage", "bool", true, ScalarType::Bool},
      {"HalfStorage", "float16", true, ScalarType::Half},
      {"BFloat16Storage", "bfloat16", true, ScalarType::BFloat16},
      {"CharStorage", "int8", false, ScalarType::Float},
      {"ShortStorage", "int16", false, ScalarType::Float},
      {"ComplexFloatStorage", "complex64", false, ScalarType::Float},
      {"ComplexDoubleStorage", "complex128", false, ScalarType::Float},
      {"QInt8Storage", "qint8", false, ScalarType::Float},
      {"QUInt8Storage", "quint8", false, ScalarType::Float},
      {"QInt32Storage", "qint32", false, ScalarType::Float},
      {"QUInt4x2Storage", "quint4x2", false, ScalarType::Float},
      {"QUInt2x4Storage", "quint2x4", false, ScalarType::Float},
      {"UntypedStorage", "untyped bytes", false, ScalarType::Float},
  };
  for (const Known& k : known)
    if (k.name == name) return {k.supported, k.dtype, std::string(name), k.torch_dtype};
  return {};
}

DL_API std::string_view storage_class_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "BoolStorage";
    case ScalarType::UInt8: return "ByteStorage";
    case ScalarType::Int32: return "IntStorage";
    case ScalarType::Int64: return "LongStorage";
    case ScalarType::Float: return "FloatStorage";
    case ScalarType::Double: return "DoubleStorage";
    case ScalarType::Half: return "HalfStorage";
    case ScalarType::BFloat16: return "BFloat16Storage";
  }
  return "?";
}

DL_API Value Unpickler::make(Kind kind, auto&& data) {
  arena_.emplace_back();
  arena_.back().data = std::forward<decltype(data)>(data);
  return Value{kind, 0, 0, &arena_.back()};
}

DL_API Value Unpickler::pop() {
  // Below the last MARK the stack belongs to the enclosing frame (Python's metastack).
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  DL_CHECK(stack_.size() > floor, "pickle: stack underflow at byte ", pos_);
  Value v = stack_.back();
  stack_.pop_back();
  return v;
}

DL_API Value& Unpickler::top() {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  DL_CHECK(stack_.size() > floor, "pickle: stack underflow at byte ", pos_);
  return stack_.back();
}

DL_API std::vector<Value> Unpickler::pop_mark() {
  DL_CHECK(!marks_.empty(), "pickle: MARK expected before byte ", pos_);
  const size_t m = marks_.back();
  marks_.pop_back();
  std::vector<Value> items(stack_.begin() + std::ptrdiff_t(m), stack_.end());
  stack_.resize(m);
  return items;
}

DL_API Value Unpickler::find_global(std::string_view module, std::string_view name) {
  auto global = [](Global g, int64_t extra = 0) { return Value{Kind::Global, int64_t(g) | (extra << 8), 0, nullptr}; };
  if (module == "collections" && name == "OrderedDict") return global(Global::OrderedDict);
  if (module == "torch._utils" && name == "_rebuild_tensor_v2") return global(Global::RebuildTensorV2);
  if (module == "torch._utils" && name == "_rebuild_parameter") return global(Global::RebuildParameter);
  if (module == "torch._utils" && name == "_rebuild_parameter_with_state")
    return global(Global::RebuildParameterWithState);
  if ((module == "__torch__" || module.starts_with("__torch__.")) && name == "Module") return global(Global::ScriptClass);
  if (module == "torch") {
    StorageType t = storage_type_from_name(name);
    if (!t.torch_name.empty()) {
      storage_types_.push_back(std::move(t));
      return global(Global::Storage, int64_t(storage_types_.size() - 1));
    }
  }
  throw Error(::dl::detail::cat("pickle: global '", module, ".", name,
                          "' is not allowed: dl reads state dicts (tensors, OrderedDict, numbers, strings) and "
                          "never calls other Python objects"));
}

DL_API Value Unpickler::persistent_load(const Value& pid) {
  // torch.save: ('storage', torch.<Type>Storage, key, location, numel)
  const auto* t = pid.kind == Kind::Tuple ? &std::get<std::vector<Value>>(pid.obj->data) : nullptr;
  DL_CHECK(t && t->size() == 5 && (*t)[0].kind == Kind::String &&
               std::get<std::string>((*t)[0].obj->data) == "storage",
           "pickle: persistent id at byte ", pos_, " is not a ('storage', type, key, location, numel) tuple");
  const Value &type = (*t)[1], &key = (*t)[2], &location = (*t)[3], &numel = (*t)[4];
  DL_CHECK(type.kind == Kind::Global && Global(type.i & 0xFF) == Global::Storage,
           "pickle: persistent id at byte ", pos_, " names no torch storage class");
  DL_CHECK(key.kind == Kind::String && location.kind == Kind::String && numel.kind == Kind::Int && numel.i >= 0,
           "pickle: persistent id at byte ", pos_, ": bad storage key, location or size");
  return make(Kind::Storage, StorageRef{int(type.i >> 8), std::get<std::string>(key.obj->data),
                                        std::get<std::string>(location.obj->data), numel.i});
}

DL_API Value Unpickler::reduce(const Value& callable, const Value& args_value) {
  DL_CHECK(callable.kind == Kind::Global, "pickle: REDUCE at byte ", pos_, " calls ", a_kind(callable.kind));
  DL_CHECK(args_value.kind == Kind::Tuple, "pickle: REDUCE at byte ", pos_, " has arguments of type ",
           kind_name(args_value.kind));
  const auto& args = std::get<std::vector<Value>>(args_value.obj->data);
  auto int_tuple = [&](const Value& v, const char* what) {
    DL_CHECK(v.kind == Kind::Tuple, "pickle: tensor ", what, " is ", a_kind(v.kind), ", not a tuple");
    std::vector<int64_t> out;
    for (const Value& x : std::get<std::vector<Value>>(v.obj->data)) {
      DL_CHECK(x.kind == Kind::Int, "pickle: tensor ", what, " holds ", a_kind(x.kind));
      out.push_back(x.i);
    }
    return out;
  };
  switch (Global(callable.i & 0xFF)) {
    case Global::OrderedDict:
      DL_CHECK(args.empty(), "pickle: OrderedDict(...) with ", args.size(), " arguments is not supported");
      return make(Kind::Dict, DictData{});
    case Global::RebuildTensorV2: {
      // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
      DL_CHECK(args.size() == 6 || args.size() == 7, "pickle: _rebuild_tensor_v2 takes 6 or 7 arguments, got ",
               args.size());
      DL_CHECK(args[0].kind == Kind::Storage, "pickle: _rebuild_tensor_v2 of ", a_kind(args[0].kind),
               " instead of a storage");
      DL_CHECK(args[1].kind == Kind::Int, "pickle: tensor storage offset is ", a_kind(args[1].kind));
      TensorRef r{&std::get<StorageRef>(args[0].obj->data), args[1].i, int_tuple(args[2], "size"),
                  int_tuple(args[3], "stride")};
      return make(Kind::Tensor, std::move(r));
    }
    case Global::RebuildParameter:
    case Global::RebuildParameterWithState:
      // (data, requires_grad, backward_hooks[, state]): the parameter's data is the tensor.
      DL_CHECK(!args.empty() && args[0].kind == Kind::Tensor, "pickle: _rebuild_parameter without a tensor");
      return args[0];
    case Global::ScriptClass:
      throw Error(::dl::detail::cat("pickle: REDUCE at byte ", pos_,
                                    " calls a TorchScript class (whose objects only NEWOBJ makes)"));
    case Global::Storage: break;
  }
  throw Error(::dl::detail::cat("pickle: REDUCE at byte ", pos_, " calls a storage class"));
}

DL_API Value Unpickler::load(std::string_view in) {
  DL_CHECK(in.size() <= kMaxBytes, "pickle: ", in.size(), " bytes is more than a state dict needs (limit ",
           kMaxBytes, ")");
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  size_t at = 0;
  auto need = [&](size_t k) {
    DL_CHECK(k <= n - at, "pickle: truncated at byte ", at, " (", k, " more bytes needed, ", n - at, " left)");
  };
  auto uint = [&](int k) {
    need(size_t(k));
    uint64_t v = 0;
    for (int b = 0; b < k; ++b) v |= uint64_t(p[at + size_t(b)]) << (8 * b);
    at += size_t(k);
    return v;
  };
  auto bytes = [&](uint64_t k) {
    need(k);
    std::string s(reinterpret_cast<const char*>(p + at), size_t(k));
    at += size_t(k);
    return s;
  };
  auto line = [&]() {
    const void* nl = std::memchr(p + at, '\n', n - at);
    DL_CHECK(nl, "pickle: unterminated GLOBAL at byte ", at);
    const size_t len = size_t(static_cast<const unsigned char*>(nl) - (p + at));
    std::string s = bytes(len);
    ++at;
    return s;
  };
  auto push_string = [&](std::string s) { stack_.push_back(make(Kind::String, std::move(s))); };
  auto push_int = [&](int64_t v) { stack_.push_back(Value{Kind::Int, v, 0, nullptr}); };
  auto as_list = [&](Value& v) -> std::vector<Value>& {
    DL_CHECK(v.kind == Kind::List, "pickle: APPEND to ", a_kind(v.kind), " at byte ", pos_);
    return std::get<std::vector<Value>>(v.obj->data);
  };
  auto as_dict = [&](Value& v) -> DictData& {
    DL_CHECK(v.kind == Kind::Dict, "pickle: SETITEM on ", a_kind(v.kind), " at byte ", pos_);
    return std::get<DictData>(v.obj->data);
  };
  auto memo_get = [&](uint64_t k) {
    auto it = memo_.find(uint32_t(k));
    DL_CHECK(k <= 0xFFFFFFFFu && it != memo_.end(), "pickle: memo entry ", k, " read before it was written (byte ",
             pos_, ")");
    stack_.push_back(it->second);
  };

  while (true) {
    DL_CHECK(at < n, "pickle: ends at byte ", n, " without STOP (truncated?)");
    pos_ = at;
    const unsigned char op = p[at++];
    switch (op) {
      case 0x80: {  // PROTO
        const uint64_t v = uint(1);
        DL_CHECK(v >= 2 && v <= 5, "pickle: protocol ", v, " is not supported (2 to 5 are)");
        break;
      }
      case 0x95: uint(8); break;  // FRAME: a size hint for buffered readers
      case '.': {                 // STOP
        Value v = pop();
        return v;
      }
      case '(': marks_.push_back(stack_.size()); break;  // MARK
      case '}': stack_.push_back(make(Kind::Dict, DictData{})); break;
      case ']': stack_.push_back(make(Kind::List, std::vector<Value>{})); break;
      case ')': stack_.push_back(make(Kind::Tuple, std::vector<Value>{})); break;
      case 'd': {  // DICT
        std::vector<Value> items = pop_mark();
        DL_CHECK(items.size() % 2 == 0, "pickle: DICT with an odd number of items at byte ", pos_);
        DictData d;
        for (size_t k = 0; k < items.size(); k += 2) d.set(items[k], items[k + 1]);
        stack_.push_back(make(Kind::Dict, std::move(d)));
        break;
      }
      case 'l': stack_.push_back(make(Kind::List, pop_mark())); break;   // LIST
      case 't': stack_.push_back(make(Kind::Tuple, pop_mark())); break;  // TUPLE
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        std::vector<Value> items(size_t(op - 0x84));
        for (size_t k = items.size(); k-- > 0;) items[k] = pop();
        stack_.push_back(make(Kind::Tuple, std::move(items)));
        break;
      }
      case 'a': {  // APPEND
        Value v = pop();
        as_list(top()).push_back(v);
        break;
      }
      case 'e': {  // APPENDS
        std::vector<Value> items = pop_mark();
        auto& list = as_list(top());
        list.insert(list.end(), items.begin(), items.end());
        break;
      }
      case 's': {  // SETITEM
        Value v = pop(), k = pop();
        as_dict(top()).set(k, v);
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Value> items = pop_mark();
        DL_CHECK(items.size() % 2 == 0, "pickle: SETITEMS with an odd number of items at byte ", pos_);
        DictData& d = as_dict(top());
        for (size_t k = 0; k < items.size(); k += 2) d.set(items[k], items[k + 1]);
        break;
      }
      case 'c': {  // GLOBAL "module\nname\n"
        std::string module = line();
        std::string name = line();
        stack_.push_back(find_global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Value name = pop(), module = pop();
        DL_CHECK(name.kind == Kind::String && module.kind == Kind::String, "pickle: STACK_GLOBAL of non-strings at byte ",
                 pos_);
        stack_.push_back(find_global(std::get<std::string>(module.obj->data), std::get<std::string>(name.obj->data)));
        break;
      }
      case 'Q': {  // BINPERSID
        Value pid = pop();
        stack_.push_back(persistent_load(pid));
        break;
      }
      case 'R': {  // REDUCE
        Value args = pop(), callable = pop();
        stack_.push_back(reduce(callable, args));
        break;
      }
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args), for TorchScript archives' attribute holders only
        Value args = pop(), cls = pop();
        DL_CHECK(cls.kind == Kind::Global && Global(cls.i & 0xFF) == Global::ScriptClass && args.kind == Kind::Tuple,
                 "pickle: NEWOBJ at byte ", pos_, " of ", a_kind(cls.kind),
                 ": only the module objects of TorchScript archives are made");
        Value obj = make(Kind::Dict, DictData{});
        script_objects_.push_back(obj.obj);
        stack_.push_back(obj);
        break;
      }
      case 'b': {  // BUILD: a TorchScript object takes its state (a dict of attributes); any other
                   // object's state (OrderedDict._metadata) is not needed
        Value state = pop();
        Value& obj = top();
        if (obj.kind == Kind::Dict &&
            std::find(script_objects_.begin(), script_objects_.end(), obj.obj) != script_objects_.end()) {
          DL_CHECK(state.kind == Kind::Dict, "pickle: BUILD at byte ", pos_, " gives a module object ", a_kind(state.kind),
                   " as its attributes");
          auto& into = std::get<DictData>(obj.obj->data);
          for (const auto& [k, v] : std::get<DictData>(state.obj->data).items) into.set(k, v);
        }
        break;
      }
      case 'J': push_int(int32_t(uint32_t(uint(4)))); break;  // BININT
      case 'K': push_int(int64_t(uint(1))); break;            // BININT1
      case 'M': push_int(int64_t(uint(2))); break;            // BININT2
      case 0x8a:
      case 0x8b: {  // LONG1, LONG4: little-endian two's complement
        const uint64_t len = uint(op == 0x8a ? 1 : 4);
        DL_CHECK(len <= 8, "pickle: integer of ", len, " bytes at byte ", pos_, " does not fit in int64");
        uint64_t v = uint(int(len));
        if (len > 0 && len < 8 && (v >> (8 * len - 1)) & 1) v |= ~uint64_t(0) << (8 * len);
        push_int(int64_t(v));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        need(8);
        uint64_t bits = 0;
        for (int b = 0; b < 8; ++b) bits = (bits << 8) | p[at + size_t(b)];
        at += 8;
        double d;
        std::memcpy(&d, &bits, 8);
        stack_.push_back(Value{Kind::Float, 0, d, nullptr});
        break;
      }
      case 'X': push_string(bytes(uint(4))); break;     // BINUNICODE
      case 0x8c: push_string(bytes(uint(1))); break;    // SHORT_BINUNICODE
      case 0x8d: push_string(bytes(uint(8))); break;    // BINUNICODE8
      case 'U': push_string(bytes(uint(1))); break;     // SHORT_BINSTRING
      case 'T': push_string(bytes(uint(4))); break;     // BINSTRING
      case 'N': stack_.push_back(Value{}); break;       // NONE
      case 0x88: stack_.push_back(Value{Kind::Bool, 1, 0, nullptr}); break;  // NEWTRUE
      case 0x89: stack_.push_back(Value{Kind::Bool, 0, 0, nullptr}); break;  // NEWFALSE
      case 'q': memo_[uint32_t(uint(1))] = top(); break;                      // BINPUT
      case 'r': memo_[uint32_t(uint(4))] = top(); break;                      // LONG_BINPUT
      case 0x94: memo_[uint32_t(memo_.size())] = top(); break;                // MEMOIZE
      case 'h': memo_get(uint(1)); break;                                     // BINGET
      case 'j': memo_get(uint(4)); break;                                     // LONG_BINGET
      default: {
        const char shown = (op >= 0x20 && op < 0x7F) ? char(op) : '?';
        throw Error(::dl::detail::cat("pickle: opcode 0x", "0123456789abcdef"[op >> 4], "0123456789abcdef"[op & 15], " ('",
                                shown, "') at byte ", pos_,
                                " is not part of the state-dict subset dl reads (a corrupt file, or an object "
                                "that is not a state dict)"));
      }
    }
  }
}


DL_API std::string write_state_dict(const std::vector<TensorRecord>& tensors) {
  pickle_detail::Out o;
  o.op(0x80);
  o.op(2);
  o.global("collections", "OrderedDict");
  o.op(')');
  o.op('R');
  if (!tensors.empty()) {
    o.op('(');
    for (const TensorRecord& t : tensors) {
      o.str(t.name);
      o.global("torch._utils", "_rebuild_tensor_v2");
      o.op('(');
      o.op('(');  // persistent id: ('storage', torch.FloatStorage, key, 'cpu', numel)
      o.str("storage");
      o.global("torch", storage_class_name(t.dtype));
      o.str(t.storage_key);
      o.str("cpu");
      o.integer(t.storage_numel);
      o.op('t');
      o.op('Q');
      o.integer(t.offset);
      o.int_tuple(t.size);
      o.int_tuple(t.stride);
      o.op(0x89);  // requires_grad=False
      o.global("collections", "OrderedDict");  // backward_hooks
      o.op(')');
      o.op('R');
      o.op('t');
      o.op('R');
    }
    o.op('u');
  }
  o.op('.');
  return std::move(o.b);
}

}  // namespace dl::io::detail::pickle
