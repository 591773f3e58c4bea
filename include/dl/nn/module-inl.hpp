// dl/nn/module-inl.hpp — the bodies of dl/nn/module.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "module.hpp"

namespace dl::nn::detail {

DL_API std::vector<std::string> split_names(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view n = list.substr(start, end - start);
    while (!n.empty() && std::isspace(static_cast<unsigned char>(n.front()))) n.remove_prefix(1);
    while (!n.empty() && std::isspace(static_cast<unsigned char>(n.back()))) n.remove_suffix(1);
    if (!n.empty()) out.emplace_back(n);
    start = end + 1;
  }
  return out;
}
}  // namespace dl::nn::detail

namespace dl::nn {

DL_API void HookHandle::remove() {
  if (auto r = registry_.lock()) {
    std::erase_if(r->pre, [&](const auto& h) { return h.first == id_; });
    std::erase_if(r->post, [&](const auto& h) { return h.first == id_; });
  }
  registry_.reset();
}

DL_API Module::Module(const Module& other)
    : training_(other.training_),
      hooks_(other.hooks_ ? std::make_shared<HookHandle::Registry>(*other.hooks_) : nullptr),
      parameters_(other.parameters_),
      buffers_(other.buffers_),
      children_(other.children_) {}

DL_API Module& Module::operator=(const Module& other) {
  if (this != &other) {
    Module tmp(other);
    *this = std::move(tmp);
  }
  return *this;
}

DL_API std::string Module::type_name() const {
  int status = 0;
  std::string name = typeid(*this).name();
  if (char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status)) {
    name = d;
    std::free(d);
  }
  if (const size_t t = name.find('<'); t != std::string::npos) name.resize(t);
  if (const size_t p = name.rfind("::"); p != std::string::npos) name = name.substr(p + 2);
  return name;
}

DL_API void Module::visit_members(detail::MemberVisitor& v) {
  visit_declared_(v);
  visit_declared_buffers_(v);
  for (auto& [n, t] : parameters_)
    if (t.defined()) v.parameter(n, detail::TensorSlot(t));
  for (auto& [n, t] : buffers_)
    if (t.defined()) v.buffer(n, detail::TensorSlot(t));
  for (auto& [n, m] : children_)
    if (m) v.child(n, *m);
}

DL_API std::vector<Named<AnyTensor>> Module::named_buffers(bool recurse) {
  std::vector<Named<AnyTensor>> out;
  std::unordered_set<const TensorImpl*> seen;
  walk("", recurse, [&](const std::string& prefix, Module& m) {
    detail::FnVisitor v(detail::ignore,
                        [&](const std::string& n, const detail::TensorSlot& s) {
                          AnyTensor t = s.get();
                          if (seen.insert(t.impl().get()).second) out.emplace_back(prefix.empty() ? n : prefix + "." + n, t);
                        },
                        detail::ignore);
    m.visit_members(v);
  });
  return out;
}

DL_API std::vector<AnyTensor> Module::buffers(bool recurse) {
  std::vector<AnyTensor> out;
  for (auto& [n, b] : named_buffers(recurse)) out.push_back(std::move(b));
  return out;
}

DL_API std::vector<Named<Module*>> Module::named_children() {
  std::vector<Named<Module*>> out;
  std::unordered_set<const Module*> seen;
  detail::FnVisitor v(detail::ignore, detail::ignore, [&](const std::string& n, Module& c) {
    if (seen.insert(&c).second) out.emplace_back(n, &c);
  });
  visit_members(v);
  return out;
}

DL_API std::vector<Module*> Module::children() {
  std::vector<Module*> out;
  for (auto& [n, c] : named_children()) out.push_back(c);
  return out;
}

DL_API std::vector<Named<Module*>> Module::named_modules(const std::string& prefix) {
  std::vector<Named<Module*>> out;
  walk(prefix, true, [&](const std::string& p, Module& m) { out.emplace_back(p, &m); });
  return out;
}

DL_API std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [n, m] : named_modules()) out.push_back(m);
  return out;
}

DL_API Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (Module* c : children()) c->apply(fn);
  fn(*this);
  return *this;
}

DL_API Module& Module::train(bool on) {
  for (Module* m : modules()) m->training_ = on;
  return *this;
}

