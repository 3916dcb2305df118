// Activation unit: accumulator rows -> bias, requantize, function, max-pool -> UB rows.
//
// Reads one accumulator row per cycle in pooling-window order (stage 1 registers it), then
// requantizes all N columns (tpu_requant), applies the LUT if asked, and keeps the running
// maximum of the window; the last row of a window writes one UB row. Also owns the
// quantization parameter memory (QpSlots x {bias, mult, misc} x N int32) and the 256-byte LUT,
// written row by row by read_host.
module tpu_act_unit #(
  parameter int unsigned N       = 16,
  parameter int unsigned UbRows  = 8192,
  parameter int unsigned AccRows = 2048,
  parameter int unsigned QpSlots = 16
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        clear_i,
  // Issue from the controller.
  input  logic                        start_i,
  output logic                        ready_o,
  input  logic [127:0]                instr_i,
  // Accumulator read port (combinational).
  output logic [$clog2(AccRows)-1:0]  acc_raddr_o,
  input  logic signed [31:0]          acc_rdata_i [N],
  // UB write port.
  output logic                        ub_we_o,
  output logic [$clog2(UbRows)-1:0]   ub_waddr_o,
  output logic [7:0]                  ub_wdata_o [N],
  // Parameter / LUT row writes from read_host.
  input  logic                        prm_we_i,
  input  logic [$clog2(QpSlots*12)-1:0] prm_row_i,
  input  logic                        lut_we_i,
  input  logic [7:0]                  lut_row_i,
  input  logic [7:0]                  wdata_i [N],
  // Status.
  output logic                        busy_o,
  output logic                        reading_o
);
  import tpu_pkg::*;

  localparam int unsigned AccW  = $clog2(AccRows);
  localparam int unsigned UbW   = $clog2(UbRows);
  localparam int unsigned Words = N / 4;  // int32 words per N-byte row
  localparam int unsigned SlotW = (QpSlots > 1) ? $clog2(QpSlots) : 1;

  logic [31:0] prm_q [QpSlots*3][N];  // [slot*3 + {0 bias, 1 mult, 2 misc}][column]
  logic [7:0]  lut_q [256];

  // Instruction fields.
  logic        busy_q;
  logic [1:0]  func_q;
  logic        out_uns_q;
  logic [15:0] acc_base_q;
  logic [23:0] ub_base_q;
  logic [11:0] width_q;
  logic [3:0]  pool_k_q, pool_s_q;
  logic [23:0] ub_stride_q;
  logic [SlotW-1:0] slot_q;
  logic [11:0] out_w_q, out_h_q;
  logic [11:0] oy_q, ox_q;
  logic [3:0]  dy_q, dx_q;

  // Stage 1: one accumulator row and where it goes.
  logic               s1_valid_q, s1_first_q, s1_last_q;
  logic [UbW-1:0]     s1_ub_addr_q;
  logic signed [31:0] s1_acc_q [N];
  logic signed [8:0]  pool_q [N];
  logic           ub_we_q;

  logic win_first, win_last, all_last;
  logic [31:0] acc_row, ub_row;

  // ---- parameter and LUT memories ----
  always_ff @(posedge clk_i) begin
    if (prm_we_i) begin
      int unsigned slot, vec, part;
      logic [31:0] prm_row [N];
      slot = int'(prm_row_i) / 12;
      vec  = (int'(prm_row_i) % 12) / 4;
      part = int'(prm_row_i) % 4;
      prm_row = prm_q[slot*3 + vec];
      for (int w = 0; w < int'(Words); w++) begin
        prm_row[part*Words + w] = {wdata_i[4*w+3], wdata_i[4*w+2], wdata_i[4*w+1], wdata_i[4*w]};
      end
      prm_q[slot*3 + vec] <= prm_row;
    end
    if (lut_we_i) begin
      logic [7:0] lut_n [256];
      lut_n = lut_q;
      for (int c = 0; c < int'(N); c++) lut_n[(int'(lut_row_i) * N + c) % 256] = wdata_i[c];
      lut_q <= lut_n;
    end
  end

  // ---- address generation ----
  assign win_first = (dy_q == '0) && (dx_q == '0);
  assign win_last  = (dy_q == pool_k_q - 1'b1) && (dx_q == pool_k_q - 1'b1);
  assign all_last  = win_last && (oy_q == out_h_q - 1'b1) && (ox_q == out_w_q - 1'b1);
  assign acc_row   = 32'(acc_base_q) +
                     (32'(oy_q) * 32'(pool_s_q) + 32'(dy_q)) * 32'(width_q) +
                     32'(ox_q) * 32'(pool_s_q) + 32'(dx_q);
  assign ub_row    = 32'(ub_base_q) + 32'(oy_q) * 32'(ub_stride_q) + 32'(ox_q);
  assign acc_raddr_o = AccW'(acc_row);
  assign ready_o   = !busy_q && !s1_valid_q && !ub_we_q;
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
      if (start_i) begin
        logic [11:0] h, w;
        logic [3:0]  k, s;
        h = instr_i[79:68];
        w = instr_i[67:56];
        k = instr_i[83:80];
        s = instr_i[87:84];
        busy_q      <= 1'b1;
        func_q      <= instr_i[9:8];
        out_uns_q   <= instr_i[10];
        acc_base_q  <= instr_i[31:16];
        ub_base_q   <= instr_i[55:32];
        width_q     <= w;
        pool_k_q    <= k;
        pool_s_q    <= s;
        ub_stride_q <= instr_i[111:88];
        slot_q      <= SlotW'(instr_i[115:112]);
        out_h_q     <= 12'((h - 12'(k)) / 12'(s) + 1'b1);
        out_w_q     <= 12'((w - 12'(k)) / 12'(s) + 1'b1);
        oy_q <= '0;
        ox_q <= '0;
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
            if (ox_q != out_w_q - 1'b1) begin
              ox_q <= ox_q + 1'b1;
            end else begin
              ox_q <= '0;
              oy_q <= oy_q + 1'b1;
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
      s1_ub_addr_q <= UbW'(ub_row);
      s1_acc_q     <= acc_rdata_i;
    end
  end

  // ---- stage 2: requantize, LUT, pool, write (registered UB write) ----
  // Sequential code guarded by s1_valid_q: the N requantizers cost simulation time only for
  // rows actually being activated.
  logic [UbW-1:0] ub_waddr_q;
  logic [7:0]     ub_wdata_q [N];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ub_we_q <= 1'b0;
    else         ub_we_q <= s1_valid_q && s1_last_q && !clear_i;
  end

  always_ff @(posedge clk_i) begin
    if (s1_valid_q) begin
      logic signed [8:0] pool_n [N];
      logic [7:0]        wdata_n [N];
      for (int c = 0; c < int'(N); c++) begin
        logic signed [8:0] y, v;
        logic [7:0] l;
        y = requantize(s1_acc_q[c], prm_q[int'(slot_q)*3 + 0][c], prm_q[int'(slot_q)*3 + 1][c],
                       prm_q[int'(slot_q)*3 + 2][c], func_q, out_uns_q);
        if (func_q == FuncLut) begin
          l = lut_q[y[7:0]];
          y = out_uns_q ? $signed({1'b0, l}) : $signed({l[7], l});
        end
        v = (s1_first_q || y > pool_q[c]) ? y : pool_q[c];
        pool_n[c]  = v;
        wdata_n[c] = v[7:0];
      end
      pool_q     <= pool_n;
      ub_wdata_q <= wdata_n;
      ub_waddr_q <= s1_ub_addr_q;
    end
  end

  assign ub_we_o    = ub_we_q;
  assign ub_waddr_o = ub_waddr_q;
  assign ub_wdata_o = ub_wdata_q;

  // Opcode and reserved fields were checked by the controller, and so were the row ranges:
  // the high address bits of a legal instruction are zero.
  logic unused_bits;
  assign unused_bits = ^{instr_i[127:116], instr_i[15:11], instr_i[7:0],
                         acc_row[31:AccW], ub_row[31:UbW]};

endmodule
