// SPDX-License-Identifier: Apache-2.0
// tpusim asm IN.s -o OUT.bin: assemble (docs/isa.md "Assembly syntax").
#include <iostream>

#include "assembler.h"
#include "output_file.h"
#include "tpusim.h"

namespace {

int run_asm(const tpusim::Args& args) {
  namespace po = tpusim::po;
  std::string in, out;
  bool quiet = false;
  po::options_description opts("options");
  opts.add_options()("input", po::value<std::string>(&in)->required(), "assembly source (IN.s)")(
      "output,o", po::value<std::string>(&out)->required(),
      "binary to write (OUT.bin; - for standard output); written completely or not at all")(
      "quiet,q", po::bool_switch(&quiet), "print nothing on success");
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (!tpusim::parse_options(args, "tpusim asm IN.s -o OUT.bin",
                             "Assembles IN.s into 16-byte little-endian instructions. Errors name "
                             "file:line:column.",
                             opts, pos, vm)) {
    return 0;
  }
  tpu::RunPaths().input("", in).output("-o", out).check();
  tpu::check_not_directory(out, "-o");
  const auto program = tpu::assemble(tpusim::read_text_file(in), in);
  const auto bytes = tpu::encode_program(program);
  tpusim::write_file(out, std::string(bytes.begin(), bytes.end()), "-o");
  // With -o - the binary is standard output: the summary goes to stderr.
  if (!quiet) {
    if (out == "-") {
      std::cerr << "standard output: " << program.size() << " instructions\n";
    } else {
      std::cout << out << ": " << program.size() << " instructions\n";
    }
  }
  return 0;
}

}  // namespace

TPUSIM_SUBCOMMAND("asm", "assemble a program: tpusim asm IN.s -o OUT.bin", run_asm);
