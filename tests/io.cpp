// Tests of dl/io (serialize.hpp, safetensors.hpp, pth.hpp, pickle.hpp, zip.hpp): round trips of
// every dtype and shape, files written by PyTorch 1.13 (tests/data/io/, made by
// tests/gen_io_fixtures.py) with their values, strides and storage sharing, every error path of
// the readers, and a deterministic mutation fuzzer (truncations, bit flips, byte changes) over
// valid files that accepts nothing but success or dl::Error.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <dl/io/serialize.hpp>
#include <dl/nn/functional.hpp>

#include "refbin.hpp"

namespace F = dl::nn::functional;
namespace fs = std::filesystem;
namespace pk = dl::io::detail::pickle;
using dl::AnyTensor;
using dl::ScalarType;
using dl::StateDict;
using dl::Tensor;

namespace {

const std::string kDir = std::string(DL_TEST_DATA) + "/io/";
const refbin::File kRef("io/expected.bin");

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "missing ", path, " (run tests/gen_io_fixtures.py)");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}

/// A fresh directory for files the tests write, removed at exit.
const fs::path& scratch() {
  static const struct Dir {
    fs::path path;
    Dir() : path(fs::temp_directory_path() / ("dl_io_test_" + std::to_string(::getpid()))) {
      fs::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

/// Contiguous bytes of a tensor, for exact comparisons.
std::string bytes_of(const AnyTensor& t) {
  AnyTensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.impl()->data()), size_t(c.numel()) * dl::element_size(c.dtype()));
}

void check_same(const StateDict& got, const StateDict& want) {
  REQUIRE(got.keys() == want.keys());
  for (const auto& [k, t] : want) {
    CAPTURE(k);
    const AnyTensor& g = got.at(k);
    CHECK(g.dtype() == t.dtype());
    CHECK(g.shape() == t.shape());
    CHECK(bytes_of(g) == bytes_of(t));
  }
  CHECK(got.metadata == want.metadata);
}

/// Values of every tensor against PyTorch's (exact), and with `geometry` also strides, storage
/// offset and which tensors share a storage, as torch.load gives them.
void check_fixture(const StateDict& sd, const std::string& file, bool geometry) {
  for (const auto& [k, t] : sd) {
    CAPTURE(k);
    const std::string key = file + "/" + k;
    REQUIRE(kRef.has(key));
    t.visit([&](const auto& typed) { kRef.check(typed, key, 0.0); });
    if (!geometry) {
      CHECK(t.impl()->strides == dl::contiguous_strides(t.shape()));
      continue;
    }
    const auto& stride = kRef.get(key + "/stride").ints;
    CHECK(std::vector<int64_t>(t.impl()->strides.begin(), t.impl()->strides.end()) == stride);
    CHECK(t.impl()->offset == kRef.get(key + "/offset").ints[0]);
    for (const auto& [k2, t2] : sd) {
      if (t.numel() == 0 || t2.numel() == 0) continue;  // PyTorch's empty storages all have address 0
      const bool shared = t.impl()->storage == t2.impl()->storage;
      CHECK_MESSAGE(shared == (kRef.get(key + "/storage").ints[0] == kRef.get(file + "/" + k2 + "/storage").ints[0]),
                    k, " and ", k2, " share storage in one file but not in the other");
    }
  }
}

/// A .pth archive from a pickle and storage entries ("data/0" -> bytes) under `prefix`.
std::string archive(const std::string& pkl, const std::vector<std::pair<std::string, std::string>>& entries = {},
                    const std::string& prefix = "archive") {
  std::string out;
  dl::io::detail::StringSink sink(out);
  dl::io::detail::ZipWriter zip(sink);
  zip.add(prefix + "/data.pkl", pkl.data(), pkl.size());
  for (const auto& [name, data] : entries) zip.add(prefix + "/" + name, data.data(), data.size());
  zip.finish();
  return out;
}

pk::TensorRecord record(std::string name, ScalarType dtype, std::string key, int64_t numel, int64_t offset,
                        std::vector<int64_t> size, std::vector<int64_t> stride) {
  return {std::move(name), dtype, std::move(key), numel, offset, std::move(size), std::move(stride)};
}

[[maybe_unused]] std::string floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(v.begin()), v.size() * sizeof(float));
}

/// Hand-written pickles: protocol 2 header, then the test's opcodes, then STOP.
struct Pickle {
  pk::pickle_detail::Out o;
  Pickle() {
    o.op(0x80);
    o.op(2);
  }
  Pickle& op(unsigned char c) {
    o.op(c);
    return *this;
  }
  Pickle& str(std::string_view s) {
    o.str(s);
    return *this;
  }
  Pickle& integer(int64_t v) {
    o.integer(v);
    return *this;
  }
  Pickle& global(std::string_view m, std::string_view n) {
    o.global(m, n);
    return *this;
  }
  std::string stop() {
    o.op('.');
    return o.b;
  }
};

/// The pickle of one float tensor of storage "0" (numel elements), with the given geometry.
[[maybe_unused]] std::string one_tensor(int64_t numel, int64_t offset, std::vector<int64_t> size, std::vector<int64_t> stride,
                       ScalarType dtype = ScalarType::Float) {
  return pk::write_state_dict({record("w", dtype, "0", numel, offset, std::move(size), std::move(stride))});
}

#define CHECK_ERROR(expr, text) CHECK_THROWS_WITH_AS(expr, doctest::Contains(text), dl::Error)

StateDict every_dtype() {
  StateDict sd;
  sd.insert("bool", Tensor<bool>(refbin::det<double>({2, 3}, 1) > 0.0));
  sd.insert("uint8", Tensor<double>(refbin::det<double>({5}, 2) * 60.0 + 128.0).to<uint8_t>());
  sd.insert("int32", Tensor<double>(refbin::det<double>({2, 2}, 3) * 1e6).to<int32_t>());
  sd.insert("int64", dl::scalar_tensor<int64_t>(-(int64_t(1) << 40) - 7));
  sd.insert("float32", refbin::det<float>({2, 1, 2}, 4));
  sd.insert("float64", refbin::det<double>({3}, 5));
  sd.insert("scalar", dl::scalar_tensor<double>(1.5));
  sd.insert("empty", dl::zeros<float>({0, 3}));
  sd.insert("empty_i64", dl::zeros<int64_t>({2, 0}));
  sd.insert("eight_dims", refbin::det<float>({1, 2, 1, 2, 1, 2, 1, 2}, 6));
  sd.insert("float16", refbin::det<float>({2, 3}, 13).half());
  sd.insert("bfloat16", refbin::det<float>({3}, 14).bfloat16());
  return sd;
}

}  // namespace

// ------------------------------------------------------------------------------ safetensors

