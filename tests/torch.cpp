// Tests of dl/torch.hpp, libtorch's spellings over dl: module holders (shared ownership, registration
// of the member itself, eval() reaching it, empty holders), builder options reaching dl's layers and
// optimizers, dtype tags, shapes from one integer, libtorch's data API (a user's Dataset<Self> with
// get/size overrides, Lambda, Normalize, Stack, make_data_loader's samplers and options), checks, and
// the error paths. Whole libtorch programs compiled unchanged against dl are in tests/torch_compat/.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <dl/torch.hpp>

namespace {

struct BlockImpl : torch::nn::Module {
  BlockImpl() : fc(4, 3), drop(torch::nn::DropoutOptions().p(0.5)) {
    fc = register_module("fc", fc);
    register_module("drop", drop);
    scale = register_parameter("scale", torch::ones({3}));
    register_buffer("count", torch::zeros({1}));
  }
  torch::Tensor forward(torch::Tensor x) { return drop->forward(fc->forward(x)) * scale; }
  torch::nn::Linear fc;
  torch::nn::Dropout drop;
  torch::Tensor scale;
};
TORCH_MODULE(Block);

// A user's dataset in libtorch's form: get and size override the base's.
class Squares : public torch::data::datasets::Dataset<Squares> {
 public:
  explicit Squares(size_t n) : n_(n) {}
  torch::data::Example<> get(size_t index) override {
    return {torch::full({2}, double(index * index)), torch::tensor(int64_t(index % 3))};
  }
  torch::optional<size_t> size() const override { return n_; }

 private:
  size_t n_;
};

}  // namespace

TEST_CASE("module holders share their module; registering a holder registers the member itself") {
  Block block;
  CHECK(block->is_training());
  auto names = block->named_parameters();
  REQUIRE(names.size() == 3);
  CHECK(names[0].first == "scale");
  CHECK(names[1].first == "fc.weight");
  CHECK(block->named_buffers().size() == 1);
  std::vector<std::string> keys;  // libtorch's OrderedDict items: key() and value()
  for (auto& p : block->named_parameters()) {
    keys.push_back(p.key());
    CHECK(p.value().defined());
  }
  CHECK(keys == std::vector<std::string>{"scale", "fc.weight", "fc.bias"});
  // eval() reaches the member the class holds (the registered module is the member).
  block->eval();
  CHECK_FALSE(block->drop->is_training());
  CHECK_FALSE(block->fc->is_training());
  auto x = torch::ones({2, 4});
  torch::Tensor y1 = block->forward(x), y2 = block(x);
  CHECK(dl::equal(y1, y2));
  // A copy of a holder is the same module.
  Block other = block;
  CHECK(other.get() == block.get());
  {
    torch::NoGradGuard no_grad;
    other->fc->weight.fill_(0.5f);
  }
  CHECK(block->fc->weight.at(0, 0) == 0.5f);
  // ptr(), *, is_empty
  CHECK(block.ptr().use_count() >= 2);
  CHECK(&*block == block.get());
  torch::nn::Linear empty{nullptr};
  CHECK(empty.is_empty());
  CHECK_THROWS_WITH_AS(empty->forward(x), "Accessing empty ModuleHolder", dl::Error);
  empty = torch::nn::Linear(4, 2);
  CHECK(empty->forward(x).sizes() == dl::Shape{2, 2});
}

TEST_CASE("builder options reach dl's layers") {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, {3, 5}).stride(2).padding({1, 2}).bias(false).groups(1));
  CHECK(conv->kernel_size == dl::Dims{3, 5});
  CHECK(conv->stride == dl::Dims{2, 2});
  CHECK(conv->padding == dl::Dims{1, 2});
  CHECK_FALSE(conv->bias.defined());
  CHECK(conv->options.stride()[0] == 2);
  CHECK(conv->forward(torch::zeros({1, 3, 9, 9})).sizes() == dl::Shape{1, 8, 5, 5});
  torch::nn::Conv2d circular(torch::nn::Conv2dOptions(1, 1, 3).padding(1).padding_mode(torch::kCircular));
  CHECK(circular->padding_mode == "circular");

  torch::nn::ConvTranspose2d up(torch::nn::ConvTranspose2dOptions(4, 2, 4).stride(2).padding(1));
  CHECK(up->forward(torch::zeros({1, 4, 5, 5})).sizes() == dl::Shape{1, 2, 10, 10});

  torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(6).eps(1e-3).momentum(0.2).affine(false));
  CHECK(bn->eps == doctest::Approx(1e-3));
  CHECK_FALSE(bn->weight.defined());

  torch::nn::Linear fc(torch::nn::LinearOptions(5, 2).bias(false));
  CHECK_FALSE(fc->bias.defined());
  CHECK(fc->options.in_features() == 5);

  torch::nn::MaxPool2d pool(torch::nn::MaxPool2dOptions(2).stride(1));
  CHECK(pool->forward(torch::zeros({1, 1, 4, 4})).sizes() == dl::Shape{1, 1, 3, 3});
  torch::nn::AvgPool2d avg(torch::nn::AvgPool2dOptions({2, 2}));
  CHECK(avg->forward(torch::ones({1, 1, 4, 4})).sizes() == dl::Shape{1, 1, 2, 2});

  torch::nn::LeakyReLU leaky(torch::nn::LeakyReLUOptions().negative_slope(0.2));
  CHECK(leaky->forward(torch::full({1}, -1.0)).item() == doctest::Approx(-0.2));

  CHECK_THROWS_WITH_AS(torch::nn::Conv2dOptions(1, 1, {1, 2, 3}), "Expected 2 values, but instead got 3", dl::Error);
}

