// SPDX-License-Identifier: Apache-2.0
// tpusim run-cnn as a user runs it: the JSON contract, the model backend, and the errors for an
// unsupported op, a truncated file and a wrong input shape (exit code 1, one clear line).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cnn_models.h"
#include "mini_parse.h"
#include "run_command.h"
#include "temp_dir.h"

namespace {

using namespace cnn_test;

struct Result {
  int code = -1;
  std::string out;
};

Result tpusim(const std::string& args) {
  const test_support::CommandResult c =
      test_support::run_command(std::string(TPUSIM_PATH) + " run-cnn " + args + " 2>&1");
  Result r;
  r.code = c.code;
  r.out = c.out;
  return r;
}

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string path = test_support::temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(RunCnnCli, JsonOnTheChip) {
  const Result r = tpusim("--images 16 --batch 8 --quiet --json");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* key :
       {"\"model\"", "\"images\": 16", "\"batch\": 8", "\"accuracy\"", "\"matches_golden\": true",
        "\"cycles_total\"", "\"cycles_per_image\"", "\"mxu_utilization\"",
        "\"dma_bytes_per_image\"", "\"wall_seconds\"", "\"sim_cycles_per_second\"", "\"layers\"",
        "\"utilization\"", "\"name\": \"/conv1/Conv\"", "\"op\": \"Gemm\"",
        "\"cycles_estimated\": false"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
}

TEST(RunCnnCli, ModelBackendAndHumanOutput) {
  const Result r = tpusim("--backend model --images 10 --batch 4 --offset 20");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("#20"), std::string::npos) << r.out;  // per-image lines with class names
  EXPECT_NE(r.out.find("Ankle boot"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bit-exact with the integer reference: yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("estimated"), std::string::npos) << r.out;
}

TEST(RunCnnCli, UnsupportedOp) {
  OnnxGraph g("bad");
  g.input("input", {1, 1, 28, 28});
  g.init_float("w", {4, 1, 3, 3}, std::vector<float>(36, 0.1f));
  g.node("Conv", {"input", "w"}, {"c"}, {}, "conv");
  g.node("LRN", {"c"}, {"p"}, {OnnxAttr::Int("size", 3)}, "lrn_1");
  g.output("p");
  const Result r =
      tpusim("--model " + temp_file("unsupported.onnx", g.serialize()) + " --images 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("node 'lrn_1' (LRN): is not supported. Supported ops: Conv"),
            std::string::npos)
      << r.out;
}

TEST(RunCnnCli, TruncatedFile) {
  std::ifstream f(bundled_model(), std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  const std::string bytes = s.str();
  const Result r = tpusim(
      "--model " + temp_file("truncated.onnx", bytes.substr(0, bytes.size() / 3)) + " --images 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("truncated"), std::string::npos) << r.out;
}

TEST(RunCnnCli, WrongInputShape) {
  const std::string model = random_cnn_onnx("cifar", {3, 32, 32}, {{8, 3, 1, 1, true}}, {10}, 1);
  const Result r = tpusim("--model " + temp_file("cifar.onnx", model) + " --images 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("wrong input shape"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[3, 32, 32]"), std::string::npos) << r.out;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// --report DIR (created, nested) and --timeline F on the chip: the files, and what they hold.
TEST(RunCnnCli, ReportAndTimeline) {
  const std::string dir = test_support::temp_dir() + "/run_cnn_report/a/b";
  const std::string tl = test_support::temp_dir() + "/run_cnn_timeline.json";
  std::remove(tl.c_str());
  const Result r = tpusim("--images 4 --batch 4 --quiet --report " + dir + " --timeline " + tl);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("report: " + dir + "/utilization.svg"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("timeline: " + tl), std::string::npos) << r.out;

  const std::string svg = slurp(dir + "/utilization.svg");
  ASSERT_NO_THROW(mini::check_xml(svg)) << svg;
  for (const char* layer : {"/conv1/Conv", "/conv2/Conv", "/fc1/Gemm", "/fc2/Gemm"})
    EXPECT_NE(svg.find(std::string("<g class=\"layer\" data-layer=\"") + layer + "\">"),
              std::string::npos)
        << layer;
  EXPECT_NE(svg.find("fashion_cnn.onnx on tpu-rtl: N = 16, batch 4"), std::string::npos);
  EXPECT_NE(slurp(dir + "/index.html").find("utilization.svg"), std::string::npos);
  ASSERT_NO_THROW(mini::check_xml(slurp(dir + "/energy.svg")));
  EXPECT_NE(r.out.find(dir + "/energy.svg"), std::string::npos) << r.out;
  const nlohmann::json rep = nlohmann::json::parse(slurp(dir + "/report.json"));
  EXPECT_EQ(rep.at("images").get<double>(), 4);
  EXPECT_EQ(rep.at("layers").size(), 4u);

  const nlohmann::json j = nlohmann::json::parse(slurp(tl));
  size_t slices = 0;
  std::set<std::string> tracks;
  for (const auto& x : j.at("traceEvents")) {
    if (x.at("ph").get<std::string>() == "X") ++slices;
    if (x.at("ph").get<std::string>() == "M" && x.at("name").get<std::string>() == "thread_name")
      tracks.insert(x.at("args").at("name").get<std::string>());
  }
  EXPECT_EQ(double(slices), j.at("otherData").at("events").get<double>());
  EXPECT_EQ(double(slices) + 1,
            j.at("otherData").at("instructions").get<double>());  // every instruction but the halt
  for (const char* unit : {"read_host", "read_weights", "matmul", "activate", "write_host"})
    EXPECT_TRUE(tracks.count(unit)) << unit;
  EXPECT_EQ(j.at("displayTimeUnit").get<std::string>(), "ns");
}

// Paths that cannot be written and option combinations that cannot work fail before the chip
// runs, saying what, where and what was expected.
TEST(RunCnnCli, ReportAndTimelineErrors) {
  Result r = tpusim("--images 1 --timeline /nonexistent-dir-tpusim/t.json");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--timeline /nonexistent-dir-tpusim/t.json: cannot write: directory "
                       "/nonexistent-dir-tpusim "
                       "does not exist (expected a path in an existing directory)"),
            std::string::npos)
      << r.out;

  const std::string file = temp_file("not_a_dir", "x");
  r = tpusim("--images 1 --report " + file);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--report " + file + ": exists and is not a directory"), std::string::npos)
      << r.out;

  r = tpusim("--images 1 --report " + file + "/sub");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--report " + file + "/sub: cannot create the directory"), std::string::npos)
      << r.out;

  r = tpusim("--images 1 --backend model --timeline " + test_support::temp_dir() + "/t.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--timeline needs --backend rtl: the model backend has no timing"),
            std::string::npos)
      << r.out;

  r = tpusim("--images 1 --no-profile --report " + test_support::temp_dir() + "/rep");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--report charts the per-layer profile: drop --no-profile"),
            std::string::npos)
      << r.out;
}

