// tpusim: assemble, disassemble and run tpu-rtl programs on the simulated chip (rtl) or the
// golden model, and benchmark tiled matmuls. Subcommands live in cmd_*.cpp (tpusim.h).
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "tpusim.h"

namespace {

void print_help() {
  std::cout << "usage: tpusim <subcommand> [options]   (tpusim <subcommand> --help for its "
               "options)\n\nsubcommands:\n";
  for (const tpusim::Subcommand& s : tpusim::subcommands()) {
    std::printf("  %-10s %s\n", s.name.c_str(), s.summary.c_str());
  }
  std::cout << "\nexit codes: 0 success, 1 failure, 2 usage error. See docs/tpusim.md.\n";
}

// One line, whatever the exception text holds.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help();
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    if (argc > 2 && name == "help") {
      if (const tpusim::Subcommand* s = tpusim::find_subcommand(argv[2])) {
        return s->run({"--help"});
      }
    }
    print_help();
    return 0;
  }
  const tpusim::Subcommand* cmd = tpusim::find_subcommand(name);
  if (cmd == nullptr) {
    std::string names;
    for (const tpusim::Subcommand& s : tpusim::subcommands()) names += (names.empty() ? "" : ", ") + s.name;
    std::fprintf(stderr, "tpusim: error: unknown subcommand '%s' (expected one of: %s)\n",
                 name.c_str(), names.c_str());
    return 2;
  }
  const tpusim::Args args(argv + 2, argv + argc);
  try {
    return cmd->run(args);
  } catch (const tpusim::UsageError& e) {
    std::fprintf(stderr, "tpusim %s: error: %s (see tpusim %s --help)\n", name.c_str(),
                 one_line(e.what()).c_str(), name.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tpusim %s: error: %s\n", name.c_str(), one_line(e.what()).c_str());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "tpusim %s: error: unknown exception\n", name.c_str());
    return 1;
  }
}
