// SPDX-License-Identifier: Apache-2.0
#include "energy.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace tpu {

extern const char* const kHorowitz45nmJson;  // energy_table_default.cpp (generated)

namespace {

constexpr uint64_t kLaneBytes = 4;  // ACC and VMEM lanes are 32 bits
constexpr uint64_t kBf16Bytes = 2;

// In-image taps of max-pool windows along one dimension: sum over outputs of the window
// positions 0 <= o*s - pad + d < size, d < k.
uint64_t taps_1d(uint64_t outputs, uint32_t k, uint32_t s, uint32_t pad, uint32_t size) {
  uint64_t taps = 0;
  for (uint64_t o = 0; o < outputs; ++o) {
    for (uint32_t d = 0; d < k; ++d) {
      const int64_t p = int64_t(o * s) - int64_t(pad) + int64_t(d);
      taps += p >= 0 && p < int64_t(size);
    }
  }
  return taps;
}

void count_activate(const Activate& a, uint64_t n, ActionCounts& c) {
  if (a.raw) {
    const uint64_t pixels = uint64_t{a.width} * a.height;
    c.acc_read += pixels * n * kLaneBytes;
    c.requant += pixels * n;
    c.ub_write += pixels * Activate::kRawRowsPerPixel * n;
    return;
  }
  const uint64_t taps = taps_1d(a.output_height(), a.pool_k, a.pool_s, a.pad_top, a.height) *
                        taps_1d(a.output_width(), a.pool_k, a.pool_s, a.pad_left, a.width);
  c.acc_read += taps * n * kLaneBytes;
  c.requant += taps * n;
  c.ub_write += a.output_height() * a.output_width() * n;
}

void count_vector(const Vector& v, uint64_t n, ActionCounts& c) {
  const uint64_t rows = uint64_t{v.inner} * v.outer;
  const uint64_t row_bytes = n * kLaneBytes;
  const bool row_reduction = is_row_reduction(v.func);
  const bool align = v.func == static_cast<uint8_t>(VecFunc::Align);
  c.vmem_read += rows * row_bytes * (align && v.align_shift() > 0 ? 2 : 1);  // A
  if (v.bmode != BMode::Imm && !is_unary_vec_func(v.func) && !align)
    c.vmem_read += (row_reduction ? v.outer : rows) * row_bytes;  // B (a seed per line)
  c.vmem_write += (row_reduction ? v.outer : rows) * row_bytes;
  if (align) return;  // a lane move, no arithmetic
  const uint64_t lane_ops = rows * (is_lane_reduction(v.func) ? n - 1 : n);
  if (v.func == static_cast<uint8_t>(VecFunc::FMul)) {
    c.vector_fp_mul += lane_ops;
  } else if (v.func < static_cast<uint8_t>(VecFunc::IAdd) ||
             v.func >= static_cast<uint8_t>(VecFunc::F2I)) {
    c.vector_fp_op += lane_ops;  // fp functions, conversions and reductions
  } else {
    c.vector_int_op += lane_ops;
  }
}

struct Counter {
  const ChipParams& chip;
  ActionCounts& c;
  uint64_t n = chip.N;

