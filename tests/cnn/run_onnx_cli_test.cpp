// SPDX-License-Identifier: Apache-2.0
// tpusim run-onnx and run-cnn --dataset as a user runs them: tensors in .npy and .pb files,
// outputs written and compared with expected tensors computed here with the pipeline's C++
// references (the integer reference for exact outputs, the float model for the tolerance), ONNX's
// test layout, input errors, and a folder of PNG images written here with libpng.
#include <gtest/gtest.h>
#include <png.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cnn_models.h"
#include "reference.h"
#include "run_command.h"
#include "temp_dir.h"
#include "tensor_io.h"
#include "tensor_run.h"

namespace {

using namespace cnn_test;
namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
  std::string all() const { return out + err; }
};

Result tpusim(const std::string& args) {
  // One file per process: ctest runs the test cases in parallel processes.
  const std::string err_file =
      test_support::temp_dir() + "/tpusim_stderr_" + std::to_string(getpid()) + ".txt";
  const std::string cmd = std::string(TPUSIM_PATH) + " " + args + " 2>" + err_file;
  const test_support::CommandResult c = test_support::run_command(cmd);
  Result r;
  r.code = c.code;
  r.out = c.out;
  std::ifstream f(err_file);
  std::ostringstream s;
  s << f.rdbuf();
  r.err = s.str();
  return r;
}

std::string tmpdir(const std::string& name) {
  const std::string d = test_support::temp_dir() + "/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Fashion-MNIST test images [first, first + count) as float32 [count, 1, 28, 28].
std::vector<std::vector<float>> fashion_images(int first, int count, bool train = false) {
  const ImageSet set = load_fashion_mnist(fashion_mnist_dir(), train);
  std::vector<std::vector<float>> v;
  for (int i = first; i < first + count; ++i) v.push_back(pixels_to_float(set.image(i), 28 * 28));
  return v;
}

Tensor batch_tensor(const std::vector<std::vector<float>>& images, const std::string& name = "") {
  std::vector<float> all;
  for (const auto& x : images) all.insert(all.end(), x.begin(), x.end());
  return Tensor::from_float({int64_t(images.size()), 1, 28, 28}, all, name);
}

// The float model's outputs (the C++ float reference), [B, 10].
Tensor float_outputs(const Network& net, const std::vector<std::vector<float>>& images) {
  std::vector<float> all;
  for (const auto& x : images) {
    const auto y = float_forward(net, x.data());
    all.insert(all.end(), y.begin(), y.end());
  }
  return Tensor::from_float({int64_t(images.size()), 10}, all, net.output_name);
}

// The quantized network's outputs, dequantized: int_forward of the network quantized as the
// tool says it does (calibrated on `calibration`).
Tensor quantized_outputs(const Network& net, const std::vector<std::vector<float>>& calibration,
                         const std::vector<std::vector<float>>& images) {
  const QuantNetwork q = quantize_model(net, calibration);
  std::vector<float> all;
  for (const auto& x : images) {
    std::vector<int32_t> qi(size_t(q.input.size()));
    q.quantize_input(x.data(), qi.data());
    for (int32_t v : int_forward(q, qi.data()))
      all.push_back(float(double(q.output_q().scale) * (double(v) - q.output_q().zero_point)));
  }
  return Tensor::from_float({int64_t(images.size()), 10}, all, net.output_name);
}

TEST(RunOnnxCli, NpyOnTheChip) {
  const Network net = load_onnx(bundled_model());
  const auto images = fashion_images(100, 6);
  const std::string d = tmpdir("run_onnx_npy");
  save_tensor(d + "/in.npy", batch_tensor(images));
  fs::create_directories(d + "/expect");
  const Tensor expect = quantized_outputs(net, images, images);
  save_tensor(d + "/expect/" + tensor_file_name(net.output_name, ".npy"), expect);
  const Result r =
      tpusim("run-onnx --model " + bundled_model() + " --input " + net.input_name + "=" + d +
             "/in.npy --batch 4 --output-dir " + d + "/out --expect " + d + "/expect --json");
  ASSERT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.err.find("calibrated on 6 images: the inputs themselves (no --calibration given)"),
            std::string::npos)
      << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.at("pass").get<bool>());
  EXPECT_TRUE(j.at("matches_reference").get<bool>());
  EXPECT_EQ(j.at("backend").get<std::string>(), "rtl");
  EXPECT_EQ(j.at("images").get<double>(), 6);
  EXPECT_EQ(j.at("runs").get<double>(), 2);  // 4 + 2
  EXPECT_GT(j.at("cycles").get<double>(), 1000);
  EXPECT_FALSE(j.at("cycles_estimated").get<bool>());
  EXPECT_GT(j.at("mxu_utilization").get<double>(), 0.05);
  const nlohmann::json& o = j.at("outputs").at(0);
  EXPECT_EQ(o.at("name").get<std::string>(), net.output_name);
  EXPECT_EQ(o.at("dtype").get<std::string>(), "float32");
  ASSERT_EQ(o.at("shape").size(), 2u);
  EXPECT_EQ(o.at("shape").at(0).get<double>(), 6);
  EXPECT_EQ(o.at("shape").at(1).get<double>(), 10);
  EXPECT_TRUE(o.at("pass").get<bool>());
  EXPECT_EQ(o.at("max_abs_error").get<double>(), 0);  // the chip equals the integer reference
  EXPECT_GT(o.at("tolerance").get<double>(), 0);
  // The written tensor is exactly the dequantized integer reference.
  const Tensor got = load_tensor(d + "/out/" + tensor_file_name(net.output_name, ".npy"));
  EXPECT_EQ(got.describe(), "float32 [6, 10]");
  EXPECT_EQ(got.data, expect.data);
}

