// SPDX-License-Identifier: Apache-2.0
// tpusim run-onnx: an ONNX model on tensors from files (.npy, ONNX TensorProto .pb), through
// the chip; outputs written as tensors and compared with expected ones; or every data set of a
// directory in ONNX's test layout (driver/cnn/tensor_run.h). Built when tpu_cnn is.
#if __has_include("tensor_run.h")

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "cnn_shard.h"
#include "evaluate.h"
#include "interrupt.h"
#include "json_text.h"
#include "sharding.h"
#include "tensor_io.h"
#include "tensor_run.h"
#include "tpusim.h"

namespace {

namespace fs = std::filesystem;
using tpu::cnn::Tensor;
using tpu::cnn::TensorModel;

constexpr int kDigits = 9;  // the JSON's floating-point values: float32 values read back
std::string jnum(double v) { return tpu::json_number(v, kDigits); }

// Calibration images: a tensor file (a batch), or every .npy / .pb file of a directory (sorted).
std::vector<std::vector<float>> load_calibration(const TensorModel& m, const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  if (!fs::exists(path, ec))
    throw std::runtime_error("--calibration " + path +
                             ": no such file or directory (expected a tensor file, .npy or .pb, "
                             "or a directory of them)");
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && tpu::cnn::is_tensor_file(e.path().string()))
        files.push_back(e.path().string());
    if (ec)
      throw std::runtime_error("--calibration " + path + ": cannot list the directory (" +
                               ec.message() + ")");
    std::sort(files.begin(), files.end());
    if (files.empty())
      throw std::runtime_error("--calibration " + path +
                               ": the directory holds no .npy or .pb file (expected tensors "
                               "shaped like the input '" +
                               m.input_spec().name + "' " + m.input_spec().describe() + ")");
  } else {
    files.push_back(path);
  }
  std::vector<std::vector<float>> out;
  for (const auto& f : files) {
    Tensor t;
    try {
      t = tpu::cnn::load_tensor(f);
    } catch (const std::exception& e) {
      throw std::runtime_error("--calibration " + std::string(e.what()));
    }
    const auto imgs = m.images(t, "--calibration " + f);
    out.insert(out.end(), imgs.begin(), imgs.end());
  }
  return out;
}

// --input NAME=FILE (or just FILE for a model with one input); `sources` gets "--input SPEC" per
// name.
std::map<std::string, Tensor> load_inputs(const tpu::cnn::GraphSignature& sig,
                                          const std::vector<std::string>& specs,
                                          std::map<std::string, std::string>* sources) {
  std::map<std::string, Tensor> inputs;
  for (const auto& s : specs) {
    const size_t eq = s.find('=');
    std::string name, file;
    if (eq == std::string::npos) {
      if (sig.inputs.size() != 1)
        throw tpusim::UsageError("--input " + s + ": expected NAME=FILE (the model has " +
                                 std::to_string(sig.inputs.size()) + " inputs)");
      name = sig.inputs[0].name;
      file = s;
    } else {
      name = s.substr(0, eq);
      file = s.substr(eq + 1);
    }
    if (file.empty())
      throw tpusim::UsageError("--input " + s + ": no file after '=' (expected NAME=FILE)");
    if (inputs.count(name))
      throw tpusim::UsageError("--input " + s + ": input '" + name + "' is given twice");
    try {
      inputs[name] = tpu::cnn::load_tensor(file);
    } catch (const std::exception& e) {
      throw std::runtime_error("--input " + s.substr(0, eq == std::string::npos ? 0 : eq + 1) +
                               e.what());
    }
    (*sources)[name] = "--input " + s;
  }
  return inputs;
}

// Graph inputs that are parameters: every given input but the image input (the graph's first)
// is moved out of `inputs` into the returned constants (folded into the graph before import).
std::map<std::string, Tensor> split_constants(const tpu::cnn::GraphSignature& sig,
                                              std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> constants;
  if (sig.inputs.size() < 2) return constants;
  for (auto it = inputs.begin(); it != inputs.end();) {
    const bool graph_input =
        std::any_of(sig.inputs.begin(), sig.inputs.end(),
                    [&](const tpu::cnn::TensorSpec& t) { return t.name == it->first; });
    if (graph_input && it->first != sig.inputs[0].name) {
      constants[it->first] = it->second;
      it = inputs.erase(it);
    } else {
      ++it;
    }
  }
  return constants;
}

