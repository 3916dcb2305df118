// SPDX-License-Identifier: Apache-2.0
#include "sharding.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "interrupt.h"
#include "json_text.h"

namespace tpusim {

// ---- JSON reading (nlohmann-json, driver/json_text.h)
// ------------------------------------------------------------------------

namespace {

const char* const kExpectedShard = "expected a shard JSON object written by tpusim --shard";

// nlohmann-json's tree as a JsonValue; `path`: where the value is in the document
// ("shard.count", "images[3].index"), for the accessors' messages.
JsonValue to_value(const nlohmann::ordered_json& j, const std::string& where,
                   const std::string& path, int depth) {
  using T = nlohmann::ordered_json::value_t;
  JsonValue v;
  v.where = where + (path.empty() ? "" : ": at " + path);
  if (depth > 64)
    throw std::runtime_error(v.where + ": JSON nested too deeply (" + kExpectedShard + ")");
  switch (j.type()) {
    case T::object:
      v.type = JsonValue::Type::Object;
      for (const auto& m : j.items())
        v.members.emplace_back(
            m.key(),
            to_value(m.value(), where, path.empty() ? m.key() : path + "." + m.key(), depth + 1));
      break;
    case T::array:
      v.type = JsonValue::Type::Array;
      for (const auto& item : j)
        v.items.push_back(
            to_value(item, where, path + "[" + std::to_string(v.items.size()) + "]", depth + 1));
      break;
    case T::string:
      v.type = JsonValue::Type::String;
      v.text = j.get<std::string>();
      break;
    case T::boolean:
      v.type = JsonValue::Type::Bool;
      v.boolean = j.get<bool>();
      break;
    case T::number_integer:
    case T::number_unsigned:
    case T::number_float:  // shortest text that reads back the same double ("2.0", "1e-05")
      v.type = JsonValue::Type::Number;
      v.text = j.dump();
      break;
    default:  // null (a parsed document holds no binary or discarded values)
      break;
  }
  return v;
}

}  // namespace

JsonValue parse_json(const std::string& text, const std::string& where) {
  return to_value(tpu::parse_json_text(text, where, kExpectedShard), where, "", 0);
}

bool JsonValue::has(const std::string& key) const {
  for (const auto& m : members)
    if (m.first == key) return true;
  return false;
}

const JsonValue& JsonValue::at(const std::string& key) const {
  for (const auto& m : members)
    if (m.first == key) return m.second;
  throw std::runtime_error(
      where + ": the key \"" + key +
      "\" is missing (expected a shard JSON object written by tpusim --shard)");
}

int64_t JsonValue::i64() const {
  if (type != Type::Number || text.find_first_of(".eE") != std::string::npos)
    throw std::runtime_error(where + ": '" + text + "' is not an integer (expected an integer)");
  return std::stoll(text);
}

uint64_t JsonValue::u64() const {
  if (type != Type::Number || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error(where + ": '" + text +
                             "' is not a non-negative integer (expected one)");
  return std::stoull(text);
}

double JsonValue::number() const {
  if (type == Type::Null) return std::numeric_limits<double>::quiet_NaN();
  if (type != Type::Number)
    throw std::runtime_error(where + ": expected a number, found a value of another type");
  return std::strtod(text.c_str(), nullptr);
}

bool JsonValue::flag() const {
  if (type != Type::Bool) throw std::runtime_error(where + ": expected true or false");
  return boolean;
}

const std::string& JsonValue::str() const {
  if (type != Type::String) throw std::runtime_error(where + ": expected a string");
  return text;
}

const std::vector<JsonValue>& JsonValue::array() const {
  if (type != Type::Array) throw std::runtime_error(where + ": expected an array");
  return items;
}

// ---- options -----------------------------------------------------------------------------

void add_shard_options(po::options_description& options) {
  options.add_options()("jobs", po::value<std::string>(),
                        "run in J processes on this machine (J copies of tpusim with --shard "
                        "i/J) and merge their results; identical to one process but the wall "
                        "time (docs/scaling.md)")(
      "shard", po::value<std::string>(),
      "do only shard I of K (whole batches; I = 0..K-1) and print its shard JSON on stdout "
      "for `tpusim merge` (SLURM job arrays, GNU parallel, ...)");
}

void cap_jobs(ShardPlan& plan, uint64_t units, const std::string& unit,
              const std::string& units_name) {
  if (plan.mode != ShardPlan::Mode::Jobs || uint64_t(plan.jobs) <= units) return;
  const uint64_t capped = std::max<uint64_t>(units, 1);
  std::fprintf(stderr,
               "tpusim: note: --jobs %d capped at %llu: the run has only %llu %s (one process "
               "per %s at most)\n",
               plan.jobs, (unsigned long long)capped, (unsigned long long)units,
               (units == 1 ? unit : units_name).c_str(), unit.c_str());
  plan.jobs = int(capped);
  if (plan.jobs == 1) plan.mode = ShardPlan::Mode::Single;
}

ShardPlan shard_plan(const po::variables_map& vm) {
  ShardPlan p;
  if (vm.count("jobs") && vm.count("shard"))
    throw UsageError("--jobs and --shard exclude each other (--jobs J starts J shards itself)");
  if (vm.count("jobs")) {
    p.jobs = int(int_option(vm, "jobs", 1, 1024));
    if (p.jobs > 1) p.mode = ShardPlan::Mode::Jobs;
  }
  if (vm.count("shard")) {
    const std::string text = vm["shard"].as<std::string>();
    try {
      p.shard = tpu::parse_shard(text);
    } catch (const std::invalid_argument& e) {
      // Digits too long for parse_shard: say what the limit is, not "not a number".
      const size_t slash = text.find('/');
      if (slash != std::string::npos && slash > 0 && slash + 1 < text.size() &&
          text.find_first_not_of("0123456789/") == std::string::npos &&
          text.find('/', slash + 1) == std::string::npos)
        throw UsageError("--shard " + text +
                         ": out of range (expected I/K with 0 <= I < K <= 65536)");
      throw UsageError(e.what());
    }
    p.mode = ShardPlan::Mode::Shard;
  }
  if (p.mode == ShardPlan::Mode::Single && launched_by_mpi()) {
    p.shard = mpi_shard();
    if (p.shard.count > 1) p.mode = ShardPlan::Mode::Mpi;
  } else if (launched_by_mpi() && p.mode == ShardPlan::Mode::Jobs) {
    throw UsageError("--jobs under mpirun / srun: give one of them (mpirun shards by rank)");
  }
  return p;
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    const char* s = std::getenv(v);
    if (s != nullptr && *s != '\0') return true;
  }
  return false;
}

// ---- --jobs ------------------------------------------------------------------------------

std::string self_executable() {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0)
    throw std::runtime_error(std::string("cannot find this executable (/proc/self/exe: ") +
                             std::strerror(errno) + "); expected Linux's /proc");
  exe[len] = '\0';
  return exe;
}