TEST_CASE("Sequential, ModuleList and Functional hold holders") {
  torch::nn::Linear first(3, 4);
  torch::nn::Sequential seq(first, torch::nn::ReLU(), torch::nn::Functional(torch::relu),
                            torch::nn::Functional(torch::leaky_relu, 0.5), torch::nn::Linear(4, 2));
  CHECK(seq->size() == 5);
  CHECK(seq->parameters().size() == 4);
  // The Sequential holds the holder's module, not a copy.
  CHECK(seq->parameters()[0].is_same(first->weight));
  CHECK(seq->forward(torch::ones({2, 3})).sizes() == dl::Shape{2, 2});
  seq->eval();
  CHECK_FALSE(first->is_training());
  torch::nn::Functional leaky(torch::leaky_relu, 0.5);
  CHECK(leaky(torch::full({1}, -2.0)).item() == doctest::Approx(-1.0));

  torch::nn::ModuleList list(torch::nn::Linear(2, 2), torch::nn::Linear(2, 2));
  CHECK(list->size() == 2);
  CHECK(list->parameters().size() == 4);
}

TEST_CASE("optimizer options: libtorch's setters over dl's options") {
  torch::nn::Linear fc(2, 1);
  torch::optim::SGDOptions sgd_options = torch::optim::SGDOptions(0.01).momentum(0.5).nesterov(true).weight_decay(1e-4);
  CHECK(sgd_options.lr() == doctest::Approx(0.01));
  CHECK(sgd_options.momentum() == doctest::Approx(0.5));
  CHECK(sgd_options.nesterov());
  torch::optim::SGD sgd(fc->parameters(), sgd_options);
  CHECK(sgd.get_lr(0) == doctest::Approx(0.01));
  CHECK(sgd.get_momentum(0).value() == doctest::Approx(0.5));
  torch::optim::SGD plain(fc->parameters(), /*lr=*/0.1);
  CHECK(plain.get_lr(0) == doctest::Approx(0.1));

  auto adam_options = torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.9)).eps(1e-6);
  CHECK(adam_options.betas().first == doctest::Approx(0.5));
  CHECK(adam_options.betas().second == doctest::Approx(0.9));
  CHECK(torch::optim::AdamOptions().betas({0.1, 0.2}).betas().second == doctest::Approx(0.2));
  CHECK(torch::optim::AdamOptions().lr() == doctest::Approx(1e-3));  // libtorch's default
  torch::optim::Adam adam(fc->parameters(), adam_options);
  CHECK(adam.get_momentum(0).value() == doctest::Approx(0.5));  // beta1
  torch::optim::Optimizer& base = adam;
  CHECK(base.name() == "Adam");
  // dl's own validation runs behind libtorch's spelling.
  CHECK_THROWS_AS(torch::optim::SGD(fc->parameters(), torch::optim::SGDOptions(-1.0)), dl::Error);

  // One step matches dl's own optimizer with the same options.
  torch::nn::Linear a(2, 1), b(2, 1);
  {
    torch::NoGradGuard no_grad;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  torch::optim::RMSprop ra(a->parameters(), torch::optim::RMSpropOptions(0.01).momentum(0.9).centered(true));
  dl::optim::RMSprop<float> rb(b->parameters(), {.lr = 0.01, .momentum = 0.9, .centered = true});
  for (int i = 0; i < 3; ++i) {
    ra.zero_grad();
    rb.zero_grad();
    torch::Tensor la = a->forward(torch::ones({4, 2})).pow(2).sum(), lb = b->forward(torch::ones({4, 2})).pow(2).sum();
    la.backward();
    lb.backward();
    ra.step();
    rb.step();
  }
  CHECK(dl::equal(a->weight, b->weight));
}

TEST_CASE("dtype tags, creation from one integer, conversions") {
  auto longs = torch::zeros({3}, torch::kLong);
  static_assert(std::is_same_v<decltype(longs), dl::Tensor<int64_t>>);
  CHECK(torch::zeros(5).sizes() == dl::Shape{5});
  CHECK(torch::ones(int64_t(2)).sizes() == dl::Shape{2});
  auto floats = longs.to(torch::kFloat);
  static_assert(std::is_same_v<decltype(floats), dl::Tensor<float>>);
  static_assert(std::is_same_v<decltype(torch::arange(4)), dl::Tensor<int64_t>>);
  static_assert(std::is_same_v<decltype(torch::arange(4.0)), torch::Tensor>);
  static_assert(std::is_same_v<decltype(torch::tensor({1.0, 2.0})), torch::Tensor>);
  static_assert(std::is_same_v<decltype(torch::tensor(std::vector<int>{1, 2})), dl::Tensor<int64_t>>);
  CHECK(torch::arange(0, 10, 3).numel() == 4);
  CHECK(torch::tensor({1, 2, 3}, torch::kDouble).sum().item() == 6.0);
  CHECK(dl::ScalarType(torch::kLong) == dl::ScalarType::Int64);
  uint8_t pixels[6] = {0, 51, 102, 153, 204, 255};
  auto image = torch::from_blob(pixels, {2, 3}, torch::kUInt8).to(torch::kFloat).div(255.0);
  CHECK(torch::Tensor(image).at(1, 2) == doctest::Approx(1.0));
  // An expression views once evaluated (Tensor's own view shares storage).
  torch::Tensor t = torch::arange(6, torch::kFloat);
  auto viewed = (t * 2).view({2, 3});
  CHECK(viewed.at(1, 0) == 6.0f);
  CHECK((t + 1).view_as(torch::zeros({3, 2})).sizes() == dl::Shape{3, 2});
  CHECK((t + 1).reshape({3, -1}).size(1) == 2);
  CHECK((t + 1).flatten().numel() == 6);
  CHECK(torch::str("a", 1, 'b', 2.5) == "a1b2.5");
}

