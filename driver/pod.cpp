// SPDX-License-Identifier: Apache-2.0
#include "pod.h"

#include <algorithm>
#include <cinttypes>
#include <stdexcept>
#include <utility>
#include <variant>

#include "fp.h"
#include "host_memory.h"
#include "text.h"

namespace tpu {

using detail::format;

// ---- topology

PodTopology PodTopology::ring(uint32_t chips) {
  if (chips == 0) throw std::invalid_argument("pod: a ring needs at least 1 chip");
  return PodTopology{chips, 1, false};
}

PodTopology PodTopology::torus(uint32_t x, uint32_t y) {
  if (x == 0 || y == 0) {
    throw std::invalid_argument(format("pod: torus %ux%u (expected both sizes >= 1)", x, y));
  }
  return PodTopology{x, y, true};
}

PodTopology PodTopology::parse(std::string_view text, uint32_t chips) {
  if (text == "ring") return ring(chips);
  const std::string t(text);
  unsigned x = 0, y = 0;
  char tail = 0;
  if (t.rfind("torus:", 0) != 0 || std::sscanf(t.c_str() + 6, "%ux%u%c", &x, &y, &tail) != 2 ||
      x == 0 || y == 0) {
    throw std::invalid_argument("topology '" + t +
                                "' is not valid (expected ring or torus:XxY, e.g. torus:2x4)");
  }
  if (uint64_t{x} * y != chips) {
    throw std::invalid_argument(
        format("topology %s has %u chips, but --chips is %u (expected "
               "X*Y = chips)",
               t.c_str(), x * y, chips));
  }
  return torus(x, y);
}

std::string PodTopology::name() const {
  return is_torus ? format("torus:%ux%u", x, y) : std::string("ring");
}

std::optional<PodTopology::End> PodTopology::peer(uint32_t chip, uint32_t link) const {
  if (chip >= chips() || link > kLinkYMinus) return std::nullopt;
  const uint32_t cx = chip % x, cy = chip / x;
  const bool along_x = link <= kLinkXMinus;
  const uint32_t size = along_x ? x : y;
  if (size < 2) return std::nullopt;
  const bool plus = link == kLinkXPlus || link == kLinkYPlus;
  const uint32_t step = plus ? 1 : size - 1;
  const uint32_t nx = along_x ? (cx + step) % x : cx;
  const uint32_t ny = along_x ? cy : (cy + step) % y;
  // +x joins the neighbour's -x and the other way round (likewise y).
  return End{ny * x + nx, link ^ 1u};
}

bool PodResult::ok() const {
  return std::all_of(chips.begin(), chips.end(), [](const RunResult& r) { return r.done(); });
}

namespace {

// ---- VMEM footprints (isa.md "Ordering": bounding intervals of rows read and written)

struct Range {
  uint64_t lo = 1, hi = 0;  // empty when lo > hi
  bool empty() const { return lo > hi; }
};
bool overlaps(const Range& a, const Range& b) {
  return !a.empty() && !b.empty() && a.lo <= b.hi && b.lo <= a.hi;
}
Range rows_range(uint64_t first, uint64_t count) { return Range{first, first + count - 1}; }

struct Footprint {
  Range read[2];
  Range write;
};

Footprint vector_footprint(const Vector& v) {
  Footprint f;
  const uint32_t o = v.outer - 1u, i = v.inner - 1u;
  f.write = Range{v.dst, v.dst_row(o, i)};
  const bool align_next = v.vec_func() == VecFunc::Align && v.b > 0;
  f.read[0] = Range{v.a, v.a_row(o, i) + (align_next ? 1 : 0)};
  if (v.bmode != BMode::Imm && !is_unary_vec_func(v.func)) {
    // One bounding interval of the rows read, A's and B's together (isa.md "Ordering", as the
    // RTL's decoder computes it): rows between A and B count as read, so a vector instruction
    // waits for a link instruction writing them (found by tests/pod/random_pod_rtl_test.cpp:
    // with separate intervals the pod model let such an instruction run where the RTL waits,
    // and a deadlock then stopped different instructions).
    f.read[0].lo = std::min<uint64_t>(f.read[0].lo, v.b);
    f.read[0].hi = std::max<uint64_t>(f.read[0].hi, v.b_row(o, i));
  }
  return f;
}

Footprint vmem_footprint(const Instruction& in, uint32_t n) {
  Footprint f;
  if (const auto* rv = std::get_if<ReadVmem>(&in)) {
    f.write = rows_range(rv->vmem_addr, rv->rows);
  } else if (const auto* wv = std::get_if<WriteVmem>(&in)) {
    f.read[0] = rows_range(wv->vmem_addr, wv->rows);
  } else if (const auto* lw = std::get_if<LoadWeights>(&in)) {
    f.read[0] = Range{lw->vmem_addr, lw->last_row()};
  } else if (const auto* mb = std::get_if<MatmulBf16>(&in)) {
    f.read[0] = Range{mb->vmem_addr, mb->last_vmem_row()};
  } else if (const auto* av = std::get_if<AccToVmem>(&in)) {
    f.write = rows_range(av->vmem_addr, av->rows);
  } else if (const auto* tr = std::get_if<Transpose>(&in)) {
    f.read[0] = Range{tr->src, tr->last_src_row(n)};
    f.write = Range{tr->dst, tr->last_dst_row(n)};
  } else if (const auto* v = std::get_if<Vector>(&in)) {
    f = vector_footprint(*v);
  } else if (const auto* s = std::get_if<IciSend>(&in)) {
    f.read[0] = rows_range(s->vmem_addr, s->rows);
  } else if (const auto* r = std::get_if<IciRecv>(&in)) {
    f.write = rows_range(r->vmem_addr, r->rows);
    if (r->reduce != 0) f.read[0] = f.write;
  }
  return f;
}

// The model's estimate of a unit's busy cycles for an instruction (pod.h).
uint64_t unit_cycles(const Instruction& in, const ChipParams& p) {
  // DMA bytes per cycle: the device-memory port as in device_model.cpp (half a beat), and
  // read_vmem / write_vmem on the VMEM port when the chip has one (ChipParams::vmem_port_bytes).
  const uint64_t rate = std::max<uint64_t>(1, p.axi_width / 16);
  const uint64_t vrate = p.vmem_port_bytes != 0 ? p.vmem_port_bytes : rate;
  auto dma = [](uint64_t bytes, uint64_t r) { return (bytes + r - 1) / r; };
  if (const auto* rh = std::get_if<ReadHost>(&in)) return dma(uint64_t{rh->rows} * p.N, rate);
  if (const auto* wh = std::get_if<WriteHost>(&in)) return dma(uint64_t{wh->rows} * p.N, rate);
  if (const auto* rw = std::get_if<ReadWeights>(&in))
    return dma(uint64_t{rw->tiles} * p.N * p.N, rate);
  if (const auto* rv = std::get_if<ReadVmem>(&in))
    return dma(rv->rows * uint64_t{rv->row_bytes(p.N)}, vrate);
  if (const auto* wv = std::get_if<WriteVmem>(&in))
    return dma(wv->rows * uint64_t{wv->row_bytes(p.N)}, vrate);
  if (const auto* mm = std::get_if<Matmul>(&in)) return uint64_t{mm->inner} * mm->outer;
  if (const auto* mb = std::get_if<MatmulBf16>(&in)) return uint64_t{mb->inner} * mb->outer;
  if (const auto* a = std::get_if<Activate>(&in)) return a->unit_cycles();
  if (const auto* v = std::get_if<Vector>(&in)) return uint64_t{v->inner} * v->outer;
  if (const auto* t = std::get_if<Transpose>(&in)) return uint64_t{t->blocks} * p.N;
  if (const auto* lw = std::get_if<LoadWeights>(&in)) return uint64_t{lw->tiles} * p.N;
  if (const auto* av = std::get_if<AccToVmem>(&in)) return av->rows;
  return 0;
}

// One link instruction in a link engine (issued, partner not yet met).
struct LinkOp {
  bool active = false;
  uint32_t pc = 0;
  uint16_t vmem = 0;
  uint32_t rows = 0;
  uint8_t reduce = 0;
  uint64_t ready = 0;  // estimated cycle it was issued
};

// A finished link instruction that may still delay later ones (its rows land at `done`).
struct FinishedOp {
  Footprint fp;
  uint64_t done = 0;
  bool send = false;
  uint32_t link = 0;
};

enum class ChipState { Running, Done, Error };

struct Chip {
  ChipState state = ChipState::Running;
  uint32_t pc = 0;
  uint64_t t = 0;  // estimated cycle of the next issue
  std::vector<LinkOp> send, recv;
  std::vector<FinishedOp> finished;
  RunResult result;