DL_API void Module::zero_grad(bool set_to_none) {
  walk("", true, [&](const std::string&, Module& m) {
    detail::FnVisitor v(
        [&](const std::string&, const detail::TensorSlot& s) {
          const TensorImplPtr p = s.get().impl();  // a copy: s.get() is a temporary
          if (!p->autograd) return;
          p->autograd->sparse_grad.reset();  // a sparse gradient becomes none either way
          if (!p->autograd->grad) return;
          if (set_to_none) p->autograd->grad = nullptr;
          else dl::detail::zero_bytes(*p->autograd->grad);
        },
        detail::ignore, detail::ignore);
    m.visit_members(v);
  });
}

DL_API Module& Module::requires_grad_(bool requires_grad) {
  walk("", true, [&](const std::string&, Module& m) {
    detail::FnVisitor v(
        [&](const std::string& n, const detail::TensorSlot& s) {
          const AnyTensor t = s.get();
          DL_CHECK(!requires_grad || t.is<float>() || t.is<double>(), "requires_grad_: parameter ", n, " is ", dtype_name(t.dtype()),
                   "; only floating point tensors can require gradients");
          DL_CHECK(requires_grad || !t.impl()->autograd || !t.impl()->autograd->grad_fn, "requires_grad_: parameter ", n,
                   " is not a leaf");
          autograd::detail::meta(t.impl()).requires_grad = requires_grad;
        },
        detail::ignore, detail::ignore);
    m.visit_members(v);
  });
  return *this;
}

DL_API Module& Module::to(Device device) {
  auto move = [&](const detail::TensorSlot& s, bool parameter) {
    const AnyTensor t = s.get();
    if (t.device() == device) return;
    AnyTensor moved = t.detach().to(device);
    if (parameter && t.impl()->autograd) {
      auto& m = autograd::detail::meta(moved.impl());
      m.requires_grad = t.impl()->autograd->requires_grad;
      if (t.impl()->autograd->grad) m.grad = AnyTensor(t.impl()->autograd->grad).to(device).impl();
    }
    s.set(moved);
  };
  walk("", true, [&](const std::string&, Module& m) {
    detail::FnVisitor v([&](const std::string&, const detail::TensorSlot& s) { move(s, true); },
                        [&](const std::string&, const detail::TensorSlot& s) { move(s, false); }, detail::ignore);
    m.visit_members(v);
  });
  return *this;
}

DL_API StateDict Module::state_dict() {
  StateDict sd;
  // Not walk(): a module reached twice under two names is saved under both, as PyTorch does.
  std::function<void(const std::string&, Module&)> go = [&](const std::string& prefix, Module& m) {
    std::vector<std::pair<std::string, Module*>> kids;
    auto add = [&](const std::string& n, const detail::TensorSlot& s) { sd.insert(prefix + n, s.get().detach()); };
    detail::FnVisitor v(add, add, [&](const std::string& n, Module& c) { kids.emplace_back(n, &c); });
    m.visit_members(v);
    for (auto& [n, c] : kids) go(prefix + n + ".", *c);
  };
  go("", *this);
  return sd;
}
}  // namespace dl::nn

namespace dl::nn::detail {

DL_API void copy_into(const AnyTensor& dst, const AnyTensor& src, const std::string& key) {
  DL_CHECK(dst.device().is_cpu() && src.device().is_cpu(), "load_state_dict: ", key, " is on ", src.device(),
           "; load into a module on the CPU, then move it with to(device)");
  if (dst.dtype() == src.dtype()) {
    dl::detail::copy_bytes(*dst.impl(), *src.impl());
  } else if ((dst.is<float>() || dst.is<double>()) && (src.is<float>() || src.is<double>())) {
    const AnyTensor s = src.contiguous();
    AnyTensor converted(dl::detail::make_impl(dst.dtype(), dst.shape()));
    const int64_t n = s.numel();
    if (dst.is<float>()) {
      const double* from = static_cast<const double*>(s.impl()->data());
      float* to = static_cast<float*>(converted.impl()->data());
      for (int64_t i = 0; i < n; ++i) to[i] = float(from[i]);
    } else {
      const float* from = static_cast<const float*>(s.impl()->data());
      double* to = static_cast<double*>(converted.impl()->data());
      for (int64_t i = 0; i < n; ++i) to[i] = double(from[i]);
    }
    dl::detail::copy_bytes(*dst.impl(), *converted.impl());
  } else {
    throw Error(dl::detail::cat("While copying the parameter named \"", key, "\", expected a tensor of dtype ",
                                dtype_name(dst.dtype()), " but the state dict holds ", dtype_name(src.dtype())));
  }
  dst.impl()->storage->bump_version();
}
}  // namespace dl::nn::detail

