// SPDX-License-Identifier: Apache-2.0
// The int8 MXU PE's product (rtl/tpu_mxu_product.svh) in both spellings, the simulated one
// (TPU_MXU_PRODUCT_SIM, what every Verilated tpu_mxu runs) and the synthesized one
// (TPU_MXU_PRODUCT_SYN, what scripts/synth.sh reads under SYNTHESIS), through
// tests/rtl/tpu_mxu_product.sv: for every lane (9-bit operand, buffer, unsigned: 2^11) and
// every value of the selected weight byte (2^8), with the other byte varied, both equal the
// C++ reference (operand as int9 times the byte as int8, or uint8 for an unsigned lane).
#include <gtest/gtest.h>

#include <cstdint>

#include "Vtpu_mxu_product.h"
#include "verilated.h"

namespace {

constexpr uint32_t kLanes = 1u << 11;
constexpr uint32_t kBytes = 1u << 8;

// The reference: the lane's operand (two's complement, 9 bits) times the weight byte its buffer
// bit selects, signed unless its unsigned bit is set; 32-bit two's complement.
uint32_t reference(uint32_t lane, uint32_t w) {
  const int32_t a = static_cast<int32_t>(lane >> 2) - (((lane >> 10) & 1) ? 512 : 0);
  const uint32_t byte = (lane & 2) ? (w >> 8) & 0xff : w & 0xff;
  const int32_t b =
      (lane & 1) ? static_cast<int32_t>(byte) : static_cast<int32_t>(static_cast<int8_t>(byte));
  return static_cast<uint32_t>(a * b);
}

TEST(MxuProduct, BothSpellingsMatchTheReferenceExhaustively) {
  VerilatedContext ctx;
  Vtpu_mxu_product dut(&ctx);
  uint64_t checked = 0;
  for (uint32_t lane = 0; lane < kLanes; ++lane) {
    for (uint32_t byte = 0; byte < kBytes; ++byte) {
      const uint32_t other = (byte * 37u + lane * 11u + 5u) & 0xffu;  // the unselected byte
      const uint32_t w = (lane & 2) ? (byte << 8) | other : (other << 8) | byte;
      dut.lane_i = static_cast<uint16_t>(lane);
      dut.w_i = static_cast<uint16_t>(w);
      dut.eval();
      const uint32_t want = reference(lane, w);
      ASSERT_EQ(dut.sim_o, want) << "TPU_MXU_PRODUCT_SIM lane=0x" << std::hex << lane << " w=0x"
                                 << w;
      ASSERT_EQ(dut.syn_o, want) << "TPU_MXU_PRODUCT_SYN lane=0x" << std::hex << lane << " w=0x"
                                 << w;
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<uint64_t>(kLanes) * kBytes);
}

}  // namespace
