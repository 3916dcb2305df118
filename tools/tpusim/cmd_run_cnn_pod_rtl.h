// SPDX-License-Identifier: Apache-2.0
// `tpusim run-cnn --chips P --backend rtl`: the RTL pod (sim/pod_rtl.h) as the pod of
// driver/cnn/pod_inference.h, registered by cmd_run_cnn_pod_rtl.cpp in the binaries that link
// an RTL pod of their training chip (tpusim_train_n<N> with tpu_pod_rtl_n<N>); cmd_run_cnn.cpp
// reaches it here.
#pragma once

#include <cstdint>
#include <memory>

#include "pod.h"
#include "pod_inference.h"

namespace tpusim {

struct RunCnnPodRtl {
  tpu::ChipParams (*params)();  // the Verilated pod chip's
  uint32_t bytes_per_cycle;     // its links' (IciWidth / 8)
  // The RTL pod of this topology and link latency (>= 1). Throws std::invalid_argument naming
  // what the built pod cannot do (too few links, latency 0).
  std::unique_ptr<tpu::cnn::InferencePod> (*make)(const tpu::PodTopology&, const tpu::LinkTiming&);
};

// The registered RTL pod, or nullptr (the binaries without one).
const RunCnnPodRtl*& run_cnn_pod_rtl();

}  // namespace tpusim
