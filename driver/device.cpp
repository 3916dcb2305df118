// SPDX-License-Identifier: Apache-2.0
#include "device.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "assembler.h"
#include "text.h"

namespace tpu {

namespace {

using detail::format;

std::string range_text(uint64_t addr, uint64_t size) {
  return format("0x%08" PRIx64 "..0x%08" PRIx64, addr, addr + size - 1);
}

constexpr uint64_t kAddressSpace = uint64_t{1} << 32;

}  // namespace

// ---- counters

const char* PerfCounters::name(int i) {
  static const char* const kNames[kCount] = {
      "cycles",   "mxu_busy",     "mxu_macs",     "weight_stall",  "input_stall",
      "dma_busy", "dma_rd_bytes", "dma_wr_bytes", "instr_retired", "act_busy"};
  return (i >= 0 && i < kCount) ? kNames[i] : "?";
}

uint64_t PerfCounters::get(int i) const {
  const uint64_t* v[kCount] = {&cycles,        &mxu_busy, &mxu_macs,     &weight_stall,
                               &input_stall,   &dma_busy, &dma_rd_bytes, &dma_wr_bytes,
                               &instr_retired, &act_busy};
  if (i < 0 || i >= kCount)
    throw std::out_of_range("PerfCounters::get: no counter " + std::to_string(i));
  return *v[i];
}

void PerfCounters::set(int i, uint64_t value) {
  uint64_t* v[kCount] = {&cycles,   &mxu_busy,     &mxu_macs,     &weight_stall,  &input_stall,
                         &dma_busy, &dma_rd_bytes, &dma_wr_bytes, &instr_retired, &act_busy};
  if (i < 0 || i >= kCount)
    throw std::out_of_range("PerfCounters::set: no counter " + std::to_string(i));
  *v[i] = value;
}

const char* to_string(RunOutcome::Status s) {
  switch (s) {
    case RunOutcome::Status::Done:
      return "done";
    case RunOutcome::Status::Error:
      return "error";
    case RunOutcome::Status::Timeout:
      return "timeout";
  }
  return "?";
}

std::string listing(const std::vector<Instruction>& program) {
  std::string text;
  for (size_t i = 0; i < program.size(); ++i) {
    text += format("%4zu: ", i) + disassemble(program[i]) + "\n";
  }
  return text;
}

// ---- buffers

const HostBuffer* Device::find_containing(uint64_t addr, uint64_t len) const {
  for (const HostBuffer& b : buffers_) {
    if (b.contains(addr, len)) return &b;
  }
  return nullptr;
}

HostBuffer Device::register_buffer(uint32_t addr, uint32_t size, std::string name) {
  if (name.empty()) name = "buffer@" + format("0x%08" PRIx32, addr);
  if (size == 0) throw DeviceError("register_buffer(" + name + "): size is 0");
  if (uint64_t{addr} + size > kAddressSpace) {
    throw DeviceError("register_buffer(" + name + "): " + format("0x%08" PRIx32, addr) + " + " +
                      std::to_string(size) + " bytes runs past the 32-bit host address space");
  }
  const uint64_t end = uint64_t{addr} + size;
  if (addr < kCmdEnd && end > kCmdBase) {
    throw DeviceError("register_buffer(" + name + "): " + range_text(addr, size) +
                      " overlaps the device's command area " +
                      range_text(kCmdBase, kCmdEnd - kCmdBase));
  }
  for (const HostBuffer& b : buffers_) {
    if (addr < b.end() && b.addr < end) {
      throw DeviceError("register_buffer(" + name + "): " + range_text(addr, size) +
                        " overlaps buffer '" + b.name + "' " + range_text(b.addr, b.size));
    }
  }
  HostBuffer buf{addr, size, std::move(name)};
  buffers_.push_back(buf);
  std::sort(buffers_.begin(), buffers_.end(),
            [](const HostBuffer& a, const HostBuffer& b) { return a.addr < b.addr; });
  return buf;
}

HostBuffer Device::alloc(uint32_t size, std::string name, uint32_t align) {
  if (align < 16 || (align & (align - 1)) != 0) {
    throw DeviceError("alloc(" + name + "): align = " + std::to_string(align) +
                      " (expected a power of two >= 16)");
  }
  if (size == 0) throw DeviceError("alloc(" + name + "): size is 0");
  auto align_up = [&](uint64_t v) { return (v + align - 1) & ~uint64_t{align - 1}; };
  uint64_t at = align_up(arena_next_);
  for (bool moved = true; moved;) {  // step over buffers registered inside the arena
    moved = false;
    for (const HostBuffer& b : buffers_) {
      if (at < b.end() && b.addr < at + size) {
        at = align_up(b.end());
        moved = true;
      }
    }
  }
  if (at + size > kArenaEnd) {
    throw DeviceError(format("alloc(%s): %" PRIu32 " bytes do not fit in the arena "
                             "(0x%08" PRIx32 "..0x%08" PRIx32 ", next free 0x%08" PRIx64 ")",
                             name.c_str(), size, kArenaBase, kArenaEnd - 1, at));
  }
  HostBuffer buf = register_buffer(static_cast<uint32_t>(at), size, std::move(name));
  arena_next_ = static_cast<uint32_t>(at + size);
  fill(buf.addr, buf.size, 0);
  return buf;
}

void Device::release(uint32_t addr) {
  auto it = std::find_if(buffers_.begin(), buffers_.end(),
                         [&](const HostBuffer& b) { return b.addr == addr; });
  if (it == buffers_.end()) {
    throw DeviceError(format("release: no buffer starts at 0x%08" PRIx32, addr));
  }
  buffers_.erase(it);
  // Give back the arena space above the highest remaining arena buffer.
  uint64_t top = kArenaBase;
  for (const HostBuffer& b : buffers_) {
    if (b.addr >= kArenaBase && b.addr < kArenaEnd) top = std::max(top, b.end());
  }
  arena_next_ = static_cast<uint32_t>(top);
}

void Device::release_all() {
  buffers_.clear();
  arena_next_ = kArenaBase;
}

DmaWindows Device::dma_windows(size_t instructions) const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end)
  for (const HostBuffer& b : buffers_) ranges.emplace_back(b.addr, b.end());
  ranges.emplace_back(kCmdBase, kCmdBase + std::max<uint64_t>(1, instructions) * kInstrBytes);
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  if (merged.size() > size_t{kNumDmaWindows}) {
    throw DeviceError(
        format("the %zu registered host buffers need %zu DMA windows (touching "
               "buffers share one, the command buffer takes one) but the chip has "
               "%d: register fewer buffers, or place them back to back (alloc() "
               "does)",
               buffers_.size(), merged.size(), kNumDmaWindows));
  }
  DmaWindows w{};
  for (size_t i = 0; i < merged.size(); ++i) {
    // A merged range ending at 2^32 has size 2^32 - base, which fits in 32 bits unless base
    // is 0 and the buffers cover everything; cap it (the last byte is then not reachable).
    const uint64_t size = std::min<uint64_t>(merged[i].second - merged[i].first, 0xFFFF'FFFFu);
    w[i] = DmaWindow{static_cast<uint32_t>(merged[i].first), static_cast<uint32_t>(size)};
  }
  return w;
}

