// SPDX-License-Identifier: Apache-2.0
// SIGINT / SIGTERM for tpusim: stop at once, say what was interrupted and how far it got.
//
// main() calls install_interrupt_handlers(). A subcommand describes what it is doing with
// set_activity() ("running prog.s on the rtl backend") and, for runs made of parts, its
// progress with set_progress() / set_count(). On a signal the handler (async-signal-safe: it
// only formats into fixed buffers, write()s, unlink()s and _exit()s):
//   * prints one line on stderr:
//       tpusim run-cnn: interrupted by SIGINT while running ...: 40 of 100 images done, 12.3 s
//       elapsed
//   * with --json, prints one object on stdout:
//       {"status": "interrupted", "interrupted": true, "signal": "SIGINT", "activity": "...",
//        "done": 40, "total": 100, "unit": "images", "<count>": n, ..., "elapsed_seconds": 12.3}
//   * removes every output file not yet complete (tpu::remove_pending_output_files), so no
//     partial file is left and existing files keep their old contents,
//   * exits with 128 + the signal number: 130 for SIGINT, 143 for SIGTERM.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim {

void install_interrupt_handlers(const std::string& subcommand, bool json);
void set_activity(const std::string& what);
// What set_activity() said last ("starting (reading the arguments and inputs)"), for messages.
std::string current_activity();
// `unit` must be a string literal ("images", "batches").
void set_progress(uint64_t done, uint64_t total, const char* unit);
// An extra JSON count reported with the progress (`key` a string literal; up to 4 keys).
void set_count(const char* key, uint64_t value);

}  // namespace tpusim
