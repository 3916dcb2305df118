// SPDX-License-Identifier: Apache-2.0
// tpusim allreduce: an all-reduce over a pod of chips joined by inter-chip links (issue 31,
// docs/pod.md), run on the pod of golden models (driver/pod.h) or, with --backend rtl, on the pod
// of Verilated RTL chips (sim/pod_rtl.h through cmd_allreduce.h's backend, checked bit for bit
// against the golden pod as well), checked against the host reference, reported the way
// nccl-tests reports collectives (algbw, busbw).
#include "cmd_allreduce.h"

#include <chrono>
#include <iostream>
#include <random>
#include <sstream>

#include "collectives.h"
#include "fp.h"
#include "json_text.h"
#include "pod.h"
#include "sharding.h"
#include "tpusim.h"

namespace {

constexpr int64_t kMaxChips = 64;

struct Options {
  uint32_t chips = 2;
  tpu::PodTopology topology;
  tpu::LinkTiming timing;
  tpu::CollectiveDtype dtype = tpu::CollectiveDtype::Fp32;
  tpu::CollectiveKind kind = tpu::CollectiveKind::AllReduce;
  std::vector<uint64_t> sizes;  // bytes per chip
  uint64_t seed = 1;
  bool json = false;
  bool rtl = false;    // --backend rtl
  uint32_t ranks = 1;  // --backend rtl under mpirun: the ranks the pod runs over
};

struct Measurement {
  uint64_t bytes = 0;
  uint64_t cycles = 0;
  double algbw = 0, busbw = 0;
  bool correct = false;
  std::string error;  // the pod's fault, if any
  // --backend rtl: the golden pod's estimate, whether every chip's VMEM rows equal the golden
  // pod's bit for bit, and the RTL pod's simulated cycles per second.
  uint64_t model_cycles = 0;
  bool matches_golden = false;
  double cycles_per_second = 0;
  uint64_t link_beats = 0;  // beats on every link direction
};

}  // namespace

namespace tpusim {
const PodRtlBackend*& pod_rtl_backend() {
  static const PodRtlBackend* backend = nullptr;
  return backend;
}
}  // namespace tpusim

namespace {

// Bytes per chip a buffer may have: the whole VMEM.
uint64_t capacity(const tpu::ChipParams& p) { return uint64_t{p.vmem_rows} * 4 * p.N; }

std::vector<uint64_t> parse_sizes(const std::string& text, uint64_t max_bytes) {
  std::vector<uint64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != 0 || item[0] == '-' || v == 0 || v % 4 != 0 || v > max_bytes) {
      throw tpusim::UsageError("--bytes: '" + item +
                               "' is not a size (expected a multiple of 4 in "
                               "4.." +
                               std::to_string(max_bytes) +
                               ": the 32-bit elements per chip must fit VMEM; a comma-separated "
                               "list for several sizes)");
    }
    out.push_back(v);
  }
  if (out.empty()) throw tpusim::UsageError("--bytes: no size given");
  return out;
}

// Sizes of --sweep: 1 KiB, 2 KiB, ... up to the VMEM capacity.
std::vector<uint64_t> sweep_sizes(uint64_t max_bytes) {
  std::vector<uint64_t> out;
  for (uint64_t s = 1024; s <= max_bytes; s *= 2) out.push_back(s);
  return out;
}

const char* kind_name(tpu::CollectiveKind k) {
  switch (k) {
    case tpu::CollectiveKind::ReduceScatter:
      return "reduce-scatter";
    case tpu::CollectiveKind::AllGather:
      return "all-gather";
    case tpu::CollectiveKind::AllReduce:
      break;
  }
  return "all-reduce";
}

std::vector<tpu::Instruction> program(const Options& o, const tpu::ChipParams& params, uint32_t r,
                                      uint32_t rows) {
  switch (o.kind) {
    case tpu::CollectiveKind::ReduceScatter:
      return tpu::reduce_scatter_program(o.topology, params, r, 0, rows, o.dtype);
    case tpu::CollectiveKind::AllGather:
      return tpu::all_gather_program(o.topology, params, r, 0, rows);
    case tpu::CollectiveKind::AllReduce:
      break;
  }
  return tpu::all_reduce_program(o.topology, params, r, 0, rows, o.dtype);
}

