// SPDX-License-Identifier: Apache-2.0
// Inference across the chips of a pod (driver/cnn/pod_inference.h, `tpusim run-cnn --chips P`)
// on the pod of golden models: the gather programs bring every chip's bytes to chip 0 over the
// links, and the bundled CNN on a pod of 2 and 4 chips (rings, the torus 2x2) gives exactly the
// logits, predictions and accuracies of the one-chip run of the same images (ModelDevice,
// evaluate()), whatever the split of the batch, with every logit read from chip 0.
#include "pod_inference.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "dataset.h"
#include "device_model.h"
#include "evaluate.h"
#include "onnx_import.h"
#include "quantize.h"
#include "runner.h"

namespace {

using namespace tpu;
using namespace tpu::cnn;

constexpr uint32_t kN = 16;
constexpr uint32_t kBase = 0x1000'0000u;

// The gather alone: random bytes at each chip's source rows end up, chunk r from chip r, in
// chip 0's destination.
void check_gather(const PodTopology& topo, uint32_t chunk_rows) {
  const ChipParams chip = ChipParams::pod(4, 4);
  const uint32_t row = 4 * chip.N, p = topo.chips();
  const uint32_t src = kBase, dst = kBase + 0x10000;
  auto pod = golden_inference_pod(topo, chip, LinkTiming{16, 5});
  pod->map(kBase, 0x40000);
  std::mt19937 rng(p * 131 + chunk_rows);
  std::vector<uint8_t> want;
  for (uint32_t r = 0; r < p; ++r) {
    std::vector<uint8_t> bytes(size_t{chunk_rows} * row);
    for (auto& b : bytes) b = uint8_t(rng());
    pod->load(r, src, bytes);
    want.insert(want.end(), bytes.begin(), bytes.end());
  }
  const auto programs = gather_programs(chip, topo, 3, chunk_rows, src, dst);
  const InferencePod::Run run = pod->run(programs, 0, "gather");
  EXPECT_EQ(pod->dump(0, dst, want.size()), want) << topo.name() << " chunk " << chunk_rows;
  // Chip r's chunk crosses one link per hop to chip 0 (ring distance, the shorter way round the
  // split; on a torus x hops then y hops).
  uint64_t hops = 0;
  for (uint32_t r = 0; r < p; ++r) {
    const uint32_t x = r % topo.x, y = r / topo.x;
    hops += (x <= topo.x / 2 ? x : topo.x - x) + (y <= topo.y / 2 ? y : topo.y - y);
  }
  EXPECT_EQ(run.link_bytes, hops * chunk_rows * row) << topo.name();
}

TEST(PodGather, EveryChunkReachesChipZero) {
  for (uint32_t p = 1; p <= 6; ++p)
    for (uint32_t rows : {1u, 3u}) check_gather(PodTopology::ring(p), rows);
  for (auto [x, y] : {std::pair{2u, 2u}, {3u, 2u}, {2u, 3u}, {1u, 3u}, {4u, 2u}})
    check_gather(PodTopology::torus(x, y), 2);
}

TEST(PodGather, RefusesWhatDoesNotFit) {
  const ChipParams chip = ChipParams::pod(4, 4);
  try {
    gather_programs(chip, PodTopology::ring(4), 0, chip.vmem_rows / 2, kBase, kBase);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit the chip's VMEM"), std::string::npos)
        << e.what();
  }
  try {
    gather_programs(ChipParams::pod(4, 2), PodTopology::torus(2, 2), 0, 1, kBase, kBase);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 4 links"), std::string::npos) << e.what();
  }
}

TEST(PodGather, SlicesAreEvenAndCoverTheBatch) {
  EXPECT_EQ(pod_slices(8, 4), (std::vector<uint32_t>{2, 2, 2, 2}));
  EXPECT_EQ(pod_slices(6, 4), (std::vector<uint32_t>{1, 2, 1, 2}));
  EXPECT_EQ(pod_slices(3, 4), (std::vector<uint32_t>{0, 1, 1, 1}));
  EXPECT_EQ(pod_slices(5, 1), (std::vector<uint32_t>{5}));
}

// A pod that records which chips the host reads.
class ReadLog : public InferencePod {
 public:
  explicit ReadLog(std::unique_ptr<InferencePod> pod) : pod_(std::move(pod)) {}
  const PodTopology& topology() const override { return pod_->topology(); }
  const ChipParams& params() const override { return pod_->params(); }
  std::string backend() const override { return pod_->backend(); }
  bool cycles_estimated() const override { return pod_->cycles_estimated(); }
  void map(uint32_t base, uint32_t bytes) override { pod_->map(base, bytes); }
  void load(uint32_t chip, uint32_t addr, const std::vector<uint8_t>& bytes) override {
    pod_->load(chip, addr, bytes);
  }
  std::vector<uint8_t> dump(uint32_t chip, uint32_t addr, size_t bytes) override {
    read_chips.insert(chip);
    return pod_->dump(chip, addr, bytes);
  }
  Run run(const std::vector<std::vector<Instruction>>& programs, uint64_t max_cycles,
          const std::string& what) override {
    ++runs;
    return pod_->run(programs, max_cycles, what);
  }
  std::set<uint32_t> read_chips;
  int runs = 0;

