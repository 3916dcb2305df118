// SPDX-License-Identifier: Apache-2.0
#include "cnn_shard.h"
#if __has_include("evaluate.h")

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>

#include "json_text.h"
#include "report.h"
#include "sharding.h"
#include "tpusim.h"

namespace tpusim {

namespace {

std::string thousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

const char* kFormat = "tpusim run-cnn shard 1";

// A LayerDma as a JSON object, and back.
nlohmann::ordered_json dma_json(const tpu::cnn::LayerDma& d) {
  return {{"input", d.input},   {"spill_in", d.spill_in},   {"weights", d.weights},
          {"params", d.params}, {"spill_out", d.spill_out}, {"output", d.output}};
}
tpu::cnn::LayerDma dma_of(const JsonValue& v) {
  tpu::cnn::LayerDma d;
  d.input = v.at("input").u64();
  d.spill_in = v.at("spill_in").u64();
  d.weights = v.at("weights").u64();
  d.params = v.at("params").u64();
  d.spill_out = v.at("spill_out").u64();
  d.output = v.at("output").u64();
  return d;
}

}  // namespace

tpu::ActionCounts actions_of(const JsonValue& v) {
  std::vector<std::pair<std::string, uint64_t>> items;
  for (const auto& [name, x] : v.members) items.emplace_back(name, x.u64());
  try {
    return tpu::ActionCounts::from_items(items);
  } catch (const std::invalid_argument& err) {
    throw std::runtime_error(v.where + ": " + err.what());
  }
}

tpu::EnergyTable energy_table_of(const JsonValue& t) {
  tpu::EnergyTable table;
  table.name = t.at("name").str();
  table.clock_mhz = t.at("clock_mhz").number();
  for (const auto& [k, x] : t.at("pj").members) table.pj[k] = x.number();
  for (const std::string& k : tpu::EnergyTable::action_keys()) t.at("pj").at(k);  // all there
  for (const auto& p : t.at("sram_pj_per_64bit").array())
    table.sram_pj_per_64bit.emplace_back(p.array().at(0).number(), p.array().at(1).number());
  if (table.sram_pj_per_64bit.empty())
    throw std::runtime_error(t.where + ": sram_pj_per_64bit is empty");
  return table;
}

tpu::MemorySizes memories_of(const JsonValue& m) {
  return {m.at("ub").number(), m.at("acc").number(), m.at("vmem").number(),
          m.at("weight_fifo").number(), m.at("param").number()};
}

tpu::EnergyTable energy_table_option(const std::string& path) {
  if (path.empty()) return tpu::EnergyTable::horowitz_45nm();
  try {
    return tpu::EnergyTable::load(path);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--energy-table: ") + e.what());
  }
}

void add_cnn_report_outputs(tpu::RunPaths& paths, const std::string& dir) {
  if (dir.empty()) return;
  for (const char* name : {"utilization.svg", "energy.svg", "index.html", "report.json"})
    paths.output_in("--report", dir, name);
}

CnnReportFiles prepare_cnn_report_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw std::runtime_error("--report " + dir +
                             ": exists and is not a directory (expected a directory to write "
                             "utilization.svg, energy.svg, index.html and report.json into)");
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("--report " + dir + ": cannot create the directory (" + ec.message() +
                             "); expected a writable directory");
  CnnReportFiles f;
  f.svg =
      std::make_unique<tpu::OutputFile>((fs::path(dir) / "utilization.svg").string(), "--report");
  f.energy = std::make_unique<tpu::OutputFile>((fs::path(dir) / "energy.svg").string(), "--report");
  f.html = std::make_unique<tpu::OutputFile>((fs::path(dir) / "index.html").string(), "--report");
  f.json = std::make_unique<tpu::OutputFile>((fs::path(dir) / "report.json").string(), "--report");
  return f;
}

void write_cnn_report(CnnReportFiles& r, const tpu::cnn::Evaluation& e) {
  if (!r.svg) return;
  r.svg->write(tpu::cnn::utilization_svg(e));
  r.energy->write(tpu::cnn::energy_svg(e));
  r.html->write(tpu::cnn::report_html(e));
  r.json->write(e.to_json());
  r.svg->commit();
  r.energy->commit();
  r.html->commit();
  r.json->commit();
}

void print_report_paths(std::FILE* info, const CnnReportFiles& r) {
  if (r.svg)
    std::fprintf(info, "report: %s, %s, %s, %s\n", r.svg->path().c_str(), r.energy->path().c_str(),
                 r.html->path().c_str(), r.json->path().c_str());
}

