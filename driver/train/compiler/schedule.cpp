// SPDX-License-Identifier: Apache-2.0
#include "compiler/schedule.h"

#include <stdexcept>

namespace tpu::train::compiler {

namespace {

bool placed_by_host(TensorKind k) {
  return k == TensorKind::Input || k == TensorKind::Labels || k == TensorKind::Weight ||
         k == TensorKind::OptState || k == TensorKind::AdamState || k == TensorKind::Constant;
}

}  // namespace

void check_order(const Graph& g, const std::vector<int>& order, const char* program) {
  std::vector<bool> written(g.tensors.size(), false);
  for (size_t t = 0; t < g.tensors.size(); ++t) written[t] = placed_by_host(g.tensors[t].kind);
  auto memory = [&](int t) {  // a view is written when its image is
    while (g.tensors[static_cast<size_t>(t)].view_of >= 0)
      t = g.tensors[static_cast<size_t>(t)].view_of;
    return static_cast<size_t>(t);
  };
  for (int id : order) {
    const Node& n = g.nodes[static_cast<size_t>(id)];
    for (int in : n.in) {
      if (!written[memory(in)]) {
        throw std::logic_error(std::string("internal: schedule (") + program + "): node '" +
                               n.name + "' (" + op_name(n.op) + ") reads '" +
                               g.tensors[static_cast<size_t>(in)].name + "' before it is written");
      }
    }
    for (int out : n.out) written[memory(out)] = true;
  }
}

Schedule schedule(const Graph& g) {
  Schedule s;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    s.step.push_back(static_cast<int>(i));
    if (g.nodes[i].phase == Phase::Forward) s.forward.push_back(static_cast<int>(i));
  }
  check_order(g, s.step, "step");
  check_order(g, s.forward, "forward");
  return s;
}

}  // namespace tpu::train::compiler
