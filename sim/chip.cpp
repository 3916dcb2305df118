// SPDX-License-Identifier: Apache-2.0
#include "chip.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <sstream>
#include <systemc>

// verilated_funcs.h calls sc_time_stamp() unqualified once <systemc> has been included.
using sc_core::sc_time_stamp;

#include "axi4_tlm_bridge.h"
#include "axi_lite_master.h"
#include "core_model.h"
#include "pin_types.h"
#include "verilated.h"
#ifndef TPU_SIM_NO_TRACE
#include "verilated_vcd_sc.h"
#endif

namespace tpu::sim {

namespace {

// Rising edges at kEdgeOffset + k * period: no edge ever falls on a multiple of half a period,
// which is where advance() stops, so "events at the end time" ambiguities never arise.
constexpr uint64_t kPeriodPs = Chip::kClockPeriodPs;
constexpr uint64_t kEdgeOffsetPs = kPeriodPs / 4;

bool g_chip_constructed = false;

// The VMEM port's backpressure stream differs from the device-memory port's.
constexpr uint64_t kVaxiSeed = 0xD1B54A32D192ED03ull;

// The VMEM port's timing: bytes_per_cycle 0 means its full width, one beat per cycle.
HostMemoryTiming vmem_port_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle) {
  return {latency_cycles, bytes_per_cycle != 0 ? bytes_per_cycle : kVaxiWidth / 8};
}
HostMemoryTiming vmem_port_timing(const ChipConfig& cfg) {
  return vmem_port_timing(cfg.vmem_port_latency_cycles, cfg.vmem_port_bytes_per_cycle);
}

// The weight port's backpressure stream, and its timing (0 bytes per cycle: one beat per cycle).
constexpr uint64_t kWaxiSeed = 0x94D049BB133111EBull;
HostMemoryTiming weight_port_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle) {
  return {latency_cycles, bytes_per_cycle != 0 ? bytes_per_cycle : kWaxiWidth / 8};
}

// Rising edges since simulation start at time t (the edge at t included).
uint64_t edges_at(const sc_core::sc_time& t) {
  const uint64_t v = t.value();
  return v < kEdgeOffsetPs ? 0 : (v - kEdgeOffsetPs) / kPeriodPs + 1;
}

// Turns the per-cycle trace port samples into TraceEvents (sim/trace.h).
class TraceRecorder {
 public:
  // One sample: the port's values in the cycle that ends with rising edge `edge`.
  void sample(uint64_t edge, bool run, bool issue, uint32_t unit, uint32_t pc, uint32_t done) {
    if (run && !running_) {  // the first cycle of a run
      events_.clear();
      for (auto& q : open_) q.clear();
      origin_ = edge;
      running_ = true;
      run_cycles_ = 0;
    }
    if (!running_) return;
    if (run) ++run_cycles_;
    const uint64_t t = edge - origin_;
    // Done pulses belong to instructions issued in earlier cycles: first.
    for (unsigned u = 0; u < kUnitsWithDone; ++u) {
      if (!((done >> u) & 1u) || open_[u].empty()) continue;
      TraceEvent& e = events_[open_[u].front()];
      e.done = t;
      e.complete = true;
      open_[u].pop_front();
    }
    if (issue) {
      TraceEvent e;
      e.pc = pc;
      e.unit = unit < kTraceUnits ? static_cast<TraceUnit>(unit) : TraceUnit::kControl;
      e.issue = e.done = t;
      e.complete = e.unit == TraceUnit::kControl;
      if (!e.complete) open_[unsigned(e.unit)].push_back(events_.size());
      events_.push_back(e);
    }
    if (!run) {  // the first cycle after the run: whatever is still open was abandoned
      for (auto& q : open_) {
        for (size_t i : q) events_[i].done = t;
        q.clear();
      }
      running_ = false;
    }
  }
  void stop() { running_ = false; }
  const std::vector<TraceEvent>& events() const { return events_; }
  uint64_t run_cycles() const { return run_cycles_; }

 private:
  static constexpr unsigned kUnitsWithDone = kTraceUnits;  // trace_done_o bits
  std::vector<TraceEvent> events_;
  std::deque<size_t> open_[kUnitsWithDone];  // per unit: unfinished events, oldest first
  uint64_t origin_ = 0;
  uint64_t run_cycles_ = 0;  // cycles of the current / last run with trace_run_o set
  bool running_ = false;
};

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

const char* resp_name(uint32_t resp) {
  switch (resp) {
    case kAxiOkay:
      return "OKAY";
    case kAxiExOkay:
      return "EXOKAY";
    case kAxiSlvErr:
      return "SLVERR";
    default:
      return "DECERR";
  }
}

// The SystemC design: clock, reset, the Verilated core and the three testbench models.
struct Testbench : sc_core::sc_module {
  using AxiData = PinType_t<kAxiWidth>;
  using AxiStrb = PinType_t<kAxiWidth / 8>;
  using VaxiData = PinType_t<kVaxiWidth>;
  using VaxiStrb = PinType_t<kVaxiWidth / 8>;
  using WaxiData = PinType_t<kWaxiWidth>;
  using WaxiStrb = PinType_t<kWaxiWidth / 8>;

  // Every signal has exactly one writer (a port of the core, the bridge or the host, or the
  // Chip itself for rst_n), fixed by the bindings below. SC_UNCHECKED_WRITERS drops SystemC's
  // run-time check of that (a library call per write(): ~25 writes a cycle, ~30 instructions
  // each); what a signal does with the values written is the same under every policy.
  template <class T>
  using Signal = sc_core::sc_signal<T, sc_core::SC_UNCHECKED_WRITERS>;

