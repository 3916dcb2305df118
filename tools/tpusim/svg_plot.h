// SPDX-License-Identifier: Apache-2.0
// Line charts as standalone SVG for tpusim sweep and train: one or more panels side by side, each
// with a log2 x axis (N, bandwidth) or a linear one (training steps), and a linear y axis from 0
// (or log10), one polyline per series (with markers up to 100 points), a legend. No dependencies;
// the text is deterministic for the same data.
#pragma once

#include <string>
#include <vector>

namespace tpusim {

struct PlotSeries {
  std::string label;
  std::vector<double> x, y;  // same length; points with a non-finite y are skipped
};

struct PlotPanel {
  std::string title;
  std::vector<PlotSeries> series;
};

struct PlotSpec {
  std::string title;
  std::string x_label, y_label;
  bool y_percent = false;  // y in [0, 1] shown as 0..100 %
  bool y_log = false;      // log10 y axis over whole decades (y <= 0 skipped), else from 0
  bool x_linear = false;   // linear x axis, "nice" ticks of at least 1 (else log2, x > 0)
  std::vector<PlotPanel> panels;
};

// The chart as an SVG document. Throws std::invalid_argument for an x <= 0 (log2 axis) or
// series whose x and y differ in length.
std::string line_chart_svg(const PlotSpec& spec);

}  // namespace tpusim
