// SPDX-License-Identifier: Apache-2.0
// tpusim sweep: a model on every chip configuration of a grid (array size N, host memory
// bandwidth and latency, batch), each configuration one `tpusim_n<N> run-cnn --json` process
// (SystemC elaborates one chip per process), run in parallel; writes sweep.csv and SVG charts
// (docs/tpusim.md, docs/scaling.md).
#if __has_include("evaluate.h")

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>

#include "cnn_shard.h"
#include "interrupt.h"
#include "output_file.h"
#include "sharding.h"
#include "svg_plot.h"
#include "tpusim.h"

#ifndef TPUSIM_N_LIST
#define TPUSIM_N_LIST ""
#endif
#ifndef TPUSIM_DEFAULT_N
#define TPUSIM_DEFAULT_N 0
#endif

namespace {

namespace fs = std::filesystem;

// The array sizes this build has a tpusim for (TPU_SIM_N_LIST as "16,4").
std::vector<int64_t> built_n() {
  std::vector<int64_t> out;
  std::stringstream s(TPUSIM_N_LIST);
  std::string item;
  while (std::getline(s, item, ','))
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}

std::string join(const std::vector<int64_t>& v, const char* sep = ", ") {
  std::string o;
  for (size_t i = 0; i < v.size(); ++i) o += (i ? sep : "") + std::to_string(v[i]);
  return o;
}

// "8,16,32" -> {8, 16, 32}, each in lo..hi, no repeats.
std::vector<int64_t> int_list(const std::string& option, const std::string& text, int64_t lo,
                              int64_t hi) {
  std::vector<int64_t> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      if (!item.empty() && item[0] != '-' && item[0] != '+') v = std::stoll(item, &used, 10);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw tpusim::UsageError("--" + option + " " + text + ": '" + item +
                               "' is not a number (expected a comma-separated list, e.g. 8,16)");
    if (v < lo || v > hi)
      throw tpusim::UsageError("--" + option + " " + text + ": " + item + " is outside " +
                               std::to_string(lo) + ".." + std::to_string(hi));
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw tpusim::UsageError("--" + option + " " + text + ": " + item +
                               " is given twice (expected each value once)");
    out.push_back(v);
  }
  if (out.empty()) throw tpusim::UsageError("--" + option + ": empty list (expected e.g. 8,16)");
  return out;
}

struct Config {
  int64_t n = 0, bandwidth = 0, latency = 0, batch = 0;
  std::string label() const {
    return "N=" + std::to_string(n) + " bandwidth " + std::to_string(bandwidth) + " latency " +
           std::to_string(latency) + " batch " + std::to_string(batch);
  }
};

struct Outcome {
  bool ok = false;
  std::string error;
  int images = 0;
  uint64_t cycles_total = 0;
  double cycles_per_image = 0, utilization = 0, busy = 0, dma_in = 0, dma_out = 0, scalesim = 0,
         accuracy = 0, wall = 0;
  double energy_pj = 0, tops_per_watt = 0;  // per image; run-cnn's "energy" (docs/energy.md)
  bool matches = false;
};

