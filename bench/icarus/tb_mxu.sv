// SPDX-License-Identifier: Apache-2.0
// Icarus Verilog testbench of tpu_mxu alone for the simulator benchmark (scripts/bench.sh):
// the schedule of bench/bench_mxu.cpp (a valid row every cycle from 64 random rows; every R
// rows the next of 4 random tiles is shifted in during the first N cycles, committed at
// cycle N + 1 and switched to after R rows). Prints "MARK warm" after WARMUP cycles and "MARK
// done" after CYCLES cycles (the script timestamps them), and checks the first result row of
// tiles 0 and 1 against a behavioural matmul.
//
//   iverilog -g2012 -P tb_mxu.N=16 -P tb_mxu.R=256 ... ; vvp sim +cycles=C +warmup=W
`timescale 1ns / 1ps
module tb_mxu;
  parameter int N = 16;
  parameter int R = 256;

  logic clk = 1'b0;
  logic rst_n = 1'b1;  // pulled low at time 1: an initial 0 would make no negedge
  always #5 clk = ~clk;

  logic              in_valid = 1'b0, in_wbuf = 1'b0, in_wuns = 1'b0;
  logic [9*N-1:0]    in_data;   // element k in [9k +: 9], as the MXU's flat ports
  logic [17:0]       in_tag = '0;
  logic              w_shift = 1'b0, w_commit = 1'b0, w_buf = 1'b0;
  logic [8*N-1:0]    w_row;
  logic              out_valid;
  logic [32*N-1:0]   out_sum;
  logic [17:0]       out_tag;

  tpu_mxu #(.N(N)) dut (
    .clk_i(clk), .rst_ni(rst_n),
    .in_valid_i(in_valid), .in_data_i(in_data), .in_wbuf_i(in_wbuf), .in_wuns_i(in_wuns),
    .in_tag_i(in_tag), .w_shift_i(w_shift), .w_row_i(w_row), .w_commit_i(w_commit),
    .w_buf_i(w_buf), .out_valid_o(out_valid), .out_sum_o(out_sum), .out_tag_o(out_tag)
  );

  // Flat operand memories (Icarus 11 is unreliable with multi-dimensional unpacked arrays
  // written from tasks): act[r*N + k], wts[(t*N + k)*N + n].
  logic [7:0] act [0:64*N-1];
  logic [7:0] wts [0:4*N*N-1];
  longint cycles, warmup, i, tile, in_tile;
  int bad = 0, checked = 0, r, c, k, s, t;
  longint sum;

  // Results: compare the first row of tiles 0 and 1 (tags 0 and R), between edges.
  always @(negedge clk) begin
    if (dut.out_valid_o && (dut.out_tag_o == 0 || dut.out_tag_o == R) && checked < 2) begin
      t = (dut.out_tag_o == 0) ? 0 : 1;
      for (c = 0; c < N; c++) begin
        sum = 0;
        for (k = 0; k < N; k++) sum = sum + $signed(act[k]) * $signed(wts[(t * N + k) * N + c]);
        if (out_sum[32*c +: 32] !== 32'(sum)) bad = bad + 1;
      end
      checked = checked + 1;
    end
  end

  // Inputs change on the falling edge (blocking), the MXU samples them on the rising edge.
  initial begin
    if (!$value$plusargs("cycles=%d", cycles)) $fatal(1, "+cycles= missing");
    if (!$value$plusargs("warmup=%d", warmup)) $fatal(1, "+warmup= missing");
    for (r = 0; r < 64 * N; r++) act[r] = $random;
    for (r = 0; r < 4 * N * N; r++) wts[r] = $random;
    in_data = '0;
    w_row   = '0;
    #1 rst_n = 1'b0;
    @(negedge clk);
    @(negedge clk);
    rst_n = 1'b1;
    // Tile 0 into buffer 0, bottom tile row first.
    for (s = 0; s < N; s++) begin
      w_shift = 1'b1;
      for (c = 0; c < N; c++) w_row[8*c +: 8] = wts[(N - 1 - s) * N + c];
      @(negedge clk);
    end
    w_shift = 1'b0;
    w_commit = 1'b1;
    w_buf = 1'b0;
    @(negedge clk);
    w_commit = 1'b0;
    @(negedge clk);
    for (i = 0; i < cycles; i++) begin
      if (i == warmup) begin
        $display("MARK warm %0d", i);
        $fflush();
      end
      tile = i / R;
      in_tile = i % R;
      in_valid = 1'b1;
      for (c = 0; c < N; c++) in_data[9*c +: 9] = {act[(i % 64) * N + c][7], act[(i % 64) * N + c]};
      in_wbuf = tile[0];
      in_tag = 18'(i);
      w_shift = 1'b0;
      w_commit = 1'b0;
      if (in_tile < N) begin
        w_shift = 1'b1;
        for (c = 0; c < N; c++) w_row[8*c +: 8] = wts[(((tile + 1) % 4) * N + (N - 1 - in_tile)) * N + c];
      end
      if (in_tile == N + 1) begin
        w_commit = 1'b1;
        w_buf = ~tile[0];
      end
      @(negedge clk);
    end
    $display("MARK done %0d", i);
    $fflush();
    in_valid = 1'b0;
    w_shift = 1'b0;
    w_commit = 1'b0;
    repeat (2 * N + 2) @(negedge clk);
    $display("RESULT harness=icarus_mxu n=%0d checked=%0d mismatches=%0d", N, checked, bad);
    $fflush();
    $finish;
  end
endmodule
