// SPDX-License-Identifier: Apache-2.0
// tpusim merge: the shard JSON files of one sharded run (run-cnn --shard I/K, e.g. from a SLURM
// job array) into the output of one process: the same JSON object (--json) or the same lines
// and summary; only wall-time figures differ (docs/scaling.md).
#if __has_include("evaluate.h")

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cnn_shard.h"
#include "sharding.h"
#include "tpusim.h"

namespace {

int run_merge(const tpusim::Args& args) {
  namespace po = tpusim::po;
  bool json = false, quiet = false;
  std::string report_dir;
  std::vector<std::string> files;
  po::options_description opts("options");
  opts.add_options()("json", po::bool_switch(&json),
                     "print the one JSON object of the run (as run-cnn --json)")(
      "quiet", po::bool_switch(&quiet), "no per-image lines")(
      "report", po::value<std::string>(&report_dir),
      "write DIR/utilization.svg, DIR/index.html and DIR/report.json (as run-cnn --report)")(
      "files", po::value<std::vector<std::string>>(&files), "shard JSON files");
  po::positional_options_description pos;
  pos.add("files", -1);
  po::variables_map vm;
  if (!tpusim::parse_options(
          args, "tpusim merge [--json] [--quiet] [--report DIR] SHARD.json...",
          "Merges the shard JSON files that `tpusim run-cnn --shard I/K` (or run-onnx, "
          "run-topology) printed "
          "(all K of one "
          "run, any order) and prints what one process running the whole run prints: the same "
          "JSON object with --json, else the model lines, per-image lines and summary. Exit code "
          "1 if any image differs from the integer reference.",
          opts, pos, vm)) {
    return 0;
  }
  if (files.empty()) throw tpusim::UsageError("expected the shard JSON files (SHARD.json...)");
  {
    tpu::RunPaths paths;
    for (const auto& f : files) paths.input("", f);
    tpusim::add_cnn_report_outputs(paths, report_dir);
    paths.check();
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> texts;
  for (const auto& f : files) texts.push_back(tpusim::read_text_file(f));
  // The wall time of the run: the longest shard's (they ran side by side) plus this merge.
  double longest = 0;
  std::string format;
  for (size_t i = 0; i < texts.size(); ++i) {
    const tpusim::JsonValue v = tpusim::parse_json(texts[i], files[i]);
    if (v.type == tpusim::JsonValue::Type::Object && v.has("wall_seconds"))
      longest = std::max(longest, v.at("wall_seconds").number());
    if (i == 0 && v.type == tpusim::JsonValue::Type::Object && v.has("format") &&
        v.at("format").type == tpusim::JsonValue::Type::String)
      format = v.at("format").str();
  }
  auto elapsed = [&] {
    return longest + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  if (format.rfind("tpusim run-topology shard", 0) == 0) {
    if (!report_dir.empty() || quiet)
      throw tpusim::UsageError("--report and --quiet are for run-cnn shards; " + files[0] +
                               " is a run-topology shard");
    return tpusim::print_merged_topology(texts, files, json, elapsed());
  }
  if (format.rfind("tpusim run-onnx shard", 0) == 0) {
    if (!report_dir.empty() || quiet)
      throw tpusim::UsageError("--report and --quiet are for run-cnn shards; " + files[0] +
                               " is a run-onnx shard");
    return tpusim::print_merged_onnx(texts, files, json, elapsed());
  }
  tpusim::CnnReportFiles report;
  if (!report_dir.empty()) report = tpusim::prepare_cnn_report_dir(report_dir);
  tpusim::MergedCnn m = tpusim::merge_cnn_shards(texts, files);
  m.e.wall_seconds = elapsed();
  tpusim::print_merged_cnn(m, json, quiet, report);
  return m.exit_code;
}

}  // namespace

TPUSIM_SUBCOMMAND("merge",
                  "the shard JSON files of a run-cnn / run-onnx / run-topology --shard I/K run",
                  run_merge);

#endif  // __has_include("evaluate.h")
