// SPDX-License-Identifier: Apache-2.0
#include "host_image.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "output_file.h"
#include "text.h"

namespace tpu {

namespace {

constexpr uint64_t kSpace = uint64_t{1} << 32;
constexpr uint64_t kMaxImageBytes = uint64_t{256} << 20;  // host_image.h

using detail::echo;
using detail::parse_number;

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08" PRIx32, v);
  return b;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string join_path(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || dir.empty() || dir == ".") return path;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

namespace {

// The parser of one host image text: one line at a time, an open block at a time.
class ImageParser {
 public:
  ImageParser(std::string_view filename, const std::string& base_dir)
      : filename_(filename), base_dir_(base_dir) {}

  void line(std::string_view line) {
    ++line_no_;
    check_text(line);
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    const std::vector<std::string_view> tokens = split(line);
    if (tokens.empty()) return;
    if (tokens[0][0] == '@') {
      close();
      at_line(tokens);
    } else {
      data_line(tokens);
    }
  }

  // The image: its blocks by address, none overlapping.
  HostImage finish() {
    close();
    std::sort(image_.blocks.begin(), image_.blocks.end(),
              [](const HostImageBlock& a, const HostImageBlock& b) { return a.addr < b.addr; });
    for (size_t i = 1; i < image_.blocks.size(); ++i) {
      const HostImageBlock& a = image_.blocks[i - 1];
      if (uint64_t{a.addr} + a.bytes.size() > image_.blocks[i].addr) {
        char buf[160];
        std::snprintf(
            buf, sizeof buf, "%s: block @0x%08" PRIx32 " (%zu bytes) overlaps block @0x%08" PRIx32,
            std::string(filename_).c_str(), a.addr, a.bytes.size(), image_.blocks[i].addr);
        throw HostImageError(buf);
      }
    }
    return std::move(image_);
  }

 private:
  struct Open {
    HostImageBlock block;
    std::optional<uint64_t> size;
    bool from_file = false;
    int line = 0;
  };

  [[noreturn]] void fail(const std::string& msg) const {
    throw HostImageError(std::string(filename_) + ":" + std::to_string(line_no_) + ": " + msg);
  }

  // Text only: a NUL anywhere, or a control or non-ASCII byte outside a comment, is named by
  // its value and column (echoing it would garble the message).
  void check_text(std::string_view line) const {
    for (size_t i = 0, comment = line.find('#'); i < line.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(line[i]);
      if (c == 0 || (i < comment && (c >= 0x7f || (c < 0x20 && c != '\t' && c != '\r' &&
                                                   c != '\v' && c != '\f')))) {
        char b[160];
        std::snprintf(b, sizeof b,
                      "column %zu: byte 0x%02x is not text (expected hex byte pairs, @ lines and # "
                      "comments%s)",
                      i + 1, c, c == 0 ? "; a binary file? use file= for binary data" : "");
        fail(b);
      }
    }
  }

  static std::vector<std::string_view> split(std::string_view line) {
    std::vector<std::string_view> tokens;
    for (size_t i = 0; i < line.size();) {
      if (std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
        continue;
      }
      const size_t start = i;
      while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      tokens.push_back(line.substr(start, i - start));
    }
    return tokens;
  }

  // Ends the open block: sized, checked and added to the image.
  void close() {
    if (!cur_) return;
    Open& o = *cur_;
    const int here = line_no_;
    line_no_ = o.line;  // the errors below are the block's: named by its @ line
    if (o.size) {
      if (o.block.bytes.size() > *o.size)
        fail("block @" + hex32(o.block.addr) + " has " + std::to_string(o.block.bytes.size()) +
             " bytes of data but size=" + std::to_string(*o.size));
      o.block.bytes.resize(*o.size, 0);
    }
    if (o.block.bytes.empty()) fail("block has no bytes (give data, size= or file=)");
    if (o.block.addr + uint64_t{o.block.bytes.size()} > kSpace)
      fail("block of " + std::to_string(o.block.bytes.size()) +
           " bytes runs past the 32-bit host address space");
    total_ += o.block.bytes.size();
    if (total_ > kMaxImageBytes) fail("the blocks hold more than an image may (256 MiB)");
    image_.blocks.push_back(std::move(o.block));
    cur_.reset();
    line_no_ = here;
  }