  void operator()(const ReadHost& r) const {
    c.host_read += uint64_t{r.rows} * n;
    (r.dest == HostDest::Ub ? c.ub_write : c.param) += uint64_t{r.rows} * n;
  }
  void operator()(const WriteHost& w) const {
    c.ub_read += uint64_t{w.rows} * n;
    c.host_write += uint64_t{w.rows} * n;
  }
  void operator()(const ReadWeights& w) const {
    c.host_read += uint64_t{w.tiles} * n * n;
    c.weight_fifo += 2 * uint64_t{w.tiles} * n * n;  // into the FIFO and out to the array
  }
  void operator()(const Matmul& m) const {
    const uint64_t rows = uint64_t{m.inner} * m.outer;
    c.mac_int8 += rows * n * n;
    c.ub_read += rows * n;
    c.acc_write += rows * n * kLaneBytes;
    if (m.accumulate) c.acc_read += rows * n * kLaneBytes;
  }
  void operator()(const Activate& a) const { count_activate(a, n, c); }
  void operator()(const ReadVmem& r) const {
    c.host_read += uint64_t{r.rows} * r.row_bytes(chip.N);
    c.vmem_write += uint64_t{r.rows} * n * kLaneBytes;
  }
  void operator()(const WriteVmem& w) const {
    c.vmem_read += uint64_t{w.rows} * n * kLaneBytes;
    c.host_write += uint64_t{w.rows} * w.row_bytes(chip.N);
  }
  void operator()(const LoadWeights& l) const {
    c.vmem_read += uint64_t{l.tiles} * l.rows * n * kLaneBytes;
    c.weight_fifo += 2 * uint64_t{l.tiles} * n * n * kBf16Bytes;
  }
  void operator()(const MatmulBf16& m) const {
    const uint64_t rows = uint64_t{m.inner} * m.outer;
    c.mac_bf16 += rows * n * n;
    c.vmem_read += rows * n * kLaneBytes;
    c.acc_write += rows * n * kLaneBytes;
    if (m.accumulate) c.acc_read += rows * n * kLaneBytes;
  }
  void operator()(const AccToVmem& a) const {
    c.acc_read += uint64_t{a.rows} * n * kLaneBytes;
    c.vmem_write += uint64_t{a.rows} * n * kLaneBytes;
  }
  void operator()(const Transpose& t) const {
    c.vmem_read += uint64_t{t.blocks} * n * n * kLaneBytes;
    c.vmem_write += uint64_t{t.blocks} * n * n * kLaneBytes;
  }
  void operator()(const Vector& v) const { count_vector(v, n, c); }
  void operator()(const DwConv& d) const {
    c.mac_int8 += d.output_pixels() * d.taps() * n;  // padding taps included (multiplies by 0)
    c.ub_read += d.ub_reads(chip.dw_width) * n;
    c.acc_write += d.output_pixels() * n * kLaneBytes;
    if (d.accumulate) c.acc_read += d.output_pixels() * n * kLaneBytes;
  }
  template <typename T>
  void operator()(const T&) const {}  // nop, sync, halt, raw words: fetched only
};

double number(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key)) throw std::invalid_argument(where + ": missing key \"" + key + "\"");
  const auto& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw std::invalid_argument(where + ": \"" + key + "\" is " + v.dump() +
                                " (expected a finite number >= 0)");
  return v.get<double>();
}

void parse_sram(const nlohmann::json& j, const std::string& where, EnergyTable& t) {
  const std::string key = "sram_pj_per_64bit";
  if (!j.contains(key) || !j.at(key).is_array() || j.at(key).empty())
    throw std::invalid_argument(where + ": \"" + key +
                                "\" must be a non-empty list of [bytes, pJ] pairs");
  for (size_t i = 0; i < j.at(key).size(); ++i) {
    const auto& p = j.at(key)[i];
    const std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
      throw std::invalid_argument(at + " is " + p.dump() + " (expected [bytes, pJ])");
    const double bytes = p[0].get<double>(), pj = p[1].get<double>();
    if (!(bytes > 0) || !(pj > 0) || !std::isfinite(bytes) || !std::isfinite(pj))
      throw std::invalid_argument(at + " is " + p.dump() + " (expected positive numbers)");
    if (!t.sram_pj_per_64bit.empty() && bytes <= t.sram_pj_per_64bit.back().first)
      throw std::invalid_argument(at + ": sizes must be ascending");
    t.sram_pj_per_64bit.emplace_back(bytes, pj);
  }
}

}  // namespace

ActionCounts& ActionCounts::operator+=(const ActionCounts& o) {
  instructions += o.instructions;
  mac_int8 += o.mac_int8;
  mac_bf16 += o.mac_bf16;
  requant += o.requant;
  vector_fp_mul += o.vector_fp_mul;
  vector_fp_op += o.vector_fp_op;
  vector_int_op += o.vector_int_op;
  ub_read += o.ub_read;
  ub_write += o.ub_write;
  acc_read += o.acc_read;
  acc_write += o.acc_write;
  vmem_read += o.vmem_read;
  vmem_write += o.vmem_write;
  weight_fifo += o.weight_fifo;
  param += o.param;
  host_read += o.host_read;
  host_write += o.host_write;
  return *this;
}

