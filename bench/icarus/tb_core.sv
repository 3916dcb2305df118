// SPDX-License-Identifier: Apache-2.0
// Icarus Verilog testbench of the whole tpu_core for the simulator benchmark (scripts/bench.sh).
//
// Runs the benchmark workload (bench/workload.h): the host memory image written by
// `bench_bare_n<N> --write-image FILE`, an AXI4 memory responder that follows the SystemC
// testbench's timing cycle for cycle (sim/axi4_tlm_bridge.h + host_memory_model.h defaults:
// 10 cycles latency per burst, 16 bytes per cycle on one shared port, registered outputs, up
// to 4 bursts accepted, no backpressure), and an AXI4-Lite master for the registers. It
// prints "MARK warm" after the warm-up and "MARK done" when irq_o rises (the benchmark
// script timestamps these lines to get wall time), then reads the counters and checks the
// result bytes against FILE.expected.
//
//   iverilog -g2012 -P tb_core.N=16 -P tb_core.MEM_WORDS=<w> ... ; vvp sim +image=FILE
//     +cmd_addr=A +cmd_count=C +out_addr=O +out_bytes=B +mem_base=M +warmup=W
//     [+max_cycles=K] (give up K cycles after START) [+progress=K] (print the cycle every K)
`timescale 1ns / 1ps
module tb_core;
  parameter int N = 16;
  parameter int MEM_WORDS = 65536;
  localparam int W  = (8 * N < 128) ? 8 * N : 128;
  localparam int BB = W / 8;
  localparam int LAT = 10;   // memory latency, cycles
  localparam int BPC = 16;   // memory bytes per cycle

  logic clk = 1'b0;
  logic rst_n = 1'b1;  // pulled low at time 1: an initial 0 would make no negedge
  always #5 clk = ~clk;

  // AXI4-Lite
  logic [11:0] s_awaddr = '0, s_araddr = '0;
  logic        s_awvalid = 1'b0, s_wvalid = 1'b0, s_bready = 1'b0, s_arvalid = 1'b0, s_rready = 1'b0;
  logic [31:0] s_wdata = '0;
  logic [3:0]  s_wstrb = '0;
  logic        s_awready, s_wready, s_bvalid, s_arready, s_rvalid;
  logic [1:0]  s_bresp, s_rresp;
  logic [31:0] s_rdata;
  // AXI4 master of the chip
  logic [31:0]   m_araddr, m_awaddr;
  logic [7:0]    m_arlen, m_awlen;
  logic [2:0]    m_arsize, m_awsize;
  logic [1:0]    m_arburst, m_awburst;
  logic          m_arvalid, m_rready, m_awvalid, m_wlast, m_wvalid, m_bready;
  logic [W-1:0]  m_wdata;
  logic [BB-1:0] m_wstrb;
  logic          m_arready = 1'b0, m_rlast = 1'b0, m_rvalid = 1'b0, m_awready = 1'b0;
  logic          m_wready = 1'b0, m_bvalid = 1'b0;
  logic [W-1:0]  m_rdata = '0;
  logic [1:0]    m_rresp = 2'b00, m_bresp = 2'b00;
  logic          irq;

  tpu_core #(.N(N)) dut (
    .clk_i(clk), .rst_ni(rst_n),
    .s_axil_awaddr_i(s_awaddr), .s_axil_awvalid_i(s_awvalid), .s_axil_awready_o(s_awready),
    .s_axil_wdata_i(s_wdata), .s_axil_wstrb_i(s_wstrb), .s_axil_wvalid_i(s_wvalid),
    .s_axil_wready_o(s_wready), .s_axil_bresp_o(s_bresp), .s_axil_bvalid_o(s_bvalid),
    .s_axil_bready_i(s_bready), .s_axil_araddr_i(s_araddr), .s_axil_arvalid_i(s_arvalid),
    .s_axil_arready_o(s_arready), .s_axil_rdata_o(s_rdata), .s_axil_rresp_o(s_rresp),
    .s_axil_rvalid_o(s_rvalid), .s_axil_rready_i(s_rready),
    .m_axi_araddr_o(m_araddr), .m_axi_arlen_o(m_arlen), .m_axi_arsize_o(m_arsize),
    .m_axi_arburst_o(m_arburst), .m_axi_arvalid_o(m_arvalid), .m_axi_arready_i(m_arready),
    .m_axi_rdata_i(m_rdata), .m_axi_rresp_i(m_rresp), .m_axi_rlast_i(m_rlast),
    .m_axi_rvalid_i(m_rvalid), .m_axi_rready_o(m_rready),
    .m_axi_awaddr_o(m_awaddr), .m_axi_awlen_o(m_awlen), .m_axi_awsize_o(m_awsize),
    .m_axi_awburst_o(m_awburst), .m_axi_awvalid_o(m_awvalid), .m_axi_awready_i(m_awready),
    .m_axi_wdata_o(m_wdata), .m_axi_wstrb_o(m_wstrb), .m_axi_wlast_o(m_wlast),
    .m_axi_wvalid_o(m_wvalid), .m_axi_wready_i(m_wready), .m_axi_bresp_i(m_bresp),
    .m_axi_bvalid_i(m_bvalid), .m_axi_bready_o(m_bready),
    .irq_o(irq)
  );

  // ---------------- host memory and the AXI4 responder ----------------
  logic [W-1:0] mem [0:MEM_WORDS-1];
  logic [31:0] mem_base;

  longint cycle = 0;
  longint progress = 0;  // +progress=K: print the cycle every K cycles
  initial if (!$value$plusargs("progress=%d", progress)) progress = 0;
  always @(posedge clk) begin
    cycle <= cycle + 1;
    if (progress > 0 && cycle % progress == 0) begin
      $display("PROGRESS %0d", cycle);
      $fflush();
    end
  end

  // Read bursts accepted, oldest first (at most 4).
  logic [31:0]   rd_addr [4];
  int            rd_beats [4], rd_next [4];
  longint        rd_acc [4], rd_last [4];
  int            rd_n = 0;
  // Write bursts: addresses (<= 4), the burst being collected, responses.
  logic [31:0]   wa_addr [4];
  int            wa_beats [4];
  int            wa_n = 0;
  int            wd_beats = 0;          // beats collected of the current burst
  logic [W-1:0]  wd_data [256];
  logic [BB-1:0] wd_strb [256];
  int            wd_done_n = 0;         // complete data bursts waiting for their address
  int            wd_done_beats = 0;
  longint        wr_ready [4];
  int            wr_n = 0;
  longint        port_free = 0;
  longint        bcycle = 0;            // the bridge's own edge count
  logic          arready_q = 0, rvalid_q = 0, awready_q = 0, wready_q = 0, bvalid_q = 0;

  function automatic longint transport(longint now, longint len);
    longint start, xfer;
    start = (now > port_free) ? now : port_free;
    xfer = (len + BPC - 1) / BPC;
    port_free = start + xfer;
    return start + xfer + LAT - now;
  endfunction

  always @(posedge clk) begin
    logic ar_fire, r_fire, aw_fire, w_fire, b_fire;
    longint d, ready;
    int beats_after, i, b;
    bcycle = bcycle + 1;
    if (!rst_n) begin
      rd_n = 0; wa_n = 0; wd_beats = 0; wd_done_n = 0; wr_n = 0;
      arready_q = 0; rvalid_q = 0; awready_q = 0; wready_q = 0; bvalid_q = 0;
      m_arready <= 0; m_rvalid <= 0; m_rlast <= 0; m_awready <= 0; m_wready <= 0; m_bvalid <= 0;
    end else begin
      ar_fire = arready_q && m_arvalid;
      r_fire  = rvalid_q && m_rready;
      aw_fire = awready_q && m_awvalid;
      w_fire  = wready_q && m_wvalid;
      b_fire  = bvalid_q && m_bready;
      if (r_fire) begin
        rd_next[0] = rd_next[0] + 1;
        if (rd_next[0] == rd_beats[0]) begin
          for (i = 0; i < 3; i++) begin
            rd_addr[i] = rd_addr[i+1]; rd_beats[i] = rd_beats[i+1]; rd_next[i] = rd_next[i+1];
            rd_acc[i] = rd_acc[i+1]; rd_last[i] = rd_last[i+1];
          end
          rd_n = rd_n - 1;
        end
        rvalid_q = 0;
      end
      if (b_fire) begin
        for (i = 0; i < 3; i++) wr_ready[i] = wr_ready[i+1];
        wr_n = wr_n - 1;
        bvalid_q = 0;
      end
      if (ar_fire) begin
        rd_addr[rd_n]  = m_araddr;
        rd_beats[rd_n] = m_arlen + 1;
        rd_next[rd_n]  = 0;
        d = transport(bcycle, (m_arlen + 1) * BB);
        rd_acc[rd_n]   = bcycle;
        rd_last[rd_n]  = bcycle + d;
        rd_n = rd_n + 1;
      end
      if (aw_fire) begin
        wa_addr[wa_n] = m_awaddr;
        wa_beats[wa_n] = m_awlen + 1;
        wa_n = wa_n + 1;
      end
      if (w_fire) begin
        wd_data[wd_beats] = m_wdata;
        wd_strb[wd_beats] = m_wstrb;
        wd_beats = wd_beats + 1;
        if (m_wlast) begin
          wd_done_n = 1;           // the chip has one write burst outstanding
          wd_done_beats = wd_beats;
          wd_beats = 0;
        end
      end
      // issue_writes: pair a complete data burst with its address.
      if (wa_n > 0 && wd_done_n > 0) begin
        for (b = 0; b < wd_done_beats; b++) begin
          for (i = 0; i < BB; i++) begin
            if (wd_strb[b][i])
              mem[(wa_addr[0] - mem_base) / BB + b][8*i +: 8] = wd_data[b][8*i +: 8];
          end
        end
        d = transport(bcycle, wa_beats[0] * BB);
        wr_ready[wr_n] = bcycle + d;
        wr_n = wr_n + 1;
        for (i = 0; i < 3; i++) begin
          wa_addr[i] = wa_addr[i+1]; wa_beats[i] = wa_beats[i+1];
        end
        wa_n = wa_n - 1;
        wd_done_n = 0;
      end

      arready_q = rd_n < 4;
      awready_q = wa_n + wr_n < 4;
      wready_q  = wd_done_n < 4;
      m_arready <= arready_q;
      m_awready <= awready_q;
      m_wready  <= wready_q;
      if (!rvalid_q && rd_n > 0) begin
        beats_after = rd_beats[0] - 1 - rd_next[0];
        ready = (rd_last[0] > rd_acc[0] + beats_after) ? rd_last[0] - beats_after : rd_acc[0];
        if (bcycle >= ready) begin
          m_rdata <= mem[(rd_addr[0] - mem_base) / BB + rd_next[0]];
          m_rresp <= 2'b00;
          m_rlast <= (rd_next[0] + 1 == rd_beats[0]);
          rvalid_q = 1;
        end
      end
      m_rvalid <= rvalid_q;
      if (!bvalid_q && wr_n > 0 && bcycle >= wr_ready[0]) begin
        m_bresp <= 2'b00;
        bvalid_q = 1;
      end
      m_bvalid <= bvalid_q;
    end
  end

  // ---------------- AXI4-Lite master ----------------
  task automatic axil_write(input logic [11:0] a, input logic [31:0] d);
    logic aw_done, w_done, b_done;
    aw_done = 0;
    w_done = 0;
    b_done = 0;
    s_awaddr <= a; s_awvalid <= 1; s_wdata <= d; s_wstrb <= 4'hF; s_wvalid <= 1; s_bready <= 1;
    while (!b_done) begin
      @(posedge clk);
      if (!aw_done && s_awvalid && s_awready) begin aw_done = 1; s_awvalid <= 0; end
      if (!w_done && s_wvalid && s_wready) begin w_done = 1; s_wvalid <= 0; end
      if (s_bvalid && s_bready) begin s_bready <= 0; b_done = 1; end
    end
  endtask

  task automatic axil_read(input logic [11:0] a, output logic [31:0] d);
    logic r_done;
    r_done = 0;
    s_araddr <= a; s_arvalid <= 1; s_rready <= 1;
    while (!r_done) begin
      @(posedge clk);
      if (s_arvalid && s_arready) s_arvalid <= 0;
      if (s_rvalid && s_rready) begin d = s_rdata; s_rready <= 0; r_done = 1; end
    end
  endtask

  // ---------------- the run ----------------
  string image, expected_file;
  logic [31:0] cmd_addr, cmd_count, out_addr, out_bytes;
  longint warmup, start_cycle, max_cycles;
  logic [7:0] expected [0:65535];
  logic [31:0] lo, hi;
  longint counter_cycles, mxu_busy;
  int bad, k;
  logic [7:0] got;

  initial begin
    if (!$value$plusargs("image=%s", image)) $fatal(1, "+image= missing");
    if (!$value$plusargs("cmd_addr=%d", cmd_addr)) $fatal(1, "+cmd_addr= missing");
    if (!$value$plusargs("cmd_count=%d", cmd_count)) $fatal(1, "+cmd_count= missing");
    if (!$value$plusargs("out_addr=%d", out_addr)) $fatal(1, "+out_addr= missing");
    if (!$value$plusargs("out_bytes=%d", out_bytes)) $fatal(1, "+out_bytes= missing");
    if (!$value$plusargs("mem_base=%d", mem_base)) $fatal(1, "+mem_base= missing");
    if (!$value$plusargs("warmup=%d", warmup)) $fatal(1, "+warmup= missing");
    if (!$value$plusargs("max_cycles=%d", max_cycles)) max_cycles = 0;  // 0: no limit
    expected_file = {image, ".expected"};
    $readmemh(image, mem);
    $readmemh(expected_file, expected);

    #1 rst_n = 1'b0;
    repeat (8) @(posedge clk);
    rst_n <= 1;
    repeat (2) @(posedge clk);
    axil_write(12'h030, 32'd3);
    axil_write(12'h040, cmd_addr);
    axil_write(12'h044, cmd_count);
    axil_write(12'h020, 32'd1);
    start_cycle = cycle;
    while (!irq && cycle < start_cycle + warmup) @(posedge clk);
    $display("MARK warm %0d", cycle);
    $fflush();
    while (!irq) begin
      @(posedge clk);
      if (max_cycles > 0 && cycle > start_cycle + max_cycles) begin
        $display("RESULT harness=icarus_core n=%0d timeout=1 timeout_cycles=%0d", N, max_cycles);
        $fflush();
        $finish;
      end
    end
    $display("MARK done %0d", cycle);
    $fflush();
    axil_read(12'h100, lo); axil_read(12'h104, hi); counter_cycles = {hi, lo};
    axil_read(12'h108, lo); axil_read(12'h10C, hi); mxu_busy = {hi, lo};
    bad = 0;
    for (k = 0; k < out_bytes; k++) begin
      got = mem[(out_addr - mem_base) / BB + k / BB][8 * (k % BB) +: 8];
      if (got !== expected[k]) bad++;
    end
    $display("RESULT harness=icarus_core n=%0d counter_cycles=%0d mxu_busy=%0d mismatches=%0d",
             N, counter_cycles, mxu_busy, bad);
    $fflush();
    $finish;
  end
endmodule