TEST_CASE("io: safetensors round trip of every dtype and shape, with metadata") {
  StateDict sd = every_dtype();
  sd.insert("transposed", refbin::det<float>({3, 4}, 7).t());                   // non-contiguous
  sd.insert("sliced", refbin::det<int64_t>({4, 6}, 8).slice(1, 1, 6, 2));     // offset and strides
  sd.metadata = {{"format", "pt"}, {"epoch", "3"}, {"unicode", "\xc3\xa9t\xc3\xa9"}};
  const std::string bytes = dl::io::to_safetensors(sd);
  const StateDict back = dl::io::from_safetensors(bytes);
  check_same(back, sd);
  for (const auto& [k, t] : back) {
    CAPTURE(k);
    CHECK(t.impl()->strides == dl::contiguous_strides(t.shape()));
    CHECK(t.impl()->offset == 0);
    CHECK(t.impl()->storage != sd.at(k).impl()->storage);  // fresh tensors
  }

  SUBCASE("layout: header padded with spaces to 8 bytes, __metadata__ first, data by element size") {
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    CHECK(n % 8 == 0);
    const std::string header = bytes.substr(8, n);
    CHECK(header.rfind("{\"__metadata__\":{", 0) == 0);
    CHECK(header.find_last_not_of(' ') + 1 >= header.size() - 7);
    const auto json = nlohmann::ordered_json::parse(header);
    std::vector<std::string> keys;
    for (const auto& [k, v] : json.items()) keys.push_back(k);
    keys.erase(keys.begin());
    CHECK(keys == sd.keys());  // the StateDict's order
    // 8-byte elements come first, then 4, then 1: each tensor aligned to its element size
    const uint64_t f64 = json["float64"]["data_offsets"][0], f32 = json["float32"]["data_offsets"][0];
    const uint64_t u8 = json["uint8"]["data_offsets"][0];
    CHECK(f64 < f32);
    CHECK(f32 < u8);
    for (const auto& [k, v] : json.items())
      if (k != "__metadata__") CHECK(uint64_t(v["data_offsets"][0]) % dl::element_size(sd.at(k).dtype()) == 0);
    uint64_t end = 0;
    for (const auto& [k, v] : json.items())
      if (k != "__metadata__") end = std::max<uint64_t>(end, v["data_offsets"][1]);
    CHECK(bytes.size() == 8 + n + end);
  }
  SUBCASE("no metadata: no __metadata__ entry") {
    StateDict plain = every_dtype();
    const std::string b = dl::io::to_safetensors(plain);
    CHECK(b.find("__metadata__") == std::string::npos);
    check_same(dl::io::from_safetensors(b), plain);
  }
  SUBCASE("an empty state dict") {
    const std::string b = dl::io::to_safetensors(StateDict{});
    CHECK(b.size() == 16);  // length 8, "{}" padded to 8
    CHECK(dl::io::from_safetensors(b).empty());
  }
}

TEST_CASE("io: safetensors files written by Python and by the reference implementation") {
  SUBCASE("net.safetensors (Conv2d + BatchNorm2d + Linear)") {
    const StateDict sd = dl::io::from_safetensors(read_file(kDir + "net.safetensors"));
    CHECK(sd.keys() == std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
                                                "bn.running_var", "bn.num_batches_tracked", "fc.weight", "fc.bias"});
    CHECK(sd.at("bn.num_batches_tracked").dtype() == ScalarType::Int64);
    CHECK(sd.get<int64_t>("bn.num_batches_tracked").item() == 3);
    check_fixture(sd, "net", false);
    CHECK(sd.metadata.empty());
  }
  SUBCASE("dtypes.safetensors and dtypes_reference.safetensors") {
    const StateDict a = dl::io::from_safetensors(read_file(kDir + "dtypes.safetensors"));
    CHECK(a.keys() == std::vector<std::string>{"bool", "uint8", "int32", "int64", "float32", "float64", "scalar",
                                               "empty", "empty_i64"});
    check_fixture(a, "dtypes", false);
    CHECK(a.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"note", "dl fixture"}});
    // The reference writes keys sorted by dtype then name: dl keeps the file's order.
    const StateDict b = dl::load(kDir + "dtypes_reference.safetensors");
    CHECK(b.size() == a.size());
    check_fixture(b, "dtypes", false);
    CHECK(b.metadata.at("writer").rfind("safetensors ", 0) == 0);
    CHECK(b.at("int64").dim() == 0);
    CHECK(b.at("empty").shape() == dl::Shape{0, 3});
  }
}

namespace {
/// A safetensors file from a header text and a data section.
std::string st_file(std::string header, const std::string& data = {}) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}
}  // namespace