TEST(RunOnnxCli, PbAgainstTheFloatModel) {
  const Network net = load_onnx(bundled_model());
  const auto images = fashion_images(0, 16);
  const std::string d = tmpdir("run_onnx_pb");
  save_tensor(d + "/in.pb", batch_tensor(images, net.input_name));
  fs::create_directories(d + "/expect");
  save_tensor(d + "/expect/output_0.pb", float_outputs(net, images));
  Result r =
      tpusim("run-onnx --backend model --model " + bundled_model() + " --input " + d +
             "/in.pb --output-format pb --output-dir " + d + "/out --expect " + d + "/expect");
  ASSERT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.out.find("expected: PASS, max abs error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result: PASS"), std::string::npos) << r.out;
  const Tensor got = load_tensor(d + "/out/" + tensor_file_name(net.output_name, ".pb"));
  EXPECT_EQ(got.name, net.output_name);
  EXPECT_EQ(got.describe(), "float32 [16, 10]");

  // One value 20 quantization steps off: FAIL, exit 1, the element named.
  const QuantNetwork q = quantize_model(net, images);
  Tensor bad = float_outputs(net, images);
  float v = float(bad.value(13)) + 20 * q.output_q().scale;
  std::memcpy(bad.data.data() + 13 * 4, &v, 4);
  save_tensor(d + "/expect/output_0.pb", bad);
  r = tpusim("run-onnx --backend model --model " + bundled_model() + " --input " + d +
             "/in.pb --expect " + d + "/expect");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.out.find("expected: FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 160 values differ; first at [1, 3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result: FAIL"), std::string::npos) << r.out;
}

// A branching model (main's DAG compiler: residual adds, projections, global average pooling)
// through the same calls, on the chip: the outputs are the dequantized integer reference.
TEST(RunOnnxCli, BranchingModelOnTheChip) {
  GraphBuilder b("small_resnet", {1, 28, 28}, 11);
  std::string x = b.relu(b.bn(b.conv("input", 1, 16, 3, 1, 1, 1, 1, false), 16));
  x = b.maxpool(x, 3, 2, 1);
  x = b.basic_block(x, 16, 16, 1);
  x = b.basic_block(x, 16, 32, 2);
  x = b.op("GlobalAveragePool", {x});
  x = b.op("Flatten", {x});
  const std::string onnx = b.serialize(b.gemm(x, 32, 10));
  const std::string d = tmpdir("run_onnx_resnet");
  std::ofstream(d + "/resnet.onnx", std::ios::binary) << onnx;
  const Network net = import_onnx_bytes(onnx, "resnet");
  const auto images = fashion_images(500, 6);
  save_tensor(d + "/in.npy", batch_tensor(images));
  const Result r = tpusim("run-onnx --model " + d + "/resnet.onnx --input " + d +
                          "/in.npy --batch 4 --output-dir " + d + "/out --json");
  ASSERT_EQ(r.code, 0) << r.all();
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.at("matches_reference").get<bool>());
  EXPECT_EQ(j.at("runs").get<double>(), 2);
  const Tensor got = load_tensor(d + "/out/" + tensor_file_name(net.output_name, ".npy"));
  EXPECT_EQ(got.data, quantized_outputs(net, images, images).data);
}

