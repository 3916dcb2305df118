// SPDX-License-Identifier: Apache-2.0
// tpusim run-topology: the layers of a SCALE-Sim topology CSV, each built with random int8
// weights and inputs, run on the chip one by one, checked against the integer reference, and
// their cycles and MXU utilization shown next to SCALE-Sim's weight-stationary estimate
// (tpu::cnn::layer_profile, as run-cnn's per-layer report). docs/tpusim.md.
#if __has_include("runner.h")

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "evaluate.h"
#include "interrupt.h"
#include "json_text.h"
#include "network.h"
#include "reference.h"
#include "runner.h"
#include "sharding.h"
#include "tpusim.h"

namespace {

using tpu::cnn::LayerKind;
using tpu::cnn::QLayer;
using tpu::cnn::QuantNetwork;

// One row of the topology: a convolution (GEMM rows become 1x1 convolutions).
struct TopoLayer {
  std::string name;
  int ifmap_h = 0, ifmap_w = 0, filter_h = 0, filter_w = 0, channels = 0, filters = 0, stride = 1;
  bool gemm = false;
  int64_t m = 0, n = 0, k = 0;  // GEMM rows
  int line = 0;
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// SCALE-Sim's topology files: a header, then one layer per line with trailing commas.
//   convolutions: Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels,
//                 Num Filter, Strides      (the IFMAP sizes include the padding)
//   GEMM:         Layer, M, N, K           (M x K times K x N: M output rows, N columns)
// The host builds every layer in memory (random weights, inputs, the reference's output):
// a row whose tensors would not fit is refused with its file, line and layer name, never
// reaching std::bad_alloc.
constexpr uint64_t kMaxTopoWeights = uint64_t{1} << 28;  // int8 weights of one layer
constexpr uint64_t kMaxTopoValues = uint64_t{1} << 24;   // IFMAP or OFMAP values of one image

void check_layer_size(const TopoLayer& l, const std::string& where) {
  const uint64_t weights =
      uint64_t(l.filters) * uint64_t(l.filter_h) * uint64_t(l.filter_w) * uint64_t(l.channels);
  const uint64_t ifmap = uint64_t(l.ifmap_h) * uint64_t(l.ifmap_w) * uint64_t(l.channels);
  const uint64_t ofmap = uint64_t((l.ifmap_h - l.filter_h) / l.stride + 1) *
                         uint64_t((l.ifmap_w - l.filter_w) / l.stride + 1) * uint64_t(l.filters);
  auto refuse = [&](const std::string& what, uint64_t n, uint64_t limit) {
    throw std::runtime_error(where + "layer '" + l.name + "': " + what + " " + std::to_string(n) +
                             " is too large (at most " + std::to_string(limit) +
                             " for a layer the host builds in memory)");
  };
  if (weights > kMaxTopoWeights)
    refuse("its weights (filters x filter size x channels)", weights, kMaxTopoWeights);
  if (ifmap > kMaxTopoValues)
    refuse("its IFMAP (height x width x channels)", ifmap, kMaxTopoValues);
  if (ofmap > kMaxTopoValues) refuse("its OFMAP (height x width x filters)", ofmap, kMaxTopoValues);
}

std::vector<TopoLayer> read_topology(const std::string& path) {
  tpu::check_not_directory(path);
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open for reading");
  std::vector<TopoLayer> layers;
  std::string text;
  int line_no = 0;
  bool gemm = false, header_seen = false;
  while (std::getline(in, text)) {
    ++line_no;
    std::vector<std::string> f;
    std::stringstream ss(text);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(trim(cell));
    while (!f.empty() && f.back().empty()) f.pop_back();  // the trailing commas
    if (f.empty() || f[0][0] == '#') continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (!header_seen && lower(f[0]).rfind("layer", 0) == 0) {
      header_seen = true;
      if (f.size() == 4 && lower(f[1]) == "m" && lower(f[2]) == "n" && lower(f[3]) == "k") {
        gemm = true;
      } else if (f.size() == 8 && lower(f[1]).find("ifmap") != std::string::npos) {
        gemm = false;
      } else {
        throw std::runtime_error(
            where + "unknown header '" + text +
            "' (expected SCALE-Sim's 'Layer name, IFMAP Height, IFMAP Width, Filter Height, "
            "Filter Width, Channels, Num Filter, Strides,' or its GEMM 'Layer, M, N, K,')");
      }
      continue;
    }
    if (!header_seen) {  // no header: the column count says which format
      if (f.size() != 4 && f.size() != 8)
        throw std::runtime_error(where + std::to_string(f.size()) +
                                 " columns and no header (expected a SCALE-Sim header line, or "
                                 "8 columns per convolution / 4 per GEMM)");
      gemm = f.size() == 4;
      header_seen = true;
    }
    const size_t want = gemm ? 4 : 8;
    if (f.size() != want)
      throw std::runtime_error(where + std::to_string(f.size()) + " columns, expected " +
                               std::to_string(want) +
                               (gemm ? " (Layer, M, N, K)"
                                     : " (Layer name, IFMAP Height, IFMAP Width, Filter Height, "
                                       "Filter Width, Channels, Num Filter, Strides)"));
    std::vector<int64_t> v;
    for (size_t i = 1; i < f.size(); ++i) {
      size_t used = 0;
      long long x = 0;
      try {
        if (!f[i].empty() && f[i][0] != '-' && f[i][0] != '+') x = std::stoll(f[i], &used, 10);
      } catch (const std::exception&) {
        used = 0;
      }
      if (f[i].empty() || used != f[i].size() || x < 1 || x > (int64_t{1} << 24))
        throw std::runtime_error(where + "column " + std::to_string(i + 1) + " '" + f[i] +
                                 "' is not a whole number in 1..16777216");
      v.push_back(x);
    }
    TopoLayer l;
    l.name = f[0];
    l.line = line_no;
    l.gemm = gemm;
    if (gemm) {
      l.m = v[0];
      l.n = v[1];
      l.k = v[2];
      if (l.m > 65535 || l.n > 65535 || l.k > 65535)
        throw std::runtime_error(where + "M, N and K must be at most 65535");
      // M x K times K x N as a 1x1 convolution: M pixels of K channels, N filters.
      l.ifmap_h = int(l.m);
      l.ifmap_w = 1;
      l.filter_h = l.filter_w = 1;
      l.channels = int(l.k);
      l.filters = int(l.n);
      l.stride = 1;
    } else {
      l.ifmap_h = int(v[0]);
      l.ifmap_w = int(v[1]);
      l.filter_h = int(v[2]);
      l.filter_w = int(v[3]);
      l.channels = int(v[4]);
      l.filters = int(v[5]);
      l.stride = int(v[6]);
      if (l.filter_h > l.ifmap_h || l.filter_w > l.ifmap_w)
        throw std::runtime_error(where + "the " + f[3] + "x" + f[4] +
                                 " filter is larger than the " + f[1] + "x" + f[2] +
                                 " IFMAP (expected a filter inside the IFMAP)");
    }
    check_layer_size(l, where);
    layers.push_back(l);
  }
  if (layers.empty())
    throw std::runtime_error(path + ": no layers (expected a SCALE-Sim topology CSV)");
  return layers;
}

// A one-layer network: random int8 weights and biases, int8 input and output, the requantizing
// multiplier chosen so the outputs spread over the int8 range without saturating much.
QuantNetwork random_layer(const TopoLayer& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  QuantNetwork net;
  net.name = t.name;
  net.input = {t.channels, t.ifmap_h, t.ifmap_w};
  net.input_q = tpu::cnn::TensorQuant{1.0f, 0, false};
  QLayer q;
  q.kind = LayerKind::Conv;
  q.name = t.name;
  q.op = t.gemm ? "GEMM" : "Conv";
  q.inputs = {tpu::cnn::kNetworkInput};
  q.input_channels = {t.channels};
  q.in = net.input;
  q.kh = t.filter_h;
  q.kw = t.filter_w;
  q.sh = q.sw = t.stride;
  q.conv_out.c = t.filters;
  q.infer_shapes();
  q.in_q = q.out_q = net.input_q;
  q.in_qs = {q.in_q};
  const int64_t fan_in = q.fan_in();
  std::uniform_int_distribution<int> w8(-127, 127), b(-1000, 1000);
  q.weight.resize(size_t(t.filters) * size_t(fan_in));
  for (auto& w : q.weight) w = int8_t(w8(rng));
  // |sum of fan_in products of two uniform int8| ~ 74 * 74 * sqrt(fan_in): scaled to ~40.
  const double m = 40.0 / (74.0 * 74.0 * std::sqrt(double(fan_in)));
  int32_t mult = 0;
  uint8_t shift = 0;
  tpu::cnn::quantize_multiplier(m, &mult, &shift);
  for (int oc = 0; oc < t.filters; ++oc) {
    q.bias.push_back(b(rng));
    q.weight_scale.push_back(1.0f);
    q.mult.push_back(mult);
    q.shift.push_back(shift);
  }
  net.layers.push_back(std::move(q));
  return net;
}

std::string thousands(double v) {
  if (!std::isfinite(v)) return "-";
  std::string s = std::to_string(uint64_t(std::llround(v)));
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

struct LayerOutcome {
  size_t index = 0;  // in the file
  std::string name, shape;
  std::string status = "ok";  // "ok", "DIFFERS ...", "not run: ...", "chip error: ..."
  bool ran = false, exact = false;
  uint64_t cycles = 0, mxu_busy = 0, dma_in = 0, dma_out = 0;
  int64_t macs = 0;
  double utilization = 0, ideal = 0, scalesim = 0, wall = 0;
  bool failed() const { return (ran && !exact) || status.rfind("chip error", 0) == 0; }
  bool not_run() const { return status.rfind("not run", 0) == 0; }
};

// A run of layers [from, to) of a topology file: what one process prints, and what a shard
// sends to be merged (layers: those of the shard).
struct TopoRun {
  std::string file;
  bool gemm = false;
  size_t total_layers = 0, from = 0, to = 0;
  uint32_t n = 0, batch = 1;
  std::string backend;
  uint64_t seed = 1;
  std::vector<LayerOutcome> layers;
};

const char* kTopologyShardFormat = "tpusim run-topology shard 1";

void print_header(std::FILE* info, const TopoRun& r, bool json) {
  std::fprintf(info, "topology: %s, %zu layers (%s), chip N=%u (%s backend), batch %u, seed %llu\n",
               r.file.c_str(), r.total_layers, r.gemm ? "GEMM" : "convolutions", r.n,
               r.backend.c_str(), r.batch, (unsigned long long)r.seed);
  std::fprintf(info,
               "per layer and image: the chip's cycles (weights and input in from host memory, "
               "output out), MXU utilization (MACs / (cycles x N^2)), SCALE-Sim's weight-"
               "stationary estimate and chip/SS = cycles / that estimate\n");
  if (!json)
    std::printf("%-16s %-24s %14s %12s %11s %12s %8s  %s\n", "layer", "shape", "MACs/image",
                "cycles", "MXU util.", "SCALE-Sim", "chip/SS", "bit-exact");
  std::fflush(info);
  std::fflush(stdout);
}

void print_row(const LayerOutcome& o, uint32_t batch) {
  const double per = double(o.cycles) / batch;
  char util[32] = "-";
  if (o.ran && std::isfinite(o.utilization))
    std::snprintf(util, sizeof util, "%.1f%%", 100 * o.utilization);
  char ratio[32] = "-";
  if (o.ran && o.scalesim > 0) std::snprintf(ratio, sizeof ratio, "%.2f", per / o.scalesim);
  std::printf("%-16s %-24s %14s %12s %11s %12s %8s  %s\n", o.name.c_str(), o.shape.c_str(),
              thousands(double(o.macs)).c_str(), o.ran ? thousands(per).c_str() : "-", util,
              thousands(o.scalesim).c_str(), ratio, o.ran && o.exact ? "yes" : o.status.c_str());
  std::fflush(stdout);
}

// The totals (and with `json` the one JSON object); returns the exit code.
int print_result(const TopoRun& r, bool json, double wall) {
  uint64_t cycles = 0;
  double scalesim = 0;
  int64_t macs = 0;
  int ran = 0, failed = 0, not_run = 0;
  for (const auto& o : r.layers) {
    failed += o.failed();
    not_run += o.not_run();
    if (!o.ran) continue;
    cycles += o.cycles;
    scalesim += o.scalesim * r.batch;
    macs += o.macs * r.batch;
    ++ran;
  }
  const uint32_t n = r.n;
  const double util = cycles ? double(macs) / (double(cycles) * n * n) : 0.0;
  if (json) {
    const double nan = std::nan("");  // printed as null
    nlohmann::ordered_json j = {{"topology", r.file},
                                {"format", r.gemm ? "gemm" : "conv"},
                                {"chip_n", n},
                                {"backend", r.backend},
                                {"batch", r.batch},
                                {"seed", r.seed},
                                {"layers_run", ran},
                                {"layers_not_run", not_run},
                                {"layers_failed", failed},
                                {"pass", failed == 0},
                                {"cycles", cycles},
                                {"scalesim_ws_cycles", scalesim},
                                {"mxu_utilization", util},
                                {"wall_seconds", wall},
                                {"layers", nlohmann::ordered_json::array()}};
    for (const auto& o : r.layers) {
      j["layers"].push_back(
          {{"name", o.name},
           {"shape", o.shape},
           {"macs_per_image", o.macs},
           {"ran", o.ran},
           {"matches_reference", o.ran && o.exact},
           {"status", o.status},
           {"cycles", o.cycles},
           {"cycles_per_image", o.ran ? double(o.cycles) / r.batch : nan},
           {"mxu_utilization", o.ran ? o.utilization : nan},
           {"mxu_busy", o.mxu_busy},
           {"dma_in_bytes", o.dma_in},
           {"dma_out_bytes", o.dma_out},
           {"ideal_cycles_per_image", o.ideal},
           {"scalesim_ws_cycles_per_image", o.scalesim},
           {"cycles_vs_scalesim",
            o.ran && o.scalesim > 0 ? double(o.cycles) / r.batch / o.scalesim : nan},
           {"wall_seconds", o.wall}});
    }
    std::cout << tpu::json_document(j) << "\n";
  } else {
    std::printf(
        "total: %d of %zu layers run (%d not run, %d failed); %s cycles per image, MXU "
        "utilization %.1f%%; SCALE-Sim WS %s cycles per image (chip/SCALE-Sim %.2f); wall time "
        "%.1f s\n",
        ran, r.layers.size(), not_run, failed, thousands(double(cycles) / r.batch).c_str(),
        100 * util, thousands(scalesim / r.batch).c_str(),
        scalesim > 0 ? double(cycles) / scalesim : 0.0, wall);
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

// One layer alone on the chip.
LayerOutcome run_layer(tpu::Device& dev, const TopoLayer& t, size_t index, uint32_t batch,
                       uint64_t seed, uint64_t max_cycles) {
  const uint32_t n = dev.params().N;
  LayerOutcome o;
  o.index = index;
  o.name = t.name;
  const auto l0 = std::chrono::steady_clock::now();
  try {
    const QuantNetwork net = random_layer(t, seed + index);
    const QLayer& q = net.layers[0];
    o.macs = q.macs();
    o.shape = std::to_string(q.in.c) + "x" + std::to_string(q.in.h) + "x" + std::to_string(q.in.w) +
              " k" + std::to_string(q.kh) + "x" + std::to_string(q.kw) +
              (q.sh > 1 ? "/" + std::to_string(q.sh) : "") + " -> " + std::to_string(q.out.c) +
              "x" + std::to_string(q.out.h) + "x" + std::to_string(q.out.w);
    if (t.gemm)
      o.shape = "M" + std::to_string(t.m) + " N" + std::to_string(t.n) + " K" + std::to_string(t.k);
    {  // SCALE-Sim's estimate is analytical: known for layers that do not run too
      const tpu::cnn::LayerProfile p = tpu::cnn::layer_profile(q, n, batch, 0);
      o.ideal = p.ideal_cycles;
      o.scalesim = p.scalesim_ws_cycles;  // per image
    }
    dev.release_all();  // every layer from an empty arena: the same addresses in any order
    std::unique_ptr<tpu::cnn::ChipRunner> runner;
    try {
      runner = std::make_unique<tpu::cnn::ChipRunner>(dev, net, batch);
    } catch (const tpu::cnn::Error& e) {
      std::string what = e.what();  // "NAME: why": the name is in the row already
      if (what.rfind(t.name + ": ", 0) == 0) what.erase(0, t.name.size() + 2);
      o.status = "not run: " + what;
    }
    if (runner) {
      // The random int8 input images of this layer.
      std::mt19937_64 rng(seed + index + 0x9e3779b97f4a7c15ULL);
      std::uniform_int_distribution<int> x8(-128, 127);
      std::vector<std::vector<int32_t>> images(batch,
                                               std::vector<int32_t>(size_t(net.input.size())));
      std::vector<const int32_t*> ptrs;
      for (auto& im : images) {
        for (auto& v : im) v = x8(rng);
        ptrs.push_back(im.data());
      }
      const auto r = runner->run(ptrs, max_cycles);
      o.ran = true;
      o.exact = true;
      for (uint32_t i = 0; i < batch; ++i)
        o.exact = o.exact && r.outputs[i] == tpu::cnn::int_forward(net, ptrs[i]);
      o.cycles = r.stats.cycles;
      o.mxu_busy = r.stats.counters.mxu_busy;
      o.dma_in = r.stats.counters.dma_rd_bytes;
      o.dma_out = r.stats.counters.dma_wr_bytes;
      const tpu::cnn::LayerProfile p = tpu::cnn::layer_profile(q, n, batch, r.stats.cycles);
      o.utilization = p.utilization;
      if (r.stats.cycles_estimated) o.utilization = std::nan("");
      if (!o.exact) o.status = "DIFFERS from the integer reference";
    }
  } catch (const tpu::DeviceError& e) {
    o.status = std::string("chip error: ") + e.what();
  }
  o.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
  return o;
}

std::string shard_json(const TopoRun& r, const tpu::ShardSpec& shard, double wall) {
  nlohmann::ordered_json j = {{"format", kTopologyShardFormat},
                              {"shard", {{"index", shard.index}, {"count", shard.count}}},
                              {"topology", r.file},
                              {"gemm", r.gemm},
                              {"total_layers", r.total_layers},
                              {"from", r.from},
                              {"to", r.to},
                              {"chip_n", r.n},
                              {"backend", r.backend},
                              {"batch", r.batch},
                              {"seed", r.seed},
                              {"wall_seconds", wall},
                              {"layers", nlohmann::ordered_json::array()}};
  for (const auto& o : r.layers)
    j["layers"].push_back({{"index", o.index},
                           {"name", o.name},
                           {"shape", o.shape},
                           {"status", o.status},
                           {"ran", o.ran},
                           {"exact", o.exact},
                           {"cycles", o.cycles},
                           {"mxu_busy", o.mxu_busy},
                           {"dma_in", o.dma_in},
                           {"dma_out", o.dma_out},
                           {"macs", o.macs},
                           {"utilization", o.utilization},
                           {"ideal", o.ideal},
                           {"scalesim", o.scalesim},
                           {"wall", o.wall}});
  // 17 digits: the values read back bit for bit.
  return tpu::json_document(j, 17, tpu::JsonRows::BlockAlways) + "\n";
}

LayerOutcome outcome_of(const tpusim::JsonValue& lj) {
  LayerOutcome o;
  o.index = size_t(lj.at("index").u64());
  o.name = lj.at("name").str();
  o.shape = lj.at("shape").str();
  o.status = lj.at("status").str();
  o.ran = lj.at("ran").flag();
  o.exact = lj.at("exact").flag();
  o.cycles = lj.at("cycles").u64();
  o.mxu_busy = lj.at("mxu_busy").u64();
  o.dma_in = lj.at("dma_in").u64();
  o.dma_out = lj.at("dma_out").u64();
  o.macs = lj.at("macs").i64();
  o.utilization = lj.at("utilization").number();
  o.ideal = lj.at("ideal").number();
  o.scalesim = lj.at("scalesim").number();
  o.wall = lj.at("wall").number();
  return o;
}

// The shards of one run, in any order, as the run of one process. Throws std::runtime_error
// naming the shard that is not part of the run, missing or repeated.
TopoRun merge_shards(const std::vector<std::string>& texts, const std::vector<std::string>& names) {
  const tpusim::ShardSet set = tpusim::read_shards(
      texts, names, kTopologyShardFormat, "run-topology",
      {"topology", "backend", "total_layers", "from", "to", "chip_n", "batch", "seed"});
  const tpusim::JsonValue& p0 = set.parts.front();
  TopoRun r;
  r.file = p0.at("topology").str();
  r.gemm = p0.at("gemm").flag();
  r.total_layers = size_t(p0.at("total_layers").u64());
  r.from = size_t(p0.at("from").u64());
  r.to = size_t(p0.at("to").u64());
  r.n = uint32_t(p0.at("chip_n").u64());
  r.backend = p0.at("backend").str();
  r.batch = uint32_t(p0.at("batch").u64());
  r.seed = p0.at("seed").u64();
  for (size_t k = 0; k < set.parts.size(); ++k) {
    for (const auto& lj : set.parts[k].at("layers").array()) {
      LayerOutcome o = outcome_of(lj);
      if (o.index != r.from + r.layers.size())
        throw std::runtime_error(set.names[k] + ": layer " + std::to_string(o.index) +
                                 " where layer " + std::to_string(r.from + r.layers.size()) +
                                 " was expected (the shards must cover the layers in order)");
      r.layers.push_back(std::move(o));
    }
  }
  if (r.layers.size() != r.to - r.from)
    throw std::runtime_error("merge: the shards hold " + std::to_string(r.layers.size()) +
                             " layers, expected " + std::to_string(r.to - r.from));
  return r;
}

// A whole run (one process's, or merged from shards) as one process prints it.
int print_run(const TopoRun& r, bool json, double wall) {
  std::FILE* info = json ? stderr : stdout;
  print_header(info, r, json);
  if (!json)
    for (const auto& o : r.layers) print_row(o, r.batch);
  return print_result(r, json, wall);
}

// --layers FROM:TO of a file of `layers` layers (default: all of them).
std::pair<size_t, size_t> layers_range(const std::string& text, size_t layers) {
  size_t from = 0, to = layers;
  if (text.empty()) return {from, to};
  const size_t colon = text.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    size_t u1 = 0, u2 = 0;
    const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
    from = std::stoul(a, &u1);
    to = std::stoul(b, &u2);
    if (u1 != a.size() || u2 != b.size() || a[0] == '-' || b[0] == '-')
      throw std::invalid_argument("junk");
  } catch (const std::exception&) {
    throw tpusim::UsageError("--layers " + text +
                             ": expected FROM:TO (layer numbers counted from 0, TO excluded)");
  }
  if (from >= to || to > layers)
    throw tpusim::UsageError("--layers " + text +
                             ": expected 0 <= FROM < TO <= " + std::to_string(layers) +
                             " (the file has " + std::to_string(layers) + " layers)");
  return {from, to};
}

int run_run_topology(const tpusim::Args& args) {
  namespace po = tpusim::po;
  std::string file, layers_range_text;
  bool json = false;
  tpusim::DeviceOptions dev_opts;
  po::options_description opts("options");
  opts.add_options()("batch", po::value<std::string>()->default_value("1"),
                     "images per layer run, 1..64 (SCALE-Sim's topologies are per image)")(
      "seed", po::value<std::string>()->default_value("1"),
      "seed of the random weights and inputs (layer i uses seed + i)")(
      "layers", po::value<std::string>(&layers_range_text),
      "FROM:TO: only the layers FROM..TO-1 of the file (counted from 0)")(
      "json", po::bool_switch(&json), "print one JSON object")(
      "file", po::value<std::string>(&file), "SCALE-Sim topology CSV");
  tpusim::add_memory_options(opts);
  tpusim::add_device_options(opts, dev_opts, /*with_vcd=*/false, tpusim::kDerivedMaxCycles);
  tpusim::add_shard_options(opts);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim run-topology FILE.csv [--batch B] [--seed S] [--layers FROM:TO] [--json] "
          "[--jobs J | --shard I/K]",
          "Reads a SCALE-Sim topology CSV (convolutions: Layer name, IFMAP Height, IFMAP Width, "
          "Filter Height, Filter Width, Channels, Num Filter, Strides, the IFMAP sizes including "
          "padding; or GEMM: Layer, M, N, K, run as a 1x1 convolution of M pixels with K channels "
          "and N filters), builds each layer with random int8 weights, biases and inputs, runs it "
          "on the chip alone (weights and input from host memory, output back), checks it "
          "against the integer reference, and prints per layer the chip's cycles and MXU "
          "utilization next to SCALE-Sim's weight-stationary estimate for the same array. Exit "
          "code 1 if a layer differs from the reference or the chip fails; layers the compiler "
          "cannot place on this chip are reported as not run. --jobs J, --shard I/K (then "
          "tpusim merge) and mpirun split the layers across processes with the same output.",
          opts, pos, vm)) {
    return 0;
  }
  if (file.empty()) throw tpusim::UsageError("expected the topology file (FILE.csv)");
  const uint32_t batch = uint32_t(tpusim::int_option(vm, "batch", 1, 64));
  const uint64_t seed = uint64_t(tpusim::int_option(vm, "seed", 0, int64_t{1} << 62));
  const std::vector<TopoLayer> topo = read_topology(file);
  const auto [from, to] = layers_range(layers_range_text, topo.size());
  tpusim::ShardPlan plan = tpusim::shard_plan(vm);
  tpusim::cap_jobs(plan, to - from, "layer", "layers");
  using Mode = tpusim::ShardPlan::Mode;
  const auto t0 = tpusim::Clock::now();
  tpusim::ShardedCommand command;
  command.name = "run-topology";
  command.args = args;
  command.merge_and_print = [&](const std::vector<std::string>& texts,
                                const std::vector<std::string>& names, double wall) {
    return print_run(merge_shards(texts, names), json, wall);
  };
  if (plan.mode == Mode::Jobs) return tpusim::run_jobs_and_merge(command, plan, t0);

  auto dev = tpusim::open_device(dev_opts, vm);
  TopoRun run;
  run.file = file;
  run.gemm = topo[0].gemm;
  run.total_layers = topo.size();
  run.from = from;
  run.to = to;
  run.n = dev->params().N;
  run.backend = std::string(dev->backend());
  run.batch = batch;
  run.seed = seed;
  const bool single = plan.mode == Mode::Single;
  const tpu::ShardSpec shard = single ? tpu::ShardSpec{} : plan.shard;
  const tpu::ShardRange mine = tpu::shard_range(to - from, shard);
  std::FILE* info = json ? stderr : stdout;
  if (single) print_header(info, run, json);
  const uint64_t max_cycles = dev_opts.max_cycles_given ? dev_opts.max_cycles : 0;
  for (size_t li = from + mine.begin; li < from + mine.end; ++li) {
    tpusim::set_activity("layer " + topo[li].name + " of " + file);
    LayerOutcome o = run_layer(*dev, topo[li], li, batch, seed, max_cycles);
    if (single && !json) print_row(o, batch);
    run.layers.push_back(std::move(o));
  }
  tpusim::finish_device(dev_opts, dev);
  const double wall = std::chrono::duration<double>(tpusim::Clock::now() - t0).count();
  if (single) return print_result(run, json, wall);
  int code = 0;
  for (const auto& o : run.layers) code |= o.failed();
  return tpusim::finish_shard(command, plan, shard_json(run, shard, wall), code, t0);
}

}  // namespace

namespace tpusim {
int print_merged_topology(const std::vector<std::string>& texts,
                          const std::vector<std::string>& names, bool json, double wall) {
  return print_run(merge_shards(texts, names), json, wall);
}
}  // namespace tpusim

TPUSIM_SUBCOMMAND("run-topology",
                  "a SCALE-Sim topology CSV layer by layer on the chip, next to SCALE-Sim's "
                  "WS estimate",
                  run_run_topology);

#endif  // __has_include("runner.h")
