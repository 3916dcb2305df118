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
#include "energy.h"
#include "evaluate.h"
#include "interrupt.h"
#include "json_text.h"
#include "runner.h"
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

// The energy of a data set's run (docs/energy.md): the actions of every program it ran, in
// total, per layer of the quantized network and of instructions of no layer.
struct SetEnergy {
  tpu::ActionCounts actions, other;
  std::vector<tpu::ActionCounts> layers;
  std::vector<std::string> layer_names;
  tpu::MemorySizes memories;
  const tpu::EnergyTable* table = nullptr;
};

struct SetResult {
  std::string name;  // data set directory name, or "" for --input
  TensorModel::Run run;
  SetEnergy energy;
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

// The actions of the programs TensorModel::run ran for `images` images, `batch` per program
// (the same programs: compiled again here, addresses aside they are the run's).
SetEnergy count_set_energy(tpu::Device& dev, const TensorModel& m, int images, uint32_t batch,
                           const tpu::EnergyTable& table) {
  const auto& q = m.quantized();
  SetEnergy e;
  e.table = &table;
  e.memories = tpu::memory_sizes(dev.params());
  e.layers.resize(q.layers.size());
  for (const auto& l : q.layers) e.layer_names.push_back(l.name);
  tpu::cnn::ChipRunner runner(dev, q, batch);
  for (int i0 = 0; i0 < images; i0 += int(batch)) {
    const auto& p = runner.program(uint32_t(std::min<int>(int(batch), images - i0)));
    for (size_t i = 0; i < p.instructions.size(); ++i) {
      const tpu::ActionCounts c = tpu::count_actions(p.instructions[i], dev.params());
      e.actions += c;
      const int layer = i < p.instr_layer.size() ? p.instr_layer[i] : -1;
      (layer >= 0 && size_t(layer) < e.layers.size() ? e.layers[size_t(layer)] : e.other) += c;
    }
  }
  return e;
}

// A data set's "energy" (the keys of run-cnn's, docs/energy.md).
nlohmann::ordered_json set_energy_json(const SetResult& r) {
  const SetEnergy& e = r.energy;
  const double n = std::max(1, r.run.images);
  nlohmann::ordered_json j =
      tpu::energy_json(e.actions, e.memories, *e.table, n, double(r.run.macs_per_image) * n,
                       r.run.cycles, r.run.cycles_estimated);
  auto components = [&](const tpu::Energy& en) {
    nlohmann::ordered_json c = nlohmann::ordered_json::object();
    for (const auto& [name, pj] : en.components) c[name] = pj / n;
    return c;
  };
  j["layers"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < e.layers.size(); ++i) {
    const tpu::Energy le = tpu::energy_of(e.layers[i], e.memories, *e.table);
    j["layers"].push_back({{"name", e.layer_names[i]},
                           {"pj_per_image", le.total_pj() / n},
                           {"components_pj_per_image", components(le)},
                           {"actions", tpu::actions_json(e.layers[i])}});
  }
  j["other_pj_per_image"] = tpu::energy_of(e.other, e.memories, *e.table).total_pj() / n;
  j["other_actions"] = tpu::actions_json(e.other);
  return j;
}

// A data set's object of the --json document (its members at the top level, or one element of
// "results" with --test-dir).
nlohmann::ordered_json set_json(const SetResult& r) {
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
  j["energy"] = set_energy_json(r);
  return j;
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
    std::string text;             // print_set's lines
    nlohmann::ordered_json json;  // set_json
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
        // (the set's object as one line of JSON text: its doubles as nlohmann-json writes
        // them, shortest to read back exactly)
        {{"cycles", so.cycles}, {"pass", so.pass}, {"text", so.text}, {"json", so.json.dump()}});
  return tpu::json_document(j, 17, tpu::JsonRows::Compact) + "\n";  // 17 digits: read back
}

