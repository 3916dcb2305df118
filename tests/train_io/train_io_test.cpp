// SPDX-License-Identifier: Apache-2.0
// tpusim train's data and model files (driver/train/io): the idx reader on small generated
// files, the host's data checks, the batch order (file order and seeded shuffle, epochs that
// continue), SplitMix64 against its published first output, the Glorot-uniform default model
// (deterministic per seed, within its limits, importable by the float importer), and
// export_trained_onnx (weights replaced bit for bit, everything else kept, errors named).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "model_io.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "temp_dir.h"
#include "train_data.h"
#include "trainer.h"

namespace {

using namespace tpu::train;

void put_be32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(char((v >> (8 * i)) & 0xff));
}

// An idx3 file of `count` rows x cols images (pixel = (image * 7 + p) mod 256) and an idx1 file
// of labels (image mod classes); gzip-compressed when `gz`.
void write_idx(const std::string& images, const std::string& labels, uint32_t count, uint32_t rows,
               uint32_t cols, uint32_t classes, bool gz) {
  std::string a, b;
  put_be32(a, 0x00000803);
  put_be32(a, count);
  put_be32(a, rows);
  put_be32(a, cols);
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t p = 0; p < rows * cols; ++p) a.push_back(char((i * 7 + p) % 256));
  put_be32(b, 0x00000801);
  put_be32(b, count);
  for (uint32_t i = 0; i < count; ++i) b.push_back(char(i % classes));
  for (const auto& [path, bytes] : {std::pair{images, a}, std::pair{labels, b}}) {
    if (gz) {
      gzFile f = gzopen(path.c_str(), "wb");
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary) << bytes;
    }
  }
}

TEST(TrainData, IdxReaderPlainAndGzip) {
  const std::string d = test_support::temp_dir();
  for (bool gz : {false, true}) {
    const std::string im = d + (gz ? "im.gz" : "im"), lb = d + (gz ? "lb.gz" : "lb");
    write_idx(im, lb, 5, 3, 4, 3, gz);
    const TrainSet s = load_idx_set(im, lb, "small");
    ASSERT_EQ(s.count, 5u);
    EXPECT_EQ(s.chw, (std::array<uint32_t, 3>{1, 3, 4}));
    EXPECT_EQ(s.labels, (std::vector<int32_t>{0, 1, 2, 0, 1}));
    std::vector<float> x(2 * 12);
    std::vector<int32_t> l(2);
    const uint32_t idx[2] = {4, 1};
    s.gather(idx, 2, x.data(), l.data());
    for (uint32_t p = 0; p < 12; ++p) {
      EXPECT_EQ(x[p], float((4 * 7 + p) % 256) / 255.0f);
      EXPECT_EQ(x[12 + p], float((1 * 7 + p) % 256) / 255.0f);
    }
    EXPECT_EQ(l, (std::vector<int32_t>{1, 1}));
  }
}

