// Tests for dl/profiler.hpp (events, nesting, self/total times, memory, key_averages table, Chrome
// trace), dl/autograd/anomaly.hpp (NaN/inf errors naming the node and the forward call site, the
// version-counter hint) and dl/deterministic.hpp.
#include <doctest/doctest.h>

#include <dl/deterministic.hpp>
#include <dl/nn.hpp>
#include <dl/ops/indexing.hpp>
#include <dl/ops/matmul.hpp>
#include <dl/optim.hpp>
#include <dl/profiler.hpp>
#include <dl/tensor.hpp>
#include <filesystem>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

using dl::Tensor;
namespace prof = dl::profiler;
namespace ag = dl::autograd;

namespace {
const prof::Event* find(const std::vector<prof::Event>& events, std::string_view name) {
  for (const auto& e : events)
    if (e.name == name) return &e;
  return nullptr;
}
int count(const std::vector<prof::Event>& events, std::string_view name) {
  int n = 0;
  for (const auto& e : events) n += e.name == name;
  return n;
}
const prof::EventAverage* row(const prof::EventAverages& avg, std::string_view name) {
  for (const auto& a : avg)
    if (a.name == name) return &a;
  return nullptr;
}
/// The message of the dl::Error that f throws ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("profiler: ops, nesting, self and total time, shapes") {
  Tensor<float> a = dl::randn({8, 16}), b = dl::randn({16, 4});
  prof::profile p({.record_shapes = true});
  {
    prof::record_function outer("outer");
    Tensor<float> c = dl::matmul(a, b);
    Tensor<float> d = c * 2.0f;
    Tensor<float> e = dl::sigmoid(c * 2.0f + 1.0f);
    { prof::record_function inner("inner"); Tensor<float> f = d + e; }
  }
  p.stop();
  const auto& ev = p.events();
  const prof::Event* outer = find(ev, "outer");
  const prof::Event* mm = find(ev, "aten::matmul");
  const prof::Event* gemm = find(ev, "dl::gemm");
  const prof::Event* mul = find(ev, "aten::mul");
  const prof::Event* add = find(ev, "aten::add");
  const prof::Event* inner = find(ev, "inner");
  REQUIRE(outer);
  REQUIRE(mm);
  REQUIRE(gemm);
  REQUIRE(mul);
  REQUIRE(add);
  REQUIRE(inner);
  CHECK(find(ev, "dl::fused[Sigmoid(Add(Mul(x0, 2), 1))]"));
  CHECK(outer->kind == prof::EventKind::user);
  CHECK(outer->parent == -1);
  CHECK(&ev[size_t(mm->parent)] == outer);
  CHECK(&ev[size_t(gemm->parent)] == mm);
  CHECK(&ev[size_t(add->parent)] == inner);
  CHECK(&ev[size_t(inner->parent)] == outer);
  // Shapes of the inputs; the matmul's kernel gets [M, K], [K, N].
  CHECK(mm->input_shapes == std::vector<dl::Shape>{{8, 16}, {16, 4}});
  CHECK(gemm->input_shapes == std::vector<dl::Shape>{{8, 16}, {16, 4}});
  CHECK(mul->input_shapes == std::vector<dl::Shape>{{8, 4}});
  CHECK(mm->device == dl::kCPU);
  // Times nest: a parent spans its children, self = total - children.
  int64_t children = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    CHECK(ev[i].end_ns >= ev[i].start_ns);
    CHECK(ev[i].self_ns >= 0);
    CHECK(ev[i].self_ns <= ev[i].duration_ns());
    if (ev[i].parent >= 0) {
      const prof::Event& par = ev[size_t(ev[i].parent)];
      CHECK(ev[i].start_ns >= par.start_ns);
      CHECK(ev[i].end_ns <= par.end_ns);
    }
    if (&ev[size_t(std::max(ev[i].parent, 0))] == outer && ev[i].parent >= 0) children += ev[i].duration_ns();
  }
  CHECK(outer->self_ns == outer->duration_ns() - children);
}

