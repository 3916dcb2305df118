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
  // One activation lane: {weights unsigned, weight buffer, 9-bit operand}.
  localparam int unsigned LaneW = 11;

  logic [LaneW-1:0]   lane_q   [N][N];  // activation register of PE(r,c), moving right
  logic signed [31:0] psum_q   [N][N];  // partial-sum register of PE(r,c), moving down
  // Weight buffers, kept pre-extended in both interpretations so a PE needs one indexed read:
  // wx_q[{buffer, unsigned}][r][c] is weight (r,c) of `buffer` read as int8 or as uint8.
  logic signed [8:0]  wx_q     [4][N][N];
  logic [7:0]         wsh_q    [N][N];  // weight shift register, moving down
  logic [LaneW-1:0]   skew_q   [N][N];  // input skew: row k delays by k (triangle used)
  logic signed [31:0] deskew_q [N][N];  // output de-skew: column c delays by N-1-c
  logic [7:0]         wskew_q  [N][N];  // weight column skew: column c delays by c
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
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      side_valid_q <= '0;
      wctl_q       <= '0;
      rows_live_q <= '0;
      wctl_live_q <= '0;
    end else begin
      if (in_valid_i)              rows_live_q <= ($clog2(Latency+1))'(Latency);
      else if (rows_live_q != '0)  rows_live_q <= rows_live_q - 1'b1;
      if (w_shift_i || w_commit_i) wctl_live_q <= ($clog2(N+1))'(N);
      else if (wctl_live_q != '0)  wctl_live_q <= wctl_live_q - 1'b1;
      if (in_valid_i || rows_live_q != '0) begin  // all zero otherwise
        side_valid_q <= {side_valid_q[Latency-2:0], in_valid_i};
      end
      wctl_q <= {wctl_q[3*(N-1)-1:0], {w_shift_i, w_commit_i, w_buf_i}};
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
    logic [LaneW-1:0]   lane_in;
    logic signed [8:0]  a, w;
    logic signed [31:0] above;
    logic [2:0]         ctl;
    logic [7:0]         wtop;
    logic signed [17:0] prod;

    if (in_valid_i || rows_live_q != '0) begin
      // Output de-skew first: it must see the bottom row's pre-edge partial sums.
      // Column c waits N-1-c cycles so all columns leave together.
      for (int c = 0; c < 32'(N) - 1; c++) begin
        for (int j = 32'(N) - 2 - c; j >= 1; j--) begin
          deskew_q[c][j] = deskew_q[c][j-1];
        end
        deskew_q[c][0] = psum_q[N-1][c];
      end

      // Processing elements, bottom-right first.
      for (int r = 32'(N) - 1; r >= 0; r--) begin
        for (int c = 32'(N) - 1; c >= 0; c--) begin
          if (c == 0) begin
            lane_in = (r == 0) ? {in_wuns_i, in_wbuf_i, in_data_i[8:0]} : skew_q[r][r-1];
          end else begin
            lane_in = lane_q[r][c-1];
          end
          a     = lane_in[8:0];
          above = (r == 0) ? 32'sd0 : psum_q[r-1][c];
          // Constant indices only: Yosys keeps wx_q as registers (a variable index makes
          // it infer one memory with 2N^2 write and N^2 read ports, which it cannot handle).
          if (lane_in[9]) w = lane_in[10] ? wx_q[3][r][c] : wx_q[2][r][c];
          else            w = lane_in[10] ? wx_q[1][r][c] : wx_q[0][r][c];
          prod  = a * w;
          psum_q[r][c] = above + {{14{prod[17]}}, prod};
          lane_q[r][c] = lane_in;
        end
      end

      // Input skew: row k is delayed by k cycles (k - 1 registers feed skew_q[k][k-1]).
      for (int k = 32'(N) - 1; k >= 1; k--) begin
        for (int j = k - 1; j >= 1; j--) begin
          skew_q[k][j] = skew_q[k][j-1];
        end
        skew_q[k][0] = {in_wuns_i, in_wbuf_i, in_data_i[9*k +: 9]};
      end
    end

    if (w_shift_i || w_commit_i || wctl_live_q != '0) begin
      // Weight loading, column c at its skewed time: commit first, then shift, so a tile can
      // be committed in the same cycle the next one starts to shift in.
      for (int c = 32'(N) - 1; c >= 0; c--) begin
        if (c == 0) begin
          ctl  = {w_shift_i, w_commit_i, w_buf_i};
          wtop = w_row_i[7:0];
        end else begin
          ctl  = wctl_q[3*(c-1) +: 3];
          wtop = wskew_q[c][c-1];
        end
        if (ctl[1]) begin
          for (int r = 0; r < 32'(N); r++) begin
            if (ctl[0]) begin
              wx_q[2][r][c] = {wsh_q[r][c][7], wsh_q[r][c]};
              wx_q[3][r][c] = {1'b0, wsh_q[r][c]};
            end else begin
              wx_q[0][r][c] = {wsh_q[r][c][7], wsh_q[r][c]};
              wx_q[1][r][c] = {1'b0, wsh_q[r][c]};
            end
          end
        end
        if (ctl[2]) begin
          for (int r = 32'(N) - 1; r >= 1; r--) begin
            wsh_q[r][c] = wsh_q[r-1][c];
          end
          wsh_q[0][c] = wtop;
        end
      end
      for (int c = 32'(N) - 1; c >= 1; c--) begin
        for (int j = c - 1; j >= 1; j--) begin
          wskew_q[c][j] = wskew_q[c][j-1];
        end
        wskew_q[c][0] = w_row_i[8*c +: 8];
      end
    end
  end

  always_comb begin
    for (int c = 0; c < 32'(N); c++) begin
      if (c == 32'(N) - 1) out_sum_o[32*c +: 32] = psum_q[N-1][c];
      else                 out_sum_o[32*c +: 32] = deskew_q[c][N-2-c];
    end
  end
  assign out_valid_o = side_valid_q[Latency-1];
  assign out_tag_o   = side_tag_q[TagW*(Latency-1) +: TagW];
  assign pre_valid_o = side_valid_q[Latency-2];
  assign pre_tag_o   = side_tag_q[TagW*(Latency-2) +: TagW];

endmodule
