// Tests of dl/data: datasets, samplers (against PyTorch's streams where the algorithm is the
// same, statistical checks otherwise), default_collate, DataLoader (shapes, drop_last,
// determinism across num_workers, errors, timeout, early break), transforms (against PyTorch),
// and the file readers on fixtures made by tests/gen_data_fixtures.py and on the real
// Fashion-MNIST when it is installed.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <dl/data/data.hpp>

namespace data = dl::data;
namespace T = dl::data::transforms;
using dl::Tensor;

namespace {

const std::string kData = std::string(DL_TEST_DATA) + "/datasets";
const std::filesystem::path kFashion = "/usr/share/datasets/fashion-mnist";

/// reference.txt: "name v1 v2 ..." per line, written by gen_data_fixtures.py with PyTorch.
const std::map<std::string, std::vector<double>>& reference() {
  static const auto ref = [] {
    std::map<std::string, std::vector<double>> out;
    std::ifstream in(kData + "/reference.txt");
    REQUIRE_MESSAGE(in.good(), "missing ", kData, "/reference.txt: run tests/gen_data_fixtures.py");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string name;
      ls >> name;
      double v;
      while (ls >> v) out[name].push_back(v);
    }
    return out;
  }();
  return ref;
}

const std::vector<double>& torch_ref(const std::string& name) {
  const auto it = reference().find(name);
  REQUIRE_MESSAGE(it != reference().end(), "no reference ", name);
  return it->second;
}

std::vector<int64_t> as_ints(const std::vector<double>& v, size_t from = 0) {
  std::vector<int64_t> out;
  for (size_t k = from; k < v.size(); ++k) out.push_back(int64_t(v[k]));
  return out;
}

template <class T>
std::vector<T> values(const Tensor<T>& t) {
  const Tensor<T> c = t.contiguous();
  return std::vector<T>(c.data(), c.data() + c.numel());
}

/// Runs f and returns the dl::Error message it throws (fails the test when it throws nothing).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  FAIL("expected a dl::Error");
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// The fixture formula of gen_data_fixtures.py.
int pixel(int64_t i, int64_t y, int64_t x, int64_t c = 0) { return int((i * 31 + y * 7 + x * 3 + c * 50) % 256); }

/// The transform test image of gen_data_fixtures.py.
Tensor<float> test_image(int64_t c, int64_t h, int64_t w) {
  Tensor<float> t = dl::empty<float>({c, h, w});
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) t.at(ch, y, x) = float((ch * 7 + y * 5 + x * 3) % 11) / 10.0f;
  return t;
}

void check_close(const Tensor<float>& t, const std::vector<double>& expected, double tol) {
  const auto v = values(t);
  REQUIRE(v.size() == expected.size());
  for (size_t k = 0; k < v.size(); ++k) CHECK_MESSAGE(std::abs(double(v[k]) - expected[k]) <= tol, "element ", k, ": ", v[k], " vs ", expected[k]);
}

/// Pearson's chi-square statistic of observed counts against expected ones.
double chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double s = 0;
  for (size_t k = 0; k < observed.size(); ++k) s += (observed[k] - expected[k]) * (observed[k] - expected[k]) / expected[k];
  return s;
}

/// A dataset whose sample i is i (as a 0-d-free int64) and that records how many gets it served.
struct CountingDataset {
  int64_t n;
  std::shared_ptr<std::atomic<int64_t>> gets = std::make_shared<std::atomic<int64_t>>(0);
  int64_t size() const { return n; }
  int64_t get(int64_t i) const {
    ++*gets;
    return i;
  }
};

/// Sample i is a random crop + flip of a fixed image, drawn from the loader's per-sample generator.
struct AugmentedDataset {
  int64_t size() const { return 37; }
  std::pair<Tensor<float>, int64_t> get(int64_t i) const {
    Tensor<float> img = test_image(2, 6, 7);
    img = T::RandomCrop(4, 1)(img);
    img = T::RandomHorizontalFlip(0.5)(img);
    return {img, i};
  }
};

}  // namespace

// =============================================================================== datasets

TEST_CASE("TensorDataset indexes rows and checks first dimensions") {
  Tensor<float> x = dl::arange<float>(0, 12).reshape({4, 3});
  Tensor<int64_t> y = dl::arange(4);
  data::TensorDataset ds(x, y);
  static_assert(data::dataset<decltype(ds)>);
  CHECK(ds.size() == 4);
  auto [row, label] = ds.get(2);
  CHECK(row.shape() == dl::Shape{3});
  CHECK(values(row) == std::vector<float>{6, 7, 8});
  CHECK(label.item() == 2);
  const int64_t idx[] = {3, 0};
  auto [bx, by] = ds.get_batch(idx);
  CHECK(values(bx) == std::vector<float>{9, 10, 11, 0, 1, 2});
  CHECK(values(by) == std::vector<int64_t>{3, 0});

  const std::string msg = error_of([&] { data::TensorDataset bad(x, dl::arange(5)); });
  CHECK(contains(msg, "size mismatch"));
  CHECK(contains(msg, "[4, 3]"));
  CHECK(contains(msg, "[5]"));
  CHECK(contains(error_of([&] { data::TensorDataset bad(dl::scalar_tensor(1.0f)); }), "0-dimensional"));
  CHECK(contains(error_of([&] { ds.get(4); }), "index 4 out of range for dataset of size 4"));
}

TEST_CASE("Subset, ConcatDataset, MapDataset, AnyDataset") {
  data::TensorDataset ds(dl::arange<float>(0, 10));
  data::Subset sub(ds, {7, 2, 5});
  CHECK(sub.size() == 3);
  CHECK(std::get<0>(sub.get(1)).item() == 2);
  const int64_t idx[] = {2, 0};
  CHECK(values(std::get<0>(sub.get_batch(idx))) == std::vector<float>{5, 7});
  CHECK(contains(error_of([&] { data::Subset bad(ds, {1, 10}); }), "indices[1] = 10 is out of range"));

  data::ConcatDataset cat(ds, data::Subset(ds, {0, 1}));  // different types: held as AnyDataset
  static_assert(std::is_same_v<decltype(cat), data::ConcatDataset<data::AnyDataset<std::tuple<Tensor<float>>>>>);
  CHECK(cat.size() == 12);
  CHECK(std::get<0>(cat.get(9)).item() == 9);
  CHECK(std::get<0>(cat.get(11)).item() == 1);
  CHECK(cat.cumulative_sizes() == std::vector<int64_t>{10, 12});
  CHECK(contains(error_of([&] { cat.get(12); }), "out of range"));

  data::ConcatDataset same(ds, ds, ds);
  static_assert(std::is_same_v<decltype(same), data::ConcatDataset<data::TensorDataset<float>>>);
  CHECK(same.size() == 30);
  CHECK(std::get<0>(same.get(25)).item() == 5);
  data::ConcatDataset from_vector(std::vector{ds, ds});
  static_assert(std::is_same_v<decltype(from_vector), data::ConcatDataset<data::TensorDataset<float>>>);
  CHECK(from_vector.size() == 20);
  CHECK(contains(error_of([] { data::ConcatDataset(std::vector<data::TensorDataset<float>>{}); }), "should not be an empty"));

  data::MapDataset squared(ds, [](const std::tuple<Tensor<float>>& s) {
    const float v = std::get<0>(s).item();
    return v * v;
  });
  CHECK(squared.get(3) == 9.0f);

  // std::ref shares the dataset instead of copying it.
  CountingDataset counting{5};
  data::Subset<std::reference_wrapper<CountingDataset>> by_ref(std::ref(counting), {4});
  CHECK(by_ref.get(0) == 4);
  CHECK(*counting.gets == 1);
}