  bool any_pending() const {
    auto act = [](const LinkOp& o) { return o.active; };
    return std::any_of(send.begin(), send.end(), act) || std::any_of(recv.begin(), recv.end(), act);
  }
  Footprint footprint(const LinkOp& o, bool is_send) const {
    Footprint f;
    if (is_send) {
      f.read[0] = rows_range(o.vmem, o.rows);
    } else {
      f.write = rows_range(o.vmem, o.rows);
      if (o.reduce != 0) f.read[0] = f.write;
    }
    return f;
  }
};

// Does an instruction with footprint `x` have to wait for one with footprint `y` (RAW, WAR,
// WAW on VMEM rows)?
bool conflicts(const Footprint& x, const Footprint& y) {
  for (const Range& r : x.read) {
    if (overlaps(r, y.write)) return true;
  }
  for (const Range& r : y.read) {
    if (overlaps(x.write, r)) return true;
  }
  return overlaps(x.write, y.write);
}

}  // namespace

// ---- the pod

struct PodModel::Impl {
  std::vector<std::unique_ptr<RegionMemory>> memory;
  std::vector<std::unique_ptr<GoldenModel>> models;
};

PodModel::PodModel(const PodTopology& topology, const ChipParams& params, const LinkTiming& timing)
    : topology_(topology), params_(params), timing_(timing), impl_(std::make_unique<Impl>()) {
  params_.validate();
  if (topology_.chips() == 0) throw std::invalid_argument("pod: 0 chips (expected >= 1)");
  if (params_.ici_links < topology_.links_needed()) {
    throw std::invalid_argument(
        format("pod: topology %s needs %u links per chip, but the chip "
               "has IciLinks = %u",
               topology_.name().c_str(), topology_.links_needed(), params_.ici_links));
  }
  if (timing_.bytes_per_cycle == 0) {
    throw std::invalid_argument("pod: link bandwidth 0 bytes per cycle (expected >= 1)");
  }
  for (uint32_t r = 0; r < topology_.chips(); ++r) {
    impl_->memory.push_back(std::make_unique<RegionMemory>());
    impl_->models.push_back(std::make_unique<GoldenModel>(*impl_->memory.back(), params_));
  }
}

PodModel::~PodModel() = default;

uint32_t PodModel::chips() const { return topology_.chips(); }

GoldenModel& PodModel::chip(uint32_t r) {
  if (r >= chips()) {
    throw std::out_of_range(format("pod: chip %u (the pod has %u chips)", r, chips()));
  }
  return *impl_->models[r];
}

RegionMemory& PodModel::memory(uint32_t r) {
  chip(r);  // the range check
  return *impl_->memory[r];
}

namespace {

// The scheduler of one run (PodModel::run).
class PodRun {
 public:
  PodRun(const PodTopology& topo, const ChipParams& p, const LinkTiming& timing,
         std::vector<std::unique_ptr<GoldenModel>>& models,
         const std::vector<std::vector<Instruction>>& programs)
      : topo_(topo), p_(p), timing_(timing), models_(models), programs_(programs) {
    chips_.resize(topo.chips());
    for (Chip& c : chips_) {
      c.send.resize(p.ici_links);
      c.recv.resize(p.ici_links);
    }
    link_free_.assign(size_t{topo.chips()} * p.ici_links, 0);
  }