// The expected tensor of output `name` (index k) in DIR: NAME.npy, NAME.pb or output_K.pb.
Tensor load_expected(const std::string& dir, const std::string& name, size_t k) {
  const std::vector<std::string> tries = {tpu::cnn::tensor_file_name(name, ".npy"),
                                          tpu::cnn::tensor_file_name(name, ".pb"),
                                          "output_" + std::to_string(k) + ".pb"};
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error("--expect " + dir + ": " +
                             (fs::exists(dir, ec) ? "is not a directory" : "no such directory") +
                             " (expected a directory holding one expected tensor per output: "
                             "NAME.npy, NAME.pb or output_K.pb)");
  for (const auto& t : tries) {
    const fs::path p = fs::path(dir) / t;
    if (fs::exists(p, ec)) {
      try {
        return tpu::cnn::load_tensor(p.string());
      } catch (const std::exception& e) {
        throw std::runtime_error("--expect " + std::string(e.what()));
      }
    }
  }
  throw std::runtime_error("--expect " + dir + ": no expected tensor for output '" + name +
                           "' (looked for " + tries[0] + ", " + tries[1] + " and " + tries[2] +
                           ")");
}

// The model and the test directory, named by their options when missing or of the wrong kind.
void check_model_path(const std::string& model, const std::string& test_dir) {
  std::error_code ec;
  if (!test_dir.empty() && !fs::is_directory(test_dir, ec))
    throw std::runtime_error("--test-dir " + test_dir + ": " +
                             (fs::exists(test_dir, ec) ? "not a directory" : "no such directory") +
                             " (expected ONNX's test layout: DIR/model.onnx and "
                             "DIR/test_data_set_N/)");
  const std::string option = test_dir.empty() ? "--model " : "--test-dir " + test_dir + ": ";
  if (fs::is_directory(model, ec))
    throw std::runtime_error(option + model + ": is a directory (expected an ONNX model file)");
  if (!fs::exists(model, ec))
    throw std::runtime_error(option + model + ": no such file (expected an ONNX model file)");
}

// Every input path of the run, for tpu::RunPaths.
tpu::RunPaths input_paths(const std::string& model, const std::string& test_dir,
                          const std::vector<std::string>& input_specs,
                          const std::string& expect_dir, const std::string& calibration) {
  tpu::RunPaths paths;
  paths.input(test_dir.empty() ? "--model" : "--test-dir", test_dir.empty() ? model : test_dir);
  for (const auto& spec : input_specs) {
    const size_t eq = spec.find('=');
    paths.input("--input", eq == std::string::npos ? spec : spec.substr(eq + 1));
  }
  paths.input("--expect", expect_dir).input("--calibration", calibration);
  return paths;
}

struct SetResult {
  std::string name;  // data set directory name, or "" for --input
  TensorModel::Run run;
  std::vector<tpu::cnn::OutputCheck> checks;
  std::vector<std::string> written;
  bool pass() const {
    if (!run.matches_reference()) return false;
    for (const auto& c : checks)
      if (c.compared && !c.pass) return false;
    return true;
  }
};

nlohmann::ordered_json output_json(const SetResult& r, size_t k) {
  const Tensor& t = r.run.outputs[k];
  const tpu::cnn::OutputCheck* c =
      k < r.checks.size() && r.checks[k].compared ? &r.checks[k] : nullptr;
  const nlohmann::ordered_json null;
  nlohmann::ordered_json j = {
      {"name", t.name},
      {"shape", t.shape},
      {"dtype", tpu::cnn::dtype_name(t.dtype)},
      {"compared", c != nullptr},
      {"max_abs_error", c ? nlohmann::ordered_json(c->max_abs_error) : null},
      {"tolerance", r.run.tolerances[k]},
      {"pass", c ? nlohmann::ordered_json(c->pass) : null},
      {"mismatches", c ? nlohmann::ordered_json(c->mismatches) : null}};
  if (c && !c->detail.empty()) j["detail"] = c->detail;
  if (k < r.written.size()) j["file"] = r.written[k];
  return j;
}

// A data set's lines of the --json object (each `indent` "key": value; floats with 9 digits).
std::string set_json(const SetResult& r, const std::string& indent) {
  const auto& run = r.run;
  nlohmann::ordered_json j;
  if (!r.name.empty()) j["name"] = r.name;
  j["images"] = run.images;
  if (!r.name.empty()) j["pass"] = r.pass();  // else at the top level
  j["matches_reference"] = run.matches_reference();
  j["mismatched_images"] = run.mismatched_images;
  j["cycles"] = run.cycles;
  j["cycles_per_image"] = double(run.cycles) / std::max(1, run.images);
  j["cycles_estimated"] = run.cycles_estimated;
  j["mxu_utilization"] = run.mxu_utilization;
  j["runs"] = run.runs;
  j["outputs"] = nlohmann::ordered_json::array();
  for (size_t k = 0; k < run.outputs.size(); ++k) j["outputs"].push_back(output_json(r, k));
  return tpu::json_members(j, indent, kDigits);
}

