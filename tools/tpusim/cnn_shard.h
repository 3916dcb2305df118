// SPDX-License-Identifier: Apache-2.0
// run-cnn's output and its shard JSON (sharding.h): the per-image lines, the summary, and an
// Evaluation written exactly enough that merging the shards of a run gives the Evaluation and
// the output of one process (only wall-time figures differ). Used by cmd_run_cnn.cpp and
// cmd_merge.cpp. Built when tpu_cnn is.
#pragma once
#if __has_include("evaluate.h")

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "evaluate.h"
#include "output_file.h"
#include "shard.h"
#include "sharding.h"

namespace tpusim {

// Readers of the energy figures a shard carries (driver/energy.h's JSON): throw
// std::runtime_error naming the file and place.
tpu::ActionCounts actions_of(const JsonValue& v);
tpu::EnergyTable energy_table_of(const JsonValue& table_values);
tpu::MemorySizes memories_of(const JsonValue& memory_bytes);
// --energy-table FILE (empty: the built-in table); UsageError naming the option and the key.
tpu::EnergyTable energy_table_option(const std::string& path);

// --report DIR: creates DIR if missing (before the chip runs for minutes) and opens its three
// files as tpu::OutputFile (temporaries in DIR, renamed when the report is complete). Throws
// std::runtime_error naming the option, the path and the reason.
struct CnnReportFiles {
  std::unique_ptr<tpu::OutputFile> svg, energy, html, json;
};
CnnReportFiles prepare_cnn_report_dir(const std::string& dir);
// The three files of --report DIR, as outputs of `paths` (checked before anything runs).
void add_cnn_report_outputs(tpu::RunPaths& paths, const std::string& dir);
// Writes and commits the three files (nothing if `r` is empty).
void write_cnn_report(CnnReportFiles& r, const tpu::cnn::Evaluation& e);
// "report: A, B, C" when `r` is open.
void print_report_paths(std::FILE* info, const CnnReportFiles& r);

// What the printed lines need besides the Evaluation.
struct CnnPresentation {
  std::vector<std::string> class_names;
  int top_k = 0;
  double output_scale = 1;
  int32_t output_zero_point = 0;
  int display_offset = 0;          // added to an image's index in its line (folder datasets)
  std::vector<std::string> files;  // per image of the run (folder datasets), else empty
  std::string header;              // the model lines printed before the run
  std::string timeline_note;       // the "timeline: ..." line, if a timeline was written
};

std::string cnn_class_name(const CnnPresentation& p, int c);
void print_cnn_image_line(std::FILE* f, const tpu::cnn::ImageResult& r, const CnnPresentation& p);
void print_cnn_summary(const tpu::cnn::Evaluation& e);  // on stdout

// This shard's part of a run of `images_total` images from `offset_total` (batches of
// e.batch). `e` holds the shard's images (e.images == 0 for a shard without batches).
std::string cnn_shard_json(const tpu::cnn::Evaluation& e, const CnnPresentation& p,
                           const tpu::ShardSpec& shard, int images_total, int offset_total,
                           uint32_t batch);

struct MergedCnn {
  tpu::cnn::Evaluation e;
  CnnPresentation p;
  int exit_code = 0;  // 1 if an image differs from the reference
};
// Merges the shard JSON texts of one run (`names[i]` names texts[i] in errors). Throws
// std::runtime_error for a text that is not a shard, shards of different runs, a missing or
// repeated shard. The wall-time fields are left for the caller.
MergedCnn merge_cnn_shards(const std::vector<std::string>& texts,
                           const std::vector<std::string>& names);

// Prints a merged run as one process prints it: the model lines, the per-image lines (unless
// `quiet`), the report files, the JSON object or the summary, the report and timeline lines
// (with `json`, everything but the object goes to stderr).
void print_merged_cnn(const MergedCnn& m, bool json, bool quiet, CnnReportFiles& report);

// run-topology's shards (cmd_run_topology.cpp, "format": "tpusim run-topology shard 1"): the
// same; `wall` is the run's wall time.
int print_merged_topology(const std::vector<std::string>& texts,
                          const std::vector<std::string>& names, bool json, double wall);

// run-onnx's shards (cmd_run_onnx.cpp): merges and prints as one process; returns the exit code.
int print_merged_onnx(const std::vector<std::string>& texts, const std::vector<std::string>& names,
                      bool json, double wall);

}  // namespace tpusim

#endif
