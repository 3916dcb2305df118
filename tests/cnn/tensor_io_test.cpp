// SPDX-License-Identifier: Apache-2.0
// Tensor files (driver/cnn/tensor_io.h): .npy and ONNX TensorProto .pb, read from bytes written
// by hand here (the layout NumPy's np.save and the protobuf wire format produce), round trips,
// and every error path.
#include "tensor_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "tensor_run.h"

namespace {

using namespace tpu::cnn;

// What np.save writes for an array: magic, version 1.0, header length, the dict padded with
// spaces to a 64-byte preamble and ended by '\n', then the raw data.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t pre = major == 1 ? 10 : 12;
  std::string h = dict;
  const size_t total = pre + h.size() + 1;
  h.append((total + 63) / 64 * 64 - total, ' ');
  h += '\n';
  std::string out("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  for (size_t i = 0; i < pre - 8; ++i) out += char((h.size() >> (8 * i)) & 0xff);
  return out + h + data;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string error_of(const std::string& bytes, bool npy = true) {
  try {
    if (npy)
      parse_npy(bytes, "x.npy");
    else
      parse_tensor_proto(bytes, "x.pb");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Npy, WritesWhatNumpyWrites) {
  // np.save(f, np.arange(6, dtype=np.int32).reshape(2, 3))
  const std::string expect =
      npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
                raw<int32_t>({0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(expect.size(), 128u + 24u);  // the 64-byte-aligned preamble
  const Tensor t = Tensor::from_int(DType::Int32, {2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(serialize_npy(t), expect);
  // A 1-D array's shape is "(5,)", a scalar's "()".
  const Tensor v = Tensor::from_int(DType::UInt8, {5}, {1, 2, 3, 4, 255});
  EXPECT_EQ(serialize_npy(v), npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }",
                                        "\x01\x02\x03\x04\xff"));
  const Tensor s = Tensor::from_float({}, {2.5f});
  EXPECT_EQ(serialize_npy(s), npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                                        raw<float>({2.5f})));
}

TEST(Npy, ReadsEveryDtype) {
  const Tensor f32 =
      parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }",
                          raw<float>({0.5f, -1.25f, 3e10f, 0.0f})),
                "a.npy");
  EXPECT_EQ(f32.dtype, DType::Float32);
  EXPECT_EQ(f32.shape, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(f32.to_float(), (std::vector<float>{0.5f, -1.25f, 3e10f, 0.0f}));
  // 1.0, -2.0, 65504 (largest half), 2^-24 (smallest subnormal), 0.333251953125
  const Tensor f16 =
      parse_npy(npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }",
                          raw<uint16_t>({0x3c00, 0xc000, 0x7bff, 0x0001, 0x3555})),
                "h.npy");
  EXPECT_EQ(f16.dtype, DType::Float16);
  EXPECT_EQ(f16.to_float(),
            (std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24), 0.333251953125f}));
  const Tensor f64 =
      parse_npy(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                          raw<double>({0.1, -7.0})),
                "d.npy");
  EXPECT_EQ(f64.to_float(), (std::vector<float>{0.1f, -7.0f}));
  const Tensor u8 = parse_npy(npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }",
                                        std::string("\x00\x80\xff", 3)),
                              "u.npy");
  EXPECT_EQ(u8.to_int64(), (std::vector<int64_t>{0, 128, 255}));
  const Tensor i8 = parse_npy(npy_bytes("{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }",
                                        std::string("\x00\x80\xff", 3)),
                              "i.npy");
  EXPECT_EQ(i8.to_int64(), (std::vector<int64_t>{0, -128, -1}));
  const Tensor i64 =
      parse_npy(npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                          raw<int64_t>({int64_t(1) << 40, -3})),
                "l.npy");
  EXPECT_EQ(i64.to_int64(), (std::vector<int64_t>{int64_t(1) << 40, -3}));
  // Big-endian data is swapped; key order and quotes do not matter.
  const Tensor be =
      parse_npy(npy_bytes("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \">i4\"}",
                          std::string("\x00\x00\x01\x02\xff\xff\xff\xfe", 8)),
                "be.npy");
  EXPECT_EQ(be.to_int64(), (std::vector<int64_t>{258, -2}));
}

TEST(Npy, Versions2And3) {
  for (int major : {2, 3}) {
    const Tensor t =
        parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
                            raw<int32_t>({7, -9}), major),
                  "v.npy");
    EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{7, -9})) << major;
  }
}

TEST(Npy, RoundTripAndLargeHeader) {
  for (DType d : {DType::Float32, DType::Float16, DType::Float64, DType::UInt8, DType::Int8,
                  DType::Int32, DType::Int64}) {
    const Tensor t = Tensor::from_int(d, {2, 1, 3}, {0, 1, 2, 3, 100, 127});
    const Tensor r = parse_npy(serialize_npy(t), "r.npy");
    EXPECT_EQ(r.dtype, d);
    EXPECT_EQ(r.shape, t.shape);
    EXPECT_EQ(r.data, t.data) << dtype_name(d);
  }
  // A shape of 30,000 dimensions of 1 needs a header over 64 KiB: format 2.0.
  Tensor big = Tensor::from_float(std::vector<int64_t>(30000, 1), {4.0f});
  const std::string b = serialize_npy(big);
  EXPECT_EQ(b[6], 2);
  EXPECT_EQ(parse_npy(b, "big.npy").to_float(), std::vector<float>{4.0f});
}

