// SPDX-License-Identifier: Apache-2.0
// tpusim run PROGRAM: run a program (.s or .bin) on a backend, with host memory from/to files.
#include <cstdio>
#include <iostream>

#include "host_image.h"
#include "interrupt.h"
#include "output_file.h"
#include "tpusim.h"

namespace {

// --hostmem-in's blocks as the device's host buffers.
void load_image(tpu::Device& dev, const tpu::HostImage& image, size_t instructions,
                const std::string& mem_in) {
  try {
    for (const tpu::HostImageBlock& b : image.blocks) {
      char name[32];
      std::snprintf(name, sizeof name, "hostmem@0x%08x", b.addr);
      dev.register_buffer(b.addr, static_cast<uint32_t>(b.bytes.size()),
                          b.name.empty() ? name : b.name);
      dev.write(b.addr, b.bytes);
    }
    dev.dma_windows(instructions);  // too many separate blocks for the chip's DMA windows?
  } catch (const tpu::DeviceError& e) {
    if (mem_in.empty()) throw;
    throw std::runtime_error("--hostmem-in " + mem_in + ": " + e.what());
  }
}

// The outcome: one JSON object, or the lines (an error on stderr).
void print_result(const tpu::RunOutcome& r, bool json, const std::string& program_path,
                  size_t instructions, const std::string& backend, uint32_t n,
                  uint64_t max_cycles) {
  if (json) {
    tpusim::Json j;
    j.add("program", program_path);
    j.add("backend", backend);
    j.add("array_size", n);
    j.add("status", tpu::to_string(r.status));
    if (r.status == tpu::RunOutcome::Status::Error) {
      tpusim::Json e;
      e.add("code", static_cast<unsigned>(r.error));
      e.add("name", std::string(tpu::error_name(r.error)));
      e.add("pc", r.pc);
      e.add("message", r.message);
      j.add("error", e);
    } else if (r.status == tpu::RunOutcome::Status::Timeout) {
      tpusim::Json e;
      e.add_null("code").add_null("name").add_null("pc");  // the chip did not stop: no error code
      e.add("message", r.message);
      e.add("max_cycles", max_cycles);
      j.add("error", e);
    }
    tpusim::add_run_stats(j, r.stats);
    std::cout << j.str() << "\n";
    return;
  }
  std::printf("%s: %zu instructions on %s (N=%u)\n", program_path.c_str(), instructions,
              backend.c_str(), n);
  if (!r.done()) {
    std::fflush(stdout);
    std::fprintf(stderr, "tpusim run: error: %s\n", r.message.c_str());
    return;
  }
  std::printf("done: %llu cycles%s, wall %.3f s\n", (unsigned long long)r.stats.cycles,
              r.stats.cycles_estimated ? " (estimate: the model has no timing)" : "",
              r.stats.wall_seconds);
  if (!r.stats.cycles_estimated) {
    std::printf("start cycle: %llu (for --vcd-window, counted from simulation start)\n",
                (unsigned long long)r.stats.start_cycle);
  }
  std::printf("counters:");
  for (int i = 1; i < tpu::PerfCounters::kCount; ++i) {
    std::printf(" %s=%llu", tpu::PerfCounters::name(i),
                (unsigned long long)r.stats.counters.get(i));
  }
  std::printf("\n");
}

int run_run(const tpusim::Args& args) {
  namespace po = tpusim::po;
  std::string program_path, mem_in, mem_out, format;
  bool json = false;
  tpusim::DeviceOptions dev_opts;
  po::options_description opts("options");
  opts.add_options()("program", po::value<std::string>(&program_path)->required(),
                     "the program: assembly (.s, .S, .asm) or binary (.bin)")(
      "format", po::value<std::string>(&format),
      "asm or bin: the program's type when its name does not tell (default: from the name)")(
      "hostmem-in", po::value<std::string>(&mem_in),
      "host memory image to load; each block becomes a registered host buffer (docs/tpusim.md)")(
      "hostmem-out", po::value<std::string>(&mem_out),
      "after the run, write every host buffer to this image file (also after a chip error or a "
      "timeout; written completely or not at all)")(
      "json", po::bool_switch(&json), "print the result as one JSON object, also on failure");
  tpusim::add_device_options(opts, dev_opts, /*with_vcd=*/true);
  po::positional_options_description pos;
  pos.add("program", 1);
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim run PROGRAM [--hostmem-in F] [--hostmem-out F] [--backend rtl|model] [--vcd F] "
          "[--vcd-window FROM:TO] [--max-cycles N] [--format asm|bin] [--json]",
          "Runs PROGRAM until halt. Host memory is exactly the blocks of --hostmem-in, which "
          "become the chip's DMA windows: a DMA anywhere else faults with ERR_HOST_RANGE. The "
          "exit code is 0 if the program halted, 1 if it faulted or hit --max-cycles.",
          opts, pos, vm)) {
    return 0;
  }
  if (!format.empty() && format != "asm" && format != "bin") {
    throw tpusim::UsageError("--format " + format + " is not a program type (expected asm or bin)");
  }
  // Everything that can be wrong with the inputs and outputs is found before the chip is built;
  // no output may be an input (checked again with the files the image's file= blocks read).
  tpu::RunPaths paths;
  paths.input("", program_path).input("--hostmem-in", mem_in);
  paths.output("--hostmem-out", mem_out).output("--vcd", dev_opts.vcd).check();
  const auto program = tpusim::load_program(program_path, format);
  tpu::HostImage image;
  if (!mem_in.empty()) image = tpu::load_host_image(mem_in);
  for (const std::string& f : image.files)
    paths.input("the file= block of --hostmem-in " + mem_in + ":", f);
  paths.check();
  std::unique_ptr<tpu::OutputFile> mem_out_file;
  if (!mem_out.empty()) mem_out_file = std::make_unique<tpu::OutputFile>(mem_out, "--hostmem-out");
  auto dev = tpusim::open_device(dev_opts, vm);

  load_image(*dev, image, program.size(), mem_in);
  tpusim::set_activity("running " + program_path + " (" + std::to_string(program.size()) +
                       " instructions) on the " + dev_opts.backend + " backend");
  tpu::RunOutcome r = dev->try_run(program, dev_opts.max_cycles);
  if (r.status == tpu::RunOutcome::Status::Timeout) r.message += tpusim::max_cycles_hint(dev_opts);
  tpusim::set_activity("writing the outputs of " + program_path);

  if (mem_out_file) {
    tpu::HostImage after = image;
    for (tpu::HostImageBlock& b : after.blocks) b.bytes = dev->read(b.addr, b.bytes.size());
    mem_out_file->write(tpu::format_host_image(after));
    mem_out_file->commit();
  }
  const tpu::ChipParams p = dev->params();
  const std::string backend(dev->backend());
  tpusim::finish_device(dev_opts, dev);

  print_result(r, json, program_path, program.size(), backend, p.N, dev_opts.max_cycles);
  return r.done() ? 0 : 1;
}

}  // namespace

TPUSIM_SUBCOMMAND("run", "run a program: tpusim run PROGRAM [--hostmem-in F] ...", run_run);
