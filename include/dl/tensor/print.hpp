// dl/tensor/print.hpp — printing tensors the way PyTorch does: tensor([[1., 2.], [3., 4.]]), with its
// choice of integer, fixed and scientific notation, summarisation of large tensors (threshold 1000,
// 3 edge items), line wrapping at 80 columns, and dtype / grad_fn / requires_grad suffixes.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <string>

#include "tensor.hpp"

namespace dl {

/// PyTorch's print options (torch.set_printoptions).
struct PrintOptions {
  int precision = 4;
  int64_t threshold = 1000;
  int64_t edgeitems = 3;
  int linewidth = 80;
};
inline PrintOptions& print_options() {
  static PrintOptions o;
  return o;
}

namespace detail {

/// Python's repr of a float, which PyTorch's printouts and messages use: the shortest round trip,
/// fixed for decimal exponents -4..15, else scientific ("1e-05", "0.1", "1.0", "1e+16").
inline std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed for decimal exponents -4 <= e < 16.
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  const size_t e = s.find('e');
  const int exp10 = std::atoi(s.c_str() + e + 1);
  std::string mant = s.substr(0, e);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      out = "0." + std::string(size_t(-exp10 - 1), '0') + digits;
    } else if (int(digits.size()) <= exp10 + 1) {
      out = digits + std::string(size_t(exp10 + 1 - int(digits.size())), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp10 + 1)) + "." + digits.substr(size_t(exp10 + 1));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];  // room for any int exponent (GCC checks it: -Wformat-truncation)
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  }
  return neg ? "-" + out : out;
}

/// A number as Python prints a value given as an int when it is integral ("-1"), else py_float.
inline std::string py_number(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? std::to_string(int64_t(v)) : py_float(v);
}

template <class T>
class Formatter {
 public:
  explicit Formatter(const std::vector<double>& values) {
    const int prec = print_options().precision;
    if constexpr (!floating_scalar<T>) {
      for (double v : values) width_ = std::max(width_, int(raw(v).size()));
      return;
    }
    double lo = INFINITY, hi = 0;
    bool any = false;
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (!any) return;
    if (int_mode_) {
      sci_mode_ = hi / lo > 1000. || hi > 1e8;
      for (double v : values)
        if (std::isfinite(v) && v != 0) width_ = std::max(width_, int(sci_mode_ ? fmt("%.*e", prec, v).size() : fmt("%.0f", 0, v).size() + 1));
    } else {
      sci_mode_ = hi / lo > 1000. || hi > 1e8 || lo < 1e-4;
      for (double v : values)
        if (std::isfinite(v) && v != 0) width_ = std::max(width_, int(fmt(sci_mode_ ? "%.*e" : "%.*f", prec, v).size()));
    }
  }
  int width() const { return width_; }
  std::string format(double v) const {
    std::string s = raw(v);
    return std::string(size_t(std::max(0, width_ - int(s.size()))), ' ') + s;
  }

 private:
  static std::string fmt(const char* f, int prec, double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, f, prec, v);
    return buf;
  }
  std::string raw(double v) const {
    if constexpr (std::is_same_v<T, bool>) return v != 0 ? "True" : "False";
    else if constexpr (!floating_scalar<T>) return std::to_string(int64_t(v));
    else {
      const int prec = print_options().precision;
      if (sci_mode_) return fmt("%.*e", prec, v);
      if (int_mode_) {
        std::string s = fmt("%.*f", 0, v);
        return std::isfinite(v) ? s + "." : s;
      }
      return fmt("%.*f", prec, v);
    }
  }

  bool int_mode_ = true, sci_mode_ = false;
  int width_ = 1;
};

/// The values PyTorch's formatter looks at: all of them, or the edges when summarising.
template <class T>
void summarized_values(const Tensor<T>& t, bool summarize, std::vector<double>& out) {
  const int64_t e = print_options().edgeitems;
  if (t.dim() == 0) {
    out.push_back(double(t.item()));
    return;
  }
  const int64_t n = t.size(0);
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * e && i == e) i = n - e;
    if (t.dim() == 1) out.push_back(double(t.at(i)));
    else summarized_values(t.select(0, i), summarize, out);
  }
}

