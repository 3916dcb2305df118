// SPDX-License-Identifier: Apache-2.0
// HostMemoryModel: regions, sparse storage, DECERR/SLVERR answers and the timing model.
// b_transport is called directly (no bus, no sc_start), so sc_time_stamp() stays 0.
#include "host_memory_model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace tpu::sim {
namespace {

// Not a global: constructing an sc_time creates the SystemC kernel (and its banner), which
// must not happen when ctest merely lists the tests.
sc_core::sc_time period() { return sc_core::sc_time(1, sc_core::SC_NS); }

struct Transport {
  tlm::tlm_response_status status;
  uint64_t delay_cycles;
};

Transport transport(HostMemoryModel& mem, tlm::tlm_command cmd, uint64_t addr,
                    std::vector<uint8_t>& data, std::vector<uint8_t>* enable = nullptr) {
  tlm::tlm_generic_payload t;
  t.set_command(cmd);
  t.set_address(addr);
  t.set_data_ptr(data.data());
  t.set_data_length(static_cast<unsigned>(data.size()));
  t.set_streaming_width(static_cast<unsigned>(data.size()));
  t.set_byte_enable_ptr(enable ? enable->data() : nullptr);
  t.set_byte_enable_length(enable ? static_cast<unsigned>(enable->size()) : 0);
  t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  mem.b_transport(t, delay);
  return {t.get_response_status(), static_cast<uint64_t>(delay / period() + 0.5)};
}

TEST(HostMemoryModel, HostAccessRoundTripsAndUnwrittenBytesReadZero) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x1000, 0x10000, "dram");
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  mem.write(0x1FFC, bytes);  // straddles a 4 KiB storage page
  EXPECT_EQ(mem.read(0x1FFC, bytes.size()), bytes);
  EXPECT_EQ(mem.read(0x5000, 4), std::vector<uint8_t>(4, 0));
}

TEST(HostMemoryModel, AccessMaySpanAdjacentRegionsButNotGaps) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x2000, 0x1000, "b");
  mem.add_region(0x1000, 0x1000, "a");  // out of order on purpose
  mem.add_region(0x4000, 0x1000, "c");
  EXPECT_NO_THROW(mem.write(0x1FF0, std::vector<uint8_t>(0x20, 0xAB)));
  EXPECT_THROW(mem.read(0x2FF0, 0x20), std::out_of_range);  // runs into the gap at 0x3000
  EXPECT_THROW(mem.write(0x0FFF, std::vector<uint8_t>(2, 0)), std::out_of_range);
  EXPECT_THROW(mem.read(0x5000, 1), std::out_of_range);
  EXPECT_EQ(mem.regions().size(), 3u);
  EXPECT_EQ(mem.regions()[0].name, "a");
}

TEST(HostMemoryModel, OverlappingOrEmptyRegionsAreRejected) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x1000, 0x1000, "a");
  EXPECT_THROW(mem.add_region(0x1800, 0x1000, "overlap"), std::invalid_argument);
  EXPECT_THROW(mem.add_region(0x0800, 0x1000, "overlap"), std::invalid_argument);
  EXPECT_THROW(mem.add_region(0x3000, 0, "empty"), std::invalid_argument);
  EXPECT_NO_THROW(mem.add_region(0x2000, 0x1000, "adjacent"));
}

TEST(HostMemoryModel, OutOfRegionHostAccessNamesTheRange) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x1000, 0x100, "cmd");
  try {
    mem.read(0x10F0, 0x20);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("0x10f0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'cmd'"), std::string::npos) << e.what();
  }
}

TEST(HostMemoryModel, BusAccessOutsideRegionsIsAddressErrorAndWritesNothing) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x1000, 0x100, "dram");
  std::vector<uint8_t> data(32, 0x5A);
  // Half inside, half outside: the whole transaction fails.
  EXPECT_EQ(transport(mem, tlm::TLM_WRITE_COMMAND, 0x10F0, data).status,
            tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(mem.read(0x10F0, 16), std::vector<uint8_t>(16, 0));
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x8000, data).status,
            tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(mem.stats().decode_errors, 2u);
}

