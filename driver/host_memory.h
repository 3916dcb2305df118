// SPDX-License-Identifier: Apache-2.0
// Host memory as the chip sees it over AXI: a 32-bit byte-addressed space in which accesses
// outside mapped memory fail (the chip sees SLVERR/DECERR and reports ERR_AXI_READ/WRITE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace tpu {

class HostMemory {
 public:
  virtual ~HostMemory() = default;
  // Copies bytes [addr, addr + len) into dst. Returns false, with dst unspecified, if any
  // of them cannot be read. Addresses are 64-bit so that addr + len never wraps; anything at
  // or above 2^32 is outside the chip's address space and must fail.
  virtual bool read(uint64_t addr, size_t len, uint8_t* dst) = 0;
  // Copies src to bytes [addr, addr + len). Returns false, writing nothing, if any of them
  // cannot be written.
  virtual bool write(uint64_t addr, size_t len, const uint8_t* src) = 0;
};

// Host memory made of zero-initialized regions; accesses must lie wholly inside mapped
// regions (possibly spanning adjacent ones). Read-only regions make write errors testable.
class RegionMemory : public HostMemory {
 public:
  enum class Access { ReadWrite, ReadOnly };

  // Maps [base, base + size). Throws std::invalid_argument if size is 0, the region reaches
  // past 2^32 or overlaps an existing region.
  void add_region(uint64_t base, uint64_t size, Access access = Access::ReadWrite);

  bool read(uint64_t addr, size_t len, uint8_t* dst) override;
  bool write(uint64_t addr, size_t len, const uint8_t* src) override;

  // Test set-up and inspection, bypassing access rights. Throw std::out_of_range naming the
  // first unmapped address.
  void load(uint64_t addr, const std::vector<uint8_t>& bytes);
  std::vector<uint8_t> dump(uint64_t addr, size_t len) const;

  // The mapped regions as (base, size), by address (e.g. to program matching DMA windows).
  std::vector<std::pair<uint64_t, uint64_t>> regions() const;

 private:
  struct Region {
    std::vector<uint8_t> bytes;
    Access access;
  };
  // A piece of an access that lies in one region.
  struct Chunk {
    uint64_t region_base;
    uint64_t offset;  // in the region
    uint64_t pos;     // in the access
    uint64_t len;
  };
  // Splits [addr, addr + len) into chunks. Returns false if a byte is unmapped or, when
  // `need_write`, read-only; `bad` then receives the first such address.
  bool map_range(uint64_t addr, size_t len, bool need_write, uint64_t* bad,
                 std::vector<Chunk>* chunks) const;

  std::map<uint64_t, Region> regions_;  // by base address
};

}  // namespace tpu