  PodResult run() {
    for (auto& m : models_) m->soft_reset();
    for (;;) {
      bool progress = false;
      for (uint32_t r = 0; r < chips_.size(); ++r) {
        while (step(r)) progress = true;
      }
      if (match_all()) progress = true;
      if (progress) continue;
      if (!report_deadlock()) break;
    }
    PodResult out = result_;
    for (Chip& c : chips_) {
      out.chips.push_back(c.result);
      out.chip_cycles.push_back(c.t);
      out.cycles = std::max(out.cycles, c.t);
      if (!c.result.done()) out.message += (out.message.empty() ? "" : "; ") + c.result.message;
    }
    return out;
  }

 private:
  void fault(uint32_t r, uint32_t pc, ErrorCode code, const std::string& why) {
    Chip& c = chips_[r];
    c.state = ChipState::Error;
    c.result.status = RunStatus::Error;
    c.result.error = code;
    c.result.err_pc = pc;
    c.result.message =
        format("chip %u: pc %u: %s: %s", r, pc, std::string(error_name(code)).c_str(), why.c_str());
    // Its sends are abandoned; its receives stay posted (isa.md "Errors of the link
    // instructions"): a message that comes for one is taken and discarded (match_all).
    for (LinkOp& o : c.send) o.active = false;
  }

