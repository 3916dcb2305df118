// SPDX-License-Identifier: Apache-2.0
// PodTrainer: the training compiler's passes with the gradient all-reduce (compiler/allreduce.h)
// and the host's part of data-parallel training on the pod of golden models.
#include "pod_trainer.h"

#include <cstring>
#include <stdexcept>

#include "compiler/allreduce.h"
#include "compiler/autodiff.h"
#include "compiler/emit.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/placement.h"
#include "compiler/schedule.h"
#include "device.h"
#include "kernels.h"
#include "layout.h"

namespace tpu::train {

using namespace compiler;

namespace {

constexpr uint32_t kBase = Device::kArenaBase;  // each chip's device memory starts here
constexpr uint32_t kRegionAlign = 4096;

ChipParams with_links(ChipParams c, const PodTopology& pod) {
  if (c.ici_links < pod.links_needed()) c.ici_links = pod.links_needed();
  return c;
}

uint32_t check_batch(const TrainOptions& opt, const PodTopology& pod) {
  if (pod.chips() == 0 || opt.batch == 0 || opt.batch % pod.chips() != 0) {
    throw std::invalid_argument("PodTrainer: the global batch " + std::to_string(opt.batch) +
                                " is not divisible by the pod's " + std::to_string(pod.chips()) +
                                " chips (each chip trains on batch / chips examples)");
  }
  return opt.batch / pod.chips();
}

// The pod of golden models.
class GoldenPod : public PodBackend {
 public:
  GoldenPod(const ChipParams& chip, const PodTopology& topo, const LinkTiming& timing)
      : pod_(topo, chip, timing) {}
  void map(uint32_t base, uint32_t bytes) override {
    for (uint32_t r = 0; r < pod_.chips(); ++r) {
      pod_.memory(r).add_region(base, bytes);
      pod_.chip(r).set_dma_window(0, base, bytes);
    }
  }
  void load(uint32_t chip, uint32_t addr, const std::vector<uint8_t>& bytes) override {
    pod_.memory(chip).load(addr, bytes);
  }
  std::vector<uint8_t> dump(uint32_t chip, uint32_t addr, size_t bytes) override {
    return pod_.memory(chip).dump(addr, bytes);
  }
  PodRunFigures run(const std::vector<std::vector<Instruction>>& programs,
                    const char* what) override {
    const PodResult res = pod_.run(programs);
    if (!res.ok()) {
      throw std::runtime_error(std::string("PodTrainer: the pod faulted in the ") + what +
                               " program: " + res.message);
    }
    return {res.cycles, res.link_bytes, res.link_busy_cycles};
  }

 private:
  PodModel pod_;
};

}  // namespace

class PodTrainerImpl {
 public:
  TrainOptions opt;  // batch: the global batch
  ChipParams chip;
  PodTopology topo;
  LinkTiming timing;
  Graph g;
  Placement place;
  Emitted backward, update, forward;  // the same on every chip
  std::vector<Emitted> allreduce;     // per chip
  PodBackendMaker maker;              // empty: GoldenPod
  std::unique_ptr<PodBackend> pod;    // made by init()