TEST_CASE("profiler: backward nodes, modules and optimizer steps") {
  dl::manual_seed(0);
  dl::nn::Linear fc(4, 3);
  dl::optim::SGD<float> opt(fc.parameters(), {.lr = 0.1});
  Tensor<float> x = dl::randn({2, 4});
  prof::profile p;
  Tensor<float> y = fc(x);
  Tensor<float> loss = dl::sum(y * y);
  loss.backward();
  opt.step();
  opt.zero_grad();
  const auto& ev = p.events();
  const prof::Event* module = find(ev, "nn.Module: Linear");
  const prof::Event* linear = find(ev, "aten::linear");
  REQUIRE(module);
  REQUIRE(linear);
  CHECK(module->kind == prof::EventKind::module);
  CHECK(&ev[size_t(linear->parent)] == module);
  CHECK(find(ev, "aten::sum"));
  CHECK(find(ev, "MulBackward"));
  CHECK(count(ev, "AccumulateGrad") == 2);  // weight and bias
  const prof::Event* step = find(ev, "Optimizer.step#SGD.step");
  REQUIRE(step);
  CHECK(step->kind == prof::EventKind::optimizer);
  CHECK(find(ev, "Optimizer.zero_grad#SGD.zero_grad"));
}

TEST_CASE("profiler: memory allocated and freed per op") {
  prof::profile p({.profile_memory = true});
  Tensor<float> kept;
  {
    prof::record_function r("alloc");
    kept = dl::empty<float>({1024, 256});  // 1 MiB, kept alive
  }
  {
    prof::record_function r("free");
    kept = Tensor<float>();
  }
  {
    prof::record_function r("temporary");
    Tensor<float> t = dl::ones<float>({1000});  // allocated and freed inside
  }
  p.stop();
  const auto& ev = p.events();
  const prof::Event* alloc = find(ev, "alloc");
  const prof::Event* freed = find(ev, "free");
  const prof::Event* temp = find(ev, "temporary");
  REQUIRE(alloc);
  REQUIRE(freed);
  REQUIRE(temp);
  CHECK(alloc->cpu_memory == (int64_t(1) << 20));
  CHECK(alloc->self_cpu_memory == (int64_t(1) << 20));
  CHECK(freed->self_cpu_memory == -(int64_t(1) << 20));
  CHECK(temp->cpu_memory == 0);
  bool saw_alloc = false, saw_free = false;
  for (const auto& m : p.memory_records()) {
    saw_alloc |= m.bytes == (int64_t(1) << 20);
    saw_free |= m.bytes == -(int64_t(1) << 20);
  }
  CHECK(saw_alloc);
  CHECK(saw_free);
  auto avg = p.key_averages();
  const std::string table = avg.table("cpu_memory_usage");
  CHECK(table.find("CPU Mem") != std::string::npos);
  CHECK(table.find("Self CPU Mem") != std::string::npos);
  CHECK(table.find("1.00 Mb") != std::string::npos);
  CHECK(table.find("-1.00 Mb") != std::string::npos);
}

