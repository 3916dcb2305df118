// SPDX-License-Identifier: Apache-2.0
// tpusim train: trains a float ONNX model on the chip (issue 30, docs/training.md "tpusim
// train"): the Trainer (driver/train/trainer.h) compiles the model into a training step; the
// host places each batch and reads the chip's loss; test accuracy after each epoch from the
// chip's forward pass; the trained model out as a float ONNX file. Built when tpu_train_io is.
#if __has_include("fit.h")

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd_train_rtl.h"
#include "cnn_shard.h"
#include "dataset.h"
#include "device_model.h"
#include "device_rtl.h"
#include "energy.h"
#include "fit.h"
#include "fit_pod.h"
#include "interrupt.h"
#include "json_text.h"
#include "model_io.h"
#include "onnx_import.h"
#include "output_file.h"
#include "pod.h"
#include "pod_options.h"
#include "pod_trainer.h"
#include "report.h"
#include "sharding.h"
#include "svg_plot.h"
#include "tpusim.h"
#include "train_data.h"
#include "trainer.h"

namespace tpusim {
const PodTrainRtl*& pod_train_rtl() {
  static const PodTrainRtl* pod = nullptr;
  return pod;
}
}  // namespace tpusim

namespace {

using tpu::train::Optimizer;

constexpr uint32_t kAllImages = std::numeric_limits<uint32_t>::max();
constexpr const char* kFashion = "fashion-mnist";

struct TrainArgs {
  std::string model, save_initial, dataset = kFashion, data, test_dataset, output;
  std::string report_dir, timeline, backend = "rtl", residency = "on";
  std::string energy_table_file;  // --energy-table (empty: the built-in table)
  tpu::EnergyTable energy_table;
  uint64_t seed = 1;
  uint32_t epochs = 5, steps_per_epoch = 0, test_images = kAllImages, n = 0;
  tpu::train::TrainOptions topt;
  std::optional<uint64_t> shuffle;
  bool json = false, quiet = false, no_golden = false;
  // Data-parallel training on a pod (--chips; 0: one chip, no pod): of golden models
  // (--backend model) or of Verilated chips checked against the golden pod (--backend rtl).
  uint32_t chips = 0;
  tpu::PodTopology topology;
  tpu::LinkTiming timing;
  bool fashion() const { return dataset == kFashion; }
  std::string model_name() const { return model.empty() ? "the Keras example" : model; }
};

// A floating-point option value: finite, in [lo, hi] (lo excluded when `lo_open`).
float float_option(const tpusim::po::variables_map& vm, const std::string& name, double lo,
                   double hi, bool lo_open) {
  const std::string text = vm[name].as<std::string>();
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw tpusim::UsageError("--" + name + " " + text + " is not a finite number");
  if ((lo_open ? !(v > lo) : !(v >= lo)) || !(v <= hi) || !std::isfinite(float(v)))
    throw tpusim::UsageError("--" + name + " " + text + " is out of range (expected " +
                             (lo_open ? "> " : ">= ") + tpu::json_number(lo) +
                             " and <= " + tpu::json_number(hi) + ")");
  return float(v);
}

void read_hyperparameters(const tpusim::po::variables_map& vm, TrainArgs& a) {
  const std::string opt = vm["optimizer"].as<std::string>();
  if (opt != "sgd" && opt != "adam")
    throw tpusim::UsageError("--optimizer " + opt + " is not an optimizer (expected sgd or adam)");
  a.topt.optimizer = opt == "sgd" ? Optimizer::Sgd : Optimizer::Adam;
  if (vm.count("lr")) {
    a.topt.lr = float_option(vm, "lr", 0, std::numeric_limits<float>::max(), true);
  } else {
    a.topt.lr = opt == "sgd" ? 0.01f : 0.001f;  // Keras' defaults
  }
  if (vm.count("momentum")) {
    if (opt != "sgd")
      throw tpusim::UsageError("--momentum " + vm["momentum"].as<std::string>() +
                               " is for --optimizer sgd (Adam has --beta1)");
    a.topt.momentum = float_option(vm, "momentum", 0, 1, false);
    if (!(a.topt.momentum < 1))
      throw tpusim::UsageError("--momentum " + vm["momentum"].as<std::string>() +
                               " is out of range (expected >= 0 and < 1)");
  }
  if (vm.count("weight-decay"))
    a.topt.weight_decay =
        float_option(vm, "weight-decay", 0, std::numeric_limits<float>::max(), false);
  for (const char* b : {"beta1", "beta2"}) {
    if (!vm.count(b)) continue;
    if (opt != "adam") throw tpusim::UsageError(std::string("--") + b + " is for --optimizer adam");
    const float v = float_option(vm, b, 0, 1, false);
    if (!(v < 1))
      throw tpusim::UsageError(std::string("--") + b + " " + vm[b].as<std::string>() +
                               " is out of range (expected >= 0 and < 1)");
    (b[4] == '1' ? a.topt.beta1 : a.topt.beta2) = v;
  }
  if (vm.count("epsilon")) {
    if (opt != "adam") throw tpusim::UsageError("--epsilon is for --optimizer adam");
    a.topt.eps = float_option(vm, "epsilon", 0, 1, true);
  }
}

void read_counts(const tpusim::po::variables_map& vm, TrainArgs& a) {
  a.epochs = uint32_t(tpusim::int_option(vm, "epochs", 1, 1000000));
  a.topt.batch = uint32_t(tpusim::int_option(vm, "batch", 1, 4095));
  if (vm.count("steps-per-epoch"))
    a.steps_per_epoch = uint32_t(tpusim::int_option(vm, "steps-per-epoch", 1, 100000000));
  if (vm.count("test-images"))
    a.test_images = uint32_t(tpusim::int_option(vm, "test-images", 0, 1000000));
  if (vm.count("seed")) {
    if (!a.model.empty())
      throw tpusim::UsageError("--seed " + vm["seed"].as<std::string>() +
                               " sets the default model's initial weights: drop it with --model " +
                               a.model);
    a.seed = uint64_t(tpusim::int_option(vm, "seed", 0, std::numeric_limits<int64_t>::max()));
  }
  const std::string shuffle = vm["shuffle"].as<std::string>();
  if (shuffle != "off") {
    const bool digits =
        !shuffle.empty() && shuffle.size() <= 18 &&
        std::all_of(shuffle.begin(), shuffle.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      throw tpusim::UsageError("--shuffle " + shuffle +
                               " is neither off nor a seed (expected off or an integer 0..10^18)");
    a.shuffle = std::stoull(shuffle);
  }
  if (vm.count("n")) {
    if (a.backend != "model" && !vm.count("chips"))
      throw tpusim::UsageError("--n " + vm["n"].as<std::string>() +
                               " is for --backend model (the rtl chip's N is built in)");
    a.n = uint32_t(tpusim::int_option(vm, "n", 4, 256));
    if ((a.n & (a.n - 1)) != 0)
      throw tpusim::UsageError("--n " + vm["n"].as<std::string>() +
                               " is not a power of two (expected 4, 8, ..., 256)");
  }
}

// --chips P --backend rtl: what the pod built into this binary (tpu_pod_rtl_n4) can run.
void check_rtl_pod_options(const tpusim::po::variables_map& vm, TrainArgs& a) {
  const tpusim::PodTrainRtl* pod = tpusim::pod_train_rtl();
  const std::string chips = "--chips " + std::to_string(a.chips) + " --backend rtl";
  if (!pod) {
    if (!tpu::RtlDevice::compiled_params().has_vmem())
      return;  // run_train starts tpusim_train_n<N>
    throw std::runtime_error(chips + ": this binary has no RTL pod (tpu_pod_rtl_n" +
                             std::to_string(tpu::RtlDevice::compiled_n()) +
                             " was not built); use --backend model");
  }
  const tpu::ChipParams p = pod->params();
  if (a.n != 0 && a.n != p.N)
    throw tpusim::UsageError("--n " + std::to_string(a.n) + " with " + chips +
                             ": the RTL pod's chips are N = " + std::to_string(p.N) +
                             " (built in: tpu_pod_rtl_n" + std::to_string(p.N) +
                             "); use --backend model for N = " + std::to_string(a.n));
  if (vm.count("ici-bandwidth") &&
      tpusim::int_option(vm, "ici-bandwidth", 1, 4096) != pod->bytes_per_cycle)
    throw tpusim::UsageError("--ici-bandwidth " + vm["ici-bandwidth"].as<std::string>() + " with " +
                             chips + ": the RTL pod's links are " +
                             std::to_string(pod->bytes_per_cycle) +
                             " bytes per cycle (IciWidth, built in); other bandwidths need "
                             "--backend model");
  if (vm.count("ici-latency") && tpusim::int_option(vm, "ici-latency", 0, 1000000) == 0)
    throw tpusim::UsageError("--ici-latency 0 with " + chips +
                             ": the RTL pod's links need >= 1 cycle of latency");
  if (!a.timeline.empty())
    throw tpusim::UsageError("--timeline with " + chips +
                             ": the instruction timeline is of one chip (drop --chips)");
}

// --chips P [--topology] [--ici-bandwidth] [--ici-latency]: data-parallel training on a pod.
void read_pod_options(const tpusim::po::variables_map& vm, TrainArgs& a) {
  if (!tpusim::read_pod_options(vm, a.chips, a.topology, a.timing)) return;
  if (a.backend == "rtl") check_rtl_pod_options(vm, a);
  if (a.topt.batch % a.chips != 0)
    throw tpusim::UsageError("--batch " + std::to_string(a.topt.batch) +
                             " is not divisible by --chips " + std::to_string(a.chips) +
                             " (each chip trains on batch / chips images of every step)");
}

// The options of tpusim train, read into `a`.
tpusim::po::options_description train_options(TrainArgs& a) {
  namespace po = tpusim::po;
  po::options_description o("options");
  o.add_options()("model", po::value<std::string>(&a.model),
                  "initial float ONNX model (initializers = initial weights; input [B,C,H,W], "
                  "output logits [B,classes]); default: the Keras example (Conv 64 3x3, MaxPool "
                  "2x2, ReLU, Flatten, Dense 10) with Glorot-uniform weights from --seed")(
      "seed", po::value<std::string>(), "seed of the default model's weights (default 1)")(
      "save-initial", po::value<std::string>(&a.save_initial),
      "also write the initial model (e.g. the default one) as ONNX, for scripts/train_pytorch.py")(
      "dataset", po::value<std::string>(&a.dataset)->default_value(kFashion),
      "fashion-mnist (its 60,000 training images, pixel / 255) or DIR, a folder of PNG/JPEG "
      "images in the ImageFolder layout (one subfolder per class) as in run-cnn")(
      "data", po::value<std::string>(&a.data),
      "Fashion-MNIST directory (default $TPU_FASHION_MNIST_DIR or "
      "/usr/share/datasets/fashion-mnist)")(
      "test-dataset", po::value<std::string>(&a.test_dataset),
      "ImageFolder of test images (default: Fashion-MNIST's 10,000 test images; with --dataset "
      "DIR, DIR itself)")("epochs", po::value<std::string>()->default_value("5"), "epochs")(
      "steps-per-epoch", po::value<std::string>(),
      "steps per epoch (default: the whole set / --batch); each epoch continues where the last "
      "one stopped")("batch", po::value<std::string>()->default_value("32"), "images per step")(
      "optimizer", po::value<std::string>()->default_value("adam"), "sgd or adam")(
      "lr", po::value<std::string>(), "learning rate (default: adam 0.001, sgd 0.01)")(
      "momentum", po::value<std::string>(), "SGD momentum in [0, 1) (default 0)")(
      "weight-decay", po::value<std::string>(),
      "L2 weight decay added to the gradient (default 0)")("beta1", po::value<std::string>(),
                                                           "Adam beta1 (default 0.9)")(
      "beta2", po::value<std::string>(), "Adam beta2 (default 0.999)")(
      "epsilon", po::value<std::string>(), "Adam epsilon (default 1e-7, as Keras)")(
      "shuffle", po::value<std::string>()->default_value("off"),
      "off (file order) or SEED (a new seeded permutation per pass over the set)")(
      "test-images", po::value<std::string>(),
      "test accuracy on the first K test images after each epoch, forward pass on the chip "
      "(default: all of them; 0: none)")(
      "output", po::value<std::string>(&a.output),
      "write the trained model: the initial model with the trained weights, float ONNX that "
      "run-cnn and run-onnx take (not written if training diverges)")(
      "backend", po::value<std::string>(&a.backend)->default_value("rtl"),
      "rtl (the Verilated chip; every step also rerun on the golden model and compared) or model "
      "(the golden model)")("n", po::value<std::string>(),
                            "--backend model: the chip ChipParams::training(N) (default: the built "
                            "chip's memories and N, with the training VMEM)")(
      "no-golden-check", po::bool_switch(&a.no_golden),
      "rtl backend: do not rerun the steps on the golden model (matches_golden is null)")(
      "json", po::bool_switch(&a.json), "print one JSON object, also on failure")(
      "report", po::value<std::string>(&a.report_dir),
      "write DIR/loss.svg, DIR/accuracy.svg, DIR/energy.svg and DIR/train.json (created if "
      "missing)")(
      "timeline", po::value<std::string>(&a.timeline),
      "write the first step's instruction timeline as Chrome trace-event JSON (rtl backend)")(
      "energy-table", po::value<std::string>(&a.energy_table_file),
      "energy per action for the JSON's \"energy\" (docs/energy.md; default: the built-in "
      "energy/horowitz_45nm.json)")("quiet", po::bool_switch(&a.quiet),
                                    "no progress lines on stderr")(
      "chips", po::value<std::string>(),
      "data-parallel training on a pod of P chips (--backend model: the pod of golden models; "
      "rtl: the pod of Verilated training chips, N = 16, checked against the golden pod): "
      "each chip trains on --batch / P images of every step, the gradients are all-reduced over "
      "the inter-chip links (docs/training.md \"Data-parallel training on a pod\")")(
      "topology", po::value<std::string>(), "with --chips: ring (default) or torus:XxY")(
      "ici-bandwidth", po::value<std::string>(),
      "with --chips: link bytes per cycle and direction (default 16)")(
      "ici-latency", po::value<std::string>(), "with --chips: link latency in cycles (default 64)")(
      "residency", po::value<std::string>(&a.residency)->default_value("on"),
      "on: weights and optimizer state that fit stay in VMEM across steps (docs/training.md "
      "\"Residency\"); off: they stream from device memory every step (the same bits)");
  return o;
}

// Checks the option values against each other (after parsing).
void check_train_args(TrainArgs& a) {
  if (a.residency != "on" && a.residency != "off")
    throw tpusim::UsageError("--residency " + a.residency + " (expected on or off)");
  a.topt.resident = a.residency == "on";
  if (!a.fashion() && !a.data.empty())
    throw tpusim::UsageError("--data " + a.data +
                             " is Fashion-MNIST's directory: drop it with "
                             "--dataset " +
                             a.dataset);
  if (!a.timeline.empty() && a.backend != "rtl")
    throw tpusim::UsageError("--timeline needs --backend rtl: the " + a.backend +
                             " backend has no timing, so it has no instruction timeline");
  if (a.no_golden && a.backend != "rtl")
    throw tpusim::UsageError(
        "--no-golden-check is for --backend rtl (the model backend is the "
        "golden model)");
}

// Parses and checks the options; false for --help.
bool parse_train_args(const tpusim::Args& args, TrainArgs& a) {
  tpusim::po::options_description o = train_options(a);
  tpusim::po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim train [--model INIT.onnx] [--dataset fashion-mnist|DIR] [--epochs E] "
          "[--steps-per-epoch S] [--batch B] [--optimizer sgd|adam] [--lr LR] [--shuffle off|SEED] "
          "[--test-images K] [--output TRAINED.onnx] [--backend rtl|model] [--json] [--report DIR] "
          "[--timeline F.json] [--chips P [--topology ring|torus:XxY] [--ici-bandwidth B] "
          "[--ici-latency L]]",
          "Trains a float ONNX model on the chip: forward pass in bf16, softmax cross-entropy, "
          "backward pass and the optimizer update all run on the chip (docs/training.md); the host "
          "only places each batch and its labels in device memory and reads the step's loss. "
          "Prints progress (step, loss, images/s) on stderr, the loss and test accuracy of each "
          "epoch, cycles and MXU utilization. Exit code 1 if training diverges (a loss or weight "
          "not finite: --output is not written) or the rtl chip differs from the golden model.",
          o, {}, vm))
    return false;
  if (a.backend != "rtl" && a.backend != "model")
    throw tpusim::UsageError("--backend " + a.backend +
                             " is not a backend (expected rtl or model)");
  read_hyperparameters(vm, a);
  read_counts(vm, a);
  read_pod_options(vm, a);
  check_train_args(a);
  if (a.fashion() && a.data.empty()) a.data = tpu::cnn::fashion_mnist_dir();
  a.energy_table = tpusim::energy_table_option(a.energy_table_file);
  return true;
}