  Signal<bool> clk;  // driven by clock_gen()
  Signal<bool> rst_n;
  // s_axil_* (host -> chip registers)
  Signal<uint32_t> s_awaddr, s_wdata, s_wstrb, s_bresp, s_araddr, s_rdata, s_rresp;
  Signal<bool> s_awvalid, s_awready, s_wvalid, s_wready, s_bvalid, s_bready;
  Signal<bool> s_arvalid, s_arready, s_rvalid, s_rready;
  // m_axi_* (chip -> host memory)
  Signal<uint32_t> m_araddr, m_arlen, m_arsize, m_arburst, m_rresp;
  Signal<uint32_t> m_awaddr, m_awlen, m_awsize, m_awburst, m_bresp;
  Signal<bool> m_arvalid, m_arready, m_rlast, m_rvalid, m_rready;
  Signal<bool> m_awvalid, m_awready, m_wlast, m_wvalid, m_wready, m_bvalid, m_bready;
  Signal<AxiData> m_rdata, m_wdata;
  Signal<AxiStrb> m_wstrb;
  // m_vaxi_* (the VMEM port -> host memory)
  Signal<uint32_t> v_araddr, v_arlen, v_arsize, v_arburst, v_rresp;
  Signal<uint32_t> v_awaddr, v_awlen, v_awsize, v_awburst, v_bresp;
  Signal<bool> v_arvalid, v_arready, v_rlast, v_rvalid, v_rready;
  Signal<bool> v_awvalid, v_awready, v_wlast, v_wvalid, v_wready, v_bvalid, v_bready;
  Signal<VaxiData> v_rdata, v_wdata;
  Signal<VaxiStrb> v_wstrb;
  // m_waxi_* (the weight port -> host memory; read only: the bridge's write channels idle)
  Signal<uint32_t> w_araddr, w_arlen, w_arsize, w_arburst, w_rresp;
  Signal<bool> w_arvalid, w_arready, w_rlast, w_rvalid, w_rready;
  Signal<WaxiData> w_rdata;
  Signal<uint32_t> w_awaddr, w_awlen, w_awsize, w_awburst, w_bresp;  // never driven
  Signal<bool> w_awvalid, w_awready, w_wlast, w_wvalid, w_wready, w_bvalid, w_bready;
  Signal<WaxiData> w_wdata;
  Signal<WaxiStrb> w_wstrb;
  Signal<bool> irq;
  // trace_* (observation only)
  Signal<bool> trace_run, trace_issue;
  Signal<uint32_t> trace_unit, trace_pc, trace_done;

  CoreModel core;
  HostMemoryModel memory;
  Axi4ToTlmBridge<kAxiWidth> bridge;
  HostMemoryPort vmem_port;  // the VMEM port's own timing on the same host memory
  Axi4ToTlmBridge<kVaxiWidth> vbridge;
  HostMemoryPort weight_port;  // the weight port's own timing on the same host memory
  Axi4ToTlmBridge<kWaxiWidth> wbridge;
  AxiLiteMaster host;

  // Set by the processes that call sc_pause(), read by the host side.
  bool pause_requested = false;
  bool stop_on_irq = false;
  bool irq_rose = false;
  // Instruction trace: while off, on_trace_clock sleeps on trace_enable (no per-cycle cost).
  bool trace_on = false;
  bool trace_armed = false;
  sc_core::sc_event trace_enable;
  TraceRecorder trace;

  SC_HAS_PROCESS(Testbench);
  Testbench(sc_core::sc_module_name name, const ChipConfig& cfg)
      : sc_core::sc_module(name),
        clk("clk", false),
        rst_n("rst_n", false),
        core("tpu_core"),
        memory("host_memory", sc_core::sc_time::from_value(kPeriodPs),
               HostMemoryTiming{cfg.mem_latency_cycles, cfg.mem_bytes_per_cycle}),
        bridge("axi_bridge", sc_core::sc_time::from_value(kPeriodPs)),
        vmem_port("vmem_port", memory, vmem_port_timing(cfg)),
        vbridge("vaxi_bridge", sc_core::sc_time::from_value(kPeriodPs)),
        weight_port(
            "weight_port", memory,
            weight_port_timing(cfg.weight_port_latency_cycles, cfg.weight_port_bytes_per_cycle)),
        wbridge("waxi_bridge", sc_core::sc_time::from_value(kPeriodPs)),
        host("axil_host") {
    bind_core();
    bind_host();
    bind_bridge();
    bind_vbridge();
    bind_wbridge();

    bridge.set_backpressure(cfg.backpressure, cfg.seed);
    vbridge.set_backpressure(cfg.backpressure, cfg.seed ^ kVaxiSeed);
    // The VMEM port keeps up to 16 bursts in flight (tpu_vdma_rd / tpu_vdma_wr MaxOut).
    vbridge.set_max_outstanding(16, 16);
    wbridge.set_backpressure(cfg.backpressure, cfg.seed ^ kWaxiSeed);
    // A different stream for the register port, so both ports do not stall in lockstep.
    host.set_backpressure(cfg.backpressure, cfg.seed ^ 0x9E3779B97F4A7C15ull);

    SC_METHOD(on_irq_change);
    sensitive << irq;
    dont_initialize();

    SC_METHOD(on_trace_clock);
    sensitive << clk.posedge_event();
    dont_initialize();

    // Run-ahead (core_model.h): at an edge that changed no output of the core, the model may
    // evaluate the next edges at once, up to the end of the current sc_start (run_ahead_to),
    // while nothing else acts on the edges or watches the pins: the bridge and the register
    // host asleep (each wakes only when an output of the core changes, or from the host side
    // between sc_starts), the bridge since an earlier edge (so the inputs the model has just
    // read are final), no instruction trace, no VCD (then the model evaluates on every change
    // anyway).
    core.set_run_ahead(
        [this]() -> uint64_t {
          const sc_core::sc_time now = sc_core::sc_time_stamp();
          if (!run_ahead_on || !pulse_clock || trace_on || !bridge.asleep_before(now) ||
              !vbridge.asleep_before(now) || !wbridge.asleep_before(now) || !host.asleep())
            return 0;
          const uint64_t edge = edges_at(now);
          return run_ahead_to > edge ? run_ahead_to - edge : 0;
        },
        kPeriod);

    // The clock (see clock_gen). The falling edge follows the rising one a delta later, except
    // while a VCD file is open (Chip::Impl::update_vcd_window): then it falls half a period
    // later, as on a real 50 % clock.
    pulse_clock = true;
    SC_METHOD(clock_gen);
    sensitive << clock_ev << clk.posedge_event();
    dont_initialize();
  }