  const Home& home(int t) const { return place.homes[static_cast<size_t>(t)]; }
  uint32_t addr(int t) const { return kBase + home(t).addr; }
  void write_words(uint32_t r, uint32_t at, const void* src, size_t bytes) const {
    std::vector<uint8_t> b(bytes);
    std::memcpy(b.data(), src, bytes);
    pod->load(r, at, b);
  }
  void write_matrix(uint32_t r, int t, const std::vector<float>& values) const {
    const std::vector<float> img = pack(home(t).geom, chip.N, values);
    write_words(r, addr(t), img.data(), img.size() * 4);
  }
  std::vector<float> read_floats(uint32_t r, uint32_t at, size_t count) const {
    const std::vector<uint8_t> b = pod->dump(r, at, count * 4);
    std::vector<float> f(count);
    std::memcpy(f.data(), b.data(), b.size());
    return f;
  }
  std::vector<float> read_matrix(uint32_t r, int t) const {
    return unpack(home(t).geom, chip.N, read_floats(r, addr(t), size_t{home(t).rows} * chip.N));
  }
  void put_batch(uint32_t r, const float* images, uint32_t count) const {
    const size_t pixels = size_t{g.input_c} * g.input_h * g.input_w;
    std::vector<float> nchw(pixels * g.batch, 0.0f);
    std::memcpy(nchw.data(), images, size_t{count} * pixels * 4);
    write_matrix(r, g.input, g.input_conv ? conv_input_values(*g.input_conv, chip.N, nchw) : nchw);
  }
  PodRunFigures run(const std::vector<std::vector<Instruction>>& programs, const char* what) const {
    return pod->run(programs, what);
  }
  void check_initialized(const char* what) const {
    if (!pod) throw std::logic_error(std::string("PodTrainer::") + what + ": call init() first");
  }
  void compile(const std::string& model);
};

void PodTrainerImpl::compile(const std::string& model) {
  const uint32_t local = check_batch(opt, topo);
  try {
    g = import_onnx(model, local, chip.N);
  } catch (const std::invalid_argument& e) {  // the shape checks see the chip's batch
    throw std::invalid_argument(std::string(e.what()) + " (each of the " +
                                std::to_string(topo.chips()) + " chips trains on batch " +
                                std::to_string(local) + " of the global " +
                                std::to_string(opt.batch) + ")");
  }
  append_backward(g);
  insert_gradient_allreduce(g, topo, opt.batch);
  append_update(g, opt);
  fuse_conv_pool(g, chip);
  fuse_dense_update(g);
  place = compiler::place(g, chip);
  const Schedule sched = schedule(g);
  // The step in three programs: everything before the sums, the sums, the update (the update
  // reads only summed gradients; nothing before it reads what it writes).
  std::vector<int> before, sums, after;
  for (int id : sched.step) {
    const Node& n = g.nodes[static_cast<size_t>(id)];
    (n.op == Op::AllReduce ? sums : n.phase == Phase::Update ? after : before).push_back(id);
  }
  backward = emit(g, place, before, opt, chip, kBase);
  update = emit(g, place, after, opt, chip, kBase);
  forward = emit(g, place, sched.forward, opt, chip, kBase);
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    g.pod_chip = r;
    allreduce.push_back(emit(g, place, sums, opt, chip, kBase));
  }
  g.pod_chip = 0;
}

PodTrainer::PodTrainer(const std::string& model, const TrainOptions& opt, const ChipParams& chip,
                       const PodTopology& pod, const LinkTiming& timing)
    : impl_(std::make_unique<PodTrainerImpl>()) {
  PodTrainerImpl& t = *impl_;
  t.opt = opt;
  t.topo = pod;
  t.timing = timing;
  t.chip = with_links(chip, pod);
  t.chip.validate();
  t.compile(model);
}

PodTrainer::~PodTrainer() = default;
PodTrainer::PodTrainer(PodTrainer&&) noexcept = default;
PodTrainer& PodTrainer::operator=(PodTrainer&&) noexcept = default;

uint32_t PodTrainer::chips() const { return impl_->topo.chips(); }
uint32_t PodTrainer::classes() const { return impl_->g.classes; }
std::array<uint32_t, 3> PodTrainer::input_chw() const {
  return {impl_->g.input_c, impl_->g.input_h, impl_->g.input_w};
}
const ChipParams& PodTrainer::chip_params() const { return impl_->chip; }

void PodTrainer::set_backend(PodBackendMaker maker) { impl_->maker = std::move(maker); }

void PodTrainer::init() {
  PodTrainerImpl& t = *impl_;
  t.pod.reset();  // one pod at a time (an RTL pod is large)
  t.pod = t.maker ? t.maker(t.chip, t.topo, t.timing)
                  : std::make_unique<GoldenPod>(t.chip, t.topo, t.timing);
  const uint32_t bytes = (t.place.device_bytes + kRegionAlign - 1) / kRegionAlign * kRegionAlign;
  const uint32_t n = t.chip.N;
  t.pod->map(kBase, bytes);
  for (uint32_t r = 0; r < t.topo.chips(); ++r) {
    for (const Param& p : t.g.params) {
      t.write_matrix(r, p.tensor, kernel_values(t.g, p, p.initial));  // state: zero already
    }
    const std::vector<float> pad = pad_row_lanes(t.g.classes, n);
    t.write_words(r, t.addr(t.g.pad_row), pad.data(), pad.size() * 4);
    if (t.g.adam_state >= 0) {  // beta1^0 = beta2^0 = 1.0 in every lane, the two factors 0
      std::vector<float> rows(size_t{AdamState::kRows} * n, 0.0f);
      std::fill(rows.begin(), rows.begin() + 2 * n, 1.0f);
      t.write_words(r, t.addr(t.g.adam_state), rows.data(), rows.size() * 4);
    }
  }
}