OnnxOutput merge_onnx_shards(const std::vector<std::string>& texts,
                             const std::vector<std::string>& names) {
  const tpusim::ShardSet set = tpusim::read_shards(texts, names, kOnnxShardFormat, "run-onnx",
                                                   {"model", "backend", "quantization"});
  const tpusim::JsonValue& v0 = set.parts.front();
  OnnxOutput o;
  o.header = v0.at("header").str();
  o.model = v0.at("model").str();
  o.backend = v0.at("backend").str();
  o.chip_n = uint32_t(v0.at("chip_n").u64());
  o.batch = uint32_t(v0.at("batch").u64());
  o.quantization = v0.at("quantization").str();
  o.tolerance_steps = v0.at("tolerance_steps").str();
  o.test_dir = v0.at("test_dir").flag();
  o.outputs_written = v0.at("outputs_written").flag();
  for (const auto& v : set.parts) {
    for (const auto& sj : v.at("sets").array()) {
      OnnxOutput::SetOut so;
      so.cycles = sj.at("cycles").u64();
      so.pass = sj.at("pass").flag();
      so.text = sj.at("text").str();
      so.json = tpu::parse_json_text(sj.at("json").str(), sj.at("json").where, "a data set");
      o.sets.push_back(std::move(so));
    }
  }
  const uint64_t total = v0.at("shard").at("sets_total").u64();
  if (o.sets.size() != total)
    throw std::runtime_error("merge: the shards hold " + std::to_string(o.sets.size()) +
                             " data sets, expected the run's " + std::to_string(total));
  return o;
}

// The --json document: the run, then the one data set's members, or with --test-dir the totals
// and "results", one object per data set; wall_seconds last.
nlohmann::ordered_json onnx_json(const OnnxOutput& o, bool all_pass, double wall) {
  nlohmann::ordered_json j = {
      {"model", o.model},
      {"backend", o.backend},
      {"chip_n", o.chip_n},
      {"batch", o.batch},
      {"quantization", o.quantization},
      {"tolerance_steps", tpu::parse_json_text(o.tolerance_steps, "tolerance_steps")},
      {"pass", all_pass}};
  if (!o.test_dir) {
    j.update(o.sets.at(0).json);
  } else {
    uint64_t cycles = 0;
    int passed = 0;
    for (const auto& so : o.sets) {
      cycles += so.cycles;
      passed += so.pass;
    }
    j["data_sets"] = o.sets.size();
    j["data_sets_passed"] = passed;
    j["cycles"] = cycles;
    j["results"] = nlohmann::ordered_json::array();
    for (const auto& so : o.sets) j["results"].push_back(so.json);
  }
  j["wall_seconds"] = wall;
  return j;
}