std::vector<std::pair<std::string, uint64_t>> ActionCounts::items() const {
  return {{"instructions", instructions},   {"mac_int8", mac_int8},
          {"mac_bf16", mac_bf16},           {"requant", requant},
          {"vector_fp_mul", vector_fp_mul}, {"vector_fp_op", vector_fp_op},
          {"vector_int_op", vector_int_op}, {"ub_read_bytes", ub_read},
          {"ub_write_bytes", ub_write},     {"acc_read_bytes", acc_read},
          {"acc_write_bytes", acc_write},   {"vmem_read_bytes", vmem_read},
          {"vmem_write_bytes", vmem_write}, {"weight_fifo_bytes", weight_fifo},
          {"param_bytes", param},           {"host_read_bytes", host_read},
          {"host_write_bytes", host_write}};
}

bool operator==(const ActionCounts& a, const ActionCounts& b) { return a.items() == b.items(); }

ActionCounts ActionCounts::from_items(const std::vector<std::pair<std::string, uint64_t>>& items) {
  ActionCounts c;
  const auto names = c.items();
  if (items.size() != names.size())
    throw std::invalid_argument("actions: " + std::to_string(items.size()) + " counts (expected " +
                                std::to_string(names.size()) + ")");
  uint64_t* fields[] = {&c.instructions,  &c.mac_int8,     &c.mac_bf16,      &c.requant,
                        &c.vector_fp_mul, &c.vector_fp_op, &c.vector_int_op, &c.ub_read,
                        &c.ub_write,      &c.acc_read,     &c.acc_write,     &c.vmem_read,
                        &c.vmem_write,    &c.weight_fifo,  &c.param,         &c.host_read,
                        &c.host_write};
  for (size_t i = 0; i < names.size(); ++i) {
    if (items[i].first != names[i].first)
      throw std::invalid_argument("actions: \"" + items[i].first + "\" where \"" + names[i].first +
                                  "\" was expected");
    *fields[i] = items[i].second;
  }
  return c;
}

ActionCounts count_actions(const Instruction& instr, const ChipParams& chip) {
  ActionCounts c;
  c.instructions = 1;
  c.host_read = kInstrBytes;
  std::visit(Counter{chip, c}, instr);
  return c;
}

ActionCounts count_actions(const std::vector<Instruction>& program, const ChipParams& chip) {
  ActionCounts c;
  for (const Instruction& i : program) c += count_actions(i, chip);
  return c;
}

const std::vector<std::string>& EnergyTable::action_keys() {
  static const std::vector<std::string> keys = {"mac_int8",      "mac_bf16",     "requant",
                                                "vector_fp_mul", "vector_fp_op", "vector_int_op",
                                                "host_byte"};
  return keys;
}

EnergyTable EnergyTable::parse(const std::string& json_text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(where + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw std::invalid_argument(where + ": expected a JSON object");
  EnergyTable t;
  t.name = j.value("name", std::string("unnamed"));
  t.description = j.value("description", std::string());
  t.clock_mhz = number(j, "clock_mhz", where);
  if (!(t.clock_mhz > 0)) throw std::invalid_argument(where + ": \"clock_mhz\" must be > 0");
  if (!j.contains("pj") || !j.at("pj").is_object())
    throw std::invalid_argument(where + ": missing object \"pj\" (energy per action)");
  for (const std::string& k : action_keys()) t.pj[k] = number(j.at("pj"), k, where + ": pj");
  for (const auto& [k, v] : j.at("pj").items()) {
    if (!t.pj.count(k))
      throw std::invalid_argument(where + ": pj: unknown action \"" + k + "\" (expected one of " +
                                  "mac_int8, mac_bf16, requant, vector_fp_mul, vector_fp_op, " +
                                  "vector_int_op, host_byte)");
    (void)v;
  }
  parse_sram(j, where, t);
  return t;
}

EnergyTable EnergyTable::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::invalid_argument("energy table " + path + ": cannot open");
  std::ostringstream s;
  s << f.rdbuf();
  return parse(s.str(), "energy table " + path);
}

const EnergyTable& EnergyTable::horowitz_45nm() {
  static const EnergyTable t = parse(kHorowitz45nmJson, "energy/horowitz_45nm.json");
  return t;
}

double EnergyTable::sram_pj_per_byte(double bytes) const {
  const auto& p = sram_pj_per_64bit;
  double word_pj = p.front().second;
  if (bytes >= p.back().first) {
    word_pj = p.back().second;
  } else if (bytes > p.front().first) {
    size_t i = 1;
    while (p[i].first < bytes) ++i;
    const double t = std::log(bytes / p[i - 1].first) / std::log(p[i].first / p[i - 1].first);
    word_pj = p[i - 1].second * std::pow(p[i].second / p[i - 1].second, t);
  }
  return word_pj / 8.0;
}