TEST(TrainData, FashionMnistLayout) {
  const std::string d = test_support::temp_dir() + "fm";
  std::filesystem::create_directories(d);
  write_idx(d + "/train-images-idx3-ubyte.gz", d + "/train-labels-idx1-ubyte.gz", 6, 28, 28, 10,
            true);
  write_idx(d + "/t10k-images-idx3-ubyte", d + "/t10k-labels-idx1-ubyte", 2, 28, 28, 10, false);
  EXPECT_EQ(load_fashion_mnist_set(d, true).count, 6u);
  const TrainSet t = load_fashion_mnist_set(d, false);  // plain files are read too
  EXPECT_EQ(t.count, 2u);
  EXPECT_EQ(t.classes.size(), 10u);
  try {
    load_fashion_mnist_set(d + "/missing", true);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

TEST(TrainData, TruncatedIdxIsAnError) {
  const std::string d = test_support::temp_dir();
  write_idx(d + "t_im", d + "t_lb", 4, 2, 2, 2, false);
  std::filesystem::resize_file(d + "t_im", 16 + 4 * 4 - 3);
  EXPECT_THROW(load_idx_set(d + "t_im", d + "t_lb", "truncated"), std::runtime_error);
}

TEST(TrainData, ChecksNameTheProblem) {
  const std::string d = test_support::temp_dir();
  write_idx(d + "c_im", d + "c_lb", 12, 2, 2, 12, false);
  const TrainSet s = load_idx_set(d + "c_im", d + "c_lb", "twelve");
  EXPECT_NO_THROW(check_set(s, 12, {1, 2, 2}, "--dataset"));
  try {
    check_set(s, 10, {1, 2, 2}, "--dataset");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("image 10 has label 10, outside the model's 10 classes 0..9"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(check_set(s, 12, {1, 28, 28}, "--dataset"), std::invalid_argument);
  write_idx(d + "e_im", d + "e_lb", 0, 2, 2, 2, false);
  const TrainSet empty = load_idx_set(d + "e_im", d + "e_lb", "empty");
  try {
    check_set(empty, 10, {1, 2, 2}, "--dataset");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the data set is empty"), std::string::npos) << e.what();
  }
}

// SplitMix64's published first outputs for seed 0 (the reference C code of Vigna's site).
TEST(TrainData, SplitMix64KnownOutputs) {
  uint64_t s = 0;
  EXPECT_EQ(splitmix64(s), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64(s), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(splitmix64(s), 0x06C45D188009454Full);
}

TEST(TrainData, FileOrderContinuesAcrossEpochs) {
  BatchOrder o(5, std::nullopt);
  std::vector<uint32_t> got(12);
  o.next(3, got.data());
  o.next(3, got.data() + 3);  // spans the end of the first pass
  o.next(6, got.data() + 6);
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}));
  EXPECT_EQ(o.taken(), 12u);
}

// Seeded: each pass is a permutation, passes differ, the same seed repeats the stream, and the
// first pass is the Fisher-Yates shuffle written out here from the documented definition.
TEST(TrainData, SeededShuffleIsDocumentedFisherYates) {
  const uint32_t n = 10;
  BatchOrder a(n, 42), b(n, 42), c(n, 43);
  std::vector<uint32_t> pa(3 * n), pb(3 * n), pc(3 * n);
  a.next(3 * n, pa.data());
  b.next(3 * n, pb.data());
  c.next(3 * n, pc.data());
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
  for (uint32_t p = 0; p < 3; ++p) {
    std::set<uint32_t> s(pa.begin() + p * n, pa.begin() + (p + 1) * n);
    EXPECT_EQ(s.size(), n);
  }
  EXPECT_FALSE(std::equal(pa.begin(), pa.begin() + n, pa.begin() + n));
  std::vector<uint32_t> want(n);
  for (uint32_t i = 0; i < n; ++i) want[i] = i;
  uint64_t state = 42;
  for (uint32_t i = n - 1; i > 0; --i) {
    // SplitMix64 step, written out
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::swap(want[i], want[z % (i + 1)]);
  }
  EXPECT_EQ(std::vector<uint32_t>(pa.begin(), pa.begin() + n), want);
}

TEST(DefaultModel, GlorotUniformDeterministicAndBounded) {
  uint64_t s1 = 7, s2 = 7, s3 = 8;
  const auto a = glorot_uniform(1000, 9, 576, s1);
  const auto b = glorot_uniform(1000, 9, 576, s2);
  const auto c = glorot_uniform(1000, 9, 576, s3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const double limit = std::sqrt(6.0 / 585.0);
  double sum = 0, lo = 1, hi = -1;
  for (float v : a) {
    EXPECT_LT(std::fabs(v), limit);
    sum += v;
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
  }
  EXPECT_LT(std::fabs(sum / 1000), 0.1 * limit);  // uniform around 0
  EXPECT_LT(lo, -0.9 * limit);
  EXPECT_GT(hi, 0.9 * limit);
  // The first value from the documented formula: u = (splitmix64 >> 40) * 2^-24.
  uint64_t s = 0;
  const double u = double(0xE220A8397B1DCDAFull >> 40) / 16777216.0;
  EXPECT_EQ(glorot_uniform(1, 9, 576, s)[0], float((2 * u - 1) * limit));
}

TEST(DefaultModel, KerasExampleShapes) {
  const std::string m = keras_example_onnx(1);
  EXPECT_EQ(m, keras_example_onnx(1));
  EXPECT_NE(m, keras_example_onnx(2));
  const ModelShape s = model_shape(m);
  EXPECT_EQ(s.chw, (std::array<uint32_t, 3>{1, 28, 28}));
  EXPECT_EQ(s.classes, 10u);
  EXPECT_EQ(trainable_initializers(m),
            (std::vector<std::string>{"conv.weight", "conv.bias", "dense.weight", "dense.bias"}));
  const tpu::cnn::Network net = tpu::cnn::import_onnx_bytes(m, "keras");
  ASSERT_EQ(net.layers.size(), 2u);
  EXPECT_EQ(net.layers[0].op, "Conv");
  EXPECT_EQ(net.layers[0].out.c, 64);
  EXPECT_EQ(net.layers[0].out.h, 13);  // pooled
  EXPECT_EQ(net.layers[1].cin(), 10816);
  EXPECT_EQ(net.layers[1].out.size(), 10);
  for (float b : net.layers[0].bias) EXPECT_EQ(b, 0.0f);
  const double limit = std::sqrt(6.0 / (10816.0 + 10.0));
  for (float w : net.layers[1].weight) EXPECT_LT(std::fabs(w), limit);
}

TEST(DefaultModel, MlpExample) {
  const std::string m = mlp_example_onnx(32, 4);
  EXPECT_EQ(m, mlp_example_onnx(32, 4));
  EXPECT_NE(m, mlp_example_onnx(32, 5));
  EXPECT_EQ(model_shape(m).classes, 10u);
  const tpu::cnn::Network net = tpu::cnn::import_onnx_bytes(m, "mlp");
  ASSERT_EQ(net.layers.size(), 2u);
  EXPECT_EQ(net.layers[0].cin(), 784);
  EXPECT_EQ(net.layers[0].out.size(), 32);
  uint64_t s = 4;
  EXPECT_EQ(net.layers[0].weight, glorot_uniform(32 * 784, 784, 32, s));  // fc1 first
  EXPECT_THROW(mlp_example_onnx(0, 1), std::invalid_argument);
}

TEST(DefaultModel, NoTrainableWeightAndBadShapes) {
  tpu::cnn::OnnxGraph g("relu_only");
  g.input("x", {-1, 1, 4, 4});
  g.node("Relu", {"x"}, {"y"});
  g.output("y", {-1, 16});
  EXPECT_TRUE(trainable_initializers(g.serialize()).empty());
  EXPECT_THROW(trainable_initializers("not a model \x01\x02"), std::invalid_argument);
  tpu::cnn::OnnxGraph h("flat_input");
  h.input("x", {-1, 16});
  h.output("x", {-1, 16});
  EXPECT_THROW(model_shape(h.serialize()), std::invalid_argument);
}

std::map<std::string, std::vector<float>> shifted(const std::string& model, float by) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(model));
  std::map<std::string, std::vector<float>> w;
  for (const auto& t : m.graph().initializer()) {
    std::vector<float> v(t.raw_data().size() / 4);
    std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
    for (size_t i = 0; i < v.size(); ++i) v[i] += by * float(i % 7);
    w[t.name()] = v;
  }
  return w;
}

TEST(ExportTrained, ReplacesWeightsKeepsTheRest) {
  const std::string d = test_support::temp_dir();
  const std::string m = keras_example_onnx(3);
  const auto w = shifted(m, 0.25f);
  export_trained_onnx(m, w, d + "trained.onnx");
  const std::string out = read_model_file(d + "trained.onnx");
  onnx::ModelProto a, b;
  ASSERT_TRUE(a.ParseFromString(m));
  ASSERT_TRUE(b.ParseFromString(out));
  ASSERT_EQ(a.graph().node_size(), b.graph().node_size());
  for (int i = 0; i < a.graph().node_size(); ++i)
    EXPECT_EQ(a.graph().node(i).SerializeAsString(), b.graph().node(i).SerializeAsString());
  EXPECT_EQ(a.graph().input(0).SerializeAsString(), b.graph().input(0).SerializeAsString());
  EXPECT_EQ(shifted(out, 0), w);  // bit for bit
  // The float importer (run-cnn / run-onnx) reads the new weights.
  const tpu::cnn::Network net = tpu::cnn::load_onnx(d + "trained.onnx");
  EXPECT_EQ(net.layers[1].bias, w.at("dense.bias"));
  // From a file path as well.
  std::ofstream(d + "orig.onnx", std::ios::binary) << m;
  export_trained_onnx(d + "orig.onnx", w, d + "trained2.onnx");
  EXPECT_EQ(read_model_file(d + "trained2.onnx"), out);
}

TEST(ExportTrained, ErrorsLeaveNoFile) {
  const std::string d = test_support::temp_dir();
  const std::string m = keras_example_onnx(3);
  auto w = shifted(m, 0);
  w["conv.bias"].pop_back();
  EXPECT_THROW(export_trained_onnx(m, w, d + "bad1.onnx"), std::invalid_argument);
  w = shifted(m, 0);
  w["nonexistent"] = {1.0f};
  try {
    export_trained_onnx(m, w, d + "bad2.onnx");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nonexistent is not an initializer"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(d + "bad1.onnx"));
  EXPECT_FALSE(std::filesystem::exists(d + "bad2.onnx"));
}

}  // namespace