TEST_CASE("random_split") {
  data::TensorDataset ds(dl::arange(11));
  dl::Generator g1(42), g2(42);
  auto parts = data::random_split(ds, {0.3, 0.3, 0.4}, &g1);
  REQUIRE(parts.size() == 3);
  CHECK(std::vector<int64_t>{parts[0].size(), parts[1].size(), parts[2].size()} == as_ints(torch_ref("split_11_0.3_0.3_0.4")));
  std::set<int64_t> seen;
  for (const auto& p : parts)
    for (int64_t i : p.indices()) seen.insert(i);
  CHECK(seen.size() == 11);
  auto again = data::random_split(ds, {0.3, 0.3, 0.4}, &g2);
  CHECK(again[2].indices() == parts[2].indices());
  for (auto [n, name] : {std::pair{10, "split_10_0.5_0.5"}}) {
    auto halves = data::random_split(data::TensorDataset(dl::arange(n)), {0.5, 0.5});
    CHECK(halves[0].size() == int64_t(torch_ref(name)[0]));
  }
  auto sevens = data::random_split(data::TensorDataset(dl::arange(7)), {0.1, 0.2, 0.7});
  CHECK(std::vector<int64_t>{sevens[0].size(), sevens[1].size(), sevens[2].size()} == as_ints(torch_ref("split_7_0.1_0.2_0.7")));
  auto ints = data::random_split(ds, {8, 3});
  CHECK(ints[1].size() == 3);
  CHECK(contains(error_of([&] { data::random_split(ds, {8, 2}); }), "does not equal the length of the input dataset (11)"));
}

// =============================================================================== samplers

TEST_CASE("deterministic samplers match PyTorch") {
  CHECK(data::SequentialSampler(7).indices() == as_ints(torch_ref("sequential_7")));
  for (int drop = 0; drop < 2; ++drop) {
    data::BatchSampler bs(data::SequentialSampler(10), 3, drop);
    const auto& r = torch_ref("batch_10_3_" + std::to_string(drop));
    CHECK(bs.size() == int64_t(r[0]));
    std::vector<int64_t> flat;
    for (const auto& b : bs.batches()) flat.insert(flat.end(), b.begin(), b.end());
    CHECK(flat == as_ints(r, 1));
  }
  struct Case {
    int64_t n, r;
    bool drop;
  };
  for (Case c : {Case{10, 3, false}, Case{10, 3, true}, Case{2, 4, false}, Case{11, 4, true}, Case{12, 4, false}})
    for (int64_t rank = 0; rank < c.r; ++rank) {
      data::DistributedSampler s(c.n, {.num_replicas = c.r, .rank = rank, .shuffle = false, .drop_last = c.drop});
      const auto& r = torch_ref("dist_" + std::to_string(c.n) + "_" + std::to_string(c.r) + "_" + std::to_string(int(c.drop)) + "_" +
                          std::to_string(rank));
      CHECK(s.size() == int64_t(r[0]));
      CHECK(s.indices() == as_ints(r, 1));
    }
  CHECK(contains(error_of([] { data::DistributedSampler(10, {.num_replicas = 2, .rank = 2}); }), "invalid rank 2, rank should be in the interval [0, 1]"));
  CHECK(contains(error_of([] { data::BatchSampler(data::SequentialSampler(3), 0, false); }), "batch_size=0"));
}

TEST_CASE("a DataLoader follows set_epoch on the DistributedSampler it was given (copies share the epoch)") {
  data::TensorDataset ds(dl::arange<float>(0, 20).view({20, 1}), dl::arange<int64_t>(0, 20));
  data::DistributedSampler sampler(ds, {.num_replicas = 2, .rank = 1, .shuffle = true, .seed = 3});
  data::DataLoader loader(ds, {.batch_size = 10, .sampler = sampler});
  auto first_batch = [&] {
    for (auto& [x, y] : loader) return std::vector<int64_t>(y.data(), y.data() + y.numel());
    return std::vector<int64_t>{};
  };
  sampler.set_epoch(0);
  const auto e0 = first_batch();
  sampler.set_epoch(1);
  const auto e1 = first_batch();
  CHECK(e0 != sampler.indices());  // the sampler is at epoch 1 now
  CHECK(e1 == sampler.indices());
  sampler.set_epoch(0);
  CHECK(e0 == sampler.indices());
  CHECK(e0 != e1);
}

TEST_CASE("DistributedSampler shuffles by seed and epoch, and the replicas partition the data") {
  auto shard = [](int64_t rank, int64_t epoch, uint64_t seed) {
    data::DistributedSampler s(10, {.num_replicas = 3, .rank = rank, .shuffle = true, .seed = seed});
    s.set_epoch(epoch);
    return s.indices();
  };
  std::multiset<int64_t> all;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i : shard(r, 0, 7)) all.insert(i);
  CHECK(all.size() == 12);  // padded to 4 per replica
  CHECK(std::set<int64_t>(all.begin(), all.end()).size() == 10);
  CHECK(shard(1, 3, 7) == shard(1, 3, 7));
  CHECK(shard(1, 3, 7) != shard(1, 4, 7));
  CHECK(shard(1, 3, 7) != shard(1, 3, 8));
  // the shuffled stream is randperm(n) of Generator(seed + epoch), then PyTorch's padding/striding
  dl::Generator g(7 + 2);
  const auto perm = values(dl::randperm(10, &g));
  CHECK(shard(0, 2, 7) == std::vector<int64_t>{perm[0], perm[3], perm[6], perm[9]});
}

