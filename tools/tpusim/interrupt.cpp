// SPDX-License-Identifier: Apache-2.0
// SIGINT / SIGTERM handling (interrupt.h).
#include "interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <ctime>

#include "json_text.h"
#include "output_file.h"
#include "tpusim.h"

namespace tpusim {

namespace {

constexpr size_t kText = 1024;
char g_command[64] = "tpusim";
char g_subcommand[48] = "";
char g_activity[kText] = "starting";           // human text
char g_activity_json[kText] = "\"starting\"";  // the same as a JSON string
std::atomic<bool> g_json{false};
bool g_tty = false;  // stderr is a terminal
std::atomic<uint64_t> g_done{0}, g_total{0};
std::atomic<const char*> g_unit{nullptr};
constexpr int kCounts = 4;
std::atomic<const char*> g_count_key[kCounts];
std::atomic<uint64_t> g_count_value[kCounts];
timespec g_start{};

// Copies at most cap - 1 bytes and terminates (no locale, no allocation).
void copy_text(char* dst, size_t cap, const std::string& s) {
  const size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// A fixed buffer that only appends (async-signal-safe).
struct Buf {
  char data[4 * kText];
  size_t len = 0;
  void add(const char* s) {
    while (*s && len + 1 < sizeof data) data[len++] = *s++;
  }
  void add(uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = char('0' + v % 10);
      v /= 10;
    } while (v);
    while (n && len + 1 < sizeof data) data[len++] = tmp[--n];
  }
  void add_tenths(uint64_t tenths) {
    add(tenths / 10);
    add(".");
    add(tenths % 10);
  }
  void flush(int fd) {
    size_t off = 0;
    while (off < len) {
      const ssize_t w = ::write(fd, data + off, len - off);
      if (w <= 0) break;
      off += size_t(w);
    }
    len = 0;
  }
};

void on_signal(int sig) {
  tpu::remove_pending_output_files();
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t ms =
      (int64_t(now.tv_sec) - g_start.tv_sec) * 1000 + (now.tv_nsec - g_start.tv_nsec) / 1000000;
  const uint64_t tenths = ms > 0 ? uint64_t(ms) / 100 : 0;
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
  const char* unit = g_unit.load();
  Buf b;
  if (g_tty) b.add("\n");  // the terminal has echoed ^C on the current line
  b.add(g_command);
  b.add(": interrupted by ");
  b.add(name);
  b.add(" while ");
  b.add(g_activity);
  if (unit) {
    b.add(": ");
    b.add(g_done.load());
    b.add(" of ");
    b.add(g_total.load());
    b.add(" ");
    b.add(unit);
    b.add(" done");
  }
  b.add(", ");
  b.add_tenths(tenths);
  b.add(" s elapsed; exit code ");
  b.add(uint64_t(128 + sig));
  b.add("\n");
  b.flush(STDERR_FILENO);
  if (g_json.load()) {
    b.add("{\n  \"subcommand\": \"");
    b.add(g_subcommand);
    b.add("\",\n  \"status\": \"interrupted\",\n  \"interrupted\": true,\n  \"signal\": \"");
    b.add(name);
    b.add("\",\n  \"activity\": ");
    b.add(g_activity_json);
    if (unit) {
      b.add(",\n  \"done\": ");
      b.add(g_done.load());
      b.add(",\n  \"total\": ");
      b.add(g_total.load());
      b.add(",\n  \"unit\": \"");
      b.add(unit);
      b.add("\"");
    }
    for (int i = 0; i < kCounts; ++i) {
      if (const char* key = g_count_key[i].load()) {
        b.add(",\n  \"");
        b.add(key);
        b.add("\": ");
        b.add(g_count_value[i].load());
      }
    }
    b.add(",\n  \"elapsed_seconds\": ");
    b.add_tenths(tenths);
    b.add("\n}\n");
    b.flush(STDOUT_FILENO);
  }
  _exit(128 + sig);
}

}  // namespace

void install_interrupt_handlers(const std::string& subcommand, bool json) {
  copy_text(g_command, sizeof g_command, "tpusim " + subcommand);
  // Only registered names get here (letters, digits, '-'): no JSON escaping needed.
  copy_text(g_subcommand, sizeof g_subcommand, subcommand);
  g_json = json;
  g_tty = isatty(STDERR_FILENO) == 1;
  clock_gettime(CLOCK_MONOTONIC, &g_start);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  // A signal the parent set to be ignored (nohup, a shell's background job) stays ignored.
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  }
}

std::string current_activity() { return g_activity; }

void set_activity(const std::string& what) {
  // Block the signals while the buffers change, so the handler never sees half a text.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &old);
  copy_text(g_activity, sizeof g_activity, what);
  // Short enough that the escaped text is never cut inside an escape sequence.
  copy_text(g_activity_json, sizeof g_activity_json,
            tpu::json_quote(what.size() > 160 ? what.substr(0, 160) + "..." : what));
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

void set_progress(uint64_t done, uint64_t total, const char* unit) {
  g_done = done;
  g_total = total;
  g_unit = unit;
}

void set_count(const char* key, uint64_t value) {
  for (int i = 0; i < kCounts; ++i) {
    const char* k = g_count_key[i].load();
    if (k == nullptr || std::strcmp(k, key) == 0) {
      g_count_value[i] = value;
      g_count_key[i] = key;
      return;
    }
  }
}

}  // namespace tpusim
