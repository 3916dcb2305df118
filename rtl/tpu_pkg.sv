// SPDX-License-Identifier: Apache-2.0
// Shared definitions of the tpu-rtl core: opcodes, error codes, the instruction formats, the
// decoded instruction and the unit commands, the hazard footprints, the requantizer.
// docs/isa.md is the specification; field positions here must match it bit for bit.
package tpu_pkg;

  typedef enum logic [7:0] {
    OpNop         = 8'h00,
    OpReadHost    = 8'h01,
    OpReadWeights = 8'h02,
    OpMatmul      = 8'h03,
    OpActivate    = 8'h04,
    OpWriteHost   = 8'h05,
    OpSync        = 8'h06,
    OpHalt        = 8'h07,
    // Training configuration (docs/isa.md "Training configuration"; VmemRows > 0 only).
    OpReadVmem    = 8'h08,
    OpWriteVmem   = 8'h09,
    OpLoadWeights = 8'h0A,
    OpMatmulBf16  = 8'h0B,
    OpAccToVmem   = 8'h0C,
    OpTranspose   = 8'h0D,
    OpVector      = 8'h0E,
    // The pod configuration (IciLinks > 0; docs/isa.md "Inter-chip links").
    OpIciSend     = 8'h0F,
    OpIciRecv     = 8'h10,
    // The depthwise configuration (DwWidth > 0; docs/isa.md "Depthwise configuration").
    OpDwconv      = 8'h11
  } opcode_e;

  // 5 bits: codes 16-18 are the link instructions' (a chip without links never raises them;
  // its controller stores 4 bits, tpu_ctrl).
  typedef enum logic [4:0] {
    ErrNone           = 5'd0,
    ErrOpcode         = 5'd1,
    ErrReserved       = 5'd2,
    ErrField          = 5'd3,
    ErrUbRange        = 5'd4,
    ErrAccRange       = 5'd5,
    ErrParamRange     = 5'd6,
    ErrAlign          = 5'd7,
    ErrHostRange      = 5'd8,
    ErrAxiRead        = 5'd9,
    ErrAxiWrite       = 5'd10,
    ErrCmdOverrun     = 5'd11,
    ErrNoWeights      = 5'd12,
    ErrWeightOverflow = 5'd13,
    ErrVmemRange      = 5'd14,
    ErrWeightType     = 5'd15,
    ErrIciLink        = 5'd16,
    ErrIciSize        = 5'd17,
    ErrIciDeadlock    = 5'd18
  } err_e;

  // The training opcodes the RTL executes (bit k: opcode 0x08 + k) in a chip built with
  // VmemRows > 0; the others fault ERR_OPCODE there as on the int8 chip, and
  // driver/device_rtl.cpp tells the golden model the same (ChipParams::training_ops).
  // All seven (docs/isa.md "Status").
  localparam logic [6:0] TrainOpsRtl = 7'b111_1111;

  // read_host destinations
  localparam logic [1:0] DestUb    = 2'd0;
  localparam logic [1:0] DestParam = 2'd1;
  localparam logic [1:0] DestLut   = 2'd2;
  localparam logic [1:0] DestNone  = 2'd3;   // read_vmem: the rows go to VMEM, not to dest

  // activate functions
  localparam logic [1:0] FuncIdentity = 2'd0;
  localparam logic [1:0] FuncRelu     = 2'd1;
  localparam logic [1:0] FuncClamp    = 2'd2;
  localparam logic [1:0] FuncLut      = 2'd3;

  // Rows of one quantization slot in the parameter memory: bias, mult, misc, 4 rows each.
  localparam int unsigned SlotRows = 12;

  // DMA windows (docs/architecture.md): window i is [base, base + size), size 0 = disabled.
  localparam int unsigned DmaWindows = 8;

  // ---------------- instruction formats (docs/isa.md "Encoding") ----------------
  // One packed struct per format, most significant field first, and their union: the only
  // place the bit positions of the ISA are written down in the RTL. tests/rtl checks them
  // against driver/isa.h field by field. Reserved fields must be zero (ERR_RESERVED).

  // nop, sync, halt; also how every format begins (the opcode byte).
  typedef struct packed {
    logic [119:0] reserved;      // 127:8
    logic [7:0]   opcode;        // 7:0
  } instr_plain_t;

  // read_host (0x01) and write_host (0x05); write_host has no dest (bits 9:8 reserved).
  typedef struct packed {
    logic [31:0] reserved_hi;    // 127:96
    logic [31:0] host_addr;      // 95:64
    logic [23:0] rows;           // 63:40
    logic [23:0] local_addr;     // 39:16
    logic [5:0]  reserved_lo;    // 15:10
    logic [1:0]  dest;           // 9:8
    logic [7:0]  opcode;
  } instr_host_t;

  // read_weights (0x02)
  typedef struct packed {
    logic [31:0] reserved_hi;    // 127:96
    logic [31:0] host_addr;      // 95:64
    logic [23:0] tiles;          // 63:40
    logic [31:0] reserved_lo;    // 39:8
    logic [7:0]  opcode;
  } instr_weights_t;

  // matmul (0x03)
  typedef struct packed {
    logic [15:0] reserved_hi;    // 127:112
    logic [23:0] outer_stride;   // 111:88
    logic [7:0]  inner_stride;   // 87:80
    logic [11:0] outer;          // 79:68
    logic [11:0] inner;          // 67:56
    logic [15:0] acc_addr;       // 55:40
    logic [23:0] ub_addr;        // 39:16
    logic [3:0]  reserved_lo;    // 15:12
    logic        switch_tile;    // 11 (isa.md: switch, a C++ keyword)
    logic        w_unsigned;     // 10
    logic        a_unsigned;     // 9
    logic        acc;            // 8
    logic [7:0]  opcode;
  } instr_matmul_t;

  // activate (0x04)
  typedef struct packed {
    logic [2:0]  pad_right;      // 127:125
    logic [2:0]  pad_bottom;     // 124:122
    logic [2:0]  pad_left;       // 121:119
    logic [2:0]  pad_top;        // 118:116
    logic [3:0]  slot;           // 115:112
    logic [23:0] ub_stride;      // 111:88
    logic [3:0]  pool_s;         // 87:84
    logic [3:0]  pool_k;         // 83:80
    logic [11:0] height;         // 79:68
    logic [11:0] width;          // 67:56
    logic [23:0] ub_addr;        // 55:32
    logic [15:0] acc_addr;       // 31:16
    logic [3:0]  reserved_lo;    // 15:12
    logic        raw;            // 11: int32 output, 4 UB rows per ACC row
    logic        out_unsigned;   // 10
    logic [1:0]  func;           // 9:8
    logic [7:0]  opcode;
  } instr_activate_t;

  // read_vmem (0x08) and write_vmem (0x09)
  typedef struct packed {
    logic [31:0] host_stride;    // 127:96
    logic [31:0] host_addr;      // 95:64
    logic [7:0]  reserved_hi;    // 63:56
    logic [23:0] rows;           // 55:32
    logic [15:0] vmem_addr;      // 31:16
    logic [6:0]  reserved_lo;    // 15:9
    logic        bf16;           // 8
    logic [7:0]  opcode;
  } instr_vmem_dma_t;

  // load_weights (0x0A)
  typedef struct packed {
    logic [38:0] reserved_hi;    // 127:89
    logic [8:0]  rows;           // 88:80
    logic [15:0] tile_stride;    // 79:64
    logic [15:0] tiles;          // 63:48
    logic [15:0] row_stride;     // 47:32
    logic [15:0] vmem_addr;      // 31:16
    logic [6:0]  reserved_lo;    // 15:9
    logic        transpose;      // 8
    logic [7:0]  opcode;
  } instr_load_weights_t;

  // matmul_bf16 (0x0B)
  typedef struct packed {
    logic [31:0] reserved_hi;    // 127:96
    logic [15:0] outer_stride;   // 95:80
    logic [7:0]  inner_stride;   // 79:72
    logic [11:0] outer;          // 71:60
    logic [11:0] inner;          // 59:48
    logic [15:0] acc_addr;       // 47:32
    logic [15:0] vmem_addr;      // 31:16
    logic [3:0]  reserved_mid;   // 15:12
    logic        switch_tile;    // 11
    logic [1:0]  reserved_lo;    // 10:9
    logic        acc;            // 8
    logic [7:0]  opcode;
  } instr_matmul_bf16_t;

  // acc_to_vmem (0x0C)
  typedef struct packed {
    logic [55:0] reserved_hi;    // 127:72
    logic [23:0] rows;           // 71:48
    logic [15:0] vmem_addr;      // 47:32
    logic [15:0] acc_addr;       // 31:16
    logic [7:0]  reserved_lo;    // 15:8
    logic [7:0]  opcode;
  } instr_acc_to_vmem_t;

  // transpose (0x0D)
  typedef struct packed {
    logic [15:0] reserved_hi;    // 127:112
    logic [15:0] src_row_stride; // 111:96
    logic [15:0] dst_stride;     // 95:80
    logic [15:0] src_stride;     // 79:64
    logic [15:0] blocks;         // 63:48
    logic [15:0] dst;            // 47:32
    logic [15:0] src;            // 31:16
    logic [7:0]  reserved_lo;    // 15:8
    logic [7:0]  opcode;
  } instr_transpose_t;

  // vector (0x0E)
  typedef struct packed {
    logic [31:0] b;                 // 127:96: B row (bmode 0-2) or the immediate (bmode 3)
    logic [10:0] dst_outer_stride;  // 95:85
    logic [3:0]  dst_inner_stride;  // 84:81
    logic [10:0] a_outer_stride;    // 80:70
    logic [3:0]  a_inner_stride;    // 69:66
    logic [9:0]  outer;             // 65:56
    logic [7:0]  inner;             // 55:48
    logic [15:0] a;                 // 47:32
    logic [15:0] dst;               // 31:16
    logic [1:0]  bmode;             // 15:14
    logic [5:0]  func;              // 13:8
    logic [7:0]  opcode;
  } instr_vector_t;

  // ici_send (0x0F) and ici_recv (0x10; reduce is reserved in an ici_send)
  typedef struct packed {
    logic [71:0] reserved_hi;    // 127:56
    logic [23:0] rows;           // 55:32
    logic [15:0] vmem_addr;      // 31:16
    logic [1:0]  reserved_lo;    // 15:14
    logic [1:0]  reduce;         // 13:12
    logic [3:0]  link;           // 11:8
    logic [7:0]  opcode;
  } instr_ici_t;

  // dwconv (0x11; depthwise configuration, isa.md "Depthwise configuration"): no reserved bits.
  // Decoded by tpu_decoder on a chip with DwWidth > 0 (else ERR_OPCODE), executed by tpu_dw.
  typedef struct packed {
    logic [15:0] ub_stride;      // 127:112
    logic [1:0]  pad_right;      // 111:110
    logic [1:0]  pad_bottom;     // 109:108
    logic [1:0]  pad_left;       // 107:106
    logic [1:0]  pad_top;        // 105:104
    logic [23:0] w_addr;         // 103:80
    logic [11:0] height;         // 79:68
    logic [11:0] width;          // 67:56
    logic [15:0] acc_addr;       // 55:40
    logic [23:0] ub_addr;        // 39:16
    logic [1:0]  kernel_w;       // 15:14
    logic [1:0]  kernel_h;       // 13:12
    logic        stride2;        // 11
    logic        w_unsigned;     // 10
    logic        a_unsigned;     // 9
    logic        acc;            // 8
    logic [7:0]  opcode;
  } instr_dwconv_t;

  // One 128-bit instruction word, seen through its format.
  typedef union packed {
    instr_plain_t        plain;
    instr_host_t         host;
    instr_weights_t      weights;
    instr_matmul_t       matmul;
    instr_activate_t     activate;
    instr_vmem_dma_t     vmem_dma;
    instr_load_weights_t load_weights;
    instr_matmul_bf16_t  matmul_bf16;
    instr_acc_to_vmem_t  acc_to_vmem;
    instr_transpose_t    transpose;
    instr_vector_t       vec;
    instr_ici_t          ici;
    instr_dwconv_t       dwconv;
  } instr_t;

  // ---------------- decoded instructions and unit commands ----------------
  // The decoder (tpu_decoder) turns an instruction into the command of the unit that runs it;
  // the controller hands it over with one valid/ready handshake (cmd_valid / cmd_ready / cmd),
  // the same for every unit. Units never see instruction bits.

  // Which unit runs an instruction; also the trace port's unit code (docs/architecture.md).
  typedef enum logic [3:0] {
    UnitReadHost    = 4'd0,  // also read_vmem (training chip)
    UnitReadWeights = 4'd1,
    UnitMatmul      = 4'd2,  // also matmul_bf16 (training chip)
    UnitActivate    = 4'd3,
    UnitWriteHost   = 4'd4,  // also write_vmem (training chip)
    UnitControl     = 4'd5,  // nop, sync, halt: the controller itself
    UnitMove        = 4'd6,  // acc_to_vmem, transpose: the VMEM move unit (training chip)
    UnitVector      = 4'd7,  // vector: the vector unit (training chip, rtl/tpu_vpu.sv)
    UnitLoadWeights = 4'd8,  // load_weights (training chip, rtl/tpu_load_weights.sv)
    UnitIci         = 4'd9,  // ici_send, ici_recv (pod configuration, rtl/tpu_ici.sv)
    UnitDw          = 4'd10  // dwconv (depthwise configuration, rtl/tpu_dw.sv)
  } unit_e;

  // A tpu_dma_reader transfer: `rows` rows of the reader's row size from host byte `addr`.
  typedef struct packed {
    logic [31:0] addr;
    logic [23:0] rows;
  } dma_rd_cmd_t;

  // read_host and read_vmem: the DMA-in transfer and where its rows go.
  typedef struct packed {
    logic        vmem;         // read_vmem: rows of 4N (2N with bf16) bytes into VMEM
    logic        bf16;         // read_vmem: host rows are bf16, widened to fp32
    logic [31:0] stride;       // read_vmem: host_stride (0 = contiguous)
    logic [1:0]  dest;         // DestUb, DestParam, DestLut (DestNone for read_vmem)
    logic [23:0] local_addr;   // first destination row (UB, PARAM, LUT or VMEM)
    dma_rd_cmd_t dma;          // read_host: rows of N bytes; read_vmem: the VMEM rows
  } dma_in_cmd_t;

  // read_weights: the weight-DMA transfer (rows = tiles * N) and its tile count.
  typedef struct packed {
    logic [23:0] tiles;
    dma_rd_cmd_t dma;
  } wdma_cmd_t;

  // write_host and write_vmem
  typedef struct packed {
    logic        vmem;         // write_vmem: VMEM rows of 4N (2N with bf16) bytes
    logic        bf16;         // write_vmem: each lane rounded to bf16
    logic [31:0] stride;       // write_vmem: host_stride (0 = contiguous)
    logic [31:0] host_addr;
    logic [23:0] ub_addr;      // write_host: first UB row; write_vmem: first VMEM row
    logic [23:0] rows;
  } dma_wr_cmd_t;

  // acc_to_vmem and transpose: the VMEM move unit.
  typedef struct packed {
    logic        transpose;       // 0: acc_to_vmem, 1: transpose
    logic [15:0] src;             // acc_to_vmem: acc_addr; transpose: src
    logic [15:0] dst;             // vmem_addr / dst
    logic [23:0] count;           // acc_to_vmem: rows; transpose: blocks
    logic [15:0] src_stride;      // transpose only
    logic [15:0] dst_stride;
    logic [15:0] src_row_stride;
  } move_cmd_t;

  // matmul (docs/isa.md for the meaning of each field)
  typedef struct packed {
    logic        acc;
    logic        a_unsigned;
    logic        w_unsigned;
    logic        switch_tile;
    logic [23:0] ub_addr;
    logic [15:0] acc_addr;
    logic [11:0] inner;
    logic [11:0] outer;
    logic [7:0]  inner_stride;
    logic [23:0] outer_stride;
  } mm_cmd_t;

  // activate
  typedef struct packed {
    logic [1:0]  func;
    logic        out_unsigned;
    logic [15:0] acc_addr;
    logic [23:0] ub_addr;
    logic [11:0] width;
    logic [11:0] height;
    logic [3:0]  pool_k;
    logic [3:0]  pool_s;
    logic [23:0] ub_stride;
    logic [3:0]  slot;
    logic [2:0]  pad_top;        // max-pool padding (docs/isa.md)
    logic [2:0]  pad_left;
    logic [2:0]  pad_bottom;
    logic [2:0]  pad_right;
    logic        raw;            // int32 output (docs/isa.md)
  } act_cmd_t;

  // Widths of the types above. Yosys 0.23 has no $bits() of a type, so they are written out;
  // tpu_decoder checks every one against $bits() at time 0 (TPU_ASSERT_INIT).
  localparam int unsigned InstrW   = 128;
  localparam int unsigned DmaRdW   = 56;    // dma_rd_cmd_t
  localparam int unsigned DmaInW   = 116;   // dma_in_cmd_t
  localparam int unsigned WdmaW    = 80;    // wdma_cmd_t
  localparam int unsigned DmaWrW   = 114;   // dma_wr_cmd_t
  localparam int unsigned MoveW    = 105;   // move_cmd_t
  localparam int unsigned MmCmdW   = 100;   // mm_cmd_t
  localparam int unsigned ActCmdW  = 116;   // act_cmd_t
  localparam int unsigned VecCmdW  = 120;   // tpu_vpu_pkg::vpu_cmd_t (instruction bits 127:8)
  localparam int unsigned LwCmdW   = 74;    // tpu_fp_pkg::lw_cmd_t
  localparam int unsigned IciCmdW  = 47;    // tpu_ici_pkg::ici_cmd_t
  localparam int unsigned CmdW     = 120;   // cmd_u: the widest command

  // The command of any unit (the members of a packed union must be equally wide: each is
  // padded to CmdW at the top).
  typedef union packed {
    struct packed { logic [CmdW-ActCmdW-1:0] pad; act_cmd_t cmd; }     act;
    // bf16: a matmul_bf16 (training chip; the fields as tpu_fp_pkg describes).
    struct packed { logic [CmdW-MmCmdW-2:0] pad; logic bf16; mm_cmd_t cmd; } mm;
    // load_weights: a tpu_fp_pkg::lw_cmd_t (declared after this package).
    struct packed { logic [CmdW-LwCmdW-1:0] pad; logic [LwCmdW-1:0] cmd; } lw;
    struct packed { logic [CmdW-DmaInW-1:0] pad; dma_in_cmd_t cmd; }   dma_in;
    struct packed { logic [CmdW-WdmaW-1:0]  pad; wdma_cmd_t cmd; }     wdma;
    struct packed { logic [CmdW-DmaWrW-1:0] pad; dma_wr_cmd_t cmd; }   dma_out;
    struct packed { logic [CmdW-MoveW-1:0]  pad; move_cmd_t cmd; }     move;
    // vector: a tpu_vpu_pkg::vpu_cmd_t (declared after this package).
    struct packed { logic [VecCmdW-1:0] cmd; }                         vec;
    // ici_send / ici_recv: a tpu_ici_pkg::ici_cmd_t (declared after this package).
    struct packed { logic [CmdW-IciCmdW-1:0] pad; logic [IciCmdW-1:0] cmd; } ici;
    // dwconv: the instruction's bits 127:8 (an instr_dwconv_t without its opcode).
    struct packed { logic [CmdW-1:0] cmd; }                            dw;
  } cmd_u;

  // A closed interval of row (or byte) addresses an in-flight instruction touches.
  typedef struct packed {
    logic        valid;
    logic [32:0] lo;
    logic [32:0] hi;
  } range_t;

  // Everything the hazard scoreboard needs to know about an issued instruction.
  typedef struct packed {
    range_t ub_rd;
    range_t ub_wr;
    range_t acc_rd;
    range_t acc_wr;
    range_t host_rd;
    range_t host_wr;
    range_t vmem_rd;   // training chip: VMEM rows read / written
    range_t vmem_wr;
    logic   param_rd;
    logic   param_wr;
  } footprint_t;

  // An instruction as the decoder leaves it in the instruction queue: decoded once, when it
  // is fetched.
  typedef struct packed {
    unit_e      unit;
    logic       is_sync;   // sync: waits until every unit is idle (halt waits as well)
    logic       is_halt;   // halt: waits likewise, then ends the run
    err_e       err;       // the first failing static check (codes 1-8), or ErrAxiRead
    footprint_t fp;
    cmd_u       cmd;
  } decoded_t;

  // The functions below take the structs as bit vectors and slice them by hand: Yosys 0.23
  // mis-elaborates struct-typed function arguments (member selects come out undefined).
  localparam int unsigned RangeW = 67;               // $bits(range_t)
  localparam int unsigned FpW    = 8 * RangeW + 2;   // $bits(footprint_t)
  localparam int unsigned ErrW   = 5;                // $bits(err_e)
  localparam int unsigned DecW   = 4 + 2 + ErrW + FpW + CmdW;  // $bits(decoded_t)
  // Bit offsets of the footprint_t members.
  localparam int unsigned FpUbRd   = 7 * RangeW + 2;
  localparam int unsigned FpUbWr   = 6 * RangeW + 2;
  localparam int unsigned FpAccRd  = 5 * RangeW + 2;
  localparam int unsigned FpAccWr  = 4 * RangeW + 2;
  localparam int unsigned FpHostRd = 3 * RangeW + 2;
  localparam int unsigned FpHostWr = 2 * RangeW + 2;
  localparam int unsigned FpVmemRd = 1 * RangeW + 2;
  localparam int unsigned FpVmemWr = 2;

  // range_t as bits: {valid, lo[32:0], hi[32:0]}.
  function automatic logic ranges_overlap(logic [RangeW-1:0] a, logic [RangeW-1:0] b);
    ranges_overlap = a[66] && b[66] && (a[65:33] <= b[32:0]) && (b[65:33] <= a[32:0]);
  endfunction

  // True when instruction `a` may not start while `b` is still in flight (RAW, WAR, WAW).
  function automatic logic footprints_conflict(logic [FpW-1:0] a, logic [FpW-1:0] b);
    logic [RangeW-1:0] a_ub_rd, a_ub_wr, a_acc_rd, a_acc_wr, a_host_rd, a_host_wr;
    logic [RangeW-1:0] b_ub_rd, b_ub_wr, b_acc_rd, b_acc_wr, b_host_rd, b_host_wr;
    logic [RangeW-1:0] a_vm_rd, a_vm_wr, b_vm_rd, b_vm_wr;
    a_ub_rd   = a[FpUbRd +: RangeW];   b_ub_rd   = b[FpUbRd +: RangeW];
    a_ub_wr   = a[FpUbWr +: RangeW];   b_ub_wr   = b[FpUbWr +: RangeW];
    a_acc_rd  = a[FpAccRd +: RangeW];  b_acc_rd  = b[FpAccRd +: RangeW];
    a_acc_wr  = a[FpAccWr +: RangeW];  b_acc_wr  = b[FpAccWr +: RangeW];
    a_host_rd = a[FpHostRd +: RangeW]; b_host_rd = b[FpHostRd +: RangeW];
    a_host_wr = a[FpHostWr +: RangeW]; b_host_wr = b[FpHostWr +: RangeW];
    a_vm_rd   = a[FpVmemRd +: RangeW]; b_vm_rd   = b[FpVmemRd +: RangeW];
    a_vm_wr   = a[FpVmemWr +: RangeW]; b_vm_wr   = b[FpVmemWr +: RangeW];
    // bit 1: param_rd, bit 0: param_wr
    footprints_conflict =
        ranges_overlap(a_ub_wr, b_ub_rd) || ranges_overlap(a_ub_wr, b_ub_wr) ||
        ranges_overlap(a_ub_rd, b_ub_wr) ||
        ranges_overlap(a_acc_wr, b_acc_rd) || ranges_overlap(a_acc_wr, b_acc_wr) ||
        ranges_overlap(a_acc_rd, b_acc_wr) ||
        ranges_overlap(a_host_wr, b_host_rd) || ranges_overlap(a_host_wr, b_host_wr) ||
        ranges_overlap(a_host_rd, b_host_wr) ||
        ranges_overlap(a_vm_wr, b_vm_rd) || ranges_overlap(a_vm_wr, b_vm_wr) ||
        ranges_overlap(a_vm_rd, b_vm_wr) ||
        (a[0] && (b[1] || b[0])) || (a[1] && b[0]);
  endfunction

  // True when the host bytes [lo, lo + len) lie inside an enabled DMA window, or no window is
  // enabled. Window i: base in base[32i +: 32], size in size[32i +: 32].
  function automatic logic in_windows(logic [63:0] lo, logic [63:0] len,
                                      logic [32*DmaWindows-1:0] base,
                                      logic [32*DmaWindows-1:0] size);
    logic any_on, hit;
    any_on = 1'b0;
    hit    = 1'b0;
    for (int i = 0; i < 32'(DmaWindows); i++) begin
      if (size[32*i +: 32] != '0) begin
        any_on = 1'b1;
        if (lo >= {32'd0, base[32*i +: 32]} &&
            lo + len <= {32'd0, base[32*i +: 32]} + {32'd0, size[32*i +: 32]}) begin
          hit = 1'b1;
        end
      end
    end
    in_windows = !any_on || hit;
  endfunction

  // A valid range_t {valid, lo, hi} (as bits: Yosys 0.23 has no struct-valued functions).
  function automatic logic [66:0] make_range(logic [32:0] lo, logic [32:0] hi);
    make_range = {1'b1, lo, hi};
  endfunction

  // Reads a byte of a quantization slot's misc word in the output type (int8 or uint8).
  function automatic logic signed [8:0] as_out_type(logic [7:0] b, logic uns);
    as_out_type = uns ? $signed({1'b0, b}) : $signed({b[7], b});
  endfunction

  // saturate_int32(acc + bias): the first step of `activate`, and all of a raw one (isa.md).
  function automatic logic signed [31:0] add_bias(logic signed [31:0] acc,
                                                  logic signed [31:0] bias);
    logic signed [32:0] sum;
    sum = $signed({acc[31], acc}) + $signed({bias[31], bias});
    if (sum > 33'sh0_7FFF_FFFF)       add_bias = 32'sh7FFF_FFFF;
    else if (sum < -33'sh0_8000_0000) add_bias = -32'sh8000_0000;
    else                              add_bias = sum[31:0];
  endfunction

  // One column of `activate` before the LUT (docs/isa.md): saturating bias add, exact 64-bit
  // scale, round half away from zero, zero point, saturation to the output type, then
  // identity / ReLU / clamp. For FuncLut the caller looks the result up in the LUT.
  // Explicit sign extension throughout: size casts do not extend signed values in every tool.
  function automatic logic signed [8:0] requantize(logic signed [31:0] acc,
                                                   logic signed [31:0] bias,
                                                   logic signed [31:0] mult,
                                                   logic [31:0] misc,
                                                   logic [1:0] func,
                                                   logic out_unsigned);
    logic signed [31:0] x;
    logic signed [63:0] p, q, rounded, with_zp;
    logic        [63:0] rem, half;
    logic        [5:0]  shift;
    logic               up;
    logic signed [8:0]  zp, lo, hi, qmin, qmax, y, y_lo;
    logic               unused_misc;

    unused_misc = ^misc[7:6];  // reserved, ignored (docs/isa.md)
    x = add_bias(acc, bias);
    p     = $signed({{32{x[31]}}, x}) * $signed({{32{mult[31]}}, mult});
    shift = misc[5:0];
    // p / 2^shift in 64 bits (|p| <= 2^62, so nothing overflows): floor, then step up when the
    // remainder is above half (or equal to it for p >= 0).
    q    = p >>> shift;
    rem  = 64'(p) & ((64'd1 << shift) - 64'd1);
    half = (shift == 6'd0) ? 64'd0 : (64'd1 << (shift - 6'd1));
    up   = (shift != 6'd0) && (p[63] ? (rem > half) : (rem >= half));
    rounded = q + {63'd0, up};
    zp   = as_out_type(misc[15:8], out_unsigned);
    lo   = as_out_type(misc[23:16], out_unsigned);
    hi   = as_out_type(misc[31:24], out_unsigned);
    qmin = out_unsigned ? 9'sd0 : -9'sd128;
    qmax = out_unsigned ? 9'sd255 : 9'sd127;
    with_zp = rounded + $signed({{55{zp[8]}}, zp});
    if (with_zp > $signed({{55{qmax[8]}}, qmax}))      y = qmax;
    else if (with_zp < $signed({{55{qmin[8]}}, qmin})) y = qmin;
    else                                               y = with_zp[8:0];
    // min(max(y, lo), hi) for clamp, also when lo > hi.
    y_lo = (y < lo) ? lo : y;
    unique case (func)
      FuncRelu:  requantize = (y < zp) ? zp : y;
      FuncClamp: requantize = (y_lo > hi) ? hi : y_lo;
      FuncIdentity, FuncLut: requantize = y;  // the LUT is applied by the caller
      default:   requantize = y;
    endcase
  endfunction

endpackage

// The floating-point functions (package tpu_fp_pkg), here so that they are declared wherever
// tpu_pkg is, before any module that calls them.
`include "tpu_fp_pkg.svh"
`include "tpu_vpu_pkg.svh"
`include "tpu_ici_pkg.svh"
