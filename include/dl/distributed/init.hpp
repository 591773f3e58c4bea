// dl/distributed/init.hpp — starting and ending a distributed run: init_process_group,
// destroy_process_group, new_group, get_local_rank.
//
//   // mpirun -np 4 ./train      (or srun, or mpirun --hostfile hosts across machines)
//   dist::init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(60)});
//   int rank = dist::get_rank(), world = dist::get_world_size();
//   dist::Group evens = dist::new_group({0, 2});   // every rank calls it
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "mpi.hpp"
#include "process_group.hpp"

namespace dl::distributed {

struct InitOptions {
  std::string backend = "mpi";  ///< "mpi" (CPU tensors); "nccl" (CUDA tensors) is not built yet
  /// How long one operation may wait for the other ranks before it fails with an error naming the
  /// ranks that did not take part (PyTorch's default: 30 minutes).
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  int world_size = -1;  ///< checked against mpirun's when given
  int rank = -1;        ///< checked against mpirun's when given
};

namespace detail {
/// Whether dl initialised MPI (and so finalises it), and how many MPI groups are alive.
struct MpiRuntime {
  bool ours = false;
  bool finalize_pending = false;
  ~MpiRuntime() { finalize(); }
  void finalize() {
    if (!ours) return;
    std::lock_guard lock(mpi_mutex());
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && !mpi_unclean()) MPI_Finalize();  // unclean: an abandoned operation would block it
    ours = false;
  }
};
inline MpiRuntime& mpi_runtime() {
  static MpiRuntime r;
  return r;
}
/// Shuts the default group down when the program ends without destroy_process_group (static
/// destruction runs this before the runtime above, which was constructed first).
struct DefaultGroupGuard {
  ~DefaultGroupGuard() {
    auto& slot = default_group_slot();
    if (slot.shutdown) slot.shutdown();
  }
};
}  // namespace detail

/// torch.distributed.init_process_group. The processes are started by mpirun (or srun) and find
/// each other through MPI; world size and rank come from it.
inline void init_process_group(const InitOptions& options = {}) {
  DL_CHECK(!is_initialized(), "dl::distributed::init_process_group: the default process group is already initialized");
  DL_CHECK(options.timeout.count() > 0, "dl::distributed::init_process_group: timeout must be positive, got ", options.timeout.count(), " ms");
  DL_CHECK(options.backend == "mpi",
           options.backend == "nccl"
               ? std::string("dl::distributed::init_process_group: the NCCL backend is not built yet; use {.backend = \"mpi\"} "
                             "(CPU tensors)")
               : dl::detail::cat("dl::distributed::init_process_group: unknown backend \"", options.backend, "\"; dl has \"mpi\""));
  auto& runtime = detail::mpi_runtime();  // constructed before the guard: destroyed after it
  static detail::DefaultGroupGuard guard;
  (void)guard;
  if (detail::ensure_mpi_initialized()) runtime.ours = true;
  int world = 0, rank = 0;
  {
    std::lock_guard lock(detail::mpi_mutex());
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  }
  DL_CHECK(options.world_size < 0 || options.world_size == world, "dl::distributed::init_process_group: world_size = ",
           options.world_size, " but mpirun started ", world, " processes");
  DL_CHECK(options.rank < 0 || options.rank == rank, "dl::distributed::init_process_group: rank = ", options.rank,
           " but MPI gave this process rank ", rank);
  MPI_Comm comm = MPI_COMM_NULL;
  {
    std::lock_guard lock(detail::mpi_mutex());
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  }
  std::vector<int> ranks(static_cast<size_t>(world));
  for (int i = 0; i < world; ++i) ranks[size_t(i)] = i;
  auto& slot = detail::default_group_slot();
  slot.group = std::make_shared<ProcessGroupMPI>(comm, std::move(ranks), options.timeout);
  slot.shutdown = [] {
    auto& s = detail::default_group_slot();
    s.group.reset();  // joins the communication thread after its queued operations
    s.shutdown = nullptr;
    detail::mpi_runtime().finalize();
  };
}

/// torch.distributed.destroy_process_group: finishes the default group's queued operations, frees
/// it and finalises MPI (when dl initialised it). Subgroups must be released before.
inline void destroy_process_group() {
  auto& slot = detail::default_group_slot();
  DL_CHECK(slot.group, "dl::distributed::destroy_process_group: no process group is initialized");
  slot.shutdown();
}

/// torch.distributed.new_group: a group of the given global ranks (every rank of the default group
/// calls it, with the same ranks). A rank not in `ranks` gets a group whose rank() is -1.
inline Group new_group(std::vector<int> ranks, std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  ProcessGroup& world = default_group();
  std::sort(ranks.begin(), ranks.end());
  DL_CHECK(!ranks.empty(), "dl::distributed::new_group: no ranks");
  DL_CHECK(std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end(), "dl::distributed::new_group: a rank is listed twice");
  for (int r : ranks)
    DL_CHECK(r >= 0 && r < world.size(), "dl::distributed::new_group: rank ", r, " is not in the world of ", world.size(), " processes");
  return world.new_subgroup(ranks, timeout.count() > 0 ? timeout : world.timeout());
}

/// This process's index among the processes of its machine (the GPU it should use): mpirun's
/// OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, or LOCAL_RANK (torchrun's); 0 when none is set.
inline int get_local_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

/// How many processes of this run share this machine (OMPI_COMM_WORLD_LOCAL_SIZE, SLURM_NTASKS_PER_NODE
/// or LOCAL_WORLD_SIZE; 1 when none is set): divide the cores among them with dl::set_num_threads.
inline int get_local_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE"})
    if (const char* s = std::getenv(v)) return std::max(1, std::atoi(s));
  return 1;
}

}  // namespace dl::distributed