TEST_CASE("RandomSampler: permutations from dl's generator, uniform positions") {
  dl::Generator g(5), g_ref(5);
  data::RandomSampler s(9, {.generator = &g});
  CHECK(s.size() == 9);
  const auto first = s.indices();
  CHECK(first == values(dl::randperm(9, &g_ref)));  // same algorithm as dl::randperm
  CHECK(s.indices() != first);                      // the generator advanced: a new epoch order

  // num_samples > n without replacement: whole permutations, then a partial one.
  data::RandomSampler longer(4, {.num_samples = 10, .generator = &g});
  const auto l = longer.indices();
  REQUIRE(l.size() == 10);
  CHECK(std::set<int64_t>(l.begin(), l.begin() + 4).size() == 4);
  CHECK(std::set<int64_t>(l.begin() + 4, l.begin() + 8).size() == 4);

  // Position 0 is uniform over the values (chi-square, 4 dof; 30 is p ~ 5e-6).
  std::vector<double> counts(5, 0);
  data::RandomSampler five(5, {.generator = &g});
  const int epochs = 20000;
  for (int e = 0; e < epochs; ++e) counts[size_t(five.indices()[0])] += 1;
  CHECK(chi_square(counts, std::vector<double>(5, epochs / 5.0)) < 30);

  // With replacement: uniform draws.
  data::RandomSampler rep(6, {.replacement = true, .num_samples = 60000, .generator = &g});
  std::vector<double> c6(6, 0);
  for (int64_t i : rep.indices()) c6[size_t(i)] += 1;
  CHECK(chi_square(c6, std::vector<double>(6, 10000)) < 35);

  CHECK(contains(error_of([] { data::RandomSampler(3, {.num_samples = 0}); }), "num_samples=0"));
}

TEST_CASE("SubsetRandomSampler and WeightedRandomSampler") {
  dl::Generator g(11);
  data::SubsetRandomSampler sub({3, 5, 8, 13}, &g);
  auto idx = sub.indices();
  CHECK(std::set<int64_t>(idx.begin(), idx.end()) == std::set<int64_t>{3, 5, 8, 13});

  const std::vector<double> w = {1, 0, 2, 5, 2};
  data::WeightedRandomSampler with(w, 100000, true, &g);
  std::vector<double> counts(5, 0);
  for (int64_t i : with.indices()) counts[size_t(i)] += 1;
  CHECK(counts[1] == 0);
  std::vector<double> obs = {counts[0], counts[2], counts[3], counts[4]}, exp = {10000, 20000, 50000, 20000};
  CHECK(chi_square(obs, exp) < 30);  // 3 dof

  data::WeightedRandomSampler without(w, 4, false, &g);
  std::vector<double> first(5, 0);
  for (int e = 0; e < 20000; ++e) {
    const auto s = without.indices();
    REQUIRE(s.size() == 4);
    CHECK(std::set<int64_t>(s.begin(), s.end()).size() == 4);
    CHECK(std::find(s.begin(), s.end(), 1) == s.end());
    first[size_t(s[0])] += 1;
  }
  // The first draw follows the weights, as torch.multinomial's first draw does.
  CHECK(chi_square({first[0], first[2], first[3], first[4]}, {2000, 4000, 10000, 4000}) < 30);

  CHECK(contains(error_of([] { data::WeightedRandomSampler({1, -1}, 2); }), "weights[1] = -1"));
  CHECK(contains(error_of([] { data::WeightedRandomSampler({0, 0}, 2); }), "sum of weights is 0"));
  CHECK(contains(error_of([&] { data::WeightedRandomSampler(w, 5, false); }), "only 4 of 5 weights are nonzero"));
  CHECK(contains(error_of([&] { data::WeightedRandomSampler(w, 0); }), "num_samples=0"));
}

// =============================================================================== collate

namespace {
struct Named {
  Tensor<float> image;
  Tensor<float> mask;
};
struct Mixed {
  Tensor<float> features;
  int label;
  double weight;
};
struct MixedBatch {
  Tensor<float> features;
  Tensor<int64_t> labels;
  Tensor<double> weights;
};
struct Declared {
  using batch_type = MixedBatch;
  Tensor<float> features;
  int label;
  double weight;
};
}  // namespace

TEST_CASE("default_collate stacks tensors and numbers, field by field") {
  std::vector<std::pair<Tensor<float>, int>> pairs = {{dl::tensor<float>({1, 2}), 3}, {dl::tensor<float>({4, 5}), 6}};
  auto [x, y] = data::default_collate(pairs);
  CHECK(x.shape() == dl::Shape{2, 2});
  CHECK(values(x) == std::vector<float>{1, 2, 4, 5});
  static_assert(std::is_same_v<decltype(y), Tensor<int64_t>>);  // integers become int64, as PyTorch's ints
  CHECK(values(y) == std::vector<int64_t>{3, 6});

  std::vector<std::tuple<float, double, bool, uint8_t, std::string>> t = {{1.5f, 2.5, true, 7, "a"}, {3.5f, 4.5, false, 9, "b"}};
  auto [f, d, b, u, s] = data::default_collate(t);
  CHECK(values(f) == std::vector<float>{1.5f, 3.5f});
  CHECK(values(d) == std::vector<double>{2.5, 4.5});
  CHECK(values(b) == std::vector<bool>{true, false});
  CHECK(values(u) == std::vector<uint8_t>{7, 9});
  CHECK(s == std::vector<std::string>{"a", "b"});

  std::vector<Named> named = {{dl::ones({1, 2}), dl::zeros({2})}, {dl::zeros({1, 2}), dl::ones({2})}};
  Named nb = data::default_collate(named);  // all-tensor struct: batched as the same struct
  CHECK(nb.image.shape() == dl::Shape{2, 1, 2});
  CHECK(values(nb.mask) == std::vector<float>{0, 0, 1, 1});

  std::vector<Mixed> mixed = {{dl::ones({3}), 1, 0.5}, {dl::ones({3}), 2, 0.25}};
  auto mb = data::default_collate(mixed);
  static_assert(std::is_same_v<decltype(mb), std::tuple<Tensor<float>, Tensor<int64_t>, Tensor<double>>>);
  CHECK(values(std::get<1>(mb)) == std::vector<int64_t>{1, 2});

  std::vector<Declared> declared = {{dl::ones({3}), 1, 0.5}, {dl::zeros({3}), 2, 0.25}};
  MixedBatch db = data::default_collate(declared);
  CHECK(values(db.weights) == std::vector<double>{0.5, 0.25});

  std::vector<std::vector<int>> lists = {{1, 2}, {3, 4}};
  auto lb = data::default_collate(lists);
  REQUIRE(lb.size() == 2);
  CHECK(values(lb[1]) == std::vector<int64_t>{2, 4});
  std::vector<std::map<std::string, float>> dicts = {{{"a", 1.f}, {"b", 2.f}}, {{"a", 3.f}, {"b", 4.f}}};
  auto mbatch = data::default_collate(dicts);
  CHECK(values(mbatch.at("b")) == std::vector<float>{2, 4});
  std::vector<std::array<Tensor<float>, 2>> arrays = {{dl::ones({1}), dl::zeros({1})}, {dl::ones({1}), dl::zeros({1})}};
  CHECK(data::default_collate(arrays)[0].shape() == dl::Shape{2, 1});

  std::vector<Tensor<float>> ragged = {dl::ones({3}), dl::ones({4})};
  const std::string msg = error_of([&] { data::default_collate(ragged); });
  CHECK(contains(msg, "stack expects each tensor to be equal size, but got [3] at entry 0 and [4] at entry 1"));
  std::vector<std::vector<int>> uneven = {{1}, {1, 2}};
  CHECK(contains(error_of([&] { data::default_collate(uneven); }), "equal size"));
}