  // The Verilated core's ports: the register port (s_axil_*), the memory port (m_axi_*), the
  // interrupt and the trace outputs.
  void bind_core() {
    core.clk_i(clk);
    core.rst_ni(rst_n);
    core.s_axil_awaddr_i(s_awaddr);
    core.s_axil_awvalid_i(s_awvalid);
    core.s_axil_awready_o(s_awready);
    core.s_axil_wdata_i(s_wdata);
    core.s_axil_wstrb_i(s_wstrb);
    core.s_axil_wvalid_i(s_wvalid);
    core.s_axil_wready_o(s_wready);
    core.s_axil_bresp_o(s_bresp);
    core.s_axil_bvalid_o(s_bvalid);
    core.s_axil_bready_i(s_bready);
    core.s_axil_araddr_i(s_araddr);
    core.s_axil_arvalid_i(s_arvalid);
    core.s_axil_arready_o(s_arready);
    core.s_axil_rdata_o(s_rdata);
    core.s_axil_rresp_o(s_rresp);
    core.s_axil_rvalid_o(s_rvalid);
    core.s_axil_rready_i(s_rready);
    core.m_axi_araddr_o(m_araddr);
    core.m_axi_arlen_o(m_arlen);
    core.m_axi_arsize_o(m_arsize);
    core.m_axi_arburst_o(m_arburst);
    core.m_axi_arvalid_o(m_arvalid);
    core.m_axi_arready_i(m_arready);
    core.m_axi_rdata_i(m_rdata);
    core.m_axi_rresp_i(m_rresp);
    core.m_axi_rlast_i(m_rlast);
    core.m_axi_rvalid_i(m_rvalid);
    core.m_axi_rready_o(m_rready);
    core.m_axi_awaddr_o(m_awaddr);
    core.m_axi_awlen_o(m_awlen);
    core.m_axi_awsize_o(m_awsize);
    core.m_axi_awburst_o(m_awburst);
    core.m_axi_awvalid_o(m_awvalid);
    core.m_axi_awready_i(m_awready);
    core.m_axi_wdata_o(m_wdata);
    core.m_axi_wstrb_o(m_wstrb);
    core.m_axi_wlast_o(m_wlast);
    core.m_axi_wvalid_o(m_wvalid);
    core.m_axi_wready_i(m_wready);
    core.m_axi_bresp_i(m_bresp);
    core.m_axi_bvalid_i(m_bvalid);
    core.m_axi_bready_o(m_bready);
    core.m_vaxi_araddr_o(v_araddr);
    core.m_vaxi_arlen_o(v_arlen);
    core.m_vaxi_arsize_o(v_arsize);
    core.m_vaxi_arburst_o(v_arburst);
    core.m_vaxi_arvalid_o(v_arvalid);
    core.m_vaxi_arready_i(v_arready);
    core.m_vaxi_rdata_i(v_rdata);
    core.m_vaxi_rresp_i(v_rresp);
    core.m_vaxi_rlast_i(v_rlast);
    core.m_vaxi_rvalid_i(v_rvalid);
    core.m_vaxi_rready_o(v_rready);
    core.m_vaxi_awaddr_o(v_awaddr);
    core.m_vaxi_awlen_o(v_awlen);
    core.m_vaxi_awsize_o(v_awsize);
    core.m_vaxi_awburst_o(v_awburst);
    core.m_vaxi_awvalid_o(v_awvalid);
    core.m_vaxi_awready_i(v_awready);
    core.m_vaxi_wdata_o(v_wdata);
    core.m_vaxi_wstrb_o(v_wstrb);
    core.m_vaxi_wlast_o(v_wlast);
    core.m_vaxi_wvalid_o(v_wvalid);
    core.m_vaxi_wready_i(v_wready);
    core.m_vaxi_bresp_i(v_bresp);
    core.m_vaxi_bvalid_i(v_bvalid);
    core.m_vaxi_bready_o(v_bready);
    core.m_waxi_araddr_o(w_araddr);
    core.m_waxi_arlen_o(w_arlen);
    core.m_waxi_arsize_o(w_arsize);
    core.m_waxi_arburst_o(w_arburst);
    core.m_waxi_arvalid_o(w_arvalid);
    core.m_waxi_arready_i(w_arready);
    core.m_waxi_rdata_i(w_rdata);
    core.m_waxi_rresp_i(w_rresp);
    core.m_waxi_rlast_i(w_rlast);
    core.m_waxi_rvalid_i(w_rvalid);
    core.m_waxi_rready_o(w_rready);
    core.irq_o(irq);
    core.trace_run_o(trace_run);
    core.trace_issue_o(trace_issue);
    core.trace_unit_o(trace_unit);
    core.trace_pc_o(trace_pc);
    core.trace_done_o(trace_done);
  }

