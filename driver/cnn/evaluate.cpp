// SPDX-License-Identifier: Apache-2.0
#include "evaluate.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "eval_source.h"
#include "json_text.h"
#include "reference.h"

namespace tpu::cnn {

std::string Evaluation::to_json(bool with_images) const {
  const double n = images ? double(images) : 1.0;
  const double nan = std::numeric_limits<double>::quiet_NaN();  // printed as null
  nlohmann::ordered_json j;
  j["model"] = model;
  j["backend"] = backend;
  j["chip_n"] = chip_n;
  j["images"] = images;
  j["offset"] = offset;
  j["batch"] = batch;
  j["micro_batch"] = micro_batch;
  j["instructions_per_batch"] = instructions_per_batch;
  j["quantization"] = quantization;
  j["accuracy"] = accuracy();
  j["float_accuracy"] = float_accuracy();
  j["reference_accuracy"] = reference_accuracy();
  j["matches_golden"] = matches_reference();
  j["mismatched_images"] = mismatches;
  j["cycles_total"] = cycles_total;
  j["cycles_per_image"] = double(cycles_total) / n;
  j["cycles_estimated"] = cycles_estimated;
  j["macs_per_image"] = macs_per_image;
  j["mxu_utilization"] = mxu_utilization;
  j["mxu_busy_fraction"] = cycles_total ? double(counters.mxu_busy) / double(cycles_total) : 0.0;
  j["dma_bytes_per_image"] = {{"in", dma_in_per_image},
                              {"out", dma_out_per_image},
                              {"input_images", input_bytes_per_image},
                              {"logits", output_bytes_per_image},
                              {"weights", program_dma.weights},
                              {"spill_in", program_dma.spill_in},
                              {"spill_out", program_dma.spill_out},
                              {"params", program_dma.params}};
  j["spill"] = spill;
  j["scratch_bytes"] = scratch_bytes;
  if (mem_latency_cycles >= 0)
    j["memory"] = {{"latency_cycles", mem_latency_cycles},
                   {"bytes_per_cycle", mem_bytes_per_cycle}};
  j["wall_seconds"] = wall_seconds;
  j["wall_seconds_per_image"] = wall_seconds / n;
  j["sim_cycles_per_second"] =
      cycles_estimated || run_seconds <= 0 ? nan : double(cycles_total) / run_seconds;
  double ideal = 0, scalesim = 0;
  for (const auto& l : layers) {
    ideal += l.ideal_cycles;
    scalesim += l.scalesim_ws_cycles;
  }
  j["ideal_cycles"] = ideal;
  j["scalesim_ws_cycles"] = scalesim;
  j["cycles_vs_scalesim"] = scalesim > 0 ? double(cycles_total) / n / scalesim : nan;
  if (!layers.empty()) j["layers_from"] = layers_from;
  j["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : layers) {
    const LayerDma& d = l.dma;
    j["layers"].push_back({{"name", l.name},
                           {"op", l.op},
                           {"macs", l.macs},
                           {"cycles", l.images ? double(l.cycles) / l.images : 0.0},
                           {"utilization", l.utilization},
                           {"ideal_cycles", l.ideal_cycles},
                           {"scalesim_ws_cycles", l.scalesim_ws_cycles},
                           {"dma_in_bytes", d.in()},
                           {"dma_out_bytes", d.out()},
                           {"dma",
                            {{"input", d.input},
                             {"spill_in", d.spill_in},
                             {"weights", d.weights},
                             {"params", d.params},
                             {"spill_out", d.spill_out},
                             {"output", d.output}}}});
  }
  j["energy"] = energy_json();
  if (with_images) {
    j["predictions"] = nlohmann::ordered_json::array();
    for (const auto& r : results) j["predictions"].push_back(r.predicted);
  }
  return json_document(j) + "\n";
}

namespace {

nlohmann::ordered_json components_json(const Energy& e, double divide) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, pj] : e.components) j[name] = pj / divide;
  return j;
}

}  // namespace

nlohmann::ordered_json Evaluation::energy_json() const {
  const double n = images ? double(images) : 1.0;
  nlohmann::ordered_json j =
      tpu::energy_json(actions, memories, energy_table, n, double(macs_per_image) * n, cycles_total,
                       cycles_estimated);
  j["layers"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < layer_actions.size(); ++i) {
    const Energy le = energy_of(layer_actions[i], memories, energy_table);
    j["layers"].push_back({{"name", i < layer_names.size() ? layer_names[i] : std::string()},
                           {"pj_per_image", le.total_pj() / n},
                           {"components_pj_per_image", components_json(le, n)},
                           {"actions", actions_json(layer_actions[i])}});
  }
  j["other_pj_per_image"] = energy_of(other_actions, memories, energy_table).total_pj() / n;
  j["other_actions"] = actions_json(other_actions);
  return j;
}