// ONNX's test layout, a float model calibrated on --calibration (a separate .npy batch).
TEST(RunOnnxCli, TestDirWithCalibration) {
  const Network net = load_onnx(bundled_model());
  const std::string d = tmpdir("run_onnx_testdir");
  fs::copy_file(bundled_model(), d + "/model.onnx");
  const auto cal = fashion_images(0, 64, /*train=*/true);
  save_tensor(d + "/cal.npy", batch_tensor(cal));
  for (int s = 0; s < 3; ++s) {
    const std::string sd = d + "/test_data_set_" + std::to_string(s);
    fs::create_directories(sd);
    const auto images = fashion_images(20 + 4 * s, s + 1);
    save_tensor(sd + "/input_0.pb", batch_tensor(images, net.input_name));
    // Data sets 0 and 1 expect the quantized network's outputs; 2 one value far off.
    Tensor expect = quantized_outputs(net, cal, images);
    if (s == 2) {
      const float v = float(expect.value(0)) + 1.0f;
      std::memcpy(expect.data.data(), &v, 4);
    }
    save_tensor(sd + "/output_0.pb", expect);
  }
  // A data set without expected outputs runs and is not compared.
  fs::create_directories(d + "/test_data_set_3");
  save_tensor(d + "/test_data_set_3/input_0.pb",
              batch_tensor(fashion_images(40, 2), net.input_name));
  const Result r = tpusim("run-onnx --backend model --test-dir " + d + " --calibration " + d +
                          "/cal.npy --json");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("calibrated on 64 images from --calibration"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("pass").get<bool>());
  EXPECT_EQ(j.at("data_sets").get<double>(), 4);
  EXPECT_EQ(j.at("data_sets_passed").get<double>(), 3);
  const auto& res = j.at("results");
  ASSERT_EQ(res.size(), 4u);
  EXPECT_FALSE(res.at(3).at("outputs").at(0).at("compared").get<bool>());
  EXPECT_TRUE(res.at(3).at("pass").get<bool>());
  EXPECT_EQ(res.at(0).at("name").get<std::string>(), "test_data_set_0");
  EXPECT_TRUE(res.at(1).at("pass").get<bool>());
  EXPECT_EQ(res.at(1).at("outputs").at(0).at("max_abs_error").get<double>(), 0);
  EXPECT_FALSE(res.at(2).at("pass").get<bool>());
  EXPECT_TRUE(res.at(2).at("matches_reference").get<bool>());
  EXPECT_EQ(res.at(2).at("outputs").at(0).at("mismatches").get<double>(), 1);
  // The document's schema: its keys in order, one member per line, each data set an object of
  // one member per line.
  auto keys = [](const nlohmann::ordered_json& o) {
    std::vector<std::string> k;
    for (const auto& m : o.items()) k.push_back(m.key());
    return k;
  };
  const auto doc = nlohmann::ordered_json::parse(r.out);
  EXPECT_EQ(keys(doc),
            (std::vector<std::string>{"model", "backend", "chip_n", "batch", "quantization",
                                      "tolerance_steps", "pass", "data_sets", "data_sets_passed",
                                      "cycles", "results", "wall_seconds"}));
  const std::vector<std::string> set_keys = {"name",
                                             "images",
                                             "pass",
                                             "matches_reference",
                                             "mismatched_images",
                                             "cycles",
                                             "cycles_per_image",
                                             "cycles_estimated",
                                             "mxu_utilization",
                                             "runs",
                                             "outputs",
                                             "energy"};
  for (const auto& set : doc.at("results")) EXPECT_EQ(keys(set), set_keys);
  EXPECT_EQ(keys(doc.at("results").at(0).at("outputs").at(0)),
            (std::vector<std::string>{"name", "shape", "dtype", "compared", "max_abs_error",
                                      "tolerance", "pass", "mismatches"}));
  EXPECT_EQ(r.out.rfind("{\n  \"model\": ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(",\n  \"results\": [\n    {\n      \"name\": \"test_data_set_0\",\n      "
                       "\"images\": "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n    },\n    {\n      \"name\": \"test_data_set_1\",\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("}\n    }\n  ],\n  \"wall_seconds\": "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 3), "\n}\n");
}

// --calibration DIR reads every tensor file of the directory: the same images split over two
// files quantize the model as one file holding them all (identical outputs, and those of
// the integer reference calibrated on them).
TEST(RunOnnxCli, CalibrationDirectory) {
  const Network net = load_onnx(bundled_model());
  const std::string d = tmpdir("run_onnx_caldir");
  const auto cal = fashion_images(100, 48, /*train=*/true);
  const auto images = fashion_images(300, 5);
  save_tensor(d + "/in.npy", batch_tensor(images));
  save_tensor(d + "/all.npy", batch_tensor(cal));
  fs::create_directories(d + "/cal");
  save_tensor(d + "/cal/a.npy", batch_tensor({cal.begin(), cal.begin() + 20}));
  save_tensor(d + "/cal/b.pb", batch_tensor({cal.begin() + 20, cal.end()}));
  std::ofstream(d + "/cal/README") << "not a tensor: ignored";
  const std::string base =
      "run-onnx --backend model --model " + bundled_model() + " --input " + d + "/in.npy";
  Result r = tpusim(base + " --calibration " + d + "/cal --output-dir " + d + "/out_dir");
  ASSERT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.out.find("calibrated on 48 images from --calibration " + d + "/cal"),
            std::string::npos)
      << r.out;
  r = tpusim(base + " --calibration " + d + "/all.npy --output-dir " + d + "/out_file");
  ASSERT_EQ(r.code, 0) << r.all();
  const std::string name = tensor_file_name(net.output_name, ".npy");
  const Tensor a = load_tensor(d + "/out_dir/" + name), b = load_tensor(d + "/out_file/" + name);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.data, quantized_outputs(net, cal, images).data);
  fs::create_directories(d + "/empty");
  r = tpusim(base + " --calibration " + d + "/empty");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--calibration " + d + "/empty: the directory holds no .npy or .pb file"),
            std::string::npos)
      << r.err;
}

