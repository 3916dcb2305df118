// SPDX-License-Identifier: Apache-2.0
// tpusim: one command line tool, one file per subcommand.
//
// Adding a subcommand = adding tools/tpusim/cmd_<name>.cpp (CMake picks up every cmd_*.cpp)
// that defines `int run_<name>(const tpusim::Args&)` and registers it:
//
//   TPUSIM_SUBCOMMAND("bench", "run the benchmark suite", run_bench);
//
// A subcommand parses its own arguments with parse_options() (which answers --help), returns
// the exit code, and reports problems by throwing: UsageError (bad arguments, exit 2) or any
// other std::exception (failure, exit 1). main() prints "tpusim <name>: error: <what>" on one
// line (with --json, also as one JSON object on stdout). Exit codes: 0 success, 1 failure (chip
// error, timeout, mismatch, unreadable or malformed input), 2 usage error, 130 / 143 interrupted
// by SIGINT / SIGTERM (interrupt.h). Output files go through tpu::OutputFile (output_file.h).
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "device.h"
#include "device_rtl.h"
#include "output_file.h"

namespace tpusim {

namespace po = boost::program_options;
using Args = std::vector<std::string>;  // the arguments after the subcommand name

struct Subcommand {
  std::string name;
  std::string summary;  // one line for `tpusim --help`
  int (*run)(const Args& args);
};

// Registration happens during static initialization (TPUSIM_SUBCOMMAND).
bool register_subcommand(const Subcommand& s);
std::vector<Subcommand> subcommands();  // sorted by name
const Subcommand* find_subcommand(const std::string& name);

#define TPUSIM_CONCAT2(a, b) a##b
#define TPUSIM_CONCAT(a, b) TPUSIM_CONCAT2(a, b)
#define TPUSIM_SUBCOMMAND(name, summary, fn)                      \
  static const bool TPUSIM_CONCAT(tpusim_registered_, __LINE__) = \
      ::tpusim::register_subcommand(::tpusim::Subcommand{name, summary, fn})

// Bad arguments: exit code 2 and a hint to --help.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses `args` against `options` (+ positional). Prints help and returns false for
// --help/-h; throws UsageError for anything Boost rejects (unknown option, bad value,
// missing required option). `usage` is the synopsis line, e.g. "tpusim asm IN.s -o OUT.bin".
bool parse_options(const Args& args, const std::string& usage, const std::string& description,
                   po::options_description& options, const po::positional_options_description& pos,
                   po::variables_map& vm);

// --backend, --max-cycles, and for the rtl backend --vcd / --vcd-window.
struct DeviceOptions {
  std::string backend = "rtl";
  uint64_t max_cycles = tpu::Device::kDefaultMaxCycles;
  std::string vcd;
  std::string vcd_window;  // FROM:TO
  bool max_cycles_given = false;
  // Host memory timing of the rtl backend (tpu::RtlOptions); < 0 = the default. Commands that
  // offer them register --mem-latency / --mem-bandwidth themselves (add_memory_options).
  int64_t mem_latency = -1, mem_bandwidth = -1;
  // --dw-width P (commands that register add_dw_option): the chip's depthwise unit
  // (ChipParams::dw_width); < 0 = the built chip's.
  int64_t dw_width = -1;
  // The VCD is written to a temporary file and renamed by finish_device() (tpu::OutputFile).
  std::shared_ptr<tpu::OutputFile> vcd_out;
};
// --help's default of --max-cycles for commands that run compiled programs (tpu::cnn::Runner
// derives the limit of each program when none is given).
inline const std::string kDerivedMaxCycles =
    "derived from each batch program: 1000000 + 8 x (matmul rows + DMA bytes) + "
    "64 x instructions";
// `max_cycles_default`: the text --help shows for the default of --max-cycles.
void add_device_options(po::options_description& options, DeviceOptions& d, bool with_vcd,
                        const std::string& max_cycles_default = "");
// --mem-latency CYCLES and --mem-bandwidth BYTES_PER_CYCLE (the rtl backend's host memory).
void add_memory_options(po::options_description& options);
// --dw-width P: compile for and run on a chip with a depthwise unit of P output lines (0: none).
// The model backend takes any 0..ChipParams::kMaxDwWidth; the rtl backend only its own DwWidth.
void add_dw_option(po::options_description& options);
// Validates the options (UsageError) and opens the device.
std::unique_ptr<tpu::Device> open_device(DeviceOptions& d, const po::variables_map& vm);
// Closes the device and puts the finished VCD (if any) in place; prints a note on stderr when
// the run ended before --vcd-window started (no VCD written, an old file left as it was).
void finish_device(DeviceOptions& d, std::unique_ptr<tpu::Device>& dev);
// " (the limit set by --max-cycles; raise it with --max-cycles N)" or for the default
// " (the default limit; raise it with --max-cycles N)": for timeout messages.
std::string max_cycles_hint(const DeviceOptions& d);

// An integer option value in lo..hi (parsed from text so that "-1" is not read as 2^64-1).
int64_t int_option(const po::variables_map& vm, const std::string& name, int64_t lo, int64_t hi);

// Reads a whole text file; throws std::runtime_error("PATH: is a directory ...", "PATH: cannot
// open for reading", or too large (over 256 MiB, checked before reading)).
std::string read_text_file(const std::string& path);
// Writes bytes to a file all or nothing (tpu::OutputFile: a temporary renamed when complete;
// "-" is standard output); throws std::runtime_error naming `option` and the path on failure.
void write_file(const std::string& path, const std::string& bytes, const std::string& option = "");
// A program's type from its name: .s / .S / .asm assembly, .bin binary (any letter case).
enum class ProgramKind { Assembly, Binary, Unknown };
ProgramKind program_kind(const std::string& path);
// A program from assembly (assembled) or a binary (decoded), by the name's extension or by
// `format` ("asm", "bin"; empty: by name). Throws AsmError (file:line:col), BinaryError,
// or std::runtime_error (a directory, unreadable, type unknown from the name).
std::vector<tpu::Instruction> load_program(const std::string& path, const std::string& format = "");

// A JSON object (nlohmann-json's ordered_json) printed in tpusim's layout: keys keep their
// insertion order; nested objects print on one line, the top-level object one key per line;
// floating-point values with 6 significant digits (tpu::json_number), NaN and infinity as null.
class Json {
 public:
  Json& add(const std::string& key, const std::string& value) {
    object_[key] = value;
    return *this;
  }
  Json& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  Json& add(const std::string& key, bool value) {
    object_[key] = value;
    return *this;
  }
  Json& add(const std::string& key, int value) { return add(key, static_cast<int64_t>(value)); }
  Json& add(const std::string& key, unsigned value) {
    return add(key, static_cast<uint64_t>(value));
  }
  Json& add(const std::string& key, int64_t value) {
    object_[key] = value;
    return *this;
  }
  Json& add(const std::string& key, uint64_t value) {
    object_[key] = value;
    return *this;
  }
  Json& add(const std::string& key, double value);
  Json& add(const std::string& key, const Json& object) {
    object_[key] = object.object_;
    return *this;
  }
  Json& add_null(const std::string& key) {
    object_[key] = nullptr;
    return *this;
  }
  std::string str(bool top_level = true) const;

 private:
  nlohmann::ordered_json object_ = nlohmann::ordered_json::object();
};

// RunStats as JSON: cycles, cycles_estimated, start_cycle, instructions, wall_seconds,
// counters {...}.
void add_run_stats(Json& j, const tpu::RunStats& s);

}  // namespace tpusim
