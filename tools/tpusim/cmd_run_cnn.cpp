// SPDX-License-Identifier: Apache-2.0
// tpusim run-cnn: a CNN from an ONNX file, quantized to int8 and compiled to one chip program
// per batch, on Fashion-MNIST test images; checked image by image against the integer
// reference of the quantized network (driver/cnn). Built when tpu_cnn is (libonnx-dev).
#if __has_include("onnx_import.h")

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>

#include "cnn_shard.h"
#include "dataset.h"
#include "evaluate.h"
#include "image_dataset.h"
#include "interrupt.h"
#include "onnx_import.h"
#include "output_file.h"
#include "quantize.h"
#include "report.h"
#include "sharding.h"
#include "tpusim.h"
#include "zoo.h"

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

int run_run_cnn(const tpusim::Args& args) {
  namespace po = tpusim::po;
  std::string model = default_model(), data, report_dir, timeline_file, dataset, labels_file, zoo;
  tpu::cnn::Preprocess pre;
  bool json = false, no_profile = false, quiet = false;
  tpusim::DeviceOptions dev_opts;
  po::options_description opts("options");
  opts.add_options()("model", po::value<std::string>(&model),
                     "ONNX model (default: the bundled models/fashion_cnn.onnx)")(
      "zoo", po::value<std::string>(&zoo),
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
      "data", po::value<std::string>(&data),
      "Fashion-MNIST directory (default $TPU_FASHION_MNIST_DIR or "
      "/usr/share/datasets/fashion-mnist)")(
      "no-profile", po::bool_switch(&no_profile),
      "skip the per-layer profile (rtl: from the first batch's timeline; model: extra runs of the "
      "first batch)")("quiet", po::bool_switch(&quiet), "no per-image lines")(
      "json", po::bool_switch(&json),
      "print one JSON object, also on failure (per-image lines and progress go to stderr)")(
      "report", po::value<std::string>(&report_dir),
      "write DIR/utilization.svg (per-layer cycles against ideal and SCALE-Sim, MXU utilization), "
      "DIR/index.html and DIR/report.json; DIR is created if missing; files are replaced only by "
      "complete ones")("dataset", po::value<std::string>(&dataset),
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
      "labels", po::value<std::string>(&labels_file), "class names, one per line")(
      "top-k", po::value<std::string>(),
      "per-image lines show the K best classes with their scores")(
      "timeline", po::value<std::string>(&timeline_file),
      "write the first batch's instruction timeline, from the chip's trace port, as Chrome "
      "trace-event "
      "JSON for ui.perfetto.dev or chrome://tracing (rtl backend only; replaced only by a complete "
      "one)");
  tpusim::add_memory_options(opts);
  tpusim::add_device_options(opts, dev_opts, /*with_vcd=*/true, tpusim::kDerivedMaxCycles);
  tpusim::add_shard_options(opts);
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim run-cnn [--model F.onnx | --zoo NAME] [--images N] [--offset K] [--batch B] "
          "[--backend "
          "rtl|model] "
          "[--vcd F] [--vcd-window FROM:TO] [--json] [--report DIR] [--timeline F.json]\n"
          "       [--dataset DIR [--resize S|HxW] [--center-crop S|HxW] [--mean M] [--std S] "
          "[--channels rgb|gray]] "
          "[--labels FILE] [--top-k K] [--jobs J | --shard I/K]",
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
    return 0;
  }
  if (!zoo.empty() && vm.count("model"))
    throw tpusim::UsageError("--zoo " + zoo + " and --model " + model + ": give one of them");
  if (!zoo.empty() && !dataset.empty())
    throw tpusim::UsageError("--zoo runs random images: drop --dataset " + dataset);
  if (!zoo.empty()) {
    const auto names = tpu::cnn::zoo_names();
    if (std::find(names.begin(), names.end(), zoo) == names.end()) {
      try {
        tpu::cnn::zoo_onnx(zoo);
      } catch (const tpu::cnn::Error& e) {
        throw tpusim::UsageError(std::string("--zoo: ") + e.what());
      }
    }
  }
  int images = int(tpusim::int_option(vm, "images", 1, dataset.empty() ? 10000 : 1000000));
  if (!zoo.empty() && vm["images"].defaulted()) images = 1;
  const int offset = int(tpusim::int_option(vm, "offset", 0, dataset.empty() ? 9999 : 999999));
  const int top_k = vm.count("top-k") ? int(tpusim::int_option(vm, "top-k", 1, 1000)) : 0;
  for (const char* o : {"resize", "center-crop", "mean", "std", "channels"})
    if (vm.count(o) && dataset.empty())
      throw tpusim::UsageError(std::string("--") + o + " needs --dataset DIR");
  try {
    auto text = [&](const char* o) {
      return vm.count(o) ? vm[o].as<std::string>() : std::string();
    };
    pre = tpu::cnn::parse_preprocess(text("resize"), text("center-crop"), text("mean"), text("std"),
                                     text("channels"));
  } catch (const tpu::cnn::Error& e) {
    throw tpusim::UsageError(e.what());
  }
  const uint32_t batch = uint32_t(tpusim::int_option(vm, "batch", 1, 4095));
  int calibration = int(tpusim::int_option(vm, "calibration", 1, 60000));
  if (!zoo.empty() && vm["calibration"].defaulted()) calibration = 1;
  if (dataset.empty() && offset + images > 10000)
    throw tpusim::UsageError("--offset + --images is past the 10,000 test images");
  if (data.empty()) data = tpu::cnn::fashion_mnist_dir();
  {
    std::error_code ec;
    if (std::filesystem::exists(data, ec) && !std::filesystem::is_directory(data, ec))
      throw std::runtime_error("--data " + data +
                               ": is not a directory (expected the Fashion-MNIST directory)");
  }
  if (!report_dir.empty() && no_profile)
    throw tpusim::UsageError("--report charts the per-layer profile: drop --no-profile");
  if (!timeline_file.empty() && dev_opts.backend != "rtl")
    throw tpusim::UsageError("--timeline needs --backend rtl: the " + dev_opts.backend +
                             " backend has no timing, so it has no instruction timeline");
  if (!zoo.empty()) model = zoo;
  if (zoo.empty()) tpu::check_not_directory(model, "--model");
  if (zoo.empty()) {
    // The importer reads the whole file: a device or pipe (/dev/zero) would never end.
    std::error_code ec;
    const auto st = std::filesystem::status(model, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      throw std::runtime_error("--model " + model +
                               ": is not a regular file (expected an ONNX model file)");
  }
  {  // no output may be an input: checked before anything runs
    tpu::RunPaths paths;
    if (zoo.empty()) paths.input("--model", model);
    if (zoo.empty() && dataset.empty()) paths.input("--data", data);
    paths.input("--dataset", dataset).input("--labels", labels_file);
    paths.output("--timeline", timeline_file).output("--vcd", dev_opts.vcd);
    tpusim::add_cnn_report_outputs(paths, report_dir);
    paths.check();
  }
  tpusim::ShardPlan plan = tpusim::shard_plan(vm);
  using Mode = tpusim::ShardPlan::Mode;
  // An image folder sets the default --images: scanned before the shards are cut.
  std::optional<tpu::cnn::ImageFolder> folder;
  if (!dataset.empty()) {
    try {
      folder = tpu::cnn::scan_image_folder(dataset);
    } catch (const tpu::cnn::Error& e) {
      throw std::runtime_error(std::string("--dataset ") + e.what());
    }
    if (vm["images"].defaulted()) images = int(folder->files.size()) - offset;
    if (offset + images > int(folder->files.size()))
      throw tpusim::UsageError("--offset + --images is past the " +
                               std::to_string(folder->files.size()) + " images of " + dataset);
  }
  tpusim::cap_jobs(plan, (uint64_t(images) + batch - 1) / batch, "batch", "batches");
  if (plan.mode != Mode::Single && !dev_opts.vcd.empty())
    throw tpusim::UsageError(
        "--vcd needs one process (each shard would write the file): drop --jobs / --shard / "
        "mpirun, or --vcd");
  if (plan.mode == Mode::Shard && !report_dir.empty())
    throw tpusim::UsageError(
        "--report with --shard: the report needs every shard; give it to `tpusim merge "
        "--report DIR` instead");
  tpusim::CnnReportFiles report;
  const bool merging = plan.mode == Mode::Single || plan.merges();
  if (!report_dir.empty() && merging) report = tpusim::prepare_cnn_report_dir(report_dir);
  const bool first_shard = plan.mode == Mode::Single || plan.shard.index == 0;
  std::unique_ptr<tpu::OutputFile> timeline_out;
  if (!timeline_file.empty() && first_shard && plan.mode != Mode::Jobs)
    timeline_out = std::make_unique<tpu::OutputFile>(timeline_file, "--timeline");

  const auto t0 = std::chrono::steady_clock::now();
  if (plan.mode == Mode::Jobs) {  // J copies of this command, --shard i/J each, then merge
    const tpusim::Args base =
        tpusim::without_options(args, {"--jobs", "--report", "--timeline"}, {"--json", "--quiet"});
    std::vector<int> codes;
    const auto outs = tpusim::run_jobs(
        "run-cnn", plan.jobs,
        [&](int i) {
          tpusim::Args a = base;
          a.insert(a.end(),
                   {"--shard", std::to_string(i) + "/" + std::to_string(plan.jobs), "--quiet"});
          if (i == 0 && !timeline_file.empty()) a.insert(a.end(), {"--timeline", timeline_file});
          return a;
        },
        codes);
    std::vector<std::string> names;
    for (int i = 0; i < plan.jobs; ++i)
      names.push_back("shard " + std::to_string(i) + "/" + std::to_string(plan.jobs));
    tpusim::MergedCnn m = tpusim::merge_cnn_shards(outs, names);
    m.e.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tpusim::print_merged_cnn(m, json, quiet, report);
    return m.exit_code;
  }
  tpusim::set_activity("loading " + model + " and the Fashion-MNIST images");

  // This process's images: whole batches, the same ones in every shard count.
  const tpu::ShardSpec shard = plan.mode == Mode::Single ? tpu::ShardSpec{} : plan.shard;
  const uint64_t batches = (uint64_t(images) + batch - 1) / batch;
  const tpu::ShardRange range = tpu::shard_range(batches, shard);
  const int my_first = int(range.begin * batch);
  const int my_count = int(std::min<uint64_t>(range.end * batch, uint64_t(images))) - my_first;

  // Everything about the inputs is checked before the chip is built.
  const bool floats = !dataset.empty() || !zoo.empty();  // folder_set holds the images
  const tpu::cnn::Network net =
      zoo.empty() ? tpu::cnn::load_onnx(model) : tpu::cnn::zoo_network(zoo, 1);
  if (!dataset.empty()) {
    try {
      tpu::cnn::check_preprocess(pre, net.input);
    } catch (const tpu::cnn::Error& e) {
      throw tpusim::UsageError(e.what());
    }
  }
  tpusim::CnnPresentation pres;
  pres.class_names = tpu::cnn::fashion_mnist_classes();
  pres.top_k = top_k;
  pres.display_offset = floats ? offset : 0;
  tpu::cnn::ImageSet test;
  tpu::cnn::FloatImageSet folder_set, folder_cal;
  std::vector<std::string> folder_files;  // per image of the whole selection
  if (!zoo.empty()) {  // this shard's random images (seeded by the image index), no labels
    folder_set.shape = net.input;
    folder_set.images = tpu::cnn::zoo_images(net.input, offset + my_first + my_count, 12);
    folder_set.images.erase(folder_set.images.begin(),
                            folder_set.images.begin() + offset + my_first);
    folder_set.labels.assign(size_t(my_count), -1);
  } else if (dataset.empty()) {
    test = tpu::cnn::load_fashion_mnist(data, false);
    tpu::cnn::check_input_shape(net.input, model, 1, test.rows, test.cols, "Fashion-MNIST");
  } else {
    if (my_count > 0)
      folder_set =
          tpu::cnn::load_image_folder(*folder, pre, net.input, offset + my_first, my_count);
    if (shard.sharded())  // calibration: the first selected images, whatever the shard
      folder_cal = tpu::cnn::load_image_folder(*folder, pre, net.input, offset,
                                               std::min(calibration, images));
    folder_files.assign(folder->files.begin() + offset, folder->files.begin() + offset + images);
    pres.class_names = folder->classes;
  }
  if (!labels_file.empty()) {
    try {
      pres.class_names = tpu::cnn::read_labels_file(labels_file);
    } catch (const tpu::cnn::Error& e) {
      throw std::runtime_error(std::string("--labels ") + e.what());
    }
  }
  std::string how;
  tpu::cnn::QuantNetwork q;
  if (tpu::cnn::fully_quantized(net)) {
    q = tpu::cnn::quantize_model(net, {});
    how = "quantized in the model file";
  } else {
    std::vector<std::vector<float>> cal;
    if (!zoo.empty()) {
      cal = tpu::cnn::zoo_images(net.input, calibration, 11);
    } else if (dataset.empty()) {
      const tpu::cnn::ImageSet train = tpu::cnn::load_fashion_mnist(data, true);
      for (int i = 0; i < std::min(calibration, train.count); ++i)
        cal.push_back(tpu::cnn::pixels_to_float(train.image(i), int64_t(train.rows) * train.cols));
    } else {  // the folder has no training split: calibrate on the first of its selected images
      const auto& from = shard.sharded() ? folder_cal : folder_set;
      for (int i = 0; i < std::min(calibration, from.count()); ++i)
        cal.push_back(from.images[size_t(i)]);
    }
    how = "post-training int8, " + std::to_string(cal.size()) + " calibration images" +
          (!zoo.empty()      ? " (random)"
           : dataset.empty() ? ""
                             : " (the first selected images of --dataset)");
    try {
      q = tpu::cnn::quantize_model(net, cal);
    } catch (const tpu::cnn::Error& e) {  // e.g. a calibrated range that is not finite
      throw std::runtime_error(model + ", " + how + ": " + e.what());
    }
  }
  pres.output_scale = double(q.output_q().scale);
  pres.output_zero_point = q.output_q().zero_point;
  auto dev = tpusim::open_device(dev_opts, vm);
  {
    std::string h;
    char line[512];
    std::snprintf(line, sizeof line, "model: %s, %zu layers, input %s, %d classes (%s)\n",
                  model.c_str(), q.layers.size(), q.input.str().c_str(), q.classes(), how.c_str());
    h += line;
    for (const auto& l : q.layers) {
      std::snprintf(line, sizeof line, "  %-14s %-7s %s -> %s, %s MACs\n", l.name.c_str(),
                    l.op.c_str(), l.in.str().c_str(), l.out.str().c_str(),
                    thousands(uint64_t(l.macs())).c_str());
      h += line;
    }
    pres.header = h;
  }
  // One process prints as it goes; a shard prints its lines on stderr (or not at all under
  // --jobs / mpirun, whose merging process prints them all).
  std::FILE* info = json || plan.mode != Mode::Single ? stderr : stdout;
  const bool live_lines = !quiet && plan.mode != Mode::Mpi;
  if (plan.mode == Mode::Single || (plan.mode == Mode::Shard && !quiet))
    std::fputs(pres.header.c_str(), info);
  tpusim::CnnPresentation live = pres;  // for this process's lines: files by selection index
  live.files = folder_files;

  tpu::cnn::EvalOptions eo;
  eo.offset = floats ? 0 : offset + my_first;  // folder_set holds its images already
  eo.count = my_count;
  eo.batch = batch;
  eo.profile = !no_profile && first_shard;
  eo.max_cycles = dev_opts.max_cycles_given ? dev_opts.max_cycles : 0;
  eo.timeline = !timeline_file.empty() && first_shard;
  auto last_progress = std::chrono::steady_clock::now();
  int correct_so_far = 0, differ_so_far = 0;
  const std::string part = shard.sharded()
                               ? " (shard " + shard.str() + ": images " + std::to_string(my_first) +
                                     ".." + std::to_string(my_first + my_count - 1) + ")"
                               : "";
  tpusim::set_activity("running " + std::to_string(my_count) + " images of " + model + " on the " +
                       dev_opts.backend + " backend" + part);
  tpusim::set_progress(0, uint64_t(my_count), "images");
  // Image indices relative to the selection (as one process numbers them).
  const int index_shift = floats ? my_first : 0;
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
    const auto now = std::chrono::steady_clock::now();
    if (done == total || std::chrono::duration<double>(now - last_progress).count() > 5.0) {
      const double secs = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "run-cnn%s: %d/%d images, %.1f s elapsed, about %.0f s left\n",
                   shard.sharded() ? (" " + shard.str()).c_str() : "", done, total, secs,
                   secs / done * (total - done));
      last_progress = now;
    }
  };
  tpu::cnn::Evaluation e;
  if (my_count > 0) {
    e = floats ? tpu::cnn::evaluate(*dev, net, q, folder_set, eo)
               : tpu::cnn::evaluate(*dev, net, q, test, eo);
  } else {  // more shards than batches: nothing to run
    e.backend = std::string(dev->backend());
    e.chip_n = dev->params().N;
  }
  for (auto& r : e.results) r.index += index_shift;
  e.offset = floats ? offset : offset + my_first;
  if (dev_opts.backend == "rtl") {
    e.mem_latency_cycles = dev_opts.mem_latency >= 0 ? dev_opts.mem_latency : 10;
    e.mem_bytes_per_cycle = dev_opts.mem_bandwidth >= 0 ? dev_opts.mem_bandwidth : 16;
  }
  e.model = model;
  e.quantization = how;
  e.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The output files first, complete or not at all; then the one JSON object (or the summary).
  tpusim::set_activity("writing the report and timeline files");
  if (timeline_out) {
    timeline_out->write(tpu::cnn::timeline_json(e));
    timeline_out->commit();
    char note[1024];
    std::snprintf(
        note, sizeof note,
        "timeline: %s (%zu instructions of the first batch, %s cycles; open in ui.perfetto.dev)\n",
        timeline_file.c_str(), e.timeline.events.size(), thousands(e.timeline.cycles).c_str());
    pres.timeline_note = note;
  }
  tpusim::finish_device(dev_opts, dev);

  if (plan.mode != Mode::Single) {
    tpusim::CnnPresentation mine = pres;  // the files of this shard's images
    if (!folder_files.empty())
      mine.files.assign(folder_files.begin() + my_first,
                        folder_files.begin() + my_first + my_count);
    const std::string shard_json = tpusim::cnn_shard_json(e, mine, shard, images, offset, batch);
    if (plan.mode == Mode::Shard) {
      std::fputs(pres.timeline_note.c_str(), stderr);
      std::cout << shard_json;
      return e.matches_reference() ? 0 : 1;
    }
    const auto all = tpusim::mpi_gather(shard_json);
    if (!plan.merges()) return 0;  // rank 0 reports
    std::vector<std::string> names;
    for (uint32_t r = 0; r < shard.count; ++r) names.push_back("MPI rank " + std::to_string(r));
    tpusim::MergedCnn m = tpusim::merge_cnn_shards(all, names);
    m.e.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tpusim::print_merged_cnn(m, json, quiet, report);
    return m.exit_code;
  }

  tpusim::write_cnn_report(report, e);
  if (json)
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