// Does chip r hold what the reference says (the first `elements` lanes; reduce-scatter: only
// chip r's block, collectives.h scatter_block)?
bool chip_matches(const Options& o, const tpu::ChipParams& params, const std::vector<uint32_t>& got,
                  uint32_t r, uint32_t rows, uint64_t elements, const std::vector<uint32_t>& want) {
  uint64_t lo = 0, hi = elements;
  if (o.kind == tpu::CollectiveKind::ReduceScatter) {
    const tpu::Chunk c = tpu::scatter_block(o.topology, rows, r);
    lo = uint64_t{c.first} * params.N;
    hi = std::min<uint64_t>(elements, uint64_t{c.first + c.count} * params.N);
  }
  for (uint64_t e = lo; e < hi; ++e) {
    if (got[e] != want[e]) return false;
  }
  return true;
}

// Is every chip's result what the host reference says?
bool all_correct(const Options& o, const tpu::ChipParams& params,
                 const std::vector<std::vector<uint32_t>>& in,
                 const std::vector<std::vector<uint32_t>>& got, uint32_t rows, uint64_t elements) {
  const std::vector<uint32_t> want =
      o.kind == tpu::CollectiveKind::AllReduce
          ? tpu::reference_all_reduce(o.topology, params.N, in, o.dtype)
      : o.kind == tpu::CollectiveKind::ReduceScatter
          ? tpu::reference_reduce_scatter(o.topology, params.N, in, o.dtype)
          : tpu::reference_all_gather(o.topology, params.N, in);
  bool ok = true;
  for (uint32_t r = 0; r < o.chips; ++r) {
    ok = ok && chip_matches(o, params, got[r], r, rows, elements, want);
  }
  return ok;
}

// The RTL pod's run of the same programs on the same data (the golden pod's result `gold`).
void measure_rtl(const Options& o, const tpu::PodResult& gold,
                 const std::vector<std::vector<uint32_t>>& gold_vmem,
                 const std::vector<std::vector<uint32_t>>& in,
                 const std::vector<std::vector<tpu::Instruction>>& programs, uint32_t rows,
                 uint64_t elements, Measurement* m) {
  const tpusim::PodRtlBackend& backend = *tpusim::pod_rtl_backend();
  const tpusim::PodRtlRun run = backend.run(o.topology, o.timing.latency, in, programs, rows);
  m->model_cycles = gold.cycles;
  m->cycles = run.cycles;
  m->link_beats = run.link_beats;
  m->error = run.error;
  m->cycles_per_second =
      run.sim_seconds > 0 ? static_cast<double>(run.cycles) / run.sim_seconds : 0.0;
  if (!run.error.empty()) return;
  m->matches_golden = gold.ok() && run.vmem == gold_vmem;
  m->correct = all_correct(o, backend.params(), in, run.vmem, rows, elements);
}

Measurement measure(const Options& o, const tpu::ChipParams& params, uint64_t bytes) {
  const uint64_t elements = bytes / 4;
  const auto rows = static_cast<uint32_t>((elements + params.N - 1) / params.N);
  tpu::PodModel pod(o.topology, params, o.timing);
  std::mt19937_64 rng(o.seed ^ bytes);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<std::vector<uint32_t>> in(o.chips, std::vector<uint32_t>(size_t{rows} * params.N, 0));
  std::vector<std::vector<tpu::Instruction>> programs;
  for (uint32_t r = 0; r < o.chips; ++r) {
    for (uint64_t e = 0; e < elements; ++e) {
      in[r][e] = o.dtype == tpu::CollectiveDtype::Fp32 ? tpu::fp::bits_of(value(rng))
                                                       : static_cast<uint32_t>(rng());
    }
    pod.chip(r).set_vmem_rows(0, in[r]);
    programs.push_back(program(o, params, r, rows));
  }
  const tpu::PodResult res = pod.run(programs);
  std::vector<std::vector<uint32_t>> got;
  for (uint32_t r = 0; r < o.chips; ++r) got.push_back(pod.chip(r).vmem_rows(0, rows));
  Measurement m;
  m.bytes = bytes;
  if (o.rtl) {
    measure_rtl(o, res, got, in, programs, rows, elements, &m);
  } else {
    m.cycles = res.cycles;
    m.error = res.message;
    m.correct = res.ok() && all_correct(o, params, in, got, rows, elements);
  }
  m.algbw = m.cycles == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(m.cycles);
  m.busbw = m.algbw * tpu::busbw_factor(o.kind, o.chips);
  return m;
}

