// SPDX-License-Identifier: Apache-2.0
// The compiled programs of the bundled models (models/*.onnx) and of the zoo networks (at a
// small image size), and of their QDQ, QLinear (and the zoo's float) ONNX exports imported again,
// against the digests stored in tests/cnn/compiled_programs.txt: the compiler's refactors must
// not change a single instruction word, constant byte or host-memory layout. Each line of the
// file is one compilation:
//
//   <model> <config> instructions=<count> digest=<64-bit FNV-1a, hex>
//
// (or `error: <the message>` when the compiler refuses the network). The digest covers
// everything the runner feeds the chip or reads back: every instruction's 16 encoded bytes, the
// constants image, the input and output layouts (rows and bytes per image, the packed bytes of a
// deterministic input image through pack_input), the spill scratch size, the micro-batch, and
// the per-instruction layer, per-layer ends and DMA figures of the program.
//
// The file is written by this test itself from the current code: run it with
// TPU_UPDATE_COMPILED_DIGESTS=1 (e.g. `TPU_UPDATE_COMPILED_DIGESTS=1 build/tests/cnn/
// cnn_digest_tests`) after a change that is meant to change the compiled programs, and say why
// in the commit.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "quantize.h"
#include "zoo.h"

namespace {

using namespace tpu::cnn;

const std::string kDigestFile =
    std::string(TPU_CNN_SOURCE_DIR) + "/tests/cnn/compiled_programs.txt";

// 64-bit FNV-1a over everything fed to it.
class Digest {
 public:
  void bytes(const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      const uint8_t b = uint8_t(v >> (8 * i));
      bytes(&b, 1);
    }
  }
  std::string hex() const {
    std::ostringstream o;
    o << std::hex << h_;
    return o.str();
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

void add_dma(Digest& d, const LayerDma& x) {
  for (uint64_t v : {x.input, x.spill_in, x.weights, x.params, x.spill_out, x.output}) d.u64(v);
}

// The batch-independent part: constants and the host-side layouts.
void add_compiled(Digest& d, const CompiledNetwork& cn) {
  d.u64(cn.constants.size());
  d.bytes(cn.constants.data(), cn.constants.size());
  for (uint64_t v : {uint64_t(cn.input_rows), uint64_t(cn.output_rows), uint64_t(cn.input_bytes()),
                     uint64_t(cn.output_bytes()), uint64_t(cn.packed_input), uint64_t(cn.spill),
                     cn.scratch_bytes})
    d.u64(v);
  // One deterministic input image through pack_input (the host-memory image layout).
  std::vector<int32_t> q(size_t(cn.net.input.size()));
  const int lo = cn.net.input_q.qmin(), span = cn.net.input_q.qmax() - lo + 1;
  for (size_t i = 0; i < q.size(); ++i) q[i] = lo + int((i * 37 + 11) % size_t(span));
  std::vector<uint8_t> bytes(cn.input_bytes());
  cn.pack_input(q.data(), bytes.data());
  d.bytes(bytes.data(), bytes.size());
  // unpack_output's layout: the output bytes 0, 1, 2, ... unpacked.
  std::vector<uint8_t> out(cn.output_bytes());
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(i * 7 + 3);
  for (int32_t v : cn.unpack_output(out.data())) d.u64(uint64_t(int64_t(v)));
}

void add_program(Digest& d, const Program& p) {
  for (const auto& ins : p.instructions) {
    const auto w = tpu::encode(ins);
    d.bytes(w.data(), w.size());
  }
  for (uint64_t v :
       {uint64_t(p.batch), uint64_t(p.micro_batch), p.dma_in_bytes, p.dma_out_bytes,
        p.input_data_bytes, p.weight_bytes, p.mxu_rows, p.spill_in_bytes, p.spill_out_bytes})
    d.u64(v);
  d.u64(p.layer_end.size());
  for (size_t e : p.layer_end) d.u64(e);
  for (int l : p.instr_layer) d.u64(uint64_t(int64_t(l)));
  for (const auto& x : p.layer_dma) add_dma(d, x);
  add_dma(d, p.other_dma);
}

struct Config {
  std::string name;
  tpu::ChipParams chip;
  uint32_t batch = 1;
  ProgramOptions options;
};

std::vector<Config> configs() {
  std::vector<Config> cs;
  for (uint32_t n : {16u, 4u}) {
    const std::string c = "N" + std::to_string(n);
    const tpu::ChipParams chip = tpu::ChipParams::with_n(n);
    cs.push_back({c + "-b1", chip, 1, {}});
    cs.push_back({c + "-b16", chip, 16, {}});
    ProgramOptions serial;
    serial.overlap_layers = false;
    cs.push_back({c + "-b8-serial", chip, 8, serial});
    ProgramOptions unpaired;
    unpaired.pair_first_layers = false;
    unpaired.max_micro_batch = 3;
    cs.push_back({c + "-b7-mb3-unpaired", chip, 7, unpaired});
  }
  // Small unified buffers and accumulators: the networks spill to host memory.
  tpu::ChipParams small = tpu::ChipParams::with_n(16);
  small.ub_rows = 700;
  small.acc_rows = 256;
  cs.push_back({"N16-ub700-acc256-b2", small, 2, {}});
  return cs;
}

constexpr uint32_t kConstantsAddr = 0x1000, kInputAddr = 0x4000000, kOutputAddr = 0x6000000,
                   kScratchAddr = 0x8000000;

// One line per configuration for network `name` (or only N16-b16).
void compile_all(const std::string& name, const QuantNetwork& q,
                 std::map<std::string, std::string>* lines, bool every_config = true) {
  for (const Config& c : configs()) {
    if (!every_config && c.name != "N16-b16") continue;
    const std::string key = name + " " + c.name;
    Digest d;
    try {
      const CompiledNetwork cn = compile_network(q, c.chip);
      ProgramOptions opt = c.options;
      if (cn.spill) opt.scratch_addr = kScratchAddr;
      const Program p = emit_program(cn, c.batch, kConstantsAddr, kInputAddr, kOutputAddr, opt);
      add_compiled(d, cn);
      add_program(d, p);
      (*lines)[key] =
          "instructions=" + std::to_string(p.instructions.size()) + " digest=" + d.hex();
    } catch (const Error& e) {
      (*lines)[key] = std::string("error: ") + e.what();
    }
  }
}

std::vector<std::string> bundled_models() {
  const std::string dir = std::string(TPU_CNN_SOURCE_DIR) + "/models";
  std::vector<std::string> names;
  if (DIR* dp = opendir(dir.c_str())) {
    while (const dirent* e = readdir(dp)) {
      const std::string f = e->d_name;
      if (f.size() > 5 && f.compare(f.size() - 5, 5, ".onnx") == 0) names.push_back(f);
    }
    closedir(dp);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Through the importer in every form it reads: the quantized network exported as a QDQ and as
// a QLinear model and imported again (its fusion and quantize/dequantize pairing), and the zoo
// networks (built in C++) exported as float ONNX and imported (ResNet's and MobileNetV2's
// fusion). One chip configuration each (the configurations above cover the compiler).
void imported_forms(const std::string& name, const Network& net, const QuantNetwork& q,
                    std::map<std::string, std::string>* lines) {
  const auto images = zoo_images(net.input, 1, 7);
  compile_all("qdq-" + name, quantize_model(import_onnx_bytes(export_qdq_onnx(q), name), images),
              lines, false);
  compile_all("qlinear-" + name,
              quantize_model(import_onnx_bytes(export_qlinear_onnx(q), name), images), lines,
              false);
}

std::map<std::string, std::string> compute_digests() {
  std::map<std::string, std::string> lines;
  const std::string dir = std::string(TPU_CNN_SOURCE_DIR) + "/models/";
  for (const std::string& f : bundled_models()) {
    const Network net = load_onnx(dir + f);
    const QuantNetwork q = quantize_model(net, zoo_images(net.input, 4, 7));
    compile_all(f, q, &lines);
    imported_forms(f, net, q, &lines);
  }
  for (const std::string& z : zoo_names()) {
    const Network net = zoo_network(z, 1, 32);
    const QuantNetwork q = quantize_model(net, zoo_images(net.input, 1, 7));
    compile_all("zoo-" + z + "-32", q, &lines);
    const std::string name = "zoo-" + z + "-32.onnx";
    const Network imported = import_onnx_bytes(export_float_onnx(net), name);
    compile_all("float-" + name, quantize_model(imported, zoo_images(net.input, 1, 7)), &lines,
                false);
    imported_forms(name, net, q, &lines);
  }
  return lines;
}

std::map<std::string, std::string> read_digests(const std::string& path) {
  std::map<std::string, std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string model, config, rest;
    s >> model >> config;
    std::getline(s >> std::ws, rest);
    lines[model + " " + config] = rest;
  }
  return lines;
}

TEST(CompiledPrograms, MatchStoredDigests) {
  const auto got = compute_digests();
  ASSERT_GE(bundled_models().size(), 4u) << "models/*.onnx not found";
  if (const char* u = std::getenv("TPU_UPDATE_COMPILED_DIGESTS"); u && std::string(u) == "1") {
    std::ofstream out(kDigestFile);
    out << "# Compiled programs of the bundled and zoo models (tests/cnn/cnn_digest_test.cpp\n"
           "# writes this file with TPU_UPDATE_COMPILED_DIGESTS=1; do not edit by hand).\n";
    for (const auto& [key, value] : got) out << key << " " << value << "\n";
    ASSERT_TRUE(out.good()) << "cannot write " << kDigestFile;
    GTEST_SKIP() << "wrote " << got.size() << " digests to " << kDigestFile;
  }
  const auto want = read_digests(kDigestFile);
  ASSERT_FALSE(want.empty()) << kDigestFile << " is missing or empty";
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [key, value] : want) {
    auto it = got.find(key);
    if (it == got.end()) {
      ADD_FAILURE() << key << ": no longer compiled";
      continue;
    }
    EXPECT_EQ(it->second, value) << key;
  }
  for (const auto& [key, value] : got)
    EXPECT_TRUE(want.count(key)) << key << ": not in " << kDigestFile;
}

}  // namespace
