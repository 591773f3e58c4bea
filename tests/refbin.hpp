// tests/refbin.hpp — the binary PyTorch reference files (tests/data/*_ref.bin, written by the
// tests/gen_*_reference.py scripts through tests/refbin.py) and the checks against them.
// Inputs are not stored: both sides build them with det(shape, seed), an integer hash that gives
// the same doubles in Python and C++.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <dl/tensor.hpp>

namespace refbin {

struct Array {
  dl::Shape shape;
  std::vector<double> values;  // float64 records
  std::vector<int64_t> ints;   // int64 records
  bool is_int = false;
};

using Table = std::map<std::string, Array>;

/// Reads tests/data/<file> once per file name.
inline const Table& table(const std::string& file) {
  static std::map<std::string, Table> cache;
  auto [it, fresh] = cache.try_emplace(file);
  if (!fresh) return it->second;
  Table& m = it->second;
  std::ifstream f(std::string(DL_TEST_DATA) + "/" + file, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "missing tests/data/" << file << " (run its tests/gen_*_reference.py)");
  char magic[7];
  f.read(magic, 7);
  REQUIRE(std::string(magic, 7) == "DLREF1\n");
  while (true) {
    uint32_t len = 0;
    if (!f.read(reinterpret_cast<char*>(&len), 4)) break;
    std::string name(len, '\0');
    f.read(name.data(), len);
    uint8_t kind = 0;
    uint32_t ndim = 0;
    f.read(reinterpret_cast<char*>(&kind), 1);
    f.read(reinterpret_cast<char*>(&ndim), 4);
    Array r;
    int64_t n = 1;
    for (uint32_t d = 0; d < ndim; ++d) {
      int64_t s = 0;
      f.read(reinterpret_cast<char*>(&s), 8);
      r.shape.push_back(s);
      n *= s;
    }
    r.is_int = kind == 1;
    if (r.is_int) {
      r.ints.resize(size_t(n));
      f.read(reinterpret_cast<char*>(r.ints.data()), n * 8);
    } else {
      r.values.resize(size_t(n));
      f.read(reinterpret_cast<char*>(r.values.data()), n * 8);
    }
    m.emplace(name, std::move(r));
  }
  return m;
}

/// One file's records: `refbin::File ref("nn_ref.bin"); ref.check(y, "linear/out");`
class File {
 public:
  explicit File(std::string name) : name_(std::move(name)) {}
  bool has(const std::string& key) const { return table(name_).count(key) > 0; }
  const Array& get(const std::string& key) const {
    const Table& t = table(name_);
    auto it = t.find(key);
    REQUIRE_MESSAGE(it != t.end(), "no reference named " << key << " in " << name_);
    return it->second;
  }
  std::vector<double> params(const std::string& c) const { return get(c + "/params").values; }
  /// The keys that start with prefix, with the prefix removed, in sorted order.
  std::vector<std::string> keys_with_prefix(const std::string& prefix) const {
    std::vector<std::string> out;
    const Table& t = table(name_);
    for (auto it = t.lower_bound(prefix); it != t.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
      out.push_back(it->first.substr(prefix.size()));
    return out;
  }
  /// The record as a dl tensor of element type T.
  template <class T>
  dl::Tensor<T> tensor(const std::string& key) const {
    const Array& r = get(key);
    dl::Tensor<T> t = dl::empty<T>(r.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = r.is_int ? T(r.ints[size_t(i)]) : T(r.values[size_t(i)]);
    return t;
  }
  /// max |got - ref| <= tol * (1 + max |ref|); NaN must match NaN.
  template <class T>
  void check(const dl::Tensor<T>& got_, const std::string& key, double tol = std::is_same_v<T, float> ? 3e-5 : 1e-11) const {
    const Array& r = get(key);
    REQUIRE_MESSAGE(got_.defined(), key << ": undefined tensor");
    REQUIRE_MESSAGE(got_.shape() == r.shape, key << ": shape " << got_.shape() << " but PyTorch has " << r.shape);
    const dl::Tensor<T> got = got_.contiguous();
    if (r.is_int) {
      int64_t bad = 0;
      for (size_t i = 0; i < r.ints.size(); ++i) bad += int64_t(got.data()[i]) != r.ints[i];
      CHECK_MESSAGE(bad == 0, key << ": " << bad << " values differ");
      return;
    }
    double maxref = 0, maxerr = 0;
    int64_t where = -1;
    for (size_t i = 0; i < r.values.size(); ++i) {
      const double a = double(got.data()[i]), b = r.values[i];
      if (std::isnan(b)) {
        CHECK_MESSAGE(std::isnan(a), key << "[" << i << "]: expected NaN, got " << a);
        continue;
      }
      maxref = std::max(maxref, std::abs(b));
      if (!(std::abs(a - b) <= maxerr)) maxerr = std::abs(a - b), where = int64_t(i);
    }
    CHECK_MESSAGE(maxerr <= tol * (1 + maxref),
                  key << ": max error " << maxerr << " at flat index " << where << " (max |ref| " << maxref << ")");
  }

 private:
  std::string name_;
};

/// Reads printout cases from tests/data/<file>: name -> text (each case is a name line, then the
/// text, then a "%%" line).
inline std::map<std::string, std::string> sections(const std::string& file) {
  std::map<std::string, std::string> m;
  std::ifstream in(std::string(DL_TEST_DATA) + "/" + file);
  REQUIRE_MESSAGE(in.good(), "missing tests/data/" << file);
  std::string name, line, body;
  while (std::getline(in, name)) {
    body.clear();
    while (std::getline(in, line) && line != "%%") body += (body.empty() ? "" : "\n") + line;
    m[name] = body;
  }
  return m;
}

/// The generators' det(): values in [-2, 2) from an integer hash, identical in Python.
template <class T>
dl::Tensor<T> det(const dl::Shape& shape, int64_t seed) {
  dl::Tensor<T> t = dl::empty<T>(shape);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t v = (uint64_t(i + 1) * 2654435761ull + uint64_t(seed) * 97531ull) % (uint64_t(1) << 32);
    t.data()[i] = T(double(v) / 4294967296.0 * 4 - 2);
  }
  return t;
}

/// loss = (out * det(out.shape, 999)).sum(), the generators' loss; backpropagated.
template <class T>
void backward_weighted(const dl::Tensor<T>& out) {
  dl::Tensor<T> loss = (out * det<T>(out.shape(), 999)).sum();
  loss.backward();
}

}  // namespace refbin