// The --json document as printed: one member per line, each element of "results" an object of
// one member per line; every other value on one line, floats with 9 digits.
std::string onnx_json_document(const nlohmann::ordered_json& j) {
  std::string out;
  for (const auto& m : j.items()) {
    out += out.empty() ? "{\n" : ",\n";
    if (m.key() != "results") {
      out += tpu::json_members({{m.key(), m.value()}}, "  ", kDigits);
      continue;
    }
    std::string rows;
    for (const auto& set : m.value())
      rows += (rows.empty() ? "\n    {\n" : ",\n    {\n") +
              tpu::json_members(set, "      ", kDigits) + "\n    }";
    out += "  \"results\": [" + rows + "\n  ]";
  }
  return out + "\n}";
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
    std::cout << onnx_json_document(onnx_json(o, all_pass, wall)) << "\n";
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

// run-onnx's options, read and checked.
struct OnnxOptions {
  std::string model, output_dir, expect_dir, calibration, test_dir, format = "npy", rule = "steps";
  std::string energy_table_file;  // --energy-table (empty: the built-in table)
  tpu::EnergyTable energy_table;
  std::vector<std::string> input_specs;
  bool json = false;
  uint32_t batch = 8;
  double steps = -1;  // --tolerance-steps; -1: the model's depth
  tpusim::DeviceOptions dev;
};

// Reads the options; false for --help. Throws UsageError for bad or missing ones.
bool parse_onnx_options(const tpusim::Args& args, OnnxOptions& o, tpusim::po::variables_map& vm) {
  namespace po = tpusim::po;
  po::options_description opts("options");
  opts.add_options()("model", po::value<std::string>(&o.model), "the ONNX model")(
      "input", po::value<std::vector<std::string>>(&o.input_specs)->composing(),
      "NAME=FILE: a tensor (.npy or .pb) for graph input NAME; just FILE for a model with one "
      "input. The first "
      "dimension is the batch: every image in it runs")(
      "output-dir", po::value<std::string>(&o.output_dir),
      "write each output as DIR/<output name>.npy (or .pb); created if missing")(
      "output-format", po::value<std::string>(&o.format)->default_value("npy"), "npy or pb")(
      "expect", po::value<std::string>(&o.expect_dir),
      "compare with expected outputs in DIR (<output name>.npy, .pb or output_K.pb): integers "
      "exactly, floats "
      "within --tolerance-steps quantization steps of the output")(
      "tolerance-steps", po::value<std::string>(),
      "float outputs pass within this many output quantization steps (scale): tolerance = steps * "
      "scale "
      "(default: the roundings on the longest path from input to output: the input's and one per "
      "quantized layer)")(
      "tolerance-rule", po::value<std::string>(&o.rule)->default_value("steps"),
      "steps: float outputs pass within --tolerance-steps output quantization steps; propagated: "
      "within the "
      "bound of the quantization errors of every tensor propagated from the input to the output "
      "(the rule of "
      "scripts/onnx_conformance.sh, for single-op models calibrated on their own inputs; "
      "docs/conformance.md)")("calibration", po::value<std::string>(&o.calibration),
                              "calibration images for a float model: a tensor file (a batch) or a "
                              "directory of .npy / .pb files "
                              "(default: the inputs themselves)")(
      "batch", po::value<std::string>()->default_value("8"), "images per chip run (1..4095)")(
      "test-dir", po::value<std::string>(&o.test_dir),
      "a directory in ONNX's test layout (model.onnx, test_data_set_N/input_K.pb and output_K.pb): "
      "runs and "
      "checks every data set")("json", po::bool_switch(&o.json), "print one JSON object")(
      "energy-table", po::value<std::string>(&o.energy_table_file),
      "energy per action for the JSON's \"energy\" (docs/energy.md; default: the built-in "
      "energy/horowitz_45nm.json)");
  tpusim::add_device_options(opts, o.dev, /*with_vcd=*/true, tpusim::kDerivedMaxCycles);
  tpusim::add_dw_option(opts);
  tpusim::add_shard_options(opts);
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
    return false;
  }
  o.batch = uint32_t(tpusim::int_option(vm, "batch", 1, 4095));
  if (vm.count("tolerance-steps")) {
    const std::string s = vm["tolerance-steps"].as<std::string>();
    size_t used = 0;
    try {
      o.steps = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || used == 0 || !(o.steps >= 0) || !std::isfinite(o.steps))
      throw tpusim::UsageError("--tolerance-steps " + s + " is not a non-negative number");
  }
  if (o.rule != "steps" && o.rule != "propagated")
    throw tpusim::UsageError("--tolerance-rule " + o.rule + ": expected steps or propagated");
  if (o.format != "npy" && o.format != "pb")
    throw tpusim::UsageError("--output-format " + o.format + ": expected npy or pb");
  o.energy_table = tpusim::energy_table_option(o.energy_table_file);
  if (!o.test_dir.empty()) {
    if (!o.model.empty() || !o.input_specs.empty() || !o.expect_dir.empty())
      throw tpusim::UsageError(
          "--test-dir takes the model, inputs and expected outputs from DIR: drop --model, "
          "--input and --expect");
    o.model = (fs::path(o.test_dir) / "model.onnx").string();
  } else {
    if (o.model.empty()) throw tpusim::UsageError("--model M.onnx is required (or --test-dir DIR)");
    if (o.input_specs.empty())
      throw tpusim::UsageError("--input NAME=FILE is required (one per graph input)");
  }
  return true;
}

