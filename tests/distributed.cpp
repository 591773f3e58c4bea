// Tests of dl/distributed.hpp and DistributedDataParallel, run by meson under
// `mpirun -np 2` and `mpirun -np 3`: every rank runs every test case, so each test calls the
// collectives in the same order on every rank (CHECK, never REQUIRE, so a failing rank stays in step).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dl/data/sampler.hpp>
#include <dl/distributed.hpp>
#include <dl/nn.hpp>
#include <dl/nn/parallel/distributed.hpp>
#include <dl/optim.hpp>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

using dl::Tensor;
namespace dist = dl::distributed;
namespace nn = dl::nn;
namespace F = dl::nn::functional;

namespace {
int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "(no error)";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Every rank's value r + 1 + i at element i.
template <class T>
Tensor<T> ramp(int64_t n, int r) {
  Tensor<T> t = dl::empty<T>({n});
  for (int64_t i = 0; i < n; ++i) t.data()[i] = T(r + 1 + i);
  return t;
}
}  // namespace

TEST_CASE("the default group: ranks and world size from mpirun") {
  CHECK(dist::is_initialized());
  CHECK(world() >= 2);
  CHECK(rank() >= 0);
  CHECK(rank() < world());
  CHECK(dist::default_group().backend() == "mpi");
  CHECK(dl::dist::get_rank() == rank());  // the short namespace
}

TEST_CASE("all_reduce: every ReduceOp on every dtype, against its definition") {
  const int w = world(), r = rank();
  // float and double: SUM, AVG, PRODUCT, MIN, MAX
  for (dist::ReduceOp op : {dist::ReduceOp::SUM, dist::ReduceOp::AVG, dist::ReduceOp::PRODUCT, dist::ReduceOp::MIN, dist::ReduceOp::MAX}) {
    Tensor<float> f = ramp<float>(5, r);
    Tensor<double> d = ramp<double>(5, r);
    dist::all_reduce(f, {.op = op});
    dist::all_reduce(d, {.op = op});
    for (int64_t i = 0; i < 5; ++i) {
      double expect = op == dist::ReduceOp::PRODUCT ? 1 : op == dist::ReduceOp::MIN ? 1e30 : op == dist::ReduceOp::MAX ? -1e30 : 0;
      for (int q = 0; q < w; ++q) {
        const double v = q + 1 + double(i);
        if (op == dist::ReduceOp::SUM || op == dist::ReduceOp::AVG) expect += v;
        else if (op == dist::ReduceOp::PRODUCT) expect *= v;
        else if (op == dist::ReduceOp::MIN) expect = std::min(expect, v);
        else expect = std::max(expect, v);
      }
      if (op == dist::ReduceOp::AVG) expect /= w;
      CHECK(f.data()[i] == doctest::Approx(expect).epsilon(1e-6));
      CHECK(d.data()[i] == doctest::Approx(expect).epsilon(1e-12));
    }
  }
  // integers
  Tensor<int64_t> i64 = ramp<int64_t>(3, r);
  dist::all_reduce(i64);
  CHECK(i64.data()[0] == int64_t(w * (w + 1) / 2));
  Tensor<int32_t> i32 = ramp<int32_t>(3, r);
  dist::all_reduce(i32, {.op = dist::ReduceOp::MAX});
  CHECK(i32.data()[2] == w + 2);
  Tensor<uint8_t> u8 = ramp<uint8_t>(3, r);
  dist::all_reduce(u8, {.op = dist::ReduceOp::MIN});
  CHECK(u8.data()[1] == 2);
  // bool: SUM is "or", MIN is "and"
  Tensor<bool> any = dl::full<bool>({2}, r == 0), all = dl::full<bool>({2}, r == 0);
  dist::all_reduce(any);
  dist::all_reduce(all, {.op = dist::ReduceOp::MIN});
  CHECK(any.data()[0]);
  CHECK_FALSE(all.data()[0]);
  // 16-bit floats, through float
  Tensor<dl::Half> h = ramp<float>(4, r).to<dl::Half>();
  Tensor<dl::BFloat16> b = ramp<float>(4, r).to<dl::BFloat16>();
  dist::all_reduce(h);
  dist::all_reduce(b, {.op = dist::ReduceOp::AVG});
  CHECK(float(h.data()[3]) == doctest::Approx(w * 4 + w * (w - 1) / 2.0));
  CHECK(float(b.data()[0]) == doctest::Approx((w + 1) / 2.0).epsilon(1e-2));
  // AVG of an integer tensor is an error naming the fix
  Tensor<int64_t> bad = dl::zeros<int64_t>({2});
  CHECK(contains(error_of([&] { dist::all_reduce(bad, {.op = dist::ReduceOp::AVG}); }), "ReduceOp::AVG needs a floating tensor, got int64"));
}

TEST_CASE("collectives take non-contiguous tensors and write through to them") {
  Tensor<float> base = dl::arange<float>(0, 6).view({2, 3}) + float(rank());
  Tensor<float> t = base.t();  // [3, 2], transposed strides
  CHECK_FALSE(t.is_contiguous());
  dist::all_reduce(t);
  const float off = float(world() * (world() - 1) / 2);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) CHECK(base.data()[i * 3 + j] == doctest::Approx(world() * (i * 3 + j) + off));
}

