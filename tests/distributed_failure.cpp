// Failures in a distributed run end in errors, not hangs (run by meson under mpirun; see
// tests/meson.build and tests/distributed_killed.sh). One mode per run:
//   timeout   the last rank skips an all_reduce: every other rank's call fails after the group's
//             timeout with an error naming that rank; the late rank then calls it and the run ends
//             cleanly.
//   mismatch  DL_DISTRIBUTED_DEBUG=DETAIL: rank 1 passes a tensor of another size: an error on every rank.
//   killed    DDP training in which rank 1 kills itself at step 3 (tests/distributed_killed.sh
//             checks that the job ends, non-zero, well before its time limit).
#include <dl/distributed.hpp>
#include <dl/nn.hpp>
#include <dl/nn/parallel/distributed.hpp>
#include <dl/optim.hpp>

#include <csignal>
#include <cstring>
#include <iostream>
#include <thread>

namespace dist = dl::distributed;
namespace nn = dl::nn;
namespace F = dl::nn::functional;

namespace {
int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::cerr << "rank " << dist::get_rank() << ": FAILED: " << what << "\n";
  }
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Net : nn::Module {
  nn::Linear<16, 64> fc1;
  nn::Linear<64, 4> fc2;
  DL_MODULE(Net, fc1, fc2)
  dl::Tensor<float> forward(const dl::Tensor<float>& x) { return fc2(F::relu(fc1(x))); }
};

int run_timeout() {
  dist::init_process_group({.timeout = std::chrono::seconds(3)});
  const int r = dist::get_rank(), w = dist::get_world_size(), late = w - 1;
  dl::Tensor<float> t = dl::ones<float>({8});
  dist::all_reduce(t);  // collective #1, everyone
  if (r != late) {
    std::string msg;
    const auto start = std::chrono::steady_clock::now();
    try {
      dist::all_reduce(t);  // collective #2: the late rank is not there
    } catch (const dl::Error& e) {
      msg = e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "rank " << r << " got, after " << s << " s: " << msg << "\n";
    expect(contains(msg, "all_reduce (collective #2) on the group of ranks"), "the error names the operation");
    expect(contains(msg, "did not complete within 3000 ms"), "the error names the timeout");
    expect(contains(msg, "rank " + std::to_string(late) + " has not called it (its last collective on this group is #1 all_reduce"),
           "the error names the missing rank and where it is");
    expect(s >= 2.9 && s < 10, "the error comes after the timeout, not much later");
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));  // answers the others' questions meanwhile
    dist::all_reduce(t);  // late: completes the operation the others abandoned
  }
  dist::barrier();
  dist::destroy_process_group();
  return failures ? 1 : 0;
}

int run_mismatch() {
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  const int r = dist::get_rank();
  dl::Tensor<float> t = dl::ones<float>({r == 1 ? 5 : 4});
  std::string msg;
  try {
    dist::all_reduce(t);
  } catch (const dl::Error& e) {
    msg = e.what();
  }
  std::cout << "rank " << r << " got: " << msg << "\n";
  expect(contains(msg, "(DL_DISTRIBUTED_DEBUG=DETAIL): the ranks disagree"), "every rank sees the mismatch");
  expect(contains(msg, r == 1 ? "rank 0 passed 4 elements" : "rank 1 passed 5 elements"), "the error names the other rank's size");
  dist::destroy_process_group();
  return failures ? 1 : 0;
}

int run_killed() {
  dist::init_process_group({.timeout = std::chrono::seconds(10)});
  dl::manual_seed(0);
  Net net;
  nn::parallel::DistributedDataParallel ddp(net);
  dl::optim::SGD opt(net.parameters(), {.lr = 0.1});
  for (int step = 0; step < 1000; ++step) {
    if (step == 3 && dist::get_rank() == 1) {
      std::cout << "rank 1 kills itself at step 3" << std::endl;
      std::raise(SIGKILL);
    }
    opt.zero_grad();
    F::cross_entropy(ddp(dl::randn<float>({8, 16})), dl::randint<int64_t>(0, 4, {8})).backward();
    opt.step();
  }
  dist::destroy_process_group();
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "timeout") return run_timeout();
  if (mode == "mismatch") return run_mismatch();
  if (mode == "killed") return run_killed();
  std::cerr << "usage: distributed_failure timeout|mismatch|killed (under mpirun)\n";
  return 2;
}
