// SPDX-License-Identifier: Apache-2.0
#include "image_dataset.h"

#include <png.h>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tpu::cnn {

namespace {

std::string read_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a directory (expected an image file: .png, .jpg or .jpeg)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Headers are not trusted: an image larger than this is refused before its pixels are
// allocated (a 69-byte PNG can claim 100000 x 100000 pixels).
constexpr uint64_t kMaxImagePixels = uint64_t{1} << 26;  // 64 Mi pixels, e.g. 8192 x 8192

void check_image_size(uint64_t w, uint64_t h, const char* type, const std::string& name) {
  if (w * h <= kMaxImagePixels) return;
  throw Error(name + ": the " + type + " header claims " + std::to_string(w) + " x " +
              std::to_string(h) + " pixels, more than the " + std::to_string(kMaxImagePixels) +
              " (8192 x 8192) an image may have (expected a smaller image; corrupt header?)");
}

Image8 decode_png(const std::string& bytes, const std::string& name) {
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&im, bytes.data(), bytes.size()))
    throw Error(name + ": cannot read the PNG (" + im.message + ")");
  if (uint64_t{im.width} * im.height > kMaxImagePixels) {
    png_image_free(&im);
    check_image_size(im.width, im.height, "PNG", name);
  }
  // RGBA or GA keeps the stored 8-bit values (no compositing, no gamma); alpha is dropped below.
  const bool color = (im.format & PNG_FORMAT_FLAG_COLOR) != 0;
  im.format = color ? PNG_FORMAT_RGBA : PNG_FORMAT_GA;
  const int in_ch = color ? 4 : 2;
  std::vector<uint8_t> buf(PNG_IMAGE_SIZE(im));
  if (!png_image_finish_read(&im, nullptr, buf.data(), 0, nullptr)) {
    const std::string msg = im.message;
    png_image_free(&im);
    throw Error(name + ": cannot decode the PNG (" + msg + "; truncated or corrupt?)");
  }
  Image8 out;
  out.channels = color ? 3 : 1;
  out.height = int(im.height);
  out.width = int(im.width);
  out.pixels.resize(size_t(out.height) * size_t(out.width) * size_t(out.channels));
  for (size_t p = 0; p < size_t(out.height) * size_t(out.width); ++p)
    for (int c = 0; c < out.channels; ++c)
      out.pixels[p * size_t(out.channels) + size_t(c)] = buf[p * size_t(in_ch) + size_t(c)];
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

Image8 decode_jpeg(const std::string& bytes, const std::string& name) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.output_message = [](j_common_ptr) {};  // warnings (e.g. premature end) are not printed
  Image8 out;
  std::vector<uint8_t>* pixels = &out.pixels;  // touched after setjmp: keep it simple
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw Error(name + ": cannot decode the JPEG (" + err.message + ")");
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (uint64_t{cinfo.image_width} * cinfo.image_height > kMaxImagePixels) {
    const uint64_t w = cinfo.image_width, h = cinfo.image_height;
    jpeg_destroy_decompress(&cinfo);
    check_image_size(w, h, "JPEG", name);
  }
  if (cinfo.num_components != 1 && cinfo.num_components != 3) {
    const int n = cinfo.num_components;
    jpeg_destroy_decompress(&cinfo);
    throw Error(name + ": a JPEG with " + std::to_string(n) +
                " components (CMYK?); expected gray or RGB");
  }
  cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const int ch = int(cinfo.output_components), w = int(cinfo.output_width),
            h = int(cinfo.output_height);
  pixels->resize(size_t(w) * size_t(h) * size_t(ch));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels->data() + size_t(cinfo.output_scanline) * size_t(w) * size_t(ch);
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  const bool truncated = cinfo.err->num_warnings > 0;
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (truncated)
    throw Error(name + ": the JPEG data is truncated or corrupt (libjpeg warned while decoding)");
  out.channels = ch;
  out.width = w;
  out.height = h;
  return out;
}

// PIL's bilinear filter coefficients for one dimension (Resample.c, precompute_coeffs).
struct Coeffs {
  std::vector<int> start, count;
  std::vector<std::vector<double>> w;
};