  // Must an instruction with footprint `f` wait for a link instruction in flight on chip c?
  bool blocked(const Chip& c, const Footprint& f) const {
    for (uint32_t l = 0; l < p_.ici_links; ++l) {
      if (c.send[l].active && conflicts(f, c.footprint(c.send[l], true))) return true;
      if (c.recv[l].active && conflicts(f, c.footprint(c.recv[l], false))) return true;
    }
    return false;
  }

  // The cycle an instruction with footprint `f` can start at: after finished link
  // instructions it conflicts with (all of them for sync / halt), and after the last of the
  // same engine (`engine_send`, `engine_link`; engine_link < 0: none).
  uint64_t start_time(Chip& c, const Footprint& f, bool all, int engine_link, bool engine_send) {
    uint64_t t = c.t;
    for (const FinishedOp& o : c.finished) {
      const bool same_engine =
          engine_link >= 0 && o.link == static_cast<uint32_t>(engine_link) && o.send == engine_send;
      if (all || same_engine || conflicts(f, o.fp)) t = std::max(t, o.done);
    }
    // Finished instructions at or before t can no longer delay anything.
    const uint64_t now = t;
    c.finished.erase(std::remove_if(c.finished.begin(), c.finished.end(),
                                    [&](const FinishedOp& o) { return o.done <= now; }),
                     c.finished.end());
    return t;
  }

  bool step(uint32_t r) {
    Chip& c = chips_[r];
    if (c.state != ChipState::Running) return false;
    const std::vector<Instruction>& prog = programs_[r];
    if (c.pc >= prog.size()) {
      fault(r, c.pc, ErrorCode::ERR_CMD_OVERRUN,
            format("the program ended after %zu instructions without halt", prog.size()));
      return true;
    }
    Instruction in = prog[c.pc];
    if (const auto* raw = std::get_if<RawInstruction>(&in)) {
      DecodeResult d = decode(raw->bytes, p_);
      if (!d.ok()) {
        fault(r, c.pc, d.error, d.why);
        return true;
      }
      in = d.instr;
    }
    if (std::holds_alternative<Halt>(in) || std::holds_alternative<Sync>(in)) {
      if (c.any_pending()) return false;
      c.t = start_time(c, Footprint{}, true, -1, false) + 1;
      ++c.result.retired;
      if (std::holds_alternative<Halt>(in)) {
        c.state = ChipState::Done;
      } else {
        ++c.pc;
      }
      return true;
    }
    if (std::holds_alternative<IciSend>(in) || std::holds_alternative<IciRecv>(in)) {
      return issue_link(r, in);
    }
    // The static checks happen at decode, before the instruction waits for rows (isa.md
    // "Errors"): an instruction that faults statically stops the chip at once, also while
    // link instructions it would wait for are in flight.
    std::string why;
    const ErrorCode se = check(in, p_, models_[r]->dma_windows(), &why);
    if (se != ErrorCode::ERR_NONE) {
      fault(r, c.pc, se, why);
      return true;
    }
    const Footprint f = vmem_footprint(in, p_.N);
    if (blocked(c, f)) return false;
    const uint64_t start = start_time(c, f, false, -1, false);
    const ErrorCode e = models_[r]->execute(in, &why);
    if (e != ErrorCode::ERR_NONE) {
      fault(r, c.pc, e, why);
      return true;
    }
    c.t = start + 1 + unit_cycles(in, p_);
    ++c.result.retired;
    ++c.pc;
    return true;
  }

