// SPDX-License-Identifier: Apache-2.0
// Inference across the chips of a pod: the gather programs, the pod of golden models as an
// InferencePod, and the evaluation of an image set on a pod (pod_inference.h).
#include "pod_inference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>

#include "eval_source.h"
#include "program.h"
#include "reference.h"

namespace tpu::cnn {

namespace {

constexpr uint32_t kBase = 0x8000'0000u;  // every chip's device memory starts here
constexpr uint32_t kAlign = 4096;         // each buffer starts on its own page
constexpr uint64_t kGatherCycleLimit = 10'000'000;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class GoldenInferencePod : public InferencePod {
 public:
  GoldenInferencePod(const PodTopology& topology, const ChipParams& chip, const LinkTiming& timing)
      : pod_(topology, chip, timing) {}
  const PodTopology& topology() const override { return pod_.topology(); }
  const ChipParams& params() const override { return pod_.params(); }
  std::string backend() const override { return "model"; }
  bool cycles_estimated() const override { return true; }
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
  Run run(const std::vector<std::vector<Instruction>>& programs, uint64_t /*the model ends*/,
          const std::string& what) override {
    const auto t0 = std::chrono::steady_clock::now();
    const PodResult res = pod_.run(programs);
    if (!res.ok())
      throw std::runtime_error("the pod of golden models faulted in the " + what +
                               " programs: " + res.message);
    Run r;
    r.cycles = res.cycles;
    r.chip_cycles = res.chip_cycles;
    r.link_bytes = res.link_bytes;
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

 private:
  PodModel pod_;
};

// One line of `len` chips (a ring, or one dimension of a torus) gathering chunks of `chunk`
// VMEM rows to its chip 0; this chip is at `pos`, chunk i of the line is at rows base + i *
// chunk. `plus` / `minus` are the line's links (+ and - direction).
void line_gather(ProgramBuilder& b, uint32_t pos, uint32_t len, uint32_t base, uint32_t chunk,
                 uint32_t plus, uint32_t minus) {
  if (len < 2) return;
  const uint32_t half = len / 2;  // chips 1..half send on -x, half+1..len-1 on +x
  if (pos == 0) {
    b.ici_recv(plus, base + chunk, half * chunk);  // from chip 1's -x link
    if (len - 1 > half) b.ici_recv(minus, base + (half + 1) * chunk, (len - 1 - half) * chunk);
    return;
  }
  if (pos <= half) {  // receive chunks pos+1..half from chip pos+1, send pos..half to pos-1
    if (pos < half) b.ici_recv(plus, base + (pos + 1) * chunk, (half - pos) * chunk);
    b.ici_send(minus, base + pos * chunk, (half - pos + 1) * chunk);
  } else {  // receive chunks half+1..pos-1 from chip pos-1, send half+1..pos to pos+1
    if (pos > half + 1) b.ici_recv(minus, base + (half + 1) * chunk, (pos - half - 1) * chunk);
    b.ici_send(plus, base + (half + 1) * chunk, (pos - half) * chunk);
  }
}

}  // namespace

std::unique_ptr<InferencePod> golden_inference_pod(const PodTopology& topology,
                                                   const ChipParams& chip,
                                                   const LinkTiming& timing) {
  return std::make_unique<GoldenInferencePod>(topology, chip, timing);
}

std::vector<std::vector<Instruction>> gather_programs(const ChipParams& chip,
                                                      const PodTopology& topo, uint32_t vmem_base,
                                                      uint32_t chunk_rows, uint32_t src_addr,
                                                      uint32_t dst_addr) {
  const uint32_t p = topo.chips();
  if (chunk_rows == 0) throw Error("the gather needs at least one VMEM row per chip");
  if (uint64_t{vmem_base} + uint64_t{p} * chunk_rows > chip.vmem_rows)
    throw Error("the gather buffer of " + std::to_string(p) + " chips x " +
                std::to_string(chunk_rows) + " rows does not fit the chip's VMEM (" +
                std::to_string(chip.vmem_rows) + " rows from row " + std::to_string(vmem_base) +
                "): use a smaller --batch");
  if (p > 1 && chip.ici_links < topo.links_needed())
    throw Error("the topology " + topo.name() + " needs " + std::to_string(topo.links_needed()) +
                " links per chip, the chip has " + std::to_string(chip.ici_links));
  std::vector<std::vector<Instruction>> programs;
  for (uint32_t r = 0; r < p; ++r) {
    ProgramBuilder b(chip);
    const uint32_t x = r % topo.x, y = r / topo.x;
    b.read_vmem(vmem_base + r * chunk_rows, chunk_rows, src_addr);
    // Along x within this chip's row of the torus (the whole ring when Y = 1) ...
    line_gather(b, x, topo.x, vmem_base + y * topo.x * chunk_rows, chunk_rows, kLinkXPlus,
                kLinkXMinus);
    // ... then along y in column 0, in blocks of one row of X chunks.
    if (x == 0) line_gather(b, y, topo.y, vmem_base, topo.x * chunk_rows, kLinkYPlus, kLinkYMinus);
    if (r == 0) b.write_vmem(vmem_base, p * chunk_rows, dst_addr);
    programs.push_back(b.finish());
  }
  return programs;
}

std::vector<uint32_t> pod_slices(uint32_t batch, uint32_t chips) {
  std::vector<uint32_t> s;
  for (uint64_t r = 0; r < chips; ++r)
    s.push_back(uint32_t((r + 1) * batch / chips - r * batch / chips));
  return s;
}

void PodFigures::add_json(nlohmann::ordered_json& j) const {
  // No per-layer profile on the pod (it is one chip's: run-cnn without --chips).
  if (!j.contains("layers_from")) j["layers_from"] = nullptr;
  j["chips"] = chips;
  j["topology"] = topology;
  j["ici_bytes_per_cycle"] = link_bytes_per_cycle;
  j["ici_latency_cycles"] = link_latency;
  j["inference_cycles"] = inference_cycles;
  j["gather_cycles"] = gather_cycles;
  j["gather_share"] = gather_share();
  j["gather_link_bytes"] = gather_link_bytes;
  j["gather_chunk_rows"] = gather_chunk_rows;
  j["chip_cycles"] = chip_cycles;
  j["chip_images"] = chip_images;
}

namespace {

// The compiled network on the pod: each chip's buffers at the same addresses on every chip,
// the programs per slice size.
class PodRunner {
 public:
  PodRunner(InferencePod& pod, const LinkTiming& timing, const QuantNetwork& q, uint32_t batch)
      : pod_(pod), cn_(compile_network(q, pod.params())) {
    const uint32_t chips = pod.chips(), row_bytes = 4 * pod.params().N;
    const std::vector<uint32_t> slices = pod_slices(batch, chips);
    max_slice_ = *std::max_element(slices.begin(), slices.end());
    chunk_rows_ = uint32_t((uint64_t{max_slice_} * cn_.output_bytes() + row_bytes - 1) / row_bytes);
    uint64_t at = kBase;
    auto take = [&](uint64_t bytes) {
      const uint64_t a = at;
      at = align_up(at + std::max<uint64_t>(16, bytes), kAlign);
      return uint32_t(a);
    };
    constants_ = take(cn_.constants.size());
    input_ = take(uint64_t{max_slice_} * cn_.input_bytes());
    output_ = take(uint64_t{chunk_rows_} * row_bytes);
    if (cn_.spill) options_.scratch_addr = take(cn_.scratch_bytes);
    gathered_ = take(uint64_t{chips} * chunk_rows_ * row_bytes);
    if (at - kBase > (uint64_t{1} << 30))
      throw Error("batch " + std::to_string(batch) + " on " + std::to_string(chips) +
                  " chips needs " + std::to_string(at - kBase) +
                  " bytes of device memory per chip, more than 1 GiB");
    pod.map(kBase, uint32_t(at - kBase));
    for (uint32_t r = 0; r < chips; ++r) pod.load(r, constants_, cn_.constants);
    gather_ = gather_programs(pod.params(), pod.topology(), 0, chunk_rows_, output_, gathered_);
    figures_.chips = chips;
    figures_.topology = pod.topology().name();
    figures_.link_bytes_per_cycle = timing.bytes_per_cycle;
    figures_.link_latency = timing.latency;
    figures_.chip_cycles.assign(chips, 0);
    figures_.chip_images.assign(chips, 0);
    figures_.gather_chunk_rows = chunk_rows_;
    program(max_slice_);  // fail early if it cannot be compiled
  }