 private:
  std::unique_ptr<InferencePod> pod_;
};

struct Fashion {
  Network net;
  QuantNetwork q;
  ImageSet test;
};

const Fashion& fashion() {
  static const Fashion* f = [] {
    auto* x = new Fashion;
    x->net = load_onnx(std::string(TPU_CNN_SOURCE_DIR) + "/models/fashion_cnn.onnx");
    const ImageSet train = load_fashion_mnist(fashion_mnist_dir(), true);
    std::vector<std::vector<float>> cal;
    for (int i = 0; i < 20; ++i)
      cal.push_back(pixels_to_float(train.image(i), int64_t(train.rows) * train.cols));
    x->q = quantize_model(x->net, cal);
    x->test = load_fashion_mnist(fashion_mnist_dir(), false);
    return x;
  }();
  return *f;
}

// The one-chip run-cnn evaluation of images [offset, offset + count) at `batch`.
Evaluation one_chip(int offset, int count, uint32_t batch) {
  ModelDevice dev(ChipParams::with_n(kN));
  EvalOptions o;
  o.offset = offset;
  o.count = count;
  o.batch = batch;
  o.profile = false;
  return evaluate(dev, fashion().net, fashion().q, fashion().test, o);
}

void expect_same_as_one_chip(const PodTopology& topo, int offset, int count, uint32_t batch) {
  SCOPED_TRACE(topo.name() + " P=" + std::to_string(topo.chips()) + " batch " +
               std::to_string(batch) + " images " + std::to_string(count));
  const Evaluation one = one_chip(offset, count, batch);
  const LinkTiming timing{16, 64};
  ReadLog pod(golden_inference_pod(topo, ChipParams::pod(kN, topo.links_needed()), timing));
  EvalOptions o;
  o.offset = offset;
  o.count = count;
  o.batch = batch;
  int batches_seen = 0;
  o.on_batch = [&](const std::vector<ImageResult>&, int, int) { ++batches_seen; };
  PodFigures f;
  const Evaluation e = evaluate_pod(pod, timing, fashion().net, fashion().q, fashion().test, o, f);
  ASSERT_EQ(e.results.size(), one.results.size());
  for (size_t i = 0; i < e.results.size(); ++i) {
    EXPECT_EQ(e.results[i].index, one.results[i].index);
    EXPECT_EQ(e.results[i].logits, one.results[i].logits) << "image " << i;
    EXPECT_EQ(e.results[i].predicted, one.results[i].predicted) << "image " << i;
    EXPECT_EQ(e.results[i].float_predicted, one.results[i].float_predicted);
    EXPECT_EQ(e.results[i].label, one.results[i].label);
    EXPECT_TRUE(e.results[i].matches_reference) << "image " << i;
  }
  EXPECT_EQ(e.correct, one.correct);
  EXPECT_EQ(e.accuracy(), one.accuracy());
  EXPECT_EQ(e.reference_correct, one.reference_correct);
  EXPECT_EQ(e.float_correct, one.float_correct);
  EXPECT_TRUE(e.matches_reference());
  EXPECT_EQ(e.mismatches, 0);
  // The host read the logits from chip 0 only, after one inference and one gather run per batch.
  EXPECT_EQ(pod.read_chips, std::set<uint32_t>{0});
  const int batches = (count + int(batch) - 1) / int(batch);
  EXPECT_EQ(pod.runs, 2 * batches);
  EXPECT_EQ(batches_seen, batches);
  EXPECT_EQ(f.batches, uint64_t(batches));
  EXPECT_EQ(f.chips, topo.chips());
  EXPECT_EQ(f.topology, topo.name());
  ASSERT_EQ(f.chip_images.size(), topo.chips());
  uint32_t images = 0;
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    images += f.chip_images[r];
    if (f.chip_images[r] > 0) {
      EXPECT_GT(f.chip_cycles[r], 0u) << "chip " << r;
    }
  }
  EXPECT_EQ(images, uint32_t(count));
  EXPECT_EQ(e.cycles_total, f.inference_cycles + f.gather_cycles);
  EXPECT_GT(f.gather_cycles, 0u);
  if (topo.chips() > 1) {
    EXPECT_GT(f.gather_link_bytes, 0u);
  }
  EXPECT_GT(f.gather_share(), 0.0);
  EXPECT_LT(f.gather_share(), 1.0);
}

TEST(PodInference, RingOfTwoEqualsOneChip) {
  expect_same_as_one_chip(PodTopology::ring(2), 0, 20, 8);
}

TEST(PodInference, RingOfFourEqualsOneChip) {
  expect_same_as_one_chip(PodTopology::ring(4), 100, 20, 8);
}

TEST(PodInference, TorusTwoByTwoEqualsOneChip) {
  expect_same_as_one_chip(PodTopology::torus(2, 2), 40, 12, 8);
}

TEST(PodInference, UnevenSlicesEqualOneChip) {
  // batch 6 on 4 chips: slices 1, 2, 1, 2; the last batch of 3: a chip with no image.
  expect_same_as_one_chip(PodTopology::ring(4), 7, 9, 6);
  // a batch smaller than the pod
  expect_same_as_one_chip(PodTopology::ring(4), 3, 2, 2);
}

TEST(PodInference, OneChipPodEqualsOneChip) {
  expect_same_as_one_chip(PodTopology::ring(1), 0, 5, 4);
}

}  // namespace
