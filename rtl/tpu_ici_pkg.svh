// SPDX-License-Identifier: Apache-2.0
// The inter-chip link unit's command (issue 31): one decoded `ici_send` (0x0F) or `ici_recv`
// (0x10), docs/isa.md "Inter-chip links (ICI, opcodes 0x0F-0x10)", already checked by the
// decoder (rows >= 1, reduce < 3, every row below VmemRows, the link below IciLinks and up).
//
// The link streams of rtl/tpu_ici.sv (one out and one in per link, docs/architecture.md
// "Inter-chip links"): valid / ready with IciWidth data bits per beat; data beat k of a row is
// bits [IciWidth*k +: IciWidth] of it. The message header (its row count) rides on the first
// beat's side band (`first`, `rows`). The receive side posts its receive on `want` (the row
// count while a receive waits for its message, else 0); the link carries a posted want back to
// the sender (sim/ici_channel.h), which starts a message only against a posted want (the
// rendezvous of the contract). Sizes are checked at both ends: the sender faults if its first
// beat meets a want of another size (the beat still goes out, header only), the receiver when
// a first beat's rows differ from its own (the beat is consumed, nothing is written); both
// report ERR_ICI_SIZE.
//
// Included at the end of rtl/tpu_pkg.sv, like tpu_vpu_pkg.svh.
package tpu_ici_pkg;

  localparam logic [1:0] ReduceCopy = 2'd0;
  localparam logic [1:0] ReduceFadd = 2'd1;
  localparam logic [1:0] ReduceIadd = 2'd2;

  // One link instruction.
  typedef struct packed {
    logic        recv;      // 0: ici_send, 1: ici_recv
    logic [1:0]  reduce;    // ici_recv: ReduceCopy / ReduceFadd / ReduceIadd (0 for ici_send)
    logic [3:0]  link;      // bits 11:8
    logic [15:0] vmem;      // bits 31:16, the first VMEM row
    logic [23:0] rows;      // bits 55:32, >= 1
  } ici_cmd_t;

endpackage
