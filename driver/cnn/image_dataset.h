// SPDX-License-Identifier: Apache-2.0
// Image files as model inputs: PNG (Debian's libpng) and JPEG (libjpeg-turbo) decoding, the
// preprocessing people use with torchvision (resize, center crop, mean / std normalization,
// RGB or gray), and folders of images in the ImageFolder layout (one subfolder per class, the
// sorted subfolder names are the class indices 0, 1, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "evaluate.h"
#include "network.h"

namespace tpu::cnn {

// A decoded 8-bit image, channels interleaved (HWC): 1 = gray, 3 = RGB (alpha is dropped).
struct Image8 {
  int channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // height * width * channels
  uint8_t at(int y, int x, int c) const {
    return pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
};

// Decodes PNG or JPEG by the file's signature (not its extension). `name` is used in messages.
// Throws Error for other formats and for corrupt or truncated files.
Image8 decode_image(const std::string& bytes, const std::string& name);
Image8 load_image(const std::string& path);

// How an image becomes a model input (the torchvision order: convert, Resize, CenterCrop,
// ToTensor (/255), Normalize), then scaled to the model's H x W if it is not that size yet.
struct Preprocess {
  int channels = 0;                // 1 gray, 3 RGB, 0 = the model's channels
  int resize_h = 0, resize_w = 0;  // exact size; or
  int resize_shorter = 0;          // the shorter side to this, keeping the aspect ratio
  int crop_h = 0, crop_w = 0;      // center crop (0 = none)
  std::vector<float> mean, std;    // per channel, or one value for all (empty: 0 and 1)
  std::string str() const;         // "gray, resize 32, center crop 28x28, mean 0.5 std 0.5"
};

// "28" (one number) or "32x24" (H x W): sets h and w (both the number for one number). Throws
// Error naming `option` for anything else.
void parse_size(const std::string& text, const std::string& option, int* h, int* w);
// "0.485,0.456,0.406" or "0.5". Throws Error naming `option`.
std::vector<float> parse_floats(const std::string& text, const std::string& option);

// The command line's preprocessing options as given (empty = not given): --resize S|HxW,
// --center-crop S|HxW, --mean, --std (no 0), --channels rgb|gray. Throws Error naming the option.
Preprocess parse_preprocess(const std::string& resize, const std::string& center_crop,
                            const std::string& mean, const std::string& std,
                            const std::string& channels);

// Gray <-> RGB (gray to RGB repeats the value; RGB to gray is PIL's convert("L"):
// (R * 19595 + G * 38470 + B * 7471 + 32768) >> 16).
Image8 convert_channels(const Image8& img, int channels);
// Bilinear resize of 8-bit values as PIL's BILINEAR does it (a triangle filter widened by the
// scale factor when shrinking, i.e. antialiased; rounded to 8 bits after each pass).
Image8 resize_bilinear(const Image8& img, int h, int w);
// torchvision's CenterCrop: top = round((H - h) / 2), left = round((W - w) / 2) (Python's round,
// half to even). Throws Error if
// the crop is larger than the image.
Image8 center_crop(const Image8& img, int h, int w, const std::string& name);

// The options against the model's input: --channels against its channels, one or one-per-
// channel --mean / --std values. Throws Error naming the option (a usage error).
void check_preprocess(const Preprocess& p, const Shape3& input);

// The model input (NCHW float, input.size() values) of one image. Throws Error naming the
// image if the channels do not fit the model.
std::vector<float> preprocess_image(const Image8& img, const Preprocess& p, const Shape3& input,
                                    const std::string& name);

// An ImageFolder: DIR/<class>/<image>.png|.jpg|.jpeg (case-insensitive), classes and files in
// sorted order. Throws Error if DIR has no class folders or no images.
struct ImageFolder {
  std::vector<std::string> classes;  // the subfolder names
  std::vector<std::string> files;    // every image, class by class
  std::vector<int> labels;           // per file: index into classes
};
ImageFolder scan_image_folder(const std::string& dir);

// Decodes and preprocesses `count` images of the folder from `offset` (all when count < 0).
FloatImageSet load_image_folder(const ImageFolder& folder, const Preprocess& p, const Shape3& input,
                                int offset = 0, int count = -1);

// Class names, one per line (blank lines and trailing whitespace are ignored).
std::vector<std::string> read_labels_file(const std::string& path);

}  // namespace tpu::cnn
