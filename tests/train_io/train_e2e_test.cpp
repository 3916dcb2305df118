// SPDX-License-Identifier: Apache-2.0
// tpusim train end to end on the model backend with a small MLP and a small generated idx data
// set: the JSON has every contract key, and every loss, the epoch means, the test accuracy and
// the trained weights in --output equal those of the Trainer driven here directly with the same
// data order (the documented shuffle); a learning rate that diverges stops with exit 1, says
// why, and writes no --output.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "device_model.h"
#include "fit.h"
#include "model_io.h"
#include "onnx_export.h"
#include "run_command.h"
#include "temp_dir.h"
#include "train_data.h"
#include "trainer.h"

namespace {

namespace fs = std::filesystem;
using namespace tpu::train;

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

void put_be32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(char((v >> (8 * i)) & 0xff));
}

// DIR/<stem>-images-idx3-ubyte and -labels-idx1-ubyte: `count` 28x28 images whose label c
// shows as a bright 4-pixel-wide band at column 2c, plus noise.
void write_set(const std::string& dir, const std::string& stem, uint32_t count, uint32_t salt) {
  std::string im, lb;
  put_be32(im, 0x803);
  put_be32(im, count);
  put_be32(im, 28);
  put_be32(im, 28);
  put_be32(lb, 0x801);
  put_be32(lb, count);
  uint64_t state = salt;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t label = uint32_t(splitmix64(state) % 10);
    for (uint32_t y = 0; y < 28; ++y)
      for (uint32_t x = 0; x < 28; ++x) {
        const uint32_t noise = uint32_t(splitmix64(state) % 80);
        im.push_back(char(x >= 2 * label && x < 2 * label + 4 ? 170 + noise : noise));
      }
    lb.push_back(char(label));
  }
  std::ofstream(dir + "/" + stem + "-images-idx3-ubyte", std::ios::binary) << im;
  std::ofstream(dir + "/" + stem + "-labels-idx1-ubyte", std::ios::binary) << lb;
}

