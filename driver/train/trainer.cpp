// SPDX-License-Identifier: Apache-2.0
// FIRST COMMIT ONLY: the agreed interface, not implemented yet (issue 30 item 4 in progress).
#include "trainer.h"

#include <stdexcept>

namespace tpu::train {

class TrainerImpl {};

namespace {
[[noreturn]] void todo() { throw std::logic_error("Trainer: not implemented yet"); }
}  // namespace

Trainer::Trainer(const std::string&, const TrainOptions&, const ChipParams&) { todo(); }
Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;
uint32_t Trainer::classes() const { todo(); }
std::array<uint32_t, 3> Trainer::input_chw() const { todo(); }
void Trainer::init(Device&) { todo(); }
StepResult Trainer::step(Device&, const float*, const int32_t*) { todo(); }
std::vector<float> Trainer::logits(Device&, const float*, uint32_t) { todo(); }
std::map<std::string, std::vector<float>> Trainer::weights(Device&) const { todo(); }
std::vector<LayerCycles> Trainer::layer_cycles() const { todo(); }
size_t Trainer::step_instructions() const { todo(); }
double Trainer::compile_seconds() const { todo(); }

}  // namespace tpu::train