void print_set(std::FILE* out, const SetResult& r) {
  const auto& run = r.run;
  const std::string who = r.name.empty() ? "" : r.name + ": ";
  std::fprintf(out,
               "%s%d image%s in %zu run%s of batch %u: %s cycles%s (%.0f per image), MXU "
               "utilization %.1f%%\n",
               who.c_str(), run.images, run.images == 1 ? "" : "s", run.runs,
               run.runs == 1 ? "" : "s", run.batch, std::to_string(run.cycles).c_str(),
               run.cycles_estimated ? " (estimated by the model backend)" : "",
               double(run.cycles) / std::max(1, run.images), 100 * run.mxu_utilization);
  std::fprintf(out, "%sbit-exact with the integer reference: %s (%d of %d images differ)\n",
               who.c_str(), run.matches_reference() ? "yes" : "NO", run.mismatched_images,
               run.images);
  for (size_t k = 0; k < run.outputs.size(); ++k) {
    const Tensor& t = run.outputs[k];
    std::fprintf(out, "%soutput '%s' %s", who.c_str(), t.name.c_str(), t.describe().c_str());
    if (k < r.written.size()) std::fprintf(out, " -> %s", r.written[k].c_str());
    std::fprintf(out, "\n");
    if (k < r.checks.size() && r.checks[k].compared) {
      const auto& c = r.checks[k];
      if (tpu::cnn::dtype_is_float(t.dtype))
        std::fprintf(out, "%s  expected: %s, max abs error %.6g, tolerance %.6g%s%s\n", who.c_str(),
                     c.pass ? "PASS" : "FAIL", c.max_abs_error, c.tolerance,
                     c.detail.empty() ? "" : "; ", c.detail.c_str());
      else
        std::fprintf(out, "%s  expected: %s (exact), max abs error %.6g%s%s\n", who.c_str(),
                     c.pass ? "PASS" : "FAIL", c.max_abs_error, c.detail.empty() ? "" : "; ",
                     c.detail.c_str());
    }
    // Small outputs are printed: one line per image.
    const int64_t per = t.shape.empty() ? 1 : t.numel() / std::max<int64_t>(1, t.shape[0]);
    if (per <= 16 && run.images <= 16) {
      for (int i = 0; i < run.images; ++i) {
        std::fprintf(out, "%s  [%d]", who.c_str(), i);
        for (int64_t v = 0; v < per; ++v) std::fprintf(out, " %.6g", t.value(i * per + v));
        std::fprintf(out, "\n");
      }
    }
  }
}

// What run-onnx prints after its data sets, and the data sets' JSON: from one process, or
// merged from the shards of a sharded run (each shard renders its own data sets).
struct OnnxOutput {
  std::string header;  // a shard's model lines (one process prints them as it goes)
  std::string model, backend, quantization, tolerance_steps;
  uint32_t chip_n = 0, batch = 0;
  bool test_dir = false, outputs_written = false;
  struct SetOut {
    std::string text, json;  // print_set's lines; set_json
    uint64_t cycles = 0;
    bool pass = false;
  };
  std::vector<SetOut> sets;
};

const char* kOnnxShardFormat = "tpusim run-onnx shard 1";

std::string onnx_shard_json(const OnnxOutput& o, const tpu::ShardSpec& shard, size_t sets_total,
                            double wall) {
  nlohmann::ordered_json j = {
      {"format", kOnnxShardFormat},
      {"shard", {{"index", shard.index}, {"count", shard.count}, {"sets_total", sets_total}}},
      {"header", o.header},
      {"model", o.model},
      {"backend", o.backend},
      {"chip_n", o.chip_n},
      {"batch", o.batch},
      {"quantization", o.quantization},
      {"tolerance_steps", o.tolerance_steps},
      {"test_dir", o.test_dir},
      {"outputs_written", o.outputs_written},
      {"wall_seconds", wall},
      {"sets", nlohmann::ordered_json::array()}};
  for (const auto& so : o.sets)
    j["sets"].push_back(
        {{"cycles", so.cycles}, {"pass", so.pass}, {"text", so.text}, {"json", so.json}});
  return tpu::json_document(j, 17, tpu::JsonRows::Compact) + "\n";  // 17 digits: read back
}