// Flatten -> Gemm fc1 (784 -> 16, transB = 1) -> Relu -> Gemm fc2 (16 -> 10, transB = 1).
std::string mlp() {
  using tpu::cnn::OnnxAttr;
  uint64_t state = 11;
  tpu::cnn::OnnxGraph g("mlp");
  g.input("input", {-1, 1, 28, 28});
  g.init_float("fc1.weight", {16, 784}, glorot_uniform(16 * 784, 784, 16, state));
  g.init_float("fc1.bias", {16}, std::vector<float>(16, 0.0f));
  g.init_float("fc2.weight", {10, 16}, glorot_uniform(160, 16, 10, state));
  g.init_float("fc2.bias", {10}, std::vector<float>(10, 0.0f));
  g.node("Flatten", {"input"}, {"flat"}, {OnnxAttr::Int("axis", 1)});
  g.node("Gemm", {"flat", "fc1.weight", "fc1.bias"}, {"h"}, {OnnxAttr::Int("transB", 1)}, "fc1");
  g.node("Relu", {"h"}, {"hr"});
  g.node("Gemm", {"hr", "fc2.weight", "fc2.bias"}, {"logits"}, {OnnxAttr::Int("transB", 1)}, "fc2");
  g.output("logits", {-1, 10});
  return g.serialize();
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Fixture {
  std::string dir, model;
};

Fixture setup(const std::string& name) {
  Fixture f;
  f.dir = test_support::temp_dir() + name;
  fs::create_directories(f.dir + "/data");
  write_set(f.dir + "/data", "train", 40, 1);
  write_set(f.dir + "/data", "t10k", 20, 2);
  f.model = f.dir + "/mlp.onnx";
  std::ofstream(f.model, std::ios::binary) << mlp();
  return f;
}

constexpr uint32_t kN = 16;

TEST(TrainEndToEnd, JsonKeysAndLossesEqualTheTrainers) {
  const Fixture f = setup("e2e");
  const Result r = tpusim("train --backend model --n 16 --model " + f.model + " --data " + f.dir +
                          "/data --epochs 2 --steps-per-epoch 3 --batch 8 --test-images 16 "
                          "--shuffle 7 --optimizer adam --lr 0.01 --json --output " +
                          f.dir + "/trained.onnx --report " + f.dir + "/report");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"steps", "losses", "epochs", "test_accuracy", "initial_test_accuracy", "matches_golden",
        "cycles_total", "cycles_per_step", "mxu_utilization", "layers", "wall_seconds"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.at("status"), "ok");
  EXPECT_EQ(j.at("steps"), 6);
  EXPECT_TRUE(j.at("matches_golden").is_null());  // the model backend is the golden model
  EXPECT_GT(j.at("cycles_total").get<uint64_t>(), 0u);
  EXPECT_FALSE(j.at("layers").empty());
  EXPECT_NE(r.err.find("train: step 6/6 (epoch 2/2) loss"), std::string::npos) << r.err;
  // Each test-accuracy pass is announced before it runs (minutes on the rtl backend).
  EXPECT_LT(r.err.find("train: test accuracy before training, 16 images"),
            r.err.find("train: step 1/6"))
      << r.err;
  EXPECT_NE(r.err.find("train: test accuracy after epoch 2/2, 16 images"), std::string::npos)
      << r.err;

  // The same training driven here: Trainer + golden model + the documented data order.
  TrainOptions o;
  o.lr = 0.01f;
  o.batch = 8;
  Trainer t(f.model, o, tpu::ChipParams::training(kN));
  tpu::ModelDevice dev(tpu::ChipParams::training(kN));
  const TrainSet train = load_fashion_mnist_set(f.dir + "/data", true);
  const TrainSet test = load_fashion_mnist_set(f.dir + "/data", false);
  t.init(dev);
  EXPECT_EQ(j.at("initial_test_accuracy").get<double>(), test_accuracy(t, dev, test, 16));
  BatchOrder order(train.count, 7);
  std::vector<uint32_t> idx(8);
  std::vector<float> x(8 * 784);
  std::vector<int32_t> y(8);
  std::vector<float> losses;
  for (int s = 0; s < 6; ++s) {
    order.next(8, idx.data());
    train.gather(idx.data(), 8, x.data(), y.data());
    losses.push_back(t.step(dev, x.data(), y.data()).loss);
    EXPECT_EQ(bits(j.at("losses")[size_t(s)].get<float>()), bits(losses.back()))
        << "step " << s + 1;
  }
  for (int e = 0; e < 2; ++e) {
    const double mean = (double(losses[3 * e]) + losses[3 * e + 1] + losses[3 * e + 2]) / 3;
    EXPECT_NEAR(j.at("epochs")[size_t(e)].at("loss").get<double>(), mean, 1e-8 * std::fabs(mean));
  }
  EXPECT_EQ(j.at("test_accuracy").get<double>(), test_accuracy(t, dev, test, 16));
  EXPECT_EQ(j.at("epochs")[1].at("test_accuracy"), j.at("test_accuracy"));

  // --output: the trained weights bit for bit.
  const auto w = t.weights(dev);
  onnx::ModelProto m;
  std::ifstream in(f.dir + "/trained.onnx", std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&in));
  size_t checked = 0;
  for (const auto& init : m.graph().initializer()) {
    const auto& v = w.at(init.name());
    ASSERT_EQ(init.raw_data().size(), v.size() * 4);
    EXPECT_EQ(std::memcmp(init.raw_data().data(), v.data(), v.size() * 4), 0) << init.name();
    ++checked;
  }
  EXPECT_EQ(checked, 4u);
  for (const char* file : {"loss.svg", "accuracy.svg", "train.json"})
    EXPECT_TRUE(fs::file_size(f.dir + "/report/" + file) > 100) << file;
}

