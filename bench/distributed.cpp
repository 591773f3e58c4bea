// Distributed training costs, under mpirun (bench/distributed.py runs it beside PyTorch's gloo twin):
//   mpirun -np 2 build/bench/bench_distributed allreduce   dist::all_reduce against MPI_Allreduce called
//                                                          directly on the same buffer, 4 KB to 64 MB
//   mpirun -np 2 build/bench/bench_distributed ddp         one DDP training step of a 12.6 M-parameter MLP
//                                                          (buckets reduced during backward) against the
//                                                          same step with one blocking all-reduce after it
// Rounds interleave the contenders; medians are printed as "name value unit" lines by rank 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <dl/distributed.hpp>
#include <dl/nn.hpp>
#include <dl/nn/parallel/distributed.hpp>
#include <dl/optim.hpp>

namespace dist = dl::distributed;
namespace nn = dl::nn;
namespace F = dl::nn::functional;
using dl::Tensor;

namespace {
double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void bench_allreduce(int rounds) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int rank = dist::get_rank();
  if (rank == 0) std::printf("# all_reduce (SUM, float32), median of %d rounds; MPI_Allreduce on its own communicator\n", rounds);
  for (int64_t bytes = 4096; bytes <= (int64_t(64) << 20); bytes *= 4) {
    const int64_t n = bytes / 4;
    Tensor<float> t = dl::ones<float>({n});
    const int reps = bytes <= (1 << 20) ? 50 : bytes <= (16 << 20) ? 10 : 4;
    std::vector<double> dl_t, mpi_t;
    for (int r = 0; r < rounds; ++r) {
      dist::barrier();
      double t0 = now_us();
      for (int k = 0; k < reps; ++k) dist::all_reduce(t);
      dl_t.push_back((now_us() - t0) / reps);
      dist::barrier();
      t0 = now_us();
      for (int k = 0; k < reps; ++k) MPI_Allreduce(MPI_IN_PLACE, t.data(), int(n), MPI_FLOAT, MPI_SUM, comm);
      mpi_t.push_back((now_us() - t0) / reps);
    }
    // Agree on rank 0's figures (the slowest rank sets the pace anyway).
    const double d = median(dl_t), m = median(mpi_t);
    if (rank == 0)
      std::printf("allreduce_%lldB dl %.1f us  mpi %.1f us  overhead %+.1f%%\n", (long long)bytes, d, m, 100.0 * (d / m - 1));
  }
  MPI_Comm_free(&comm);
}

struct Mlp : nn::Module {
  nn::Linear<1024, 2048> fc1;
  nn::Linear<2048, 2048> fc2;
  nn::Linear<2048, 2048> fc3;
  nn::Linear<2048, 1024> fc4;
  nn::Linear<1024, 10> fc5;
  DL_MODULE(Mlp, fc1, fc2, fc3, fc4, fc5)
  Tensor<float> forward(const Tensor<float>& x) {
    return fc5(F::relu(fc4(F::relu(fc3(F::relu(fc2(F::relu(fc1(x)))))))));
  }
};

void bench_ddp(int rounds) {
  const int rank = dist::get_rank(), world = dist::get_world_size();
  dl::manual_seed(0);
  Mlp a, b, c;
  b.load_state_dict(a.state_dict());
  c.load_state_dict(a.state_dict());
  int64_t params = 0;
  for (auto& p : a.parameters()) params += p.numel();
  nn::parallel::DistributedDataParallel ddp(a), ddp16(c);
  ddp16.register_comm_hook(nn::parallel::comm_hooks::fp16_compress_hook);
  dl::optim::SGD opt_a(a.parameters(), {.lr = 0.01}), opt_b(b.parameters(), {.lr = 0.01}), opt_c(c.parameters(), {.lr = 0.01});
  const int64_t batch = 32;
  Tensor<float> x = dl::randn<float>({batch, 1024});
  Tensor<int64_t> y = dl::randint<int64_t>(0, 10, {batch});
  auto ddp_step = [&] {
    opt_a.zero_grad();
    F::cross_entropy(ddp(x), y).backward();
    opt_a.step();
  };
  auto fp16_step = [&] {  // the same through fp16_compress_hook: half the bytes, two conversions
    opt_c.zero_grad();
    F::cross_entropy(ddp16(x), y).backward();
    opt_c.step();
  };
  auto blocking_step = [&] {  // what libtorch users write: all-reduce once backward has finished
    opt_b.zero_grad();
    F::cross_entropy(b(x), y).backward();
    std::vector<Tensor<float>> grads;
    for (auto& p : b.parameters()) grads.push_back(p.grad());
    Tensor<float> flat = dist::flatten_dense_tensors(grads);
    dist::all_reduce(flat, {.op = dist::ReduceOp::AVG});
    auto back = dist::unflatten_dense_tensors(flat, grads);
    for (size_t i = 0; i < grads.size(); ++i) grads[i].copy_(back[i]);
    opt_b.step();
  };
  auto local_step = [&] {  // no communication at all: the floor
    opt_b.zero_grad();
    F::cross_entropy(b(x), y).backward();
    opt_b.step();
  };
  for (int k = 0; k < 3; ++k) {
    ddp_step();
    fp16_step();
    blocking_step();
  }
  std::vector<double> t_ddp, t_fp16, t_block, t_local;
  const int reps = 5;
  for (int r = 0; r < rounds; ++r) {
    dist::barrier();
    double t0 = now_us();
    for (int k = 0; k < reps; ++k) ddp_step();
    t_ddp.push_back((now_us() - t0) / reps / 1000);
    dist::barrier();
    t0 = now_us();
    for (int k = 0; k < reps; ++k) fp16_step();
    t_fp16.push_back((now_us() - t0) / reps / 1000);
    dist::barrier();
    t0 = now_us();
    for (int k = 0; k < reps; ++k) blocking_step();
    t_block.push_back((now_us() - t0) / reps / 1000);
    dist::barrier();
    t0 = now_us();
    for (int k = 0; k < reps; ++k) local_step();
    t_local.push_back((now_us() - t0) / reps / 1000);
  }
  if (rank == 0) {
    std::printf("# DDP step, MLP of %.1f M parameters, batch %lld per rank, %d ranks, %d threads each, %zu buckets\n",
                double(params) / 1e6, (long long)batch, world, dl::get_num_threads(), ddp.bucket_parameter_names().size());
    std::printf("ddp_step_overlapped %.2f ms\n", median(t_ddp));
    std::printf("ddp_step_fp16_compress_hook %.2f ms\n", median(t_fp16));
    std::printf("ddp_step_blocking_allreduce %.2f ms\n", median(t_block));
    std::printf("step_without_communication %.2f ms\n", median(t_local));
    const auto& st = ddp.stats();
    std::printf("# last step: first bucket started at %.2f ms, backward ended at %.2f ms\n",
                st.bucket_start_ms.empty() ? -1.0 : st.bucket_start_ms[0], st.backward_end_ms);
  }
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "allreduce";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  dist::init_process_group();
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  dl::set_num_threads(std::max(1, cores / dist::get_local_world_size()));
  if (mode == "allreduce") bench_allreduce(rounds);
  else bench_ddp(rounds);
  dist::destroy_process_group();
  return 0;
}
