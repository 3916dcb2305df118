// SPDX-License-Identifier: Apache-2.0
// tpusim: assemble, disassemble and run tpu-rtl programs on the simulated chip (rtl) or the
// golden model, and benchmark tiled matmuls. Subcommands live in cmd_*.cpp (tpusim.h).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "device.h"
#include "interrupt.h"
#include "sharding.h"
#include "tpusim.h"

namespace {

void print_help() {
  std::cout << "usage: tpusim <subcommand> [options]   (tpusim <subcommand> --help for its "
               "options)\n\nsubcommands:\n";
  for (const tpusim::Subcommand& s : tpusim::subcommands()) {
    std::printf("  %-10s %s\n", s.name.c_str(), s.summary.c_str());
  }
  std::cout << "\nexit codes: 0 success, 1 failure (chip error, timeout, mismatch, bad input "
               "file), 2 usage "
               "error,\n130 / 143 interrupted by SIGINT / SIGTERM. See docs/tpusim.md.\n";
}

std::string subcommand_names() {
  std::string names;
  for (const tpusim::Subcommand& s : tpusim::subcommands())
    names += (names.empty() ? "" : ", ") + s.name;
  return names;
}

// One line, whatever the exception text holds.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// Everything written to standard output must arrive: a full disk (> /dev/full) or a closed
// pipe is a failure (exit 1 with a message), never a silent success.
bool stdout_complete(const std::string& name) {
  errno = 0;
  std::cout.flush();
  const bool bad = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  if (!bad) return true;
  std::fprintf(stderr,
               "tpusim%s%s: error: standard output: write error (%s); the output is incomplete "
               "(a full disk, or a closed pipe?)\n",
               name.empty() ? "" : " ", name.c_str(),
               errno ? std::strerror(errno) : "an earlier write failed");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help();
    stdout_complete("");
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    if (argc > 2 && name == "help") {
      if (const tpusim::Subcommand* s = tpusim::find_subcommand(argv[2])) {
        const int code = s->run({"--help"});
        return stdout_complete(argv[2]) ? code : 1;
      }
      std::fprintf(stderr, "tpusim help: error: unknown subcommand '%s' (expected one of: %s)\n",
                   argv[2], subcommand_names().c_str());
      return 2;
    }
    print_help();
    return stdout_complete("") ? 0 : 1;
  }
  const tpusim::Subcommand* cmd = tpusim::find_subcommand(name);
  if (cmd == nullptr) {
    std::fprintf(stderr, "tpusim: error: unknown subcommand '%s' (expected one of: %s)\n",
                 name.c_str(), subcommand_names().c_str());
    return 2;
  }
  const tpusim::Args args(argv + 2, argv + argc);
  // --json: every outcome is one JSON object on stdout, failures included.
  bool json = false;
  for (const std::string& a : args) json = json || a == "--json";
  tpusim::install_interrupt_handlers(name, json);
  tpusim::set_activity("starting (reading the arguments and inputs)");
  auto fail = [&](int code, const std::string& status, const std::string& message,
                  const tpu::ChipError* chip, const tpu::RunStats* stats = nullptr) {
    std::fprintf(stderr, "tpusim %s: error: %s%s\n", name.c_str(), message.c_str(),
                 code == 2 ? (" (see tpusim " + name + " --help)").c_str() : "");
    if (json) {
      tpusim::Json e;
      if (chip) {
        e.add("code", static_cast<unsigned>(chip->code()));
        e.add("name", std::string(tpu::error_name(chip->code())));
        e.add("pc", chip->pc());
      } else {
        e.add_null("code").add_null("name").add_null("pc");
      }
      e.add("message", message);
      tpusim::Json j;
      j.add("subcommand", name);
      j.add("status", status);
      j.add("exit_code", code);
      j.add("error", e);
      if (stats) {  // how far the chip got before it faulted or timed out
        tpusim::add_run_stats(j, *stats);
      } else {
        j.add_null("cycles");
        j.add_null("counters");
      }
      std::fflush(stdout);
      std::cout << j.str() << "\n";
    }
    tpusim::mpi_abort_if_running(code);  // the other ranks would wait for this one forever
    return code;
  };
  try {
    const int code = cmd->run(args);
    if (!stdout_complete(name)) {
      tpusim::mpi_abort_if_running(1);
      return 1;
    }
    return code;
  } catch (const std::bad_alloc&) {
    return fail(1, "error",
                "out of memory (" + tpusim::current_activity() +
                    "): an input is too large for this machine",
                nullptr);
  } catch (const tpusim::UsageError& e) {
    return fail(2, "usage_error", one_line(e.what()), nullptr);
  } catch (const tpu::TimeoutError& e) {
    return fail(1, "timeout",
                one_line(e.what()) + " (the limit is --max-cycles " +
                    std::to_string(e.max_cycles()) + "; raise it with --max-cycles N)",
                nullptr, e.stats());
  } catch (const tpu::ChipError& e) {
    return fail(1, "error", one_line(e.what()), &e, e.stats());
  } catch (const std::exception& e) {
    return fail(1, "error", one_line(e.what()), nullptr);
  } catch (...) {
    return fail(1, "error", "unknown exception", nullptr);
  }
}
