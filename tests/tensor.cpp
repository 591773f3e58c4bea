// Tests for dl/tensor.hpp: creation, properties, views, conversions, printing, the caching
// allocator and random numbers. Values are checked against PyTorch (tests/gen_reference.py).
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include <dl/dl.hpp>

#include "reference.hpp"

using dl::Tensor;

TEST_CASE("creation") {
  SUBCASE("zeros, ones, full, empty") {
    Tensor<float> z = dl::zeros({2, 3});
    CHECK(z.shape() == dl::Shape{2, 3});
    CHECK(z.numel() == 6);
    CHECK(z.sum().item() == 0);
    CHECK(dl::ones<double>({4}).sum().item() == 4.0);
    auto f = dl::full({2, 2}, 7);  // integral value: int64, as PyTorch
    static_assert(std::is_same_v<decltype(f), Tensor<int64_t>>);
    CHECK(f.sum().item() == 28);
    auto fb = dl::full({3}, true);
    static_assert(std::is_same_v<decltype(fb), Tensor<bool>>);
    auto fd = dl::full<double>({1}, 2.5f);
    CHECK(fd.item() == 2.5);
    CHECK(dl::empty<float>({0, 3}).numel() == 0);
  }
  SUBCASE("arange, linspace, eye match PyTorch") {
    ref::check(dl::arange(-3, 10, 3), "create.arange");
    ref::check(dl::arange(0.0, 1.0, 0.1), "create.arange_f");
    ref::check(dl::linspace(-1, 2, 7), "create.linspace");
    ref::check(dl::linspace<double>(0, 1, 11), "create.linspace_f64");
    ref::check(dl::eye(3, 4), "create.eye");
    CHECK(dl::arange(5).shape() == dl::Shape{5});
    CHECK_THROWS_WITH_AS(dl::arange(0, 5, 0), "arange: step must be nonzero", dl::Error);
    CHECK_THROWS_AS(dl::arange(5, 0, 1), dl::Error);
    CHECK_THROWS_AS(dl::linspace(0, 1, -1), dl::Error);
  }
  SUBCASE("nested initializer lists") {
    auto t = dl::tensor<float>({{1, 2, 3}, {4, 5, 6}});
    CHECK(t.shape() == dl::Shape{2, 3});
    CHECK(t.at(1, 2) == 6);
    auto t3 = dl::tensor<int32_t>({{{1}, {2}}, {{3}, {4}}});
    CHECK(t3.shape() == dl::Shape{2, 2, 1});
    CHECK(t3.at(1, 0, 0) == 3);
    auto d = dl::tensor({1.5, 2.5});
    static_assert(std::is_same_v<decltype(d), Tensor<double>>);
    CHECK_THROWS_WITH_AS(dl::tensor<float>({{1, 2}, {3}}),
                         "tensor: ragged nested list: expected sequence of length 2 at dim 1 (got 1)", dl::Error);
    CHECK(dl::scalar_tensor(3.0f).dim() == 0);
  }
  SUBCASE("from_blob wraps memory without a copy") {
    std::vector<float> buf = {1, 2, 3, 4, 5, 6};
    bool deleted = false;
    {
      Tensor<float> t = dl::from_blob(buf.data(), {2, 3}, [&](void*) { deleted = true; });
      CHECK(t.data() == buf.data());
      t.mul_(2.0f);
      CHECK(buf[5] == 12);
      Tensor<float> col = dl::from_blob(buf.data(), {3}, {2});  // strided: every other element
      CHECK(col.at(2) == 10);
    }
    CHECK(deleted);
  }
  SUBCASE("negative sizes are rejected") {
    CHECK_THROWS_WITH_AS(dl::zeros({2, -1}), "Trying to create tensor with negative dimension -1: [2, -1]", dl::Error);
  }
}

