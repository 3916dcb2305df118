// SPDX-License-Identifier: Apache-2.0
#include "runner.h"

#include <algorithm>

namespace tpu::cnn {

ChipRunner::ChipRunner(Device& device, const QuantNetwork& net, uint32_t max_batch,
                       const ProgramOptions& options)
    : dev_(device),
      cn_(compile_network(net, device.params())),
      max_batch_(max_batch),
      options_(options) {
  if (max_batch_ < 1) throw Error("batch must be at least 1");
  const uint64_t batch_bytes =
      uint64_t{max_batch_} * std::max(cn_.input_bytes(), cn_.output_bytes());
  if (batch_bytes > Device::kArenaEnd - Device::kArenaBase)
    throw Error("batch " + std::to_string(max_batch_) + " needs " + std::to_string(batch_bytes) +
                " bytes of host memory for its images, more than the device's arena of " +
                std::to_string(Device::kArenaEnd - Device::kArenaBase) + " bytes");
  try {
    constants_ = dev_.alloc(uint32_t(std::max<size_t>(16, cn_.constants.size())), "cnn constants");
    dev_.write(constants_.addr, cn_.constants);
    input_ = dev_.alloc(max_batch_ * cn_.input_bytes(), "cnn input");
    output_ = dev_.alloc(max_batch_ * cn_.output_bytes(), "cnn output");
    if (cn_.spill) {  // activations spilled to host memory (compiler.h)
      scratch_ =
          dev_.alloc(uint32_t(std::max<uint64_t>(16, cn_.scratch_bytes)), "cnn spill scratch");
      options_.scratch_addr = scratch_.addr;
    }
    program(max_batch_);  // fail early if it cannot be compiled
  } catch (...) {
    release_buffers();  // no destructor runs for a constructor that throws
    throw;
  }
}

ChipRunner::~ChipRunner() { release_buffers(); }

void ChipRunner::release_buffers() noexcept {
  // Highest address first, so the arena shrinks back to where it was before this runner.
  for (const HostBuffer* b : {&scratch_, &output_, &input_, &constants_}) {
    if (b->size == 0) continue;
    const auto& live = dev_.buffers();
    const bool registered = std::any_of(live.begin(), live.end(), [&](const HostBuffer& x) {
      return x.addr == b->addr && x.size == b->size && x.name == b->name;
    });
    if (registered) dev_.release(b->addr);
  }
}

const Program& ChipRunner::program(uint32_t batch) {
  if (batch < 1 || batch > max_batch_)
    throw Error("batch " + std::to_string(batch) + " outside 1.." + std::to_string(max_batch_));
  auto& p = programs_[batch];
  if (!p)
    p = std::make_unique<Program>(
        emit_program(cn_, batch, constants_.addr, input_.addr, output_.addr, options_));
  return *p;
}

void ChipRunner::write_inputs(const std::vector<const int32_t*>& images) {
  std::vector<uint8_t> bytes(size_t(images.size()) * cn_.input_bytes());
  for (size_t i = 0; i < images.size(); ++i)
    cn_.pack_input(images[i], bytes.data() + i * cn_.input_bytes());
  dev_.write(input_.addr, bytes);
}

uint64_t ChipRunner::cycle_limit(const Program& p, uint64_t given) const {
  if (given) return given;
  // Generous: every matmul row, weight byte and instruction at a slow rate.
  return 1'000'000 + 8 * (p.mxu_rows + p.dma_in_bytes + p.dma_out_bytes) +
         64 * p.instructions.size();
}

ChipRunner::Result ChipRunner::run(const std::vector<const int32_t*>& images, uint64_t max_cycles) {
  const Program& p = program(uint32_t(images.size()));
  write_inputs(images);
  Result r;
  r.program = &p;
  r.stats = dev_.run(p.instructions, cycle_limit(p, max_cycles));
  const auto out = dev_.read(output_.addr, images.size() * cn_.output_bytes());
  for (size_t i = 0; i < images.size(); ++i)
    r.outputs.push_back(cn_.unpack_output(out.data() + i * cn_.output_bytes()));
  return r;
}

void add_layer_dma(std::vector<LayerProfile>& layers, const Program& p, uint32_t images) {
  const uint64_t n = std::max<uint32_t>(1, images);
  for (size_t l = 0; l < layers.size() && l < p.layer_dma.size(); ++l) {
    const LayerDma& d = p.layer_dma[l];
    LayerDma& o = layers[l].dma;
    o.input = d.input / n;
    o.spill_in = d.spill_in / n;
    o.weights = d.weights / n;
    o.params = d.params / n;
    o.spill_out = d.spill_out / n;
    o.output = d.output / n;
  }
}

LayerProfile layer_profile(const QLayer& q, uint32_t n, uint32_t images, uint64_t cycles) {
  LayerProfile lp;
  lp.name = q.name;
  lp.op = q.op;
  lp.macs = q.macs();
  lp.images = images;
  lp.cycles = cycles;
  lp.utilization = cycles ? double(lp.macs) * images / (double(cycles) * n * n) : 0.0;
  lp.ideal_cycles = double(lp.macs) / (double(n) * n);
  const int64_t batch = std::max<int64_t>(1, images);
  const int64_t e =
      q.kind == LayerKind::Conv ? int64_t(q.conv_out.h) * q.conv_out.w * batch : batch;
  const int64_t folds = ((q.fan_in() + n - 1) / n) * ((int64_t(q.cout()) + n - 1) / n);
  lp.scalesim_ws_cycles = double(folds * (3 * int64_t(n) + e - 2) - 1) / double(batch);
  return lp;
}

std::vector<LayerProfile> profile_from_timeline(const QuantNetwork& net, uint32_t n,
                                                uint32_t images, uint64_t run_cycles,
                                                const std::vector<InstrEvent>& events,
                                                const std::vector<int>& instr_layer) {
  const int layers = int(net.layers.size());
  std::vector<uint64_t> cycles(size_t(layers), 0);
  // Matmul starts in time order (events come in issue order, and issue is in program order).
  int current = -1;
  uint64_t since = 0;
  for (const InstrEvent& ev : events) {
    if (ev.unit != ExecUnit::Matmul) continue;
    if (ev.pc >= instr_layer.size())
      throw Error("timeline: matmul at pc " + std::to_string(ev.pc) + " is past the program (" +
                  std::to_string(instr_layer.size()) + " instructions)");
    const int l = instr_layer[ev.pc];
    if (l < 0 || l >= layers)
      throw Error("timeline: matmul at pc " + std::to_string(ev.pc) + " belongs to no layer");
    if (l == current) continue;
    if (current >= 0)
      cycles[size_t(current)] += ev.start - since;
    else
      cycles[size_t(l)] += ev.start;  // the start-up (input DMA) goes to the first layer
    current = l;
    since = ev.start;
  }
  if (current >= 0 && run_cycles > since) cycles[size_t(current)] += run_cycles - since;
  std::vector<LayerProfile> out;
  for (int l = 0; l < layers; ++l)
    out.push_back(layer_profile(net.layers[size_t(l)], n, images, cycles[size_t(l)]));
  return out;
}

std::vector<LayerProfile> ChipRunner::profile(const std::vector<const int32_t*>& images,
                                              uint64_t max_cycles) {
  // Each layer's cut must hold all of its instructions: no activates carried into the next.
  ProgramOptions opt = options_;
  opt.overlap_layers = false;
  const Program p =
      emit_program(cn_, uint32_t(images.size()), constants_.addr, input_.addr, output_.addr, opt);
  write_inputs(images);
  std::vector<LayerProfile> out;
  uint64_t before = 0;
  const uint32_t n = cn_.chip.N;
  for (size_t l = 0; l < cn_.net.layers.size(); ++l) {
    std::vector<Instruction> prefix(p.instructions.begin(),
                                    p.instructions.begin() + long(p.layer_end[l]));
    prefix.push_back(Halt{});
    const RunStats s = dev_.run(prefix, cycle_limit(p, max_cycles));
    out.push_back(layer_profile(cn_.net.layers[l], n, p.first_micro_batch(),
                                s.cycles > before ? s.cycles - before : 0));
    before = s.cycles;
  }
  return out;
}

std::vector<float> pixels_to_float(const uint8_t* pixels, int64_t count) {
  std::vector<float> x(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) x[size_t(i)] = float(pixels[i]) / 255.0f;
  return x;
}

void check_input_shape(const Shape3& in, const std::string& model, int channels, int rows, int cols,
                       const std::string& data) {
  if (in.c != channels || in.h != rows || in.w != cols)
    throw Error("wrong input shape: model " + model + " expects images of " + in.str() +
                " (C, H, W), but " + data + " has images of [" + std::to_string(channels) + ", " +
                std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

}  // namespace tpu::cnn