  bool issue_link(uint32_t r, const Instruction& in) {
    Chip& c = chips_[r];
    std::string why;
    const ErrorCode e = check(in, p_, &why);
    if (e != ErrorCode::ERR_NONE) {
      fault(r, c.pc, e, why);
      return true;
    }
    const auto* s = std::get_if<IciSend>(&in);
    const auto* v = std::get_if<IciRecv>(&in);
    const uint32_t link = s != nullptr ? s->link : v->link;
    const char* name = s != nullptr ? "ici_send" : "ici_recv";
    if (!topo_.peer(r, link)) {
      fault(r, c.pc, ErrorCode::ERR_ICI_LINK,
            format("%s: link %u of chip %u is not connected in topology %s", name, link, r,
                   topo_.name().c_str()));
      return true;
    }
    LinkOp& engine = s != nullptr ? c.send[link] : c.recv[link];
    const Footprint f = vmem_footprint(in, p_.N);
    if (engine.active || blocked(c, f)) return false;
    engine.active = true;
    engine.pc = c.pc;
    engine.vmem = s != nullptr ? s->vmem_addr : v->vmem_addr;
    engine.rows = s != nullptr ? s->rows : v->rows;
    engine.reduce = s != nullptr ? 0 : v->reduce;
    engine.ready = start_time(c, f, false, static_cast<int>(link), s != nullptr);
    c.t = engine.ready + 1;
    ++c.pc;
    return true;
  }

  bool match_all() {
    bool any = false;
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      for (uint32_t l = 0; l < p_.ici_links; ++l) {
        if (chips_[r].state != ChipState::Running || !chips_[r].send[l].active) continue;
        const PodTopology::End e = *topo_.peer(r, l);
        Chip& q = chips_[e.chip];
        if (!q.recv[e.link].active) continue;
        if (q.state == ChipState::Running) {
          transfer(r, l, e.chip, e.link);
        } else {
          discard(r, l, e.chip, e.link);
        }
        any = true;
      }
    }
    return any;
  }

  // Link time of a message: its start (both ends issued, the link free) and serialization.
  std::pair<uint64_t, uint64_t> occupy(uint32_t r, uint32_t l, const LinkOp& s, uint64_t ready) {
    const uint64_t bytes = uint64_t{s.rows} * 4 * p_.N;
    const uint64_t ser = (bytes + timing_.bytes_per_cycle - 1) / timing_.bytes_per_cycle;
    uint64_t& free = link_free_[size_t{r} * p_.ici_links + l];
    const uint64_t start = std::max({s.ready, ready, free});
    free = start + ser;
    ++result_.transfers;
    result_.link_bytes += bytes;
    result_.link_busy_cycles += ser;
    return {start, ser};
  }

  // A send meets a receive its chip q posted before it stopped (isa.md "Errors of the link
  // instructions"): the message is taken off the link and discarded, q's VMEM is not written,
  // the send completes (or faults ERR_ICI_SIZE alone: only its header travels).
  void discard(uint32_t r, uint32_t l, uint32_t q, uint32_t m) {
    const LinkOp s = chips_[r].send[l];
    LinkOp& v = chips_[q].recv[m];
    v.active = false;
    if (s.rows != v.rows) {
      fault(r, s.pc, ErrorCode::ERR_ICI_SIZE,
            format("ici_send of %u rows on link %u met an ici_recv of %u rows that chip %u "
                   "(link %u, pc %u) posted before it stopped",
                   s.rows, l, v.rows, q, m, v.pc));
      return;
    }
    const auto [start, ser] = occupy(r, l, s, v.ready);
    Chip& cs = chips_[r];
    cs.finished.push_back({cs.footprint(s, true), start + ser, true, l});
    cs.send[l].active = false;
    ++cs.result.retired;
  }

