// SPDX-License-Identifier: Apache-2.0
// The pod options that `run-cnn --chips P` and `train --chips P` share: --chips, --topology
// (default ring), --ici-bandwidth and --ici-latency (defaults tpu::LinkTiming's).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "pod.h"
#include "tpusim.h"

namespace tpusim {

// Reads them into chips / topology / timing and returns true; without --chips returns false
// after refusing the other three (each "is for --chips P"). UsageError on a bad value.
inline bool read_pod_options(const po::variables_map& vm, uint32_t& chips,
                             tpu::PodTopology& topology, tpu::LinkTiming& timing) {
  if (!vm.count("chips")) {
    for (const char* opt : {"topology", "ici-bandwidth", "ici-latency"})
      if (vm.count(opt)) throw UsageError(std::string("--") + opt + " is for --chips P");
    return false;
  }
  chips = uint32_t(int_option(vm, "chips", 1, 64));
  try {
    topology = tpu::PodTopology::parse(
        vm.count("topology") ? vm["topology"].as<std::string>() : "ring", chips);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--topology: ") + e.what());
  }
  if (vm.count("ici-bandwidth"))
    timing.bytes_per_cycle = uint32_t(int_option(vm, "ici-bandwidth", 1, 4096));
  if (vm.count("ici-latency")) timing.latency = uint32_t(int_option(vm, "ici-latency", 0, 1000000));
  return true;
}

}  // namespace tpusim
