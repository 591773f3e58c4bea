// Tests of dl/models.hpp against torchvision (tests/data/models/ and tests/data/models_ref.bin,
// written by tests/gen_models_reference.py): printouts, state-dict names and shapes, parameter
// counts, and outputs in eval and train mode with the same (det-filled) weights.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <dl/models.hpp>

#include "refbin.hpp"

namespace nn = dl::nn;
namespace models = dl::models;
using dl::Tensor;

namespace {

const refbin::File ref("models_ref.bin");


/// The generator's fill: state-dict entry i <- det(shape, 1000 + i) (x 0.1 for weights of rank > 1),
/// running variances |.| + 0.5, integer buffers 2.
void fill_det(nn::Module& m) {
  dl::StateDict sd;
  int64_t i = 0;
  for (const auto& [k, t] : m.state_dict()) {
    if (t.is<int64_t>()) {
      sd.insert(k, dl::full<int64_t>(t.shape(), 2));
    } else {
      Tensor<float> d = refbin::det<float>(t.shape(), 1000 + i);
      if (k.size() >= 11 && k.compare(k.size() - 11, 11, "running_var") == 0) d = Tensor<float>(dl::abs(d) + 0.5f);
      if (t.dim() > 1) d = Tensor<float>(d * 0.1f);
      sd.insert(k, d);
    }
    ++i;
  }
  m.load_state_dict(sd);
}

template <class M>
void check_model(const std::string& name, M& m, const dl::Shape& input) {
  INFO("model ", name);
  const auto p = refbin::sections("models/print.txt");
  std::ostringstream os;
  os << m;
  CHECK(os.str() == p.at(name));
  std::string keys;
  for (const auto& [k, t] : m.state_dict()) {
    std::ostringstream line;
    line << k << " " << t.shape();
    keys += (keys.empty() ? "" : "\n") + line.str();
  }
  CHECK(keys == p.at(name + "/keys"));
  int64_t count = 0;
  for (const auto& t : m.parameters()) count += t.numel();
  CHECK(count == ref.get(name + "/num_parameters").ints[0]);
  if (input.size() == 0) return;
  fill_det(m);
  const Tensor<float> x = refbin::det<float>(input, 7);
  m.eval();
  {
    dl::NoGradGuard no_grad;
    ref.check(Tensor<float>(m(x)), name + "/eval", 2e-4);
  }
  m.train();
  Tensor<float> y = m(x);
  ref.check(y, name + "/train", 2e-4);
  y.sum().backward();  // in-place ReLUs and residual additions leave a valid graph
  for (auto& [n, t] : m.named_parameters()) CHECK_MESSAGE(t.grad().defined(), n);
}

}  // namespace

TEST_CASE("resnet18, resnet34 and the CIFAR-style variant are torchvision's architecture") {
  auto r18 = models::resnet18();
  check_model("resnet18", r18, {1, 3, 64, 64});
  auto r34 = models::resnet34(100);
  check_model("resnet34", r34, {2, 3, 64, 64});
  auto cifar = models::resnet18_cifar(10);
  check_model("resnet18_cifar", cifar, {2, 3, 32, 32});
  int64_t count = 0;
  for (const auto& t : models::resnet18(1000).parameters()) count += t.numel();
  CHECK(count == 11689512);
  // torchvision's initialisation: He-normal (fan_out) convolutions, unit BatchNorm weights.
  auto fresh = models::resnet18();
  const double sd = fresh.layer3[0].as<models::BasicBlock>()->conv1.weight.std().item();
  CHECK(sd == doctest::Approx(std::sqrt(2.0 / (256 * 9))).epsilon(0.03));
  CHECK(fresh.layer3[0].as<models::BasicBlock>()->bn2.weight.sum().item() == 256.0f);
  auto zero = models::ResNet({2, 2, 2, 2}, {.zero_init_residual = true});
  CHECK(zero.layer1[1].as<models::BasicBlock>()->bn2.weight.abs().sum().item() == 0.0f);
  CHECK_THROWS_WITH_AS(models::ResNet({2, 2, 2}), doctest::Contains("expected 4 stages"), dl::Error);
}

TEST_CASE("vgg11_bn, lenet5 and mlp") {
  auto vgg = models::vgg11_bn();
  check_model("vgg11_bn", vgg, {});
  CHECK(vgg.classifier[0].as<nn::Linear>()->weight.std().item() == doctest::Approx(0.01).epsilon(0.02));
  auto lenet = models::lenet5();
  check_model("lenet5", lenet, {3, 1, 28, 28});
  auto mlp = models::mlp();
  check_model("mlp", mlp, {3, 1, 28, 28});
}