Coeffs coefficients(int in, int out) {
  const double scale = double(in) / out, fscale = std::max(scale, 1.0), support = 1.0 * fscale;
  Coeffs c;
  for (int i = 0; i < out; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(0, int(std::floor(center - support + 0.5)));
    const int hi = std::min(in, int(std::floor(center + support + 0.5)));
    std::vector<double> w;
    double sum = 0;
    for (int j = lo; j < hi; ++j) {
      const double x = std::fabs((j - center + 0.5) / fscale);
      const double v = x < 1.0 ? 1.0 - x : 0.0;
      w.push_back(v);
      sum += v;
    }
    if (sum > 0)
      for (double& v : w) v /= sum;
    c.start.push_back(lo);
    c.count.push_back(hi - lo);
    c.w.push_back(std::move(w));
  }
  return c;
}

uint8_t clip8(double v) { return uint8_t(std::min(255.0, std::max(0.0, std::floor(v + 0.5)))); }

}  // namespace

Image8 decode_image(const std::string& bytes, const std::string& name) {
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) return decode_png(bytes, name);
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xff &&
      static_cast<unsigned char>(bytes[1]) == 0xd8 && static_cast<unsigned char>(bytes[2]) == 0xff)
    return decode_jpeg(bytes, name);
  throw Error(name + ": not a PNG or JPEG file (" + std::to_string(bytes.size()) +
              " bytes; expected the PNG or JPEG signature)");
}

Image8 load_image(const std::string& path) { return decode_image(read_bytes(path), path); }

std::string Preprocess::str() const {
  std::ostringstream s;
  s << (channels == 1 ? "gray" : channels == 3 ? "rgb" : "the model's channels");
  if (resize_shorter) s << ", resize shorter side to " << resize_shorter;
  if (resize_h) s << ", resize to " << resize_h << "x" << resize_w;
  if (crop_h) s << ", center crop " << crop_h << "x" << crop_w;
  auto list = [&](const std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  };
  s << ", /255";
  if (!mean.empty()) s << ", mean ", list(mean);
  if (!std.empty()) s << ", std ", list(std);
  return s.str();
}

void parse_size(const std::string& text, const std::string& option, int* h, int* w) {
  auto number = [&](const std::string& t) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(t, &used, 10);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t.size() || v < 1 || v > 65535)
      throw Error(option + " " + text +
                  ": expected a size such as 28 or 32x24 (H x W, each 1..65535)");
    return int(v);
  };
  const size_t x = text.find('x');
  if (x == std::string::npos) {
    *h = *w = number(text);
  } else {
    *h = number(text.substr(0, x));
    *w = number(text.substr(x + 1));
  }
}

std::vector<float> parse_floats(const std::string& text, const std::string& option) {
  std::vector<float> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    float f = 0;
    try {
      f = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(f))
      throw Error(option + " " + text + ": '" + item +
                  "' is not a number (expected one number, or one per channel "
                  "separated by commas, e.g. 0.485,0.456,0.406)");
    v.push_back(f);
  }
  if (v.empty())
    throw Error(option + ": expected one number, or one per channel separated by commas");
  return v;
}

Preprocess parse_preprocess(const std::string& resize, const std::string& center_crop,
                            const std::string& mean, const std::string& std,
                            const std::string& channels) {
  Preprocess p;
  if (!resize.empty()) {
    if (resize.find('x') == std::string::npos)
      parse_size(resize, "--resize", &p.resize_shorter, &p.resize_shorter);
    else
      parse_size(resize, "--resize", &p.resize_h, &p.resize_w);
  }
  if (!center_crop.empty()) parse_size(center_crop, "--center-crop", &p.crop_h, &p.crop_w);
  if (!mean.empty()) p.mean = parse_floats(mean, "--mean");
  if (!std.empty()) p.std = parse_floats(std, "--std");
  for (float v : p.std)
    if (v == 0)
      throw Error("--std " + std + ": a standard deviation of 0 (expected non-zero values)");
  if (!channels.empty()) {
    if (channels != "rgb" && channels != "gray")
      throw Error("--channels " + channels + ": expected rgb or gray");
    p.channels = channels == "rgb" ? 3 : 1;
  }
  return p;
}