template <class T>
std::string tensor_str(const Tensor<T>& t, int indent, bool summarize, const Formatter<T>& f) {
  const int64_t e = print_options().edgeitems;
  if (t.dim() == 0) return f.format(double(t.item()));
  const int64_t n = t.size(0);
  std::string s = "[";
  if (t.dim() == 1) {
    const int element = f.width() + 2;
    const int per_line = std::max(1, (print_options().linewidth - indent) / element);
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * e && i == e) {
        items.push_back(" ...");
        i = n - e;
      }
      items.push_back(f.format(double(t.at(i))));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) s += size_t(i) % size_t(per_line) == 0 ? ",\n" + std::string(size_t(indent + 1), ' ') : ", ";
      s += items[i];
    }
    return s + "]";
  }
  const std::string sep = "," + std::string(size_t(t.dim() - 1), '\n') + std::string(size_t(indent + 1), ' ');
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) s += sep;
    if (summarize && n > 2 * e && i == e) {
      s += "..." + sep;
      i = n - e;
    }
    s += tensor_str(t.select(0, i), indent + 1, summarize, f);
  }
  return s + "]";
}

}  // namespace detail

/// PyTorch's repr of a tensor: "tensor([1., 2.])", "tensor([1, 2], dtype=int32)".
template <scalar_type T>
std::string to_string(const Tensor<T>& t) {
  if (!t.defined()) return "tensor(undefined)";
  NoGradGuard no_grad;
  const std::string prefix = "tensor(";
  const int indent = int(prefix.size());
  std::vector<std::string> suffixes;
  std::string body;
  if (t.device().is_cuda()) {  // printed from a host copy, with PyTorch's device suffix
    std::string s = to_string(t.detach().to(kCPU));
    s.pop_back();
    s += ", device='" + t.device().str() + "'";
    if (auto fn = t.grad_fn()) s += ", grad_fn=<" + fn->name() + ">";
    else if (t.requires_grad()) s += ", requires_grad=True";
    return s + ")";
  }
  if (t.numel() == 0) {
    if (t.dim() != 1) {
      std::string size = "size=(";
      for (int d = 0; d < t.dim(); ++d) size += (d ? ", " : "") + std::to_string(t.shape()[d]);
      suffixes.push_back(size + ")");
    }
    if (!std::is_same_v<T, float>) suffixes.push_back("dtype=" + std::string(dtype_name(dtype_of<T>)));
    body = "[]";
  } else {
    if (!std::is_same_v<T, float> && !std::is_same_v<T, int64_t> && !std::is_same_v<T, bool>)
      suffixes.push_back("dtype=" + std::string(dtype_name(dtype_of<T>)));
    const bool summarize = t.numel() > print_options().threshold;
    std::vector<double> values;
    detail::summarized_values(t, summarize, values);
    body = detail::tensor_str(t, indent, summarize, detail::Formatter<T>(values));
  }
  if (auto fn = t.grad_fn()) suffixes.push_back("grad_fn=<" + fn->name() + ">");
  else if (t.requires_grad()) suffixes.push_back("requires_grad=True");
  std::string s = prefix + body;
  const size_t nl = s.rfind('\n');
  int64_t last = int64_t(s.size()) - (nl == std::string::npos ? -1 : int64_t(nl)) + 1;
  for (const auto& suffix : suffixes) {
    if (last + int64_t(suffix.size()) + 2 > print_options().linewidth) {
      s += ",\n" + std::string(size_t(indent), ' ') + suffix;
      last = indent + int64_t(suffix.size());
    } else {
      s += ", " + suffix;
      last += int64_t(suffix.size()) + 2;
    }
  }
  return s + ")";
}

template <scalar_type T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& t) {
  return os << to_string(t);
}

namespace expr {
/// Printing an expression evaluates it.
template <class Op, class... Args>
std::ostream& operator<<(std::ostream& os, const Apply<Op, Args...>& e) {
  return os << to_string(e.eval());
}
}  // namespace expr

}  // namespace dl