TEST(RunOnnxCli, InputErrors) {
  const Network net = load_onnx(bundled_model());
  const std::string d = tmpdir("run_onnx_errors");
  save_tensor(d + "/small.npy", Tensor::from_float({2, 1, 14, 14}, std::vector<float>(2 * 196)));
  save_tensor(d + "/f64.npy",
              Tensor::from_int(DType::Float64, {1, 1, 28, 28}, std::vector<int64_t>(784, 0)));
  const std::string base = "run-onnx --backend model --model " + bundled_model();
  Result r = tpusim(base + " --input " + d + "/small.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(
      r.err.find("tpusim run-onnx: error: --input " + d + "/small.npy: input '" + net.input_name +
                 "' has shape [1, 1, 28, 28], but the tensor is float32 [2, 1, 14, 14]; "
                 "expected float32 [1, 1, 28, 28] (any batch in the first dimension)"),
      std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/f64.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("is float32, but the tensor is float64 [1, 1, 28, 28]"), std::string::npos)
      << r.err;
  r = tpusim(base + " --input pixels=" + d + "/small.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(
      r.err.find("input 'pixels': the model " + bundled_model() +
                 " has no such input; its inputs: '" + net.input_name + "' float32 [1, 1, 28, 28]"),
      std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/missing.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--input " + d + "/missing.npy: no such file"), std::string::npos) << r.err;
  r = tpusim(base);
  EXPECT_EQ(r.code, 2) << r.all();
  EXPECT_NE(r.err.find("--input NAME=FILE is required"), std::string::npos) << r.err;
  r = tpusim("run-onnx --test-dir " + d + " --model " + bundled_model());
  EXPECT_EQ(r.code, 2) << r.all();
  r = tpusim("run-onnx --backend model --test-dir " + d);
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--test-dir " + d + ": " + d +
                       "/model.onnx: no such file (expected an "
                       "ONNX model file)"),
            std::string::npos)
      << r.err;
}