TEST_CASE("io: safetensors errors") {
  const auto from = [](const std::string& b) { return dl::io::from_safetensors(b); };
  const std::string f8 = std::string(8, '\0');
  SUBCASE("truncated and corrupt framing") {
    CHECK_ERROR(from(""), "too short");
    CHECK_ERROR(from("\x10\x00\x00"), "too short");
    CHECK_ERROR(from(st_file("{}      ").substr(0, 12)), "header length 8 runs past the end of the file (12 bytes)");
    std::string huge = st_file("{}");
    huge[6] = 1;  // header length ~2^48
    CHECK_ERROR(from(huge), "exceeds the safetensors limit");
    std::string long_header = st_file("{}");
    long_header[0] = 100;
    CHECK_ERROR(from(long_header), "runs past the end of the file");
    CHECK_ERROR(from(st_file("  {}    ")), "does not start with '{'");
    CHECK_ERROR(from(st_file("")), "does not start with '{'");
  }
  SUBCASE("malformed JSON and wrong structure") {
    CHECK_ERROR(from(st_file("{\"a\": {\"dtype\": \"F32\",")), "malformed JSON header");
    CHECK_ERROR(from(st_file("{\"a\": 1}")), "tensor 'a' is described by a number");
    CHECK_ERROR(from(st_file("{\"a\": {\"dtype\": \"F32\"}}")), "needs dtype, shape and data_offsets");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":3,"shape":[],"data_offsets":[0,4]}})", f8.substr(0, 4))),
                "dtype is a number");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[1,-2],"data_offsets":[0,4]}})", f8.substr(0, 4))),
                "non-negative integer");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", f8.substr(0, 4))),
                "non-negative integer");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":4,"data_offsets":[0,4]}})", f8.substr(0, 4))),
                "shape is a number");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})",
                             f8.substr(0, 4))),
                "9 dimensions");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", f8.substr(0, 4))),
                "is not a pair of non-negative integers");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", f8.substr(0, 4))),
                "is not a pair of non-negative integers");
    CHECK_ERROR(from(st_file(R"({"__metadata__":{"k":1}})")), "__metadata__ value of 'k' is a number");
    CHECK_ERROR(from(st_file(R"({"__metadata__":[1]})")), "__metadata__ is an array, not an object of strings");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[],)"
                             R"("data_offsets":[4,8]}})",
                             f8)),
                "names 'a' twice");
    std::string deep = "{\"a\":";
    for (int k = 0; k < 100000; ++k) deep += "[";
    CHECK_ERROR(from(st_file(deep)), "nested more deeply");
    CHECK(from(st_file(R"({"__metadata__":null})")).empty());
  }
  SUBCASE("dtypes: F16 and BF16 load as dl::Half and dl::BFloat16; unsupported ones are named with their tensor") {
    const StateDict h = dl::io::from_safetensors(read_file(kDir + "half.safetensors"));  // written by PyTorch
    REQUIRE(h.at("w").dtype() == ScalarType::Half);
    const Tensor<dl::Half> w = h.get<dl::Half>("w");
    const Tensor<double> want = refbin::det<double>({2, 2}, 80);
    for (int64_t i = 0; i < 4; ++i) CHECK(double(float(w.data()[i])) == doctest::Approx(want.data()[i]).epsilon(1e-3));
    const std::string two_bf16("\x80\x3f\x00\xc0", 4);  // 1.0, -2.0
    const StateDict b = from(st_file(R"({"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", two_bf16));
    REQUIRE(b.at("b").dtype() == ScalarType::BFloat16);
    CHECK(float(b.get<dl::BFloat16>("b").data()[0]) == 1.0f);
    CHECK(float(b.get<dl::BFloat16>("b").data()[1]) == -2.0f);
    CHECK_ERROR(from(st_file(R"({"b":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", f8.substr(0, 2))),
                "tensor 'b' has dtype I8, which dl does not support");
    CHECK_ERROR(from(st_file(R"({"b":{"dtype":"XYZ","shape":[2],"data_offsets":[0,4]}})", f8.substr(0, 4))),
                "tensor 'b' has the unknown dtype 'XYZ'");
  }
  SUBCASE("byte ranges: outside, overlapping, gaps, trailing bytes, disagreeing with the shape") {
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8.substr(0, 4))),
                "lie outside the data section of 4 bytes");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", f8.substr(0, 4))),
                "lie outside");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f8)),
                "shape [3] of F32 needs 12 bytes but data_offsets [0, 8] hold 8");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             f8)),
                "overlaps the previous tensor");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f8)), "a gap begins at 0");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f8)), "trailing bytes");
    CHECK_ERROR(from(st_file(R"({})", f8)), "trailing bytes");
  }
  SUBCASE("sizes that overflow") {
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", f8)),
                "element count of shape [4294967296,4294967296] overflows");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", f8)),
                "byte count of shape [4611686018427387904] overflows");
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,8]}})", f8)),
                "overflows");
  }
  SUBCASE("bool bytes other than 0 and 1") {
    CHECK_ERROR(from(st_file(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x02", 2))),
                "BOOL tensor 'a' holds the byte 2 at element 1");
  }
  SUBCASE("writing") {
    StateDict sd;
    sd.insert("w", AnyTensor());
    CHECK_ERROR(dl::io::to_safetensors(sd), "entry 'w' is an undefined tensor");
    StateDict reserved;
    reserved.insert("__metadata__", dl::zeros<float>({1}));
    CHECK_ERROR(dl::io::to_safetensors(reserved), "'__metadata__' is reserved");
    StateDict bad_utf8;
    bad_utf8.insert("\xff\xfe", dl::zeros<float>({1}));
    CHECK_ERROR(dl::io::to_safetensors(bad_utf8), "not valid UTF-8");
  }
}

TEST_CASE("io: CRC-32 of zip entries") {
  using dl::io::detail::crc32;
  using dl::io::detail::crc32_portable;
  CHECK(crc32("123456789", 9) == 0xCBF43926u);  // the standard check value
  CHECK(crc32_portable("123456789", 9) == 0xCBF43926u);
  CHECK(crc32("", 0) == 0);
  std::string data(100003, '\0');
  std::mt19937_64 rng(7);
  for (char& c : data) c = char(rng());
  const uint32_t whole = crc32_portable(data.data(), data.size());
  CHECK(crc32(data.data(), data.size()) == whole);
  CHECK(crc32_portable(data.data() + 5, data.size() - 5, crc32_portable(data.data(), 5)) == whole);  // continued
}

TEST_CASE("io: Python's float repr for metadata") {
  using dl::io::detail::python_float_repr;
  CHECK(python_float_repr(0.1) == "0.1");
  CHECK(python_float_repr(1e-5) == "1e-05");
  CHECK(python_float_repr(1e16) == "1e+16");
  CHECK(python_float_repr(1e15) == "1000000000000000.0");
  CHECK(python_float_repr(123.456) == "123.456");
  CHECK(python_float_repr(-0.0) == "-0.0");
  CHECK(python_float_repr(5e-324) == "5e-324");
  CHECK(python_float_repr(1.7976931348623157e308) == "1.7976931348623157e+308");
  CHECK(python_float_repr(0.0001) == "0.0001");
  CHECK(python_float_repr(100000.0) == "100000.0");
  CHECK(python_float_repr(1234567890123456789.0) == "1.2345678901234568e+18");
  CHECK(python_float_repr(-1.0 / 0.0) == "-inf");
}

// ------------------------------------------------------------------------------ .pth

#if DL_HAVE_LIBZIP
TEST_CASE("io: .pth round trip keeps dtypes, strides, offsets and shared storages") {
  StateDict sd = every_dtype();
  Tensor<float> w = refbin::det<float>({4, 3}, 9);
  sd.insert("embed.weight", w);
  sd.insert("head.weight", w);                              // the same tensor
  sd.insert("row", w[2]);                                   // a view: offset 6
  sd.insert("wt", w.t());                                   // strides (1, 3)
  sd.insert("col", refbin::det<int64_t>({4, 5}, 10).select(1, 3));  // offset 3, stride 5
  sd.insert("expanded", refbin::det<double>({3}, 11).expand({2, 3}));  // stride 0
  Tensor<float> big = refbin::det<float>({100}, 12);
  sd.insert("middle", big.slice(0, 40, 44));                // only elements 40..43 are written
  sd.metadata = {{"epoch", "7"}};
  const std::string bytes = dl::io::to_pth(sd);
  const StateDict back = dl::io::from_pth(bytes);
  check_same(back, sd);
  const auto impl = [&](const char* k) { return back.at(k).impl(); };
  CHECK(impl("embed.weight")->storage == impl("head.weight")->storage);
  CHECK(impl("row")->storage == impl("embed.weight")->storage);
  CHECK(impl("wt")->storage == impl("embed.weight")->storage);
  CHECK(impl("row")->offset == 6);
  CHECK(impl("wt")->strides == dl::Strides{1, 3});
  CHECK(impl("col")->strides == dl::Strides{5});
  CHECK(impl("col")->offset == 0);  // only elements 3..18 of its storage are written
  CHECK(impl("col")->storage->nbytes() == 16 * 8);
  CHECK(impl("expanded")->strides == dl::Strides{0, 1});
  CHECK(impl("middle")->offset == 0);
  CHECK(impl("middle")->storage->nbytes() == 16);
  CHECK(impl("float32")->storage != impl("embed.weight")->storage);
  // Writes through one tied tensor are seen through the other, as after torch.load.
  back.get<float>("embed.weight").data()[0] = 42.0f;
  CHECK(back.get<float>("head.weight").data()[0] == 42.0f);

  SUBCASE("the archive: stored entries whose data start at multiples of 64 bytes") {
    dl::io::detail::ZipReader zip = dl::io::detail::ZipReader::open_memory(bytes);
    CHECK(zip.name(0) == "archive/data.pkl");
    CHECK(zip.locate("archive/version") >= 0);
    CHECK(zip.read_string(zip.locate("archive/byteorder"), 16) == "little");
    size_t pos = 0;
    int entries = 0;
    while ((pos = bytes.find("PK\x03\x04", pos)) != std::string::npos) {
      uint16_t name_len, extra_len;
      std::memcpy(&name_len, bytes.data() + pos + 26, 2);
      std::memcpy(&extra_len, bytes.data() + pos + 28, 2);
      CHECK((pos + 30 + name_len + extra_len) % 64 == 0);
      ++entries;
      pos += 4;
    }
    CHECK(entries == zip.num_entries());
  }
  SUBCASE("ZIP64 records read back") {
    std::string z64;
    dl::io::detail::StringSink sink(z64);
    dl::io::detail::write_pth(sd, sink, /*force_zip64=*/true);
    CHECK(z64.find("PK\x06\x06") != std::string::npos);
    check_same(dl::io::from_pth(z64), sd);
  }
  SUBCASE("big-endian archives are byte-swapped") {
    const std::string pkl = pk::write_state_dict({record("a", ScalarType::Float, "0", 2, 0, {2}, {1}),
                                                  record("b", ScalarType::Int64, "1", 1, 0, {}, {})});
    std::string f = floats({1.5f, -2.0f}), l(8, '\0');
    std::reverse(f.begin(), f.begin() + 4);
    std::reverse(f.begin() + 4, f.end());
    l[7] = 5;
    const StateDict be = dl::io::from_pth(archive(pkl, {{"byteorder", "big"}, {"data/0", f}, {"data/1", l}}));
    CHECK(be.get<float>("a").data()[0] == 1.5f);
    CHECK(be.get<float>("a").data()[1] == -2.0f);
    CHECK(be.get<int64_t>("b").item() == 5);
  }
  SUBCASE("an empty state dict") {
    CHECK(dl::io::from_pth(dl::io::to_pth(StateDict{})).empty());
  }
}

TEST_CASE("io: .pth files written by torch.save (PyTorch 1.13)") {
  SUBCASE("net.pth: a Conv2d + BatchNorm2d + Linear net, runnable with dl's kernels") {
    const StateDict sd = dl::load(kDir + "net.pth");
    CHECK(sd.keys() == std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
                                                "bn.running_var", "bn.num_batches_tracked", "fc.weight", "fc.bias"});
    CHECK(sd.get<int64_t>("bn.num_batches_tracked").item() == 3);
    check_fixture(sd, "net", true);
    // The same net in eval mode with dl's ops gives PyTorch's output.
    const Tensor<float> x = kRef.tensor<float>("net/input");
    Tensor<float> h = F::conv2d(x, sd.get<float>("conv.weight"), sd.get<float>("conv.bias"));
    const auto c = [&](const char* k) { return sd.get<float>(k).view({1, 2, 1, 1}); };
    h = dl::relu((h - c("bn.running_mean")) / dl::sqrt(c("bn.running_var") + 1e-5f) * c("bn.weight") + c("bn.bias"));
    const Tensor<float> y = F::linear(h.flatten(1), sd.get<float>("fc.weight"), sd.get<float>("fc.bias"));
    kRef.check(y, "net/output", 1e-5);
  }
  SUBCASE("tied.pth: one tensor under two names and a view of it share one storage") {
    const StateDict sd = dl::load(kDir + "tied.pth");
    check_fixture(sd, "tied", true);
    CHECK(sd.at("embed.weight").impl()->storage == sd.at("head.weight").impl()->storage);
    CHECK(sd.at("row").impl()->offset == 6);
  }
  SUBCASE("strided.pth: transposed, sliced, strided and expanded tensors") {
    const StateDict sd = dl::load(kDir + "strided.pth");
    check_fixture(sd, "strided", true);
    CHECK(sd.at("t").impl()->strides == dl::Strides{1, 4});
    CHECK(sd.at("expand").impl()->strides == dl::Strides{0, 1});
    CHECK(!sd.get<double>("t").is_contiguous());
  }
  SUBCASE("dtypes.pth: every dtype, 0-d and empty tensors") {
    const StateDict sd = dl::load(kDir + "dtypes.pth");
    check_fixture(sd, "dtypes", true);
    CHECK(sd.get<int64_t>("int64").item() == -(int64_t(1) << 40) - 7);
    CHECK(sd.at("empty_i64").shape() == dl::Shape{2, 0});
  }
  SUBCASE("checkpoint.pth (pickle protocol 4): nested containers flattened with '.'") {
    const StateDict sd = dl::load(kDir + "checkpoint.pth");
    std::ifstream meta(kDir + "checkpoint_metadata.txt");
    std::string line;
    std::getline(meta, line);  // "16 tensors: k1 k2 ..."
    std::istringstream first(line);
    size_t count;
    std::string word;
    first >> count >> word;
    std::vector<std::string> keys;
    while (first >> word) keys.push_back(word);
    CHECK(sd.size() == count);
    CHECK(sd.keys() == keys);
    check_fixture(sd, "checkpoint", true);
    std::map<std::string, std::string> expected;
    while (std::getline(meta, line)) {
      const size_t tab = line.find('\t');
      expected[line.substr(0, tab)] = line.substr(tab + 1);
    }
    CHECK(sd.metadata == expected);
    CHECK(sd.metadata.at("optimizer.param_groups.0.weight_decay") == "1e-05");
    CHECK(sd.metadata.at("history.2") == "100000.0");
  }
  SUBCASE("net_deflated.pth: the same archive with deflated entries") {
    check_same(dl::load(kDir + "net_deflated.pth"), dl::load(kDir + "net.pth"));
  }
}

