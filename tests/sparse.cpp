// Sparse COO tensors and sparse gradients: dl::SparseTensor (coalesce, to_dense, add, printing)
// and nn::Embedding(sparse = true) with SparseAdam, SGD and Adagrad, against PyTorch
// (tests/gen_sparse_reference.py -> tests/data/sparse_ref.bin, sparse_print.txt).
#include <doctest/doctest.h>

#include <dl/dl.hpp>
#include <dl/nn/embedding_bag.hpp>

#include "module_ref.hpp"
#include "refbin.hpp"

namespace nn = dl::nn;
namespace optim = dl::optim;
using dl::SparseTensor;
using dl::Tensor;
using testutil::has;
using testutil::msg;

namespace {
const refbin::File& ref() {
  static const refbin::File f("sparse_ref.bin");
  return f;
}
const std::map<std::string, std::string>& prints() {
  static const auto p = refbin::sections("sparse_print.txt");
  return p;
}
Tensor<int64_t> ints(std::initializer_list<int64_t> v, dl::Shape shape) {
  Tensor<int64_t> t = dl::empty<int64_t>(shape);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}
std::string str(const SparseTensor<float>& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
}  // namespace

TEST_CASE("SparseTensor: coalesce, to_dense, add and printing as PyTorch's") {
  const auto a = dl::sparse_coo_tensor(ints({0, 2, 0, 3, 2}, {1, 5}), refbin::det<float>({5, 3}, 1), {5, 3});
  CHECK(!a.is_coalesced());
  CHECK(a._nnz() == 5);
  CHECK(a.sparse_dim() == 1);
  CHECK(a.dense_dim() == 1);
  const auto ca = a.coalesce();
  CHECK(ca.is_coalesced());
  ref().check(ca.indices(), "coo1/indices");
  ref().check(ca.values(), "coo1/values");
  ref().check(a.to_dense(), "coo1/dense");
  ref().check(ca.to_dense(), "coo1/dense");
  CHECK(str(a) == prints().at("coo1"));
  CHECK(str(ca) == prints().at("coo1_coalesced"));

  const auto b = dl::sparse_coo_tensor(ints({1, 0, 1, 1, 2, 1, 2, 0}, {2, 4}), refbin::det<float>({4}, 2), {2, 3});
  ref().check(b.coalesce().indices(), "coo2/indices");
  ref().check(b.coalesce().values(), "coo2/values");
  ref().check(b.to_dense(), "coo2/dense");
  const auto bd = dl::sparse_coo_tensor(b._indices(), refbin::det<double>({4}, 2), {2, 3});
  std::ostringstream os;
  os << bd;
  CHECK(os.str() == prints().at("coo2_double"));

  const auto c = dl::sparse_coo_tensor(ints({4, 2}, {1, 2}), refbin::det<float>({2, 3}, 3), {5, 3}).coalesce();
  const auto sum = ca + c;
  CHECK(sum.is_coalesced());
  ref().check(sum.indices(), "sum/indices");
  ref().check(sum.values(), "sum/values");
  const auto sum2 = a + c;  // an uncoalesced operand: PyTorch's merge walk
  CHECK(!sum2.is_coalesced());
  ref().check(sum2._indices(), "sum2/indices");
  ref().check(sum2._values(), "sum2/values");
  ref().check(Tensor<float>((a + c).to_dense() - c.to_dense()), "coo1/dense");
  CHECK((a * 2.0f).to_dense().sum().item() == doctest::Approx(2 * a.to_dense().sum().item()));

  // Bad input: PyTorch's messages, with the sizes.
  CHECK(has(msg([&] { (void)a.indices(); }), "Cannot get indices on an uncoalesced tensor, please call .coalesce() first"));
  CHECK(has(msg([&] { (void)a.values(); }), "Cannot get values on an uncoalesced tensor"));
  CHECK(has(msg([] { dl::sparse_coo_tensor(ints({0, 5}, {1, 2}), dl::zeros<float>({2, 3}), {5, 3}); }),
            "size is inconsistent with indices: for dim 0, size is 5 but found index 5"));
  CHECK(has(msg([] { dl::sparse_coo_tensor(ints({0, 1}, {1, 2}), dl::zeros<float>({3, 3}), {5, 3}); }),
            "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 3"));
  CHECK(has(msg([] { dl::sparse_coo_tensor(ints({0, 1}, {1, 2}), dl::zeros<float>({2, 4}), {5, 3}); }), "values has incorrect size"));
  CHECK(has(msg([] { dl::sparse_coo_tensor(ints({0, 1}, {2}), dl::zeros<float>({2}), {5}); }), "indices must be sparse_dim x nnz"));
  CHECK(has(msg([&] { (void)(a + b); }), "add: expected sizes of 'self' and 'other' to match"));
}

TEST_CASE("Embedding(sparse = true): the weight's gradient is sparse, as PyTorch's") {
  nn::Embedding emb(10, 4, {.padding_idx = 1, .sparse = true});
  CHECK(testutil::printed(emb) == prints().at("emb_repr"));
  {
    dl::NoGradGuard no_grad;
    emb.weight.copy_(refbin::det<float>({10, 4}, 4));
  }
  Tensor<float> out = emb(ints({1, 3, 3, 7, 1, 0}, {2, 3}));
  (out * refbin::det<float>(out.shape(), 999)).sum().backward();
  REQUIRE(emb.weight.grad_is_sparse());
  const auto g = emb.weight.sparse_grad();
  CHECK(g.shape() == dl::Shape{10, 4});
  ref().check(g._indices(), "emb/indices");  // padding_idx's rows are left out; uncoalesced
  ref().check(g._values(), "emb/values");
  // A second backward adds its rows (PyTorch's sparse add: equal indices met in its merge walk are summed).
  Tensor<float> out2 = emb(ints({3, 9}, {2}));
  (out2 * refbin::det<float>(out2.shape(), 998)).sum().backward();
  const auto acc = emb.weight.sparse_grad();
  ref().check(acc._indices(), "emb/acc_indices");
  ref().check(acc._values(), "emb/acc_values");
  CHECK(!acc.is_coalesced());
  // grad() names the way to read it; zero_grad sets it to none.
  CHECK(has(msg([&] { (void)emb.weight.grad(); }), "this tensor's gradient is sparse"));
  emb.zero_grad();
  CHECK(!emb.weight.grad_is_sparse());
  CHECK(!emb.weight.grad().defined());
  CHECK(has(msg([&] { (void)emb.weight.sparse_grad(); }), "sparse_grad(): this tensor's gradient is none"));

  // scale_grad_by_freq: PyTorch refuses it with sparse gradients.
  nn::Embedding freq(6, 3, {.scale_grad_by_freq = true, .sparse = true});
  CHECK(has(msg([&] { (void)freq(ints({2, 5}, {2})); }), "scale_grad_by_freq not supported with sparse gradients"));
}

TEST_CASE("EmbeddingBag(sparse = true): one gradient row per looked-up index, as PyTorch's") {
  nn::EmbeddingBag bag(10, 3, {.mode = "sum", .sparse = true, .padding_idx = 2});
  {
    dl::NoGradGuard no_grad;
    bag.weight.copy_(refbin::det<float>({10, 3}, 8));
  }
  Tensor<float> o = bag(ints({4, 2, 4, 7, 1, 9}, {6}), ints({0, 2, 2, 5}, {4}), refbin::det<float>({6}, 9));
  (o * refbin::det<float>(o.shape(), 994)).sum().backward();
  REQUIRE(bag.weight.grad_is_sparse());
  ref().check(bag.weight.sparse_grad()._indices(), "bag_sum/indices");
  ref().check(bag.weight.sparse_grad()._values(), "bag_sum/values");

  nn::EmbeddingBag mean(10, 3, {.mode = "mean", .sparse = true});
  {
    dl::NoGradGuard no_grad;
    mean.weight.copy_(refbin::det<float>({10, 3}, 8));
  }
  Tensor<float> om = mean(ints({4, 2, 4, 7, 1, 9}, {2, 3}));
  (om * refbin::det<float>(om.shape(), 993)).sum().backward();
  ref().check(mean.weight.sparse_grad()._indices(), "bag_mean/indices");
  ref().check(mean.weight.sparse_grad()._values(), "bag_mean/values");
  CHECK(has(msg([] { nn::EmbeddingBag(10, 3, {.mode = "max", .sparse = true}); }), "max mode does not support sparse weights"));
}

TEST_CASE("Embedding(sparse = true): a dense gradient meeting the sparse one makes the sum dense") {
  nn::Embedding tied(6, 3, {.sparse = true});
  {
    dl::NoGradGuard no_grad;
    tied.weight.copy_(refbin::det<float>({6, 3}, 6));
  }
  Tensor<float> o = tied(ints({0, 4, 4}, {3}));
  Tensor<float> loss = (o * refbin::det<float>(o.shape(), 996)).sum() + (tied.weight * refbin::det<float>({6, 3}, 995)).sum();
  loss.backward();
  CHECK(!tied.weight.grad_is_sparse());
  ref().check(tied.weight.grad(), "tied/grad");
  // ...also when the sparse one arrives second (a second backward).
  tied.zero_grad();
  (tied.weight * refbin::det<float>({6, 3}, 995)).sum().backward();
  Tensor<float> o2 = tied(ints({0, 4, 4}, {3}));
  (o2 * refbin::det<float>(o2.shape(), 996)).sum().backward();
  CHECK(!tied.weight.grad_is_sparse());
  ref().check(tied.weight.grad(), "tied/grad");

  // autograd::grad returns dense gradients (it does not accumulate into .grad()).
  nn::Embedding e(6, 3, {.sparse = true});
  Tensor<float> y = e(ints({0, 4, 4}, {3}));
  const auto gs = dl::autograd::grad({y.sum()}, {e.weight});
  CHECK(gs[0].shape() == dl::Shape{6, 3});
  CHECK(gs[0][4].sum().item() == doctest::Approx(6.0));
  CHECK(!e.weight.grad_is_sparse());
}

namespace {
template <class Make>
void trajectory(const std::string& name, Make&& make) {
  CAPTURE(name);
  nn::Embedding m(12, 5, {.sparse = true});
  {
    dl::NoGradGuard no_grad;
    m.weight.copy_(refbin::det<float>({12, 5}, 7));
  }
  auto opt = make(m.parameters());
  const std::vector<Tensor<int64_t>> steps = {ints({0, 3, 3, 11, 5, 0}, {2, 3}), ints({7, 7, 2}, {1, 3}), ints({3, 11, 4, 4}, {2, 2}),
                                              ints({1, 0, 1, 9}, {1, 4})};
  for (size_t k = 0; k < steps.size(); ++k) {
    opt.zero_grad();
    Tensor<float> y = m(steps[k]);
    (y * refbin::det<float>(y.shape(), 900 + int64_t(k))).sum().backward();
    opt.step();
    ref().check(m.weight.detach(), name + "/w" + std::to_string(k), 2e-6);
  }
}
}  // namespace

TEST_CASE("SparseAdam, SGD and Adagrad step with sparse gradients as PyTorch's do") {
  using P = std::vector<Tensor<float>>;
  trajectory("sparse_adam", [](P p) { return optim::SparseAdam(p); });
  trajectory("sparse_adam_opts", [](P p) { return optim::SparseAdam(p, {.lr = 0.05, .betas = {0.8, 0.95}, .eps = 1e-6, .maximize = true}); });
  trajectory("sgd", [](P p) { return optim::SGD(p, {.lr = 0.1}); });
  trajectory("sgd_maximize", [](P p) { return optim::SGD(p, {.lr = 0.05, .maximize = true}); });
  trajectory("adagrad", [](P p) { return optim::Adagrad(p, {.lr = 0.1, .lr_decay = 0.01, .initial_accumulator_value = 0.1}); });
  trajectory("adagrad_maximize", [](P p) { return optim::Adagrad(p, {.lr = 0.2, .eps = 1e-6, .maximize = true}); });
}

TEST_CASE("optimizers that take dense gradients only raise PyTorch's errors") {
  nn::Embedding m(12, 5, {.sparse = true});
  nn::Linear<> lin(5, 2);
  auto backward = [&] {
    m.zero_grad();
    lin.zero_grad();
    lin(m(ints({1, 2}, {2}))).sum().backward();
  };
  backward();
  CHECK(has(msg([&] { optim::Adam(m.parameters()).step(); }), "Adam does not support sparse gradients, please consider SparseAdam instead"));
  CHECK(has(msg([&] { optim::AdamW(m.parameters()).step(); }), "AdamW does not support sparse gradients"));
  CHECK(has(msg([&] { optim::RMSprop(m.parameters()).step(); }), "RMSprop does not support sparse gradients"));
  CHECK(has(msg([&] { optim::NAdam(m.parameters()).step(); }), "NAdam does not support sparse gradients"));
  CHECK(has(msg([&] { optim::Adadelta(m.parameters()).step(); }), "Adadelta does not support sparse gradients"));
  CHECK(has(msg([&] { optim::SGD(m.parameters(), {.lr = 0.1, .momentum = 0.9}).step(); }), "takes neither momentum nor weight_decay"));
  CHECK(has(msg([&] { optim::Adagrad(m.parameters(), {.weight_decay = 0.1}).step(); }),
            "weight_decay option is not compatible with sparse gradients"));
  CHECK(has(msg([&] { optim::SparseAdam(lin.parameters()).step(); }), "SparseAdam does not support dense gradients, please consider Adam instead"));
  CHECK(has(msg([] { optim::SparseAdam(std::vector<Tensor<float>>{dl::zeros<float>({2}).requires_grad_()}, {.lr = 0}); }),
            "Invalid learning rate: 0"));
  CHECK(has(msg([] { optim::SparseAdam(std::vector<Tensor<float>>{dl::zeros<float>({2}).requires_grad_()}, {.betas = {1.0, 0.9}}); }),
            "Invalid beta parameter at index 0"));
  // The usual split: SparseAdam for the embedding, Adam for the rest; zero_grad clears both kinds.
  optim::SparseAdam sparse_opt(m.parameters());
  optim::Adam dense_opt(lin.parameters());
  const Tensor<float> before = m.weight.detach().clone();
  sparse_opt.step();
  dense_opt.step();
  const Tensor<float> moved = (m.weight.detach() - before).abs().sum({1});
  for (int64_t r = 0; r < 12; ++r) CHECK((moved[r].item() > 0) == (r == 1 || r == 2));  // only the rows looked up moved
  sparse_opt.zero_grad();
  CHECK(!m.weight.grad_is_sparse());
}
