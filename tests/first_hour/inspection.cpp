// The second program of the "first hour" (written from the README and docs/tutorial.md alone): look
// inside a model — print it, list its named parameters and buffers, watch a layer with a forward
// hook, profile a training step and read PyTorch's table, write a Chrome trace, and let anomaly
// detection name the operation that produced a NaN. Exits non-zero when a check fails.
//   usage: inspection OUTPUT_DIR
#include <dl/dl.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace nn = dl::nn;
namespace F = dl::nn::functional;
using dl::Tensor;

struct Net : nn::Module {
  nn::Conv2d<1, 8> conv{3, {.padding = 1}};
  nn::BatchNorm2d<8> bn;
  nn::Dropout drop{0.25};
  nn::Linear<8 * 14 * 14, 10> fc;
  DL_MODULE(Net, conv, bn, drop, fc)

  Net() { nn::check_sizes(conv, bn); }
  Tensor<float> forward(const Tensor<float>& x) {
    Tensor<float> y = F::max_pool2d(F::relu(bn(conv(x))), 2);
    return fc(drop(y.flatten(1)));
  }
};

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  dl::manual_seed(0);
  Net net;

  // Printing: PyTorch's module printout.
  std::ostringstream printed;
  printed << net;
  std::printf("%s\n", printed.str().c_str());
  check(contains(printed.str(), "(conv): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"), "the printout names each layer");
  check(contains(printed.str(), "(fc): Linear(in_features=1568, out_features=10, bias=True)"), "the printout shows the sizes");

  // Named parameters and buffers.
  int64_t count = 0;
  std::vector<std::string> names;
  for (auto& [name, p] : net.named_parameters()) {
    names.push_back(name);
    count += p.numel();
  }
  std::vector<std::string> buffers;
  for (auto& [name, b] : net.named_buffers()) buffers.push_back(name);
  std::printf("%lld parameters in %zu tensors\n", static_cast<long long>(count), names.size());
  check(names == std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias"},
        "named_parameters in PyTorch's order and names");
  check(count == 8 * 9 + 8 + 8 + 8 + 1568 * 10 + 10, "the parameter count");
  check(buffers == std::vector<std::string>{"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}, "named_buffers");

  // A forward hook on one layer: its output's shape and mean, every call.
  std::vector<dl::Shape> shapes;
  auto handle = net.bn.register_forward_hook([&](nn::Module&, const std::vector<dl::AnyTensor>&, dl::AnyTensor& out) {
    shapes.push_back(out.shape());
  });

  // A profiled training step.
  dl::optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
  Tensor<float> x = dl::randn({16, 1, 28, 28});
  Tensor<int64_t> y = dl::randint(0, 10, {16});
  dl::profiler::profile prof({.record_shapes = true});
  {
    Tensor<float> loss = F::cross_entropy(net(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  prof.stop();
  const std::string table = prof.key_averages().table("cpu_time_total", 12);
  std::printf("%s\n", table.c_str());
  check(shapes.size() == 1 && shapes[0] == dl::Shape{16, 8, 28, 28}, "the hook saw the batch-norm output once");
  // The 12 rows printed depend on timing (a busy machine preempts any op for milliseconds): the
  // convolution is looked up in the whole table.
  const std::string all_rows = prof.key_averages().table("cpu_time_total", 100);
  check(contains(all_rows, "aten::conv2d") && contains(table, "Self CPU"), "the profiler table lists the convolution");
  check(contains(all_rows, "nn.Module: Net"), "the profiler records module calls");
  const std::string trace = (std::filesystem::path(argv[1]) / "first_hour_trace.json").string();
  prof.export_chrome_trace(trace);
  std::ifstream in(trace);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(contains(json, "\"traceEvents\"") && contains(json, "aten::conv2d"), "the Chrome trace holds the events");

  handle.remove();
  net(x);
  check(shapes.size() == 1, "a removed hook is not called again");

  // Anomaly detection: the NaN's origin, by operation (a fused expression by its formula).
  std::string anomaly;
  try {
    dl::autograd::DetectAnomaly detect;
    Tensor<float> w = dl::full({3}, -1.0f).requires_grad_();
    Tensor<float> r = dl::sqrt(w * 2.0f);  // sqrt of a negative number: NaN, and a NaN gradient
    Tensor<float>(r.sum()).backward();
  } catch (const dl::Error& e) {
    anomaly = e.what();
  }
  std::printf("anomaly: %s\n", anomaly.c_str());
  check(contains(anomaly, "returned nan values") && contains(anomaly, "Sqrt"), "anomaly detection names the operation");
  check(contains(anomaly, "inspection.cpp"), "and the source line that created it");
  return failures == 0 ? 0 : 1;
}