// ---- host access

void Device::check_access(const char* what, uint32_t addr, size_t len) const {
  if (len == 0) return;
  if (find_containing(addr, len) != nullptr) return;
  std::string list;
  for (const HostBuffer& b : buffers_) {
    list += (list.empty() ? "" : ", ") + b.name + " " + range_text(b.addr, b.size);
  }
  throw DeviceError(std::string(what) + ": host bytes " + range_text(addr, len) +
                    " are not inside one registered buffer (" +
                    (list.empty() ? std::string("none registered") : list) + ")");
}

void Device::write(uint32_t addr, const void* src, size_t len) {
  check_access("Device::write", addr, len);
  if (len) mem_write(addr, src, len);
}

void Device::read(uint32_t addr, void* dst, size_t len) {
  check_access("Device::read", addr, len);
  if (len) mem_read(addr, dst, len);
}

std::vector<uint8_t> Device::read(uint32_t addr, size_t len) {
  std::vector<uint8_t> bytes(len);
  read(addr, bytes.data(), len);
  return bytes;
}

void Device::fill(uint32_t addr, size_t len, uint8_t value) {
  check_access("Device::fill", addr, len);
  const std::vector<uint8_t> chunk(std::min<size_t>(len, 1 << 16), value);
  for (size_t done = 0; done < len; done += chunk.size()) {
    mem_write(static_cast<uint32_t>(addr + done), chunk.data(), std::min(chunk.size(), len - done));
  }
}

// ---- running