// A data set: its inputs, images and expected outputs.
struct Set {
  std::string name;
  std::map<std::string, Tensor> inputs;
  std::map<std::string, std::string> sources;
  std::vector<std::vector<float>> images;
  std::vector<Tensor> expected;  // by output index; empty = not compared
};

// The data sets: one from --input (and --expect), or every test_data_set_N. Given inputs other
// than the image input (the graph's first) are parameters: moved to `constants`.
std::vector<Set> read_sets(const OnnxOptions& o, const tpu::cnn::GraphSignature& sig,
                           std::map<std::string, Tensor>& constants) {
  std::vector<Set> sets;
  if (o.test_dir.empty()) {
    Set s;
    s.inputs = load_inputs(sig, o.input_specs, &s.sources);
    constants = split_constants(sig, s.inputs);
    sets.push_back(std::move(s));
    return sets;
  }
  for (const auto& d : tpu::cnn::read_test_data_sets(o.test_dir)) {
    Set s;
    s.name = fs::path(d.dir).filename().string();
    s.inputs = tpu::cnn::name_inputs(sig, d.inputs, d.dir, &s.sources);
    auto c = split_constants(sig, s.inputs);
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
    if (!d.outputs.empty() && d.outputs.size() != sig.outputs.size())
      throw std::runtime_error(
          d.dir + ": " + std::to_string(d.outputs.size()) + " output_K.pb files, expected " +
          std::to_string(sig.outputs.size()) + " (one per graph output, or none)");
    s.expected = d.outputs;
    sets.push_back(std::move(s));
  }
  return sets;
}

// No output may be an input (docs/tpusim.md "Output files"): checked before anything runs.
void check_paths(const OnnxOptions& o, const tpu::cnn::GraphSignature& sig,
                 const std::vector<Set>& sets) {
  tpu::RunPaths paths =
      input_paths(o.model, o.test_dir, o.input_specs, o.expect_dir, o.calibration);
  paths.input("--energy-table", o.energy_table_file);
  paths.output("--vcd", o.dev.vcd);
  if (!o.output_dir.empty())
    for (const auto& s : sets)
      for (const auto& out : sig.outputs)
        paths.output_in("--output-dir", (fs::path(o.output_dir) / s.name).string(),
                        tpu::cnn::tensor_file_name(out.name, "." + o.format));
  paths.check();
}

// Quantizes `m` (calibrated on --calibration or the data sets' images); returns how.
std::string quantize(TensorModel& m, const OnnxOptions& o, const std::vector<Set>& sets) {
  if (!m.needs_calibration()) {
    std::string how = m.quantize({});
    if (!o.calibration.empty()) how += " (--calibration not needed, ignored)";
    return how;
  }
  std::vector<std::vector<float>> cal;
  std::string source;
  if (!o.calibration.empty()) {
    cal = load_calibration(m, o.calibration);
    source = "--calibration " + o.calibration;
  } else {
    for (const auto& s : sets) cal.insert(cal.end(), s.images.begin(), s.images.end());
    source = o.test_dir.empty() ? "the inputs (--input " + o.input_specs.at(0) + ")"
                                : "the inputs of --test-dir " + o.test_dir;
  }
  std::string how;
  try {
    how = m.quantize(cal);
  } catch (const std::exception& e) {
    throw std::runtime_error(o.model + ", calibrated on " + source + ": " + e.what());
  }
  return how + (o.calibration.empty() ? ": the inputs themselves (no --calibration given)"
                                      : " from --calibration " + o.calibration);
}

// The model and quantization lines.
void print_model_lines(std::FILE* info, const TensorModel& m, const OnnxOptions& o,
                       const std::string& how, double steps, bool steps_default) {
  const auto& q = m.quantized();
  std::fprintf(info, "model: %s, %zu layers, input '%s' %s, output '%s' %s\n", o.model.c_str(),
               q.layers.size(), m.input_spec().name.c_str(), m.input_spec().describe().c_str(),
               m.output_spec().name.c_str(), m.output_spec().describe().c_str());
  if (o.rule == "propagated")
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
}