// =============================================================================== DataLoader

namespace {
// libtorch's style: a base class, get(size_t), .map(...) chained.
struct Ramp : data::Dataset<Ramp> {
  int64_t n = 10;
  int64_t size() const { return n; }
  std::pair<Tensor<float>, int64_t> get(size_t i) const { return {dl::full<float>({3}, float(i)), int64_t(i) % 2}; }
};
}  // namespace

TEST_CASE("data::Dataset<Self>: libtorch's base, .map chained, into a DataLoader") {
  auto scaled = Ramp{}.map([](const std::pair<Tensor<float>, int64_t>& s) { return std::make_pair(Tensor<float>(s.first * 2.0f), s.second); })
                    .map([](const std::pair<Tensor<float>, int64_t>& s) { return std::make_pair(Tensor<float>(s.first + 1.0f), s.second); });
  CHECK(scaled.size() == 10);
  CHECK(scaled.get(3).first.at(0) == 7.0f);
  Ramp big;
  big.n = 6;
  auto halved = big.map([](const std::pair<Tensor<float>, int64_t>& s) { return Tensor<float>(s.first * 0.5f); });
  CHECK(halved.size() == 6);  // a copy of the dataset as it was
  int64_t seen = 0;
  for (auto& [x, y] : data::DataLoader(scaled, {.batch_size = 4})) {
    CHECK(x.shape() == dl::Shape{x.size(0), 3});
    CHECK(x.at(0, 0) == float(2 * seen + 1));
    CHECK(y.at(0) == seen % 2);
    seen += x.size(0);
  }
  CHECK(seen == 10);
}

TEST_CASE("DataLoader: batch shapes, drop_last, order, len") {
  data::TensorDataset ds(dl::arange<float>(0, 30).reshape({10, 3}), dl::arange(10));
  data::DataLoader loader(ds, {.batch_size = 4});
  CHECK(loader.size() == 3);
  std::vector<int64_t> sizes, labels;
  for (auto& [x, y] : loader) {
    CHECK(x.size(1) == 3);
    CHECK(values(x)[0] == float(3 * y.data()[0]));
    sizes.push_back(x.size(0));
    for (int64_t v : values(y)) labels.push_back(v);
  }
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});
  CHECK(labels == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

  data::DataLoader dropping(ds, {.batch_size = 4, .drop_last = true});
  CHECK(dropping.size() == 2);
  int64_t batches = 0;
  for (auto& [x, y] : dropping) {
    CHECK(x.size(0) == 4);
    ++batches;
  }
  CHECK(batches == 2);

  // shuffle: every index once per epoch, a different order next epoch.
  data::DataLoader shuffled(ds, {.batch_size = 3, .shuffle = true, .seed = 1});
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 2; ++e) {
    std::vector<int64_t> order;
    for (auto& [x, y] : shuffled)
      for (int64_t v : values(y)) order.push_back(v);
    CHECK(std::set<int64_t>(order.begin(), order.end()).size() == 10);
    epochs.push_back(order);
  }
  CHECK(epochs[0] != epochs[1]);

  // samplers and batch samplers from the options
  data::DataLoader subset(ds, {.batch_size = 2, .sampler = data::SubsetRandomSampler({1, 3, 5})});
  CHECK(subset.size() == 2);
  std::set<int64_t> seen;
  for (auto& [x, y] : subset)
    for (int64_t v : values(y)) seen.insert(v);
  CHECK(seen == std::set<int64_t>{1, 3, 5});
  data::DataLoader by_batches(ds, {.batch_sampler = data::BatchSampler(data::SequentialSampler(5), 5, false)});
  CHECK(by_batches.size() == 1);
  for (auto& [x, y] : by_batches) CHECK(values(y) == std::vector<int64_t>{0, 1, 2, 3, 4});

  // an empty dataset gives no batches
  data::DataLoader none(data::TensorDataset(dl::empty<float>({0, 2})), {.batch_size = 2});
  CHECK(none.begin() == none.end());

  // range algorithms accept the loader
  static_assert(std::ranges::input_range<decltype(loader)>);
  CHECK(std::ranges::distance(loader) == 3);
}

TEST_CASE("DataLoader: option errors") {
  data::TensorDataset ds(dl::arange(10));
  auto bs = data::BatchSampler(data::SequentialSampler(10), 2, false);
  const std::string excl = "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last";
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.batch_size = 4, .batch_sampler = bs}); }), excl));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.shuffle = true, .batch_sampler = bs}); }), excl));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.sampler = data::SequentialSampler(10), .batch_sampler = bs}); }), excl));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.batch_sampler = bs, .drop_last = true}); }), excl));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.shuffle = true, .sampler = data::SequentialSampler(10)}); }),
                 "sampler option is mutually exclusive with shuffle"));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.batch_size = 0}); }), "batch_size=0"));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.num_workers = -1}); }), "num_workers option should be non-negative"));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.timeout = -1}); }), "timeout option should be non-negative"));
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.prefetch_factor = 4}); }), "prefetch_factor option could only be specified"));
  dl::Generator g(1);
  CHECK(contains(error_of([&] { data::DataLoader l(ds, {.generator = &g, .seed = 3}); }), "seed and generator are mutually exclusive"));
}

TEST_CASE("DataLoader: batches depend only on the seed, not on num_workers") {
  AugmentedDataset ds;
  auto run = [&](int workers, uint64_t seed) {
    data::DataLoader loader(ds, {.batch_size = 5,
                                 .shuffle = true,
                                 .num_workers = workers,
                                 .prefetch_factor = workers ? std::optional<int>(3) : std::nullopt,
                                 .seed = seed});
    std::vector<std::vector<float>> out;
    for (int epoch = 0; epoch < 2; ++epoch)
      for (auto& [images, labels] : loader) {
        CHECK(images.shape() == dl::Shape{labels.size(0), 2, 4, 4});
        auto v = values(images);
        for (int64_t l : values(labels)) v.push_back(float(l));
        out.push_back(std::move(v));
      }
    return out;
  };
  const auto reference_run = run(0, 123);
  CHECK(reference_run.size() == 2 * 8);
  CHECK(run(1, 123) == reference_run);
  CHECK(run(4, 123) == reference_run);
  CHECK(run(0, 124) != reference_run);
  // The two epochs differ (new order and new augmentations).
  CHECK(std::vector(reference_run.begin(), reference_run.begin() + 8) != std::vector(reference_run.begin() + 8, reference_run.end()));
}