TEST_CASE("profiler: key_averages and the table") {
  Tensor<float> a = dl::randn({4, 4}), b = dl::randn({2, 2});
  prof::profile p({.record_shapes = true});
  for (int i = 0; i < 3; ++i) Tensor<float> c = a * a;
  Tensor<float> d = b * b;
  Tensor<float> e = a + a;
  p.stop();
  auto avg = p.key_averages();
  REQUIRE(row(avg, "aten::mul"));
  CHECK(row(avg, "aten::mul")->count == 4);
  CHECK(row(avg, "aten::add")->count == 1);
  int64_t self_total = 0;
  for (const auto& r : avg) self_total += r.self_cpu_time_total_ns;
  CHECK(avg.self_cpu_time_total_ns == self_total);

  const std::string t = avg.table("count", 1);
  // PyTorch's layout: separator, right-aligned headers, separator, rows, separator, footer.
  std::istringstream lines(t);
  std::vector<std::string> l;
  for (std::string s; std::getline(lines, s);) l.push_back(s);
  REQUIRE(l.size() == 6);
  CHECK(l[0].starts_with("-------------"));
  CHECK(l[0] == l[2]);
  CHECK(l[0] == l[4]);
  CHECK(l[1].find("Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls") != std::string::npos);
  CHECK(l[1].find("CPU Mem") == std::string::npos);  // no memory columns without profile_memory
  CHECK(l[3].find("aten::mul") != std::string::npos);  // row_limit 1, the most called
  CHECK(l[3].ends_with("4  "));
  CHECK(l[5].starts_with("Self CPU time total: "));
  CHECK(l[0].size() == l[1].size());
  CHECK(l[1].size() == l[3].size());

  // Grouped by input shape: one row per (name, shapes).
  auto by_shape = p.key_averages(true);
  int mul_rows = 0;
  for (const auto& r : by_shape)
    if (r.name == "aten::mul") {
      ++mul_rows;
      CHECK(r.count == (r.input_shapes == std::vector<dl::Shape>{{4, 4}, {4, 4}} ? 3 : 1));
    }
  CHECK(mul_rows == 2);
  CHECK(by_shape.table("cpu_time_total").find("[[4, 4], [4, 4]]") != std::string::npos);
  CHECK(by_shape.table().find("Input Shapes") != std::string::npos);

  CHECK(error_of([&] { (void)avg.table("cuda_time"); }).find("unknown sort_by 'cuda_time'") != std::string::npos);
  prof::profile no_shapes;
  no_shapes.stop();
  CHECK(error_of([&] { (void)no_shapes.key_averages(true); }).find("record_shapes") != std::string::npos);
}

TEST_CASE("profiler: Chrome trace") {
  Tensor<float> a = dl::randn({3, 5}), b = dl::randn({5, 2});
  prof::profile p({.record_shapes = true, .profile_memory = true});
  {
    prof::record_function r("step \"1\"");
    Tensor<float> c = dl::matmul(a, b);
  }
  const std::string path = (std::filesystem::temp_directory_path() / "dl_test_profiler_trace.json").string();
  p.export_chrome_trace(path);
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  std::filesystem::remove(path);
  REQUIRE(j.contains("traceEvents"));
  bool saw_mm = false, saw_range = false, saw_memory = false;
  for (const auto& e : j["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    if (e["ph"] == "X") {
      CHECK(e["ts"].is_number());
      CHECK(e["dur"].is_number());
      CHECK(e["pid"].is_number());
      CHECK(e["tid"].is_number());
      if (e["name"] == "aten::matmul") {
        saw_mm = true;
        CHECK(e["cat"] == "cpu_op");
        CHECK(e["args"]["Input Dims"] == nlohmann::json::parse("[[3, 5], [5, 2]]"));
        CHECK(e["args"]["Device"] == "cpu");
      }
      if (e["name"] == "step \"1\"") {
        saw_range = true;
        CHECK(e["cat"] == "user_annotation");
      }
    } else if (e["ph"] == "i") {
      saw_memory |= e["name"] == "[memory]" && e["args"]["Bytes"] == 64;  // the [3, 2] result, one 64-byte block
    }
  }
  CHECK(saw_mm);
  CHECK(saw_range);
  CHECK(saw_memory);
}

TEST_CASE("profiler: start/stop, one at a time, nothing recorded when off") {
  prof::profile p(prof::ProfileOptions{}, prof::profile::deferred);
  Tensor<float> a = dl::ones<float>({2});
  { Tensor<float> b = a * a; }
  p.start();
  CHECK(error_of([] { prof::profile second; }).find("Profiler is already enabled") != std::string::npos);
  CHECK(error_of([&] { p.start(); }).find("already enabled") != std::string::npos);
  { Tensor<float> b = a + a; }
  p.stop();
  CHECK(error_of([&] { p.stop(); }).find("not running") != std::string::npos);
  { Tensor<float> b = a - a; }
  p.start();  // resumes: events add up
  { Tensor<float> b = a + a; }
  p.stop();
  CHECK(count(p.events(), "aten::mul") == 0);
  CHECK(count(p.events(), "aten::sub") == 0);
  CHECK(count(p.events(), "aten::add") == 2);
  CHECK(!prof::detail::active_recorder());
}