TEST_CASE("asynchronous operations run in order on the group's thread and report completion") {
  std::vector<Tensor<float>> ts;
  std::vector<dist::Work> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(dl::full<float>({1000}, float(k + rank())));
    works.push_back(dist::all_reduce(ts.back(), {.async_op = true}));
  }
  for (auto& w : works) w.wait();
  for (int k = 0; k < 8; ++k) {
    CHECK(works[size_t(k)].is_completed());
    CHECK(works[size_t(k)].is_success());
    CHECK(ts[size_t(k)].data()[999] == doctest::Approx(world() * k + world() * (world() - 1) / 2.0));
  }
  dist::Work done;  // a default Work is complete
  CHECK(done.is_completed());
}

TEST_CASE("broadcast, reduce, all_gather, gather, scatter") {
  const int w = world(), r = rank();
  for (int src = 0; src < w; ++src) {
    Tensor<float> t = dl::full<float>({3}, float(r * 10));
    dist::broadcast(t, src);
    CHECK(t.data()[2] == float(src * 10));
  }
  Tensor<double> red = ramp<double>(2, r);
  dist::reduce(red, w - 1);
  CHECK(red.data()[0] == (r == w - 1 ? double(w * (w + 1) / 2) : double(r + 1)));  // only dst changes

  std::vector<Tensor<float>> list;
  dist::all_gather(list, dl::full<float>({2, 2}, float(r)));
  CHECK(list.size() == size_t(w));
  for (int q = 0; q < w; ++q) CHECK(list[size_t(q)].data()[3] == float(q));
  Tensor<float> into = dl::zeros<float>({w * 2, 2});
  dist::all_gather_into_tensor(into, dl::full<float>({2, 2}, float(r)));
  for (int q = 0; q < w; ++q) CHECK(into.data()[q * 4] == float(q));

  std::vector<Tensor<int64_t>> gathered;
  dist::gather(dl::full<int64_t>({1}, r * r), gathered, 0);
  if (r == 0) {
    CHECK(gathered.size() == size_t(w));
    for (int q = 0; q < w; ++q) CHECK(gathered[size_t(q)].data()[0] == q * q);
  }
  std::vector<Tensor<float>> parts;
  if (r == 1)
    for (int q = 0; q < w; ++q) parts.push_back(dl::full<float>({2}, float(100 + q)));
  Tensor<float> mine = dl::zeros<float>({2});
  dist::scatter(mine, parts, 1);
  CHECK(mine.data()[1] == float(100 + r));
}

TEST_CASE("reduce_scatter and all_to_all") {
  const int w = world(), r = rank();
  std::vector<Tensor<float>> in;
  for (int q = 0; q < w; ++q) in.push_back(dl::full<float>({2}, float(q * 10 + r)));
  Tensor<float> out = dl::zeros<float>({2});
  dist::reduce_scatter(out, in);
  CHECK(out.data()[0] == doctest::Approx(w * r * 10 + w * (w - 1) / 2.0));  // sum over ranks of block r
  Tensor<float> flat = dl::cat(in, 0), out2 = dl::zeros<float>({2});
  dist::reduce_scatter_tensor(out2, flat, {.op = dist::ReduceOp::MAX});
  CHECK(out2.data()[1] == float(r * 10 + w - 1));

  std::vector<Tensor<int64_t>> send, recv;
  for (int q = 0; q < w; ++q) {
    send.push_back(dl::full<int64_t>({1}, r * 100 + q));
    recv.push_back(dl::zeros<int64_t>({1}));
  }
  dist::all_to_all(recv, send);
  for (int q = 0; q < w; ++q) CHECK(recv[size_t(q)].data()[0] == q * 100 + r);

  // Uneven splits: rank r sends q + 1 rows to rank q, so it receives r + 1 rows from each.
  std::vector<int64_t> in_splits, out_splits;
  int64_t rows = 0;
  for (int q = 0; q < w; ++q) {
    in_splits.push_back(q + 1);
    out_splits.push_back(r + 1);
    rows += q + 1;
  }
  Tensor<float> a = dl::full<float>({rows, 2}, float(r)), b = dl::zeros<float>({int64_t(w) * (r + 1), 2});
  dist::all_to_all_single(b, a, out_splits, in_splits);
  for (int q = 0; q < w; ++q) CHECK(b.data()[q * (r + 1) * 2] == float(q));
}