TEST(Npy, Errors) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string data = raw<float>({1, 2, 3, 4});
  EXPECT_NE(error_of("hello world, not numpy"), "(no error)");
  EXPECT_NE(error_of("hello world, not numpy").find("x.npy: not a .npy file"), std::string::npos);
  EXPECT_NE(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data))
                .find("x.npy: the array is in Fortran order"),
            std::string::npos);
  EXPECT_NE(error_of(npy_bytes(ok_dict, data.substr(0, 10)))
                .find("x.npy: truncated data: 10 bytes for float32 [2, 2], expected 16"),
            std::string::npos)
      << error_of(npy_bytes(ok_dict, data.substr(0, 10)));
  EXPECT_NE(error_of(npy_bytes(ok_dict, data + "xx")).find("2 bytes after the data"),
            std::string::npos);
  EXPECT_NE(error_of(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data))
                .find("x.npy: unsupported dtype '<c8'"),
            std::string::npos);
  EXPECT_NE(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", data))
                .find("x.npy: bad .npy header"),
            std::string::npos);
  EXPECT_NE(
      error_of(npy_bytes("{'descr': '<f4', 'shape': (4,), }", data)).find("lacks 'fortran_order'"),
      std::string::npos);
  std::string v9 = npy_bytes(ok_dict, data);
  v9[6] = 9;
  EXPECT_NE(error_of(v9).find("format version 9.0 is not supported (expected 1.0, 2.0 or 3.0)"),
            std::string::npos);
  const std::string full = npy_bytes(ok_dict, data);
  EXPECT_NE(error_of(full.substr(0, 40)).find("truncated .npy header"), std::string::npos);
}

// ---- protobuf wire format, written by hand (onnx.proto: dims = 1, data_type = 2, float_data = 4,
// int32_data = 5, int64_data = 7, name = 8, raw_data = 9, double_data = 10).
std::string varint(uint64_t v) {
  std::string s;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    s += char(v ? (b | 0x80) : b);
  } while (v);
  return s;
}
std::string field_varint(int f, uint64_t v) { return varint(uint64_t(f) << 3) + varint(v); }
std::string field_bytes(int f, const std::string& b) {
  return varint(uint64_t(f) << 3 | 2) + varint(b.size()) + b;
}

TEST(TensorProto, RawAndTypedFields) {
  // float [2, 2] in raw_data
  std::string p = field_varint(1, 2) + field_varint(1, 2) + field_varint(2, 1) +
                  field_bytes(8, "x") + field_bytes(9, raw<float>({1.5f, -2, 0, 8}));
  Tensor t = parse_tensor_proto(p, "t.pb");
  EXPECT_EQ(t.name, "x");
  EXPECT_EQ(t.describe(), "float32 [2, 2]");
  EXPECT_EQ(t.to_float(), (std::vector<float>{1.5f, -2, 0, 8}));
  // float_data, packed fixed32
  p = field_varint(1, 3) + field_varint(2, 1) + field_bytes(4, raw<float>({0.25f, 4, -1}));
  EXPECT_EQ(parse_tensor_proto(p, "t.pb").to_float(), (std::vector<float>{0.25f, 4, -1}));
  // int8 in int32_data (packed varints; -3 is sign-extended to 10 bytes)
  p = field_varint(1, 3) + field_varint(2, 3) +
      field_bytes(5, varint(5) + varint(uint64_t(int64_t(-3))) + varint(127));
  t = parse_tensor_proto(p, "t.pb");
  EXPECT_EQ(t.dtype, DType::Int8);
  EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{5, -3, 127}));
  // uint8 (2) in int32_data, int32 (6), float16 bits (10) in int32_data
  p = field_varint(1, 2) + field_varint(2, 2) + field_bytes(5, varint(200) + varint(0));
  EXPECT_EQ(parse_tensor_proto(p, "t.pb").to_int64(), (std::vector<int64_t>{200, 0}));
  p = field_varint(1, 1) + field_varint(2, 6) + field_bytes(5, varint(uint64_t(int64_t(-100000))));
  EXPECT_EQ(parse_tensor_proto(p, "t.pb").to_int64(), (std::vector<int64_t>{-100000}));
  p = field_varint(1, 1) + field_varint(2, 10) + field_bytes(5, varint(0x3c00));
  EXPECT_EQ(parse_tensor_proto(p, "t.pb").to_float(), (std::vector<float>{1.0f}));
  // int64 (7) in int64_data, double (11) in double_data
  p = field_varint(1, 2) + field_varint(2, 7) +
      field_bytes(7, varint(uint64_t(int64_t(-1))) + varint(uint64_t(1) << 50));
  EXPECT_EQ(parse_tensor_proto(p, "t.pb").to_int64(), (std::vector<int64_t>{-1, int64_t(1) << 50}));
  p = field_varint(1, 1) + field_varint(2, 11) + field_bytes(10, raw<double>({-0.5}));
  EXPECT_EQ(parse_tensor_proto(p, "t.pb").to_float(), (std::vector<float>{-0.5f}));
  // A scalar (no dims) holds one value.
  p = field_varint(2, 1) + field_bytes(4, raw<float>({3}));
  t = parse_tensor_proto(p, "t.pb");
  EXPECT_TRUE(t.shape.empty());
  EXPECT_EQ(t.to_float(), std::vector<float>{3});
}

