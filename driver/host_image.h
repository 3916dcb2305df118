// SPDX-License-Identifier: Apache-2.0
// Host memory images: a small text format that maps base addresses to bytes, used by
// `tpusim run --hostmem-in/--hostmem-out` (docs/tpusim.md) and handy in tests.
//
//   # comment ('#' to the end of the line)
//   @0x00010000 name=x size=256      a block: one host buffer at this address
//   00 01 02 03 fffe7f80             its bytes, as hex digit pairs (tokens of 1+ pairs)
//   @0x00040000 size=0x100 name=out  no data: 256 zero bytes
//   @0x00050000 file=weights.bin     raw bytes from a binary file (relative to this file)
//
// A block's size is `size=` if given (data shorter than it is zero-padded, longer is an
// error), else the number of data bytes; it must be at least 1. Blocks may not overlap, and
// an image holds at most 256 MiB.
// Numbers are decimal or 0x hex. Output (format_host_image) lists every block with its name,
// 16 bytes per line, and parses back to the same image.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tpu {

struct HostImageBlock {
  uint32_t addr = 0;
  std::string name;            // may be empty
  std::vector<uint8_t> bytes;  // at least 1
};

struct HostImage {
  std::vector<HostImageBlock> blocks;  // by address
  // The files the image's file= blocks were read from (base_dir joined): inputs too, which
  // no output of the same run may overwrite (tpu::RunPaths). Not part of the format.
  std::vector<std::string> files;
};

// A malformed image. what() is "file:line: message" (one line).
class HostImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `base_dir` resolves relative file= paths.
HostImage parse_host_image(std::string_view text, std::string_view filename = "<hostmem>",
                           const std::string& base_dir = ".");
HostImage load_host_image(const std::string& path);
std::string format_host_image(const HostImage& image);
// Writes format_host_image() through an OutputFile (output_file.h): a failure leaves the file
// as it was. Throws HostImageError.
void save_host_image(const std::string& path, const HostImage& image);

}  // namespace tpu