namespace dl::nn {

DL_API LoadResult Module::load_state_dict(const StateDict& sd, bool strict) {
  LoadResult result;
  std::vector<std::string> errors;
  std::unordered_set<std::string> used;
  for (const auto& [key, t] : state_dict()) {  // the module's own keys, in order
    if (!sd.contains(key)) {
      result.missing_keys.push_back(key);
      continue;
    }
    used.insert(key);
    const AnyTensor& src = sd.at(key);
    if (src.shape() != t.shape()) {
      errors.push_back(dl::detail::cat("size mismatch for ", key, ": copying a param with shape ", src.shape(),
                                       " from checkpoint, the shape in current model is ", t.shape(), "."));
      continue;
    }
    detail::copy_into(t, src, key);
  }
  for (const auto& [key, t] : sd)
    if (!used.count(key)) result.unexpected_keys.push_back(key);
  auto quoted = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "\"" : ", \"") + k + "\"";
    return s;
  };
  if (strict) {
    if (!result.unexpected_keys.empty())
      errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " + quoted(result.unexpected_keys) + ". ");
    if (!result.missing_keys.empty())
      errors.insert(errors.begin(), "Missing key(s) in state_dict: " + quoted(result.missing_keys) + ". ");
  }
  if (!errors.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + type_name() + ":";
    for (const auto& e : errors) msg += "\n\t" + e;
    throw Error(msg);
  }
  return result;
}

DL_API HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  if (!hooks_) hooks_ = std::make_shared<HookHandle::Registry>();
  const int64_t id = hooks_->next_id++;
  hooks_->pre.emplace_back(id, std::move(hook));
  return HookHandle(hooks_, id);
}

DL_API HookHandle Module::register_forward_hook(ForwardHook hook) {
  if (!hooks_) hooks_ = std::make_shared<HookHandle::Registry>();
  const int64_t id = hooks_->next_id++;
  hooks_->post.emplace_back(id, std::move(hook));
  return HookHandle(hooks_, id);
}

DL_API bool Module::has_forward_hooks() const { return hooks_ && (!hooks_->pre.empty() || !hooks_->post.empty()); }

DL_API void Module::check_new_name(const std::string& name, const char* what) {
  DL_CHECK(!name.empty(), what, " name can't be empty string \"\"");
  DL_CHECK(name.find('.') == std::string::npos, what, " name can't contain \".\", got: ", name);
  bool taken = false;
  detail::FnVisitor v([&](const std::string& n, const auto&) { taken |= n == name; },
                      [&](const std::string& n, const auto&) { taken |= n == name; },
                      [&](const std::string& n, const auto&) { taken |= n == name; });
  visit_members(v);
  DL_CHECK(!taken, "attribute '", name, "' already exists in ", type_name());
}

DL_API void Module::register_module_(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  DL_CHECK(module, "register_module: module '", name, "' is null");
  children_.emplace_back(name, std::move(module));
}
}  // namespace dl::nn

namespace dl::nn::detail {

DL_API std::string add_indent(const std::string& s, int n) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(size_t(n), ' ');
  }
  return out;
}

DL_API std::string repr(Module& m) {
  std::vector<std::string> extra_lines, child_lines;
  const std::string extra = m.extra_repr();
  if (!extra.empty()) {
    std::istringstream is(extra);
    for (std::string line; std::getline(is, line);) extra_lines.push_back(line);
  }
  FnVisitor v(ignore, ignore, [&](const std::string& name, Module& c) { child_lines.push_back("(" + name + "): " + add_indent(repr(c), 2)); });
  m.visit_members(v);
  std::string s = m.type_name() + "(";
  if (extra_lines.size() == 1 && child_lines.empty()) {
    s += extra_lines[0];
  } else if (!extra_lines.empty() || !child_lines.empty()) {
    s += "\n";
    for (const auto& l : extra_lines) s += "  " + l + "\n";
    for (const auto& l : child_lines) s += "  " + l + "\n";
  }
  return s + ")";
}
}  // namespace dl::nn::detail

namespace dl::nn {

DL_API std::ostream& operator<<(std::ostream& os, Module& m) { return os << detail::repr(m); }
DL_API std::ostream& operator<<(std::ostream& os, const Module& m) { return os << detail::repr(const_cast<Module&>(m)); }

}  // namespace dl::nn
