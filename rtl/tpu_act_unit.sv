// SPDX-License-Identifier: Apache-2.0
// Activation unit: accumulator rows -> bias, requantize, function, max-pool -> UB rows.
//
// Reads one accumulator row per cycle in pooling-window order (stage 1 registers it), then
// requantizes all N columns (tpu_requant), applies the LUT if asked, and keeps the running
// maximum of the window; the last row of a window writes one UB row. Windows run over the
// image padded by pad_top/left/bottom/right: a tap in the padding still takes its cycle but
// reads no pixel and is left out of the maximum (ONNX MaxPool's -inf padding). Also owns the
// quantization parameter memory (QpSlots x {bias, mult, misc} x N int32) and the 256-byte LUT,
// written row by row by read_host.
`include "tpu_assert.svh"

module tpu_act_unit #(
  parameter int unsigned N       = 16,
  parameter int unsigned UbRows  = 8192,
  parameter int unsigned AccRows = 2048,
  parameter int unsigned QpSlots = 16
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        clear_i,
  // Command from the controller: taken when the unit is idle.
  input  logic                        cmd_valid_i,
  output logic                        cmd_ready_o,
  input  tpu_pkg::act_cmd_t           cmd_i,
  // Accumulator read port (combinational).
  output logic [$clog2(AccRows)-1:0]  acc_raddr_o,
  input  logic [32*N-1:0]             acc_rdata_i,  // column c in [32c +: 32]
  // UB write port.
  output logic                        ub_we_o,
  output logic [$clog2(UbRows)-1:0]   ub_waddr_o,
  output logic [8*N-1:0]              ub_wdata_o,
  // Parameter / LUT row writes from read_host.
  input  logic                        prm_we_i,
  input  logic [$clog2(QpSlots*12)-1:0] prm_row_i,
  input  logic                        lut_we_i,
  input  logic [7:0]                  lut_row_i,
  input  logic [8*N-1:0]              wdata_i,
  // Status.
  output logic                        busy_o,
  output logic                        reading_o
);

  localparam int unsigned AccW  = $clog2(AccRows);
  localparam int unsigned UbW   = $clog2(UbRows);
  localparam int unsigned Words = N / 4;  // int32 words per N-byte row
  localparam int unsigned SlotW = (QpSlots > 1) ? $clog2(QpSlots) : 1;

  // Row slot*3 + {0 bias, 1 mult, 2 misc}: N int32 (column c in [32c +: 32]).
  logic [32*N-1:0] prm_q [QpSlots*3];
  logic [8*256-1:0] lut_q;  // entry i in [8i +: 8]

  // Instruction fields.
  logic        busy_q;
  logic [1:0]  func_q;
  logic        out_uns_q;
  logic [15:0] acc_base_q;
  logic [23:0] ub_base_q;
  logic [11:0] width_q, height_q;
  logic [3:0]  pool_k_q, pool_s_q;
  logic [2:0]  pad_t_q, pad_l_q, pad_b_q, pad_r_q;
  logic [23:0] ub_stride_q;
  logic [SlotW-1:0] slot_q;
  logic [11:0] oy_q, ox_q;    // output pixel (window) being read
  logic [11:0] py_q, px_q;    // its top-left pixel in the padded image: oy * stride, ox * stride
  logic [3:0]  dy_q, dx_q;

  // Stage 1: one accumulator row and where it goes.
  logic               s1_valid_q, s1_first_q, s1_last_q, s1_tap_q;
  logic [UbW-1:0]     s1_ub_addr_q;
  logic [32*N-1:0]    s1_acc_q;
  logic [9*N-1:0]     pool_q;    // running window maximum, column c in [9c +: 9]
  logic               pool_have_q;  // the window has had a pixel (not only padding)
  logic           ub_we_q;

  logic win_first, win_last, all_last, row_last, col_last, start, tap_in;
  logic signed [13:0] tap_y, tap_x;  // the tap in image coordinates (negative: in the padding)
  logic [31:0] acc_row, ub_row;

  // ---- parameter and LUT memories ----
  // A parameter row of the host image (N bytes = N/4 little-endian int32) is one quarter of a
  // memory row: host row r of the slot area is slot r / 12, vector (r % 12) / 4, quarter r % 4.
  // prm_row_i is below QpSlots * 12 (checked by the controller): constant divisions of a few
  // bits.
  logic [$clog2(QpSlots*3)-1:0] prm_vec;
  logic [1:0]                   prm_part;
  assign prm_vec  = ($clog2(QpSlots*3))'(prm_row_i >> 2);
  assign prm_part = prm_row_i[1:0];

  always_ff @(posedge clk_i) begin
    if (prm_we_i) prm_q[prm_vec][32*Words*prm_part +: 32*Words] <= wdata_i;
  end
  always_ff @(posedge clk_i) begin
    if (lut_we_i) lut_q[8*N*lut_row_i +: 8*N] <= wdata_i;
  end

  // ---- address generation ----
  assign win_first = (dy_q == '0) && (dx_q == '0);
  assign win_last  = (dy_q == pool_k_q - 1'b1) && (dx_q == pool_k_q - 1'b1);
  // The last window of a row (column) is the one after which another would not fit: no
  // division by the stride is needed to know the output size.
  assign col_last  = 14'(px_q) + 14'(pool_s_q) + 14'(pool_k_q) >
                     14'(width_q) + 14'(pad_l_q) + 14'(pad_r_q);
  assign row_last  = 14'(py_q) + 14'(pool_s_q) + 14'(pool_k_q) >
                     14'(height_q) + 14'(pad_t_q) + 14'(pad_b_q);
  assign all_last  = win_last && row_last && col_last;
  assign tap_y     = $signed(14'(py_q) + 14'(dy_q) - 14'(pad_t_q));
  assign tap_x     = $signed(14'(px_q) + 14'(dx_q) - 14'(pad_l_q));
  assign tap_in    = !tap_y[13] && !tap_x[13] && tap_y < $signed(14'(height_q)) &&
                     tap_x < $signed(14'(width_q));
  // A tap in the padding reads the region's first row (inside its footprint) and is ignored.
  assign acc_row   = 32'(acc_base_q) +
                     (tap_in ? 32'(tap_y[12:0]) * 32'(width_q) + 32'(tap_x[12:0]) : 32'd0);
  assign ub_row    = 32'(ub_base_q) + 32'(oy_q) * 32'(ub_stride_q) + 32'(ox_q);
  assign acc_raddr_o = AccW'(acc_row);
  assign cmd_ready_o = !busy_q && !s1_valid_q && !ub_we_q;
  assign start       = cmd_valid_i && cmd_ready_o;
  assign busy_o    = busy_q || s1_valid_q || ub_we_q;
  assign reading_o = busy_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q     <= 1'b0;
      s1_valid_q <= 1'b0;
    end else if (clear_i) begin
      busy_q     <= 1'b0;
      s1_valid_q <= 1'b0;
    end else begin
      s1_valid_q <= busy_q;
      if (start) begin
        busy_q      <= 1'b1;
        func_q      <= cmd_i.func;
        out_uns_q   <= cmd_i.out_unsigned;
        acc_base_q  <= cmd_i.acc_addr;
        ub_base_q   <= cmd_i.ub_addr;
        width_q     <= cmd_i.width;
        height_q    <= cmd_i.height;
        pool_k_q    <= cmd_i.pool_k;
        pool_s_q    <= cmd_i.pool_s;
        pad_t_q     <= cmd_i.pad_top;
        pad_l_q     <= cmd_i.pad_left;
        pad_b_q     <= cmd_i.pad_bottom;
        pad_r_q     <= cmd_i.pad_right;
        ub_stride_q <= cmd_i.ub_stride;
        slot_q      <= SlotW'(cmd_i.slot);
        oy_q <= '0;
        ox_q <= '0;
        py_q <= '0;
        px_q <= '0;
        dy_q <= '0;
        dx_q <= '0;
      end else if (busy_q) begin
        if (all_last) busy_q <= 1'b0;
        if (dx_q != pool_k_q - 1'b1) begin
          dx_q <= dx_q + 1'b1;
        end else begin
          dx_q <= '0;
          if (dy_q != pool_k_q - 1'b1) begin
            dy_q <= dy_q + 1'b1;
          end else begin
            dy_q <= '0;
            if (!col_last) begin
              ox_q <= ox_q + 1'b1;
              px_q <= px_q + 12'(pool_s_q);
            end else begin
              ox_q <= '0;
              px_q <= '0;
              oy_q <= oy_q + 1'b1;
              py_q <= py_q + 12'(pool_s_q);
            end
          end
        end
      end
    end
  end

  // Only while reading: an idle unit keeps its stage-1 registers, so the requantizers'
  // inputs do not change and simulation does not re-evaluate them.
  always_ff @(posedge clk_i) begin
    if (busy_q) begin
      s1_first_q   <= win_first;
      s1_last_q    <= win_last;
      s1_tap_q     <= tap_in;
      s1_ub_addr_q <= UbW'(ub_row);
      s1_acc_q     <= acc_rdata_i;
    end
  end

  // ---- stage 2: requantize, LUT, pool, write (registered UB write) ----
  // Sequential code guarded by s1_valid_q: the N requantizers cost simulation time only for
  // rows actually being activated.
  logic [UbW-1:0] ub_waddr_q;
  logic [8*N-1:0] ub_wdata_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ub_we_q <= 1'b0;
    else         ub_we_q <= s1_valid_q && s1_last_q && !clear_i;
  end

  always_ff @(posedge clk_i) begin
    if (s1_valid_q) begin
      logic [9*N-1:0]  pool_n;
      logic [8*N-1:0]  wdata_n;
      logic [32*N-1:0] bias, mult, misc;
      logic            have;
      have = !s1_first_q && pool_have_q;
      bias = prm_q[3*32'(slot_q) + 0];
      mult = prm_q[3*32'(slot_q) + 1];
      misc = prm_q[3*32'(slot_q) + 2];
      for (int c = 0; c < 32'(N); c++) begin
        logic signed [8:0] y, v, p;
        logic [7:0] l;
        y = tpu_pkg::requantize(s1_acc_q[32*c +: 32], bias[32*c +: 32], mult[32*c +: 32],
                                misc[32*c +: 32], func_q, out_uns_q);
        if (func_q == tpu_pkg::FuncLut) begin
          l = lut_q[8*y[7:0] +: 8];
          y = out_uns_q ? $signed({1'b0, l}) : $signed({l[7], l});
        end
        p = pool_q[9*c +: 9];
        v = (s1_tap_q && (!have || y > p)) ? y : p;
        pool_n[9*c +: 9]  = v;
        wdata_n[8*c +: 8] = v[7:0];
      end
      pool_q     <= pool_n;
      pool_have_q <= have || s1_tap_q;
      ub_wdata_q <= wdata_n;
      ub_waddr_q <= s1_ub_addr_q;
    end
  end

  assign ub_we_o    = ub_we_q;
  assign ub_waddr_o = ub_waddr_q;
  assign ub_wdata_o = ub_wdata_q;

  // The row ranges and the slot were checked by the decoder: the high address bits of a legal
  // activate are zero, and so are the slot's above QpSlots.
  logic unused_bits;
  assign unused_bits = ^{cmd_i.slot >> SlotW, acc_row[31:AccW], ub_row[31:UbW]};

  // Window counters stay inside the pooling window.
  `TPU_ASSERT_IMPLIES(ActWindowBound, busy_q, dx_q < pool_k_q && dy_q < pool_k_q)
  `TPU_ASSERT_IMPLIES(ActAccRowBound, busy_q, acc_row < AccRows)
  // Pads below the window (checked at decode): every window holds at least one pixel.
  `TPU_ASSERT_IMPLIES(ActWindowHasPixel, s1_valid_q && s1_last_q,
                      s1_tap_q || (!s1_first_q && pool_have_q))
  `TPU_ASSERT_IMPLIES(ActUbRowBound, busy_q, ub_row < UbRows)

endmodule
