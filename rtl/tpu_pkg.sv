// Shared definitions of the tpu-rtl core: opcodes, error codes, instruction fields.
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
    OpHalt        = 8'h07
  } opcode_e;

  typedef enum logic [3:0] {
    ErrNone           = 4'd0,
    ErrOpcode         = 4'd1,
    ErrReserved       = 4'd2,
    ErrField          = 4'd3,
    ErrUbRange        = 4'd4,
    ErrAccRange       = 4'd5,
    ErrParamRange     = 4'd6,
    ErrAlign          = 4'd7,
    ErrHostRange      = 4'd8,
    ErrAxiRead        = 4'd9,
    ErrAxiWrite       = 4'd10,
    ErrCmdOverrun     = 4'd11,
    ErrNoWeights      = 4'd12,
    ErrWeightOverflow = 4'd13
  } err_e;

  // read_host destinations
  localparam logic [1:0] DestUb    = 2'd0;
  localparam logic [1:0] DestParam = 2'd1;
  localparam logic [1:0] DestLut   = 2'd2;

  // activate functions
  localparam logic [1:0] FuncIdentity = 2'd0;
  localparam logic [1:0] FuncRelu     = 2'd1;
  localparam logic [1:0] FuncClamp    = 2'd2;
  localparam logic [1:0] FuncLut      = 2'd3;

  // Rows of one quantization slot in the parameter memory: bias, mult, misc, 4 rows each.
  localparam int unsigned SlotRows = 12;

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
    logic   param_rd;
    logic   param_wr;
  } footprint_t;

  function automatic logic ranges_overlap(range_t a, range_t b);
    return a.valid && b.valid && (a.lo <= b.hi) && (b.lo <= a.hi);
  endfunction

  // True when instruction `a` may not start while `b` is still in flight (RAW, WAR, WAW).
  function automatic logic footprints_conflict(footprint_t a, footprint_t b);
    return ranges_overlap(a.ub_wr, b.ub_rd)   || ranges_overlap(a.ub_wr, b.ub_wr)   ||
           ranges_overlap(a.ub_rd, b.ub_wr)   ||
           ranges_overlap(a.acc_wr, b.acc_rd) || ranges_overlap(a.acc_wr, b.acc_wr) ||
           ranges_overlap(a.acc_rd, b.acc_wr) ||
           ranges_overlap(a.host_wr, b.host_rd) || ranges_overlap(a.host_wr, b.host_wr) ||
           ranges_overlap(a.host_rd, b.host_wr) ||
           (a.param_wr && (b.param_rd || b.param_wr)) || (a.param_rd && b.param_wr);
  endfunction

  function automatic range_t make_range(logic [32:0] lo, logic [32:0] hi);
    range_t r;
    r.valid = 1'b1;
    r.lo    = lo;
    r.hi    = hi;
    return r;
  endfunction

endpackage