TEST_CASE("io: .pth errors") {
  const auto from = [](const std::string& b) { return dl::io::from_pth(b); };
  const std::string two = floats({1, 2});
  SUBCASE("not an archive, or not PyTorch's") {
    CHECK_ERROR(from("hello"), "not a readable zip archive");
    CHECK_ERROR(from(""), "the zip archive is empty");
    std::string empty;
    {
      dl::io::detail::StringSink sink(empty);
      dl::io::detail::ZipWriter(sink).finish();
    }
    CHECK_ERROR(from(empty), "the zip archive is empty");
    std::string flat;
    {
      dl::io::detail::StringSink sink(flat);
      dl::io::detail::ZipWriter zip(sink);
      zip.add("data.pkl", "x", 1);
      zip.finish();
    }
    CHECK_ERROR(from(flat), "is not inside a folder");
    std::string other;
    {
      dl::io::detail::StringSink sink(other);
      dl::io::detail::ZipWriter zip(sink);
      zip.add("docs/readme.txt", "x", 1);
      zip.finish();
    }
    CHECK_ERROR(from(other), "no entry 'docs/data.pkl'");
    CHECK_ERROR(from(archive(one_tensor(2, 0, {2}, {1}), {{"data/0", two}, {"byteorder", "middle"}})),
                "byteorder entry says 'middle'");
  }
  SUBCASE("dl_metadata.json: malformed, not strings, or clashing with a tensor") {
    const std::string pkl = one_tensor(2, 0, {2}, {1});
    CHECK(from(archive(pkl, {{"data/0", two}, {"dl_metadata.json", R"({"epoch":"3"})"}})).metadata.at("epoch") == "3");
    CHECK_ERROR(from(archive(pkl, {{"data/0", two}, {"dl_metadata.json", "{\"epoch\":"}})),
                "archive/dl_metadata.json: malformed JSON");
    CHECK_ERROR(from(archive(pkl, {{"data/0", two}, {"dl_metadata.json", R"({"epoch":3})"}})),
                "value of 'epoch' is a number, not a string");
    CHECK_ERROR(from(archive(pkl, {{"data/0", two}, {"dl_metadata.json", R"(["epoch"])"}})),
                "expected a JSON object of strings, got an array");
    CHECK_ERROR(from(archive(pkl, {{"data/0", two}, {"dl_metadata.json", R"({"a":{"b":{"c":[]}}})"}})),
                "nested more deeply than a map of strings");
    CHECK_ERROR(from(archive(pkl, {{"data/0", two}, {"dl_metadata.json", R"({"w":"x"})"}})), "key 'w' appears twice");
  }
  SUBCASE("a torch.save of something that is not a dict") {
    CHECK_ERROR(from(archive(Pickle().integer(3).stop())), "the file holds an int, not a dict of tensors");
  }
  SUBCASE("storages: missing entry, wrong size, too small for the tensor's geometry") {
    CHECK(from(archive(one_tensor(2, 0, {2}, {1}), {{"data/0", two}})).get<float>("w").data()[1] == 2.0f);
    CHECK_ERROR(from(archive(one_tensor(2, 0, {2}, {1}))),
                "tensor 'w' refers to storage '0' but the archive has no entry 'archive/data/0'");
    CHECK_ERROR(from(archive(one_tensor(3, 0, {3}, {1}), {{"data/0", two}})),
                "entry 'archive/data/0' has 8 bytes but tensor 'w' expects 3 float32 elements (12 bytes)");
    CHECK_ERROR(from(archive(one_tensor(2, 1, {2}, {1}), {{"data/0", two}})),
                "reads element 2 of storage '0', which has 2 elements");
    CHECK_ERROR(from(archive(one_tensor(2, 0, {2, 2}, {1, 1}), {{"data/0", two}})), "reads element 2");
    CHECK_ERROR(from(archive(one_tensor(2, 3, {0}, {1}), {{"data/0", two}})), "starts past the end of storage '0'");
    CHECK(from(archive(one_tensor(2, 2, {0}, {1}), {{"data/0", two}})).at("w").numel() == 0);
  }
  SUBCASE("geometry: negative, mismatched, too many dimensions, overflowing") {
    CHECK_ERROR(from(archive(one_tensor(2, 0, {2}, {-1}), {{"data/0", two}})), "negative size or stride");
    CHECK_ERROR(from(archive(one_tensor(2, 0, {-2}, {1}), {{"data/0", two}})), "negative size or stride");
    CHECK_ERROR(from(archive(one_tensor(2, -1, {1}, {1}), {{"data/0", two}})), "negative storage offset");
    CHECK_ERROR(from(archive(one_tensor(2, 0, {2}, {1, 1}), {{"data/0", two}})), "size and stride differ in length");
    CHECK_ERROR(from(archive(one_tensor(2, 0, std::vector<int64_t>(9, 1), std::vector<int64_t>(9, 1)),
                             {{"data/0", two}})),
                "has 9 dimensions");
    CHECK_ERROR(from(archive(one_tensor(2, 0, {int64_t(1) << 32, int64_t(1) << 32}, {0, 0}), {{"data/0", two}})),
                "the element count overflows");
    CHECK_ERROR(from(archive(one_tensor(2, 0, {3, 3}, {int64_t(1) << 62, int64_t(1) << 62}), {{"data/0", two}})),
                "offset and strides overflow");
    CHECK_ERROR(from(archive(one_tensor(int64_t(1) << 62, 0, {2}, {1}), {{"data/0", two}})),
                "storage '0' of 4611686018427387904 elements overflows");
    CHECK_ERROR(from(archive(one_tensor(int64_t(1) << 40, 0, {2}, {1}), {{"data/0", two}})),
                "has 8 bytes but tensor 'w' expects 1099511627776 float32 elements");
  }
  SUBCASE("one storage used with two dtypes") {
    const std::string pkl = pk::write_state_dict({record("a", ScalarType::Float, "0", 2, 0, {2}, {1}),
                                                  record("b", ScalarType::Int32, "0", 2, 0, {2}, {1})});
    CHECK_ERROR(from(archive(pkl, {{"data/0", two}})), "storage '0' is used as 2 float32 elements and, by tensor 'b'");
  }
  SUBCASE("bool storages hold 0 or 1") {
    CHECK_ERROR(from(archive(one_tensor(2, 0, {2}, {1}, ScalarType::Bool), {{"data/0", std::string("\x01\x07", 2)}})),
                "bool storage '0' holds the byte 7 at element 1");
  }
  SUBCASE("unsupported dtypes, legacy files and forbidden globals from PyTorch") {
    const StateDict half = dl::load(kDir + "half.pth");  // float16, written by torch.save
    REQUIRE(half.at("w").dtype() == ScalarType::Half);
    const Tensor<double> want = refbin::det<double>({2, 2}, 80);
    for (int64_t i = 0; i < 4; ++i)
      CHECK(double(float(half.get<dl::Half>("w").data()[i])) == doctest::Approx(want.data()[i]).epsilon(1e-3));
    std::string int8 = one_tensor(2, 0, {2}, {1});
    const size_t at = int8.find("FloatStorage\n");
    REQUIRE(at != std::string::npos);
    int8.replace(at, 13, "CharStorage\n");
    CHECK_ERROR(from(archive(int8, {{"data/0", std::string(2, '\1')}})),
                "tensor 'w' has dtype int8 (torch.CharStorage), which dl does not support");
    CHECK_ERROR(dl::load(kDir + "legacy.pth"), "a legacy PyTorch file");
    CHECK_ERROR(dl::load(kDir + "evil.pth"), "global 'posix.system' is not allowed");
  }
  SUBCASE("a stored entry whose CRC does not match") {
    std::string b = archive(one_tensor(2, 0, {2}, {1}), {{"data/0", two}});
    const size_t at = b.find(two);
    REQUIRE(at != std::string::npos);
    b[at] ^= 1;
    CHECK_ERROR(from(b), "cannot read entry 'archive/data/0'");
  }
  SUBCASE("an entry compressed with a method .pth files do not use") {
    std::string b = archive(one_tensor(2, 0, {2}, {1}), {{"data/0", two}});
    // Method field (bzip2 = 12) of the storage entry, in its local and central headers.
    for (size_t pos = b.find("archive/data/0"); pos != std::string::npos; pos = b.find("archive/data/0", pos + 1)) {
      const bool central = b.compare(pos - 46, 4, "PK\x01\x02") == 0;
      b[pos - (central ? 46 : 30) + (central ? 10 : 8)] = 12;
    }
    CHECK_ERROR(from(b), "compression method 12");
  }
}

