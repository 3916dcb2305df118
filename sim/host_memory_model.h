// SPDX-License-Identifier: Apache-2.0
// Host DRAM as seen by the chip's AXI4 master: a TLM-2.0 loosely-timed target.
//
// Memory exists only inside registered regions (base, size, name). A bus access that is not
// completely inside regions answers TLM_ADDRESS_ERROR_RESPONSE (the AXI bridge turns it into
// DECERR) and writes nothing; an access overlapping an injected error range answers
// TLM_GENERIC_ERROR_RESPONSE (SLVERR) and writes nothing. Storage is sparse (4 KiB pages
// allocated on first write, unwritten bytes read as 0), so a region may be far larger than
// what a test actually touches.
//
// Timing: one port per socket. `socket` is the chip's device-memory port (m_axi_*); a
// HostMemoryPort (below) is a further port on the same storage with its own timing (the
// training chip's VMEM port m_vaxi_*, docs/architecture.md "The VMEM port": HBM's role). On
// each port a transaction starts when that port is free, occupies it for
// ceil(bytes / bytes_per_cycle) cycles, and completes latency_cycles after that; the
// completion is returned as the b_transport delay annotation. b_transport never calls wait(),
// so it may be called from SC_METHODs (the AXI bridges do).
//
// The host side (driver, tests) uses read()/write(), which take no simulated time and
// ignore injected errors.
#pragma once

#include <tlm_utils/simple_target_socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <unordered_map>
#include <vector>

namespace tpu::sim {

struct HostMemoryTiming {
  uint32_t latency_cycles = 10;   // fixed cost of every transaction, in clock cycles
  uint32_t bytes_per_cycle = 16;  // port bandwidth; 0 = unlimited
};

class HostMemoryModel : public sc_core::sc_module {
 public:
  struct Region {
    uint64_t base;
    uint64_t size;
    std::string name;
  };
  struct Stats {
    uint64_t reads = 0, writes = 0;                // bus transactions that succeeded
    uint64_t read_bytes = 0, written_bytes = 0;    // bytes they moved
    uint64_t decode_errors = 0, slave_errors = 0;  // transactions answered with an error
  };

  // A port's timing and the time it is free again.
  struct Port {
    HostMemoryTiming timing;
    sc_core::sc_time free_at = sc_core::SC_ZERO_TIME;
  };

  tlm_utils::simple_target_socket<HostMemoryModel> socket;

  HostMemoryModel(sc_core::sc_module_name name, sc_core::sc_time clock_period,
                  HostMemoryTiming timing = {});

  // Regions may not overlap each other; throws std::invalid_argument otherwise.
  void add_region(uint64_t base, uint64_t size, const std::string& name);
  const std::vector<Region>& regions() const { return regions_; }
  // Bus accesses overlapping [base, base + size) answer SLVERR until cleared.
  void inject_error(uint64_t base, uint64_t size);
  void clear_injected_errors() { errors_.clear(); }
  // Forget every region, byte, injected error and statistic (timing is kept).
  void clear();

  // Host-side access, no simulated time. Throws std::out_of_range unless the whole range
  // lies inside regions.
  void read(uint64_t addr, void* dst, size_t len) const;
  void write(uint64_t addr, const void* src, size_t len);
  std::vector<uint8_t> read(uint64_t addr, size_t len) const;
  void write(uint64_t addr, const std::vector<uint8_t>& bytes) {
    write(addr, bytes.data(), bytes.size());
  }

  void set_timing(HostMemoryTiming timing) { port_.timing = timing; }
  HostMemoryTiming timing() const { return port_.timing; }
  const Stats& stats() const { return stats_; }

  // The TLM-2.0 blocking transport (public so unit tests can call it without a bus).
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    transport(port_, trans, delay);
  }
  // The same through another port (HostMemoryPort): its timing, its busy time.
  void transport(Port& port, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

 private:
  static constexpr uint64_t kPageBytes = 4096;

  bool inside_regions(uint64_t addr, uint64_t len) const;
  bool overlaps_injected_error(uint64_t addr, uint64_t len) const;
  std::string describe_regions() const;
  void copy_out(uint64_t addr, uint8_t* dst, size_t len) const;
  void copy_in(uint64_t addr, const uint8_t* src, size_t len, const uint8_t* byte_enable,
               size_t byte_enable_len);
  uint8_t* page_for_write(uint64_t page_index);

  sc_core::sc_time clock_period_;
  Port port_;
  std::vector<Region> regions_;  // sorted by base
  std::vector<Region> errors_;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
  Stats stats_;
};

// A further port on a HostMemoryModel's storage (regions, bytes, injected errors, statistics
// shared) with its own timing.
class HostMemoryPort : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<HostMemoryPort> socket;

  HostMemoryPort(sc_core::sc_module_name name, HostMemoryModel& memory, HostMemoryTiming timing)
      : sc_core::sc_module(name), socket("socket"), memory_(memory), port_{timing} {
    socket.register_b_transport(this, &HostMemoryPort::b_transport);
  }
  void set_timing(HostMemoryTiming timing) { port_.timing = timing; }
  HostMemoryTiming timing() const { return port_.timing; }
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    memory_.transport(port_, trans, delay);
  }

 private:
  HostMemoryModel& memory_;
  HostMemoryModel::Port port_;
};

}  // namespace tpu::sim
