// SPDX-License-Identifier: Apache-2.0
// Image files as model inputs (driver/cnn/image_dataset.h): PNG and JPEG files written here with
// libpng and libjpeg, decoded back; the preprocessing steps against values worked out by hand;
// the ImageFolder layout; and the errors.
#include "image_dataset.h"

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "cnn_test_util.h"
#include "temp_dir.h"

namespace {

using namespace tpu::cnn;
using cnn_test::error_of;

// libpng's simplified API: `channels` 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA).
void write_png(const std::string& path, int w, int h, int channels,
               const std::vector<uint8_t>& px) {
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  im.width = png_uint_32(w);
  im.height = png_uint_32(h);
  im.format = channels == 1   ? PNG_FORMAT_GRAY
              : channels == 2 ? PNG_FORMAT_GA
              : channels == 3 ? PNG_FORMAT_RGB
                              : PNG_FORMAT_RGBA;
  ASSERT_TRUE(png_image_write_to_file(&im, path.c_str(), 0, px.data(), 0, nullptr)) << im.message;
}

void write_jpeg(const std::string& path, int w, int h, int channels,
                const std::vector<uint8_t>& px) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  jpeg_stdio_dest(&c, f);
  c.image_width = JDIMENSION(w);
  c.image_height = JDIMENSION(h);
  c.input_components = channels;
  c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row =
        const_cast<uint8_t*>(px.data()) + size_t(c.next_scanline) * size_t(w) * size_t(channels);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::fclose(f);
}

std::string tmp(const std::string& name) { return test_support::temp_dir() + "/" + name; }

TEST(Images, PngKinds) {
  // 3 x 2 gray
  write_png(tmp("g.png"), 3, 2, 1, {0, 10, 20, 30, 40, 255});
  Image8 g = load_image(tmp("g.png"));
  EXPECT_EQ(g.channels, 1);
  EXPECT_EQ(g.width, 3);
  EXPECT_EQ(g.height, 2);
  EXPECT_EQ(g.pixels, (std::vector<uint8_t>{0, 10, 20, 30, 40, 255}));
  // RGBA: alpha dropped, colors kept as stored (no compositing).
  write_png(tmp("rgba.png"), 2, 1, 4, {200, 100, 50, 0, 1, 2, 3, 128});
  Image8 c = load_image(tmp("rgba.png"));
  EXPECT_EQ(c.channels, 3);
  EXPECT_EQ(c.pixels, (std::vector<uint8_t>{200, 100, 50, 1, 2, 3}));
  // gray + alpha
  write_png(tmp("ga.png"), 2, 1, 2, {7, 0, 9, 255});
  EXPECT_EQ(load_image(tmp("ga.png")).pixels, (std::vector<uint8_t>{7, 9}));
}

TEST(Images, Jpeg) {
  // A flat image survives JPEG at quality 100 within one level.
  write_jpeg(tmp("flat.jpg"), 16, 16, 3, [] {
    std::vector<uint8_t> v;
    for (int i = 0; i < 256; ++i) v.insert(v.end(), {120, 60, 200});
    return v;
  }());
  const Image8 j = load_image(tmp("flat.jpg"));
  EXPECT_EQ(j.channels, 3);
  EXPECT_EQ(j.width, 16);
  for (size_t i = 0; i < j.pixels.size(); ++i)
    EXPECT_NEAR(j.pixels[i], (std::vector<int>{120, 60, 200})[i % 3], 1) << i;
  write_jpeg(tmp("gray.jpg"), 8, 8, 1, std::vector<uint8_t>(64, 77));
  const Image8 g = load_image(tmp("gray.jpg"));
  EXPECT_EQ(g.channels, 1);
  for (uint8_t v : g.pixels) EXPECT_NEAR(v, 77, 1);
}

