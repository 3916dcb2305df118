// SPDX-License-Identifier: Apache-2.0
// Weight-stationary N x N systolic matrix unit (MXU), TPU-v1 style.
//
// Activations enter from the left, one N-element row per cycle; element k reaches array row k
// k cycles after element 0 (the diagonal wavefront). Each PE multiplies its activation by its
// stationary weight and adds the partial sum arriving from the PE above; partial sums leave
// the bottom of column n n cycles after column 0, and a de-skew delay line realigns them, so a
// row fed in cycle m leaves as one N x int32 vector in cycle m + 2N - 1 (Latency).
//
// Double-buffered weights: each PE has two weight registers and one shift register. The
// weight loader shifts a tile down the shift registers (column n n cycles after column 0) and
// then commits it into one buffer. Every activation carries the index of the buffer it must
// use, so a new tile takes effect with the wavefront of its first row while older rows still
// finish with the old one. Commit rules (enforced by tpu_weight_loader):
//   * a commit into buffer b in cycle t is safe when the last row tagged b was fed <= t-(N-1);
//   * rows tagged b may be fed from cycle t+1 on.
//
// The whole array is one always_ff over 2-D arrays, updated in place with blocking assignments
// in reverse loop order so every PE reads its neighbours' pre-edge values. Verilator keeps
// these loops as loops, so N = 256 builds in seconds instead of N^2 instances.
module tpu_mxu #(
  parameter int unsigned N    = 16,
  parameter int unsigned TagW = 18
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // Activation row input.
  input  logic                   in_valid_i,
  input  logic [9*N-1:0]         in_data_i,      // element k in [9k +: 9], already extended
  input  logic                   in_wbuf_i,      // weight buffer this row uses
  input  logic                   in_wuns_i,      // weights are unsigned for this row
  input  logic [TagW-1:0]        in_tag_i,       // side band returned with the result
  // Weight tile input (one tile row per shift, bottom row first).
  input  logic                   w_shift_i,
  input  logic [8*N-1:0]         w_row_i,
  input  logic                   w_commit_i,     // copy the shift registers into buffer w_buf_i
  input  logic                   w_buf_i,
  // Result row output.
  output logic                   out_valid_o,
  output logic [32*N-1:0]        out_sum_o,      // column c in [32c +: 32]
  output logic [TagW-1:0]        out_tag_o,
  // The same row's valid and tag one cycle earlier (the accumulators read the old row then).
  output logic                   pre_valid_o,
  output logic [TagW-1:0]        pre_tag_o
);
  localparam int unsigned Latency = 2 * N - 1;
  // One activation lane: {9-bit operand, weight buffer, weights unsigned}; the two low bits
  // (the lane's weight select) pick the PE's weight wx_q[r][c][*].
  localparam int unsigned LaneW = 11;

  // Activation register of PE(r,c), moving right: the lane's operand in lane_q, its weight
  // select in lsel_q (kept apart so a PE reads each without masking or shifting). The 9-bit
  // operand is held sign-extended to the partial sums' 32 bits: extended once where it enters
  // a row instead of in every PE (a simulator's cost); synthesis merges the copies of the sign
  // bit, which all have the same input, and narrows the multipliers back to 9 bits.
  logic signed [31:0] lane_q   [N][N];
  logic [1:0]         lsel_q   [N][N];
  logic signed [31:0] psum_q   [N][N];  // partial-sum register of PE(r,c), moving down
  // Weight buffers, kept pre-extended in both interpretations so a PE needs one field select:
  // wx_q[r][c][16*{buffer, unsigned} +: 9] is weight (r,c) of `buffer` read as int8 or as uint8
  // (16-bit fields: the select is a shift by {sel, 4'b0}, always within the 64-bit word).
  // One word per PE, not [N][N][4]: Yosys would make the latter, read with a variable index,
  // one memory with N^2 read and 2N^2 write ports (its memory passes do not finish at N = 16).
  logic [63:0]        wx_q     [N][N];
  logic [7:0]         wsh_q    [N][N];  // [c][r]: weight shift register of PE(r,c), moving down
  // Input skew and output de-skew, indexed [stage][row or column] so that one stage of all
  // rows (columns) is contiguous and a shift moves whole stages.
  logic [LaneW-1:0]   skew_q   [N][N];  // input skew: row k delays by k, stages 0 .. k-1
  logic signed [31:0] deskew_q [N][N];  // output de-skew: column c by N-1-c, stages 0 .. N-2-c
  logic [7:0]         wskew_q  [N][N];  // [stage][c]: weight column skew, column c delays by c
  // Packed shift registers (one whole-vector shift per cycle): Verilator 5.006 cannot keep a
  // non-blocking assignment to an unpacked array inside a loop it does not unroll (> 64).
  logic [3*N-1:0]     wctl_q;           // [3c +: 3]: {shift, commit, buf} as seen by column c+1
  logic [Latency-1:0] side_valid_q;
  // Cycles the data path must keep moving: rows stay in flight Latency cycles after the last
  // valid row, weight controls N cycles after the last shift/commit. While both are zero the
  // array, skew and de-skew registers hold only rows nobody will read, so they are left
  // still (a pure simulation-speed measure: the values they would shift are all invalid).
  logic [$clog2(Latency+1)-1:0] rows_live_q;
  logic [$clog2(N+1)-1:0]       wctl_live_q;
  logic [TagW*Latency-1:0] side_tag_q;  // [TagW*i +: TagW]: the tag of the row i+1 cycles in

  // Reset clears only the control side band; datapath registers need no reset because
  // nothing reads them until a valid row or a commit has written them.
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
    if (in_valid_i || rows_live_q != '0) begin  // all zero otherwise
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

  always_ff @(posedge clk_i) begin
    if (in_valid_i || rows_live_q != '0) begin
      side_tag_q <= {side_tag_q[TagW*(Latency-1)-1:0], in_tag_i};
    end
  end

  // The array. Blocking assignments, reverse order: see the header comment (BLKSEQ is
  // waived for this file in lint_waivers.vlt).
  always_ff @(posedge clk_i) begin
    if (in_valid_i || rows_live_q != '0) begin
      // Output de-skew first: it must see the bottom row's pre-edge partial sums.
      // Column c waits N-1-c cycles so all columns leave together.
      for (int unsigned j = N - 2; j >= 1; j--) begin
        for (int unsigned c = 0; c + j <= N - 2; c++) begin
          deskew_q[j][c] = deskew_q[j-1][c];
        end
      end
      for (int unsigned c = 0; c < N - 1; c++) begin
        deskew_q[0][c] = psum_q[N-1][c];
      end

      // Processing elements, bottom row first (each row reads the pre-edge partial sums of the
      // row above), right to left within a row (each PE reads its left neighbour's pre-edge
      // activation). PE(r,c) latches its input lane into lane_q/lsel_q[r][c] and
      // psum_q[r][c] <= above + a * w: a = the lane's operand, w = weight (r,c) of the lane's
      // buffer in the lane's interpretation.
      for (int unsigned r = N - 1; r >= 1; r--) begin
        for (int unsigned c = N - 1; c >= 1; c--) begin
          psum_q[r][c] = psum_q[r-1][c]
                       + lane_q[r][c-1] * $signed(wx_q[r][c][{lsel_q[r][c-1], 4'b0000} +: 9]);
          lane_q[r][c] = lane_q[r][c-1];
          lsel_q[r][c] = lsel_q[r][c-1];
        end
        lane_q[r][0] = 32'($signed(skew_q[r-1][r][LaneW-1:2]));
        lsel_q[r][0] = skew_q[r-1][r][1:0];
        psum_q[r][0] = psum_q[r-1][0]
                     + lane_q[r][0] * $signed(wx_q[r][0][{lsel_q[r][0], 4'b0000} +: 9]);
      end
      for (int unsigned c = N - 1; c >= 1; c--) begin
        psum_q[0][c] = lane_q[0][c-1] * 32'($signed(wx_q[0][c][{lsel_q[0][c-1], 4'b0000} +: 9]));
        lane_q[0][c] = lane_q[0][c-1];
        lsel_q[0][c] = lsel_q[0][c-1];
      end
      lane_q[0][0] = 32'($signed(in_data_i[8:0]));
      lsel_q[0][0] = {in_wbuf_i, in_wuns_i};
      psum_q[0][0] = lane_q[0][0] * 32'($signed(wx_q[0][0][{lsel_q[0][0], 4'b0000} +: 9]));

      // Input skew: row k is delayed by k cycles (k registers, the last feeds PE(k,0)).
      for (int unsigned j = N - 2; j >= 1; j--) begin
        for (int unsigned k = j + 1; k < N; k++) begin
          skew_q[j][k] = skew_q[j-1][k];
        end
      end
      for (int unsigned k = 1; k < N; k++) begin
        skew_q[0][k] = {in_data_i[9*k +: 9], in_wbuf_i, in_wuns_i};
      end
    end

    if (w_shift_i || w_commit_i || wctl_live_q != '0) begin
      // Weight loading, column c at its skewed time: commit first, then shift, so a tile can
      // be committed in the same cycle the next one starts to shift in.
      for (int unsigned c = 0; c < N; c++) begin
        logic [2:0] ctl;  // {shift, commit, buffer} of column c
        logic [7:0] wtop; // the tile row entering column c
        if (c == 0) begin
          ctl  = {w_shift_i, w_commit_i, w_buf_i};
          wtop = w_row_i[7:0];
        end else begin
          ctl  = wctl_q[3*(c-1) +: 3];
          wtop = wskew_q[c-1][c];
        end
        if (ctl[1]) begin
          for (int unsigned r = 0; r < N; r++) begin
            if (ctl[0]) wx_q[r][c][63:32] = {8'b0, wsh_q[c][r], {8{wsh_q[c][r][7]}}, wsh_q[c][r]};
            else        wx_q[r][c][31:0]  = {8'b0, wsh_q[c][r], {8{wsh_q[c][r][7]}}, wsh_q[c][r]};
          end
        end
        if (ctl[2]) begin
          for (int unsigned r = N - 1; r >= 1; r--) begin
            wsh_q[c][r] = wsh_q[c][r-1];
          end
          wsh_q[c][0] = wtop;
        end
      end
      // Weight column skew: column c is delayed by c cycles (c registers, the last feeds
      // column c's shift register).
      for (int unsigned j = N - 2; j >= 1; j--) begin
        for (int unsigned c = j + 1; c < N; c++) begin
          wskew_q[j][c] = wskew_q[j-1][c];
        end
      end
      for (int unsigned c = 1; c < N; c++) begin
        wskew_q[0][c] = w_row_i[8*c +: 8];
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

endmodule
