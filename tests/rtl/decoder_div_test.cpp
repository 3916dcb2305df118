// SPDX-License-Identifier: Apache-2.0
// The decoder's pooling division, exhaustively, through the RTL itself (issue 34): tpu_decoder
// divides the padded span minus the window (x = Hp - pool_k or Wp - pool_k) by the stride
// (d = pool_s) with a reciprocal table (div_stride) to get an activate's output size Ho / Wo,
// and from it the UB rows the activate writes. That footprint is what the hazard scoreboard
// and ERR_UB_RANGE use: a wrong table entry makes a following write_host read a pixel too
// early or lets a program run past the end of the UB. tests/driver/isa_test.cpp checks the
// C++ copy of the table; this test checks the RTL's table: every stride 1..15 with every
// dividend the fields allow (0 .. 4095 + 7 + 7 - 8 = 4101: the pads are below the window),
// once through the width (Wo) and once through the height (Ho), against x / d computed here.
// The wrapper tests/rtl/tpu_decoder_div.sv exposes the decoder's fault and UB footprint.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "Vtpu_decoder_div.h"
#include "isa.h"
#include "verilated.h"

namespace {

constexpr uint32_t kMaxWidth = 4095;  // 12-bit width / height fields
constexpr uint32_t kMaxPad = 7;       // 3-bit pads, each below the window
constexpr uint32_t kMaxStride = 15;   // 4-bit pool_s
// The largest dividend: the largest size plus both largest pads minus the smallest window
// that admits those pads.
constexpr uint32_t kMaxDividend = kMaxWidth + 2 * kMaxPad - (kMaxPad + 1);
constexpr uint32_t kErrField = static_cast<uint32_t>(tpu::ErrorCode::ERR_FIELD);
constexpr uint32_t kErrUbRange = static_cast<uint32_t>(tpu::ErrorCode::ERR_UB_RANGE);

class Decoder {
 public:
  Decoder()
      : ctx_(std::make_unique<VerilatedContext>()),
        m_(std::make_unique<Vtpu_decoder_div>(ctx_.get())) {}
  struct Result {
    uint32_t err;     // the decoder's fault code (tpu::ErrorCode)
    bool ub_wr;       // it has a UB write footprint
    uint64_t lo, hi;  // its rows
  };
  Result decode(const tpu::Activate& a) {
    const tpu::InstrBytes b = tpu::encode(tpu::Instruction(a));
    for (unsigned i = 0; i < 4; ++i) {
      m_->word_i[i] = uint32_t{b[4 * i]} | uint32_t{b[4 * i + 1]} << 8 |
                      uint32_t{b[4 * i + 2]} << 16 | uint32_t{b[4 * i + 3]} << 24;
    }
    m_->eval();
    return {m_->err_o, m_->ub_wr_valid_o == 1, m_->ub_wr_lo_o, m_->ub_wr_hi_o};
  }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_decoder_div> m_;
};

// A size, window and pads with size + pads - window = x (x <= kMaxDividend), the window as
// small as the size field allows.
struct Span {
  uint32_t size, pool_k, pad_lo, pad_hi;
};
Span span_for(uint32_t x) {
  if (x + 1 <= kMaxWidth) return {x + 1, 1, 0, 0};
  return {x + (kMaxPad + 1) - 2 * kMaxPad, kMaxPad + 1, kMaxPad, kMaxPad};
}

// The activate with dividend x along the width (along the height: the other span is the
// window, so it gives one output line / pixel). With ub_addr 0, its last UB row is x / d
// (width: ub_stride 0; height: ub_stride 1, Wo = 1).
tpu::Activate activate_for(uint32_t x, uint32_t d, bool along_height) {
  const Span s = span_for(x);
  tpu::Activate a;
  a.pool_k = static_cast<uint8_t>(s.pool_k);
  a.pool_s = static_cast<uint8_t>(d);
  if (along_height) {
    a.height = static_cast<uint16_t>(s.size);
    a.pad_top = static_cast<uint8_t>(s.pad_lo);
    a.pad_bottom = static_cast<uint8_t>(s.pad_hi);
    a.width = static_cast<uint16_t>(s.pool_k);
    a.ub_stride = 1;
  } else {
    a.width = static_cast<uint16_t>(s.size);
    a.pad_left = static_cast<uint8_t>(s.pad_lo);
    a.pad_right = static_cast<uint8_t>(s.pad_hi);
    a.height = static_cast<uint16_t>(s.pool_k);
    a.ub_stride = 0;
  }
  return a;
}

TEST(DecoderDivision, EveryStrideAndDividendGivesTheExactOutputSize) {
  static_assert(kMaxDividend == 4101, "docs: 4095 + 7 + 7 - 8");
  Decoder dec;
  uint64_t checked = 0;
  for (const bool along_height : {false, true}) {
    for (uint32_t d = 1; d <= kMaxStride; ++d) {
      unsigned wrong = 0;
      for (uint32_t x = 0; x <= kMaxDividend; ++x) {
        const tpu::Activate a = activate_for(x, d, along_height);
        const Decoder::Result r = dec.decode(a);
        // Spans of more than AccRows pixels fault ERR_ACC_RANGE, which is checked after the
        // UB range and needs the footprint as well: any code but ERR_FIELD / ERR_UB_RANGE.
        ASSERT_TRUE(r.ub_wr && r.err != kErrField && r.err != kErrUbRange)
            << "x " << x << " d " << d << (along_height ? " (height)" : " (width)") << ": err "
            << r.err;
        EXPECT_EQ(r.lo, 0u);
        if (r.hi != x / d && ++wrong <= 3) {
          ADD_FAILURE() << (along_height ? "Ho - 1" : "Wo - 1") << " of " << x << " / " << d
                        << ": decoder " << r.hi << ", exact " << x / d;
        }
        ++checked;
      }
      EXPECT_EQ(wrong, 0u) << "dividends with a wrong quotient for stride " << d
                           << (along_height ? " (height)" : " (width)");
    }
  }
  EXPECT_EQ(checked, 2u * kMaxStride * (kMaxDividend + 1));
}

// The same division decides ERR_UB_RANGE: an activate whose last row is the UB's last row is
// not ERR_UB_RANGE, one row more is, for every stride, with the output height from the table
// (UbRows = 8192 in the wrapper; ERR_ACC_RANGE, checked after the UB range, may apply).
TEST(DecoderDivision, UbRangeCheckUsesTheExactOutputHeight) {
  constexpr uint32_t kUbRows = 8192;
  Decoder dec;
  for (uint32_t d = 1; d <= kMaxStride; ++d) {
    for (uint32_t x : {kMaxDividend, kMaxDividend - 1, kMaxDividend - d, 2 * d - 1, 3 * d}) {
      tpu::Activate a = activate_for(x, d, true);
      const uint64_t ho = x / d + 1;
      // ub_addr so the last row (ub_addr + (Ho - 1) * stride) is exactly the UB's last row.
      a.ub_stride = 1;
      a.ub_addr = static_cast<uint32_t>(kUbRows - 1 - (ho - 1));
      Decoder::Result r = dec.decode(a);
      EXPECT_NE(r.err, kErrUbRange) << "last row on the UB's last: x " << x << " d " << d;
      EXPECT_EQ(r.hi, kUbRows - 1u) << "x " << x << " d " << d;
      a.ub_addr += 1;
      r = dec.decode(a);
      EXPECT_EQ(r.err, kErrUbRange) << "one row past the UB: x " << x << " d " << d;
    }
  }
}

}  // namespace