MemorySizes memory_sizes(const ChipParams& chip) {
  const double n = chip.N;
  return {double(chip.ub_rows) * n, double(chip.acc_rows) * n * kLaneBytes,
          double(chip.vmem_rows) * n * kLaneBytes,
          double(chip.wfifo_tiles) * n * n * (chip.has_vmem() ? kBf16Bytes : 1),
          double(chip.param_rows()) * n + 256.0};
}

Energy energy_of(const ActionCounts& a, const MemorySizes& m, const EnergyTable& t) {
  auto sram = [&](uint64_t bytes, double size) {
    return size > 0 ? double(bytes) * t.sram_pj_per_byte(size) : 0.0;
  };
  const auto& pj = t.pj;
  Energy e;
  e.components = {{"mac_int8", double(a.mac_int8) * pj.at("mac_int8")},
                  {"mac_bf16", double(a.mac_bf16) * pj.at("mac_bf16")},
                  {"requant", double(a.requant) * pj.at("requant")},
                  {"vector", double(a.vector_fp_mul) * pj.at("vector_fp_mul") +
                                 double(a.vector_fp_op) * pj.at("vector_fp_op") +
                                 double(a.vector_int_op) * pj.at("vector_int_op")},
                  {"ub", sram(a.ub_read + a.ub_write, m.ub)},
                  {"acc", sram(a.acc_read + a.acc_write, m.acc)},
                  {"vmem", sram(a.vmem_read + a.vmem_write, m.vmem)},
                  {"weight_fifo", sram(a.weight_fifo, m.weight_fifo)},
                  {"param", sram(a.param, m.param)},
                  {"host", double(a.host_read + a.host_write) * pj.at("host_byte")}};
  return e;
}

double Energy::total_pj() const {
  double s = 0;
  for (const auto& c : components) s += c.second;
  return s;
}

double Energy::tops_per_watt(const ActionCounts& a) const {
  const double pj = total_pj();
  return pj > 0 ? 2.0 * double(a.mac_int8 + a.mac_bf16) / pj : 0.0;
}

nlohmann::ordered_json actions_json(const ActionCounts& a) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, v] : a.items()) j[name] = v;
  return j;
}

nlohmann::ordered_json table_json(const EnergyTable& t) {
  return {{"name", t.name},
          {"clock_mhz", t.clock_mhz},
          {"pj", t.pj},
          {"sram_pj_per_64bit", t.sram_pj_per_64bit}};
}

nlohmann::ordered_json memories_json(const MemorySizes& m) {
  return {{"ub", m.ub},
          {"acc", m.acc},
          {"vmem", m.vmem},
          {"weight_fifo", m.weight_fifo},
          {"param", m.param}};
}

nlohmann::ordered_json energy_json(const ActionCounts& a, const MemorySizes& m,
                                   const EnergyTable& t, double images, double useful_macs,
                                   uint64_t cycles, bool cycles_estimated) {
  const Energy e = energy_of(a, m, t);
  const double pj = e.total_pj();
  nlohmann::ordered_json j;
  j["table"] = t.name;
  j["clock_mhz"] = t.clock_mhz;
  j["total_pj"] = pj;
  j["per_image_pj"] = pj / images;
  j["components_pj_per_image"] = nlohmann::ordered_json::object();
  for (const auto& [name, c] : e.components) j["components_pj_per_image"][name] = c / images;
  // Network operations (2 per MAC of the model) per pJ = TOPS/W; `array_` counts every MAC the
  // array performs (padding included).
  j["tops_per_watt"] = pj > 0 ? 2.0 * useful_macs / pj : 0.0;
  j["array_tops_per_watt"] = e.tops_per_watt(a);
  const double seconds = double(cycles) / (t.clock_mhz * 1e6);
  j["average_watts"] = cycles_estimated || seconds <= 0 ? std::nan("") : pj * 1e-12 / seconds;
  j["actions"] = actions_json(a);
  j["memory_bytes"] = memories_json(m);
  j["table_values"] = table_json(t);
  return j;
}

}  // namespace tpu
