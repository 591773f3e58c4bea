// The host side of CUDA evaluation, tested without a GPU: the kernel registry, the error of an
// unregistered expression, the iteration space reduce_into_device hands to the reduction kernel
// (checked by a stand-in launcher that walks it on the CPU exactly as the kernel does), and the
// operand layouts matmul hands to cuBLAS.
#include <doctest/doctest.h>

#include <dl/dl.hpp>

#include <string>

namespace {

using namespace dl::expr;

/// Does on the CPU what dl/cuda/kernels.hpp's reduce_kernel does on the GPU: out[m] combines the
/// elements m * red .. m * red + red - 1 of the (kept | reduced) space, each found by decomposing
/// its flat index and seeking the view there.
template <class R, class A, class View>
void reduce_like_the_kernel(const View& view, const Space& s, int64_t red, int64_t M, A* out, int) {
  const int nouter = s.nd - 1;
  const int64_t row = s.size[nouter];
  View v = view;
  for (int64_t m = 0; m < M; ++m) {
    A acc = R::identity();
    for (int64_t r = 0; r < red; ++r) {
      int64_t q = (m * red + r) / row;
      const int64_t j = (m * red + r) - q * row;
      int64_t idx[dl::kMaxDims];
      for (int d = nouter - 1; d >= 0; --d) {
        idx[d] = q % s.size[d];
        q /= s.size[d];
      }
      v.seek(idx, nouter);
      acc = R::combine(acc, static_cast<A>(v.template at<Access::Strided, false>(j)));
    }
    out[m] = acc;
  }
}

template <class R, class View>
void register_stand_in() {
  using A = typename View::value_type;
  dl::detail::KernelRegistry::instance().add(typeid(DeviceReduceKey<R, A, View>),
                                             reinterpret_cast<void*>(&reduce_like_the_kernel<R, A, View>));
}

/// reduce_into_device's result (through the stand-in) against the CPU reduction, for node n.
template <class R, class N>
void check_reduction(const N& n, dl::Dims dims) {
  using A = value_type_t<N>;
  const dl::Shape shape = shape_of(n);
  const uint32_t mask = dl::detail::reduce_mask(dims, shape.size(), "test");
  dl::Shape keep = shape;
  for (int d = 0; d < keep.size(); ++d)
    if ((mask >> d) & 1) keep[d] = 1;
  auto expected = dl::empty<A>(keep), got = dl::full<A>(keep, A(-12345));
  reduce_into<R, A>(lower(n, shape), shape, mask, expected.data());
  reduce_into_device<R, A>(lower(n, shape), shape, mask, got.data(), dl::Device(dl::kCUDA, 0));
  INFO("shape " << shape << ", dims " << dims);
  CHECK(dl::allclose(got, expected, 1e-5, 1e-6));
}

}  // namespace

TEST_CASE("kernel registry") {
  struct KeyA {};
  struct KeyB {};
  auto& reg = dl::detail::KernelRegistry::instance();
  static int target = 0;
  CHECK(reg.find(typeid(KeyA)) == nullptr);
  reg.add(typeid(KeyA), &target);
  CHECK(reg.find(typeid(KeyA)) == &target);
  CHECK(reg.find(typeid(KeyB)) == nullptr);
}

TEST_CASE("an expression no nvcc translation unit evaluated: a clear error") {
  const auto a = dl::randn({5});
  auto view = lower(as_node(a * 3.0f), a.shape());
  int64_t* inputs[1] = {};
  size_t n = 0;
  view.for_each_stride([&](int64_t* st) { inputs[n++] = st; });
  auto out = dl::empty({5});
  auto sink = out_view(out.data(), out.strides());
  int64_t* outputs[1] = {sink.st};
  const LoopPlan plan = plan_loop(a.shape(), std::span(inputs, n), outputs);
  std::string msg;
  try {
    run_loop_device(plan, AssignBody<decltype(view), float>{view, sink, false}, dl::Device(dl::kCUDA, 0));
  } catch (const dl::Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("no CUDA kernel for this expression in this program") != std::string::npos);
  CHECK(msg.find("a .cu file that includes <dl/cuda.hpp>") != std::string::npos);
  CHECK(msg.find("dl::expr::Mul") != std::string::npos);  // names the work
}

TEST_CASE("the iteration space of a device reduction") {
  dl::manual_seed(7);
  const auto x = dl::randn({6, 5, 4, 3});
  using V = view_t<Leaf<float>>;
  register_stand_in<SumReducer<float>, V>();
  register_stand_in<MaxReducer<float>, V>();
  for (const dl::Dims& dims : {dl::Dims{}, dl::Dims{0}, dl::Dims{1}, dl::Dims{3}, dl::Dims{0, 2}, dl::Dims{1, 3},
                               dl::Dims{0, 1, 2}, dl::Dims{1, 2, 3}}) {
    check_reduction<SumReducer<float>>(as_node(x), dims);
    check_reduction<MaxReducer<float>>(as_node(x), dims);
    // Strided inputs (a permuted view) and broadcast operands.
    check_reduction<SumReducer<float>>(as_node(x.permute({2, 0, 3, 1})), dims);
    check_reduction<SumReducer<float>>(as_node(x.slice(1, 0, 1).expand({6, 5, 4, 3})), dims);
  }
  // Fused elementwise input with a broadcast operand.
  const auto b = dl::randn({4, 1});
  const auto e = as_node(x * b + 1.0f);
  register_stand_in<SumReducer<float>, view_t<decltype(e)>>();
  check_reduction<SumReducer<float>>(e, {1, 3});
  check_reduction<SumReducer<float>>(e, {});
  // Size-1 and empty dims.
  const auto one = dl::randn({1, 7, 1});
  check_reduction<SumReducer<float>>(as_node(one), {1});
  check_reduction<SumReducer<float>>(as_node(one), {0, 2});
  const auto empty = dl::randn({3, 0});
  check_reduction<SumReducer<float>>(as_node(empty), {1});
}

TEST_CASE("operand layouts handed to cuBLAS") {
  using dl::detail::cublas_layout;
  int64_t rs = 8, cs = 1;
  CHECK(cublas_layout(4, 8, rs, cs));  // row-major
  rs = 1, cs = 4;
  CHECK(cublas_layout(4, 8, rs, cs));  // column-major
  rs = 16, cs = 2;
  CHECK(!cublas_layout(4, 8, rs, cs));  // every other column: copied first
  rs = 0, cs = 1;
  CHECK(!cublas_layout(4, 8, rs, cs));  // broadcast rows: copied first
  rs = 5, cs = 7;
  CHECK(cublas_layout(1, 1, rs, cs));  // a single element: any strides
  CHECK((rs == 1 && cs == 1));
  rs = 3, cs = 1;
  CHECK(cublas_layout(1, 8, rs, cs));  // one row: its stride does not matter
  CHECK(rs == 8);
  rs = 1, cs = 9;
  CHECK(cublas_layout(4, 1, rs, cs));  // one column
}