const char* kReportFiles[] = {"loss.svg", "accuracy.svg", "energy.svg", "train.json"};

// No output may be an input: checked before anything runs.
void check_paths(const TrainArgs& a) {
  tpu::RunPaths paths;
  paths.input("--model", a.model).input("--data", a.data).input("--test-dataset", a.test_dataset);
  paths.input("--energy-table", a.energy_table_file);
  if (!a.fashion()) paths.input("--dataset", a.dataset);
  paths.output("--output", a.output).output("--save-initial", a.save_initial);
  paths.output("--timeline", a.timeline);
  if (!a.report_dir.empty())
    for (const char* f : kReportFiles) paths.output_in("--report", a.report_dir, f);
  paths.check();
  auto need_dir = [](const std::string& opt, const std::string& path, const char* expected) {
    std::error_code ec;
    if (path.empty() || std::filesystem::is_directory(path, ec)) return;
    throw std::runtime_error(
        opt + " " + path + ": " +
        (std::filesystem::exists(path, ec) ? "is not a directory" : "no such directory") +
        " (expected " + expected + ")");
  };
  const char* folder = "an ImageFolder: one subfolder of PNG/JPEG images per class";
  if (!a.fashion()) need_dir("--dataset", a.dataset, folder);
  need_dir("--test-dataset", a.test_dataset, folder);
  need_dir("--data", a.data, "the Fashion-MNIST directory");
}