// Writes output `t` of data set `set` into --output-dir; returns its path.
std::string write_output(const OnnxOptions& o, const std::string& set, const Tensor& t) {
  fs::path dir(o.output_dir);
  if (!set.empty()) {
    dir /= set;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      throw std::runtime_error("--output-dir " + dir.string() + ": cannot create the directory (" +
                               ec.message() + ")");
  }
  const std::string path = (dir / tpu::cnn::tensor_file_name(t.name, "." + o.format)).string();
  tpu::cnn::save_tensor(path, t);
  return path;
}

// One data set on the chip: its outputs compared with the expected ones and written.
SetResult run_set(tpu::Device& dev, const TensorModel& m, const Set& s, const OnnxOptions& o,
                  double steps) {
  // Every data set starts from an empty arena: its buffers get the same host addresses (and
  // so the same DMA timing) whichever data sets ran before it in this process, which makes
  // the cycle counts of a sharded run those of one process.
  dev.release_all();
  SetResult r;
  r.name = s.name;
  r.run = m.run(dev, s.images, o.batch, steps, o.dev.max_cycles_given ? o.dev.max_cycles : 0);
  dev.release_all();
  r.energy = count_set_energy(dev, m, r.run.images, r.run.batch, o.energy_table);
  if (o.rule == "propagated")
    for (auto& t : r.run.tolerances)
      if (t > 0)
        t = tpu::cnn::propagated_tolerance(m.quantized(),
                                           !tpu::cnn::dtype_is_float(m.input_dtype()));
  const auto& outs = m.signature().outputs;
  for (size_t k = 0; k < r.run.outputs.size(); ++k) {
    // s.expected is indexed like the graph's outputs.
    const size_t g = size_t(std::find_if(outs.begin(), outs.end(),
                                         [&](const tpu::cnn::TensorSpec& t) {
                                           return t.name == r.run.outputs[k].name;
                                         }) -
                            outs.begin());
    if (g < s.expected.size())
      r.checks.push_back(
          tpu::cnn::compare_tensors(r.run.outputs[k], s.expected[g], r.run.tolerances[k]));
    else
      r.checks.emplace_back();
    if (!o.output_dir.empty()) r.written.push_back(write_output(o, s.name, r.run.outputs[k]));
  }
  return r;
}