TEST(HostMemoryModel, InjectedErrorIsGenericErrorAndWritesNothing) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x0, 0x10000, "dram");
  mem.inject_error(0x2000, 0x10);
  std::vector<uint8_t> data(64, 0x77);
  EXPECT_EQ(transport(mem, tlm::TLM_WRITE_COMMAND, 0x1FE0, data).status,
            tlm::TLM_GENERIC_ERROR_RESPONSE);  // overlaps the error range by 0x10 bytes
  EXPECT_EQ(mem.read(0x1FE0, 64), std::vector<uint8_t>(64, 0));
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x2010, data).status, tlm::TLM_OK_RESPONSE);
  mem.clear_injected_errors();
  EXPECT_EQ(transport(mem, tlm::TLM_WRITE_COMMAND, 0x1FE0, data).status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(mem.read(0x1FE0, 64), data);
  EXPECT_EQ(mem.stats().slave_errors, 1u);
}

TEST(HostMemoryModel, ByteEnablesMaskWrites) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x0, 0x1000, "dram");
  mem.write(0x100, std::vector<uint8_t>(4, 0x11));
  std::vector<uint8_t> data = {0xA0, 0xA1, 0xA2, 0xA3};
  std::vector<uint8_t> enable = {0xFF, 0x00, 0x00, 0xFF};
  EXPECT_EQ(transport(mem, tlm::TLM_WRITE_COMMAND, 0x100, data, &enable).status,
            tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(mem.read(0x100, 4), (std::vector<uint8_t>{0xA0, 0x11, 0x11, 0xA3}));
}

TEST(HostMemoryModel, BusReadReturnsStoredBytes) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x0, 0x1000, "dram");
  std::vector<uint8_t> pattern(48);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7);
  mem.write(0x40, pattern);
  std::vector<uint8_t> got(48, 0xEE);
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x40, got).status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(got, pattern);
  EXPECT_EQ(mem.stats().reads, 1u);
  EXPECT_EQ(mem.stats().read_bytes, 48u);
}

TEST(HostMemoryModel, DelayIsLatencyPlusTransferAndTransfersQueueOnThePort) {
  HostMemoryModel mem("mem", period(), HostMemoryTiming{20, 16});
  mem.add_region(0x0, 0x10000, "dram");
  std::vector<uint8_t> burst(256);  // 16 cycles at 16 B/cycle
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x0, burst).delay_cycles, 20u + 16u);
  // Issued at the same time: waits for the first transfer to leave the port.
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x100, burst).delay_cycles, 16u + 16u + 20u);
  std::vector<uint8_t> odd(17);  // rounds up to 2 cycles
  mem.clear();
  mem.set_timing({5, 16});
  mem.add_region(0x0, 0x100, "dram");
  EXPECT_EQ(transport(mem, tlm::TLM_WRITE_COMMAND, 0x0, odd).delay_cycles, 5u + 2u);
}

TEST(HostMemoryModel, UnlimitedBandwidthCostsOnlyLatency) {
  HostMemoryModel mem("mem", period(), HostMemoryTiming{7, 0});
  mem.add_region(0x0, 0x10000, "dram");
  std::vector<uint8_t> burst(4096);
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x0, burst).delay_cycles, 7u);
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x0, burst).delay_cycles, 7u);
  std::vector<uint8_t> bad(16);
  EXPECT_EQ(transport(mem, tlm::TLM_READ_COMMAND, 0x20000, bad).delay_cycles, 7u);
}

TEST(HostMemoryModel, ClearForgetsRegionsAndData) {
  HostMemoryModel mem("mem", period());
  mem.add_region(0x0, 0x100, "dram");
  mem.write(0x0, std::vector<uint8_t>(4, 9));
  mem.clear();
  EXPECT_TRUE(mem.regions().empty());
  mem.add_region(0x0, 0x100, "dram");
  EXPECT_EQ(mem.read(0x0, 4), std::vector<uint8_t>(4, 0));
}

}  // namespace
}  // namespace tpu::sim