Outcome parse_outcome(const tpusim::ChildResult& r, const Config& c) {
  Outcome o;
  if (r.code != 0 && r.out.empty()) {
    o.error = "run-cnn exited " + std::to_string(r.code);
    return o;
  }
  try {
    const tpusim::JsonValue v = tpusim::parse_json(r.out, c.label());
    if (v.type == tpusim::JsonValue::Type::Object && v.has("status") && v.has("error") &&
        v.at("status").type == tpusim::JsonValue::Type::String && v.at("status").str() == "error") {
      o.error = "run-cnn failed (exit code " + std::to_string(r.code) +
                "): " + v.at("error").at("message").str();
      return o;
    }
    o.images = int(v.at("images").i64());
    o.cycles_total = v.at("cycles_total").u64();
    o.cycles_per_image = double(o.cycles_total) / std::max(1, o.images);
    o.utilization = v.at("mxu_utilization").number();
    o.busy = v.at("mxu_busy_fraction").number();
    o.dma_in = v.at("dma_bytes_per_image").at("in").number();
    o.dma_out = v.at("dma_bytes_per_image").at("out").number();
    o.scalesim = v.at("scalesim_ws_cycles").number();
    o.accuracy = v.at("accuracy").number();
    o.wall = v.at("wall_seconds").number();
    o.energy_pj = v.at("energy").at("per_image_pj").number();
    o.tops_per_watt = v.at("energy").at("tops_per_watt").number();
    o.matches = v.at("matches_golden").flag();
    o.ok = true;
    if (uint64_t(v.at("chip_n").u64()) != uint64_t(c.n)) {
      o.ok = false;
      o.error = "the run reports chip_n " + v.at("chip_n").text + ", expected " +
                std::to_string(c.n) + " (a stale tpusim_n" + std::to_string(c.n) + "?)";
    }
  } catch (const std::runtime_error& e) {
    o.error = std::string("cannot read its JSON: ") + e.what();
  }
  return o;
}

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char b[40];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// sweep's options, read and checked.
struct SweepOptions {
  std::string model, n_text, bw_text = "16", lat_text = "10", batch_text = "8", out_dir = ".";
  std::string energy_table;  // --energy-table, given to every run-cnn (absolute)
  std::vector<int64_t> ns, bws, lats, batches;
  int64_t images = 32, calibration = 50;
  int jobs = 1;
};

// Reads the options; false for --help. Throws UsageError for bad ones.
bool parse_sweep_options(const tpusim::Args& args, SweepOptions& o) {
  namespace po = tpusim::po;
  po::options_description opts("options");
  opts.add_options()("model", po::value<std::string>(&o.model),
                     "ONNX model for run-cnn (default: the bundled models/fashion_cnn.onnx)")(
      "n", po::value<std::string>(&o.n_text),
      "array sizes N, comma-separated (default: every N built, TPU_SIM_N_LIST)")(
      "bandwidth", po::value<std::string>(&o.bw_text)->default_value("16"),
      "host memory bandwidths in bytes per cycle, 1..4096, comma-separated")(
      "latency", po::value<std::string>(&o.lat_text)->default_value("10"),
      "host memory latencies in cycles per DMA transaction, 0..100000, comma-separated")(
      "batch", po::value<std::string>(&o.batch_text)->default_value("8"),
      "batch sizes (images per chip run), 1..4095, comma-separated")(
      "images", po::value<std::string>()->default_value("32"),
      "Fashion-MNIST test images per configuration (1..10000)")(
      "calibration", po::value<std::string>()->default_value("50"),
      "calibration images for the post-training quantization (as run-cnn)")(
      "jobs", po::value<std::string>(),
      "configurations run at once (default: the number of cores)")(
      "out", po::value<std::string>(&o.out_dir)->default_value("."),
      "directory for sweep.csv and the charts (created if missing)")(
      "energy-table", po::value<std::string>(&o.energy_table),
      "energy per action for every run's energy figures (docs/energy.md; default: the built-in "
      "energy/horowitz_45nm.json)");
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim sweep [--model M] [--n 8,16,32,64] [--bandwidth 8,16,32,64] [--latency 10,100] "
          "[--batch 1,16] [--images I] [--jobs J] [--out DIR] [--energy-table FILE]",
          "Runs the model (tpusim run-cnn on Fashion-MNIST, rtl backend) on every configuration "
          "of the grid N x bandwidth x latency x batch, each configuration in its own process "
          "(tpusim_n<N>, the chip of that N), --jobs at a time, and writes DIR/sweep.csv (one row "
          "per configuration: cycles per image, MXU utilization, DMA bytes, SCALE-Sim's WS "
          "estimate, bit-exactness) and the charts DIR/sweep_cycles.svg, "
          "DIR/sweep_utilization.svg (against N), DIR/sweep_cycles_bandwidth.svg, "
          "DIR/sweep_utilization_bandwidth.svg (against bandwidth), DIR/sweep_dma.svg and "
          "DIR/sweep_energy.svg (energy per image against N). "
          "Exit code 1 if a configuration fails or differs from the integer reference.",
          opts, {}, vm)) {
    return false;
  }
  const std::vector<int64_t> built = built_n();
  o.ns = o.n_text.empty() ? built : int_list("n", o.n_text, 1, 1024);
  o.bws = int_list("bandwidth", o.bw_text, 1, 4096);
  o.lats = int_list("latency", o.lat_text, 0, 100000);
  o.batches = int_list("batch", o.batch_text, 1, 4095);
  o.images = tpusim::int_option(vm, "images", 1, 10000);
  o.calibration = tpusim::int_option(vm, "calibration", 1, 60000);
  o.jobs = vm.count("jobs") ? int(tpusim::int_option(vm, "jobs", 1, 1024))
                            : int(std::max(1u, std::thread::hardware_concurrency()));
  if (!o.model.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(o.model, ec))
      throw std::runtime_error("--model " + o.model +
                               ": not a readable file (expected an ONNX model for run-cnn)");
    o.model = fs::absolute(o.model, ec).string();
  }
  if (!o.energy_table.empty()) {
    tpusim::energy_table_option(o.energy_table);  // a bad table fails here, not in every run
    std::error_code ec;
    o.energy_table = fs::absolute(o.energy_table, ec).string();
  }
  return true;
}

