// SPDX-License-Identifier: Apache-2.0
// Runs a shell command and captures its standard output and exit code (for tests that start
// the tpusim CLI as a user would).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace test_support {

struct CommandResult {
  int code = -1;    // exit code, -1 if it did not exit normally or could not start
  std::string out;  // standard output
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace test_support