  // The register host (AxiLiteMaster) on the core's s_axil_* port.
  void bind_host() {
    host.clk(clk);
    host.rst_n(rst_n);
    host.awaddr(s_awaddr);
    host.awvalid(s_awvalid);
    host.awready(s_awready);
    host.wdata(s_wdata);
    host.wstrb(s_wstrb);
    host.wvalid(s_wvalid);
    host.wready(s_wready);
    host.bresp(s_bresp);
    host.bvalid(s_bvalid);
    host.bready(s_bready);
    host.araddr(s_araddr);
    host.arvalid(s_arvalid);
    host.arready(s_arready);
    host.rdata(s_rdata);
    host.rresp(s_rresp);
    host.rvalid(s_rvalid);
    host.rready(s_rready);
    host.on_complete = [this] { request_pause(); };
  }

  // The AXI4 -> TLM bridge on the core's m_axi_* port, and its socket on the host memory.
  void bind_bridge() {
    bridge.clk(clk);
    bridge.rst_n(rst_n);
    bridge.araddr(m_araddr);
    bridge.arlen(m_arlen);
    bridge.arsize(m_arsize);
    bridge.arburst(m_arburst);
    bridge.arvalid(m_arvalid);
    bridge.arready(m_arready);
    bridge.rdata(m_rdata);
    bridge.rresp(m_rresp);
    bridge.rlast(m_rlast);
    bridge.rvalid(m_rvalid);
    bridge.rready(m_rready);
    bridge.awaddr(m_awaddr);
    bridge.awlen(m_awlen);
    bridge.awsize(m_awsize);
    bridge.awburst(m_awburst);
    bridge.awvalid(m_awvalid);
    bridge.awready(m_awready);
    bridge.wdata(m_wdata);
    bridge.wstrb(m_wstrb);
    bridge.wlast(m_wlast);
    bridge.wvalid(m_wvalid);
    bridge.wready(m_wready);
    bridge.bresp(m_bresp);
    bridge.bvalid(m_bvalid);
    bridge.bready(m_bready);
    bridge.socket.bind(memory.socket);
  }

  // The VMEM port's bridge on m_vaxi_*, into its own port of the host memory.
  void bind_vbridge() {
    vbridge.clk(clk);
    vbridge.rst_n(rst_n);
    vbridge.araddr(v_araddr);
    vbridge.arlen(v_arlen);
    vbridge.arsize(v_arsize);
    vbridge.arburst(v_arburst);
    vbridge.arvalid(v_arvalid);
    vbridge.arready(v_arready);
    vbridge.rdata(v_rdata);
    vbridge.rresp(v_rresp);
    vbridge.rlast(v_rlast);
    vbridge.rvalid(v_rvalid);
    vbridge.rready(v_rready);
    vbridge.awaddr(v_awaddr);
    vbridge.awlen(v_awlen);
    vbridge.awsize(v_awsize);
    vbridge.awburst(v_awburst);
    vbridge.awvalid(v_awvalid);
    vbridge.awready(v_awready);
    vbridge.wdata(v_wdata);
    vbridge.wstrb(v_wstrb);
    vbridge.wlast(v_wlast);
    vbridge.wvalid(v_wvalid);
    vbridge.wready(v_wready);
    vbridge.bresp(v_bresp);
    vbridge.bvalid(v_bvalid);
    vbridge.bready(v_bready);
    vbridge.socket.bind(vmem_port.socket);
  }

  // The weight port's bridge on m_waxi_* (read channels; its write channels see no request),
  // into its own port of the host memory.
  void bind_wbridge() {
    wbridge.clk(clk);
    wbridge.rst_n(rst_n);
    wbridge.araddr(w_araddr);
    wbridge.arlen(w_arlen);
    wbridge.arsize(w_arsize);
    wbridge.arburst(w_arburst);
    wbridge.arvalid(w_arvalid);
    wbridge.arready(w_arready);
    wbridge.rdata(w_rdata);
    wbridge.rresp(w_rresp);
    wbridge.rlast(w_rlast);
    wbridge.rvalid(w_rvalid);
    wbridge.rready(w_rready);
    wbridge.awaddr(w_awaddr);
    wbridge.awlen(w_awlen);
    wbridge.awsize(w_awsize);
    wbridge.awburst(w_awburst);
    wbridge.awvalid(w_awvalid);
    wbridge.awready(w_awready);
    wbridge.wdata(w_wdata);
    wbridge.wstrb(w_wstrb);
    wbridge.wlast(w_wlast);
    wbridge.wvalid(w_wvalid);
    wbridge.wready(w_wready);
    wbridge.bresp(w_bresp);
    wbridge.bvalid(w_bvalid);
    wbridge.bready(w_bready);
    wbridge.socket.bind(weight_port.socket);
  }

  void start_of_simulation() override { clock_ev.notify(kFirstEdge); }