// One executable per N: tpusim for the default chip, tpusim_n<N> for the others.
std::vector<std::pair<int64_t, std::string>> executables(const std::vector<int64_t>& ns) {
  const std::vector<int64_t> built = built_n();
  const fs::path dir = fs::path(tpusim::self_executable()).parent_path();
  std::vector<std::pair<int64_t, std::string>> exes;
  for (int64_t n : ns) {
    if (std::find(built.begin(), built.end(), n) == built.end())
      throw tpusim::UsageError("--n " + std::to_string(n) +
                               ": no chip of N = " + std::to_string(n) +
                               " in this build (TPU_SIM_N_LIST builds N = " + join(built) +
                               "; reconfigure with -DTPU_SIM_N_LIST=\"" + join(built, ";") + ";" +
                               std::to_string(n) + "\")");
    const std::string name =
        n == TPUSIM_DEFAULT_N ? std::string("tpusim") : "tpusim_n" + std::to_string(n);
    const fs::path exe = dir / name;
    std::error_code ec;
    if (!fs::exists(exe, ec))
      throw std::runtime_error(exe.string() +
                               ": missing (expected the tpusim of N = " + std::to_string(n) +
                               "; build it: cmake --build build --target " + name + ")");
    exes.emplace_back(n, exe.string());
  }
  return exes;
}

// The grid: one configuration and one run-cnn command per point.
void grid(const SweepOptions& o, const std::vector<std::pair<int64_t, std::string>>& exes,
          std::vector<Config>& configs, std::vector<std::vector<std::string>>& argvs) {
  for (const auto& [n, exe] : exes)
    for (int64_t bw : o.bws)
      for (int64_t lat : o.lats)
        for (int64_t b : o.batches) {
          configs.push_back(Config{n, bw, lat, b});
          std::vector<std::string> a = {exe,
                                        "run-cnn",
                                        "--json",
                                        "--quiet",
                                        "--images",
                                        std::to_string(o.images),
                                        "--batch",
                                        std::to_string(b),
                                        "--calibration",
                                        std::to_string(o.calibration),
                                        "--mem-bandwidth",
                                        std::to_string(bw),
                                        "--mem-latency",
                                        std::to_string(lat)};
          if (!o.model.empty()) a.insert(a.end(), {"--model", o.model});
          if (!o.energy_table.empty()) a.insert(a.end(), {"--energy-table", o.energy_table});
          argvs.push_back(std::move(a));
        }
}