  // @<address> [size=N] [name=S] [file=F]: opens a block.
  void at_line(const std::vector<std::string_view>& tokens) {
    Open o;
    o.line = line_no_;
    const auto addr = parse_number(tokens[0].substr(1));
    if (!addr || *addr >= kSpace)
      fail("'" + echo(tokens[0]) + "' is not @<address> (decimal or 0x hex, below 2^32)");
    o.block.addr = static_cast<uint32_t>(*addr);
    std::string file;
    std::vector<std::string_view> seen;  // keys of this line, to refuse repeats
    for (size_t t = 1; t < tokens.size(); ++t) {
      const std::string_view tok = tokens[t];
      const size_t eq = tok.find('=');
      const std::string_view key = tok.substr(0, eq);
      const std::string_view val =
          eq == std::string_view::npos ? std::string_view() : tok.substr(eq + 1);
      if (eq == std::string_view::npos || val.empty())
        fail("'" + echo(tok) + "' is not key=value (expected size=, name= or file=)");
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        fail(echo(key) +
             "= is given twice on this @ line (expected each of size=, name=, file= at most "
             "once)");
      seen.push_back(key);
      if (key == "size") {
        const auto v = parse_number(val);
        if (!v || *v == 0 || *v > kSpace) fail("size=" + echo(val) + " is not a size in 1..2^32");
        if (*v > kMaxImageBytes)
          fail("size=" + echo(val) + " is more than an image may hold (256 MiB)");
        o.size = *v;
      } else if (key == "name") {
        o.block.name = echo(val);
      } else if (key == "file") {
        file = echo(val);
      } else {
        fail("unknown key '" + echo(key) + "' (expected size=, name= or file=)");
      }
    }
    if (!file.empty()) read_file(file, o);
    cur_ = std::move(o);
  }

  // file=F (relative to the image's directory): the block's bytes.
  void read_file(const std::string& file, Open& o) {
    const std::string path = join_path(base_dir_, file);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      fail("file=" + file + " (" + path + "): is a directory (expected a binary file)");
    if (std::filesystem::is_regular_file(path, ec)) {
      const uint64_t size = std::filesystem::file_size(path, ec);
      if (!ec && size > kMaxImageBytes)
        fail("file=" + file + " (" + path + ") has " + std::to_string(size) +
             " bytes, more than an image may hold (256 MiB)");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open file=" + file + " (" + path + ")");
    std::string data;
    if (!detail::read_at_most(in, kMaxImageBytes, &data))
      fail("file=" + file + " (" + path + ") has more than an image may hold (256 MiB)");
    if (in.bad()) fail("cannot read file=" + file);
    o.block.bytes.assign(data.begin(), data.end());
    o.from_file = true;
    image_.files.push_back(path);
  }

  // Hex byte pairs: appended to the open block.
  void data_line(const std::vector<std::string_view>& tokens) {
    if (!cur_) fail("data before the first @<address> line");
    if (cur_->from_file) fail("a block with file= cannot also have inline data");
    for (std::string_view tok : tokens) {
      if (tok.size() % 2 != 0) fail("'" + echo(tok) + "' is not a whole number of hex byte pairs");
      for (size_t i = 0; i < tok.size(); i += 2) {
        const int hi = hex_digit(tok[i]), lo = hex_digit(tok[i + 1]);
        if (hi < 0 || lo < 0) fail("'" + echo(tok) + "' is not hex bytes");
        cur_->block.bytes.push_back(static_cast<uint8_t>(hi << 4 | lo));
      }
    }
  }

  std::string_view filename_;
  std::string base_dir_;
  int line_no_ = 0;
  HostImage image_;
  std::optional<Open> cur_;
  uint64_t total_ = 0;
};

}  // namespace

HostImage parse_host_image(std::string_view text, std::string_view filename,
                           const std::string& base_dir) {
  ImageParser parser(filename, base_dir);
  size_t pos = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;  // a UTF-8 byte-order mark
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    parser.line(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return parser.finish();
}

HostImage load_host_image(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw HostImageError(path + ": is a directory (expected a host memory image file)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw HostImageError(path + ": cannot open for reading");
  std::string text;
  // 256 MiB of data as "xx " pairs plus comments: 1 GiB of text is more than any valid image.
  if (!detail::read_at_most(in, uint64_t{1} << 30, &text)) {
    throw HostImageError(
        path + ": more than 1 GiB of text, larger than any image (at most 256 MiB of data)");
  }
  if (in.bad()) throw HostImageError(path + ": read error");
  return parse_host_image(text, path, dir_of(path));
}

std::string format_host_image(const HostImage& image) {
  std::string out = "# tpu-rtl host memory image (docs/tpusim.md)\n";
  char buf[64];
  for (const HostImageBlock& b : image.blocks) {
    std::snprintf(buf, sizeof buf, "@0x%08" PRIx32 " size=%zu", b.addr, b.bytes.size());
    out += buf;
    if (!b.name.empty()) {  // one token: no blanks, no comment character
      std::string name = b.name;
      for (char& c : name) {
        if (std::isspace(static_cast<unsigned char>(c)) || c == '#') c = '_';
      }
      out += " name=" + name;
    }
    out += '\n';
    for (size_t i = 0; i < b.bytes.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%02x", b.bytes[i]);
      out += buf;
      out += (i % 16 == 15 || i + 1 == b.bytes.size()) ? '\n' : ' ';
    }
  }
  return out;
}

void save_host_image(const std::string& path, const HostImage& image) {
  try {
    write_file_atomically(path, format_host_image(image));
  } catch (const std::runtime_error& e) {
    throw HostImageError(e.what());
  }
}

}  // namespace tpu
