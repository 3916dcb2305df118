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
// in an order that lets every PE read its neighbours' pre-edge values. Verilator keeps these
// loops as loops, so N = 256 builds in seconds instead of N^2 instances. Written for the
// simulator's speed (docs/performance.md, "N = 256"): each row of PEs is one loop over 16-bit
// input registers and weight words with no variable shift, which the C++ compiler turns into
// vector code; the skew, de-skew and weight-skew delay lines shift whole stages (each stage a
// contiguous run of one array row, copied as a block); loop indices are written before any
// branch so that Verilator keeps them in locals. The same code is the synthesized hardware:
// plain shift registers (no rings of slots, which cost twice the registers plus a read
// multiplexer per element and which Yosys turns into multi-port memories; docs/synthesis.md).
//
// The product of a PE: rtl/tpu_mxu_product.svh, written with selects rather than a variable
// shift so that a compiler can evaluate a row of PEs as vector code; synthesis reads a
// spelling of the same arithmetic that Yosys narrows to a 9 x 9 multiplier.
`include "tpu_mxu_product.svh"
`ifdef SYNTHESIS
`define TPU_MXU_PRODUCT(l, w) `TPU_MXU_PRODUCT_SYN(l, w)
`else
`define TPU_MXU_PRODUCT(l, w) `TPU_MXU_PRODUCT_SIM(l, w)
`endif

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
  // One activation lane: {9-bit operand, weight buffer, weights unsigned}.
  localparam int unsigned LaneW = 11;

  // Input register of PE(r,c): the lane it multiplies at the next edge, moving right (after
  // the edge it is PE(r,c+1)'s). The whole lane in one 16-bit word (the operand in [10:2], its
  // weight select in [1:0]), so a cycle moves N^2 short words. PE(0,0) takes its lane from
  // the input port, so lane_q[0][0] is not used.
  logic [LaneW-1:0]   lane_q   [N][N];
  logic signed [31:0] psum_q   [N][N];  // partial-sum register of PE(r,c), moving down
  // Weight buffers: wx_q[r][c][8*b +: 8] is weight (r,c) of buffer b; the lane's `unsigned`
  // bit says whether its top bit is a sign. One 16-bit word per PE, not [N][N][2]: Yosys would
  // make the latter, read with a variable index, one memory with N^2 read and 2N^2 write
  // ports (its memory passes do not finish at N = 16).
  logic [15:0]        wx_q     [N][N];
  logic [7:0]         wsh_q    [N][N];  // [c][r]: weight shift register of PE(r,c), moving down
  // Input skew, output de-skew and weight column skew: shift registers indexed
  // [stage][row or column], so that one stage of all rows (columns) is contiguous and a shift
  // moves whole stages. Row k >= 2 of the input skew has stages 0 .. k-2 (its input register
  // lane_q[k][0] is the last of its k delays: PE(k,0) multiplies element k k edges after it
  // entered), column c of the de-skew stages 0 .. N-2-c, column c of the weights stages
  // 0 .. c-1; the other elements of the arrays are never written nor read.
  logic [LaneW-1:0]   skew_q   [N][N];
  logic signed [31:0] deskew_q [N][N];
  logic [7:0]         wskew_q  [N][N];
  logic [LaneW-1:0]   lane_in;          // row 0's lane, straight from the input port
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
  logic                         rows_move, w_move;  // the array / the weight path move
  logic [Latency-1:0]           side_valid_d;
  logic [3*N-1:0]               wctl_d;
  logic [$clog2(Latency+1)-1:0] rows_live_d;
  logic [$clog2(N+1)-1:0]       wctl_live_d;
  assign rows_move = in_valid_i || rows_live_q != '0;
  assign lane_in   = {in_data_i[8:0], in_wbuf_i, in_wuns_i};
  assign w_move    = w_shift_i || w_commit_i || wctl_live_q != '0;
  always_comb begin
    rows_live_d = rows_live_q;
    if (in_valid_i)              rows_live_d = ($clog2(Latency+1))'(Latency);
    else if (rows_live_q != '0)  rows_live_d = rows_live_q - 1'b1;
    wctl_live_d = wctl_live_q;
    if (w_shift_i || w_commit_i) wctl_live_d = ($clog2(N+1))'(N);
    else if (wctl_live_q != '0)  wctl_live_d = wctl_live_q - 1'b1;
    side_valid_d = side_valid_q;
    if (rows_move) begin  // side_valid_q is all zero otherwise
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
    if (rows_move) begin
      side_tag_q <= {side_tag_q[TagW*(Latency-1)-1:0], in_tag_i};
    end
  end

  // The array. Blocking assignments, reverse order: see the header comment (BLKSEQ is
  // waived for this file in lint_waivers.vlt).
  always_ff @(posedge clk_i) begin
    // Loop indices and per-column temporaries, written here before any branch: Verilator
    // then keeps them in the generated function's locals (registers) instead of the model's
    // members, which every store into the arrays would force back to memory.
    int unsigned r, c, j;
    logic [2:0]  ctl;   // {shift, commit, buffer} of column c
    logic [7:0]  wtop;  // the tile row entering column c
    r    = 0;
    c    = 0;
    j    = 0;
    ctl  = '0;
    wtop = '0;
    if (rows_move) begin
      // Output de-skew first: it must see the bottom row's pre-edge partial sums. Column c
      // waits N-1-c cycles so all columns leave together.
      for (j = N - 2; j >= 1; j--) begin
        for (c = 0; c + j <= N - 2; c++) begin
          deskew_q[j][c] = deskew_q[j-1][c];
        end
      end
      for (c = 0; c < N - 1; c++) begin
        deskew_q[0][c] = psum_q[N-1][c];
      end

      // Processing elements, bottom row first (each row reads the pre-edge partial sums of the
      // row above). Within a row every PE first multiplies its pre-edge input register (a loop
      // a compiler can turn into vector code), then the row's lanes move one PE right:
      // psum_q[r][c] <= above + a * w, a = the lane's operand, w = weight (r,c) of the lane's
      // buffer, its top bit a sign unless the lane's weights are unsigned.
      for (r = N - 1; r >= 1; r--) begin
        for (c = 0; c < N; c++) begin
          psum_q[r][c] = psum_q[r-1][c] + `TPU_MXU_PRODUCT(lane_q[r][c], wx_q[r][c]);
        end
        for (c = N - 1; c >= 1; c--) begin
          lane_q[r][c] = lane_q[r][c-1];
        end
        // Row r's element, entered r-1 edges ago: the last input skew stage (row 1: none).
        lane_q[r][0] = (r == 1) ? {in_data_i[17:9], in_wbuf_i, in_wuns_i}
                                : skew_q[(r >= 2) ? r - 2 : 0][r];
      end
      for (c = N - 1; c >= 1; c--) begin
        psum_q[0][c] = `TPU_MXU_PRODUCT(lane_q[0][c], wx_q[0][c]);
        lane_q[0][c] = (c == 1) ? lane_in : lane_q[0][c-1];
      end
      psum_q[0][0] = `TPU_MXU_PRODUCT(lane_in, wx_q[0][0]);

      // Input skew, after the PEs read its pre-edge last stages: row k >= 2 enters stage 0.
      for (j = N - 3; j >= 1; j--) begin
        for (c = j + 2; c < N; c++) begin
          skew_q[j][c] = skew_q[j-1][c];
        end
      end
      for (c = 2; c < N; c++) begin
        skew_q[0][c] = {in_data_i[9*c +: 9], in_wbuf_i, in_wuns_i};
      end
    end

    if (w_move) begin
      // Weight loading, column c at its skewed time: commit first, then shift, so a tile can
      // be committed in the same cycle the next one starts to shift in.
      for (c = 0; c < N; c++) begin
        if (c == 0) begin
          ctl  = {w_shift_i, w_commit_i, w_buf_i};
          wtop = w_row_i[7:0];
        end else begin
          ctl  = wctl_q[3*(c-1) +: 3];
          wtop = wskew_q[c-1][c];  // entered c edges ago: the last stage
        end
        if (ctl[1]) begin
          for (r = 0; r < N; r++) begin
            if (ctl[0]) wx_q[r][c][15:8] = wsh_q[c][r];
            else        wx_q[r][c][7:0]  = wsh_q[c][r];
          end
        end
        if (ctl[2]) begin
          for (r = N - 1; r >= 1; r--) begin
            wsh_q[c][r] = wsh_q[c][r-1];
          end
          wsh_q[c][0] = wtop;
        end
      end
      // Weight column skew, after the columns read its pre-edge last stages: column c is
      // delayed by c cycles (c registers, the last feeds column c's shift register).
      for (j = N - 2; j >= 1; j--) begin
        for (c = j + 1; c < N; c++) begin
          wskew_q[j][c] = wskew_q[j-1][c];
        end
      end
      for (c = 1; c < N; c++) begin
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

`undef TPU_MXU_PRODUCT