// The training chip: the rtl chip as built (it must have the training configuration's VMEM),
// or the golden model with the built chip's memories (N from --n) and the VMEM.
std::unique_ptr<tpu::Device> open_train_device(const TrainArgs& a,
                                               const tpusim::po::variables_map& vm) {
  if (a.backend == "rtl") {
    tpusim::DeviceOptions d;
    d.backend = "rtl";
    auto dev = tpusim::open_device(d, vm);
    if (!dev->params().has_vmem())
      throw std::runtime_error(
          "--backend rtl: this tpusim's chip is the int8 chip, built without the training "
          "configuration (no VMEM: opcodes 0x08..0x0E fault); run tpusim_train_n16 (the same "
          "tpusim on the training chip, next to tpusim in the build's tools/tpusim) or use "
          "--backend model");
    return dev;
  }
  tpusim::DeviceOptions d;
  d.backend = "model";
  tpu::ChipParams p = a.n ? tpu::ChipParams::training(a.n) : tpusim::open_device(d, vm)->params();
  if (!p.has_vmem()) {  // the int8 tpusim's model: give it the training chip's VMEM and port
    p.vmem_rows = tpu::ChipParams::kTrainingVmemRows;
    p.vmem_port_bytes = tpu::ChipParams::training(p.N).vmem_port_bytes;
  }
  return std::make_unique<tpu::ModelDevice>(p);
}