PodStepResult PodTrainer::step(const float* images, const int32_t* labels) {
  PodTrainerImpl& t = *impl_;
  t.check_initialized("step");
  const uint32_t n = t.chip.N, b = t.g.batch, chips = t.topo.chips();
  const size_t pixels = size_t{t.g.input_c} * t.g.input_h * t.g.input_w;
  for (uint32_t i = 0; i < b * chips; ++i) {
    if (labels[i] < 0 || static_cast<uint32_t>(labels[i]) >= t.g.classes) {
      throw std::invalid_argument("PodTrainer::step: label " + std::to_string(labels[i]) +
                                  " of example " + std::to_string(i) + " is outside [0, " +
                                  std::to_string(t.g.classes) + ")");
    }
  }
  for (uint32_t r = 0; r < chips; ++r) {
    std::vector<int32_t> lanes(size_t{t.home(t.g.labels).rows} * n, 0);
    std::copy(labels + size_t{r} * b, labels + size_t{r + 1} * b, lanes.begin());
    t.put_batch(r, images + size_t{r} * b * pixels, b);
    t.write_words(r, t.addr(t.g.labels), lanes.data(), lanes.size() * 4);
  }
  std::vector<std::vector<Instruction>> sums;
  for (const Emitted& e : t.allreduce) sums.push_back(e.program);
  const PodRunFigures a =
      t.run(std::vector<std::vector<Instruction>>(chips, t.backward.program), "forward/backward");
  const PodRunFigures s = chips > 1 ? t.run(sums, "all-reduce") : PodRunFigures{};  // 1: none
  const PodRunFigures u =
      t.run(std::vector<std::vector<Instruction>>(chips, t.update.program), "update");
  PodStepResult res;
  for (uint32_t r = 0; r < chips; ++r)
    res.chip_losses.push_back(t.read_floats(r, t.addr(t.g.loss), 1)[0]);
  res.loss = res.chip_losses[0];
  res.cycles = a.cycles + s.cycles + u.cycles;
  res.allreduce_cycles = s.cycles;
  res.link_bytes = s.link_bytes;
  res.link_busy_cycles = s.link_busy_cycles;
  if (s.cycles != 0) {
    res.link_utilization =
        static_cast<double>(s.link_busy_cycles) / (static_cast<double>(s.cycles) * chips);
  }
  return res;
}

std::map<std::string, std::vector<float>> PodTrainer::weights(uint32_t chip) const {
  const PodTrainerImpl& t = *impl_;
  t.check_initialized("weights");
  if (chip >= t.topo.chips()) {
    throw std::out_of_range("PodTrainer::weights: chip " + std::to_string(chip) + " (the pod has " +
                            std::to_string(t.topo.chips()) + ")");
  }
  std::map<std::string, std::vector<float>> w;
  for (const Param& p : t.g.params)
    w[p.initializer] = onnx_values(t.g, p, t.read_matrix(chip, p.tensor));
  return w;
}

std::vector<float> PodTrainer::logits(const float* images, uint32_t count) {
  PodTrainerImpl& t = *impl_;
  t.check_initialized("logits");
  const uint32_t b = t.g.batch, c = t.g.classes;
  const size_t pixels = size_t{t.g.input_c} * t.g.input_h * t.g.input_w;
  std::vector<std::vector<Instruction>> programs(t.topo.chips(), ProgramBuilder(t.chip).finish());
  programs[0] = t.forward.program;
  std::vector<float> result;
  for (uint32_t first = 0; first < count; first += b) {
    const uint32_t k = std::min(b, count - first);
    t.put_batch(0, images + first * pixels, k);
    t.run(programs, "forward");
    const std::vector<float> z = t.read_matrix(0, t.g.logits);
    result.insert(result.end(), z.begin(), z.begin() + size_t{k} * c);
  }
  return result;
}

}  // namespace tpu::train