// Runs the configurations, --jobs at a time, each with its messages in a log kept only when
// the run fails; a line on stderr as each ends.
std::vector<Outcome> run_configs(const SweepOptions& o, const std::vector<Config>& configs,
                                 const std::vector<std::vector<std::string>>& argvs) {
  std::error_code ec;
  const fs::path log_dir = fs::path(o.out_dir) / "sweep_logs";
  fs::create_directories(log_dir, ec);
  if (ec)
    throw std::runtime_error("--out " + o.out_dir + ": cannot create " + log_dir.string() + " (" +
                             ec.message() + ")");
  std::vector<std::string> logs;
  for (const Config& c : configs)
    logs.push_back(
        (log_dir / ("n" + std::to_string(c.n) + "_bw" + std::to_string(c.bandwidth) + "_lat" +
                    std::to_string(c.latency) + "_batch" + std::to_string(c.batch) + ".log"))
            .string());
  std::fprintf(
      stderr,
      "sweep: %zu configurations (N %s; bandwidth %s; latency %s; batch %s), %d at a time\n",
      configs.size(), join(o.ns).c_str(), join(o.bws).c_str(), join(o.lats).c_str(),
      join(o.batches).c_str(), o.jobs);
  std::vector<Outcome> outcomes(configs.size());
  size_t done = 0;
  tpusim::set_activity("running " + std::to_string(configs.size()) + " configurations");
  tpusim::run_processes(
      argvs, o.jobs,
      [&](size_t i, const tpusim::ChildResult& r) {
        outcomes[i] = parse_outcome(r, configs[i]);
        Outcome& out = outcomes[i];
        std::error_code rm;
        if (out.ok && out.matches)
          fs::remove(logs[i], rm);
        else
          out.error += (out.error.empty() ? "" : "; ") + std::string("its messages: ") + logs[i];
        ++done;
        if (out.ok)
          std::fprintf(stderr, "[%zu/%zu] %s: %.0f cycles per image, MXU utilization %.1f%%%s\n",
                       done, configs.size(), configs[i].label().c_str(), out.cycles_per_image,
                       100 * out.utilization,
                       out.matches ? "" : ", DIFFERS from the integer reference");
        else
          std::fprintf(stderr, "[%zu/%zu] %s: FAILED: %s\n", done, configs.size(),
                       configs[i].label().c_str(), out.error.c_str());
      },
      logs);
  fs::remove(log_dir, ec);  // only if empty: every run succeeded
  return outcomes;
}

// sweep.csv: one row per configuration, in grid order.
std::string sweep_csv(const std::vector<Config>& configs, const std::vector<Outcome>& outcomes) {
  std::ostringstream csv;
  csv << "n,bandwidth_bytes_per_cycle,latency_cycles,batch,images,cycles_total,cycles_per_image,"
         "mxu_utilization,mxu_busy_fraction,dma_in_bytes_per_image,dma_out_bytes_per_image,"
         "scalesim_ws_cycles_per_image,matches_reference,accuracy,energy_pj_per_image,"
         "tops_per_watt,wall_seconds,error\n";
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Outcome& o = outcomes[i];
    csv << c.n << "," << c.bandwidth << "," << c.latency << "," << c.batch << ",";
    if (o.ok)
      csv << o.images << "," << o.cycles_total << "," << csv_number(o.cycles_per_image) << ","
          << csv_number(o.utilization) << "," << csv_number(o.busy) << "," << csv_number(o.dma_in)
          << "," << csv_number(o.dma_out) << "," << csv_number(o.scalesim) << ","
          << (o.matches ? "true" : "false") << "," << csv_number(o.accuracy) << ","
          << csv_number(o.energy_pj) << "," << csv_number(o.tops_per_watt) << ","
          << csv_number(o.wall) << ",\n";
    else {
      std::string e = o.error;  // one quoted CSV field
      std::replace(e.begin(), e.end(), '"', '\'');
      std::replace(e.begin(), e.end(), '\n', ' ');
      csv << ",,,,,,,,,,,,,\"" << e << "\"\n";
    }
  }
  return csv.str();
}