OnnxOutput merge_onnx_shards(const std::vector<std::string>& texts,
                             const std::vector<std::string>& names) {
  std::vector<tpusim::JsonValue> parts;
  for (size_t i = 0; i < texts.size(); ++i) {
    tpusim::JsonValue v = tpusim::parse_json(texts[i], names[i]);
    if (v.type != tpusim::JsonValue::Type::Object || !v.has("format") ||
        v.at("format").str() != kOnnxShardFormat)
      throw std::runtime_error(names[i] + ": not a run-onnx shard (expected \"format\": \"" +
                               kOnnxShardFormat + "\", written by tpusim run-onnx --shard I/K)");
    parts.push_back(std::move(v));
  }
  const uint64_t count = parts.front().at("shard").at("count").u64();
  std::vector<int> seen(count, -1);
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& sh = parts[i].at("shard");
    const uint64_t k = sh.at("index").u64();
    if (sh.at("count").u64() != count || k >= count)
      throw std::runtime_error(names[i] + ": shard " + std::to_string(k) + "/" +
                               sh.at("count").text + " is not one of the " + std::to_string(count) +
                               " shards of " + names[0]);
    for (const char* key : {"model", "backend", "quantization"})
      if (parts[i].at(key).str() != parts.front().at(key).str())
        throw std::runtime_error(names[i] + ": a shard of another run (" + key + " " +
                                 parts[i].at(key).str() + ", but " + names[0] + " has " +
                                 parts.front().at(key).str() + ")");
    if (seen[k] >= 0)
      throw std::runtime_error(names[i] + ": shard " + std::to_string(k) + "/" +
                               std::to_string(count) + " is also in " + names[size_t(seen[k])] +
                               " (expected each shard once)");
    seen[k] = int(i);
  }
  OnnxOutput o;
  for (uint64_t k = 0; k < count; ++k) {
    if (seen[k] < 0)
      throw std::runtime_error("merge: shard " + std::to_string(k) + "/" + std::to_string(count) +
                               " is missing (expected all " + std::to_string(count) + " shards)");
    const tpusim::JsonValue& v = parts[size_t(seen[k])];
    if (k == 0) {
      o.header = v.at("header").str();
      o.model = v.at("model").str();
      o.backend = v.at("backend").str();
      o.chip_n = uint32_t(v.at("chip_n").u64());
      o.batch = uint32_t(v.at("batch").u64());
      o.quantization = v.at("quantization").str();
      o.tolerance_steps = v.at("tolerance_steps").str();
      o.test_dir = v.at("test_dir").flag();
      o.outputs_written = v.at("outputs_written").flag();
    }
    for (const auto& sj : v.at("sets").array()) {
      OnnxOutput::SetOut so;
      so.cycles = sj.at("cycles").u64();
      so.pass = sj.at("pass").flag();
      so.text = sj.at("text").str();
      so.json = sj.at("json").str();
      o.sets.push_back(std::move(so));
    }
  }
  const uint64_t total = parts.front().at("shard").at("sets_total").u64();
  if (o.sets.size() != total)
    throw std::runtime_error("merge: the shards hold " + std::to_string(o.sets.size()) +
                             " data sets, expected the run's " + std::to_string(total));
  return o;
}

// The output after the data sets (and, `merged`, the model lines and data sets first).
int print_onnx_output(const OnnxOutput& o, bool json, double wall, bool merged) {
  std::FILE* info = json ? stderr : stdout;
  bool all_pass = true;
  for (const auto& so : o.sets) all_pass = all_pass && so.pass;
  if (merged) {
    std::fputs(o.header.c_str(), info);
    if (!json)
      for (const auto& so : o.sets) std::fputs(so.text.c_str(), info);
    std::fflush(info);
  }
  if (json) {
    // The data sets' lines come rendered (set_json; through the shard files when merged).
    const nlohmann::ordered_json head = {
        {"model", o.model},
        {"backend", o.backend},
        {"chip_n", o.chip_n},
        {"batch", o.batch},
        {"quantization", o.quantization},
        {"tolerance_steps", tpu::parse_json_text(o.tolerance_steps, "tolerance_steps")},
        {"pass", all_pass}};
    std::string j = "{\n" + tpu::json_members(head, "  ", kDigits) + ",\n";
    if (!o.test_dir) {
      j += o.sets.at(0).json + ",\n";
    } else {
      uint64_t cycles = 0;
      int passed = 0;
      for (const auto& so : o.sets) {
        cycles += so.cycles;
        passed += so.pass;
      }
      const nlohmann::ordered_json totals = {
          {"data_sets", o.sets.size()}, {"data_sets_passed", passed}, {"cycles", cycles}};
      j += tpu::json_members(totals, "  ") + ",\n  \"results\": [";
      for (size_t i = 0; i < o.sets.size(); ++i)
        j += (i ? ",\n    {\n" : "\n    {\n") + o.sets[i].json + "\n    }";
      j += "\n  ],\n";
    }
    std::cout << j << tpu::json_members({{"wall_seconds", wall}}, "  ", kDigits) << "\n}\n";
  } else {
    if (o.test_dir) {
      int passed = 0;
      for (const auto& so : o.sets) passed += so.pass;
      std::printf("data sets: %d of %zu pass\n", passed, o.sets.size());
    }
    if (!o.outputs_written) std::printf("outputs not written (give --output-dir DIR)\n");
    std::printf("result: %s (wall time %.2f s)\n", all_pass ? "PASS" : "FAIL", wall);
  }
  return all_pass ? 0 : 1;
}