TEST_CASE("DataLoader: per-sample vision pipelines (prefetch hints) are deterministic too") {
  data::MNIST flips(kData + "/mnist", true, T::Compose(T::RandomHorizontalFlip(0.5), T::RandomCrop(4, 1)));
  static_assert(data::prefetching_dataset<decltype(flips)> && !data::batched_dataset<decltype(flips)>);
  data::Subset part(flips, {5, 4, 3, 2, 1});
  static_assert(data::prefetching_dataset<decltype(part)>);
  auto run = [&](const auto& ds, int workers) {
    data::DataLoader loader(std::ref(ds), {.batch_size = 2, .shuffle = true, .num_workers = workers, .seed = 5});
    std::vector<float> out;
    for (auto& [x, y] : loader) {
      CHECK(x.shape() == dl::Shape{y.size(0), 1, 4, 4});
      for (float v : values(x)) out.push_back(v);
      for (int64_t v : values(y)) out.push_back(float(v));
    }
    return out;
  };
  CHECK(run(flips, 0) == run(flips, 2));
  CHECK(run(part, 0) == run(part, 3));
}

TEST_CASE("DataLoader: a generator passed in advances with each epoch") {
  data::TensorDataset ds(dl::arange(20));
  dl::Generator g(9);
  data::DataLoader loader(ds, {.batch_size = 20, .shuffle = true, .generator = &g});
  const auto before = g.offset();
  for (auto& [y] : loader) CHECK(y.size(0) == 20);
  CHECK(g.offset() > before);
}

namespace {
struct IdBatch {
  std::vector<int64_t> ids;
  int64_t sum = 0;
};
}  // namespace

TEST_CASE("DataLoader: custom collate_fn builds any batch type") {
  auto collate = [](std::vector<int64_t> samples) {
    IdBatch b;
    for (int64_t s : samples) b.sum += s;
    b.ids = std::move(samples);
    return b;
  };
  CountingDataset ds{7};
  data::DataLoader loader(ds, data::DataLoaderOptions{.batch_size = 3, .num_workers = 2, .collate_fn = collate});
  std::vector<int64_t> sums;
  for (const IdBatch& b : loader) sums.push_back(b.sum);
  CHECK(sums == std::vector<int64_t>{3, 12, 6});
}

namespace {
struct FailingDataset {
  int64_t size() const { return 20; }
  int64_t get(int64_t i) const {
    if (i == 13) throw std::invalid_argument("sample 13 is broken");
    return i;
  }
};
}  // namespace

TEST_CASE("DataLoader: exceptions in workers reach the consumer with their message") {
  for (int workers : {0, 2}) {
    CAPTURE(workers);
    data::DataLoader loader(FailingDataset{}, {.batch_size = 4, .num_workers = workers});
    int64_t batches = 0;
    std::string message;
    try {
      for (auto& b : loader) {
        (void)b;
        ++batches;
      }
    } catch (const std::exception& e) {
      message = e.what();
      if (workers > 0) {
        CHECK(dynamic_cast<const dl::Error*>(&e) != nullptr);
        CHECK(contains(message, "DataLoader worker"));
        CHECK(contains(message, "batch 3"));
        bool nested_original = false;
        try {
          std::rethrow_if_nested(e);
        } catch (const std::invalid_argument&) {
          nested_original = true;
        }
        CHECK(nested_original);
      }
    }
    CHECK(contains(message, "sample 13 is broken"));
    CHECK(batches == 3);
  }

  data::DataLoader bad_init(CountingDataset{8}, {.batch_size = 2, .num_workers = 2, .worker_init_fn = [](int) {
                                                   throw std::runtime_error("no GPU for this worker");
                                                 }});
  const std::string msg = error_of([&] {
    for (auto& b : bad_init) (void)b;
  });
  CHECK(contains(msg, "worker_init_fn"));
  CHECK(contains(msg, "no GPU for this worker"));
}

namespace {
struct WhoLoads {
  int64_t size() const { return 16; }
  int get(int64_t) const {
    const auto info = data::get_worker_info();
    return info ? info->id * 100 + info->num_workers : -1;
  }
};
}  // namespace

TEST_CASE("DataLoader: worker_init_fn and get_worker_info") {
  std::mutex m;
  std::set<int> ids;
  data::DataLoader loader(WhoLoads{}, {.batch_size = 2, .num_workers = 3, .worker_init_fn = [&](int id) {
                                         std::lock_guard lock(m);
                                         ids.insert(id);
                                       }});
  for (auto& b : loader)
    for (int64_t v : values(b)) CHECK(v % 100 == 3);
  CHECK(ids == std::set<int>{0, 1, 2});
  CHECK(!data::get_worker_info());
  data::DataLoader inline_loader(WhoLoads{}, {.batch_size = 4});
  for (auto& b : inline_loader) CHECK(values(b)[0] == -1);
}

namespace {
struct SlowDataset {
  int64_t size() const { return 8; }
  int64_t get(int64_t i) const {
    if (i == 4) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return i;
  }
};
struct SlowishDataset {
  std::shared_ptr<std::atomic<int64_t>> gets = std::make_shared<std::atomic<int64_t>>(0);
  int64_t size() const { return 1000; }
  int64_t get(int64_t i) const {
    ++*gets;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return i;
  }
};
}  // namespace

TEST_CASE("DataLoader: timeout raises instead of hanging") {
  data::DataLoader loader(SlowDataset{}, {.batch_size = 2, .num_workers = 1, .timeout = 0.2});
  const auto t0 = std::chrono::steady_clock::now();
  int64_t batches = 0;
  const std::string msg = error_of([&] {
    for (auto& b : loader) {
      (void)b;
      ++batches;
    }
  });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(contains(msg, "timed out after 0.2 s waiting for batch 2"));
  CHECK(batches == 2);
  CHECK(waited < 1.2);  // did not wait for the slow sample
}

TEST_CASE("DataLoader: breaking out early stops the workers") {
  SlowishDataset ds;
  {
    data::DataLoader loader(ds, {.batch_size = 10, .num_workers = 2, .prefetch_factor = 2});
    int64_t n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& b : loader) {
      (void)b;
      if (++n == 3) break;
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(took < 1.0);
  }
  const int64_t after_break = *ds.gets;
  // 3 consumed + at most 2 * 2 prefetched + 2 in the workers' hands, each of 10 samples.
  CHECK(after_break <= 90);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(*ds.gets == after_break);  // nothing runs any more
}

