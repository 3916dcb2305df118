// SPDX-License-Identifier: Apache-2.0
// tpusim train as a user runs it: every option error names the option and its value (exit 2),
// bad data and models are named errors (exit 1), no output overwrites an input, --json reports
// failures as one object, and a model written by export_trained_onnx runs in run-cnn and
// run-onnx on the model backend.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model_io.h"
#include "onnx_export.h"
#include "run_command.h"
#include "temp_dir.h"
#include "tensor_io.h"
#include "trainer.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

Result tpusim(const std::string& args) {
  const std::string err_file = test_support::temp_dir() + "stderr_" + std::to_string(getpid());
  const auto c =
      test_support::run_command(std::string(TPUSIM_PATH) + " " + args + " 2>" + err_file);
  std::ifstream f(err_file);
  std::ostringstream s;
  s << f.rdbuf();
  return {c.code, c.out, s.str()};
}

std::string dir(const std::string& name) {
  const std::string d = test_support::temp_dir() + name;
  fs::create_directories(d);
  return d;
}

// A gray PNG of w x h pixels.
void write_png(const std::string& path, int w, int h, uint8_t value) {
  std::vector<uint8_t> px(size_t(w * h), value);
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  im.width = png_uint_32(w);
  im.height = png_uint_32(h);
  im.format = PNG_FORMAT_GRAY;
  ASSERT_TRUE(png_image_write_to_file(&im, path.c_str(), 0, px.data(), 0, nullptr)) << im.message;
}

// An ImageFolder of `classes` classes with `per_class` 28x28 images each.
std::string image_folder(const std::string& name, int classes, int per_class) {
  const std::string d = dir(name);
  for (int c = 0; c < classes; ++c) {
    char cls[16];
    std::snprintf(cls, sizeof cls, "c%02d", c);
    fs::create_directories(d + "/" + cls);
    for (int i = 0; i < per_class; ++i)
      write_png(d + "/" + cls + "/" + std::to_string(i) + ".png", 28, 28, uint8_t(c * 20 + i));
  }
  return d;
}

struct UsageCase {
  std::string args, message;
};

// Option errors: exit 2, one line naming the option and the value, before anything is loaded.
TEST(TrainCli, OptionErrorsNameOptionAndValue) {
  const std::vector<UsageCase> cases = {
      {"--epochs 0", "--epochs 0 is out of range"},
      {"--batch 0", "--batch 0 is out of range"},
      {"--batch 5000", "--batch 5000 is out of range"},
      {"--steps-per-epoch 0", "--steps-per-epoch 0 is out of range"},
      {"--lr -1", "--lr -1 is out of range"},
      {"--lr 0", "--lr 0 is out of range"},
      {"--lr abc", "--lr abc is not a finite number"},
      {"--lr nan", "--lr nan is not a finite number"},
      {"--lr 1e400", "--lr 1e400 is not a finite number"},
      {"--optimizer rmsprop", "--optimizer rmsprop is not an optimizer (expected sgd or adam)"},
      {"--momentum 0.9", "--momentum 0.9 is for --optimizer sgd"},
      {"--optimizer sgd --momentum 1", "--momentum 1 is out of range"},
      {"--optimizer sgd --beta1 0.5", "--beta1 is for --optimizer adam"},
      {"--weight-decay -0.1", "--weight-decay -0.1 is out of range"},
      {"--shuffle sometimes", "--shuffle sometimes is neither off nor a seed"},
      {"--shuffle -3", "--shuffle -3 is neither off nor a seed"},
      {"--test-images -1", "--test-images -1 is out of range"},
      {"--backend gpu", "--backend gpu is not a backend"},
      {"--backend model --n 12", "--n 12 is not a power of two"},
      {"--n 8", "--n 8 is for --backend model"},
      {"--backend model --timeline t.json", "--timeline needs --backend rtl"},
      {"--backend model --no-golden-check", "--no-golden-check is for --backend rtl"},
      {"--model m.onnx --seed 3", "--seed 3 sets the default model's initial weights"},
      {"--dataset /tmp --data /tmp", "--data /tmp is Fashion-MNIST's directory"},
      {"--bogus", "unrecognised option '--bogus'"},
  };
  for (const auto& c : cases) {
    const Result r = tpusim("train " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << "\n" << r.err;
  }
}

TEST(TrainCli, JsonReportsTheFailure) {
  const Result r = tpusim("train --json --epochs 0");
  EXPECT_EQ(r.code, 2);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("subcommand"), "train");
  EXPECT_EQ(j.at("status"), "usage_error");
  EXPECT_NE(j.at("error").at("message").get<std::string>().find("--epochs 0"), std::string::npos);
}