// Adds the actions of `p`'s instructions to the evaluation's totals, per layer and other.
void add_actions(Evaluation& e, const Program& p, const ChipParams& chip) {
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const ActionCounts c = count_actions(p.instructions[i], chip);
    e.actions += c;
    const int layer = i < p.instr_layer.size() ? p.instr_layer[i] : -1;
    if (layer >= 0 && size_t(layer) < e.layer_actions.size())
      e.layer_actions[size_t(layer)] += c;
    else
      e.other_actions += c;
  }
}

namespace {

Evaluation evaluate_source(Device& device, const Network& float_net, const QuantNetwork& q,
                           const ImageSource& set, const EvalOptions& o);

}  // namespace

ImageSource image_source(const Network& float_net, const QuantNetwork& q, const ImageSet& set) {
  check_input_shape(q.input, float_net.name, 1, set.rows, set.cols, "the image set");
  ImageSource s;
  s.count = set.count;
  s.label = [&set](int i) { return set.labels.empty() ? -1 : int(set.labels[size_t(i)]); };
  s.quantize = [&set, &q](int i, int32_t* qi) { q.quantize_pixels(set.image(i), qi); };
  s.float_input = [&set, &q](int i) { return pixels_to_float(set.image(i), q.input.size()); };
  return s;
}

ImageSource image_source(const Network& float_net, const QuantNetwork& q,
                         const FloatImageSet& set) {
  check_input_shape(q.input, float_net.name, set.shape.c, set.shape.h, set.shape.w,
                    "the image set");
  ImageSource s;
  s.count = set.count();
  s.label = [&set](int i) { return set.labels.empty() ? -1 : set.labels[size_t(i)]; };
  s.quantize = [&set, &q](int i, int32_t* qi) {
    q.quantize_input(set.images[size_t(i)].data(), qi);
  };
  s.float_input = [&set](int i) { return set.images[size_t(i)]; };
  return s;
}

Evaluation begin_evaluation(const Network& float_net, const QuantNetwork& q, const ChipParams& chip,
                            const std::string& backend, const ImageSource& set,
                            const EvalOptions& o) {
  if (o.offset < 0 || o.count < 1 || o.offset + o.count > set.count)
    throw Error("images " + std::to_string(o.offset) + ".." +
                std::to_string(o.offset + o.count - 1) + " are outside the image set (" +
                std::to_string(set.count) + " images)");
  Evaluation e;
  e.model = float_net.name;
  e.backend = backend;
  e.chip_n = chip.N;
  e.memories = memory_sizes(chip);
  e.energy_table = o.energy_table ? *o.energy_table : EnergyTable::horowitz_45nm();
  for (const auto& l : q.layers) e.layer_names.push_back(l.name);
  e.layer_actions.resize(q.layers.size());
  e.offset = o.offset;
  e.images = o.count;
  e.batch = std::min<uint32_t>(o.batch, uint32_t(o.count));
  return e;
}

std::vector<ImageResult> check_images(const Network& float_net, const QuantNetwork& q,
                                      const ImageSource& set, int first,
                                      const std::vector<const int32_t*>& inputs,
                                      const std::vector<std::vector<int32_t>>& outputs,
                                      Evaluation& e) {
  std::vector<ImageResult> results;
  for (size_t j = 0; j < inputs.size(); ++j) {
    ImageResult ir;
    ir.index = first + int(j);
    ir.label = set.label(ir.index);
    ir.logits = outputs[j];
    ir.predicted = argmax(ir.logits);
    const auto ref = int_forward(q, inputs[j]);
    ir.matches_reference = ref == ir.logits;
    const auto x = set.float_input(ir.index);
    ir.float_predicted = argmax(float_forward(float_net, x.data()));
    e.mismatches += !ir.matches_reference;
    e.correct += ir.predicted == ir.label;
    e.float_correct += ir.float_predicted == ir.label;
    e.reference_correct += argmax(ref) == ir.label;
    results.push_back(ir);
  }
  return results;
}

LayerDma program_dma(const Program& p) {
  LayerDma t = p.other_dma;
  for (const auto& d : p.layer_dma) t += d;
  return t;
}

Evaluation evaluate(Device& device, const Network& float_net, const QuantNetwork& q,
                    const ImageSet& set, const EvalOptions& o) {
  return evaluate_source(device, float_net, q, image_source(float_net, q, set), o);
}

Evaluation evaluate(Device& device, const Network& float_net, const QuantNetwork& q,
                    const FloatImageSet& set, const EvalOptions& o) {
  return evaluate_source(device, float_net, q, image_source(float_net, q, set), o);
}