  const CompiledNetwork& compiled() const { return cn_; }
  PodFigures& figures() { return figures_; }

  const Program& program(uint32_t images) {
    auto& p = programs_[images];
    if (!p)
      p = std::make_unique<Program>(
          emit_program(cn_, images, constants_, input_, output_, options_));
    return *p;
  }

  struct Result {
    std::vector<std::vector<int32_t>> outputs;  // per image of the batch, from chip 0
    uint64_t cycles = 0;                        // inference + gather
    double wall_seconds = 0;
    std::vector<const Program*> programs;  // per chip; nullptr: no images
  };

  Result run(const std::vector<const int32_t*>& images, uint64_t max_cycles) {
    const uint32_t chips = pod_.chips();
    const std::vector<uint32_t> slices = pod_slices(uint32_t(images.size()), chips);
    std::vector<std::vector<Instruction>> programs;
    Result res;
    uint64_t limit = 0;
    for (uint32_t r = 0, first = 0; r < chips; first += slices[r], ++r) {
      if (slices[r] == 0) {
        programs.push_back({Halt{}});
        res.programs.push_back(nullptr);
        continue;
      }
      const Program& p = program(slices[r]);
      std::vector<uint8_t> bytes(size_t{slices[r]} * cn_.input_bytes());
      for (uint32_t i = 0; i < slices[r]; ++i)
        cn_.pack_input(images[first + i], bytes.data() + size_t{i} * cn_.input_bytes());
      pod_.load(r, input_, bytes);
      programs.push_back(p.instructions);
      res.programs.push_back(&p);
      limit = std::max(limit, max_cycles ? max_cycles : cycle_limit(p));
      figures_.chip_images[r] += slices[r];
    }
    const InferencePod::Run inf = pod_.run(programs, limit, "inference");
    const InferencePod::Run gat = pod_.run(gather_, kGatherCycleLimit, "gather");
    for (uint32_t r = 0; r < chips; ++r) figures_.chip_cycles[r] += inf.chip_cycles[r];
    figures_.inference_cycles += inf.cycles;
    figures_.gather_cycles += gat.cycles;
    figures_.gather_link_bytes += gat.link_bytes;
    ++figures_.batches;
    res.cycles = inf.cycles + gat.cycles;
    res.wall_seconds = inf.wall_seconds + gat.wall_seconds;
    // Every image's logits from chip 0's gather buffer: chip r's chunk holds its slice's.
    const size_t chunk_bytes = size_t{chunk_rows_} * 4 * pod_.params().N;
    const std::vector<uint8_t> all = pod_.dump(0, gathered_, chips * chunk_bytes);
    for (uint32_t r = 0; r < chips; ++r)
      for (uint32_t i = 0; i < slices[r]; ++i)
        res.outputs.push_back(
            cn_.unpack_output(all.data() + r * chunk_bytes + size_t{i} * cn_.output_bytes()));
    return res;
  }

