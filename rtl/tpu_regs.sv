// SPDX-License-Identifier: Apache-2.0
// Host-visible control/status registers behind an AXI4-Lite slave, and the performance
// counters. Register map: docs/architecture.md.
module tpu_regs #(
  parameter int unsigned N            = 16,
  parameter int unsigned UbRows       = 8192,
  parameter int unsigned AccRows      = 2048,
  parameter int unsigned WFifoTiles   = 4,
  parameter int unsigned QpSlots      = 16,
  parameter int unsigned AxiDataWidth = 128,
  parameter int unsigned Counters     = 10,
  parameter int unsigned Windows      = 8
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // AXI4-Lite slave.
  input  logic [11:0] awaddr_i,
  input  logic        awvalid_i,
  output logic        awready_o,
  input  logic [31:0] wdata_i,
  input  logic [3:0]  wstrb_i,
  input  logic        wvalid_i,
  output logic        wready_o,
  output logic [1:0]  bresp_o,
  output logic        bvalid_o,
  input  logic        bready_i,
  input  logic [11:0] araddr_i,
  input  logic        arvalid_i,
  output logic        arready_o,
  output logic [31:0] rdata_o,
  output logic [1:0]  rresp_o,
  output logic        rvalid_o,
  input  logic        rready_i,
  // To the core.
  output logic        start_o,        // doorbell
  output logic        soft_reset_o,
  output logic [31:0] cmd_addr_o,
  output logic [31:0] cmd_count_o,
  output logic [32*Windows-1:0] win_base_o,   // window i in [32i +: 32]
  output logic [32*Windows-1:0] win_size_o,
  output logic        irq_o,
  // From the core.
  input  logic        busy_i,
  input  logic        done_i,         // pulse: halt retired
  input  logic        error_i,        // pulse: run stopped on an error
  input  logic [3:0]  err_code_i,
  input  logic [31:0] err_pc_i,
  input  logic [31:0] pc_i,
  input  logic [32*Counters-1:0] count_inc_i  // counter i in [32i +: 32]
);
  localparam logic [31:0] IdValue = 32'h5450_5531;  // "TPU1"
  localparam int unsigned CIdxW   = $clog2(Counters);
  localparam int unsigned WIdxW   = $clog2(Windows);

  logic        st_done_q, st_error_q;
  logic [3:0]  err_code_q;
  logic [31:0] err_pc_q;
  logic [1:0]  irq_status_q, irq_enable_q;
  logic [31:0] cmd_addr_q, cmd_count_q;
  logic [31:0] win_base_q [Windows];
  logic [31:0] win_size_q [Windows];
  logic [63:0] counter_q  [Counters];

  logic        bvalid_q, rvalid_q;
  logic [1:0]  bresp_q, rresp_q;
  logic [31:0] rdata_q;
  logic        do_write, do_read;
  logic        start_q, soft_reset_q;

  // One write and one read at a time: AW and W are taken together.
  assign do_write  = awvalid_i && wvalid_i && !bvalid_q;
  assign awready_o = do_write;
  assign wready_o  = do_write;
  assign bvalid_o  = bvalid_q;
  assign bresp_o   = bresp_q;
  assign do_read   = arvalid_i && !rvalid_q;
  assign arready_o = do_read;
  assign rvalid_o  = rvalid_q;
  assign rresp_o   = rresp_q;
  assign rdata_o   = rdata_q;

  assign start_o      = start_q;
  assign soft_reset_o = soft_reset_q;
  assign cmd_addr_o   = cmd_addr_q;
  assign cmd_count_o  = cmd_count_q;
  always_comb begin
    for (int i = 0; i < 32'(Windows); i++) begin
      win_base_o[32*i +: 32] = win_base_q[i];
      win_size_o[32*i +: 32] = win_size_q[i];
    end
  end
  assign irq_o        = |(irq_status_q & irq_enable_q);

  function automatic logic [31:0] read_value(input logic [11:0] a, output logic ok);
    ok = 1'b1;
    read_value = '0;
    if (a >= 12'h100 && a < 12'(32'h100 + 8 * Counters)) begin
      read_value = a[2] ? counter_q[CIdxW'((a - 12'h100) >> 3)][63:32]
                        : counter_q[CIdxW'((a - 12'h100) >> 3)][31:0];
    end else if (a >= 12'h080 && a < 12'(32'h080 + 8 * Windows)) begin
      read_value = a[2] ? win_size_q[WIdxW'((a - 12'h080) >> 3)] : win_base_q[WIdxW'((a - 12'h080) >> 3)];
    end else begin
      unique case (a)
        12'h000: read_value = IdValue;
        12'h004: read_value = N;
        12'h008: read_value = UbRows;
        12'h00C: read_value = AccRows;
        12'h010: read_value = WFifoTiles;
        12'h014: read_value = QpSlots;
        12'h018: read_value = AxiDataWidth;
        12'h020: read_value = '0;
        12'h024: read_value = {29'd0, st_error_q, st_done_q, busy_i};
        12'h028: read_value = {28'd0, err_code_q};
        12'h02C: read_value = err_pc_q;
        12'h030: read_value = {30'd0, irq_status_q};
        12'h034: read_value = {30'd0, irq_enable_q};
        12'h040: read_value = cmd_addr_q;
        12'h044: read_value = cmd_count_q;
        12'h048: read_value = pc_i;
        default: ok = 1'b0;
      endcase
    end
  endfunction

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      bvalid_q     <= 1'b0;
      rvalid_q     <= 1'b0;
      bresp_q      <= 2'b00;
      rresp_q      <= 2'b00;
      rdata_q      <= '0;
      start_q      <= 1'b0;
      soft_reset_q <= 1'b0;
      st_done_q    <= 1'b0;
      st_error_q   <= 1'b0;
      err_code_q   <= '0;
      err_pc_q     <= '0;
      irq_status_q <= '0;
      irq_enable_q <= 2'b11;
      cmd_addr_q   <= '0;
      cmd_count_q  <= '0;
      for (int i = 0; i < 32'(Windows); i++) begin
        win_base_q[i] <= '0;
        win_size_q[i] <= '0;
      end
      for (int i = 0; i < 32'(Counters); i++) counter_q[i] <= '0;
    end else begin
      start_q      <= 1'b0;
      soft_reset_q <= 1'b0;

      // Core events.
      if (busy_i) begin
        for (int i = 0; i < 32'(Counters); i++) counter_q[i] <= counter_q[i] + 64'(count_inc_i[32*i +: 32]);
      end
      if (done_i) begin
        st_done_q       <= 1'b1;
        irq_status_q[0] <= 1'b1;
      end
      if (error_i) begin
        st_error_q      <= 1'b1;
        err_code_q      <= err_code_i;
        err_pc_q        <= err_pc_i;
        irq_status_q[1] <= 1'b1;
      end

      // Writes.
      if (bvalid_q && bready_i) bvalid_q <= 1'b0;
      if (do_write) begin
        logic [11:0] a;
        a = awaddr_i;
        bvalid_q <= 1'b1;
        bresp_q  <= 2'b00;
        if (wstrb_i != 4'hF) begin
          bresp_q <= 2'b10;  // only whole-word writes
        end else if (a >= 12'h080 && a < 12'(32'h080 + 8 * Windows)) begin
          if (a[2]) win_size_q[WIdxW'((a - 12'h080) >> 3)] <= wdata_i;
          else      win_base_q[WIdxW'((a - 12'h080) >> 3)] <= wdata_i;
        end else begin
          unique case (a)
            12'h020: begin
              if (wdata_i[1]) begin
                soft_reset_q <= 1'b1;
                st_done_q    <= 1'b0;
                st_error_q   <= 1'b0;
                err_code_q   <= '0;
                err_pc_q     <= '0;
              end else if (wdata_i[0] && !busy_i) begin
                start_q    <= 1'b1;
                st_done_q  <= 1'b0;
                st_error_q <= 1'b0;
                err_code_q <= '0;
                err_pc_q   <= '0;
                for (int i = 0; i < 32'(Counters); i++) counter_q[i] <= '0;
              end
            end
            12'h030: irq_status_q <= irq_status_q & ~wdata_i[1:0];
            12'h034: irq_enable_q <= wdata_i[1:0];
            12'h040: cmd_addr_q   <= wdata_i;
            12'h044: cmd_count_q  <= wdata_i;
            default: bresp_q <= 2'b10;  // read-only or unmapped
          endcase
        end
      end

      // Reads.
      if (rvalid_q && rready_i) rvalid_q <= 1'b0;
      if (do_read) begin
        logic ok;
        rdata_q  <= read_value(araddr_i, ok);
        rresp_q  <= ok ? 2'b00 : 2'b10;
        rvalid_q <= 1'b1;
      end
    end
  end

endmodule
