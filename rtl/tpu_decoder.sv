// SPDX-License-Identifier: Apache-2.0
// Instruction decoder: one fetched instruction word -> its decoded form (tpu_pkg::decoded_t):
// the unit that runs it, the command for that unit, the static checks of docs/isa.md (codes
// 1-8) and the footprint the hazard scoreboard needs. Purely combinational; the controller
// (tpu_ctrl) runs it once per instruction, as the instruction enters the instruction queue,
// and keeps the result (the checks are wide arithmetic: once per instruction instead of every
// cycle matters for simulation speed). Without valid_i the decode logic is left still (a
// simulator evaluates it only for fetched words) and the output is zero but for its unit
// (UnitControl); the controller queues only fetched words. The weight-tile checks (codes 12,
// 13) depend on the instructions issued before and stay in the controller. On the int8 chip
// (VmemRows = 0) the training opcodes decode to their ERR_OPCODE only: their footprints and
// commands are constant zero, so neither the decoder nor the controller's instruction queue
// pays for them (docs/synthesis.md). Likewise the link instructions (0x0F-0x10) exist only
// with IciLinks > 0: without links they are ERR_OPCODE and nothing of their decode is built.
//
// Every instruction field is read through the formats of tpu_pkg::instr_t; nothing else in
// the RTL knows the bit positions of the ISA.
`include "tpu_assert.svh"

module tpu_decoder #(
  parameter int unsigned N       = 16,
  parameter int unsigned UbRows  = 8192,
  parameter int unsigned AccRows = 2048,
  parameter int unsigned QpSlots = 16,
  // 0: the int8 chip (opcodes 0x08-0x0E fault ERR_OPCODE); else the training chip's VMEM rows.
  parameter int unsigned VmemRows = 0,
  // 0: a chip without links (opcodes 0x0F-0x10 fault ERR_OPCODE); else the pod's link count.
  parameter int unsigned IciLinks = 0,
  // 0: a chip without the depthwise unit (opcode 0x11 faults ERR_OPCODE); else its DwWidth.
  parameter int unsigned DwWidth = 0,
  // read_weights' host_addr alignment in bytes: 16, or the weight port's beat (docs/isa.md
  // "The weight port"; a power of two).
  parameter int unsigned WeightAlign = 16
) (
  input  logic                                  valid_i,  // instr_i is a fetched word
  input  tpu_pkg::instr_t                        instr_i,
  // DMA windows (tpu_regs), window i in [32i +: 32].
  input  logic [32*tpu_pkg::DmaWindows-1:0]     win_base_i,
  input  logic [32*tpu_pkg::DmaWindows-1:0]     win_size_i,
  // The run's command buffer, host bytes [lo, hi): write_host may not write into it.
  input  logic [63:0]                            cmd_lo_i,
  input  logic [63:0]                            cmd_hi_i,
  // Bit l: link l is connected (ERR_ICI_LINK otherwise; unused without links).
  input  logic [15:0]                            ici_link_up_i,
  output tpu_pkg::decoded_t                      dec_o
);
  localparam logic [63:0] WAlignMask = 64'(WeightAlign) - 64'd1;

  localparam int unsigned LutRows = 256 / N;
  // The training chip. On the int8 chip the training opcodes decode to nothing but their
  // ERR_OPCODE (constant-zero footprints and commands: no hardware for their payload).
  localparam bit Train = VmemRows != 0;
  localparam bit Ici   = IciLinks != 0;
  localparam bit Dw    = DwWidth != 0;

  // Unsigned widening for range arithmetic (all in 64 bits, no wrap).
  function automatic logic [63:0] u64(logic [31:0] v);
    u64 = {32'd0, v};
  endfunction

  // x / d for the pooling output size (x <= 4095 + 7 + 7 - 1 = 4108: the padded span, 1 <= d <=
  // 15) without a divider: a multiply by m = ceil(2^16 / d) and a shift, exact for every such x
  // (not for every 13-bit x; checked exhaustively by
  // tests/driver/isa_test.cpp PoolingDivisionByReciprocalIsExact, same table; docs/isa.md).
  function automatic logic [12:0] div_stride(logic [12:0] x, logic [3:0] d);
    logic [16:0] m;
    unique case (d)
      4'd1:    m = 17'd65536;
      4'd2:    m = 17'd32768;
      4'd3:    m = 17'd21846;
      4'd4:    m = 17'd16384;
      4'd5:    m = 17'd13108;
      4'd6:    m = 17'd10923;
      4'd7:    m = 17'd9363;
      4'd8:    m = 17'd8192;
      4'd9:    m = 17'd7282;
      4'd10:   m = 17'd6554;
      4'd11:   m = 17'd5958;
      4'd12:   m = 17'd5462;
      4'd13:   m = 17'd5042;
      4'd14:   m = 17'd4682;
      4'd15:   m = 17'd4370;
      default: m = 17'd0;  // d = 0 is ERR_FIELD before this is used
    endcase
    div_stride = 13'((30'(x) * 30'(m)) >> 16);
  endfunction

  logic [7:0] opc;
  assign opc = instr_i.plain.opcode;

  // The decoded instruction and the command of each unit (module-level: Yosys 0.23 does not
  // resolve members of struct variables declared inside a block).
  tpu_pkg::decoded_t     dec;
  tpu_pkg::dma_in_cmd_t  dma_in;
  tpu_pkg::wdma_cmd_t    wdma;
  tpu_pkg::dma_wr_cmd_t  dma_out;
  tpu_pkg::mm_cmd_t      mmc;
  tpu_pkg::act_cmd_t     actc;
  tpu_pkg::move_cmd_t    movec;
  tpu_fp_pkg::lw_cmd_t   lwc;
  tpu_ici_pkg::ici_cmd_t icic;
  logic                  mm_bf16;

  // A VMEM row out of range (ERR_VMEM_RANGE): last >= VmemRows (written so that it is no
  // constant comparison when VmemRows = 0; last < 2^60).
  function automatic logic vmem_out(logic [63:0] last);
    vmem_out = last + 64'd1 > 64'(VmemRows);
  endfunction

  // A `vector` func of docs/isa.md's table.
  function automatic logic vec_func_ok(logic [5:0] f);
    vec_func_ok = f <= 6'h08 || (f >= 6'h10 && f <= 6'h1B) || (f >= 6'h20 && f <= 6'h22) ||
                  (f >= 6'h28 && f <= 6'h2A) || (f >= 6'h30 && f <= 6'h32) || f == 6'h38;
  endfunction

  // The training opcodes this chip executes (the others fault ERR_OPCODE).
  function automatic logic train_op_ok(logic [7:0] op);
    train_op_ok = VmemRows != 0 && op >= tpu_pkg::OpReadVmem && op <= tpu_pkg::OpVector &&
                  tpu_pkg::TrainOpsRtl[3'(op - tpu_pkg::OpReadVmem)];
  endfunction

  // dwconv on a chip with the depthwise unit.
  function automatic logic dw_op_ok(logic [7:0] op);
    dw_op_ok = Dw && op == tpu_pkg::OpDwconv;
  endfunction

  // A link instruction on a chip with links.
  function automatic logic ici_op_ok(logic [7:0] op);
    ici_op_ok = Ici && (op == tpu_pkg::OpIciSend || op == tpu_pkg::OpIciRecv);
  endfunction

  // ERR_ICI_LINK: the link is not below IciLinks, or it is not connected.
  function automatic logic ici_link_bad(logic [3:0] link, logic [15:0] up);
    ici_link_bad = {28'd0, link} + 32'd1 > 32'(IciLinks) || !up[link];
  endfunction

  always_comb begin : decode
    logic [63:0] rows, hst, bytes, last_ub, last_acc, inner, outer, h, w, pk, ps, ho, wo, hp, wp;
    logic [63:0] pt, pl, pb, pr;
    logic [63:0] local_last;
    logic [1:0]  dest;
    logic        host_op;
    logic        reserved_bad, field_bad, ub_bad, acc_bad, prm_bad, align_bad, host_bad;
    logic        vmem_bad, opcode_bad, ici_bad;
    logic [63:0] vlo, vlast, vlast2, vrows;

    dec          = '0;
    dma_in       = '0;
    wdma         = '0;
    dma_out      = '0;
    mmc          = '0;
    actc         = '0;
    reserved_bad = 1'b0;
    field_bad    = 1'b0;
    ub_bad       = 1'b0;
    acc_bad      = 1'b0;
    prm_bad      = 1'b0;
    align_bad    = 1'b0;
    host_bad     = 1'b0;
    vmem_bad     = 1'b0;
    opcode_bad   = 1'b0;
    ici_bad      = 1'b0;
    icic         = '0;
    host_op      = 1'b0;
    movec        = '0;
    lwc          = '0;
    mm_bf16      = 1'b0;
    vlo = '0; vlast = '0; vlast2 = '0; vrows = '0;
    dest         = instr_i.host.dest;
    rows  = '0;
    hst   = '0;
    bytes = '0;
    last_ub = '0; last_acc = '0; inner = '0; outer = '0; h = '0; w = '0; pk = '0; ps = '0;
    hp = '0; wp = '0; pt = '0; pl = '0; pb = '0; pr = '0;
    ho = '0; wo = '0; local_last = '0;
    dec.unit = tpu_pkg::UnitControl;

    // Only a fetched word is decoded: the other cycles leave the whole decode still (its
    // result is not used then; a simulator's cost, as the checks are wide arithmetic).
    if (valid_i) begin
      unique case (opc)
        tpu_pkg::OpNop, tpu_pkg::OpSync, tpu_pkg::OpHalt: begin
          reserved_bad = (instr_i.plain.reserved != '0);
          dec.is_sync  = (opc == tpu_pkg::OpSync);
          dec.is_halt  = (opc == tpu_pkg::OpHalt);
        end
        tpu_pkg::OpReadHost, tpu_pkg::OpWriteHost: begin
          host_op = 1'b1;
          rows    = u64({8'd0, instr_i.host.rows});
          hst     = u64(instr_i.host.host_addr);
          if (opc == tpu_pkg::OpReadHost) begin
            reserved_bad = instr_i.host.reserved_lo != '0 || instr_i.host.reserved_hi != '0;
          end else begin
            reserved_bad = instr_i.host.dest != '0 || instr_i.host.reserved_lo != '0 ||
                           instr_i.host.reserved_hi != '0;
            dest = tpu_pkg::DestUb;
          end
          field_bad  = (rows == '0) || (dest == 2'd3);
          local_last = u64({8'd0, instr_i.host.local_addr}) + rows - 1;
          if (dest == tpu_pkg::DestUb) begin
            ub_bad = local_last >= 64'(UbRows);
          end else if (dest == tpu_pkg::DestParam) begin
            prm_bad = local_last >= 64'(QpSlots * tpu_pkg::SlotRows);
          end else begin
            prm_bad = local_last >= 64'(LutRows);
          end
          bytes = rows * N;
          if (opc == tpu_pkg::OpReadHost) begin
            dec.unit = tpu_pkg::UnitReadHost;
            if (dest == tpu_pkg::DestUb) begin
              dec.fp.ub_wr = tpu_pkg::make_range(33'(instr_i.host.local_addr), 33'(local_last));
            end else begin
              dec.fp.param_wr = 1'b1;
            end
            dec.fp.host_rd    = tpu_pkg::make_range(33'(hst), 33'(hst + bytes - 1));
            dma_in.dest       = instr_i.host.dest;
            dma_in.local_addr = instr_i.host.local_addr;
            dma_in.dma.addr   = instr_i.host.host_addr;
            dma_in.dma.rows   = instr_i.host.rows;
          end else begin
            dec.unit = tpu_pkg::UnitWriteHost;
            dec.fp.ub_rd      = tpu_pkg::make_range(33'(instr_i.host.local_addr), 33'(local_last));
            dec.fp.host_wr    = tpu_pkg::make_range(33'(hst), 33'(hst + bytes - 1));
            dma_out.host_addr = instr_i.host.host_addr;
            dma_out.ub_addr   = instr_i.host.local_addr;
            dma_out.rows      = instr_i.host.rows;
          end
        end
        tpu_pkg::OpReadWeights: begin
          dec.unit     = tpu_pkg::UnitReadWeights;
          host_op      = 1'b1;
          rows         = u64({8'd0, instr_i.weights.tiles});
          hst          = u64(instr_i.weights.host_addr);
          reserved_bad = instr_i.weights.reserved_lo != '0 || instr_i.weights.reserved_hi != '0;
          field_bad    = (rows == '0);
          align_bad    = (hst & WAlignMask) != '0;
          bytes        = rows * N * N;
          dec.fp.host_rd = tpu_pkg::make_range(33'(hst), 33'(hst + bytes - 1));
          wdma.tiles    = instr_i.weights.tiles;
          wdma.dma.addr = instr_i.weights.host_addr;
          // A legal read_weights has at most WFifoTiles + 2 tiles.
          wdma.dma.rows = 24'(instr_i.weights.tiles * N);
        end
        tpu_pkg::OpMatmul: begin
          dec.unit     = tpu_pkg::UnitMatmul;
          reserved_bad = instr_i.matmul.reserved_lo != '0 || instr_i.matmul.reserved_hi != '0;
          inner    = u64({20'd0, instr_i.matmul.inner});
          outer    = u64({20'd0, instr_i.matmul.outer});
          field_bad = (inner == '0) || (outer == '0);
          last_ub  = u64({8'd0, instr_i.matmul.ub_addr}) +
                     (outer - 1) * u64({8'd0, instr_i.matmul.outer_stride}) +
                     (inner - 1) * u64({24'd0, instr_i.matmul.inner_stride});
          last_acc = u64({16'd0, instr_i.matmul.acc_addr}) + inner * outer - 1;
          ub_bad   = last_ub >= 64'(UbRows);
          acc_bad  = last_acc >= 64'(AccRows);
          dec.fp.ub_rd  = tpu_pkg::make_range(33'(instr_i.matmul.ub_addr), 33'(last_ub));
          dec.fp.acc_wr = tpu_pkg::make_range(33'(instr_i.matmul.acc_addr), 33'(last_acc));
          if (instr_i.matmul.acc) dec.fp.acc_rd = dec.fp.acc_wr;
          mmc.acc          = instr_i.matmul.acc;
          mmc.a_unsigned   = instr_i.matmul.a_unsigned;
          mmc.w_unsigned   = instr_i.matmul.w_unsigned;
          mmc.switch_tile  = instr_i.matmul.switch_tile;
          mmc.ub_addr      = instr_i.matmul.ub_addr;
          mmc.acc_addr     = instr_i.matmul.acc_addr;
          mmc.inner        = instr_i.matmul.inner;
          mmc.outer        = instr_i.matmul.outer;
          mmc.inner_stride = instr_i.matmul.inner_stride;
          mmc.outer_stride = instr_i.matmul.outer_stride;
        end
        tpu_pkg::OpActivate: begin
          dec.unit     = tpu_pkg::UnitActivate;
          reserved_bad = instr_i.activate.reserved_lo != '0;
          w  = u64({20'd0, instr_i.activate.width});
          h  = u64({20'd0, instr_i.activate.height});
          pk = u64({28'd0, instr_i.activate.pool_k});
          ps = u64({28'd0, instr_i.activate.pool_s});
          // The max-pool padding: each pad below the window; the window inside the padded image.
          pt = u64({29'd0, instr_i.activate.pad_top});
          pl = u64({29'd0, instr_i.activate.pad_left});
          pb = u64({29'd0, instr_i.activate.pad_bottom});
          pr = u64({29'd0, instr_i.activate.pad_right});
          hp = h + pt + pb;
          wp = w + pl + pr;
          field_bad = (w == '0) || (h == '0) || (pk == '0) || (ps == '0) || (pt >= pk) ||
                      (pl >= pk) || (pb >= pk) || (pr >= pk) || (pk > wp) || (pk > hp) ||
                      // A raw int32 output: no pooling, no padding, identity, signed.
                      (instr_i.activate.raw && ((pk != 64'd1) || (ps != 64'd1) ||
                                                (pt + pl + pb + pr != '0) ||
                                                (instr_i.activate.func != tpu_pkg::FuncIdentity) ||
                                                instr_i.activate.out_unsigned));
          if (!field_bad) begin
            ho = u64({19'd0, div_stride(13'(hp - pk), 4'(ps))}) + 1;
            wo = u64({19'd0, div_stride(13'(wp - pk), 4'(ps))}) + 1;
          end
          // A raw pixel is four UB rows (its N int32).
          last_ub  = u64({8'd0, instr_i.activate.ub_addr}) +
                     (ho - 1) * u64({8'd0, instr_i.activate.ub_stride}) +
                     (instr_i.activate.raw ? wo << 2 : wo) - 1;
          last_acc = u64({16'd0, instr_i.activate.acc_addr}) + h * w - 1;
          ub_bad   = last_ub >= 64'(UbRows);
          acc_bad  = last_acc >= 64'(AccRows);
          prm_bad  = u64({28'd0, instr_i.activate.slot}) >= 64'(QpSlots);
          dec.fp.acc_rd   = tpu_pkg::make_range(33'(instr_i.activate.acc_addr), 33'(last_acc));
          dec.fp.ub_wr    = tpu_pkg::make_range(33'(instr_i.activate.ub_addr), 33'(last_ub));
          dec.fp.param_rd = 1'b1;
          actc.func         = instr_i.activate.func;
          actc.out_unsigned = instr_i.activate.out_unsigned;
          actc.acc_addr     = instr_i.activate.acc_addr;
          actc.ub_addr      = instr_i.activate.ub_addr;
          actc.width        = instr_i.activate.width;
          actc.height       = instr_i.activate.height;
          actc.pool_k       = instr_i.activate.pool_k;
          actc.pool_s       = instr_i.activate.pool_s;
          actc.ub_stride    = instr_i.activate.ub_stride;
          actc.slot         = instr_i.activate.slot;
          actc.pad_top      = instr_i.activate.pad_top;
          actc.pad_left     = instr_i.activate.pad_left;
          actc.pad_bottom   = instr_i.activate.pad_bottom;
          actc.pad_right    = instr_i.activate.pad_right;
          actc.raw          = instr_i.activate.raw;
        end
        tpu_pkg::OpReadVmem, tpu_pkg::OpWriteVmem: if (Train) begin
          // Rows of R = 4N bytes (2N with bf16) at host_addr + i * S, S = host_stride or R.
          host_op      = 1'b1;
          reserved_bad = instr_i.vmem_dma.reserved_lo != '0 || instr_i.vmem_dma.reserved_hi != '0;
          rows         = u64({8'd0, instr_i.vmem_dma.rows});
          hst          = u64(instr_i.vmem_dma.host_addr);
          field_bad    = (rows == '0);
          w            = instr_i.vmem_dma.bf16 ? 64'(2 * N) : 64'(4 * N);      // R
          h            = (instr_i.vmem_dma.host_stride == '0) ? w :
                         u64(instr_i.vmem_dma.host_stride);                      // S
          bytes        = field_bad ? 64'd0 : (rows - 1) * h + w;
          align_bad    = instr_i.vmem_dma.host_stride[3:0] != '0;
          vlo          = u64({16'd0, instr_i.vmem_dma.vmem_addr});
          vlast        = vlo + rows - 1;
          vmem_bad     = vmem_out(vlast);
          if (opc == tpu_pkg::OpReadVmem) begin
            dec.unit       = tpu_pkg::UnitReadHost;
            dec.fp.host_rd = tpu_pkg::make_range(33'(hst), 33'(hst + bytes - 1));
            dec.fp.vmem_wr = tpu_pkg::make_range(33'(vlo), 33'(vlast));
            dma_in.vmem       = 1'b1;
            dma_in.bf16       = instr_i.vmem_dma.bf16;
            dma_in.stride     = instr_i.vmem_dma.host_stride;
            dma_in.dest       = tpu_pkg::DestNone;
            dma_in.local_addr = {8'd0, instr_i.vmem_dma.vmem_addr};
            dma_in.dma.addr   = instr_i.vmem_dma.host_addr;
            dma_in.dma.rows   = instr_i.vmem_dma.rows;
          end else begin
            dec.unit       = tpu_pkg::UnitWriteHost;
            dec.fp.vmem_rd = tpu_pkg::make_range(33'(vlo), 33'(vlast));
            dec.fp.host_wr = tpu_pkg::make_range(33'(hst), 33'(hst + bytes - 1));
            dma_out.vmem      = 1'b1;
            dma_out.bf16      = instr_i.vmem_dma.bf16;
            dma_out.stride    = instr_i.vmem_dma.host_stride;
            dma_out.host_addr = instr_i.vmem_dma.host_addr;
            dma_out.ub_addr   = {8'd0, instr_i.vmem_dma.vmem_addr};
            dma_out.rows      = instr_i.vmem_dma.rows;
          end
        end
        tpu_pkg::OpLoadWeights: if (Train) begin
          dec.unit     = tpu_pkg::UnitLoadWeights;
          // Field by field: Yosys 0.23 reads no assignment patterns.
          lwc.transpose   = instr_i.load_weights.transpose;
          lwc.vmem_addr   = instr_i.load_weights.vmem_addr;
          lwc.row_stride  = instr_i.load_weights.row_stride;
          lwc.tiles       = instr_i.load_weights.tiles;
          lwc.tile_stride = instr_i.load_weights.tile_stride;
          lwc.rows        = instr_i.load_weights.rows;
          reserved_bad = instr_i.load_weights.reserved_lo != '0 ||
                         instr_i.load_weights.reserved_hi != '0;
          rows      = 64'(instr_i.load_weights.rows);
          field_bad = instr_i.load_weights.tiles == '0 || rows == '0 || rows > 64'(N);
          vlo       = u64({16'd0, instr_i.load_weights.vmem_addr});
          if (!field_bad) begin
            vlast = vlo + u64({16'd0, instr_i.load_weights.tiles - 16'd1}) *
                          u64({16'd0, instr_i.load_weights.tile_stride}) +
                    (rows - 1) * u64({16'd0, instr_i.load_weights.row_stride});
          end
          vmem_bad       = vmem_out(vlast);
          dec.fp.vmem_rd = tpu_pkg::make_range(33'(vlo), 33'(vlast));
        end
        tpu_pkg::OpMatmulBf16: if (Train) begin
          dec.unit         = tpu_pkg::UnitMatmul;
          mm_bf16          = 1'b1;
          mmc.acc          = instr_i.matmul_bf16.acc;
          mmc.switch_tile  = instr_i.matmul_bf16.switch_tile;
          mmc.ub_addr      = {8'd0, instr_i.matmul_bf16.vmem_addr};
          mmc.acc_addr     = instr_i.matmul_bf16.acc_addr;
          mmc.inner        = instr_i.matmul_bf16.inner;
          mmc.outer        = instr_i.matmul_bf16.outer;
          mmc.inner_stride = instr_i.matmul_bf16.inner_stride;
          mmc.outer_stride = {8'd0, instr_i.matmul_bf16.outer_stride};
          reserved_bad = instr_i.matmul_bf16.reserved_lo != '0 ||
                         instr_i.matmul_bf16.reserved_mid != '0 ||
                         instr_i.matmul_bf16.reserved_hi != '0;
          inner     = u64({20'd0, instr_i.matmul_bf16.inner});
          outer     = u64({20'd0, instr_i.matmul_bf16.outer});
          field_bad = (inner == '0) || (outer == '0);
          vlo       = u64({16'd0, instr_i.matmul_bf16.vmem_addr});
          if (!field_bad) begin
            vlast = vlo + (outer - 1) * u64({16'd0, instr_i.matmul_bf16.outer_stride}) +
                    (inner - 1) * u64({24'd0, instr_i.matmul_bf16.inner_stride});
          end
          last_acc = u64({16'd0, instr_i.matmul_bf16.acc_addr}) + inner * outer - 1;
          acc_bad  = !field_bad && last_acc >= 64'(AccRows);
          vmem_bad = vmem_out(vlast);
          dec.fp.vmem_rd = tpu_pkg::make_range(33'(vlo), 33'(vlast));
          dec.fp.acc_wr  = tpu_pkg::make_range(33'(instr_i.matmul_bf16.acc_addr), 33'(last_acc));
          if (instr_i.matmul_bf16.acc) dec.fp.acc_rd = dec.fp.acc_wr;
        end
        tpu_pkg::OpAccToVmem: if (Train) begin
          dec.unit     = tpu_pkg::UnitMove;
          reserved_bad = instr_i.acc_to_vmem.reserved_lo != '0 ||
                         instr_i.acc_to_vmem.reserved_hi != '0;
          rows      = u64({8'd0, instr_i.acc_to_vmem.rows});
          field_bad = (rows == '0);
          last_acc  = u64({16'd0, instr_i.acc_to_vmem.acc_addr}) + rows - 1;
          acc_bad   = !field_bad && last_acc >= 64'(AccRows);
          vlo       = u64({16'd0, instr_i.acc_to_vmem.vmem_addr});
          vlast     = vlo + rows - 1;
          vmem_bad  = vmem_out(vlast);
          dec.fp.acc_rd  = tpu_pkg::make_range(33'(instr_i.acc_to_vmem.acc_addr), 33'(last_acc));
          dec.fp.vmem_wr = tpu_pkg::make_range(33'(vlo), 33'(vlast));
          movec.transpose = 1'b0;
          movec.src       = instr_i.acc_to_vmem.acc_addr;
          movec.dst       = instr_i.acc_to_vmem.vmem_addr;
          movec.count     = instr_i.acc_to_vmem.rows;
        end
        tpu_pkg::OpTranspose: if (Train) begin
          dec.unit     = tpu_pkg::UnitMove;
          reserved_bad = instr_i.transpose.reserved_lo != '0 ||
                         instr_i.transpose.reserved_hi != '0;
          rows      = 64'(instr_i.transpose.blocks);
          field_bad = (rows == '0);
          vlo       = u64({16'd0, instr_i.transpose.src});
          vrows     = u64({16'd0, instr_i.transpose.dst});
          if (!field_bad) begin
            vlast  = vlo + (rows - 1) * u64({16'd0, instr_i.transpose.src_stride}) +
                     (64'(N) - 64'd1) * u64({16'd0, instr_i.transpose.src_row_stride});
            vlast2 = vrows + (rows - 1) * u64({16'd0, instr_i.transpose.dst_stride}) + 64'(N) - 64'd1;
          end
          vmem_bad = vmem_out(vlast) || vmem_out(vlast2);
          dec.fp.vmem_rd = tpu_pkg::make_range(33'(vlo), 33'(vlast));
          dec.fp.vmem_wr = tpu_pkg::make_range(33'(vrows), 33'(vlast2));
          movec.transpose      = 1'b1;
          movec.src            = instr_i.transpose.src;
          movec.dst            = instr_i.transpose.dst;
          movec.count          = {8'd0, instr_i.transpose.blocks};
          movec.src_stride     = instr_i.transpose.src_stride;
          movec.dst_stride     = instr_i.transpose.dst_stride;
          movec.src_row_stride = instr_i.transpose.src_row_stride;
        end
        tpu_pkg::OpVector: if (Train) begin
          dec.unit  = tpu_pkg::UnitVector;
          inner     = 64'(instr_i.vec.inner);
          outer     = 64'(instr_i.vec.outer);
          field_bad = inner == '0 || outer == '0 || !vec_func_ok(instr_i.vec.func) ||
                      (tpu_vpu_pkg::vpu_is_unary(instr_i.vec.func) &&
                       (instr_i.vec.bmode != '0 || instr_i.vec.b != '0)) ||
                      (tpu_vpu_pkg::vpu_is_align(instr_i.vec.func) &&
                       (instr_i.vec.bmode != tpu_vpu_pkg::BModeImm || instr_i.vec.b >= 32'(N)));
          if (!field_bad) begin
            // The last destination row, the last A row (+1 for align with s > 0), the B rows.
            vlast2 = 64'(instr_i.vec.dst) + (outer - 1) * 64'(instr_i.vec.dst_outer_stride) +
                     (inner - 1) * 64'(instr_i.vec.dst_inner_stride);
            vlast  = 64'(instr_i.vec.a) + (outer - 1) * 64'(instr_i.vec.a_outer_stride) +
                     (inner - 1) * 64'(instr_i.vec.a_inner_stride) +
                     ((tpu_vpu_pkg::vpu_is_align(instr_i.vec.func) && instr_i.vec.b != '0) ?
                      64'd1 : 64'd0);
            vlo    = 64'(instr_i.vec.a);
            if (!tpu_vpu_pkg::vpu_is_unary(instr_i.vec.func) &&
                instr_i.vec.bmode != tpu_vpu_pkg::BModeImm) begin
              vrows = 64'(instr_i.vec.b);
              unique case (instr_i.vec.bmode)
                tpu_vpu_pkg::BModeRowA:
                  vrows = vrows + (outer - 1) * 64'(instr_i.vec.a_outer_stride) +
                          (inner - 1) * 64'(instr_i.vec.a_inner_stride);
                tpu_vpu_pkg::BModeRowDst:
                  vrows = vrows + (outer - 1) * 64'(instr_i.vec.dst_outer_stride) +
                          (inner - 1) * 64'(instr_i.vec.dst_inner_stride);
                default: ;
              endcase
              vmem_bad = vmem_out(vrows);
              // The rows read: A's and B's bounding interval.
              if (64'(instr_i.vec.b) < vlo) vlo = 64'(instr_i.vec.b);
              if (vrows > vlast && !vmem_bad) vlast = vrows;
            end
            vmem_bad = vmem_bad || vmem_out(vlast2) || vmem_out(vlast);
          end
          dec.fp.vmem_rd = tpu_pkg::make_range(33'(vlo), 33'(vlast));
          dec.fp.vmem_wr = tpu_pkg::make_range(33'(instr_i.vec.dst), 33'(vlast2));
        end
        // The link instructions, in the default arm: without links (Ici = 0) the case is the
        // one the chip always had, so that chip's decode does not change (docs/synthesis.md).
        tpu_pkg::OpDwconv: if (Dw) begin
          // isa.md "dwconv": no reserved bits; ERR_FIELD, ERR_UB_RANGE, ERR_ACC_RANGE.
          dec.unit = tpu_pkg::UnitDw;
          w  = u64({20'd0, instr_i.dwconv.width});
          h  = u64({20'd0, instr_i.dwconv.height});
          pk = u64({30'd0, instr_i.dwconv.kernel_h});  // kh
          ps = u64({30'd0, instr_i.dwconv.kernel_w});  // kw
          pt = u64({30'd0, instr_i.dwconv.pad_top});
          pl = u64({30'd0, instr_i.dwconv.pad_left});
          pb = u64({30'd0, instr_i.dwconv.pad_bottom});
          pr = u64({30'd0, instr_i.dwconv.pad_right});
          hp = h + pt + pb;
          wp = w + pl + pr;
          field_bad = (w == '0) || (h == '0) || (pk == '0) || (ps == '0) || (pt >= pk) ||
                      (pb >= pk) || (pl >= ps) || (pr >= ps) || (hp < pk) || (wp < ps);
          if (!field_bad) begin
            ho = ((hp - pk) >> instr_i.dwconv.stride2) + 64'd1;
            wo = ((wp - ps) >> instr_i.dwconv.stride2) + 64'd1;
          end
          last_ub    = u64({8'd0, instr_i.dwconv.ub_addr}) +
                       (h - 1) * u64({16'd0, instr_i.dwconv.ub_stride}) + w - 1;
          local_last = u64({8'd0, instr_i.dwconv.w_addr}) + pk * ps;  // the zero-point row
          last_acc   = u64({16'd0, instr_i.dwconv.acc_addr}) + ho * wo - 1;
          ub_bad     = last_ub >= 64'(UbRows) || local_last >= 64'(UbRows);
          acc_bad    = last_acc >= 64'(AccRows);
          // The two UB read ranges (input, weights) as one: their hull (conservative).
          vlo   = u64({8'd0, instr_i.dwconv.ub_addr});
          vrows = u64({8'd0, instr_i.dwconv.w_addr});
          dec.fp.ub_rd  = tpu_pkg::make_range(33'(vlo < vrows ? vlo : vrows),
                                              33'(last_ub > local_last ? last_ub : local_last));
          dec.fp.acc_wr = tpu_pkg::make_range(33'(instr_i.dwconv.acc_addr), 33'(last_acc));
          if (instr_i.dwconv.acc) dec.fp.acc_rd = dec.fp.acc_wr;
        end
        default: if (ici_op_ok(opc)) begin
          // One message of `rows` VMEM rows over `link` (docs/isa.md "Inter-chip links").
          dec.unit     = tpu_pkg::UnitIci;
          icic.recv    = (opc == tpu_pkg::OpIciRecv);
          icic.reduce  = icic.recv ? instr_i.ici.reduce : 2'd0;
          icic.link    = instr_i.ici.link;
          icic.vmem    = instr_i.ici.vmem_addr;
          icic.rows    = instr_i.ici.rows;
          reserved_bad = instr_i.ici.reserved_lo != '0 || instr_i.ici.reserved_hi != '0 ||
                         (!icic.recv && instr_i.ici.reduce != '0);
          rows      = u64({8'd0, instr_i.ici.rows});
          field_bad = rows == '0 || (icic.recv && instr_i.ici.reduce > tpu_ici_pkg::ReduceIadd);
          vlo       = u64({16'd0, instr_i.ici.vmem_addr});
          vlast     = vlo + rows - 1;
          vmem_bad  = !field_bad && vmem_out(vlast);
          ici_bad   = ici_link_bad(instr_i.ici.link, ici_link_up_i);
          // A send reads its rows; a receive writes them (and reads them with reduce).
          if (icic.recv) begin
            dec.fp.vmem_wr = tpu_pkg::make_range(33'(vlo), 33'(vlast));
            if (icic.reduce != tpu_ici_pkg::ReduceCopy) dec.fp.vmem_rd = dec.fp.vmem_wr;
          end else begin
            dec.fp.vmem_rd = tpu_pkg::make_range(33'(vlo), 33'(vlast));
          end
        end
      endcase

      if (host_op) begin
        align_bad = align_bad || hst[3:0] != '0;  // (read_vmem / write_vmem: host_stride too)
        host_bad  = (hst + bytes > 64'h1_0000_0000) ||
                    !tpu_pkg::in_windows(hst, bytes, win_base_i, win_size_i);
        // A write_host may not write into its own command buffer (docs/isa.md): the chip
        // prefetches instructions, so whether such a write would change a fetched instruction
        // would depend on timing.
        if ((opc == tpu_pkg::OpWriteHost || opc == tpu_pkg::OpWriteVmem) && hst < cmd_hi_i &&
            cmd_lo_i < hst + bytes) begin
          host_bad = 1'b1;
        end
      end

      // The first failing check in code order wins (docs/isa.md "Errors": codes 1-8, then 14).
      opcode_bad = opc > tpu_pkg::OpHalt && !train_op_ok(opc) && !ici_op_ok(opc) &&
                   !dw_op_ok(opc);
      dec.err = tpu_pkg::ErrNone;
      if (opcode_bad)             dec.err = tpu_pkg::ErrOpcode;
      else if (reserved_bad)      dec.err = tpu_pkg::ErrReserved;
      else if (field_bad)         dec.err = tpu_pkg::ErrField;
      else if (ub_bad)            dec.err = tpu_pkg::ErrUbRange;
      else if (acc_bad)           dec.err = tpu_pkg::ErrAccRange;
      else if (prm_bad)           dec.err = tpu_pkg::ErrParamRange;
      else if (align_bad)         dec.err = tpu_pkg::ErrAlign;
      else if (host_bad)          dec.err = tpu_pkg::ErrHostRange;
      else if (vmem_bad)          dec.err = tpu_pkg::ErrVmemRange;
      else if (ici_bad)           dec.err = tpu_pkg::ErrIciLink;
      // An opcode this chip does not execute has no unit.
      if (opcode_bad) dec.unit = tpu_pkg::UnitControl;

      // The unit's command (the other union members are not used by that unit).
      unique case (dec.unit)
        tpu_pkg::UnitReadHost:    dec.cmd.dma_in.cmd  = dma_in;
        tpu_pkg::UnitReadWeights: dec.cmd.wdma.cmd    = wdma;
        tpu_pkg::UnitMatmul: begin
          dec.cmd.mm.cmd  = mmc;
          dec.cmd.mm.bf16 = mm_bf16;
        end
        tpu_pkg::UnitLoadWeights: dec.cmd.lw.cmd      = lwc;
        tpu_pkg::UnitActivate:    dec.cmd.act.cmd     = actc;
        tpu_pkg::UnitWriteHost:   dec.cmd.dma_out.cmd = dma_out;
        tpu_pkg::UnitMove:        dec.cmd.move.cmd    = movec;
        tpu_pkg::UnitVector:      dec.cmd.vec.cmd     = instr_i[127:8];
        default: ;
      endcase
      if (Ici && dec.unit == tpu_pkg::UnitIci) dec.cmd.ici.cmd = icic;
      if (Dw && dec.unit == tpu_pkg::UnitDw) dec.cmd.dw.cmd = instr_i[127:8];
    end
  end
  assign dec_o = dec;

  // The hand-written widths of tpu_pkg (Yosys 0.23 cannot take $bits() of a type) are right.
  `TPU_ASSERT_INIT(PkgInstrW, $bits(tpu_pkg::instr_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_plain_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_host_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_weights_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_matmul_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_activate_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_vmem_dma_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_load_weights_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_matmul_bf16_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_acc_to_vmem_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_transpose_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_vector_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_ici_t) == tpu_pkg::InstrW &&
                              $bits(tpu_pkg::instr_dwconv_t) == tpu_pkg::InstrW)
  `TPU_ASSERT_INIT(PkgCmdW, $bits(tpu_pkg::dma_rd_cmd_t) == tpu_pkg::DmaRdW &&
                            $bits(tpu_pkg::dma_in_cmd_t) == tpu_pkg::DmaInW &&
                            $bits(tpu_pkg::wdma_cmd_t) == tpu_pkg::WdmaW &&
                            $bits(tpu_pkg::dma_wr_cmd_t) == tpu_pkg::DmaWrW &&
                            $bits(tpu_pkg::mm_cmd_t) == tpu_pkg::MmCmdW &&
                            $bits(tpu_pkg::act_cmd_t) == tpu_pkg::ActCmdW &&
                            $bits(tpu_pkg::move_cmd_t) == tpu_pkg::MoveW &&
                            $bits(tpu_vpu_pkg::vpu_cmd_t) == tpu_pkg::VecCmdW &&
                            $bits(tpu_fp_pkg::lw_cmd_t) == tpu_pkg::LwCmdW &&
                            $bits(tpu_ici_pkg::ici_cmd_t) == tpu_pkg::IciCmdW &&
                            tpu_pkg::VecCmdW == tpu_pkg::CmdW &&
                            $bits(tpu_pkg::cmd_u) == tpu_pkg::CmdW)
  `TPU_ASSERT_INIT(DecIciNeedsVmem, IciLinks == 0 || (VmemRows != 0 && IciLinks <= 16))
  `TPU_ASSERT_INIT(PkgDecW, $bits(tpu_pkg::err_e) == tpu_pkg::ErrW &&
                            $bits(tpu_pkg::range_t) == tpu_pkg::RangeW &&
                            $bits(tpu_pkg::footprint_t) == tpu_pkg::FpW &&
                            $bits(tpu_pkg::decoded_t) == tpu_pkg::DecW)

endmodule
