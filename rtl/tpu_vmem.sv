// SPDX-License-Identifier: Apache-2.0
// Vector memory (training chip, docs/isa.md "Vector memory (VMEM)"): VmemRows rows of N 32-bit
// lanes, two read ports and one write port, and the arbiter that serves the units' client
// ports.
//
// Organisation: VpuRows banks interleaved by row (row r lives in bank r mod VpuRows at index
// r / VpuRows), each bank built from two tpu_sram copies written together (as
// tpu_accumulators), copy p serving read port p. Any VpuRows consecutive rows are in distinct
// banks, so the vector unit reads VpuRows rows on each read port and writes VpuRows rows in one
// cycle (docs/isa.md "Bandwidth and what the design assumes"); the other clients move one row
// per cycle through the same banks. With VpuRows = 1 this is the plain two-copy memory.
//
// Narrow client ports (the convention of every VMEM client, docs/architecture.md): a read
// client i raises re, presents raddr and is granted (rgnt) in the same cycle; the row is on its
// rdata in the cycle after a granted read (only then). A write client raises we with waddr /
// wdata and the row is written at the clock edge when it is granted; a denied client holds its
// request. Read client i uses read port RdPort[i]. Grants are per bank: a narrow client uses
// one bank (the bank of its row) and is granted unless a lower-numbered narrow client of its
// port (or, for writes, of the write port) uses that bank in this cycle (fixed priority per
// bank: client 0 of a port is never denied, which the DMA units rely on). So two narrow clients
// of a port streaming through different banks both move a row per cycle (docs/isa.md
// "Bandwidth and what the design assumes"); with VpuRows = 1 the one bank is the whole port.
//
// The vector unit's wide ports (rtl/tpu_vpu.sv) come last on each port: one wide read client
// per read port (va_ port 0, vb_ port 1) and one wide write client. They are bank-indexed:
// bank k's request in bit k, its row address (a row of bank k: low bits = k) in [16k +: 16],
// its data in [32Nk +: 32N], its grant in bit k. A wide client is granted bank by bank: every
// bank it requests that no narrow client of the port uses in this cycle, so the vector unit
// keeps moving the other rows of its group while narrow clients stream. A read
// granted in the cycle a write of the same row is granted returns the new row (write-first,
// every bank and copy).
`include "tpu_assert.svh"

module tpu_vmem #(
  parameter int unsigned N         = 16,
  parameter int unsigned VmemRows  = 8192,
  parameter int unsigned VpuRows   = 1,    // banks: rows the vector unit moves per cycle
  parameter int unsigned RdClients = 2,
  parameter int unsigned WrClients = 1,
  parameter logic [RdClients-1:0] RdPort = '0   // bit i: the read port of read client i
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  // Narrow read clients: client i in bit i / [16i +: 16].
  input  logic [RdClients-1:0]          re_i,
  input  logic [16*RdClients-1:0]       raddr_i,
  output logic [RdClients-1:0]          rgnt_o,
  output logic [32*N*RdClients-1:0]     rdata_o,   // client i in [32Ni +: 32N]
  // Narrow write clients.
  input  logic [WrClients-1:0]          we_i,
  input  logic [16*WrClients-1:0]       waddr_i,
  input  logic [32*N*WrClients-1:0]     wdata_i,
  output logic [WrClients-1:0]          wgnt_o,
  // The vector unit's wide read clients: port 0 (va) and port 1 (vb), bank-indexed.
  input  logic [VpuRows-1:0]            va_re_i,
  input  logic [16*VpuRows-1:0]         va_raddr_i,
  output logic [VpuRows-1:0]            va_rgnt_o,
  output logic [32*N*VpuRows-1:0]       va_rdata_o,
  input  logic [VpuRows-1:0]            vb_re_i,
  input  logic [16*VpuRows-1:0]         vb_raddr_i,
  output logic [VpuRows-1:0]            vb_rgnt_o,
  output logic [32*N*VpuRows-1:0]       vb_rdata_o,
  // The vector unit's wide write client, bank-indexed.
  input  logic [VpuRows-1:0]            vw_we_i,
  input  logic [16*VpuRows-1:0]         vw_waddr_i,
  input  logic [32*N*VpuRows-1:0]       vw_wdata_i,
  output logic [VpuRows-1:0]            vw_wgnt_o
);
  localparam int unsigned VmW   = $clog2(VmemRows);
  localparam int unsigned BankW = VpuRows > 1 ? $clog2(VpuRows) : 1;  // bank number bits
  localparam int unsigned SelW  = $clog2(VpuRows);                     // row bits naming a bank
  localparam int unsigned IdxW  = VmW - SelW;                          // row index in a bank
  localparam int unsigned RowW  = 32 * N;

  // Bank of a row, and its index inside the bank.
  function automatic logic [BankW-1:0] bank_of(logic [15:0] row);
    bank_of = VpuRows > 1 ? BankW'(row & 16'(VpuRows - 1)) : '0;
  endfunction
  function automatic logic [IdxW-1:0] idx_of(logic [15:0] row);
    idx_of = IdxW'(row >> SelW);
  endfunction

  // Per port p and bank k (bit / slot VpuRows * p + k): the bank copies' read requests.
  logic [2*VpuRows-1:0]      bank_re;
  logic [2*IdxW*VpuRows-1:0] bank_raddr;
  logic [2*RowW*VpuRows-1:0] bank_rdata;
  logic [VpuRows-1:0]        bank_we;
  logic [IdxW*VpuRows-1:0]   bank_waddr;
  logic [RowW*VpuRows-1:0]   bank_wdata;

  // Read ports: per bank, fixed priority among the narrow clients of the port, then the wide
  // client. rd_used: port p's bank k (bit VpuRows * p + k) is read by a narrow client.
  logic [2*VpuRows-1:0]     rd_used;
  logic [BankW*RdClients-1:0] rbank_q;  // the bank of client i's last granted read
  always_comb begin
    rd_used    = '0;
    bank_re    = '0;
    bank_raddr = '0;
    rgnt_o     = '0;
    for (int i = 0; i < 32'(RdClients); i++) begin
      if (re_i[i] && !rd_used[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))]) begin
        rd_used[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))] = 1'b1;
        bank_re[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))] = 1'b1;
        bank_raddr[IdxW*(VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))) +: IdxW] =
            idx_of(raddr_i[16*i +: 16]);
        rgnt_o[i] = 1'b1;
      end
    end
    // The wide clients: every requested bank the port's narrow clients leave free.
    for (int k = 0; k < 32'(VpuRows); k++) begin
      va_rgnt_o[k] = va_re_i[k] && !rd_used[k];
      vb_rgnt_o[k] = vb_re_i[k] && !rd_used[VpuRows + k];
      if (va_rgnt_o[k]) begin
        bank_re[k]                   = 1'b1;
        bank_raddr[IdxW*k +: IdxW]   = idx_of(va_raddr_i[16*k +: 16]);
      end
      if (vb_rgnt_o[k]) begin
        bank_re[VpuRows + k]                     = 1'b1;
        bank_raddr[IdxW*(VpuRows + k) +: IdxW]   = idx_of(vb_raddr_i[16*k +: 16]);
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rbank_q <= '0;
    end else begin
      for (int i = 0; i < 32'(RdClients); i++) begin
        if (rgnt_o[i]) rbank_q[BankW*i +: BankW] <= bank_of(raddr_i[16*i +: 16]);
      end
    end
  end

  always_comb begin
    for (int i = 0; i < 32'(RdClients); i++) begin
      rdata_o[RowW*i +: RowW] =
          bank_rdata[RowW*(VpuRows*32'(RdPort[i]) + 32'(rbank_q[BankW*i +: BankW])) +: RowW];
    end
  end
  assign va_rdata_o = bank_rdata[0 +: RowW*VpuRows];
  assign vb_rdata_o = bank_rdata[RowW*VpuRows +: RowW*VpuRows];

  // Write port: per bank, fixed priority among the narrow clients, then the wide client in
  // every bank the narrow writes leave free.
  logic [VpuRows-1:0] wr_used;  // bank k is written by a narrow client
  always_comb begin
    wr_used    = '0;
    wgnt_o     = '0;
    bank_we    = '0;
    bank_waddr = '0;
    bank_wdata = '0;
    for (int i = 0; i < 32'(WrClients); i++) begin
      if (we_i[i] && !wr_used[bank_of(waddr_i[16*i +: 16])]) begin
        wr_used[bank_of(waddr_i[16*i +: 16])]                      = 1'b1;
        bank_we[bank_of(waddr_i[16*i +: 16])]                      = 1'b1;
        bank_waddr[IdxW*32'(bank_of(waddr_i[16*i +: 16])) +: IdxW] = idx_of(waddr_i[16*i +: 16]);
        bank_wdata[RowW*32'(bank_of(waddr_i[16*i +: 16])) +: RowW] = wdata_i[RowW*i +: RowW];
        wgnt_o[i] = 1'b1;
      end
    end
    for (int k = 0; k < 32'(VpuRows); k++) begin
      vw_wgnt_o[k] = vw_we_i[k] && !wr_used[k];
      if (vw_wgnt_o[k]) begin
        bank_we[k]                 = 1'b1;
        bank_waddr[IdxW*k +: IdxW] = idx_of(vw_waddr_i[16*k +: 16]);
        bank_wdata[RowW*k +: RowW] = vw_wdata_i[RowW*k +: RowW];
      end
    end
  end

  for (genvar p = 0; p < 2; p++) begin : g_copy
    for (genvar k = 0; k < VpuRows; k++) begin : g_bank
      tpu_sram #(.Depth(VmemRows / VpuRows), .Width(RowW), .ByteEn(1'b0), .WriteFirst(1'b1))
          u_mem (
        .clk_i,
        .we_i(bank_we[k]), .waddr_i(bank_waddr[IdxW*k +: IdxW]),
        .wdata_i(bank_wdata[RowW*k +: RowW]), .wbe_i('1),
        .re_i(bank_re[VpuRows*p + k]), .raddr_i(bank_raddr[IdxW*(VpuRows*p + k) +: IdxW]),
        .rdata_o(bank_rdata[RowW*(VpuRows*p + k) +: RowW])
      );
    end
  end

  // Legal addresses are below VmemRows (the decoder's ERR_VMEM_RANGE), a power of two; the
  // wide clients' low row bits name the bank (checked below).
  logic unused_addr;
  always_comb begin
    unused_addr = 1'b0;
    for (int i = 0; i < 32'(RdClients); i++) unused_addr ^= ^(raddr_i[16*i +: 16] >> VmW);
    for (int i = 0; i < 32'(WrClients); i++) unused_addr ^= ^(waddr_i[16*i +: 16] >> VmW);
    for (int k = 0; k < 32'(VpuRows); k++) begin
      unused_addr ^= ^{va_raddr_i[16*k +: 16] >> VmW, vb_raddr_i[16*k +: 16] >> VmW,
                       vw_waddr_i[16*k +: 16] >> VmW};
    end
  end

  // A granted narrow write is in range; a wide client's bank k carries a row of bank k, in
  // range.
  logic wide_ok, write_ok;
  always_comb begin
    write_ok = 1'b1;
    for (int i = 0; i < 32'(WrClients); i++) begin
      if (wgnt_o[i] && 32'(waddr_i[16*i +: 16]) >= VmemRows) write_ok = 1'b0;
    end
    wide_ok = 1'b1;
    for (int k = 0; k < 32'(VpuRows); k++) begin
      if (va_re_i[k] && (32'(bank_of(va_raddr_i[16*k +: 16])) != k ||
                         32'(va_raddr_i[16*k +: 16]) >= VmemRows)) wide_ok = 1'b0;
      if (vb_re_i[k] && (32'(bank_of(vb_raddr_i[16*k +: 16])) != k ||
                         32'(vb_raddr_i[16*k +: 16]) >= VmemRows)) wide_ok = 1'b0;
      if (vw_we_i[k] && (32'(bank_of(vw_waddr_i[16*k +: 16])) != k ||
                         32'(vw_waddr_i[16*k +: 16]) >= VmemRows)) wide_ok = 1'b0;
    end
  end

  // The bank copies each client is granted (port p, bank k: bit VpuRows * p + k), counted
  // from the grants alone.
  logic [2*VpuRows-1:0] rd_narrow, rd_clash;
  logic [VpuRows-1:0]   wr_narrow, wr_clash;
  always_comb begin
    rd_narrow = '0;
    rd_clash  = '0;
    wr_narrow = '0;
    wr_clash  = '0;
    for (int i = 0; i < 32'(RdClients); i++) begin
      if (rgnt_o[i]) begin
        rd_clash[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))] |=
            rd_narrow[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))];
        rd_narrow[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))] = 1'b1;
      end
    end
    for (int i = 0; i < 32'(WrClients); i++) begin
      if (wgnt_o[i]) begin
        wr_clash[bank_of(waddr_i[16*i +: 16])] |= wr_narrow[bank_of(waddr_i[16*i +: 16])];
        wr_narrow[bank_of(waddr_i[16*i +: 16])] = 1'b1;
      end
    end
    rd_clash = rd_clash | (rd_narrow & {vb_rgnt_o, va_rgnt_o});
    wr_clash = wr_clash | (wr_narrow & vw_wgnt_o);
  end
  // Replays the grants in priority order: a denied narrow client's bank must already be taken.
  logic                 narrow_ok;
  logic [2*VpuRows-1:0] rd_seen;
  logic [VpuRows-1:0]   wr_seen;
  always_comb begin
    narrow_ok = 1'b1;
    rd_seen   = '0;
    wr_seen   = '0;
    for (int i = 0; i < 32'(RdClients); i++) begin
      if (re_i[i] && !rgnt_o[i] &&
          !rd_seen[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))]) narrow_ok = 1'b0;
      if (rgnt_o[i]) rd_seen[VpuRows*RdPort[i] + 32'(bank_of(raddr_i[16*i +: 16]))] = 1'b1;
    end
    for (int i = 0; i < 32'(WrClients); i++) begin
      if (we_i[i] && !wgnt_o[i] && !wr_seen[bank_of(waddr_i[16*i +: 16])]) narrow_ok = 1'b0;
      if (wgnt_o[i]) wr_seen[bank_of(waddr_i[16*i +: 16])] = 1'b1;
    end
  end

  `TPU_ASSERT_INIT(VmemRowsPow2, VmemRows >= 2 && VmemRows <= (1 << 16) &&
                                 (VmemRows & (VmemRows - 1)) == 0)
  `TPU_ASSERT_INIT(VmemBanks, VpuRows >= 1 && VpuRows <= 8 && (VpuRows & (VpuRows - 1)) == 0 &&
                              VmemRows >= 2 * VpuRows)
  // A narrow client is denied only in a bank a lower-numbered narrow client of its port (or of
  // the write port) is granted in this cycle (per-bank priority: no bank idles while a narrow
  // client waits for it).
  `TPU_ASSERT(VmemNarrowDenied, narrow_ok)
  // Grant exclusivity per bank: at most one client reads each bank copy and at most one writes
  // each bank in a cycle; a wide request is denied only in a bank that a narrow client of its
  // port uses in that cycle (the narrow clients keep their priority, and the wide clients get
  // every other bank: no bank sits idle while the vector unit waits for it).
  `TPU_ASSERT(VmemBankExclusive, rd_clash == '0 && wr_clash == '0)
  `TPU_ASSERT(VmemWideDenied, (va_re_i & ~va_rgnt_o & ~rd_narrow[0 +: VpuRows]) == '0 &&
                              (vb_re_i & ~vb_rgnt_o & ~rd_narrow[VpuRows +: VpuRows]) == '0 &&
                              (vw_we_i & ~vw_wgnt_o & ~wr_narrow) == '0)
  // Only requesting clients are granted; a granted read or write is in range.
  `TPU_ASSERT(VmemGrantRead, (rgnt_o & ~re_i) == '0)
  `TPU_ASSERT(VmemGrantWrite, (wgnt_o & ~we_i) == '0)
  `TPU_ASSERT(VmemWideBanks, wide_ok)
  `TPU_ASSERT(VmemWriteRange, write_ok)

endmodule