// The files in `dir` whose names start with '.' (OutputFile temporaries left behind).
std::vector<std::string> hidden_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().filename().string()[0] == '.') out.push_back(f.path().string());
  return out;
}

// A run that fails (here: --max-cycles too low) leaves an existing --timeline file and report
// files exactly as they were, creates no report file, and leaves no temporary file behind.
TEST(RunCnnCli, FailedRunLeavesOutputFilesAlone) {
  const std::string dir = test_support::temp_dir() + "/run_cnn_failed";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/report");
  const std::string tl = temp_file("run_cnn_failed/t.json", "OLD TIMELINE");
  const std::string old_json = temp_file("run_cnn_failed/report/report.json", "OLD REPORT");
  const Result r = tpusim("--images 2 --batch 2 --quiet --max-cycles 100 --timeline " + tl +
                          " --report " + dir + "/report");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("did not halt within 100 cycles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("raise it with --max-cycles"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(tl), "OLD TIMELINE");
  EXPECT_EQ(slurp(old_json), "OLD REPORT");
  EXPECT_FALSE(std::filesystem::exists(dir + "/report/utilization.svg"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/report/index.html"));
  EXPECT_EQ(hidden_files(dir), std::vector<std::string>{});
  EXPECT_EQ(hidden_files(dir + "/report"), std::vector<std::string>{});
}

// A NaN or an infinite weight is refused, naming the tensor and the element.
TEST(RunCnnCli, NonFiniteWeights) {
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    OnnxGraph g("nan");
    g.input("input", {1, 1, 28, 28});
    std::vector<float> w(36, 0.1f);
    w[13] = bad;  // [1, 0, 1, 1] of [4, 1, 3, 3]
    g.init_float("conv.w", {4, 1, 3, 3}, w);
    g.node("Conv", {"input", "conv.w"}, {"c"}, {}, "conv");
    g.node("Flatten", {"c"}, {"f"}, {}, "flat");
    g.init_float("fc.w", {10, 4 * 26 * 26}, std::vector<float>(10 * 4 * 26 * 26, 0.01f));
    g.node("Gemm", {"f", "fc.w"}, {"logits"}, {OnnxAttr::Int("transB", 1)}, "fc");
    g.output("logits", {1, 10});
    const Result r =
        tpusim("--model " + temp_file("nonfinite.onnx", g.serialize()) + " --images 1");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(
        r.out.find(
            std::string("initializer 'conv.w': element 13 [1,0,1,1] of shape [4, 1, 3, 3] is ") +
            (std::isnan(bad) ? "NaN" : "+Inf") + " (expected finite numbers)"),
        std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("bit-exact"), std::string::npos) << r.out;
  }
}

// Finite weights whose calibrated output range overflows float32 (3e38 per weight): refused
// naming the model and the layer, never run with an infinite scale (every output NaN).
TEST(RunCnnCli, NonFiniteCalibratedRange) {
  OnnxGraph g("huge");
  g.input("input", {1, 1, 28, 28});
  g.node("Flatten", {"input"}, {"f"}, {}, "flat");
  g.init_float("fc.w", {10, 784}, std::vector<float>(10 * 784, 3e38f));
  g.node("Gemm", {"f", "fc.w"}, {"logits"}, {OnnxAttr::Int("transB", 1)}, "fc");
  g.output("logits", {1, 10});
  const std::string model = temp_file("huge_range.onnx", g.serialize());
  const Result r = tpusim("--backend model --model " + model + " --images 1 --calibration 2");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(model + ", post-training int8, 2 calibration images: layer 'fc' output: "
                               "the float model gives +Inf on the calibration images"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("bit-exact"), std::string::npos) << r.out;
}

TEST(RunCnnCli, DataIsAFile) {
  const std::string file = temp_file("not_a_data_dir", "x");
  const Result r = tpusim("--data " + file + " --images 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(
      r.out.find("--data " + file + ": is not a directory (expected the Fashion-MNIST directory)"),
      std::string::npos)
      << r.out;
}

TEST(RunCnnCli, ModelIsADirectory) {
  Result r = tpusim("--model " + test_support::temp_dir() + " --images 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(
      r.out.find("--model " + test_support::temp_dir() + ": is a directory (expected a file)"),
      std::string::npos)
      << r.out;
  r = tpusim("--model /dev/zero --images 1");  // would be read forever
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--model /dev/zero: is not a regular file (expected an ONNX model file)"),
            std::string::npos)
      << r.out;
}

// The model backend has no timing: no utilization, in the text or in JSON.
TEST(RunCnnCli, ModelBackendShowsNoUtilization) {
  Result r = tpusim("--backend model --images 8 --batch 8 --quiet");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("; MXU utilization"), std::string::npos)
      << r.out;  // the rtl backend's "; MXU utilization 61.2%"
  EXPECT_NE(r.out.find("no MXU utilization"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('%', r.out.find("layers (")), std::string::npos)
      << r.out;  // no per-layer percentages
  r = tpusim("--backend model --images 8 --batch 8 --quiet --json");
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_NE(r.out.find("{\n"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find("{\n")));
  EXPECT_TRUE(j.at("mxu_utilization").is_null()) << r.out;
  ASSERT_EQ(j.at("layers").size(), 4u) << r.out;
  for (const auto& l : j.at("layers")) EXPECT_TRUE(l.at("utilization").is_null()) << r.out;
}

// No output may overwrite an input: the model inside its own --report directory under a report
// file's name, through a link too; refused before anything runs, the model unchanged.
TEST(RunCnnCli, ReportNeverOverwritesTheModel) {
  const std::string dir = test_support::temp_dir() + "run_cnn_model_in_report";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/rep");
  std::filesystem::copy_file(bundled_model(), dir + "/rep/report.json");
  const std::string before = slurp(dir + "/rep/report.json");
  Result r = tpusim("--backend model --images 1 --model " + dir + "/rep/report.json --report " +
                    dir + "/rep");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--report " + dir + "/rep/report.json: is also an input (--model " + dir +
                       "/rep/report.json); refusing to overwrite it"),
            std::string::npos)
      << r.out;
  std::filesystem::create_directory_symlink(dir + "/rep", dir + "/replink");
  r = tpusim("--backend model --images 1 --model " + dir + "/rep/report.json --report " + dir +
             "/replink");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is also an input (--model"), std::string::npos) << r.out;
  r = tpusim("--images 1 --model " + dir + "/rep/report.json --timeline " + dir +
             "/rep/report.json");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--timeline " + dir + "/rep/report.json: is also an input"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(slurp(dir + "/rep/report.json"), before);
}

// --jobs beyond the batches is capped (each idle shard loaded and calibrated the model); a full
// disk on standard output is exit 1; --labels given a directory says so.
TEST(RunCnnCli, JobsCappedFullDiskAndLabels) {
  Result r = tpusim("--backend model --images 2 --batch 8 --quiet --jobs 12");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--jobs 12 capped at 1: the run has only 1 batch (one process per batch "
                       "at most)"),
            std::string::npos)
      << r.out;
  r = tpusim("--backend model --images 8 --batch 4 --quiet --jobs 12");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--jobs 12 capped at 2: the run has only 2 batches"), std::string::npos)
      << r.out;
  for (const char* extra : {"", " --json"}) {
    const test_support::CommandResult c = test_support::run_command(
        std::string(TPUSIM_PATH) + " run-cnn --backend model --images 2 --quiet" + extra +
        " 2>&1 >/dev/full");
    EXPECT_EQ(c.code, 1) << c.out;
    EXPECT_NE(c.out.find("standard output: write error"), std::string::npos) << c.out;
  }
  r = tpusim("--backend model --images 1 --labels " + test_support::temp_dir());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(": is a directory (expected a text file of class names, one per line)"),
            std::string::npos)
      << r.out;
}