namespace {

/// Stand-in page-locked allocator (host memory the test tracks) installed in the CUDA runtime hooks
/// for one scope, so the DataLoader's pin_memory path runs without a GPU.
struct FakePinnedMemory {
  static std::set<const void*>& blocks() {
    static std::set<const void*> b;
    return b;
  }
  static std::mutex& mutex() {  // the workers pin concurrently
    static std::mutex m;
    return m;
  }
  dl::detail::CudaRuntimeHooks saved = dl::detail::cuda_runtime_hooks();
  FakePinnedMemory() {
    auto& h = dl::detail::cuda_runtime_hooks();
    h.pinned_alloc = [](size_t n) -> void* {
      void* p = std::malloc(n ? n : 1);
      std::lock_guard lock(mutex());
      blocks().insert(p);
      return p;
    };
    h.pinned_free = [](void* p) {
      std::lock_guard lock(mutex());
      blocks().erase(p);
      std::free(p);
    };
    h.is_pinned = [](const void* p) {
      std::lock_guard lock(mutex());
      return blocks().count(p) > 0;
    };
    h.device_count = [] { return 1; };
  }
  ~FakePinnedMemory() { dl::detail::cuda_runtime_hooks() = saved; }
};

struct PinSample {
  Tensor<float> x;
  int64_t y;
  std::string name;
};
struct PinBase {
  int64_t id;
};
struct PinDerived : PinBase {  // fields in two classes: left alone (and it compiles)
  Tensor<float> x;
};

}  // namespace

TEST_CASE("DataLoader pin_memory: every tensor of each batch page-locked, values unchanged") {
  const auto x = dl::randn({10, 3});
  const auto y = dl::arange(10);
  {
    FakePinnedMemory fake;
    data::DataLoader loader(data::TensorDataset(x, y), {.batch_size = 4, .num_workers = 2, .pin_memory = true});
    int64_t seen = 0;
    for (auto& [bx, by] : loader) {
      CHECK(bx.is_pinned());
      CHECK(by.is_pinned());
      CHECK(dl::equal(bx, x.slice(0, seen, seen + bx.size(0))));
      seen += bx.size(0);
    }
    CHECK(seen == 10);
    // Pairs, vectors, maps and plain structs of tensors (strings and numbers left alone).
    std::pair<Tensor<float>, std::vector<Tensor<int64_t>>> nested{x, {y, y}};
    data::detail::pin_batch(nested);
    CHECK(nested.first.is_pinned());
    CHECK(nested.second[1].is_pinned());
    std::map<std::string, Tensor<float>> named{{"a", x}};
    data::detail::pin_batch(named);
    CHECK(named["a"].is_pinned());
    PinSample s{x, 3, "n"};
    data::detail::pin_batch(s);
    CHECK(s.x.is_pinned());
    CHECK(dl::equal(s.x, x));
    PinDerived derived;
    derived.x = x;
    data::detail::pin_batch(derived);
    CHECK(!derived.x.is_pinned());
  }
  CHECK(FakePinnedMemory::blocks().empty());  // every pinned batch went back
  // Without a GPU: a warning, and the batches as they were.
  CHECK(!data::detail::pinning_available());
  data::DataLoader plain(data::TensorDataset(x, y), {.batch_size = 4, .pin_memory = true});
  for (auto& [bx, by] : plain) CHECK(!bx.is_pinned());
}

// =============================================================================== transforms

TEST_CASE("ToTensor, layout helpers, Normalize, Compose") {
  Tensor<uint8_t> hwc = dl::empty<uint8_t>({2, 3, 2});
  for (int64_t k = 0; k < hwc.numel(); ++k) hwc.data()[k] = uint8_t(k * 20);
  Tensor<float> chw = T::ToTensor()(hwc);
  CHECK(chw.shape() == dl::Shape{2, 2, 3});
  CHECK(chw.at(1, 0, 2) == doctest::Approx(float(hwc.at(0, 2, 1)) / 255));
  Tensor<uint8_t> planar = T::hwc_to_chw(hwc);
  CHECK(planar.shape() == dl::Shape{2, 2, 3});
  CHECK(planar.at(1, 0, 2) == hwc.at(0, 2, 1));
  CHECK(values(T::chw_to_hwc(planar)) == values(hwc));
  CHECK(T::ToTensor()(dl::zeros<uint8_t>({4, 5})).shape() == dl::Shape{1, 4, 5});

  T::Normalize norm({0.5f, 0.25f}, {0.5f, 2.0f});
  Tensor<float> n = norm(chw);
  CHECK(n.at(0, 1, 1) == doctest::Approx((chw.at(0, 1, 1) - 0.5f) / 0.5f));
  CHECK(n.at(1, 0, 2) == doctest::Approx((chw.at(1, 0, 2) - 0.25f) / 2.0f));
  CHECK(contains(error_of([] { T::Normalize({0.5f}, {0.0f}); }), "std evaluated to zero"));
  CHECK(contains(error_of([&] { T::Normalize({0.1f, 0.2f, 0.3f}, {1.f, 1.f, 1.f})(chw); }), "3 means for an image with 2 channels"));

  auto chain = T::Compose(T::ToTensor(), T::Normalize({0.5f}, {0.5f}));
  Tensor<float> c = chain(hwc);
  CHECK(c.at(1, 1, 0) == doctest::Approx(2 * chw.at(1, 1, 0) - 1));
  static_assert(!std::is_invocable_v<decltype(chain), Tensor<float>>);  // ToTensor takes uint8 images
}

TEST_CASE("flips and crops") {
  Tensor<float> img = test_image(1, 3, 4);
  CHECK(T::functional::hflip(img).at(0, 1, 0) == img.at(0, 1, 3));
  CHECK(T::functional::vflip(img).at(0, 0, 2) == img.at(0, 2, 2));
  Tensor<float> padded = T::functional::pad(img, {1, 2}, 9.0f);
  CHECK(padded.shape() == dl::Shape{1, 7, 6});
  CHECK(padded.at(0, 0, 0) == 9.0f);
  CHECK(padded.at(0, 2, 1) == img.at(0, 0, 0));
  Tensor<float> window = T::functional::crop(img, 1, 1, 2, 2);
  CHECK(values(window) == std::vector<float>{img.at(0, 1, 1), img.at(0, 1, 2), img.at(0, 2, 1), img.at(0, 2, 2)});

  // RandomCrop: the window is the padded image's, its position seeded.
  dl::Generator g1(3), g2(3);
  T::RandomCrop crop(3, 1);
  Tensor<float> a = crop(img, &g1), b = crop(img, &g2);
  CHECK(a.shape() == dl::Shape{1, 3, 3});
  CHECK(values(a) == values(b));
  std::set<std::vector<float>> windows;
  for (int k = 0; k < 400; ++k) windows.insert(values(crop(img, &g1)));
  CHECK(windows.size() == 3 * 4);  // every position of a 3x3 window in the 5x6 padded image
  CHECK(T::RandomCrop({5, 6}, 0, true)(img, &g1).shape() == dl::Shape{1, 5, 6});
  CHECK(contains(error_of([&] { T::RandomCrop(5)(img); }), "required crop size (5, 5) is larger than input image size (3, 4)"));

  T::RandomHorizontalFlip never(0.0), always(1.0), half(0.5);
  CHECK(values(never(img)) == values(img));
  CHECK(values(always(img)) == values(T::functional::hflip(img)));
  int flipped = 0;
  for (int k = 0; k < 4000; ++k) flipped += values(half(img, &g1)) != values(img);
  CHECK(flipped > 1800);
  CHECK(flipped < 2200);
  CHECK(values(T::RandomVerticalFlip(1.0)(img)) == values(T::functional::vflip(img)));
}