 private:
  static uint64_t cycle_limit(const Program& p) {  // as ChipRunner's
    return 1'000'000 + 8 * (p.mxu_rows + p.dma_in_bytes + p.dma_out_bytes) +
           64 * p.instructions.size();
  }

  InferencePod& pod_;
  CompiledNetwork cn_;
  ProgramOptions options_;
  uint32_t max_slice_ = 0, chunk_rows_ = 0;
  uint32_t constants_ = 0, input_ = 0, output_ = 0, gathered_ = 0;
  std::map<uint32_t, std::unique_ptr<Program>> programs_;
  std::vector<std::vector<Instruction>> gather_;
  PodFigures figures_;
};

// The figures of the programs of one full batch (per image of the batch).
void program_figures(PodRunner& runner, const QuantNetwork& q, uint32_t chips, Evaluation& e) {
  LayerDma t;
  const Program* largest = nullptr;
  for (uint32_t s : pod_slices(e.batch, chips)) {
    if (s == 0) continue;
    const Program& p = runner.program(s);
    if (!largest) largest = &p;
    t += program_dma(p);
  }
  const uint64_t nb = std::max<uint32_t>(1, e.batch);
  e.program_dma = {t.input / nb,  t.spill_in / nb,  t.weights / nb,
                   t.params / nb, t.spill_out / nb, t.output / nb};
  e.micro_batch = largest->micro_batch;
  e.instructions_per_batch = largest->instructions.size();
  e.input_bytes_per_image = runner.compiled().input_bytes();
  e.output_bytes_per_image = runner.compiled().output_bytes();
  e.spill = runner.compiled().spill;
  e.scratch_bytes = runner.compiled().scratch_bytes;
  for (const auto& l : q.layers) e.macs_per_image += l.macs();
}

// What the programs of a batch did: counters (each instruction of a program that halts runs
// once) and energy actions.
void add_program_counts(Evaluation& e, const std::vector<const Program*>& programs,
                        const ChipParams& chip) {
  for (const Program* p : programs) {
    if (!p) continue;
    e.counters.instr_retired += p->instructions.size();
    e.counters.dma_rd_bytes += p->dma_in_bytes;
    e.counters.dma_wr_bytes += p->dma_out_bytes;
    e.counters.mxu_busy += p->mxu_rows;
    add_actions(e, *p, chip);
  }
}

Evaluation evaluate_source(InferencePod& pod, const LinkTiming& timing, const Network& float_net,
                           const QuantNetwork& q, const ImageSource& set, const EvalOptions& o,
                           PodFigures& figures) {
  const auto start = std::chrono::steady_clock::now();
  Evaluation e = begin_evaluation(float_net, q, pod.params(), pod.backend(), set, o);
  e.cycles_estimated = pod.cycles_estimated();
  PodRunner runner(pod, timing, q, e.batch);
  program_figures(runner, q, pod.chips(), e);
  for (int i0 = 0; i0 < o.count; i0 += int(e.batch)) {
    const int b = std::min<int>(int(e.batch), o.count - i0);
    std::vector<std::vector<int32_t>> qi(size_t(b), std::vector<int32_t>(size_t(q.input.size())));
    std::vector<const int32_t*> ptrs;
    for (int j = 0; j < b; ++j) {
      set.quantize(o.offset + i0 + j, qi[size_t(j)].data());
      ptrs.push_back(qi[size_t(j)].data());
    }
    const PodRunner::Result r = runner.run(ptrs, o.max_cycles);
    add_program_counts(e, r.programs, pod.params());
    e.cycles_total += r.cycles;
    e.run_seconds += r.wall_seconds;
    const auto results = check_images(float_net, q, set, o.offset + i0, ptrs, r.outputs, e);
    e.results.insert(e.results.end(), results.begin(), results.end());
    if (o.on_batch) o.on_batch(results, i0 + b, o.count);
  }
  e.counters.cycles = e.cycles_total;
  // The MXU figures per chip (its average): the chips' MXUs work side by side in those cycles.
  e.counters.mxu_busy /= pod.chips();
  const double n2 = double(e.chip_n) * e.chip_n * pod.chips();
  e.mxu_utilization = e.cycles_estimated || !e.cycles_total
                          ? std::numeric_limits<double>::quiet_NaN()
                          : double(e.macs_per_image) * e.images / (double(e.cycles_total) * n2);
  e.dma_in_per_image = double(e.counters.dma_rd_bytes) / e.images;
  e.dma_out_per_image = double(e.counters.dma_wr_bytes) / e.images;
  e.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  figures = runner.figures();
  return e;
}

}  // namespace

Evaluation evaluate_pod(InferencePod& pod, const LinkTiming& timing, const Network& float_net,
                        const QuantNetwork& q, const ImageSet& set, const EvalOptions& o,
                        PodFigures& figures) {
  return evaluate_source(pod, timing, float_net, q, image_source(float_net, q, set), o, figures);
}

Evaluation evaluate_pod(InferencePod& pod, const LinkTiming& timing, const Network& float_net,
                        const QuantNetwork& q, const FloatImageSet& set, const EvalOptions& o,
                        PodFigures& figures) {
  return evaluate_source(pod, timing, float_net, q, image_source(float_net, q, set), o, figures);
}

}  // namespace tpu::cnn
