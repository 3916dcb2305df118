// SPDX-License-Identifier: Apache-2.0
// One lane of the vector unit (issue 30): f(A, B) of the `vector` instruction for one 32-bit
// lane, docs/isa.md "vector (0x0E)". Combinational; the unit around it registers operands and
// results, walks the rows and wires the lanes for the cross-lane functions:
//   * element-wise fp (fadd, fsub, fsubr, fmul, fmax, fmin, flt, fle, feq; the tpu_fp_pkg
//     functions: DAZ, RNE, FTZ, canonical NaN), int32 (iadd ... ieq, wrapping) and unary
//     conversions (f2i, i2f, bf16: fp32 -> bf16 -> fp32) of a_i and b_i;
//   * reductions: lsum / lmax / lmin (a tree level: a_i = x[j], b_i = x[j + h]) and rsum /
//     rmax / rmin (a_i = the row A(o,i), b_i = the running value s) give fadd / fmax / fmin of
//     a_i and b_i, which are commutative under the contract;
//   * align returns a_i (the unit selects the source lane).
// func_ok_o is 0 for a func value the ISA does not define (the decoder faults those with
// ERR_FIELD before they reach a lane); y_o is then 0.
`include "tpu_assert.svh"

module tpu_vpu_lane (
  input  logic [5:0]  func_i,
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] y_o,
  output logic        func_ok_o
);

  // func codes (docs/isa.md `vector` table)
  localparam logic [5:0] FAdd  = 6'h00, FSub  = 6'h01, FSubr = 6'h02, FMul = 6'h03;
  localparam logic [5:0] FMax  = 6'h04, FMin  = 6'h05, FLt   = 6'h06, FLe  = 6'h07;
  localparam logic [5:0] FEq   = 6'h08;
  localparam logic [5:0] IAdd  = 6'h10, ISub  = 6'h11, ISubr = 6'h12, And  = 6'h13;
  localparam logic [5:0] Or    = 6'h14, Xor   = 6'h15, AndN  = 6'h16, Shl  = 6'h17;
  localparam logic [5:0] Shr   = 6'h18, Sra   = 6'h19, ILt   = 6'h1A, IEq  = 6'h1B;
  localparam logic [5:0] F2I   = 6'h20, I2F   = 6'h21, Bf16  = 6'h22;
  localparam logic [5:0] LSum  = 6'h28, LMax  = 6'h29, LMin  = 6'h2A;
  localparam logic [5:0] RSum  = 6'h30, RMax  = 6'h31, RMin  = 6'h32;
  localparam logic [5:0] Align = 6'h38;

  // A comparison result as a lane mask.
  function automatic logic [31:0] mask(logic t);
    mask = {32{t}};
  endfunction

  logic fp_result;  // func gives an fp32 result of the float arithmetic (for the assertion)
  logic [31:0] add_x, add_y, sum;  // the one fp32 adder: fadd, fsub, fsubr, lsum, rsum

  always_comb begin
    add_x = a_i;
    add_y = b_i;
    if (func_i == FSub) begin
      add_y = {~b_i[31], b_i[30:0]};                // a - b
    end else if (func_i == FSubr) begin
      add_x = b_i;                                  // b - a
      add_y = {~a_i[31], a_i[30:0]};
    end
  end

  // (The adder is evaluated in its case only: one adder all the same, and a simulator computes
  // it only for the functions that use it.)
  always_comb begin
    y_o       = 32'd0;
    sum       = 32'd0;
    func_ok_o = 1'b1;
    fp_result = 1'b0;
    unique case (func_i)
      FAdd, FSub, FSubr, LSum, RSum: begin
        sum = tpu_fp_pkg::fp32_add(add_x, add_y);
        y_o = sum;
        fp_result = 1'b1;
      end
      FMul:  begin y_o = tpu_fp_pkg::fp32_mul(a_i, b_i); fp_result = 1'b1; end
      FMax, LMax, RMax: begin y_o = tpu_fp_pkg::fp32_max(a_i, b_i); fp_result = 1'b1; end
      FMin, LMin, RMin: begin y_o = tpu_fp_pkg::fp32_min(a_i, b_i); fp_result = 1'b1; end
      FLt:   y_o = mask(tpu_fp_pkg::fp32_lt(a_i, b_i));
      FLe:   y_o = mask(tpu_fp_pkg::fp32_lt(a_i, b_i) || tpu_fp_pkg::fp32_eq(a_i, b_i));
      FEq:   y_o = mask(tpu_fp_pkg::fp32_eq(a_i, b_i));
      IAdd:  y_o = a_i + b_i;
      ISub:  y_o = a_i - b_i;
      ISubr: y_o = b_i - a_i;
      And:   y_o = a_i & b_i;
      Or:    y_o = a_i | b_i;
      Xor:   y_o = a_i ^ b_i;
      AndN:  y_o = a_i & ~b_i;
      Shl:   y_o = a_i << b_i[4:0];
      Shr:   y_o = a_i >> b_i[4:0];
      Sra:   y_o = 32'($signed(a_i) >>> b_i[4:0]);
      ILt:   y_o = mask($signed(a_i) < $signed(b_i));
      IEq:   y_o = mask(a_i == b_i);
      F2I:   y_o = tpu_fp_pkg::fp32_to_int32(a_i);
      I2F:   begin y_o = tpu_fp_pkg::int32_to_fp32(a_i); fp_result = 1'b1; end
      Bf16:  begin
        y_o = tpu_fp_pkg::bf16_to_fp32(tpu_fp_pkg::fp32_to_bf16(a_i));
        fp_result = 1'b1;
      end
      Align: y_o = a_i;
      default: func_ok_o = 1'b0;
    endcase
  end

  // The float arithmetic never leaves a non-canonical NaN or a subnormal.
  `TPU_ASSERT_COMB(VpuLaneFpCanonical, !fp_result ||
                   ((!tpu_fp_pkg::fp32_is_nan(y_o[30:0]) || y_o == tpu_fp_pkg::Fp32QNaN) &&
                    (y_o[30:23] != 8'd0 || y_o[22:0] == 23'd0)))
  `TPU_ASSERT_COMB(VpuLaneMask, !(func_i == FLt || func_i == FLe || func_i == FEq ||
                                 func_i == ILt || func_i == IEq) ||
                   y_o == 32'd0 || y_o == 32'hFFFF_FFFF)

endmodule
