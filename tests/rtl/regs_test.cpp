// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_regs' interrupt status (RW1C): the host clears bits by writing 1s, the
// core sets them with its done / error pulses, and a pulse in the very cycle of a clearing
// write is not lost (docs/registers.csv, IRQ_STATUS); the 5-bit ERR_CODE capture and the
// pod registers PARAM_ICI_LINKS / ICI_LINK_UP (the block is built with IciLinks = 4).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "Vtpu_regs.h"
#include "verilated.h"

namespace {

constexpr uint32_t kIrqStatus = 0x030;
constexpr uint32_t kIrqEnable = 0x034;
constexpr uint32_t kErrCode = 0x028;
constexpr uint32_t kParamIciLinks = 0x038;
constexpr uint32_t kIciLinkUp = 0x03C;

class Regs {
 public:
  Regs() : ctx_(std::make_unique<VerilatedContext>()), m_(std::make_unique<Vtpu_regs>(ctx_.get())) {
    m_->rst_ni = 0;
    tick();
    tick();
    m_->rst_ni = 1;
    tick();
  }
  void tick() {
    m_->clk_i = 0;
    m_->eval();
    m_->clk_i = 1;
    m_->eval();
  }
  // A whole-word write taken in one cycle; `done` / `error` pulse in that same cycle.
  void write(uint32_t addr, uint32_t data, bool done = false, bool error = false) {
    m_->awaddr_i = addr;
    m_->awvalid_i = 1;
    m_->wdata_i = data;
    m_->wstrb_i = 0xF;
    m_->wvalid_i = 1;
    m_->bready_i = 1;
    m_->done_i = done;
    m_->error_i = error;
    m_->eval();
    EXPECT_TRUE(m_->awready_o && m_->wready_o);
    tick();
    m_->awvalid_i = 0;
    m_->wvalid_i = 0;
    m_->done_i = 0;
    m_->error_i = 0;
    tick();  // the write response
  }
  void set_link_up(uint32_t mask) { m_->ici_link_up_i = mask; }
  // An error pulse with its code.
  void fail(uint32_t code) {
    m_->err_code_i = code;
    pulse(false, true);
    m_->err_code_i = 0;
  }
  void pulse(bool done, bool error) {
    m_->done_i = done;
    m_->error_i = error;
    tick();
    m_->done_i = 0;
    m_->error_i = 0;
  }
  uint32_t read(uint32_t addr) {
    m_->araddr_i = addr;
    m_->arvalid_i = 1;
    m_->rready_i = 1;
    m_->eval();
    EXPECT_TRUE(m_->arready_o);
    tick();
    m_->arvalid_i = 0;
    EXPECT_TRUE(m_->rvalid_o);
    const uint32_t v = m_->rdata_o;
    tick();
    return v;
  }
  bool irq() {
    m_->eval();
    return m_->irq_o;
  }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_regs> m_;
};

TEST(RegsIrq, PulsesSetAndWritesOfOneClear) {
  Regs r;
  EXPECT_EQ(r.read(kIrqStatus), 0u);
  r.pulse(true, false);
  EXPECT_EQ(r.read(kIrqStatus), 1u);
  EXPECT_TRUE(r.irq());
  r.pulse(false, true);
  EXPECT_EQ(r.read(kIrqStatus), 3u);
  r.write(kIrqStatus, 2);  // clears error only
  EXPECT_EQ(r.read(kIrqStatus), 1u);
  r.write(kIrqStatus, 1);
  EXPECT_EQ(r.read(kIrqStatus), 0u);
  EXPECT_FALSE(r.irq());
}

TEST(RegsIrq, APulseInTheCycleOfAClearingWriteIsKept) {
  Regs r;
  r.pulse(true, true);
  ASSERT_EQ(r.read(kIrqStatus), 3u);
  // Clear both while the core reports done again: done must stay pending, error is cleared.
  r.write(kIrqStatus, 3, /*done=*/true, /*error=*/false);
  EXPECT_EQ(r.read(kIrqStatus), 1u);
  EXPECT_TRUE(r.irq());
  r.write(kIrqStatus, 1, /*done=*/false, /*error=*/true);
  EXPECT_EQ(r.read(kIrqStatus), 2u);
}

TEST(RegsIrq, EnableMasksTheLineNotTheStatus) {
  Regs r;
  r.write(kIrqEnable, 2);  // error only
  r.pulse(true, false);
  EXPECT_EQ(r.read(kIrqStatus), 1u);
  EXPECT_FALSE(r.irq());
  r.pulse(false, true);
  EXPECT_TRUE(r.irq());
}

// Codes 16-18 (the link instructions) need the fifth bit.
TEST(RegsErr, ErrCodeKeepsFiveBits) {
  Regs r;
  r.fail(18);
  EXPECT_EQ(r.read(kErrCode), 18u);
  r.fail(16);
  EXPECT_EQ(r.read(kErrCode), 16u);
  r.fail(15);
  EXPECT_EQ(r.read(kErrCode), 15u);
}

TEST(RegsIci, LinkCountAndLinkUpReadTheHardware) {
  Regs r;
  EXPECT_EQ(r.read(kParamIciLinks), 4u);
  EXPECT_EQ(r.read(kIciLinkUp), 0u);
  r.set_link_up(0x5);
  EXPECT_EQ(r.read(kIciLinkUp), 0x5u);
  r.set_link_up(0xF);
  EXPECT_EQ(r.read(kIciLinkUp), 0xFu);
}

}  // namespace
