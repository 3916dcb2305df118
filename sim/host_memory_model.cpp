// SPDX-License-Identifier: Apache-2.0
#include "host_memory_model.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace tpu::sim {

namespace {

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

std::string range_text(uint64_t addr, uint64_t len) {
  return "[" + hex(addr) + ", " + hex(addr + len) + ")";
}

}  // namespace

HostMemoryModel::HostMemoryModel(sc_core::sc_module_name name, sc_core::sc_time clock_period,
                                 HostMemoryTiming timing)
    : sc_core::sc_module(name), socket("socket"), clock_period_(clock_period), port_{timing} {
  socket.register_b_transport(this, &HostMemoryModel::b_transport);
}

void HostMemoryModel::add_region(uint64_t base, uint64_t size, const std::string& name) {
  if (size == 0)
    throw std::invalid_argument("HostMemoryModel::add_region(" + name + "): size is 0");
  if (base + size < base)
    throw std::invalid_argument("HostMemoryModel::add_region(" + name + "): " + hex(base) + " + " +
                                hex(size) + " wraps past 2^64");
  for (const Region& r : regions_) {
    if (base < r.base + r.size && r.base < base + size)
      throw std::invalid_argument("HostMemoryModel::add_region(" + name +
                                  "): " + range_text(base, size) + " overlaps region '" + r.name +
                                  "' " + range_text(r.base, r.size));
  }
  regions_.push_back({base, size, name});
  std::sort(regions_.begin(), regions_.end(),
            [](const Region& a, const Region& b) { return a.base < b.base; });
}

void HostMemoryModel::inject_error(uint64_t base, uint64_t size) {
  if (size == 0) throw std::invalid_argument("HostMemoryModel::inject_error: size is 0");
  errors_.push_back({base, size, "injected error"});
}

void HostMemoryModel::clear() {
  regions_.clear();
  errors_.clear();
  pages_.clear();
  stats_ = {};
  port_.free_at = sc_core::SC_ZERO_TIME;
}

bool HostMemoryModel::inside_regions(uint64_t addr, uint64_t len) const {
  if (len == 0) return true;
  if (addr + len < addr) return false;
  // Regions are sorted and disjoint: walk the adjacent ones that cover [addr, addr + len).
  uint64_t next = addr;
  const uint64_t end = addr + len;
  for (const Region& r : regions_) {
    if (r.base > next) {
      if (r.base >= end) break;
      return false;  // gap before this region
    }
    if (r.base + r.size > next) next = r.base + r.size;
    if (next >= end) return true;
  }
  return next >= end;
}

bool HostMemoryModel::overlaps_injected_error(uint64_t addr, uint64_t len) const {
  for (const Region& e : errors_) {
    if (addr < e.base + e.size && e.base < addr + len) return true;
  }
  return false;
}

std::string HostMemoryModel::describe_regions() const {
  if (regions_.empty()) return "no regions registered";
  std::string s = "regions:";
  for (const Region& r : regions_) s += " '" + r.name + "' " + range_text(r.base, r.size);
  return s;
}

void HostMemoryModel::copy_out(uint64_t addr, uint8_t* dst, size_t len) const {
  while (len > 0) {
    const uint64_t page = addr / kPageBytes, offset = addr % kPageBytes;
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(len, kPageBytes - offset));
    auto it = pages_.find(page);
    if (it == pages_.end())
      std::memset(dst, 0, chunk);
    else
      std::memcpy(dst, it->second.get() + offset, chunk);
    addr += chunk;
    dst += chunk;
    len -= chunk;
  }
}

uint8_t* HostMemoryModel::page_for_write(uint64_t page_index) {
  auto& page = pages_[page_index];
  if (!page) {
    page.reset(new uint8_t[kPageBytes]);
    std::memset(page.get(), 0, kPageBytes);
  }
  return page.get();
}

void HostMemoryModel::copy_in(uint64_t addr, const uint8_t* src, size_t len,
                              const uint8_t* byte_enable, size_t byte_enable_len) {
  size_t done = 0;
  while (done < len) {
    const uint64_t page = addr / kPageBytes, offset = addr % kPageBytes;
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(len - done, kPageBytes - offset));
    uint8_t* p = page_for_write(page) + offset;
    if (byte_enable == nullptr) {
      std::memcpy(p, src + done, chunk);
    } else {
      for (size_t i = 0; i < chunk; ++i) {
        if (byte_enable[(done + i) % byte_enable_len] != TLM_BYTE_DISABLED) p[i] = src[done + i];
      }
    }
    addr += chunk;
    done += chunk;
  }
}

void HostMemoryModel::read(uint64_t addr, void* dst, size_t len) const {
  if (!inside_regions(addr, len))
    throw std::out_of_range("HostMemoryModel::read " + range_text(addr, len) +
                            " is not inside registered regions (" + describe_regions() + ")");
  copy_out(addr, static_cast<uint8_t*>(dst), len);
}

std::vector<uint8_t> HostMemoryModel::read(uint64_t addr, size_t len) const {
  std::vector<uint8_t> bytes(len);
  read(addr, bytes.data(), len);
  return bytes;
}

void HostMemoryModel::write(uint64_t addr, const void* src, size_t len) {
  if (!inside_regions(addr, len))
    throw std::out_of_range("HostMemoryModel::write " + range_text(addr, len) +
                            " is not inside registered regions (" + describe_regions() + ")");
  copy_in(addr, static_cast<const uint8_t*>(src), len, nullptr, 0);
}

void HostMemoryModel::transport(Port& port, tlm::tlm_generic_payload& trans,
                                sc_core::sc_time& delay) {
  const HostMemoryTiming& timing = port.timing;
  const uint64_t addr = trans.get_address();
  const size_t len = trans.get_data_length();
  const bool is_write = trans.get_command() == tlm::TLM_WRITE_COMMAND;
  // Even a failing transaction takes the fixed latency (the error comes back from DRAM).
  const sc_core::sc_time latency = clock_period_ * static_cast<double>(timing.latency_cycles);

  if (trans.get_command() == tlm::TLM_IGNORE_COMMAND) {
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  if (trans.get_streaming_width() != 0 && trans.get_streaming_width() < len) {
    // AXI INCR bursts never stream; a FIXED burst would land here.
    trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    ++stats_.slave_errors;
    delay += latency;
    return;
  }
  if (!inside_regions(addr, len)) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    ++stats_.decode_errors;
    delay += latency;
    return;
  }
  if (overlaps_injected_error(addr, len)) {
    trans.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    ++stats_.slave_errors;
    delay += latency;
    return;
  }

  if (is_write) {
    copy_in(addr, trans.get_data_ptr(), len, trans.get_byte_enable_ptr(),
            trans.get_byte_enable_length());
    ++stats_.writes;
    stats_.written_bytes += len;
  } else {
    copy_out(addr, trans.get_data_ptr(), len);
    ++stats_.reads;
    stats_.read_bytes += len;
  }

  const sc_core::sc_time arrival = sc_core::sc_time_stamp() + delay;
  const sc_core::sc_time start = std::max(arrival, port.free_at);
  const uint64_t transfer_cycles =
      timing.bytes_per_cycle == 0 ? 0 : (len + timing.bytes_per_cycle - 1) / timing.bytes_per_cycle;
  const sc_core::sc_time transfer = clock_period_ * static_cast<double>(transfer_cycles);
  port.free_at = start + transfer;
  delay = start + transfer + latency - sc_core::sc_time_stamp();
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tpu::sim