TEST_CASE("profiler: events of other threads") {
  prof::profile p;
  std::thread t([] {
    prof::record_function r("worker");
    Tensor<float> a = dl::ones<float>({4});
    Tensor<float> b = a * a;
  });
  t.join();
  { prof::record_function r("main"); }
  const auto& ev = p.events();
  REQUIRE(find(ev, "worker"));
  REQUIRE(find(ev, "main"));
  CHECK(find(ev, "worker")->thread != find(ev, "main")->thread);
  CHECK(find(ev, "aten::mul")->thread == find(ev, "worker")->thread);
}

TEST_CASE("anomaly mode: flags and scope") {
  CHECK(!ag::is_anomaly_enabled());
  {
    ag::DetectAnomaly anomaly;
    CHECK(ag::is_anomaly_enabled());
    CHECK(ag::is_anomaly_check_nan_enabled());
    {
      ag::DetectAnomaly no_nan(false);
      CHECK(!ag::is_anomaly_check_nan_enabled());
    }
    CHECK(ag::is_anomaly_check_nan_enabled());
  }
  CHECK(!ag::is_anomaly_enabled());
  ag::set_detect_anomaly(true);
  CHECK(ag::is_anomaly_enabled());
  ag::set_detect_anomaly(false);
  CHECK(!ag::is_anomaly_enabled());
}

TEST_CASE("anomaly mode: nan and inf gradients name the node and the forward call") {
  Tensor<float> x = dl::tensor<float>({-1.0f, 4.0f});
  x.requires_grad_();
  SUBCASE("off: no check") {
    Tensor<float> y = dl::sqrt(x);
    dl::sum(y).backward();
    CHECK(std::isnan(x.grad().data()[0]));
  }
  SUBCASE("nan") {
    ag::DetectAnomaly anomaly;
    Tensor<float> y = dl::sqrt(x); const int line = __LINE__;
    const std::string msg = error_of([&] { dl::sum(y).backward(); });
    CHECK(msg.starts_with("Function 'SqrtBackward' returned nan values in its 0th output."));
    CHECK(msg.find("profiler.cpp:" + std::to_string(line) + " in '") != std::string::npos);
    CHECK(msg.find("Error detected in SqrtBackward") != std::string::npos);
  }
  SUBCASE("inf") {
    ag::DetectAnomaly anomaly;
    Tensor<float> z = dl::tensor<float>({0.0f, 1.0f});
    z.requires_grad_();
    Tensor<float> y = dl::log(z); const int line = __LINE__;
    const std::string msg = error_of([&] { dl::sum(y).backward(); });
    CHECK(msg.starts_with("Function 'LogBackward' returned inf values in its 0th output."));
    CHECK(msg.find("profiler.cpp:" + std::to_string(line) + " in '") != std::string::npos);
  }
  SUBCASE("check_nan = false") {
    ag::DetectAnomaly anomaly(false);
    Tensor<float> y = dl::sqrt(x);
    CHECK(error_of([&] { dl::sum(y).backward(); }) == "");
  }
  SUBCASE("a fused expression is named by its node, the site is the assignment") {
    ag::DetectAnomaly anomaly;
    Tensor<float> y = dl::sqrt(x) * 2.0f + 1.0f; const int line = __LINE__;
    const std::string msg = error_of([&] { dl::sum(y).backward(); });
    CHECK(msg.starts_with("Function 'FusedBackward[Add(Mul(Sqrt(x0), 2), 1)]' returned nan values in its 0th output."));
    CHECK(msg.find("profiler.cpp:" + std::to_string(line) + " in '") != std::string::npos);
  }
}

