// SPDX-License-Identifier: Apache-2.0
// ProgramBuilder: the depthwise instruction (docs/isa.md "Depthwise configuration").
#include <cinttypes>

#include "program.h"
#include "text.h"

namespace tpu {

using detail::format;

ProgramBuilder& ProgramBuilder::dwconv(const DwConv& in) {
  const char* m = "dwconv";
  check_not_halted(m);
  if (!params_.has_dw()) {
    fail(m, "",
         "needs the depthwise unit, but this chip has DwWidth = 0 (the chip would fault with "
         "ERR_OPCODE)");
  }
  for (const auto& [name, k] : {std::pair<const char*, uint8_t>{"kernel_h", in.kernel_h},
                                std::pair<const char*, uint8_t>{"kernel_w", in.kernel_w}}) {
    if (k < 1 || k > 3) fail(m, name, format("%s = %u is out of range (allowed 1..3)", name, k));
  }
  if (in.width < 1 || in.width > 4095 || in.height < 1 || in.height > 4095) {
    fail(m, "width",
         format("width = %u, height = %u (allowed 1..4095 each: 12-bit fields)", in.width,
                in.height));
  }
  if (in.pad_top >= in.kernel_h || in.pad_bottom >= in.kernel_h) {
    fail(m, "pad_top",
         format("pad_top = %u, pad_bottom = %u (allowed 0..%u: < kernel_h)", in.pad_top,
                in.pad_bottom, in.kernel_h - 1u));
  }
  if (in.pad_left >= in.kernel_w || in.pad_right >= in.kernel_w) {
    fail(m, "pad_left",
         format("pad_left = %u, pad_right = %u (allowed 0..%u: < kernel_w)", in.pad_left,
                in.pad_right, in.kernel_w - 1u));
  }
  if (in.padded_height() < in.kernel_h || in.padded_width() < in.kernel_w) {
    fail(m, "height",
         format("the padded image, %u x %u, is smaller than the %u x %u kernel (no output pixel)",
                in.padded_height(), in.padded_width(), in.kernel_h, in.kernel_w));
  }
  if (in.last_input_row() >= params_.ub_rows) {
    fail(m, "ub_addr",
         format("last input row ub_addr + (height-1)*ub_stride + width-1 = %" PRIu64
                " is out of range (allowed 0..%u: UbRows = %u)",
                in.last_input_row(), params_.ub_rows - 1, params_.ub_rows));
  }
  if (in.zero_point_row() >= params_.ub_rows) {
    fail(m, "w_addr",
         format("zero-point row w_addr + kh*kw = %" PRIu64 " is out of range (allowed 0..%u: "
                "UbRows = %u)",
                in.zero_point_row(), params_.ub_rows - 1, params_.ub_rows));
  }
  const uint64_t last_acc = in.acc_addr + in.output_pixels() - 1;
  if (last_acc >= params_.acc_rows) {
    fail(m, "acc_addr",
         format("acc_addr + Ho*Wo - 1 = %" PRIu64 " is out of range (allowed 0..%u: AccRows = %u)",
                last_acc, params_.acc_rows - 1, params_.acc_rows));
  }
  push(in, m);
  return *this;
}

}  // namespace tpu
