// SPDX-License-Identifier: Apache-2.0
#include "compiler/residency.h"

#include <algorithm>
#include <stdexcept>

namespace tpu::train::compiler {

std::vector<int> residency_candidates(const Graph& g, const Placement& p) {
  std::vector<int> c;
  for (const Param& q : g.params) {
    c.push_back(q.tensor);
    c.insert(c.end(), q.state.begin(), q.state.end());
  }
  if (g.adam_state >= 0) c.push_back(g.adam_state);
  if (g.pad_row >= 0) c.push_back(g.pad_row);
  std::vector<uint32_t> reuse(g.tensors.size(), 0);
  for (const Node& nd : g.nodes) {
    for (int t : nd.in) ++reuse[static_cast<size_t>(t)];
  }
  auto rows = [&](int t) { return p.homes[static_cast<size_t>(t)].rows; };
  c.erase(std::remove_if(c.begin(), c.end(),
                         [&](int t) { return t < 0 || reuse[static_cast<size_t>(t)] == 0; }),
          c.end());
  std::stable_sort(c.begin(), c.end(), [&](int a, int b) {
    const uint32_t ra = reuse[static_cast<size_t>(a)], rb = reuse[static_cast<size_t>(b)];
    if (ra != rb) return ra > rb;
    return rows(a) < rows(b);
  });
  return c;
}

void place_resident(const Graph& g, Placement& p, const ChipParams& chip) {
  place_resident(g, p, chip, {});
}

void place_resident(const Graph& g, Placement& p, const ChipParams& chip,
                    const std::vector<int>& streamed_only) {
  p.vmem.assign(g.tensors.size(), -1);
  p.resident_rows = 0;
  if (g.pod.chips() > 1) return;  // the all-reduce needs all of VMEM
  const uint32_t budget = static_cast<uint32_t>(chip.vmem_rows * kResidentShare);
  const Placement streamed = p;
  for (int t : residency_candidates(g, p)) {
    if (std::find(streamed_only.begin(), streamed_only.end(), t) != streamed_only.end()) continue;
    const uint32_t rows = p.homes[static_cast<size_t>(t)].rows;
    if (p.resident_rows + rows > budget) continue;
    Placement q = p;
    q.resident_rows += rows;
    q.vmem[static_cast<size_t>(t)] = static_cast<int32_t>(chip.vmem_rows - q.resident_rows);
    try {
      choose_chunks(g, q, chip);
    } catch (const std::invalid_argument&) {
      continue;  // a node would no longer fit the rows below: t streams
    }
    p = std::move(q);
  }
  if (p.resident_rows == 0) p = streamed;
}

}  // namespace tpu::train::compiler