TEST_CASE("anomaly mode: the version-counter error points to the forward call") {
  Tensor<float> a = dl::tensor<float>({1.0f, 2.0f});
  a.requires_grad_();
  SUBCASE("off: the hint") {
    Tensor<float> b = a * 2.0f;
    Tensor<float> c = b * b;
    b.mul_(2.0f);
    const std::string msg = error_of([&] { dl::sum(c).backward(); });
    CHECK(msg.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation"));
    CHECK(msg.find("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                   "dl::autograd::set_detect_anomaly(true).") != std::string::npos);
  }
  SUBCASE("on: the call site") {
    ag::DetectAnomaly anomaly;
    Tensor<float> b = a * 2.0f;
    Tensor<float> c = b * b; const int line = __LINE__;
    b.mul_(2.0f);
    const std::string msg = error_of([&] { dl::sum(c).backward(); });
    CHECK(msg.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation"));
    CHECK(msg.find("Error detected in MulBackward. The forward call that created it: ") != std::string::npos);
    CHECK(msg.find("profiler.cpp:" + std::to_string(line) + " in '") != std::string::npos);
    CHECK(msg.find("set_detect_anomaly(true)") == std::string::npos);
  }
}

TEST_CASE("anomaly mode: calls inside dl keep the user's call site") {
  ag::DetectAnomaly anomaly;
  Tensor<float> x = dl::tensor<float>({1.0f, 2.0f});
  x.requires_grad_();
  dl::nn::Linear fc(2, 2);
  Tensor<float> y = fc(x * 1.0f);
  // The node of a user's expression records the user's line, never one inside include/dl.
  Tensor<float> z = x * 3.0f; const int line = __LINE__;
  REQUIRE(z.grad_fn());
  CHECK(z.grad_fn()->forward_site().line() == uint32_t(line));
  CHECK(std::string_view(z.grad_fn()->forward_site().file_name()).ends_with("profiler.cpp"));
  CHECK(!ag::detail::is_dl_internal(z.grad_fn()->forward_site()));
  CHECK(y.grad_fn());
  CHECK(!ag::detail::is_dl_internal(y.grad_fn()->forward_site()));
  // Outside anomaly mode nothing is recorded.
  ag::set_detect_anomaly(false);
  Tensor<float> w = x * 3.0f;
  CHECK(w.grad_fn()->forward_site().line() == 0);
}

TEST_CASE("use_deterministic_algorithms") {
  CHECK(!dl::are_deterministic_algorithms_enabled());
  CHECK_NOTHROW(dl::detail::alert_not_deterministic("index_add_cuda_"));
  dl::use_deterministic_algorithms(true);
  CHECK(dl::are_deterministic_algorithms_enabled());
  CHECK(error_of([] { dl::detail::alert_not_deterministic("index_add_cuda_"); }) ==
        "index_add_cuda_ does not have a deterministic implementation, but you set "
        "'dl::use_deterministic_algorithms(true)'. You can turn off determinism just for this operation, or you can use "
        "the 'warn_only=true' option, if that's acceptable for your application.");
  dl::use_deterministic_algorithms(true, /*warn_only=*/true);
  CHECK(dl::is_deterministic_algorithms_warn_only_enabled());
  CHECK_NOTHROW(dl::detail::alert_not_deterministic("index_add_cuda_"));
  // The CPU ops it would concern are deterministic: reductions do not even depend on the thread
  // count, and accumulating index ops give the same bits every run.
  dl::manual_seed(1);
  Tensor<float> big = dl::randn({1 << 20});
  const int threads = dl::get_num_threads();
  dl::set_num_threads(1);
  const float one = dl::sum(big).item();
  dl::set_num_threads(std::max(threads, 4));
  const float many = dl::sum(big).item();
  dl::set_num_threads(threads);
  CHECK(one == many);
  Tensor<int64_t> index = dl::randint<int64_t>(0, 8, {4096});
  Tensor<float> src = dl::randn({4096, 3});
  Tensor<float> base = dl::zeros<float>({8, 3});
  Tensor<float> r1 = base.index_add(0, index, src), r2 = base.index_add(0, index, src);
  CHECK(std::equal(r1.data(), r1.data() + r1.numel(), r2.data()));
  dl::use_deterministic_algorithms(false);
  CHECK(!dl::are_deterministic_algorithms_enabled());
}