TEST_CASE("TORCH_CHECK and AT_ASSERT throw dl::Error naming the condition") {
  CHECK_NOTHROW(TORCH_CHECK(1 + 1 == 2, "never"));
  CHECK_THROWS_WITH_AS(TORCH_CHECK(1 > 2, "one is ", 1), "Expected 1 > 2 to be true, but got false. one is 1", dl::Error);
  CHECK_THROWS_AS(AT_ASSERT(false), dl::Error);
  CHECK_FALSE(torch::cuda::is_available());  // a CPU build
}

TEST_CASE("libtorch's functions of torch::Tensor") {
  torch::Tensor logits = torch::tensor({1.0, 2.0, 0.5, -1.0, 0.0, 3.0}).view({2, 3});
  auto target = torch::tensor(std::vector<int64_t>{1, 2});
  torch::Tensor lsm = torch::log_softmax(logits, 1);
  CHECK(torch::nll_loss(lsm, target).item() == doctest::Approx(dl::nn::functional::cross_entropy(logits, target).item()));
  CHECK(torch::nll_loss(lsm, target, {}, torch::Reduction::Sum).item() ==
        doctest::Approx(2 * torch::nll_loss(lsm, target).item()));
  CHECK(torch::nll_loss(lsm, target, {}, torch::Reduction::None).sizes() == dl::Shape{2});
  CHECK(torch::cross_entropy_loss(logits, target).item() == doctest::Approx(torch::nll_loss(lsm, target).item()));
  CHECK(torch::max_pool2d(torch::arange(16, torch::kFloat).view({1, 1, 4, 4}), 2).sum().item() == 5 + 7 + 13 + 15);
  CHECK(torch::dropout(logits, 0.5, /*train=*/false).sum().item() == doctest::Approx(logits.sum().item()));
  CHECK(torch::mse_loss(logits, torch::zeros({2, 3})).item() == doctest::Approx(logits.pow(2).mean().item()));
  torch::Tensor p = torch::full({2}, 0.25), y = torch::tensor({0.0, 1.0});
  CHECK(torch::binary_cross_entropy(p, y).item() == doctest::Approx(-(std::log(0.75) + std::log(0.25)) / 2));
}

TEST_CASE("libtorch's data API: a user's Dataset, Lambda, Normalize, Stack, make_data_loader") {
  Squares squares(10);
  CHECK(squares.size().value() == 10);
  CHECK(squares.get(3).data.at(0) == 9.0f);
  CHECK(squares.get_batch({1, 2}).size() == 2);

  auto mapped = Squares(10)
                    .map(torch::data::transforms::Lambda<torch::data::Example<>>([](torch::data::Example<> e) {
                      e.data = e.data + 1;
                      return e;
                    }))
                    .map(torch::data::transforms::Normalize<>(1.0, 2.0))
                    .map(torch::data::transforms::Stack<>());
  CHECK(mapped.size().value() == 10);
  torch::data::Example<> batch = mapped.get_batch({0, 2});
  CHECK(batch.data.sizes() == dl::Shape{2, 2});
  CHECK(batch.data.at(1, 0) == doctest::Approx((4 + 1 - 1) / 2.0));
  CHECK(batch.target.sizes() == dl::Shape{2});

  // Sequential: in order, last batch short; workers keep the order.
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Squares(10).map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions().batch_size(4).workers(2));
  std::vector<int64_t> sizes;
  std::vector<float> firsts;
  for (auto& b : *loader) {
    sizes.push_back(b.data.size(0));
    firsts.push_back(b.data.at(0, 0));
  }
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});
  CHECK(firsts == std::vector<float>{0, 16, 64});
  // drop_last
  auto dropping = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Squares(10).map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions(4).drop_last(true));
  int n = 0;
  for (auto& b : *dropping) n += int(b.data.size(0));
  CHECK(n == 8);
  // libtorch's default sampler is random: every index once, not in order; the seed fixes the order.
  auto epoch_order = [] {
    torch::manual_seed(7);
    auto random = torch::data::make_data_loader(Squares(32).map(torch::data::transforms::Stack<>()), 8);
    std::vector<float> seen;
    for (auto& b : *random)
      for (int64_t i = 0; i < b.data.size(0); ++i) seen.push_back(b.data.at(i, 0));
    return seen;
  };
  std::vector<float> order = epoch_order();
  CHECK(order.size() == 32);
  CHECK(std::set<float>(order.begin(), order.end()).size() == 32);
  CHECK_FALSE(std::is_sorted(order.begin(), order.end()));
  CHECK(epoch_order() == order);
  // Without Stack a batch is the examples themselves.
  auto unstacked = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(Squares(5), 2);
  for (std::vector<torch::data::Example<>>& examples : *unstacked) {
    CHECK(examples.size() <= 2);
    break;
  }

  CHECK_THROWS_WITH_AS(torch::data::transforms::Normalize<>({0.5, 0.5}, {0.5}), "Normalize: 2 means and 1 standard deviations",
                       dl::Error);
  torch::data::transforms::Normalize<> three({0.1, 0.2, 0.3}, {1.0, 1.0, 1.0});
  CHECK_THROWS_WITH_AS(three(torch::zeros({2, 4, 4})), "Normalize: 3 channel statistics for an input of shape [2, 4, 4]", dl::Error);
}