  // Drives clk: rising edges at kEdgeOffsetPs + k * kPeriodPs, as a 50 % sc_clock would.
  //
  // Everything clocked here acts on the rising edge only (the RTL has no negedge logic besides
  // the asynchronous rst_ni; the bridge and the host are sensitive to clk.pos()), but the
  // Verilated model evaluates on every change of clk_i. A falling edge half a period later is a
  // whole extra time step (kernel, clock process, model evaluation) that changes nothing but
  // clk_i itself. So, unless a VCD is being written (where clk_i shows), clk falls in the
  // delta after the rising edge: the model's evaluation for the fall then coincides with the one
  // for the inputs the bridge and the host drive after the edge (which it needed anyway), and
  // each cycle is one time step. Pins, cycle counts and every value sampled on a rising edge are
  // the same either way (the VCD, with the 50 % clock, is byte-identical to that of sc_clock).
  void clock_gen() {
    if (!clk.read()) {  // rising edge (clock_ev)
      // Edges the model evaluated ahead are skipped, but for the last one if it changed outputs
      // (they are written at its time, core_model.h).
      const sc_core::sc_time now = sc_core::sc_time_stamp();
      const sc_core::sc_time& done = core.evaluated_until();
      if (done >= now) {
        const sc_core::sc_time next = core.outputs_pending() ? done : done + kPeriod;
        if (next > now) {
          clock_ev.notify(next - now);
          return;
        }
      }
      clk.write(true);
    } else if (clk.posedge()) {  // the delta after the rising edge (clk.posedge_event())
      if (pulse_clock) {
        clk.write(false);
        clock_ev.notify(kPeriod);
      } else {
        clock_ev.notify(kHalfPeriod);
      }
    } else {
      clk.write(false);  // falling edge of the 50 % clock (clock_ev)
      clock_ev.notify(kHalfPeriod);
    }
  }

  sc_core::sc_event clock_ev;
  bool pulse_clock = false;
  uint64_t run_ahead_to = 0;  // the last rising edge of the current sc_start (0: none running)
  bool run_ahead_on = true;   // ChipConfig::run_ahead
  const sc_core::sc_time kFirstEdge = sc_core::sc_time::from_value(kEdgeOffsetPs);
  const sc_core::sc_time kPeriod = sc_core::sc_time::from_value(kPeriodPs);
  const sc_core::sc_time kHalfPeriod = sc_core::sc_time::from_value(kPeriodPs / 2);

  // At a rising edge the signals still hold the cycle that this edge ends.
  void on_trace_clock() {
    if (!trace_on) {
      trace_armed = false;
      trace.stop();
      next_trigger(trace_enable);  // sleep until switched on
      return;
    }
    if (!trace_armed) {  // woken by trace_enable, not by an edge: back to the clock
      trace_armed = true;
      return;
    }
    trace.sample(edges_at(sc_core::sc_time_stamp()), trace_run.read(), trace_issue.read(),
                 trace_unit.read(), trace_pc.read(), trace_done.read());
  }

  void request_pause() {
    pause_requested = true;
    sc_core::sc_pause();
  }

  void on_irq_change() {
    if (irq.read() && stop_on_irq) {
      irq_rose = true;
      request_pause();
    }
  }
};

}  // namespace

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kDone:
      return "done";
    case StopReason::kError:
      return "error";
    case StopReason::kIrq:
      return "irq";
    case StopReason::kCycleLimit:
      return "cycle limit";
  }
  return "?";
}

struct Chip::Impl {
  ChipConfig cfg;
  // Never deleted: SystemC cannot tear a design down and elaborate another in the same
  // process, and deleting modules after simulation started is not supported.
  Testbench* tb = nullptr;
#ifdef TPU_SIM_NO_TRACE
  struct NoVcd {  // a model Verilated without --trace (TPU_SIM_TRACE=OFF) cannot dump
    void open(const char*) {}
    bool isOpen() const { return false; }
    void close() {}
    void flush() {}
  };
  NoVcd* vcd = nullptr;
#else
  VerilatedVcdSc* vcd = nullptr;
#endif
  enum class VcdState { kOff, kWaiting, kOpen, kClosed } vcd_state = VcdState::kOff;
  // Mirror of IRQ_ENABLE (the host is the only writer); kUnknown after SOFT_RESET.
  static constexpr uint32_t kUnknown = 0xFFFFFFFF;
  uint32_t irq_enable = reg::kIrqEnableResetValue;

  uint64_t cycle() const { return edges_at(sc_core::sc_time_stamp()); }

  // Half a period after rising edge number `edges`: the stop time of advance_until(edges).
  static sc_core::sc_time stop_time(uint64_t edges) {
    return sc_core::sc_time::from_value((edges - 1) * kPeriodPs + kPeriodPs / 2);
  }

  void update_vcd_window() {
    const uint64_t now = cycle();
    if (vcd_state == VcdState::kWaiting && now >= cfg.vcd_from_cycle) {
      if (now >= cfg.vcd_to_cycle) {
        vcd_state = VcdState::kClosed;
      } else {
        vcd->open(cfg.vcd_file.c_str());
        if (!vcd->isOpen())
          throw std::runtime_error("Chip: cannot open VCD file '" + cfg.vcd_file + "'");
        vcd_state = VcdState::kOpen;
      }
    }
    if (vcd_state == VcdState::kOpen && now >= cfg.vcd_to_cycle) {
      vcd->close();
      vcd_state = VcdState::kClosed;
    }
    // The 50 % clock only while dumping (from one cycle before, so that the dump starts as it
    // would with a 50 % clock throughout: mid-cycle, clk high), so a window costs nothing
    // outside itself. Switching between edges keeps every rising edge where it was (clock_gen).
    tb->pulse_clock = !(vcd_state == VcdState::kOpen ||
                        (vcd_state == VcdState::kWaiting && now + 1 >= cfg.vcd_from_cycle));
    // Likewise the model evaluates at every pin change only while dumping (core_model.h).
    tb->core.set_every_change(cfg.eval_every_change || !tb->pulse_clock);
  }

