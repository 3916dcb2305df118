// SPDX-License-Identifier: Apache-2.0
// The host memory image text format (host_image.h, docs/tpusim.md).
#include "host_image.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "temp_dir.h"

namespace {

using namespace tpu;

TEST(HostImage, ParsesBlocksSizesAndComments) {
  const HostImage img = parse_host_image(
      "# input\n"
      "@0x100 name=x\n"
      "00 01 ff  # three bytes\n"
      "deadBEEF\n"
      "@4096 size=8 name=out\n"
      "@0x20 size=0x4\n"
      "aa\n");
  ASSERT_EQ(img.blocks.size(), 3u);
  EXPECT_EQ(img.blocks[0].addr, 0x20u);
  EXPECT_EQ(img.blocks[0].bytes, (std::vector<uint8_t>{0xaa, 0, 0, 0}));
  EXPECT_EQ(img.blocks[1].addr, 0x100u);
  EXPECT_EQ(img.blocks[1].name, "x");
  EXPECT_EQ(img.blocks[1].bytes, (std::vector<uint8_t>{0, 1, 0xff, 0xde, 0xad, 0xbe, 0xef}));
  EXPECT_EQ(img.blocks[2].bytes, std::vector<uint8_t>(8, 0));
  EXPECT_EQ(parse_host_image(format_host_image(img)).blocks.size(), 3u);
  const HostImage again = parse_host_image(format_host_image(img));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again.blocks[i].addr, img.blocks[i].addr);
    EXPECT_EQ(again.blocks[i].bytes, img.blocks[i].bytes);
    EXPECT_EQ(again.blocks[i].name, img.blocks[i].name);
  }
}

void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  try {
    parse_host_image(text, "m.txt");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const HostImageError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(where, 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(HostImage, Errors) {
  expect_error("00 11\n", "m.txt:1:", "before the first @");
  expect_error("@0x10\n0\n", "m.txt:2:", "hex byte pairs");
  expect_error("@0x10\nzz\n", "m.txt:2:", "not hex");
  expect_error("\n@0x10 size=1\n00 11\n", "m.txt:2:", "2 bytes of data but size=1");
  expect_error("@0x10\n", "m.txt:1:", "no bytes");
  expect_error("@0x100000000 size=1\n", "m.txt:1:", "below 2^32");
  expect_error("@0xfffffff0 size=0x20\n", "m.txt:1:", "32-bit host address space");
  expect_error("@0x10 bogus=1\n00\n", "m.txt:1:", "unknown key 'bogus'");
  expect_error("@0x10 size\n", "m.txt:1:", "key=value");
  expect_error("@0x10 size=0\n", "m.txt:1:", "1..2^32");
  expect_error("@0x10 file=/nonexistent/x.bin\n", "m.txt:1:", "cannot open");
  expect_error("@0x10 size=16\n@0x18 size=1\n", "m.txt:", "overlaps");
  expect_error("@0x10 size=0x20000000\n", "m.txt:1:", "256 MiB");
  expect_error("@0x0 size=0x8000000\n@0x10000000 size=0x8000000\n@0x20000000 size=1\n",
               "m.txt:3:", "256 MiB");
  EXPECT_THROW(load_host_image("/nonexistent/file.mem"), HostImageError);
  // A key given twice is refused, like the assembler's duplicate operands.
  expect_error("@0x10 size=16 size=32\n", "m.txt:1:", "size= is given twice on this @ line");
  expect_error("@0x10 name=a name=b\n00\n", "m.txt:1:", "name= is given twice");
  expect_error("@0x10 file=a.bin file=b.bin\n", "m.txt:1:", "file= is given twice");
  // Directories named as files.
  expect_error("@0x10 file=" + test_support::temp_dir() + "\n",
               "m.txt:1:", ": is a directory (expected a binary file)");
  try {
    load_host_image(test_support::temp_dir());
    ADD_FAILURE() << "a directory was loaded";
  } catch (const HostImageError& e) {
    EXPECT_NE(std::string(e.what()).find(": is a directory (expected a host memory image file)"),
              std::string::npos);
  }
  // Bytes that are not text, by value and column; a leading byte-order mark is skipped.
  expect_error(std::string("@0x10 size=4\n00 \0\n", 19),
               "m.txt:2:", "column 4: byte 0x00 is not text");
  expect_error("@0x10 size=4\n00 \xc3\xa9\n", "m.txt:2:", "column 4: byte 0xc3 is not text");
  EXPECT_EQ(parse_host_image("\xEF\xBB\xBF@0x10 size=4 # caf\xc3\xa9\n").blocks.size(), 1u);
  // Echoed tokens are cut to a readable length.
  expect_error("@0x10\n" + std::string(100000, 'a') + "z\n",
               "m.txt:2:", "(100001 characters)' is not a whole number");
}

TEST(HostImage, FileBlocksAndSaveLoad) {
  const std::string dir = test_support::temp_dir();
  {
    std::ofstream bin(dir + "/blob.bin", std::ios::binary);
    bin << "ABC";
  }
  {
    std::ofstream mem(dir + "/img.mem");
    mem << "@0x40 file=blob.bin size=5\n";
  }
  HostImage img = load_host_image(dir + "/img.mem");
  ASSERT_EQ(img.blocks.size(), 1u);
  EXPECT_EQ(img.blocks[0].bytes, (std::vector<uint8_t>{'A', 'B', 'C', 0, 0}));
  img.blocks[0].name = "has space#hash";
  save_host_image(dir + "/out.mem", img);
  const HostImage back = load_host_image(dir + "/out.mem");
  EXPECT_EQ(back.blocks[0].bytes, img.blocks[0].bytes);
  EXPECT_EQ(back.blocks[0].name, "has_space_hash");
  std::remove((dir + "/blob.bin").c_str());
  std::remove((dir + "/img.mem").c_str());
  std::remove((dir + "/out.mem").c_str());
}

}  // namespace