TEST_CASE("torch::save and torch::load: modules, tensors and lists in libtorch's archive format") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("dl_torch_save_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string net_path = dir / "block.pt", t_path = dir / "t.pt", ts_path = dir / "ts.pt";
  Block a;
  {
    torch::NoGradGuard no_grad;
    a->fc->weight.copy_(torch::arange(12, torch::kFloat).view({3, 4}));
    a->scale.fill_(3.0f);
  }
  torch::save(a, net_path);
  Block b;
  torch::load(b, net_path);
  CHECK(dl::equal(b->fc->weight, a->fc->weight));
  CHECK(dl::equal(b->fc->bias, a->fc->bias));
  CHECK(b->scale.at(1) == 3.0f);
  // The file is a zip archive holding libtorch's layout: data.pkl, one class per module, storages.
  const dl::StateDict sd = dl::load(net_path);
  CHECK(sd.contains("fc.weight"));
  CHECK(sd.contains("count"));

  torch::save(torch::arange(6, torch::kFloat) * 0.5, t_path);
  torch::Tensor t;
  torch::load(t, t_path);
  CHECK(t.at(5) == 2.5f);
  torch::save(std::vector<torch::Tensor>{torch::ones({2}), torch::zeros({3})}, ts_path);
  std::vector<torch::Tensor> ts;
  torch::load(ts, ts_path);
  REQUIRE(ts.size() == 2);
  CHECK(ts[1].numel() == 3);

  // Tensors that share memory share one storage in the file (tied weights, views), as PyTorch's.
  torch::Tensor base = torch::arange(6, torch::kFloat);
  torch::save(std::vector<torch::Tensor>{base, base, base.view({2, 3}).select(1, 1)}, ts_path);
  const dl::StateDict shared = dl::load(ts_path);
  REQUIRE(shared.size() == 3);
  CHECK(shared.at("1").impl()->storage == shared.at("0").impl()->storage);
  CHECK(shared.at("2").impl()->storage == shared.at("0").impl()->storage);
  CHECK(dl::equal(shared.at("2").as<float>(), torch::tensor({1.0, 4.0})));
  std::vector<torch::Tensor> views;
  torch::load(views, ts_path);
  CHECK(dl::equal(views[2], torch::tensor({1.0, 4.0})));

  // Errors: what the file lacks, shapes that differ, a tensor asked of a module's file.
  torch::nn::Linear other(4, 3);
  CHECK_THROWS_WITH_AS(torch::load(other, net_path), doctest::Contains("the file has no weight, bias"), dl::Error);
  torch::nn::Linear bigger(4, 5);
  torch::save(torch::nn::Linear(4, 3), (dir / "linear.pt").string());
  CHECK_THROWS_AS(torch::load(bigger, (dir / "linear.pt").string()), dl::Error);
  CHECK_THROWS_WITH_AS(torch::load(t, net_path), doctest::Contains("holds no tensor \"0\""), dl::Error);
  CHECK_THROWS_AS(torch::load(t, (dir / "missing.pt").string()), dl::Error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("torch::save and torch::load of optimizers: the state comes back, the options stay") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("dl_torch_opt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir / "adam.pt";
  auto train = [](torch::nn::Linear& fc, torch::optim::Optimizer& opt, int steps) {
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      torch::Tensor loss = fc->forward(torch::ones({3, 2})).pow(2).sum();
      loss.backward();
      opt.step();
    }
  };
  torch::nn::Linear a(2, 1), b(2, 1);
  {
    torch::NoGradGuard no_grad;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  torch::optim::Adam adam_a(a->parameters(), torch::optim::AdamOptions(0.01).amsgrad(true));
  torch::optim::Adam adam_b(b->parameters(), torch::optim::AdamOptions(0.01).amsgrad(true));
  train(a, adam_a, 3);
  train(b, adam_b, 3);
  torch::save(adam_a, path);
  // A fresh optimizer over b's parameters, loaded, continues exactly as a's.
  torch::optim::Adam resumed(b->parameters(), torch::optim::AdamOptions(0.01).amsgrad(true));
  torch::load(resumed, path);
  train(a, adam_a, 2);
  train(b, resumed, 2);
  CHECK(dl::equal(a->weight, b->weight));
  CHECK(resumed.state_dict().get<double>("state.0.step").item() == 5.0);
  // The options stay the optimizer's own (libtorch's behaviour).
  torch::optim::Adam other_lr(b->parameters(), torch::optim::AdamOptions(0.5));
  torch::load(other_lr, path);
  CHECK(other_lr.get_lr(0) == doctest::Approx(0.5));

  // Errors: another optimizer's file, other group sizes, a file that is no optimizer's.
  torch::nn::Linear wide(3, 1);
  torch::optim::Adam mismatched(std::vector<torch::Tensor>{wide->parameters()[0]}, torch::optim::AdamOptions(0.01));
  CHECK_THROWS_AS(torch::load(mismatched, path), dl::Error);
  torch::save(a, (dir / "module.pt").string());
  CHECK_THROWS_WITH_AS(torch::load(resumed, (dir / "module.pt").string()), doctest::Contains("not an optimizer archive"), dl::Error);
  std::filesystem::remove_all(dir);
}

namespace {
// A dataset whose size is unknown (libtorch's stream datasets): make_data_loader cannot sample it.
class Unsized : public torch::data::datasets::Dataset<Unsized> {
 public:
  torch::data::Example<> get(size_t) override { return {torch::zeros({1}), torch::tensor(int64_t(0))}; }
  torch::optional<size_t> size() const override { return torch::nullopt; }
};
}  // namespace

TEST_CASE("libtorch's data API: TensorLambda, BatchLambda, and a dataset without a size") {
  auto doubled = Squares(4)
                     .map(torch::data::transforms::TensorLambda<>([](torch::Tensor x) { return torch::Tensor(x * 2); }))
                     .map(torch::data::transforms::Stack<>())
                     .map(torch::data::transforms::BatchLambda<torch::data::Example<>>([](torch::data::Example<> b) {
                       b.target = b.target + 10;
                       return b;
                     }));
  torch::data::Example<> batch = doubled.get_batch({3});
  CHECK(batch.data.at(0, 1) == 18.0f);
  CHECK(batch.target.at(0) == 10);
  CHECK_THROWS_WITH_AS(torch::data::make_data_loader(Unsized(), 2), doctest::Contains("the dataset has no size"), dl::Error);
}

TEST_CASE("named_children and named_modules: items with key() and value()") {
  Block block;
  std::vector<std::string> names;
  for (auto& child : block->named_children()) names.push_back(child.key() + ":" + child.value()->type_name());
  CHECK(names == std::vector<std::string>{"fc:Linear", "drop:Dropout"});
  auto modules = block->named_modules();
  REQUIRE(modules.size() == 3);
  CHECK(modules[1].key() == "fc");
  CHECK(modules[0].value() == block.get());
}

struct HeadsImpl : torch::nn::Module {
  HeadsImpl() {
    std::vector<std::pair<std::string, torch::nn::Linear>> heads_list{{"a", torch::nn::Linear(2, 1)}};
    heads = register_module("heads", torch::nn::ModuleDict(heads_list));
  }
  torch::nn::ModuleDict heads;
};

TEST_CASE("ModuleDict and ParameterList holders; as<Holder>() names the module class") {
  torch::nn::Linear fc(3, 4);
  // libtorch's form: a list of (name, std::shared_ptr<Module>) pairs
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> layers{{"fc", fc.ptr()}, {"act", torch::nn::ReLU().ptr()}};
  torch::nn::ModuleDict dict(layers);
  CHECK(dict->size() == 2);
  CHECK(dict->keys() == std::vector<std::string>{"fc", "act"});
  CHECK(dict->contains("act"));
  CHECK(dict["fc"]->as<torch::nn::Linear>() == fc.get());  // the holder's module, shared
  CHECK(dict["act"]->as<torch::nn::Linear>() == nullptr);
  CHECK(&dict->at<torch::nn::LinearImpl>("fc") == fc.get());
  CHECK_THROWS_WITH_AS(dict->at<torch::nn::LinearImpl>("act"), "ModuleDict: the module under 'act' is a ReLU, not the type asked for",
                       dl::Error);
  CHECK_THROWS_AS(dict["nope"], dl::Error);
  // from a vector of shared_ptr pairs, update and replace in place; parameters in insertion order
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::LinearImpl>>> more{{"out", torch::nn::Linear(4, 2).ptr()}};
  dict->update(more);
  torch::nn::Linear replacement(3, 4);
  dict->insert("fc", replacement);
  CHECK(dict->keys() == std::vector<std::string>{"fc", "act", "out"});
  CHECK(dict->parameters().size() == 4);
  CHECK(dict->parameters()[0].is_same(replacement->weight));
  std::vector<std::string> seen;
  for (auto& item : *dict) seen.push_back(item.key() + ":" + item.value()->type_name());
  CHECK(seen == std::vector<std::string>{"fc:Linear", "act:ReLU", "out:Linear"});
  CHECK(dict->values().size() == 3);
  dict->eval();
  CHECK_FALSE(replacement->is_training());
  torch::nn::ModuleDict empty;
  CHECK(empty->is_empty());
  // a registered ModuleDict names its children by key, as libtorch's state dict does
  HeadsImpl heads;
  CHECK(heads.named_parameters()[0].key() == "heads.a.weight");

  torch::nn::ParameterList plist(torch::randn({2, 3}), torch::zeros({4}));
  plist->append(torch::ones({5}));
  CHECK(plist->size() == 3);
  CHECK(plist[2].sizes() == dl::Shape{5});
  CHECK(plist->at(1).requires_grad());
  CHECK_THROWS_WITH_AS(plist->at(3), "ParameterList: index 3 out of range for a list of 3 parameters", dl::Error);
  std::vector<std::string> keys;
  for (auto& p : *plist) keys.push_back(p.key() + ":" + std::to_string(p.value().numel()));
  CHECK(keys == std::vector<std::string>{"0:6", "1:4", "2:5"});
  torch::nn::ParameterList copy;
  copy->extend(*plist);
  CHECK(copy->size() == 3);
  CHECK(copy[0].is_same(plist[0]));
  CHECK(plist->parameters().size() == 3);
  // named_children's values cast to a holder's module class too
  Block block;
  CHECK(block->named_children()[0].value()->as<torch::nn::Linear>() == block->fc.get());
}

TEST_CASE("parameter groups: OptimizerParamGroup in, views out") {
  torch::nn::Linear a(2, 2), b(2, 1);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(a->parameters(), std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.5).momentum(0.9)));
  groups.emplace_back(b->parameters());  // the defaults
  torch::optim::SGD sgd(groups, torch::optim::SGDOptions(0.1).weight_decay(0.01));
  REQUIRE(sgd.param_groups().size() == 2);
  CHECK(sgd.get_lr(0) == doctest::Approx(0.5));
  CHECK(sgd.get_momentum(0).value() == doctest::Approx(0.9));
  CHECK(sgd.get_lr(1) == doctest::Approx(0.1));
  CHECK(sgd.get_momentum(1).value() == doctest::Approx(0.0));
  // A group given its own options takes every field from them, as libtorch's.
  CHECK(static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[0].options()).weight_decay() == doctest::Approx(0.0));
  CHECK(static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[1].options()).weight_decay() == doctest::Approx(0.01));
  CHECK(sgd.param_groups()[1].params().size() == 2);
  CHECK(sgd.param_groups()[1].params()[0].is_same(b->weight));

  // The views write through: the static_cast idiom and set_lr.
  for (auto& group : sgd.param_groups()) static_cast<torch::optim::SGDOptions&>(group.options()).lr(0.25);
  CHECK(sgd.get_lr(0) == doctest::Approx(0.25));
  CHECK(sgd.get_lr(1) == doctest::Approx(0.25));
  sgd.param_groups()[1].options().set_lr(0.125);
  CHECK(sgd.get_lr(1) == doctest::Approx(0.125));
  // A copy of a view is a value: changing it leaves the optimizer alone.
  torch::optim::SGDOptions copy = static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[0].options());
  copy.lr(9.0);
  CHECK(sgd.get_lr(0) == doctest::Approx(0.25));
  torch::optim::OptimizerParamGroup group_copy = sgd.param_groups()[0];
  group_copy.options().set_lr(7.0);
  CHECK(sgd.get_lr(0) == doctest::Approx(0.25));

  // add_param_group keeps earlier views valid in content.
  torch::nn::Linear c(1, 1);
  sgd.add_param_group(torch::optim::OptimizerParamGroup(c->parameters(), std::make_unique<torch::optim::SGDOptions>(0.75)));
  REQUIRE(sgd.param_groups().size() == 3);
  CHECK(sgd.param_groups()[2].options().get_lr() == doctest::Approx(0.75));
  CHECK(sgd.param_groups()[0].options().get_lr() == doctest::Approx(0.25));

  // One step with the groups' own learning rates.
  {
    torch::NoGradGuard no_grad;
    c->weight.fill_(1.0f);
  }
  sgd.zero_grad();
  c->forward(torch::ones({1, 1})).sum().backward();
  sgd.step();
  CHECK(c->weight.item<float>() == doctest::Approx(1.0 - 0.75));

  // Errors: another algorithm's options in a group; an empty group's options.
  std::vector<torch::optim::OptimizerParamGroup> wrong;
  wrong.emplace_back(a->parameters(), std::make_unique<torch::optim::AdamOptions>(0.1));
  CHECK_THROWS_WITH_AS(torch::optim::SGD(wrong, 0.1),
                       "torch::optim::SGD: a parameter group's options must be torch::optim::SGDOptions", dl::Error);
  torch::optim::OptimizerParamGroup bare(a->parameters());
  CHECK_FALSE(bare.has_options());
  CHECK_THROWS_AS(bare.options(), dl::Error);
}

