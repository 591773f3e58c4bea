// A user's program built against dl three ways (Meson subproject, pkg-config, CMake package) by
// tests/packaging/check.sh. It touches every optional CPU backend, so a missing flag or library in
// a package file shows up as a compile or link error, or as a wrong answer here.
#include <dl/dl.hpp>

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / "dl_packaging_check";
  fs::create_directories(tmp);

  // CBLAS (OpenBLAS): a product forced through the BLAS backend agrees with the built-in GEMM.
  auto a = dl::randn({64, 48}), b = dl::randn({48, 32});
  const auto builtin = dl::matmul(a, b);
#if defined(DL_USE_CBLAS)
  dl::set_gemm_backend(dl::GemmBackend::blas);
  const auto blas = dl::matmul(a, b);
  dl::set_gemm_backend(dl::GemmBackend::builtin);
  if (!dl::allclose(blas, builtin, 1e-4, 1e-5)) return std::puts("cblas product differs"), 1;
  std::puts("cblas: ok");
#endif

  // LAPACKE: a solve whose residual is small.
#if defined(DL_HAVE_LAPACKE)
  const dl::Tensor<float> A = dl::randn({5, 5}) + dl::eye(5) * 5.0f, B = dl::randn({5, 2});
  const dl::Tensor<float> X = dl::linalg::solve(A, B);
  if (!dl::allclose(dl::matmul(A, X), B, 1e-4, 1e-4)) return std::puts("lapacke solve is wrong"), 1;
  std::puts("lapacke: ok");
#endif

  // A module trained for a step, saved as .pth (zip) and .safetensors, loaded back (libzip).
  auto net = dl::nn::Sequential(dl::nn::Linear<4, 8>(), dl::nn::ReLU(), dl::nn::Linear<8, 2>());
  dl::optim::SGD opt(net.parameters(), {.lr = 0.1});
  auto loss = dl::nn::functional::cross_entropy(net(dl::randn({16, 4})), dl::randint(0, 2, {16}));
  loss.backward();
  opt.step();
  dl::save(net.state_dict(), tmp / "net.safetensors");
#if defined(DL_HAVE_LIBZIP)
  dl::save(net.state_dict(), tmp / "net.pth");
  const auto sd = dl::load(tmp / "net.pth");
  std::puts("libzip: ok");
#else
  const auto sd = dl::load(tmp / "net.safetensors");
#endif
  net.load_state_dict(sd);

  // zlib: the real Fashion-MNIST labels, read from the .gz file.
#if defined(DL_HAVE_ZLIB)
  const fs::path data = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const auto labels = dl::data::read_idx(data / "t10k-labels-idx1-ubyte.gz", 1);
  if (labels.numel() != 10000) return std::puts("zlib: wrong label count"), 1;
  std::puts("zlib: ok");
#endif

  // OpenMP: more than one thread when the machine has them.
  std::printf("threads: %d\n", dl::get_num_threads());
  std::printf("packaging check passed\n");
  return 0;
}
