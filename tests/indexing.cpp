// Tests for dl/ops/indexing.hpp (cat, stack, repeat, gather, scatter, index_*, put_, nonzero,
// masked_select) against PyTorch, with their error paths.
#include <doctest/doctest.h>

#include <dl/dl.hpp>

#include "reference.hpp"

using dl::Tensor;

TEST_CASE("joining") {
  const auto w = ref::tensor<float>("w");
  ref::check(dl::cat<float>({w, Tensor<float>(w * 2.0f)}, 1), "idx.cat1");
  ref::check(dl::cat<float>({w, w.narrow(2, 0, 1)}, 2), "idx.cat2");
  ref::check(dl::stack<float>({w, Tensor<float>(-w)}, 2), "idx.stack2");
  ref::check(dl::repeat(w[0], {2, 1, 3}), "idx.repeat");
  ref::check(dl::cat(w.chunk(2, 2), 0), "idx.chunk1");
  CHECK_THROWS_WITH_AS(dl::cat<float>({w, dl::zeros({2, 2, 4})}, 2),
                       "Sizes of tensors must match except in dimension 2. Expected size 3 but got size 2 for tensor number 1 in the list.",
                       dl::Error);
  CHECK_THROWS_AS(dl::cat<float>({}, 0), dl::Error);
  CHECK_THROWS_AS(dl::cat<float>({w, dl::zeros({2, 3})}), dl::Error);
  CHECK_THROWS_AS(dl::stack<float>({w, w[0]}), dl::Error);
  CHECK_THROWS_AS(dl::repeat(w, {2, 2}), dl::Error);
}

TEST_CASE("gather and scatter") {
  const auto w = ref::tensor<float>("w");
  const auto gi = ref::tensor<int64_t>("gi");
  ref::check(dl::gather(w, 2, gi), "idx.gather2");
  Tensor<float> s = dl::zeros({2, 3, 4});
  dl::scatter_(s, 2, gi, Tensor<float>(dl::ones({2, 3, 2}) * 7.0f));
  ref::check(s, "idx.scatter2");
  Tensor<float> sa = dl::zeros({2, 3, 4});
  dl::scatter_add_(sa, 2, gi, dl::arange(12.0f).reshape({2, 3, 2}));
  ref::check(sa, "idx.scatter_add2");
  CHECK(dl::scatter(w, 2, gi, -1.0f).at(0, 0, 3) == -1.0f);
  CHECK_THROWS_WITH_AS(dl::gather(w, 2, dl::full({2, 3, 1}, 4)), "gather: index 4 is out of bounds for dimension 2 with size 4", dl::Error);
  CHECK(dl::gather(w, 0, dl::zeros<int64_t>({3, 3, 4})).shape() == dl::Shape{3, 3, 4});  // the gather dim may grow
  CHECK_THROWS_AS(dl::gather(w, 0, dl::zeros<int64_t>({2, 4, 4})), dl::Error);
  CHECK_THROWS_AS(dl::gather(w, 1, dl::zeros<int64_t>({2, 3})), dl::Error);
}

TEST_CASE("index_select, index_add, index_copy, index_fill") {
  const auto w = ref::tensor<float>("w");
  const auto si = ref::tensor<int64_t>("si");
  ref::check(dl::index_select(w, 1, si), "idx.index_select1");
  Tensor<float> a = w.clone();
  dl::index_add_(a, 1, si, dl::ones({2, 3, 4}), 2.0f);
  ref::check(a, "idx.index_add1");
  Tensor<float> c = w.clone();
  dl::index_copy_(c, 2, dl::tensor<int64_t>({3, 0}), dl::full<float>({2, 3, 2}, -1));
  ref::check(c, "idx.index_copy2");
  Tensor<float> f = w.clone();
  dl::index_fill_(f, 0, dl::tensor<int64_t>({1}), 5.0f);
  ref::check(f, "idx.index_fill0");
  CHECK_THROWS_WITH_AS(dl::index_select(w, 1, dl::tensor<int64_t>({3})), "index_select: index 3 is out of bounds for dimension 1 with size 3", dl::Error);
  CHECK_THROWS_AS(dl::index_select(w, 1, dl::zeros<int64_t>({2, 2})), dl::Error);
  CHECK_THROWS_AS(dl::index_add(w, 1, si, dl::ones({2, 2, 4})), dl::Error);
}

TEST_CASE("advanced indexing, put_, masks") {
  const auto w = ref::tensor<float>("w");
  Tensor<float> ip = w.clone();
  dl::index_put_(ip, {dl::tensor<int64_t>({0, 1, 1}), dl::tensor<int64_t>({2, 0, 0})},
                 dl::tensor<float>({100, 200, 300}).unsqueeze(1), true);
  ref::check(ip, "idx.index_put_acc");
  Tensor<float> ip2 = w.clone();
  dl::index_put_(ip2, {dl::tensor<int64_t>({1}), dl::tensor<int64_t>({2})}, dl::tensor<float>({-1, -2, -3, -4}));
  ref::check(ip2, "idx.index_put_rows");
  ref::check(dl::index(w, {dl::tensor<int64_t>({1, 0}), dl::tensor<int64_t>({2, 1})}), "idx.index");
  ref::check(Tensor<float>(w.masked_fill(w > 10.0f, -1.0f)), "idx.masked_fill");
  ref::check(dl::masked_select(w, dl::remainder(w, 5.0f) == 0.0f), "idx.masked_select");
  ref::check(dl::nonzero(dl::remainder(w, 7.0f) == 0.0f), "idx.nonzero");
  Tensor<float> pt = w.clone();
  dl::put_(pt, dl::tensor<int64_t>({0, 23, 5}), dl::tensor<float>({-5, -6, -7}));
  ref::check(pt, "idx.put");
  Tensor<float> pt2 = w.clone();
  dl::put_(pt2, dl::tensor<int64_t>({1, 1}), dl::tensor<float>({10, 20}), true);
  ref::check(pt2, "idx.put_acc");
  CHECK_THROWS_AS(dl::index_put(w, {dl::tensor<int64_t>({0}), dl::tensor<int64_t>({0}), dl::tensor<int64_t>({0}), dl::tensor<int64_t>({0})},
                                dl::zeros({1})),
                  dl::Error);
  CHECK_THROWS_AS(dl::index_put(w, {dl::tensor<int64_t>({2})}, dl::zeros({3, 4})), dl::Error);
  CHECK_THROWS_AS(dl::index_put(w, {dl::tensor<int64_t>({0})}, dl::zeros({5})), dl::Error);
  CHECK_THROWS_AS(dl::put_(pt, dl::tensor<int64_t>({24}), dl::tensor<float>({1})), dl::Error);
  CHECK_THROWS_AS(dl::put_(pt, dl::tensor<int64_t>({1, 2}), dl::tensor<float>({1})), dl::Error);
}
