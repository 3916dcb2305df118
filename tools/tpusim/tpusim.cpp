// SPDX-License-Identifier: Apache-2.0
// The subcommand registry and the helpers shared by subcommands (tpusim.h).
#include "tpusim.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "assembler.h"
#include "device_model.h"
#include "json_text.h"
#include "output_file.h"
#include "text.h"

namespace tpusim {

namespace {

std::map<std::string, Subcommand>& registry() {
  static std::map<std::string, Subcommand> r;
  return r;
}

}  // namespace

bool register_subcommand(const Subcommand& s) {
  registry()[s.name] = s;
  return true;
}

std::vector<Subcommand> subcommands() {
  std::vector<Subcommand> all;
  for (const auto& [name, s] : registry()) all.push_back(s);
  return all;
}

const Subcommand* find_subcommand(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

bool parse_options(const Args& args, const std::string& usage, const std::string& description,
                   po::options_description& options, const po::positional_options_description& pos,
                   po::variables_map& vm) {
  options.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(options).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << description << "\n\n" << options << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return true;
}

int64_t int_option(const po::variables_map& vm, const std::string& name, int64_t lo, int64_t hi) {
  const std::string text = vm[name].as<std::string>();
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used, 0);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw UsageError("--" + name + " " + text + " is not an integer");
  }
  if (v < lo || v > hi) {
    throw UsageError("--" + name + " " + text + " is out of range (allowed " + std::to_string(lo) +
                     ".." + std::to_string(hi) + ")");
  }
  return v;
}

void add_device_options(po::options_description& options, DeviceOptions& d, bool with_vcd,
                        const std::string& max_cycles_default) {
  const std::string limit = max_cycles_default.empty()
                                ? std::to_string(tpu::Device::kDefaultMaxCycles)
                                : max_cycles_default;
  options.add_options()(
      "backend", po::value<std::string>(&d.backend)->default_value("rtl"),
      "rtl (the Verilated chip, cycle-accurate) or model (the golden ISA model, no timing)")(
      "max-cycles", po::value<std::string>(),
      ("stop a run that has not halted after this many cycles (a hang): exit 1; 1..2^50, "
       "default " +
       limit + " (rtl only: the model cannot hang)")
          .c_str());
  if (with_vcd) {
    options.add_options()(
        "vcd", po::value<std::string>(&d.vcd),
        "write a VCD waveform to this file (rtl only; written complete or not at all, see "
        "docs/tpusim.md)")(
        "vcd-window", po::value<std::string>(&d.vcd_window),
        "FROM:TO: dump only cycles FROM..TO-1, counted from simulation start (rtl only; default: "
        "every cycle)");
  }
}

void add_memory_options(po::options_description& options) {
  options.add_options()(
      "mem-latency", po::value<std::string>(),
      "host memory latency in cycles per DMA transaction, 0..100000 (rtl only; default 10)")(
      "mem-bandwidth", po::value<std::string>(),
      "host memory bandwidth in bytes per cycle, 0 = unlimited, 0..4096 (rtl only; default 16)");
}

void add_dw_option(po::options_description& options) {
  options.add_options()(
      "dw-width", po::value<std::string>(),
      ("the chip's depthwise unit: P output lines per pass, 0 = none, 0.." +
       std::to_string(tpu::ChipParams::kMaxDwWidth) +
       "; the compiler then runs depthwise convolutions on it (dwconv). The model backend "
       "takes any P; the rtl backend only the DwWidth it was built with (default: the built "
       "chip's)")
          .c_str());
}

std::string max_cycles_hint(const DeviceOptions& d) {
  return d.max_cycles_given ? " (the limit set by --max-cycles; raise it with --max-cycles N)"
                            : " (the default limit; raise it with --max-cycles N)";
}

void finish_device(DeviceOptions& d, std::unique_ptr<tpu::Device>& dev) {
  dev.reset();  // closes the VCD
  if (d.vcd_out) {
    if (!d.vcd_out->commit(/*require_temp=*/false)) {
      std::fprintf(
          stderr,
          "tpusim: note: --vcd %s not written: the simulation ended before --vcd-window %s began\n",
          d.vcd.c_str(), d.vcd_window.c_str());
    }
    d.vcd_out.reset();
  }
}