  void check_protocol() {
    const auto& violations = tb->bridge.protocol_violations();
    const auto& vmem_violations = tb->vbridge.protocol_violations();
    const auto& weight_violations = tb->wbridge.protocol_violations();
    if (violations.empty() && vmem_violations.empty() && weight_violations.empty()) return;
    std::string msg;
    if (!violations.empty()) {
      msg = "tpu_core broke the AXI4 protocol on m_axi_*:";
      for (const auto& v : violations) msg += "\n  " + v;
    }
    if (!vmem_violations.empty()) {
      msg += std::string(msg.empty() ? "" : "\n") +
             "tpu_core broke the AXI4 protocol on m_vaxi_* (the VMEM port):";
      for (const auto& v : vmem_violations) msg += "\n  " + v;
    }
    if (!weight_violations.empty()) {
      msg += std::string(msg.empty() ? "" : "\n") +
             "tpu_core broke the AXI4 protocol on m_waxi_* (the weight port):";
      for (const auto& v : weight_violations) msg += "\n  " + v;
    }
    tb->bridge.clear_protocol_violations();
    tb->vbridge.clear_protocol_violations();
    tb->wbridge.clear_protocol_violations();
    throw ProtocolError(msg);
  }

  // Simulate until rising edge number `target` has happened, or until a process paused the
  // kernel (register response, irq). Returns true if it stopped early because of a pause.
  bool advance_until(uint64_t target) {
    tb->pause_requested = false;
    while (cycle() < target && !tb->pause_requested) {
      uint64_t stop = target;
      if (vcd_state == VcdState::kWaiting && cfg.vcd_from_cycle > cycle())  // a cycle before too
        stop = std::min(
            stop, cfg.vcd_from_cycle > cycle() + 1 ? cfg.vcd_from_cycle - 1 : cfg.vcd_from_cycle);
      if (vcd_state == VcdState::kOpen) stop = std::min(stop, cfg.vcd_to_cycle);
      tb->run_ahead_to = stop;
      sc_core::sc_start(stop_time(stop) - sc_core::sc_time_stamp());
      tb->run_ahead_to = 0;
      update_vcd_window();
      check_protocol();
    }
    return tb->pause_requested;
  }

  RegAccess access(bool is_write, uint32_t addr, uint32_t value, uint32_t strb = 0xF) {
    if (addr > 0xFFF)
      throw std::invalid_argument("Chip: register address " + hex(addr) +
                                  " is outside the 12-bit AXI4-Lite register space");
    AxiLiteMaster& host = tb->host;
    if (is_write)
      host.post_write(addr, value, strb);
    else
      host.post_read(addr);
    const uint64_t deadline = cycle() + cfg.reg_timeout_cycles;
    while (!host.complete()) {
      if (cycle() >= deadline) {
        const std::string waiting = host.waiting_for();
        host.abandon();
        throw RegisterTimeout(std::string("Chip: register ") + (is_write ? "write" : "read") +
                              " of " + hex(addr) + " got no response within " +
                              std::to_string(cfg.reg_timeout_cycles) +
                              " cycles (still waiting for: " + waiting + ")");
      }
      advance_until(deadline);
    }
    const auto& r = host.response();
    if (is_write && r.resp == kAxiOkay) {
      if (addr == reg::kIrqEnable) irq_enable = value & (reg::kIrqDone | reg::kIrqError);
      if (addr == reg::kCtrl && (value & reg::kCtrlSoftReset)) irq_enable = kUnknown;
    }
    return {r.data, r.resp};
  }

  uint32_t checked(bool is_write, uint32_t addr, uint32_t value) {
    const RegAccess r = access(is_write, addr, value);
    if (r.resp != kAxiOkay)
      throw RegisterError(std::string("Chip: register ") + (is_write ? "write" : "read") + " of " +
                              hex(addr) + " answered " + resp_name(r.resp) + " (" +
                              std::to_string(r.resp) + "), expected OKAY",
                          addr, r.resp);
    return r.data;
  }
};

Chip::Chip(const ChipConfig& config) {
  if (g_chip_constructed)
    throw std::logic_error(
        "tpu::sim::Chip: a Chip was already constructed in this process; SystemC elaborates "
        "once per process, so reuse that Chip (reset() restarts it in place)");
  if (!(config.backpressure >= 0.0 && config.backpressure < 1.0))
    throw std::invalid_argument("ChipConfig::backpressure must be in [0, 1), got " +
                                std::to_string(config.backpressure));
  if (config.reg_timeout_cycles == 0 || config.status_poll_cycles == 0)
    throw std::invalid_argument(
        "ChipConfig: reg_timeout_cycles and status_poll_cycles must be > 0");
  if (config.vcd_from_cycle > config.vcd_to_cycle)
    throw std::invalid_argument("ChipConfig: vcd_from_cycle > vcd_to_cycle");
  if (!config.vcd_file.empty() && !compiled_with_vcd())
    throw std::invalid_argument(
        "ChipConfig::vcd_file: this simulator was built without VCD tracing "
        "(-DTPU_SIM_TRACE=OFF), so it cannot write '" +
        config.vcd_file + "'; rebuild with -DTPU_SIM_TRACE=ON");
  g_chip_constructed = true;

  impl_ = std::make_unique<Impl>();
  impl_->cfg = config;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

  const bool tracing = !config.vcd_file.empty();
  // Must precede model construction; left off otherwise so an untraced run pays nothing.
  if (tracing) Verilated::traceEverOn(true);
  impl_->tb = new Testbench("tb", config);
  impl_->tb->core.set_every_change(config.eval_every_change);
  impl_->tb->run_ahead_on = config.run_ahead;
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // finish elaboration before attaching the trace
  if (tracing) {
#ifndef TPU_SIM_NO_TRACE
    impl_->vcd = new VerilatedVcdSc;
    impl_->tb->core.trace(impl_->vcd, config.trace_depth);
    impl_->vcd_state = Impl::VcdState::kWaiting;
    impl_->update_vcd_window();
#endif
  }
  reset();
}

Chip::~Chip() {
  if (!impl_) return;
  if (impl_->vcd) {
    impl_->vcd->flush();
    impl_->vcd->close();
  }
  if (impl_->tb) impl_->tb->core.final();
}

