// SPDX-License-Identifier: Apache-2.0
#include "host_memory.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace tpu {

namespace {

constexpr uint64_t kAddressSpace = uint64_t{1} << 32;

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

void RegionMemory::add_region(uint64_t base, uint64_t size, Access access) {
  if (size == 0)
    throw std::invalid_argument("RegionMemory: region at " + hex(base) + " has size 0");
  if (base >= kAddressSpace || size > kAddressSpace - base) {
    throw std::invalid_argument("RegionMemory: region " + hex(base) + " + " + hex(size) +
                                " reaches past the 32-bit address space");
  }
  auto next = regions_.lower_bound(base);
  if (next != regions_.end() && next->first < base + size) {
    throw std::invalid_argument("RegionMemory: region " + hex(base) + " + " + hex(size) +
                                " overlaps the region at " + hex(next->first));
  }
  if (next != regions_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes.size() > base) {
      throw std::invalid_argument("RegionMemory: region " + hex(base) + " + " + hex(size) +
                                  " overlaps the region at " + hex(prev->first));
    }
  }
  regions_.emplace(base, Region{std::vector<uint8_t>(size, 0), access});
}

bool RegionMemory::map_range(uint64_t addr, size_t len, bool need_write, uint64_t* bad,
                             std::vector<Chunk>* chunks) const {
  chunks->clear();
  if (len == 0) return true;
  if (addr >= kAddressSpace) {
    *bad = addr;
    return false;
  }
  uint64_t end = addr + std::min<uint64_t>(len, kAddressSpace);  // no wrap: addr < 2^32
  uint64_t a = addr;
  while (a < end) {
    auto it = regions_.upper_bound(a);
    bool ok = it != regions_.begin();
    if (ok) {
      --it;
      ok = a < it->first + it->second.bytes.size() &&
           !(need_write && it->second.access == Access::ReadOnly);
    }
    if (!ok) {
      *bad = a;
      return false;
    }
    uint64_t offset = a - it->first;
    uint64_t n = std::min<uint64_t>(end - a, it->second.bytes.size() - offset);
    chunks->push_back({it->first, offset, a - addr, n});
    a += n;
  }
  if (end - addr < len) {  // the access runs past 2^32
    *bad = kAddressSpace;
    return false;
  }
  return true;
}

bool RegionMemory::read(uint64_t addr, size_t len, uint8_t* dst) {
  uint64_t bad;
  std::vector<Chunk> chunks;
  if (!map_range(addr, len, false, &bad, &chunks)) return false;
  for (const Chunk& c : chunks) {
    std::memcpy(dst + c.pos, regions_.at(c.region_base).bytes.data() + c.offset, c.len);
  }
  return true;
}

bool RegionMemory::write(uint64_t addr, size_t len, const uint8_t* src) {
  uint64_t bad;
  std::vector<Chunk> chunks;
  if (!map_range(addr, len, true, &bad, &chunks)) return false;  // nothing written
  for (const Chunk& c : chunks) {
    std::memcpy(regions_.at(c.region_base).bytes.data() + c.offset, src + c.pos, c.len);
  }
  return true;
}

void RegionMemory::load(uint64_t addr, const std::vector<uint8_t>& bytes) {
  uint64_t bad;
  std::vector<Chunk> chunks;
  if (!map_range(addr, bytes.size(), false, &bad, &chunks)) {
    throw std::out_of_range("RegionMemory::load: address " + hex(bad) + " is not mapped (loading " +
                            std::to_string(bytes.size()) + " bytes at " + hex(addr) + ")");
  }
  for (const Chunk& c : chunks) {
    std::memcpy(regions_.at(c.region_base).bytes.data() + c.offset, bytes.data() + c.pos, c.len);
  }
}

std::vector<uint8_t> RegionMemory::dump(uint64_t addr, size_t len) const {
  uint64_t bad;
  std::vector<Chunk> chunks;
  if (!map_range(addr, len, false, &bad, &chunks)) {
    throw std::out_of_range("RegionMemory::dump: address " + hex(bad) + " is not mapped (dumping " +
                            std::to_string(len) + " bytes at " + hex(addr) + ")");
  }
  std::vector<uint8_t> out(len);
  for (const Chunk& c : chunks) {
    std::memcpy(out.data() + c.pos, regions_.at(c.region_base).bytes.data() + c.offset, c.len);
  }
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> RegionMemory::regions() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& [base, region] : regions_) out.emplace_back(base, region.bytes.size());
  return out;
}

}  // namespace tpu
