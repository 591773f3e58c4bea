// Tests of dl/nn.hpp: the Module machinery (names, traversal, modes, hooks, registration, state
// dicts, printing), Hogwild replicas (dl/nn/utils/hogwild.hpp), every layer and loss module against
// PyTorch (tests/data/nn_ref.bin and tests/data/nn/, written by tests/gen_nn_reference.py),
// Sequential's checks and fusions, init, and PyTorch interop (.pth and .safetensors files written
// by PyTorch).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/nn/utils/clip_grad.hpp>
#include <dl/nn/utils/hogwild.hpp>

#include "refbin.hpp"

namespace nn = dl::nn;
namespace F = dl::nn::functional;
using dl::Shape;
using dl::Tensor;

namespace {

const refbin::File ref("nn_ref.bin");

/// The Net, in C++ (LeNet with BatchNorm on 32 x 32 inputs).
struct Net : nn::Module {
  nn::Conv2d<1, 6> conv1{5};
  nn::BatchNorm2d<6> bn1;
  nn::Conv2d<6, 16> conv2{5};
  nn::Linear<16 * 5 * 5, 120> fc1;
  nn::Linear<120, 84> fc2;
  nn::Linear<> fc3;
  DL_MODULE(Net, conv1, bn1, conv2, fc1, fc2, fc3)
  explicit Net(int64_t n_classes = 10) : fc3(84, n_classes) {}
  Tensor<float> forward(const Tensor<float>& x) {
    auto y = F::max_pool2d(F::relu(bn1(conv1(x))), 2);
    y = F::max_pool2d(F::relu(conv2(y)), 2).flatten(1);
    return fc3(F::relu(fc2(F::relu(fc1(y)))));
  }
};

/// The state dict of a reference case ("<name>/sd/<key>"), with each key's dtype taken from the module.
dl::StateDict reference_state(nn::Module& m, const std::string& name) {
  dl::StateDict sd;
  for (const auto& [key, t] : m.state_dict()) {
    if (t.is<int64_t>()) sd.insert(key, ref.tensor<int64_t>(name + "/sd/" + key));
    else sd.insert(key, ref.tensor<float>(name + "/sd/" + key));
  }
  return sd;
}

/// Runs a module case of the generator: the same state, train output and gradients, buffers
/// after the train step, eval output.
template <class M, class... Extra>
void check_case(const std::string& name, M& m, const Tensor<float>& x, const Extra&... extra) {
  INFO("case ", name);
  // The module has exactly PyTorch's state dict keys.
  std::vector<std::string> keys;
  for (const auto& [k, t] : m.state_dict()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == ref.keys_with_prefix(name + "/sd/"));
  m.load_state_dict(reference_state(m, name));
  m.train();
  Tensor<float> out = m(x, extra...);
  ref.check(out, name + "/train", 1e-4);
  if (out.requires_grad()) {
    refbin::backward_weighted(out);
    if (x.requires_grad()) ref.check(x.grad(), name + "/gx", 1e-4);
    for (auto& [n, p] : m.named_parameters()) {
      INFO("parameter ", n);
      REQUIRE(p.grad().defined());
      ref.check(p.grad(), name + "/g/" + n, 1e-4);
    }
  }
  for (auto& [n, b] : m.named_buffers()) {
    if (b.template is<float>()) ref.check(b.template as<float>(), name + "/after/" + n, 1e-4);
    else if (b.template is<int64_t>()) ref.check(b.template as<int64_t>(), name + "/after/" + n);
  }
  m.eval();
  dl::NoGradGuard no_grad;
  ref.check(Tensor<float>(m(x.detach(), extra...)), name + "/eval", 1e-4);
}

Tensor<float> input(Shape s, int64_t seed = 1) { return refbin::det<float>(s, seed).requires_grad_(); }


template <class M>
std::string repr(M& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

}  // namespace

// ------------------------------------------------------------------------------ Module machinery

TEST_CASE("named_parameters, buffers, children and modules follow PyTorch's names and order") {
  Net net;
  std::vector<std::string> names;
  for (auto& [n, p] : net.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight", "conv2.bias",
                                          "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"});
  CHECK(net.parameters().size() == 12);
  int64_t count = 0;
  for (const auto& p : net.parameters()) count += p.numel();
  CHECK(count == 6 * 25 + 6 + 12 + 16 * 6 * 25 + 16 + 400 * 120 + 120 + 120 * 84 + 84 + 84 * 10 + 10);
  CHECK(net.parameters(/*recurse=*/false).empty());
  std::vector<std::string> bufs;
  for (auto& [n, b] : net.named_buffers()) bufs.push_back(n);
  CHECK(bufs == std::vector<std::string>{"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked"});
  CHECK(net.buffers()[2].is<int64_t>());
  std::vector<std::string> kids;
  for (auto& [n, c] : net.named_children()) kids.push_back(n + ":" + c->type_name());
  CHECK(kids == std::vector<std::string>{"conv1:Conv2d", "bn1:BatchNorm2d", "conv2:Conv2d", "fc1:Linear", "fc2:Linear", "fc3:Linear"});
  const auto mods = net.named_modules();
  REQUIRE(mods.size() == 7);
  CHECK(mods[0].first == "");
  CHECK(mods[0].second == &net);
  CHECK(mods[3].first == "conv2");
  auto seq = nn::Sequential(nn::Sequential(nn::Linear(2, 3)), nn::ReLU());
  std::vector<std::string> deep;
  for (auto& [n, m] : seq.named_modules()) deep.push_back(n);
  CHECK(deep == std::vector<std::string>{"", "0", "0.0", "1"});
  for (auto& [n, p] : seq.named_parameters()) CHECK((n == "0.0.weight" || n == "0.0.bias"));
}

TEST_CASE("apply visits children first; as<Layer>() matches any size; train/eval propagate") {
  Net net;
  std::vector<std::string> order;
  net.apply([&](nn::Module& m) { order.push_back(m.type_name()); });
  CHECK(order == std::vector<std::string>{"Conv2d", "BatchNorm2d", "Conv2d", "Linear", "Linear", "Linear", "Net"});
  int linears = 0;
  net.apply([&](nn::Module& m) {
    if (auto* l = m.as<nn::Linear>()) {
      ++linears;
      nn::init::constant_(l->weight, 1.0);
    }
  });
  CHECK(linears == 3);  // static (fc1, fc2) and run-time (fc3) sizes alike
  CHECK(net.fc1.weight.min().item() == 1.0f);
  CHECK(net.fc3.weight.max().item() == 1.0f);
  CHECK(net.conv1.as<nn::Linear>() == nullptr);
  CHECK(net.as<Net>() == &net);
  CHECK(net.conv1.as<nn::Conv2d>() == &net.conv1);
  nn::Linear<>& any_linear = net.fc1;  // the static form derives from the run-time one
  CHECK(any_linear.in_features == 400);
  CHECK(net.is_training());
  net.eval();
  for (nn::Module* m : net.modules()) CHECK_FALSE(m->is_training());
  net.train();
  CHECK(net.bn1.is_training());
}

TEST_CASE("zero_grad sets gradients to none (or zeros); requires_grad_ freezes") {
  Net net;
  Tensor<float> out = net(input({2, 1, 32, 32}));
  out.sum().backward();
  for (auto& p : net.parameters()) CHECK(p.grad().defined());
  net.zero_grad(/*set_to_none=*/false);
  for (auto& p : net.parameters()) CHECK(p.grad().abs().sum().item() == 0.0f);
  net.zero_grad();
  for (auto& p : net.parameters()) CHECK_FALSE(p.grad().defined());
  net.conv1.requires_grad_(false);
  CHECK_FALSE(net.conv1.weight.requires_grad());
  Tensor<float>(net(input({2, 1, 32, 32}))).sum().backward();
  CHECK_FALSE(net.conv1.weight.grad().defined());
  CHECK(net.conv2.weight.grad().defined());
}

namespace {
/// A module whose members are all registered at run time (DL_MODULE classes live at namespace
/// scope: C++ gives local classes no member templates).
struct Dyn : nn::Module {
  DL_MODULE(Dyn)
  Tensor<float> forward(const Tensor<float>& x) { return x; }
};
}  // namespace