TEST_CASE("io: the pickle subset") {
  const auto load = [](const std::string& pkl, const std::vector<std::pair<std::string, std::string>>& entries = {}) {
    return dl::io::from_pth(archive(pkl, entries));
  };
  const std::string two = floats({1, 2});
  SUBCASE("plain values become metadata; keys nest with '.'") {
    Pickle p;
    p.op('}').op('(');
    p.str("i").integer(-70000).str("big").op(0x8a).op(5).op(0).op(0).op(0).op(0).op(0x80);  // LONG1 -2^39
    p.str("f").op('G');
    for (unsigned char c : {0x3F, 0xF8, 0, 0, 0, 0, 0, 0}) p.op(c);  // 1.5, big-endian
    p.str("t").op(0x88).str("n").op('N').str("s").op('U').op(2).op('h').op('i');
    p.str("l").op(']').op('(').integer(7).op(')').op('e');
    p.str("d").op('(').integer(1).str("x").op('d');
    p.op('u');
    const StateDict sd = load(p.stop());
    CHECK(sd.empty());
    CHECK(sd.metadata == std::map<std::string, std::string>{{"i", "-70000"},
                                                            {"big", "-549755813888"},
                                                            {"f", "1.5"},
                                                            {"t", "True"},
                                                            {"n", "None"},
                                                            {"s", "hi"},
                                                            {"l.0", "7"},
                                                            {"d.1", "x"}});
  }
  SUBCASE("memo, SETITEM, Parameter, and BUILD (ignored)") {
    Pickle p;
    p.global("collections", "OrderedDict").op('q').op(0).op(')').op('R');
    p.str("w").global("torch._utils", "_rebuild_parameter");
    p.global("torch._utils", "_rebuild_tensor_v2").op('(');
    p.op('(').str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(2).op('t').op('Q');
    p.integer(0).integer(2).op(0x85).integer(1).op(0x85).op(0x89).op('h').op(0).op(')').op('R').op('t').op('R');
    p.op(0x88).op('}').op(0x87).op('R').op('s');
    p.op('}').op('b');  // BUILD with a state: ignored
    const StateDict sd = load(p.stop(), {{"data/0", two}});
    CHECK(sd.get<float>("w").data()[1] == 2.0f);
  }
  SUBCASE("a TorchScript archive's module objects (NEWOBJ, BUILD) read as nested dicts") {
    Pickle p;
    p.global("__torch__", "Module").op(')').op(0x81).op('}').op('(');
    p.str("fc").global("__torch__.___torch_mangle_0", "Module").op(')').op(0x81).op('}').op('(');
    p.str("w").global("torch._utils", "_rebuild_tensor_v2").op('(');
    p.op('(').str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(2).op('t').op('Q');
    p.integer(0).integer(2).op(0x85).integer(1).op(0x85).op(0x89).global("collections", "OrderedDict").op(')').op('R');
    p.op('t').op('R').op('u').op('b');  // fc's attributes
    p.op('u').op('b');                  // the root's
    const StateDict sd = load(p.stop(), {{"data/0", two}});
    REQUIRE(sd.contains("fc.w"));
    CHECK(sd.get<float>("fc.w").data()[1] == 2.0f);
  }
  SUBCASE("what is rejected") {
    CHECK_ERROR(load(Pickle().global("os", "system").stop()), "global 'os.system' is not allowed");
    CHECK_ERROR(load(Pickle().global("torch", "Tensor").stop()), "global 'torch.Tensor' is not allowed");
    CHECK_ERROR(load(Pickle().global("builtins", "eval").stop()), "global 'builtins.eval' is not allowed");
    CHECK_ERROR(load(Pickle().op('}').op('S').stop()), "opcode 0x53 ('S')");     // STRING (text protocol 0)
    // NEWOBJ makes only the module objects of TorchScript archives (libtorch's torch::save)
    CHECK_ERROR(load(Pickle().global("collections", "OrderedDict").op(')').op(0x81).stop()),
                "only the module objects of TorchScript archives are made");
    CHECK_ERROR(load(Pickle().global("__torch__", "Function").stop()), "global '__torch__.Function' is not allowed");
    CHECK_ERROR(load(Pickle().global("__torch__", "Module").op(')').op('R').stop()), "calls a TorchScript class");
    CHECK_ERROR(load(Pickle().op('}').op('i').stop()), "opcode 0x69 ('i')");     // INST
    CHECK_ERROR(load("\x80\x07}."), "protocol 7 is not supported");
    CHECK_ERROR(load(Pickle().op('}').o.b), "without STOP");
    CHECK_ERROR(load(Pickle().op('X').op(9).op(0).op(0).op(0).op('a').stop()), "truncated at byte");
    CHECK_ERROR(load(Pickle().op('c').str("torch").stop()), "unterminated GLOBAL");
    CHECK_ERROR(load(Pickle().op('h').op(3).stop()), "memo entry 3 read before it was written");
    CHECK_ERROR(load(Pickle().op('t').stop()), "MARK expected");
    CHECK_ERROR(load(Pickle().op('s').stop()), "stack underflow");
    CHECK_ERROR(load(Pickle().op('}').op('(').op('s').stop()), "stack underflow");  // below the MARK
    CHECK_ERROR(load(Pickle().integer(1).integer(2).op('a').stop()), "APPEND to an int");
    CHECK_ERROR(load(Pickle().op(']').integer(1).integer(2).op('s').stop()), "SETITEM on a list");
    CHECK_ERROR(load(Pickle().op('}').op('(').integer(1).op('u').stop()), "odd number of items");
    CHECK_ERROR(load(Pickle().op('}').op('(').integer(1).op('d').op('s').stop()), "odd number of items");
    CHECK_ERROR(load(Pickle().op(0x8a).op(9).stop()), "integer of 9 bytes");
    CHECK_ERROR(load(Pickle().integer(1).op(')').op('R').stop()), "REDUCE at byte 5 calls an int");
    CHECK_ERROR(load(Pickle().global("collections", "OrderedDict").integer(1).op('R').stop()), "arguments of type int");
    CHECK_ERROR(load(Pickle().global("collections", "OrderedDict").integer(1).op(0x85).op('R').stop()),
                "OrderedDict(...) with 1 arguments");
    CHECK_ERROR(load(Pickle().global("torch", "FloatStorage").op(')').op('R').stop()), "calls a storage class");
    CHECK_ERROR(load(Pickle().global("torch._utils", "_rebuild_tensor_v2").op(')').op('R').stop()),
                "_rebuild_tensor_v2 takes 6 or 7 arguments, got 0");
    CHECK_ERROR(load(Pickle().global("torch._utils", "_rebuild_parameter").op(')').op('R').stop()),
                "_rebuild_parameter without a tensor");
    CHECK_ERROR(load(Pickle().str("storage").op(0x85).op('Q').stop()), "is not a ('storage', type, key, location, numel)");
    CHECK_ERROR(load(Pickle().integer(5).op('Q').stop()), "is not a ('storage'");
    CHECK_ERROR(load(Pickle().op('(').str("storage").integer(1).str("0").str("cpu").integer(2).op('t').op('Q').stop()),
                "names no torch storage class");
    CHECK_ERROR(load(Pickle().op('(').str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(-1)
                         .op('t').op('Q').stop()),
                "bad storage key, location or size");
    CHECK_ERROR(load(Pickle().op(0x93).stop()), "stack underflow");
    CHECK_ERROR(load(Pickle().integer(1).integer(2).op(0x93).stop()), "STACK_GLOBAL of non-strings");
  }
  SUBCASE("containers: bad keys, duplicates after flattening, bare storages") {
    CHECK_ERROR(load(Pickle().op('}').op('G').o.b + std::string(8, '\0') + "K\x01s."), "dict key of type float");
    CHECK_ERROR(load(Pickle().op('}').op('(').str("a.b").integer(1).str("a").op('}').str("b").integer(2).op('s').op('u')
                         .stop()),
                "key 'a.b' appears twice");
    CHECK_ERROR(load(Pickle().op('}').str("g").global("collections", "OrderedDict").op('s').stop()),
                "'g' holds a bare global");
  }
  SUBCASE("deep nesting, cycles and exponential sharing end with an error") {
    Pickle deep;
    deep.op('}').str("x");
    for (int k = 0; k < 200000; ++k) deep.op(']');
    for (int k = 0; k < 199999; ++k) deep.op('a');
    deep.op('s');
    CHECK_ERROR(load(deep.stop()), "nested more than 64 deep");

    Pickle cycle;  // l = []; l.append(l); {"x": l}
    cycle.op('}').str("x").op(']').op('q').op(1).op('h').op(1).op('a').op('s');
    CHECK_ERROR(load(cycle.stop()), "(or a container that contains itself)");

    Pickle laughs;  // d["l0"] = [1, 1]; d["lk"] = [l(k-1)] * 8: 8^40 leaves from ~1 kB
    laughs.op('}').str("l0").op('(').integer(1).integer(1).op('l').op('q').op(0).op('s');
    for (int k = 1; k <= 40; ++k) {
      laughs.str("l" + std::to_string(k)).op(']').op('q').op(uint8_t(k)).op('(');
      for (int j = 0; j < 8; ++j) laughs.op('h').op(uint8_t(k - 1));
      laughs.op('e').op('s');
    }
    CHECK_ERROR(load(laughs.stop()), "shared so often");
  }
}