// Multiply-accumulates of one training step (forward, dW, and dX of every layer but those
// reading the network input), counted from the model as the float importer sees it; 0 if it
// cannot import the model.
uint64_t step_macs(const std::string& model_bytes, uint32_t batch) {
  try {
    const tpu::cnn::Network net = tpu::cnn::import_onnx_bytes(model_bytes, "model");
    uint64_t macs = 0;
    for (const auto& l : net.layers) {
      if (!l.has_weights()) continue;
      const bool reads_input =
          std::find(l.inputs.begin(), l.inputs.end(), tpu::cnn::kNetworkInput) != l.inputs.end();
      macs += uint64_t(l.model_macs()) * batch * (reads_input ? 2 : 3);
    }
    return macs;
  } catch (const std::exception&) {
    return 0;
  }
}

struct Inputs {
  std::string model_bytes;
  tpu::train::TrainSet train, test;
  bool has_test = false;
  std::string test_name;
};

// The data sets, checked against the model's input shape and classes before anything runs.
void load_data(const TrainArgs& a, const tpu::train::ModelShape& shape, Inputs& in) {
  const std::array<uint32_t, 3>& chw = shape.chw;
  const uint32_t classes = shape.classes;
  tpusim::set_activity("loading the training images");
  in.train = a.fashion() ? tpu::train::load_fashion_mnist_set(a.data, true)
                         : tpu::train::load_folder_set(a.dataset, chw);
  tpu::train::check_set(in.train, classes, chw, "--dataset");
  if (a.topt.batch > in.train.count)
    throw tpusim::UsageError("--batch " + std::to_string(a.topt.batch) + " is larger than the " +
                             std::to_string(in.train.count) + " images of " + in.train.name);
  if (a.test_images == 0) return;
  tpusim::set_activity("loading the test images");
  if (!a.test_dataset.empty()) {
    in.test = tpu::train::load_folder_set(a.test_dataset, chw);
  } else if (a.fashion()) {
    in.test = tpu::train::load_fashion_mnist_set(a.data, false);
  } else {
    in.test = in.train;  // a folder has no test split: its own images
  }
  tpu::train::check_set(in.test, classes, chw, "test set");
  if (a.test_images != kAllImages && a.test_images > in.test.count)
    throw tpusim::UsageError("--test-images " + std::to_string(a.test_images) +
                             " is more than the " + std::to_string(in.test.count) + " images of " +
                             in.test.name);
  in.has_test = true;
}

nlohmann::ordered_json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

struct Outcome {
  tpu::train::FitResult r;
  uint64_t macs_per_step = 0;
  uint32_t n = 0;
  std::vector<tpu::train::LayerCycles> layers;
  tpu::train::LayerCycles bound;  // the step's analytical bound
  uint32_t test_images = 0;
  bool cycles_estimated = false;
  size_t step_instructions = 0;
  double compile_seconds = 0;
  // Energy (docs/energy.md): the actions of one step's program, per layer and phase of the
  // Trainer's program spans ("<layer> <phase>", in program order) and of no span.
  tpu::ActionCounts step_actions, other_actions;
  std::vector<tpu::ActionCounts> part_actions;
  std::vector<std::string> part_names;
  tpu::MemorySizes memories;
};

// The step program's actions, split by the Trainer's program spans.
void count_step_energy(const tpu::train::Trainer& t, const tpu::ChipParams& chip, Outcome& o) {
  const auto& program = t.step_program();
  std::vector<int> part(program.size(), -1);
  for (const auto& span : t.step_program_spans()) {
    const std::string name = span.layer + " " + span.phase;
    auto it = std::find(o.part_names.begin(), o.part_names.end(), name);
    if (it == o.part_names.end()) it = o.part_names.insert(o.part_names.end(), name);
    for (size_t i = span.begin; i < span.end && i < part.size(); ++i)
      part[i] = int(it - o.part_names.begin());
  }
  o.part_actions.assign(o.part_names.size(), tpu::ActionCounts{});
  for (size_t i = 0; i < program.size(); ++i) {
    const tpu::ActionCounts c = tpu::count_actions(program[i], chip);
    o.step_actions += c;
    (part[i] >= 0 ? o.part_actions[size_t(part[i])] : o.other_actions) += c;
  }
  o.memories = tpu::memory_sizes(chip);
}

// `a` times `k` (the actions of k steps).
tpu::ActionCounts times(const tpu::ActionCounts& a, uint64_t k) {
  auto items = a.items();
  for (auto& kv : items) kv.second *= k;
  return tpu::ActionCounts::from_items(items);
}

// train's "energy": run-cnn's keys over every step run (images = steps x batch), the step's
// figures, and per "<layer> <phase>" part of the step program (per image of a step).
nlohmann::ordered_json train_energy_json(const TrainArgs& a, const Outcome& o) {
  using J = nlohmann::ordered_json;
  const uint64_t steps = o.r.losses.size();
  const double batch = a.topt.batch;
  if (steps == 0) return J(nullptr);
  J j = tpu::energy_json(times(o.step_actions, steps), o.memories, a.energy_table,
                         double(steps) * batch, double(o.macs_per_step) * double(steps),
                         o.r.cycles_total, o.cycles_estimated);
  const tpu::Energy step = tpu::energy_of(o.step_actions, o.memories, a.energy_table);
  j["steps"] = steps;
  j["per_step_pj"] = step.total_pj();
  j["step_actions"] = tpu::actions_json(o.step_actions);
  j["left_out"] = "test-accuracy forward passes, weight upload (init) and read-back";
  auto part_json = [&](const std::string& name, const tpu::ActionCounts& c) {
    const tpu::Energy e = tpu::energy_of(c, o.memories, a.energy_table);
    J comp = J::object();
    for (const auto& [k, pj] : e.components) comp[k] = pj / batch;
    return J{{"name", name},
             {"pj_per_image", e.total_pj() / batch},
             {"components_pj_per_image", comp},
             {"actions", tpu::actions_json(c)}};
  };
  j["layers"] = J::array();
  for (size_t i = 0; i < o.part_actions.size(); ++i)
    j["layers"].push_back(part_json(o.part_names[i], o.part_actions[i]));
  j["other_pj_per_image"] =
      tpu::energy_of(o.other_actions, o.memories, a.energy_table).total_pj() / batch;
  j["other_actions"] = tpu::actions_json(o.other_actions);
  return j;
}

