// SPDX-License-Identifier: Apache-2.0
// Reports of an evaluation that people look at (tpusim run-cnn --report DIR / --timeline F.json,
// docs/cnn.md "Reports"):
//  * utilization_svg: per layer, cycles per image on the chip against the ideal (MACs / N^2) and
//    the SCALE-Sim weight-stationary estimate, and the MXU utilization; hand-written SVG.
//  * timeline_json: the chip's instruction timeline (Device::timeline, from the RTL trace port) in
//    Chrome trace-event format, for Perfetto (ui.perfetto.dev) or chrome://tracing: one track per
//    unit, one slice per instruction.
#pragma once

#include <string>
#include <vector>

#include "evaluate.h"

namespace tpu::cnn {

// The chart of e.layers (one bar group per layer). Throws Error if there is no per-layer
// profile (EvalOptions::profile off).
std::string utilization_svg(const Evaluation& e);

// A small HTML page showing the chart (utilization.svg next to it) and the per-layer table.
std::string report_html(const Evaluation& e);
// Energy per image by component and by layer (Evaluation's action counts and table), an SVG.
std::string energy_svg(const Evaluation& e);

// The instruction timeline of e.timeline as a Chrome trace-event JSON object:
//   {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
// One "X" (complete) event per issued instruction: ts / dur in microseconds of simulated time
// with the chip's 1 GHz clock, i.e. 1 ns = 1 cycle (exact: cycles / 1000 with three decimals);
// args hold pc, the disassembled instruction, the layer and the cycles. Tracks (tid) per unit;
// a unit that holds several instructions at once (matmul, read_weights) gets as many tracks
// ("matmul", "matmul 2", ...) so that slices on one track never overlap. Throws Error if
// e.timeline is empty.
std::string timeline_json(const Evaluation& e);

// Writes `bytes` to `path` all or nothing (tpu::OutputFile: a temporary file renamed when
// complete); throws Error("PATH: ... (reason)") on failure and leaves an existing file as it was.
void write_text_file(const std::string& path, const std::string& bytes);

}  // namespace tpu::cnn