// SIGTERM during a --jobs run says what was running (it said "while starting").
TEST(RunCnnCli, InterruptedJobsSayWhatRan) {
  const std::string base = test_support::temp_dir() + "interrupted_jobs";
  const std::string cmd = "rm -f " + base + ".err " + base + ".rc; " + std::string(TPUSIM_PATH) +
                          " run-cnn --backend model --images 4000 --batch 8 --quiet --jobs 2 "
                          "> /dev/null 2> " +
                          base +
                          ".err & pid=$!; "
                          "i=0; while [ $i -lt 600 ] && ! grep -q /2000 " +
                          base +
                          ".err 2>/dev/null; do sleep 0.2; i=$((i+1)); done; kill -TERM $pid; "
                          "wait $pid; echo $? > " +
                          base + ".rc";
  ASSERT_EQ(std::system(("sh -c '" + cmd + "'").c_str()), 0);
  EXPECT_EQ(slurp(base + ".rc"), "143\n");
  const std::string err = slurp(base + ".err");
  EXPECT_NE(err.find("tpusim run-cnn: interrupted by SIGTERM while running run-cnn in 2 "
                     "processes"),
            std::string::npos)
      << err;
}

// SIGTERM during the run: one line saying how far it got, exit 143, a JSON object with
// "interrupted": true, and the --timeline file as it was.
TEST(RunCnnCli, Interrupted) {
  const std::string tl = temp_file("interrupted_timeline.json", "OLD");
  // Files of this process only (other test processes, other checkouts share TempDir), removed
  // first: the shell starts tpusim in the background and may grep before its 2> truncates.
  const std::string base = test_support::temp_dir() + "/interrupted_" + std::to_string(getpid());
  const std::string cmd = "rm -f " + base + ".out " + base + ".err " + base + ".rc; " +
                          std::string(TPUSIM_PATH) +
                          " run-cnn --images 2000 --batch 8 --quiet --json --timeline " + tl +
                          " > " + base + ".out 2> " + base + ".err & pid=$!; " +
                          // Interrupt once images are running (the first progress line; the
                          // run starts later on a loaded machine), at most 120 s from now.
                          "i=0; while [ $i -lt 600 ] && ! grep -q /2000 " + base +
                          ".err 2>/dev/null; do sleep 0.2; i=$((i+1)); done; kill -TERM $pid; "
                          "wait $pid; echo $? > " +
                          base + ".rc";
  ASSERT_EQ(std::system(("sh -c '" + cmd + "'").c_str()), 0);
  EXPECT_EQ(slurp(base + ".rc"), "143\n");
  const std::string out = slurp(base + ".out"), err = slurp(base + ".err");
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_TRUE(j.at("interrupted").get<bool>()) << out;
  EXPECT_EQ(j.at("status").get<std::string>(), "interrupted") << out;
  EXPECT_EQ(j.at("total").get<double>(), 2000) << out;
  EXPECT_GT(j.at("done").get<double>(), 0) << out << err;
  EXPECT_NE(err.find("tpusim run-cnn: interrupted by SIGTERM while running 2000 images"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(" of 2000 images done"), std::string::npos) << err;
  EXPECT_EQ(slurp(tl), "OLD");
}

}  // namespace