// Graph inputs that are parameters (ONNX node tests): given with --input NAME=FILE they are
// folded as constants; the propagated tolerance rule; its usage error.
TEST(RunOnnxCli, ParameterInputsFolded) {
  const std::string d = tmpdir("run_onnx_params");
  OnnxGraph g("params");
  g.input("x", {-1, 4});
  g.input("w", {3, 4});
  g.input("b", {3});
  g.node("Gemm", {"x", "w", "b"}, {"y"}, {OnnxAttr::Int("transB", 1)}, "fc");
  g.output("y", {-1, 3});
  g.save(d + "/m.onnx");
  const std::vector<float> w = {0.5f, -1, 0.25f, 2, 1, 1, -1, -1, 0, 0.75f, 0, -0.5f},
                           b = {0.1f, -0.2f, 0.3f};
  const std::vector<float> x = {1, 0.5f, -1, 0.25f, -0.5f, 1, 0.75f, 0};
  save_tensor(d + "/x.npy", Tensor::from_float({2, 4}, x));
  save_tensor(d + "/w.npy", Tensor::from_float({3, 4}, w));
  save_tensor(d + "/b.npy", Tensor::from_float({3}, b));
  std::vector<float> y;
  for (int i = 0; i < 2; ++i)
    for (int o = 0; o < 3; ++o) {
      double v = b[size_t(o)];
      for (int k = 0; k < 4; ++k) v += x[size_t(i * 4 + k)] * w[size_t(o * 4 + k)];
      y.push_back(float(v));
    }
  save_tensor(d + "/y.npy", Tensor::from_float({2, 3}, y));
  const std::string base =
      "run-onnx --backend model --model " + d + "/m.onnx --input x=" + d + "/x.npy";
  Result r = tpusim(base + " --input w=" + d + "/w.npy --input b=" + d + "/b.npy --expect " + d +
                    " --tolerance-rule propagated");
  EXPECT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.out.find("folded as constants: 'b', 'w'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("propagated quantization error bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected: PASS"), std::string::npos) << r.out;
  r = tpusim(base + " --input w=" + d + "/w.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("the graph has 2 inputs ('x', 'b')"), std::string::npos) << r.err;
  r = tpusim(base + " --tolerance-rule bogus");
  EXPECT_EQ(r.code, 2) << r.all();
  EXPECT_NE(r.err.find("--tolerance-rule bogus: expected steps or propagated"), std::string::npos)
      << r.err;
}

// ---- Bad input round 3 (issue 28)

// y = Relu(x) over [N, 4] floats.
std::string relu_model(const std::string& d) {
  OnnxGraph g("relu");
  g.input("x", {-1, 4});
  g.node("Relu", {"x"}, {"y"}, {}, "relu");
  g.output("y", {-1, 4});
  g.save(d + "/relu.onnx");
  return d + "/relu.onnx";
}

const std::vector<float> kReluX = {1, 2, -1, 0.5f, 0.25f, -2, 3, 1};

std::string slurp_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// NaN, infinite and all-subnormal input values are refused naming the file, the element and
// the value (a NaN was quantized to 0 and the run reported PASS); calibration tensors too.
TEST(RunOnnxCli, NonFiniteInputsNamed) {
  const std::string d = tmpdir("run_onnx_nonfinite");
  const std::string model = relu_model(d);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto with = [&](const std::string& name, int64_t at, float v) {
    std::vector<float> x = kReluX;
    x[size_t(at)] = v;
    save_tensor(d + "/" + name, Tensor::from_float({2, 4}, x));
    return d + "/" + name;
  };
  save_tensor(d + "/x.npy", Tensor::from_float({2, 4}, kReluX));
  save_tensor(d + "/y.npy", Tensor::from_float({2, 4}, {1, 2, 0, 0.5f, 0.25f, 0, 3, 1}));
  const std::string base = "run-onnx --backend model --model " + model;
  struct Case {
    std::string file, where;
  };
  for (const Case& c : {Case{with("x_nan.npy", 5, nan), "element 5 [1, 1] is NaN"},
                        Case{with("x_inf.npy", 2, inf), "element 2 [0, 2] is +Inf"},
                        Case{with("x_minf.npy", 0, -inf), "element 0 [0, 0] is -Inf"}}) {
    const Result r = tpusim(base + " --input " + c.file + " --expect " + d);
    EXPECT_EQ(r.code, 1) << r.all();
    EXPECT_NE(
        r.err.find("--input " + c.file + ": input 'x' " + c.where + " (expected finite numbers"),
        std::string::npos)
        << r.err;
    EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
  }
  save_tensor(d + "/all_nan.npy", Tensor::from_float({1, 4}, std::vector<float>(4, nan)));
  Result r = tpusim(base + " --input x=" + d + "/all_nan.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--input x=" + d + "/all_nan.npy: input 'x' element 0 [0, 0] is NaN"),
            std::string::npos)
      << r.err;
  // Every nonzero value subnormal: no int8 scale for the range (was an unnamed "requantization
  // multiplier" error).
  save_tensor(d + "/sub.npy", Tensor::from_float({1, 4}, {0, -1e-40f, 0, 2e-41f}));
  r = tpusim(base + " --input " + d + "/sub.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--input " + d + "/sub.npy: input 'x' element 1 [0, 1] is -"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("a subnormal float, and so is every nonzero value"), std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/x.npy --calibration " + d + "/x_nan.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--calibration " + d + "/x_nan.npy: input 'x' element 5 [1, 1] is NaN"),
            std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/x.npy --expect " + d);  // the finite input passes
  EXPECT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.out.find("expected: PASS"), std::string::npos) << r.out;
}

// Weights of 3e38 give a calibrated range that overflows: refused naming the layer, never a
// PASS with tolerance inf (the outputs were all NaN).
TEST(RunOnnxCli, NonFiniteCalibratedRange) {
  const std::string d = tmpdir("run_onnx_overflow");
  for (const float big : {3e38f, 1e38f}) {
    OnnxGraph g("big");
    g.input("x", {-1, 4});
    std::vector<float> w(16, 0.0f);
    for (int i = 0; i < 4; ++i) w[size_t(i * 5)] = big;  // big x identity
    g.init_float("w", {4, 4}, w);
    g.node("Gemm", {"x", "w"}, {"y"}, {OnnxAttr::Int("transB", 1)}, "fc");
    g.output("y", {-1, 4});
    g.save(d + "/big.onnx");
    save_tensor(d + "/x.npy", Tensor::from_float({2, 4}, kReluX));
    std::vector<float> y;
    for (float v : kReluX) y.push_back(v * big);
    save_tensor(d + "/y.npy", Tensor::from_float({2, 4}, y));
    const Result r = tpusim("run-onnx --backend model --model " + d + "/big.onnx --input " + d +
                            "/x.npy --expect " + d);
    EXPECT_EQ(r.code, 1) << r.all();
    EXPECT_NE(r.err.find(d + "/big.onnx, calibrated on the inputs (--input " + d +
                         "/x.npy): layer 'fc' output: "),
              std::string::npos)
        << r.err;
    // 3e38 x 3 overflows in the float model; 1e38 x [-2, 3] is finite but 5e38 wide.
    EXPECT_NE(r.err.find(big > 2e38f ? "the float model gives +Inf on the calibration images"
                                     : "gives the int8 scale +Inf"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
  }
}

// No output may overwrite an input of the same run: an output named like an input file, the
// expected tensors of --expect, the calibration file, through a link, or inside --test-dir;
// refused before anything runs, the input unchanged.
TEST(RunOnnxCli, OutputsNeverOverwriteInputs) {
  const std::string d = tmpdir("run_onnx_paths");
  const std::string model = relu_model(d);
  fs::create_directories(d + "/io");
  save_tensor(d + "/io/y.npy", Tensor::from_float({2, 4}, kReluX));  // an input named y.npy
  const std::string before = slurp_file(d + "/io/y.npy");
  const std::string base = "run-onnx --backend model --model " + model;
  Result r = tpusim(base + " --input " + d + "/io/y.npy --output-dir " + d + "/io");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--output-dir " + d + "/io/y.npy: is also an input (--input " + d +
                       "/io/y.npy); refusing to overwrite it"),
            std::string::npos)
      << r.err;
  fs::create_directory_symlink(d + "/io", d + "/link");
  r = tpusim(base + " --input " + d + "/io/y.npy --output-dir " + d + "/link");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--output-dir " + d + "/link/y.npy: is also an input"), std::string::npos)
      << r.err;
  save_tensor(d + "/x.npy", Tensor::from_float({2, 4}, kReluX));
  r = tpusim(base + " --input " + d + "/x.npy --calibration " + d + "/io/y.npy --output-dir " + d +
             "/io");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("is also an input (--calibration " + d + "/io/y.npy)"), std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/x.npy --expect " + d + "/io --output-dir " + d + "/io");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--output-dir " + d + "/io/y.npy: is inside the input directory --expect " +
                       d + "/io"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp_file(d + "/io/y.npy"), before);
  // --test-dir: the outputs would go into DIR/test_data_set_0/, next to the expected ones.
  const std::string t = d + "/t";
  fs::create_directories(t + "/test_data_set_0");
  fs::copy_file(model, t + "/model.onnx");
  save_tensor(t + "/test_data_set_0/input_0.pb", Tensor::from_float({2, 4}, kReluX, "x"));
  r = tpusim("run-onnx --backend model --test-dir " + t + " --output-dir " + t);
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--output-dir " + t +
                       "/test_data_set_0/y.npy: is inside the input "
                       "directory --test-dir " +
                       t),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(t + "/test_data_set_0/y.npy"));
  r = tpusim("run-onnx --backend model --test-dir " + t + " --output-dir " + d + "/tout");
  EXPECT_EQ(r.code, 0) << r.all();
  EXPECT_TRUE(fs::exists(d + "/tout/test_data_set_0/y.npy"));
}