// Cycles per image or MXU utilization: panels per (latency, batch); against N (a line per
// bandwidth) or against bandwidth (a line per N).
std::string timing_chart(const SweepOptions& o, const std::vector<Config>& configs,
                         const std::vector<Outcome>& outcomes, bool util, bool vs_n) {
  tpusim::PlotSpec spec;
  spec.title = std::string(util ? "MXU utilization" : "Cycles per image") + " against " +
               (vs_n ? "N" : "host memory bandwidth") + " (" +
               fs::path(o.model.empty() ? "fashion_cnn.onnx" : o.model).filename().string() + ", " +
               std::to_string(o.images) + " images)";
  spec.x_label = vs_n ? "array size N" : "bandwidth (bytes per cycle)";
  spec.y_label = util ? "MXU utilization" : "cycles per image (log scale)";
  spec.y_percent = util;
  spec.y_log = !util;  // cycles span decades between N = 4 and N = 256
  for (int64_t lat : o.lats)
    for (int64_t b : o.batches) {
      tpusim::PlotPanel panel;
      panel.title = "latency " + std::to_string(lat) + ", batch " + std::to_string(b);
      for (int64_t s : vs_n ? o.bws : o.ns) {
        tpusim::PlotSeries series;
        series.label =
            vs_n ? "bandwidth " + std::to_string(s) + " B/cycle" : "N = " + std::to_string(s);
        for (size_t i = 0; i < configs.size(); ++i) {
          const Config& c = configs[i];
          if (c.latency != lat || c.batch != b || (vs_n ? c.bandwidth : c.n) != s) continue;
          series.x.push_back(double(vs_n ? c.n : c.bandwidth));
          const Outcome& out = outcomes[i];
          series.y.push_back(!out.ok ? std::nan("")
                             : util  ? out.utilization
                                     : out.cycles_per_image);
        }
        panel.series.push_back(std::move(series));
      }
      spec.panels.push_back(std::move(panel));
    }
  return tpusim::line_chart_svg(spec);
}

// A chart of one figure per image against N, a line per batch, at the first bandwidth and
// latency: figures that depend on N and the batch, not on the memory's timing.
std::string per_image_chart(const SweepOptions& o, const std::vector<Config>& configs,
                            const std::vector<Outcome>& outcomes, const std::string& title,
                            const std::string& y_label, double (*value)(const Outcome&)) {
  tpusim::PlotSpec spec;
  spec.title = title;
  spec.x_label = "array size N";
  spec.y_label = y_label;
  tpusim::PlotPanel panel;
  panel.title = "bandwidth " + std::to_string(o.bws[0]) + ", latency " + std::to_string(o.lats[0]);
  for (int64_t b : o.batches) {
    tpusim::PlotSeries series;
    series.label = "batch " + std::to_string(b);
    for (size_t i = 0; i < configs.size(); ++i) {
      const Config& c = configs[i];
      if (c.bandwidth != o.bws[0] || c.latency != o.lats[0] || c.batch != b) continue;
      series.x.push_back(double(c.n));
      series.y.push_back(outcomes[i].ok ? value(outcomes[i]) : std::nan(""));
    }
    panel.series.push_back(std::move(series));
  }
  spec.panels.push_back(std::move(panel));
  return tpusim::line_chart_svg(spec);
}

// DMA bytes per image.
std::string dma_chart(const SweepOptions& o, const std::vector<Config>& configs,
                      const std::vector<Outcome>& outcomes) {
  return per_image_chart(
      o, configs, outcomes,
      "DMA bytes per image (host to chip: weights, parameters, instructions, input)",
      "bytes per image", [](const Outcome& r) { return r.dma_in; });
}

// Energy per image (the actions).
std::string energy_chart(const SweepOptions& o, const std::vector<Config>& configs,
                         const std::vector<Outcome>& outcomes) {
  return per_image_chart(o, configs, outcomes,
                         "Energy per image (docs/energy.md; counted from the instructions run)",
                         "\u00b5J per image", [](const Outcome& r) { return r.energy_pj / 1e6; });
}