Image8 convert_channels(const Image8& img, int channels) {
  if (img.channels == channels) return img;
  Image8 out;
  out.channels = channels;
  out.height = img.height;
  out.width = img.width;
  const size_t n = size_t(img.height) * size_t(img.width);
  out.pixels.resize(n * size_t(channels));
  for (size_t p = 0; p < n; ++p) {
    if (channels == 3) {  // gray -> RGB
      for (int c = 0; c < 3; ++c) out.pixels[p * 3 + size_t(c)] = img.pixels[p];
    } else {  // RGB -> gray, PIL's L = R * 299/1000 + G * 587/1000 + B * 114/1000 in fixed point
      const uint32_t r = img.pixels[p * 3], g = img.pixels[p * 3 + 1], b = img.pixels[p * 3 + 2];
      out.pixels[p] = uint8_t((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
    }
  }
  return out;
}

Image8 resize_bilinear(const Image8& img, int h, int w) {
  if (img.height == h && img.width == w) return img;
  const int ch = img.channels;
  // Horizontal pass, then vertical, each rounded to 8 bits (as PIL).
  Image8 tmp;
  tmp.channels = ch;
  tmp.height = img.height;
  tmp.width = w;
  tmp.pixels.resize(size_t(tmp.height) * size_t(w) * size_t(ch));
  const Coeffs cx = coefficients(img.width, w);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < ch; ++c) {
        double v = 0;
        for (int k = 0; k < cx.count[size_t(x)]; ++k)
          v += cx.w[size_t(x)][size_t(k)] * img.at(y, cx.start[size_t(x)] + k, c);
        tmp.pixels[(size_t(y) * size_t(w) + size_t(x)) * size_t(ch) + size_t(c)] = clip8(v);
      }
  Image8 out;
  out.channels = ch;
  out.height = h;
  out.width = w;
  out.pixels.resize(size_t(h) * size_t(w) * size_t(ch));
  const Coeffs cy = coefficients(img.height, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < ch; ++c) {
        double v = 0;
        for (int k = 0; k < cy.count[size_t(y)]; ++k)
          v += cy.w[size_t(y)][size_t(k)] * tmp.at(cy.start[size_t(y)] + k, x, c);
        out.pixels[(size_t(y) * size_t(w) + size_t(x)) * size_t(ch) + size_t(c)] = clip8(v);
      }
  return out;
}

Image8 center_crop(const Image8& img, int h, int w, const std::string& name) {
  if (h > img.height || w > img.width)
    throw Error(name + ": center crop " + std::to_string(h) + "x" + std::to_string(w) +
                " is larger than the image (" + std::to_string(img.height) + "x" +
                std::to_string(img.width) +
                " after resizing); expected a crop "
                "that fits");
  // Python's round(): half to even (the default rounding mode).
  const int top = int(std::nearbyint((img.height - h) / 2.0)),
            left = int(std::nearbyint((img.width - w) / 2.0));
  Image8 out;
  out.channels = img.channels;
  out.height = h;
  out.width = w;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < img.channels; ++c) out.pixels.push_back(img.at(top + y, left + x, c));
  return out;
}

void check_preprocess(const Preprocess& p, const Shape3& input) {
  const int channels = p.channels ? p.channels : input.c;
  if (channels != 1 && channels != 3) return;  // preprocess_image names the image
  if (channels != input.c)
    throw Error("wrong input shape: the model takes " + input.str() +
                " (C, H, W), but --channels " + (channels == 1 ? "gray" : "rgb") + " gives " +
                std::to_string(channels) + " channel" + (channels == 1 ? "" : "s"));
  for (const auto* v : {&p.mean, &p.std})
    if (v->size() > 1 && int(v->size()) != channels)
      throw Error(std::string(v == &p.mean ? "--mean" : "--std") + ": " +
                  std::to_string(v->size()) + " values for " + std::to_string(channels) +
                  " channel" + (channels == 1 ? "" : "s") + " (expected " +
                  (channels == 1 ? std::string("1") : "1 or " + std::to_string(channels)) + ")");
}