bool Chip::constructed() { return g_chip_constructed; }
unsigned Chip::compiled_n() { return TPU_SIM_N; }
unsigned Chip::compiled_axi_width() { return kAxiWidth; }
unsigned Chip::compiled_vmem_axi_width() { return kVaxiWidth; }
unsigned Chip::compiled_weight_axi_width() { return TPU_SIM_WAXI_WIDTH; }
unsigned Chip::compiled_vmem_rows() { return TPU_SIM_VMEM_ROWS; }
unsigned Chip::compiled_ici_links() { return TPU_SIM_ICI_LINKS; }
#ifndef TPU_SIM_DW_WIDTH
#define TPU_SIM_DW_WIDTH 0
#endif
unsigned Chip::compiled_dw_width() { return TPU_SIM_DW_WIDTH; }
#ifdef TPU_SIM_NO_TRACE
bool Chip::compiled_with_vcd() { return false; }
#else
bool Chip::compiled_with_vcd() { return true; }
#endif

void Chip::reset(unsigned cycles) {
  Testbench& tb = *impl_->tb;
  tb.host.abandon();
  // Written from outside any process (the idiomatic sc_main style): the value takes effect
  // at the start of the next sc_start, half a period before the next rising edge.
  tb.rst_n.write(false);
  impl_->advance_until(impl_->cycle() + std::max(cycles, 1u));
  tb.rst_n.write(true);
  impl_->advance_until(impl_->cycle() + 2);
  tb.bridge.clear_protocol_violations();
  tb.vbridge.clear_protocol_violations();
  tb.wbridge.clear_protocol_violations();
  impl_->irq_enable = reg::kIrqEnableResetValue;
}

uint32_t Chip::read_reg(uint32_t addr) { return impl_->checked(false, addr, 0); }
void Chip::write_reg(uint32_t addr, uint32_t value) { impl_->checked(true, addr, value); }
RegAccess Chip::try_read_reg(uint32_t addr) { return impl_->access(false, addr, 0); }
RegAccess Chip::try_write_reg(uint32_t addr, uint32_t value, uint32_t strb) {
  if (strb > 0xF)
    throw std::invalid_argument("Chip: write strobe " + hex(strb) + " for register " + hex(addr) +
                                " has bits above the 4 byte lanes (expected 0x0..0xF)");
  return impl_->access(true, addr, value, strb);
}

HostMemoryModel& Chip::memory() { return impl_->tb->memory; }
void Chip::add_region(uint64_t base, uint64_t size, const std::string& name) {
  memory().add_region(base, size, name);
}
void Chip::write_mem(uint64_t addr, const void* src, size_t len) { memory().write(addr, src, len); }
void Chip::write_mem(uint64_t addr, const std::vector<uint8_t>& bytes) {
  memory().write(addr, bytes);
}
void Chip::read_mem(uint64_t addr, void* dst, size_t len) { memory().read(addr, dst, len); }
std::vector<uint8_t> Chip::read_mem(uint64_t addr, size_t len) { return memory().read(addr, len); }
void Chip::inject_error(uint64_t base, uint64_t size) { memory().inject_error(base, size); }
void Chip::clear_injected_errors() { memory().clear_injected_errors(); }

void Chip::set_backpressure(double probability, uint64_t seed) {
  impl_->tb->bridge.set_backpressure(probability, seed);
  impl_->tb->vbridge.set_backpressure(probability, seed ^ kVaxiSeed);
  impl_->tb->wbridge.set_backpressure(probability, seed ^ kWaxiSeed);
  impl_->tb->host.set_backpressure(probability, seed ^ 0x9E3779B97F4A7C15ull);
}

void Chip::set_memory_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle) {
  memory().set_timing({latency_cycles, bytes_per_cycle});
}

void Chip::set_vmem_port_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle) {
  impl_->tb->vmem_port.set_timing(vmem_port_timing(latency_cycles, bytes_per_cycle));
}

void Chip::set_weight_port_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle) {
  impl_->tb->weight_port.set_timing(weight_port_timing(latency_cycles, bytes_per_cycle));
}

void Chip::start(uint32_t cmd_addr, uint32_t count) {
  // A pending interrupt from the previous run would keep irq_o high and hide this run's end.
  write_reg(reg::kIrqStatus, reg::kIrqDone | reg::kIrqError);
  write_reg(reg::kCmdAddr, cmd_addr);
  write_reg(reg::kCmdCount, count);
  write_reg(reg::kCtrl, reg::kCtrlStart);
}

