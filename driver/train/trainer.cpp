// SPDX-License-Identifier: Apache-2.0
// The Trainer: the training compiler's passes in pipeline order (compiler/), then the host's
// part of training: placing the weights once, each batch and its labels every step, and
// reading back what the chip computed.
#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "compiler/autodiff.h"
#include "compiler/emit.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/overlap.h"
#include "compiler/placement.h"
#include "compiler/residency.h"
#include "compiler/schedule.h"
#include "kernels.h"

namespace tpu::train {

using namespace compiler;

class TrainerImpl {
 public:
  TrainOptions opt;
  ChipParams chip;
  Graph g;
  Placement place;
  Schedule sched;
  Emitted step, forward;
  // The resident tensors (residency.h) into VMEM after init, back to device memory before the
  // host reads them (empty when nothing is resident).
  std::vector<Instruction> load, store;
  uint32_t base = Device::kArenaBase;
  double compile_seconds = 0;
  RunStats last;
  std::vector<InstrEvent> timeline;  // of the last step run while the device recorded one
  bool stepped = false;
  const Device* device = nullptr;  // the one init() placed the weights on

  void emit_programs() {
    step = emit(g, place, sched.step, opt, chip, base);
    forward = emit(g, place, sched.forward, opt, chip, base);
    load.clear();
    store.clear();
    if (place.resident_rows != 0) {
      load = emit_residency(g, place, chip, base, false);
      store = emit_residency(g, place, chip, base, true);
    }
  }
  uint32_t addr(int t) const { return base + place.homes[static_cast<size_t>(t)].addr; }
  const Home& home(int t) const { return place.homes[static_cast<size_t>(t)]; }
  void write_matrix(Device& dev, int t, const std::vector<float>& values) const {
    const std::vector<float> img = pack(home(t).geom, chip.N, values);
    dev.write(addr(t), img.data(), img.size() * 4);
  }
  std::vector<float> read_matrix(Device& dev, int t) const {
    std::vector<float> img(size_t{home(t).rows} * chip.N);
    dev.read(addr(t), img.data(), img.size() * 4);
    return unpack(home(t).geom, chip.N, img);
  }
  void check_device(const Device& dev) const {
    if (!(dev.params() == chip))
      throw std::invalid_argument(
          "Trainer: the device's chip parameters differ from the compiled ones");
  }
  void check_initialized(const Device& dev, const char* what) const {
    if (device != &dev) {
      throw std::logic_error(std::string("Trainer::") + what +
                             ": call init() on this device first (it holds the weights)");
    }
  }
  void put_batch(Device& dev, const float* images, uint32_t count) const;
};

namespace {

constexpr uint64_t kMaxStepCycles = uint64_t{1} << 40;  // a step program cannot hang: no limit

}  // namespace

void TrainerImpl::put_batch(Device& dev, const float* images, uint32_t count) const {
  const size_t pixels = size_t{g.input_c} * g.input_h * g.input_w;
  std::vector<float> nchw(pixels * g.batch, 0.0f);  // a short batch is padded with zeros
  std::memcpy(nchw.data(), images, size_t{count} * pixels * 4);
  // The first Conv's input with its zero border (image layout), else [batch, C*H*W]: each
  // image's NCHW values are its row.
  write_matrix(dev, g.input, g.input_conv ? conv_input_values(*g.input_conv, chip.N, nchw) : nchw);
}

Trainer::Trainer(const std::string& model, const TrainOptions& opt, const ChipParams& chip)
    : impl_(std::make_unique<TrainerImpl>()) {
  const auto t0 = std::chrono::steady_clock::now();
  TrainerImpl& t = *impl_;
  t.opt = opt;
  t.chip = chip;
  chip.validate();
  t.g = import_onnx(model, opt.batch, chip.N);
  append_backward(t.g);
  append_update(t.g, opt);
  fuse_conv_pool(t.g, chip);
  fuse_dense_update(t.g);
  t.place = place(t.g, chip);
  if (opt.resident) place_resident(t.g, t.place, chip);
  t.sched = schedule(t.g);
  if (opt.overlap) overlap_updates(t.g, t.place, t.sched, chip, opt.resident, opt.overlap_lead);
  if (opt.dense_x_in_vmem) place_x_in_vmem(t.g, t.place, t.sched.step, chip);
  t.emit_programs();
  t.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

uint32_t Trainer::classes() const { return impl_->g.classes; }
std::array<uint32_t, 3> Trainer::input_chw() const {
  return {impl_->g.input_c, impl_->g.input_h, impl_->g.input_w};
}
size_t Trainer::step_instructions() const { return impl_->step.program.size(); }
double Trainer::compile_seconds() const { return impl_->compile_seconds; }
const std::vector<Instruction>& Trainer::step_program() const { return impl_->step.program; }

std::vector<ProgramSpan> Trainer::step_program_spans() const {
  static const char* const kPhase[] = {"forward", "loss", "backward", "update"};
  const TrainerImpl& t = *impl_;
  std::vector<ProgramSpan> r;
  for (const Emitted::Range& e : t.step.ranges) {
    const Node& n = t.g.nodes[static_cast<size_t>(e.node)];
    const Node& layer = n.layer >= 0 ? t.g.nodes[static_cast<size_t>(n.layer)] : n;
    r.push_back(ProgramSpan{e.begin, e.end, layer.name,
                            n.layer >= 0 ? layer.onnx_op : std::string(op_name(n.op)),
                            kPhase[static_cast<int>(n.phase)]});
  }
  return r;
}

void Trainer::init(Device& dev) {
  TrainerImpl& t = *impl_;
  t.check_device(dev);
  const HostBuffer buf = dev.alloc(t.place.device_bytes, "training device memory", 4096);
  if (buf.addr != t.base) {
    t.base = buf.addr;
    t.emit_programs();
  }
  const uint32_t n = t.chip.N;
  for (const Param& p : t.g.params) {
    t.write_matrix(dev, p.tensor, kernel_values(t.g, p, p.initial));
    for (int s : p.state) dev.fill(t.addr(s), size_t{t.home(s).rows} * 4 * n, 0);
  }
  const std::vector<float> pad = pad_row_lanes(t.g.classes, n);
  dev.write(t.addr(t.g.pad_row), pad.data(), pad.size() * 4);
  if (t.g.adam_state >= 0) {  // beta1^0 = beta2^0 = 1.0 in every lane, the two factors 0
    std::vector<float> rows(size_t{AdamState::kRows} * n, 0.0f);
    std::fill(rows.begin(), rows.begin() + 2 * n, 1.0f);
    dev.write(t.addr(t.g.adam_state), rows.data(), rows.size() * 4);
  }
  if (!t.load.empty()) dev.run(t.load, kMaxStepCycles);
  t.stepped = false;
  t.timeline.clear();
  t.device = &dev;
}

StepResult Trainer::step(Device& dev, const float* images, const int32_t* labels) {
  TrainerImpl& t = *impl_;
  t.check_initialized(dev, "step");
  const uint32_t n = t.chip.N, b = t.g.batch;
  std::vector<int32_t> lanes(size_t{t.home(t.g.labels).rows} * n, 0);
  for (uint32_t i = 0; i < b; ++i) {
    if (labels[i] < 0 || static_cast<uint32_t>(labels[i]) >= t.g.classes) {
      throw std::invalid_argument("Trainer::step: label " + std::to_string(labels[i]) +
                                  " of example " + std::to_string(i) + " is outside [0, " +
                                  std::to_string(t.g.classes) + ")");
    }
    lanes[i] = labels[i];
  }
  t.put_batch(dev, images, b);
  dev.write(t.addr(t.g.labels), lanes.data(), lanes.size() * 4);
  t.last = dev.run(t.step.program, kMaxStepCycles);
  if (dev.recording_timeline()) t.timeline = dev.timeline();
  t.stepped = true;
  float loss;
  dev.read(t.addr(t.g.loss), &loss, 4);
  return StepResult{loss, t.last.cycles};
}

std::vector<float> Trainer::logits(Device& dev, const float* images, uint32_t count) {
  TrainerImpl& t = *impl_;
  t.check_initialized(dev, "logits");
  const uint32_t b = t.g.batch, c = t.g.classes;
  const size_t pixels = size_t{t.g.input_c} * t.g.input_h * t.g.input_w;
  std::vector<float> result;
  for (uint32_t first = 0; first < count; first += b) {
    const uint32_t k = std::min(b, count - first);
    t.put_batch(dev, images + first * pixels, k);
    dev.run(t.forward.program, kMaxStepCycles);
    const std::vector<float> z = t.read_matrix(dev, t.g.logits);
    result.insert(result.end(), z.begin(), z.begin() + size_t{k} * c);
  }
  return result;
}

std::map<std::string, std::vector<float>> Trainer::weights(Device& dev) const {
  const TrainerImpl& t = *impl_;
  t.check_initialized(dev, "weights");
  if (!t.store.empty()) dev.run(t.store, kMaxStepCycles);  // the resident weights' values
  std::map<std::string, std::vector<float>> w;
  for (const Param& p : t.g.params) {
    w[p.initializer] = onnx_values(t.g, p, t.read_matrix(dev, p.tensor));
  }
  return w;
}

std::vector<LayerCycles> Trainer::layer_cycles() const {
  const TrainerImpl& t = *impl_;
  if (!t.stepped) return {};
  if (!t.timeline.empty()) return compiler::layer_cycles(t.g, t.step, t.chip, t.timeline);
  return compiler::layer_cycles(t.g, t.step, t.chip, t.last.cycles);
}

LayerCycles Trainer::step_bound() const {
  const TrainerImpl& t = *impl_;
  LayerCycles s{"step", "", 0, 0, 0};
  for (const LayerCycles& l : compiler::layer_cycles(t.g, t.step, t.chip, 0)) {
    s.bound_mxu += l.bound_mxu;
    s.bound_dma += l.bound_dma;
  }
  s.bound = std::max(s.bound_mxu, s.bound_dma);
  return s;
}

}  // namespace tpu::train