std::vector<ChildResult> run_processes(
    const std::vector<std::vector<std::string>>& argvs, int parallel,
    const std::function<void(size_t, const ChildResult&)>& on_done,
    const std::vector<std::string>& stderr_files) {
  struct Running {
    size_t index = 0;
    pid_t pid = -1;
    int fd = -1;
  };
  std::vector<ChildResult> results(argvs.size());
  std::vector<Running> running;
  size_t next = 0;
  const size_t limit = size_t(std::max(1, parallel));
  std::fflush(nullptr);
  auto start = [&](size_t i) {
    std::vector<std::string> argv_s = argvs[i];
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    int p[2];
    if (pipe(p) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // no orphaned child when the parent is killed
      dup2(p[1], STDOUT_FILENO);
      close(p[0]);
      close(p[1]);
      if (i < stderr_files.size()) {
        const int fd =
            open(stderr_files[i].c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
          std::fprintf(stderr, "tpusim: cannot write %s: %s\n", stderr_files[i].c_str(),
                       std::strerror(errno));
          _exit(127);
        }
        dup2(fd, STDERR_FILENO);
      }
      execv(argv[0], argv.data());
      std::fprintf(stderr, "tpusim: cannot start %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    close(p[1]);
    running.push_back(Running{i, pid, p[0]});
  };
  while (next < argvs.size() || !running.empty()) {
    while (next < argvs.size() && running.size() < limit) start(next++);
    std::vector<pollfd> fds;
    for (const auto& r : running) fds.push_back(pollfd{r.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
    }
    for (size_t k = fds.size(); k-- > 0;) {
      if (fds[k].revents == 0) continue;
      Running& r = running[k];
      char buf[65536];
      const ssize_t n = read(r.fd, buf, sizeof buf);
      if (n > 0) {
        results[r.index].out.append(buf, size_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      close(r.fd);  // end of its output: the child is ending
      int status = 0;
      while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
      }
      results[r.index].code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      results[r.index].pid = r.pid;
      if (on_done) on_done(r.index, results[r.index]);
      running.erase(running.begin() + long(k));
    }
  }
  return results;
}

namespace {

// `args` without the options in `drop_with_value` (and their values, "--x V" or "--x=V") and
// the switches in `drop_switch`.
Args without_options(const Args& args, const std::vector<std::string>& drop_with_value,
                     const std::vector<std::string>& drop_switch) {
  Args out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool dropped = false;
    for (const auto& o : drop_with_value) {
      if (a == o) {
        ++i;  // and its value
        dropped = true;
      } else if (a.rfind(o + "=", 0) == 0) {
        dropped = true;
      }
    }
    for (const auto& o : drop_switch) dropped = dropped || a == o;
    if (!dropped) out.push_back(a);
  }
  return out;
}

// Starts `jobs` copies of this executable: `subcommand` with child_args(i) for child i, each
// with its stdout captured and its stderr passed through; waits for all and returns each
// one's stdout. A child that exits with code 2 (usage) makes this throw UsageError; one that
// ends with 127 or 128+ (not started, killed) or non-zero without printing anything,
// std::runtime_error naming the shard. Other non-zero codes (a shard with a mismatch exits 1
// and still prints its shard JSON) are left to the merge.
std::vector<std::string> run_jobs(const std::string& subcommand, int jobs,
                                  const std::function<Args(int)>& child_args) {
  const std::string exe = self_executable();
  std::vector<std::vector<std::string>> argvs;
  for (int i = 0; i < jobs; ++i) {
    std::vector<std::string> argv = {exe, subcommand};
    for (auto& a : child_args(i)) argv.push_back(a);
    argvs.push_back(std::move(argv));
  }
  set_activity("running " + subcommand + " in " + std::to_string(jobs) + " processes (--jobs " +
               std::to_string(jobs) + ": each a --shard i/" + std::to_string(jobs) + ")");
  std::vector<ChildResult> children;
  try {
    children = run_processes(argvs, jobs);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("--jobs: ") + e.what());
  }
  std::vector<int> exit_codes(size_t(jobs), 0);
  int usage = 0;
  for (int i = 0; i < jobs; ++i) {
    const int code = children[size_t(i)].code;
    exit_codes[size_t(i)] = code;
    if (code == 2) usage = 2;
    if (code == 127 || code >= 128)
      throw std::runtime_error("--jobs: shard " + std::to_string(i) + "/" + std::to_string(jobs) +
                               " (pid " + std::to_string(children[size_t(i)].pid) +
                               ") ended with exit code " + std::to_string(code) +
                               " (its message is above); expected exit code 0 or 1");
  }
  if (usage) throw UsageError("--jobs: a shard rejected its arguments (its message is above)");
  for (int i = 0; i < jobs; ++i)
    if (exit_codes[size_t(i)] != 0 && children[size_t(i)].out.empty())
      throw std::runtime_error("--jobs: shard " + std::to_string(i) + "/" + std::to_string(jobs) +
                               " failed (exit code " + std::to_string(exit_codes[size_t(i)]) +
                               ", its message is above) without printing its shard JSON; "
                               "expected every shard to finish");
  std::vector<std::string> outs;
  for (auto& c : children) outs.push_back(std::move(c.out));
  return outs;
}

std::vector<std::string> shard_names(const std::string& what, uint32_t count) {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < count; ++i)
    names.push_back(what + std::to_string(i) +
                    (what == "shard " ? "/" + std::to_string(count) : ""));
  return names;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int run_jobs_and_merge(const ShardedCommand& c, const ShardPlan& plan, Clock::time_point t0) {
  const Args base = without_options(c.args, c.child_drop_with_value, c.child_drop_switch);
  const auto outs = run_jobs(c.name, plan.jobs, [&](int i) {
    Args a = base;
    a.insert(a.end(), {"--shard", std::to_string(i) + "/" + std::to_string(plan.jobs)});
    if (c.child_extra) {
      const Args extra = c.child_extra(i);
      a.insert(a.end(), extra.begin(), extra.end());
    }
    return a;
  });
  return c.merge_and_print(outs, shard_names("shard ", uint32_t(plan.jobs)), seconds_since(t0));
}

int finish_shard(const ShardedCommand& c, const ShardPlan& plan, const std::string& shard_json,
                 int code, Clock::time_point t0) {
  if (plan.mode == ShardPlan::Mode::Shard) {
    std::fputs(shard_json.c_str(), stdout);
    return code;
  }
  const auto all = mpi_gather(shard_json);  // Mode::Mpi
  if (!plan.merges()) return 0;             // rank 0 reports
  return c.merge_and_print(all, shard_names("MPI rank ", plan.shard.count), seconds_since(t0));
}

namespace {

// The value at `path` ("model", "shard.batch") of a shard object.
const JsonValue& at_path(const JsonValue& v, const std::string& path) {
  const size_t dot = path.find('.');
  return dot == std::string::npos ? v.at(path) : v.at(path.substr(0, dot)).at(path.substr(dot + 1));
}

// Parses one shard text and checks its format; errors start with its name.
JsonValue read_shard(const std::string& text, const std::string& name, const std::string& format,
                     const std::string& command) {
  try {
    JsonValue v = parse_json(text, name);
    if (v.type != JsonValue::Type::Object || !v.has("format") ||
        v.at("format").type != JsonValue::Type::String || v.at("format").str() != format)
      throw std::runtime_error("not a " + command + " shard (expected \"format\": \"" + format +
                               "\", written by tpusim " + command + " --shard I/K)");
    v.at("shard").at("index").u64();
    return v;
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    throw std::runtime_error(what.rfind(name, 0) == 0 ? what : name + ": " + what);
  }
}

}  // namespace

ShardSet read_shards(const std::vector<std::string>& texts, const std::vector<std::string>& names,
                     const std::string& format, const std::string& command,
                     const std::vector<std::string>& same_keys) {
  if (texts.empty()) throw std::runtime_error("merge: no shard files (expected K shard files)");
  std::vector<JsonValue> parts;
  for (size_t i = 0; i < texts.size(); ++i)
    parts.push_back(read_shard(texts[i], names[i], format, command));
  const JsonValue& p0 = parts.front();
  const uint64_t count = p0.at("shard").at("count").u64();
  std::vector<int> seen(count, -1);
  for (size_t i = 0; i < parts.size(); ++i) {
    const JsonValue& s = parts[i].at("shard");
    auto same = [&](const std::string& key, const std::string& a, const std::string& b) {
      if (a != b)
        throw std::runtime_error(names[i] + ": a shard of another run (" + key + " " + a +
                                 ", but " + names[0] + " has " + b +
                                 "; expected the shards of one run)");
    };
    same("shard count", std::to_string(s.at("count").u64()), std::to_string(count));
    for (const auto& key : same_keys)
      same(key.substr(key.find('.') + 1), at_path(parts[i], key).text, at_path(p0, key).text);
    const uint64_t k = s.at("index").u64();
    const std::string which = "shard " + std::to_string(k) + "/" + std::to_string(count);
    if (k >= count) throw std::runtime_error(names[i] + ": " + which + " is out of range");
    if (seen[k] >= 0)
      throw std::runtime_error(names[i] + ": " + which + " is also in " + names[size_t(seen[k])] +
                               " (expected each shard once)");
    seen[k] = int(i);
  }
  ShardSet set;
  for (uint64_t k = 0; k < count; ++k) {
    if (seen[k] < 0)
      throw std::runtime_error("merge: shard " + std::to_string(k) + "/" + std::to_string(count) +
                               " is missing (expected all " + std::to_string(count) +
                               " shards of the run, got " + std::to_string(parts.size()) + ")");
    set.parts.push_back(std::move(parts[size_t(seen[k])]));
    set.names.push_back(names[size_t(seen[k])]);
  }
  return set;
}

}  // namespace tpusim