namespace {
// A user's scheduler, as libtorch's are written: get_lrs from get_current_lrs and step_count_.
struct Halving : torch::optim::LRScheduler {
  explicit Halving(torch::optim::Optimizer& o) : torch::optim::LRScheduler(o) {}
  std::vector<double> get_lrs() override {
    auto lrs = get_current_lrs();
    for (auto& lr : lrs) lr *= step_count_ == 0 ? 1.0 : 0.5;
    return lrs;
  }
};
struct WrongCount : torch::optim::LRScheduler {
  using torch::optim::LRScheduler::LRScheduler;
  std::vector<double> get_lrs() override { return {1.0, 2.0}; }
};
}  // namespace

TEST_CASE("LRScheduler: a user's subclass sets every group's rate") {
  torch::nn::Linear fc(2, 1);
  torch::optim::Adam adam(fc->parameters(), 0.4);
  Halving s(adam);
  s.step();
  CHECK(adam.get_lr(0) == doctest::Approx(0.4));
  s.step();
  CHECK(adam.get_lr(0) == doctest::Approx(0.2));
  torch::optim::StepLR step(adam, 1, 0.5);
  step.step();
  CHECK(adam.get_lr(0) == doctest::Approx(0.1));
  WrongCount w(adam);
  CHECK_THROWS_WITH_AS(w.step(), "LRScheduler: get_lrs() returned 2 learning rates for 1 parameter groups", dl::Error);
}