  void transfer(uint32_t r, uint32_t l, uint32_t q, uint32_t m) {
    LinkOp s = chips_[r].send[l];
    LinkOp v = chips_[q].recv[m];
    if (s.rows != v.rows) {
      chips_[q].recv[m].active = false;  // it took the header: not posted any more
      fault(r, s.pc, ErrorCode::ERR_ICI_SIZE,
            format("ici_send of %u rows on link %u met an ici_recv of %u rows (chip %u link %u, "
                   "pc %u)",
                   s.rows, l, v.rows, q, m, v.pc));
      fault(q, v.pc, ErrorCode::ERR_ICI_SIZE,
            format("ici_recv of %u rows on link %u met an ici_send of %u rows (chip %u link %u, "
                   "pc %u)",
                   v.rows, m, s.rows, r, l, s.pc));
      return;
    }
    std::vector<uint32_t> data = models_[r]->vmem_rows(s.vmem, s.rows);
    if (v.reduce != 0) {
      const std::vector<uint32_t> local = models_[q]->vmem_rows(v.vmem, v.rows);
      for (size_t i = 0; i < data.size(); ++i) {
        data[i] = v.reduce == static_cast<uint8_t>(IciReduce::FAdd) ? fp::add(local[i], data[i])
                                                                    : local[i] + data[i];
      }
    }
    models_[q]->set_vmem_rows(v.vmem, data);
    const auto [start, ser] = occupy(r, l, s, v.ready);
    Chip& cs = chips_[r];
    Chip& cq = chips_[q];
    cs.finished.push_back({cs.footprint(s, true), start + ser, true, l});
    cq.finished.push_back({cq.footprint(v, false), start + ser + timing_.latency, false, m});
    cs.send[l].active = false;
    cq.recv[m].active = false;
    ++cs.result.retired;
    ++cq.result.retired;
  }

  std::string describe(uint32_t r) const {
    const Chip& c = chips_[r];
    switch (c.state) {
      case ChipState::Done:
        return format("chip %u has halted", r);
      case ChipState::Error:
        return format("chip %u stopped with %s", r,
                      std::string(error_name(c.result.error)).c_str());
      case ChipState::Running:
        break;
    }
    return format("chip %u is waiting at pc %u", r, c.pc);
  }

  // No chip can move: every waiting chip faults ERR_ICI_DEADLOCK at its oldest link
  // instruction. Returns false if no chip was waiting (the run is over).
  bool report_deadlock() {
    std::vector<std::pair<uint32_t, std::string>> faults;
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      const Chip& c = chips_[r];
      if (c.state != ChipState::Running) continue;
      uint32_t pc = c.pc;
      std::string what = "the pod";
      for (uint32_t l = 0; l < p_.ici_links; ++l) {
        for (int dir = 0; dir < 2; ++dir) {
          const LinkOp& o = dir == 0 ? c.send[l] : c.recv[l];
          if (!o.active || o.pc > pc) continue;
          const PodTopology::End e = *topo_.peer(r, l);
          pc = o.pc;
          what = format("%s on link %u (to chip %u link %u), and %s",
                        dir == 0 ? "ici_send" : "ici_recv", l, e.chip, e.link,
                        describe(e.chip).c_str());
        }
      }
      faults.emplace_back(pc, format("pod deadlock: no chip can move; waiting on %s with no "
                                     "matching partner issued",
                                     what.c_str()));
    }
    if (faults.empty()) return false;
    size_t k = 0;
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      if (chips_[r].state != ChipState::Running) continue;
      fault(r, faults[k].first, ErrorCode::ERR_ICI_DEADLOCK, faults[k].second);
      ++k;
    }
    return true;
  }

  const PodTopology& topo_;
  const ChipParams& p_;
  const LinkTiming& timing_;
  std::vector<std::unique_ptr<GoldenModel>>& models_;
  const std::vector<std::vector<Instruction>>& programs_;
  std::vector<Chip> chips_;
  std::vector<uint64_t> link_free_;  // chip * links + link: its send direction's next free cycle
  PodResult result_;
};

}  // namespace

PodResult PodModel::run(const std::vector<std::vector<Instruction>>& programs) {
  if (programs.size() != chips()) {
    throw std::invalid_argument(
        format("pod: %zu programs for %u chips (expected one per chip)", programs.size(), chips()));
  }
  PodRun run(topology_, params_, timing_, impl_->models, programs);
  return run.run();
}

}  // namespace tpu
