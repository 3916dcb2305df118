// SPDX-License-Identifier: Apache-2.0
// tpusim run-cnn: a CNN from an ONNX file, quantized to int8 and compiled to one chip program
// per batch, on Fashion-MNIST test images; checked image by image against the integer
// reference of the quantized network (driver/cnn). Built when tpu_cnn is (libonnx-dev).
#if __has_include("onnx_import.h")

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>

#include "cmd_run_cnn_pod_rtl.h"
#include "cnn_shard.h"
#include "dataset.h"
#include "device_rtl.h"
#include "evaluate.h"
#include "image_dataset.h"
#include "interrupt.h"
#include "json_text.h"
#include "onnx_import.h"
#include "output_file.h"
#include "pod_inference.h"
#include "pod_options.h"
#include "quantize.h"
#include "report.h"
#include "sharding.h"
#include "tpusim.h"
#include "zoo.h"

namespace tpusim {

const RunCnnPodRtl*& run_cnn_pod_rtl() {
  static const RunCnnPodRtl* pod = nullptr;
  return pod;
}

}  // namespace tpusim

namespace {

// The bundled model: beside an installed tpusim (<prefix>/bin/../share/tpu_rtl/models,
// TPUSIM_INSTALL_MODELS_REL), else in the source tree the build came from.
std::string default_model() {
  try {
    const std::filesystem::path installed =
        std::filesystem::path(tpusim::self_executable()).parent_path() / TPUSIM_INSTALL_MODELS_REL /
        "fashion_cnn.onnx";
    std::error_code ec;
    if (std::filesystem::is_regular_file(installed, ec))
      return installed.lexically_normal().string();
  } catch (const std::runtime_error&) {  // no /proc/self/exe: the source tree's
  }
  return std::string(TPU_CNN_SOURCE_DIR) + "/models/fashion_cnn.onnx";
}

std::string thousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

// run-cnn's options, read and checked.
struct CnnOptions {
  std::string model = default_model(), data, report_dir, timeline_file, dataset, labels_file, zoo;
  std::string energy_table_file;  // --energy-table (empty: the built-in table)
  std::optional<tpu::EnergyTable> energy_table;
  tpu::cnn::Preprocess pre;
  bool json = false, no_profile = false, quiet = false;
  tpusim::DeviceOptions dev;
  int images = 100, offset = 0, top_k = 0, calibration = 200;
  uint32_t batch = 8;
  // --chips P (0: one chip, no pod): the batch split over a pod, logits gathered to chip 0.
  uint32_t chips = 0;
  tpu::PodTopology topology;
  tpu::LinkTiming timing;
  // The images are floats (an image folder or the zoo's random ones), not Fashion-MNIST bytes.
  bool floats() const { return !dataset.empty() || !zoo.empty(); }
};

void check_cnn_options(const tpusim::po::variables_map& vm, CnnOptions& o);

// Reads the options; false for --help. Throws UsageError for bad ones.
bool parse_cnn_options(const tpusim::Args& args, CnnOptions& o, tpusim::po::variables_map& vm) {
  namespace po = tpusim::po;
  po::options_description opts("options");
  opts.add_options()("model", po::value<std::string>(&o.model),
                     "ONNX model (default: the bundled models/fashion_cnn.onnx)")(
      "zoo", po::value<std::string>(&o.zoo),
      "instead of --model: an ImageNet-size network built in C++ with torchvision's architecture "
      "and seeded random weights (resnet18, resnet50, mobilenetv2; 224x224x3, 1000 classes), run "
      "on random images (no labels: accuracy is meaningless, bit-exactness is checked); "
      "--images and --calibration default to 1")(
      "images", po::value<std::string>()->default_value("100"),
      "number of test images (1..10000; with --dataset 1..1000000, default all of its images; "
      "with --zoo default 1)")("offset", po::value<std::string>()->default_value("0"),
                               "first test image (0..9999; with --dataset 0..999999)")(
      "batch", po::value<std::string>()->default_value("8"), "images per chip run (1..4095)")(
      "calibration", po::value<std::string>()->default_value("200"),
      "training images used to calibrate a float model's activations (1..60000; with --dataset "
      "the first selected images; with --zoo default 1)")(
      "data", po::value<std::string>(&o.data),
      "Fashion-MNIST directory (default $TPU_FASHION_MNIST_DIR or "
      "/usr/share/datasets/fashion-mnist)")(
      "no-profile", po::bool_switch(&o.no_profile),
      "skip the per-layer profile (rtl: from the first batch's timeline; model: extra runs of the "
      "first batch)")("quiet", po::bool_switch(&o.quiet), "no per-image lines")(
      "json", po::bool_switch(&o.json),
      "print one JSON object, also on failure (per-image lines and progress go to stderr)")(
      "report", po::value<std::string>(&o.report_dir),
      "write DIR/utilization.svg (per-layer cycles against ideal and SCALE-Sim, MXU utilization), "
      "DIR/index.html and DIR/report.json; DIR is created if missing; files are replaced only by "
      "complete ones")("dataset", po::value<std::string>(&o.dataset),
                       "a folder of PNG/JPEG images in the ImageFolder layout (one subfolder per "
                       "class, sorted names = class "
                       "indices) instead of Fashion-MNIST; --images defaults to all of them")(
      "resize", po::value<std::string>(),
      "--dataset: S (shorter side to S, keeping the aspect ratio) or HxW")(
      "center-crop", po::value<std::string>(),
      "--dataset: S or HxW from the center, after --resize")(
      "mean", po::value<std::string>(),
      "--dataset: subtracted after /255, one value or one per channel (a,b,c)")(
      "std", po::value<std::string>(),
      "--dataset: divides after --mean, one value or one per channel")(
      "channels", po::value<std::string>(),
      "--dataset: rgb or gray (default: the model's input channels)")(
      "labels", po::value<std::string>(&o.labels_file), "class names, one per line")(
      "top-k", po::value<std::string>(),
      "per-image lines show the K best classes with their scores")(
      "timeline", po::value<std::string>(&o.timeline_file),
      "write the first batch's instruction timeline, from the chip's trace port, as Chrome "
      "trace-event "
      "JSON for ui.perfetto.dev or chrome://tracing (rtl backend only; replaced only by a complete "
      "one)")("energy-table", po::value<std::string>(&o.energy_table_file),
              "energy per action for the JSON's \"energy\" (docs/energy.md; default: the built-in "
              "energy/horowitz_45nm.json)")(
      "chips", po::value<std::string>(),
      "split every batch over a pod of P chips (1..64; --backend model: the pod of golden "
      "models; rtl: the RTL pod of tpusim_train_n16): each chip runs the int8 program on its "
      "slice, the logits are gathered to chip 0 over the links and read from chip 0 only "
      "(docs/pod.md \"Inference across chips\")")("topology", po::value<std::string>(),
                                                  "with --chips: ring (default) or torus:XxY")(
      "ici-bandwidth", po::value<std::string>(),
      "with --chips: link bytes per cycle and direction (default 16; rtl: the built pod's)")(
      "ici-latency", po::value<std::string>(), "with --chips: link latency in cycles (default 64)");
  tpusim::add_memory_options(opts);
  tpusim::add_device_options(opts, o.dev, /*with_vcd=*/true, tpusim::kDerivedMaxCycles);
  tpusim::add_dw_option(opts);
  tpusim::add_shard_options(opts);
  if (!tpusim::parse_options(
          args,
          "tpusim run-cnn [--model F.onnx | --zoo NAME] [--images N] [--offset K] [--batch B] "
          "[--backend "
          "rtl|model] "
          "[--vcd F] [--vcd-window FROM:TO] [--json] [--report DIR] [--timeline F.json]\n"
          "       [--dataset DIR [--resize S|HxW] [--center-crop S|HxW] [--mean M] [--std S] "
          "[--channels rgb|gray]] "
          "[--labels FILE] [--top-k K] [--jobs J | --shard I/K]\n"
          "       [--chips P [--topology ring|torus:XxY] [--ici-bandwidth B] [--ici-latency L]]",
          "Imports the ONNX model, quantizes it (per-output-channel int8 weights, int32 biases, "
          "activation "
          "scales from --calibration training images; QDQ/QLinear models keep their own), compiles "
          "every "
          "layer to one chip program per batch and runs the Fashion-MNIST test images: the host "
          "writes the "
          "images and reads the logits, nothing in between. Prints each image's class, the "
          "accuracy of the "
          "chip, the float model and the integer reference, whether every image's logits equal the "
          "reference (matches_golden), cycles per image, MXU utilization (useful MACs / (cycles * "
          "N^2)), "
          "DMA bytes per image, a per-layer profile and the wall time. Exit code 1 if any image "
          "differs "
          "from the reference. --jobs J, --shard I/K and mpirun / srun split the images into whole "
          "batches across processes with the same results (docs/scaling.md).",
          opts, {}, vm)) {
    return false;
  }
  check_cnn_options(vm, o);
  return true;
}

// --zoo NAME, and the model file.
void check_model(const tpusim::po::variables_map& vm, const CnnOptions& o) {
  if (!o.zoo.empty() && vm.count("model"))
    throw tpusim::UsageError("--zoo " + o.zoo + " and --model " + o.model + ": give one of them");
  if (!o.zoo.empty() && !o.dataset.empty())
    throw tpusim::UsageError("--zoo runs random images: drop --dataset " + o.dataset);
  if (!o.zoo.empty()) {
    const auto names = tpu::cnn::zoo_names();
    if (std::find(names.begin(), names.end(), o.zoo) == names.end()) {
      try {
        tpu::cnn::zoo_onnx(o.zoo);
      } catch (const tpu::cnn::Error& e) {
        throw tpusim::UsageError(std::string("--zoo: ") + e.what());
      }
    }
  }
}

// --chips P [--topology] [--ici-bandwidth] [--ici-latency]: inference across a pod.
void check_pod_options(const tpusim::po::variables_map& vm, CnnOptions& o) {
  if (!tpusim::read_pod_options(vm, o.chips, o.topology, o.timing)) return;
  const std::string chips = "--chips " + std::to_string(o.chips);
  auto refuse = [&](const char* opt, const std::string& why) {
    if (vm.count(opt))
      throw tpusim::UsageError(std::string("--") + opt + " with " + chips + ": " + why);
  };
  refuse("timeline", "the instruction timeline is of one chip (drop --chips)");
  refuse("report", "the report charts one chip's per-layer profile (drop --chips)");
  refuse("vcd", "the waveform is of one chip (drop --chips)");
  refuse("vcd-window", "the waveform is of one chip (drop --chips)");
  refuse("mem-latency", "the pod's device memories have no timing options (drop --chips)");
  refuse("mem-bandwidth", "the pod's device memories have no timing options (drop --chips)");
  refuse("jobs", "the pod is one process (drop --jobs)");
  refuse("shard", "the pod is one process (drop --shard)");
}

void check_cnn_options(const tpusim::po::variables_map& vm, CnnOptions& o) {
  check_model(vm, o);
  check_pod_options(vm, o);
  const bool folder = !o.dataset.empty();
  o.images = int(tpusim::int_option(vm, "images", 1, folder ? 1000000 : 10000));
  if (!o.zoo.empty() && vm["images"].defaulted()) o.images = 1;
  o.offset = int(tpusim::int_option(vm, "offset", 0, folder ? 999999 : 9999));
  o.top_k = vm.count("top-k") ? int(tpusim::int_option(vm, "top-k", 1, 1000)) : 0;
  for (const char* opt : {"resize", "center-crop", "mean", "std", "channels"})
    if (vm.count(opt) && !folder)
      throw tpusim::UsageError(std::string("--") + opt + " needs --dataset DIR");
  try {
    auto text = [&](const char* opt) {
      return vm.count(opt) ? vm[opt].as<std::string>() : std::string();
    };
    o.pre = tpu::cnn::parse_preprocess(text("resize"), text("center-crop"), text("mean"),
                                       text("std"), text("channels"));
  } catch (const tpu::cnn::Error& e) {
    throw tpusim::UsageError(e.what());
  }
  o.batch = uint32_t(tpusim::int_option(vm, "batch", 1, 4095));
  o.calibration = int(tpusim::int_option(vm, "calibration", 1, 60000));
  if (!o.zoo.empty() && vm["calibration"].defaulted()) o.calibration = 1;
  if (!folder && o.offset + o.images > 10000)
    throw tpusim::UsageError("--offset + --images is past the 10,000 test images");
  if (o.data.empty()) o.data = tpu::cnn::fashion_mnist_dir();
  std::error_code ec;
  if (std::filesystem::exists(o.data, ec) && !std::filesystem::is_directory(o.data, ec))
    throw std::runtime_error("--data " + o.data +
                             ": is not a directory (expected the Fashion-MNIST directory)");
  if (!o.report_dir.empty() && o.no_profile)
    throw tpusim::UsageError("--report charts the per-layer profile: drop --no-profile");
  if (!o.timeline_file.empty() && o.dev.backend != "rtl")
    throw tpusim::UsageError("--timeline needs --backend rtl: the " + o.dev.backend +
                             " backend has no timing, so it has no instruction timeline");
  if (!o.energy_table_file.empty())
    o.energy_table = tpusim::energy_table_option(o.energy_table_file);
  if (!o.zoo.empty()) {
    o.model = o.zoo;
    return;
  }
  tpu::check_not_directory(o.model, "--model");
  // The importer reads the whole file: a device or pipe (/dev/zero) would never end.
  const auto st = std::filesystem::status(o.model, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw std::runtime_error("--model " + o.model +
                             ": is not a regular file (expected an ONNX model file)");
}

// No output may be an input: checked before anything runs.
void check_cnn_paths(const CnnOptions& o) {
  tpu::RunPaths paths;
  if (o.zoo.empty()) paths.input("--model", o.model);
  if (o.zoo.empty() && o.dataset.empty()) paths.input("--data", o.data);
  paths.input("--dataset", o.dataset).input("--labels", o.labels_file);
  paths.input("--energy-table", o.energy_table_file);
  paths.output("--timeline", o.timeline_file).output("--vcd", o.dev.vcd);
  tpusim::add_cnn_report_outputs(paths, o.report_dir);
  paths.check();
}

// --dataset DIR: scanned before the shards are cut (it sets the default --images).
std::optional<tpu::cnn::ImageFolder> scan_dataset(const tpusim::po::variables_map& vm,
                                                  CnnOptions& o) {
  if (o.dataset.empty()) return std::nullopt;
  std::optional<tpu::cnn::ImageFolder> folder;
  try {
    folder = tpu::cnn::scan_image_folder(o.dataset);
  } catch (const tpu::cnn::Error& e) {
    throw std::runtime_error(std::string("--dataset ") + e.what());
  }
  if (vm["images"].defaulted()) o.images = int(folder->files.size()) - o.offset;
  if (o.offset + o.images > int(folder->files.size()))
    throw tpusim::UsageError("--offset + --images is past the " +
                             std::to_string(folder->files.size()) + " images of " + o.dataset);
  return folder;
}

// This process's images: whole batches [first, first + count) of the selection, the same ones
// in every shard count.
struct ShardImages {
  tpu::ShardSpec shard;
  int first = 0, count = 0;
};
ShardImages shard_images(const CnnOptions& o, const tpusim::ShardPlan& plan) {
  ShardImages s;
  s.shard = plan.mode == tpusim::ShardPlan::Mode::Single ? tpu::ShardSpec{} : plan.shard;
  const uint64_t batches = (uint64_t(o.images) + o.batch - 1) / o.batch;
  const tpu::ShardRange range = tpu::shard_range(batches, s.shard);
  s.first = int(range.begin * o.batch);
  s.count = int(std::min<uint64_t>(range.end * o.batch, uint64_t(o.images))) - s.first;
  return s;
}

// The network, its quantization and this process's images.
struct CnnInputs {
  tpu::cnn::Network net;
  tpu::cnn::QuantNetwork q;
  std::string how;                              // how it was quantized
  tpu::cnn::ImageSet test;                      // Fashion-MNIST
  tpu::cnn::FloatImageSet images, calibration;  // floats(): this shard's; a shard's calibration
  std::vector<std::string> files;               // per image of the whole selection (--dataset)
};

// Loads this process's images (and the class names into `pres`).
void load_images(const CnnOptions& o, const std::optional<tpu::cnn::ImageFolder>& folder,
                 const ShardImages& mine, CnnInputs& in, tpusim::CnnPresentation& pres) {
  if (!o.zoo.empty()) {  // this shard's random images (seeded by the image index), no labels
    in.images.shape = in.net.input;
    in.images.images = tpu::cnn::zoo_images(in.net.input, o.offset + mine.first + mine.count, 12);
    in.images.images.erase(in.images.images.begin(),
                           in.images.images.begin() + o.offset + mine.first);
    in.images.labels.assign(size_t(mine.count), -1);
  } else if (o.dataset.empty()) {
    in.test = tpu::cnn::load_fashion_mnist(o.data, false);
    tpu::cnn::check_input_shape(in.net.input, o.model, 1, in.test.rows, in.test.cols,
                                "Fashion-MNIST");
  } else {
    if (mine.count > 0)
      in.images = tpu::cnn::load_image_folder(*folder, o.pre, in.net.input, o.offset + mine.first,
                                              mine.count);
    if (mine.shard.sharded())  // calibration: the first selected images, whatever the shard
      in.calibration = tpu::cnn::load_image_folder(*folder, o.pre, in.net.input, o.offset,
                                                   std::min(o.calibration, o.images));
    in.files.assign(folder->files.begin() + o.offset, folder->files.begin() + o.offset + o.images);
    pres.class_names = folder->classes;
  }
  if (!o.labels_file.empty()) {
    try {
      pres.class_names = tpu::cnn::read_labels_file(o.labels_file);
    } catch (const tpu::cnn::Error& e) {
      throw std::runtime_error(std::string("--labels ") + e.what());
    }
  }
}

// Quantizes the network: as in the model file, or calibrated (post-training int8).
void quantize(const CnnOptions& o, const ShardImages& mine, CnnInputs& in) {
  if (tpu::cnn::fully_quantized(in.net)) {
    in.q = tpu::cnn::quantize_model(in.net, {});
    in.how = "quantized in the model file";
    return;
  }
  std::vector<std::vector<float>> cal;
  if (!o.zoo.empty()) {
    cal = tpu::cnn::zoo_images(in.net.input, o.calibration, 11);
  } else if (o.dataset.empty()) {
    const tpu::cnn::ImageSet train = tpu::cnn::load_fashion_mnist(o.data, true);
    for (int i = 0; i < std::min(o.calibration, train.count); ++i)
      cal.push_back(tpu::cnn::pixels_to_float(train.image(i), int64_t(train.rows) * train.cols));
  } else {  // the folder has no training split: calibrate on the first of its selected images
    const auto& from = mine.shard.sharded() ? in.calibration : in.images;
    for (int i = 0; i < std::min(o.calibration, from.count()); ++i)
      cal.push_back(from.images[size_t(i)]);
  }
  in.how = "post-training int8, " + std::to_string(cal.size()) + " calibration images" +
           (!o.zoo.empty()      ? " (random)"
            : o.dataset.empty() ? ""
                                : " (the first selected images of --dataset)");
  try {
    in.q = tpu::cnn::quantize_model(in.net, cal);
  } catch (const tpu::cnn::Error& e) {  // e.g. a calibrated range that is not finite
    throw std::runtime_error(o.model + ", " + in.how + ": " + e.what());
  }
}

// Everything about the inputs, checked before the chip is built.
CnnInputs load_inputs(const CnnOptions& o, const std::optional<tpu::cnn::ImageFolder>& folder,
                      const ShardImages& mine, tpusim::CnnPresentation& pres) {
  CnnInputs in;
  in.net = o.zoo.empty() ? tpu::cnn::load_onnx(o.model) : tpu::cnn::zoo_network(o.zoo, 1);
  if (!o.dataset.empty()) {
    try {
      tpu::cnn::check_preprocess(o.pre, in.net.input);
    } catch (const tpu::cnn::Error& e) {
      throw tpusim::UsageError(e.what());
    }
  }
  pres.class_names = tpu::cnn::fashion_mnist_classes();
  pres.top_k = o.top_k;
  pres.display_offset = o.floats() ? o.offset : 0;
  load_images(o, folder, mine, in, pres);
  quantize(o, mine, in);
  pres.output_scale = double(in.q.output_q().scale);
  pres.output_zero_point = in.q.output_q().zero_point;
  return in;
}

// The model lines printed before the run.
std::string model_header(const std::string& model, const CnnInputs& in) {
  std::string h;
  char line[512];
  std::snprintf(line, sizeof line, "model: %s, %zu layers, input %s, %d classes (%s)\n",
                model.c_str(), in.q.layers.size(), in.q.input.str().c_str(), in.q.classes(),
                in.how.c_str());
  h += line;
  for (const auto& l : in.q.layers) {
    std::snprintf(line, sizeof line, "  %-14s %-7s %s -> %s, %s MACs\n", l.name.c_str(),
                  l.op.c_str(), l.in.str().c_str(), l.out.str().c_str(),
                  thousands(uint64_t(l.macs())).c_str());
    h += line;
  }
  return h;
}

// How this process's images run: evaluate() on the chip, or evaluate_pod() on the pod.
struct Evaluator {
  std::function<tpu::cnn::Evaluation(const tpu::cnn::EvalOptions&)> run;
  std::string backend;
  uint32_t chip_n = 0;
};

// Runs this process's images on the chip (or the pod): per-image lines on `info` as they finish
// (when `live_lines`), progress on stderr.
tpu::cnn::Evaluation run_images(const Evaluator& ev, const CnnOptions& o, const CnnInputs& in,
                                const ShardImages& mine, std::FILE* info, bool live_lines,
                                const tpusim::CnnPresentation& live, tpusim::Clock::time_point t0) {
  const bool first_shard = mine.shard.index == 0;
  tpu::cnn::EvalOptions eo;
  eo.offset = o.floats() ? 0 : o.offset + mine.first;  // in.images holds its images already
  eo.count = mine.count;
  eo.batch = o.batch;
  eo.profile = !o.no_profile && first_shard;
  eo.max_cycles = o.dev.max_cycles_given ? o.dev.max_cycles : 0;
  eo.timeline = !o.timeline_file.empty() && first_shard;
  eo.energy_table = o.energy_table ? &*o.energy_table : nullptr;
  auto last_progress = tpusim::Clock::now();
  int correct_so_far = 0, differ_so_far = 0;
  const tpu::ShardSpec& shard = mine.shard;
  const std::string part = shard.sharded() ? " (shard " + shard.str() + ": images " +
                                                 std::to_string(mine.first) + ".." +
                                                 std::to_string(mine.first + mine.count - 1) + ")"
                                           : "";
  tpusim::set_activity("running " + std::to_string(mine.count) + " images of " + o.model +
                       " on the " + o.dev.backend + " backend" + part +
                       (o.chips ? " (a pod of " + std::to_string(o.chips) + " chips)" : ""));
  tpusim::set_progress(0, uint64_t(mine.count), "images");
  // Image indices relative to the selection (as one process numbers them).
  const int index_shift = o.floats() ? mine.first : 0;
  eo.on_batch = [&](const std::vector<tpu::cnn::ImageResult>& rs, int done, int total) {
    for (const auto& r : rs) {
      correct_so_far += r.predicted == r.label;
      differ_so_far += !r.matches_reference;
    }
    tpusim::set_progress(uint64_t(done), uint64_t(total), "images");
    tpusim::set_count("correct", uint64_t(correct_so_far));
    tpusim::set_count("mismatched_images", uint64_t(differ_so_far));
    if (live_lines) {
      for (auto r : rs) {
        r.index += index_shift;
        tpusim::print_cnn_image_line(info, r, live);
      }
    }
    std::fflush(info);
    const auto now = tpusim::Clock::now();
    if (done == total || std::chrono::duration<double>(now - last_progress).count() > 5.0) {
      const double secs = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "run-cnn%s: %d/%d images, %.1f s elapsed, about %.0f s left\n",
                   shard.sharded() ? (" " + shard.str()).c_str() : "", done, total, secs,
                   secs / done * (total - done));
      last_progress = now;
    }
  };
  tpu::cnn::Evaluation e;
  if (mine.count > 0) {
    e = ev.run(eo);
  } else {  // more shards than batches: nothing to run
    e.backend = ev.backend;
    e.chip_n = ev.chip_n;
  }
  for (auto& r : e.results) r.index += index_shift;
  e.offset = o.floats() ? o.offset : o.offset + mine.first;
  if (o.dev.backend == "rtl" && o.chips == 0) {
    e.mem_latency_cycles = o.dev.mem_latency >= 0 ? o.dev.mem_latency : 10;
    e.mem_bytes_per_cycle = o.dev.mem_bandwidth >= 0 ? o.dev.mem_bandwidth : 16;
  }
  e.model = o.model;
  e.quantization = in.how;
  return e;
}

// --timeline: writes the first batch's timeline; returns the "timeline: ..." line.
std::string write_timeline(tpu::OutputFile& out, const std::string& file,
                           const tpu::cnn::Evaluation& e) {
  out.write(tpu::cnn::timeline_json(e));
  out.commit();
  char note[1024];
  std::snprintf(
      note, sizeof note,
      "timeline: %s (%zu instructions of the first batch, %s cycles; open in ui.perfetto.dev)\n",
      file.c_str(), e.timeline.events.size(), thousands(e.timeline.cycles).c_str());
  return note;
}

// --jobs children, --shard and mpirun ranks: how run-cnn shards (tpusim::ShardedCommand).
tpusim::ShardedCommand sharded_command(const tpusim::Args& args, const CnnOptions& o,
                                       tpusim::CnnReportFiles& report) {
  tpusim::ShardedCommand c;
  c.name = "run-cnn";
  c.args = args;
  c.child_drop_with_value = {"--jobs", "--report", "--timeline"};
  c.child_drop_switch = {"--json", "--quiet"};
  c.child_extra = [&o](int i) {
    tpusim::Args a = {"--quiet"};
    if (i == 0 && !o.timeline_file.empty()) a.insert(a.end(), {"--timeline", o.timeline_file});
    return a;
  };
  c.merge_and_print = [&o, &report](const std::vector<std::string>& texts,
                                    const std::vector<std::string>& names, double wall) {
    tpusim::MergedCnn m = tpusim::merge_cnn_shards(texts, names);
    m.e.wall_seconds = wall;
    tpusim::print_merged_cnn(m, o.json, o.quiet, report);
    return m.exit_code;
  };
  return c;
}

// --chips P --backend rtl in a tpusim without an RTL pod whose chip has no VMEM (the int8
// chip): the same command runs in tpusim_train_n<N> next to this executable, which links the
// RTL pod of its training chip (it replaces this process: same output, same exit code).
void exec_pod_tpusim(const tpusim::Args& args, const CnnOptions& o) {
  namespace fs = std::filesystem;
  const std::string chips = "--chips " + std::to_string(o.chips) + " --backend rtl";
  if (tpu::RtlDevice::compiled_params().has_vmem())
    throw std::runtime_error(chips + ": this binary has no RTL pod (tpu_pod_rtl_n" +
                             std::to_string(tpu::RtlDevice::compiled_n()) +
                             " is not linked into it); use --backend model");
  const std::string name = "tpusim_train_n" + std::to_string(tpu::RtlDevice::compiled_n());
  const fs::path other = fs::path(tpusim::self_executable()).parent_path() / name;
  std::error_code ec;
  if (!fs::exists(other, ec))
    throw std::runtime_error(chips + ": the RTL pod is built into " + name +
                             " (the tpusim of the training chip, with TPU_SIM_TRAIN_N_LIST and "
                             "TPU_POD_RTL), and there is no " +
                             other.string() + "; use --backend model");
  std::vector<std::string> words = {other.string(), "run-cnn"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execv(argv[0], argv.data());
  throw std::runtime_error(chips + ": cannot start " + other.string() + ": " +
                           std::strerror(errno));
}

// The pod of --chips: golden models (model) or the registered RTL pod (rtl).
std::unique_ptr<tpu::cnn::InferencePod> open_pod(CnnOptions& o,
                                                 const tpusim::po::variables_map& vm) {
  const std::string chips = "--chips " + std::to_string(o.chips);
  if (o.dev.backend == "model") {
    tpu::ChipParams chip = tpu::RtlDevice::compiled_params();  // the one-chip model's, with links
    if (!chip.has_vmem()) {
      chip.vmem_rows = tpu::ChipParams::kTrainingVmemRows;
      chip.vmem_port_bytes = 4 * chip.N;
    }
    chip.ici_links = std::max<uint32_t>(chip.ici_links, 4);
    return tpu::cnn::golden_inference_pod(o.topology, chip, o.timing);
  }
  if (o.dev.backend != "rtl")
    throw tpusim::UsageError("--backend " + o.dev.backend +
                             " is not a backend (expected rtl or model)");
  const tpusim::RunCnnPodRtl* pod = tpusim::run_cnn_pod_rtl();
  if (!pod)
    throw std::runtime_error(chips +
                             " --backend rtl: this binary has no RTL pod; use "
                             "--backend model");
  if (vm.count("ici-bandwidth") && o.timing.bytes_per_cycle != pod->bytes_per_cycle)
    throw tpusim::UsageError("--ici-bandwidth " + std::to_string(o.timing.bytes_per_cycle) +
                             " with " + chips + " --backend rtl: the RTL pod's links are " +
                             std::to_string(pod->bytes_per_cycle) + " bytes per cycle (built in)");
  o.timing.bytes_per_cycle = pod->bytes_per_cycle;
  if (o.timing.latency == 0)
    throw tpusim::UsageError("--ici-latency 0 with " + chips +
                             " --backend rtl: the RTL pod's links take at least 1 cycle");
  try {
    return pod->make(o.topology, o.timing);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(chips + " --backend rtl: " + e.what());
  }
}

// run-cnn --chips P: the batches split over the pod, the logits gathered to chip 0.
int run_pod(CnnOptions& o, const tpusim::po::variables_map& vm,
            const std::optional<tpu::cnn::ImageFolder>& folder, tpusim::Clock::time_point t0) {
  auto pod = open_pod(o, vm);
  if (vm.count("max-cycles")) {
    o.dev.max_cycles = uint64_t(tpusim::int_option(vm, "max-cycles", 1, int64_t{1} << 50));
    o.dev.max_cycles_given = true;
  }
  tpusim::set_activity("loading " + o.model + " and the images");
  ShardImages mine;
  mine.count = o.images;
  tpusim::CnnPresentation pres;
  const CnnInputs in = load_inputs(o, folder, mine, pres);
  pres.header = model_header(o.model, in);
  std::FILE* info = o.json ? stderr : stdout;
  std::fputs(pres.header.c_str(), info);
  const std::vector<uint32_t> slices =
      tpu::cnn::pod_slices(std::min<uint32_t>(o.batch, uint32_t(o.images)), o.chips);
  std::string split;
  for (uint32_t s : slices) split += (split.empty() ? "" : ", ") + std::to_string(s);
  std::fprintf(info,
               "pod: %u chips (%s, %s backend), links %u bytes per cycle, latency %u cycles; "
               "images per chip of a batch: %s; logits gathered to chip 0 over the links\n",
               o.chips, o.topology.name().c_str(), pod->backend().c_str(), o.timing.bytes_per_cycle,
               o.timing.latency, split.c_str());
  tpusim::CnnPresentation live = pres;
  live.files = in.files;
  tpu::cnn::PodFigures f;
  Evaluator ev;
  ev.backend = pod->backend();
  ev.chip_n = pod->params().N;
  ev.run = [&](const tpu::cnn::EvalOptions& eo) {
    return o.floats() ? tpu::cnn::evaluate_pod(*pod, o.timing, in.net, in.q, in.images, eo, f)
                      : tpu::cnn::evaluate_pod(*pod, o.timing, in.net, in.q, in.test, eo, f);
  };
  tpu::cnn::Evaluation e = run_images(ev, o, in, mine, info, !o.quiet, live, t0);
  e.wall_seconds = std::chrono::duration<double>(tpusim::Clock::now() - t0).count();
  if (o.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(e.to_json());
    f.add_json(j);
    std::cout << tpu::json_document(j) << "\n";
  } else {
    tpusim::print_cnn_summary(e);
    std::string per_chip;
    for (uint32_t r = 0; r < f.chips; ++r)
      per_chip += (r ? ", " : "") + thousands(f.chip_cycles[r]);
    std::printf(
        "pod: %u chips (%s): inference %s cycles, gather %s cycles (%.2f %% of the run, %s "
        "bytes over the links); per chip %s cycles%s\n",
        f.chips, f.topology.c_str(), thousands(f.inference_cycles).c_str(),
        thousands(f.gather_cycles).c_str(), 100 * f.gather_share(),
        thousands(f.gather_link_bytes).c_str(), per_chip.c_str(),
        e.cycles_estimated ? " (the golden pod's estimate)" : "");
  }
  std::fflush(stdout);
  return e.matches_reference() ? 0 : 1;
}

int run_run_cnn(const tpusim::Args& args) {
  CnnOptions o;
  tpusim::po::variables_map vm;
  if (!parse_cnn_options(args, o, vm)) return 0;
  if (o.chips && o.dev.backend == "rtl" && !tpusim::run_cnn_pod_rtl()) exec_pod_tpusim(args, o);
  check_cnn_paths(o);
  tpusim::ShardPlan plan = tpusim::shard_plan(vm);
  using Mode = tpusim::ShardPlan::Mode;
  if (o.chips && plan.mode != Mode::Single)
    throw tpusim::UsageError("--chips " + std::to_string(o.chips) +
                             " under mpirun / srun: the pod is one process (run it without a "
                             "launcher)");
  if (o.chips) {
    const std::optional<tpu::cnn::ImageFolder> pod_folder = scan_dataset(vm, o);
    return run_pod(o, vm, pod_folder, tpusim::Clock::now());
  }
  const std::optional<tpu::cnn::ImageFolder> folder = scan_dataset(vm, o);
  tpusim::cap_jobs(plan, (uint64_t(o.images) + o.batch - 1) / o.batch, "batch", "batches");
  if (plan.mode != Mode::Single && !o.dev.vcd.empty())
    throw tpusim::UsageError(
        "--vcd needs one process (each shard would write the file): drop --jobs / --shard / "
        "mpirun, or --vcd");
  if (plan.mode == Mode::Shard && !o.report_dir.empty())
    throw tpusim::UsageError(
        "--report with --shard: the report needs every shard; give it to `tpusim merge "
        "--report DIR` instead");
  tpusim::CnnReportFiles report;
  const bool merging = plan.mode == Mode::Single || plan.merges();
  if (!o.report_dir.empty() && merging) report = tpusim::prepare_cnn_report_dir(o.report_dir);
  const ShardImages mine = shard_images(o, plan);
  std::unique_ptr<tpu::OutputFile> timeline_out;
  if (!o.timeline_file.empty() && mine.shard.index == 0 && plan.mode != Mode::Jobs)
    timeline_out = std::make_unique<tpu::OutputFile>(o.timeline_file, "--timeline");
  const auto t0 = tpusim::Clock::now();
  const tpusim::ShardedCommand command = sharded_command(args, o, report);
  if (plan.mode == Mode::Jobs) return tpusim::run_jobs_and_merge(command, plan, t0);

  tpusim::set_activity("loading " + o.model + " and the Fashion-MNIST images");
  tpusim::CnnPresentation pres;
  const CnnInputs in = load_inputs(o, folder, mine, pres);
  auto dev = tpusim::open_device(o.dev, vm);
  pres.header = model_header(o.model, in);
  // One process prints as it goes; a shard prints its lines on stderr (or not at all under
  // --jobs / mpirun, whose merging process prints them all).
  std::FILE* info = o.json || plan.mode != Mode::Single ? stderr : stdout;
  if (plan.mode == Mode::Single || (plan.mode == Mode::Shard && !o.quiet))
    std::fputs(pres.header.c_str(), info);
  tpusim::CnnPresentation live = pres;  // for this process's lines: files by selection index
  live.files = in.files;
  Evaluator ev;
  ev.backend = std::string(dev->backend());
  ev.chip_n = dev->params().N;
  ev.run = [&](const tpu::cnn::EvalOptions& eo) {
    return o.floats() ? tpu::cnn::evaluate(*dev, in.net, in.q, in.images, eo)
                      : tpu::cnn::evaluate(*dev, in.net, in.q, in.test, eo);
  };
  tpu::cnn::Evaluation e =
      run_images(ev, o, in, mine, info, !o.quiet && plan.mode != Mode::Mpi, live, t0);
  e.wall_seconds = std::chrono::duration<double>(tpusim::Clock::now() - t0).count();

  // The output files first, complete or not at all; then the one JSON object (or the summary).
  tpusim::set_activity("writing the report and timeline files");
  if (timeline_out) pres.timeline_note = write_timeline(*timeline_out, o.timeline_file, e);
  tpusim::finish_device(o.dev, dev);
  if (plan.mode != Mode::Single) {
    tpusim::CnnPresentation shard_pres = pres;  // the files of this shard's images
    if (!in.files.empty())
      shard_pres.files.assign(in.files.begin() + mine.first,
                              in.files.begin() + mine.first + mine.count);
    if (plan.mode == Mode::Shard) std::fputs(pres.timeline_note.c_str(), stderr);
    return tpusim::finish_shard(
        command, plan,
        tpusim::cnn_shard_json(e, shard_pres, mine.shard, o.images, o.offset, o.batch),
        e.matches_reference() ? 0 : 1, t0);
  }
  tpusim::write_cnn_report(report, e);
  if (o.json)
    std::cout << e.to_json();
  else
    tpusim::print_cnn_summary(e);
  std::fflush(stdout);
  // The written paths (on stderr with --json: stdout holds the one JSON object).
  tpusim::print_report_paths(info, report);
  std::fputs(pres.timeline_note.c_str(), info);
  return e.matches_reference() ? 0 : 1;
}

}  // namespace

TPUSIM_SUBCOMMAND("run-cnn",
                  "a CNN (ONNX, int8) on Fashion-MNIST, checked against its integer reference",
                  run_run_cnn);

#endif  // __has_include("onnx_import.h")