nlohmann::ordered_json row(const Measurement& m, const Options& o) {
  nlohmann::ordered_json j;
  j["bytes"] = m.bytes;
  j["cycles"] = m.cycles;
  j["algbw"] = m.algbw;
  j["busbw"] = m.busbw;
  j["busbw_of_peak"] = m.busbw / o.timing.bytes_per_cycle;
  j["correct"] = m.correct;
  if (o.rtl) {
    j["model_cycles"] = m.model_cycles;
    j["rtl_over_model"] = m.model_cycles == 0
                              ? 0.0
                              : static_cast<double>(m.cycles) / static_cast<double>(m.model_cycles);
    j["matches_golden"] = m.matches_golden;
    j["link_beats"] = m.link_beats;
    j["sim_cycles_per_second"] = m.cycles_per_second;
  }
  if (!m.error.empty()) j["error"] = m.error;
  return j;
}

void print_text(const Options& o, const std::vector<Measurement>& ms) {
  std::cout << kind_name(o.kind) << " of " << tpu::dtype_name(o.dtype) << " over " << o.chips
            << " chips (" << o.topology.name() << "), links " << o.timing.bytes_per_cycle
            << " bytes/cycle, latency " << o.timing.latency
            << (o.ranks > 1 ? " (the RTL pod over " + std::to_string(o.ranks) + " MPI ranks)" : "")
            << (o.rtl ? " cycles; cycles are the RTL pod's (cycle-accurate), model = the golden "
                        "pod's estimate\n"
                      : " cycles; cycles are the pod model's estimate\n");
  std::printf("%12s %12s %12s %12s %8s", "bytes", "cycles", "algbw", "busbw", "of peak");
  if (o.rtl) std::printf(" %12s %7s %7s", "model", "ratio", "golden");
  std::printf(" %s\n", "check");
  for (const Measurement& m : ms) {
    std::printf("%12llu %12llu %12.3f %12.3f %7.1f%%", static_cast<unsigned long long>(m.bytes),
                static_cast<unsigned long long>(m.cycles), m.algbw, m.busbw,
                100.0 * m.busbw / o.timing.bytes_per_cycle);
    if (o.rtl) {
      std::printf(" %12llu %7.3f %7s", static_cast<unsigned long long>(m.model_cycles),
                  m.model_cycles == 0
                      ? 0.0
                      : static_cast<double>(m.cycles) / static_cast<double>(m.model_cycles),
                  m.matches_golden ? "same" : "DIFFER");
    }
    std::printf(" %s\n", m.correct ? "ok" : ("FAILED " + m.error).c_str());
  }
}

void print_json(const Options& o, const std::vector<Measurement>& ms, bool sweep, bool all_ok,
                double wall) {
  nlohmann::ordered_json j;
  j["collective"] = kind_name(o.kind);
  j["chips"] = o.chips;
  j["topology"] = o.topology.name();
  j["dtype"] = std::string(tpu::dtype_name(o.dtype));
  j["backend"] = o.rtl ? "rtl" : "model";
  if (o.rtl) j["ranks"] = o.ranks;
  j["cycles_estimated"] = !o.rtl;
  j["cycles_note"] =
      o.rtl ? "the RTL pod's cycles (Verilated chips, cycle-accurate links), START to the last "
              "chip's halt; model_cycles = the golden pod's estimate of the same programs"
            : "the pod model's estimate (latency + bytes / bandwidth per transfer); --backend rtl "
              "runs the cycle-accurate RTL pod";
  j["bw_unit"] = "bytes/cycle";
  j["ici_bandwidth"] = o.timing.bytes_per_cycle;
  j["ici_latency"] = o.timing.latency;
  j["link_peak"] = o.timing.bytes_per_cycle;
  j["busbw_factor"] = tpu::busbw_factor(o.kind, o.chips);
  if (ms.size() == 1 && !sweep) {
    const nlohmann::ordered_json one = row(ms[0], o);
    for (auto it = one.begin(); it != one.end(); ++it) j[it.key()] = it.value();
  } else {
    j["results"] = nlohmann::ordered_json::array();
    for (const Measurement& m : ms) j["results"].push_back(row(m, o));
  }
  j["correct"] = all_ok;
  if (o.rtl) {
    bool same = true;
    for (const Measurement& m : ms) same = same && m.matches_golden;
    j["matches_golden"] = same;
  }
  j["wall_seconds"] = wall;
  std::cout << tpu::json_document(j) << "\n";
}