TEST_CASE("send / recv, isend / irecv, recv from any rank, barrier, broadcast_object") {
  const int w = world(), r = rank();
  // A ring: each rank sends to the next and receives from the previous.
  Tensor<float> out = dl::full<float>({4}, float(r)), in = dl::zeros<float>({4});
  dist::Work s = dist::isend(out, (r + 1) % w, 7);
  dist::Work q = dist::irecv(in, (r + w - 1) % w, 7);
  q.wait();
  s.wait();
  CHECK(in.data()[0] == float((r + w - 1) % w));
  // Everyone sends to rank 0, which receives from any.
  if (r == 0) {
    int64_t seen = 0;
    for (int k = 1; k < w; ++k) {
      Tensor<int64_t> got = dl::zeros<int64_t>({1});
      const int from = dist::recv(got, -1, 3);
      CHECK(got.data()[0] == from);
      seen |= int64_t(1) << from;
    }
    CHECK(seen == ((int64_t(1) << w) - 2));
  } else {
    dist::send(dl::full<int64_t>({1}, r), 0, 3);
  }
  dist::barrier();

  struct Config {
    int epochs;
    double lr;
  } cfg{r == 0 ? 7 : 0, r == 0 ? 0.5 : 0.0};
  dist::broadcast_object(cfg, 0);
  CHECK(cfg.epochs == 7);
  CHECK(cfg.lr == 0.5);
  std::string name = r == w - 1 ? "from the last rank" : "";
  dist::broadcast_object(name, w - 1);
  CHECK(name == "from the last rank");
  std::vector<int> v = r == 0 ? std::vector<int>{1, 2, 3} : std::vector<int>{};
  dist::broadcast_object(v);
  CHECK(v == std::vector<int>{1, 2, 3});
}

TEST_CASE("subgroups: new_group, collectives among members only, non-members refused") {
  const int r = rank();
  dist::Group pair = dist::new_group({0, 1});
  if (r <= 1) {
    CHECK(pair->is_member());
    CHECK(dist::get_world_size(pair) == 2);
    CHECK(dist::get_rank(pair) == r);
    Tensor<float> t = dl::full<float>({1}, float(r + 1));
    dist::all_reduce(t, {.group = pair});
    CHECK(t.data()[0] == 3.0f);
    Tensor<float> b = dl::full<float>({1}, float(r));
    dist::broadcast(b, 1, {.group = pair});  // src is a global rank
    CHECK(b.data()[0] == 1.0f);
  } else {
    CHECK_FALSE(pair->is_member());
    CHECK(dist::get_rank(pair) == -1);
    Tensor<float> t = dl::zeros<float>({1});
    CHECK(contains(error_of([&] { dist::all_reduce(t, {.group = pair}); }), "is not a member of the group [0, 1]"));
  }
  // The last two ranks (a group that leaves rank 0 out when there are three).
  dist::Group last = dist::new_group({world() - 2, world() - 1});
  if (last->is_member()) {
    Tensor<int64_t> t = dl::full<int64_t>({1}, int64_t(r));
    dist::all_reduce(t, {.group = last});
    CHECK(t.data()[0] == 2 * world() - 3);
  }
  dist::barrier();
}

TEST_CASE("argument errors name the sizes and ranks") {
  const int w = world();
  Tensor<float> t = dl::zeros<float>({2});
  std::vector<Tensor<float>> wrong(size_t(w + 1), dl::zeros<float>({2}));
  CHECK(contains(error_of([&] { dist::all_gather(wrong, t); }), "the output list has " + std::to_string(w + 1) + " tensors"));
  std::vector<Tensor<float>> shapes(size_t(w), dl::zeros<float>({3}));
  CHECK(contains(error_of([&] { dist::all_gather(shapes, t); }), "every entry must match it"));
  CHECK(contains(error_of([&] { dist::broadcast(t, w + 5); }), "source rank " + std::to_string(w + 5) + " is not in the group"));
  Tensor<float> out = dl::zeros<float>({3});
  CHECK(contains(error_of([&] { dist::all_gather_into_tensor(out, t); }), "it needs the group's"));
  CHECK(contains(error_of([] { dist::new_group({0, 0}); }), "listed twice"));
  CHECK(contains(error_of([] { dist::init_process_group(); }), "already initialized"));
}

TEST_CASE("flatten_dense_tensors / unflatten_dense_tensors") {
  std::vector<Tensor<float>> ts{dl::arange<float>(0, 6).view({2, 3}), dl::full<float>({4}, 9.0f)};
  Tensor<float> flat = dist::flatten_dense_tensors(ts);
  CHECK(flat.numel() == 10);
  CHECK(flat.data()[5] == 5.0f);
  CHECK(flat.data()[9] == 9.0f);
  dist::all_reduce(flat, {.op = dist::ReduceOp::AVG});  // the seed's gradient averaging
  auto back = dist::unflatten_dense_tensors(flat, ts);
  CHECK(back[0].shape() == dl::Shape{2, 3});
  CHECK(dl::allclose(back[0], ts[0]));
  back[1].fill_(1.0f);  // views of flat
  CHECK(flat.data()[6] == 1.0f);
}