RunResult Chip::run(uint64_t max_cycles) {
  Impl& im = *impl_;
  Testbench& tb = *im.tb;
  const uint64_t begin = im.cycle();
  const uint64_t limit = begin + max_cycles;
  RunResult result;

  // Reads STATUS (and the error registers) and decides whether the run is over.
  auto finished = [&](uint64_t seen_at) {
    const uint32_t st = read_reg(reg::kStatus);
    if (!(st & (reg::kStatusDone | reg::kStatusError))) return false;
    result.cycles = seen_at - begin;
    result.status = st;
    if (st & reg::kStatusError) {
      result.reason = StopReason::kError;
      result.err_code = read_reg(reg::kErrCode);
      result.err_pc = read_reg(reg::kErrPc);
    } else {
      result.reason = StopReason::kDone;
    }
    return true;
  };

  // A rising irq_o announces done/error only if both sources are enabled and no interrupt
  // is pending yet; otherwise fall back to polling STATUS.
  if (im.irq_enable == Impl::kUnknown) im.irq_enable = read_reg(reg::kIrqEnable) & 3u;
  const bool irq_announces = im.irq_enable == (reg::kIrqDone | reg::kIrqError) && !tb.irq.read();
  if (!irq_announces && finished(begin)) return result;

  struct StopOnIrq {  // armed only inside run(), also when an exception leaves it
    Testbench& tb;
    explicit StopOnIrq(Testbench& t) : tb(t) {
      tb.stop_on_irq = true;
      tb.irq_rose = false;
    }
    ~StopOnIrq() { tb.stop_on_irq = false; }
  } guard(tb);

  while (im.cycle() < limit) {
    const uint64_t chunk_end =
        irq_announces ? limit : std::min(limit, im.cycle() + im.cfg.status_poll_cycles);
    im.advance_until(chunk_end);
    const uint64_t seen_at = im.cycle();
    if (tb.irq_rose) {
      tb.irq_rose = false;
      tb.stop_on_irq = false;  // the register reads below must not be cut short by irq edges
      if (finished(seen_at)) return result;
      result.reason = StopReason::kIrq;
      result.cycles = seen_at - begin;
      result.status = read_reg(reg::kStatus);
      return result;
    }
    if (!irq_announces && finished(seen_at)) return result;
  }
  result.reason = StopReason::kCycleLimit;
  result.cycles = max_cycles;
  return result;
}

void Chip::step(uint64_t cycles) {
  const uint64_t target = impl_->cycle() + cycles;
  while (impl_->cycle() < target) impl_->advance_until(target);
}

uint64_t Chip::counter(unsigned index) {
  if (index >= reg::kNumCounters)
    throw std::out_of_range("Chip::counter: index " + std::to_string(index) +
                            " >= " + std::to_string(reg::kNumCounters));
  const uint64_t lo = read_reg(reg::counter_lo(index));
  const uint64_t hi = read_reg(reg::counter_hi(index));
  return lo | (hi << 32);
}

Counters Chip::counters() {
  Counters c;
  uint64_t* fields[reg::kNumCounters] = {
      &c.cycles,   &c.mxu_busy,     &c.mxu_macs,     &c.weight_stall,  &c.input_stall,
      &c.dma_busy, &c.dma_rd_bytes, &c.dma_wr_bytes, &c.instr_retired, &c.act_busy};
  for (unsigned i = 0; i < reg::kNumCounters; ++i) *fields[i] = counter(i);
  return c;
}

Params Chip::params() {
  Params p;
  p.id = read_reg(reg::kId);
  p.n = read_reg(reg::kParamN);
  p.ub_rows = read_reg(reg::kParamUbRows);
  p.acc_rows = read_reg(reg::kParamAccRows);
  p.wfifo_tiles = read_reg(reg::kParamWfifoTiles);
  p.qp_slots = read_reg(reg::kParamQpSlots);
  p.axi_width = read_reg(reg::kParamAxiWidth);
  // PARAM_VMEM_ROWS reads 0 on the int8 chip: read only on the training chip, so the int8
  // chip's simulation keeps its timeline (start cycles of runs, VCD windows) exactly.
  p.vmem_rows = compiled_vmem_rows() != 0 ? read_reg(reg::kParamVmemRows) : 0;
  // Likewise the link registers, only on the pod chip.
  if (compiled_ici_links() != 0) {
    p.ici_links = read_reg(reg::kParamIciLinks);
    p.ici_link_up = read_reg(reg::kIciLinkUp);
  }
  // Likewise PARAM_DW_WIDTH, only on the depthwise chip.
  if (compiled_dw_width() != 0) p.dw_width = read_reg(reg::kParamDwWidth);
  return p;
}

Status Chip::status() {
  Status s;
  const uint32_t st = read_reg(reg::kStatus);
  s.busy = st & reg::kStatusBusy;
  s.done = st & reg::kStatusDone;
  s.error = st & reg::kStatusError;
  s.err_code = read_reg(reg::kErrCode);
  s.err_pc = read_reg(reg::kErrPc);
  s.pc = read_reg(reg::kPc);
  return s;
}

bool Chip::irq() const { return impl_->tb->irq.read(); }
const AxiBridgeStats& Chip::axi_stats() const { return impl_->tb->bridge.stats(); }
const AxiBridgeStats& Chip::vmem_axi_stats() const { return impl_->tb->vbridge.stats(); }
const AxiBridgeStats& Chip::weight_axi_stats() const { return impl_->tb->wbridge.stats(); }
uint64_t Chip::edges_run_ahead() const { return impl_->tb->core.edges_run_ahead(); }
uint64_t Chip::cycle() const { return impl_->cycle(); }

void Chip::set_instruction_trace(bool on) {
  Testbench& tb = *impl_->tb;
  if (on && !tb.trace_on) tb.trace_enable.notify(sc_core::SC_ZERO_TIME);
  tb.trace_on = on;
}
bool Chip::instruction_trace() const { return impl_->tb->trace_on; }
const std::vector<TraceEvent>& Chip::trace_events() const { return impl_->tb->trace.events(); }
uint64_t Chip::trace_run_cycles() const { return impl_->tb->trace.run_cycles(); }

const char* to_string(TraceUnit unit) {
  switch (unit) {
    case TraceUnit::kReadHost:
      return "read_host";
    case TraceUnit::kReadWeights:
      return "read_weights";
    case TraceUnit::kMatmul:
      return "matmul";
    case TraceUnit::kActivate:
      return "activate";
    case TraceUnit::kWriteHost:
      return "write_host";
    case TraceUnit::kControl:
      return "control";
    case TraceUnit::kMove:
      return "move";
    case TraceUnit::kVector:
      return "vector";
    case TraceUnit::kLoadWeights:
      return "load_weights";
  }
  return "?";
}

}  // namespace tpu::sim
