// SPDX-License-Identifier: Apache-2.0
// Linked into every chip executable of a TPU_COVERAGE build (tests/verif/CMakeLists.txt): at
// exit, writes the Verilator line/toggle coverage collected by this process to
// $TPU_COVERAGE_DIR/<program>_<pid>.dat (default: the working directory), for
// scripts/coverage.sh to merge with verilator_coverage.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "verilated.h"
#include "verilated_cov.h"

namespace {

void write_coverage() {
  const char* dir = std::getenv("TPU_COVERAGE_DIR");
  std::string name = program_invocation_short_name;
  std::string file =
      std::string(dir && *dir ? dir : ".") + "/" + name + "_" + std::to_string(::getpid()) + ".dat";
  Verilated::threadContextp()->coveragep()->write(file.c_str());
}

struct Register {
  Register() {
    // Create the context before registering: atexit handlers run before the destructors of
    // statics constructed earlier, so the coverage data is still alive when written.
    Verilated::threadContextp();
    std::atexit(write_coverage);
  }
} register_at_start;

}  // namespace