#else
TEST_CASE("io: without libzip, .pth files are written but not read") {
  const StateDict sd = every_dtype();
  const std::string bytes = dl::io::to_pth(sd);
  CHECK(bytes.rfind("PK\x03\x04", 0) == 0);
  CHECK_ERROR(dl::io::from_pth(bytes), "reading .pth files needs libzip");
  CHECK_ERROR(dl::load(kDir + "net.pth"), "reading .pth files needs libzip");
}
#endif  // DL_HAVE_LIBZIP

// ------------------------------------------------------------------------------ files

TEST_CASE("io: save and load files") {
  const StateDict sd = dl::load(kDir + "net.safetensors");
  const std::string dir = scratch().string() + "/";
  SUBCASE("the format follows the extension; load tells it from the content") {
    CHECK(dl::io::format_for_path("a/b.pth") == dl::io::Format::pth);
    CHECK(dl::io::format_for_path("b.pt") == dl::io::Format::pth);
    CHECK(dl::io::format_for_path("pytorch_model.bin") == dl::io::Format::pth);
    CHECK(dl::io::format_for_path("m.safetensors") == dl::io::Format::safetensors);
    CHECK(dl::io::format_for_path("dir.pth/model") == dl::io::Format::safetensors);
    dl::save(sd, dir + "net.safetensors");
    dl::save(sd, dir + "net.pth");
    dl::save(sd, dir + "net.weights", dl::io::Format::pth);
    CHECK(read_file(dir + "net.safetensors") == dl::io::to_safetensors(sd));
    CHECK(read_file(dir + "net.pth") == dl::io::to_pth(sd));
    CHECK(read_file(dir + "net.weights").rfind("PK\x03\x04", 0) == 0);
    for (const char* f : {"net.safetensors", "net.pth", "net.weights"}) {
      CAPTURE(f);
      CHECK(!fs::exists(dir + f + ".dl-tmp"));
#if DL_HAVE_LIBZIP
      check_same(dl::load(dir + f), sd);
#endif
    }
    fs::copy_file(dir + "net.safetensors", dir + "misnamed.pth");
    check_same(dl::load(dir + "misnamed.pth"), sd);
  }
  SUBCASE("a failed save leaves the earlier file and no temporary") {
    dl::save(sd, dir + "keep.safetensors");
    StateDict bad = sd;
    bad.insert("broken", AnyTensor());
    CHECK_ERROR(dl::save(bad, dir + "keep.safetensors"), "'broken' is an undefined tensor");
    CHECK_ERROR(dl::save(bad, dir + "keep.pth"), "'broken' is an undefined tensor");
    CHECK(!fs::exists(dir + "keep.safetensors.dl-tmp"));
    CHECK(!fs::exists(dir + "keep.pth"));
    check_same(dl::load(dir + "keep.safetensors"), sd);
    CHECK_ERROR(dl::save(sd, dir + "no/such/dir/x.pth"), "cannot open");
  }
  SUBCASE("files that are not state dicts") {
    CHECK_ERROR(dl::load(dir + "missing.pth"), "cannot open");
    write_file(dir + "empty", "");
    CHECK_ERROR(dl::load(dir + "empty"), "the file is empty");
    write_file(dir + "text", "hello world, not a model");
    CHECK_ERROR(dl::load(dir + "text"), "it starts with bytes 68 65 6c");
    write_file(dir + "short.safetensors", read_file(kDir + "net.safetensors").substr(0, 100));
    CHECK_ERROR(dl::load(dir + "short.safetensors"), "runs past the end of the file");
    write_file(dir + "cut.safetensors", read_file(kDir + "net.safetensors").substr(0, 700));
    CHECK_ERROR(dl::load(dir + "cut.safetensors"), "lie outside the data section");
#if DL_HAVE_LIBZIP
    write_file(dir + "cut.pth", read_file(kDir + "net.pth").substr(0, 2000));
    CHECK_ERROR(dl::load(dir + "cut.pth"), "not a readable zip archive");
#endif
  }
}

