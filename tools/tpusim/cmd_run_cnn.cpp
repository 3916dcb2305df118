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
#include <system_error>

#include "dataset.h"
#include "evaluate.h"
#include "image_dataset.h"
#include "interrupt.h"
#include "onnx_import.h"
#include "output_file.h"
#include "quantize.h"
#include "report.h"
#include "tpusim.h"
#include "zoo.h"

namespace {

std::string default_model() { return std::string(TPU_CNN_SOURCE_DIR) + "/models/fashion_cnn.onnx"; }

// Class names: --labels, the ImageFolder's subfolders, or Fashion-MNIST's.
std::vector<std::string> g_class_names = tpu::cnn::fashion_mnist_classes();
std::string class_name(int c) {
  return c >= 0 && c < int(g_class_names.size()) ? g_class_names[size_t(c)]
                                                 : "class " + std::to_string(c);
}

std::string thousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

// --report DIR: creates DIR if missing (before the chip runs for minutes) and opens its three
// files as tpu::OutputFile (temporaries in DIR, renamed when the report is complete). Throws
// std::runtime_error naming the option, the path and the reason.
struct ReportFiles {
  std::unique_ptr<tpu::OutputFile> svg, html, json;
};
ReportFiles prepare_report_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw std::runtime_error("--report " + dir +
                             ": exists and is not a directory (expected a directory to write "
                             "utilization.svg, index.html and report.json into)");
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("--report " + dir + ": cannot create the directory (" + ec.message() +
                             "); expected a writable directory");
  ReportFiles f;
  f.svg =
      std::make_unique<tpu::OutputFile>((fs::path(dir) / "utilization.svg").string(), "--report");
  f.html = std::make_unique<tpu::OutputFile>((fs::path(dir) / "index.html").string(), "--report");
  f.json = std::make_unique<tpu::OutputFile>((fs::path(dir) / "report.json").string(), "--report");
  return f;
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
      "images", po::value<std::string>()->default_value("100"), "number of test images (1..10000)")(
      "offset", po::value<std::string>()->default_value("0"), "first test image (0..9999)")(
      "batch", po::value<std::string>()->default_value("8"), "images per chip run (1..4095)")(
      "calibration", po::value<std::string>()->default_value("200"),
      "training images used to calibrate a float model's activations (1..60000)")(
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
  tpusim::add_device_options(
      opts, dev_opts, /*with_vcd=*/true,
      "derived from each batch program: 1000000 + 8 x (matmul rows + DMA bytes) + "
      "64 x instructions");
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim run-cnn [--model F.onnx | --zoo NAME] [--images N] [--offset K] [--batch B] "
          "[--backend "
          "rtl|model] "
          "[--vcd F] [--vcd-window FROM:TO] [--json] [--report DIR] [--timeline F.json]\n"
          "       [--dataset DIR [--resize S|HxW] [--center-crop S|HxW] [--mean M] [--std S] "
          "[--channels rgb|gray]] "
          "[--labels FILE] [--top-k K]",
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
          "from the reference.",
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
  tpu::check_output_not_input(timeline_file, "--timeline", {model});
  ReportFiles report;
  if (!report_dir.empty()) report = prepare_report_dir(report_dir);
  std::unique_ptr<tpu::OutputFile> timeline_out;
  if (!timeline_file.empty())
    timeline_out = std::make_unique<tpu::OutputFile>(timeline_file, "--timeline");
  tpusim::set_activity("loading " + model + " and the Fashion-MNIST images");

  // Everything about the inputs is checked before the chip is built.
  const auto t0 = std::chrono::steady_clock::now();
  const tpu::cnn::Network net =
      zoo.empty() ? tpu::cnn::load_onnx(model) : tpu::cnn::zoo_network(zoo, 1);
  tpu::cnn::ImageSet test;
  tpu::cnn::FloatImageSet folder_set;
  std::vector<std::string> folder_files;  // per image of folder_set
  if (!zoo.empty()) {                     // random images (seeded by the image index), no labels
    folder_set.shape = net.input;
    folder_set.images = tpu::cnn::zoo_images(net.input, offset + images, 12);
    folder_set.images.erase(folder_set.images.begin(), folder_set.images.begin() + offset);
    folder_set.labels.assign(size_t(images), -1);
  } else if (dataset.empty()) {
    test = tpu::cnn::load_fashion_mnist(data, false);
    tpu::cnn::check_input_shape(net.input, model, 1, test.rows, test.cols, "Fashion-MNIST");
  } else {
    const tpu::cnn::ImageFolder folder = tpu::cnn::scan_image_folder(dataset);
    if (vm["images"].defaulted()) images = int(folder.files.size()) - offset;
    if (offset + images > int(folder.files.size()))
      throw tpusim::UsageError("--offset + --images is past the " +
                               std::to_string(folder.files.size()) + " images of " + dataset);
    folder_set = tpu::cnn::load_image_folder(folder, pre, net.input, offset, images);
    folder_files.assign(folder.files.begin() + offset, folder.files.begin() + offset + images);
    g_class_names = folder.classes;
  }
  if (!labels_file.empty()) g_class_names = tpu::cnn::read_labels_file(labels_file);
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
      for (int i = 0; i < std::min(calibration, folder_set.count()); ++i)
        cal.push_back(folder_set.images[size_t(i)]);
    }
    q = tpu::cnn::quantize_model(net, cal);
    how = "post-training int8, " + std::to_string(cal.size()) + " calibration images" +
          (!zoo.empty()      ? " (random)"
           : dataset.empty() ? ""
                             : " (the first selected images of --dataset)");
  }
  auto dev = tpusim::open_device(dev_opts, vm);
  std::FILE* info = json ? stderr : stdout;
  std::fprintf(info, "model: %s, %zu layers, input %s, %d classes (%s)\n", model.c_str(),
               q.layers.size(), q.input.str().c_str(), q.classes(), how.c_str());
  for (const auto& l : q.layers) {
    std::fprintf(info, "  %-14s %-7s %s -> %s, %s MACs\n", l.name.c_str(), l.op.c_str(),
                 l.in.str().c_str(), l.out.str().c_str(), thousands(uint64_t(l.macs())).c_str());
  }

  tpu::cnn::EvalOptions eo;
  const bool floats = !dataset.empty() || !zoo.empty();  // folder_set holds the images
  eo.offset = floats ? 0 : offset;                       // folder_set holds images offset.. already
  eo.count = images;
  eo.batch = batch;
  eo.profile = !no_profile;
  eo.max_cycles = dev_opts.max_cycles_given ? dev_opts.max_cycles : 0;
  eo.timeline = !timeline_file.empty();
  auto last_progress = std::chrono::steady_clock::now();
  int correct_so_far = 0, differ_so_far = 0;
  tpusim::set_activity("running " + std::to_string(images) + " images of " + model + " on the " +
                       dev_opts.backend + " backend");
  tpusim::set_progress(0, uint64_t(images), "images");
  eo.on_batch = [&](const std::vector<tpu::cnn::ImageResult>& rs, int done, int total) {
    for (const auto& r : rs) {
      correct_so_far += r.predicted == r.label;
      differ_so_far += !r.matches_reference;
    }
    tpusim::set_progress(uint64_t(done), uint64_t(total), "images");
    tpusim::set_count("correct", uint64_t(correct_so_far));
    tpusim::set_count("mismatched_images", uint64_t(differ_so_far));
    if (!quiet) {
      for (const auto& r : rs) {
        std::fprintf(info, "  #%-5d %-12s -> %-12s %s%s", r.index + (floats ? offset : 0),
                     class_name(r.label).c_str(), class_name(r.predicted).c_str(),
                     r.predicted == r.label ? "ok" : "WRONG",
                     r.matches_reference ? "" : "  (logits differ from the integer reference!)");
        if (top_k > 0) {  // the K largest outputs, dequantized
          std::vector<int> order(r.logits.size());
          for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
          std::stable_sort(order.begin(), order.end(),
                           [&](int a, int b) { return r.logits[size_t(a)] > r.logits[size_t(b)]; });
          const auto& oq = q.output_q();
          std::fprintf(info, "  top-%d:", top_k);
          for (int k = 0; k < std::min<int>(top_k, int(order.size())); ++k)
            std::fprintf(info, "%s %s %.4g", k ? "," : "", class_name(order[size_t(k)]).c_str(),
                         double(oq.scale) * (r.logits[size_t(order[size_t(k)])] - oq.zero_point));
        }
        if (!folder_files.empty())
          std::fprintf(info, "  %s", folder_files[size_t(r.index)].c_str());
        std::fprintf(info, "\n");
      }
    }
    std::fflush(info);
    const auto now = std::chrono::steady_clock::now();
    if (done == total || std::chrono::duration<double>(now - last_progress).count() > 5.0) {
      const double secs = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "run-cnn: %d/%d images, %.1f s elapsed, about %.0f s left\n", done,
                   total, secs, secs / done * (total - done));
      last_progress = now;
    }
  };
  tpu::cnn::Evaluation e = floats ? tpu::cnn::evaluate(*dev, net, q, folder_set, eo)
                                  : tpu::cnn::evaluate(*dev, net, q, test, eo);
  if (floats) e.offset = offset;
  if (dev_opts.backend == "rtl") {
    e.mem_latency_cycles = dev_opts.mem_latency >= 0 ? dev_opts.mem_latency : 10;
    e.mem_bytes_per_cycle = dev_opts.mem_bandwidth >= 0 ? dev_opts.mem_bandwidth : 16;
  }
  e.model = model;
  e.quantization = how;
  e.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The output files first, complete or not at all; then the one JSON object (or the summary).
  tpusim::set_activity("writing the report and timeline files");
  if (report.svg) {
    report.svg->write(tpu::cnn::utilization_svg(e));
    report.html->write(tpu::cnn::report_html(e));
    report.json->write(e.to_json());
    report.svg->commit();
    report.html->commit();
    report.json->commit();
  }
  if (timeline_out) {
    timeline_out->write(tpu::cnn::timeline_json(e));
    timeline_out->commit();
  }
  tpusim::finish_device(dev_opts, dev);

  if (json) {
    std::cout << e.to_json();
  } else {
    const double n = e.images;
    std::printf("chip: %s backend, N=%u, batch %u (micro-batch %u), %zu instructions per batch\n",
                e.backend.c_str(), e.chip_n, e.batch, e.micro_batch, e.instructions_per_batch);
    std::printf("accuracy: chip %.2f%% (%d/%d), float model %.2f%%, integer reference %.2f%%\n",
                100 * e.accuracy(), e.correct, e.images, 100 * e.float_accuracy(),
                100 * e.reference_accuracy());
    std::printf("bit-exact with the integer reference: %s (%d of %d images differ)\n",
                e.matches_reference() ? "yes" : "NO", e.mismatches, e.images);
    if (e.cycles_estimated) {
      std::printf(
          "cycles: %s total, %s per image (estimated by the model backend, which has no timing: no "
          "MXU "
          "utilization)\n",
          thousands(e.cycles_total).c_str(),
          thousands(uint64_t(double(e.cycles_total) / n)).c_str());
    } else {
      std::printf(
          "cycles: %s total, %s per image; MXU utilization %.1f%% (busy %.1f%% of cycles)\n",
          thousands(e.cycles_total).c_str(),
          thousands(uint64_t(double(e.cycles_total) / n)).c_str(), 100 * e.mxu_utilization,
          e.cycles_total ? 100.0 * double(e.counters.mxu_busy) / double(e.cycles_total) : 0.0);
    }
    std::printf(
        "DMA per image: %s bytes in (input image %u bytes, the rest weights, parameters and "
        "instructions), "
        "%s bytes out (logits %u bytes)\n",
        thousands(uint64_t(e.dma_in_per_image)).c_str(), e.input_bytes_per_image,
        thousands(uint64_t(e.dma_out_per_image)).c_str(), e.output_bytes_per_image);
    std::printf("  of which weights %s, parameters %s%s\n",
                thousands(e.program_dma.weights).c_str(), thousands(e.program_dma.params).c_str(),
                e.spill ? (", activations spilled " + thousands(e.program_dma.spill_out) +
                           " out and read back " + thousands(e.program_dma.spill_in) + " in")
                              .c_str()
                        : " (no spilling: every tensor stays on chip)");
    if (!e.layers.empty()) {
      std::printf("layers (first batch of %u images, cycles per image):\n",
                  e.layers.front().images);
      std::printf("  %-14s %-8s %12s %12s %12s %12s %12s\n", "name", "op", "MACs", "cycles",
                  "utilization", "DMA in", "DMA out");
      for (const auto& l : e.layers) {
        char util[32] = "n/a (model)";  // the model backend has no timing
        if (std::isfinite(l.utilization))
          std::snprintf(util, sizeof util, "%.1f%%", 100 * l.utilization);
        std::printf("  %-14s %-8s %12s %12s %12s %12s %12s\n", l.name.c_str(), l.op.c_str(),
                    thousands(uint64_t(l.macs)).c_str(),
                    thousands(l.cycles / std::max(1u, l.images)).c_str(), util,
                    thousands(l.dma.in()).c_str(), thousands(l.dma.out()).c_str());
      }
    }
    std::printf("wall time: %.2f s (%.3f s per image)", e.wall_seconds, e.wall_seconds / n);
    if (!e.cycles_estimated && e.run_seconds > 0)
      std::printf(", %s simulated cycles per second",
                  thousands(uint64_t(double(e.cycles_total) / e.run_seconds)).c_str());
    std::printf("\n");
  }

  // The written paths (on stderr with --json: stdout holds the one JSON object).
  if (report.svg) {
    std::fprintf(info, "report: %s, %s, %s\n", report.svg->path().c_str(),
                 report.html->path().c_str(), report.json->path().c_str());
  }
  if (timeline_out) {
    std::fprintf(
        info,
        "timeline: %s (%zu instructions of the first batch, %s cycles; open in ui.perfetto.dev)\n",
        timeline_file.c_str(), e.timeline.events.size(), thousands(e.timeline.cycles).c_str());
  }
  return e.matches_reference() ? 0 : 1;
}

}  // namespace

TPUSIM_SUBCOMMAND("run-cnn",
                  "a CNN (ONNX, int8) on Fashion-MNIST, checked against its integer reference",
                  run_run_cnn);

#endif  // __has_include("onnx_import.h")
