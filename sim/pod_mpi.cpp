// SPDX-License-Identifier: Apache-2.0
// The distributed RTL pod's MPI transport (sim/pod_mpi.h).
#include "pod_mpi.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#define OMPI_SKIP_MPICXX 1  // the C API only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

namespace tpu::sim {
namespace {

constexpr int kTagSize = 31001, kTagData = 31002;
constexpr int kSpinsBeforeSleep = 2000;

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// Waits for every request; the ranks whose receive did not complete within `timeout` are
// named in PodRankLost.
void wait_all(std::vector<MPI_Request>& recv, std::vector<int>& recv_rank,
              std::vector<MPI_Request>& send, double timeout, uint32_t me, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  int spins = 0;
  for (;;) {
    int done_r = 0, done_s = 0;
    MPI_Testall(static_cast<int>(recv.size()), recv.data(), &done_r, MPI_STATUSES_IGNORE);
    MPI_Testall(static_cast<int>(send.size()), send.data(), &done_s, MPI_STATUSES_IGNORE);
    if (done_r && done_s) return;
    if (++spins > kSpinsBeforeSleep) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      if (std::chrono::steady_clock::now() > deadline) break;
    }
  }
  std::string lost;
  for (size_t i = 0; i < recv.size(); ++i) {
    int flag = 0;
    if (recv[i] != MPI_REQUEST_NULL) MPI_Test(&recv[i], &flag, MPI_STATUS_IGNORE);
    if (recv[i] != MPI_REQUEST_NULL && !flag) lost += " " + std::to_string(recv_rank[i]);
  }
  if (lost.empty()) lost = " (its sends did not complete)";
  throw PodRankLost("distributed pod: rank " + std::to_string(me) + " got no " + what +
                    " from rank" + lost + " within " + std::to_string(static_cast<int>(timeout)) +
                    " s (a rank died or hangs; TPU_POD_MPI_TIMEOUT sets the limit)");
}

}  // namespace

PodMpiTransport::PodMpiTransport() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
      throw std::runtime_error(
          "MPI_Init failed (expected a working MPI, started by mpirun / srun)");
    }
    std::atexit(finalize);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rank_ = static_cast<uint32_t>(rank);
  ranks_ = static_cast<uint32_t>(size);
  if (const char* t = std::getenv("TPU_POD_MPI_TIMEOUT")) {
    const double v = std::atof(t);
    if (v > 0) timeout_ = v;
  }
  if (const char* f = std::getenv("TPU_POD_MPI_FAULT")) {
    const std::string s(f);
    unsigned r = 0;
    unsigned long long k = 0;
    if (std::sscanf(s.c_str(), "%*[a-z]:%u:%llu", &r, &k) != 2 ||
        (s.rfind("exit:", 0) != 0 && s.rfind("hang:", 0) != 0)) {
      throw std::invalid_argument("TPU_POD_MPI_FAULT=" + s +
                                  " (expected exit:RANK:K or hang:RANK:K)");
    }
    if (r == rank_) {
      fault_ = s.rfind("exit:", 0) == 0 ? Fault::Exit : Fault::Hang;
      fault_at_ = k;
    }
  }
}

std::vector<std::string> PodMpiTransport::exchange(const std::vector<std::string>& to) {
  if (to.size() != ranks_) throw std::invalid_argument("PodMpiTransport: one message per rank");
  if (fault_ != Fault::None && exchanges_ == fault_at_) {
    std::fprintf(stderr,
                 "distributed pod: rank %u: injected fault (TPU_POD_MPI_FAULT) at exchange %llu\n",
                 rank_, static_cast<unsigned long long>(exchanges_));
    std::fflush(stderr);
    if (fault_ == Fault::Exit) _exit(3);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ++exchanges_;
  std::vector<std::string> from(ranks_);
  from[rank_] = to[rank_];
  if (ranks_ == 1) return from;
  std::vector<unsigned long long> out_size(ranks_), in_size(ranks_);
  std::vector<MPI_Request> recv, send;
  std::vector<int> recv_rank;
  for (uint32_t q = 0; q < ranks_; ++q) {
    if (q == rank_) continue;
    out_size[q] = to[q].size();
    recv.emplace_back();
    recv_rank.push_back(static_cast<int>(q));
    MPI_Irecv(&in_size[q], 1, MPI_UNSIGNED_LONG_LONG, static_cast<int>(q), kTagSize, MPI_COMM_WORLD,
              &recv.back());
    send.emplace_back();
    MPI_Isend(&out_size[q], 1, MPI_UNSIGNED_LONG_LONG, static_cast<int>(q), kTagSize,
              MPI_COMM_WORLD, &send.back());
  }
  wait_all(recv, recv_rank, send, timeout_, rank_, "link events");
  recv.clear();
  send.clear();
  recv_rank.clear();
  for (uint32_t q = 0; q < ranks_; ++q) {
    if (q == rank_) continue;
    if (in_size[q] > (1ull << 31))
      throw std::runtime_error("PodMpiTransport: a message over 2 GiB");
    from[q].resize(in_size[q]);
    if (in_size[q] > 0) {
      recv.emplace_back();
      recv_rank.push_back(static_cast<int>(q));
      MPI_Irecv(from[q].data(), static_cast<int>(in_size[q]), MPI_CHAR, static_cast<int>(q),
                kTagData, MPI_COMM_WORLD, &recv.back());
    }
    if (!to[q].empty()) {
      send.emplace_back();
      MPI_Isend(to[q].data(), static_cast<int>(to[q].size()), MPI_CHAR, static_cast<int>(q),
                kTagData, MPI_COMM_WORLD, &send.back());
    }
  }
  wait_all(recv, recv_rank, send, timeout_, rank_, "link events");
  return from;
}

void PodMpiTransport::abort_all(int code) {
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

}  // namespace tpu::sim