TEST_CASE("Resize matches torch.nn.functional.interpolate") {
  Tensor<float> img = test_image(2, 5, 7);
  for (auto [h, w] : {std::pair{4, 9}, std::pair{8, 3}, std::pair{5, 7}, std::pair{2, 2}}) {
    CAPTURE(h);
    CAPTURE(w);
    check_close(T::Resize(h, w)(img), torch_ref("resize_bilinear_" + std::to_string(h) + "_" + std::to_string(w)), 1e-6);
    check_close(T::Resize(h, w, T::Interpolation::nearest)(img), torch_ref("resize_nearest_" + std::to_string(h) + "_" + std::to_string(w)), 0);
  }
  CHECK(T::Resize(10)(img).shape() == dl::Shape{2, 10, 14});  // the smaller edge becomes 10
  CHECK(T::Resize(10)(dl::zeros({1, 8, 4})).shape() == dl::Shape{1, 20, 10});
}

TEST_CASE("rotate matches torchvision's grid-sample rotation") {
  struct Case {
    double angle;
    T::Interpolation mode;
    float fill;
    const char* name;
  };
  for (auto [h, w] : {std::pair{6, 6}, std::pair{5, 7}}) {
    Tensor<float> img = test_image(2, h, w);
    const std::string size = std::to_string(h) + "x" + std::to_string(w);
    for (Case c : {Case{30, T::Interpolation::bilinear, 0.0f, "30_bilinear_0"}, Case{-45, T::Interpolation::bilinear, 0.5f, "-45_bilinear_0.5"},
                   Case{90, T::Interpolation::nearest, 0.0f, "90_nearest_0"}, Case{180, T::Interpolation::nearest, 0.25f, "180_nearest_0.25"}}) {
      CAPTURE(c.name);
      check_close(T::functional::rotate(img, c.angle, c.mode, c.fill), torch_ref("rotate_" + size + "_" + c.name), 1e-5);
    }
    // nearest at an arbitrary angle: a sampling point almost exactly between two source pixels
    // may round differently in float (PyTorch) and double (dl); allow a couple.
    const auto out = values(T::functional::rotate(img, 17.0, T::Interpolation::nearest, 0.0f));
    const auto& expected = torch_ref("rotate_" + size + "_17_nearest_0");
    int mismatches = 0;
    for (size_t k = 0; k < out.size(); ++k) mismatches += std::abs(out[k] - expected[k]) > 1e-6;
    CHECK(mismatches <= 2);
  }
  dl::Generator g1(4), g2(4);
  T::RandomRotation rot(30);
  Tensor<float> img = test_image(1, 6, 6);
  CHECK(values(rot(img, &g1)) == values(rot(img, &g2)));
  CHECK(values(T::RandomRotation(0)(img)) == values(img));
  CHECK(contains(error_of([] { T::RandomRotation(-3); }), "must be positive"));
}

TEST_CASE("random transforms draw from the sample's generator under a DataLoader") {
  Tensor<float> img = test_image(1, 6, 6);
  auto draw = [&](uint64_t key, int64_t first, int64_t j) {
    data::BatchSeed batch(key, first);
    data::SampleSeed sample(j);
    return values(T::RandomCrop(3)(img));
  };
  CHECK(draw(5, 10, 2) == draw(5, 11, 1));  // same epoch position, same draw
  std::set<std::vector<float>> crops;
  for (int64_t j = 0; j < 40; ++j) crops.insert(draw(5, 0, j));
  CHECK(crops.size() > 5);
  // Outside a loader, transforms use dl's default generator: dl::manual_seed makes them repeatable.
  dl::manual_seed(77);
  const auto a = values(T::RandomCrop(3)(img));
  dl::manual_seed(77);
  CHECK(values(T::RandomCrop(3)(img)) == a);
}

// =============================================================================== readers

TEST_CASE("MNIST reader: plain and gzip IDX files") {
  data::MNIST train(kData + "/mnist", true);
  CHECK(train.size() == 6);
  CHECK(train.data().shape() == dl::Shape{6, 5, 4});
  CHECK(train.classes().size() == 10);
  for (int64_t i = 0; i < 6; ++i) {
    auto [img, label] = train.get(i);
    CHECK(label == i % 10);
    CHECK(img.shape() == dl::Shape{1, 5, 4});
    CHECK(img.at(0, 3, 2) == doctest::Approx(pixel(i, 3, 2) / 255.0f));
    CHECK(int(train.data().at(i, 4, 1)) == pixel(i, 4, 1));
  }
  data::MNIST test(kData + "/mnist", false, T::Normalize({0.5f}, {0.25f}));  // the .gz files
  CHECK(test.size() == 3);
  CHECK(values(test.targets()) == std::vector<int64_t>{0, 3, 6});
  auto [img, label] = test.get(2);
  CHECK(label == 6);
  CHECK(img.at(0, 1, 1) == doctest::Approx((pixel(2, 1, 1) / 255.0f - 0.5f) / 0.25f));

  // get_batch (fused ToTensor + Normalize) equals default_collate of get(i)
  static_assert(data::batched_dataset<decltype(test)>);
  const int64_t idx[] = {2, 0, 1, 2};
  auto [fast_x, fast_y] = test.get_batch(idx);
  std::vector<decltype(test)::sample_type> samples;
  for (int64_t i : idx) samples.push_back(test.get(i));
  auto [slow_x, slow_y] = data::default_collate(samples);
  CHECK(values(fast_y) == values(slow_y));
  const auto fx = values(fast_x), sx = values(slow_x);
  for (size_t k = 0; k < fx.size(); ++k) CHECK(fx[k] == doctest::Approx(sx[k]).epsilon(1e-6));

  // torchvision chains that start with ToTensor receive the raw HWC image
  data::MNIST chained(kData + "/mnist", false, T::Compose(T::ToTensor(), T::Normalize({0.5f}, {0.25f})));
  static_assert(decltype(chained)::fusable);
  CHECK(std::get<0>(chained.get(2)).at(0, 1, 1) == doctest::Approx(img.at(0, 1, 1)));
  data::MNIST flipped(kData + "/mnist", false, T::RandomHorizontalFlip(1.0));
  static_assert(!decltype(flipped)::fusable && !data::batched_dataset<decltype(flipped)>);
  CHECK(std::get<0>(flipped.get(0)).at(0, 0, 0) == doctest::Approx(pixel(0, 0, 3) / 255.0f));

  // torchvision's directory layout root/FashionMNIST/raw
  data::FashionMNIST tv(kData + "/tvlayout", false);
  CHECK(values(tv.targets()) == std::vector<int64_t>{1, 2, 3});
  CHECK(tv.classes()[9] == "Ankle boot");
}