// `tpusim train --backend rtl` in the int8 tpusim runs tpusim_train_n16 (the training chip):
// the losses are the RTL's, checked against the golden model step by step (matches_golden), and
// equal the model backend's bit for bit.
TEST(TrainEndToEnd, RtlBackendRunsOnTheTrainingChipBitExact) {
  const Fixture f = setup("rtl");
  const std::string common = " --model " + f.model + " --data " + f.dir +
                             "/data --epochs 1 --steps-per-epoch 2 --batch 16 --test-images 16 "
                             "--json";
  const Result rtl = tpusim("train --backend rtl" + common);
  if (rtl.err.find("there is no") != std::string::npos)
    GTEST_SKIP() << "no training chip built: " << rtl.err;
  ASSERT_EQ(rtl.code, 0) << rtl.err << rtl.out;
  const auto j = nlohmann::json::parse(rtl.out);
  EXPECT_EQ(j.at("matches_golden"), true);
  EXPECT_GT(j.at("cycles_per_step").get<double>(), 0);
  // The layers measured on the chip (the first step's timeline): they add up to at most the
  // step's cycles (the span from the first issue to the last instruction's end), each with its
  // analytical bound; the DMA bound (the program's bytes at the port's peak) is below the step.
  EXPECT_EQ(j.at("layers_measured"), true);
  uint64_t sum = 0;
  for (const auto& l : j.at("layers")) {
    EXPECT_EQ(l.at("measured"), true);
    sum += l.at("forward").get<uint64_t>() + l.at("backward").get<uint64_t>() +
           l.at("update").get<uint64_t>();
    EXPECT_EQ(l.at("bound_cycles").get<uint64_t>(),
              std::max(l.at("bound_mxu_cycles").get<uint64_t>(),
                       l.at("bound_dma_cycles").get<uint64_t>()));
  }
  const double step = j.at("cycles_per_step").get<double>();
  EXPECT_LE(double(sum), step);
  EXPECT_GT(double(sum), 0.9 * step);
  EXPECT_GT(j.at("bound_mxu_cycles").get<uint64_t>(), 0u);
  EXPECT_GT(j.at("bound_dma_cycles").get<uint64_t>(), 0u);
  EXPECT_LE(double(j.at("bound_dma_cycles").get<uint64_t>()), step);
  const Result model = tpusim("train --backend model --n 16" + common);
  ASSERT_EQ(model.code, 0) << model.err << model.out;
  const auto m = nlohmann::json::parse(model.out);
  EXPECT_EQ(m.at("layers_measured"), false);  // the model backend has no timeline
  // Without residency: more cycles' worth of DMA, the same bits.
  const Result streamed = tpusim("train --backend rtl --residency off" + common);
  ASSERT_EQ(streamed.code, 0) << streamed.err << streamed.out;
  const auto st = nlohmann::json::parse(streamed.out);
  EXPECT_EQ(st.at("residency"), false);
  EXPECT_EQ(st.at("matches_golden"), true);
  EXPECT_GT(st.at("bound_dma_cycles").get<uint64_t>(), j.at("bound_dma_cycles").get<uint64_t>());
  ASSERT_EQ(j.at("losses").size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(bits(j.at("losses")[s].get<float>()), bits(m.at("losses")[s].get<float>())) << s;
    EXPECT_EQ(bits(j.at("losses")[s].get<float>()), bits(st.at("losses")[s].get<float>())) << s;
  }
}

// A conv + dense model on the training chip at N = 16 (tpusim_train_n16): the default
// program (the Dense's dX leading the merged conv backward + dense update stream) equals the
// golden model in lockstep (every loss and the weights, matches_golden), and its losses and
// trained weights equal the model backend's bit for bit.
TEST(TrainEndToEnd, RtlConvDenseMergedStreamBitExact) {
  const Fixture f = setup("rtl_cnn");
  // The Keras example (model_io.h; the default model): at batch 16 its step merges the Dense's
  // dX, the conv's backward pass and the Dense's update into one stream (compiler/overlap.h;
  // tests/train/overlap_test.cpp KerasBatch16HasALead checks that this shape gets the
  // DenseGradX as the lead).
  const std::string model = f.dir + "/keras_cnn.onnx";
  std::ofstream(model, std::ios::binary) << keras_example_onnx(12);
  auto run = [&](const std::string& backend, const std::string& name) {
    return tpusim("train --backend " + backend + " --model " + model + " --data " + f.dir +
                  "/data --epochs 1 --steps-per-epoch 2 --batch 16 --test-images 0 --json "
                  "--output " +
                  f.dir + "/" + name + ".onnx");
  };
  const Result rtl = run("rtl", "rtl");
  if (rtl.err.find("there is no") != std::string::npos)
    GTEST_SKIP() << "no training chip built: " << rtl.err;
  ASSERT_EQ(rtl.code, 0) << rtl.err << rtl.out;
  const auto j = nlohmann::json::parse(rtl.out);
  EXPECT_EQ(j.at("matches_golden"), true);
  const Result model_run = run("model --n 16", "model");
  ASSERT_EQ(model_run.code, 0) << model_run.err << model_run.out;
  const auto m = nlohmann::json::parse(model_run.out);
  ASSERT_EQ(j.at("losses").size(), 2u);
  ASSERT_EQ(m.at("losses").size(), 2u);
  for (size_t s = 0; s < 2; ++s)
    EXPECT_EQ(bits(j.at("losses")[s].get<float>()), bits(m.at("losses")[s].get<float>())) << s;
  auto read = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream b;
    b << in.rdbuf();
    return b.str();
  };
  const std::string a = read(f.dir + "/rtl.onnx"), b = read(f.dir + "/model.onnx");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST(TrainEndToEnd, DivergenceStopsAndWritesNoOutput) {
  const Fixture f = setup("diverge");
  const Result r = tpusim("train --backend model --n 16 --model " + f.model + " --data " + f.dir +
                          "/data --epochs 3 --steps-per-epoch 5 --batch 8 --test-images 0 "
                          "--optimizer sgd --lr 1e30 --json --output " +
                          f.dir + "/out.onnx");
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("status"), "diverged");
  const std::string why = j.at("error").at("message");
  const uint64_t step = j.at("diverged_step");
  EXPECT_NE(why.find("step " + std::to_string(step) + " "), std::string::npos) << why;
  EXPECT_TRUE(why.find("is nan") != std::string::npos || why.find("is inf") != std::string::npos)
      << why;
  EXPECT_EQ(j.at("steps").get<uint64_t>(), step);
  EXPECT_TRUE(j.at("output").is_null());
  EXPECT_FALSE(fs::exists(f.dir + "/out.onnx"));
  EXPECT_NE(r.err.find("tpusim train: error: " + why), std::string::npos) << r.err;
  std::cerr << why << "\n";
}

