// SPDX-License-Identifier: Apache-2.0
// The parts of an evaluation that one chip (evaluate.cpp) and a pod of chips
// (pod_inference.cpp) share: the images as the evaluation reads them, the checked start of an
// Evaluation, each image's check against the integer reference and the float model, and the
// program's action and DMA counts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "evaluate.h"

namespace tpu::cnn {

// The images of a set as the evaluation needs them (uint8 pixels or float images). Holds
// references to the set and to `q`: both must outlive it.
struct ImageSource {
  int count = 0;
  std::function<int(int)> label;                       // -1 = none
  std::function<void(int, int32_t*)> quantize;         // the quantized input
  std::function<std::vector<float>(int)> float_input;  // the model input
};

// Checks the set's image shape against the model (Error "wrong input shape ...").
ImageSource image_source(const Network& float_net, const QuantNetwork& q, const ImageSet& set);
ImageSource image_source(const Network& float_net, const QuantNetwork& q, const FloatImageSet& set);

// An Evaluation with the run's identity filled in (model, backend, chip, layers, images,
// batch). Throws Error when o's images lie outside the set.
Evaluation begin_evaluation(const Network& float_net, const QuantNetwork& q, const ChipParams& chip,
                            const std::string& backend, const ImageSource& set,
                            const EvalOptions& o);

// Images first.. of a batch, whose quantized inputs are `inputs` and whose logits the chip
// returned in `outputs`: each checked against the integer reference and the float model,
// counted into `e`.
std::vector<ImageResult> check_images(const Network& float_net, const QuantNetwork& q,
                                      const ImageSource& set, int first,
                                      const std::vector<const int32_t*>& inputs,
                                      const std::vector<std::vector<int32_t>>& outputs,
                                      Evaluation& e);

// The actions of every instruction of `p` (once each), per layer and in total.
void add_actions(Evaluation& e, const Program& p, const ChipParams& chip);

// The DMA of a whole program: its layers' and the rest.
LayerDma program_dma(const Program& p);

}  // namespace tpu::cnn
