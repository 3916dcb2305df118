// SPDX-License-Identifier: Apache-2.0
// MPI for tpusim's sharding (sharding.h): built with Open MPI's C API when CMake found it
// (TPUSIM_HAVE_MPI), else the functions say how to get it.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "sharding.h"

#ifdef TPUSIM_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (the C++ bindings need libmpi_cxx)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace tpusim {

#ifdef TPUSIM_HAVE_MPI

namespace {
void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

tpu::ShardSpec mpi_shard() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
      throw std::runtime_error(
          "MPI_Init failed (started by mpirun / srun; expected a working MPI)");
    std::atexit(finalize);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return tpu::ShardSpec{uint32_t(rank), uint32_t(size)};
}

std::vector<std::string> mpi_gather(const std::string& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int len = int(mine.size());
  std::vector<int> lens(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    size_t total = 0;
    for (int r = 0; r < size; ++r) {
      displs[size_t(r)] = int(total);
      total += size_t(lens[size_t(r)]);
    }
    all.resize(total);
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(size_t(displs[size_t(r)]), size_t(lens[size_t(r)])));
  return out;
}

void mpi_abort_if_running(int code) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
}

#else

tpu::ShardSpec mpi_shard() {
  throw std::runtime_error(
      "started by mpirun / srun, but this tpusim was built without MPI (expected an MPI build: "
      "install libopenmpi-dev and reconfigure; or use --jobs J / --shard I/K)");
}

std::vector<std::string> mpi_gather(const std::string&) { return {}; }

void mpi_abort_if_running(int) {}

#endif

}  // namespace tpusim