int run_run_onnx(const tpusim::Args& args) {
  namespace po = tpusim::po;
  std::string model, output_dir, expect_dir, calibration, test_dir, format = "npy", rule = "steps";
  std::vector<std::string> input_specs;
  bool json = false;
  tpusim::DeviceOptions dev_opts;
  po::options_description opts("options");
  opts.add_options()("model", po::value<std::string>(&model), "the ONNX model")(
      "input", po::value<std::vector<std::string>>(&input_specs)->composing(),
      "NAME=FILE: a tensor (.npy or .pb) for graph input NAME; just FILE for a model with one "
      "input. The first "
      "dimension is the batch: every image in it runs")(
      "output-dir", po::value<std::string>(&output_dir),
      "write each output as DIR/<output name>.npy (or .pb); created if missing")(
      "output-format", po::value<std::string>(&format)->default_value("npy"), "npy or pb")(
      "expect", po::value<std::string>(&expect_dir),
      "compare with expected outputs in DIR (<output name>.npy, .pb or output_K.pb): integers "
      "exactly, floats "
      "within --tolerance-steps quantization steps of the output")(
      "tolerance-steps", po::value<std::string>(),
      "float outputs pass within this many output quantization steps (scale): tolerance = steps * "
      "scale "
      "(default: the roundings on the longest path from input to output: the input's and one per "
      "quantized layer)")(
      "tolerance-rule", po::value<std::string>(&rule)->default_value("steps"),
      "steps: float outputs pass within --tolerance-steps output quantization steps; propagated: "
      "within the "
      "bound of the quantization errors of every tensor propagated from the input to the output "
      "(the rule of "
      "scripts/onnx_conformance.sh, for single-op models calibrated on their own inputs; "
      "docs/conformance.md)")("calibration", po::value<std::string>(&calibration),
                              "calibration images for a float model: a tensor file (a batch) or a "
                              "directory of .npy / .pb files "
                              "(default: the inputs themselves)")(
      "batch", po::value<std::string>()->default_value("8"), "images per chip run (1..4095)")(
      "test-dir", po::value<std::string>(&test_dir),
      "a directory in ONNX's test layout (model.onnx, test_data_set_N/input_K.pb and output_K.pb): "
      "runs and "
      "checks every data set")("json", po::bool_switch(&json), "print one JSON object");
  tpusim::add_device_options(opts, dev_opts, /*with_vcd=*/true, tpusim::kDerivedMaxCycles);
  tpusim::add_shard_options(opts);
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim run-onnx --model M.onnx --input NAME=FILE ... [--output-dir DIR] [--expect DIR] "
          "[--calibration FILE|DIR] [--backend rtl|model] [--batch B] [--json] [--output-format "
          "npy|pb]\n"
          "       tpusim run-onnx --test-dir DIR [--calibration FILE|DIR] [--output-dir DIR] "
          "[--backend rtl|model] [--json] [--jobs J | --shard I/K]",
          "Runs an ONNX model on the chip with input tensors from .npy or ONNX TensorProto .pb "
          "files. Inputs are "
          "checked against the graph (name, dtype, shape; the first dimension is the batch). A "
          "float model is "
          "quantized to int8 as run-cnn does it, calibrated on --calibration or on the inputs "
          "themselves; a model "
          "quantized in the file keeps its parameters. Every image also runs through the integer "
          "reference of the "
          "quantized network: the chip must equal it exactly. Outputs are dequantized to float32 "
          "(uint8 / int8 "
          "graph outputs stay integers), named after the graph outputs. Exit code 1 if the chip "
          "differs from the "
          "reference or an output fails --expect. With --test-dir, --jobs J, --shard I/K and "
          "mpirun "
          "/ srun split the data sets across processes with the same output (docs/scaling.md).",
          opts, {}, vm)) {
    return 0;
  }
  const uint32_t batch = uint32_t(tpusim::int_option(vm, "batch", 1, 4095));
  double steps = -1;  // -1: the model's depth
  if (vm.count("tolerance-steps")) {
    const std::string s = vm["tolerance-steps"].as<std::string>();
    size_t used = 0;
    try {
      steps = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || used == 0 || !(steps >= 0) || !std::isfinite(steps))
      throw tpusim::UsageError("--tolerance-steps " + s + " is not a non-negative number");
  }
  if (rule != "steps" && rule != "propagated")
    throw tpusim::UsageError("--tolerance-rule " + rule + ": expected steps or propagated");
  if (format != "npy" && format != "pb")
    throw tpusim::UsageError("--output-format " + format + ": expected npy or pb");
  if (!test_dir.empty()) {
    if (!model.empty() || !input_specs.empty() || !expect_dir.empty())
      throw tpusim::UsageError(
          "--test-dir takes the model, inputs and expected outputs from DIR: drop --model, "
          "--input and --expect");
    model = (fs::path(test_dir) / "model.onnx").string();
  } else {
    if (model.empty()) throw tpusim::UsageError("--model M.onnx is required (or --test-dir DIR)");
    if (input_specs.empty())
      throw tpusim::UsageError("--input NAME=FILE is required (one per graph input)");
  }

  check_model_path(model, test_dir);
  tpusim::ShardPlan plan = tpusim::shard_plan(vm);
  if (plan.mode == tpusim::ShardPlan::Mode::Jobs) {
    uint64_t sets_total = 1;  // --input: one data set
    if (!test_dir.empty()) sets_total = tpu::cnn::read_test_data_sets(test_dir).size();
    tpusim::cap_jobs(plan, sets_total, "data set", "data sets");
  }
  using Mode = tpusim::ShardPlan::Mode;
  if (plan.mode != Mode::Single && !dev_opts.vcd.empty())
    throw tpusim::UsageError(
        "--vcd needs one process (each shard would write the file): drop --jobs / --shard / "
        "mpirun, or --vcd");
  const auto t0 = std::chrono::steady_clock::now();
  if (plan.mode == Mode::Jobs) {  // J copies of this command, --shard i/J each, then merge
    const tpusim::Args base = tpusim::without_options(args, {"--jobs"}, {"--json"});
    std::vector<int> codes;
    const auto outs = tpusim::run_jobs(
        "run-onnx", plan.jobs,
        [&](int i) {
          tpusim::Args a = base;
          a.insert(a.end(), {"--shard", std::to_string(i) + "/" + std::to_string(plan.jobs)});
          return a;
        },
        codes);
    std::vector<std::string> names;
    for (int i = 0; i < plan.jobs; ++i)
      names.push_back("shard " + std::to_string(i) + "/" + std::to_string(plan.jobs));
    return print_onnx_output(
        merge_onnx_shards(outs, names), json,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), true);
  }
  // A shard collects what one process prints (its model lines and data sets) in `info`.
  char* captured = nullptr;
  size_t captured_size = 0;
  std::FILE* info = json ? stderr : stdout;
  if (plan.mode != Mode::Single) info = open_memstream(&captured, &captured_size);
  const tpu::cnn::GraphSignature sig0 = tpu::cnn::read_graph_signature(model);

  // The data sets: one from --input (and --expect), or every test_data_set_N. Given inputs other
  // than the image input (the graph's first) are parameters: folded as constants.
  struct Set {
    std::string name;
    std::map<std::string, Tensor> inputs;
    std::map<std::string, std::string> sources;
    std::vector<std::vector<float>> images;
    std::vector<Tensor> expected;  // by output index; empty = not compared
  };
  std::vector<Set> sets;
  std::map<std::string, Tensor> constants;
  if (test_dir.empty()) {
    Set s;
    s.inputs = load_inputs(sig0, input_specs, &s.sources);
    constants = split_constants(sig0, s.inputs);
    sets.push_back(std::move(s));
  } else {
    for (const auto& d : tpu::cnn::read_test_data_sets(test_dir)) {
      Set s;
      s.name = fs::path(d.dir).filename().string();
      s.inputs = tpu::cnn::name_inputs(sig0, d.inputs, d.dir, &s.sources);
      auto c = split_constants(sig0, s.inputs);
      if (sets.empty()) {
        constants = c;
      } else {
        // One compiled graph for all data sets: the parameters must be the same in each.
        bool same = c.size() == constants.size();
        for (auto a = c.begin(), b = constants.begin(); same && a != c.end(); ++a, ++b)
          same = a->first == b->first && a->second.dtype == b->second.dtype &&
                 a->second.shape == b->second.shape && a->second.data == b->second.data;
        if (!same)
          throw std::runtime_error(
              d.dir + ": the parameter inputs (graph inputs but the first) differ from those of " +
              sets[0].name +
              "; they are folded into one compiled graph, so run the data sets "
              "one at a time");
      }
      if (!d.outputs.empty() && d.outputs.size() != sig0.outputs.size())
        throw std::runtime_error(
            d.dir + ": " + std::to_string(d.outputs.size()) + " output_K.pb files, expected " +
            std::to_string(sig0.outputs.size()) + " (one per graph output, or none)");
      s.expected = d.outputs;
      sets.push_back(std::move(s));
    }
  }
  {  // no output may be an input (docs/tpusim.md "Output files"): checked before anything runs
    tpu::RunPaths paths = input_paths(model, test_dir, input_specs, expect_dir, calibration);
    paths.output("--vcd", dev_opts.vcd);
    if (!output_dir.empty())
      for (const auto& s : sets)
        for (const auto& o : sig0.outputs)
          paths.output_in("--output-dir", (fs::path(output_dir) / s.name).string(),
                          tpu::cnn::tensor_file_name(o.name, "." + format));
    paths.check();
  }
  tpusim::set_activity("loading " + model + " and its inputs");
  TensorModel m(model, constants);
  for (auto& s : sets) s.images = m.images(s.inputs, s.sources);
  if (test_dir.empty() && !expect_dir.empty())
    for (size_t k = 0; k < m.signature().outputs.size(); ++k)
      sets[0].expected.push_back(load_expected(expect_dir, m.signature().outputs[k].name, k));
  if (!constants.empty()) {
    std::string names;
    for (const auto& kv : constants) names += (names.empty() ? "'" : ", '") + kv.first + "'";
    std::fprintf(info,
                 "folded as constants: %s (graph inputs given values; '%s' is the image input)\n",
                 names.c_str(), m.input_spec().name.c_str());
  }

  // Quantization.
  std::string how;
  if (m.needs_calibration()) {
    std::vector<std::vector<float>> cal;
    std::string source;
    if (!calibration.empty()) {
      cal = load_calibration(m, calibration);
      source = "--calibration " + calibration;
    } else {
      for (const auto& s : sets) cal.insert(cal.end(), s.images.begin(), s.images.end());
      source = test_dir.empty() ? "the inputs (--input " + input_specs.at(0) + ")"
                                : "the inputs of --test-dir " + test_dir;
    }
    try {
      how = m.quantize(cal);
    } catch (const std::exception& e) {
      throw std::runtime_error(model + ", calibrated on " + source + ": " + e.what());
    }
    how += calibration.empty() ? ": the inputs themselves (no --calibration given)"
                               : " from --calibration " + calibration;
  } else {
    how = m.quantize({});
    if (!calibration.empty()) how += " (--calibration not needed, ignored)";
  }
  const auto& q = m.quantized();
  const bool steps_default = steps < 0;
  if (steps_default) steps = m.default_tolerance_steps();
  std::fprintf(info, "model: %s, %zu layers, input '%s' %s, output '%s' %s\n", model.c_str(),
               q.layers.size(), m.input_spec().name.c_str(), m.input_spec().describe().c_str(),
               m.output_spec().name.c_str(), m.output_spec().describe().c_str());
  if (rule == "propagated")
    std::fprintf(info,
                 "quantization: %s; output %s (float tolerance: the propagated quantization error "
                 "bound, %.6g)\n",
                 how.c_str(), q.output_q().str().c_str(),
                 tpu::cnn::propagated_tolerance(q, !tpu::cnn::dtype_is_float(m.input_dtype())));
  else
    std::fprintf(info, "quantization: %s; output %s (float tolerance %g steps%s = %.6g%s)\n",
                 how.c_str(), q.output_q().str().c_str(), steps,
                 steps_default ? ", one per quantized layer on the longest path" : "",
                 tpu::cnn::float_tolerance(q.output_q(), steps, q.host_softmax),
                 q.host_softmax.empty()        ? ""
                 : q.host_softmax == "Softmax" ? ", halved after the host's Softmax"
                                               : ", doubled after the host's LogSoftmax");
  if (!output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(output_dir, ec);
    if (ec || !fs::is_directory(output_dir, ec))
      throw std::runtime_error("--output-dir " + output_dir + ": cannot create the directory (" +
                               (ec ? ec.message() : std::string("exists and is not a directory")) +
                               "); expected a writable directory");
  }

  auto dev = tpusim::open_device(dev_opts, vm);
  OnnxOutput out;
  if (plan.mode != Mode::Single) {
    std::fflush(info);
    out.header.assign(captured, captured_size);
  }
  out.model = model;
  out.backend = std::string(dev->backend());
  out.chip_n = dev->params().N;
  out.batch = batch;
  out.quantization = how;
  out.tolerance_steps = jnum(steps);
  out.test_dir = !test_dir.empty();
  out.outputs_written = !output_dir.empty();
  const tpu::ShardSpec shard = plan.mode == Mode::Single ? tpu::ShardSpec{} : plan.shard;
  const tpu::ShardRange range = tpu::shard_range(sets.size(), shard);
  tpusim::set_activity("running " + std::to_string(range.end - range.begin) + " data set" +
                       (range.end - range.begin == 1 ? "" : "s") + " of " + model + " on the " +
                       dev_opts.backend + " backend");
  tpusim::set_progress(0, range.end - range.begin, "data sets");
  for (size_t si = range.begin; si < range.end; ++si) {
    const Set& s = sets[si];
    // Every data set starts from an empty arena: its buffers get the same host addresses (and
    // so the same DMA timing) whichever data sets ran before it in this process, which makes
    // the cycle counts of a sharded run those of one process.
    dev->release_all();
    SetResult r;
    r.name = s.name;
    r.run =
        m.run(*dev, s.images, batch, steps, dev_opts.max_cycles_given ? dev_opts.max_cycles : 0);
    if (rule == "propagated")
      for (auto& t : r.run.tolerances)
        if (t > 0)
          t = tpu::cnn::propagated_tolerance(q, !tpu::cnn::dtype_is_float(m.input_dtype()));
    for (size_t k = 0; k < r.run.outputs.size(); ++k) {
      // s.expected is indexed like the graph's outputs.
      const auto& outs = m.signature().outputs;
      const size_t g = size_t(std::find_if(outs.begin(), outs.end(),
                                           [&](const tpu::cnn::TensorSpec& o) {
                                             return o.name == r.run.outputs[k].name;
                                           }) -
                              outs.begin());
      if (g < s.expected.size()) {
        r.checks.push_back(
            tpu::cnn::compare_tensors(r.run.outputs[k], s.expected[g], r.run.tolerances[k]));
      } else {
        r.checks.emplace_back();
      }
      if (!output_dir.empty()) {
        fs::path dir(output_dir);
        if (!s.name.empty()) {
          dir /= s.name;
          std::error_code ec;
          fs::create_directories(dir, ec);
          if (ec)
            throw std::runtime_error("--output-dir " + dir.string() +
                                     ": cannot create the directory (" + ec.message() + ")");
        }
        const std::string path =
            (dir / tpu::cnn::tensor_file_name(r.run.outputs[k].name, "." + format)).string();
        tpu::cnn::save_tensor(path, r.run.outputs[k]);
        r.written.push_back(path);
      }
    }
    OnnxOutput::SetOut so;
    so.cycles = r.run.cycles;
    so.pass = r.pass();
    so.json = set_json(r, test_dir.empty() ? "  " : "      ");
    if (plan.mode == Mode::Single) {
      if (!json) print_set(info, r);
    } else {
      std::fflush(info);
      const size_t before = captured_size;
      print_set(info, r);
      std::fflush(info);
      so.text.assign(captured + before, captured_size - before);
    }
    out.sets.push_back(std::move(so));
    tpusim::set_progress(si + 1 - range.begin, range.end - range.begin, "data sets");
  }
  tpusim::finish_device(dev_opts, dev);  // puts the --vcd file in place
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (plan.mode != Mode::Single) {
    std::fclose(info);
    std::free(captured);
    const std::string shard_json = onnx_shard_json(out, shard, sets.size(), wall);
    if (plan.mode == Mode::Shard) {
      std::cout << shard_json;
      bool pass = true;
      for (const auto& so : out.sets) pass = pass && so.pass;
      return pass ? 0 : 1;
    }
    const auto all = tpusim::mpi_gather(shard_json);
    if (!plan.merges()) return 0;  // rank 0 reports
    std::vector<std::string> names;
    for (uint32_t k = 0; k < shard.count; ++k) names.push_back("MPI rank " + std::to_string(k));
    return print_onnx_output(
        merge_onnx_shards(all, names), json,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), true);
  }
  return print_onnx_output(out, json, wall, false);
}

}  // namespace

namespace tpusim {
int print_merged_onnx(const std::vector<std::string>& texts, const std::vector<std::string>& names,
                      bool json, double wall) {
  return print_onnx_output(merge_onnx_shards(texts, names), json, wall, true);
}
}  // namespace tpusim

TPUSIM_SUBCOMMAND("run-onnx",
                  "an ONNX model on input tensors (.npy, .pb) through the chip; outputs as tensors",
                  run_run_onnx);

#endif  // __has_include("tensor_run.h")
