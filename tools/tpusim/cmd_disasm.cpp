// SPDX-License-Identifier: Apache-2.0
// tpusim disasm IN.bin [-o OUT.s]: disassemble; `tpusim asm` of the output gives IN.bin back.
#include <iostream>

#include "assembler.h"
#include "output_file.h"
#include "tpusim.h"

namespace {

int run_disasm(const tpusim::Args& args) {
  namespace po = tpusim::po;
  std::string in, out;
  po::options_description opts("options");
  opts.add_options()("input", po::value<std::string>(&in)->required(), "binary program (IN.bin)")(
      "output,o", po::value<std::string>(&out),
      "write the listing here (default: standard output; - too); written completely or not at all");
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (!tpusim::parse_options(args, "tpusim disasm IN.bin [-o OUT.s]",
                             "Prints one instruction per line in the assembly syntax; words that "
                             "do not decode print as `.inst 0x...` with the reason as a comment, "
                             "so assembling the listing gives back exactly IN.bin.",
                             opts, pos, vm)) {
    return 0;
  }
  tpu::RunPaths().input("", in).output("-o", out).check();
  tpu::check_not_directory(out, "-o");
  const std::string text = tpu::disassemble_program(tpu::load_binary(in), in);
  tpusim::write_file(out.empty() ? "-" : out, text, "-o");
  return 0;
}

}  // namespace

TPUSIM_SUBCOMMAND("disasm", "disassemble a binary: tpusim disasm IN.bin", run_disasm);