// The pod, link timing, data and collective options into o (throws UsageError naming the bad
// option).
void read_pod_options(const tpusim::po::variables_map& vm, const std::string& topology,
                      const std::string& dtype, const std::string& collective, Options* o) {
  o->chips = static_cast<uint32_t>(tpusim::int_option(vm, "chips", 1, kMaxChips));
  o->timing.bytes_per_cycle =
      static_cast<uint32_t>(tpusim::int_option(vm, "ici-bandwidth", 1, 4096));
  o->timing.latency = static_cast<uint32_t>(tpusim::int_option(vm, "ici-latency", 0, 1000000));
  o->seed = static_cast<uint64_t>(tpusim::int_option(vm, "seed", 0, INT64_MAX));
  if (dtype != "fp32" && dtype != "int32") {
    throw tpusim::UsageError("--dtype '" + dtype + "' (expected fp32 or int32)");
  }
  o->dtype = dtype == "fp32" ? tpu::CollectiveDtype::Fp32 : tpu::CollectiveDtype::Int32;
  if (collective == "reduce-scatter") {
    o->kind = tpu::CollectiveKind::ReduceScatter;
  } else if (collective == "all-gather") {
    o->kind = tpu::CollectiveKind::AllGather;
  } else if (collective != "all-reduce") {
    throw tpusim::UsageError("--collective '" + collective +
                             "' (expected all-reduce, reduce-scatter or all-gather)");
  }
  try {
    o->topology = tpu::PodTopology::parse(topology, o->chips);
  } catch (const std::invalid_argument& e) {
    throw tpusim::UsageError(std::string("--topology: ") + e.what());
  }
}

// --backend rtl: the links are the Verilated chip's (IciWidth / 8 bytes per cycle); latency >= 1.
void check_rtl_options(const tpusim::po::variables_map& vm, const tpusim::PodRtlBackend& b,
                       Options* o) {
  if (vm["ici-bandwidth"].defaulted()) {
    o->timing.bytes_per_cycle = b.bytes_per_cycle;
  } else if (o->timing.bytes_per_cycle != b.bytes_per_cycle) {
    throw tpusim::UsageError("--ici-bandwidth " + std::to_string(o->timing.bytes_per_cycle) +
                             " with --backend rtl: the RTL pod's links are " +
                             std::to_string(b.bytes_per_cycle) +
                             " bytes per cycle (IciWidth of tpu_pod_rtl_n4)");
  }
  if (o->timing.latency == 0) {
    throw tpusim::UsageError("--ici-latency 0 with --backend rtl: the RTL pod's links need >= 1");
  }
  if (o->topology.links_needed() > b.params().ici_links) {
    throw tpusim::UsageError("--topology " + o->topology.name() + " needs " +
                             std::to_string(o->topology.links_needed()) +
                             " links; the RTL pod's chip has " +
                             std::to_string(b.params().ici_links));
  }
}

