// SPDX-License-Identifier: Apache-2.0
// The distributed RTL pod against the one-process pod (docs/pod.md "The distributed pod"):
// the same programs on sim/pod_rtl.h without a transport (every chip in lock step) and over
// the ranks of a PodTransport (threads in tests/pod/pod_dist_test.cpp, MPI ranks in
// tests/pod/pod_mpi_test.cpp); every chip's outcome and stop cycle, the pod's cycles, link
// beats and deadlock count, the host bytes the local chips wrote and the whole pod's final VMEM
// must be identical.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collectives.h"
#include "pod_rtl_harness.h"

namespace pod_dist_test {

using namespace pod_rtl_test;  // NOLINT(build/namespaces)

struct Scenario {
  std::string name;
  tpu::PodTopology topo = tpu::PodTopology::ring(2);
  uint32_t latency = 1;
  std::vector<std::vector<tpu::Instruction>> programs;
  std::vector<std::vector<uint8_t>> data;  // at kData of each chip
  uint32_t vmem_rows = 0;                  // final VMEM rows compared (after a clean stop)
  uint64_t max_cycles = kCycleLimit;
};

struct Outcome {
  tpu::sim::PodRtlResult res;
  std::vector<std::vector<uint8_t>> out;    // [kOut, kOut + kOutSize) of the local chips
  std::vector<std::vector<uint32_t>> vmem;  // every chip's final VMEM rows
};

inline Outcome run_scenario(const Scenario& s, std::shared_ptr<tpu::sim::PodTransport> t) {
  std::unique_ptr<PodRtl> pod = t ? std::make_unique<PodRtl>(s.topo, s.latency, t, kMemSize)
                                  : std::make_unique<PodRtl>(s.topo, s.latency, kMemSize);
  for (uint32_t r = 0; r < s.topo.chips(); ++r) {
    if (pod->local(r)) std::memcpy(&pod->memory(r)[kData], s.data[r].data(), s.data[r].size());
  }
  Outcome o;
  o.res = pod->run(s.programs, s.max_cycles);
  o.out.resize(s.topo.chips());
  for (uint32_t r = 0; r < s.topo.chips(); ++r) {
    if (!pod->local(r)) continue;
    o.out[r].assign(pod->memory(r).begin() + kOut, pod->memory(r).begin() + kOut + kOutSize);
  }
  if (s.vmem_rows > 0 && o.res.status == tpu::sim::PodRtlStatus::Stopped) {
    o.vmem = pod->dump_vmem(0, s.vmem_rows, kVmemDump);
  }
  return o;
}

inline void expect_same(const Scenario& s, const Outcome& one, const Outcome& dist,
                        const std::string& where) {
  const std::string w = s.name + " (" + where + ")";
  EXPECT_EQ(dist.res.status, one.res.status) << w << ": " << dist.res.message;
  EXPECT_EQ(dist.res.message, one.res.message) << w;
  EXPECT_EQ(dist.res.cycles, one.res.cycles) << w;
  EXPECT_EQ(dist.res.link_beats, one.res.link_beats) << w;
  EXPECT_EQ(dist.res.deadlocks, one.res.deadlocks) << w;
  ASSERT_EQ(dist.res.chips.size(), one.res.chips.size()) << w;
  for (size_t r = 0; r < one.res.chips.size(); ++r) {
    const auto& a = one.res.chips[r];
    const auto& b = dist.res.chips[r];
    EXPECT_EQ(b.done, a.done) << w << ": chip " << r;
    EXPECT_EQ(b.err_code, a.err_code) << w << ": chip " << r;
    EXPECT_EQ(b.err_pc, a.err_pc) << w << ": chip " << r;
    EXPECT_EQ(b.cycles, a.cycles) << w << ": chip " << r;
    if (!dist.out[r].empty()) {
      EXPECT_TRUE(dist.out[r] == one.out[r]) << w << ": chip " << r;
    }
  }
  EXPECT_TRUE(dist.vmem == one.vmem) << w << ": final VMEM";
}

// The scenarios: all-reduces on a ring of 4 (latency 3: short windows) and a torus 2x2
// (latency 11), several messages per link on a ring of 3, a chip that faults (the others end
// ERR_ICI_DEADLOCK by the deadlock rule, whose firing cycle the windows must reproduce), a
// receive with nothing sent, and a run that hits its cycle limit.
inline std::vector<Scenario> scenarios() {
  std::vector<Scenario> out;
  std::mt19937 rng(31);
  const auto all_reduce = [&](const std::string& name, const tpu::PodTopology& topo,
                              uint32_t latency, uint32_t rows) {
    Scenario s;
    s.name = name;
    s.topo = topo;
    s.latency = latency;
    s.vmem_rows = rows;
    for (uint32_t r = 0; r < topo.chips(); ++r) {
      s.data.push_back(random_rows(rng, rows));
      tpu::ProgramBuilder b(chip_params());
      b.read_vmem(0, rows, kData);
      const std::vector<tpu::Instruction> ar =
          tpu::all_reduce_program(topo, chip_params(), r, 0, rows, tpu::CollectiveDtype::Fp32);
      for (size_t i = 0; i + 1 < ar.size(); ++i) b.append(ar[i]);  // without its halt
      b.write_vmem(0, rows, kOut);
      s.programs.push_back(b.finish());
    }
    out.push_back(std::move(s));
  };
  all_reduce("ring 4 all-reduce", tpu::PodTopology::ring(4), 3, 22);
  all_reduce("torus 2x2 all-reduce", tpu::PodTopology::torus(2, 2), 11, 13);
  {
    Scenario s;  // several messages per link, int32 adds and copies, FIFO order
    s.name = "ring 3 messages";
    s.topo = tpu::PodTopology::ring(3);
    s.latency = 20;
    s.vmem_rows = 24;
    for (uint32_t r = 0; r < 3; ++r) {
      s.data.push_back(random_rows(rng, 12));
      tpu::ProgramBuilder b(chip_params());
      b.read_vmem(0, 12, kData).read_vmem(128, 12, kData);
      for (uint32_t k = 0; k < 3; ++k) {
        b.ici_send(0, 4 * k, 4);
        b.ici_recv(1, 128 + 4 * k, 4, k == 1 ? tpu::IciReduce::IAdd : tpu::IciReduce::None);
      }
      b.write_vmem(128, 12, kOut);
      s.programs.push_back(b.finish());
    }
    out.push_back(std::move(s));
  }
  {
    Scenario s;  // chip 0 faults on a DMA outside its window; 1 and 2 wait on it
    s.name = "fault";
    s.topo = tpu::PodTopology::ring(4);
    s.latency = 40;
    for (int r = 0; r < 4; ++r) s.data.push_back(random_rows(rng, 4));
    tpu::ProgramBuilder a(chip_params()), b(chip_params()), c(chip_params()), d(chip_params());
    a.read_vmem(0, 4, kData).read_vmem(0, 1, 4 * kMemSize).ici_send(0, 0, 4);
    b.read_vmem(0, 4, kData).ici_recv(1, 0, 4).write_vmem(0, 4, kOut);
    c.read_vmem(0, 4, kData).ici_send(0, 0, 4).ici_recv(1, 8, 4).write_vmem(0, 4, kOut);
    d.read_vmem(0, 4, kData).ici_recv(1, 0, 4).ici_recv(0, 8, 4).write_vmem(0, 4, kOut);
    s.programs = {a.finish(), b.finish(), c.finish(), d.finish()};
    out.push_back(std::move(s));
  }
  {
    Scenario s;  // both receive, nobody sends: the deadlock rule
    s.name = "receive with nothing sent";
    s.topo = tpu::PodTopology::ring(2);
    s.latency = 5;
    for (int r = 0; r < 2; ++r) {
      s.data.push_back(random_rows(rng, 2));
      tpu::ProgramBuilder b(chip_params());
      b.read_vmem(0, 2, kData).ici_recv(0, 0, 2).write_vmem(0, 2, kOut);
      s.programs.push_back(b.finish());
    }
    out.push_back(std::move(s));
  }
  {
    Scenario s;
    s.name = "cycle limit";
    s.topo = tpu::PodTopology::ring(2);
    s.latency = 4;
    s.max_cycles = 50;
    for (int r = 0; r < 2; ++r) {
      s.data.push_back(random_rows(rng, 1));
      tpu::ProgramBuilder b(chip_params());
      b.read_vmem(0, 512, 0x2000).write_vmem(0, 512, 0x4000);
      s.programs.push_back(b.finish());
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace pod_dist_test
