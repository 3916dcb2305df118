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
#include <sstream>

#include "evaluate.h"
#include "tensor_io.h"
#include "tensor_run.h"
#include "tpusim.h"

namespace {

namespace fs = std::filesystem;
using tpu::cnn::Tensor;
using tpu::cnn::TensorModel;

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string jshape(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

// Calibration images: a tensor file (a batch), or every .npy / .pb file of a directory (sorted).
std::vector<std::vector<float>> load_calibration(const TensorModel& m, const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
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
    const auto imgs = m.images(tpu::cnn::load_tensor(f), "--calibration " + f);
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
    inputs[name] = tpu::cnn::load_tensor(file);
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
  for (const auto& t : tries) {
    const fs::path p = fs::path(dir) / t;
    if (fs::exists(p, ec)) return tpu::cnn::load_tensor(p.string());
  }
  throw std::runtime_error("--expect " + dir + ": no expected tensor for output '" + name +
                           "' (looked for " + tries[0] + ", " + tries[1] + " and " + tries[2] +
                           ")");
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

std::string output_json(const SetResult& r, size_t k) {
  const Tensor& t = r.run.outputs[k];
  const tpu::cnn::OutputCheck* c =
      k < r.checks.size() && r.checks[k].compared ? &r.checks[k] : nullptr;
  std::ostringstream j;
  j << "{\"name\": " << tpu::cnn::json_string(t.name) << ", \"shape\": " << jshape(t.shape)
    << ", \"dtype\": \"" << tpu::cnn::dtype_name(t.dtype)
    << "\", \"compared\": " << (c ? "true" : "false")
    << ", \"max_abs_error\": " << (c ? jnum(c->max_abs_error) : "null")
    << ", \"tolerance\": " << jnum(r.run.tolerances[k])
    << ", \"pass\": " << (c ? (c->pass ? "true" : "false") : "null")
    << ", \"mismatches\": " << (c ? std::to_string(c->mismatches) : "null");
  if (c && !c->detail.empty()) j << ", \"detail\": " << tpu::cnn::json_string(c->detail);
  if (k < r.written.size()) j << ", \"file\": " << tpu::cnn::json_string(r.written[k]);
  j << "}";
  return j.str();
}

std::string set_json(const SetResult& r, const std::string& indent) {
  const auto& run = r.run;
  std::ostringstream j;
  if (!r.name.empty()) j << indent << "\"name\": " << tpu::cnn::json_string(r.name) << ",\n";
  j << indent << "\"images\": " << run.images << ",\n";
  if (!r.name.empty())
    j << indent << "\"pass\": " << (r.pass() ? "true" : "false") << ",\n";  // else top level
  j << indent << "\"matches_reference\": " << (run.matches_reference() ? "true" : "false") << ",\n";
  j << indent << "\"mismatched_images\": " << run.mismatched_images << ",\n";
  j << indent << "\"cycles\": " << run.cycles << ",\n";
  j << indent << "\"cycles_per_image\": " << jnum(double(run.cycles) / std::max(1, run.images))
    << ",\n";
  j << indent << "\"cycles_estimated\": " << (run.cycles_estimated ? "true" : "false") << ",\n";
  j << indent << "\"mxu_utilization\": " << jnum(run.mxu_utilization) << ",\n";
  j << indent << "\"runs\": " << run.runs << ",\n";
  j << indent << "\"outputs\": [";
  for (size_t k = 0; k < run.outputs.size(); ++k) j << (k ? ", " : "") << output_json(r, k);
  j << "]";
  return j.str();
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
  tpusim::add_device_options(opts, dev_opts, /*with_vcd=*/true);
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim run-onnx --model M.onnx --input NAME=FILE ... [--output-dir DIR] [--expect DIR] "
          "[--calibration FILE|DIR] [--backend rtl|model] [--batch B] [--json] [--output-format "
          "npy|pb]\n"
          "       tpusim run-onnx --test-dir DIR [--calibration FILE|DIR] [--output-dir DIR] "
          "[--backend rtl|model] [--json]",
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
          "reference or an output fails --expect.",
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

  const auto t0 = std::chrono::steady_clock::now();
  std::FILE* info = json ? stderr : stdout;
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
    if (!calibration.empty()) {
      cal = load_calibration(m, calibration);
      how = m.quantize(cal) + " from --calibration " + calibration;
    } else {
      for (const auto& s : sets) cal.insert(cal.end(), s.images.begin(), s.images.end());
      how = m.quantize(cal) + ": the inputs themselves (no --calibration given)";
    }
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
  std::vector<SetResult> results;
  bool all_pass = true;
  for (const auto& s : sets) {
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
    if (!json) print_set(info, r);
    all_pass = all_pass && r.pass();
    results.push_back(std::move(r));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (json) {
    std::ostringstream j;
    j << "{\n  \"model\": " << tpu::cnn::json_string(model) << ",\n";
    j << "  \"backend\": " << tpu::cnn::json_string(std::string(dev->backend())) << ",\n";
    j << "  \"chip_n\": " << dev->params().N << ",\n";
    j << "  \"batch\": " << batch << ",\n";
    j << "  \"quantization\": " << tpu::cnn::json_string(how) << ",\n";
    j << "  \"tolerance_steps\": " << jnum(steps) << ",\n";
    j << "  \"pass\": " << (all_pass ? "true" : "false") << ",\n";
    if (test_dir.empty()) {
      j << set_json(results[0], "  ") << ",\n";
    } else {
      uint64_t cycles = 0;
      int passed = 0;
      for (const auto& r : results) {
        cycles += r.run.cycles;
        passed += r.pass();
      }
      j << "  \"data_sets\": " << results.size() << ",\n  \"data_sets_passed\": " << passed
        << ",\n";
      j << "  \"cycles\": " << cycles << ",\n  \"results\": [";
      for (size_t i = 0; i < results.size(); ++i)
        j << (i ? ",\n    {\n" : "\n    {\n") << set_json(results[i], "      ") << "\n    }";
      j << "\n  ],\n";
    }
    j << "  \"wall_seconds\": " << jnum(wall) << "\n}\n";
    std::cout << j.str();
  } else {
    if (!test_dir.empty()) {
      int passed = 0;
      for (const auto& r : results) passed += r.pass();
      std::printf("data sets: %d of %zu pass\n", passed, results.size());
    }
    if (output_dir.empty()) std::printf("outputs not written (give --output-dir DIR)\n");
    std::printf("result: %s (wall time %.2f s)\n", all_pass ? "PASS" : "FAIL", wall);
  }
  return all_pass ? 0 : 1;
}

}  // namespace

TPUSIM_SUBCOMMAND("run-onnx",
                  "an ONNX model on input tensors (.npy, .pb) through the chip; outputs as tensors",
                  run_run_onnx);

#endif  // __has_include("tensor_run.h")