// Bad data: named errors with exit 1 (2 for --batch, an option), nothing written.
TEST(TrainCli, DataErrorsAreNamed) {
  const std::string eleven = image_folder("eleven", 11, 1);  // label 10: outside 10 classes
  Result r =
      tpusim("train --backend model --dataset " + eleven + " --output " + eleven + "_out.onnx");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("has label 10, outside the model's 10 classes 0..9"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("c10/0.png"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(eleven + "_out.onnx"));

  const std::string three = image_folder("three", 3, 1);
  r = tpusim("train --backend model --dataset " + three + " --batch 4");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--batch 4 is larger than the 3 images of " + three), std::string::npos)
      << r.err;

  const std::string empty = dir("empty_folder");
  fs::create_directories(empty + "/a");
  r = tpusim("train --backend model --dataset " + empty);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find(empty), std::string::npos) << r.err;

  r = tpusim("train --backend model --dataset " + test_support::temp_dir() + "nonexistent");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("--dataset " + test_support::temp_dir() + "nonexistent: no such directory"),
            std::string::npos)
      << r.err;

  // Fashion-MNIST files with no images.
  const std::string fm = dir("fm_empty");
  for (const char* stem : {"train", "t10k"}) {
    std::string im = {0, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0, 28};
    std::string lb = {0, 0, 8, 1, 0, 0, 0, 0};
    std::ofstream(fm + "/" + stem + "-images-idx3-ubyte", std::ios::binary) << im;
    std::ofstream(fm + "/" + stem + "-labels-idx1-ubyte", std::ios::binary) << lb;
  }
  r = tpusim("train --backend model --data " + fm);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("the data set is empty"), std::string::npos) << r.err;
}

TEST(TrainCli, ModelErrorsAreNamed) {
  const std::string d = dir("models");
  tpu::cnn::OnnxGraph g("relu_only");
  g.input("x", {-1, 1, 28, 28});
  g.node("Relu", {"x"}, {"y"});
  g.node("Flatten", {"y"}, {"z"});
  g.output("z", {-1, 784});
  g.save(d + "/relu.onnx");
  Result r = tpusim("train --backend model --model " + d + "/relu.onnx");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("--model " + d + "/relu.onnx: the model has no trainable weight"),
            std::string::npos)
      << r.err;
  std::ofstream(d + "/junk.onnx") << "this is not a protobuf \x01\x02\x03";
  r = tpusim("train --backend model --model " + d + "/junk.onnx");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("junk.onnx"), std::string::npos) << r.err;
  r = tpusim("train --backend model --model " + d + "/missing.onnx");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("missing.onnx: no such file"), std::string::npos) << r.err;
}

// Outputs never overwrite inputs (RunPaths), checked before anything runs.
TEST(TrainCli, OutputsNeverOverwriteInputs) {
  const std::string d = dir("paths");
  const std::string model = d + "/init.onnx";
  std::ofstream(model, std::ios::binary) << tpu::train::keras_example_onnx(1);
  const auto before = fs::file_size(model);
  Result r = tpusim("train --backend model --model " + model + " --output " + model);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("is also an input"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(model), before);
  const std::string folder = image_folder("paths_folder", 2, 2);
  r = tpusim("train --backend model --dataset " + folder + " --report " + folder + "/c00");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("inside the input directory"), std::string::npos) << r.err;
  r = tpusim("train --backend model --save-initial " + d + "/x.onnx --output " + d + "/x.onnx");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("is also written by"), std::string::npos) << r.err;
}

// --dataset DIR: an ImageFolder trains (its own images are the test set unless --test-dataset),
// and --save-initial writes the model it started from.
TEST(TrainCli, ImageFolderTrains) {
  const std::string folder = image_folder("folder_ok", 10, 2);
  const std::string d = dir("folder_out");
  std::ofstream(d + "/mlp.onnx", std::ios::binary) << tpu::train::mlp_example_onnx(16, 1);
  const Result r =
      tpusim("train --backend model --n 16 --model " + d + "/mlp.onnx --dataset " + folder +
             " --batch 4 --epochs 2 --steps-per-epoch 3 --shuffle 1 --json "
             "--quiet --save-initial " +
             d + "/init.onnx --output " + d + "/trained.onnx");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("dataset"), folder);
  EXPECT_EQ(j.at("test_images"), 20);
  EXPECT_EQ(j.at("steps"), 6);
  EXPECT_TRUE(j.at("test_accuracy").is_number());
  EXPECT_EQ(tpu::train::read_model_file(d + "/init.onnx"), tpu::train::mlp_example_onnx(16, 1));
  EXPECT_NE(tpu::train::read_model_file(d + "/trained.onnx"), tpu::train::mlp_example_onnx(16, 1));
}

// A model written by export_trained_onnx (the default model with changed weights) is a float
// ONNX model that run-cnn and run-onnx take.
TEST(TrainCli, ExportedModelRunsInRunCnnAndRunOnnx) {
  const std::string d = dir("export");
  const std::string init = tpu::train::keras_example_onnx(5);
  std::map<std::string, std::vector<float>> w;
  w["dense.bias"] = {0.5f, -0.25f, 0, 0, 0.125f, 0, 0, 0, 0, 1.0f};
  tpu::train::export_trained_onnx(init, w, d + "/trained.onnx");
  Result r = tpusim("run-cnn --backend model --model " + d +
                    "/trained.onnx --images 4 --calibration 20 --batch 4 --quiet --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("matches_golden"), true) << r.out;
  std::vector<float> x(2 * 28 * 28);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 251) / 251.0f;
  tpu::cnn::save_tensor(d + "/x.npy", tpu::cnn::Tensor::from_float({2, 1, 28, 28}, x, "input"));
  r = tpusim("run-onnx --backend model --model " + d + "/trained.onnx --input input=" + d +
             "/x.npy --output-dir " + d + "/out");
  EXPECT_EQ(r.code, 0) << r.err;
  const tpu::cnn::Tensor y = tpu::cnn::load_tensor(d + "/out/logits.npy");
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 10}));
}

}  // namespace
