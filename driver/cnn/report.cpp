// SPDX-License-Identifier: Apache-2.0
#include "report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "isa.h"
#include "json_text.h"
#include "output_file.h"
#include "xml_text.h"

namespace tpu::cnn {

namespace {

using tpu::xml_escape;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// 1234567 -> "1,234,567"
std::string thousands(double v) {
  std::string s = std::to_string(static_cast<long long>(std::llround(v)));
  const size_t first = s[0] == '-' ? 1 : 0;
  for (int i = int(s.size()) - 3; i > int(first); i -= 3) s.insert(size_t(i), ",");
  return s;
}

// Microseconds of a cycle count at 1 GHz, exactly: "12.345".
std::string micros(uint64_t cycles) {
  char b[32];
  std::snprintf(b, sizeof b, "%llu.%03llu", static_cast<unsigned long long>(cycles / 1000),
                static_cast<unsigned long long>(cycles % 1000));
  return b;
}

std::string basename_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A round axis step (1, 2 or 5 times a power of ten) giving about `ticks` ticks up to `max`.
double nice_step(double max, int ticks) {
  if (!(max > 0)) return 1;
  const double raw = max / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

struct Series {
  std::string name, color;
  std::vector<double> values;  // per layer
};

// One panel of grouped bars: a y axis from 0 with grid lines, one group per layer, a value
// label above each bar. Writes into `o` inside the box (x0, y0, w, h).
void bar_panel(std::ostringstream& o, double x0, double y0, double w, double h,
               const std::string& title, const std::string& unit_suffix,
               const std::vector<std::string>& layers, const std::vector<Series>& series,
               double floor_max, const char* label_fmt) {
  double max = floor_max;
  for (const auto& s : series)
    for (double v : s.values) max = std::max(max, v);
  const double step = nice_step(max, 5);
  const double top = std::ceil(max / step) * step;
  const auto y_of = [&](double v) { return y0 + h - h * (v / top); };
  o << "  <text class=\"panel\" x=\"" << x0 << "\" y=\"" << y0 - 12 << "\">" << xml_escape(title)
    << "</text>\n";
  // Axis and grid.
  for (double v = 0; v <= top + step / 2; v += step) {
    const double y = y_of(v);
    o << "  <line class=\"grid\" x1=\"" << x0 << "\" y1=\"" << fmt("%.1f", y) << "\" x2=\""
      << x0 + w << "\" y2=\"" << fmt("%.1f", y) << "\"/>\n";
    o << "  <text class=\"tick\" x=\"" << x0 - 6 << "\" y=\"" << fmt("%.1f", y + 4)
      << "\" text-anchor=\"end\">" << (step >= 1 ? thousands(v) : fmt("%g", v)) << unit_suffix
      << "</text>\n";
  }
  o << "  <line class=\"axis\" x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x0 << "\" y2=\""
    << y0 + h << "\"/>\n";
  o << "  <line class=\"axis\" x1=\"" << x0 << "\" y1=\"" << y0 + h << "\" x2=\"" << x0 + w
    << "\" y2=\"" << y0 + h << "\"/>\n";
  const double gw = w / double(layers.size());
  const double bw = std::min(36.0, gw * 0.8 / double(series.size()));
  for (size_t l = 0; l < layers.size(); ++l) {
    const double gx = x0 + gw * double(l) + (gw - bw * double(series.size())) / 2;
    o << "  <g class=\"layer\" data-layer=\"" << xml_escape(layers[l]) << "\">\n";
    for (size_t s = 0; s < series.size(); ++s) {
      const double v = series[s].values[l];
      const double y = y_of(v), x = gx + bw * double(s);
      o << "    <rect x=\"" << fmt("%.1f", x) << "\" y=\"" << fmt("%.1f", y) << "\" width=\""
        << fmt("%.1f", bw - 2) << "\" height=\"" << fmt("%.1f", y0 + h - y) << "\" fill=\""
        << series[s].color << "\"><title>"
        << xml_escape(layers[l] + ", " + series[s].name + ": " + fmt(label_fmt, v) + unit_suffix)
        << "</title></rect>\n";
      o << "    <text class=\"value\" x=\"" << fmt("%.1f", x + (bw - 2) / 2) << "\" y=\""
        << fmt("%.1f", y - 3) << "\" text-anchor=\"middle\">" << xml_escape(fmt(label_fmt, v))
        << "</text>\n";
    }
    o << "    <text class=\"label\" x=\"" << fmt("%.1f", x0 + gw * (double(l) + 0.5)) << "\" y=\""
      << y0 + h + 16 << "\" text-anchor=\"middle\">" << xml_escape(layers[l]) << "</text>\n";
    o << "  </g>\n";
  }
}

}  // namespace

// A utilization as "12.3%", or "n/a" when there is none (NaN: the model backend has no timing).
static std::string percent(double v) {
  return std::isfinite(v) ? fmt("%.1f", 100 * v) + "%" : "n/a (no timing on the model backend)";
}

std::string utilization_svg(const Evaluation& e) {
  if (e.layers.empty())
    throw Error("utilization chart: there is no per-layer profile (profiling was off)");
  const double n2 = double(e.chip_n) * e.chip_n;
  std::vector<std::string> names;
  Series measured{"measured on the chip", "#1f77b4", {}},
      scalesim{"SCALE-Sim WS estimate", "#ff7f0e", {}},
      ideal{"ideal (MACs / N\u00b2)", "#2ca02c", {}};
  Series util_measured{"measured on the chip", "#1f77b4", {}},
      util_scalesim{"SCALE-Sim WS estimate", "#ff7f0e", {}};
  for (const auto& l : e.layers) {
    names.push_back(l.name);
    const double per_image = l.images ? double(l.cycles) / l.images : 0.0;
    measured.values.push_back(per_image);
    scalesim.values.push_back(l.scalesim_ws_cycles);
    ideal.values.push_back(l.ideal_cycles);
    util_measured.values.push_back(std::isfinite(l.utilization) ? 100 * l.utilization : 0.0);
    util_scalesim.values.push_back(
        l.scalesim_ws_cycles > 0 ? 100 * double(l.macs) / n2 / l.scalesim_ws_cycles : 0);
  }
  const double left = 90, right = 30, gw = std::max(130.0, 640.0 / double(names.size()));
  const double plot_w = gw * double(names.size());
  const double width = left + plot_w + right;
  const double p1_y = 130, p1_h = 260, p2_y = p1_y + p1_h + 80, p2_h = 170,
               height = p2_y + p2_h + 50;
  const uint32_t images = e.layers.front().images;

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\">\n";
  o << "  <style>text{fill:#222} .title{font-size:17px;font-weight:bold} "
       ".subtitle{font-size:12px;fill:#555}"
       " .panel{font-size:14px;font-weight:bold} .tick{font-size:11px;fill:#555} "
       ".value{font-size:10px;fill:#333}"
       " .label{font-size:12px} .legend{font-size:12px} .grid{stroke:#e4e4e4} "
       ".axis{stroke:#333}</style>\n";
  o << "  <rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
    << "\" fill=\"white\"/>\n";
  o << "  <text class=\"title\" x=\"" << left << "\" y=\"28\">" << xml_escape(basename_of(e.model))
    << " on tpu-rtl: N = " << e.chip_n << ", batch " << e.batch << " (micro-batch " << e.micro_batch
    << ")</text>\n";
  o << "  <text class=\"subtitle\" x=\"" << left << "\" y=\"48\">" << xml_escape(e.backend)
    << " backend" << (e.cycles_estimated ? " (cycles estimated by the model)" : "") << ", "
    << e.images << " images: " << thousands(e.images ? double(e.cycles_total) / e.images : 0.0)
    << " cycles per image, MXU utilization " << percent(e.mxu_utilization) << "</text>\n";
  o << "  <text class=\"subtitle\" x=\"" << left
    << "\" y=\"64\">per layer: cycles per image of the first "
    << (e.layers_from == "timeline" ? "batch (" : "micro-batch (") << images
    << (images == 1 ? " image" : " images")
    << (e.layers_from == "timeline" ? "), cut from its instruction timeline"
                                    : "), from runs cut after each layer")
    << "</text>\n";
  // Legend.
  double lx = left;
  for (const Series* s : {&measured, &scalesim, &ideal}) {
    o << "  <rect x=\"" << lx << "\" y=\"80\" width=\"12\" height=\"12\" fill=\"" << s->color
      << "\"/>\n";
    o << "  <text class=\"legend\" x=\"" << lx + 17 << "\" y=\"90\">" << xml_escape(s->name)
      << "</text>\n";
    lx += 40 + 7.0 * double(s->name.size());
  }
  bar_panel(o, left, p1_y, plot_w, p1_h, "Cycles per image", "", names, {measured, scalesim, ideal},
            1, "%.0f");
  bar_panel(o, left, p2_y, plot_w, p2_h, "MXU utilization (useful MACs / (cycles \u00d7 N\u00b2))",
            "%", names, {util_measured, util_scalesim}, 100, "%.1f");
  o << "</svg>\n";
  return o.str();
}

std::string energy_svg(const Evaluation& e) {
  const double images = e.images ? double(e.images) : 1.0;
  const Energy total = energy_of(e.actions, e.memories, e.energy_table);
  std::vector<std::string> components;
  Series by_component{"energy per image", "#9467bd", {}};
  for (const auto& [name, pj] : total.components) {
    components.push_back(name);
    by_component.values.push_back(pj / images / 1e6);  // uJ
  }
  std::vector<std::string> layers;
  Series by_layer{"energy per image", "#8c564b", {}};
  for (size_t i = 0; i < e.layer_actions.size(); ++i) {
    layers.push_back(i < e.layer_names.size() ? e.layer_names[i] : std::string());
    by_layer.values.push_back(energy_of(e.layer_actions[i], e.memories, e.energy_table).total_pj() /
                              images / 1e6);
  }
  layers.push_back("(no layer)");
  by_layer.values.push_back(energy_of(e.other_actions, e.memories, e.energy_table).total_pj() /
                            images / 1e6);
  const double left = 90, right = 30;
  const double gw = std::max(90.0, 640.0 / double(std::max(components.size(), layers.size())));
  const double plot_w = gw * double(std::max(components.size(), layers.size()));
  const double width = left + plot_w + right;
  const double p1_y = 110, p1_h = 220, p2_y = p1_y + p1_h + 80, p2_h = 220,
               height = p2_y + p2_h + 50;
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\">\n";
  o << "  <style>text{fill:#222} .title{font-size:17px;font-weight:bold} "
       ".subtitle{font-size:12px;fill:#555} .panel{font-size:14px;font-weight:bold} "
       ".tick{font-size:11px;fill:#555} .value{font-size:10px;fill:#333} .label{font-size:12px} "
       ".grid{stroke:#e4e4e4} .axis{stroke:#333}</style>\n";
  o << "  <rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
    << "\" fill=\"white\"/>\n";
  o << "  <text class=\"title\" x=\"" << left << "\" y=\"28\">Energy of "
    << xml_escape(basename_of(e.model)) << " on tpu-rtl (N = " << e.chip_n << ", batch " << e.batch
    << ")</text>\n";
  o << "  <text class=\"subtitle\" x=\"" << left << "\" y=\"48\">"
    << xml_escape(fmt("%.4g", total.total_pj() / images / 1e6)) << " \u00b5J per image, table "
    << xml_escape(e.energy_table.name) << " (docs/energy.md); counted from the instructions run"
    << "</text>\n";
  o << "  <text class=\"subtitle\" x=\"" << left << "\" y=\"64\">"
    << "leakage, clock tree and control are not in the model</text>\n";
  bar_panel(o, left, p1_y, gw * double(components.size()), p1_h, "By component (\u00b5J per image)",
            "", components, {by_component}, 0, "%.3g");
  bar_panel(o, left, p2_y, gw * double(layers.size()), p2_h, "By layer (\u00b5J per image)", "",
            layers, {by_layer}, 0, "%.3g");
  o << "</svg>\n";
  return o.str();
}

std::string report_html(const Evaluation& e) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
    << xml_escape(basename_of(e.model))
    << " on tpu-rtl</title>\n<style>body{font-family:sans-serif;margin:2em} td,th{padding:2px "
       "10px;text-align:right}"
       " th:first-child,td:first-child{text-align:left}</style></head><body>\n";
  o << "<h1>" << xml_escape(basename_of(e.model)) << " on tpu-rtl (N = " << e.chip_n << ")</h1>\n";
  o << "<p>" << xml_escape(e.backend) << " backend, " << e.images << " images, batch " << e.batch
    << " (micro-batch " << e.micro_batch << "), " << e.instructions_per_batch
    << " instructions per batch. Accuracy " << fmt("%.2f", 100 * e.accuracy())
    << "%, bit-exact with the integer reference: " << (e.matches_reference() ? "yes" : "NO") << ". "
    << thousands(e.images ? double(e.cycles_total) / e.images : 0.0) << " cycles per image"
    << (e.cycles_estimated ? " (estimated)" : "") << ", MXU utilization "
    << percent(e.mxu_utilization) << ".</p>\n";
  o << "<p><img src=\"utilization.svg\" alt=\"per-layer cycles and MXU utilization\"></p>\n";
  o << "<p><img src=\"energy.svg\" alt=\"energy per image by component and by layer\"></p>\n";
  o << "<table><tr><th>layer</th><th>op</th><th>MACs</th><th>cycles / image</th><th>ideal</th>"
       "<th>SCALE-Sim WS</th><th>utilization</th></tr>\n";
  for (const auto& l : e.layers) {
    o << "<tr><td>" << xml_escape(l.name) << "</td><td>" << xml_escape(l.op) << "</td><td>"
      << thousands(double(l.macs)) << "</td><td>"
      << thousands(l.images ? double(l.cycles) / l.images : 0.0) << "</td><td>"
      << thousands(l.ideal_cycles) << "</td><td>" << thousands(l.scalesim_ws_cycles) << "</td><td>"
      << percent(l.utilization) << "</td></tr>\n";
  }
  o << "</table>\n<p>The numbers: <a href=\"report.json\">report.json</a> (the tpusim run-cnn "
       "--json object).</p>\n";
  o << "</body></html>\n";
  return o.str();
}

std::string timeline_json(const Evaluation& e) {
  const RunTimeline& t = e.timeline;
  if (t.empty()) throw Error("timeline: no instruction timeline was recorded");
  // Tracks: a unit's events go to its first track whose last slice has ended (slices on one
  // track must not overlap for the viewers); tid = 10 * unit + track + 1.
  std::vector<std::vector<uint64_t>> track_end(static_cast<size_t>(kNumExecUnits));
  std::vector<int> tid(t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    const InstrEvent& ev = t.events[i];
    auto& ends = track_end[size_t(ev.unit)];
    size_t k = 0;
    while (k < ends.size() && ends[k] > ev.start) ++k;
    if (k == ends.size()) ends.push_back(0);
    ends[k] = ev.end;
    tid[i] = 10 * int(ev.unit) + int(k) + 1;
  }
  auto layer_name = [&](uint32_t pc) -> std::string {
    const int l = pc < t.instr_layer.size() ? t.instr_layer[pc] : -1;
    return l >= 0 && size_t(l) < t.layer_names.size() ? t.layer_names[size_t(l)]
                                                      : std::string("(no layer)");
  };

  // Written as text, not as an nlohmann document: ts and dur are exact decimal microseconds
  // ("12.300", micros()), which a double printed by nlohmann (shortest round trip: "12.3", and
  // cycles / 1000 is not exact in binary) cannot give, and a trace holds one record per
  // instruction. Every string goes through nlohmann's serializer (json_quote); the readers
  // (tests, tools) parse the file with nlohmann.
  std::ostringstream o;
  o << "{\"traceEvents\":[\n";
  o << "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":"
    << json_quote("tpu-rtl N=" + std::to_string(e.chip_n) + " " + e.backend + ": " +
                  basename_of(e.model) + ", first batch (" + std::to_string(t.images) + " images)")
    << "}}";
  for (int u = 0; u < kNumExecUnits; ++u) {
    for (size_t k = 0; k < track_end[size_t(u)].size(); ++k) {
      const int id = 10 * u + int(k) + 1;
      std::string name(unit_name(static_cast<ExecUnit>(u)));
      if (k > 0) name += " " + std::to_string(k + 1);
      o << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << id
        << ",\"name\":\"thread_name\",\"args\":{\"name\":" << json_quote(name) << "}}";
      o << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << id
        << ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" << id << "}}";
    }
  }
  size_t incomplete = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const InstrEvent& ev = t.events[i];
    std::string text =
        ev.pc < t.program.size() ? disassemble(t.program[ev.pc]) : std::string(mnemonic(ev.opcode));
    text.erase(
        std::unique(text.begin(), text.end(), [](char a, char b) { return a == ' ' && b == ' '; }),
        text.end());
    const std::string layer = layer_name(ev.pc);
    o << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" << tid[i] << ",\"name\":" << json_quote(layer)
      << ",\"cat\":" << json_quote(std::string(mnemonic(ev.opcode)))
      << ",\"ts\":" << micros(ev.start) << ",\"dur\":" << micros(ev.end - ev.start)
      << ",\"args\":{\"pc\":" << ev.pc << ",\"instruction\":" << json_quote(text)
      << ",\"layer\":" << json_quote(layer) << ",\"start_cycle\":" << ev.start
      << ",\"end_cycle\":" << ev.end << ",\"cycles\":" << ev.end - ev.start;
    if (!ev.complete) {
      o << ",\"complete\":false";
      ++incomplete;
    }
    o << "}}";
  }
  o << "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{";
  o << "\"generator\":\"tpusim run-cnn --timeline\"";
  o << ",\"model\":" << json_quote(e.model) << ",\"backend\":" << json_quote(e.backend)
    << ",\"chip_n\":" << e.chip_n << ",\"batch\":" << e.batch
    << ",\"micro_batch\":" << e.micro_batch << ",\"run\":\"the first batch\""
    << ",\"images\":" << t.images << ",\"cycles\":" << t.cycles
    << ",\"instructions\":" << t.program.size() << ",\"events\":" << t.events.size()
    << ",\"incomplete_events\":" << incomplete << ",\"time\":"
    << json_quote(
           "simulated time at the chip's 1 GHz clock: 1 ns = 1 cycle (ts and dur are in "
           "microseconds = cycles / 1000); cycle 0 is the run's first cycle")
    << ",\"slice\":"
    << json_quote(
           "from the cycle the instruction was issued to its unit to the first cycle it "
           "was finished (docs/architecture.md, Trace port)")
    << "}\n}\n";
  return o.str();
}

void write_text_file(const std::string& path, const std::string& bytes) {
  try {
    write_file_atomically(path, bytes);  // all or nothing: a failure leaves the old file
  } catch (const std::runtime_error& e) {
    throw Error(e.what());
  }
}

}  // namespace tpu::cnn