TEST_CASE("libtorch's distributed samplers: libtorch's indices") {
  // Expected values printed by libtorch 1.13 (DistributedRandomSampler / DistributedSequentialSampler).
  auto epoch_of = [](auto sampler) { return sampler.indices(); };
  torch::data::samplers::DistributedRandomSampler a(10, 3, 1);
  CHECK(epoch_of(a) == std::vector<int64_t>{9, 1, 4, 7});
  a.set_epoch(2);
  CHECK(epoch_of(a) == std::vector<int64_t>{8, 1, 6, 2});
  CHECK(a.epoch() == 2);
  torch::data::samplers::DistributedRandomSampler b(10, 3, 2, /*allow_duplicates=*/false);
  b.set_epoch(5);
  CHECK(epoch_of(b) == std::vector<int64_t>{7, 4, 5});
  CHECK(epoch_of(torch::data::samplers::DistributedRandomSampler(7)) == std::vector<int64_t>{2, 4, 6, 0, 5, 1, 3});
  CHECK(epoch_of(torch::data::samplers::DistributedSequentialSampler(10, 3, 2)) == std::vector<int64_t>{8, 9, 0, 1});
  CHECK(epoch_of(torch::data::samplers::DistributedSequentialSampler(10, 3, 2, false)) == std::vector<int64_t>{6, 7, 8});
  CHECK_THROWS_WITH_AS(torch::data::samplers::DistributedRandomSampler(10, 2, 2),
                       "DistributedSampler: rank 2 is not in [0, num_replicas = 2)", dl::Error);

  // Through make_data_loader: replica 1 of 3 sees its four indices in libtorch's order.
  auto loader = torch::data::make_data_loader(Squares(10).map(torch::data::transforms::Stack<>()),
                                              torch::data::samplers::DistributedRandomSampler(10, 3, 1),
                                              torch::data::DataLoaderOptions().batch_size(3));
  std::vector<float> seen;
  for (auto& batch : *loader)
    for (int64_t i = 0; i < batch.data.size(0); ++i) seen.push_back(batch.data[i][0].item<float>());
  CHECK(seen == std::vector<float>{81, 1, 16, 49});
}

