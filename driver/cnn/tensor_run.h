// SPDX-License-Identifier: Apache-2.0
// A model on tensors (what `tpusim run-onnx` does): the graph's inputs and outputs as declared
// in the ONNX file, input tensors checked against them, a float model quantized on calibration
// tensors, a batch of images in one tensor run on the chip through the usual pipeline
// (load_onnx, quantize_model, ChipRunner; every image also through the integer reference,
// int_forward), outputs dequantized into tensors named after the graph outputs, and outputs
// compared with expected tensors (integers exactly, floats within a tolerance in output
// quantization steps).
//
// It only uses the public pipeline API, so a compiler that takes more graphs takes them here too.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device.h"
#include "network.h"
#include "tensor_io.h"

namespace tpu::cnn {

// One graph input or output as the ONNX file declares it.
struct TensorSpec {
  std::string name;
  int onnx_type = 0;  // onnx::TensorProto::DataType (0 = not declared)
  bool has_shape = false;
  std::vector<int64_t> dims;           // -1 = symbolic or unknown
  std::vector<std::string> dim_names;  // the symbol ("N") or "?" where dims[i] < 0
  std::string shape_str() const;       // "[N, 1, 28, 28]"
  std::string type_str() const;        // "float32"
  std::string describe() const;        // "float32 [N, 1, 28, 28]"
};

struct GraphSignature {
  std::vector<TensorSpec> inputs;  // without the initializers (old IRs list them as inputs too)
  std::vector<TensorSpec> outputs;
};

GraphSignature read_graph_signature(const std::string& model_path);
// The same from a serialized ModelProto; `name` is used in messages.
GraphSignature graph_signature_of_bytes(const std::string& model_bytes, const std::string& name);

// Graph inputs that are really parameters (ONNX node tests pass weights, biases, scales and zero
// points as graph inputs, not initializers): rewrites the serialized ModelProto so that every
// graph input named in `constants` becomes an initializer holding the given tensor (and is no
// longer a graph input), before the graph is imported. The tensor's dtype must be the input's
// declared one and its shape the declared one (where declared). Throws Error naming the input
// for a name that is not a graph input or a tensor that does not match; `name` is used in
// messages. Returns the new serialized model.
std::string fold_inputs_as_constants(const std::string& model_bytes,
                                     const std::map<std::string, Tensor>& constants,
                                     const std::string& name);

// Checks a tensor given for graph input `spec`: the dtype, the rank, and every dimension but
// the first (the batch: any number of images runs). Returns the batch. Throws Error naming
// `source` (e.g. "--input input=x.npy"), the input, the expected and the given shape and dtype.
int64_t check_input_tensor(const TensorSpec& spec, const Tensor& t, const std::string& source);
// Throws Error naming `source`, the element (index and position) and its value for a NaN or
// infinite value of a float input, or when every nonzero value is subnormal (no int8 scale
// represents such a range). Called by check_input_tensor.
void check_input_values(const TensorSpec& spec, const Tensor& t, const std::string& source);

// The tolerance rule for float outputs: `steps` quantization steps of the output tensor
// (steps * scale). After a Softmax the host applies to the dequantized logits, half of it (logits
// that are each within d of the float ones move no probability by more than tanh(d / 2) <= d / 2);
// after a LogSoftmax, twice it (each log-probability moves by at most 2 d). Integer outputs are
// compared exactly.
double float_tolerance(const TensorQuant& out_q, double steps,
                       const std::string& host_softmax = "");

// The tolerance rule for a float model quantized on calibration inputs, by propagating the
// quantization errors through the quantized network (worst case; the rule conformance tests
// use: a single-op test is calibrated on its own input, so the input's rounding matters as
// much as the output's). Errors are bounds on |float - dequantized| per tensor:
//   input: s_x / 2 (0 for a uint8 / int8 input, which is exact);
//   Conv / Dense: max over output channels of  sum_i |w_i| * e_in + K * x_max * s_w / 2
//     (|w_i| the quantized weights' float values, K the fan-in, x_max the largest |x| the input's
//     quantization represents, s_w the channel's weight step; an AveragePool with per-pixel
//     divisors: that over its smallest divisor);  Add: e_a + e_b;
//     Copy (pooling, requantization): e_in;
//   then the activation: a LUT function (Sigmoid, Tanh, ...) quantizes its input first
//   (+ s_pre / 2) and multiplies the error by its largest slope (Sigmoid 1/4, HardSwish 3/2,
//   HardSigmoid alpha, LeakyRelu max(1, alpha), Tanh 1); Relu / Clip / max pooling do not grow it;
//   the output's requantization adds s_y / 2.
// After the host's Softmax halved, after LogSoftmax doubled (as float_tolerance).
double propagated_tolerance(const QuantNetwork& q, bool exact_input);

// The host's Softmax or LogSoftmax (QuantNetwork::host_softmax; "" = none) of one image's
// dequantized logits, in place (max-subtracted, in double).
void apply_host_softmax(const std::string& op, std::vector<float>& logits);

// The result of comparing one output with its expected tensor.
struct OutputCheck {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
  bool compared = false;  // an expected tensor was given
  bool pass = false;
  double max_abs_error = 0;
  double tolerance = 0;    // 0 for integer outputs (exact)
  int64_t mismatches = 0;  // elements outside the tolerance
  std::string detail;      // the first mismatch, or why the tensors cannot be compared
};

// Compares `got` with `expected`: same shape (and, for integer outputs, same dtype), every
// element within `tolerance` (integers: exactly equal).
OutputCheck compare_tensors(const Tensor& got, const Tensor& expected, double tolerance);

class TensorModel {
 public:
  // load_onnx and the graph signature. Throws Error for what the pipeline does not take.
  explicit TensorModel(const std::string& path);
  // The same with graph inputs folded as constants first (fold_inputs_as_constants): the graph
  // left has one (image) input.
  TensorModel(const std::string& path, const std::map<std::string, Tensor>& constants);