// --vcd writes the waveform (it was accepted, documented and never written).
TEST(RunOnnxCli, VcdWritten) {
  const std::string d = tmpdir("run_onnx_vcd");
  save_tensor(d + "/x.npy", Tensor::from_float({2, 4}, kReluX));
  const Result r = tpusim("run-onnx --model " + relu_model(d) + " --input " + d + "/x.npy --vcd " +
                          d + "/r.vcd --vcd-window 0:400");
  ASSERT_EQ(r.code, 0) << r.all();
  const std::string vcd = slurp_file(d + "/r.vcd");
  EXPECT_GT(vcd.size(), 1000u);
  EXPECT_NE(vcd.find("$enddefinitions"), std::string::npos);
}

// Messages say what was wrong, where and what was expected.
TEST(RunOnnxCli, MessagesNameTheOption) {
  const std::string d = tmpdir("run_onnx_messages");
  const std::string model = relu_model(d);
  save_tensor(d + "/x.npy", Tensor::from_float({2, 4}, kReluX));
  const std::string base = "run-onnx --backend model --model " + model;
  Result r = tpusim(base + " --input " + d);
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--input " + d +
                       ": is a directory (expected a .npy or an ONNX "
                       "TensorProto .pb file)"),
            std::string::npos)
      << r.err;
  r = tpusim(base + " --input x=" + d + "/missing.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--input x=" + d + "/missing.npy: no such file"), std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/x.npy --calibration " + d + "/missing.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--calibration " + d +
                       "/missing.npy: no such file or directory (expected "
                       "a tensor file"),
            std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/x.npy --expect " + d + "/nothing");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--expect " + d + "/nothing: no such directory (expected a directory"),
            std::string::npos)
      << r.err;
  r = tpusim("run-onnx --backend model --model " + d + " --input " + d + "/x.npy");
  EXPECT_EQ(r.code, 1) << r.all();  // it said "expected NAME=FILE (the model has 0 inputs)"
  EXPECT_NE(r.err.find("--model " + d + ": is a directory (expected an ONNX model file)"),
            std::string::npos)
      << r.err;
  r = tpusim("run-onnx --backend model --test-dir " + d + "/x.npy");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--test-dir " + d +
                       "/x.npy: not a directory (expected ONNX's test "
                       "layout"),
            std::string::npos)
      << r.err;
  r = tpusim(base + " --input " + d + "/x.npy --shard 0/1000000");
  EXPECT_EQ(r.code, 2) << r.all();
  EXPECT_NE(r.err.find("--shard 0/1000000: out of range (expected I/K with 0 <= I < K <= 65536)"),
            std::string::npos)
      << r.err;
  r = tpusim("run-onnx --help");
  EXPECT_NE(r.out.find("derived from each batch program"), std::string::npos) << r.out;
  // --jobs beyond the data sets: capped, said, the output of one process.
  r = tpusim(base + " --input " + d + "/x.npy --jobs 4");
  EXPECT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.err.find("--jobs 4 capped at 1: the run has only 1 data set"), std::string::npos)
      << r.err;
  // A full disk: exit 1, never a silent success.
  r = tpusim(base + " --input " + d + "/x.npy --json >/dev/full");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("standard output: write error"), std::string::npos) << r.err;
}