// What a shard prints (its model lines, its data sets' lines), captured for its shard JSON.
class Capture {
 public:
  explicit Capture(bool on) {
    if (on) file_ = open_memstream(&data_, &size_);
  }
  ~Capture() {
    if (file_) std::fclose(file_);
    std::free(data_);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::FILE* file() const { return file_; }
  size_t size() {
    std::fflush(file_);
    return size_;
  }
  std::string from(size_t begin) { return std::string(data_ + begin, size() - begin); }

 private:
  std::FILE* file_ = nullptr;
  char* data_ = nullptr;
  size_t size_ = 0;
};

int run_run_onnx(const tpusim::Args& args) {
  OnnxOptions o;
  tpusim::po::variables_map vm;
  if (!parse_onnx_options(args, o, vm)) return 0;
  check_model_path(o.model, o.test_dir);
  tpusim::ShardPlan plan = tpusim::shard_plan(vm);
  using Mode = tpusim::ShardPlan::Mode;
  if (plan.mode == Mode::Jobs)  // --input: one data set
    tpusim::cap_jobs(plan,
                     o.test_dir.empty() ? 1 : tpu::cnn::read_test_data_sets(o.test_dir).size(),
                     "data set", "data sets");
  if (plan.mode != Mode::Single && !o.dev.vcd.empty())
    throw tpusim::UsageError(
        "--vcd needs one process (each shard would write the file): drop --jobs / --shard / "
        "mpirun, or --vcd");
  const auto t0 = tpusim::Clock::now();
  tpusim::ShardedCommand command;
  command.name = "run-onnx";
  command.args = args;
  command.merge_and_print = [&](const std::vector<std::string>& texts,
                                const std::vector<std::string>& names, double wall) {
    return print_onnx_output(merge_onnx_shards(texts, names), o.json, wall, true);
  };
  if (plan.mode == Mode::Jobs) return tpusim::run_jobs_and_merge(command, plan, t0);
  // A shard collects what one process prints (its model lines and data sets) in `info`.
  Capture captured(plan.mode != Mode::Single);
  std::FILE* info = captured.file() ? captured.file() : o.json ? stderr : stdout;
  const tpu::cnn::GraphSignature sig0 = tpu::cnn::read_graph_signature(o.model);
  std::map<std::string, Tensor> constants;
  std::vector<Set> sets = read_sets(o, sig0, constants);
  check_paths(o, sig0, sets);
  tpusim::set_activity("loading " + o.model + " and its inputs");
  TensorModel m(o.model, constants);
  for (auto& s : sets) s.images = m.images(s.inputs, s.sources);
  if (o.test_dir.empty() && !o.expect_dir.empty())
    for (size_t k = 0; k < m.signature().outputs.size(); ++k)
      sets[0].expected.push_back(load_expected(o.expect_dir, m.signature().outputs[k].name, k));
  if (!constants.empty()) {
    std::string names;
    for (const auto& kv : constants) names += (names.empty() ? "'" : ", '") + kv.first + "'";
    std::fprintf(info,
                 "folded as constants: %s (graph inputs given values; '%s' is the image input)\n",
                 names.c_str(), m.input_spec().name.c_str());
  }
  const std::string how = quantize(m, o, sets);
  const double steps = o.steps < 0 ? m.default_tolerance_steps() : o.steps;
  print_model_lines(info, m, o, how, steps, o.steps < 0);
  if (!o.output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(o.output_dir, ec);
    if (ec || !fs::is_directory(o.output_dir, ec))
      throw std::runtime_error("--output-dir " + o.output_dir + ": cannot create the directory (" +
                               (ec ? ec.message() : std::string("exists and is not a directory")) +
                               "); expected a writable directory");
  }
  auto dev = tpusim::open_device(o.dev, vm);
  OnnxOutput out;
  if (captured.file()) out.header = captured.from(0);
  out.model = o.model;
  out.backend = std::string(dev->backend());
  out.chip_n = dev->params().N;
  out.batch = o.batch;
  out.quantization = how;
  out.tolerance_steps = jnum(steps);
  out.test_dir = !o.test_dir.empty();
  out.outputs_written = !o.output_dir.empty();
  const tpu::ShardSpec shard = plan.mode == Mode::Single ? tpu::ShardSpec{} : plan.shard;
  const tpu::ShardRange range = tpu::shard_range(sets.size(), shard);
  const uint64_t mine = range.end - range.begin;
  tpusim::set_activity("running " + std::to_string(mine) + " data set" + (mine == 1 ? "" : "s") +
                       " of " + o.model + " on the " + o.dev.backend + " backend");
  tpusim::set_progress(0, mine, "data sets");
  for (size_t si = range.begin; si < range.end; ++si) {
    const SetResult r = run_set(*dev, m, sets[si], o, steps);
    OnnxOutput::SetOut so;
    so.cycles = r.run.cycles;
    so.pass = r.pass();
    so.json = set_json(r);
    if (!captured.file()) {
      if (!o.json) print_set(info, r);
    } else {
      const size_t before = captured.size();
      print_set(info, r);
      so.text = captured.from(before);
    }
    out.sets.push_back(std::move(so));
    tpusim::set_progress(si + 1 - range.begin, mine, "data sets");
  }
  tpusim::finish_device(o.dev, dev);  // puts the --vcd file in place
  const double wall = std::chrono::duration<double>(tpusim::Clock::now() - t0).count();
  if (plan.mode == Mode::Single) return print_onnx_output(out, o.json, wall, false);
  bool pass = true;
  for (const auto& so : out.sets) pass = pass && so.pass;
  return tpusim::finish_shard(command, plan, onnx_shard_json(out, shard, sets.size(), wall),
                              pass ? 0 : 1, t0);
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