TEST_CASE("torch::nn::functional and the added holders") {
  namespace F = torch::nn::functional;
  auto x = torch::tensor({-1.0, 0.5, 2.0});
  CHECK(dl::equal(F::relu(x), torch::tensor({0.0, 0.5, 2.0})));
  auto y = x.clone();
  F::relu(y, F::ReLUFuncOptions().inplace(true));  // writes into y, as libtorch's inplace option
  CHECK(dl::equal(y, torch::tensor({0.0, 0.5, 2.0})));
  CHECK(dl::allclose(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.1)), torch::tensor({-0.1, 0.5, 2.0})));
  CHECK(dl::allclose(F::hardtanh(x, F::HardtanhFuncOptions().min_val(0).max_val(1)), torch::tensor({0.0, 0.5, 1.0})));
  CHECK(F::dropout(torch::ones({100}), F::DropoutFuncOptions().p(0.5).training(false)).sum().item<float>() == 100);

  // Braced integers are int64, braced floating values float (libtorch's inference).
  static_assert(std::is_same_v<decltype(torch::tensor({1, 2})), dl::Tensor<int64_t>>);
  static_assert(std::is_same_v<decltype(torch::tensor({1.5, 2.0})), torch::Tensor>);

  // Reductions by name; a wrong name is a clear error.
  auto a = torch::tensor({1.0, 2.0}), b = torch::tensor({0.0, 0.0});
  CHECK(F::mse_loss(a, b, F::MSELossFuncOptions(torch::kSum)).item<float>() == doctest::Approx(5.0));
  CHECK(F::mse_loss(a, b).item<float>() == doctest::Approx(2.5));
  CHECK(torch::nn::L1Loss(torch::nn::L1LossOptions().reduction(torch::kNone))(a, b).numel() == 2);
  CHECK_THROWS_WITH_AS(F::mse_loss(a, b, F::MSELossFuncOptions(torch::kTanh)),
                       "tanh is not a valid value for reduction (expected torch::kMean, torch::kSum or torch::kNone)", dl::Error);
  CHECK_THROWS_AS(F::mse_loss(a, b, F::MSELossFuncOptions(torch::kBatchMean)), dl::Error);  // kl_div's only

  // Holders of the added layers: options reach dl's layers, which print as PyTorch's.
  torch::nn::Embedding emb(torch::nn::EmbeddingOptions(5, 3).padding_idx(0));
  CHECK(emb->options.embedding_dim() == 3);
  CHECK(emb->padding_idx == 0);
  CHECK(emb->forward(torch::tensor({0, 4})).sizes() == dl::Shape{2, 3});
  auto pretrained = torch::nn::Embedding::from_pretrained(torch::ones({4, 2}), torch::nn::EmbeddingFromPretrainedOptions().freeze(false));
  CHECK(pretrained->weight.requires_grad());
  CHECK_THROWS_WITH_AS(torch::nn::Embedding(torch::nn::EmbeddingOptions(5, 3)._weight(torch::ones({4, 3}))),
                       "Expected o._weight().shape() == dl::Shape({o.num_embeddings(), o.embedding_dim()}) to be true, but got "
                       "false. Shape of _weight does not match num_embeddings and embedding_dim",
                       dl::Error);
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  auto [out, state] = lstm->forward(torch::zeros({2, 5, 3}));
  CHECK(out.sizes() == dl::Shape{2, 5, 8});
  CHECK(std::get<0>(state).sizes() == dl::Shape{4, 2, 4});
  torch::nn::RNN rnn(torch::nn::RNNOptions(3, 2).nonlinearity(torch::kReLU));
  CHECK(std::get<0>(rnn->forward(torch::randn({4, 2, 3}))).min().item<float>() >= 0);  // relu, not tanh
  std::ostringstream printed;
  printed << torch::nn::RNNCell(torch::nn::RNNCellOptions(3, 2).nonlinearity(torch::kReLU));
  CHECK(printed.str() == "RNNCell(3, 2, nonlinearity=relu)");  // PyTorch's repr
  torch::nn::TransformerEncoder encoder(torch::nn::TransformerEncoderOptions(torch::nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(8), 3)
                                            .norm(torch::nn::LayerNorm(torch::nn::LayerNormOptions({4}))));
  CHECK(encoder->forward(torch::zeros({3, 2, 4})).sizes() == dl::Shape{3, 2, 4});
  CHECK(encoder->named_parameters().size() == 3 * 12 + 2);  // 12 tensors per layer, the final norm's 2
  torch::nn::ReflectionPad2d pad(torch::nn::ReflectionPad2dOptions({1, 1, 2, 0}));
  CHECK(pad->forward(torch::zeros({1, 1, 3, 3})).sizes() == dl::Shape{1, 1, 5, 5});
  CHECK(torch::nn::ZeroPad2d(1)->forward(torch::zeros({1, 1, 2, 2})).sizes() == dl::Shape{1, 1, 4, 4});
  CHECK(torch::nn::MaxPool2d(2)->forward(torch::zeros({1, 1, 4, 4})).sizes() == dl::Shape{1, 1, 2, 2});
  CHECK(torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({1, 2}))->forward(torch::zeros({1, 3, 4, 4})).sizes() ==
        dl::Shape{1, 3, 1, 2});

  torch::nn::EmbeddingBag bag(torch::nn::EmbeddingBagOptions(4, 2).mode(torch::kSum)._weight(torch::arange(8, torch::kFloat).view({4, 2})));
  CHECK(dl::equal(bag->forward(torch::tensor({0, 1, 3}), torch::tensor({0, 2})), torch::tensor({2.0, 4.0, 6.0, 7.0}).view({2, 2})));
  CHECK_THROWS_WITH_AS(torch::nn::EmbeddingBag(torch::nn::EmbeddingBagOptions(4, 2)._weight(torch::ones({4, 3}))),
                       doctest::Contains("Shape of _weight does not match num_embeddings and embedding_dim"), dl::Error);
  CHECK(torch::nn::Bilinear(torch::nn::BilinearOptions(3, 4, 5).bias(false))->forward(torch::ones({2, 3}), torch::ones({2, 4})).sizes() ==
        dl::Shape{2, 5});
  CHECK(dl::equal(torch::nn::Threshold(0.5, -1.0)->forward(torch::tensor({0.25, 1.0})), torch::tensor({-1.0, 1.0})));
  CHECK(dl::allclose(torch::nn::Tanhshrink()->forward(torch::tensor({1.0})), torch::tensor({float(1.0 - std::tanh(1.0))})));
  torch::nn::TransformerDecoder decoder(torch::nn::TransformerDecoderOptions(torch::nn::TransformerDecoderLayerOptions(4, 2).dim_feedforward(8), 2));
  CHECK(decoder->forward(torch::zeros({3, 2, 4}), torch::zeros({5, 2, 4})).sizes() == dl::Shape{3, 2, 4});
  torch::nn::Transformer transformer(torch::nn::TransformerOptions(8, 2, 1, 1).dim_feedforward(16).dropout(0.0).activation(torch::kGELU));
  CHECK(transformer->forward(torch::zeros({5, 2, 8}), torch::zeros({3, 2, 8})).sizes() == dl::Shape{3, 2, 8});
}