// ---- run-cnn --dataset: Fashion-MNIST test images as PNG files in an ImageFolder.

void write_png(const std::string& path, int w, int h, bool rgb, const uint8_t* gray) {
  std::vector<uint8_t> px;
  for (int i = 0; i < w * h; ++i)
    for (int c = 0; c < (rgb ? 3 : 1); ++c) px.push_back(gray[i]);
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  im.width = png_uint_32(w);
  im.height = png_uint_32(h);
  im.format = rgb ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  ASSERT_TRUE(png_image_write_to_file(&im, path.c_str(), 0, px.data(), 0, nullptr)) << im.message;
}

// Test images 0..count-1 as DIR/c<label>/img_<index>.png (every third one RGB with R = G = B,
// which the gray conversion maps back exactly). Returns the images' indices in ImageFolder order.
std::vector<int> write_fashion_folder(const std::string& dir, int count) {
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  std::vector<std::pair<std::string, int>> order;
  for (int i = 0; i < count; ++i) {
    const std::string cls = "c" + std::to_string(test.labels[size_t(i)]);
    fs::create_directories(dir + "/" + cls);
    char name[32];
    std::snprintf(name, sizeof name, "img_%05d.png", i);
    write_png(dir + "/" + cls + "/" + name, 28, 28, i % 3 == 0, test.image(i));
    order.emplace_back(cls + "/" + name, i);
  }
  for (int c = 0; c < 10; ++c)
    fs::create_directories(dir + "/c" + std::to_string(c));  // every class has a folder
  std::sort(order.begin(), order.end());
  std::vector<int> idx;
  for (const auto& o : order) idx.push_back(o.second);
  return idx;
}

// The same images through the PNG folder and through the idx file give the same predictions
// (the model is quantized in its file, so both runs use the same integer network).
TEST(RunCnnDataset, PngFolderEqualsIdx) {
  const std::string d = tmpdir("run_cnn_dataset");
  const std::vector<int> order = write_fashion_folder(d + "/images", 24);
  std::ofstream(d + "/qdq.onnx", std::ios::binary) << export_qdq_onnx(fashion_quantized(200));
  const Result folder = tpusim("run-cnn --model " + d + "/qdq.onnx --dataset " + d +
                               "/images --batch 8 --quiet --json");
  ASSERT_EQ(folder.code, 0) << folder.all();
  const Result idx = tpusim("run-cnn --model " + d +
                            "/qdq.onnx --images 24 --batch 8 --quiet --json --backend model");
  ASSERT_EQ(idx.code, 0) << idx.all();
  const nlohmann::json jf = nlohmann::json::parse(folder.out), ji = nlohmann::json::parse(idx.out);
  EXPECT_TRUE(jf.at("matches_golden").get<bool>());
  EXPECT_EQ(jf.at("images").get<double>(), 24);
  EXPECT_EQ(jf.at("backend").get<std::string>(), "rtl");
  EXPECT_EQ(jf.at("accuracy").get<double>(), ji.at("accuracy").get<double>());
  ASSERT_EQ(jf.at("predictions").size(), 24u);
  for (size_t k = 0; k < 24; ++k)
    EXPECT_EQ(jf.at("predictions").at(k).get<double>(),
              ji.at("predictions").at(size_t(order[k])).get<double>())
        << k;
}

