// SPDX-License-Identifier: Apache-2.0
// Weight-stationary N x N systolic matrix unit in bf16 (the training configuration's float
// array, issue 30): bf16 activations times bf16 weights, exact fp32 products, fp32 partial
// sums. Same structure, timing and control as the int8 tpu_mxu (see its header): activations
// enter from the left one N-element row per cycle with the diagonal skew, partial sums move
// down, a de-skew delay line realigns the columns, a row fed in cycle m leaves as one N x fp32
// vector in cycle m + 2N - 1 (Latency); double-buffered weights with the same shift / commit
// protocol and the same commit rules (tpu_weight_loader's).
//
// Summation order (docs/isa.md "Floating point", "Matrix unit summation order"): for column
// n the partial sum enters row 0 as +0.0 and row k does s = add(s, mul(a[k], w[k][n])), with
// tpu_fp_pkg::bf16_mul (exact, FTZ / overflow) and tpu_fp_pkg::fp32_add (RNE, FTZ, canonical
// NaN). Row 0 adds its product to +0.0 as well, so a product of -0 leaves row 0 as +0.
//
// A separate module, not a mode of tpu_mxu: the int8 array keeps its logic, its speed and its
// Verilated model unchanged, and a chip without float hardware does not instantiate this one.
// Like tpu_mxu, the whole array is one always_ff over 2-D arrays updated in place with blocking
// assignments in reverse loop order (BLKSEQ waived for this file in lint_waivers.vlt).
`include "tpu_assert.svh"

module tpu_mxu_fp #(
  parameter int unsigned N    = 16,
  parameter int unsigned TagW = 18
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // Activation row input.
  input  logic                   in_valid_i,
  input  logic [16*N-1:0]        in_data_i,      // bf16 element k in [16k +: 16]
  input  logic                   in_wbuf_i,      // weight buffer this row uses
  input  logic [TagW-1:0]        in_tag_i,       // side band returned with the result
  // Weight tile input (one tile row per shift, bottom row first), bf16.
  input  logic                   w_shift_i,
  input  logic [16*N-1:0]        w_row_i,
  input  logic                   w_commit_i,     // copy the shift registers into buffer w_buf_i
  input  logic                   w_buf_i,
  // Result row output.
  output logic                   out_valid_o,
  output logic [32*N-1:0]        out_sum_o,      // fp32 column c in [32c +: 32]
  output logic [TagW-1:0]        out_tag_o,
  // The same row's valid and tag one cycle earlier (the accumulators read the old row then).
  output logic                   pre_valid_o,
  output logic [TagW-1:0]        pre_tag_o
);
  localparam int unsigned Latency = 2 * N - 1;
  localparam int unsigned LaneW = 17;  // one activation lane: {bf16 operand, weight buffer}

  logic [15:0]        lane_q   [N][N];  // activation register of PE(r,c), moving right
  logic               lsel_q   [N][N];  // its weight buffer
  logic [31:0]        psum_q   [N][N];  // fp32 partial-sum register of PE(r,c), moving down
  logic [31:0]        wx_q     [N][N];  // weight (r,c) of buffer b in [16b +: 16]
  logic [15:0]        wsh_q    [N][N];  // [c][r]: weight shift register of PE(r,c), moving down
  logic [LaneW-1:0]   skew_q   [N][N];  // input skew: row k delays by k, stages 0 .. k-1
  logic [31:0]        deskew_q [N][N];  // output de-skew: column c by N-1-c, stages 0 .. N-2-c
  logic [15:0]        wskew_q  [N][N];  // [stage][c]: weight column skew, column c delays by c
  logic [3*N-1:0]     wctl_q;           // [3c +: 3]: {shift, commit, buf} as seen by column c+1
  logic [Latency-1:0] side_valid_q;
  logic [$clog2(Latency+1)-1:0] rows_live_q;  // as tpu_mxu: cycles the data path must move
  logic [$clog2(N+1)-1:0]       wctl_live_q;
  logic [TagW*Latency-1:0] side_tag_q;  // [TagW*i +: TagW]: the tag of the row i+1 cycles in

  // Reset clears only the control side band (as tpu_mxu); the datapath registers need no reset
  // because nothing reads them until a valid row or a commit has written them.
  logic [Latency-1:0]           side_valid_d;
  logic [3*N-1:0]               wctl_d;
  logic [$clog2(Latency+1)-1:0] rows_live_d;
  logic [$clog2(N+1)-1:0]       wctl_live_d;
  always_comb begin
    rows_live_d = rows_live_q;
    if (in_valid_i)              rows_live_d = ($clog2(Latency+1))'(Latency);
    else if (rows_live_q != '0)  rows_live_d = rows_live_q - 1'b1;
    wctl_live_d = wctl_live_q;
    if (w_shift_i || w_commit_i) wctl_live_d = ($clog2(N+1))'(N);
    else if (wctl_live_q != '0)  wctl_live_d = wctl_live_q - 1'b1;
    side_valid_d = side_valid_q;
    if (in_valid_i || rows_live_q != '0) begin
      side_valid_d = {side_valid_q[Latency-2:0], in_valid_i};
    end
    wctl_d = {wctl_q[3*(N-1)-1:0], {w_shift_i, w_commit_i, w_buf_i}};
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      side_valid_q <= '0;
      wctl_q       <= '0;
      rows_live_q  <= '0;
      wctl_live_q  <= '0;
    end else begin
      side_valid_q <= side_valid_d;
      wctl_q       <= wctl_d;
      rows_live_q  <= rows_live_d;
      wctl_live_q  <= wctl_live_d;
    end
  end

  // Data only, no reset: the rows' tags, read only with side_valid_q.
  always_ff @(posedge clk_i) begin
    if (in_valid_i || rows_live_q != '0) begin
      side_tag_q <= {side_tag_q[TagW*(Latency-1)-1:0], in_tag_i};
    end
  end

  // The array (blocking assignments, reverse order: see tpu_mxu).
  always_ff @(posedge clk_i) begin
    if (in_valid_i || rows_live_q != '0) begin
      for (int unsigned j = N - 2; j >= 1; j--) begin
        for (int unsigned c = 0; c + j <= N - 2; c++) begin
          deskew_q[j][c] = deskew_q[j-1][c];
        end
      end
      for (int unsigned c = 0; c < N - 1; c++) begin
        deskew_q[0][c] = psum_q[N-1][c];
      end

      // PE(r,c): psum_q[r][c] <= add(above, mul(a, w)), a = the lane's bf16 operand, w =
      // weight (r,c) of the lane's buffer; row 0 adds to +0.0.
      for (int unsigned r = N - 1; r >= 1; r--) begin
        for (int unsigned c = N - 1; c >= 1; c--) begin
          psum_q[r][c] = tpu_fp_pkg::fp32_add(psum_q[r-1][c], tpu_fp_pkg::bf16_mul(
                             lane_q[r][c-1], wx_q[r][c][{lsel_q[r][c-1], 4'b0000} +: 16]));
          lane_q[r][c] = lane_q[r][c-1];
          lsel_q[r][c] = lsel_q[r][c-1];
        end
        lane_q[r][0] = skew_q[r-1][r][LaneW-1:1];
        lsel_q[r][0] = skew_q[r-1][r][0];
        psum_q[r][0] = tpu_fp_pkg::fp32_add(psum_q[r-1][0], tpu_fp_pkg::bf16_mul(
                           lane_q[r][0], wx_q[r][0][{lsel_q[r][0], 4'b0000} +: 16]));
      end
      for (int unsigned c = N - 1; c >= 1; c--) begin
        psum_q[0][c] = tpu_fp_pkg::fp32_add(32'd0, tpu_fp_pkg::bf16_mul(
                           lane_q[0][c-1], wx_q[0][c][{lsel_q[0][c-1], 4'b0000} +: 16]));
        lane_q[0][c] = lane_q[0][c-1];
        lsel_q[0][c] = lsel_q[0][c-1];
      end
      lane_q[0][0] = in_data_i[15:0];
      lsel_q[0][0] = in_wbuf_i;
      psum_q[0][0] = tpu_fp_pkg::fp32_add(32'd0, tpu_fp_pkg::bf16_mul(
                         lane_q[0][0], wx_q[0][0][{lsel_q[0][0], 4'b0000} +: 16]));

      for (int unsigned j = N - 2; j >= 1; j--) begin
        for (int unsigned k = j + 1; k < N; k++) begin
          skew_q[j][k] = skew_q[j-1][k];
        end
      end
      for (int unsigned k = 1; k < N; k++) begin
        skew_q[0][k] = {in_data_i[16*k +: 16], in_wbuf_i};
      end
    end

    if (w_shift_i || w_commit_i || wctl_live_q != '0) begin
      // Weight loading, column c at its skewed time: commit first, then shift.
      for (int unsigned c = 0; c < N; c++) begin
        logic [2:0]  ctl;   // {shift, commit, buffer} of column c
        logic [15:0] wtop;  // the tile row entering column c
        if (c == 0) begin
          ctl  = {w_shift_i, w_commit_i, w_buf_i};
          wtop = w_row_i[15:0];
        end else begin
          ctl  = wctl_q[3*(c-1) +: 3];
          wtop = wskew_q[c-1][c];
        end
        if (ctl[1]) begin
          for (int unsigned r = 0; r < N; r++) begin
            if (ctl[0]) wx_q[r][c][31:16] = wsh_q[c][r];
            else        wx_q[r][c][15:0]  = wsh_q[c][r];
          end
        end
        if (ctl[2]) begin
          for (int unsigned r = N - 1; r >= 1; r--) begin
            wsh_q[c][r] = wsh_q[c][r-1];
          end
          wsh_q[c][0] = wtop;
        end
      end
      for (int unsigned j = N - 2; j >= 1; j--) begin
        for (int unsigned c = j + 1; c < N; c++) begin
          wskew_q[j][c] = wskew_q[j-1][c];
        end
      end
      for (int unsigned c = 1; c < N; c++) begin
        wskew_q[0][c] = w_row_i[16*c +: 16];
      end
    end
  end

  always_comb begin
    for (int c = 0; c < 32'(N); c++) begin
      if (c == 32'(N) - 1) out_sum_o[32*c +: 32] = psum_q[N-1][c];
      else                 out_sum_o[32*c +: 32] = deskew_q[N-2-c][c];
    end
  end
  assign out_valid_o = side_valid_q[Latency-1];
  assign out_tag_o   = side_tag_q[TagW*(Latency-1) +: TagW];
  assign pre_valid_o = side_valid_q[Latency-2];
  assign pre_tag_o   = side_tag_q[TagW*(Latency-2) +: TagW];

`ifndef SYNTHESIS
  // Every fp32 sum that leaves the array is a canonical NaN or no NaN, and never subnormal.
  logic out_canonical;
  always_comb begin
    out_canonical = 1'b1;
    for (int c = 0; c < 32'(N); c++) begin
      if ((tpu_fp_pkg::fp32_is_nan(out_sum_o[32*c +: 31]) &&
           out_sum_o[32*c +: 32] != tpu_fp_pkg::Fp32QNaN) ||
          (out_sum_o[32*c+23 +: 8] == 8'd0 && out_sum_o[32*c +: 23] != 23'd0)) begin
        out_canonical = 1'b0;
      end
    end
  end
  `TPU_ASSERT_IMPLIES(MxuFpOutCanonical, out_valid_o, out_canonical)
`endif
  `TPU_ASSERT_INIT(MxuFpParams, N >= 2 && TagW >= 1)

endmodule
