// SPDX-License-Identifier: Apache-2.0
#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "xml_text.h"

namespace tpusim {

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// A short label for an axis value: 1234567 -> "1.23M", 0.5 -> "0.5".
std::string tick_label(double v, bool percent) {
  char b[32];
  if (percent) {
    std::snprintf(b, sizeof b, "%g%%", 100 * v);
  } else if (std::fabs(v) >= 1e6) {
    std::snprintf(b, sizeof b, "%gM", v / 1e6);
  } else if (std::fabs(v) >= 1e3) {
    std::snprintf(b, sizeof b, "%gk", v / 1e3);
  } else {
    std::snprintf(b, sizeof b, "%g", v);
  }
  return b;
}

// A "nice" step for about `ticks` ticks over [0, hi].
double nice_step(double hi, int ticks) {
  const double raw = hi / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                         "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// Shared axes over all panels, so panels compare at a glance; the legend's labels.
struct Axes {
  double xmin = std::numeric_limits<double>::infinity(), ymax = 0;
  double xmax = -std::numeric_limits<double>::infinity();
  double ymin_pos = std::numeric_limits<double>::infinity();
  std::set<double> xs;
  std::vector<std::string> labels;  // legend: series labels in first-seen order
  double step = 1;                  // linear y: the tick step
  double d0 = 0, d1 = 1;            // log y: whole decades [10^d0, 10^d1]
  double lx0 = 0, lx1 = 1;  // x: log2 (or linear), a little margin so the end points sit inside
};

Axes scan_axes(const PlotSpec& spec) {
  Axes a;
  for (const auto& p : spec.panels)
    for (const auto& s : p.series) {
      if (s.x.size() != s.y.size())
        throw std::invalid_argument("line_chart_svg: series '" + s.label + "' has " +
                                    std::to_string(s.x.size()) + " x and " +
                                    std::to_string(s.y.size()) + " y values (expected equal)");
      if (std::find(a.labels.begin(), a.labels.end(), s.label) == a.labels.end())
        a.labels.push_back(s.label);
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (spec.x_linear ? !std::isfinite(s.x[i]) : !(s.x[i] > 0))
          throw std::invalid_argument("line_chart_svg: x = " + std::to_string(s.x[i]) + " in '" +
                                      s.label +
                                      (spec.x_linear ? "' (expected a finite value)"
                                                     : "' (expected > 0: the x axis is log2)"));
        if (!std::isfinite(s.y[i]) || (spec.y_log && !(s.y[i] > 0))) continue;
        a.ymin_pos = std::min(a.ymin_pos, s.y[i]);
        a.xmin = std::min(a.xmin, s.x[i]);
        a.xmax = std::max(a.xmax, s.x[i]);
        a.ymax = std::max(a.ymax, s.y[i]);
        a.xs.insert(s.x[i]);
      }
    }
  if (a.xs.empty()) a.xmin = a.xmax = 1;
  if (a.ymax <= 0) a.ymax = 1;
  if (spec.y_percent) a.ymax = std::max(a.ymax, 1.0);
  a.step = nice_step(a.ymax, 5);
  a.ymax = std::ceil(a.ymax / a.step - 1e-9) * a.step;
  a.d0 = std::isfinite(a.ymin_pos) ? std::floor(std::log10(a.ymin_pos)) : 0;
  a.d1 = std::isfinite(a.ymin_pos) ? std::ceil(std::log10(a.ymax)) : 1;
  if (a.d1 <= a.d0) a.d1 = a.d0 + 1;
  auto fx = [&](double x) { return spec.x_linear ? x : std::log2(x); };
  const double span = std::max(1.0, fx(a.xmax) - fx(a.xmin));
  a.lx0 = fx(a.xmin) - 0.06 * span;
  a.lx1 = fx(a.xmin) + 1.06 * span;
  if (spec.x_linear) {  // ticks at a nice step instead of at every x
    const double xstep = std::max(1.0, nice_step(span, 6));  // steps and epochs: whole numbers
    a.xs.clear();
    for (double x = std::ceil(a.xmin / xstep) * xstep; x <= a.xmax + 1e-9 * span; x += xstep)
      a.xs.insert(x);
  }
  return a;
}

}  // namespace