TEST_CASE("run-time registration of parameters, buffers and modules") {
  Dyn m;
  auto w = m.register_parameter("w", dl::ones({2}));
  CHECK(w.requires_grad());
  m.register_buffer("steps", dl::zeros<int64_t>({}));
  auto lin = m.register_module("proj", nn::Linear(2, 3));
  CHECK(lin->out_features == 3);
  std::vector<std::string> keys = m.state_dict().keys();
  CHECK(keys == std::vector<std::string>{"w", "steps", "proj.weight", "proj.bias"});
  CHECK_THROWS_WITH_AS(m.register_parameter("w", dl::ones({1})), doctest::Contains("attribute 'w' already exists"), dl::Error);
  CHECK_THROWS_WITH_AS(m.register_buffer("a.b", dl::ones({1})), doctest::Contains("can't contain \".\""), dl::Error);
  Tensor<float> leaf = dl::ones({2}).requires_grad_();
  CHECK_THROWS_WITH_AS(m.register_parameter("nl", Tensor<float>(leaf * 2.0f)), doctest::Contains("not a leaf"), dl::Error);
  CHECK_THROWS_WITH_AS(m.parameters<double>(), doctest::Contains("parameter w is float32"), dl::Error);
  // The module registered is the one the caller holds: eval() and to() reach it.
  auto drop = std::make_shared<nn::Dropout>(0.5);
  auto same = m.register_module("drop", drop);
  CHECK(same.get() == drop.get());
  m.eval();
  CHECK(!lin->is_training());
  CHECK(!drop->is_training());
  m.train();
  CHECK(drop->is_training());
  CHECK_THROWS_WITH_AS(m.register_module("nothing", std::shared_ptr<nn::Linear<>>{}), doctest::Contains("module 'nothing' is null"), dl::Error);
}

// ------------------------------------------------------------------------------ Hogwild replicas

namespace {
/// A small regressor for the Hogwild cases.
struct Mlp : nn::Module {
  nn::Linear<4, 16> fc1;
  nn::Linear<16, 1> fc2;
  DL_MODULE(Mlp, fc1, fc2)
  Tensor<float> forward(const Tensor<float>& x) { return fc2(F::relu(fc1(x))); }
};
}  // namespace

TEST_CASE("share_parameters: the replica's steps write the master's values; its gradients are its own") {
  Net master;
  Net replica = master;  // a copy shares the master's tensors, gradients included
  CHECK(replica.fc1.weight.impl() == master.fc1.weight.impl());
  nn::utils::share_parameters(replica, master);
  const auto mp = master.named_parameters(), rp = replica.named_parameters();
  REQUIRE(rp.size() == mp.size());
  for (size_t i = 0; i < mp.size(); ++i) {
    INFO("parameter ", mp[i].first);
    CHECK(rp[i].first == mp[i].first);
    CHECK(rp[i].second.impl() != mp[i].second.impl());
    CHECK(rp[i].second.data_ptr() == mp[i].second.data_ptr());
    CHECK(rp[i].second.requires_grad());
    CHECK(rp[i].second.is_leaf());
  }
  const auto mb = master.named_buffers(), rb = replica.named_buffers();
  REQUIRE(rb.size() == 3);
  for (size_t i = 0; i < mb.size(); ++i) CHECK(rb[i].second.impl()->data() == mb[i].second.impl()->data());

  // Backward through the replica fills the replica's gradients only.
  Tensor<float> out = replica(input({2, 1, 32, 32}));
  out.sum().backward();
  for (auto& p : replica.parameters()) CHECK(p.grad().defined());
  for (auto& p : master.parameters()) CHECK_FALSE(p.grad().defined());
  // BatchNorm's running statistics, updated in place by the replica's forward, are the master's.
  CHECK(master.bn1.num_batches_tracked.item() == 1);

  // A step over the replica's parameters moves the master.
  const Tensor<float> before = master.fc1.weight.clone();
  dl::optim::SGD opt(replica.parameters(), {.lr = 0.1});
  opt.step();
  CHECK(dl::equal(master.fc1.weight, replica.fc1.weight));
  CHECK_FALSE(dl::equal(master.fc1.weight, before));
  CHECK(dl::allclose(master.fc1.weight, Tensor<float>(before - 0.1f * replica.fc1.weight.grad()), 1e-5, 1e-6));
  // and the master's values are the replica's: load_state_dict into the master reaches it.
  Net fresh;
  master.load_state_dict(fresh.state_dict());
  CHECK(dl::equal(replica.conv2.weight, fresh.conv2.weight));
}

TEST_CASE("share_parameters: another replica's step between forward and backward is not an in-place error") {
  Mlp master;
  Mlp a = master, b = master;
  nn::utils::share_parameters(a, master);
  nn::utils::share_parameters(b, master);
  const Tensor<float> x = dl::randn({8, 4});
  dl::optim::SGD opt_a(a.parameters(), {.lr = 0.1}), opt_b(b.parameters(), {.lr = 0.1});

  Tensor<float> out_a = a(x);  // saves fc2.weight for backward
  Tensor<float>(b(x)).sum().backward();
  opt_b.step();  // writes the memory a's graph saved: Hogwild's stale read, as between processes
  CHECK_NOTHROW(out_a.sum().backward());
  CHECK(a.fc2.weight.grad().defined());

  // The replica's own in-place changes are still caught.
  Tensor<float> again = a(x);
  opt_a.step();
  CHECK_THROWS_WITH_AS(again.sum().backward(), doctest::Contains("modified by an inplace operation"), dl::Error);
}