  const std::string& path() const { return path_; }
  const Network& network() const { return net_; }
  const GraphSignature& signature() const { return sig_; }  // after folding: the inputs left
  const std::map<std::string, Tensor>& constants() const {
    return constants_;
  }                                       // the folded inputs
  const TensorSpec& input_spec() const;   // the image input
  const TensorSpec& output_spec() const;  // the graph output the chain ends in
  DType input_dtype() const;              // the image input's (float32 when not declared)
  bool needs_calibration() const;         // a float model (not fully quantized in the file)

  // The images of a tensor given for the image input (checked with check_input_tensor): one
  // float vector of network().input.size() values per element of the first dimension.
  std::vector<std::vector<float>> images(const Tensor& t, const std::string& source) const;
  // The image input from named tensors: every graph input must be given once, no other name.
  // `sources` names where each came from for messages ("--input x=a.npy"; default "input 'x'").
  std::vector<std::vector<float>> images(
      const std::map<std::string, Tensor>& inputs,
      const std::map<std::string, std::string>& sources = {}) const;

  // Quantizes the network (quantize_model): calibrated on `calibration` when it needs it
  // (then it must not be empty). Returns a one-line description of how.
  std::string quantize(const std::vector<std::vector<float>>& calibration);
  const QuantNetwork& quantized() const { return q_; }
  // Quantized layers on the longest path from the input to the output (each requantizes once).
  int depth() const;
  // The default --tolerance-steps: one output quantization step per rounding on the longest
  // path, the input's quantization and each layer's requantization: depth() + 1.
  int default_tolerance_steps() const { return depth() + 1; }

  struct Run {
    std::vector<Tensor> outputs;  // one per graph output, batch = the images
    int images = 0;
    int mismatched_images = 0;  // chip output != integer reference
    bool matches_reference() const { return mismatched_images == 0; }
    uint32_t chip_n = 0, batch = 0;
    size_t runs = 0;  // chip programs run
    uint64_t cycles = 0;
    bool cycles_estimated = false;
    PerfCounters counters;  // summed over the runs
    int64_t macs_per_image = 0;
    double mxu_utilization = 0;      // macs * images / (cycles * N^2)
    double run_seconds = 0;          // inside Device::run
    std::vector<double> tolerances;  // per output: float_tolerance at `steps` (0 for integers)
  };
  // Runs `images` on the device, `batch` images per program (quantize first). Outputs: float32
  // (dequantized: scale * (q - zero_point), then the host's Softmax / LogSoftmax if the model
  // ends in one) for a float graph output, the quantized values for a uint8 / int8 output.
  Run run(Device& device, const std::vector<std::vector<float>>& images, uint32_t batch,
          double tolerance_steps, uint64_t max_cycles = 0) const;

 private:
  std::string path_;
  Network net_;
  GraphSignature sig_;
  std::map<std::string, Tensor> constants_;
  QuantNetwork q_;
  bool quantized_ = false;
};

// ONNX's test layout: DIR/test_data_set_N/input_K.pb and output_K.pb.
struct TestDataSet {
  std::string dir;
  std::vector<Tensor> inputs, outputs;  // by K
};
// The data sets of DIR in numeric order of N. Throws Error if there are none.
std::vector<TestDataSet> read_test_data_sets(const std::string& dir);

// Names the tensors of a data set after the graph inputs: by the TensorProto's name when it is
// one of them, else by position K. `sources` (optional) receives "<source>/input_K.pb" per name.
std::map<std::string, Tensor> name_inputs(const GraphSignature& sig,
                                          const std::vector<Tensor>& inputs,
                                          const std::string& source,
                                          std::map<std::string, std::string>* sources = nullptr);

// A file name for a tensor named `name`: characters other than letters, digits, '.', '-' and
// '_' become '_' ("/fc2/Gemm_output_0" -> "_fc2_Gemm_output_0"), plus `ext` (".npy").
std::string tensor_file_name(const std::string& name, const std::string& ext);

}  // namespace tpu::cnn