#if DL_HAVE_LIBZIP
TEST_CASE("io: files for PyTorch (tests/gen_io_fixtures.py --check reads them)") {
  // DL_IO_ROUNDTRIP_DIR=DIR keeps the files for the check; tests/data/io/roundtrip_check.txt is
  // its committed result.
  const char* env = std::getenv("DL_IO_ROUNDTRIP_DIR");
  const std::string dir = (env ? fs::path(env) : scratch()).string() + "/";
  fs::create_directories(dir);
  for (const char* name : {"net", "tied", "strided", "dtypes"}) {
    CAPTURE(name);
    const StateDict sd = dl::load(kDir + name + ".pth");
    dl::save(sd, dir + "dl_" + name + ".pth");
    check_same(dl::load(dir + "dl_" + name + ".pth"), sd);
    {
      dl::io::detail::FileSink out(dir + "dl_" + name + ".zip64.pth");
      dl::io::detail::write_pth(sd, out, /*force_zip64=*/true);
      out.close();
    }
    check_same(dl::load(dir + "dl_" + name + ".zip64.pth"), sd);
  }
  StateDict meta = dl::load(kDir + "net.pth");
  meta.metadata = {{"epoch", "7"}, {"note", "dl"}};
  dl::save(meta, dir + "dl_meta.pth");
  check_same(dl::load(dir + "dl_meta.pth"), meta);
  for (const char* name : {"net", "dtypes"}) {
    const StateDict sd = dl::load(kDir + name + ".safetensors");
    dl::save(sd, dir + "dl_" + name + ".safetensors");
    check_same(dl::load(dir + "dl_" + name + ".safetensors"), sd);
  }
}