// fit() with a golden device: the same programs on two golden models agree bit for bit; a
// golden Trainer built with another learning rate (different programs) is caught at the first
// step whose loss differs, or in the final weights.
TEST(TrainEndToEnd, GoldenLockstepComparesEveryLossAndTheWeights) {
  const Fixture f = setup("golden");
  const TrainSet train = load_fashion_mnist_set(f.dir + "/data", true);
  TrainOptions o;
  o.lr = 0.01f;
  o.batch = 8;
  FitOptions fo;
  fo.epochs = 2;
  fo.steps_per_epoch = 2;
  fo.shuffle_seed = 3;
  const tpu::ChipParams chip = tpu::ChipParams::training(kN);
  {
    Trainer t(f.model, o, chip), g(f.model, o, chip);
    tpu::ModelDevice a(chip), b(chip);
    const FitResult r = fit(t, a, train, nullptr, fo, 8, {}, &g, &b);
    ASSERT_TRUE(r.matches_golden.has_value());
    EXPECT_TRUE(*r.matches_golden);
    EXPECT_FALSE(r.golden_mismatch.has_value());
    EXPECT_EQ(r.losses.size(), 4u);
  }
  {
    TrainOptions other = o;
    other.lr = 0.02f;
    Trainer t(f.model, o, chip), g(f.model, other, chip);
    tpu::ModelDevice a(chip), b(chip);
    const FitResult r = fit(t, a, train, nullptr, fo, 8, {}, &g, &b);
    ASSERT_TRUE(r.matches_golden.has_value());
    EXPECT_FALSE(*r.matches_golden);
    ASSERT_TRUE(r.golden_mismatch.has_value());
    EXPECT_EQ(r.golden_mismatch->step, 2u);  // step 1's loss comes before any update
    EXPECT_NE(r.golden_mismatch->what.find("vs the golden model's"), std::string::npos);
  }
  {  // one step: the losses agree, the weights after the update do not
    FitOptions one = fo;
    one.epochs = 1;
    one.steps_per_epoch = 1;
    TrainOptions other = o;
    other.lr = 0.02f;
    Trainer t(f.model, o, chip), g(f.model, other, chip);
    tpu::ModelDevice a(chip), b(chip);
    const FitResult r = fit(t, a, train, nullptr, one, 8, {}, &g, &b);
    ASSERT_TRUE(r.golden_mismatch.has_value());
    EXPECT_EQ(r.golden_mismatch->step, 0u);
    EXPECT_EQ(r.golden_mismatch->what.rfind("final weight ", 0), 0u) << r.golden_mismatch->what;
  }
}

// The default model (the Keras example) for a few steps on Fashion-MNIST: the loss falls, the
// accuracy rises above chance, and --output runs in run-cnn. Minutes: label slow.
TEST(TrainSlow, KerasExampleFewStepsAndRunCnn) {
  const std::string d = test_support::temp_dir() + "keras";
  fs::create_directories(d);
  const Result r = tpusim(
      "train --backend model --epochs 2 --steps-per-epoch 15 --test-images 500 "
      "--json --quiet --output " +
      d + "/trained.onnx");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& losses = j.at("losses");
  ASSERT_EQ(losses.size(), 30u);
  EXPECT_LT(j.at("epochs")[1].at("loss").get<double>(), 0.8 * losses[0].get<double>());
  EXPECT_GT(j.at("test_accuracy").get<double>(), 0.5);
  EXPECT_LT(j.at("initial_test_accuracy").get<double>(), 0.3);
  const Result c = tpusim("run-cnn --backend model --model " + d +
                          "/trained.onnx --images 200 --batch 50 --quiet --json");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_GT(nlohmann::json::parse(c.out).at("accuracy").get<double>(), 0.5);
}

}  // namespace