TEST(Images, Errors) {
  std::ofstream(tmp("text.png")) << "not an image at all";
  EXPECT_NE(error_of([] { load_image(tmp("text.png")); }).find("text.png: not a PNG or JPEG file"),
            std::string::npos);
  write_png(tmp("big.png"), 64, 64, 3, std::vector<uint8_t>(64 * 64 * 3, 5));
  std::ifstream f(tmp("big.png"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string e =
      error_of([&] { decode_image(bytes.substr(0, bytes.size() / 2), "cut.png"); });
  EXPECT_NE(e.find("cut.png: cannot"), std::string::npos) << e;
  write_jpeg(tmp("j.jpg"), 64, 64, 3, std::vector<uint8_t>(64 * 64 * 3, 5));
  std::ifstream fj(tmp("j.jpg"), std::ios::binary);
  std::string jb((std::istreambuf_iterator<char>(fj)), std::istreambuf_iterator<char>());
  EXPECT_NE(
      error_of([&] { decode_image(jb.substr(0, jb.size() / 2), "cut.jpg"); }).find("cut.jpg:"),
      std::string::npos);
  EXPECT_NE(error_of([] { load_image(tmp("missing.png")); }).find("missing.png: cannot open"),
            std::string::npos);
}

// CRC-32 of PNG chunks (ISO 3309), to patch a header.
uint32_t png_crc(const std::string& bytes) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_be(std::string& s, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + size_t(i)] = char((v >> (8 * (bytes - 1 - i))) & 0xff);
}

// Headers are not trusted: a PNG or JPEG claiming absurd dimensions is refused before its
// pixels are allocated, naming the file (a 69-byte PNG claiming 100000 x 100000 took 2.7 GB
// and 7.5 s to fail; a JPEG claiming 65500 x 65500 ended in std::bad_alloc).
TEST(Images, AbsurdHeaderDimensions) {
  write_png(tmp("tiny.png"), 2, 2, 1, {1, 2, 3, 4});
  std::ifstream f(tmp("tiny.png"), std::ios::binary);
  std::string png((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(png.substr(12, 4), "IHDR");
  put_be(png, 16, 100000, 4);  // width
  put_be(png, 20, 100000, 4);  // height
  put_be(png, 29, png_crc(png.substr(12, 17)), 4);
  std::ofstream(tmp("huge.png"), std::ios::binary) << png;
  std::string e = error_of([] { load_image(tmp("huge.png")); });
  EXPECT_NE(e.find(tmp("huge.png") + ": the PNG header claims 100000 x 100000 pixels, more than "
                                     "the 67108864"),
            std::string::npos)
      << e;
  write_jpeg(tmp("tiny.jpg"), 8, 8, 1, std::vector<uint8_t>(64, 9));
  std::ifstream fj(tmp("tiny.jpg"), std::ios::binary);
  std::string jpg((std::istreambuf_iterator<char>(fj)), std::istreambuf_iterator<char>());
  const size_t sof = jpg.find("\xff\xc0");  // SOF0: length(2) precision(1) height(2) width(2)
  ASSERT_NE(sof, std::string::npos);
  put_be(jpg, sof + 5, 65500, 2);
  put_be(jpg, sof + 7, 65500, 2);
  std::ofstream(tmp("huge.jpg"), std::ios::binary) << jpg;
  e = error_of([] { load_image(tmp("huge.jpg")); });
  EXPECT_NE(e.find(tmp("huge.jpg") + ": the JPEG header claims 65500 x 65500 pixels"),
            std::string::npos)
      << e;
  // A directory is named as one.
  e = error_of([] { load_image(::testing::TempDir()); });
  EXPECT_NE(e.find(": is a directory (expected an image file"), std::string::npos) << e;
  e = error_of([] { read_labels_file(::testing::TempDir()); });
  EXPECT_NE(e.find(": is a directory (expected a text file of class names"), std::string::npos)
      << e;
}

TEST(Images, Channels) {
  Image8 rgb{3, 1, 2, {255, 0, 0, 10, 20, 30}};
  const Image8 g = convert_channels(rgb, 1);
  // PIL: (R * 19595 + G * 38470 + B * 7471 + 32768) >> 16
  EXPECT_EQ(g.pixels, (std::vector<uint8_t>{
                          76, uint8_t((10 * 19595 + 20 * 38470 + 30 * 7471 + 32768) >> 16)}));
  const Image8 back = convert_channels(g, 3);
  EXPECT_EQ(back.pixels, (std::vector<uint8_t>{76, 76, 76, g.pixels[1], g.pixels[1], g.pixels[1]}));
}

TEST(Images, ResizeAndCrop) {
  // Halving 4 -> 2 with the antialiased triangle filter: output pixel 0 (centre 1.0 in input
  // coordinates, support 2) weighs inputs 0, 1, 2 by 0.75, 0.75, 0.25 (/1.75) -> (0*.75 + 100*.75 +
  // 200*.25)/1.75.
  Image8 row{1, 1, 4, {0, 100, 200, 255}};
  const Image8 half = resize_bilinear(row, 1, 2);
  EXPECT_EQ(half.pixels[0], uint8_t(std::lround((0 * 0.75 + 100 * 0.75 + 200 * 0.25) / 1.75)));
  EXPECT_EQ(half.pixels[1], uint8_t(std::lround((100 * 0.25 + 200 * 0.75 + 255 * 0.75) / 1.75)));
  // Doubling 2 -> 4: output centres at 0.25, 0.75, 1.25, 1.75 of the input.
  Image8 two{1, 1, 2, {0, 100}};
  EXPECT_EQ(resize_bilinear(two, 1, 4).pixels, (std::vector<uint8_t>{0, 25, 75, 100}));
  // A flat image stays flat; the same size is the identity.
  Image8 flat{3, 5, 7, std::vector<uint8_t>(5 * 7 * 3, 42)};
  for (uint8_t v : resize_bilinear(flat, 3, 11).pixels) EXPECT_EQ(v, 42);
  EXPECT_EQ(resize_bilinear(row, 1, 4).pixels, row.pixels);
  // Center crop (Python's round, half to even): top = round(1.5) = 2, left = round(1) = 1;
  // then top = round(0.5) = 0, left = round(0.5) = 0.
  Image8 grid{1, 5, 4, {}};
  for (int i = 0; i < 20; ++i) grid.pixels.push_back(uint8_t(i));
  EXPECT_EQ(center_crop(grid, 2, 2, "g").pixels, (std::vector<uint8_t>{9, 10, 13, 14}));
  EXPECT_EQ(center_crop(grid, 4, 3, "g").pixels,
            (std::vector<uint8_t>{0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14}));
  EXPECT_NE(error_of([&] {
              center_crop(grid, 6, 2, "g.png");
            }).find("g.png: center crop 6x2 is larger than the image (5x4"),
            std::string::npos);
}

TEST(Images, Preprocess) {
  // A 2x2 RGB image into a [3, 2, 2] model: /255, then (x - mean) / std per channel.
  Image8 img{3, 2, 2, {0, 51, 102, 153, 204, 255, 0, 0, 0, 255, 255, 255}};
  Preprocess p;
  p.mean = {0.5f, 0.25f, 0.0f};
  p.std = {0.5f};
  const auto x = preprocess_image(img, p, Shape3{3, 2, 2}, "i");
  ASSERT_EQ(x.size(), 12u);
  EXPECT_FLOAT_EQ(x[0], (0 / 255.0f - 0.5f) / 0.5f);         // R of pixel 0
  EXPECT_FLOAT_EQ(x[4 + 1], (204 / 255.0f - 0.25f) / 0.5f);  // G of pixel 1
  EXPECT_FLOAT_EQ(x[8 + 3], (255 / 255.0f - 0.0f) / 0.5f);   // B of pixel 3
  // A model of another size: scaled to it (a flat image stays flat).
  Image8 big{1, 40, 30, std::vector<uint8_t>(1200, 51)};
  for (float v : preprocess_image(big, Preprocess{}, Shape3{1, 28, 28}, "b"))
    EXPECT_FLOAT_EQ(v, 51 / 255.0f);
  // Resize of the shorter side keeps the aspect ratio: 40x30 -> 32 shorter -> 42x32, crop 28.
  Preprocess r;
  r.resize_shorter = 32;
  r.crop_h = r.crop_w = 28;
  EXPECT_EQ(preprocess_image(big, r, Shape3{1, 28, 28}, "b").size(), 784u);
  // Channels that do not fit the model.
  Preprocess rgb;
  rgb.channels = 3;
  EXPECT_NE(error_of([&] {
              preprocess_image(big, rgb, Shape3{1, 28, 28}, "b");
            })
                .find("wrong input shape: the model takes [1, 28, 28] (C, H, W), but --channels "
                      "rgb gives 3 channels"),
            std::string::npos);
  Preprocess m2;
  m2.mean = {0.1f, 0.2f};
  EXPECT_NE(error_of([&] {
              preprocess_image(img, m2, Shape3{3, 2, 2}, "i");
            }).find("--mean: 2 values for 3 channels"),
            std::string::npos);
}

TEST(Images, Options) {
  int h = 0, w = 0;
  parse_size("28", "--resize", &h, &w);
  EXPECT_EQ(h, 28);
  EXPECT_EQ(w, 28);
  parse_size("32x24", "--resize", &h, &w);
  EXPECT_EQ(h, 32);
  EXPECT_EQ(w, 24);
  EXPECT_NE(error_of([&] {
              parse_size("3x", "--center-crop", &h, &w);
            }).find("--center-crop 3x: expected a size"),
            std::string::npos);
  EXPECT_EQ(parse_floats("0.485,0.456,0.406", "--mean"),
            (std::vector<float>{0.485f, 0.456f, 0.406f}));
  EXPECT_NE(
      error_of([] { parse_floats("0.5,x", "--std"); }).find("--std 0.5,x: 'x' is not a number"),
      std::string::npos);
  const Preprocess p = parse_preprocess("256", "224x200", "0.485,0.456,0.406", "0.5", "rgb");
  EXPECT_EQ(p.resize_shorter, 256);
  EXPECT_EQ(p.resize_h, 0);
  EXPECT_EQ(p.crop_h, 224);
  EXPECT_EQ(p.crop_w, 200);
  EXPECT_EQ(p.mean.size(), 3u);
  EXPECT_EQ(p.channels, 3);
  EXPECT_EQ(parse_preprocess("32x24", "", "", "", "gray").resize_w, 24);
  EXPECT_EQ(parse_preprocess("", "", "", "", "").channels, 0);
  EXPECT_NE(error_of([] {
              parse_preprocess("", "", "", "1,0,1", "");
            }).find("--std 1,0,1: a standard deviation of 0"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_preprocess("", "", "", "", "bgr");
            }).find("--channels bgr: expected rgb or gray"),
            std::string::npos);
}

TEST(Images, Folder) {
  namespace fs = std::filesystem;
  const std::string dir = tmp("folder");
  fs::remove_all(dir);
  for (const char* c : {"b_second", "a_first", "c_empty"}) fs::create_directories(dir + "/" + c);
  write_png(dir + "/b_second/2.png", 2, 2, 1, {0, 0, 0, 0});
  write_png(dir + "/b_second/1.PNG", 2, 2, 1, {9, 9, 9, 9});
  write_jpeg(dir + "/a_first/x.jpeg", 8, 8, 1, std::vector<uint8_t>(64, 255));
  std::ofstream(dir + "/a_first/notes.txt") << "ignored";
  const ImageFolder f = scan_image_folder(dir);
  EXPECT_EQ(f.classes, (std::vector<std::string>{"a_first", "b_second", "c_empty"}));
  ASSERT_EQ(f.files.size(), 3u);
  EXPECT_EQ(fs::path(f.files[0]).filename(), "x.jpeg");
  EXPECT_EQ(fs::path(f.files[1]).filename(), "1.PNG");
  EXPECT_EQ(f.labels, (std::vector<int>{0, 1, 1}));
  const FloatImageSet s = load_image_folder(f, Preprocess{}, Shape3{1, 4, 4}, 1, 2);
  ASSERT_EQ(s.count(), 2);
  EXPECT_EQ(s.labels, (std::vector<int>{1, 1}));
  EXPECT_FLOAT_EQ(s.images[0][0], 9 / 255.0f);
  EXPECT_NE(error_of([&] { scan_image_folder(dir + "/c_empty"); }).find("no class subfolders"),
            std::string::npos);
  std::ofstream(tmp("labels.txt")) << "shirt\n\ntrouser  \n";
  EXPECT_EQ(read_labels_file(tmp("labels.txt")), (std::vector<std::string>{"shirt", "trouser"}));
}

}  // namespace