std::vector<float> preprocess_image(const Image8& src, const Preprocess& p, const Shape3& input,
                                    const std::string& name) {
  const int channels = p.channels ? p.channels : input.c;
  if (channels != 1 && channels != 3)
    throw Error(name + ": the model takes " + std::to_string(input.c) + " channels " + input.str() +
                "; images give 1 (gray) or 3 (rgb)");
  check_preprocess(p, input);
  Image8 img = convert_channels(src, channels);
  if (p.resize_shorter) {
    // torchvision Resize(int): the shorter side to S, the longer one scaled (truncated).
    const int s = p.resize_shorter;
    if (img.height <= img.width)
      img = resize_bilinear(img, s, std::max(1, int(int64_t(s) * img.width / img.height)));
    else
      img = resize_bilinear(img, std::max(1, int(int64_t(s) * img.height / img.width)), s);
  } else if (p.resize_h) {
    img = resize_bilinear(img, p.resize_h, p.resize_w);
  }
  if (p.crop_h) img = center_crop(img, p.crop_h, p.crop_w, name);
  if (img.height != input.h || img.width != input.w) img = resize_bilinear(img, input.h, input.w);
  std::vector<float> x(size_t(input.size()));
  const size_t plane = size_t(input.h) * size_t(input.w);
  for (int c = 0; c < channels; ++c) {
    const float mean = p.mean.empty() ? 0.0f : p.mean[p.mean.size() == 1 ? 0 : size_t(c)];
    const float sd = p.std.empty() ? 1.0f : p.std[p.std.size() == 1 ? 0 : size_t(c)];
    for (int y = 0; y < input.h; ++y)
      for (int xx = 0; xx < input.w; ++xx)
        x[size_t(c) * plane + size_t(y) * size_t(input.w) + size_t(xx)] =
            (float(img.at(y, xx, c)) / 255.0f - mean) / sd;
  }
  return x;
}

ImageFolder scan_image_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(
        dir +
        ": not a directory (expected an ImageFolder: one subfolder of PNG/JPEG images per class)");
  ImageFolder f;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) f.classes.push_back(e.path().filename().string());
  if (ec) throw Error(dir + ": cannot list the directory (" + ec.message() + ")");
  std::sort(f.classes.begin(), f.classes.end());
  if (f.classes.empty())
    throw Error(dir +
                ": no class subfolders (expected an ImageFolder: DIR/<class>/<image>.png or .jpg)");
  for (size_t c = 0; c < f.classes.size(); ++c) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(fs::path(dir) / f.classes[c], ec)) {
      const std::string ext = lower(e.path().extension().string());
      if (e.is_regular_file() && (ext == ".png" || ext == ".jpg" || ext == ".jpeg"))
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      f.files.push_back(p);
      f.labels.push_back(int(c));
    }
  }
  if (f.files.empty())
    throw Error(dir + ": no .png, .jpg or .jpeg images in its " + std::to_string(f.classes.size()) +
                " class folders");
  return f;
}

FloatImageSet load_image_folder(const ImageFolder& folder, const Preprocess& p, const Shape3& input,
                                int offset, int count) {
  const int n = int(folder.files.size());
  if (count < 0) count = n - offset;
  if (offset < 0 || count < 1 || offset + count > n)
    throw Error("images " + std::to_string(offset) + ".." + std::to_string(offset + count - 1) +
                " are outside the image folder (" + std::to_string(n) + " images)");
  FloatImageSet set;
  set.shape = input;
  for (int i = offset; i < offset + count; ++i) {
    const std::string& path = folder.files[size_t(i)];
    set.images.push_back(preprocess_image(load_image(path), p, input, path));
    set.labels.push_back(folder.labels[size_t(i)]);
  }
  return set;
}

std::vector<std::string> read_labels_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a directory (expected a text file of class names, one per line)");
  std::ifstream f(path);
  if (!f) throw Error(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(f, line)) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (names.empty()) throw Error(path + ": no class names (expected one per line)");
  return names;
}

}  // namespace tpu::cnn