// An RGB model (the CIFAR-10 ConvNet shape, random weights) on RGB PNGs with per-channel
// --mean/--std: every image's ten outputs (--top-k 10, dequantized) equal the integer reference
// run here on the images normalized by hand (HWC pixels to CHW, (x / 255 - mean[c]) / std[c]),
// calibrated on the same images. The channels differ a lot (R random, G dark, B bright), so a
// channel mix-up changes the outputs.
TEST(RunCnnDataset, RgbModelWithNormalization) {
  const std::string d = tmpdir("run_cnn_dataset_rgb");
  const std::string onnx =
      random_cnn_onnx("rgb", {3, 32, 32}, {{32, 3, 1, 1, true}, {64, 3, 1, 1, true}}, {64, 10}, 7);
  std::ofstream(d + "/rgb.onnx", std::ios::binary) << onnx;
  const float mean[3] = {0.5f, 0.1f, 0.8f}, sd[3] = {0.25f, 0.1f, 0.2f};
  std::mt19937 rng(3);
  std::vector<std::vector<float>> x;  // in ImageFolder order: a/0.png, a/1.png, b/2.png, ...
  for (int i = 0; i < 6; ++i) {
    const std::string cls = i < 2 ? "a" : "b";
    fs::create_directories(d + "/img/" + cls);
    std::vector<uint8_t> px(32 * 32 * 3);
    for (size_t k = 0; k < px.size(); k += 3) {
      px[k] = uint8_t(rng() % 256);
      px[k + 1] = uint8_t(rng() % 64);
      px[k + 2] = uint8_t(192 + rng() % 64);
    }
    png_image im;
    std::memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    im.width = im.height = 32;
    im.format = PNG_FORMAT_RGB;
    ASSERT_TRUE(
        png_image_write_to_file(&im, (d + "/img/" + cls + "/" + std::to_string(i) + ".png").c_str(),
                                0, px.data(), 0, nullptr));
    std::vector<float> chw(3 * 32 * 32);
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 32 * 32; ++p)
        chw[size_t(c * 1024 + p)] = (px[size_t(p * 3 + c)] / 255.0f - mean[c]) / sd[c];
    x.push_back(chw);
  }
  const Result r =
      tpusim("run-cnn --backend model --model " + d + "/rgb.onnx --dataset " + d +
             "/img --mean 0.5,0.1,0.8 --std 0.25,0.1,0.2 --channels rgb --top-k 10 --no-profile");
  ASSERT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.out.find("bit-exact with the integer reference: yes"), std::string::npos) << r.out;
  const QuantNetwork q = quantize_model(import_onnx_bytes(onnx, "rgb"), x);
  const auto& oq = q.output_q();
  for (size_t i = 0; i < 6; ++i) {
    std::vector<int32_t> qi(size_t(q.input.size()));
    q.quantize_input(x[i].data(), qi.data());
    const auto y = int_forward(q, qi.data());
    std::vector<int> order(10);
    for (int c = 0; c < 10; ++c) order[size_t(c)] = c;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return y[size_t(a)] > y[size_t(b)]; });
    std::string want = "top-10:";
    for (int k = 0; k < 10; ++k) {
      const int c = order[size_t(k)];
      char score[32];
      std::snprintf(score, sizeof score, "%.4g", double(oq.scale) * (y[size_t(c)] - oq.zero_point));
      want += std::string(k ? "," : "") + " " +
              (c == 0   ? "a"
               : c == 1 ? "b"
                        : "class " + std::to_string(c)) +
              " " + score;
    }
    EXPECT_NE(r.out.find(want), std::string::npos) << "image " << i << ": " << want << "\n"
                                                   << r.out;
  }
}

TEST(RunCnnDataset, LabelsTopKAndPreprocessing) {
  const std::string d = tmpdir("run_cnn_dataset_labels");
  write_fashion_folder(d + "/images", 10);
  {
    std::ofstream l(d + "/labels.txt");
    for (const auto& n : fashion_mnist_classes()) l << n << "\n";
  }
  // The bundled float model, calibrated on the folder's images; images enlarged to 56x56 by the
  // tool's own --resize then scaled back to the model's 28x28.
  Result r = tpusim("run-cnn --backend model --dataset " + d + "/images --labels " + d +
                    "/labels.txt --top-k 3 --resize 56 --channels gray --mean 0 --std 1");
  ASSERT_EQ(r.code, 0) << r.all();
  EXPECT_NE(r.out.find("(the first selected images of --dataset)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Ankle boot"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top-3: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bit-exact with the integer reference: yes"), std::string::npos) << r.out;
  // Errors: rgb for a gray model and --mean / --std counts that do not fit its channels are
  // usage errors (exit 2, before any image is read), options without --dataset, a folder
  // without images, a --labels directory.
  r = tpusim("run-cnn --backend model --dataset " + d + "/images --channels rgb");
  EXPECT_EQ(r.code, 2) << r.all();
  EXPECT_NE(r.err.find("wrong input shape: the model takes [1, 28, 28] (C, H, W), but --channels "
                       "rgb gives 3 channels"),
            std::string::npos)
      << r.err;
  r = tpusim("run-cnn --backend model --dataset " + d + "/images --mean 0.1,0.2");
  EXPECT_EQ(r.code, 2) << r.all();
  EXPECT_NE(r.err.find("--mean: 2 values for 1 channel (expected 1)"), std::string::npos) << r.err;
  r = tpusim("run-cnn --backend model --dataset " + d + "/images --std 1,2,3");
  EXPECT_EQ(r.code, 2) << r.all();
  EXPECT_NE(r.err.find("--std: 3 values for 1 channel (expected 1)"), std::string::npos) << r.err;
  r = tpusim("run-cnn --backend model --dataset " + d + "/images --labels " + d + "/images");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--labels " + d + "/images: is a directory"), std::string::npos) << r.err;
  r = tpusim("run-cnn --backend model --resize 32");
  EXPECT_EQ(r.code, 2) << r.all();
  EXPECT_NE(r.err.find("--resize needs --dataset DIR"), std::string::npos) << r.err;
  fs::create_directories(d + "/empty/a");
  r = tpusim("run-cnn --backend model --dataset " + d + "/empty");
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.err.find("--dataset " + d + "/empty: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no .png, .jpg or .jpeg images"), std::string::npos) << r.err;
}

}  // namespace