std::string line_chart_svg(const PlotSpec& spec) {
  const int panel_w = 300, panel_h = 220, left = 64, top = 56, gap = 40, bottom = 64;
  const int panels = std::max<int>(1, int(spec.panels.size()));
  const Axes a = scan_axes(spec);
  const std::set<double>& xs = a.xs;
  const std::vector<std::string>& labels = a.labels;
  const double ymax = a.ymax, step = a.step, d0 = a.d0, d1 = a.d1, lx0 = a.lx0, lx1 = a.lx1;
  const int legend_h = 20 * int((labels.size() + 3) / 4);
  const int width = left + panels * panel_w + (panels - 1) * gap + 24;
  const int height = top + panel_h + bottom + legend_h;

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << width / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">"
    << tpu::xml_escape(spec.title) << "</text>\n";
  for (int pi = 0; pi < panels; ++pi) {
    const int x0 = left + pi * (panel_w + gap), y0 = top;
    auto fx = [&](double x) { return spec.x_linear ? x : std::log2(x); };
    auto px = [&](double x) { return x0 + (fx(x) - lx0) / (lx1 - lx0) * panel_w; };
    auto py = [&](double y) {
      const double f = spec.y_log ? (std::log10(y) - d0) / (d1 - d0) : y / ymax;
      return y0 + panel_h - f * panel_h;
    };
    if (pi < int(spec.panels.size()))
      o << "<text x=\"" << x0 + panel_w / 2 << "\" y=\"" << y0 - 10 << "\" text-anchor=\"middle\">"
        << tpu::xml_escape(spec.panels[size_t(pi)].title) << "</text>\n";
    o << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << panel_w << "\" height=\""
      << panel_h << "\" fill=\"none\" stroke=\"#888\"/>\n";
    std::vector<double> ticks;
    if (spec.y_log) {
      for (double d = d0; d <= d1 + 1e-9; ++d) ticks.push_back(std::pow(10.0, d));
    } else {
      for (double y = 0; y <= ymax + step / 2; y += step) ticks.push_back(y);
    }
    for (double y : ticks) {
      o << "<line x1=\"" << x0 << "\" x2=\"" << x0 + panel_w << "\" y1=\"" << num(py(y))
        << "\" y2=\"" << num(py(y)) << "\" stroke=\"#eee\"/>\n";
      if (pi == 0)
        o << "<text x=\"" << x0 - 4 << "\" y=\"" << num(py(y) + 4) << "\" text-anchor=\"end\">"
          << tick_label(y, spec.y_percent) << "</text>\n";
    }
    for (double x : xs)
      o << "<text x=\"" << num(px(x)) << "\" y=\"" << y0 + panel_h + 14
        << "\" text-anchor=\"middle\">" << tick_label(x, false) << "</text>\n";
    o << "<text x=\"" << x0 + panel_w / 2 << "\" y=\"" << y0 + panel_h + 32
      << "\" text-anchor=\"middle\">" << tpu::xml_escape(spec.x_label) << "</text>\n";
    if (pi >= int(spec.panels.size())) continue;
    for (const auto& s : spec.panels[size_t(pi)].series) {
      const size_t ci = size_t(std::find(labels.begin(), labels.end(), s.label) - labels.begin());
      const char* color = kColors[ci % (sizeof kColors / sizeof kColors[0])];
      std::vector<std::pair<double, double>> pts;
      for (size_t i = 0; i < s.x.size(); ++i)
        if (std::isfinite(s.y[i]) && (!spec.y_log || s.y[i] > 0)) pts.emplace_back(s.x[i], s.y[i]);
      std::sort(pts.begin(), pts.end());
      o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"";
      for (size_t i = 0; i < pts.size(); ++i)
        o << (i ? " " : "") << num(px(pts[i].first)) << "," << num(py(pts[i].second));
      o << "\"/>\n";
      for (const auto& p : pts) {
        if (pts.size() > 100) break;  // a long curve (training steps): the line alone
        o << "<circle cx=\"" << num(px(p.first)) << "\" cy=\"" << num(py(p.second))
          << "\" r=\"2.5\" fill=\"" << color << "\"><title>" << tpu::xml_escape(s.label) << ": "
          << tick_label(p.first, false) << " -> " << p.second << "</title></circle>\n";
      }
    }
  }
  o << "<text transform=\"translate(14," << top + panel_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << tpu::xml_escape(spec.y_label) << "</text>\n";
  for (size_t i = 0; i < labels.size(); ++i) {
    const int lx = left + int(i % 4) * 170, ly = top + panel_h + bottom - 10 + 20 * int(i / 4);
    const char* color = kColors[i % (sizeof kColors / sizeof kColors[0])];
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 20 << "\" y1=\"" << ly - 4 << "\" y2=\""
      << ly - 4 << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n";
    o << "<text x=\"" << lx + 26 << "\" y=\"" << ly << "\">" << tpu::xml_escape(labels[i])
      << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace tpusim