TEST_CASE("properties and element access") {
  auto t = dl::arange(24).to<float>().reshape({2, 3, 4});
  CHECK(t.dim() == 3);
  CHECK(t.size(-1) == 4);
  CHECK(t.stride(0) == 12);
  CHECK(t.is_contiguous());
  CHECK(t.at(1, -1, 2) == 22);
  CHECK_THROWS_WITH_AS(t.at(2, 0, 0), "index 2 is out of bounds for dimension 0 with size 2", dl::Error);
  CHECK_THROWS_AS(t.at(0, 0), dl::Error);
  CHECK_THROWS_WITH_AS(t.size(3), "size: dimension out of range (expected to be in range of [-3, 2], but got 3)", dl::Error);
  CHECK_THROWS_WITH_AS(t.item(), "a Tensor with 24 elements cannot be converted to Scalar (shape [2, 3, 4])", dl::Error);
  CHECK(t[1][2].at(3) == 23);
  CHECK(t.device() == dl::kCPU);
  CHECK(dl::Device("cuda:1") == dl::Device(dl::kCUDA, 1));
  CHECK_THROWS_AS(dl::Device("tpu"), dl::Error);
  CHECK_THROWS_AS(t.to(dl::Device(dl::kCUDA, 0)), dl::Error);
}

TEST_CASE("views share storage and match PyTorch") {
  auto w = ref::tensor<float>("w");
  ref::check(w.permute({2, 0, 1}).contiguous(), "view.permute");
  ref::check(w.transpose(0, 2).contiguous(), "view.transpose");
  ref::check(w.narrow(2, 1, 2).contiguous(), "view.narrow");
  ref::check(w.slice(2, 1, INT64_MAX, 2).contiguous(), "view.slice");
  ref::check(w.slice(1, -2).contiguous(), "view.slice_neg");
  ref::check(w.select(1, -1).contiguous(), "view.select");
  ref::check(w.unsqueeze(1).contiguous(), "view.unsqueeze");
  ref::check(w.slice(1, 0, 1).expand({2, 3, 4}).contiguous(), "view.expand");
  ref::check(w.flatten(1), "view.flatten");
  ref::check(w.permute({2, 0, 1}).reshape({4, 6}), "view.tview");

  SUBCASE("writes through a view are seen by the base") {
    Tensor<float> base = dl::zeros({3, 4});
    base.select(1, 2).fill_(5);
    CHECK(base.sum().item() == 15);
    base.t().narrow(0, 0, 1).add_(1.0f);  // column 0
    CHECK(base.at(2, 0) == 1);
    CHECK(base.version() == 2);
  }
  SUBCASE("view needs compatible strides; reshape copies when it must") {
    Tensor<float> a = dl::arange(6.0f).reshape({2, 3});
    CHECK(a.view({3, 2}).data() == a.data());
    CHECK(a.view({-1}).shape() == dl::Shape{6});
    CHECK_THROWS_AS(a.t().view({6}), dl::Error);
    Tensor<float> r = a.t().reshape({6});
    CHECK(r.data() != a.data());
    CHECK(r.at(1) == 3);
    CHECK_THROWS_WITH_AS(a.view({4, 2}), "view: shape '[4, 2]' is invalid for input of size 6", dl::Error);
    CHECK_THROWS_AS(a.view({-1, -1}), dl::Error);
  }
  SUBCASE("squeeze, unsqueeze, expand rules") {
    Tensor<float> a = dl::zeros({1, 3, 1});
    CHECK(a.squeeze().shape() == dl::Shape{3});
    CHECK(a.squeeze(0).shape() == dl::Shape{3, 1});
    CHECK(a.squeeze(1).shape() == dl::Shape{1, 3, 1});
    CHECK(a.unsqueeze(-1).shape() == dl::Shape{1, 3, 1, 1});
    CHECK(a.expand({2, 3, 5}).stride(2) == 0);
    CHECK(a.expand({4, -1, 3, 2}).shape() == dl::Shape{4, 1, 3, 2});
    CHECK_THROWS_WITH_AS(a.expand({2, 4, 1}),
                         "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  "
                         "Target sizes: [2, 4, 1].  Tensor sizes: [1, 3, 1]",
                         dl::Error);
  }
  SUBCASE("transpose, permute, narrow, select errors") {
    Tensor<float> a = dl::zeros({2, 3, 4});
    CHECK_THROWS_AS(a.t(), dl::Error);
    CHECK_THROWS_AS(a.permute({0, 1}), dl::Error);
    CHECK_THROWS_WITH_AS(a.permute({0, 0, 1}), "permute: repeated dim 0 in [0, 0, 1]", dl::Error);
    CHECK_THROWS_WITH_AS(a.narrow(2, 2, 3), "start (2) + length (3) exceeds dimension size (4).", dl::Error);
    CHECK_THROWS_WITH_AS(a.select(1, 3), "select(): index 3 out of range for tensor of size [2, 3, 4] at dimension 1", dl::Error);
    CHECK_THROWS_WITH_AS(a.slice(0, 0, 2, 0), "slice step must be positive, got 0", dl::Error);
    CHECK(a.slice(2, 5, 9).size(2) == 0);
  }
  SUBCASE("split, chunk, unbind") {
    Tensor<float> a = dl::arange(10.0f);
    auto parts = a.split(3);
    REQUIRE(parts.size() == 4);
    CHECK(parts[3].numel() == 1);
    CHECK(parts[3].item() == 9);
    auto sized = a.split(std::vector<int64_t>{2, 8});
    CHECK(sized[1].at(0) == 2);
    CHECK_THROWS_AS(a.split(std::vector<int64_t>{2, 7}), dl::Error);
    CHECK(a.chunk(3).size() == 3);
    CHECK(a.reshape({2, 5}).unbind(1).size() == 5);
  }
  SUBCASE("detach and clone") {
    Tensor<float> a = dl::ones({3});
    Tensor<float> d = a.detach();
    CHECK(d.data() == a.data());
    Tensor<float> c = a.clone();
    CHECK(c.data() != a.data());
    CHECK(c.sum().item() == 3);
  }
}