nlohmann::ordered_json result_json(const TrainArgs& a, const Inputs& in, const Outcome& o,
                                   int exit_code) {
  using J = nlohmann::ordered_json;
  const auto& r = o.r;
  J j;
  j["subcommand"] = "train";
  j["status"] = r.diverged ? "diverged" : exit_code ? "mismatch" : "ok";
  j["exit_code"] = exit_code;
  if (r.diverged) {
    j["error"] =
        J{{"code", nullptr}, {"name", nullptr}, {"pc", nullptr}, {"message", r.divergence}};
    j["diverged_step"] = r.diverged_step;
  }
  j["model"] = a.model_name();
  j["dataset"] = in.train.name;
  j["backend"] = a.backend;
  j["n"] = o.n;
  j["batch"] = a.topt.batch;
  j["optimizer"] = a.topt.optimizer == Optimizer::Sgd ? "sgd" : "adam";
  j["lr"] = a.topt.lr;
  j["steps"] = r.losses.size();
  j["steps_per_epoch"] = r.steps_per_epoch;
  J losses = J::array();
  for (float l : r.losses) losses.push_back(std::isfinite(l) ? J(l) : J(nullptr));
  j["losses"] = losses;
  J epochs = J::array();
  for (const auto& e : r.epochs)
    epochs.push_back(J{{"loss", e.loss}, {"test_accuracy", optional_number(e.test_accuracy)}});
  j["epochs"] = epochs;
  j["test_images"] = o.test_images;
  j["test_accuracy"] = optional_number(r.test_accuracy);
  j["initial_test_accuracy"] = optional_number(r.initial_test_accuracy);
  j["matches_golden"] = r.matches_golden ? J(*r.matches_golden) : J(nullptr);
  if (r.golden_mismatch)
    j["golden_mismatch"] = J{{"step", r.golden_mismatch->step}, {"what", r.golden_mismatch->what}};
  j["cycles_total"] = r.cycles_total;
  j["cycles_estimated"] = o.cycles_estimated;
  j["cycles_per_step"] =
      r.losses.empty() ? J(nullptr) : J(double(r.cycles_total) / double(r.losses.size()));
  const double denom = double(r.cycles_total) * o.n * o.n;
  j["mxu_utilization"] = o.macs_per_step && denom > 0
                             ? J(double(o.macs_per_step) * double(r.losses.size()) / denom)
                             : J(nullptr);
  j["macs_per_step"] = o.macs_per_step;
  J layers = J::array();
  for (const auto& l : o.layers)
    layers.push_back(J{{"name", l.name},
                       {"op", l.op},
                       {"forward", l.forward},
                       {"backward", l.backward},
                       {"update", l.update},
                       {"measured", l.measured},
                       {"bound_cycles", l.bound},
                       {"bound_mxu_cycles", l.bound_mxu},
                       {"bound_dma_cycles", l.bound_dma}});
  j["layers"] = layers;
  j["layers_measured"] = !o.layers.empty() && o.layers.front().measured;
  j["bound_cycles"] = o.bound.bound;
  j["bound_mxu_cycles"] = o.bound.bound_mxu;
  j["bound_dma_cycles"] = o.bound.bound_dma;
  j["residency"] = a.topt.resident;
  j["step_instructions"] = o.step_instructions;
  j["energy"] = train_energy_json(a, o);
  j["compile_seconds"] = o.compile_seconds;
  j["images_per_second"] = r.train_seconds > 0
                               ? J(double(r.losses.size()) * a.topt.batch / r.train_seconds)
                               : J(nullptr);
  j["wall_seconds"] = r.wall_seconds;
  j["output"] = !a.output.empty() && !r.diverged ? J(a.output) : J(nullptr);
  return j;
}

}  // namespace