std::unique_ptr<tpu::Device> open_device(DeviceOptions& d, const po::variables_map& vm) {
  if (d.backend != "rtl" && d.backend != "model") {
    throw UsageError("--backend " + d.backend + " is not a backend (expected rtl or model)");
  }
  if (vm.count("max-cycles")) {
    d.max_cycles = static_cast<uint64_t>(int_option(vm, "max-cycles", 1, int64_t{1} << 50));
    d.max_cycles_given = true;
  }
  tpu::RtlOptions rtl;
  for (const char* o : {"mem-latency", "mem-bandwidth"}) {
    if (!vm.count(o)) continue;
    if (d.backend != "rtl")
      throw UsageError(std::string("--") + o + " needs --backend rtl: the " + d.backend +
                       " backend has no timing");
    const int64_t v = int_option(vm, o, 0, o[4] == 'l' ? 100000 : 4096);
    (o[4] == 'l' ? d.mem_latency : d.mem_bandwidth) = v;
  }
  if (d.mem_latency >= 0) rtl.mem_latency_cycles = uint32_t(d.mem_latency);
  if (d.mem_bandwidth >= 0) rtl.mem_bytes_per_cycle = uint32_t(d.mem_bandwidth);
  if (!d.vcd.empty() || !d.vcd_window.empty()) {
    if (d.backend != "rtl") throw UsageError("--vcd and --vcd-window need --backend rtl");
    if (d.vcd.empty()) throw UsageError("--vcd-window needs --vcd FILE");
  }
  if (!d.vcd_window.empty()) {
    const size_t colon = d.vcd_window.find(':');
    auto number = [&](const std::string& s) -> uint64_t {
      size_t used = 0;
      unsigned long long v = 0;
      try {
        if (!s.empty() && s[0] != '-') v = std::stoull(s, &used, 0);
      } catch (const std::exception&) {
        used = 0;
      }
      if (s.empty() || used != s.size()) {
        throw UsageError("--vcd-window " + d.vcd_window + " is not FROM:TO (two cycle numbers)");
      }
      return v;
    };
    if (colon == std::string::npos) {
      throw UsageError("--vcd-window " + d.vcd_window + " is not FROM:TO (two cycle numbers)");
    }
    rtl.vcd_from = number(d.vcd_window.substr(0, colon));
    rtl.vcd_to = number(d.vcd_window.substr(colon + 1));
    if (rtl.vcd_from >= rtl.vcd_to) {
      throw UsageError("--vcd-window " + d.vcd_window + ": FROM must be below TO");
    }
  }
  if (!d.vcd.empty()) {
    if (d.backend == "rtl" && !tpu::RtlDevice::compiled_with_vcd()) {
      throw std::runtime_error("--vcd " + d.vcd +
                               ": this tpusim was built without VCD tracing (-DTPU_SIM_TRACE=OFF, "
                               "as scripts/build_pgo.sh builds it); rebuild with "
                               "-DTPU_SIM_TRACE=ON for waveforms");
    }
    d.vcd_out = std::make_shared<tpu::OutputFile>(d.vcd, "--vcd");
    rtl.vcd_file = d.vcd_out->temp_path();
    if (rtl.vcd_file.empty())
      throw UsageError("--vcd - : a VCD cannot go to standard output (expected a file name)");
  }
  if (vm.count("dw-width")) {
    d.dw_width = int_option(vm, "dw-width", 0, tpu::ChipParams::kMaxDwWidth);
    const uint32_t built = tpu::RtlDevice::compiled_params().dw_width;
    if (d.backend == "model") {
      tpu::ChipParams p = tpu::RtlDevice::compiled_params();
      p.dw_width = uint32_t(d.dw_width);
      return std::make_unique<tpu::ModelDevice>(p);
    }
    if (uint32_t(d.dw_width) != built)
      throw UsageError("--dw-width " + std::to_string(d.dw_width) +
                       " with --backend rtl: this binary's chip has DwWidth " +
                       std::to_string(built) +
                       " (use --backend model, or the tpusim built "
                       "with that unit)");
  }
  return tpu::open_device(d.backend, rtl);
}

std::string read_text_file(const std::string& path) {
  tpu::check_not_directory(path);
  std::error_code ec;
  constexpr uint64_t kMaxText = uint64_t{256} << 20;
  if (std::filesystem::is_regular_file(path, ec)) {
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxText) {
      throw std::runtime_error(path + ": " + std::to_string(size) +
                               " bytes is too large for a text input (at most 256 MiB)");
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open for reading");
  std::string text;
  if (!tpu::detail::read_at_most(in, kMaxText, &text)) {  // a pipe or device without end
    throw std::runtime_error(path + ": more than 256 MiB, too large for a text input");
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return text;
}

void write_file(const std::string& path, const std::string& bytes, const std::string& option) {
  tpu::write_file_atomically(path, bytes, option);
}

namespace {
bool ends_with_nocase(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i])
      return false;
  }
  return true;
}
}  // namespace

ProgramKind program_kind(const std::string& path) {
  if (ends_with_nocase(path, ".s") || ends_with_nocase(path, ".asm")) return ProgramKind::Assembly;
  if (ends_with_nocase(path, ".bin")) return ProgramKind::Binary;
  return ProgramKind::Unknown;
}

std::vector<tpu::Instruction> load_program(const std::string& path, const std::string& format) {
  ProgramKind kind = program_kind(path);
  if (format == "asm") kind = ProgramKind::Assembly;
  if (format == "bin") kind = ProgramKind::Binary;
  tpu::check_not_directory(path);
  if (kind == ProgramKind::Assembly) return tpu::assemble(read_text_file(path), path);
  if (kind == ProgramKind::Binary) return tpu::decode_program(tpu::load_binary(path), path);
  throw std::runtime_error(path +
                           ": unknown program type (expected a name ending in .s, .asm or .bin, "
                           "or --format asm|bin for any other name such as /dev/stdin)");
}

// ---- JSON

Json& Json::add(const std::string& key, double value) {
  if (!std::isfinite(value)) return add_null(key);
  object_[key] = value;
  return *this;
}

std::string Json::str(bool top_level) const {
  return top_level ? tpu::json_document(object_) : tpu::json_one_line(object_);
}

void add_run_stats(Json& j, const tpu::RunStats& s) {
  j.add("cycles", s.cycles);
  j.add("cycles_estimated", s.cycles_estimated);
  j.add("start_cycle", s.start_cycle);
  j.add("instructions", s.instructions);
  j.add("wall_seconds", s.wall_seconds);
  Json c;
  for (int i = 0; i < tpu::PerfCounters::kCount; ++i) {
    c.add(tpu::PerfCounters::name(i), s.counters.get(i));
  }
  j.add("counters", c);
}

}  // namespace tpusim
