// tests/reference.hpp — reads the PyTorch reference values written by tests/gen_reference.py and
// compares dl tensors against them.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <dl/tensor.hpp>

#include "refbin.hpp"

namespace ref {

struct Record {
  std::string dtype;
  dl::Shape shape;
  std::vector<double> values;
};

inline const std::map<std::string, Record>& records() {
  static const std::map<std::string, Record> map = [] {
    std::map<std::string, Record> m;
    std::ifstream in(std::string(DL_TEST_DATA) + "/reference.txt");
    REQUIRE_MESSAGE(in.good(), "missing tests/data/reference.txt (run tests/gen_reference.py)");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream is(line);
      std::string name, sep, v;
      Record r;
      int nd = 0;
      is >> name >> r.dtype >> nd;
      for (int i = 0; i < nd; ++i) {
        int64_t d;
        is >> d;
        r.shape.push_back(d);
      }
      is >> sep;
      while (is >> v) r.values.push_back(v == "nan" ? NAN : v == "inf" ? INFINITY : v == "-inf" ? -INFINITY : std::stod(v));
      m.emplace(name, std::move(r));
    }
    return m;
  }();
  return map;
}

inline const Record& get(const std::string& name) {
  auto it = records().find(name);
  REQUIRE_MESSAGE(it != records().end(), "no reference named " << name);
  return it->second;
}

/// The reference tensor `name` as a dl tensor of element type T.
template <class T>
dl::Tensor<T> tensor(const std::string& name) {
  const Record& r = get(name);
  dl::Tensor<T> t = dl::empty<T>(r.shape);
  for (size_t i = 0; i < r.values.size(); ++i) t.data()[i] = T(r.values[i]);
  return t;
}

template <class T>
std::string dtype_of() {
  return std::string(dl::dtype_name(dl::dtype_of<T>));
}

/// Checks shape, dtype and values (NaN equals NaN; |a - b| <= atol + rtol * |b|).
template <class T>
void check(const dl::Tensor<T>& t, const std::string& name, double rtol = 1e-5, double atol = 1e-6) {
  const Record& r = get(name);
  INFO("reference ", name);
  CHECK(dtype_of<T>() == r.dtype);
  REQUIRE(t.shape() == r.shape);
  const dl::Tensor<T> c = t.contiguous();
  int bad = 0;
  for (size_t i = 0; i < r.values.size(); ++i) {
    const double a = double(c.data()[i]), b = r.values[i];
    const bool ok = (std::isnan(a) && std::isnan(b)) || a == b || std::abs(a - b) <= atol + rtol * std::abs(b);
    if (!ok && bad++ < 5) FAIL_CHECK("element " << i << ": dl " << a << " vs torch " << b);
  }
  CHECK(bad == 0);
}

/// Reads the print cases: name -> repr.
inline std::map<std::string, std::string> prints() { return refbin::sections("print.txt"); }

}  // namespace ref