#endif

// ------------------------------------------------------------------------------ fuzzing

namespace {

/// libFuzzer-style target: any input either loads or throws dl::Error (any other exception fails
/// the test; a crash or hang is a crash or hang).
int fuzz_one_input(const uint8_t* data, size_t size, int* loaded) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  try {
    dl::io::from_safetensors(in);
    ++*loaded;
  } catch (const dl::Error&) {
  }
  try {
    dl::io::from_pth(in);
    ++*loaded;
  } catch (const dl::Error&) {
  }
  return 0;
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n ? size_t(rng() % n) : 0; };
  switch (rng() % 6) {
    case 0: s.resize(pick(s.size())); break;  // truncation
    case 1:
      for (int k = 1 + int(rng() % 8); k > 0 && !s.empty(); --k) s[pick(s.size())] ^= char(1 << (rng() % 8));
      break;
    case 2: {  // interesting byte values
      static const unsigned char v[] = {0, 1, 0x7F, 0x80, 0xFF, '{', '[', '"', '(', '.', '0', '9'};
      for (int k = 1 + int(rng() % 4); k > 0 && !s.empty(); --k) s[pick(s.size())] = char(v[rng() % sizeof v]);
      break;
    }
    case 3:
      if (!s.empty()) {  // delete a range
        const size_t at = pick(s.size());
        s.erase(at, 1 + pick(16));
      }
      break;
    case 4: {  // duplicate a range
      const size_t at = pick(s.size()), len = std::min<size_t>(1 + pick(32), s.size() - at);
      s.insert(at, s.substr(at, len));
      break;
    }
    default:
      if (s.size() >= 8) {  // overwrite 8 bytes with a random or extreme 64-bit value
        const uint64_t v = rng() % 2 ? rng() : (rng() % 2 ? ~uint64_t(0) : uint64_t(1) << (rng() % 64));
        std::memcpy(s.data() + pick(s.size() - 7), &v, 8);
      }
  }
  return s;
}

}  // namespace

TEST_CASE("io: fuzzing the readers with 20,000 mutations of valid files") {
  std::vector<std::string> files;
  for (const char* f : {"net.safetensors", "dtypes.safetensors", "dtypes_reference.safetensors", "net.pth",
                        "tied.pth", "strided.pth", "dtypes.pth", "checkpoint.pth"})
    files.push_back(read_file(kDir + f));
  // Pickles are also mutated inside a valid archive (correct CRCs), so that the unpickler and
  // the tensor checks see the mutations rather than the zip layer.
  struct Source {
    std::string pkl;
    std::vector<std::pair<std::string, std::string>> entries;
  };
  std::vector<Source> sources;
#if DL_HAVE_LIBZIP
  for (const char* f : {"net.pth", "strided.pth", "checkpoint.pth", "dtypes.pth"}) {
    const std::string bytes = read_file(kDir + f);
    dl::io::detail::ZipReader zip = dl::io::detail::ZipReader::open_memory(bytes);
    Source s;
    for (int64_t i = 0; i < zip.num_entries(); ++i) {
      const std::string name = zip.name(i), rel = name.substr(name.find('/') + 1);
      std::string data = zip.read_string(i, 1 << 20);
      if (rel == "data.pkl") s.pkl = std::move(data);
      else s.entries.emplace_back(rel, std::move(data));
    }
    sources.push_back(std::move(s));
  }
#endif
  // DL_IO_FUZZ_ITERATIONS=N runs longer campaigns (under -Db_sanitize=address,undefined, say).
  const char* env = std::getenv("DL_IO_FUZZ_ITERATIONS");
  const int iterations = env ? std::atoi(env) : 20000;
  std::mt19937_64 rng(20240607);
  int loaded = 0, pickle_loaded = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int iter = 0; iter < iterations; ++iter) {
    CAPTURE(iter);
    if (iter % 3 == 2 && !sources.empty()) {
      const Source& s = sources[rng() % sources.size()];
      std::string pkl = mutate(s.pkl, rng);
      if (rng() % 4 == 0) pkl = mutate(pkl, rng);
      const std::string a = archive(pkl, s.entries);
      int ok = 0;
      fuzz_one_input(reinterpret_cast<const uint8_t*>(a.data()), a.size(), &ok);
      pickle_loaded += ok;
    } else {
      std::string in = mutate(files[rng() % files.size()], rng);
      if (rng() % 4 == 0) in = mutate(in, rng);
      fuzz_one_input(reinterpret_cast<const uint8_t*>(in.data()), in.size(), &loaded);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(iterations, " mutated inputs in ", secs, " s: ", loaded, " whole files and ", pickle_loaded,
          " mutated pickles still loaded, every other one was a dl::Error");
  CHECK(loaded > 0);
#if DL_HAVE_LIBZIP
  CHECK(pickle_loaded > 0);
#endif
}