void print_merged_cnn(const MergedCnn& m, bool json, bool quiet, CnnReportFiles& report) {
  std::FILE* info = json ? stderr : stdout;
  std::fputs(m.p.header.c_str(), info);
  if (!quiet)
    for (const auto& r : m.e.results) print_cnn_image_line(info, r, m.p);
  std::fflush(info);
  write_cnn_report(report, m.e);
  if (json)
    std::fputs(m.e.to_json().c_str(), stdout);
  else
    print_cnn_summary(m.e);
  std::fflush(stdout);
  print_report_paths(info, report);
  std::fputs(m.p.timeline_note.c_str(), info);
  std::fflush(info);
}

std::string cnn_class_name(const CnnPresentation& p, int c) {
  return c >= 0 && c < int(p.class_names.size()) ? p.class_names[size_t(c)]
                                                 : "class " + std::to_string(c);
}

void print_cnn_image_line(std::FILE* f, const tpu::cnn::ImageResult& r, const CnnPresentation& p) {
  std::fprintf(f, "  #%-5d %-12s -> %-12s %s%s", r.index + p.display_offset,
               cnn_class_name(p, r.label).c_str(), cnn_class_name(p, r.predicted).c_str(),
               r.predicted == r.label ? "ok" : "WRONG",
               r.matches_reference ? "" : "  (logits differ from the integer reference!)");
  if (p.top_k > 0) {  // the K largest outputs, dequantized
    std::vector<int> order(r.logits.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return r.logits[size_t(a)] > r.logits[size_t(b)]; });
    std::fprintf(f, "  top-%d:", p.top_k);
    for (int k = 0; k < std::min<int>(p.top_k, int(order.size())); ++k)
      std::fprintf(f, "%s %s %.4g", k ? "," : "", cnn_class_name(p, order[size_t(k)]).c_str(),
                   p.output_scale * (r.logits[size_t(order[size_t(k)])] - p.output_zero_point));
  }
  if (!p.files.empty() && r.index >= 0 && size_t(r.index) < p.files.size())
    std::fprintf(f, "  %s", p.files[size_t(r.index)].c_str());
  std::fprintf(f, "\n");
}