namespace {

// --zoo: an ImageNet-size network that spills to host memory, on the golden model (about 10 s).
TEST(RunCnnCli, ZooNetworkSpillsAndReportsDma) {
  const Result r = tpusim("--zoo mobilenetv2 --backend model --quiet --json --no-profile");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* key : {"\"model\": \"mobilenetv2\"", "\"matches_golden\": true",
                          "\"spill\": true", "\"scratch_bytes\"", "\"spill_in\"", "\"spill_out\"",
                          "\"weights\"", "\"macs_per_image\": 300836992"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
}

TEST(RunCnnCli, ZooAndMemoryOptionErrors) {
  Result r = tpusim("--zoo vgg16 --backend model");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("unknown zoo model 'vgg16' (expected one of: resnet18, resnet50, "
                       "mobilenetv2)"),
            std::string::npos)
      << r.out;
  r = tpusim("--zoo resnet18 --model " + bundled_model());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("give one of them"), std::string::npos) << r.out;
  r = tpusim("--backend model --mem-latency 20");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--mem-latency needs --backend rtl"), std::string::npos) << r.out;
  r = tpusim("--mem-bandwidth 5000");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--mem-bandwidth 5000 is out of range"), std::string::npos) << r.out;
}

// The host memory's bandwidth is a run option: a slower memory costs cycles, same logits.
TEST(RunCnnCli, MemoryBandwidthOption) {
  const Result fast = tpusim("--images 8 --batch 8 --quiet --json --no-profile");
  const Result slow =
      tpusim("--images 8 --batch 8 --quiet --json --no-profile --mem-bandwidth 2 --mem-latency 50");
  ASSERT_EQ(fast.code, 0) << fast.out;
  ASSERT_EQ(slow.code, 0) << slow.out;
  EXPECT_NE(slow.out.find("\"memory\": {\"latency_cycles\": 50, \"bytes_per_cycle\": 2}"),
            std::string::npos)
      << slow.out;
  auto cycles = [](const std::string& out) {
    const size_t at = out.find("\"cycles_total\": ");
    return at == std::string::npos ? 0ull : std::stoull(out.substr(at + 16));
  };
  EXPECT_GT(cycles(slow.out), cycles(fast.out) * 3 / 2) << slow.out;
}

}  // namespace