TEST_CASE("share_parameters: tied parameters stay tied; modules that differ are named in the error") {
  Dyn tied_master, tied_replica;
  auto w = tied_master.register_parameter("a", dl::ones({3}));
  tied_master.register_parameter("b", w);
  auto v = tied_replica.register_parameter("a", dl::zeros({3}));
  tied_replica.register_parameter("b", v);
  nn::utils::share_parameters(tied_replica, tied_master);
  const auto tied = tied_replica.named_parameters();  // one tensor under two names is listed once
  REQUIRE(tied.size() == 1);
  CHECK(tied[0].second.data_ptr() == w.data_ptr());

  nn::Linear<> l8(4, 8), l9(4, 9), no_bias(4, 8, /*bias=*/false);
  CHECK_THROWS_WITH_AS(nn::utils::share_parameters(l8, l9),
                       doctest::Contains("share_parameters: parameter 'weight' has shape [8, 4] in the replica but [9, 4] in the master"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(nn::utils::share_parameters(no_bias, l8),
                       doctest::Contains("share_parameters: the master has parameter 'bias' that the replica lacks"), dl::Error);
  CHECK_THROWS_WITH_AS(nn::utils::share_parameters(l8, l8), doctest::Contains("the replica is the master itself"), dl::Error);

  Dyn named_w, named_v;
  named_w.register_parameter("w", dl::ones({2}));
  named_v.register_parameter("v", dl::ones({2}));
  CHECK_THROWS_WITH_AS(nn::utils::share_parameters(named_w, named_v),
                       doctest::Contains("the replica has parameter 'w' where the master has parameter 'v'"), dl::Error);
  // Nothing is replaced when a later member differs.
  Dyn late_a, late_b;
  auto first = late_a.register_parameter("first", dl::ones({2}));
  late_a.register_parameter("second", dl::ones({3}));
  late_b.register_parameter("first", dl::ones({2}));
  late_b.register_parameter("second", dl::ones({4}));
  CHECK_THROWS_WITH_AS(nn::utils::share_parameters(late_a, late_b), doctest::Contains("parameter 'second' has shape [3]"), dl::Error);
  CHECK(late_a.named_parameters()[0].second.impl() == first.impl());

  // A copy of a dynamic Sequential shares its children: such a replica is built anew.
  nn::Sequential dyn;
  dyn.push_back(nn::Linear(2, 3));
  nn::Sequential copy = dyn;
  CHECK_THROWS_WITH_AS(nn::utils::share_parameters(copy, dyn), doctest::Contains("share the submodule '0'"), dl::Error);
  nn::Sequential built;
  built.push_back(nn::Linear(2, 3));
  nn::utils::share_parameters(built, dyn);
  CHECK(built.parameters()[0].data_ptr() == dyn.parameters()[0].data_ptr());
}

TEST_CASE("Hogwild: two threads train replicas of one model without locks and the master's loss falls") {
  dl::manual_seed(0);
  Mlp master;
  const Tensor<float> x = dl::randn({256, 4});
  const Tensor<float> y = dl::mm(x, Tensor<float>(dl::arange<float>(1, 5).view({4, 1}) * 0.5f));
  auto master_loss = [&] {
    dl::NoGradGuard no_grad;
    return F::mse_loss(master(x), y).item();
  };
  const float before = master_loss();

  std::vector<std::string> errors(2);
  std::vector<std::thread> workers;
  for (int rank = 0; rank < 2; ++rank)
    workers.emplace_back([&, rank] {
      try {
        dl::set_num_threads_in_this_thread(1);
        Mlp replica = master;
        nn::utils::share_parameters(replica, master);
        dl::optim::SGD opt(replica.parameters(), {.lr = 0.02});
        const Tensor<float> xs = x.narrow(0, rank * 128, 128), ys = y.narrow(0, rank * 128, 128);  // disjoint shards
        for (int step = 0; step < 300; ++step) {
          Tensor<float> loss = F::mse_loss(replica(xs), ys);
          opt.zero_grad();
          loss.backward();
          opt.step();
        }
      } catch (const std::exception& e) {
        errors[size_t(rank)] = e.what();
      }
    });
  for (auto& w : workers) w.join();
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
  const float after = master_loss();
  INFO("master's loss ", before, " -> ", after);
  CHECK(after < 0.05f * before);
  for (auto& p : master.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("forward hooks and pre-hooks see and replace tensors; remove() unregisters") {
  nn::Linear lin(3, 2);
  std::vector<std::string> log;
  auto pre = lin.register_forward_pre_hook([&](nn::Module& m, std::vector<dl::AnyTensor>& in) {
    log.push_back("pre " + m.type_name());
    in[0] = Tensor<float>(in[0].as<float>() * 0.0f);  // replaces the input
  });
  auto post = lin.register_forward_hook([&](nn::Module&, const std::vector<dl::AnyTensor>& in, dl::AnyTensor& out) {
    log.push_back("post");
    CHECK(in[0].as<float>().abs().sum().item() == 0.0f);
    out = Tensor<float>(out.as<float>() + 1.0f);
  });
  Tensor<float> y = lin(dl::ones({4, 3}));
  CHECK(log == std::vector<std::string>{"pre Linear", "post"});
  Tensor<float> expect = lin.bias + 1.0f;
  CHECK(dl::allclose(y[0], expect));
  pre.remove();
  post.remove();
  CHECK_FALSE(lin.has_forward_hooks());
  Tensor<float> z = lin(dl::ones({1, 3}));
  CHECK(log.size() == 2);
  Tensor<float> plain = F::linear(dl::ones({1, 3}), lin.weight, lin.bias);
  CHECK(dl::allclose(z, plain));
}

TEST_CASE("printouts are PyTorch's text") {
  const auto p = refbin::sections("nn/print.txt");
  Net net;
  CHECK(repr(net) == p.at("net"));
  auto seq = nn::Sequential(nn::Linear<784, 128>(), nn::ReLU(), nn::Linear<128, 10>());
  CHECK(repr(seq) == p.at("seq"));
  nn::Sequential named({{"conv1", nn::Conv2d(3, 3, 3)}, {"bn1", nn::BatchNorm2d(3)}, {"relu1", nn::ReLU()}});
  CHECK(repr(named) == p.at("named"));
  nn::ModuleList list(nn::Dropout(0.25), nn::Identity());
  nn::ModuleDict dict({{"head", nn::Linear(4, 2)}});
  auto nested = nn::Sequential(nn::Sequential(nn::Conv2d(1, 4, 3, {.padding = 1, .bias = false}), nn::BatchNorm2d(4, {.momentum = std::nullopt})),
                               std::move(list), nn::Flatten(), std::move(dict));
  CHECK(repr(nested) == p.at("nested"));
  nn::Sequential layers;
  layers.push_back(nn::Conv1d(2, 4, 3, {.padding_mode = "reflect"}))
      .push_back(nn::Conv3d(2, 4, 3))
      .push_back(nn::ConvTranspose2d(4, 2, 3, {.stride = 2, .output_padding = 1}))
      .push_back(nn::MaxPool2d(3, {.stride = 2, .padding = 1, .ceil_mode = true}))
      .push_back(nn::AvgPool2d(2))
      .push_back(nn::AdaptiveAvgPool2d({1, 1}))
      .push_back(nn::AdaptiveMaxPool2d(2))
      .push_back(nn::MaxPool1d(2))
      .push_back(nn::AvgPool1d(3))
      .push_back(nn::LayerNorm(10))
      .push_back(nn::GroupNorm(2, 6))
      .push_back(nn::Embedding(10, 3, {.padding_idx = 0}))
      .push_back(nn::Bilinear(5, 4, 3))
      .push_back(nn::Unflatten(1, {2, 5}))
      .push_back(nn::ZeroPad2d(1))
      .push_back(nn::ConstantPad2d({1, 2, 3, 4}, 3.5))
      .push_back(nn::Dropout2d(0.2))
      .push_back(nn::ReLU(/*inplace=*/true))
      .push_back(nn::LeakyReLU())
      .push_back(nn::ELU())
      .push_back(nn::GELU())
      .push_back(nn::GELU("tanh"))
      .push_back(nn::Softplus())
      .push_back(nn::Hardtanh())
      .push_back(nn::PReLU())
      .push_back(nn::Softmax(1))
      .push_back(nn::LogSoftmax(1))
      .push_back(nn::SiLU())
      .push_back(nn::Mish())
      .push_back(nn::SELU())
      .push_back(nn::Sigmoid())
      .push_back(nn::Tanh())
      .push_back(nn::BatchNorm1d(5, {.affine = false}))
      .push_back(nn::CrossEntropyLoss())
      .push_back(nn::MSELoss());
  CHECK(repr(layers) == p.at("layers"));
  nn::ParameterList params{dl::zeros({10, 10}), dl::zeros({3})};
  CHECK(repr(params) == p.at("paramlist"));
}

// ------------------------------------------------------------------------------ layers against PyTorch

TEST_CASE("linear, bilinear, flatten and unflatten modules") {
  nn::Linear lin(5, 3);
  check_case("linear", lin, input({4, 5}));
  nn::Linear<5, 3> nobias(/*bias=*/false);
  CHECK_FALSE(nobias.bias.defined());
  check_case("linear_nobias", nobias, input({2, 3, 5}));
  nn::Bilinear bil(3, 4, 2);
  check_case("bilinear", bil, input({5, 3}), refbin::det<float>({5, 4}, 7));
  nn::Flatten flat;
  check_case("flatten", flat, input({2, 3, 4}));
  nn::Unflatten unflat(1, {2, 3});
  check_case("unflatten", unflat, input({4, 6}));
}

TEST_CASE("convolution modules") {
  nn::Conv1d c1(2, 4, 3, {.stride = 2, .padding = 1});
  check_case("conv1d", c1, input({2, 2, 9}));
  nn::Conv2d<3, 4> c2(3, {.stride = 1, .padding = 1, .bias = false});
  check_case("conv2d", c2, input({2, 3, 6, 5}));
  nn::Conv2d cg(4, 6, {3, 2}, {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2});
  check_case("conv2d_groups", cg, input({2, 4, 7, 6}));
  nn::Conv2d cr(2, 3, 3, {.padding = 1, .padding_mode = "reflect"});
  check_case("conv2d_reflect", cr, input({1, 2, 5, 5}));
  nn::Conv2d cc(2, 3, 3, {.padding = 2, .padding_mode = "circular"});
  check_case("conv2d_circular", cc, input({1, 2, 5, 6}));
  nn::Conv3d c3(2, 3, 2, {.stride = {1, 2, 1}, .padding = 1});
  check_case("conv3d", c3, input({1, 2, 4, 5, 3}));
  nn::ConvTranspose1d t1(3, 2, 3, {.stride = 2, .output_padding = 1});
  check_case("convt1d", t1, input({2, 3, 5}));
  nn::ConvTranspose2d t2(4, 2, 3, {.stride = 2, .padding = 1, .output_padding = 1, .groups = 2});
  check_case("convt2d", t2, input({1, 4, 3, 4}));
  CHECK_THROWS_WITH_AS(nn::Conv2d(3, 4, 3, {.groups = 2}), doctest::Contains("in_channels must be divisible by groups"), dl::Error);
  CHECK_THROWS_WITH_AS(nn::Conv2d(2, 4, 3, {.padding_mode = "mirror"}), doctest::Contains("padding_mode must be one of"), dl::Error);
  CHECK_THROWS_WITH_AS(nn::Conv2d(2, 4, 0), doctest::Contains("kernel_size must be positive"), dl::Error);
}

TEST_CASE("pooling modules") {
  nn::MaxPool2d mp(3, {.stride = 2, .padding = 1, .ceil_mode = true});
  check_case("maxpool2d", mp, input({2, 3, 7, 6}));
  auto [values, indices] = mp.forward_with_indices(input({2, 3, 7, 6}));
  CHECK(values.shape() == indices.shape());
  nn::MaxPool1d mp1(2);
  check_case("maxpool1d", mp1, input({2, 3, 7}));
  nn::AvgPool2d ap(3, {.stride = 2, .padding = 1, .count_include_pad = false});
  check_case("avgpool2d", ap, input({2, 2, 6, 7}));
  nn::AvgPool1d ap1(3, {.stride = 2});
  check_case("avgpool1d", ap1, input({2, 2, 9}));
  nn::AdaptiveAvgPool2d aa({2, 3});
  check_case("adaptiveavg2d", aa, input({2, 3, 7, 8}));
  nn::AdaptiveMaxPool2d am(2);
  check_case("adaptivemax2d", am, input({2, 3, 5, 5}));
  nn::AdaptiveAvgPool1d aa1(3);
  check_case("adaptiveavg1d", aa1, input({2, 3, 8}));
}

TEST_CASE("normalization modules: batch statistics and running updates in train, running statistics in eval") {
  nn::BatchNorm1d<4> b1;
  check_case("bn1d", b1, input({6, 4}));
  CHECK(b1.num_batches_tracked.item() == 4);  // the reference state had 3
  nn::BatchNorm1d b13(3, {.momentum = std::nullopt});
  check_case("bn1d_3d", b13, input({4, 3, 5}));
  nn::BatchNorm2d b2(3);
  check_case("bn2d", b2, input({4, 3, 5, 4}));
  nn::BatchNorm2d b2n(3, {.momentum = 0.3, .affine = false});
  check_case("bn2d_noaffine", b2n, input({2, 3, 4, 4}));
  nn::BatchNorm2d b2s(3, {.track_running_stats = false});
  check_case("bn2d_nostats", b2s, input({2, 3, 4, 4}));
  nn::BatchNorm3d b3(2);
  check_case("bn3d", b3, input({2, 2, 3, 3, 2}));
  nn::LayerNorm ln({4, 5});
  check_case("layernorm", ln, input({3, 4, 5}));
  nn::GroupNorm<2, 6> gn;
  check_case("groupnorm", gn, input({2, 6, 3, 4}));
  CHECK_THROWS_WITH_AS(b2(input({4, 3, 5})), doctest::Contains("expected 4D input (got 3D input)"), dl::Error);
  CHECK_THROWS_WITH_AS(b2(input({4, 2, 5, 5})), doctest::Contains("expected input with 3 channels"), dl::Error);
  CHECK_THROWS_WITH_AS(nn::GroupNorm(4, 6), doctest::Contains("num_channels must be divisible by num_groups"), dl::Error);
}

TEST_CASE("embedding, PReLU, padding and dropout modules") {
  nn::Embedding emb(10, 4, {.padding_idx = 2});
  dl::NoGradGuard* none = nullptr;
  (void)none;
  {
    Tensor<double> d = refbin::det<double>({3, 5}, 1);
    Tensor<int64_t> idx = dl::empty<int64_t>({3, 5});
    for (int64_t i = 0; i < 15; ++i) idx.data()[i] = std::abs(int64_t(d.data()[i] * 1000)) % 10;
    INFO("case embedding");
    emb.load_state_dict(reference_state(emb, "embedding"));
    Tensor<float> out = emb(idx);
    ref.check(out, "embedding/train", 1e-5);
    refbin::backward_weighted(out);
    ref.check(emb.weight.grad(), "embedding/g/weight", 1e-5);
  }
  nn::PReLU prelu(3);
  check_case("prelu", prelu, input({2, 3, 4}));
  nn::ZeroPad2d zp({1, 2, 0, 1});
  check_case("zeropad2d", zp, input({1, 2, 3, 3}));
  nn::ReflectionPad2d rp(1);
  check_case("reflpad2d", rp, input({1, 2, 3, 3}));
  nn::Dropout drop(0.5);
  dl::manual_seed(3);
  Tensor<float> x = dl::ones({1000});
  Tensor<float> y = drop(x);
  const double kept = dl::sum(y > 0.0f).item();
  CHECK(kept > 400);
  CHECK(kept < 600);
  CHECK(y.max().item() == doctest::Approx(2.0));
  drop.eval();
  CHECK(dl::allclose(Tensor<float>(drop(x)), x));
  CHECK_THROWS_WITH_AS(nn::Dropout(1.5), doctest::Contains("dropout probability has to be between 0 and 1, but got 1.5"), dl::Error);
}

TEST_CASE("activation modules") {
  for (const char* n : {"relu", "relu6", "leakyrelu", "elu", "selu", "gelu", "gelu_tanh", "silu", "mish", "sigmoid", "tanh",
                        "softplus", "hardtanh", "softmax", "logsoftmax"}) {
    const std::string name = std::string("act_") + n;
    const Tensor<float> x = input({3, 4, 5});
    if (name == "act_relu") { nn::ReLU m; check_case(name, m, x); }
    if (name == "act_relu6") { nn::ReLU6 m; check_case(name, m, x); }
    if (name == "act_leakyrelu") { nn::LeakyReLU m(0.2); check_case(name, m, x); }
    if (name == "act_elu") { nn::ELU m(0.5); check_case(name, m, x); }
    if (name == "act_selu") { nn::SELU m; check_case(name, m, x); }
    if (name == "act_gelu") { nn::GELU m; check_case(name, m, x); }
    if (name == "act_gelu_tanh") { nn::GELU m("tanh"); check_case(name, m, x); }
    if (name == "act_silu") { nn::SiLU m; check_case(name, m, x); }
    if (name == "act_mish") { nn::Mish m; check_case(name, m, x); }
    if (name == "act_sigmoid") { nn::Sigmoid m; check_case(name, m, x); }
    if (name == "act_tanh") { nn::Tanh m; check_case(name, m, x); }
    if (name == "act_softplus") { nn::Softplus m(2, 1); check_case(name, m, x); }
    if (name == "act_hardtanh") { nn::Hardtanh m(-0.5, 0.7); check_case(name, m, x); }
    if (name == "act_softmax") { nn::Softmax m(1); check_case(name, m, x); }
    if (name == "act_logsoftmax") { nn::LogSoftmax m(-1); check_case(name, m, x); }
  }
  nn::ReLU inplace(true);
  Tensor<float> x = dl::tensor<float>({-1, 2, -3});
  Tensor<float> y = inplace(x);
  CHECK(x.data()[0] == 0.0f);  // the input was overwritten, as PyTorch's inplace=True
  CHECK(y.data()[1] == 2.0f);
  CHECK_THROWS_WITH_AS(nn::GELU("fast"), doctest::Contains("approximate argument must be either none or tanh"), dl::Error);
}

TEST_CASE("loss modules") {
  Tensor<int64_t> tgt = dl::tensor<int64_t>({1, 0, 3, 2, 1, 1});
  nn::CrossEntropyLoss ce({.label_smoothing = 0.1});
  check_case("loss_ce", ce, input({6, 4}), tgt);
  nn::CrossEntropyLoss cew({.weight = dl::tensor<float>({1, 2, 0.5, 1.5}), .ignore_index = 3});
  check_case("loss_ce_weight", cew, input({6, 4}), tgt);
  nn::NLLLoss nll({.reduction = nn::Reduction::sum});
  check_case("loss_nll", nll, input({6, 4}), tgt);
  nn::MSELoss mse;
  check_case("loss_mse", mse, input({3, 4}), refbin::det<float>({3, 4}, 5));
  nn::BCEWithLogitsLoss bce({.pos_weight = dl::tensor<float>({1, 2, 3, 0.5})});
  Tensor<float> t = Tensor<float>(dl::cast<float>(refbin::det<float>({3, 4}, 5) > 0.0f));
  check_case("loss_bcelogits", bce, input({3, 4}), t);
}

// ------------------------------------------------------------------------------ Sequential

TEST_CASE("static Sequential: fused Linear+ReLU epilogues and elementwise runs give PyTorch's results") {
  auto seq = nn::Sequential(nn::Linear<6, 5>(), nn::ReLU(), nn::Linear<5, 4>(), nn::ReLU(), nn::Dropout(0.0), nn::Sigmoid(),
                            nn::Tanh(), nn::Linear<4, 2>());
  check_case("seq_mlp", seq, input({3, 6}));
  // Dropout -> Sigmoid -> Tanh is one fused pass: one autograd node for the three.
  auto act = nn::Sequential(nn::Dropout(0.0), nn::Sigmoid(), nn::Tanh());
  Tensor<float> y = act(input({2, 3}));
  CHECK(y.grad_fn()->name() == "FusedBackward[Tanh(Sigmoid(x0))]");
  std::vector<std::string> names;
  for (auto& [n, c] : seq.named_children()) names.push_back(n);
  CHECK(names.size() == 8);
  CHECK(names[7] == "7");
  CHECK(seq.get<2>().out_features == 4);
  CHECK(seq[2].type_name() == "Linear");
}

TEST_CASE("Sequential with run-time sizes checks adjacent layers when built") {
  CHECK_NOTHROW(nn::Sequential(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10)));
  CHECK_THROWS_WITH_AS(nn::Sequential(nn::Linear(784, 128), nn::ReLU(), nn::Linear(100, 10)),
                       doctest::Contains("layer 2 (Linear) takes 100 features but layer 1 (ReLU) produces 128"), dl::Error);
  CHECK_THROWS_WITH_AS(nn::Sequential(nn::Conv2d(1, 6, 5), nn::BatchNorm2d(8)),
                       doctest::Contains("takes 8 channels but layer 0 (Conv2d) produces 6"), dl::Error);
  nn::Sequential dyn;
  dyn.add_module("fc", nn::Linear(4, 3)).add_module("act", nn::ReLU()).add_module("out", nn::Linear(5, 2));
  CHECK_THROWS_WITH_AS(dyn(dl::ones({2, 4})), doctest::Contains("Sequential layer out (Linear): linear: input has 3 features"), dl::Error);
  CHECK_THROWS_WITH_AS(dyn[7], doctest::Contains("index 7 is out of range"), dl::Error);
  nn::Sequential bil;
  bil.push_back(nn::Bilinear(2, 2, 2));
  CHECK_THROWS_WITH_AS(bil(dl::ones({1, 2})), doctest::Contains("cannot be called with one float tensor"), dl::Error);
}

TEST_CASE("check_sizes: the layers of a hand-written forward, checked as Sequential's") {
  // Static sizes are checked when compiling (tests/static/check_sizes_mismatch.cpp must not compile);
  // these agree, with activations, dropout and pooling passing sizes on.
  nn::Conv2d<1, 8> conv1(3);
  nn::Conv2d<8, 16> conv2(3);
  nn::Linear<16, 10> fc;
  CHECK_NOTHROW(nn::check_sizes(conv1, nn::ReLU(), nn::MaxPool2d(2), conv2, nn::Dropout(0.1), fc));
  // Run-time sizes: checked when called, naming both layers.
  nn::Linear a(784, 128), b(100, 10);
  CHECK_NOTHROW(nn::check_sizes(a, nn::ReLU(), nn::Linear(128, 10)));
  CHECK_THROWS_WITH_AS(nn::check_sizes(a, nn::ReLU(), b),
                       "nn::check_sizes: layer 2 (Linear) takes 100 features but layer 1 (ReLU) produces 128", dl::Error);
  CHECK_THROWS_WITH_AS(nn::check_sizes(nn::Conv2d(1, 6, 5), nn::BatchNorm2d(8)),
                       "nn::check_sizes: layer 1 (BatchNorm2d) takes 8 channels but layer 0 (Conv2d) produces 6", dl::Error);
}

// ------------------------------------------------------------------------------ state dicts

TEST_CASE("state_dict and load_state_dict: PyTorch's keys, errors naming keys and shapes") {
  Net a, b;
  dl::StateDict sd = a.state_dict();
  CHECK(sd.size() == 15);
  CHECK(sd.at("bn1.num_batches_tracked").is<int64_t>());
  b.load_state_dict(sd);
  for (auto& [n, p] : b.named_parameters()) CHECK(dl::equal(p, sd.at(n).as<float>()));
  // Values are copied, not shared.
  a.fc1.bias.data()[0] += 1;
  CHECK(b.fc1.bias.data()[0] != a.fc1.bias.data()[0]);

  dl::StateDict bad = a.state_dict();
  bad.erase("fc3.bias");
  bad.insert("fc4.weight", dl::zeros({1}));
  CHECK_THROWS_WITH_AS(b.load_state_dict(bad),
                       doctest::Contains("Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \"fc3.bias\". "
                                         "\n\tUnexpected key(s) in state_dict: \"fc4.weight\". "),
                       dl::Error);
  const nn::LoadResult r = b.load_state_dict(bad, /*strict=*/false);
  CHECK(r.missing_keys == std::vector<std::string>{"fc3.bias"});
  CHECK(r.unexpected_keys == std::vector<std::string>{"fc4.weight"});
  dl::StateDict wrong = a.state_dict();
  wrong.insert("conv1.weight", dl::zeros({6, 1, 3, 3}));
  CHECK_THROWS_WITH_AS(b.load_state_dict(wrong, false),
                       doctest::Contains("size mismatch for conv1.weight: copying a param with shape [6, 1, 3, 3] from checkpoint, "
                                         "the shape in current model is [6, 1, 5, 5]."),
                       dl::Error);
  dl::StateDict dtype = a.state_dict();
  dtype.insert("bn1.num_batches_tracked", dl::zeros<float>({}));
  CHECK_THROWS_WITH_AS(b.load_state_dict(dtype), doctest::Contains("bn1.num_batches_tracked"), dl::Error);
  // float64 checkpoints load into float32 modules (converted), as PyTorch's copy_ does.
  dl::StateDict dbl = a.state_dict();
  dbl.insert("fc3.bias", dl::ones<double>({10}));
  b.load_state_dict(dbl);
  CHECK(b.fc3.bias.sum().item() == 10.0f);
}

TEST_CASE("weights written by PyTorch (.pth and .safetensors) reproduce PyTorch's outputs; dl's files read back") {
  const std::string dir = std::string(DL_TEST_DATA) + "/nn/";
  for (const char* file : {"lenet.pth", "lenet.safetensors"}) {
    INFO(file);
    Net net;
    net.load_state_dict(dl::load(dir + file));
    net.eval();
    dl::NoGradGuard no_grad;
    ref.check(net(refbin::det<float>({4, 1, 32, 32}, 77)), "lenet/out", 1e-4);
  }
  Net net;
  net.load_state_dict(dl::load(dir + "lenet.pth"));
  // dl's own file, for the generator's check that PyTorch reads it back (tests/data/nn/dl_saved_check.txt).
  const std::string path = (std::filesystem::temp_directory_path() / "dl_test_nn_saved_by_dl.safetensors").string();
  dl::save(net.state_dict(), path);
  Net again;
  again.load_state_dict(dl::load(path));
  for (auto& [k, v] : net.state_dict()) {
    if (v.is<float>()) CHECK(dl::equal(v.as<float>(), again.state_dict().at(k).as<float>()));
  }
  CHECK(again.bn1.num_batches_tracked.item() == net.bn1.num_batches_tracked.item());
}

// ------------------------------------------------------------------------------ init

TEST_CASE("init: gains, fans, and the distributions' statistics") {
  CHECK(nn::init::calculate_gain("relu") == doctest::Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain("leaky_relu", 0.2) == doctest::Approx(std::sqrt(2.0 / 1.04)));
  CHECK(nn::init::calculate_gain("tanh") == doctest::Approx(5.0 / 3));
  CHECK(nn::init::calculate_gain("conv2d") == 1.0);
  CHECK(nn::init::calculate_gain("selu") == 0.75);
  CHECK_THROWS_WITH_AS(nn::init::calculate_gain("swish"), doctest::Contains("Unsupported nonlinearity swish"), dl::Error);
  CHECK(nn::init::calculate_fan_in_and_fan_out(Shape{16, 6, 5, 5}) == std::pair<int64_t, int64_t>{150, 400});
  CHECK_THROWS_WITH_AS(nn::init::calculate_fan_in_and_fan_out(Shape{5}), doctest::Contains("fewer than 2 dimensions"), dl::Error);
  dl::manual_seed(0);
  auto stats = [](const Tensor<float>& t) {
    const double mean = t.mean().item(), sd = t.std().item();
    return std::pair{mean, sd};
  };
  Tensor<float> w = dl::empty<float>({256, 512});
  nn::init::kaiming_uniform_(w, 0, "fan_in", "relu");
  const double bound = std::sqrt(2.0) * std::sqrt(3.0 / 512);
  CHECK(w.abs().max().item() <= bound);
  CHECK(stats(w).second == doctest::Approx(bound / std::sqrt(3.0)).epsilon(0.02));
  nn::init::kaiming_normal_(w, 0, "fan_out", "relu");
  CHECK(stats(w).second == doctest::Approx(std::sqrt(2.0 / 256)).epsilon(0.02));
  nn::init::xavier_uniform_(w, 2.0);
  CHECK(w.abs().max().item() <= 2.0 * std::sqrt(6.0 / 768));
  nn::init::xavier_normal_(w);
  CHECK(stats(w).second == doctest::Approx(std::sqrt(2.0 / 768)).epsilon(0.02));
  nn::init::trunc_normal_(w, 0.5, 1.0, -1.0, 1.5);
  CHECK(w.min().item() >= -1.0f);
  CHECK(w.max().item() <= 1.5f);
  // Mean of N(0.5, 1) truncated to [-1, 1.5]: 0.5 + (phi(-1.5) - phi(1)) / (Phi(1) - Phi(-1.5)).
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  CHECK(stats(w).first == doctest::Approx(0.5 + (phi(-1.5) - phi(1)) / (Phi(1) - Phi(-1.5))).epsilon(0.02));
  Tensor<float> q = dl::empty<float>({6, 10});
  nn::init::orthogonal_(q, 2.0);
  CHECK(dl::allclose(Tensor<float>(dl::mm(q, q.t())), Tensor<float>(dl::eye<float>(6) * 4.0f), 1e-5, 1e-5));
  Tensor<float> tall = dl::empty<float>({10, 2, 2});
  nn::init::orthogonal_(tall);
  Tensor<float> flat = tall.reshape({10, 4});
  CHECK(dl::allclose(Tensor<float>(dl::mm(flat.t(), flat)), dl::eye<float>(4), 1e-5, 1e-5));
  Tensor<float> u = dl::empty<float>({10000});
  nn::init::uniform_(u, -2, 3);
  CHECK(u.min().item() >= -2.0f);
  CHECK(u.max().item() < 3.0f);
  CHECK(stats(u).first == doctest::Approx(0.5).epsilon(0.05));
  nn::init::normal_(u, 1, 2);
  CHECK(stats(u).second == doctest::Approx(2.0).epsilon(0.05));
  Tensor<float> e = dl::empty<float>({3, 4});
  nn::init::eye_(e);
  CHECK(e.sum().item() == 3.0f);
  CHECK_THROWS_WITH_AS(nn::init::kaiming_uniform_(e, 0, "fan_avg"), doctest::Contains("Mode fan_avg not supported"), dl::Error);
  // A Dirac weight makes the convolution the identity on the preserved channels.
  Tensor<float> d = dl::empty<float>({4, 4, 3, 3});
  nn::init::dirac_(d);
  Tensor<float> x = dl::randn({1, 4, 5, 5});
  CHECK(dl::allclose(F::conv2d(x, d, Tensor<float>(), 1, 1), x));
  Tensor<float> dg = dl::empty<float>({4, 2, 3});
  nn::init::dirac_(dg, 2);
  CHECK(dg.sum().item() == 4.0f);
  CHECK_THROWS_WITH_AS(nn::init::dirac_(dg, 3), doctest::Contains("dim 0 must be divisible by groups"), dl::Error);
  // Init through parameters that require grad records no history.
  nn::Linear lin(3, 3);
  nn::init::ones_(lin.weight);
  CHECK(lin.weight.is_leaf());
}

TEST_CASE("default initialisation is PyTorch's: weights U(+-1/sqrt(fan_in)), BatchNorm ones and zeros") {
  dl::manual_seed(1);
  nn::Linear<400, 300> lin;
  const double b = 1 / std::sqrt(400.0);
  CHECK(lin.weight.abs().max().item() <= b);
  CHECK(lin.weight.abs().max().item() > 0.95 * b);
  CHECK(lin.bias.abs().max().item() <= b);
  nn::Conv2d<6, 16> conv(5);
  CHECK(conv.weight.abs().max().item() <= 1 / std::sqrt(150.0));
  nn::BatchNorm2d<5> bn;
  CHECK(bn.weight.sum().item() == 5.0f);
  CHECK(bn.running_var.sum().item() == 5.0f);
  CHECK(bn.num_batches_tracked.item() == 0);
  nn::Embedding<20, 3> emb({.padding_idx = 4});
  CHECK(emb.weight[4].abs().sum().item() == 0.0f);
}

TEST_CASE("nn::utils::clip_grad_norm_ and clip_grad_value_ against PyTorch (tests/gen_clip_grad_refs.py)") {
  struct Ref {
    double norm_type, max_norm, total;
    std::vector<float> ga, gb;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Ref> refs = {
      {2.0, 1.0, 5.7072319984436035, {0.2628243863582611f, -0.35043251514434814f, 0.04380406439304352f, 0.5256487727165222f, -0.08760812878608704f, 0.17521625757217407f}, {0.017521625384688377f, -0.7008650302886963f}},
      {1.0, 2.0, 12.350000381469727, {0.24291494488716125f, -0.32388660311698914f, 0.04048582538962364f, 0.4858298897743225f, -0.08097165077924728f, 0.16194330155849457f}, {0.016194330528378487f, -0.6477732062339783f}},
      {inf, 1.5, 4.0, {0.5624998807907104f, -0.7499998211860657f, 0.09374997764825821f, 1.124999761581421f, -0.18749995529651642f, 0.37499991059303284f}, {0.037499990314245224f, -1.4999996423721313f}},
      {3.0, 0.5, 4.695372581481934, {0.1597317010164261f, -0.2129756063222885f, 0.026621950790286064f, 0.3194634020328522f, -0.05324390158057213f, 0.10648780316114426f}, {0.01064878050237894f, -0.425951212644577f}},
      {2.0, 100.0, 5.7072319984436035, {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 1.0f}, {0.1f, -4.0f}},
  };
  Tensor<float> a = dl::zeros<float>({2, 3}).requires_grad_(), b = dl::zeros<float>({2}).requires_grad_(),
                c = dl::zeros<float>({1}).requires_grad_();  // c has no gradient: skipped
  auto set_grads = [&] {
    a.mutable_grad() = dl::tensor<float>({1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 1.0f}).view({2, 3});
    b.mutable_grad() = dl::tensor<float>({0.1f, -4.0f});
  };
  for (const Ref& r : refs) {
    set_grads();
    const double total = nn::utils::clip_grad_norm_(std::vector<Tensor<float>>{a, b, c}, r.max_norm, r.norm_type);
    CHECK(total == doctest::Approx(r.total).epsilon(1e-6));
    for (int64_t i = 0; i < 6; ++i) CHECK(a.grad().data()[i] == doctest::Approx(r.ga[size_t(i)]).epsilon(1e-5));
    for (int64_t i = 0; i < 2; ++i) CHECK(b.grad().data()[i] == doctest::Approx(r.gb[size_t(i)]).epsilon(1e-5));
    CHECK_FALSE(c.grad().defined());
  }
  set_grads();
  nn::utils::clip_grad_value_(std::vector<Tensor<float>>{a, b}, 1.2);
  const std::vector<float> va = {1.2f, -1.2f, 0.25f, 1.2f, -0.5f, 1.0f}, vb = {0.1f, -1.2f};
  for (int64_t i = 0; i < 6; ++i) CHECK(a.grad().data()[i] == doctest::Approx(va[size_t(i)]));
  for (int64_t i = 0; i < 2; ++i) CHECK(b.grad().data()[i] == doctest::Approx(vb[size_t(i)]));
  // a module's parameters, one tensor, no gradients at all, errors
  nn::Linear<3, 2> fc;
  Tensor<float>(fc(dl::ones<float>({4, 3})).sum() * 100.0f).backward();
  CHECK(nn::utils::clip_grad_norm_(fc.parameters(), 1.0) > 1.0);
  CHECK(nn::utils::clip_grad_norm_(fc.parameters(), 1.0) == doctest::Approx(1.0).epsilon(1e-4));  // now clipped
  CHECK(nn::utils::clip_grad_norm_(fc.weight, 10.0) < 1.0);
  fc.zero_grad();
  CHECK(nn::utils::clip_grad_norm_(fc.parameters(), 1.0) == 0.0);
  set_grads();
  a.grad().data()[0] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(nn::utils::clip_grad_norm_(a, 1.0, 2.0, /*error_if_nonfinite=*/true),
                       doctest::Contains("The total norm of order 2 for gradients from `parameters` is non-finite"), dl::Error);
  CHECK(std::isnan(nn::utils::clip_grad_norm_(a, 1.0)));  // without the option it scales by the NaN, as PyTorch
  CHECK(std::isnan(a.grad().data()[1]));
  CHECK_THROWS_WITH_AS(nn::utils::clip_grad_norm_(a, 1.0, -1.0), doctest::Contains("norm_type must be positive"), dl::Error);
  CHECK_THROWS_WITH_AS(nn::utils::clip_grad_value_(a, -1.0), doctest::Contains("clip_value must be non-negative"), dl::Error);
}

TEST_CASE("F::pixel_shuffle / pixel_unshuffle: PyTorch's layout, round trip, gradients, errors; the modules") {
  // PyTorch's definition: out[n, c, h * r + i, w * r + j] = in[n, c * r^2 + i * r + j, h, w].
  const int64_t r = 3, C = 2, H = 2, W = 4;
  const Tensor<float> x = dl::arange<float>(0, 2 * C * r * r * H * W).reshape({2, C * r * r, H, W});
  const Tensor<float> y = F::pixel_shuffle(x, r);
  REQUIRE(y.shape() == Shape{2, C, H * r, W * r});
  bool same = true;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < r; ++j)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w)
              same = same && y.at(n, c, h * r + i, w * r + j) == x.at(n, c * r * r + i * r + j, h, w);
  CHECK(same);
  CHECK(dl::equal(F::pixel_unshuffle(y, r), x));
  // Leading batch dims of any number, and an expression as input.
  const Tensor<float> x5 = dl::randn({2, 3, 4, 2, 2});
  CHECK(F::pixel_shuffle(x5 * 2.0f, 2).shape() == Shape{2, 3, 1, 4, 4});
  CHECK(dl::allclose(F::pixel_unshuffle(F::pixel_shuffle(x5, 2), 2), x5));
  CHECK(F::pixel_shuffle(dl::randn({4, 1, 1}), 2).shape() == Shape{1, 2, 2});

  using dl::autograd::gradcheck, dl::autograd::gradgradcheck;
  const Tensor<double> xd = dl::randn<double>({2, 8, 2, 3}).requires_grad_(true);
  CHECK(gradcheck([](auto& in) { return F::pixel_shuffle(in[0] * in[0], 2); }, {xd}));
  CHECK(gradgradcheck([](auto& in) { return F::pixel_shuffle(in[0] * in[0], 2); }, {xd}));
  const Tensor<double> zd = dl::randn<double>({1, 2, 4, 6}).requires_grad_(true);
  CHECK(gradcheck([](auto& in) { return F::pixel_unshuffle(in[0], 2); }, {zd}));

  CHECK_THROWS_WITH_AS(F::pixel_shuffle(dl::ones<float>({4, 4}), 2),
                       "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)", dl::Error);
  CHECK_THROWS_WITH_AS(F::pixel_shuffle(dl::ones<float>({1, 5, 2, 2}), 2),
                       "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
                       "but input.size(-3)=5 is not divisible by 4", dl::Error);
  CHECK_THROWS_WITH_AS(F::pixel_shuffle(dl::ones<float>({1, 4, 2, 2}), 0),
                       "pixel_shuffle expects a positive upscale_factor, but got 0", dl::Error);
  CHECK_THROWS_WITH_AS(F::pixel_unshuffle(dl::ones<float>({1, 1, 5, 4}), 2),
                       "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=5 is not divisible by 2",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::pixel_unshuffle(dl::ones<float>({1, 1, 4, 5}), 2),
                       "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=5 is not divisible by 2",
                       dl::Error);
  CHECK_THROWS_WITH_AS(nn::PixelShuffle(0), "PixelShuffle: upscale_factor must be positive, got 0", dl::Error);

  // The modules: forward, repr as PyTorch's, in a Sequential after a convolution (sub-pixel upsampling).
  nn::PixelShuffle shuffle(2);
  nn::PixelUnshuffle unshuffle(2);
  auto repr = [](const nn::Module& m) {
    std::ostringstream os;
    os << m;
    return os.str();
  };
  CHECK(repr(shuffle) == "PixelShuffle(upscale_factor=2)");
  CHECK(repr(unshuffle) == "PixelUnshuffle(downscale_factor=2)");
  auto net = nn::Sequential(nn::Conv2d(3, 12, 3, {.padding = 1}), nn::PixelShuffle(2));
  const Tensor<float> img = dl::randn({1, 3, 5, 5});
  const Tensor<float> up = net(img);
  CHECK(up.shape() == Shape{1, 3, 10, 10});
  up.sum().backward();
  CHECK(net.parameters()[0].grad().defined());
  CHECK(dl::equal(unshuffle(shuffle(img.repeat({1, 4, 1, 1}))), img.repeat({1, 4, 1, 1})));
}

TEST_CASE("Upsample, UpsamplingNearest2d, UpsamplingBilinear2d: F::interpolate with their options, PyTorch's repr, errors") {
  auto repr = [](const nn::Module& m) {
    std::ostringstream os;
    os << m;
    return os.str();
  };
  const Tensor<float> x = dl::randn({2, 3, 4, 5});
  nn::Upsample up({.scale_factor = {2}, .mode = "bilinear"});
  CHECK(up(x).shape() == Shape{2, 3, 8, 10});
  CHECK(dl::equal(up(x), F::interpolate(x, {.scale_factor = {2}, .mode = "bilinear"})));
  nn::UpsamplingNearest2d nearest({.size = {6, 7}});
  CHECK(dl::equal(nearest(x), F::interpolate(x, {.size = {6, 7}})));
  nn::UpsamplingBilinear2d bilinear({.scale_factor = {2}});
  CHECK(dl::equal(bilinear(x), F::interpolate(x, {.scale_factor = {2}, .mode = "bilinear", .align_corners = true})));
  nn::Upsample up3({.size = {3, 4, 5}, .mode = "trilinear", .align_corners = true});
  const Tensor<double> x3 = dl::randn<double>({1, 2, 2, 2, 2});
  CHECK(up3(x3).shape() == Shape{1, 2, 3, 4, 5});
  // PyTorch 1.13's printout (nn.Upsample(scale_factor=2, mode='bilinear'), ...).
  CHECK(repr(up) == "Upsample(scale_factor=2.0, mode=bilinear)");
  CHECK(repr(nearest) == "UpsamplingNearest2d(size=(6, 7), mode=nearest)");
  CHECK(repr(nn::Upsample({.scale_factor = {1.5, 2}})) == "Upsample(scale_factor=(1.5, 2.0), mode=nearest)");
  CHECK(repr(up3) == "Upsample(size=(3, 4, 5), mode=trilinear)");
  // In a decoder: gradients reach the convolution before it.
  auto net = nn::Sequential(nn::Conv2d(3, 4, 3, {.padding = 1}), nn::Upsample({.scale_factor = {2}, .mode = "bicubic"}));
  const Tensor<float> y = net(x);
  CHECK(y.shape() == Shape{2, 4, 8, 10});
  y.sum().backward();
  CHECK(net.parameters()[0].grad().defined());
  CHECK_THROWS_WITH_AS(nn::Upsample({.size = {2, 2}, .mode = "area"}),
                       "Upsample: mode must be one of nearest, linear, bilinear, bicubic or trilinear, got 'area'", dl::Error);
  CHECK_THROWS_WITH_AS(nn::Upsample({.size = {2}, .mode = "linear"})(x), "Got 4D input, but linear mode needs 3D input", dl::Error);
}

TEST_CASE("Unfold and Fold: F::unfold / F::fold with their options, PyTorch's repr, a patch embedding") {
  auto repr = [](const nn::Module& m) {
    std::ostringstream os;
    os << m;
    return os.str();
  };
  const Tensor<float> x = dl::randn({2, 3, 6, 8});
  nn::Unfold unfold({.kernel_size = {2, 4}, .stride = {2, 4}});
  const Tensor<float> patches = unfold(x);
  CHECK(patches.shape() == Shape{2, 24, 6});
  CHECK(dl::equal(patches, F::unfold(x, {2, 4}, 1, 0, {2, 4})));
  nn::Fold fold({.output_size = {6, 8}, .kernel_size = {2, 4}, .stride = {2, 4}});
  CHECK(dl::equal(fold(patches), x));  // non-overlapping blocks: fold undoes unfold
  // PyTorch's printout (nn.Unfold((2, 3), stride=2), nn.Fold((4, 5), 2), nn.Unfold(2, padding=(1, 0))).
  CHECK(repr(nn::Unfold({.kernel_size = {2, 3}, .stride = 2})) == "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=2)");
  CHECK(repr(nn::Fold({.output_size = {4, 5}, .kernel_size = 2})) == "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)");
  CHECK(repr(nn::Unfold({.kernel_size = 2, .padding = {1, 0}})) == "Unfold(kernel_size=2, dilation=1, padding=(1, 0), stride=1)");
  // A ViT-style patch embedding: unfold, transpose, a linear layer; gradients reach the input.
  Tensor<float> img = dl::randn({2, 3, 8, 8});
  img.requires_grad_();
  nn::Linear embed(3 * 4 * 4, 16);
  const Tensor<float> tokens = embed(nn::Unfold({.kernel_size = 4, .stride = 4})(img).transpose(1, 2));
  CHECK(tokens.shape() == Shape{2, 4, 16});
  tokens.sum().backward();
  CHECK(img.grad().shape() == img.shape());
  CHECK_THROWS_WITH_AS(fold(dl::randn({2, 24, 5})), doctest::Contains("sliding blocks 3 * 2 = 6, but got input.size(2)=5"), dl::Error);
}

TEST_CASE("InstanceNorm1d/2d/3d: PyTorch's defaults, parameters, running statistics, unbatched input, errors") {
  auto repr = [](const nn::Module& m) {
    std::ostringstream os;
    os << m;
    return os.str();
  };
  // Defaults as PyTorch's: no affine map, no running statistics, nothing in the state dict.
  nn::InstanceNorm2d plain(3);
  CHECK(repr(plain) == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
  CHECK(plain.parameters().empty());
  CHECK(plain.state_dict().keys().empty());
  const Tensor<float> x = dl::randn({2, 3, 4, 5}) * 3.0f + 1.0f;
  const Tensor<float> y = plain(x);
  CHECK(dl::allclose(y, F::instance_norm(x)));
  // Each channel of each sample: mean 0, biased variance 1.
  CHECK(dl::allclose(y.mean({2, 3}), dl::zeros<float>({2, 3}), 1e-4, 1e-5));
  CHECK(dl::allclose((y * y).mean({2, 3}), dl::ones<float>({2, 3}), 1e-3, 1e-3));
  // An input without the batch dim is a batch of one.
  CHECK(dl::allclose(plain(x[1]), y[1]));

  // affine and track_running_stats: PyTorch's state dict keys and initial values; training updates
  // the running statistics as F::instance_norm does, eval normalises with them.
  nn::InstanceNorm1d norm(4, {.momentum = 0.2, .affine = true, .track_running_stats = true});
  std::vector<std::string> keys = norm.state_dict().keys();
  CHECK(keys == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  CHECK(dl::equal(norm.weight, dl::ones<float>({4})));
  CHECK(dl::equal(norm.running_var, dl::ones<float>({4})));
  const Tensor<float> s = dl::randn({3, 4, 6}) * 2.0f - 0.5f;
  Tensor<float> rm = dl::zeros<float>({4}), rv = dl::ones<float>({4});
  const Tensor<float> expect = F::instance_norm(s, rm, rv, norm.weight.detach(), norm.bias.detach(), true, 0.2);
  const Tensor<float> got = norm(s);
  CHECK(dl::allclose(got, expect));
  CHECK(dl::allclose(norm.running_mean, rm));
  CHECK(dl::allclose(norm.running_var, rv));
  CHECK_FALSE(dl::equal(norm.running_mean, dl::zeros<float>({4})));
  got.sum().backward();
  CHECK(norm.weight.grad().defined());
  norm.eval();
  CHECK(dl::allclose(norm(s), F::instance_norm(s, rm, rv, norm.weight.detach(), norm.bias.detach(), false, 0.2)));
  // Without running statistics, eval still normalises each instance by its own statistics.
  plain.eval();
  CHECK(dl::allclose(plain(x), y));

  nn::InstanceNorm3d n3(2, {.affine = true});
  CHECK(n3(dl::randn({1, 2, 3, 3, 3})).shape() == Shape{1, 2, 3, 3, 3});
  CHECK(n3(dl::randn({2, 3, 3, 3})).shape() == Shape{2, 3, 3, 3});

  // PyTorch's messages.
  CHECK_THROWS_WITH_AS(plain(dl::randn({3, 4})), "expected 3D or 4D input (got 2D input)", dl::Error);
  CHECK_THROWS_WITH_AS(norm(dl::randn({2, 4, 6, 1})), "expected 2D or 3D input (got 4D input)", dl::Error);
  CHECK_THROWS_WITH_AS(n3(dl::randn({1, 3, 2, 2, 2})), "expected input's size at dim=1 to match num_features (2), but got: 3.",
                       dl::Error);
  CHECK_THROWS_WITH_AS(nn::InstanceNorm2d(0), "InstanceNorm: num_features must be positive, got 0", dl::Error);
  // Without an affine map or running statistics, another channel count is normalised alike (PyTorch warns).
  CHECK(plain(dl::randn({1, 5, 2, 2})).shape() == Shape{1, 5, 2, 2});
  // Not a batch norm: convert_sync_batchnorm and BatchNorm-only code do not see it.
  CHECK(dynamic_cast<nn::detail::BatchNormBase*>(static_cast<nn::Module*>(&plain)) == nullptr);
}
