// SPDX-License-Identifier: Apache-2.0
// The RTL's assertions (rtl/tpu_assert.svh) are live in the Verilated builds: this drives
// tpu_axi_rd_arb, once legally and twice against a property, and checks that exactly the
// violating runs report an assertion failure (the ctest also checks the assertion's name).
// Exit 0 when the run behaved as its mode expects.
//
//   assert_test legal    a burst requested and returned: exits 0
//   assert_test orphan   an R beat with no burst outstanding: ArbOrphanBeat fires
//   assert_test hold     the client changes the AR address while ARVALID waits for
//                        ARREADY: ArbArHold fires
//   assert_test full     a client keeps requesting and the memory takes every AR but returns
//                        nothing: exactly MaxOutstanding (4) ARs go out, ARVALID stays low
//                        while the owner FIFO is full, the next AR follows the first RLAST;
//                        no assertion fires
#include <cstdio>
#include <cstring>
#include <memory>

#include "Vtpu_axi_rd_arb.h"
#include "verilated.h"

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "legal";
  auto ctx = std::make_unique<VerilatedContext>();
  ctx->commandArgs(argc, argv);
  ctx->fatalOnError(false);  // count failed assertions instead of stopping at the first
  auto m = std::make_unique<Vtpu_axi_rd_arb>(ctx.get());
  auto tick = [&] {
    m->clk_i = 0;
    m->eval();
    ctx->timeInc(1);
    m->clk_i = 1;
    m->eval();
    ctx->timeInc(1);
  };
  m->rst_ni = 0;
  m->c_ar_valid_i = 0;
  m->m_ar_ready_i = 0;
  m->m_r_valid_i = 0;
  m->m_r_last_i = 0;
  tick();
  tick();
  m->rst_ni = 1;
  tick();
  if (std::strcmp(mode, "orphan") == 0) {
    m->m_r_valid_i = 1;  // nothing was requested
    m->m_r_last_i = 1;
    tick();
    tick();
    if (ctx->errorCount() == 0) std::printf("assert_test: the orphan beat went unnoticed\n");
    return ctx->errorCount() > 0 ? 0 : 1;
  }
  if (std::strcmp(mode, "full") == 0) {
    constexpr int kMaxOutstanding = 4;  // tpu_axi_rd_arb's default, as tpu_core uses it
    m->c_ar_valid_i = 0b001;
    m->c_ar_addr_i[0] = 0x4000;
    m->c_ar_len_i = 0;  // one beat per burst
    m->m_ar_ready_i = 1;
    int taken = 0;
    auto cycle = [&] {  // counts the AR handshakes of this cycle, then clocks
      m->clk_i = 0;
      m->eval();
      if (m->m_ar_valid_o && m->m_ar_ready_i) ++taken;
      tick();
    };
    for (int i = 0; i < 20; ++i) cycle();
    m->eval();
    bool ok = true;
    if (taken != kMaxOutstanding || m->m_ar_valid_o) {
      std::printf(
          "assert_test: with %d bursts outstanding and none returned, %d ARs were taken "
          "and ARVALID is %d (expected %d and 0: the owner FIFO is full)\n",
          kMaxOutstanding, taken, int(m->m_ar_valid_o), kMaxOutstanding);
      ok = false;
    }
    m->m_r_valid_i = 1;  // the oldest burst returns: its owner leaves the FIFO
    m->m_r_last_i = 1;
    cycle();
    m->m_r_valid_i = 0;
    m->m_r_last_i = 0;
    for (int i = 0; i < 5; ++i) cycle();
    if (taken != kMaxOutstanding + 1) {
      std::printf("assert_test: after one burst returned, %d ARs were taken in all (expected %d)\n",
                  taken, kMaxOutstanding + 1);
      ok = false;
    }
    m->final();
    if (ctx->errorCount() != 0) {
      std::printf("assert_test: an assertion fired in the full run\n");
      ok = false;
    }
    return ok ? 0 : 1;
  }
  // Client 1 requests a 2-beat burst; ARREADY comes late (in `hold` mode the client changes
  // its address meanwhile, which AXI forbids).
  m->c_ar_valid_i = 0b010;
  m->c_ar_addr_i[1] = 0x1000;
  m->c_ar_len_i = 1 << 8;
  tick();
  m->c_ar_valid_i = 0;
  for (int i = 0; i < 3; ++i) tick();
  if (std::strcmp(mode, "hold") == 0) m->c_ar_addr_i[1] = 0x2000;
  m->m_ar_ready_i = 1;
  tick();
  m->m_ar_ready_i = 0;
  for (int beat = 0; beat < 2; ++beat) {
    m->m_r_valid_i = 1;
    m->m_r_last_i = beat == 1;
    tick();
  }
  m->m_r_valid_i = 0;
  tick();
  m->final();
  const bool legal = std::strcmp(mode, "legal") == 0;
  if (ctx->errorCount() == 0)
    std::printf("assert_test: %s run finished without an assertion\n", mode);
  return (ctx->errorCount() == 0) == legal ? 0 : 1;
}