int run_allreduce(const tpusim::Args& args) {
  namespace po = tpusim::po;
  const auto t_start = std::chrono::steady_clock::now();
  Options o;
  bool sweep = false;
  std::string backend = "model", topology = "ring", dtype = "fp32", collective = "all-reduce";
  po::options_description opts("options");
  opts.add_options()("chips", po::value<std::string>()->required(), "chips in the pod, 1..64")(
      "bytes", po::value<std::string>(),
      "bytes per chip (fp32/int32 elements x 4), a multiple of 4 up to the VMEM (524288 at "
      "N = 16); a comma-separated list for several sizes")(
      "sweep", po::bool_switch(&sweep),
      "sizes 1 KiB, 2 KiB, ... up to the VMEM (instead of --bytes)")(
      "topology", po::value<std::string>(&topology)->default_value("ring"),
      "ring, or torus:XxY (X*Y = chips; the 2-D algorithms)")(
      "ici-bandwidth", po::value<std::string>()->default_value("16"),
      "link bandwidth in bytes per cycle and direction, 1..4096")(
      "ici-latency", po::value<std::string>()->default_value("64"),
      "link latency in cycles, 0..1000000")(
      "dtype", po::value<std::string>(&dtype)->default_value("fp32"), "fp32 or int32")(
      "collective", po::value<std::string>(&collective)->default_value("all-reduce"),
      "all-reduce, reduce-scatter or all-gather")(
      "seed", po::value<std::string>()->default_value("1"), "random seed of the data")(
      "backend", po::value<std::string>(&backend)->default_value("model"),
      "model (the pod of golden models) or rtl (the pod of Verilated chips, N = 4, checked "
      "against the golden pod; in tpusim only)")("json", po::bool_switch(&o.json),
                                                 "print one JSON object");
  po::variables_map vm;
  if (!tpusim::parse_options(
          args,
          "tpusim allreduce --chips P (--bytes S[,S2...] | --sweep) [--topology ring|torus:XxY] "
          "[--ici-bandwidth B] [--ici-latency C] [--dtype fp32|int32] "
          "[--collective all-reduce|reduce-scatter|all-gather] [--backend model|rtl] [--json]",
          "All-reduces (sum; or --collective reduce-scatter / all-gather) a random vector of S "
          "bytes per chip over a pod of P chips joined by "
          "inter-chip links (ring, or a 2-D torus with the 2-D algorithms), as chip programs of "
          "ici_send / ici_recv on the pod of golden models, and checks every chip's result bit "
          "for bit against the host reference (docs/pod.md). cycles are the pod model's "
          "ESTIMATE (latency + bytes / bandwidth per transfer), not a cycle-accurate "
          "simulation; --backend rtl runs the same programs on the pod of Verilated RTL chips "
          "(cycle-accurate; its final VMEM is compared bit for bit with the golden pod's: "
          "matches_golden). algbw = S / cycles and busbw = algbw * 2(P-1)/P (reduce-scatter, "
          "all-gather: (P-1)/P) in bytes per cycle "
          "(nccl-tests' definitions); busbw_of_peak = busbw / --ici-bandwidth. Exit code 1 on a "
          "mismatch or a fault.",
          opts, {}, vm)) {
    return 0;
  }
  if (backend != "model" && backend != "rtl") {
    throw tpusim::UsageError("--backend '" + backend +
                             "' is not a backend (expected model or rtl)");
  }
  o.rtl = backend == "rtl";
  const tpusim::PodRtlBackend* pod_rtl = tpusim::pod_rtl_backend();
  if (o.rtl && pod_rtl == nullptr) {
    throw std::runtime_error(
        "--backend rtl: the pod of RTL chips is not built into this binary (it is in `tpusim`, "
        "which links tpu_pod_rtl_n4; docs/pod.md); use tpusim or --backend model");
  }
  read_pod_options(vm, topology, dtype, collective, &o);
  if (o.rtl) check_rtl_options(vm, *pod_rtl, &o);
  const tpu::ChipParams params =
      o.rtl ? pod_rtl->params()
            : tpu::ChipParams::pod(tpu::RtlDevice::compiled_n(), o.topology.links_needed());
  if (sweep == (vm.count("bytes") != 0)) {
    throw tpusim::UsageError("give exactly one of --bytes and --sweep");
  }
  o.sizes = sweep ? sweep_sizes(capacity(params))
                  : parse_sizes(vm["bytes"].as<std::string>(), capacity(params));

  if (o.rtl && pod_rtl->ranks != nullptr) o.ranks = pod_rtl->ranks();
  std::vector<Measurement> ms;
  bool all_ok = true;
  for (uint64_t s : o.sizes) {
    ms.push_back(measure(o, params, s));
    all_ok = all_ok && ms.back().correct && (!o.rtl || ms.back().matches_golden);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  if (o.rtl && pod_rtl->rank != nullptr && pod_rtl->rank() != 0) return all_ok ? 0 : 1;
  // The golden pod is one process's computation: under mpirun / srun every rank runs it (the
  // same result) and rank 0 alone prints, so the job prints one report.
  if (!o.rtl && tpusim::launched_by_mpi() && tpusim::mpi_shard().index != 0) return all_ok ? 0 : 1;
  if (!o.json) {
    print_text(o, ms);
    return all_ok ? 0 : 1;
  }
  print_json(o, ms, sweep, all_ok, wall);
  return all_ok ? 0 : 1;
}

}  // namespace

TPUSIM_SUBCOMMAND("allreduce", "all-reduce over a pod of chips (golden pod or RTL pod)",
                  run_allreduce);
