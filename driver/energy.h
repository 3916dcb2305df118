// SPDX-License-Identifier: Apache-2.0
// Energy of a program (issue 33, docs/energy.md): the actions the chip performs, counted from
// the instructions (exact: the chip has no speculation or caches, so a program that runs to its
// halt performs exactly these), turned into picojoules by a table of energy per action that
// users can swap (a JSON file; the default, energy/horowitz_45nm.json, is built in).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "isa.h"

namespace tpu {

// What a program does, by kind. Bytes are counted at every memory they touch; a matmul row is
// N x N multiply-adds whether or not the operands are padding (the array does them all).
struct ActionCounts {
  uint64_t instructions = 0;   // fetched over the host port (16 bytes each, in host_read)
  uint64_t mac_int8 = 0;       // matmul: rows * N^2
  uint64_t mac_bf16 = 0;       // matmul_bf16: rows * N^2
  uint64_t requant = 0;        // activate: one per accumulator value read (bias, scale, round)
  uint64_t vector_fp_mul = 0;  // vector fmul lane operations
  uint64_t vector_fp_op = 0;   // other fp32 lane operations (add, max, compare, convert, reduce)
  uint64_t vector_int_op = 0;  // int32 / logic lane operations
  uint64_t ub_read = 0, ub_write = 0;      // bytes
  uint64_t acc_read = 0, acc_write = 0;    // bytes
  uint64_t vmem_read = 0, vmem_write = 0;  // bytes
  uint64_t weight_fifo = 0;                // bytes written into and read out of the FIFO
  uint64_t param = 0;                      // bytes written into PARAM / LUT
  uint64_t host_read = 0, host_write = 0;  // bytes over the host (device-memory) port

  ActionCounts& operator+=(const ActionCounts& o);
  // (name, value) in a fixed order: the JSON keys of "actions".
  std::vector<std::pair<std::string, uint64_t>> items() const;
  // The inverse: every name of items() exactly once; throws std::invalid_argument otherwise.
  static ActionCounts from_items(const std::vector<std::pair<std::string, uint64_t>>& items);
};
bool operator==(const ActionCounts& a, const ActionCounts& b);

// The actions of one instruction (as if it completes), and of a whole program.
ActionCounts count_actions(const Instruction& instr, const ChipParams& chip);
ActionCounts count_actions(const std::vector<Instruction>& program, const ChipParams& chip);

// Energy per action. Memories cost by size: SRAM energy per 64-bit access at a few sizes
// (bytes, pJ), interpolated log-log and clamped at both ends; a write costs as a read.
struct EnergyTable {
  std::string name, description;
  double clock_mhz = 0;              // for average power: cycles at this clock
  std::map<std::string, double> pj;  // mac_int8, mac_bf16, requant, vector_fp_mul,
                                     // vector_fp_op, vector_int_op, host_byte
  std::vector<std::pair<double, double>> sram_pj_per_64bit;  // (bytes, pJ), sizes ascending

  // The built-in table (energy/horowitz_45nm.json).
  static const EnergyTable& horowitz_45nm();
  // Parses a table; throws std::invalid_argument naming `where` and the bad key or value.
  static EnergyTable parse(const std::string& json_text, const std::string& where);
  static EnergyTable load(const std::string& path);
  // pJ per byte of an SRAM of `bytes` bytes.
  double sram_pj_per_byte(double bytes) const;
  static const std::vector<std::string>& action_keys();
};

// Energy by component (pJ): mac_int8, mac_bf16, requant, vector, ub, acc, vmem, weight_fifo,
// param, host; the components of a chip without VMEM are still listed (0).
struct Energy {
  std::vector<std::pair<std::string, double>> components;
  double total_pj() const;
  // 2 operations per MAC per pJ = tera-operations per second per watt.
  double tops_per_watt(const ActionCounts& a) const;
};
// The memory sizes the table is applied to (bytes).
struct MemorySizes {
  double ub = 0, acc = 0, vmem = 0, weight_fifo = 0, param = 0;
};
MemorySizes memory_sizes(const ChipParams& chip);

Energy energy_of(const ActionCounts& a, const MemorySizes& m, const EnergyTable& table);
inline Energy energy_of(const ActionCounts& a, const ChipParams& chip, const EnergyTable& table) {
  return energy_of(a, memory_sizes(chip), table);
}

// JSON (docs/energy.md): the counts as {name: count}, the table as {name, clock_mhz, pj,
// sram_pj_per_64bit}, the memory sizes as {ub, acc, vmem, weight_fifo, param}.
nlohmann::ordered_json actions_json(const ActionCounts& a);
nlohmann::ordered_json table_json(const EnergyTable& t);
nlohmann::ordered_json memories_json(const MemorySizes& m);
// The "energy" object of a run of `images` images (> 0) that did `useful_macs` MACs of the
// model(s) in `cycles` (NaN average power when cycles_estimated): table, clock_mhz, total_pj,
// per_image_pj, components_pj_per_image, tops_per_watt, array_tops_per_watt, average_watts,
// actions, memory_bytes, table_values.
nlohmann::ordered_json energy_json(const ActionCounts& a, const MemorySizes& m,
                                   const EnergyTable& t, double images, double useful_macs,
                                   uint64_t cycles, bool cycles_estimated);

}  // namespace tpu