// The table on stdout.
void print_table(const std::vector<Config>& configs, const std::vector<Outcome>& outcomes) {
  std::printf("%5s %9s %7s %5s %14s %11s %14s %10s %s\n", "N", "bandwidth", "latency", "batch",
              "cycles/image", "MXU util.", "DMA in/image", "SCALE-Sim", "bit-exact");
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const Outcome& o = outcomes[i];
    if (!o.ok) {
      std::printf("%5lld %9lld %7lld %5lld FAILED: %s\n", (long long)c.n, (long long)c.bandwidth,
                  (long long)c.latency, (long long)c.batch, o.error.c_str());
      continue;
    }
    std::printf("%5lld %9lld %7lld %5lld %14.0f %10.1f%% %14.0f %10.0f %s\n", (long long)c.n,
                (long long)c.bandwidth, (long long)c.latency, (long long)c.batch,
                o.cycles_per_image, 100 * o.utilization, o.dma_in, o.scalesim,
                o.matches ? "yes" : "NO");
  }
}

const char* const kSweepFiles[] = {"sweep.csv",
                                   "sweep_cycles.svg",
                                   "sweep_utilization.svg",
                                   "sweep_cycles_bandwidth.svg",
                                   "sweep_utilization_bandwidth.svg",
                                   "sweep_dma.svg",
                                   "sweep_energy.svg"};

int run_sweep(const tpusim::Args& args) {
  SweepOptions o;
  if (!parse_sweep_options(args, o)) return 0;
  const auto exes = executables(o.ns);
  {  // no output may be an input: checked before anything runs
    tpu::RunPaths paths;
    paths.input("--model", o.model).input("--energy-table", o.energy_table);
    for (const char* name : kSweepFiles) paths.output_in("--out", o.out_dir, name);
    paths.check();
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec || !fs::is_directory(o.out_dir, ec))
    throw std::runtime_error("--out " + o.out_dir + ": cannot create the directory (" +
                             (ec ? ec.message() : std::string("exists and is not a directory")) +
                             "); expected a writable directory");
  const std::string csv_path = (fs::path(o.out_dir) / "sweep.csv").string();
  tpu::OutputFile csv_out(csv_path, "--out");  // fails now, not after the sweep
  std::vector<Config> configs;
  std::vector<std::vector<std::string>> argvs;
  grid(o, exes, configs, argvs);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Outcome> outcomes = run_configs(o, configs, argvs);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int failed = 0;
  for (const auto& out : outcomes) failed += !out.ok || !out.matches;
  csv_out.write(sweep_csv(configs, outcomes));
  csv_out.commit();
  std::vector<std::string> written = {csv_path};
  auto write_svg = [&](const std::string& name, const std::string& text) {
    const std::string path = (fs::path(o.out_dir) / name).string();
    tpu::OutputFile f(path, "--out");
    f.write(text);
    f.commit();
    written.push_back(path);
  };
  write_svg("sweep_cycles.svg", timing_chart(o, configs, outcomes, false, true));
  write_svg("sweep_utilization.svg", timing_chart(o, configs, outcomes, true, true));
  write_svg("sweep_cycles_bandwidth.svg", timing_chart(o, configs, outcomes, false, false));
  write_svg("sweep_utilization_bandwidth.svg", timing_chart(o, configs, outcomes, true, false));
  write_svg("sweep_dma.svg", dma_chart(o, configs, outcomes));
  write_svg("sweep_energy.svg", energy_chart(o, configs, outcomes));
  print_table(configs, outcomes);
  std::printf("configurations: %zu, failed or not bit-exact: %d; wall time %.1f s (%d at a time)\n",
              configs.size(), failed, wall, o.jobs);
  std::printf("wrote:");
  for (const auto& w : written) std::printf(" %s", w.c_str());
  std::printf("\n");
  return failed ? 1 : 0;
}

}  // namespace

TPUSIM_SUBCOMMAND("sweep",
                  "a model on a grid of chip configurations (N, memory bandwidth and latency, "
                  "batch): sweep.csv and SVG charts",
                  run_sweep);

#endif  // __has_include("evaluate.h")