TEST_CASE("conversions") {
  Tensor<float> a = dl::tensor<float>({-1.5f, 0.25f, 3.75f});
  Tensor<int64_t> i = a.to<int64_t>();
  CHECK(i.at(0) == -1);
  CHECK(i.at(2) == 3);
  Tensor<bool> b = a.to<bool>();
  CHECK(b.at(1));
  Tensor<double> d = a.to<double>();
  CHECK(d.at(1) == 0.25);
  CHECK(a.to<float>().is_same(a));
  Tensor<double> lazy = dl::cast<double>(a * 2.0f);
  CHECK(lazy.at(2) == 7.5);
}

TEST_CASE("zero-size tensors") {
  Tensor<float> e = dl::zeros({0, 3});
  CHECK(e.sum().item() == 0);
  CHECK(e.sum(0).shape() == dl::Shape{3});
  CHECK(e.sum(1).shape() == dl::Shape{0});
  CHECK(std::isnan(e.mean().item()));
  CHECK(e.prod().item() == 1);
  Tensor<float> y = e * 2.0f + 1.0f;
  CHECK(y.shape() == dl::Shape{0, 3});
  CHECK_THROWS_AS(e.max(), dl::Error);
  CHECK(dl::cat<float>({e, dl::ones({2, 3})}).size(0) == 2);
}

TEST_CASE("printing matches PyTorch") {
  const auto cases = ref::prints();
  auto expect = [&](const std::string& name, const std::string& got) {
    INFO(name);
    REQUIRE(cases.count(name));
    CHECK(got == cases.at(name));
  };
  expect("p.floats", dl::to_string(dl::tensor<float>({{1, 2}, {3, 4}})));
  expect("p.frac", dl::to_string(dl::tensor<float>({1.5f, -2.25f, 0.125f})));
  expect("p.sci_small", dl::to_string(dl::tensor<float>({1e-5f, 1.0f})));
  expect("p.sci_big", dl::to_string(dl::tensor<float>({1e10f, 1.0f})));
  expect("p.int_ratio", dl::to_string(dl::arange(2000).to<float>()));
  expect("p.ints", dl::to_string(dl::tensor<int64_t>({1, -20, 300})));
  expect("p.int32", dl::to_string(dl::tensor<int32_t>({1, 2})));
  expect("p.double", dl::to_string(dl::tensor<double>({1.5, 2.0})));
  expect("p.bool", dl::to_string(dl::tensor<bool>({true, false})));
  expect("p.scalar", dl::to_string(dl::scalar_tensor(3.0f)));
  expect("p.scalar_frac", dl::to_string(dl::scalar_tensor(-0.5f)));
  expect("p.empty", dl::to_string(dl::zeros({0})));
  expect("p.empty2", dl::to_string(dl::zeros({0, 3})));
  expect("p.empty_int", dl::to_string(dl::zeros<int64_t>({0})));
  expect("p.nan", dl::to_string(dl::tensor<float>({NAN, 1.0f, INFINITY, -INFINITY})));
  expect("p.cube", dl::to_string(dl::arange(12.0f).reshape({2, 3, 2})));
  expect("p.wide", dl::to_string(Tensor<float>(dl::arange(30.0f) / 7.0f)));
  expect("p.big", dl::to_string(Tensor<float>(dl::arange(2000.0f).reshape({40, 50}) / 3.0f)));
  expect("p.u8", dl::to_string(dl::tensor<uint8_t>({0, 255})));
  expect("p.neg_zero", dl::to_string(dl::tensor<float>({-0.0f, 1.5f})));
  expect("p.requires_grad", dl::to_string(dl::tensor<float>({1, 2}).requires_grad_()));
  std::ostringstream os;
  os << dl::ones({2}) * 2.0f;  // an expression prints its value
  CHECK(os.str() == "tensor([2., 2.])");
}