TEST_CASE("DistributedSampler takes its replicas and rank from the default group") {
  dl::data::DistributedSampler s(10, {.shuffle = false});
  CHECK(s.num_samples() == (10 + world() - 1) / world());
  std::vector<int64_t> idx = s.indices();
  CHECK(idx[0] == rank());
  // Together the ranks cover the dataset.
  std::vector<Tensor<int64_t>> all;
  Tensor<int64_t> mine = dl::empty<int64_t>({s.num_samples()});
  for (size_t i = 0; i < idx.size(); ++i) mine.data()[i] = idx[i];
  dist::all_gather(all, mine);
  std::vector<bool> hit(10, false);
  for (auto& t : all)
    for (int64_t i = 0; i < t.numel(); ++i) hit[size_t(t.data()[i])] = true;
  CHECK(std::count(hit.begin(), hit.end(), true) == 10);
}

// ------------------------------------------------------------------------------------------------
// DistributedDataParallel: k steps on `world` ranks with per-rank batch B give the parameters of one
// process with batch world * B.
// ------------------------------------------------------------------------------------------------
namespace {
struct Mlp : nn::Module {
  nn::Linear<8, 32> fc1;
  nn::Linear<32, 32> fc2;
  nn::Linear<32, 3> fc3;
  DL_MODULE(Mlp, fc1, fc2, fc3)
  Tensor<float> forward(const Tensor<float>& x) { return fc3(F::relu(fc2(F::relu(fc1(x))))); }
};

struct Cnn : nn::Module {
  nn::Conv2d<1, 4> conv{3, {.padding = 1}};
  nn::BatchNorm2d<4> bn;
  nn::Linear<4 * 4 * 4, 3> fc;
  DL_MODULE(Cnn, conv, bn, fc)
  Tensor<float> forward(const Tensor<float>& x) { return fc(F::max_pool2d(F::relu(bn(conv(x))), 2).flatten(1)); }
};

/// A model with a branch that is never used (and one used only when `use_b`).
struct Branchy : nn::Module {
  nn::Linear<8, 3> a;
  nn::Linear<8, 3> b;
  nn::Linear<8, 3> never;
  bool use_b = true;
  DL_MODULE(Branchy, a, b, never)
  Tensor<float> forward(const Tensor<float>& x) { return use_b ? Tensor<float>(a(x) + b(x)) : a(x); }
};

struct Data {
  Tensor<float> x;
  Tensor<int64_t> y;
};
Data batch(dl::Shape shape, int64_t n, uint64_t seed) {
  dl::Generator g(seed);
  dl::Shape s = shape;
  s.insert(0, n);
  Tensor<float> x = dl::randn<float>(s, &g);
  Tensor<int64_t> y = dl::randint<int64_t>(0, 3, {n}, &g);
  return {x, y};
}

template <class M>
std::vector<Tensor<float>> params_of(M& m) {
  std::vector<Tensor<float>> out;
  for (auto& p : m.parameters()) out.push_back(p.detach().clone());
  return out;
}

template <class M>
void check_equivalence(M& net_ddp, M& net_ref, dl::Shape shape, int steps, nn::parallel::DistributedDataParallelOptions o = {},
                       bool micro = false) {
  const int w = world(), r = rank();
  const int64_t B = 4;
  nn::parallel::DistributedDataParallel ddp(net_ddp, o);
  dl::optim::SGD opt(net_ddp.parameters(), {.lr = 0.1, .momentum = 0.9});
  dl::optim::SGD opt_ref(net_ref.parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < steps; ++step) {
    Data d = batch(shape, B * w, 100 + uint64_t(step));
    // DDP: this rank's share.
    opt.zero_grad();
    Tensor<float> xs = d.x.narrow(0, r * B, B);
    Tensor<int64_t> ys = d.y.narrow(0, r * B, B);
    if (micro) {  // two micro-batches, the first under no_sync
      {
        auto guard = ddp.no_sync();
        Tensor<float>(F::cross_entropy(ddp(xs.narrow(0, 0, B / 2)), ys.narrow(0, 0, B / 2)) / 2.0f).backward();
      }
      Tensor<float>(F::cross_entropy(ddp(xs.narrow(0, B / 2, B / 2)), ys.narrow(0, B / 2, B / 2)) / 2.0f).backward();
    } else {
      F::cross_entropy(ddp(xs), ys).backward();
    }
    opt.step();
    // The reference: one process, each rank's share as a micro-batch (BatchNorm's statistics are
    // per rank in DDP), mean over the ranks.
    opt_ref.zero_grad();
    for (int q = 0; q < w; ++q) {
      if (micro) {
        for (int h = 0; h < 2; ++h)
          Tensor<float>(F::cross_entropy(net_ref(d.x.narrow(0, q * B + h * B / 2, B / 2)), d.y.narrow(0, q * B + h * B / 2, B / 2)) /
                        float(2 * w))
              .backward();
      } else {
        Tensor<float>(F::cross_entropy(net_ref(d.x.narrow(0, q * B, B)), d.y.narrow(0, q * B, B)) / float(w)).backward();
      }
    }
    opt_ref.step();
  }
  auto a = params_of(net_ddp), b = params_of(net_ref);
  CHECK(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(dl::allclose(a[i], b[i], 1e-4, 1e-5));
}
}  // namespace

TEST_CASE("DDP: an MLP on world ranks matches one process with the whole batch") {
  dl::manual_seed(1);
  Mlp ref;
  dl::manual_seed(1 + uint64_t(rank()));  // different initial weights on each rank: DDP broadcasts rank 0's
  Mlp net;
  if (rank() != 0) CHECK_FALSE(dl::allclose(net.fc1.weight, ref.fc1.weight));
  check_equivalence(net, ref, {8}, 3, {.bucket_cap_mb = 0.002});
}

TEST_CASE("DDP: a CNN with BatchNorm; buffers follow rank 0") {
  dl::manual_seed(2);
  Cnn ref, net;
  net.load_state_dict(ref.state_dict());
  check_equivalence(net, ref, {1, 8, 8}, 3);
  // broadcast_buffers: every rank holds rank 0's running statistics after a forward.
  nn::parallel::DistributedDataParallel ddp(net);
  (void)ddp(batch({1, 8, 8}, 4, 50 + uint64_t(rank())).x);  // each rank's statistics move apart
  (void)ddp(batch({1, 8, 8}, 4, 7).x);  // rank 0's are broadcast before this forward, which sees the same data everywhere
  Tensor<float> mean = net.bn.running_mean.clone();
  std::vector<Tensor<float>> all;
  dist::all_gather(all, mean);
  for (auto& m : all) CHECK(dl::allclose(m, all[0]));
}

TEST_CASE("DDP: no_sync accumulates locally; the next backward averages the total") {
  dl::manual_seed(3);
  Mlp ref, net;
  net.load_state_dict(ref.state_dict());
  check_equivalence(net, ref, {8}, 2, {}, /*micro=*/true);
}

TEST_CASE("DDP: gradient_as_bucket_view gives the same parameters") {
  dl::manual_seed(4);
  Mlp ref, net;
  net.load_state_dict(ref.state_dict());
  check_equivalence(net, ref, {8}, 3, {.gradient_as_bucket_view = true});
}

TEST_CASE("DDP: unused parameters are an error naming them, or reduced with find_unused_parameters") {
  dl::manual_seed(5);
  Branchy net;
  {
    nn::parallel::DistributedDataParallel ddp(net);
    Data d = batch({8}, 4, 9);
    const std::string e = error_of([&] { F::cross_entropy(ddp(d.x), d.y).backward(); });
    CHECK(contains(e, "received no gradient in this backward pass: never.weight, never.bias"));
    CHECK(contains(e, "find_unused_parameters = true"));
  }
  Branchy ref;
  dl::manual_seed(5);
  ref.load_state_dict(net.state_dict());
  net.zero_grad();
  check_equivalence(net, ref, {8}, 2, {.find_unused_parameters = true});
  CHECK_FALSE(net.never.weight.grad().defined());  // no rank used it: its grad stays undefined
  // b is used on rank 0 only: the others contribute zeros to its average.
  net.zero_grad();
  nn::parallel::DistributedDataParallel ddp(net, {.find_unused_parameters = true});
  net.use_b = rank() == 0;
  Data d = batch({8}, 4, 11);
  F::cross_entropy(ddp(d.x), d.y).backward();
  CHECK(net.b.weight.grad().defined());
  std::vector<Tensor<float>> gs;
  dist::all_gather(gs, net.b.weight.grad());
  for (auto& g : gs) CHECK(dl::allclose(g, gs[0]));
  net.use_b = true;
}

TEST_CASE("DDP: buckets start their all-reduce while backward is still running") {
  dl::manual_seed(6);
  Mlp net;
  nn::parallel::DistributedDataParallel ddp(net, {.bucket_cap_mb = 0.0003});
  auto names = ddp.bucket_parameter_names();
  CHECK(names.size() > 2);
  CHECK(names[0][0] == "fc3.bias");  // reverse registration order
  Data d = batch({8}, 16, 1);
  F::cross_entropy(ddp(d.x), d.y).backward();
  const auto& st = ddp.stats();
  CHECK(st.num_buckets == names.size());
  CHECK(st.bucket_start_ms.size() == names.size());
  CHECK(st.bucket_start_ms[0] < st.backward_end_ms);
}

namespace {
struct Wide : nn::Module {
  nn::Linear<> fc;
  DL_MODULE(Wide, fc)
  explicit Wide(int64_t n) : fc(4, n) {}
  Tensor<float> forward(const Tensor<float>& x) { return fc(x); }
};
}  // namespace

TEST_CASE("DDP: ranks with different models are an error on every rank") {
  Wide w(rank() == 1 ? 5 : 4);
  const std::string e = error_of([&] { nn::parallel::DistributedDataParallel ddp(w); });
  CHECK(contains(e, "the ranks' models differ: parameter 0 (fc.weight here) is float32 [4, 4] on rank 0 and float32 [5, 4] on rank 1"));
}

// ---------------------------------------------------------------- differentiable collectives, SyncBatchNorm

TEST_CASE("functional::all_reduce: each rank's input receives the gradient of every rank's loss") {
  const int w = world(), r = rank();
  Tensor<float> x = dl::full<float>({3}, float(r + 1)).requires_grad_();
  Tensor<float> y = dist::functional::all_reduce(x);
  CHECK(y.data()[0] == doctest::Approx(w * (w + 1) / 2.0));
  Tensor<float>((y * float(r + 1)).sum()).backward();
  CHECK(x.grad().data()[2] == doctest::Approx(w * (w + 1) / 2.0));  // sum over k of d(loss_k)/dy = k + 1
  Tensor<float> xa = dl::full<float>({2}, float(r + 1)).requires_grad_();
  Tensor<float> ya = dist::functional::all_reduce(xa, {.op = dist::ReduceOp::AVG});
  CHECK(ya.data()[1] == doctest::Approx((w + 1) / 2.0));
  Tensor<float>((ya * float(r + 1)).sum()).backward();
  CHECK(xa.grad().data()[0] == doctest::Approx((w + 1) / 2.0));
  // MAX has no gradient: refused on a tensor that requires grad, computed on one that does not.
  CHECK(contains(error_of([&] { (void)dist::functional::all_reduce(x, {.op = dist::ReduceOp::MAX}); }),
                 "ReduceOp::MAX has no gradient; differentiable all-reduces take SUM or AVG"));
  CHECK(dist::functional::all_reduce(x.detach(), {.op = dist::ReduceOp::MAX}).data()[0] == float(w));
  CHECK(contains(error_of([] { (void)dist::functional::all_reduce(Tensor<float>()); }), "functional::all_reduce: the tensor is undefined"));
}

namespace {
/// Rank r's share of a batch spread unevenly over the ranks: r + 2 samples from offset sum(q + 2).
int64_t share_offset(int r) { return int64_t(r) * (r + 3) / 2; }
int64_t share_size(int r) { return r + 2; }
int64_t total_size(int w) { return share_offset(w); }

void randomize_affine(nn::detail::BatchNormBase& bn, uint64_t seed) {
  dl::Generator g(seed);
  dl::NoGradGuard no_grad;
  bn.weight.copy_(dl::rand<float>({bn.num_features}, &g) + 0.5f);
  bn.bias.copy_(dl::randn<float>({bn.num_features}, &g));
}

/// SyncBatchNorm over each rank's share against BatchNorm over the whole batch in one process.
template <class Ref, class Sync>
void check_sync_against_whole(Ref& ref, Sync& sync, dl::Shape sample) {
  const int w = world(), r = rank();
  randomize_affine(ref, 5);
  randomize_affine(sync, 5);
  for (int step = 0; step < 2; ++step) {
    dl::Shape s = sample;
    s.insert(0, total_size(w));
    dl::Generator g(40 + uint64_t(step));
    Tensor<float> all = Tensor<float>(dl::randn<float>(s, &g) * 3.0f + 1.5f).requires_grad_();
    Tensor<float> coef = dl::randn<float>(s, &g);
    Tensor<float> y_ref = ref(all);
    Tensor<float>((y_ref * coef).sum()).backward();

    Tensor<float> mine = all.detach().narrow(0, share_offset(r), share_size(r)).clone().requires_grad_();
    Tensor<float> y = sync(mine);
    Tensor<float>((y * coef.narrow(0, share_offset(r), share_size(r))).sum()).backward();
    CHECK(dl::allclose(y, y_ref.detach().narrow(0, share_offset(r), share_size(r)), 1e-4, 1e-5));
    CHECK(dl::allclose(mine.grad(), all.grad().narrow(0, share_offset(r), share_size(r)), 1e-4, 1e-5));
    // The parameters' gradients are this rank's part; their sum over the ranks is the whole batch's.
    Tensor<float> gw = sync.weight.grad().clone(), gb = sync.bias.grad().clone();
    dist::all_reduce(gw);
    dist::all_reduce(gb);
    CHECK(dl::allclose(gw, ref.weight.grad(), 1e-4, 1e-4));
    CHECK(dl::allclose(gb, ref.bias.grad(), 1e-4, 1e-4));
    CHECK(dl::allclose(sync.running_mean, ref.running_mean, 1e-5, 1e-6));
    CHECK(dl::allclose(sync.running_var, ref.running_var, 1e-5, 1e-6));
    ref.zero_grad();
    sync.zero_grad();
  }
  CHECK(sync.num_batches_tracked.item() == 2);
  // eval: the running statistics, no collective.
  ref.eval();
  sync.eval();
  dl::Shape s = sample;
  s.insert(0, 3);
  Tensor<float> x = dl::randn<float>(s);
  CHECK(dl::allclose(sync(x), ref(x), 1e-5, 1e-6));
}
}  // namespace

TEST_CASE("SyncBatchNorm: each rank's share of an uneven batch gives BatchNorm over the whole batch") {
  nn::BatchNorm2d ref(3);
  nn::SyncBatchNorm sync(3);
  check_sync_against_whole(ref, sync, {3, 4, 5});
  std::ostringstream printed;
  printed << sync;
  CHECK(printed.str() == "SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  CHECK(sync.state_dict().size() == 5);
}

TEST_CASE("convert_sync_batchnorm: BatchNorm1d layers over [N, C] and [N, C, L], momentum None") {
  nn::BatchNorm1d ref2(4, {.momentum = std::nullopt}), sync2(4, {.momentum = std::nullopt});
  nn::convert_sync_batchnorm(sync2);
  check_sync_against_whole(ref2, sync2, {4});
  nn::BatchNorm1d ref3(2), sync3(2);
  CHECK(&nn::convert_sync_batchnorm(sync3) == &sync3);
  check_sync_against_whole(ref3, sync3, {2, 6});
}

TEST_CASE("sync_batch_norm: gradients against finite differences of the loss summed over the ranks (double)") {
  const int w = world(), r = rank();
  const int64_t C = 2, L = 3;
  dl::Generator g(9);
  Tensor<double> all = Tensor<double>(dl::randn<double>({total_size(w), C, L}, &g) * 2.0 + 1.0);
  Tensor<double> coef = dl::randn<double>({total_size(w), C, L}, &g);
  Tensor<double> weight = Tensor<double>(dl::rand<double>({C}, &g) + 0.5).requires_grad_();
  Tensor<double> bias = dl::randn<double>({C}, &g).requires_grad_();
  Tensor<double> mine = all.narrow(0, share_offset(r), share_size(r)).clone().requires_grad_();
  Tensor<double> c = coef.narrow(0, share_offset(r), share_size(r));
  auto global_loss = [&](const Tensor<double>& x, const Tensor<double>& wt, const Tensor<double>& b) {
    Tensor<double> l = Tensor<double>((F::sync_batch_norm(x, {}, {}, wt, b, 0.1, 1e-5) * c).sum()).detach().reshape({1});
    dist::all_reduce(l);
    return l.item();
  };
  Tensor<double>((F::sync_batch_norm(mine, {}, {}, weight, bias, 0.1, 1e-5) * c).sum()).backward();
  const double h = 1e-6;
  dl::NoGradGuard no_grad;
  double worst = 0;
  for (int owner = 0; owner < w; ++owner)
    for (int64_t i = 0; i < share_size(owner) * C * L; ++i) {
      Tensor<double> xp = mine.detach().clone(), xm = mine.detach().clone();
      if (owner == r) {
        xp.data()[i] += h;
        xm.data()[i] -= h;
      }
      const double fd = (global_loss(xp, weight, bias) - global_loss(xm, weight, bias)) / (2 * h);
      if (owner == r) worst = std::max(worst, std::abs(fd - mine.grad().data()[i]));
    }
  CHECK(worst < 1e-6);
  Tensor<double> gw = weight.grad().clone(), gb = bias.grad().clone();
  dist::all_reduce(gw);
  dist::all_reduce(gb);
  for (int64_t k = 0; k < C; ++k) {
    Tensor<double> wp = weight.detach().clone(), wm = weight.detach().clone(), bp = bias.detach().clone(), bm = bias.detach().clone();
    wp.data()[k] += h;
    wm.data()[k] -= h;
    bp.data()[k] += h;
    bm.data()[k] -= h;
    CHECK(std::abs((global_loss(mine.detach(), wp, bias) - global_loss(mine.detach(), wm, bias)) / (2 * h) - gw.data()[k]) < 1e-6);
    CHECK(std::abs((global_loss(mine.detach(), weight, bp) - global_loss(mine.detach(), weight, bm)) / (2 * h) - gb.data()[k]) < 1e-6);
  }
}

TEST_CASE("DDP with convert_sync_batchnorm: a CNN on world ranks matches one process with the whole batch") {
  const int w = world(), r = rank();
  const int64_t B = 4;
  dl::manual_seed(12);
  Cnn ref, net;
  net.load_state_dict(ref.state_dict());
  nn::convert_sync_batchnorm(net);
  nn::parallel::DistributedDataParallel ddp(net);
  dl::optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
  dl::optim::SGD opt_ref(ref.parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < 3; ++step) {
    Data d = batch({1, 8, 8}, B * w, 200 + uint64_t(step));
    opt.zero_grad();
    F::cross_entropy(ddp(d.x.narrow(0, r * B, B)), d.y.narrow(0, r * B, B)).backward();
    opt.step();
    opt_ref.zero_grad();
    F::cross_entropy(ref(d.x), d.y).backward();  // BatchNorm over the whole batch, as SyncBatchNorm's
    opt_ref.step();
  }
  auto a = params_of(net), b = params_of(ref);
  for (size_t i = 0; i < a.size(); ++i) CHECK(dl::allclose(a[i], b[i], 1e-4, 1e-5));
  CHECK(dl::allclose(net.bn.running_mean, ref.bn.running_mean, 1e-4, 1e-5));
  CHECK(dl::allclose(net.bn.running_var, ref.bn.running_var, 1e-4, 1e-5));
}

TEST_CASE("SyncBatchNorm: errors, and a group of one process is BatchNorm") {
  nn::SyncBatchNorm sync(2);
  CHECK(contains(error_of([&] { (void)sync(dl::randn<float>({2})); }), "expected at least 2D input (got 1D input)"));
  CHECK(contains(error_of([&] { (void)sync(dl::randn<float>({4, 3})); }), "expected input with 2 channels (dim 1), got input of shape [4, 3]"));
  // No sample on any rank: every rank learns it after the collective.
  CHECK(contains(error_of([&] { (void)sync(dl::randn<float>({0, 2})); }),
                 "SyncBatchNorm: Expected more than 1 value per channel when training, got 0 over the group's ranks"));
  dist::Group solo = dist::new_group({0});
  nn::SyncBatchNorm one(2, {.process_group = solo});
  nn::BatchNorm1d ref(2);
  Tensor<float> x = dl::randn<float>({5, 2});
  if (rank() == 0) {
    CHECK(dl::allclose(one(x), ref(x), 1e-6, 1e-6));
    CHECK(dl::allclose(one.running_var, ref.running_var, 1e-6, 1e-6));
  } else {
    CHECK(contains(error_of([&] { (void)one(x); }), "SyncBatchNorm: this process (rank " + std::to_string(rank()) +
                                                       ") is not a member of the process group [0]"));
  }
}

// ---------------------------------------------------------------- DDP communication hooks

namespace {
/// The gradients after one DDP backward of the MLP on this rank's share of a fixed batch.
std::vector<Tensor<float>> ddp_grads(const std::function<void(nn::parallel::DistributedDataParallel<Mlp>&)>& setup) {
  dl::manual_seed(21);
  Mlp net;
  nn::parallel::DistributedDataParallel ddp(net, {.bucket_cap_mb = 0.002});
  setup(ddp);
  Data d = batch({8}, 4 * world(), 77);
  F::cross_entropy(ddp(d.x.narrow(0, rank() * 4, 4)), d.y.narrow(0, rank() * 4, 4)).backward();
  std::vector<Tensor<float>> g;
  for (auto& p : net.parameters()) g.push_back(p.grad().clone());
  return g;
}
}  // namespace

TEST_CASE("DDP communication hooks: the result a hook leaves in the bucket becomes grad()") {
  const auto plain = ddp_grads([](auto&) {});
  // A hook of one's own: sums instead of averaging, and sees every bucket once, in order.
  std::vector<size_t> seen;
  size_t last = 0, grads_seen = 0;
  const auto summed = ddp_grads([&](auto& ddp) {
    ddp.register_comm_hook([&](nn::parallel::GradBucket& b) {
      seen.push_back(b.index());
      if (b.is_last()) last = b.index();
      grads_seen += b.gradients().size();
      CHECK(b.gradients().size() == b.parameters().size());
      return dist::all_reduce(b.buffer(), {.group = b.group(), .async_op = true});
    });
  });
  CHECK(seen.size() == 2);  // the 2 KB cap: {fc3, fc2} then {fc1}
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i);
  CHECK(last == seen.size() - 1);
  CHECK(grads_seen == 6);  // three Linear layers' weights and biases
  for (size_t i = 0; i < plain.size(); ++i) CHECK(dl::allclose(summed[i], plain[i] * float(world()), 1e-5, 1e-6));
  // The built-in hooks: the same average through 16-bit numbers.
  const auto fp16 = ddp_grads([](auto& ddp) { ddp.register_comm_hook(nn::parallel::comm_hooks::fp16_compress_hook); });
  const auto bf16 = ddp_grads([](auto& ddp) { ddp.register_comm_hook(nn::parallel::comm_hooks::bf16_compress_hook); });
  const auto dflt = ddp_grads([](auto& ddp) { ddp.register_comm_hook(nn::parallel::comm_hooks::allreduce_hook); });
  bool fp16_rounded = false;
  for (size_t i = 0; i < plain.size(); ++i) {
    CHECK(dl::equal(dflt[i], plain[i]));
    CHECK(dl::allclose(fp16[i], plain[i], 2e-3, 1e-5));
    CHECK(dl::allclose(bf16[i], plain[i], 2e-2, 1e-4));
    fp16_rounded = fp16_rounded || !dl::equal(fp16[i], plain[i]);
  }
  CHECK(fp16_rounded);  // the values did travel as float16
  // Once only.
  dl::manual_seed(21);
  Mlp net;
  nn::parallel::DistributedDataParallel ddp(net);
  ddp.register_comm_hook(nn::parallel::comm_hooks::fp16_compress_hook);
  CHECK(contains(error_of([&] { ddp.register_comm_hook(nn::parallel::comm_hooks::allreduce_hook); }),
                 "register_comm_hook can only be called once"));
  Mlp other;
  nn::parallel::DistributedDataParallel ddp2(other);
  CHECK(contains(error_of([&] { ddp2.register_comm_hook(nn::parallel::CommHook{}); }), "register_comm_hook was given an empty hook"));
}

int main(int argc, char** argv) {
  dist::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(60)});
  doctest::Context ctx(argc, argv);
  const int res = ctx.run();
  // One exit status for all ranks: a failure anywhere fails the run.
  Tensor<int32_t> failed = dl::full<int32_t>({1}, res != 0);
  dist::all_reduce(failed, {.op = dist::ReduceOp::MAX});
  dist::destroy_process_group();
  return failed.data()[0] ? 1 : res;
}