void print_cnn_summary(const tpu::cnn::Evaluation& e) {
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
        thousands(e.cycles_total).c_str(), thousands(uint64_t(double(e.cycles_total) / n)).c_str());
  } else {
    std::printf(
        "cycles: %s total, %s per image; MXU utilization %.1f%% (busy %.1f%% of cycles)\n",
        thousands(e.cycles_total).c_str(), thousands(uint64_t(double(e.cycles_total) / n)).c_str(),
        100 * e.mxu_utilization,
        e.cycles_total ? 100.0 * double(e.counters.mxu_busy) / double(e.cycles_total) : 0.0);
  }
  std::printf(
      "DMA per image: %s bytes in (input image %u bytes, the rest weights, parameters and "
      "instructions), "
      "%s bytes out (logits %u bytes)\n",
      thousands(uint64_t(e.dma_in_per_image)).c_str(), e.input_bytes_per_image,
      thousands(uint64_t(e.dma_out_per_image)).c_str(), e.output_bytes_per_image);
  std::printf("  of which weights %s, parameters %s%s\n", thousands(e.program_dma.weights).c_str(),
              thousands(e.program_dma.params).c_str(),
              e.spill ? (", activations spilled " + thousands(e.program_dma.spill_out) +
                         " out and read back " + thousands(e.program_dma.spill_in) + " in")
                            .c_str()
                      : " (no spilling: every tensor stays on chip)");
  if (!e.layers.empty()) {
    std::printf("layers (first batch of %u images, cycles per image):\n", e.layers.front().images);
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

std::string cnn_shard_json(const tpu::cnn::Evaluation& e, const CnnPresentation& p,
                           const tpu::ShardSpec& shard, int images_total, int offset_total,
                           uint32_t batch) {
  using J = nlohmann::ordered_json;
  J j;
  j["format"] = kFormat;
  j["shard"] = {{"index", shard.index},
                {"count", shard.count},
                {"images_total", images_total},
                {"offset_total", offset_total},
                {"batch", batch}};
  j["model"] = e.model;
  j["backend"] = e.backend;
  j["chip_n"] = e.chip_n;
  j["offset"] = e.offset;
  j["images"] = e.images;
  j["batch"] = e.batch;
  j["micro_batch"] = e.micro_batch;
  j["instructions_per_batch"] = e.instructions_per_batch;
  j["quantization"] = e.quantization;
  j["correct"] = e.correct;
  j["float_correct"] = e.float_correct;
  j["reference_correct"] = e.reference_correct;
  j["mismatches"] = e.mismatches;
  j["cycles_total"] = e.cycles_total;
  j["cycles_estimated"] = e.cycles_estimated;
  j["counters"] = J::object();
  for (int c = 0; c < tpu::PerfCounters::kCount; ++c)
    j["counters"][tpu::PerfCounters::name(c)] = e.counters.get(c);
  j["macs_per_image"] = e.macs_per_image;
  j["input_bytes_per_image"] = e.input_bytes_per_image;
  j["output_bytes_per_image"] = e.output_bytes_per_image;
  j["wall_seconds"] = e.wall_seconds;
  j["run_seconds"] = e.run_seconds;
  j["spill"] = e.spill;
  j["scratch_bytes"] = e.scratch_bytes;
  j["program_dma"] = dma_json(e.program_dma);
  j["mem_latency_cycles"] = e.mem_latency_cycles;
  j["mem_bytes_per_cycle"] = e.mem_bytes_per_cycle;
  j["layers_from"] = e.layers_from;
  j["layers"] = J::array();
  for (const auto& l : e.layers)
    j["layers"].push_back({{"name", l.name},
                           {"op", l.op},
                           {"macs", l.macs},
                           {"cycles", l.cycles},
                           {"images", l.images},
                           {"utilization", l.utilization},
                           {"ideal_cycles", l.ideal_cycles},
                           {"scalesim_ws_cycles", l.scalesim_ws_cycles},
                           {"dma", dma_json(l.dma)}});
  j["results"] = J::array();
  for (const auto& r : e.results)
    j["results"].push_back({{"index", r.index},
                            {"label", r.label},
                            {"predicted", r.predicted},
                            {"float_predicted", r.float_predicted},
                            {"matches_reference", r.matches_reference},
                            {"logits", r.logits}});
  j["energy"] = e.energy_json();
  j["presentation"] = {{"class_names", p.class_names},
                       {"top_k", p.top_k},
                       {"output_scale", p.output_scale},
                       {"output_zero_point", p.output_zero_point},
                       {"display_offset", p.display_offset},
                       {"files", p.files},
                       {"header", p.header},
                       {"timeline_note", p.timeline_note}};
  // Floating-point values with 17 digits: they read back bit for bit.
  return tpu::json_document(j, 17, tpu::JsonRows::Compact) + "\n";
}

namespace {

// Shard 0 holds the run's first batch: its program's per-layer profile and the presentation.
void read_run_of_first_shard(const JsonValue& v, const JsonValue& s0, MergedCnn& m) {
  tpu::cnn::Evaluation& e = m.e;
  e.model = v.at("model").str();
  e.backend = v.at("backend").str();
  e.chip_n = uint32_t(v.at("chip_n").u64());
  e.offset = int(s0.at("offset_total").i64());
  e.quantization = v.at("quantization").str();
  const JsonValue& pj = v.at("presentation");
  for (const auto& c : pj.at("class_names").array()) m.p.class_names.push_back(c.str());
  m.p.top_k = int(pj.at("top_k").i64());
  m.p.output_scale = pj.at("output_scale").number();
  m.p.output_zero_point = int32_t(pj.at("output_zero_point").i64());
  m.p.display_offset = int(pj.at("display_offset").i64());
  m.p.header = pj.at("header").str();
  m.p.timeline_note = pj.at("timeline_note").str();
  e.layers_from = v.at("layers_from").str();
  for (const auto& lj : v.at("layers").array()) {
    tpu::cnn::LayerProfile l;
    l.name = lj.at("name").str();
    l.op = lj.at("op").str();
    l.macs = lj.at("macs").i64();
    l.cycles = lj.at("cycles").u64();
    l.images = uint32_t(lj.at("images").u64());
    l.utilization = lj.at("utilization").number();
    l.ideal_cycles = lj.at("ideal_cycles").number();
    l.scalesim_ws_cycles = lj.at("scalesim_ws_cycles").number();
    l.dma = dma_of(lj.at("dma"));
    e.layers.push_back(l);
  }
}

// The first shard with images: the program's figures (the same in every shard).
void read_program(const JsonValue& v, tpu::cnn::Evaluation& e) {
  e.batch = uint32_t(v.at("batch").u64());
  e.micro_batch = uint32_t(v.at("micro_batch").u64());
  e.instructions_per_batch = size_t(v.at("instructions_per_batch").u64());
  e.macs_per_image = v.at("macs_per_image").i64();
  e.input_bytes_per_image = uint32_t(v.at("input_bytes_per_image").u64());
  e.output_bytes_per_image = uint32_t(v.at("output_bytes_per_image").u64());
  e.cycles_estimated = v.at("cycles_estimated").flag();
  e.spill = v.at("spill").flag();
  e.scratch_bytes = v.at("scratch_bytes").u64();
  e.program_dma = dma_of(v.at("program_dma"));
  e.mem_latency_cycles = v.at("mem_latency_cycles").i64();
  e.mem_bytes_per_cycle = v.at("mem_bytes_per_cycle").i64();
}

// Adds a shard's images, counts and results to `e`.
void add_shard_images(const JsonValue& v, int images, tpu::cnn::Evaluation& e) {
  e.images += images;
  e.correct += int(v.at("correct").i64());
  e.float_correct += int(v.at("float_correct").i64());
  e.reference_correct += int(v.at("reference_correct").i64());
  e.mismatches += int(v.at("mismatches").i64());
  e.cycles_total += v.at("cycles_total").u64();
  e.run_seconds += v.at("run_seconds").number();
  const JsonValue& cj = v.at("counters");
  for (int c = 0; c < tpu::PerfCounters::kCount; ++c)
    e.counters.set(c, e.counters.get(c) + cj.at(tpu::PerfCounters::name(c)).u64());
  for (const auto& rj : v.at("results").array()) {
    tpu::cnn::ImageResult r;
    r.index = int(rj.at("index").i64());
    r.label = int(rj.at("label").i64());
    r.predicted = int(rj.at("predicted").i64());
    r.float_predicted = int(rj.at("float_predicted").i64());
    r.matches_reference = rj.at("matches_reference").flag();
    for (const auto& x : rj.at("logits").array()) r.logits.push_back(int32_t(x.i64()));
    e.results.push_back(std::move(r));
  }
}

// The energy table, memory sizes and layer names of a shard's "energy" (the same in every
// shard of a run).
void read_energy_setup(const JsonValue& en, tpu::cnn::Evaluation& e) {
  e.energy_table = energy_table_of(en.at("table_values"));
  e.memories = memories_of(en.at("memory_bytes"));
  for (const auto& l : en.at("layers").array()) e.layer_names.push_back(l.at("name").str());
  e.layer_actions.assign(e.layer_names.size(), {});
}

// Adds a shard's actions (total, per layer, other) to `e`.
void add_energy_actions(const JsonValue& en, tpu::cnn::Evaluation& e) {
  e.actions += actions_of(en.at("actions"));
  e.other_actions += actions_of(en.at("other_actions"));
  const auto& layers = en.at("layers").array();
  if (layers.size() != e.layer_actions.size())
    throw std::runtime_error(en.where + ": " + std::to_string(layers.size()) +
                             " layers in \"energy\", expected " +
                             std::to_string(e.layer_actions.size()));
  for (size_t i = 0; i < layers.size(); ++i)
    e.layer_actions[i] += actions_of(layers[i].at("actions"));
}

}  // namespace

MergedCnn merge_cnn_shards(const std::vector<std::string>& texts,
                           const std::vector<std::string>& names) {
  const ShardSet set = read_shards(texts, names, kFormat, "run-cnn",
                                   {"shard.images_total", "shard.offset_total", "shard.batch",
                                    "model", "backend", "quantization", "chip_n"});
  const JsonValue& s0 = set.parts.front().at("shard");
  MergedCnn m;
  tpu::cnn::Evaluation& e = m.e;
  bool first = true;
  for (size_t k = 0; k < set.parts.size(); ++k) {
    const JsonValue& v = set.parts[k];
    if (k == 0) read_run_of_first_shard(v, s0, m);
    for (const auto& f : v.at("presentation").at("files").array()) m.p.files.push_back(f.str());
    const int images = int(v.at("images").i64());
    if (images == 0) continue;  // a shard without batches (more shards than batches)
    if (first) {
      read_program(v, e);
      read_energy_setup(v.at("energy"), e);
    }
    first = false;
    add_shard_images(v, images, e);
    add_energy_actions(v.at("energy"), e);
  }
  const int total = int(s0.at("images_total").i64());
  if (e.images != total || int(e.results.size()) != total)
    throw std::runtime_error("merge: the shards hold " + std::to_string(e.images) +
                             " images, expected the run's " + std::to_string(total));
  // As evaluate() computes them from the totals (driver/cnn/evaluate.cpp).
  const uint32_t n = e.chip_n;
  e.mxu_utilization =
      e.cycles_total ? double(e.macs_per_image) * e.images / (double(e.cycles_total) * n * n) : 0.0;
  e.dma_in_per_image = double(e.counters.dma_rd_bytes) / e.images;
  e.dma_out_per_image = double(e.counters.dma_wr_bytes) / e.images;
  if (e.cycles_estimated) e.mxu_utilization = std::numeric_limits<double>::quiet_NaN();
  m.exit_code = e.matches_reference() ? 0 : 1;
  return m;
}

}  // namespace tpusim

#endif