TEST_CASE("readers report missing, corrupt and truncated files clearly") {
  std::string msg = error_of([] { data::MNIST m(kData + "/no_such_dir"); });
  CHECK(contains(msg, "cannot find train-images-idx3-ubyte"));
  CHECK(contains(msg, "never downloads"));
  CHECK(contains(error_of([] { data::read_idx(kData + "/idx/missing_file"); }), "no such file"));
  msg = error_of([] { data::read_idx(kData + "/idx/bad_magic", 1); });
  CHECK(contains(msg, "bad magic number 0x00000803"));
  CHECK(contains(msg, "expected 0x00000801"));
  CHECK(contains(error_of([] { data::read_idx(kData + "/idx/not_idx", 3); }), "bad magic number 0x47494638"));
  msg = error_of([] { data::read_idx(kData + "/idx/truncated", 3); });
  CHECK(contains(msg, "truncated file"));
  CHECK(contains(msg, "announces shape [6, 5, 4] (120 bytes of data) but only 50 bytes follow"));
  CHECK(contains(error_of([] { data::read_idx(kData + "/idx/truncated_header", 3); }), "truncated file"));
  CHECK(contains(error_of([] { data::read_idx(kData + "/idx/huge_header", 3); }), "implausible IDX dimensions"));
  CHECK(contains(error_of([] { data::read_idx(kData + "/idx/truncated.gz", 3); }), "truncated file"));
  CHECK(contains(error_of([] { data::read_idx(kData + "/idx/corrupt.gz", 3); }), "corrupt compressed data"));
  CHECK(contains(error_of([] { data::MNIST m(kData + "/mnist_bad_label"); }), "label 1 in"));
  CHECK(contains(error_of([] { data::MNIST m(kData + "/mnist_mismatch"); }), "holds 3 images but"));
  CHECK(contains(error_of([] { data::MNIST m(kData + "/mnist_swapped"); }), "bad magic number 0x00000801"));
  CHECK(contains(error_of([] { data::CIFAR10 c(kData + "/cifar10_truncated", false); }), "not a positive multiple of the 3073-byte record"));
  CHECK(contains(error_of([] { data::CIFAR10 c(kData + "/cifar10_bad_label", false); }), "has label 11"));
  CHECK(contains(error_of([] { data::CIFAR100 c(kData + "/cifar10"); }), "cannot find train.bin"));
}

TEST_CASE("CIFAR-10 and CIFAR-100 binary readers") {
  data::CIFAR10 train(kData + "/cifar10", true);
  CHECK(train.size() == 5);
  CHECK(train.data().shape() == dl::Shape{5, 32, 32, 3});
  CHECK(values(train.targets()) == std::vector<int64_t>{0, 1, 2, 3, 4});
  data::CIFAR10 test(kData + "/cifar10", false);
  CHECK(values(test.targets()) == std::vector<int64_t>{3, 7});
  auto [img, label] = test.get(1);
  CHECK(label == 7);
  CHECK(img.shape() == dl::Shape{3, 32, 32});
  CHECK(img.at(2, 5, 9) == doctest::Approx(pixel(11, 5, 9, 2) / 255.0f));
  CHECK(int(test.data().at(0, 31, 30, 1)) == pixel(10, 31, 30, 1));
  CHECK(test.classes()[3] == "cat");

  data::CIFAR100 c100(kData + "/cifar100", true, T::Normalize({0.5f, 0.5f, 0.5f}, {0.2f, 0.2f, 0.2f}));
  CHECK(values(c100.targets()) == std::vector<int64_t>{30, 99});
  CHECK(values(c100.coarse_targets()) == std::vector<int64_t>{4, 19});
  CHECK(c100.classes().size() == 100);
  CHECK(c100.classes()[99] == "class99");
  data::DataLoader loader(c100, {.batch_size = 2});
  for (auto& [x, y] : loader) {
    CHECK(x.shape() == dl::Shape{2, 3, 32, 32});
    CHECK(x.at(1, 1, 0, 4) == doctest::Approx((pixel(1, 0, 4, 1) / 255.0f - 0.5f) / 0.2f).epsilon(1e-5));
  }
}

TEST_CASE("real Fashion-MNIST through the public API") {
  if (!std::filesystem::exists(kFashion / "train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: Fashion-MNIST is not installed in ", kFashion.string(), " (Debian package dataset-fashion-mnist)");
    return;
  }
  const auto& r = torch_ref("fashion_train");
  auto train = data::FashionMNIST(kFashion, /*train=*/true, data::transforms::Normalize({0.2860f}, {0.3530f}));
  CHECK(train.size() == int64_t(r[0]));
  CHECK(train.targets().data()[0] == int64_t(r[1]));
  CHECK(train.data()[0].to<int64_t>().sum().item() == int64_t(r[2]));
  CHECK(train.data()[59999].to<int64_t>().sum().item() == int64_t(r[3]));
  CHECK(train.targets().sum().item() == int64_t(r[4]));
  CHECK(data::FashionMNIST(kFashion, false).size() == 10000);

  data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 0});
  CHECK(loader.size() == 469);
  int64_t batches = 0, samples = 0;
  double sum = 0, sum_sq = 0;
  for (auto& [images, labels] : loader) {
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(images)>, Tensor<float>>);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(labels)>, Tensor<int64_t>>);
    if (batches++ < 468) {
      CHECK(images.shape() == dl::Shape{128, 1, 28, 28});
      CHECK(labels.shape() == dl::Shape{128});
    }
    samples += labels.size(0);
    const float* p = images.data();
    for (int64_t k = 0; k < images.numel(); ++k) {
      sum += p[k];
      sum_sq += double(p[k]) * p[k];
    }
  }
  CHECK(batches == 469);
  CHECK(samples == 60000);
  const double n = 60000.0 * 784, mean = sum / n, sd = std::sqrt(sum_sq / n - mean * mean);
  // Normalize with (0.2860, 0.3530) of the data's own mean r[5] and std r[6].
  CHECK(mean == doctest::Approx((r[5] - 0.2860) / 0.3530).epsilon(1e-3));
  CHECK(sd == doctest::Approx(r[6] / 0.3530).epsilon(1e-4));
}