TEST_CASE("caching allocator reuses freed blocks") {
  dl::empty_cache();
  const auto before = dl::memory_stats();
  for (int i = 0; i < 10; ++i) {
    Tensor<float> t = dl::empty<float>({1 << 20});  // 4 MiB
    t.fill_(1.0f);
  }
  const auto after = dl::memory_stats();
  CHECK(after.num_os_allocs - before.num_os_allocs == 1);
  CHECK(after.num_cache_hits - before.num_cache_hits >= 9);
  CHECK(after.cached_bytes >= (int64_t(4) << 20));
  CHECK(after.peak_allocated_bytes >= (int64_t(4) << 20));
  dl::empty_cache();
  CHECK(dl::memory_stats().cached_bytes == 0);
  CHECK(dl::memory_stats().reserved_bytes == dl::memory_stats().allocated_bytes);
  CHECK_THROWS_AS(dl::set_memory_cache_limit(-1), dl::Error);
}

TEST_CASE("random numbers") {
  SUBCASE("Philox4x32-10 known answer (Random123)") {
    const auto w = dl::detail::Philox::generate(0, 0, 0);
    CHECK(w[0] == 0x6627e8d5u);
    CHECK(w[1] == 0xe169c58du);
    CHECK(w[2] == 0xbc57ac4cu);
    CHECK(w[3] == 0x9b00dbd8u);
  }
  SUBCASE("manual_seed reproduces, independent of thread count") {
    dl::set_num_threads(1);
    dl::manual_seed(42);
    Tensor<float> a = dl::randn({100000});
    Tensor<float> b = dl::rand({1000});
    dl::set_num_threads(2);
    dl::manual_seed(42);
    Tensor<float> a2 = dl::randn({100000});
    Tensor<float> b2 = dl::rand({1000});
    CHECK(dl::all(a == a2).item());
    CHECK(dl::all(b == b2).item());
    dl::Generator g(7), h(7);
    CHECK(dl::all(dl::randint(0, 100, {50}, &g) == dl::randint(0, 100, {50}, &h)).item());
  }
  SUBCASE("distributions have the right moments and ranges") {
    dl::manual_seed(1);
    Tensor<double> n = dl::randn<double>({200000});
    CHECK(std::abs(n.mean().item()) < 0.01);
    CHECK(std::abs(n.std().item() - 1.0) < 0.01);
    Tensor<float> u = dl::rand({200000});
    CHECK(u.min().item() >= 0.0f);
    CHECK(u.max().item() < 1.0f);
    CHECK(std::abs(u.mean().item() - 0.5f) < 0.01f);
    Tensor<int64_t> r = dl::randint(-3, 4, {10000});
    CHECK(r.min().item() == -3);
    CHECK(r.max().item() == 3);
    Tensor<float> un = dl::empty<float>({10000});
    un.uniform_(2.0, 5.0);
    CHECK(un.min().item() >= 2.0f);
    CHECK(un.max().item() < 5.0f);
    un.normal_(10.0, 0.5);
    CHECK(std::abs(un.mean().item() - 10.0f) < 0.05f);
    CHECK_THROWS_AS(dl::randint(5, 5, {2}), dl::Error);
    CHECK_THROWS_AS(un.normal_(0.0, -1.0), dl::Error);
  }
  SUBCASE("randperm is a permutation") {
    Tensor<int64_t> p = dl::randperm(1000);
    std::set<int64_t> seen(p.data(), p.data() + 1000);
    CHECK(seen.size() == 1000);
    CHECK(*seen.begin() == 0);
    CHECK(*seen.rbegin() == 999);
  }
}
