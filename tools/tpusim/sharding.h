// SPDX-License-Identifier: Apache-2.0
// Sharding a tpusim run across processes (docs/scaling.md). One scheme for run-cnn and
// run-onnx (and, through tpu::shard_range in driver/shard.h, the random regression):
//   --shard I/K     this process does shard I of K (tpu::shard_range) and prints its shard
//                   JSON on stdout; `tpusim merge FILES...` combines the K files.
//   --jobs J        this process starts J copies of itself with --shard i/J (fork/exec of
//                   /proc/self/exe), reads their shard JSON and merges it.
//   mpirun / srun   with MPI built in (TPUSIM_HAVE_MPI) and started by a launcher, every rank
//                   does shard rank/size; rank 0 gathers the shard JSON (MPI_Gatherv) and merges.
// A merge prints exactly what one process would have printed (JSON or summary); only the
// wall-time fields differ.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shard.h"  // tpu::ShardSpec (driver/shard.h)
#include "tpusim.h"

namespace tpusim {

// A parsed JSON value (read by nlohmann-json) with accessors whose errors name the file and the
// place in it: enough to read shard files back.
struct JsonValue {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  std::string text;  // a String's value, or a Number as written
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;
  std::string where;  // "FILE" or "FILE: at shard.count": named by the errors below

  bool has(const std::string& key) const;
  // The member `key`; throws std::runtime_error naming the file, the place and the key if
  // missing. The accessors below throw naming the file and place on a wrong type.
  const JsonValue& at(const std::string& key) const;
  int64_t i64() const;  // a Number that is an integer; throws otherwise
  uint64_t u64() const;
  double number() const;  // a Number, or null as NaN
  bool flag() const;
  const std::string& str() const;
  const std::vector<JsonValue>& array() const;
};
// Throws std::runtime_error("WHERE: JSON error at byte N: ...").
JsonValue parse_json(const std::string& text, const std::string& where);

// How this process takes part in a run.
struct ShardPlan {
  enum class Mode { Single, Jobs, Shard, Mpi };
  Mode mode = Mode::Single;
  int jobs = 1;          // Mode::Jobs
  tpu::ShardSpec shard;  // Mode::Shard, Mode::Mpi: this process's part
  bool merges() const { return mode == Mode::Jobs || (mode == Mode::Mpi && shard.index == 0); }
};
// Adds --jobs J and --shard I/K.
void add_shard_options(po::options_description& options);
// Reads --jobs / --shard and whether an MPI launcher started this process (initializing MPI
// then). Throws UsageError for bad values or --jobs with --shard.
ShardPlan shard_plan(const po::variables_map& vm);

// --jobs J with fewer units of work than J: J becomes `units` (Mode::Single when 1), with a
// note on stderr ("--jobs 12 capped at 2: the run has only 2 batches"). `unit` / `units_name`:
// the noun, singular and plural ("batch", "batches").
void cap_jobs(ShardPlan& plan, uint64_t units, const std::string& unit,
              const std::string& units_name);
// True if mpirun / srun started this process (their environment variables are set).
bool launched_by_mpi();
// MPI_Init (once; MPI_Finalize at exit) and this rank / the world size. Throws
// std::runtime_error when tpusim was built without MPI.
tpu::ShardSpec mpi_shard();
// Every rank passes its shard output; rank 0 gets all of them in rank order, the others an
// empty vector.
std::vector<std::string> mpi_gather(const std::string& mine);
// After a failure: MPI_Abort(code) when MPI runs with more than one rank, else nothing.
void mpi_abort_if_running(int code);

// This executable's path (/proc/self/exe). Throws std::runtime_error if it cannot be read.
std::string self_executable();

// One child process of run_processes: its exit code (128 + signal if killed) and stdout.
struct ChildResult {
  int code = 0;
  int pid = 0;
  std::string out;
};
// Runs the commands `argvs` (argv[0]: the executable's path), at most `parallel` at a time,
// each with its stdout captured and its stderr passed through (or, when `stderr_files` is
// given, written to stderr_files[i]); calls on_done(i, result) as command i ends (in this
// thread). Returns the results in the order of `argvs`. A command that cannot be started ends
// with code 127. Throws std::runtime_error if pipe/fork/poll fail.
std::vector<ChildResult> run_processes(
    const std::vector<std::vector<std::string>>& argvs, int parallel,
    const std::function<void(size_t, const ChildResult&)>& on_done = {},
    const std::vector<std::string>& stderr_files = {});

// ---- One sharded command -------------------------------------------------------------------
// run-cnn, run-onnx and run-topology split their units of work (batches, data sets, layers)
// the same way; each gives this helper what differs:
struct ShardedCommand {
  std::string name;  // the subcommand ("run-cnn"): what the --jobs children run
  Args args;         // this process's arguments
  // --jobs: child i gets `args` without these options (and their values) and switches, then
  // --shard i/J, then child_extra(i) when given.
  std::vector<std::string> child_drop_with_value = {"--jobs"};
  std::vector<std::string> child_drop_switch = {"--json"};
  std::function<Args(int)> child_extra;
  // Merges the shard JSON texts of one run (`names[i]` names texts[i] in errors), prints the
  // result as one process prints it and returns the exit code; `wall`: the run's wall time.
  std::function<int(const std::vector<std::string>& texts, const std::vector<std::string>& names,
                    double wall)>
      merge_and_print;
};
using Clock = std::chrono::steady_clock;
// Mode::Jobs: runs the J children (each a --shard i/J, stderr passed through), merges their
// shard JSON and prints it. A child that exits with code 2 (usage) makes this throw UsageError;
// one killed, not started or failing without printing its shard JSON, std::runtime_error
// naming it. Returns the exit code of the merged run.
int run_jobs_and_merge(const ShardedCommand& c, const ShardPlan& plan, Clock::time_point t0);
// Mode::Shard / Mode::Mpi, after this process ran its shard: --shard prints `shard_json` on
// stdout and returns `code` (the shard's exit code); under mpirun rank 0 gathers every rank's
// JSON, merges and prints it and returns the run's exit code, the other ranks return 0.
int finish_shard(const ShardedCommand& c, const ShardPlan& plan, const std::string& shard_json,
                 int code, Clock::time_point t0);

// The shard JSON texts of one run, read and checked: parts[k] is shard k/K, names[k] its name.
struct ShardSet {
  std::vector<JsonValue> parts;
  std::vector<std::string> names;
};
// Reads `texts` (named by `names`): each an object with "format": `format` (written by
// `command --shard I/K`) and "shard": {"index", "count"}; the values of `same_keys` ("model",
// or "shard.batch" inside "shard") equal in all. Throws std::runtime_error naming the text
// that is not a shard, of another run, out of range or repeated, or the missing shard.
ShardSet read_shards(const std::vector<std::string>& texts, const std::vector<std::string>& names,
                     const std::string& format, const std::string& command,
                     const std::vector<std::string>& same_keys);

}  // namespace tpusim
