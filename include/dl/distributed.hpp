// dl/distributed.hpp — distributed training over MPI (torch.distributed, DistributedDataParallel,
// DistributedSampler). Link MPI: Meson `dependency('mpi', language: 'cpp')` (dl's `dl_distributed_dep`),
// or build with mpicxx. Start the program with `mpirun -np N ./train` (docs/distributed.md).
#pragma once

#include "distributed/collectives.hpp"
#include "distributed/functional.hpp"
#include "distributed/init.hpp"
#include "distributed/process_group.hpp"
