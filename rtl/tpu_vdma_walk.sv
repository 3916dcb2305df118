// SPDX-License-Identifier: Apache-2.0
// Burst walker of the VMEM port (docs/architecture.md "The VMEM port"): cuts a read_vmem /
// write_vmem's host bytes into AXI4 INCR bursts of BeatBytes-wide beats.
//
// A transfer is `rows` rows of RowBytes bytes (4N, or 2N with bf16) at host_addr + i * stride;
// stride 0 or the row size makes it one contiguous segment of rows * RowBytes bytes, any other
// stride one segment per row. Each segment is covered by beat-aligned bursts (the first starts
// at the segment's address rounded down to the beat, so every burst address is aligned) of at
// most MaxBurst beats that never cross a 4 KiB boundary. For each burst the walker gives its
// address, its beats, and the bytes of the segment in its first and last beat: [lo, BeatBytes)
// of the first beat and [0, hi) of the last (a one-beat burst: [lo, hi)). `next_i` moves on to
// the next burst; `valid_o` is low once every burst was given out.
`include "tpu_assert.svh"

module tpu_vdma_walk #(
  parameter int unsigned BeatBytes = 64,
  parameter int unsigned MaxBurst  = 256
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,      // load a transfer (also while one is walked)
  input  logic [31:0] addr_i,       // 16-byte aligned
  input  logic [23:0] rows_i,       // >= 1
  input  logic [31:0] stride_i,     // bytes between row starts; 0 = contiguous
  input  logic [31:0] row_bytes_i,  // RowBytes of this transfer
  input  logic        next_i,       // the current burst is taken
  output logic        valid_o,
  output logic [31:0] addr_o,       // beat aligned
  output logic [8:0]  beats_o,      // 1 .. MaxBurst
  output logic [31:0] lo_o,         // first byte of the segment in the first beat
  output logic [31:0] hi_o          // end (exclusive, 1 .. BeatBytes) of it in the last beat
);
  localparam int unsigned OffW = $clog2(BeatBytes);

  logic [31:0] cur_q, cur_d;        // next host byte of the current segment
  logic [31:0] seg_left_q, seg_left_d;   // its bytes still to cover
  logic [31:0] seg_start_q, seg_start_d; // its first byte (strided: next segment = + stride)
  logic [31:0] stride_q, stride_d;
  logic [31:0] row_bytes_q, row_bytes_d;
  logic [23:0] segs_q, segs_d;      // segments not yet completely covered
  logic [31:0] base, lo, need, to_4k, beats, span;
  logic        seg_end;

  always_comb begin
    base  = {cur_q[31:OffW], OffW'(0)};
    lo    = 32'(cur_q[OffW-1:0]);
    span  = lo + seg_left_q;                       // bytes from the burst address on
    need  = (span + 32'(BeatBytes) - 32'd1) >> OffW;
    to_4k = (32'd4096 - 32'(base[11:0])) >> OffW;
    beats = need;
    if (beats > 32'(MaxBurst)) beats = 32'(MaxBurst);
    if (beats > to_4k)         beats = to_4k;
    seg_end = (beats == need);
  end

  assign valid_o = segs_q != '0;
  assign addr_o  = base;
  assign beats_o = 9'(beats);
  assign lo_o    = lo;
  assign hi_o    = seg_end ? span - ((beats - 32'd1) << OffW) : 32'(BeatBytes);

  always_comb begin
    cur_d       = cur_q;
    seg_left_d  = seg_left_q;
    seg_start_d = seg_start_q;
    stride_d    = stride_q;
    row_bytes_d = row_bytes_q;
    segs_d      = segs_q;
    if (start_i) begin
      cur_d       = addr_i;
      seg_start_d = addr_i;
      row_bytes_d = row_bytes_i;
      if (stride_i == '0 || stride_i == row_bytes_i) begin
        segs_d     = 24'd1;
        stride_d   = '0;
        seg_left_d = 32'(rows_i) * row_bytes_i;
      end else begin
        segs_d     = rows_i;
        stride_d   = stride_i;
        seg_left_d = row_bytes_i;
      end
    end else if (next_i && valid_o) begin
      if (seg_end) begin
        segs_d      = segs_q - 24'd1;
        seg_start_d = seg_start_q + stride_q;
        cur_d       = seg_start_q + stride_q;
        seg_left_d  = row_bytes_q;
      end else begin
        cur_d      = base + (beats << OffW);
        seg_left_d = span - (beats << OffW);
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      segs_q <= '0;
    end else begin
      segs_q <= segs_d;
    end
  end
  // The transfer's position: read only while segments are left.
  always_ff @(posedge clk_i) begin
    cur_q       <= cur_d;
    seg_left_q  <= seg_left_d;
    seg_start_q <= seg_start_d;
    stride_q    <= stride_d;
    row_bytes_q <= row_bytes_d;
  end

  `TPU_ASSERT_IMPLIES(VdmaWalkBurst, valid_o, beats != '0 && beats <= 32'(MaxBurst))
  `TPU_ASSERT_IMPLIES(VdmaWalk4k, valid_o, 32'(base[11:0]) + (beats << OffW) <= 32'd4096)
  `TPU_ASSERT_IMPLIES(VdmaWalkHi, valid_o, hi_o != '0 && hi_o <= 32'(BeatBytes))
  `TPU_ASSERT_INIT(VdmaWalkBeat, BeatBytes >= 16 && (BeatBytes & (BeatBytes - 1)) == 0 &&
                                 4096 % BeatBytes == 0 && MaxBurst >= 1 && MaxBurst <= 256)

endmodule