std::string Device::explain(const std::vector<Instruction>& program, const RawRun& r,
                            const DmaWindows& windows) const {
  const std::string name(error_name(r.error));
  if (r.error == ErrorCode::ERR_CMD_OVERRUN) {
    return format("%s at instruction %" PRIu32
                  ": the program ended after %zu instructions "
                  "without halt",
                  name.c_str(), r.pc, program.size());
  }
  if (r.pc >= program.size()) {
    return format(
        "%s at instruction %" PRIu32 ": %s", name.c_str(), r.pc,
        r.detail.empty() ? std::string(error_description(r.error)).c_str() : r.detail.c_str());
  }
  const Instruction& instr = program[r.pc];
  std::string why;
  // The static checks (codes 1-8) are explained by the host's copy of them.
  DecodeResult d = std::holds_alternative<RawInstruction>(instr)
                       ? decode(std::get<RawInstruction>(instr).bytes, params_)
                       : DecodeResult{ErrorCode::ERR_NONE, instr, ""};
  if (!d.ok()) {
    why = d.why;
  } else if (check(d.instr, params_, windows,
                   CommandBuffer{kCmdBase, static_cast<uint32_t>(program.size())},
                   &why) != r.error) {
    why.clear();
  }
  if (why.empty() &&
      (r.error == ErrorCode::ERR_NO_WEIGHTS || r.error == ErrorCode::ERR_WEIGHT_OVERFLOW)) {
    // Replay the weight-tile accounting of the instructions before it.
    uint64_t waiting = 0;
    bool active = false;
    for (uint32_t i = 0; i < r.pc; ++i) {
      if (const auto* rw = std::get_if<ReadWeights>(&program[i])) waiting += rw->tiles;
      if (const auto* mm = std::get_if<Matmul>(&program[i]); mm && mm->switch_weights) {
        if (waiting) --waiting;
        active = true;
      }
    }
    if (r.error == ErrorCode::ERR_WEIGHT_OVERFLOW) {
      why = format("%" PRIu64 " tiles already wait; at most WFifoTiles + 2 = %u may wait", waiting,
                   params_.wfifo_tiles + 2);
    } else {
      why = active ? "switch, but every tile pushed by read_weights is already active"
                   : "no weight tile was made active yet (the first matmul needs switch)";
    }
  }
  if (why.empty()) why = r.detail.empty() ? std::string(error_description(r.error)) : r.detail;
  return format("%s at instruction %" PRIu32 " (%s): %s", name.c_str(), r.pc,
                disassemble(instr).c_str(), why.c_str());
}

RunOutcome Device::try_run(const std::vector<Instruction>& program, uint64_t max_cycles) {
  const auto t0 = std::chrono::steady_clock::now();
  if (program.size() * kInstrBytes > kCmdEnd - kCmdBase) {
    throw DeviceError(format("run: the program has %zu instructions; the command area holds %u",
                             program.size(), (kCmdEnd - kCmdBase) / 16));
  }
  if (max_cycles == 0) throw DeviceError("run: max_cycles is 0");
  const DmaWindows windows = dma_windows(program.size());
  const std::vector<uint8_t> bytes = encode_program(program);
  if (!bytes.empty()) mem_write(kCmdBase, bytes.data(), bytes.size());

  timeline_.clear();
  RawRun r = run_raw(kCmdBase, static_cast<uint32_t>(program.size()), windows, max_cycles);
  if (record_timeline_) {
    timeline_ = std::move(r.timeline);
    for (InstrEvent& e : timeline_) {
      if (e.pc < program.size()) e.opcode = static_cast<Opcode>(opcode_byte(program[e.pc]));
    }
  }
  RunOutcome out;
  out.status = r.status;
  out.stats = r.stats;
  out.stats.instructions = program.size();
  switch (r.status) {
    case RunOutcome::Status::Done:
      break;
    case RunOutcome::Status::Error:
      out.error = r.error;
      out.pc = r.pc;
      out.message = explain(program, r, windows);
      break;
    case RunOutcome::Status::Timeout:
      out.message = format("the program did not halt within %" PRIu64
                           " cycles (max_cycles); the %s device was reset",
                           max_cycles, std::string(backend()).c_str());
      break;
  }
  out.stats.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::string_view unit_name(ExecUnit u) {
  switch (u) {
    case ExecUnit::ReadHost:
      return "read_host";
    case ExecUnit::ReadWeights:
      return "read_weights";
    case ExecUnit::Matmul:
      return "matmul";
    case ExecUnit::Activate:
      return "activate";
    case ExecUnit::WriteHost:
      return "write_host";
    case ExecUnit::Control:
      return "control";
    case ExecUnit::Move:
      return "move";
    case ExecUnit::Vector:
      return "vector";
    case ExecUnit::LoadWeights:
      return "load_weights";
  }
  return "?";
}

void Device::record_timeline(bool on) {
  if (on && !has_timeline()) {
    throw DeviceError(std::string(backend()) +
                      " backend: no instruction timeline (it has no timing); use the rtl backend");
  }
  set_timeline_recording(on);
  record_timeline_ = on;
  if (!on) timeline_.clear();
}

RunStats Device::run(const std::vector<Instruction>& program, uint64_t max_cycles) {
  RunOutcome o = try_run(program, max_cycles);
  switch (o.status) {
    case RunOutcome::Status::Done:
      return o.stats;
    case RunOutcome::Status::Error: {
      ChipError e(o.error, o.pc, o.message);
      e.set_stats(o.stats);
      throw e;
    }
    case RunOutcome::Status::Timeout: {
      TimeoutError e(max_cycles, o.message);
      e.set_stats(o.stats);
      throw e;
    }
  }
  return o.stats;
}

}  // namespace tpu
