// SPDX-License-Identifier: Apache-2.0
// ProgramBuilder: the inter-chip link instructions (docs/isa.md "Inter-chip links").
#include <cinttypes>

#include "program.h"
#include "text.h"

namespace tpu {

using detail::format;

void ProgramBuilder::check_ici(const char* m, uint32_t link, uint64_t vmem_row,
                               uint64_t rows) const {
  check_not_halted(m);
  if (!params_.has_ici()) {
    fail(m, "",
         "needs the pod configuration (inter-chip links), but this chip has IciLinks = 0 (the "
         "chip would fault with ERR_OPCODE)");
  }
  if (link >= params_.ici_links) {
    fail(m, "link",
         format("link = %u is out of range (allowed 0..%u: IciLinks = %u; the chip would fault "
                "with ERR_ICI_LINK)",
                link, params_.ici_links - 1, params_.ici_links));
  }
  if (rows == 0 || rows > params_.vmem_rows) {
    fail(m, "rows",
         format("rows = %" PRIu64 " (allowed 1..%u: VmemRows)", rows, params_.vmem_rows));
  }
  if (vmem_row + rows - 1 >= params_.vmem_rows) {
    fail(m, "vmem_row",
         format("vmem_row + rows - 1 = %" PRIu64 " is out of range (allowed 0..%u: VmemRows = %u)",
                vmem_row + rows - 1, params_.vmem_rows - 1, params_.vmem_rows));
  }
}

ProgramBuilder& ProgramBuilder::ici_send(uint32_t link, uint32_t vmem_row, uint32_t rows) {
  check_ici("ici_send", link, vmem_row, rows);
  return ici_send(IciSend{static_cast<uint8_t>(link), static_cast<uint16_t>(vmem_row), rows});
}

ProgramBuilder& ProgramBuilder::ici_send(const IciSend& in) {
  check_ici("ici_send", in.link, in.vmem_addr, in.rows);
  push(in, "ici_send");
  return *this;
}

ProgramBuilder& ProgramBuilder::ici_recv(uint32_t link, uint32_t vmem_row, uint32_t rows,
                                         IciReduce reduce) {
  check_ici("ici_recv", link, vmem_row, rows);
  return ici_recv(IciRecv{static_cast<uint8_t>(link), static_cast<uint8_t>(reduce),
                          static_cast<uint16_t>(vmem_row), rows});
}

ProgramBuilder& ProgramBuilder::ici_recv(const IciRecv& in) {
  const char* m = "ici_recv";
  check_ici(m, in.link, in.vmem_addr, in.rows);
  if (ici_reduce_name(in.reduce).empty()) {
    fail(
        m, "reduce",
        format("reduce = %u is not a reduction (allowed 0 = none, 1 = fadd, 2 = iadd)", in.reduce));
  }
  push(in, m);
  return *this;
}

}  // namespace tpu