namespace {

// The figures of the compiled program (per batch of e.batch images).
void program_figures(const ChipRunner& runner, const Program& full, const QuantNetwork& q,
                     Evaluation& e) {
  e.micro_batch = full.micro_batch;
  e.instructions_per_batch = full.instructions.size();
  e.input_bytes_per_image = runner.compiled().input_bytes();
  e.spill = runner.compiled().spill;
  e.scratch_bytes = runner.compiled().scratch_bytes;
  const uint64_t nb = std::max<uint32_t>(1, e.batch);
  const LayerDma t = program_dma(full);
  e.program_dma = {t.input / nb,  t.spill_in / nb,  t.weights / nb,
                   t.params / nb, t.spill_out / nb, t.output / nb};
  e.output_bytes_per_image = runner.compiled().output_bytes();
  for (const auto& l : q.layers) e.macs_per_image += l.macs();
}

// The first batch's timeline (o.timeline), taken from the device's recording.
void keep_timeline(Device& device, const QuantNetwork& q, const ChipRunner::Result& r,
                   uint32_t images, RunTimeline& t) {
  t.events = device.timeline();
  device.record_timeline(false);
  t.program = r.program->instructions;
  t.instr_layer = r.program->instr_layer;
  for (const auto& l : q.layers) t.layer_names.push_back(l.name);
  t.cycles = r.stats.cycles;
  t.images = images;
}

// Runs the batch of images i0..i0+b-1; returns its quantized inputs.
std::vector<std::vector<int32_t>> run_batch(Device& device, ChipRunner& runner,
                                            const Network& float_net, const QuantNetwork& q,
                                            const ImageSource& set, const EvalOptions& o, int i0,
                                            int b, Evaluation& e) {
  std::vector<std::vector<int32_t>> qi(static_cast<size_t>(b),
                                       std::vector<int32_t>(static_cast<size_t>(q.input.size())));
  std::vector<const int32_t*> ptrs;
  for (int j = 0; j < b; ++j) {
    set.quantize(o.offset + i0 + j, qi[size_t(j)].data());
    ptrs.push_back(qi[size_t(j)].data());
  }
  // The per-layer profile comes from the first batch's timeline where the device has one.
  const bool record = i0 == 0 && (o.timeline || (o.profile && device.has_timeline()));
  if (record) device.record_timeline(true);
  const auto r = runner.run(ptrs, o.max_cycles);
  if (record && o.profile) {
    e.layers = profile_from_timeline(q, e.chip_n, uint32_t(b), r.stats.cycles, device.timeline(),
                                     r.program->instr_layer);
    e.layers_from = "timeline";
  }
  if (record && !o.timeline) device.record_timeline(false);
  if (i0 == 0 && o.timeline) keep_timeline(device, q, r, uint32_t(b), e.timeline);
  add_actions(e, *r.program, device.params());
  e.cycles_total += r.stats.cycles;
  e.cycles_estimated = r.stats.cycles_estimated;
  e.run_seconds += r.stats.wall_seconds;
  for (int c = 0; c < PerfCounters::kCount; ++c)
    e.counters.set(c, e.counters.get(c) + r.stats.counters.get(c));
  const std::vector<ImageResult> results =
      check_images(float_net, q, set, o.offset + i0, ptrs, r.outputs, e);
  e.results.insert(e.results.end(), results.begin(), results.end());
  if (o.on_batch) o.on_batch(results, i0 + b, o.count);
  return qi;
}

Evaluation evaluate_source(Device& device, const Network& float_net, const QuantNetwork& q,
                           const ImageSource& set, const EvalOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  Evaluation e =
      begin_evaluation(float_net, q, device.params(), std::string(device.backend()), set, o);
  ChipRunner runner(device, q, e.batch);
  const Program& full = runner.program(e.batch);
  program_figures(runner, full, q, e);
  std::vector<std::vector<int32_t>> first_batch;
  for (int i0 = 0; i0 < o.count; i0 += int(e.batch)) {
    const int b = std::min<int>(int(e.batch), o.count - i0);
    auto qi = run_batch(device, runner, float_net, q, set, o, i0, b, e);
    if (i0 == 0) first_batch = std::move(qi);
  }
  const uint32_t n = e.chip_n;
  e.mxu_utilization =
      e.cycles_total ? double(e.macs_per_image) * e.images / (double(e.cycles_total) * n * n) : 0.0;
  e.dma_in_per_image = double(e.counters.dma_rd_bytes) / e.images;
  e.dma_out_per_image = double(e.counters.dma_wr_bytes) / e.images;
  e.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.profile && e.layers.empty()) {
    e.layers_from = "prefix_runs";
    std::vector<const int32_t*> ptrs;
    for (const auto& v : first_batch) ptrs.push_back(v.data());
    e.layers = runner.profile(ptrs, o.max_cycles);
  }
  add_layer_dma(e.layers, full, e.batch);
  if (e.cycles_estimated) {  // the model backend has no timing: no utilization (NaN, JSON null)
    e.mxu_utilization = std::numeric_limits<double>::quiet_NaN();
    for (auto& l : e.layers) l.utilization = std::numeric_limits<double>::quiet_NaN();
  }
  return e;
}

}  // namespace

}  // namespace tpu::cnn