// The rest of the command: progress, outputs and the summary.
namespace {

// The figures energy.svg draws (run-cnn's chart), per image of one step.
tpu::cnn::Evaluation energy_eval(const TrainArgs& a, const Outcome& o) {
  tpu::cnn::Evaluation e;
  e.model = a.model.empty() ? "Keras example (training step)" : a.model + " (training step)";
  e.chip_n = o.n;
  e.batch = a.topt.batch;
  e.images = a.topt.batch;
  e.energy_table = a.energy_table;
  e.memories = o.memories;
  e.actions = o.step_actions;
  e.layer_actions = o.part_actions;
  e.layer_names = o.part_names;
  e.other_actions = o.other_actions;
  return e;
}

void write_report(const TrainArgs& a, const nlohmann::ordered_json& j, const Outcome& o) {
  std::filesystem::create_directories(a.report_dir);
  tpusim::PlotSpec loss;
  loss.title = "tpusim train: " + a.model_name() + ", " + a.backend + " backend";
  loss.x_label = "step";
  loss.y_label = "loss";
  loss.x_linear = true;
  tpusim::PlotSeries steps{"loss per step (chip)", {}, {}};
  for (size_t i = 0; i < o.r.losses.size(); ++i) {
    steps.x.push_back(double(i + 1));
    steps.y.push_back(double(o.r.losses[i]));
  }
  tpusim::PlotSeries epochs{"mean loss per epoch", {}, {}};
  for (size_t e = 0; e < o.r.epochs.size(); ++e) {
    epochs.x.push_back(double(e + 1) * o.r.steps_per_epoch);
    epochs.y.push_back(o.r.epochs[e].loss);
  }
  loss.panels.push_back({"training loss", {steps, epochs}});
  tpusim::PlotSpec acc;
  acc.title = loss.title;
  acc.x_label = "epoch";
  acc.y_label = "test accuracy";
  acc.y_percent = true;
  acc.x_linear = true;
  tpusim::PlotSeries test{"test accuracy (" + std::to_string(o.test_images) + " images)", {}, {}};
  if (o.r.initial_test_accuracy) {
    test.x.push_back(0);
    test.y.push_back(*o.r.initial_test_accuracy);
  }
  for (size_t e = 0; e < o.r.epochs.size(); ++e) {
    if (!o.r.epochs[e].test_accuracy) continue;
    test.x.push_back(double(e + 1));
    test.y.push_back(*o.r.epochs[e].test_accuracy);
  }
  acc.panels.push_back({"after each epoch", {test}});
  const std::filesystem::path dir(a.report_dir);
  tpu::write_file_atomically((dir / "loss.svg").string(), tpusim::line_chart_svg(loss), "--report");
  tpu::write_file_atomically((dir / "accuracy.svg").string(), tpusim::line_chart_svg(acc),
                             "--report");
  if (!o.r.losses.empty())
    tpu::write_file_atomically((dir / "energy.svg").string(),
                               tpu::cnn::energy_svg(energy_eval(a, o)), "--report");
  tpu::write_file_atomically((dir / "train.json").string(), tpu::json_document(j, 9) + "\n",
                             "--report");
}

// The first step's timeline; slices named "<layer> <phase>" from the Trainer's program spans.
void write_timeline(const TrainArgs& a, const Outcome& o, uint32_t n,
                    const tpu::train::Trainer& t) {
  tpu::cnn::Evaluation e;
  e.timeline.program = t.step_program();
  e.timeline.instr_layer.assign(e.timeline.program.size(), -1);
  for (const auto& span : t.step_program_spans()) {
    const int id = int(e.timeline.layer_names.size());
    e.timeline.layer_names.push_back(span.layer + " " + span.phase);
    for (size_t i = span.begin; i < span.end && i < e.timeline.instr_layer.size(); ++i)
      e.timeline.instr_layer[i] = id;
  }
  e.model = a.model_name() + " training step 1";
  e.backend = a.backend;
  e.chip_n = n;
  e.batch = a.topt.batch;
  e.timeline.events = o.r.timeline;
  e.timeline.images = a.topt.batch;
  for (const auto& ev : o.r.timeline) e.timeline.cycles = std::max(e.timeline.cycles, ev.end);
  tpu::write_file_atomically(a.timeline, tpu::cnn::timeline_json(e), "--timeline");
}

void print_summary(const TrainArgs& a, const Inputs& in, const Outcome& o) {
  const auto& r = o.r;
  std::printf("model: %s, dataset: %s (%u images), %s backend, N = %u\n", a.model_name().c_str(),
              in.train.name.c_str(), in.train.count, a.backend.c_str(), o.n);
  if (r.initial_test_accuracy)
    std::printf("initial test accuracy: %.2f %% (%u images)\n", 100 * *r.initial_test_accuracy,
                o.test_images);
  for (size_t e = 0; e < r.epochs.size(); ++e) {
    std::printf("epoch %zu: mean loss %.6f", e + 1, r.epochs[e].loss);
    if (r.epochs[e].test_accuracy)
      std::printf(", test accuracy %.2f %%", 100 * *r.epochs[e].test_accuracy);
    std::printf("\n");
  }
  std::printf("steps: %zu, cycles: %llu%s (%.0f per step)\n", r.losses.size(),
              static_cast<unsigned long long>(r.cycles_total),
              o.cycles_estimated ? " (estimated by the model backend)" : "",
              r.losses.empty() ? 0.0 : double(r.cycles_total) / double(r.losses.size()));
  if (o.macs_per_step && r.cycles_total)
    std::printf("MXU utilization: %.2f %%\n", 100.0 * double(o.macs_per_step) *
                                                  double(r.losses.size()) /
                                                  (double(r.cycles_total) * o.n * o.n));
  if (r.matches_golden)
    std::printf("matches golden model: %s%s\n", *r.matches_golden ? "yes" : "NO",
                r.golden_mismatch ? (" (step " + std::to_string(r.golden_mismatch->step) + ": " +
                                     r.golden_mismatch->what + ")")
                                        .c_str()
                                  : "");
  std::printf("wall time: %.1f s (%.1f images/s)\n", r.wall_seconds,
              r.train_seconds > 0 ? double(r.losses.size()) * a.topt.batch / r.train_seconds : 0.0);
  if (!a.output.empty() && !r.diverged) std::printf("trained model: %s\n", a.output.c_str());
}

tpu::train::FitCallbacks progress(const TrainArgs& a) {
  tpu::train::FitCallbacks cb;
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  cb.on_step = [&a, last](const tpu::train::StepInfo& s) {
    tpusim::set_progress(s.step, s.steps, "steps");
    const auto now = std::chrono::steady_clock::now();
    if (a.quiet || (s.step > 1 && s.step < s.steps &&
                    std::chrono::duration<double>(now - *last).count() < 1.0))
      return;
    *last = now;
    std::fprintf(stderr, "train: step %llu/%llu (epoch %u/%u) loss %.6g, %.1f images/s\n",
                 static_cast<unsigned long long>(s.step), static_cast<unsigned long long>(s.steps),
                 s.epoch, s.epochs, double(s.loss), s.images_per_second);
  };
  cb.on_epoch = [&a](uint32_t epoch, const tpu::train::EpochResult& e) {
    if (a.quiet) return;
    std::fprintf(stderr, "train: epoch %u/%u mean loss %.6g", epoch, a.epochs, e.loss);
    if (e.test_accuracy) std::fprintf(stderr, ", test accuracy %.2f %%", 100 * *e.test_accuracy);
    std::fprintf(stderr, "\n");
  };
  cb.on_test = [&a](uint32_t epoch, uint32_t images) {
    if (a.quiet) return;
    if (epoch == 0)
      std::fprintf(stderr, "train: test accuracy before training, %u images (forward pass)\n",
                   images);
    else
      std::fprintf(stderr, "train: test accuracy after epoch %u/%u, %u images (forward pass)\n",
                   epoch, a.epochs, images);
  };
  return cb;
}

// --backend rtl in a tpusim built on the int8 chip (no VMEM): the same command runs in
// tpusim_train_n<N>, the tpusim built on the training chip, next to this executable (it
// replaces this process: same output, same exit code). Throws if there is none.
void exec_training_tpusim(const tpusim::Args& args) {
  namespace fs = std::filesystem;
  const std::string name = "tpusim_train_n" + std::to_string(tpu::RtlDevice::compiled_n());
  const fs::path other = fs::path(tpusim::self_executable()).parent_path() / name;
  std::error_code ec;
  if (!fs::exists(other, ec))
    throw std::runtime_error(
        "--backend rtl: this tpusim's chip is the int8 chip, built without the training "
        "configuration (no VMEM: opcodes 0x08..0x0E fault), and there is no " +
        other.string() +
        " (the tpusim on the training chip, built with TPU_SIM_TRAIN_N_LIST); use --backend "
        "model");
  std::vector<std::string> words = {other.string(), "train"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execv(argv[0], argv.data());
  throw std::runtime_error("--backend rtl: cannot start " + other.string() + ": " +
                           std::strerror(errno));
}

// The RTL pod's keys of the JSON: the lockstep check against the golden pod, its estimate.
void add_rtl_pod_json(nlohmann::ordered_json& j, const tpusim::PodTrainRtlReport& r) {
  using J = nlohmann::ordered_json;
  J est = J::array();
  for (uint64_t c : r.golden_step_cycles) est.push_back(c);
  j["golden_step_cycles"] = r.golden ? est : J(nullptr);
  j["sim_seconds"] = r.sim_seconds;
  j["sim_cycles_per_second"] =
      r.sim_seconds > 0 ? J(double(r.rtl_cycles) / r.sim_seconds) : J(nullptr);
}

// The pod's keys of the JSON (docs/training.md "Data-parallel training on a pod").
void add_pod_json(nlohmann::ordered_json& j, const TrainArgs& a,
                  const tpu::train::PodFitResult& p) {
  using J = nlohmann::ordered_json;
  uint64_t sum = 0;
  double util = 0;
  J per_step = J::array();
  for (uint64_t c : p.allreduce_cycles) {
    per_step.push_back(c);
    sum += c;
  }
  for (double u : p.link_utilization) util += u;
  const size_t steps = p.allreduce_cycles.size();
  j["chips"] = a.chips;
  j["topology"] = a.topology.name();
  j["batch_per_chip"] = a.topt.batch / a.chips;
  j["ici_bandwidth"] = a.timing.bytes_per_cycle;
  j["ici_latency"] = a.timing.latency;
  j["allreduce_cycles"] = per_step;
  j["allreduce_share"] =
      p.fit.cycles_total ? J(double(sum) / double(p.fit.cycles_total)) : J(nullptr);
  j["link_utilization"] = steps ? J(util / double(steps)) : J(nullptr);
  j["link_bytes_per_step"] = steps ? J(double(p.link_bytes) / double(steps)) : J(nullptr);
  j["chips_identical"] = p.chips_identical;
  J shares = J::array();
  for (size_t i = 0; i < steps && i < p.fit.step_cycles.size(); ++i)
    shares.push_back(p.fit.step_cycles[i]
                         ? J(double(p.allreduce_cycles[i]) / double(p.fit.step_cycles[i]))
                         : J(nullptr));
  j["allreduce_share_per_step"] = shares;
  J link_util = J::array();
  for (double u : p.link_utilization) link_util.push_back(u);
  j["link_utilization_per_step"] = link_util;
}

// --chips P: data-parallel training on the pod of golden models or the RTL pod (fit_pod.h).
int run_pod_train(const TrainArgs& a, const Inputs& in) {
  tpusim::po::variables_map none;
  const bool rtl = a.backend == "rtl";
  const tpu::ChipParams chip =
      rtl ? tpusim::pod_train_rtl()->params() : open_train_device(a, none)->params();
  tpusim::set_activity("compiling " + a.model_name() + " into a pod's training step");
  std::optional<tpu::train::PodTrainer> t;
  try {
    t.emplace(in.model_bytes, a.topt, chip, a.topology, a.timing);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(
        (a.model.empty() ? std::string() : "--model " + a.model + ": ") + e.what() +
        (rtl ? " (on the RTL pod's chip, N = " + std::to_string(chip.N) + ")" : std::string()));
  }
  std::optional<tpusim::PodTrainRtl::Made> pod_rtl;
  if (rtl) {
    try {
      tpusim::pod_train_rtl()->check(t->chip_params(), a.topology, a.timing);
    } catch (const std::invalid_argument& e) {
      throw tpusim::UsageError("--chips " + std::to_string(a.chips) +
                               " --backend rtl: " + e.what());
    }
    pod_rtl = tpusim::pod_train_rtl()->make(!a.no_golden);
    t->set_backend(pod_rtl->maker);
  }
  // Under mpirun the RTL pod runs over the ranks; every rank trains, rank 0 reports.
  const tpusim::PodTrainRtl* pr = rtl ? tpusim::pod_train_rtl() : nullptr;
  const uint32_t ranks = pr && pr->ranks ? pr->ranks() : 1;
  const bool reporter = !pr || !pr->rank || pr->rank() == 0;
  if (!a.save_initial.empty() && reporter)
    tpu::write_file_atomically(a.save_initial, in.model_bytes, "--save-initial");
  tpu::train::FitOptions fo;
  fo.epochs = a.epochs;
  fo.steps_per_epoch = a.steps_per_epoch;
  fo.shuffle_seed = a.shuffle;
  fo.test_images = in.has_test ? std::min(a.test_images, in.test.count) : 0;
  Outcome o;
  o.n = chip.N;
  o.test_images = fo.test_images;
  o.cycles_estimated = !rtl;
  o.macs_per_step = step_macs(in.model_bytes, a.topt.batch) / a.chips;  // per chip
  if (!a.quiet && reporter)
    std::fprintf(stderr, "train: pod of %u chips (%s), %u images per chip of each step's %u%s\n",
                 a.chips, a.topology.name().c_str(), a.topt.batch / a.chips, a.topt.batch,
                 ranks > 1 ? (", over " + std::to_string(ranks) + " MPI ranks").c_str() : "");
  tpusim::set_activity("training " + a.model_name() + " on a pod of " + std::to_string(a.chips) +
                       (rtl ? " Verilated chips" : " golden models"));
  tpu::train::FitCallbacks cb = reporter ? progress(a) : tpu::train::FitCallbacks{};
  if (pod_rtl) {  // the step being run: a mismatch's step, the golden estimate's step
    pod_rtl->set_step(1);
    cb.on_step = [inner = cb.on_step, &pod_rtl](const tpu::train::StepInfo& s) {
      pod_rtl->set_step(s.step + 1);
      if (inner) inner(s);
    };
  }
  const tpu::train::PodFitResult p =
      tpu::train::fit_pod(*t, in.train, in.has_test ? &in.test : nullptr, fo, a.topt.batch, cb);
  o.r = p.fit;
  std::optional<tpusim::PodTrainRtlReport> report;
  if (pod_rtl) report = pod_rtl->report();
  const bool mismatch = report && report->golden && !report->matches;
  if (report && report->golden) o.r.matches_golden = report->matches;
  if (mismatch)
    o.r.golden_mismatch = tpu::train::GoldenMismatch{report->mismatch_step, report->mismatch};
  const int code = o.r.diverged || !p.chips_identical || mismatch ? 1 : 0;
  nlohmann::ordered_json j = result_json(a, in, o, code);
  add_pod_json(j, a, p);
  if (report) add_rtl_pod_json(j, *report);
  if (rtl) j["ranks"] = ranks;
  tpusim::set_activity("writing the outputs");
  if (!a.output.empty() && !o.r.diverged) {
    const auto w = t->weights(0);  // on every rank: a read of chip 0 comes from its rank
    if (reporter) tpu::train::export_trained_onnx(in.model_bytes, w, a.output);
  }
  if (!reporter) return code;
  if (!a.report_dir.empty()) write_report(a, j, o);
  if (o.r.diverged) std::fprintf(stderr, "tpusim train: error: %s\n", o.r.divergence.c_str());
  if (!p.chips_identical)
    std::fprintf(stderr,
                 "tpusim train: error: the chips' weights or losses differ after step %llu\n",
                 static_cast<unsigned long long>(p.chips_differ_step));
  if (mismatch)
    std::fprintf(stderr,
                 "tpusim train: error: the RTL pod differs from the golden pod (step %llu: %s)\n",
                 static_cast<unsigned long long>(report->mismatch_step), report->mismatch.c_str());
  if (a.json) {
    std::printf("%s\n", tpu::json_document(j, 9).c_str());
    return code;
  }
  print_summary(a, in, o);
  std::printf(
      "pod: %u chips (%s), all-reduce %.1f %% of the cycles, link utilization %.1f %%, "
      "chips' weights identical: %s\n",
      a.chips, a.topology.name().c_str(), 100 * j["allreduce_share"].get<double>(),
      100 * j["link_utilization"].get<double>(), p.chips_identical ? "yes" : "NO");
  return code;
}

int run_train(const tpusim::Args& args) {
  TrainArgs a;
  if (!parse_train_args(args, a)) return 0;
  if (a.backend == "rtl" && !tpu::RtlDevice::compiled_params().has_vmem() &&
      (a.chips == 0 || !tpusim::pod_train_rtl()))
    exec_training_tpusim(args);  // the training chip, and its RTL pod for --chips
  check_paths(a);
  tpusim::set_activity("reading the model");
  Inputs in;
  in.model_bytes = a.model.empty() ? tpu::train::keras_example_onnx(a.seed)
                                   : tpu::train::read_model_file(a.model, "--model");
  std::vector<std::string> trainable;
  try {
    trainable = tpu::train::trainable_initializers(in.model_bytes);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("--model " + a.model + ": " + e.what());
  }
  if (trainable.empty())
    throw std::runtime_error("--model " + a.model_name() +
                             ": the model has no trainable weight (no float initializer read by "
                             "a Conv, Gemm or MatMul node)");
  tpu::train::ModelShape shape;
  try {
    shape = tpu::train::model_shape(in.model_bytes);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("--model " + a.model + ": " + e.what());
  }
  if (shape.classes == 0)
    throw std::runtime_error("--model " + a.model_name() +
                             ": the output is not [B, classes] with a fixed number of classes");
  load_data(a, shape, in);
  if (a.chips != 0) return run_pod_train(a, in);
  tpusim::po::variables_map none;
  auto dev = open_train_device(a, none);
  std::unique_ptr<tpu::Device> golden_dev;
  tpusim::set_activity("compiling " + a.model_name() + " into a training step");
  auto compile = [&]() {
    try {
      return tpu::train::Trainer(in.model_bytes, a.topt, dev->params());
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(a.model.empty() ? std::string(e.what())
                                               : "--model " + a.model + ": " + e.what());
    }
  };
  tpu::train::Trainer t = compile();
  std::optional<tpu::train::Trainer> golden;
  if (a.backend == "rtl" && !a.no_golden) {
    golden_dev = std::make_unique<tpu::ModelDevice>(dev->params());
    golden.emplace(compile());
  }
  if (t.classes() != shape.classes || t.input_chw() != shape.chw)
    throw std::runtime_error("--model " + a.model_name() + ": the Trainer sees " +
                             std::to_string(t.classes()) + " classes, the graph's output " +
                             std::to_string(shape.classes));
  if (!a.save_initial.empty())
    tpu::write_file_atomically(a.save_initial, in.model_bytes, "--save-initial");

  tpu::train::FitOptions fo;
  fo.epochs = a.epochs;
  fo.steps_per_epoch = a.steps_per_epoch;
  fo.shuffle_seed = a.shuffle;
  fo.test_images = in.has_test ? std::min(a.test_images, in.test.count) : 0;
  // The rtl backend records the first step's timeline: the per-layer cycles are measured.
  fo.timeline = !a.timeline.empty() || a.backend == "rtl";
  Outcome o;
  o.n = dev->params().N;
  o.test_images = fo.test_images;
  o.cycles_estimated = a.backend == "model";
  o.macs_per_step = step_macs(in.model_bytes, a.topt.batch);
  o.step_instructions = t.step_instructions();
  o.compile_seconds = t.compile_seconds();
  tpusim::set_activity("training " + a.model_name() + " on the " + a.backend + " backend");
  o.r = tpu::train::fit(t, *dev, in.train, in.has_test ? &in.test : nullptr, fo, a.topt.batch,
                        progress(a), golden ? &*golden : nullptr, golden_dev.get());
  o.layers = t.layer_cycles();
  o.bound = t.step_bound();
  count_step_energy(t, dev->params(), o);

  const int code = o.r.diverged || (o.r.matches_golden && !*o.r.matches_golden) ? 1 : 0;
  const nlohmann::ordered_json j = result_json(a, in, o, code);
  tpusim::set_activity("writing the outputs");
  if (!a.output.empty() && !o.r.diverged) {
    const auto w = t.weights(*dev);
    tpu::train::export_trained_onnx(in.model_bytes, w, a.output);
  }
  if (!a.report_dir.empty()) write_report(a, j, o);
  if (!a.timeline.empty() && !o.r.timeline.empty()) write_timeline(a, o, o.n, t);
  if (o.r.diverged) std::fprintf(stderr, "tpusim train: error: %s\n", o.r.divergence.c_str());
  if (a.json)
    std::printf("%s\n", tpu::json_document(j, 9).c_str());
  else
    print_summary(a, in, o);
  return code;
}

}  // namespace

TPUSIM_SUBCOMMAND("train",
                  "train a float ONNX model (default: the Keras Fashion-MNIST CNN) on the chip",
                  run_train);

#endif  // __has_include("fit.h")
