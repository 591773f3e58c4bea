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

namespace {

/// Runs an indexed copy on the CPU the way dl/cuda/indexing.hpp's kernel does: element j of the
/// space through index_offsets. Returns the first bad index ("" when none), as the kernel reports it.
template <class T>
std::string run_like_the_kernel(dl::detail::IndexMode mode, const dl::detail::IndexGeometry& g, T* indexed, T* dense, T value) {
  for (int64_t j = 0; j < g.numel; ++j) {
    int64_t od = 0, oi = 0, bad = 0;
    int which = 0;
    if (!dl::detail::index_offsets(g, j, &od, &oi, &which, &bad))
      return dl::detail::cat("index ", bad, " is out of bounds for dimension ", g.dim_of[which], " with size ", g.bound[which]);
    if (mode == dl::detail::IndexMode::Gather) dense[od] = indexed[oi];
    else if (mode == dl::detail::IndexMode::Assign) indexed[oi] = dense ? dense[od] : value;
    else indexed[oi] += dense ? dense[od] : value;
  }
  return "";
}

}  // namespace

TEST_CASE("the addressing of the GPU's indexed copies (gather, scatter, index_*, x[idx...])") {
  using dl::detail::IndexMode;
  dl::manual_seed(21);
  const auto x = dl::randn({6, 5, 4});
  const auto xt = x.transpose(0, 2);  // strided operand
  const auto idx = dl::randint(-5, 5, {6, 3, 4});
  for (const auto& in : {x, xt.contiguous().transpose(0, 2)}) {
    // gather along each dim.
    for (int d = 0; d < 3; ++d) {
      const auto i = dl::randint(-in.size(d), in.size(d), {3, 2, 2});
      auto out = dl::empty({3, 2, 2});
      CHECK(run_like_the_kernel(IndexMode::Gather, dl::detail::dim_geometry(in, d, i, &out.strides()), in.data(), out.data(), 0.0f) == "");
      CHECK(dl::equal(out, dl::gather(in, d, i)));
    }
  }
  // scatter_add with a larger, strided source; scatter of a value.
  const auto src = dl::randn({4, 7, 6}).permute({2, 0, 1});  // [6, 4, 7]: larger than idx in dims 1, 2
  auto acc = x.clone();
  const auto i3 = idx.slice(1, 0, 3);
  CHECK(run_like_the_kernel(IndexMode::Add, dl::detail::dim_geometry(acc, 1, i3, &src.strides()), acc.data(), src.data(), 0.0f) == "");
  CHECK(dl::allclose(acc, dl::scatter_add(x, 1, i3, src), 1e-6, 1e-6));
  auto filled = x.clone();
  const auto i4 = dl::randint(-4, 4, {6, 3, 2});
  CHECK(run_like_the_kernel(IndexMode::Assign, dl::detail::dim_geometry(filled, 2, i4, nullptr), filled.data(),
                            static_cast<float*>(nullptr), 3.0f) == "");
  CHECK(dl::equal(filled, dl::scatter(x, 2, i4, 3.0f)));
  // index_select through a broadcast 1-d index, and index_add with a factor-free source.
  const auto sel = dl::tensor<int64_t>({3, 0, -1, 3});
  for (int d = 0; d < 3; ++d) {
    dl::Shape shape = x.shape();
    shape[d] = 4;
    auto out = dl::empty(shape);
    const auto over = dl::detail::slice_index_over(sel, d, shape);
    CHECK(run_like_the_kernel(IndexMode::Gather, dl::detail::dim_geometry(x, d, over, &out.strides()), x.data(), out.data(), 0.0f) == "");
    CHECK(dl::equal(out, dl::index_select(x, d, sel)));
    const auto rows = dl::randn(shape);
    auto added = x.clone();
    CHECK(run_like_the_kernel(IndexMode::Add, dl::detail::dim_geometry(added, d, over, &rows.strides()), added.data(), rows.data(), 0.0f) == "");
    CHECK(dl::allclose(added, dl::index_add(x, d, sel, rows), 1e-6, 1e-6));
  }
  // Advanced indexing: two broadcast index tensors over the leading dims of a permuted tensor.
  const auto xp = x.permute({1, 0, 2});  // [5, 6, 4]
  const auto i0 = dl::tensor<int64_t>({{0, 4}, {-1, 2}}), i1 = dl::tensor<int64_t>({1, -6});
  {
    dl::Shape bshape{2, 2};
    const auto expected = dl::index(xp, {i0, i1});
    auto out = dl::empty(expected.shape());
    CHECK(run_like_the_kernel(IndexMode::Gather, dl::detail::advanced_geometry(xp, {i0, i1}, bshape, &out.strides()), xp.data(),
                              out.data(), 0.0f) == "");
    CHECK(dl::equal(out, expected));
    const auto v = dl::randn({4}).expand({2, 2, 4});
    auto put = xp.contiguous();
    CHECK(run_like_the_kernel(IndexMode::Assign, dl::detail::advanced_geometry(put, {i0, i1}, bshape, &v.strides()), put.data(),
                              v.data(), 0.0f) == "");
    CHECK(dl::equal(put, dl::index_put(xp, {i0, i1}, v)));
  }
  // Bad indices are reported as the kernel reports them.
  auto out = dl::empty({6, 1, 4});
  CHECK(run_like_the_kernel(IndexMode::Gather, dl::detail::dim_geometry(x, 1, dl::full<int64_t>({6, 1, 4}, 5), &out.strides()),
                            x.data(), out.data(), 0.0f) == "index 5 is out of bounds for dimension 1 with size 5");
  {
    dl::Shape bshape{1};
    auto o = dl::empty({1, 4});
    CHECK(run_like_the_kernel(IndexMode::Gather,
                              dl::detail::advanced_geometry(x, {dl::tensor<int64_t>({0}), dl::tensor<int64_t>({-6})}, bshape, &o.strides()),
                              x.data(), o.data(), 0.0f) == "index -6 is out of bounds for dimension 1 with size 5");
  }
  // A GPU tensor without the CUDA index kernels in the program: a clear error (no GPU needed to
  // reach it: the hooks are checked first).
  std::string msg;
  try {
    (void)dl::detail::index_hooks_for(dl::Device(dl::kCUDA, 0));
  } catch (const dl::Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("the CUDA indexing kernels are not in this program") != std::string::npos);
}
