// SPDX-License-Identifier: Apache-2.0
// rtl/tpu_sram.sv under Icarus Verilog (ctest icarus_sram_*, label icarus): random writes and
// reads, with addresses from a small range so that read-during-write collisions are frequent,
// checked cycle by cycle against a reference memory kept by this testbench with the semantics
// of tpu_sram's header (registered read, held while re_i is low, write-first or old data on a
// collision, byte enables). Prints "PASS <checks>" or the first mismatch, then $finish.
//
//   iverilog -g2012 -DSYNTHESIS -I rtl -P tb_sram.ByteEn=1 -P tb_sram.WriteFirst=1 \
//            -o sram.vvp bench/icarus/tb_sram.sv rtl/tpu_sram.sv && vvp -n sram.vvp
`timescale 1ns / 1ps
module tb_sram;
  parameter int Depth      = 16;
  parameter int Width      = 24;
  parameter int ByteEn     = 0;
  parameter int WriteFirst = 0;
  parameter int Cycles     = 4000;
  localparam int AW    = $clog2(Depth);
  localparam int Bytes = (Width + 7) / 8;

  logic             clk = 1'b0;
  logic             we, re;
  logic [AW-1:0]    waddr, raddr;
  logic [Width-1:0] wdata, rdata;
  logic [Bytes-1:0] wbe;

  tpu_sram #(.Depth(Depth), .Width(Width), .ByteEn(ByteEn != 0), .WriteFirst(WriteFirst != 0))
      dut (.clk_i(clk), .we_i(we), .waddr_i(waddr), .wdata_i(wdata), .wbe_i(wbe), .re_i(re),
           .raddr_i(raddr), .rdata_o(rdata));

  logic [Width-1:0] ref_mem [Depth];
  logic [Width-1:0] expect_q;
  logic             known_q;   // expect_q holds a defined value (after the first read)
  int               checks;

  always #5 clk = !clk;

  initial begin
    for (int i = 0; i < Depth; i++) ref_mem[i] = '0;
    // Define the memory first: write every word once.
    we = 1'b1; re = 1'b0; wbe = '1;
    for (int i = 0; i < Depth; i++) begin
      waddr = AW'(i);
      wdata = Width'($urandom);
      ref_mem[i] = wdata;
      @(posedge clk);
      #1;
    end
    known_q = 1'b0;
    checks  = 0;
    for (int cyc = 0; cyc < Cycles; cyc++) begin
      logic [Width-1:0] next;
      we    = ($urandom % 4) != 0;
      re    = ($urandom % 4) != 0;
      waddr = AW'($urandom % 4);
      raddr = AW'($urandom % 4);
      wdata = Width'({$urandom, $urandom});
      wbe   = Bytes'($urandom);
      // The reference, evaluated before the edge.
      next = expect_q;
      if (re) begin
        next = ref_mem[raddr];
        if (WriteFirst != 0 && we && waddr == raddr) begin
          for (int b = 0; b < Bytes; b++) begin
            if (ByteEn == 0 || wbe[b]) begin
              for (int i = 8 * b; i < 8 * b + 8 && i < Width; i++) next[i] = wdata[i];
            end
          end
        end
      end
      if (we) begin
        for (int b = 0; b < Bytes; b++) begin
          if (ByteEn == 0 || wbe[b]) begin
            for (int i = 8 * b; i < 8 * b + 8 && i < Width; i++) ref_mem[waddr][i] = wdata[i];
          end
        end
      end
      @(posedge clk);
      #1;
      if (re) known_q = 1'b1;
      expect_q = next;
      if (known_q) begin
        checks++;
        if (rdata !== expect_q) begin
          $display("FAIL cycle %0d: rdata %h, expected %h (we %b waddr %0d wbe %b re %b raddr %0d)",
                   cyc, rdata, expect_q, we, waddr, wbe, re, raddr);
          $finish;
        end
      end
    end
    $display("PASS %0d checks (Depth %0d, Width %0d, ByteEn %0d, WriteFirst %0d)", checks, Depth,
             Width, ByteEn, WriteFirst);
    $finish;
  end
endmodule