TEST_CASE("PixelShuffle and PixelUnshuffle: holders and functional options") {
  namespace F = torch::nn::functional;
  auto x = torch::randn({2, 8, 3, 2});
  torch::nn::PixelShuffle shuffle(torch::nn::PixelShuffleOptions(2));
  torch::nn::PixelUnshuffle unshuffle(torch::nn::PixelUnshuffleOptions(2));
  CHECK(shuffle->options.upscale_factor() == 2);
  CHECK(shuffle->forward(x).sizes() == dl::Shape{2, 2, 6, 4});
  CHECK(dl::equal(F::pixel_shuffle(x, F::PixelShuffleFuncOptions(2)), shuffle(x)));
  CHECK(dl::equal(unshuffle(shuffle(x)), x));
  CHECK(dl::equal(F::pixel_unshuffle(shuffle(x), F::PixelUnshuffleFuncOptions(2)), x));
  CHECK(unshuffle->options.downscale_factor() == 2);
}

TEST_CASE("Upsample holder and F::interpolate with libtorch's options") {
  namespace F = torch::nn::functional;
  auto x = torch::randn({1, 2, 3, 4});
  torch::nn::Upsample up(torch::nn::UpsampleOptions().scale_factor(std::vector<double>({2, 2})).mode(torch::kBilinear).align_corners(false));
  CHECK(up->options.mode() == torch::kBilinear);
  CHECK(up->forward(x).sizes() == dl::Shape{1, 2, 6, 8});
  CHECK(dl::equal(up(x), F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>({2, 2})).mode(torch::kBilinear)
                                                .align_corners(false))));
  auto y = F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>({5, 5})).mode(torch::kNearestExact));
  CHECK(y.sizes() == dl::Shape{1, 2, 5, 5});
  CHECK(dl::equal(y, dl::nn::functional::interpolate(x, {.size = {5, 5}, .mode = "nearest-exact"})));
  CHECK(F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>({2, 2})).mode(torch::kArea)).sizes() == dl::Shape{1, 2, 2, 2});
  torch::nn::Upsample nearest(torch::nn::UpsampleOptions().size(std::vector<int64_t>({6, 8})));
  CHECK(dl::equal(nearest(x), up(x) * 0 + F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>({2, 2})))));
  CHECK_THROWS_WITH_AS(F::interpolate(x, F::InterpolateFuncOptions()), "either size or scale_factor should be defined", dl::Error);
}

TEST_CASE("Unfold and Fold holders and F::unfold / F::fold with libtorch's options") {
  namespace F = torch::nn::functional;
  auto x = torch::randn({2, 3, 6, 8});
  torch::nn::Unfold unfold(torch::nn::UnfoldOptions({2, 4}).stride({2, 4}));
  CHECK(unfold->options.kernel_size()[1] == 4);
  auto cols = unfold(x);
  CHECK(cols.sizes() == dl::Shape{2, 24, 6});
  CHECK(dl::equal(cols, F::unfold(x, F::UnfoldFuncOptions({2, 4}).stride({2, 4}))));
  torch::nn::Fold fold(torch::nn::FoldOptions({6, 8}, {2, 4}).stride({2, 4}));
  CHECK(dl::equal(fold->forward(cols), x));
  auto overlapping = F::fold(torch::ones({1, 4, 9}), F::FoldFuncOptions({4, 4}, 2).padding(0).dilation(1).stride(1));
  CHECK(overlapping.sizes() == dl::Shape{1, 1, 4, 4});
  CHECK(overlapping[0][0][1][1].item<float>() == 4);
  CHECK(F::unfold(x, F::UnfoldFuncOptions(3).padding(1)).sizes() == dl::Shape{2, 27, 48});
}

TEST_CASE("InstanceNorm holders and F::instance_norm with libtorch's options") {
  namespace F = torch::nn::functional;
  torch::nn::InstanceNorm2d norm(torch::nn::InstanceNorm2dOptions(3).affine(true).eps(1e-3));
  CHECK(norm->options.affine());
  CHECK(norm->parameters().size() == 2);
  auto x = torch::randn({2, 3, 4, 4});
  CHECK(dl::allclose(norm(x), F::instance_norm(x, F::InstanceNormFuncOptions().weight(norm->weight).bias(norm->bias).eps(1e-3))));
  torch::nn::InstanceNorm1d plain(torch::nn::InstanceNorm1dOptions(5));
  CHECK(plain->named_buffers().size() == 0);
  CHECK(plain(torch::randn({2, 5, 7})).sizes() == dl::Shape{2, 5, 7});
}