TEST(TensorProto, RoundTripAndErrors) {
  const Tensor t = Tensor::from_int(DType::Int8, {1, 4}, {-128, 0, 5, 127}, "out");
  const std::string b = serialize_tensor_proto(t);
  // raw_data written as the wire format says: dims, data_type 3, name, raw bytes.
  EXPECT_EQ(b, field_varint(1, 1) + field_varint(1, 4) + field_varint(2, 3) +
                   field_bytes(8, "out") + field_bytes(9, std::string("\x80\x00\x05\x7f", 4)));
  const Tensor r = parse_tensor_proto(b, "r.pb");
  EXPECT_EQ(r.name, "out");
  EXPECT_EQ(r.data, t.data);

  EXPECT_NE(
      error_of(b.substr(0, b.size() - 2), false).find("x.pb: cannot parse as an ONNX TensorProto"),
      std::string::npos)
      << error_of(b.substr(0, b.size() - 2), false);
  EXPECT_NE(error_of(field_varint(1, 2), false).find("has no data_type"), std::string::npos);
  EXPECT_NE(error_of(field_varint(1, 1) + field_varint(2, 8), false)
                .find("has data type string (expected float32"),
            std::string::npos);
  EXPECT_NE(
      error_of(field_varint(1, 3) + field_varint(2, 1) + field_bytes(9, raw<float>({1, 2})), false)
          .find("raw_data holds 8 bytes, expected 12"),
      std::string::npos);
  EXPECT_NE(
      error_of(field_varint(1, 3) + field_varint(2, 1) + field_bytes(4, raw<float>({1, 2})), false)
          .find("2 values in float_data, expected 3"),
      std::string::npos);
  // Dims that claim 2^40 values are refused before anything is allocated; more is not a tensor.
  EXPECT_NE(error_of(field_varint(1, uint64_t(1) << 40) + field_varint(2, 1) +
                         field_bytes(4, raw<float>({1})),
                     false)
                .find("1 values in float_data, expected 1099511627776"),
            std::string::npos);
  EXPECT_NE(error_of(field_varint(1, uint64_t(1) << 20) + field_varint(1, uint64_t(1) << 21) +
                         field_varint(2, 1),
                     false)
                .find("more than 2^40 elements"),
            std::string::npos);
}

TEST(TensorFiles, ByExtension) {
  const std::string dir = test_support::temp_dir();
  const Tensor t = Tensor::from_float({2, 3}, {1, 2, 3, 4, 5, 6}, "y");
  save_tensor(dir + "/y.npy", t);
  save_tensor(dir + "/y.pb", t);
  EXPECT_EQ(load_tensor(dir + "/y.npy").data, t.data);
  EXPECT_EQ(load_tensor(dir + "/y.pb").name, "y");
  EXPECT_THROW(load_tensor(dir + "/y.txt"), Error);
  try {
    load_tensor(dir + "/missing.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.npy: no such file (expected a .npy or an ONNX "
                                         "TensorProto .pb file)"),
              std::string::npos)
        << e.what();
  }
  try {  // a directory named like a tensor file (it was read as an empty file)
    std::filesystem::create_directories(dir + "/dir.npy");
    load_tensor(dir + "/dir.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dir.npy: is a directory (expected a .npy"),
              std::string::npos)
        << e.what();
  }
}

// A non-finite output never passes, whatever the tolerance (an infinite scale made the
// tolerance inf and NaN outputs PASS).
TEST(CompareTensors, NonFiniteNeverPasses) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor expect = Tensor::from_float({1, 3}, {1, 2, 3}, "y");
  for (const double tol : {0.5, 1e300, double(inf)}) {
    for (const float bad : {nan, inf, -inf}) {
      const OutputCheck c =
          compare_tensors(Tensor::from_float({1, 3}, {1, bad, 3}, "y"), expect, tol);
      EXPECT_FALSE(c.pass) << "tolerance " << tol << ", value " << bad;
    }
    EXPECT_EQ(compare_tensors(expect, expect, tol).pass, std::isfinite(tol)) << tol;
  }
  const OutputCheck c = compare_tensors(expect, expect, double(inf));
  EXPECT_NE(c.detail.find("the tolerance is +Inf"), std::string::npos) << c.detail;
}

TEST(Half, Conversion) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);  // overflow to inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even (down)
  // Every finite half survives the round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_half(half_to_float(uint16_t(h))), h) << h;
  }
}

}  // namespace
