// AXI4 read-channel arbiter: several read clients share the master's AR/R channels.
// Fixed priority (client 0 first); the grant is held from AR until the burst's last R beat,
// so only one burst is outstanding and R beats need no ID to find their owner.
module tpu_axi_rd_arb #(
  parameter int unsigned Clients = 3
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  // Clients.
  input  logic                 c_ar_valid_i [Clients],
  input  logic [31:0]          c_ar_addr_i  [Clients],
  input  logic [7:0]           c_ar_len_i   [Clients],
  output logic                 c_ar_ready_o [Clients],
  output logic                 c_r_valid_o  [Clients],
  // Master.
  output logic [31:0]          m_ar_addr_o,
  output logic [7:0]           m_ar_len_o,
  output logic                 m_ar_valid_o,
  input  logic                 m_ar_ready_i,
  input  logic                 m_r_valid_i,
  input  logic                 m_r_last_i,
  output logic                 m_r_ready_o
);
  localparam int unsigned IdxW = (Clients > 1) ? $clog2(Clients) : 1;

  logic            locked_q;   // a burst is outstanding for owner_q
  logic            ar_done_q;  // its AR has been accepted
  logic [IdxW-1:0] owner_q;
  logic [IdxW-1:0] pick;
  logic            any;

  always_comb begin
    any  = 1'b0;
    pick = '0;
    for (int i = int'(Clients) - 1; i >= 0; i--) begin
      if (c_ar_valid_i[i]) begin
        any  = 1'b1;
        pick = IdxW'(i);
      end
    end
  end

  always_comb begin
    m_ar_valid_o = locked_q && !ar_done_q;
    m_ar_addr_o  = c_ar_addr_i[owner_q];
    m_ar_len_o   = c_ar_len_i[owner_q];
    m_r_ready_o  = locked_q && ar_done_q;
    for (int i = 0; i < int'(Clients); i++) begin
      c_ar_ready_o[i] = m_ar_valid_o && m_ar_ready_i && (owner_q == IdxW'(i));
      c_r_valid_o[i]  = m_r_ready_o && m_r_valid_i && (owner_q == IdxW'(i));
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      locked_q  <= 1'b0;
      ar_done_q <= 1'b0;
      owner_q   <= '0;
    end else if (!locked_q) begin
      if (any) begin
        locked_q <= 1'b1;
        owner_q  <= pick;
      end
    end else if (!ar_done_q) begin
      if (m_ar_ready_i) ar_done_q <= 1'b1;
    end else if (m_r_valid_i && m_r_last_i) begin
      locked_q  <= 1'b0;
      ar_done_q <= 1'b0;
    end
  end

endmodule
