#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The RTL mutants of scripts/mutate.sh, and the tool that applies them.

Each mutant is (id, file under rtl/, the exact original text, its replacement, description);
original and replacement may be tuples (several edits of the same file, one bug). Each
original must occur exactly once in the file: after the RTL changes, a mutant whose
anchor is gone or ambiguous is reported (and mutate.sh stops) so it can be re-anchored.

    scripts/mutants.py list                      id, file and description of every mutant
    scripts/mutants.py check RTL_DIR [ID...]     exit 1 unless every (given) mutant applies
    scripts/mutants.py apply RTL_DIR ID          mutate RTL_DIR/<file> in place
"""
import sys

# (id, file, original(s), replacement(s), description). Plausible small bugs across the units.
MUTANTS = [
    # Controller: in-flight matmul table, scoreboard, weight-tile checks.
    ("ctrl_mm_room", "tpu_ctrl.sv",
     ("assign mm_cmd_valid_o     = head_go && head.unit == tpu_pkg::UnitMatmul && !mm_full;",
      "tpu_pkg::UnitMatmul:      unit_ready = mm_cmd_ready_i && !mm_full;"),
     ("assign mm_cmd_valid_o     = head_go && head.unit == tpu_pkg::UnitMatmul;",
      "tpu_pkg::UnitMatmul:      unit_ready = mm_cmd_ready_i;"),
     "a matmul issues without room in the in-flight matmul table (issue 15's survivor)"),
    ("fifo_peek_youngest", "tpu_fifo.sv",
     "slot_valid_o[j] = age < 32'(cnt_q);",
     "slot_valid_o[j] = age + 1 < 32'(cnt_q);",
     "the matmul table's peek hides the youngest in-flight matmul from the scoreboard"),
    ("ctrl_mm_conf_stale", "tpu_ctrl.sv",
     "(mm_slot_valid & conf_mm_d) != '0",
     "(mm_slot_valid & conf_mm_q) != '0",
     "the matmul-table conflicts of a new head are those of the previous head for a cycle"),
    ("ctrl_head_new", "tpu_ctrl.sv",
     "assign head_new_d = iq_pop || iq_flush || (iq_push && iq_empty);",
     "assign head_new_d = iq_pop || iq_flush;",
     "conflicts not recomputed for an instruction arriving in an empty queue"),
    ("ctrl_haz_act", "tpu_ctrl.sv",
     "(act_busy_i && conf_unit_d[3])",
     "(1'b0 && conf_unit_d[3])",
     "no hazard check against the running activate"),
    ("ctrl_haz_dmain", "tpu_ctrl.sv",
     "(dmain_busy_i && conf_unit_d[0])",
     "(1'b0 && conf_unit_d[0])",
     "no hazard check against the running read_host"),
    ("ctrl_haz_dmaout", "tpu_ctrl.sv",
     "(dmaout_busy_i && conf_unit_d[4])",
     "(1'b0 && conf_unit_d[4])",
     "no hazard check against the running write_host"),
    ("ctrl_haz_wdma_prev", "tpu_ctrl.sv",
     "(wdma_busy_i && conf_unit_d[2])",
     "(1'b0 && conf_unit_d[2])",
     "no hazard check against the older of two overlapped read_weights"),
    # Controller: which of several AXI errors is reported (ERR_PC: the oldest in program order).
    ("ctrl_err_wr_over_rh", "tpu_ctrl.sv",
     "(!dmain_err_i || pc_dmaout_q < pc_dmain_q) &&",
     "1'b1 &&",
     "a write_host's AXI error wins over a read_host's reported in the same cycle, also when "
     "the write_host is the younger"),
    ("ctrl_err_wr_over_rw", "tpu_ctrl.sv",
     "(!wdma_err_i || pc_dmaout_q < wdma_err_pc);",
     "1'b1;",
     "a write_host's AXI error wins over a read_weights' reported in the same cycle, also when "
     "the write_host is the younger"),
    ("ctrl_err_rd_over_wr", "tpu_ctrl.sv",
     ("(!dmain_err_i || pc_dmaout_q < pc_dmain_q) &&",
      "(!wdma_err_i || pc_dmaout_q < wdma_err_pc);"),
     ("!dmain_err_i &&",
      "!wdma_err_i;"),
     "a read's AXI error wins over a write_host's reported in the same cycle, also when the "
     "write_host is the older (bug 3 of docs/verification.md)"),
    ("ctrl_wdma_err_pc_newest", "tpu_ctrl.sv",
     "assign wdma_err_pc = wdma_err_prev_i ? pc_wdma_prev_q : pc_wdma_q;",
     "assign wdma_err_pc = pc_wdma_q;",
     "an AXI error of the older of two overlapped read_weights is reported at the younger"),
    ("ctrl_weight_limit", "tpu_ctrl.sv",
     "64'(credit_q) + {40'd0, head.cmd.wdma.cmd.tiles} > 64'(WFifoTiles) + 64'd2",
     "64'(credit_q) + {40'd0, head.cmd.wdma.cmd.tiles} > 64'(WFifoTiles) + 64'd3",
     "ERR_WEIGHT_OVERFLOW one tile too late"),
    ("ctrl_no_weights", "tpu_ctrl.sv",
     "(head.cmd.mm.cmd.switch_tile ? (credit_q == '0) : !switched_q)",
     "(head.cmd.mm.cmd.switch_tile ? (credit_q == '0) : 1'b0)",
     "no ERR_NO_WEIGHTS for a matmul without switch before any tile was made active"),
    # Decoder: static checks and error codes.
    ("dec_div_entry", "tpu_decoder.sv",
     "4'd13:   m = 17'd5042;",
     "4'd13:   m = 17'd5043;",
     "a wrong entry of the pooling division's reciprocal table (stride 13: exact only for "
     "dividends below about 2850)"),
    ("dec_err_priority", "tpu_decoder.sv",
     "else if (align_bad)         dec.err = tpu_pkg::ErrAlign;\n"
     "      else if (host_bad)          dec.err = tpu_pkg::ErrHostRange;",
     "else if (host_bad)          dec.err = tpu_pkg::ErrHostRange;\n"
     "      else if (align_bad)         dec.err = tpu_pkg::ErrAlign;",
     "ERR_HOST_RANGE takes precedence over ERR_ALIGN"),
    ("dec_outer_zero", "tpu_decoder.sv",
     "outer    = u64({20'd0, instr_i.matmul.outer});\n          field_bad = (inner == '0) || (outer == '0);",
     "outer    = u64({20'd0, instr_i.matmul.outer});\n          field_bad = (inner == '0);",
     "a matmul with outer = 0 is not ERR_FIELD"),
    ("dec_pad_eq_window", "tpu_decoder.sv",
     "(ps == '0) || (pt >= pk) ||\n                      (pl >= pk)",
     "(ps == '0) || (pt > pk) ||\n                      (pl >= pk)",
     "a top pad equal to the pooling window is accepted"),
    ("dec_host_ub_last", "tpu_decoder.sv",
     "ub_bad = local_last >= 64'(UbRows);",
     "ub_bad = local_last > 64'(UbRows);",
     "read_host / write_host may touch the UB row one past the end"),
    ("dec_act_acc_last", "tpu_decoder.sv",
     "last_acc = u64({16'd0, instr_i.activate.acc_addr}) + h * w - 1;",
     "last_acc = u64({16'd0, instr_i.activate.acc_addr}) + h * w - 2;",
     "activate's ACC range (range check and footprint) one row short"),
    # Register block and counters.
    ("regs_cycles_done", "tpu_regs.sv",
     "if (busy_i) counter_d[64*i +: 64] = counter_q[i] + 64'(count_inc_i[32*i +: 32]);",
     "if (busy_i || done_i || error_i) counter_d[64*i +: 64] = counter_q[i] + 64'(count_inc_i[32*i +: 32]);",
     "the counters also count the done / error cycle (CYCLES one too many; issue 15's survivor)"),
    ("regs_counter_clear", "tpu_regs.sv",
     "        err_pc_d   = '0;\n"
     "        counter_d  = '0;",
     "        err_pc_d   = '0;",
     "START does not clear the counters"),
    ("regs_start_busy", "tpu_regs.sv",
     "end else if (wdata_i[CtrlStartBit] && !busy_i) begin",
     "end else if (wdata_i[CtrlStartBit]) begin",
     "START while busy is not ignored"),
    ("regs_rw1c", "tpu_regs.sv",
     "irq_status_d = (irq_status_q & ~wdata_i[1:0]) | irq_status_set;",
     "irq_status_d = (irq_status_q & wdata_i[1:0]) | irq_status_set;",
     "IRQ_STATUS write clears the bits written 0 instead of 1"),
    ("regs_rw1c_set_lost", "tpu_regs.sv",
     "irq_status_d = (irq_status_q & ~wdata_i[1:0]) | irq_status_set;",
     "irq_status_d = irq_status_q & ~wdata_i[1:0];",
     "a done/error pulse in the cycle of an IRQ_STATUS write is lost"),
    ("regs_err_pc", "tpu_regs.sv",
     "err_pc_d     = error_i ? err_pc_i : err_pc_q;",
     "err_pc_d     = error_i ? pc_i : err_pc_q;",
     "ERR_PC latches the issue PC instead of the faulting instruction"),
    ("regs_win_bit", "tpu_regs.sv",
     "if (a[2]) win_size_d[32*i +: 32] = wdata_i;",
     "if (a[3]) win_size_d[32*i +: 32] = wdata_i;",
     "WIN_BASE / WIN_SIZE writes decoded by the wrong address bit"),
    ("regs_read_irq_enable", "tpu_regs.sv",
     "RegIrqEnable:       rd_value = {30'd0, irq_enable_q};",
     "RegIrqEnable:       rd_value = {30'd0, irq_status_q};",
     "reading IRQ_ENABLE answers IRQ_STATUS"),
    ("ctrl_input_stall_any", "tpu_ctrl.sv",
     "assign input_stall_o = can_decide && head.unit == tpu_pkg::UnitMatmul && unit_ready && hazard;",
     "assign input_stall_o = can_decide && unit_ready && hazard;",
     "INPUT_STALL counts the dependency waits of every unit, not only the matmul's"),
    ("core_act_busy_held", "tpu_core.sv",
     "assign count_inc[288 +: 32] = 32'(act_reading);",
     "assign count_inc[288 +: 32] = 32'(act_busy);",
     "ACT_BUSY counts the cycles the activation unit is busy, not those it reads a row"),
    ("core_dma_busy_fetch", "tpu_core.sv",
     "32'(fetch_active || dmain_active || wdma_active || dmaout_active ||",
     "32'(dmain_active || wdma_active || dmaout_active ||",
     "DMA_BUSY leaves out the instruction fetch"),
    ("core_wr_bytes_stall", "tpu_core.sv",
     "assign count_inc[224 +: 32] = ((m_axi_wvalid_o && m_axi_wready_i)",
     "assign count_inc[224 +: 32] = ((m_axi_wvalid_o)",
     "DMA_WR_BYTES counts the W beats on m_axi_* that wait for WREADY"),
    # DMA.
    ("dmard_err_prev_start", "tpu_dma_reader.sv",
     "row_err_prev_d = beat_err && ((prev_bursts_q != '0) || (start && busy_q));",
     "row_err_prev_d = beat_err && (prev_bursts_q != '0);",
     "an older read_weights' error beat arriving in the cycle a younger read_weights starts "
     "is attributed to the younger"),
    ("dmard_4k", "tpu_dma_reader.sv",
     "if (32'(to_4k) < 32'(burst_beats))        burst_beats = 9'(to_4k);",
     "// mutant: read bursts not cut at 4 KiB",
     "read bursts may cross a 4 KiB boundary"),
    ("dmard_room", "tpu_dma_reader.sv",
     "if (free_beats < 32'(burst_beats))   burst_beats = 9'(free_beats);",
     "// mutant: read bursts not cut to the room in the sink",
     "read bursts not limited by the room left in the sink"),
    ("dmawr_4k", "tpu_dma_writer.sv",
     "if (to_4k < 32'(burst_beats))        burst_beats = 9'(to_4k);",
     "// mutant: write bursts not cut at 4 KiB",
     "write bursts may cross a 4 KiB boundary"),
    ("dmawr_slverr", "tpu_dma_writer.sv",
     "if (b_resp_i != 2'b00) err_d = 1'b1;",
     "if (b_resp_i == 2'b11) err_d = 1'b1;",
     "write SLVERR ignored (only DECERR faults)"),
    ("arb_full", "tpu_axi_rd_arb.sv",
     "if (any && !full) begin",
     "if (any) begin",
     "AR taken although the owner FIFO is full"),
    # Activation unit: requantizer, functions, pooling, padding.
    ("act_round_neg_tie", "tpu_pkg.sv",
     "up   = (shift != 6'd0) && (p[63] ? (rem > half) : (rem >= half));",
     "up   = (shift != 6'd0) && (p[63] ? (rem >= half) : (rem >= half));",
     "negative ties round toward zero (half up instead of half away from zero)"),
    ("act_bias_sat", "tpu_pkg.sv",
     "if (sum > 33'sh0_7FFF_FFFF)       add_bias = 32'sh7FFF_FFFF;",
     "if (sum > 33'sh0_7FFF_FFFF)       add_bias = sum[31:0];",
     "bias add wraps instead of saturating upwards"),
    ("act_relu_zp", "tpu_pkg.sv",
     "FuncRelu:  requantize = (y < zp) ? zp : y;",
     "FuncRelu:  requantize = (y < 9'sd0) ? 9'sd0 : y;",
     "relu clamps at 0 instead of the zero point"),
    ("act_clamp_order", "tpu_pkg.sv",
     "FuncClamp: requantize = (y_lo > hi) ? hi : y_lo;",
     "FuncClamp: requantize = (y > hi) ? hi : y_lo;",
     "clamp with lo > hi answers lo instead of hi"),
    ("act_pool_stride", "tpu_act_unit.sv",
     "px_d = px_q + 12'(cmd_q.pool_s);",
     "px_d = px_q + 12'(cmd_q.pool_k);",
     "pooling steps along x by the window instead of the stride"),
    ("act_pool_first", "tpu_act_unit.sv",
     "have = !s1_first_q && pool_have_q;",
     "have = pool_have_q;",
     "the pooling maximum is not restarted at a window's first pixel"),
    ("act_col_last", "tpu_act_unit.sv",
     "assign col_last  = 14'(px_q) + 14'(cmd_q.pool_s) + 14'(cmd_q.pool_k) >",
     "assign col_last  = 14'(px_q) + 14'(cmd_q.pool_s) + 14'(cmd_q.pool_k) >=",
     "the last pooling window of a row that ends at the edge is dropped"),
    ("act_pad_left_is_top", "tpu_act_unit.sv",
     "assign tap_x     = $signed(14'(px_q) + 14'(dx_q) - 14'(cmd_q.pad_left));",
     "assign tap_x     = $signed(14'(px_q) + 14'(dx_q) - 14'(cmd_q.pad_top));",
     "the tap's x is offset by the top pad instead of the left pad"),
    ("act_pad_right_ignored", "tpu_act_unit.sv",
     "14'(cmd_q.width) + 14'(cmd_q.pad_left) + 14'(cmd_q.pad_right);",
     "14'(cmd_q.width) + 14'(cmd_q.pad_left);",
     "the right pad is left out of a row's last window"),
    ("act_pad_taps_read", "tpu_act_unit.sv",
     "v = (s1_tap_q && (!have || y > p)) ? y : p;",
     "v = (!have || y > p) ? y : p;",
     "taps in the padding are not skipped (they pool the region's first row)"),
    ("act_pad_bottom_edge", "tpu_act_unit.sv",
     "tap_y < $signed(14'(cmd_q.height))",
     "tap_y <= $signed(14'(cmd_q.height))",
     "the first bottom padding row counts as a pixel"),
    # Matmul path and weights.
    ("acc_accumulate", "tpu_accumulators.sv",
     "if (m_we && m_acc) begin",
     "if (m_we) begin",
     "the accumulators always accumulate (acc flag ignored)"),
    ("mm_act_sign", "tpu_matmul_unit.sv",
     "mxu_data_o[9*k +: 9] = {!cmd_q.a_unsigned && ub_rdata_i[8*k+7], ub_rdata_i[8*k +: 8]};",
     "mxu_data_o[9*k +: 9] = {ub_rdata_i[8*k+7], ub_rdata_i[8*k +: 8]};",
     "unsigned activations sign-extended"),
    ("mm_outer_stride", "tpu_matmul_unit.sv",
     "addr_d = line_q + AW'(cmd_q.outer_stride);",
     "addr_d = addr_q + AW'(cmd_q.outer_stride);",
     "the outer stride is added to the current address, not the line start"),
    ("wl_tile_ready", "tpu_weight_loader.sv",
     "if (push && wrap_add(wr_row_q, 1) % RowIdxW'(N) == '0) begin",
     "if (push && wr_row_q % RowIdxW'(N) == '0) begin",
     "a weight tile counts as complete at its first row instead of its last"),
    # Floating point (issue 30): tpu_fp_pkg and the bf16 array; killed by fp_units_test and
    # mxu_fp_test (tests/rtl).
    ("fp_round_trunc", "tpu_fp_pkg.svh",
     "r  = {1'b0, m[26:3]} + 25'(m[2] && (m[1] || m[0] || m[3]));",
     "r  = {1'b0, m[26:3]};",
     "fp32 results truncated instead of rounded to nearest even"),
    ("fp_ftz_before_round", "tpu_fp_pkg.svh",
     "if (er < ExpW'(1))        fp32_round_pack = {s, 31'd0};           // FTZ",
     "if (e < ExpW'(1))         fp32_round_pack = {s, 31'd0};           // FTZ",
     "flush to zero tested before rounding (a value rounding up to 2^-126 is lost)"),
    ("fp_add_no_sticky", "tpu_fp_pkg.svh",
     "ys   = (my >> d) | 27'(lost != 27'd0);",
     "ys   = (my >> d);",
     "fp32 add drops the sticky bit of the aligned operand"),
    ("fp_add_zero_sign", "tpu_fp_pkg.svh",
     "fp32_add = {a[31] & b[31], 31'd0};",
     "fp32_add = {a[31] | b[31], 31'd0};",
     "(+0) + (-0) gives -0"),
    ("fp_bf16_ties_away", "tpu_fp_pkg.svh",
     "fp32_to_bf16 = x[31:16] + 16'(x[15] && (x[14:0] != 15'd0 || x[16]));",
     "fp32_to_bf16 = x[31:16] + 16'(x[15]);",
     "fp32 -> bf16 ties round away from zero"),
    ("fp_f2i_nan", "tpu_fp_pkg.svh",
     "if (fp32_is_nan(x[30:0]) || x[30:23] < 8'd126) begin",
     "if (x[30:23] < 8'd126) begin",
     "fp32 -> int32 saturates a NaN instead of giving 0"),
    ("fp_minmax_zero_order", "tpu_fp_pkg.svh",
     "fp32_key = z[31] ? ~z : {1'b1, z[30:0]};",
     "fp32_key = z[31] ? ~z + 32'd1 : {1'b1, z[30:0]};",
     "max / min treat -0 and +0 as equal"),
    ("mxufp_row0_sum", "tpu_mxu_fp.sv",
     ("psum_q[0][c] = tpu_fp_pkg::fp32_add(32'd0, tpu_fp_pkg::bf16_mul(\n"
      "                           lane_q[0][c-1], wx_q[0][c][{lsel_q[0][c-1], 4'b0000} +: 16]));"),
     ("psum_q[0][c] = tpu_fp_pkg::bf16_mul(\n"
      "                           lane_q[0][c-1], wx_q[0][c][{lsel_q[0][c-1], 4'b0000} +: 16]);"),
     "row 0 passes its product on instead of adding it to +0.0 (a -0 product stays -0)"),
    # The training chip's matrix path (issue 30): load_weights, bf16 tiles in the weight FIFO,
    # the feeder's bf16 mode, fp32 accumulation, the tile-type check; killed by mxu_path_test.
    ("lw_transpose_dir", "tpu_load_weights.sv",
     "d_rdir_d  = wdir_q ^ f_tr_q;",
     "d_rdir_d  = wdir_q;",
     "load_weights ignores transpose (the tile is pushed as read)"),
    ("lw_write_dir_keep", "tpu_load_weights.sv",
     "wdir_d    = wdir_q ^ f_tr_q;",
     "wdir_d    = wdir_q;",
     "the tile buffer's write direction does not follow a transposed tile's read direction "
     "(the next tile overwrites lines not yet pushed)"),
    ("lw_overlap_early", "tpu_load_weights.sv",
     "assign slot_free    = !d_valid_q || d_cnt_q > f_k_q || (d_cnt_q == f_k_q && push_o);",
     "assign slot_free    = !d_valid_q || d_cnt_q >= f_k_q;",
     "the next tile's slot k is issued before the draining tile pushed its row k"),
    ("ctrl_lw_one_at_a_time", "tpu_ctrl.sv",
     ("UnitLoadWeights &&\n                              !wdma_busy_i;",
      "tpu_pkg::UnitLoadWeights: unit_ready = lw_cmd_ready_i && !wdma_busy_i;"),
     ("UnitLoadWeights &&\n                              !wdma_busy_i && !lw_busy_i;",
      "tpu_pkg::UnitLoadWeights: unit_ready = lw_cmd_ready_i && !wdma_busy_i && !lw_busy_i;"),
     "the controller issues a load_weights only once the previous one has drained (each pays its "
     "first tile's fill again; TrainRtl.BackToBackLoadWeightsOverlap)"),
    ("ctrl_lw_done_idle", "tpu_ctrl.sv",
     "assign trace_done_o[tpu_pkg::UnitLoadWeights] = tr_lw_done_q;",
     "assign trace_done_o[tpu_pkg::UnitLoadWeights] = tr_lw_done_q && !lw_busy_i;",
     "the trace loses the done pulse of a load_weights that ends while the next one runs"),
    ("lw_pad_rows", "tpu_load_weights.sv",
     "if (s1_valid_q && s1_read_q) begin",
     "if (s1_valid_q) begin",
     "rows >= `rows` of a tile take the VMEM data bus instead of +0"),
    ("lw_clear_drain", "tpu_load_weights.sv",
     ("      s1_valid_d = 1'b0;\n      d_valid_d  = 1'b0;",),
     ("      s1_valid_d = 1'b0;",),
     "clear_i leaves a draining tile, which then pushes its rows into the emptied FIFO"),
    ("lw_round_trunc", "tpu_load_weights.sv",
     "line[16*j +: 16] = tpu_fp_pkg::fp32_to_bf16(vm_rdata_i[32*j +: 32]);",
     "line[16*j +: 16] = vm_rdata_i[32*j+16 +: 16];",
     "load_weights truncates fp32 to bf16 (no rounding, DAZ or canonical NaN)"),
    ("lw_tile_stride", "tpu_load_weights.sv",
     "f_addr_d  = f_base_q + f_tstride_q;",
     "f_addr_d  = f_addr_q + f_tstride_q;",
     "the next tile starts tile_stride after the last row read, not after the tile's first row"),
    ("wl_type_commit", "tpu_weight_loader.sv",
     "wsh_bf16_d = shifting ? row_bf16 : wsh_bf16_q;",
     "wsh_bf16_d = row_bf16;",
     "the type of the tile in the shift registers follows the FIFO row read, not the tile "
     "(a commit goes to the wrong array)"),
    ("mm_bf16_stall", "tpu_matmul_unit.sv",
     "assign mxf_valid_o = feed && bf16_q;",
     "assign mxf_valid_o = busy_q && rd_ok_q && bf16_q;",
     "a matmul_bf16 feeds its rows while it waits for its weight tile"),
    ("mm_bf16_start_port", "tpu_matmul_unit.sv",
     "assign rd_bf16     = start ? cmd_bf16 : bf16;",
     "assign rd_bf16     = bf16;",
     "a command's first row is read from the previous command's memory (UB / VMEM)"),
    ("mm_bf16_round", "tpu_matmul_unit.sv",
     "mxf_data_o[16*k +: 16] = tpu_fp_pkg::fp32_to_bf16(vm_rdata_i[32*k +: 32]);",
     "mxf_data_o[16*k +: 16] = vm_rdata_i[32*k+16 +: 16];",
     "matmul_bf16 truncates its VMEM rows to bf16"),
    ("acc_fp_int_add", "tpu_accumulators.sv",
     "row[32*c +: 32] = tpu_fp_pkg::fp32_add(old[32*c +: 32], m_wdata[32*c +: 32]);",
     "row[32*c +: 32] = old[32*c +: 32] + m_wdata[32*c +: 32];",
     "fp32 rows accumulate with an integer add"),
    ("wt_switch_active", "tpu_weight_types.sv",
     "assign type_err_o = (mm_switch_i ? q_q[0] : active_q) != mm_bf16_i;",
     "assign type_err_o = active_q != mm_bf16_i;",
     "ERR_WEIGHT_TYPE checks the active tile also for a matmul with switch"),
    ("wt_push_base", "tpu_weight_types.sv",
     "if (i >= 32'(base) && 32'(i) < 32'(base) + 32'(push_tiles_i)) q_d[i] = push_bf16_i;",
     "if (32'(i) < 32'(base) + 32'(push_tiles_i)) q_d[i] = push_bf16_i;",
     "pushing tiles overwrites the types of the tiles already waiting"),
    ("vpu_fsubr", "tpu_vpu_lane.sv",
     "add_x = b_i;                                  // b - a",
     "add_x = a_i;                                  // b - a",
     "fsubr computes a + (-a) instead of b - a"),
    # The vector unit (issue 30); killed by vpu_test (tests/rtl) against the golden model.
    ("vpu_raw_queue", "tpu_vpu.sv",
     "if (vld[e] && we[S*e + 32'(bk)] && dst[16*(S*e + 32'(bk)) +: 16] == row) begin",
     "if (vld[e] && e == 0 && we[S*e + 32'(bk)] && dst[16*(S*e + 32'(bk)) +: 16] == row) begin",
     "a read waits only for queue slot 0, not for the other queued writes of its row"),
    ("vpu_raw_tree", "tpu_vpu.sv",
     "if (t_vld[s] && t_wr[S*s + k] && t_dst[16*(S*s + k) +: 16] == row) pending_write = 1'b1;",
     "if (1'b0 && t_vld[s] && t_wr[S*s + k] && t_dst[16*(S*s + k) +: 16] == row) pending_write = 1'b1;",
     "a read does not wait for the lane-reduction rows still in the tree stages"),
    ("vpu_rowred_seed", "tpu_vpu.sv",
     "assign lane_b[0 +: RowW] = (x_red_q && !x_first_q) ? s_q : op_b[0 +: RowW];",
     "assign lane_b[0 +: RowW] = x_red_q ? s_q : op_b[0 +: RowW];",
     "a row reduction's line starts from the previous line's value instead of B"),
    ("vpu_rowred_write_each", "tpu_vpu.sv",
     "s_wr[k]        = !is_rowred || st_i[8*k +: 8] == cmd_q.inner - 8'd1;",
     "s_wr[k]        = 1'b1;",
     "a row reduction writes D(o,0) after every row, so later rows of the line read it"),
    ("vpu_tree_pairs", "tpu_vpu.sv",
     "op_a[RowW*k + 32*(j + N/2) +: 32]);",
     "op_a[RowW*k + 32*(j ^ 1) +: 32]);",
     "the lane reductions pair neighbours (x0+x1)+(x2+x3) instead of the documented tree"),
    ("vpu_align_same_row", "tpu_vpu.sv",
     "sb[16*k +: 16] = is_align ? st_ac[16*k +: 16] + 16'd1 : st_bc[16*k +: 16];",
     "sb[16*k +: 16] = is_align ? st_ac[16*k +: 16] : st_bc[16*k +: 16];",
     "align fills the shifted-in lanes from A(o,i) instead of A(o,i) + 1"),
    ("vpu_capture_lost", "tpu_vpu.sv",
     "bank_a[RowW*k +: RowW] = x_rv_a[k] ? vm_a_rdata_i[RowW*k +: RowW] : x_cap_a[RowW*k +: RowW];",
     "bank_a[RowW*k +: RowW] = vm_a_rdata_i[RowW*k +: RowW];",
     "operand A rows granted before the group's last grant are taken from the port, not the "
     "capture register"),
    ("vpu_capture_other_slot", "tpu_vpu.sv",
     "assign x_cap_a = cap_a_q[RowW*S*x_slot_q +: RowW*S];",
     "assign x_cap_a = cap_a_q[RowW*S*(x_slot_q ^ 1'b1) +: RowW*S];",
     "X takes captured operand A rows from the other group's slot"),
    ("vpu_partial_read_done", "tpu_vpu.sv",
     "(sl_aneed_q[S*po +: S] & ~(sl_agot_q[S*po +: S] | o_ga)) == '0 &&",
     "(sl_agot_q[S*po +: S] | o_ga) != '0 &&",
     "the older group leaves R when any of its port A banks is granted, not all of them"),
    ("vpu_slot_order", "tpu_vpu.sv",
     "assign x_go_c = !o_vld && c_done;",
     "assign x_go_c = c_done;",
     "a group complete in its first cycle goes to X even while an older group waits in R"),
    ("vpu_slot_raw", "tpu_vpu.sv",
     "if (sl_vld[p] && sl_wr[S*p + k] && sl_dst[16*(S*p + k) +: 16] == row) begin",
     "if (1'b0 && sl_vld[p] && sl_wr[S*p + k] && sl_dst[16*(S*p + k) +: 16] == row) begin",
     "a read does not wait for the rows a group still in R (waiting for its reads) will write"),
    ("vpu_younger_bank", "tpu_vpu.sv",
     "y_ra = y_vld ? sl_aneed_q[S*py +: S] & ~sl_agot_q[S*py +: S] & ~o_ra : '0;",
     "y_ra = y_vld ? sl_aneed_q[S*py +: S] & ~sl_agot_q[S*py +: S] : '0;",
     "the younger group in R asks for a bank the older one asks for in the same cycle (and takes "
     "the older one's row)"),
    ("vpu_partial_write_pop", "tpu_vpu.sv",
     "assign w_pop = w_vld_q[w_rd_q] && w_head_left == '0;",
     "assign w_pop = w_vld_q[w_rd_q] && (w_head_left != w_we_q[S*w_rd_q +: S] || w_head_left == '0);",
     "the write queue drops a group when any of its banks is written, losing the others"),
    ("vpu_write_newest", "tpu_vpu.sv",
     "for (int unsigned d = WDepth; d > 0; d--) begin",
     "for (int unsigned d = 1; d <= WDepth; d++) begin",
     "a bank writes its newest queued row first, so two queued writes of one row land out of "
     "order"),
    ("vpu_queue_room", "tpu_vpu.sv",
     "in_flight = (CntW+2)'(w_cnt) + (CntW+2)'(x_valid_q && x_any_wr_q);",
     "in_flight = (CntW+2)'(w_cnt);",
     "reads issue without counting the row in X against the write queue's room"),
    ("vpu_queue_room_slots", "tpu_vpu.sv",
     "in_flight = in_flight + (CntW+2)'(sl_vld_q[p] && sl_any_wr_q[p]);",
     "in_flight = in_flight + (CntW+2)'(1'b0 && sl_vld_q[p]);",
     "reads issue without counting the groups waiting in R against the write queue's room"),
    ("vpu_bmode_dst_strides", "tpu_vpu.sv",
     "b_inner_step = 11'(cmd_q.dst_inner_stride);",
     "b_inner_step = 11'(cmd_q.a_inner_stride);",
     "bmode 1 steps B with A's inner stride instead of the destination's"),
    # The training chip's VMEM, its DMAs and move unit, the decoder's training checks and the
    # controller's training hazards (issue 30, verification); killed by the training chip's
    # random and device tests (random_train_chip_test_n4, train_rtl_tests_n4) unless noted in
    # docs/verification.md. `mutate.sh --train` runs them on the training chip's tests only.
    ("vmem_rd_all_granted", "tpu_vmem.sv",
     "if (re_i[i] && !rd_used[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))]) begin",
     "if (re_i[i]) begin",
     "every requesting read client of a VMEM port is granted, also in a bank another reads"),
    ("vmem_wr_all_granted", "tpu_vmem.sv",
     "if (we_i[i] && !wr_used[bank_of(waddr_i[16*i +: 16])]) begin",
     "if (we_i[i]) begin",
     "every requesting narrow VMEM writer is granted, also in a bank another one writes"),
    ("vmem_wide_bank_shared", "tpu_vmem.sv",
     "va_rgnt_o[k] = va_re_i[k] && !rd_used[k];",
     "va_rgnt_o[k] = va_re_i[k];",
     "the vector unit's port A read is granted in the bank a narrow client of port 0 reads"),
    ("vmem_read_first", "tpu_vmem.sv",
     ".Width(RowW), .ByteEn(1'b0), .WriteFirst(1'b1))",
     ".Width(RowW), .ByteEn(1'b0), .WriteFirst(1'b0))",
     "a VMEM read in the cycle its row is written returns the old row"),
    ("vdi_bf16_stride", "tpu_vdma_rd.sv",
     ("u_walk_ar (\n"
      "    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),\n"
      "    .stride_i(cmd_stride_i),",
      "u_walk_r (\n"
      "    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),\n"
      "    .stride_i(cmd_stride_i),"),
     ("u_walk_ar (\n"
      "    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),\n"
      "    .stride_i(cmd_bf16_i && cmd_stride_i == 32'(4 * N) ? 32'd0 : cmd_stride_i),",
      "u_walk_r (\n"
      "    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),\n"
      "    .stride_i(cmd_bf16_i && cmd_stride_i == 32'(4 * N) ? 32'd0 : cmd_stride_i),"),
     "read_vmem bf16 with host_stride = 4N reads the rows contiguously (2N apart): both of "
     "tpu_vdma_rd's walkers take a 4N stride as the (fp32) row size"),
    ("vdi_bf16_no_daz", "tpu_vdma_rd.sv",
     "vm_w_wdata_o[32*l +: 32] = tpu_fp_pkg::bf16_to_fp32(fifo_q[64*(l / 4) + 16*(l % 4) +: 16]);",
     "vm_w_wdata_o[32*l +: 32] = {fifo_q[64*(l / 4) + 16*(l % 4) +: 16], 16'd0};",
     "read_vmem bf16 widens each lane without flushing subnormals or canonicalizing NaN"),
    ("vdi_row_count", "tpu_vdma_rd.sv",
     "if ((pop && rows_left_q == 24'd1) ||",
     "if ((pop && rows_left_q == 24'd2) ||",
     "read_vmem ends one VMEM row early (off by one in its row counter)"),
    ("vdo_chunk_base", "tpu_vdma_wr.sv",
     "vaddr_d   = cmd_vaddr_i;",
     "vaddr_d   = cmd_vaddr_i - 16'd1;",
     "write_vmem reads its VMEM rows starting one row early (the chunked writer whose next "
     "chunk started one row early is gone: tpu_vdma_wr reads the rows one per cycle from the "
     "start row this mutant shifts)"),
    ("vdo_bf16_trunc", "tpu_vdma_wr.sv",
     "row_bf16[16*l +: 16] = tpu_fp_pkg::fp32_to_bf16(vm_rdata_i[32*l +: 32]);",
     "row_bf16[16*l +: 16] = vm_rdata_i[32*l + 16 +: 16];",
     "write_vmem bf16 truncates each lane instead of rounding it to nearest even"),
    ("vdo_stride", "tpu_vdma_walk.sv",
     ("seg_start_d = seg_start_q + stride_q;",
      "cur_d       = seg_start_q + stride_q;"),
     ("seg_start_d = seg_start_q + stride_q + 32'd16;",
      "cur_d       = seg_start_q + stride_q + 32'd16;"),
     "a strided write_vmem (and read_vmem: the walker is shared) steps each row 16 bytes "
     "further than the stride"),
    ("move_acc_denied", "tpu_vmem_move.sv",
     "if (acc_write && vm_w_wgnt_i) begin",
     "if (acc_write) begin",
     "acc_to_vmem drops a row whose VMEM write was denied"),
    ("move_no_transpose", "tpu_vmem_move.sv",
     "buf_d[32*(N*r + 32'(got_idx_q)) +: 32] = vm_rdata_i[32*r +: 32];",
     "buf_d[32*(N*r + 32'(got_idx_q)) +: 32] = vm_rdata_i[32*32'(got_idx_q) +: 32];",
     "transpose copies the blocks it stores by columns without transposing them"),
    ("move_next_block_src", "tpu_vmem_move.sv",
     "rd_addr_d = src_q + src_stride_q;",
     "rd_addr_d = rd_addr_q + src_stride_q;",
     "transpose's next block starts src_stride after the last row read, not after the block's first"),
    ("move_write_early", "tpu_vmem_move.sv",
     "if (rd_busy_q && got_cnt_q == (IW+1)'(N) && !wr_busy_q) begin",
     "if (rd_busy_q && got_cnt_q == (IW+1)'(N - 1) && !wr_busy_q) begin",
     "transpose writes its block when N - 1 source rows have arrived (off by one)"),
    ("move_no_overlap_wait", "tpu_vmem_move.sv",
     "ovl_d     = next_src <= 32'(dst_q) + (N - 1) && next_last >= 32'(dst_q);",
     "ovl_d     = 1'b0;",
     "transpose reads the next block's rows while the block before writes rows among them"),
    ("move_slot_early", "tpu_vmem_move.sv",
     "(!ovl_q && rd_cnt_q < wr_cnt_q)",
     "(!ovl_q && rd_cnt_q <= wr_cnt_q)",
     "transpose stores the next block's row in a slot the block before has yet to write out"),
    ("dec_lw_rows_n", "tpu_decoder.sv",
     "field_bad = instr_i.load_weights.tiles == '0 || rows == '0 || rows > 64'(N);",
     "field_bad = instr_i.load_weights.tiles == '0 || rows == '0 || rows >= 64'(N);",
     "load_weights with rows = N faults ERR_FIELD"),
    ("dec_tr_dst_last", "tpu_decoder.sv",
     "vlast2 = vrows + (rows - 1) * u64({16'd0, instr_i.transpose.dst_stride}) + 64'(N) - 64'd1;",
     "vlast2 = vrows + (rows - 1) * u64({16'd0, instr_i.transpose.dst_stride}) + 64'(N) - 64'd2;",
     "transpose's destination range ends a row early (ERR_VMEM_RANGE and the hazard footprint)"),
    ("dec_vec_align_a1", "tpu_decoder.sv",
     "64'd1 : 64'd0);",
     "64'd0 : 64'd0);",
     "align's extra A row (A + 1) is neither range-checked nor in the hazard footprint"),
    ("dec_vec_unary_b", "tpu_decoder.sv",
     "(instr_i.vec.bmode != '0 || instr_i.vec.b != '0)) ||",
     "(instr_i.vec.bmode != '0)) ||",
     "a unary vector func with a nonzero b field does not fault ERR_FIELD"),
    ("dec_vdma_stride_align", "tpu_decoder.sv",
     "align_bad    = instr_i.vmem_dma.host_stride[3:0] != '0;",
     "align_bad    = 1'b0;",
     "read_vmem / write_vmem with a host_stride not a multiple of 16 do not fault ERR_ALIGN"),
    ("dec_atv_acc_last", "tpu_decoder.sv",
     "acc_bad   = !field_bad && last_acc >= 64'(AccRows);",
     "acc_bad   = !field_bad && last_acc > 64'(AccRows);",
     "acc_to_vmem reading one row past the accumulators does not fault ERR_ACC_RANGE"),
    ("pkg_haz_vmem_raw", "tpu_pkg.sv",
     "ranges_overlap(a_vm_rd, b_vm_wr) ||",
     "1'b0 ||",
     "no read-after-write hazard through VMEM"),
    ("ctrl_haz_move", "tpu_ctrl.sv",
     "(move_busy_i && conf_unit_d[5])",
     "(1'b0 && conf_unit_d[5])",
     "no hazard check against the running acc_to_vmem / transpose"),
    ("ctrl_haz_vec", "tpu_ctrl.sv",
     "(vec_busy_i && conf_unit_d[6])",
     "(1'b0 && conf_unit_d[6])",
     "no hazard check against the running vector instruction"),
    ("ctrl_haz_lw", "tpu_ctrl.sv",
     "(lw_busy_i && conf_unit_d[7])",
     "(1'b0 && conf_unit_d[7])",
     "no hazard check against the running load_weights"),
    ("ctrl_lw_overflow", "tpu_ctrl.sv",
     "64'(credit_q) + 64'(lw_head.tiles) > 64'(WFifoTiles) + 64'd2) begin",
     "64'(credit_q) + 64'(lw_head.tiles) > 64'(WFifoTiles) + 64'd3) begin",
     "load_weights one tile past the weight FIFO's room does not fault ERR_WEIGHT_OVERFLOW"),
    # Depthwise unit (issue 33: tpu_dw, its core integration; killed by the DwUnit block tests
    # and the depthwise chip's random programs, dw_n16.*).
    ("dw_pad_not_zero", "tpu_dw.sv",
     "val[9*n +: 9]  = rsp_pad_q ? 9'd0 :",
     "val[9*n +: 9]  = 1'b0 ? 9'd0 :",
     "a padding position of the window holds the stale row's a - z instead of 0"),
    ("dw_zp_sign", "tpu_dw.sv",
     "zrow[9*n +: 9] = cmd_q.a_unsigned ?",
     "zrow[9*n +: 9] = cmd_q.w_unsigned ?",
     "the zero-point row takes the weights' signedness instead of the activations'"),
    ("dw_never_accumulate", "tpu_dw.sv",
     "assign acc_wacc_o  = cmd_q.acc;",
     "assign acc_wacc_o  = 1'b0;",
     "dwconv with acc set overwrites the accumulator rows instead of adding"),
    ("dw_stride2_every_col", "tpu_dw.sv",
     "(!cmd_q.stride2 || ((sh_col",
     "(1'b1 || ((sh_col",
     "a stride-2 dwconv writes an output pixel for every window column"),
    ("dw_slot_kernel_h", "tpu_dw.sv",
     "rsp_slot_d = 4'(3 * 32'(wky_q) + 3 - 32'(cmd_q.kernel_w) + 32'(wkx_q));",
     "rsp_slot_d = 4'(3 * 32'(wky_q) + 3 - 32'(cmd_q.kernel_h) + 32'(wkx_q));",
     "the taps of a non-square kernel land in the grid slots of a square one"),
    ("dw_read_no_grant", "tpu_dw.sv",
     "if (!stall && (!inimg || ub_rgnt_i)) begin",
     "if (!stall) begin",
     "the walk moves on without the UB port's grant (a row lost when the port refuses; in the "
     "chip the unit's own port never does: killed by the DwUnit block tests' random grants)"),
    ("dw_last_group", "tpu_dw.sv",
     "last_group = 32'(g_q) + P >= 32'(ho_q);",
     "last_group = 32'(g_q) + P > 32'(ho_q);",
     "one group of output lines too many when Ho is a multiple of DwWidth"),
    ("ctrl_haz_dw", "tpu_ctrl.sv",
     "(Dw && dw_busy_i && conf_unit_d[8])",
     "(Dw && 1'b0 && conf_unit_d[8])",
     "no hazard check against the running dwconv"),
    ("acc_dw_grant_always", "tpu_accumulators.sv",
     "assign dw_wgnt_o = !(dw_acc_i && pre_valid_i && pre_accumulate_i);",
     "assign dw_wgnt_o = 1'b1;",
     "an accumulating depthwise ACC write is granted in a cycle the MXU reads an accumulating "
     "row (one of the two adds gets the other's old row)"),
    ("acc_dw_no_old_row", "tpu_accumulators.sv",
     "(dw_d && dw_acc_i);",
     "(dw_d && 1'b0);",
     "an accumulating depthwise write does not read the row it adds to"),
]


def find(mid):
    for m in MUTANTS:
        if m[0] == mid:
            return m
    sys.exit(f"mutants.py: unknown mutant '{mid}', expected one of: "
             + " ".join(m[0] for m in MUTANTS))


def edits(m):
    """The (original, replacement) pairs of a mutant (one, or several in the same file)."""
    _mid, _fn, orig, repl, _d = m
    if isinstance(orig, str):
        return [(orig, repl)]
    return list(zip(orig, repl))


def problem(rtl, m):
    """None if the mutant applies to rtl/, else what is wrong."""
    mid, fn = m[0], m[1]
    try:
        with open(f"{rtl}/{fn}", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return f"{mid}: cannot read {rtl}/{fn} ({e.strerror}), expected the file of the mutant"
    for orig, _repl in edits(m):
        n = text.count(orig)
        if n != 1:
            first = orig.split("\n")[0].strip()
            return (f"{mid}: {rtl}/{fn} contains its original text {n} times, expected exactly "
                    f"once (re-anchor it in scripts/mutants.py): '{first}'")
    return None


def main(argv):
    if len(argv) < 2 or argv[1] not in ("list", "check", "apply"):
        sys.exit(__doc__)
    if argv[1] == "list":
        for mid, fn, _o, _r, desc in MUTANTS:
            print(f"{mid}\t{fn}\t{desc}")
        return 0
    if len(argv) < 3:
        sys.exit(__doc__)
    rtl = argv[2]
    ids = argv[3:] or [m[0] for m in MUTANTS]
    if len(set(m[0] for m in MUTANTS)) != len(MUTANTS):
        sys.exit("mutants.py: two mutants share an id")
    if argv[1] == "check":
        bad = [p for p in (problem(rtl, find(i)) for i in ids) if p]
        for p in bad:
            print(f"mutants.py: {p}", file=sys.stderr)
        return 1 if bad else 0
    if len(ids) != 1:
        sys.exit("mutants.py apply: expected one mutant id")
    m = find(ids[0])
    p = problem(rtl, m)
    if p:
        sys.exit(f"mutants.py: {p}")
    path = f"{rtl}/{m[1]}"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for orig, repl in edits(m):
        text = text.replace(orig, repl)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
