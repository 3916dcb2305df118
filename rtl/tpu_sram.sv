// SPDX-License-Identifier: Apache-2.0
// Synchronous SRAM, the memory wrapper of the RTL (tpu_sram_2w adds a second write port):
// Depth words of Width bits, one write port and one read port, registered read (the word
// addressed in cycle t is on rdata_o in cycle t+1 and stays there until the next read),
// optional byte enables.
//
// Read-during-write of the same address: with WriteFirst = 1 the read returns the data being
// written (the bytes enabled, the others old), as a "write-first" / transparent block RAM;
// with WriteFirst = 0 it returns the old word. A client that presents in cycle t the address
// it will use in cycle t+1 and reads every cycle sees, through a WriteFirst port, exactly what
// a combinational read of the same address in cycle t+1 would see.
//
// Written so that Yosys infers one memory ($mem_v2: one synchronous read port, one write
// port) and FPGA flows map it to block RAM; no reset, like the SRAM macros it stands for.
`include "tpu_assert.svh"

module tpu_sram #(
  parameter int          Depth      = 256,  // int, not int unsigned: Icarus 11 reads this file too
  parameter int          Width      = 32,
  parameter bit          ByteEn     = 1'b0,  // wbe_i enables each byte (Width % 8 == 0)
  parameter bit          WriteFirst = 1'b0
) (
  input  logic                       clk_i,
  input  logic                       we_i,
  input  logic [$clog2(Depth)-1:0]   waddr_i,
  input  logic [Width-1:0]           wdata_i,
  input  logic [(Width+7)/8-1:0]     wbe_i,    // byte b covers bits [8b +: 8]; ignored unless ByteEn
  input  logic                       re_i,
  input  logic [$clog2(Depth)-1:0]   raddr_i,
  output logic [Width-1:0]           rdata_o
);
  localparam int Bytes = (Width + 7) / 8;

  // The array is left out of VCD traces (its ports and read register stay in): with it, a VCD
  // of the N = 16 core ran 20x slower (2.1 k against 45 k cycles/s, docs/performance.md);
  // a memory's contents are read back through the chip instead.
  // verilator tracing_off
  logic [Width-1:0] mem_q [Depth];
  // verilator tracing_on
  logic [Width-1:0] rdata_q;

  if (ByteEn) begin : g_byte_en
    // One write of the whole word with the disabled bytes kept: Yosys turns a write of the
    // word it read at the same address into per-byte write enables (opt_mem_feedback), and a
    // simulator updates the memory once per written cycle instead of running a process per
    // byte lane in every cycle.
    always_ff @(posedge clk_i) begin
      if (we_i) begin
        logic [Width-1:0] word;
        word = mem_q[waddr_i];
        for (int b = 0; b < Bytes; b++) begin
          if (wbe_i[b]) word[8*b +: 8] = wdata_i[8*b +: 8];
        end
        mem_q[waddr_i] <= word;
      end
    end
    always_ff @(posedge clk_i) begin
      if (re_i) begin
        if (WriteFirst && we_i && waddr_i == raddr_i) begin
          logic [Width-1:0] word;  // the bytes being written, the others old
          word = mem_q[raddr_i];
          for (int b = 0; b < Bytes; b++) begin
            if (wbe_i[b]) word[8*b +: 8] = wdata_i[8*b +: 8];
          end
          rdata_q <= word;
        end else begin
          rdata_q <= mem_q[raddr_i];
        end
      end
    end
  end else begin : g_word
    always_ff @(posedge clk_i) begin
      if (we_i) mem_q[waddr_i] <= wdata_i;
    end
    always_ff @(posedge clk_i) begin
      if (re_i) begin
        if (WriteFirst && we_i && waddr_i == raddr_i) rdata_q <= wdata_i;
        else                                          rdata_q <= mem_q[raddr_i];
      end
    end
    logic unused_wbe;
    assign unused_wbe = ^wbe_i;
  end

  assign rdata_o = rdata_q;

  `TPU_ASSERT_INIT(SramDepth, Depth >= 2)
  `TPU_ASSERT_INIT(SramByteEn, !ByteEn || Width % 8 == 0)

endmodule
